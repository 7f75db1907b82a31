"""A NeMo 1.x training or PEFT YAML, as NeMo-Framework-Launcher ships them (trainer:, model:,
run:): the layout as NeMo hands it to Megatron-LM core (NVIDIA/NeMo 06eae2895c:
nemo/collections/nlp/models/language_modeling/megatron_base_model.py and megatron_gpt_model.py),
the world size of trainer.num_nodes × trainer.devices, the model by the run's name, its
tokenizer's checkpoint or its shape, and LoRA from model.peft."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from calc.presets import list_presets, load_preset, preset_for_shape
from calc.trainers.base import TrainerConfig, checkpoint_preset, flatten

# model.* → the option it sets
DEGREES = {"model.tensor_model_parallel_size": "tp", "model.pipeline_model_parallel_size": "pp",
           "model.context_parallel_size": "cp", "model.expert_model_parallel_size": "ep",
           "model.micro_batch_size": "micro_batch", "model.global_batch_size": "global_batch",
           "model.encoder_seq_length": "seq_len"}
SHAPE = ("model.num_layers", "model.hidden_size", "model.num_attention_heads",
         "model.num_query_groups", "model.num_moe_experts", "model.tokenizer.type",
         "run.name", "run.model_train_name")
# megatron_base_model.py:148: the names that build megatron-core's distributed optimizer
DISTRIBUTED = ("mcore_distributed_optim", "distributed_fused_adam")
# peft_config.py:70 NeMo's LoRA targets (target_modules default: the fused QKV) → calc's
LORA_TARGETS = {"attention_qkv": "q,k,v", "attention_dense": "o", "mlp_fc1": "up,gate",
                "mlp_fc2": "down", "all": "all-linear"}


def looks_like(data: dict[str, Any]) -> bool:
    """A NeMo launcher YAML: a model: table with Megatron's parallel degrees, and trainer:."""
    model = data.get("model")
    return (isinstance(model, dict) and "trainer" in data
            and "tensor_model_parallel_size" in model)


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("nemo", str(path), framework="megatron")
    flat = flatten(data)
    for key, value in flat.items():
        if key in SHAPE or key.startswith("model.peft."):
            continue
        if not _take(config, key, value, flat):
            config.ignored.append(key)
    _world(config, flat)
    _model(config, flat)
    _peft(config, flat)
    if config.options.get("tp", 1) == 1 and config.options.get("sequence_parallel"):
        config.take("model.sequence_parallel", True, "off: NeMo turns it off at tp = 1 "
                                                     "(megatron_base_model.py:959-963)",
                    sequence_parallel=False)
    return config


def _take(config: TrainerConfig, key: str, value: Any, flat: dict[str, Any]) -> bool:
    if key in DEGREES and value is not None:
        option = DEGREES[key]
        config.take(key, value, f"{option.replace('_', ' ')} {int(value)}",
                    **{option: int(value)})
    elif key == "model.virtual_pipeline_model_parallel_size":
        vpp = int(value) if value else 1
        config.take(key, value, f"{vpp} virtual stages per pipeline rank (model chunks, "
                                f"megatron_gpt_model.py:392)", vpp=vpp)
    elif key == "model.sequence_parallel":
        config.take(key, value, "sequence parallelism" if value else "no sequence "
                    "parallelism", sequence_parallel=bool(value))
    elif key == "model.activations_checkpoint_granularity":
        recompute = value if value in ("selective", "full") else "none"
        config.take(key, value, f"{recompute} recomputation (megatron_base_model.py:534-536)",
                    recompute=recompute)
    elif key in ("model.activations_checkpoint_method", "model.activations_checkpoint_num_layers"):
        config.take(key, value, "which layers recompute (calc: the granularity alone)")
    elif key == "model.optim.name":
        if value in DISTRIBUTED:
            config.take(key, value, "megatron-core's distributed optimizer: ZeRO 1", zero=1)
        else:
            config.take(key, value, f"{value}: optimizer states on every data-parallel rank",
                        zero=0)
    elif key == "trainer.precision":
        dtype = {"bf16": "bf16", "bf16-mixed": "bf16", "16": "fp16", "16-mixed": "fp16",
                 "32": "fp32", 32: "fp32", 16: "fp16"}.get(value)
        if dtype is None:
            return False
        config.take(key, value, f"dtype {dtype}", dtype=dtype)
    elif key == "model.megatron_amp_O2":
        config.take(key, value, "16-bit parameters with an fp32 main copy (Megatron-LM's "
                                "recipe)" if value else "O1 autocast: fp32 parameters")
    elif key == "model.fp8":
        fmt = "hybrid" if flat.get("model.fp8_hybrid") else "e4m3"
        config.take(key, value, f"FP8 GEMMs ({fmt})" if value else "no FP8 (fp8_hybrid and "
                    "fp8_e4m3 apply only with fp8: True, megatron_gpt_model.py:2190-2197)",
                    **({"precision": "fp8"} if value else {}))
    elif key in ("model.fp8_hybrid", "model.fp8_e4m3"):
        config.take(key, value, "the FP8 format (with model.fp8)")
    elif key == "model.data.train_ds.max_seq_length" and "model.encoder_seq_length" not in flat:
        config.take(key, value, f"sequence length {int(value)} (the cap; examples padded to "
                                f"the longest in the micro-batch)", seq_len=int(value))
    else:
        return False
    return True


