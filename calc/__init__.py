"""calc — exact parameters, FLOPs, GPU-hours and memory of Transformer language models.

    >>> import calc
    >>> report = calc.estimate("llama2-7b", tokens=2e12, gpu="a100")
    >>> report.params.total
    6738415616

Custom models are `calc.ModelSpec(...)`; presets are listed by `calc.list_presets()`;
`calc.reproduce()` sets every published training run beside calc's estimate of it. This
package never imports torch (the verifier, calc.verify, does) and its report path never imports
sympy (formulas are compiled into calc._compiled).
"""

from calc.errors import CalcError, UnknownNameError
from calc.evaluate import count_flops, count_params
from calc.presets import Preset, get_gpu, list_presets, load_gpus, load_model, load_preset
from calc.render import render
from calc.report import Report, estimate
from calc.reproduction import ReproduceReport, reproduce
from calc.spec import (
    GPU,
    AttentionSpec,
    FFNSpec,
    MLASpec,
    ModelSpec,
    MoESpec,
    NormSpec,
    PositionSpec,
    Workload,
)

__version__ = "0.1.0"

__all__ = [
    "GPU",
    "AttentionSpec",
    "CalcError",
    "FFNSpec",
    "MLASpec",
    "MoESpec",
    "ModelSpec",
    "NormSpec",
    "PositionSpec",
    "Preset",
    "Report",
    "ReproduceReport",
    "UnknownNameError",
    "Workload",
    "count_flops",
    "count_params",
    "estimate",
    "get_gpu",
    "list_presets",
    "load_gpus",
    "load_model",
    "load_preset",
    "render",
    "reproduce",
]
