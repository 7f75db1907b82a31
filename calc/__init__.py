"""calc — exact parameters, FLOPs, GPU-hours and memory of Transformer language models.

    >>> import calc
    >>> report = calc.estimate("llama2-7b", tokens=2e12, gpu="a100")
    >>> report.params.total
    6738415616

Planning: `calc.memory(model, gpu=..., zero=..., dp=...)` (training memory per GPU),
`calc.infer(model, gpu=..., context=..., batch=...)` (KV cache, prefill and decode time) and
`calc.optimal(flops=...)` (compute-optimal N and D); `calc.step(model, gpu=..., gpus=..., tp=...)`
(predicted step time, MFU and GPU-hours of a parallel layout) and `calc.layout(...)` (the
fastest layouts that fit). Tables and notebooks: `calc.compare(...)`,
`calc.conventions_table(...)`, `calc.sweep(...)` (numpy), `calc.model_formulas(...)` (LaTeX),
`calc.plot(...)` (matplotlib). `calc.reproduce()` sets every published training run beside
calc's estimate of it, `calc.reproduce_throughput()` every published throughput measurement
beside the step-time model. All of these load on first use.

Custom models are `calc.ModelSpec(...)` or `calc.spec_from_hf_config("config.json")`; presets
are listed by `calc.list_presets()`. This
package never imports torch (the verifier, calc.verify, does) and its report path never imports
sympy (formulas are compiled into calc._compiled).
"""

from calc.errors import CalcError, UnknownNameError
from calc.evaluate import count_flops, count_params
from calc.hf import spec_from_hf_config
from calc.presets import Preset, get_gpu, list_presets, load_gpus, load_model, load_preset
from calc.reports.estimate import Report, estimate
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
from calc.views import render

__version__ = "0.1.0"

# Imported on first use (PEP 562): numpy, pandas, sympy and the other reports stay off
# `import calc` and the report's path (bench/startup.py). name -> "module:attribute". No module
# directly under calc/ shares one of these names, so importing a report's module never turns
# calc.<name> into a module (tests/test_layout.py).
_LAZY = {
    "memory": "calc.reports.memory:memory",
    "MemoryReport": "calc.reports.memory:MemoryReport",
    "infer": "calc.reports.infer:infer",
    "InferenceReport": "calc.reports.infer:InferenceReport",
    "optimal": "calc.reports.optimal:optimal",
    "OptimalReport": "calc.reports.optimal:OptimalReport",
    "reproduce": "calc.reports.reproduce:reproduce",
    "ReproduceReport": "calc.reports.reproduce:ReproduceReport",
    "reproduce_throughput": "calc.reports.throughput:reproduce_throughput",
    "ThroughputReport": "calc.reports.throughput:ThroughputReport",
    "step": "calc.reports.step:step",
    "StepReport": "calc.reports.step:StepReport",
    "layout": "calc.reports.layout:layout",
    "LayoutReport": "calc.reports.layout:LayoutReport",
    "compare": "calc.reports.compare:compare",
    "Comparison": "calc.reports.compare:Comparison",
    "conventions_table": "calc.reports.conventions:conventions_table",
    "ConventionsTable": "calc.reports.conventions:ConventionsTable",
    "sweep": "calc.reports.sweep:sweep",
    "Sweep": "calc.reports.sweep:Sweep",
    "model_formulas": "calc.reports.formulas:model_formulas",
    "plot": "calc.views.plot:plot",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'calc' has no attribute {name!r}")
    import importlib

    module, _, attribute = _LAZY[name].partition(":")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later lookups skip __getattr__
    return value


__all__ = [  # the eager names, then the lazy ones
    "GPU", "AttentionSpec", "CalcError", "ComputeBudget", "FFNSpec", "InferenceWorkload",
    "MLASpec", "MoESpec", "ModelSpec", "NormSpec", "PositionSpec", "Preset", "Report",
    "TrainingMemory", "UnknownNameError", "Workload", "count_flops", "count_params", "estimate",
    "get_gpu", "list_presets", "load_gpus", "load_model", "load_preset", "render",
    "spec_from_hf_config",
    *_LAZY,
]
