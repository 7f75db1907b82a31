"""One model's operators, computed once: every matrix product with its exact FLOPs and widths,
attention's FLOPs, the element-wise bytes, the parameters each parallel group holds.

The FLOPs are calc's exact per-component counts (calc.evaluate.count_flops: top-k experts only,
GQA and MLA widths, sliding windows, the causal triangle), so the model FLOPs behind MFU and the
work the timing model schedules are the same numbers. A layout then only divides and prices them
(calc.timing.compute), which keeps the layout search to cheap arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.evaluate import count_flops, count_params
from calc.spec import ModelSpec

ACTIVATION_BYTES = 2  # activations stay 16-bit outside the matrix products, fp8 runs included
MASK_BYTES = 1  # a dropout mask element (Korthikanti et al. 2022 §4.1)
# Cross-entropy over vocabulary-parallel logits, bytes per logit: the forward casts them to fp32
# (read 2, write 4) and reduces them (read 4); the backward reads the fp32 softmax and writes a
# 16-bit gradient (read 4, write 2). Megatron-LM's fused vocab-parallel cross-entropy, by hand.
LOSS_FORWARD_BYTES = 10
LOSS_BACKWARD_BYTES = 6


@dataclass(frozen=True)
class Matmul:
    """One matrix product of a layer (or the LM head) for every token."""

    name: str  # calc's component key, with /up or /down where the FFN is split in two
    flops: float  # forward FLOPs per token, every layer that has it (calc's exact count)
    n: int  # output width of one instance before tensor parallelism
    k: int  # input width before tensor parallelism
    layers: int  # layers that run it (the LM head: 1)
    split: str  # column (n / t), row (k / t), kv (n / min(t, h_kv)), none (replicated)
    expert: bool = False  # rows are the tokens routed to one expert


@dataclass(frozen=True)
class ElementWise:
    """Bytes an element-wise kernel moves per token, all layers, forward pass."""

    name: str
    bytes: float
    region: str  # replicated (split t ways only by sequence parallelism) | tensor (always)
    when: str = ""  # "", "dropout", "eager", "eager+dropout": the layout choices it needs


@dataclass(frozen=True)
class ModelTerms:
    name: str
    seq_len: int
    layers: int
    moe_layers: int
    d: int
    vocab: int
    heads: int
    kv_heads: int  # 0 for MLA (every head has its own keys: split like the queries)
    d_qk: int
    d_v: int
    experts: int
    top_k: int
    parallel_block: bool  # attention and MLP side by side: one TP all-reduce per layer
    matmuls: tuple[Matmul, ...]
    head: Matmul
    attention_causal: float  # QKᵀ and A·V forward FLOPs per token, causal, all layers
    attention_full: float  # the same over the full square (what an eager kernel computes)
    elementwise: tuple[ElementWise, ...]
    forward_flops: float  # calc's forward FLOPs per token, the sum of its components
    layer_params: int  # all layers' parameters except routed experts
    expert_params: int  # routed experts, all layers
    embedding_params: int  # token and position embeddings
    head_params: int  # an untied LM head (0 when tied)


def _ffn(prefix: str, flops: float, width: int, d: int, gated: bool, layers: int,
         expert: bool = False) -> tuple[Matmul, ...]:
    """An FFN's up (and gate) and down products, FLOPs shared in proportion to their weights."""
    up, parts = 1 + gated, 2 + gated
    return (Matmul(f"{prefix}/up", flops * up / parts, up * width, d, layers, "column", expert),
            Matmul(f"{prefix}/down", flops / parts, d, width, layers, "row", expert))


