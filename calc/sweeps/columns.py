"""The number columns of a sweep (calc.sweep): calc._compiled's formulas traced into
polynomials over the rows' symbols, each computed when its column is first read."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from calc import _compiled, counting
from calc.sweeps.result import Lazy
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


Maker = Callable[[Lazy], np.ndarray | dict[str, np.ndarray]]


@functools.lru_cache(maxsize=64)
def _plan(constants: tuple[tuple[str, int], ...], varying: tuple[tuple[str, bool], ...],
          same: tuple[tuple[str, str], ...]) -> Plan:
    """The formulas traced for these constants and varying symbols (Plan.trace): kept, as a
    sweep of the same models over other values traces the same polynomials."""
    return Plan.trace([_compiled.params_summary, _compiled.flops], dict(constants),
                      dict(varying), keep=set(_OUTPUTS), same=dict(same))


def model_numbers(s: dict[str, Any], n: int) -> tuple[dict[str, Maker], dict[str, str]]:
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


def training(name: str, columns: Lazy, w: dict[str, np.ndarray], n_work: int) -> np.ndarray:
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
