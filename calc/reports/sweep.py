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

import functools
from collections.abc import Callable, Sequence
from typing import Any

from calc.errors import install

try:
    import numpy as np
except ModuleNotFoundError:  # numpy is the `sweep` extra, not a core dependency
    raise ModuleNotFoundError(f"calc.sweep needs numpy: {install('sweep')}") from None

from calc import _compiled, counting
from calc.counting import DEFAULT_MFU
from calc.document import Shown
from calc.errors import CalcError
from calc.evaluate import LAYER_COUNTS, layer_count_values, symbol_values
from calc.presets import Preset, get_gpu, resolve
from calc.spec import DTYPES, LayersSpec, ModelSpec
from calc.sweeps.axes import LIMITS, integers, names_and_codes, numbers, rows_of
from calc.sweeps.result import Columns, Lazy
from calc.sweeps.vectorise import CHUNK, FLOAT_CHUNK, Deferred, Plan, each_chunk
from calc.symbols import INFO

_OUTPUTS = {"total": "params_total", "embedding": "params_embedding",
            "non_embedding": "params_non_embedding", "active": "params_active",
            "weights_per_token": "flops_weights", "attention_per_sequence": "flops_attention_seq"}
# calc._compiled.training recorded once on placeholders: each output is evaluated on its own,
# and only when its column is read.
_TRAINING_OUTPUTS = {"flops": "training_flops", "gpu_hours": "gpu_hours", "days": "days"}
_TRAINING = {_TRAINING_OUTPUTS[key]: formula for key, formula in _compiled.training(
    {name: Deferred.leaf(name) for name in ("F", "D", "u", "K", "R")}).items()}
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
    return _build(presets, axes, work, labels, dtype, grid, mfu_given=mfu is not None)


def _per_model(values: list[Any], model: Any) -> Any:
    """One value per model → that value in every row (a scalar when the models agree)."""
    if all(v == values[0] for v in values):
        return values[0]
    return np.asarray(values)[model]


def _where(condition: Any, a: Any, b: Any) -> Any:
    if isinstance(condition, bool | np.bool_):
        return a if condition else b
    return np.where(condition, a, b)


def _either(condition: Any, ok: Any) -> Any:
    """condition | ok, without a pass over the rows when the condition is one value."""
    if isinstance(condition, bool | np.bool_):
        return True if condition else ok
    return condition | ok


def _uniform(spec: ModelSpec) -> bool:
    """Every layer global attention and a dense FFN, whatever the depth."""
    return (spec.moe is None and spec.ffn is not None and spec.layers == LayersSpec()
            and set(spec.attention_kinds) == {"global"})


def _layer_counts(spec: ModelSpec, n_layers: int) -> tuple[int, ...]:
    """The layers of each kind (LAYER_COUNTS) of `spec` with n_layers layers (its patterns
    re-applied; an exception beyond the new depth is dropped)."""
    layers = spec.layers.model_copy(update={"exceptions": tuple(
        e.model_copy(update={"layers": tuple(i for i in e.layers if i < n_layers)})
        for e in spec.layers.exceptions)})
    shaped = spec.model_copy(update={"n_layers": int(n_layers), "layers": layers})  # only read
    return tuple(layer_count_values(shaped).values())


