"""calc — exact parameters, FLOPs, GPU-hours and memory of Transformer language models.

    >>> import calc
    >>> report = calc.estimate("llama2-7b", tokens=2e12, gpu="a100")
    >>> report.params.total
    6738415616

Planning: `calc.memory(model, gpu=..., zero=..., dp=...)` (training memory per GPU),
`calc.infer(model, gpu=..., context=..., batch=...)` (KV cache, prefill and decode time) and
`calc.optimal(flops=...)` (compute-optimal N and D).

Custom models are `calc.ModelSpec(...)`; presets are listed by `calc.list_presets()`. This
package never imports torch (the verifier, calc.verify, does) and its report path never imports
sympy (formulas are compiled into calc._compiled).
"""

from calc.errors import CalcError, UnknownNameError
from calc.evaluate import count_flops, count_params
from calc.presets import Preset, get_gpu, list_presets, load_gpus, load_model, load_preset
from calc.render import render
from calc.report import Report, estimate
from calc.spec import (
    GPU,
    AttentionSpec,
    ComputeBudget,
    FFNSpec,
    InferenceWorkload,
    MLASpec,
    ModelSpec,
    MoESpec,
    NormSpec,
    PositionSpec,
    TrainingMemory,
    Workload,
)

__version__ = "0.1.0"

# The planning reports load on first use, so `import calc` (and the main report) stays lean.
_LAZY = {
    "memory": "calc.plan.memory", "MemoryReport": "calc.plan.memory",
    "infer": "calc.plan.inference", "InferenceReport": "calc.plan.inference",
    "optimal": "calc.plan.optimal", "OptimalReport": "calc.plan.optimal",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calc' has no attribute {name!r}")

__all__ = [
    "GPU",
    "AttentionSpec",
    "CalcError",
    "ComputeBudget",
    "FFNSpec",
    "InferenceReport",
    "InferenceWorkload",
    "MLASpec",
    "MemoryReport",
    "MoESpec",
    "ModelSpec",
    "NormSpec",
    "OptimalReport",
    "PositionSpec",
    "Preset",
    "Report",
    "TrainingMemory",
    "UnknownNameError",
    "Workload",
    "count_flops",
    "count_params",
    "estimate",
    "get_gpu",
    "infer",
    "list_presets",
    "load_gpus",
    "load_model",
    "load_preset",
    "memory",
    "optimal",
    "render",
]
