"""One model's operators, computed once: every matrix product with its exact FLOPs and widths,
attention's FLOPs, the element-wise bytes, the parameters each parallel group holds.

The FLOPs are calc's exact per-component counts (calc.evaluate.count_flops: top-k experts only,
GQA and MLA widths, sliding windows, the causal triangle), so the model FLOPs behind MFU and the
work the timing model schedules are the same numbers. A layout then only divides and prices them
(calc.timing.compute), which keeps the layout search to cheap arithmetic.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from calc.counting import MASK_BYTES
from calc.evaluate import count_flops, count_params, kind_scores
from calc.spec import ModelSpec
from calc.timing.kernels import ACTIVATION_BYTES, ElementWise, Matmul, Recurrence
from calc.timing.mixers import mixer_elementwise, mixer_matmuls, recurrences, tp_reductions

__all__ = ["ACTIVATION_BYTES", "ElementWise", "Matmul", "ModelTerms",
           "Recurrence", "model_terms"]
# Cross-entropy over vocabulary-parallel logits, bytes per logit: the forward casts them to fp32
# (read 2, write 4) and reduces them (read 4); the backward reads the fp32 softmax and writes a
# 16-bit gradient (read 4, write 2). Megatron-LM's fused vocab-parallel cross-entropy, by hand.
LOSS_FORWARD_BYTES = 10
LOSS_BACKWARD_BYTES = 6


@dataclass(frozen=True)
class ModelTerms:
    name: str
    seq_len: int
    layers: int
    moe_layers: int
    d: int
    head_rows: int  # logits per token: the LM head's rows (ModelSpec.head_rows)
    heads: int
    kv_heads: int  # 0 for MLA (every head has its own keys: split like the queries)
    d_qk: int
    d_v: int
    experts: int
    top_k: int
    # ScMoE (moe.shortcut): each MoE layer's all-to-all runs beside the dense work around it
    shortcut: bool
    tp_reductions: tuple[tuple[float, int], ...]  # TP all-reduces per layer: (count, width)
    matmuls: tuple[Matmul, ...]
    head: Matmul
    attention_causal: float  # QKᵀ and A·V forward FLOPs per token, causal, all layers
    attention_full: float  # the same over the full square (what an eager kernel computes)
    elementwise: tuple[ElementWise, ...]
    recurrences: tuple[Recurrence, ...]  # the other mixers' scans and convolutions
    forward_flops: float  # calc's forward FLOPs per token, the sum of its components
    layer_params: int  # all layers' parameters except routed experts
    expert_params: int  # routed experts, all layers
    embedding_params: int  # token and position embeddings
    head_params: int  # an untied LM head (0 when tied)
    # MLA's up-projections (latents to queries, keys and values), forward FLOPs per token, all
    # layers: what recomputing them in the backward adds (DeepSeek-V3 report §3.2.3)
    mla_up_flops: float = 0.0
    # the attention layers of a kind with head shapes of its own (attention.kind_shapes): how
    # many, their key/value heads and widths, and their share of attention_causal and _full
    kind_layers: int = 0
    kind_kv_heads: int = 0
    kind_d_qk: int = 0
    kind_d_v: int = 0
    kind_attention_causal: float = 0.0
    kind_attention_full: float = 0.0


def _ffn(prefix: str, flops: float, width: int, d: int, gated: bool, layers: int,
         expert: bool = False) -> tuple[Matmul, ...]:
    """An FFN's up (and gate) and down products, FLOPs shared in proportion to their weights."""
    up, parts = 1 + gated, 2 + gated
    return (Matmul(f"{prefix}/up", flops * up / parts, up * width, d, layers, "column", expert),
            Matmul(f"{prefix}/down", flops / parts, d, width, layers, "row", expert))