def _symbols(presets: list[Preset], rows: dict[str, Any], axes: dict[str, np.ndarray]
             ) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """Every formula symbol in every row, the rows a spec allows, and why others are not."""
    specs = [p.spec for p in presets]
    bases = [symbol_values(spec) for spec in specs]
    model = rows["model"]
    s = {name: _per_model([b[name] for b in bases], model) for name in bases[0]}
    checks: dict[str, Any] = {}
    mla = _per_model([spec.attention.mla is not None for spec in specs], model)
    if "d_model" in rows:
        s["d"] = rows["d_model"]
        # the embedding follows the width unless the model projects it (OPT's d_embedding)
        projected = _per_model([spec.d_embedding is not None for spec in specs], model)
        s["d_emb"] = _where(projected, s["d_emb"], s["d"])
    if "n_layers" in rows:
        s["L"] = rows["n_layers"]
        if all(_uniform(spec) for spec in specs):  # every layer attention and a dense FFN
            s["L_att"] = s["L_dense"] = s["L"]  # the other counts are 0 at every depth
        else:
            present = np.zeros(int(axes["n_layers"].max()) + 1, dtype=bool)
            present[axes["n_layers"]] = True  # the distinct depths, without sorting every row
            table = np.array([[_layer_counts(spec, n) for n in np.flatnonzero(present)]
                              for spec in specs])
            for column, name in enumerate(LAYER_COUNTS):
                counts = table[:, :, column]
                if counts.min() == counts.max():  # the same for every depth
                    s[name] = int(counts.flat[0])
                else:
                    s[name] = counts[model, (np.cumsum(present) - 1)[s["L"]]]
        checks["no MoE layer left"] = _where(
            _per_model([spec.moe is not None for spec in specs], model), s["L_moe"] > 0, True)
    if "n_heads" in rows:
        s["h"] = rows["n_heads"]
        mha = _per_model([spec.n_kv_heads == spec.attention.n_heads for spec in specs], model)
        s["h_kv"] = _where(mha, s["h"], s["h_kv"])
    if "n_kv_heads" in rows:
        if np.any(mla):
            raise CalcError("sweep n_kv_heads: has no meaning with attention.mla (every head "
                            "has its own keys); drop the axis or the MLA model")
        s["h_kv"] = rows["n_kv_heads"]
    if "n_kv_heads" in rows or "n_heads" in rows:
        checks["n_kv_heads does not divide n_heads"] = _either(mla, s["h"] % s["h_kv"] == 0)
    if "head_dim" in rows:
        if np.any(mla):
            raise CalcError("sweep head_dim: has no meaning with attention.mla; give the MLA "
                            "widths in the spec instead")
        s["d_qk"] = s["d_v"] = rows["head_dim"]
    elif "d_model" in rows or "n_heads" in rows:
        fixed = _per_model([spec.attention.mla is not None or spec.attention.head_dim is not None
                            for spec in specs], model)
        width, rest = np.divmod(s["d"], s["h"])  # one pass for both
        s["d_qk"], s["d_v"] = _where(fixed, s["d_qk"], width), _where(fixed, s["d_v"], width)
        checks["n_heads does not divide d_model"] = _either(fixed, rest == 0)
    if "d_ff" in rows:
        s["d_ff"] = rows["d_ff"]
    elif "ffn_ratio" in rows:
        s["d_ff"] = np.rint(rows["ffn_ratio"] * s["d"]).astype(np.int64)
        checks["ffn_ratio × d_model outside d_ff's range"] = (
            (s["d_ff"] >= 1) & (s["d_ff"] <= LIMITS["d_ff"]))
    if "vocab_size" in rows:
        s["V"] = rows["vocab_size"]
    s["T"] = rows["seq_len"] if "seq_len" in rows else _per_model(
        [spec.context_length for spec in specs], model)
    if np.any(s["P"]):  # only a learned position table can be run past
        checks["seq_len beyond the learned position table"] = (s["P"] == 0) | (s["T"] <= s["P"])
    s["i_causal"] = 1 - rows["attention"]  # codes: 0 causal, 1 full
    return s, model, checks


