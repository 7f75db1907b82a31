"""An axolotl YAML: base model, LoRA/QLoRA adapter, micro-batch, sequence length, gradient
checkpointing, flash attention, optimizer and precision (axolotl docs, config reference)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.presets import preset_for_hub_id
from calc.trainers.base import UNDECIDED, TrainerConfig
from calc.trainers.transformers_args import read_optimizer

# PEFT module names (Llama, Mistral, Qwen, ...) → calc's LoRA targets
MODULES = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "up_proj": "up",
           "gate_proj": "gate", "down_proj": "down"}


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("axolotl", str(path))
    for key, value in data.items():
        if not _take(config, key, value, data):
            config.ignored.append(key)
    if data.get("load_in_4bit") and config.options.get("finetune") == "lora":
        config.options["finetune"] = "qlora"  # LoRA on a 4-bit base is QLoRA
    return config


def _take(config: TrainerConfig, key: str, value: Any, data: dict[str, Any]) -> bool:
    if key == "base_model":
        preset = preset_for_hub_id(str(value))
        config.take(key, value, f"model {preset}" if preset else
                    "no preset names this checkpoint: give MODEL")
        config.model = preset
    elif key == "adapter" and value in ("lora", "qlora"):
        config.take(key, value, f"fine-tuning {value}", finetune=value)
    elif key == "load_in_4bit":
        config.take(key, value, "4-bit frozen base (with adapter: qlora)" if value else
                    "no 4-bit base")
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
            unknown = [m for m in value if m not in MODULES]
            if unknown:
                return False
            targets = ",".join(MODULES[m] for m in value)
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
        if value in UNDECIDED or value == "auto":
            config.take(key, value, "decided from the GPU: calc's --dtype applies")
        else:
            config.take(key, value, f"dtype {key}" if value else f"{key} off",
                        **({"dtype": key} if value else {}))
    elif key == "optimizer":
        return read_optimizer(config, key, value)
    else:
        return False
    return True
