"""A serving replica's memory per GPU: weights as the engines store them (quantisation scales
counted), the KV cache one sequence holds, the engine's share of the GPU and the sequences that
fit in it.

Weights are counted per product from calc's exact shapes (calc.timing.operators), split as
tensor parallelism splits them (whole key/value heads, replicated past h_kv), routed experts
spread over ep GPUs, the largest pipeline stage's ⌈L/pp⌉ layers, and the embedding and LM head
split over the vocabulary (Megatron-LM's vocab-parallel embedding, which vLLM and TensorRT-LLM
follow). The KV cache is the compiled formula of calc.formulas.inference (MLA's latent whole on
every GPU, sliding windows capped) for one GPU's heads and stage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calc import _compiled
from calc.counting import GIB
from calc.evaluate import count_params, symbol_values
from calc.serving.constants import Engine
from calc.serving.layouts import Replica
from calc.spec import BYTES_PER_ELEMENT, ModelSpec
from calc.timing.kernels import ACTIVATION_BYTES
from calc.timing.operators import Matmul, ModelTerms

# Bytes a stored weight takes with its quantisation scales. 8-bit formats keep one scale per
# tensor or channel (negligible); int4 (GPTQ, AWQ) one 16-bit scale per group of 128 weights
# (Marlin's own accounting, IST-DASLab/marlin: 2·(k/128)·n scale bytes; AWQ's 4-bit zero points
# add 0.5/128 more, not counted); NVFP4 one FP8 (E4M3) scale per 16 values (NVIDIA's NVFP4
# format: 16-element micro-blocks, plus one FP32 scale per tensor, negligible).
GROUP_SCALE_BYTES = {"int4": 2 / 128, "fp4": 1 / 16}
# Embedding and LM head stay 16-bit when the layers are quantised below 16 bits (the checkpoints
# in the published data: ModelOpt's FP8/NVFP4 exports and AWQ/GPTQ leave lm_head unquantised).
WIDE_BYTES = 2


def stored_bytes(dtype: str) -> float:
    """Bytes per weight stored in `dtype`, scales included."""
    return BYTES_PER_ELEMENT[dtype] + GROUP_SCALE_BYTES.get(dtype, 0.0)


def shard(op: Matmul, terms: ModelTerms, tp: int) -> int:
    """Ways tensor parallelism splits `op`'s weight (key/value heads: at most h_kv ways)."""
    match op.split:
        case "none":
            return 1
        case "kv":
            kv = op.kv_heads or terms.kv_heads
            return min(tp, kv) if kv else tp
        case "column" | "row":
            return tp
        case other:
            raise ValueError(f"{op.name}: split {other!r} is not a tensor-parallel split")


def stage_share(layers: int, pp: int) -> float:
    """Share of the layers the largest of pp stages holds: ⌈L/pp⌉ / L."""
    return math.ceil(layers / pp) / layers if layers else 0.0


@dataclass(frozen=True)
class ReplicaMemory:
    """Bytes on the most loaded GPU of a replica."""

    weights: float  # all of it, scales included
    expert_weights: float  # of which routed experts
    kv_per_token: float  # one token of context, every attention layer of the stage
    state_per_sequence: float  # recurrent states (Mamba, DeltaNet, lightning, short conv)
    window: int | None  # the context past which no layer's cache grows (None: it always grows)
    kv_token_layers: tuple[int, int, int, int, int]  # global, local, w, chunked, chunk size
    gpu: float  # the GPU's memory
    share: float  # of the layers, the largest stage's
    # of the attention layers, global, local and chunked ones of the kind with query heads of
    # its own (attention.kind_shapes), whose keys cost other FLOPs
    kind_layers: tuple[int, int, int] = (0, 0, 0)
    kind_kv_per_token: float = 0.0  # of kv_per_token, those layers'

    def effective_context(self, context: float) -> float:
        """`context` averaged over the attention layers after windows and chunks cap it."""
        full, local, w, chunked, chunk = self.kv_token_layers
        layers = full + local + chunked
        if not layers:
            return 0.0
        return (full * context + local * min(context, w) + chunked * min(context, chunk)) \
            / layers

    def token_layers(self, context: float) -> float:
        """Cached tokens × attention layers one sequence at `context` reads on this GPU."""
        full, local, _, chunked, _ = self.kv_token_layers
        return self.effective_context(context) * (full + local + chunked) * self.share

    def kind_token_layers(self, context: float) -> float:
        """Of those, the ones in the layers of the kind with query heads of its own."""
        full, local, chunked = self.kind_layers
        _, _, w, _, chunk = self.kv_token_layers
        return (full * context + local * min(context, w) + chunked * min(context, chunk)) \
            * self.share

    def kv_bytes(self, context: float) -> float:
        """One sequence's cache at `context` tokens on this GPU: each layer's keys and values
        (a kind's own width on its layers: attention.kind_shapes) and the recurrent states."""
        own = sum(self.kind_layers)
        if not own:
            return self.kv_per_token * self.effective_context(context) + self.state_per_sequence
        full, local, _, chunked, _ = self.kv_token_layers
        others = full + local + chunked - own
        kind = self.kind_token_layers(context)
        cache = self.kind_kv_per_token * kind / (own * self.share)
        if others:
            cache += ((self.kv_per_token - self.kind_kv_per_token)
                      * (self.token_layers(context) - kind) / (others * self.share))
        return cache + self.state_per_sequence