def _build(presets: list[Preset], axes: dict[str, np.ndarray], work: dict[str, np.ndarray],
           labels: dict[str, list[str]], dtype: str, grid: bool, mfu_given: bool) -> Sweep:
    if grid:
        n_grid, rows = rows_of(axes, grid=True)
    else:  # the workload axes zip with the model axes
        n_grid, _ = rows_of({**axes, **work}, grid=False)
        rows = rows_of(axes, grid=False, n=n_grid)[1]
    s, model, checks = _symbols(presets, rows, axes)
    valid: Any = True
    for ok in checks.values():
        valid = ok if valid is True else ok & valid
    keep = None if np.all(valid) else np.flatnonzero(valid)
    dropped = {}  # rows each rule rejects (a row may break several)
    for reason, ok in checks.items() if keep is not None else ():
        bad = int(np.count_nonzero(~np.broadcast_to(ok, (n_grid,))))
        if bad:
            dropped[reason] = bad
    n_a = n_grid if keep is None else len(keep)
    if n_a == 0:
        raise CalcError(f"sweep: no configuration is valid ({'; '.join(dropped)})")

    def pick(values: Any) -> Any:
        return values[keep] if keep is not None and isinstance(values, np.ndarray) else values

    s = {name: pick(v) for name, v in s.items()}
    inputs = {"model": pick(model), "d_model": s["d"], "n_layers": s["L"], "n_heads": s["h"],
              "n_kv_heads": s["h_kv"], "head_dim": s["d_qk"], "d_ff": s["d_ff"],
              "vocab_size": s["V"], "seq_len": s["T"], "attention": 1 - s["i_causal"]}
    makers, dtypes = _modelnumbers(s, n_a)
    columns = Lazy(inputs, makers)  # a number is computed when its column is first read
    used = [labels["attention"][code] for code in np.unique(axes["attention"])]
    gpus = labels.get("gpu") if "gpu" in work else None
    notes = _notes(used, dropped, dtypes, gpus, dtype, n_grid, n_a, mfu_given)
    if not work:
        return Sweep(n_a, 1, True, columns, {}, Lazy({}), labels, dtypes, notes, list(columns),
                     dropped, n_grid - n_a)
    if grid:
        n_b, w = rows_of(work, grid=True)
    else:
        n_b, w = n_a, {k: pick(v) for k, v in rows_of(work, grid=False, n=n_grid)[1].items()}
    w = {k: np.broadcast_to(v, (n_b,)) for k, v in w.items()}
    if "gpu" in w:
        peaks = np.array([get_gpu(name).peak_flops(dtype) for name in labels["gpu"]])
        w["R"] = peaks[w["gpu"]]
    names = ["training_flops", *(["gpu_hours", "days"] if "R" in w else [])]
    n_work = n_b if grid else 0
    both = Lazy({}, {name: lambda _, name=name: _training(name, columns, w, n_work)
                     for name in names})
    return Sweep(n_a, n_b, grid, columns, {k: w[k] for k in work}, both, labels, dtypes,
                 notes, [*inputs, *work, *makers, *names], dropped, n_grid - n_a)


Maker = Callable[[Lazy], np.ndarray | dict[str, np.ndarray]]


@functools.lru_cache(maxsize=64)
def _plan(constants: tuple[tuple[str, int], ...], varying: tuple[tuple[str, bool], ...],
          same: tuple[tuple[str, str], ...]) -> Plan:
    """The formulas traced for these constants and varying symbols (Plan.trace): kept, as a
    sweep of the same models over other values traces the same polynomials."""
    return Plan.trace([_compiled.params_summary, _compiled.flops], dict(constants),
                      dict(varying), keep=set(_OUTPUTS), same=dict(same))


