"""A transformers TrainingArguments JSON (what HfArgumentParser.parse_json_file reads; the
example scripts also put model_name_or_path in it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.trainers.base import UNDECIDED, TrainerConfig, checkpoint_preset

# TrainingArguments.optim (transformers.training_args.OptimizerNames) → calc's optimizers
OPTIMIZERS = {
    "adamw_torch": "adamw", "adamw_torch_fused": "adamw", "adamw_hf": "adamw",
    "adamw_apex_fused": "adamw", "adamw_anyprecision": "adamw", "adamw_torch_xla": "adamw",
    "adamw_bnb_8bit": "adam8bit", "adamw_8bit": "adam8bit", "paged_adamw_8bit": "adam8bit",
    "paged_adamw_32bit": "adamw", "paged_adamw": "adamw", "adafactor": "adafactor",
    "sgd": "sgd", "lion_32bit": "lion", "paged_lion_32bit": "lion",
}


def read_optimizer(config: TrainerConfig, key: str, value: Any) -> bool:
    name = OPTIMIZERS.get(str(value).lower())
    if name is None:
        return False
    paged = str(value).lower().startswith("paged_")
    config.take(key, value, f"optimizer {name}" + (", paged states" if paged else ""),
                optimizer=name, **({"paged": True} if paged else {}))
    return True


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("transformers", str(path), framework="fsdp")
    for key, value in data.items():
        if not _take(config, key, value):
            config.ignored.append(key)
    if data.get("bf16") is False and data.get("fp16") is False:  # the Trainer trains in fp32
        config.options["dtype"] = "fp32"
    return config


def _take(config: TrainerConfig, key: str, value: Any) -> bool:
    if key == "model_name_or_path" and value:
        config.model, meaning = checkpoint_preset(str(value))
        config.take(key, value, meaning)
        return True
    if key in ("bf16", "fp16"):
        config.take(key, value, f"dtype {key}, mixed precision" if value else f"{key} off",
                    **({"dtype": key} if value else {}))
        return True
    if key == "gradient_accumulation_steps" and value not in UNDECIDED:
        config.take(key, value, f"{int(value)} micro-batches accumulated per step (step)",
                    gradient_accumulation=int(value))
        return True
    if key == "per_device_train_batch_size":
        config.take(key, value, f"micro-batch {int(value)}", micro_batch=int(value))
        return True
    if key == "gradient_checkpointing":
        if value in UNDECIDED:
            config.take(key, value, "not set: no recomputation")
        else:
            config.take(key, value, "full recomputation" if value else "no recomputation",
                        recompute="full" if value else "none")
        return True
    if key == "optim":
        return read_optimizer(config, key, value)
    if key in ("max_seq_length", "block_size") and value not in UNDECIDED:
        config.take(key, value, f"sequence length {int(value)}", seq_len=int(value))
        return True
    return False
