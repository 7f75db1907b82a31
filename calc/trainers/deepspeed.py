"""DeepSpeed's JSON config (deepspeed.ai/docs/config-json): precision, ZeRO stage, offload,
optimizer and the micro-batch. The model is not in it: give MODEL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.trainers.base import UNDECIDED, TrainerConfig, flatten

# DeepSpeed optimizer types (deepspeed/runtime/config.py) → calc.spec.memory.OPTIMIZERS
OPTIMIZERS = {"adam": "adamw", "adamw": "adamw", "fusedadam": "adamw", "cpuadam": "adamw",
              "onebitadam": "adamw", "zerooneadam": "adamw", "lamb": "adamw",
              "onebitlamb": "adamw", "adagrad": "sgd", "sgd": "sgd", "lion": "lion",
              "muon": "muon"}
OFFLOAD = {"cpu": "cpu", "nvme": "nvme", "none": "none"}


def looks_like(data: dict[str, Any]) -> bool:
    """A DeepSpeed config, not a TrainingArguments JSON (which also has fp16 and bf16)."""
    if "output_dir" in data or "per_device_train_batch_size" in data:
        return False
    return ("zero_optimization" in data or "train_micro_batch_size_per_gpu" in data
            or isinstance(data.get("fp16"), dict) or isinstance(data.get("bf16"), dict))


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("deepspeed", str(path), framework="deepspeed")
    flat = flatten(data)
    for key, value in flat.items():
        if not _take(config, key, value):
            config.ignored.append(key)
    return config


def _take(config: TrainerConfig, key: str, value: Any) -> bool:
    """Read one setting; False when calc has no use for it."""
    if key in ("fp16.enabled", "bf16.enabled"):
        dtype = key.partition(".")[0]
        if value in UNDECIDED:
            config.take(key, value, "decided by the launcher: calc's --dtype applies")
        elif value:
            config.take(key, value, f"dtype {dtype}, mixed precision (fp32 master weights)",
                        dtype=dtype)
        else:
            config.take(key, value, f"{dtype} off")
        return True
    if key == "train_micro_batch_size_per_gpu":
        if value in UNDECIDED:
            config.take(key, value, "decided by the Trainer: calc's --micro-batch applies")
        else:
            config.take(key, value, f"micro-batch {int(value)}", micro_batch=int(value))
        return True
    if key in ("train_batch_size", "gradient_accumulation_steps"):
        if value in UNDECIDED:
            config.take(key, value, "decided by the Trainer: calc's --global-batch applies")
        elif key == "train_batch_size":
            config.take(key, value, f"global batch {int(value)} sequences (step)",
                        global_batch=int(value))
        else:
            config.take(key, value, f"{int(value)} micro-batches accumulated per step (step)",
                        gradient_accumulation=int(value))
        return True
    if key == "zero_optimization.cpu_offload":  # DeepSpeed ≤ 0.3's name for offload_optimizer
        config.take(key, value, "optimizer offloaded to cpu (the old cpu_offload key)"
                    if value else "no offload", **({"offload_optimizer": "cpu"} if value else {}))
        return True
    if key == "zero_optimization.stage":
        config.take(key, value, f"ZeRO stage {int(value)}", zero=int(value))
        return True
    if key in ("zero_optimization.offload_optimizer.device",
               "zero_optimization.offload_param.device"):
        which = "optimizer" if "optimizer" in key else "params"
        device = OFFLOAD.get(str(value).lower())
        if device is None:
            return False
        config.take(key, value, f"{which} offloaded to {device}", **{f"offload_{which}": device})
        return True
    if key == "optimizer.type":
        name = OPTIMIZERS.get(str(value).lower())
        if name is None:
            return False
        config.take(key, value, f"states as calc's {name}", optimizer=name)
        return True
    if key.startswith("activation_checkpointing."):
        # DeepSpeed's checkpointing API, which the model calls for every layer
        # (deepspeed.checkpointing with Megatron's --checkpoint-activations)
        config.take(key, value, "activation checkpointing configured: full recomputation"
                    + (" (activations partitioned, checkpoints on the CPU: not modelled)"
                       if key.endswith(("partition_activations", "cpu_checkpointing"))
                       and value else ""), recompute="full")
        return True
    return False