def _modelnumbers(s: dict[str, Any], n: int) -> tuple[dict[str, Maker], dict[str, str]]:
    """How to compute each number column of the rows (the compiled formulas, traced), and the
    dtype each has; nothing is computed until a column is read, and only what it needs: forward
    and training FLOPs read alone are made block by block from the two FLOP polynomials, which
    are not kept."""
    arrays_of = {name: v for name, v in s.items() if isinstance(v, np.ndarray)}
    first: dict[int, str] = {}  # a symbol given the very array of another is that one's atom
    same: dict[str, str] = {}
    for name, values in arrays_of.items():
        if first.setdefault(id(values), name) != name:
            same[name] = first[id(values)]
    varying = {name: INFO[name].kind == "indicator" or name == "i_causal" for name in arrays_of}
    constants = {name: int(v) for name, v in s.items() if name not in arrays_of}
    plan = _plan(tuple(constants.items()), tuple(varying.items()), tuple(same.items()))
    arrays = {name: np.ascontiguousarray(v, dtype=np.int64) for name, v in arrays_of.items()
              if name not in same}
    kinds = plan.dtypes(arrays)  # bounds only: no formula is run here
    flops_ = ("weights_per_token", "attention_per_sequence")
    flops_block = plan.block(arrays, flops_)

    def polynomial(*keys: str) -> Maker:  # outputs run together share their products
        return lambda _: {_OUTPUTS[key]: value for key, value in
                          plan.run(arrays, n, keys=set(keys), dtypes=kinds).items()}

    def t_of(part: slice) -> Any:
        return s["T"][part] if isinstance(s["T"], np.ndarray) else s["T"]

    def forward_of(weights: np.ndarray, per_seq: np.ndarray, t: Any) -> np.ndarray:
        if per_seq.dtype == np.int64:  # forward = weights + per_sequence / T, exactly
            whole, rest = np.divmod(per_seq, t)  # as calc.evaluate rounds it
            return (weights + whole).astype(np.float64) + rest / t
        return weights + per_seq / t

    def forward_times(factor: int) -> Maker:
        """factor × forward FLOPs per token: from the FLOP columns when they are made, else
        from their polynomials block by block."""
        def make(columns: Lazy) -> np.ndarray:
            out = np.empty(n)
            if columns.made("flops_weights"):
                weights, per_seq = columns["flops_weights"], columns["flops_attention_seq"]

                def chunk(lo: int, hi: int) -> None:
                    part = slice(lo, hi)
                    out[part] = forward_of(weights[part], per_seq[part], t_of(part))
                    if factor != 1:
                        out[part] *= factor
            else:
                def chunk(lo: int, hi: int) -> None:
                    parts = {key: np.empty(hi - lo, dtype=kinds[key]) for key in flops_}
                    flops_block(lo, hi, parts)
                    out[lo:hi] = forward_of(*parts.values(), t_of(slice(lo, hi)))
                    if factor != 1:
                        out[lo:hi] *= factor

            each_chunk(n, CHUNK if not columns.made("flops_weights") else FLOAT_CHUNK, chunk)
            return out
        return make

    def share(columns: Lazy) -> np.ndarray:
        per_seq, forward_ = columns["flops_attention_seq"], columns["flops_forward"]
        out = np.empty(n)

        def chunk(lo: int, hi: int) -> None:
            part = slice(lo, hi)
            out[part] = per_seq[part] / t_of(part) / forward_[part]

        each_chunk(n, FLOAT_CHUNK, chunk)
        return out

    # Forward FLOPs need both FLOP polynomials; a parameter count is read on its own.
    makers: dict[str, Maker] = {_OUTPUTS[key]: polynomial(*(flops_ if key in flops_ else [key]))
                                for key in plan.outputs}
    makers["flops_forward"] = forward_times(1)
    makers["flops_train"] = lambda columns: (
        counting.TRAIN_PER_FORWARD * columns["flops_forward"] if columns.made("flops_forward")
        else forward_times(counting.TRAIN_PER_FORWARD)(columns))
    makers["attention_share"] = share
    dtypes = {_OUTPUTS[key]: np.dtype(kind).name for key, kind in kinds.items()}
    dtypes |= {name: "float64" for name in ("flops_forward", "flops_train", "attention_share")}
    return makers, dtypes


def _training(name: str, columns: Lazy, w: dict[str, np.ndarray], n_work: int) -> np.ndarray:
    """Training FLOPs, GPU-hours or days (calc._compiled.training) of every configuration.

    `n_work` > 0: a grid, every model row × every workload row; 0: rows zipped. Computed in
    blocks that fit in the cache, which is several times faster than whole-array temporaries.
    """
    train, formula = columns["flops_train"], _TRAINING[name]
    out = np.empty(len(train) * max(n_work, 1))

    def chunk(lo: int, hi: int) -> None:
        if n_work:
            work = {k: v[None, :] for k, v in w.items()}
            values, dest = {"F": train[lo:hi, None]}, out[lo * n_work:hi * n_work]
            dest = dest.reshape(hi - lo, n_work)
        else:
            work = {k: v[lo:hi] for k, v in w.items()}
            values, dest = {"F": train[lo:hi]}, out[lo:hi]
        values.update(D=work["tokens"], u=work["mfu"], K=work["gpus"], R=work.get("R", 1.0))
        formula.evaluate(values, out=dest)

    each_chunk(len(train), max(1, FLOAT_CHUNK // n_work) if n_work else FLOAT_CHUNK, chunk)
    return out


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