def _attention_matmuls(spec: ModelSpec, flops: dict[str, float], layers: int
                       ) -> list[Matmul]:
    """W_Q, W_K/W_V, W_O and the output gate of the `layers` attention layers, one product of
    each for the layers of each head shape (attention.kind_shapes: a kind's own over its
    layers), the FLOPs of a component shared in proportion to the weights (calc's exact count
    is 2 × the weights)."""
    kind, own = spec.shaped_kind, spec.shaped_layers
    # the kv-shared layers (attention.kv_shared_layers) have no W_K/W_V product
    shared, shared_own, _, _ = spec.kv_shared_counts
    shapes = [(spec, layers - own, 0, layers - own - (shared - shared_own))]
    if own:
        shaped = spec.for_kind(kind)
        shapes.append((shaped, own, shaped.n_kv_heads, own - shared_own))
    d, mla = spec.d_model, spec.attention.mla is not None
    latent = spec.attention.mla
    # the output gate's input: the layer's x, or the query latent before and after its norm
    # (attention.mla.latent_gate, A.X-K2's q_gate_proj: 2·r_q)
    gate_in = 2 * (latent.q_lora_rank or 0) if latent is not None and latent.latent_gate else d
    products = (
        ("attention/q", lambda s: (s.attention.n_heads * s.head_dim_qk, d), "column"),
        # keys used as values (attention.k_eq_v): W_K alone
        ("attention/kv", lambda s: (s.n_kv_heads * (s.head_dim_qk + s.head_dim_v
                                                    * (not s.attention.k_eq_v)), d),
         "column" if mla else "kv"),
        ("attention/o", lambda s: (d, s.attention.n_heads * s.head_dim_v), "row"),
        # the output gate (Qwen3-Next's projected beside W_Q; LFM3's g_proj d → h):
        # column-parallel like W_Q, split by heads
        ("attention/gate", lambda s: (s.output_gate_width, gate_in), "column"),
    )
    matmuls = []
    for name, widths, split in products:
        ops = [Matmul(name, 0.0, *widths(shape), n_kv if name == "attention/kv" else n, split,
                      kv_heads=kv if split == "kv" else 0)
               for shape, n, kv, n_kv in shapes if n or len(shapes) == 1]
        if len(ops) == 1:
            matmuls.append(dataclasses.replace(ops[0], flops=flops[name]))
            continue
        weights = sum(op.n * op.k * op.layers for op in ops)
        matmuls += [dataclasses.replace(op, flops=flops[name] * op.n * op.k * op.layers
                                        / weights if weights else 0.0) for op in ops]
    return matmuls


def _matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """The products of `spec`'s layers and once-per-token parts (the LM head apart), with
    `flops` the forward FLOPs per token by component."""
    att, moe, d = spec.attention, spec.moe, spec.d_model
    kv, d_v = spec.n_kv_heads, spec.head_dim_v
    counts = spec.layer_counts
    n_att, dense, n_moe = counts["attention"], counts["dense"], counts["moe"]
    matmuls = [
        *_attention_matmuls(spec, flops, n_att),
        # JetMoE's attention-expert router, replicated like an MoE router
        Matmul("attention/router", flops["attention/router"], att.experts or 0, d, n_att,
               "none"),
        # Doge's dynamic mask: dt_proj h_kv·d_v → h_kv over the values, replicated like a
        # router (its h_kv outputs are fewer than the TP ranks of most layouts)
        Matmul("attention/dynamic_mask", flops["attention/dynamic_mask"], kv,
               kv * d_v, n_att, "none"),
        # Inkling 2's sink_proj d → h (attention.sink_proj), column-parallel like W_Q (split
        # by heads; the model's head count stands for a kind's own)
        Matmul("attention/sinks", flops["attention/sinks"], att.n_heads, d, n_att, "column"),
        # Inkling 2's mixes over blocks (block_residual): per token, each learned query times
        # its sources twice, priced as one replicated product of the queries' weights
        Matmul("block_residual", flops["block_residual"],
               _block_queries(spec), d, 1, "none"),
        # Inkling 2's per-token convolution taps, weight_proj d → h_kv·k for keys and values
        # (residual_conv_taps), replicated like a router (h_kv·k outputs are few)
        Matmul("attention/conv_taps", flops["attention/conv_taps"],
               2 * kv * (spec.residual_conv or 0), d,
               sum(kind in spec.residual_conv_taps for kind in spec.attention_kinds), "none"),
        # DSA's indexer projections (wq_b from the query latent, wk and weights_proj from x;
        # MiniMax-M3's q_proj and k_proj from x), replicated like a router: a TP split of them
        # is not priced
        Matmul("attention/indexer", flops["attention/indexer"],
               _indexer_width(spec), d, spec.n_indexer_layers or spec.n_sparse_layers, "none"),
        # DeepSeek-V4's compressors (kv_proj and gate_proj, d → 2·2·d_qk on a CSA layer,
        # d → 2·d_qk on an HCA one), replicated like the indexer
        *_compressor_matmuls(spec, flops),
        *mixer_matmuls(spec, flops),
        *_hyper_connection_matmuls(spec, flops),
        *_norm_gate_matmuls(spec, flops),
        *_shared_block_matmuls(spec, flops),
        # OPT-350m's project_in and project_out, d_emb ↔ d once each, replicated
        Matmul("embedding_projection", flops["embedding_projection"], d,
               spec.embedding_width, 1, "none"),
        *_per_layer_embedding_matmuls(spec, flops),
        *_altup_laurel_matmuls(spec, flops),
        # ModernBERT decoder's prediction head, d → d once before the LM head, replicated
        # like the embedding's projections
        Matmul("prediction_head", flops["prediction_head"], d, d, 1, "none"),
        *_drafter_matmuls(spec, flops),
        *_relative_logit_matmuls(spec, flops),
    ]
    gated = spec.ffn is not None and spec.ffn.gated
    if spec.ffn is not None:
        # ffn.double_wide: L_dw of the dense FFNs are 2·d_ff wide, their share of the FLOPs
        # twice a plain one's
        wide, width = spec.double_wide_layers, spec.ffn.d_ff
        plain = flops["mlp"] * (dense - wide) / (dense + wide) if dense else 0.0
        matmuls += _ffn("mlp", plain, width, d, gated, dense - wide)
        if wide:
            matmuls += _ffn("mlp", flops["mlp"] - plain, 2 * width, d, gated, wide)
    if moe is not None and moe.router_mlp is not None:
        # ZAYA1's router: down d → r, fc1 and fc2 r → r, out_proj r → E + 1, replicated
        r = moe.router_mlp.width
        weights = ((r, d), (r, r), (r, r), (moe.n_experts + 1, r))
        total = sum(n * k for n, k in weights)
        matmuls += [Matmul("moe/router", flops["moe/router"] * n * k / total, n, k, n_moe,
                           "none") for n, k in weights]
    elif moe is not None:
        matmuls.append(
            Matmul("moe/router", flops["moe/router"], moe.router_width, d, n_moe, "none"))
    if moe is not None:
        matmuls += [
            # product-key experts (Doge's CDMoE): one neuron each, d → 1 → d without a gate
            *_ffn("moe/experts", flops["moe/experts"], moe.d_expert, d,
                  gated and not moe.product_keys, n_moe, True),
        ]
        if moe.n_shared_experts:
            matmuls += _ffn("moe/shared", flops["moe/shared"],
                            moe.n_shared_experts * moe.shared_width, d, gated, n_moe)
    return matmuls


