"""Looped layers: stored layers that run more than once per token (calc.spec.model.ModelSpec.loop).

A looped model stores n_layers layers and runs them in a schedule: HRM-Text's two stacks, the
low-level one L_cycles times then the high-level one once, H_cycles times over
(transformers 5.24.0 modeling_hrm_text.py, HrmTextModel.forward); a looped nGPT's input layers
once, its recurrent layers n_recurrent_loops times, its output layers once (modeling_dory.py,
DoryModel.forward); Inkling 2's loop_layer_index_start to loop_layer_index_end, loop_num_passes
times (modular_inkling2_loop.py). Parameters count each stored layer once; everything a pass
computes (FLOPs, activations, the KV cache of a model that caches each pass, step time) counts
each pass: calc counts those on the executed spec (`executed`), the stored layers unrolled in
the order they run, a plain spec without a loop.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from calc.errors import CalcError
from calc.spec.base import MAX_LAYERS, Frozen
from calc.spec.layers import MAX_PATTERN

# The functions below take a calc.spec.model.ModelSpec (Any here: calc.spec.model imports this
# module, and an import back, even for types, would be a cycle)


class LoopSpec(Frozen):
    """The order the stored layers run in, as runs [first, last, passes]: layers first to last
    (0-based, inclusive) run in order, that span `passes` times over, and the runs follow one
    another. The executed layers are the runs unrolled.

    Why a flat list of runs: it holds the three looped types transformers builds exactly, and a
    nested form would only save writing a repeat out. A looped nGPT (Dory) and Inkling 2's loop
    are three runs, [0, a − 1, 1], [a, b − 1, passes], [b, L − 1, 1]. HRM-Text's stacks of n
    layers, L_cycles low-level passes and one high-level pass H_cycles times over, are the two
    runs [0, n − 1, L_cycles], [n, 2n − 1, 1] written H_cycles times (4 runs for the released
    H_cycles = 2). Counting needs only how many times each stored layer runs and what the
    executed sequence holds; the runs give both, and the reference model runs them in order.

    `init_state`: HRM-Text starts its low-level stream from a d-wide parameter (z_L_init, built
    with requires_grad=False, zeros): one more parameter tensor that torch's numel counts and
    calc counts with the parameters, as transformers' num_parameters() does (loop/state); the
    additions that feed each stack the other stream's state are elementwise (0 FLOPs, as
    norms)."""

    runs: tuple[tuple[int, int, int], ...] = Field(
        min_length=1, max_length=MAX_PATTERN,
        description="[first, last, passes] per run: stored layers first..last (0-based, "
                    "inclusive) run in order `passes` times, the runs one after another "
                    "(HRM-Text, 2 stacks of n: [[0, n-1, L_cycles], [n, 2n-1, 1]] H_cycles "
                    "times; Dory: [[0, a-1, 1], [a, b-1, n_recurrent_loops], [b, L-1, 1]])")
    init_state: bool = Field(
        False, description="a d-wide parameter that starts a second stream (HRM-Text's "
                           "z_L_init, frozen): d parameters, 0 FLOPs")
    cache: Literal["pass", "layer"] = Field(
        "pass", description="the KV cache's slots: one per executed pass (HRM-Text; Dory's "
                            "'per_loop'), or one per stored layer, the last pass writing it "
                            "and the earlier ones reading it with their own tokens (Dory's "
                            "'last_loop'): the same FLOPs")

    @model_validator(mode="after")
    def _runs(self) -> LoopSpec:
        for first, last, passes in self.runs:
            if not 0 <= first <= last:
                raise ValueError(f"loop.runs: [{first}, {last}, {passes}] needs 0 <= first <= "
                                 f"last")
            if not 1 <= passes <= MAX_LAYERS:
                raise ValueError(f"loop.runs: [{first}, {last}, {passes}] needs passes from 1 "
                                 f"to {MAX_LAYERS}")
        return self

    @property
    def passes(self) -> int:
        """Layers executed per token: the runs unrolled."""
        return sum((last - first + 1) * passes for first, last, passes in self.runs)

    def order(self) -> tuple[int, ...]:
        """The stored layer each executed layer is, in the order they run."""
        return tuple(i for first, last, passes in self.runs for _ in range(passes)
                     for i in range(first, last + 1))


# The parts whose layer indices or once-per-model products the executed spec would misplace
# (one line each); no looped model has them
LOOP_REFUSED: tuple[tuple[str, Any], ...] = (
    ("shared_block", lambda s: s.shared_block is not None),
    ("per_layer_embeddings", lambda s: s.per_layer_embeddings is not None),
    ("altup", lambda s: s.altup is not None),
    ("hyper_connections", lambda s: s.hyper_connections is not None),
    ("cross_attention", lambda s: s.cross_attention is not None),
    ("drafter", lambda s: s.drafter is not None),
    ("mtp_modules", lambda s: bool(s.mtp_modules)),
    ("attention.indexer", lambda s: s.attention.indexer is not None),
    ("attention.compression", lambda s: s.attention.compression is not None),
    ("attention.kv_shared_layers", lambda s: bool(s.attention.kv_shared_layers)),
    ("attention.last_layer_out_bias", lambda s: s.attention.last_layer_out_bias),
    ("norm.first_mixer_norm=False", lambda s: not s.norm.first_mixer_norm),
    ("moe.hash_layers", lambda s: s.moe is not None and bool(s.moe.hash_layers)),
    ("moe.shortcut", lambda s: s.moe is not None and s.moe.shortcut),
)


def check_loop(spec: Any) -> None:
    """The runs cover every stored layer, within n_layers, and no part the loop cannot hold."""
    loop = spec.loop
    assert loop is not None
    for first, last, passes in loop.runs:
        if last >= spec.n_layers:
            raise ValueError(f"loop.runs: [{first}, {last}, {passes}] reaches past the "
                             f"n_layers={spec.n_layers} stored layers")
    idle = sorted(set(range(spec.n_layers)) - set(loop.order()))
    if idle:
        raise ValueError(f"loop.runs: stored layer {idle[0]} never runs; every stored layer "
                         f"must be in a run")
    if loop.passes > MAX_LAYERS:
        raise ValueError(f"loop.runs: {loop.passes} executed layers exceed {MAX_LAYERS}")
    for name, present in LOOP_REFUSED:
        if present(spec):
            raise ValueError(f"loop: {name} is not defined with looped layers")


def executed(spec: Any) -> Any:
    """`spec` with its layers unrolled as they run (loop.order()) and no loop: what FLOPs,
    activations, the KV cache and step time count. Each executed layer keeps its stored
    layer's mixer, attention kind and FFN."""
    loop = spec.loop
    assert loop is not None
    order = loop.order()
    mixers, ffns = spec.mixer_kinds, spec.ffn_kinds
    kinds = [spec.attention_kinds[i] or spec.attention.pattern[i % len(spec.attention.pattern)]
             for i in range(spec.n_layers)]
    groups: dict[tuple[str, str, str], list[int]] = {}
    for j, i in enumerate(order):
        groups.setdefault((mixers[i], kinds[i], ffns[i]), []).append(j)
    moe = spec.moe
    uniform = (len(groups) == 1 and not spec.layers.exceptions
               and len(spec.layers.mixer_pattern) == 1 and len(spec.attention.pattern) == 1
               and len(spec.layers.ffn_pattern or "-") == 1
               and (moe is None or (moe.first_dense_layers == 0 and moe.every == 1)))
    changes: dict[str, Any] = {"n_layers": len(order), "loop": None}
    if not uniform:
        changes["layers.exceptions"] = [
            {"layers": layers, "mixer": mixer, "attention": kind, "ffn": ffn}
            for (mixer, kind, ffn), layers in groups.items()]
        changes["layers.ffn_pattern"] = None
        if moe is not None:  # the exceptions place the MoE layers
            changes["moe.first_dense_layers"], changes["moe.every"] = 0, 1
    return spec.updated(**changes)


def loop_weight_values(spec: Any, pp: int, frozen: bool) -> dict[str, int]:
    """A looped model's weights against its executed layers (calc.evaluate.memory_values reads
    the executed spec, whose activations are the passes'): the weights count each stored layer
    once, so the layers whose weights a GPU holds, L and L_w, are the stored ones. A pipeline
    would split the executed layers across stages that share stored weights, and adapters
    (LoRA) keep states per stored layer but activations per pass, which one set of symbols
    cannot hold: both refused."""
    if spec.loop is None:
        return {}
    if pp > 1:
        raise CalcError(f"pp={pp}: pipeline stages of a looped model (loop) would share its "
                        f"stored layers; calc counts looped models on one stage (pp=1)")
    if frozen:
        raise CalcError("finetune: the memory of adapters on a looped model (loop) is not "
                        "counted (their states per stored layer, their activations per pass); "
                        "its adapters' parameters and FLOPs are")
    return {"L": spec.n_layers, "L_w": spec.n_layers}
