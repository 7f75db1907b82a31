"""A LLaMA-Factory YAML (hiyouga/LLaMA-Factory at c3c0efbaa0): the model by its checkpoint, the
fine-tuning method (full, LoRA, QLoRA from quantization_bit), the batch, the cut-off length,
its defaults where the file is silent (gradient checkpointing on, LoRA rank 8, bnb nf4 with
double quantisation) and the DeepSpeed config it names, on the Hugging Face Trainer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from calc.trainers.base import UNDECIDED, TrainerConfig, checkpoint_preset, peft_stack
from calc.trainers.transformers_args import read_optimizer

# LLaMA-Factory's own DeepSpeed configs (examples/deepspeed/ds_z{0,2,3}[_offload]_config.json)
DS_NAME = re.compile(r"ds_z(\d)(_offload)?_config\.json$")


def looks_like(data: dict[str, Any]) -> bool:
    return "finetuning_type" in data or ("stage" in data and "template" in data)


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("llama-factory", str(path), framework="fsdp")
    for key, value in data.items():
        if not _take(config, key, value, data):
            config.ignored.append(key)
    _defaults(config, data)
    peft_stack(config)
    return config


def _take(config: TrainerConfig, key: str, value: Any, data: dict[str, Any]) -> bool:
    if key == "model_name_or_path":
        config.model, meaning = checkpoint_preset(str(value))
        config.take(key, value, meaning)
    elif key == "finetuning_type":
        method = {"full": "full", "lora": "lora"}.get(str(value))
        if method is None:
            return False
        quantized = data.get("quantization_bit") == 4
        method = "qlora" if method == "lora" and quantized else method
        config.take(key, value, f"fine-tuning {method}", finetune=method)
    elif key == "lora_rank":
        config.take(key, value, f"LoRA rank {int(value)}", lora_rank=int(value))
    elif key == "lora_target":
        targets = "all-linear" if value == "all" else str(value)
        config.take(key, value, f"adapters on {targets} (the output head excluded)",
                    lora_targets=targets)
    elif key == "quantization_bit":
        if value == 4:
            config.take(key, value, "4-bit frozen base: QLoRA (nf4, double quantisation: "
                                    "LLaMA-Factory's defaults, model_args.py:191-202)",
                        base_dtype="nf4", double_quant=True)
        else:
            config.take(key, value, f"{value}-bit base: not modelled (calc: 4-bit QLoRA)")
    elif key == "quantization_method":
        config.take(key, value, "the quantiser (bnb: bitsandbytes)")
    elif key == "per_device_train_batch_size":
        config.take(key, value, f"micro-batch {int(value)}", micro_batch=int(value))
    elif key == "gradient_accumulation_steps" and value not in UNDECIDED:
        config.take(key, value, f"{int(value)} micro-batches accumulated per step (step)",
                    gradient_accumulation=int(value))
    elif key == "cutoff_len":
        config.take(key, value, f"sequence length {int(value)} (the cap; rows padded to the "
                                f"longest, not packed)", seq_len=int(value))
    elif key in ("bf16", "fp16"):
        config.take(key, value, f"dtype {key}" if value else f"{key} off",
                    **({"dtype": key} if value else {}))
    elif key == "disable_gradient_checkpointing":
        config.take(key, value, "no recomputation" if value else "full recomputation",
                    recompute="none" if value else "full")
    elif key == "deepspeed":
        return _deepspeed(config, key, str(value))
    elif key == "optim":
        return read_optimizer(config, key, value)
    else:
        return False
    return True


def _deepspeed(config: TrainerConfig, key: str, value: str) -> bool:
    match = DS_NAME.search(value)
    if match is None:
        return False
    stage, offload = int(match.group(1)), bool(match.group(2))
    config.framework = "deepspeed"
    config.take(key, value, f"LLaMA-Factory's {Path(value).name}: ZeRO {stage}"
                + (", optimizer and parameters on the CPU" if offload else ""),
                zero=stage, **({"offload_optimizer": "cpu", "offload_params": "cpu"}
                               if offload else {}))
    return True


def _defaults(config: TrainerConfig, data: dict[str, Any]) -> None:
    """What LLaMA-Factory does where the file is silent (hparams at c3c0efbaa0)."""
    if "disable_gradient_checkpointing" not in data:
        config.take("(default) disable_gradient_checkpointing", False, "gradient "
                    "checkpointing on: full recomputation (model_args.py:112)", recompute="full")
    if config.options.get("finetune") in ("lora", "qlora") and "lora_rank" not in data:
        config.take("(default) lora_rank", 8, "LoRA rank 8 (finetuning_args.py:69)",
                    lora_rank=8)
    if config.options.get("finetune") in ("lora", "qlora") and "lora_target" not in data:
        config.take("(default) lora_target", "all", "adapters on every linear projection",
                    lora_targets="all-linear")
