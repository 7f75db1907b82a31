"""Per-layer lists, as configs spell them, → calc's compact per-layer spec (calc.spec.layers).

A config says which layer has which mixer, attention kind or FFN in many ways: `layer_types`,
`sliding_window_pattern`, `no_rope_layers`, `mlp_only_layers`, `moe_layers`,
`first_k_dense_replace`, `interleave_moe_layer_step`, `attn_layer_period`/`offset`, ... A reader
turns its config's rule into one list per layer (what transformers' modeling code builds for
layer i) and `per_layer` writes the lists as the spec does: the shortest repeating pattern with
the fewest exceptions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from calc.hf.fields import HFConfig
from calc.spec.layers import MAX_PATTERN

# layer_types values across transformers' configs → calc's mixer and attention kind
LAYER_TYPES: dict[str, tuple[str, str]] = {
    "full_attention": ("attention", "global"), "sliding_attention": ("attention", "local"),
    "chunked_attention": ("attention", "chunked"), "linear_attention": ("deltanet", ""),
    "conv": ("conv", ""), "mamba": ("mamba", ""), "attention": ("attention", "global"),
}


def compact(values: list[str]) -> tuple[tuple[str, ...], dict[int, str]]:
    """The pattern that, repeated, gives `values` in the fewest entries (an exception weighing
    two: a layer and its kind; then the shortest pattern), and the exceptions by index."""
    best: tuple[int, int, tuple[str, ...], dict[int, str]] | None = None
    for period in range(1, min(len(values), MAX_PATTERN) + 1):
        pattern = tuple(Counter(values[r::period]).most_common(1)[0][0] for r in range(period))
        exceptions = {i: v for i, v in enumerate(values) if v != pattern[i % period]}
        cost = period + 2 * len(exceptions)
        if best is None or (cost, period) < best[:2]:
            best = (cost, period, pattern, exceptions)
    assert best is not None
    return best[2], best[3]


def _fill(kinds: list[str]) -> list[str]:
    """Attention kinds with the layers that have no attention ('') given their neighbour's kind
    (which they ignore), so the pattern stays short."""
    known = [k for k in kinds if k]
    last = known[0] if known else "global"
    filled = []
    for kind in kinds:
        last = kind or last
        filled.append(last)
    return filled


def per_layer(c: HFConfig, mixers: list[str] | None = None, attention: list[str] | None = None,
              ffn: list[str] | None = None) -> dict[str, Any]:
    """Spec fields for per-layer lists of mixers, attention kinds ('' where a layer has no
    attention) and FFN kinds: {"attention": {...}, "layers": {...}} to merge into a spec."""
    layers: dict[str, Any] = {}
    at: dict[tuple[str, str], list[int]] = {}
    out: dict[str, Any] = {"layers": layers}
    if mixers is not None and set(mixers) != {"attention"}:
        layers["mixer_pattern"], exceptions = compact(mixers)
        for i, value in exceptions.items():
            at.setdefault(("mixer", value), []).append(i)
    if attention is not None:
        kinds = _fill(attention)
        used = {k for k in attention if k}
        attn: dict[str, Any] = {}
        if "local" in used:
            attn["sliding_window"] = c.size("sliding_window")
        if "chunked" in used:
            attn["chunk_size"] = c.size("attention_chunk_size")
        if used - {"global"}:
            attn["layer_pattern"], exceptions = compact(kinds)
            for i, value in exceptions.items():
                at.setdefault(("attention", value), []).append(i)
        out["attention"] = attn
    if ffn is not None:
        layers["ffn_pattern"], exceptions = compact(ffn)
        for i, value in exceptions.items():
            at.setdefault(("ffn", value), []).append(i)
    if at:
        layers["exceptions"] = [{"layers": indices, field: value}
                                for (field, value), indices in sorted(at.items())]
    if len(layers["exceptions"] if "exceptions" in layers else ()) > MAX_PATTERN:
        c.fail(f"its layers differ from any repeating pattern in more than {MAX_PATTERN} "
               f"places; calc's spec holds at most that many exceptions")
    return out


def merge(spec: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
    """A reader's spec fields with per_layer's attention fields and layers."""
    spec["attention"] = {**spec.get("attention", {}), **layout.get("attention", {})}
    spec["layers"] = layout["layers"]
    return spec


def moe_layout(c: HFConfig, is_moe: list[bool]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(moe fields, spec fields) putting MoE FFNs where `is_moe` says: moe.first_dense_layers
    and moe.every when they can (DeepSeek's first_k_dense_replace), else the layers' FFN
    pattern and exceptions (Qwen3-MoE's mlp_only_layers, DeepSeek's moe_layer_freq)."""
    first = is_moe.index(True)
    for every in range(1, len(is_moe) + 1):
        if all((i >= first and (i + 1) % every == 0) == moe for i, moe in enumerate(is_moe)):
            return {"first_dense_layers": first, "every": every}, {}
    return {}, {"layers": per_layer(c, ffn=ffn_kinds(is_moe))["layers"]}


def ffn_kinds(is_moe: list[bool]) -> list[str]:
    """'moe' or 'dense' per layer."""
    return ["moe" if moe else "dense" for moe in is_moe]


def kinds_of(c: HFConfig, key: str = "layer_types") -> tuple[list[str], list[str]]:
    """Mixers and attention kinds per layer from a config's `layer_types`."""
    types = c[key]
    if not isinstance(types, list) or len(types) != c.size("num_hidden_layers"):
        c.fail(f"{key} must list one type per layer ({c['num_hidden_layers']}), got {types!r}")
    for kind in types:
        if kind not in LAYER_TYPES:
            c.fail(f"{key} has {kind!r}; calc reads {', '.join(LAYER_TYPES)}")
    return [LAYER_TYPES[t][0] for t in types], [LAYER_TYPES[t][1] for t in types]


def kinds_or(c: HFConfig, default: Callable[[int], str]) -> list[str]:
    """Attention kinds: the config's layer_types, else the config class's rule for layer i."""
    if c.given("layer_types"):
        return kinds_of(c)[1]
    return [default(i) for i in range(c.size("num_hidden_layers"))]


def flags(c: HFConfig, key: str, layers: int) -> list[int]:
    """A per-layer list of 0/1 switches (no_rope_layers), one per layer."""
    values = c[key]
    if not isinstance(values, list) or len(values) != layers:
        c.fail(f"{key} must list one value per layer ({layers}), got {values!r}")
    return values