def _world(config: TrainerConfig, flat: dict[str, Any]) -> None:
    nodes, devices = flat.get("trainer.num_nodes"), flat.get("trainer.devices")
    if isinstance(nodes, int) and isinstance(devices, int):
        config.world_size = nodes * devices
        for key, value in (("trainer.num_nodes", nodes), ("trainer.devices", devices)):
            config.take(key, value, f"world size {config.world_size}")
            if key in config.ignored:
                config.ignored.remove(key)


def _model(config: TrainerConfig, flat: dict[str, Any]) -> None:
    """The preset the run trains: by the run's name (llama3_70b), its tokenizer's checkpoint,
    or the one preset of its shape, each only where the shape the file gives agrees."""
    shape = {"n_layers": flat.get("model.num_layers"), "d_model": flat.get("model.hidden_size"),
             "n_heads": flat.get("model.num_attention_heads")}

    def agrees(preset: str) -> bool:
        spec = load_preset(preset).spec
        found = {"n_layers": spec.n_layers, "d_model": spec.d_model,
                 "n_heads": spec.attention.n_heads}
        return all(value is None or found[key] == value for key, value in shape.items())

    names = {stem.replace("-", "").replace(".", ""): stem for stem in list_presets()}
    for key in ("run.model_train_name", "run.name"):
        name = str(flat.get(key) or "")
        preset = names.get(re.sub(r"[^a-z0-9]", "", name.lower()))
        if preset is not None and agrees(preset):
            config.model = preset
            config.take(key, name, f"model {preset} (the run's name, its shape agreeing)")
            break
    else:
        tokenizer = str(flat.get("model.tokenizer.type") or "")
        preset, _ = checkpoint_preset(tokenizer) if "/" in tokenizer else (None, "")
        if preset is None and all(shape.values()):
            preset = preset_for_shape(shape["n_layers"], shape["d_model"], shape["n_heads"],
                                      flat.get("model.num_query_groups"),
                                      flat.get("model.num_moe_experts"))
        config.model = preset if preset is not None and agrees(preset) else None
        config.take("model.tokenizer.type", tokenizer or None,
                    f"model {config.model} (its checkpoint or its shape)" if config.model
                    else "no preset of this shape: give MODEL")
    for key in SHAPE:
        if key in flat and key not in {s.key for s in config.read}:
            config.take(key, flat[key], f"the model's shape ({config.model or 'give MODEL'})")


def _peft(config: TrainerConfig, flat: dict[str, Any]) -> None:
    """LoRA from model.peft (nemo/collections/nlp/parts/peft_config.py: rank = adapter_dim,
    target_modules default the fused QKV)."""
    peft = {key: value for key, value in flat.items() if key.startswith("model.peft.")}
    scheme = peft.get("model.peft.peft_scheme")
    if scheme != "lora":
        if scheme is not None:
            config.take("model.peft.peft_scheme", scheme, f"{scheme}: not modelled (calc: "
                                                          f"LoRA and QLoRA)")
        config.ignored.extend(key for key in peft if key != "model.peft.peft_scheme")
        return
    config.take("model.peft.peft_scheme", scheme, "fine-tuning lora", finetune="lora")
    rank = peft.get("model.peft.lora_tuning.adapter_dim")
    if rank is not None:
        config.take("model.peft.lora_tuning.adapter_dim", rank, f"LoRA rank {int(rank)}",
                    lora_rank=int(rank))
    modules = peft.get("model.peft.lora_tuning.target_modules") or ["attention_qkv"]
    targets = ",".join(dict.fromkeys(LORA_TARGETS.get(m, m) for m in modules))
    config.take("model.peft.lora_tuning.target_modules", modules,
                f"adapters on {targets} (NeMo fuses Q, K and V under one adapter: one A "
                f"matrix where calc counts three)", lora_targets=targets)
    used = {"model.peft.peft_scheme", "model.peft.lora_tuning.adapter_dim",
            "model.peft.lora_tuning.target_modules"}
    config.ignored.extend(key for key in peft if key not in used)