def model_terms(spec: ModelSpec, seq_len: int) -> ModelTerms:
    """Every operator of `spec` at sequence length `seq_len`, from calc's exact counts. A
    looped model's operators are its executed layers' (calc.spec.loop: each pass reads its
    layer's weights again), its parameters the stored layers' (layer_params)."""
    params = count_params(spec)
    stored, spec = spec, spec.executed
    causal = count_flops(spec, seq_len, "causal")
    full = count_flops(spec, seq_len, "full")
    flops = causal.components
    att, moe, d, layers = spec.attention, spec.moe, spec.d_model, spec.n_layers
    h, kv, d_qk, d_v = att.n_heads, spec.n_kv_heads, spec.head_dim_qk, spec.head_dim_v
    n_moe = spec.layer_counts["moe"]
    own = spec.shaped_layers
    _, kind_kv, kind_d_qk, kind_d_v = spec.heads_of(spec.shaped_kind or "")
    matmuls = _matmuls(spec, flops)
    if stored is not spec:  # a looped model holds its stored layers' weights, read each pass
        matmuls = [dataclasses.replace(op, weight_sets=held.stored_layers)
                   for op, held in zip(matmuls, _matmuls(stored, flops), strict=True)]
    expert_params = params.components.get("moe/experts", 0)
    embedding = params.embedding
    return ModelTerms(
        name=spec.name, seq_len=seq_len, layers=layers, moe_layers=n_moe, d=d,
        head_rows=spec.head_rows, heads=h, kv_heads=0 if att.mla else kv, d_qk=d_qk, d_v=d_v,
        experts=moe.n_experts if moe else 0, top_k=moe.experts_per_token if moe else 0,
        shortcut=bool(moe and moe.shortcut),
        tp_reductions=tp_reductions(spec),
        matmuls=tuple(m for m in matmuls if m.flops),
        head=Matmul("lm_head", flops["lm_head"], _head_rows_scored(spec), d, 1, "column"),
        # cross-attention's scores over the image tokens: the same in either convention
        attention_causal=flops["attention/scores"] + flops["cross_attention/scores"],
        attention_full=(full.components["attention/scores"]
                        + full.components["cross_attention/scores"]),
        elementwise=_elementwise(spec, seq_len),
        recurrences=tuple(op for op in recurrences(spec, flops) if op.flops or op.bytes),
        forward_flops=causal.forward,
        layer_params=params.total - embedding - params.components["lm_head"] - expert_params
        - params.components.get("final_norm", 0) - params.components.get("embedding/norm", 0)
        - params.components.get("prediction_head", 0),
        expert_params=expert_params, embedding_params=embedding,
        head_params=params.components["lm_head"],
        mla_up_flops=_mla_up_flops(spec, flops),
        kind_layers=own, kind_kv_heads=kind_kv if own else 0, kind_d_qk=kind_d_qk,
        kind_d_v=kind_d_v, kind_attention_causal=kind_scores(spec, seq_len, "causal"),
        kind_attention_full=kind_scores(spec, seq_len, "full"),
    )


def _block_queries(spec: ModelSpec) -> int:
    """The learned queries of the attention residuals over blocks (block_residual), 0 without."""
    block = spec.block_residual
    return (sum(q for q, _ in block.sources(spec.n_layers, spec.attention_kinds))
            if block is not None else 0)


