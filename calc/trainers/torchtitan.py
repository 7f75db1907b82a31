"""A torchtitan job TOML: model by name and flavor, FSDP/TP/PP/CP degrees, local batch,
sequence length, activation checkpointing, optimizer, float8.

torchtitan shards with FSDP2 (ZeRO stage 3 over data_parallel_shard_degree), keeps the sharded
parameters and reduces gradients in fp32 and computes in bf16 (mixed_precision_param, default
bfloat16; mixed_precision_reduce, default float32): calc's recipe 'mixed-fp32-grads'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.trainers.base import TrainerConfig, flatten

# torchtitan (name, flavor) → calc preset (torchtitan/models/llama3/__init__.py flavors)
FLAVORS = {("llama3", "8B"): "llama3-8b", ("llama3", "70B"): "llama3-70b",
           ("llama3", "405B"): "llama3.1-405b", ("llama3_1", "8B"): "llama3.1-8b"}
OPTIMIZERS = {"adamw": "adamw", "adam": "adamw", "lion": "lion", "muon": "muon",
              "adafactor": "adafactor", "sgd": "sgd"}
RECOMPUTE = {"full": "full", "selective": "selective", "none": "none"}


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("torchtitan", str(path))
    flat = flatten(data)
    name, flavor = flat.get("model.name"), flat.get("model.flavor")
    for key, value in flat.items():
        if key in ("model.name", "model.flavor"):
            preset = FLAVORS.get((str(name), str(flavor)))
            config.take(key, value, f"model {preset}" if preset else
                        "no preset for this name and flavor: give MODEL")
            config.model = preset
        elif not _take(config, key, value):
            config.ignored.append(key)
    if "dtype" not in config.options:
        config.options.update(dtype="bf16", recipe="mixed-fp32-grads")
    return config


def _take(config: TrainerConfig, key: str, value: Any) -> bool:
    degrees = {"parallelism.tensor_parallel_degree": "tp",
               "parallelism.pipeline_parallel_degree": "pp"}
    if key == "parallelism.tensor_parallel_degree" and int(value) > 1:
        # torchtitan's TP plan (models/llama3/parallelize.py) shards the norms' and the
        # residual's activations on the sequence: Megatron's sequence parallelism
        config.take(key, value, f"tp {int(value)}, with sequence parallelism",
                    tp=int(value), sequence_parallel=True)
    elif key in degrees:
        config.take(key, value, f"{degrees[key]} {int(value)}", **{degrees[key]: int(value)})
    elif key == "parallelism.data_parallel_shard_degree":
        if int(value) < 0:
            config.take(key, value, "FSDP over the remaining GPUs: ZeRO 3; give --dp for "
                                    "their number", zero=3)
        else:
            config.take(key, value, f"FSDP over {int(value)}: ZeRO 3, dp {int(value)}",
                        zero=3, dp=int(value))
    elif key in ("training.batch_size", "training.local_batch_size"):
        config.take(key, value, f"micro-batch {int(value)} (per data-parallel rank)",
                    micro_batch=int(value))
    elif key == "training.global_batch_size" and int(value) > 0:  # -1: local × dp
        config.take(key, value, f"global batch {int(value)} sequences (step)",
                    global_batch=int(value))
    elif key == "training.seq_len":
        config.take(key, value, f"sequence length {int(value)}", seq_len=int(value))
    elif key == "activation_checkpoint.mode" and str(value) in RECOMPUTE:
        config.take(key, value, f"{RECOMPUTE[str(value)]} recomputation",
                    recompute=RECOMPUTE[str(value)])
    elif key == "optimizer.name" and str(value).lower() in OPTIMIZERS:
        name = OPTIMIZERS[str(value).lower()]
        config.take(key, value, f"optimizer {name}", optimizer=name)
    elif key == "model.converters" and "float8" in value:
        config.take(key, value, "float8 linear layers", precision="fp8")
    elif key == "training.mixed_precision_param":
        dtype = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(str(value))
        if dtype is None:
            return False
        recipe = "fp32" if dtype == "fp32" else "mixed-fp32-grads"
        config.take(key, value, f"compute in {dtype}, fp32 sharded parameters and gradients",
                    dtype=dtype, recipe=recipe)
    else:
        return False
    return True
