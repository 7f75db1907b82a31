"""calc — exact parameters, FLOPs, GPU-hours and memory of Transformer language models.

    >>> import calc
    >>> report = calc.estimate("llama2-7b", tokens=2e12, gpu="a100")
    >>> report.params.total
    6738415616

Planning: `calc.memory(model, gpu=..., zero=..., dp=...)` (training memory per GPU),
`calc.infer(model, gpu=..., context=..., batch=...)` (KV cache, prefill and decode time; with
`input_len=`, `output_len=` and `concurrency=` or `request_rate=`, serving: tokens/s, TTFT,
TPOT, the layout and its cost) and
`calc.optimal(flops=...)` (compute-optimal N and D); `calc.step(model, gpu=..., gpus=..., tp=...)`
(predicted step time, MFU and GPU-hours of a parallel layout) and `calc.layout(...)` (the
fastest layouts that fit). Tables and notebooks: `calc.compare(...)`,
`calc.conventions_table(...)`, `calc.sweep(...)` (numpy), `calc.model_formulas(...)` (LaTeX),
`calc.plot(...)` (matplotlib). `calc.reproduce()` sets every published training run beside
calc's estimate of it, `calc.reproduce_throughput()` every published throughput measurement
beside the step-time model, `calc.reproduce_serving()` every published serving benchmark beside
the serving model. All of these load on first use.

Custom models are `calc.ModelSpec(...)` or `calc.spec_from_hf_config("config.json")`; presets
are listed by `calc.list_presets()`. This
package never imports torch (the verifier, calc.verify, does) and its report path never imports
sympy (formulas are compiled into calc._compiled).
"""

import gc
import sys

# `python -m calc ...` is a short process that allocates many long-lived objects while it imports
# (pydantic's model classes, calc's specs and tables): at CPython's default first threshold of
# 700 allocations (Python 3.11 `gc.get_threshold()`) the main command ran some 60 young-generation
# collections that freed next to nothing, about 5 % of its time (bench/startup.py). The package
# is imported before calc/__main__.py runs, while sys.argv[0] is still "-m" (the `python -m`
# documentation), so the threshold is raised here, for a process started as `python -m calc` or
# `python -m calc.<module>` alone (sys.orig_argv): a program, a notebook or another package's
# `python -m` that imports calc keeps its own. The collector stays on (long commands: web, sweeps).
if sys.argv[:1] == ["-m"] and "-m" in sys.orig_argv[:-1] and \
        sys.orig_argv[sys.orig_argv.index("-m") + 1].partition(".")[0] == "calc":
    gc.set_threshold(100_000, *gc.get_threshold()[1:])

from calc.lazy import lazy_dir, lazy_getattr
from calc.views import render  # and with it calc.document.renderer: reports show in notebooks

__version__ = "0.1.0"

# Every name loads on first use (PEP 562, calc.lazy): `python -m calc` imports this package before
# any command runs, so what it imports every command pays for (bench/startup.py); numpy, pandas,
# sympy, torch, pydantic and the reports stay off `import calc`. name -> "module:attribute". No
# module directly under calc/ shares one of these names, so importing a report's module never
# turns calc.<name> into a module (tests/test_layout.py).
_LAZY = {
    "CalcError": "calc.errors:CalcError",
    "UnknownNameError": "calc.errors:UnknownNameError",
    "count_flops": "calc.evaluate:count_flops",
    "count_params": "calc.evaluate:count_params",
    "spec_from_hf_config": "calc.hf:spec_from_hf_config",
    "Preset": "calc.presets:Preset",
    "get_gpu": "calc.presets:get_gpu",
    "list_presets": "calc.presets:list_presets",
    "load_gpus": "calc.presets:load_gpus",
    "load_model": "calc.presets:load_model",
    "load_preset": "calc.presets:load_preset",
    "estimate": "calc.reports.estimate:estimate",
    "Report": "calc.reports.estimate:Report",
    "GPU": "calc.spec.hardware:GPU",
    "AttentionSpec": "calc.spec.model:AttentionSpec",
    "ComputeBudget": "calc.spec.budget:ComputeBudget",
    "FFNSpec": "calc.spec.model:FFNSpec",
    "InferenceWorkload": "calc.spec.inference:InferenceWorkload",
    "MLASpec": "calc.spec.model:MLASpec",
    "ModelSpec": "calc.spec.model:ModelSpec",
    "MoESpec": "calc.spec.model:MoESpec",
    "NormSpec": "calc.spec.model:NormSpec",
    "PositionSpec": "calc.spec.model:PositionSpec",
    "TrainingMemory": "calc.spec.memory:TrainingMemory",
    "Workload": "calc.spec.workload:Workload",
    "memory": "calc.reports.memory:memory",
    "MemoryReport": "calc.reports.memory:MemoryReport",
    "infer": "calc.reports.infer:infer",
    "reproduce_serving": "calc.reports.serving_runs:reproduce_serving",
    "InferenceReport": "calc.reports.infer:InferenceReport",
    "optimal": "calc.reports.optimal:optimal",
    "OptimalReport": "calc.reports.optimal:OptimalReport",
    "reproduce": "calc.reports.reproduce:reproduce",
    "ReproduceReport": "calc.reports.reproduce:ReproduceReport",
    "reproduce_throughput": "calc.reports.throughput:reproduce_throughput",
    "ThroughputReport": "calc.reports.throughput:ThroughputReport",
    "reproduce_finetune": "calc.reports.finetune_runs:reproduce_finetune",
    "FinetuneReproduction": "calc.reports.finetune_runs:FinetuneReproduction",
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
__getattr__ = lazy_getattr(__name__, _LAZY)
__dir__ = lazy_dir(__name__, _LAZY)

__all__ = ["render", *_LAZY]
