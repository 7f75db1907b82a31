"""calc.step's options from a trainer config (`step --from FILE`, read by calc.trainers, the
same readers as `memory --from`), with the flags given over them: the layout, the offload, the
options only calc.memory's verdict needs, and the echo of what was read, ignored and overridden.

The batch per step is the file's global batch (Megatron-LM --global-batch-size, DeepSpeed
train_batch_size, torchtitan global_batch_size), or micro-batch × accumulation steps ×
data-parallel ranks, each stack's own default (DeepSpeed, transformers, axolotl
gradient_accumulation_steps; one micro-batch per step when the file has none); the data-parallel
ranks are the GPUs left after tp, pp and cp, so a file that does not say how many GPUs it runs
on needs --gpus.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calc.errors import CalcError
from calc.presets import Preset
from calc.reports._memory_options import ConfigEcho, config_echo
from calc.spec import ModelSpec
from calc.spec.layout import Layout
from calc.trainers import Setting, read_trainer_config

LAYOUT = tuple(Layout.model_fields)
OFFLOAD = ("offload_optimizer", "offload_params", "host_memory_gib", "gpus_per_node",
           "nvme_read_gb_s", "nvme_write_gb_s")
MEMORY_ONLY = ("recipe", "optimizer", "precision")  # they change `fits`, not the step time
# What the step-time model does not price (calc.timing prices full training).
NOT_MODELLED = {"finetune": "LoRA/QLoRA step time is not modelled",
                "lora_rank": "LoRA", "lora_targets": "LoRA", "base_dtype": "QLoRA",
                "double_quant": "QLoRA", "paged": "paged optimizer states"}
# The software stack whose constants price the step (presets/timing.toml), by file format.
FRAMEWORKS = {"deepspeed": "deepspeed", "megatron": "megatron", "torchtitan": "torchtitan"}


@dataclass
class StepConfig:
    model: str | ModelSpec | Preset | None
    layout: dict[str, Any]
    offload: dict[str, Any]
    memory: dict[str, Any]
    echo: ConfigEcho
    notes: list[str] = field(default_factory=list)


def step_config(from_file: str, model: str | ModelSpec | Preset | None, gpus: int | None,
                given: dict[str, Any]) -> StepConfig:
    """The options of `from_file` with the `given` ones (the flags, None where not given) over
    them; CalcError when the file and the GPUs disagree."""
    config = read_trainer_config(from_file)
    given = {key: value for key, value in given.items() if value is not None}
    options = dict(config.options)
    notes: list[str] = []
    if options.pop("precision", None) == "fp8":  # FP8 GEMMs: the step's fp8 dtype
        options.setdefault("memory_precision", "fp8")
        options["dtype"] = "fp8"
    framework = FRAMEWORKS.get(config.format)
    if framework is not None:
        options["framework"] = framework
    accumulation = options.pop("gradient_accumulation", None)
    merged = {**options, **given}
    read, ignored = [], list(config.ignored)
    for setting in config.read:
        dropped = [NOT_MODELLED[o] for o in setting.options if o in NOT_MODELLED]
        if dropped:
            ignored.append(f"{setting.key} ({dropped[0]})")
        else:
            read.append(setting)
    if framework is not None:
        read.append(Setting("(format)", config.format, f"framework {framework}: its stack's "
                                                       f"constants price the step"))
    layout = {k: merged[k] for k in LAYOUT if k in merged}
    _batch(layout, accumulation, gpus, config.path)
    memory = {k: merged[k] for k in MEMORY_ONLY if k in merged}
    if "memory_precision" in merged:
        memory["precision"] = merged["memory_precision"]
    if memory.get("optimizer", "adamw") != "adamw":
        notes.append(f"{config.path}: optimizer {memory['optimizer']}: calc.memory counts its "
                     f"states; the step time prices AdamW's optimizer streams")
    return StepConfig(
        model=model if model is not None else config.model, layout=layout,
        offload={k: merged[k] for k in OFFLOAD if k in merged}, memory=memory,
        echo=config_echo(config, given, ignored, read, options), notes=notes)


def _batch(layout: dict[str, Any], accumulation: int | None, gpus: int | None,
           path: str) -> None:
    """Resolve the global batch from the accumulation steps, and check the two agree."""
    if gpus is None and "dp" not in layout:
        raise CalcError(f"--from {path}: the file does not say how many GPUs the run has; "
                        f"give --gpus (or --dp)")
    model_parallel = layout.get("tp", 1) * layout.get("pp", 1) * layout.get("cp", 1)
    dp = layout.get("dp") or (gpus // model_parallel if gpus else 1)
    if "global_batch" not in layout:  # each stack's own default (Megatron-LM, torchtitan too)
        layout["global_batch"] = layout.get("micro_batch", 1) * (accumulation or 1) * dp
        return
    if accumulation is None:
        return
    per_rank = layout["global_batch"] // (accumulation * dp) if dp else 0
    micro = layout.setdefault("micro_batch", max(per_rank, 1))
    if micro * accumulation * dp != layout["global_batch"]:
        raise CalcError(f"--from {path}: global batch {layout['global_batch']} ≠ micro-batch "
                        f"{micro} × {accumulation} accumulation steps × dp {dp} (the file's "
                        f"batch does not match the GPUs)")