def _relative_logit_matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """Inkling's relative bias (attention.relative_logits): r_proj d → h·d_rel, column-parallel
    like W_Q (split by heads), and the bank's product per token, each head's d_rel states times
    the d_rel × E bank (E the window on a sliding layer), split by heads too (every rank holds
    the small bank whole: its weights priced as a column split's are a fraction of r_proj's)."""
    rel = spec.attention.relative_logits
    if rel is None:
        return []
    d, kinds = spec.d_model, [kind for kind in spec.attention_kinds if kind]
    heads = sum(spec.heads_of(kind)[0] for kind in kinds)
    projection = 2 * d * rel.d_rel * heads
    extent = max((spec.attention.sliding_window or 1) if kind == "local" else rel.extent
                 for kind in kinds)
    return [Matmul("attention/relative", projection, heads * rel.d_rel // len(kinds), d,
                   len(kinds), "column"),
            Matmul("attention/relative", flops["attention/relative"] - projection, extent,
                   rel.d_rel, len(kinds), "column")]


def _head_rows_scored(spec: ModelSpec) -> int:
    """The LM head's rows a token multiplies: all of them, or a centroid head's top_k·V/C."""
    head = spec.centroid_head
    return spec.head_rows if head is None else head.top_k * (spec.vocab_size // head.n_centroids)


def _drafter_matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """A drafter's pre_projection 2·D → d (two thirds of drafter/projections' FLOPs) and
    post_projection d → D, and a centroid head's centroids d → C, once per token each,
    replicated like OPT's embedding projection (Gemma4AssistantForCausalLM)."""
    d, drafter, head = spec.d_model, spec.drafter, spec.centroid_head
    ops = []
    if drafter is not None:
        width, total = drafter.target_width, flops["drafter/projections"]
        ops += [Matmul("drafter/projections", total * 2 / 3, d, 2 * width, 1, "none"),
                Matmul("drafter/projections", total / 3, width, d, 1, "none")]
    if head is not None:
        ops.append(Matmul("centroid_head", flops["centroid_head"], head.n_centroids, d, 1,
                          "none"))
    return ops


def _per_layer_embedding_matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """Per-layer embeddings' products (Gemma4TextModel, Gemma4TextDecoderLayer), replicated
    like the embedding's own projection: d → L·p once, and in each layer the gate d → p and
    the projection p → d, half of the layers' FLOPs each."""
    ple = spec.per_layer_embeddings
    if ple is None:
        return []
    d, layers, p = spec.d_model, spec.n_layers, ple.width
    each = flops["per_layer_embeddings/layers"] / 2
    return [Matmul("per_layer_embeddings/projection",
                   flops["per_layer_embeddings/projection"], layers * p, d, 1, "none"),
            Matmul("per_layer_embeddings/layers", each, p, d, layers, "none"),
            Matmul("per_layer_embeddings/layers", each, d, p, layers, "none")]


def _altup_laurel_matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """Gemma 3n's AltUp and LAuReL (Gemma3nTextAltUp, Gemma3nTextLaurelBlock,
    Gemma3nTextModel), replicated on every tensor-parallel rank as the norms they sit beside
    are: the router d → n_au (run twice a layer, once per stored weight), the prediction
    coefficients n_au → n_au² with the streams' product by them folded into their FLOPs (it
    has no weight of its own, as mHC's mix in the hyper-connection maps), the correction
    coefficients n_au → n_au, the 2(n_au − 1) projections d → d into and out of the streams,
    and LAuReL's d → r and r → d, half its FLOPs each."""
    matmuls = []
    d, layers = spec.d_model, spec.n_layers
    if spec.altup is not None:
        n = spec.altup.streams
        router, correction = 2 * 2 * d * n * layers, 2 * n * n * layers
        matmuls += [Matmul("altup/layers", router, n, d, layers, "none"),
                    Matmul("altup/layers", flops["altup/layers"] - router - correction,
                           n * n, n, layers, "none"),
                    Matmul("altup/layers", correction, n, n, layers, "none")]
        if n > 1:
            matmuls.append(Matmul("altup/projections", flops["altup/projections"], d, d,
                                  2 * (n - 1), "none"))
    if spec.laurel is not None:
        half, rank = flops["laurel/layers"] / 2, spec.laurel.rank
        matmuls += [Matmul("laurel/layers", half, rank, d, layers, "none"),
                    Matmul("laurel/layers", half, d, rank, layers, "none")]
    return matmuls


def _altup_laurel_bytes(spec: ModelSpec) -> int:
    """Elements Gemma 3n's AltUp and LAuReL element-wise kernels read and write per token, all
    layers: AltUp's prediction added to the streams (read 2·n·d, write n·d), the innovation
    (read 2d, write d) spread over the streams by the correction (read n·d + d, write n·d),
    its two router norms (2d each) and the scale on the active stream (2d), and once a token
    the projected streams' magnitudes matched (read, write 2d each of the 2(n − 1)) and their
    mean (read n·d, write d); LAuReL's norm (2d), its sum with the input (3d) and with the
    attention's residual, scaled (3d)."""
    d, layers = spec.d_model, spec.n_layers
    total = 0
    if spec.altup is not None:
        n = spec.altup.streams
        total += layers * (3 * n * d + 3 * d + 2 * n * d + d + 4 * d + 2 * d)
        total += 2 * (n - 1) * 4 * d + n * d + d
    if spec.laurel is not None:
        total += layers * 8 * d
    return total


def _norm_gate_matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """A.X-K2's gated norms (norm.gate_rank): fc1 d → r and fc2 r → d on every layer's mixer
    norm and the MoE layers' FFN norm, replicated on every tensor-parallel rank as the norms
    they sit beside are; the FLOPs half each (equal weights)."""
    rank = spec.norm.gate_rank
    if rank is None:
        return []
    d, gated = spec.d_model, spec.n_layers + spec.layer_counts["moe"]
    half = flops["norm_gates"] / 2
    return [Matmul("norm_gates", half, rank, d, gated, "none"),
            Matmul("norm_gates", half, d, rank, gated, "none")]


def _hyper_connection_matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """Hyper-connections' maps (two a layer: n·d → 2n [+ n²], mHC's mix of the streams in
    their FLOPs) and the head map (n·d → n), replicated on every tensor-parallel rank as the
    norms they sit beside are."""
    hc = spec.hyper_connections
    if hc is None:
        return []
    n, width = hc.streams, hc.streams * spec.d_model
    layers, head = flops["hyper_connections/layers"], flops["hyper_connections/head"]
    rank, maps = hc.gate_rank, 2 * spec.n_layers
    if rank:  # the gated maps: down n·d → r, up r → n·d, inject n·d → n (not on the head)
        share = layers / (2 * rank + n)
        return [Matmul("hyper_connections/layers", share * rank, rank, width, maps, "none"),
                Matmul("hyper_connections/layers", share * rank, width, rank, maps, "none"),
                Matmul("hyper_connections/layers", share * n, n, width, maps, "none"),
                Matmul("hyper_connections/head", head / 2, rank, width, 1, "none"),
                Matmul("hyper_connections/head", head / 2, width, rank, 1, "none")]
    outputs = 2 * n + (n * n if hc.residual_mix else 0)
    return [Matmul("hyper_connections/layers", layers, outputs, width, maps, "none"),
            Matmul("hyper_connections/head", head, n, width, 1, "none")]


def _zaya_bytes(spec: ModelSpec) -> int:
    """ZAYA1's element-wise kernels beyond a plain layer's, per token, all layers, each reading
    its inputs and writing its output once: the residual scales (a scale or bias on a d-wide
    term reads and writes d; the branch's bias and scale two of them, the residual's one or
    two, the embedding's two once); CCA's residual paths (the query and repeated key heads'
    mean, h·d_h from 2·h·d_h, the key heads' mean over their query heads, and their sums with
    the convs' outputs, 3 of each width), its L2 norms and temperature (read and write each
    head) and the values' concatenation (h_kv·d_h); the router's norm, two GELUs and the
    carried state's scale and sum (r wide)."""
    d, scales, out = spec.d_model, spec.residual_scales, 0
    counts = spec.layer_counts
    if scales is not None:
        per_sublayer = 1 + int(scales.residual_bias) + 2 * int(scales.branch)
        sublayers = spec.n_layers + sum(kind != "none" for kind in spec.ffn_kinds)
        out += sublayers * per_sublayer * 2 * d + 2 * 2 * d * int(scales.embedding)
    if spec.attention.cca is not None:
        h, kv, width = spec.attention.n_heads, spec.n_kv_heads, spec.head_dim_qk
        paths = 3 * h * width + (h + kv) * width + 3 * (h + kv) * width
        out += counts["attention"] * (paths + 2 * (h + 2 * kv) * width + 2 * kv * width)
    moe = spec.moe
    if moe is not None and moe.router_mlp is not None:
        out += counts["moe"] * 11 * moe.router_mlp.width  # norm 2r, GELUs 4r, scale and sum 5r
    return out


def _hyper_connection_bytes(spec: ModelSpec) -> int:
    """Elements hyper-connections' element-wise kernels read and write per token, all layers:
    each map's norm over the n·d streams (read, write), the pre-weighted sum (read n·d, write
    d) and the spread of the sublayer's output over the streams added to them (read d + n·d,
    write n·d); the head's norm and sum once."""
    hc = spec.hyper_connections
    if hc is None:
        return 0
    width, d = hc.streams * spec.d_model, spec.d_model
    per_map = 2 * width + (width + d) + (d + 2 * width)
    if hc.gate_rank:  # the gated maps: the gate's SiLU (2r) and sigmoid (2·n·d), and the
        # gating product (reads 2·n·d, writes n·d) before the mean
        per_map += 2 * hc.gate_rank + 5 * width
    return 2 * spec.n_layers * per_map + 2 * width + (width + d)


def _shared_block_matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """The shared block at each of its depths (calc.spec.layers.SharedBlockSpec): W_Q and
    W_K/W_V reading 2d (column-parallel, by heads), W_O (row-parallel), the FFN (column, row)
    as an attention layer's; its weights held once per set (weight_sets). Each depth's
    projection d → d and adapters are replicated, like a router: their TP split is not
    priced."""
    block, ffn = spec.shared_block, spec.ffn
    if block is None or ffn is None:
        return []
    d, n, sets = spec.d_model, block.depths, block.n_blocks
    h, kv, d_qk, d_v = spec.attention.n_heads, spec.n_kv_heads, spec.head_dim_qk, spec.head_dim_v
    shapes = ((h * d_qk, 2 * d, "column"), (kv * (d_qk + d_v), 2 * d, "kv"),
              (d, h * d_v, "row"))
    weights = sum(out * into for out, into, _ in shapes)
    attention = flops["shared_block/attention"]
    ops = [Matmul("shared_block/attention", attention * out * into / weights, out, into, n,
                  split, weight_sets=sets) for out, into, split in shapes]
    ops += [dataclasses.replace(op, weight_sets=sets) for op in
            _ffn("shared_block/mlp", flops["shared_block/mlp"], ffn.d_ff, d, ffn.gated, n)]
    ops.append(Matmul("shared_block/projection", flops["shared_block/projection"], d, d, n,
                      "none"))
    if block.adapter_rank is not None:  # the down halves' input width, the rank's output
        ops.append(Matmul("shared_block/adapters", flops["shared_block/adapters"],
                          block.adapter_rank, d, n, "none"))
    return ops


def _indexer_width(spec: ModelSpec) -> int:
    """Output width of DSA's indexer projections: h_I·d_I queries, one key, h_I weights (none
    for MiniMax-M3's, without MLA); of DeepSeek-V4's CSA indexer: h_I·d_I queries, its
    compressor's keys and gates (2·d_I each), h_I weights."""
    indexer = spec.attention.indexer
    if indexer is not None:
        weights = int(spec.attention.mla is not None)
        return indexer.n_heads * (indexer.head_dim + weights) + indexer.head_dim
    comp = spec.attention.compression
    csa = comp.indexer if comp is not None else None
    return csa.n_heads * (csa.head_dim + 1) + 4 * csa.head_dim if csa is not None else 0


def _compressor_matmuls(spec: ModelSpec, flops: dict[str, float]) -> list[Matmul]:
    """DeepSeek-V4's compressors, the CSA layers' and the HCA layers' apart: their shares of
    attention/compressor by their projections' widths (4·d_qk and 2·d_qk out of d)."""
    sparse, heavy = spec.n_sparse_layers, spec.n_heavy_layers
    if not sparse + heavy:
        return []
    d, width = spec.d_model, spec.head_dim_qk
    total = flops["attention/compressor"]
    csa = total * 2 * sparse / (2 * sparse + heavy)
    return [Matmul("attention/compressor", csa, 4 * width, d, sparse, "none"),
            Matmul("attention/compressor", total - csa, 2 * width, d, heavy, "none")]


def _indexer_bytes(spec: ModelSpec, seq_len: int) -> int:
    """Elements the indexers read and write per token, all layers (their products are
    attention/scores, priced as attention). DSA's: the key's LayerNorm (d_I in and out), RoPE
    on h_I + 1 heads' rotary part, ReLU over the h_I·s scores and the top-k's read of the s
    weighted scores. MiniMax-M3's (without MLA): the RMSNorms of the h_I query heads and the
    key ((h_I + 1)·d_I in and out), RoPE on them (at most as wide), the block maximum's read of
    the h_I·s scores and the top-k's of the h_I·⌈s/B⌉ block scores."""
    indexer, mla = spec.attention.indexer, spec.attention.mla
    if indexer is None:
        return 0
    h, width = indexer.n_heads, indexer.head_dim
    if mla is None:
        blocks = -(-seq_len // indexer.block_size)
        per_layer = 4 * (h + 1) * width + h * seq_len + h * blocks
    else:
        per_layer = 2 * width + 2 * (h + 1) * mla.qk_rope_head_dim + 2 * h * seq_len + seq_len
    return spec.n_indexer_layers * per_layer


def _mla_up_flops(spec: ModelSpec, flops: dict[str, float]) -> float:
    """The up-projections' share of MLA's query and key/value products (DeepSeek-V2 §2.1.2:
    W_DQ d × r_q then W_UQ r_q × h·d_qk; W_DKV d × (r_kv + d_rope) then W_UK, W_UV r_kv ×
    h·(d_qk − d_rope + d_v)), by their weights' shares, as calc's FLOPs count them, over the
    layers of each head shape (a kind's own latent attention: dots3's sliding layers)."""
    if spec.attention.mla is None:
        return 0.0
    kind, own = spec.shaped_kind, spec.shaped_layers
    n_att = spec.layer_counts["attention"]
    shapes = [(spec, n_att - own)] + ([(spec.for_kind(kind), own)] if own else [])
    d = spec.d_model
    # per layer of each shape: (up-projection weights, all q/kv weights), for the shares
    parts = []
    for shaped, layers in shapes:
        mla, h = shaped.attention.mla, shaped.attention.n_heads
        assert mla is not None
        d_qk, d_v, rope, r_kv = (shaped.head_dim_qk, shaped.head_dim_v,
                                 mla.qk_rope_head_dim, mla.kv_lora_rank)
        kv_up = r_kv * h * (d_qk - rope + d_v)
        kv_all = d * (r_kv + rope) + kv_up
        # without a query latent W_Q is one d × h·d_qk product: no up-projection; A.X-K2's
        # W_UQ reads the latent before and after its norm: 2·r_q (latent_gate)
        q_up = (mla.q_lora_rank or 0) * (1 + mla.latent_gate) * h * d_qk
        q_all = d * (mla.q_lora_rank or 0) + q_up if mla.q_lora_rank else d * h * d_qk
        parts.append((layers, kv_up, kv_all, q_up, q_all))
    kv_total = sum(n * kv_all for n, _, kv_all, _, _ in parts)
    q_total = sum(n * q_all for n, _, _, _, q_all in parts)
    up = flops["attention/kv"] * sum(n * kv_up for n, kv_up, _, _, _ in parts) / kv_total
    if q_total:
        up += flops["attention/q"] * sum(n * q_up for n, _, _, q_up, _ in parts) / q_total
    return up


def _elementwise(spec: ModelSpec, seq_len: int) -> tuple[ElementWise, ...]:
    """Forward bytes per token of the memory-bound kernels, all layers (reads + writes).

    Each kernel reads its inputs and writes its output once (no fusion across kernels is
    assumed, except Megatron-LM's fused scale-mask-softmax, one kernel).
    """
    q, d, layers = ACTIVATION_BYTES, spec.d_model, spec.n_layers
    att, moe, mla = spec.attention, spec.moe, spec.attention.mla
    h, kv = att.n_heads, spec.n_kv_heads
    counts = spec.layer_counts
    n_att, dense, n_moe = counts["attention"], counts["dense"], counts["moe"]
    glu = int(spec.ffn is not None and spec.ffn.gated)
    ffns = dense + n_moe  # layers with an FFN
    # the latents' widths summed over the attention layers (a kind's own: dots3's sliding), and
    # DeepSeek-V4's query latent (attention.q_lora_rank) on each
    latents = n_att * (att.q_lora_rank or 0)
    if mla is not None:
        kind, own = spec.shaped_kind, spec.shaped_layers
        for shaped, count in [(spec, n_att - own)] + ([(spec.for_kind(kind), own)] if own
                                                      else []):
            latent = shaped.attention.mla
            assert latent is not None
            latents += count * (latent.kv_lora_rank + (latent.q_lora_rank or 0))
    # query heads over the attention layers (a kind's own count on its layers: kind_shapes)
    kind, own = spec.shaped_kind, spec.shaped_layers
    h2, kv2, d_qk2, _ = spec.heads_of(kind or "")
    layer_heads = (n_att - own) * h + own * h2
    rotary = 0  # rotated elements per token over the attention layers
    if mla is not None:  # queries' RoPE part, the shared key (a kind's own: its heads)
        rotary = sum(count * (shaped.attention.n_heads + 1) * shaped.attention.mla.qk_rope_head_dim
                     for shaped, count in ([(spec, n_att - own)]
                                           + ([(spec.for_kind(kind), own)] if own else []))
                     if shaped.attention.mla is not None)
    elif spec.position.kind == "rope":
        rotary = (n_att - own) * (h + kv) * spec.head_dim_qk + own * (h2 + kv2) * d_qk2
    ffn_widths = dense * spec.ffn.d_ff if spec.ffn is not None else 0
    # the shared block at each depth: its heads' softmax and RoPE, its two norms (2d and d),
    # its FFN's activation, and its output added to the layer's input (read 2, write 1)
    depths = spec.shared_block.depths if spec.shared_block is not None else 0
    layer_heads += depths * h
    if spec.position.kind == "rope" and mla is None:
        rotary += depths * (h + kv) * spec.head_dim_qk
    if depths and spec.ffn is not None:
        ffn_widths += depths * spec.ffn.d_ff
    if moe is not None:
        ffn_widths += n_moe * (moe.experts_per_token * moe.d_expert
                               + moe.n_shared_experts * moe.shared_width)
    # x + F(x) after each sublayer (read 2, write 1); a parallel block adds both branches at once
    # (hyper-connections: their spread over the streams adds the output, _hyper_connection_bytes)
    residual = (0 if spec.hyper_connections else layers * 4 * d if spec.parallel_block
                else (layers + ffns) * 3 * d)
    # A.X-K1's norm over each MoE layer's output (moe.output_norm); Gemma 4's three branch
    # norms (moe.branch_norms) and its router's own norm (moe.router_scales)
    moe_norms = n_moe * ((moe.output_norm + 3 * moe.branch_norms + moe.router_scales)
                         if moe is not None else 0)
    # per-layer embeddings: the projection's norm over the L·p values and each layer's norm
    # over d; each layer's gated vector added to the stream (read 2, write 1), and over the
    # L·p values the table's and the projection's sum and φ(gate) ⊙ the layer's vector (read 2,
    # write 1 each), replicated with the residual adds
    ple = spec.per_layer_embeddings
    ple_width = layers * ple.width if ple is not None else 0
    ple_norms = ple_width + (layers * d if ple is not None else 0)
    ple_residual = (layers * 3 * d + 2 * 3 * ple_width) if ple is not None else 0
    # A.X-K2's gated norms (norm.gate_rank): the SiLU reads and writes r, the sigmoid d, the
    # product reads 2d and writes d
    rank = spec.norm.gate_rank or 0
    norm_gates = (layers + n_moe) * (2 * rank + 5 * d) if rank else 0
    # its latent gate (attention.mla.latent_gate) concatenates the query latent before and
    # after its norm for W_UQ and W_G: reads and writes 2·r_q, beside the latents' norms
    if mla is not None and mla.latent_gate:
        latents += n_att * 2 * (mla.q_lora_rank or 0)
    # ModernBERT decoder: its prediction head's norm and activation (read and write d each,
    # replicated like its dense layer, counted with the norms), and no norm before layer 0's
    # mixer (norm.first_mixer_norm)
    head = 2 * int(spec.prediction_head is not None)
    layer_norms = layers * spec.norms_per_layer - (not spec.norm.first_mixer_norm) + head
    terms = [
        # each norm reads and writes d (the MLA latents' norms their rank, and the latent
        # gate's concatenation)
        ElementWise("norms", ((layer_norms + moe_norms) * 2 * d
                              + 2 * latents + depths * 2 * 3 * d + 2 * ple_norms) * q,
                    "replicated"),
        ElementWise("residual", (residual + depths * 3 * d + ple_residual) * q, "replicated"),
        ElementWise("norm gates", norm_gates * q, "replicated"),
        # dropout after each sublayer: read, write, and a 1-byte mask
        ElementWise("dropout", (layers + ffns) * (2 * d * q + d * MASK_BYTES), "replicated",
                    dropout=True),
        ElementWise("rope", 2 * rotary * q, "tensor"),
        # φ(gate) ⊙ up reads 2 widths and writes 1; a plain activation reads and writes 1
        ElementWise("activation", ffn_widths * (2 + glu) * q, "tensor"),
        # eager attention: one fused scale-mask-softmax over the full s×s square per head
        ElementWise("softmax", layer_heads * 2 * seq_len * q, "tensor", eager=True),
        # a bucketed score bias (CPM-Ant): its looked-up s×s values per head written once a
        # layer, then read with the scores and added (read 2, write 1), a tensor the
        # attention kernel takes whichever it is (CpmAntAttention runs eager only)
        # Inkling's relative bias (attention.relative_logits) the same: its gathered s×s
        # values per head (DotProductAttention takes them as a bias, as the bucketed one)
        ElementWise("position bias",
                    layer_heads * 4 * seq_len * q if spec.position.kind == "bucketed"
                    or spec.attention.relative_logits is not None else 0.0, "tensor"),
        ElementWise("attention dropout", layer_heads * seq_len * (2 * q + MASK_BYTES), "tensor",
                    dropout=True, eager=True),
        *mixer_elementwise(spec),
        ElementWise("indexer", _indexer_bytes(spec, seq_len) * q, "replicated"),
        ElementWise("hyper_connections", _hyper_connection_bytes(spec) * q, "replicated"),
        ElementWise("altup and laurel", _altup_laurel_bytes(spec) * q, "replicated"),
        ElementWise("zaya", _zaya_bytes(spec) * q, "replicated"),
    ]
    if moe is not None:  # token permutation: k copies out (dispatch) and back (combine); a zero-
        # computation expert's slot stays with its token (LongCat-Flash: only FFN experts move)
        terms.append(ElementWise("moe permute", n_moe * 4 * moe.experts_per_token * d * q,
                                 "replicated"))
    return tuple(t for t in terms if t.bytes)
