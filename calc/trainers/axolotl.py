"""An axolotl YAML (axolotl-ai-cloud/axolotl at e4032fc90f): base model, LoRA/QLoRA adapter (an
8-bit base noted), micro-batch, sequence length and packing, gradient checkpointing, flash
attention, Liger's fused kernels, FSDP and its CPU offload, DeepSpeed, optimizer and precision
(axolotl docs, config reference), on the Hugging Face Trainer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.spec.finetune import PEFT_MODULES
from calc.trainers.base import UNDECIDED, TrainerConfig, checkpoint_preset, peft_stack
from calc.trainers.transformers_args import read_optimizer


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("axolotl", str(path), framework="fsdp")
    for key, value in data.items():
        if not _take(config, key, value, data):
            config.ignored.append(key)
    if data.get("load_in_4bit") and config.options.get("finetune") in ("lora", "qlora"):
        # LoRA on a 4-bit base is QLoRA: bitsandbytes nf4 with double quantisation
        # (src/axolotl/loaders/model.py:588-595)
        config.options.update(finetune="qlora", base_dtype="nf4", double_quant=True)
    peft_stack(config)
    return config


def _take(config: TrainerConfig, key: str, value: Any, data: dict[str, Any]) -> bool:
    if key == "base_model":
        config.model, meaning = checkpoint_preset(str(value))
        config.take(key, value, meaning)
    elif key == "adapter" and value in ("lora", "qlora"):
        config.take(key, value, f"fine-tuning {value}", finetune=value)
    elif key == "load_in_4bit":
        config.take(key, value, "4-bit nf4 frozen base, double quantisation (with adapter: "
                                "qlora)" if value else "no 4-bit base")
    elif key == "load_in_8bit":
        config.take(key, value, "LLM.int8 8-bit frozen base: not modelled (counted as the "
                                "16-bit base)" if value else "no 8-bit base")
    elif key == "lora_modules_to_save":
        config.take(key, value, "these modules train in full beside the adapters: not "
                                "modelled (calc trains the adapters alone)")
    elif key in ("sample_packing", "pad_to_sequence_len"):
        config.take(key, value, "rows of micro_batch × sequence_len packed tokens" if value
                    else "unpacked rows")
    elif key.startswith("liger_"):
        config.take(key, value, "Liger's fused linear cross-entropy: the logits are never "
                                "whole (calc counts them: an overestimate)"
                    if key == "liger_fused_linear_cross_entropy" else "a Liger fused kernel")
    elif key == "attn_implementation":
        flash = "flash" in str(value)
        config.take(key, value, "flash attention" if flash else "eager/SDPA attention",
                    flash_attention=flash)
    elif key == "fsdp":
        if value in UNDECIDED:
            config.take(key, value, "no FSDP")
        elif "full_shard" in value:
            config.take(key, value, "FSDP full_shard: ZeRO 3", zero=3)
        else:
            return False
    elif key == "fsdp_config" and isinstance(value, dict):
        offload = value.get("fsdp_offload_params")
        config.take(key, value, "FSDP with parameters, gradients and the optimizer step on "
                                "the CPU" if offload else "FSDP settings",
                    **({"offload_params": "cpu", "offload_optimizer": "cpu"} if offload
                       else {}))
    elif key == "fsdp_config" and value in UNDECIDED:
        config.take(key, value, "no FSDP settings")
    elif key == "deepspeed":
        if value in UNDECIDED:
            config.take(key, value, "no DeepSpeed")
        else:
            return False
    elif key == "lora_r" and value not in UNDECIDED:
        config.take(key, value, f"LoRA rank {int(value)}", lora_rank=int(value))
    elif key == "lora_target_linear":
        if value:
            config.take(key, value, "adapters on every linear projection",
                        lora_targets="all-linear")
        else:
            config.take(key, value, "targets from lora_target_modules")
    elif key == "lora_target_modules":
        if value in UNDECIDED or data.get("lora_target_linear"):
            config.take(key, value, "unused (lora_target_linear)" if value in UNDECIDED
                        else "superseded by lora_target_linear")
        else:
            unknown = [m for m in value if m not in PEFT_MODULES]
            if unknown:
                return False
            targets = ",".join(PEFT_MODULES[m] for m in value)
            config.take(key, value, f"adapters on {targets}", lora_targets=targets)
    elif key == "gradient_accumulation_steps" and value not in UNDECIDED:
        config.take(key, value, f"{int(value)} micro-batches accumulated per step (step)",
                    gradient_accumulation=int(value))
    elif key == "micro_batch_size":
        config.take(key, value, f"micro-batch {int(value)}", micro_batch=int(value))
    elif key == "sequence_len":
        config.take(key, value, f"sequence length {int(value)}", seq_len=int(value))
    elif key == "gradient_checkpointing":
        config.take(key, value, "full recomputation" if value else "no recomputation",
                    recompute="full" if value else "none")
    elif key == "flash_attention":
        config.take(key, value, "flash attention: no s×s scores" if value else "eager "
                    "attention", flash_attention=bool(value))
    elif key in ("bf16", "fp16"):
        if key == "bf16" and value == "auto":
            config.take(key, value, "bf16 where the GPU has it (calc's GPUs since the A100 "
                                    "do)", dtype="bf16")
        elif value in UNDECIDED or value == "auto":
            config.take(key, value, "decided from the GPU: calc's --dtype applies")
        else:
            config.take(key, value, f"dtype {key}" if value else f"{key} off",
                        **({"dtype": key} if value else {}))
    elif key == "optimizer":
        return read_optimizer(config, key, value)
    else:
        return False
    return True