def replica_memory(spec: ModelSpec, terms: ModelTerms, replica: Replica, dtype: str,
                   kv_dtype: str, gpu_memory_gib: float) -> ReplicaMemory:
    tp, pp = replica.tp, replica.pp
    q = stored_bytes(dtype)
    share = stage_share(terms.layers, pp)
    experts = terms.experts + replica.redundant_experts
    dense = 0.0
    routed = 0.0
    for op in terms.matmuls:
        if op.expert:  # E(+R) experts spread over ep GPUs, each split tp/ep ways more
            per_gpu = op.n * op.k * op.stored_layers * experts / max(replica.ep, tp)
            routed += per_gpu * share * q
        else:
            dense += op.n * op.k * op.stored_layers / shard(op, terms, tp) * share * q
    wide = WIDE_BYTES if BYTES_PER_ELEMENT[dtype] < WIDE_BYTES else q
    edges = (terms.embedding_params + terms.head_params) * wide / tp
    params = count_params(spec)
    small = (params.components.get("norms", 0) + params.components.get("final_norm", 0)) \
        * ACTIVATION_BYTES * share
    spec = spec.cached  # a looped model's cache slots (calc.spec.loop); weights above
    counts = spec.layer_counts
    kv = _compiled_kv(spec, tp, kv_dtype)
    att = spec.attention
    windowed = [w for w in (att.sliding_window if counts["local"] else None,
                            att.chunk_size if counts["chunked"] else None) if w]
    every = (counts["local"] + counts["chunked"] == counts["attention"]
             and spec.shared_block is None)  # the shared block's cache grows with T
    return ReplicaMemory(
        weights=dense + routed + edges + small, expert_weights=routed,
        kv_per_token=kv["kv_cache_per_token"] * share,
        state_per_sequence=kv["state_cache"] * share,
        window=max(windowed) if every and windowed else None,
        # the shared block's depths cache every token, as the global layers do
        kv_token_layers=(counts["attention"] - counts["local"] - counts["chunked"]
                         + (spec.shared_block.depths if spec.shared_block else 0),
                         counts["local"], att.sliding_window or 0, counts["chunked"],
                         att.chunk_size or 0),
        gpu=gpu_memory_gib * GIB, share=share, kind_layers=_kind_layers(spec),
        kind_kv_per_token=kv["kind_kv_per_token"] * share)


def _kind_layers(spec: ModelSpec) -> tuple[int, int, int]:
    """Global, local and chunked layers of the kind with head shapes of its own."""
    kind, own = spec.shaped_kind, spec.shaped_layers
    return (own * (kind in ("global", "nope")), own * (kind == "local"),
            own * (kind == "chunked"))


def _compiled_kv(spec: ModelSpec, tp: int, kv_dtype: str) -> dict[str, float]:
    """calc.formulas.inference's cache terms for one GPU of tp: per token (all attention layers,
    the GPU's ⌈h_kv/tp⌉ heads, MLA's latent whole) and the recurrent state of one sequence."""
    values = {**symbol_values(spec), "N": 0, "N_r": 0, "N_er": 0, "q_w": 0, "q_kv":
              BYTES_PER_ELEMENT[kv_dtype], "K": 1, "M_gib": 1, "R": 1, "u": 1, "BW": 1,
              "u_bw": 1, "F_p": 0, "F_d": 0, "T": 1, "b": 1}
    mla = spec.attention.mla is not None
    values["h_g"] = 1 if mla else -(-spec.n_kv_heads // tp)
    values["h_kv"] = 1 if mla else values["h_g"]  # one GPU's heads stand for the model's
    # a kind's own latent (dots3's sliding layers) is kept whole as the model's
    values["h_g2"] = values["h_kv2"] = (1 if mla else
                                        -(-spec.heads_of(spec.shaped_kind or "")[1] // tp))
    out = _compiled.inference(values)
    # of it, the layers of a kind with head shapes of its own: all of it less the same with
    # their widths 0 (attention.kind_shapes)
    others = _compiled.inference({**values, "d_qk2": 0, "d_v2": 0, "r_kv2": 0,
                                  "d_rope2": 0})["kv_cache_per_token"]
    return {"kv_cache_per_token": out["kv_cache_per_token"],
            "kind_kv_per_token": out["kv_cache_per_token"] - others,
            "state_cache": out["state_cache"] / tp}


def workspace_bytes(spec: ModelSpec, terms: ModelTerms, replica: Replica, tokens: int,
                    sequences: int) -> float:
    """Activations one iteration of `tokens` tokens keeps live on a GPU (the engines profile
    this peak before sizing the cache): the widest layer's inputs and outputs — the hidden state
    and residual, the FFN's up and gate, the QKV projection — and the logits of `sequences`
    sequences in fp32."""
    widest = max((op.n / shard(op, terms, replica.tp) for op in terms.matmuls), default=0)
    return tokens * (3 * terms.d + 2 * widest) * ACTIVATION_BYTES \
        + sequences * terms.head_rows / replica.tp * 4


def kv_budget(memory: ReplicaMemory, engine: Engine, tp: int, workspace: float) -> float:
    """Bytes the engine gives the KV cache on one GPU (negative: the weights do not fit)."""
    fraction = engine.fraction(tp)
    if engine.memory_of == "total":
        return fraction * memory.gpu - memory.weights - workspace
    return fraction * (memory.gpu - memory.weights - workspace)


def sequences_that_fit(memory: ReplicaMemory, budget: float, tokens: float) -> int:
    """Sequences of `tokens` tokens of context whose cache fits in `budget` bytes."""
    if budget <= 0:
        return 0
    per_sequence = memory.kv_bytes(tokens)
    return int(budget // per_sequence) if per_sequence > 0 else 1 << 30
