"""A torchtitan job TOML of any of its key layouts: 2024's (degrees under [training] and
[experimental], b19456a987), 2025's ([parallelism], local/global batch, model converters,
f3534d77b onwards), as torchtitan resolves them: data_parallel_shard_degree -1 (its default)
is FSDP over the GPUs left, tensor parallelism brings sequence parallelism, a multi-stage
pipeline schedule puts two stages on each rank, fp8 is on only where the 2024 [float8] flag or
the 2025 converters turn it on.

torchtitan shards with FSDP2 and keeps fp32 sharded parameters and gradients (calc's recipe
'fsdp-mixed', the framework's own: calc.spec.memory.STACKS)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.trainers.base import TrainerConfig, flatten

# torchtitan (name, flavor) → calc preset (torchtitan/models/*/__init__.py flavors)
FLAVORS = {("llama3", "8B"): "llama3-8b", ("llama3", "70B"): "llama3-70b",
           ("llama3", "405B"): "llama3.1-405b", ("llama3_1", "8B"): "llama3.1-8b",
           ("deepseek_v3", "671B"): "deepseek-v3"}
OPTIMIZERS = {"adamw": "adamw", "adam": "adamw", "lion": "lion", "muon": "muon",
              "adafactor": "adafactor", "sgd": "sgd"}
RECOMPUTE = {"full": "full", "selective": "selective", "none": "none"}
# The degree keys of both layouts (2024: [training] and [experimental]; 2025: [parallelism])
DEGREE = {"tensor_parallel_degree": "tp", "pipeline_parallel_degree": "pp",
          "context_parallel_degree": "cp", "expert_parallel_degree": "ep"}
SECTIONS = ("training.", "experimental.", "parallelism.")
# Schedules with several stages per rank (torchtitan/distributed/pipeline_parallel.py,
# 1168f9e4d5 :56-113: two per rank without pipeline_parallel_layers_per_stage)
MULTI_STAGE = ("Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble", "LoopedBFS",
               "DualPipeV")


def _key(flat_key: str) -> str:
    """The setting without its section (2024 and 2025 spell the same setting apart)."""
    for section in SECTIONS:
        if flat_key.startswith(section):
            return flat_key[len(section):]
    return flat_key


def read(data: dict[str, Any], path: Path) -> TrainerConfig:
    config = TrainerConfig("torchtitan", str(path), framework="torchtitan")
    flat = flatten(data)
    name, flavor = flat.get("model.name"), flat.get("model.flavor")
    for key, value in flat.items():
        if key in ("model.name", "model.flavor"):
            preset = FLAVORS.get((str(name), str(flavor)))
            config.take(key, value, f"model {preset}" if preset else
                        "no preset for this name and flavor: give MODEL")
            config.model = preset
        elif not _take(config, key, value, flat):
            config.ignored.append(key)
    _defaults(config, flat)
    if "dtype" not in config.options:
        config.options["dtype"] = "bf16"  # mixed_precision_param's default, bfloat16
    return config


def _take(config: TrainerConfig, key: str, value: Any, flat: dict[str, Any]) -> bool:
    setting = _key(key)
    if setting in DEGREE:
        option, n = DEGREE[setting], int(value)
        if option == "tp" and n > 1:
            # torchtitan's TP plan (models/llama3/parallelize.py) shards the norms' and the
            # residual's activations on the sequence: Megatron's sequence parallelism
            config.take(key, value, f"tp {n}, with sequence parallelism", tp=n,
                        sequence_parallel=True)
        else:
            config.take(key, value, f"{option} {n}", **{option: n})
    elif setting == "data_parallel_shard_degree":
        n = int(value)
        if n < 0:
            config.take(key, value, "FSDP over the GPUs left (world / (replicate·cp·tp·pp)): "
                                    "ZeRO 3", zero=3)
        elif n > 1:
            config.take(key, value, f"FSDP over {n}: ZeRO 3", zero=3)
        else:
            config.take(key, value, "no FSDP sharding")
    elif setting == "data_parallel_replicate_degree":
        n = int(value)
        config.take(key, value, "no replication" if n == 1 else
                    f"{n} replicas (HSDP: calc shards over all the data-parallel ranks)")
    elif setting == "expert_tensor_parallel_degree":
        config.take(key, value, f"expert tensor parallelism {value} (calc splits the experts "
                                f"over tp too: not modelled)")
    elif setting == "pipeline_parallel_schedule":
        pp = int(flat.get("parallelism.pipeline_parallel_degree",
                          flat.get("experimental.pipeline_parallel_degree", 1)))
        if pp > 1 and str(value) in MULTI_STAGE and not _layers_per_stage(flat):
            config.take(key, value, "two stages per pipeline rank: vpp 2", vpp=2)
        else:
            config.take(key, value, "one stage per rank" if pp > 1 else
                        "inert: pipeline_parallel_degree = 1")
    elif setting in ("batch_size", "local_batch_size"):
        config.take(key, value, f"micro-batch {int(value)} (per data-parallel rank)",
                    micro_batch=int(value))
    elif setting == "global_batch_size":
        if int(value) > 0:
            config.take(key, value, f"global batch {int(value)} sequences (step)",
                        global_batch=int(value))
        else:
            config.take(key, value, "local batch × dp (no accumulation)")
    elif setting == "seq_len":
        config.take(key, value, f"sequence length {int(value)}", seq_len=int(value))
    elif key == "activation_checkpoint.mode" and str(value) in RECOMPUTE:
        config.take(key, value, f"{RECOMPUTE[str(value)]} recomputation",
                    recompute=RECOMPUTE[str(value)])
    elif key == "activation_checkpoint.selective_ac_option":
        config.take(key, value, "which ops or layers recompute (calc: the granularity alone)")
    elif key == "optimizer.name" and str(value).lower() in OPTIMIZERS:
        name = OPTIMIZERS[str(value).lower()]
        config.take(key, value, f"optimizer {name}", optimizer=name)
    elif key == "model.converters":
        fp8 = any("float8" in str(item) for item in value)
        config.take(key, value, "float8 linear layers" if fp8 else "no float8 converter",
                    **({"precision": "fp8"} if fp8 else {}))
    elif key == "float8.enable_float8_linear":  # 2024's switch
        config.take(key, value, "float8 linear layers" if value else "no float8",
                    **({"precision": "fp8"} if value else {}))
    elif key.startswith(("float8.", "quantize.")) and not _fp8_on(flat):
        config.take(key, value, "configures float8, which nothing turns on (no converter)")
    elif setting == "mixed_precision_param":
        dtype = {"bfloat16": "bf16", "float32": "fp32"}.get(str(value))
        if dtype is None:
            return False
        config.take(key, value, f"compute in {dtype}, fp32 sharded parameters and gradients",
                    dtype=dtype)
    elif setting == "mixed_precision_reduce":
        config.take(key, value, "gradients reduce-scattered in this dtype (calc: the "
                                "framework's buffers)")
    else:
        return False
    return True


def _layers_per_stage(flat: dict[str, Any]) -> bool:
    return flat.get("parallelism.pipeline_parallel_layers_per_stage") is not None


def _fp8_on(flat: dict[str, Any]) -> bool:
    return (any("float8" in str(item) for item in flat.get("model.converters") or [])
            or bool(flat.get("float8.enable_float8_linear")))


def _defaults(config: TrainerConfig, flat: dict[str, Any]) -> None:
    """torchtitan's defaults for what the file leaves out: FSDP over the GPUs left
    (data_parallel_shard_degree -1) and selective recomputation."""
    keys = {_key(key) for key in flat}
    if "data_parallel_shard_degree" not in keys:
        config.take("(default) data_parallel_shard_degree", -1, "FSDP over the GPUs left: "
                    "ZeRO 3", zero=3)
    if "activation_checkpoint.mode" not in flat:
        config.take("(default) activation_checkpoint.mode", "selective",
                    "selective recomputation", recompute="selective")