def model_terms(spec: ModelSpec, seq_len: int) -> ModelTerms:
    """Every operator of `spec` at sequence length `seq_len`, from calc's exact counts."""
    causal = count_flops(spec, seq_len, "causal")
    full = count_flops(spec, seq_len, "full")
    flops, params = causal.components, count_params(spec)
    att, moe, d, layers = spec.attention, spec.moe, spec.d_model, spec.n_layers
    h, kv, d_qk, d_v = att.n_heads, spec.n_kv_heads, spec.head_dim_qk, spec.head_dim_v
    dense, n_moe, gated = layers - spec.n_moe_layers, spec.n_moe_layers, spec.ffn.gated
    matmuls = [
        Matmul("attention/q", flops["attention/q"], h * d_qk, d, layers, "column"),
        Matmul("attention/kv", flops["attention/kv"], kv * (d_qk + d_v), d, layers,
               "column" if att.mla else "kv"),
        Matmul("attention/o", flops["attention/o"], d, h * d_v, layers, "row"),
        *_ffn("mlp", flops["mlp"], spec.ffn.d_ff, d, gated, dense),
    ]
    if moe is not None:
        matmuls += [
            Matmul("moe/router", flops["moe/router"], moe.n_experts, d, n_moe, "none"),
            *_ffn("moe/experts", flops["moe/experts"], moe.d_expert, d, gated, n_moe, True),
        ]
        if moe.n_shared_experts:
            matmuls += _ffn("moe/shared", flops["moe/shared"],
                            moe.n_shared_experts * moe.shared_width, d, gated, n_moe)
    expert_params = params.components.get("moe/experts", 0)
    embedding = params.embedding
    return ModelTerms(
        name=spec.name, seq_len=seq_len, layers=layers, moe_layers=n_moe, d=d,
        vocab=spec.vocab_size, heads=h, kv_heads=0 if att.mla else kv, d_qk=d_qk, d_v=d_v,
        experts=moe.n_experts if moe else 0, top_k=moe.top_k if moe else 0,
        parallel_block=spec.parallel_block,
        matmuls=tuple(m for m in matmuls if m.flops),
        head=Matmul("lm_head", flops["lm_head"], spec.vocab_size, d, 1, "column"),
        attention_causal=flops["attention/scores"],
        attention_full=full.components["attention/scores"],
        elementwise=_elementwise(spec, seq_len),
        forward_flops=causal.forward,
        layer_params=params.total - embedding - params.components["lm_head"] - expert_params
        - params.components.get("final_norm", 0) - params.components.get("embedding/norm", 0),
        expert_params=expert_params, embedding_params=embedding,
        head_params=params.components["lm_head"],
    )


def _elementwise(spec: ModelSpec, seq_len: int) -> tuple[ElementWise, ...]:
    """Forward bytes per token of the memory-bound kernels, all layers (reads + writes).

    Each kernel reads its inputs and writes its output once (no fusion across kernels is
    assumed, except Megatron-LM's fused scale-mask-softmax, one kernel).
    """
    q, d, layers = ACTIVATION_BYTES, spec.d_model, spec.n_layers
    att, moe, mla = spec.attention, spec.moe, spec.attention.mla
    h, kv = att.n_heads, spec.n_kv_heads
    glu = int(spec.ffn.gated)
    dense, n_moe = layers - spec.n_moe_layers, spec.n_moe_layers
    latents = (mla.kv_lora_rank + (mla.q_lora_rank or 0)) if mla else 0
    rotary = 0
    if mla is not None:
        rotary = (h + 1) * mla.qk_rope_head_dim  # queries' RoPE part and the one shared key
    elif spec.position.kind == "rope":
        rotary = (h + kv) * spec.head_dim_qk
    ffn_widths = dense * spec.ffn.d_ff
    if moe is not None:
        ffn_widths += n_moe * (moe.top_k * moe.d_expert + moe.n_shared_experts * moe.shared_width)
    # x + F(x) twice (read 2, write 1 each); a parallel block adds both branches at once
    residual = 4 * d if spec.parallel_block else 2 * 3 * d
    terms = [
        # each norm reads and writes d (the MLA latents' norms their rank)
        ElementWise("norms", layers * (spec.norms_per_layer * 2 * d + 2 * latents) * q,
                    "replicated"),
        ElementWise("residual", layers * residual * q, "replicated"),
        # dropout after attention and after the MLP: read, write, and a 1-byte mask
        ElementWise("dropout", layers * 2 * (2 * d * q + d * MASK_BYTES), "replicated",
                    "dropout"),
        ElementWise("rope", layers * 2 * rotary * q, "tensor"),
        # φ(gate) ⊙ up reads 2 widths and writes 1; a plain activation reads and writes 1
        ElementWise("activation", ffn_widths * (2 + glu) * q, "tensor"),
        # eager attention: one fused scale-mask-softmax over the full s×s square per head
        ElementWise("softmax", layers * 2 * h * seq_len * q, "tensor", "eager"),
        ElementWise("attention dropout", layers * h * seq_len * (2 * q + MASK_BYTES), "tensor",
                    "eager+dropout"),
    ]
    if moe is not None:  # token permutation: k copies out (dispatch) and back (combine)
        terms.append(ElementWise("moe permute", n_moe * 4 * moe.top_k * d * q, "replicated"))
    return tuple(t for t in terms if t.bytes)
