"""An alignment-handbook recipe YAML (huggingface/alignment-handbook at 95dc47218c: TRL's SFT on
the Hugging Face Trainer): the model by its checkpoint, QLoRA from load_in_4bit with the
handbook's defaults (nf4, no double quantisation: src/alignment/configs.py:185-192), LoRA rank
and targets, the batch, the sequence length and gradient checkpointing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.spec.finetune import PEFT_MODULES
from calc.trainers.base import UNDECIDED, TrainerConfig, checkpoint_preset, peft_stack
from calc.trainers.transformers_args import read_optimizer


def looks_like(data: dict[str, Any]) -> bool:
    return "model_name_or_path" in data and ("use_peft" in data or "dataset_mixer" in data)


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("alignment-handbook", str(path), framework="fsdp")
    peft = bool(data.get("use_peft"))
    for key, value in data.items():
        if not _take(config, key, value, data, peft):
            config.ignored.append(key)
    if peft and data.get("load_in_4bit") and "use_bnb_nested_quant" not in data:
        config.take("(default) use_bnb_nested_quant", False, "no double quantisation "
                    "(configs.py:185-192)", double_quant=False)
    peft_stack(config)
    return config


def _take(config: TrainerConfig, key: str, value: Any, data: dict[str, Any],
          peft: bool) -> bool:
    if key == "model_name_or_path":
        config.model, meaning = checkpoint_preset(str(value))
        config.take(key, value, meaning)
    elif key == "use_peft":
        method = ("qlora" if data.get("load_in_4bit") else "lora") if value else "full"
        config.take(key, value, f"fine-tuning {method}", finetune=method)
    elif key == "load_in_4bit":
        config.take(key, value, "4-bit nf4 frozen base (with use_peft: QLoRA)" if value else
                    "16-bit base", **({"base_dtype": data.get("bnb_4bit_quant_type", "nf4")}
                                      if value and peft else {}))
    elif key == "use_bnb_nested_quant":
        config.take(key, value, "double quantisation" if value else "no double quantisation",
                    double_quant=bool(value))
    elif key == "lora_r":
        config.take(key, value, f"LoRA rank {int(value)}", lora_rank=int(value))
    elif key == "lora_target_modules":
        if value in UNDECIDED or any(m not in PEFT_MODULES for m in value):
            return False
        targets = ",".join(PEFT_MODULES[m] for m in value)
        config.take(key, value, f"adapters on {targets}", lora_targets=targets)
    elif key == "per_device_train_batch_size":
        config.take(key, value, f"micro-batch {int(value)}", micro_batch=int(value))
    elif key == "gradient_accumulation_steps":
        config.take(key, value, f"{int(value)} micro-batches accumulated per step (step)",
                    gradient_accumulation=int(value))
    elif key == "max_seq_length":
        config.take(key, value, f"sequence length {int(value)} (packed rows, "
                                f"scripts/run_sft.py)", seq_len=int(value))
    elif key == "gradient_checkpointing":
        config.take(key, value, "full recomputation" if value else "no recomputation",
                    recompute="full" if value else "none")
    elif key in ("bf16", "fp16"):
        config.take(key, value, f"dtype {key}" if value else f"{key} off",
                    **({"dtype": key} if value else {}))
    elif key == "attn_implementation":
        flash = "flash" in str(value)
        config.take(key, value, "flash attention" if flash else "eager/SDPA attention",
                    flash_attention=flash)
    elif key == "optim":
        return read_optimizer(config, key, value)
    else:
        return False
    return True
