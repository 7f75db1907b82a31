"""The formula symbols of every row of a sweep (calc.sweep): each model's own values, the
swept axes put in, and the rules no spec would break checked row by row."""

from __future__ import annotations

from typing import Any

import numpy as np

from calc.errors import CalcError
from calc.evaluate import (
    KIND_COUNTS,
    LAYER_COUNTS,
    kind_shape_values,
    layer_count_values,
    symbol_values,
)
from calc.presets import Preset
from calc.spec import LayersSpec, ModelSpec
from calc.sweeps.axes import LIMITS


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
    kinds = kind_shape_values(shaped)
    return (*layer_count_values(shaped).values(), *(kinds[name] for name in KIND_COUNTS))

# Axes that change a head shape the kind's own shapes (fixed in its spec) would not follow
HEAD_AXES = ("d_model", "n_heads", "n_kv_heads", "head_dim")


def row_symbols(presets: list[Preset], rows: dict[str, Any], axes: dict[str, np.ndarray]
             ) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """Every formula symbol in every row, the rows a spec allows, and why others are not."""
    specs = [p.spec for p in presets]
    looped = next((spec for spec in specs if spec.loop is not None), None)
    if looped is not None:
        raise CalcError(f"sweep: {looped.name} runs stored layers more than once (loop): its "
                        f"parameters count the stored layers and its FLOPs the passes, which "
                        f"one row of symbols cannot hold; count it with the estimate")
    bases = [symbol_values(spec) for spec in specs]
    model = rows["model"]
    s = {name: _per_model([b[name] for b in bases], model) for name in bases[0]}
    checks: dict[str, Any] = {}
    mla = _per_model([spec.attention.mla is not None for spec in specs], model)
    shaped = next((spec for spec in specs if spec.shaped_kind), None)
    swept = [axis for axis in HEAD_AXES if axis in rows]
    if shaped is not None and swept:
        raise CalcError(f"sweep {swept[0]}: {shaped.name} gives its {shaped.shaped_kind} "
                        f"layers head shapes of their own (attention.kind_shapes), which the "
                        f"axis would not change; drop the axis or the model")
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
            for column, name in enumerate((*LAYER_COUNTS, *KIND_COUNTS)):
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
        # the LM head follows the vocabulary unless the model's is narrower (output_vocab_size
        # keeps its rows, which must stay below the vocabulary)
        narrower = _per_model([spec.output_vocab_size is not None for spec in specs], model)
        s["V_o"] = _where(narrower, s["V_o"], s["V"])
        checks["vocab_size not above output_vocab_size"] = _either(np.logical_not(narrower),
                                                                   s["V_o"] < s["V"])
    s["T"] = rows["seq_len"] if "seq_len" in rows else _per_model(
        [spec.context_length for spec in specs], model)
    if np.any(s["P"]):  # only a learned position table can be run past
        checks["seq_len beyond the learned position table"] = (s["P"] == 0) | (s["T"] <= s["P"])
    s["i_causal"] = 1 - rows["attention"]  # codes: 0 causal, 1 full
    return s, model, checks
