"""calc.sweep: parameters, FLOPs and GPU-hours of millions of configurations at once.

    >>> s = calc.sweep("llama2-7b", d_model=[2048, 4096], n_layers=range(16, 49, 8),
    ...                tokens=[1e12, 2e12], gpu=["a100", "h100"])
    >>> s["gpu_hours"], s.row(0), s.to_dataframe()

A grid is the product of its axes, outermost first: models × d_model × n_layers × n_heads ×
n_kv_heads × head_dim × d_ff (or ffn_ratio) × vocab_size × seq_len × attention, then tokens ×
gpu × mfu × gpus. `grid=False` zips the axes instead (each one value or the same length). An axis
left out keeps each model's own value. Each row describes the spec `spec.updated(...)` would
build, and gets the numbers calc.estimate gives that spec (tests/test_sweep.py checks both):

- d_model changes the width; heads keep their count and their width becomes d_model / n_heads,
  unless the model fixes head_dim (Gemma), is MLA, or head_dim is swept.
- n_heads: KV heads follow it in an MHA model and stay as they are under GQA/MQA.
- ffn_ratio sets d_ff to the nearest integer to ratio × d_model (numpy.rint, ties to even).
- n_layers re-applies the model's layer patterns (mixers, attention kinds, MoE).
- Rows no spec allows (n_heads not dividing d_model, KV heads not dividing heads, no MoE layer
  left, seq_len beyond a learned position table) are dropped and counted in the notes.

The formulas are calc._compiled's, traced into polynomials (calc.sweeps.vectorise) and run
over numpy arrays. Integer columns are int64 where a bound proves them exact, float64 where
they could pass 2⁶³ (the notes say which). numpy is imported here, never on the report path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calc.errors import install

try:
    import numpy as np
except ModuleNotFoundError:  # numpy is the `sweep` extra, not a core dependency
    raise ModuleNotFoundError(f"calc.sweep needs numpy: {install('sweep')}") from None

from calc import counting
from calc.counting import DEFAULT_MFU
from calc.document import Shown
from calc.errors import CalcError
from calc.presets import Preset, get_gpu, resolve
from calc.spec import DTYPES, ModelSpec
from calc.sweeps.axes import integers, names_and_codes, numbers
from calc.sweeps.build import build
from calc.sweeps.result import Columns

Models = str | ModelSpec | Preset | Sequence[str | ModelSpec | Preset]


class Sweep(Columns, Shown):
    """A sweep as a report: its columns (`sweep["gpu_hours"]` is a numpy array, see
    calc.sweeps.result.Columns), the conventions they were counted under, and a table of its
    first rows in notebooks (calc.views.sweep)."""


def sweep(models: Models, *, d_model: Any = None, n_layers: Any = None,
          n_heads: Any = None, n_kv_heads: Any = None, head_dim: Any = None, d_ff: Any = None,
          ffn_ratio: Any = None, vocab_size: Any = None, seq_len: Any = None,
          attention: Any = "causal", tokens: Any = None, gpu: Any = None, mfu: Any = None,
          gpus: Any = 1, dtype: str = "bf16", grid: bool = True) -> Sweep:
    """Every configuration of the axes given (see the module docstring), as a Sweep.

    `models`: a preset name, a spec file, a ModelSpec or Preset, or a list of them (an axis).
    """
    if isinstance(models, str | ModelSpec | Preset):
        models = [models]
    presets = [resolve(m) for m in models]
    if not presets:
        raise CalcError("sweep models: empty; give at least one preset, spec or Preset")
    if d_ff is not None and ffn_ratio is not None:
        raise CalcError("sweep: give d_ff or ffn_ratio, not both")
    if dtype not in DTYPES:
        raise CalcError(f"sweep dtype={dtype!r}: expected one of {', '.join(DTYPES)}")
    axes: dict[str, np.ndarray] = {"model": np.arange(len(presets))}
    labels = {"model": [p.name for p in presets], "attention": ["causal", "full"]}
    for name, value in (("d_model", d_model), ("n_layers", n_layers), ("n_heads", n_heads),
                        ("n_kv_heads", n_kv_heads), ("head_dim", head_dim), ("d_ff", d_ff),
                        ("vocab_size", vocab_size), ("seq_len", seq_len)):
        if value is not None:
            axes[name] = integers(name, value)
    if ffn_ratio is not None:
        axes["ffn_ratio"] = numbers("ffn_ratio", ffn_ratio, upper=None)
    axes["attention"] = names_and_codes("attention", attention, labels["attention"])[1]
    work: dict[str, np.ndarray] = {}
    if gpu is not None:
        names, codes = names_and_codes("gpu", gpu, None)
        labels["gpu"] = [get_gpu(name).name for name in names]  # unknown: "did you mean"
        if tokens is not None:
            work["gpu"] = codes
    if tokens is not None:
        work["tokens"] = numbers("tokens", tokens, upper=None)
        work["mfu"] = numbers("mfu", DEFAULT_MFU if mfu is None else mfu, upper=1.0)
        work["gpus"] = integers("gpus", gpus)
    b = build(presets, axes, work, labels, dtype, grid)
    notes = _notes(b.attention, b.dropped, b.dtypes, labels.get("gpu") if "gpu" in work else None,
                   dtype, b.n_grid, b.n_model, mfu is not None)
    return Sweep(b.n_model, b.n_work, b.grid, b.model, b.work, b.both, labels, b.dtypes, notes,
                 b.columns, b.dropped, b.n_grid - b.n_model)


def _notes(attention: list[str], dropped: dict[str, int], dtypes: dict[str, str],
           gpus: list[str] | None, dtype: str, n_grid: int, n_kept: int,
           mfu_given: bool) -> list[str]:
    lines = [counting.PARAMETERS, counting.FLOPS,
             *(counting.ATTENTION[name] for name in attention),
             counting.PASSES]
    if gpus:
        source = "given" if mfu_given else f"default {DEFAULT_MFU:g}"
        lines.append(f"GPU-hours = training FLOPs / (dense {dtype} peak of the row's GPU × MFU "
                     f"[{source}]) / {counting.SECONDS_PER_HOUR}; days = GPU-hours / (GPUs × "
                     f"{counting.HOURS_PER_DAY}).")
    lines.append(counting.UNITS)
    floats = [name for name, kind in dtypes.items()
              if kind == "float64" and name.startswith(("params_", "flops_weights",
                                                        "flops_attention_seq"))]
    lines.append("Integer counts are exact int64" + (
        f", except {', '.join(floats)}: float64, since they could pass 2⁶³ here."
        if floats else "; flops_forward, flops_train and everything after are float64."))
    if dropped:
        reasons = "; ".join(f"{k}: {v:,}" for k, v in dropped.items())
        lines.append(f"{n_grid - n_kept:,} of {n_grid:,} model shapes dropped, as no spec "
                     f"allows them ({reasons}).")
    return lines
