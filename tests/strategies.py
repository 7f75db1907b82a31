"""Hypothesis strategies: random *valid* ModelSpecs that cover every option the spec allows."""

from __future__ import annotations

import itertools
import math

from hypothesis import strategies as st

import calc
from calc.errors import CalcError
from calc.spec.loop import LOOP_REFUSED


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


@st.composite
def model_specs(draw, max_width: int = 64, max_layers: int = 4, max_vocab: int = 97):
    """Small specs (cheap to build on the CPU) with every architecture choice drawn."""
    n_heads = draw(st.integers(1, 8))
    mla = draw(st.booleans())
    explicit_head_dim = mla or draw(st.booleans())
    head_dim = draw(st.integers(1, 16)) if explicit_head_dim else None
    d_model = draw(st.integers(1, max_width // n_heads)) * n_heads if not explicit_head_dim \
        else draw(st.integers(2, max_width))
    attention: dict = {"n_heads": n_heads}
    if mla:
        attention["mla"] = {
            "q_lora_rank": draw(st.none() | st.integers(1, 16)),
            "kv_lora_rank": draw(st.integers(1, 16)),
            "qk_nope_head_dim": draw(st.integers(0, 8)),
            "qk_rope_head_dim": draw(st.sampled_from([0, 2, 4, 8])),
            "v_head_dim": draw(st.integers(1, 8)),
        }
        if attention["mla"]["qk_nope_head_dim"] + attention["mla"]["qk_rope_head_dim"] == 0:
            attention["mla"]["qk_nope_head_dim"] = 1
    else:
        attention["head_dim"] = head_dim
        # values narrower or wider than the queries and keys (MiMo-V2-Flash: 128 against 192)
        attention["v_head_dim"] = draw(st.none() | st.integers(1, 16))
        attention["n_kv_heads"] = draw(st.sampled_from(_divisors(n_heads)))
        attention["qk_norm"] = draw(st.sampled_from(["none", "head", "projection"]))
    attention["qkv_bias"] = draw(st.booleans())
    attention["out_bias"] = draw(st.booleans())
    n_layers = draw(st.integers(1, max_layers))
    kinds = ["global", "nope"]
    # DSA's indexer (its queries from MLA's query latent) selects among all earlier keys
    dsa = bool(mla and attention["mla"]["q_lora_rank"] and draw(st.booleans()))
    if dsa and draw(st.booleans()):  # dots3: the indexer on the global layers, local beside
        attention["sliding_window"] = draw(st.integers(1, 12))
        rest = draw(st.lists(st.sampled_from(["global", "local"]), max_size=2))
        attention["layer_pattern"] = ("global", *rest)
    if not dsa and draw(st.booleans()):
        attention["sliding_window"] = draw(st.integers(1, 12))
        kinds.append("local")
    if not dsa and draw(st.booleans()):
        attention["chunk_size"] = draw(st.integers(1, 12))
        kinds.append("chunked")
    if not dsa and (len(kinds) > 2 or draw(st.booleans())):
        attention["layer_pattern"] = draw(st.lists(
            st.sampled_from(kinds), min_size=1, max_size=3).map(tuple))
    attention["sinks"] = draw(st.booleans())
    # HunYuan V4 gates MLA's output too (its own gate_proj)
    attention["output_gate"] = draw(st.booleans())
    if attention["output_gate"]:  # Qwen3-Next's gate per channel, LFM3's per head
        attention["output_gate_per"] = draw(st.sampled_from(["channel", "head"]))
        attention["output_gate_bias"] = draw(st.booleans())  # Beam's gate_bias per head
    if not mla and not attention["output_gate"] and not attention["qkv_bias"] and draw(
            st.booleans()):  # JetMoE's mixture of attention heads: k of E experts per token
        per_token = n_heads // attention["n_kv_heads"]
        attention["experts"] = draw(st.integers(per_token, per_token + 2))
    kv_heads = attention.get("n_kv_heads") or n_heads
    if (not mla and "experts" not in attention and n_heads % 2 == 0 and kv_heads % 2 == 0
            and draw(st.booleans())):  # DIFF Transformer: heads and value halves in pairs
        attention["differential"] = True
    attention["qk_norm_weights"] = draw(st.booleans())
    mixers = draw(_mixers(n_layers))
    if dsa:
        attention["indexer"] = draw(_indexer(attention["mla"]["qk_rope_head_dim"], n_layers,
                                             mixers["layers"]["mixer_pattern"],
                                             attention.get("layer_pattern", ("global",))))
    activation = draw(st.sampled_from(["relu", "gelu", "silu", "relu2", "xielu", "swiglu",
                                       "geglu", "reglu", "relu2glu"]))
    ffn = {"activation": activation, "d_ff": draw(st.integers(1, 4 * max_width)),
           "bias": draw(st.booleans())}
    moe = None
    no_ffn = mixers.pop("no_ffn")
    if no_ffn:
        ffn = None
        mixers["layers"]["ffn_pattern"] = ("none",)
    elif activation != "xielu" and draw(st.booleans()):  # xIELU: dense FFNs only
        n_experts = draw(st.integers(1, 6))
        first_dense = draw(st.integers(0, n_layers - 1))
        # LongCat-Flash's zero-computation experts, with a top-k that keeps the expected FFN
        # experts a token, k·E/(E + E_0), whole
        zero = draw(st.sampled_from([0, 0, 1, 2, 3]))
        pool = n_experts + zero
        moe = {
            "n_experts": n_experts, "n_zero_experts": zero,
            "top_k": draw(st.sampled_from([k for k in range(1, pool + 1)
                                           if k * n_experts % pool == 0])),
            "d_expert": draw(st.integers(1, 2 * max_width)),
            "n_shared_experts": (shared := draw(st.integers(0, 2))),
            "d_shared": draw(st.none() | st.integers(1, 2 * max_width)),
            "shared_expert_gate": shared > 0 and draw(st.booleans()),
            "router_bias": draw(st.booleans()),
            "output_bias": draw(st.booleans()),
            "output_norm": draw(st.booleans()),  # A.X-K1's post_mlp_layernorm
            # Gemma 4's MoE block beside the dense MLP: each branch normed, the router scaled
            "branch_norms": shared > 0 and draw(st.booleans()),
            "router_scales": draw(st.booleans()),
            "first_dense_layers": first_dense,
            "every": draw(st.integers(1, max(1, n_layers - first_dense))),
        }
        # every must leave at least one MoE layer: layer i is MoE iff i >= k and (i+1) % every == 0
        if not any(i >= first_dense and (i + 1) % moe["every"] == 0 for i in range(n_layers)):
            moe["every"] = 1
        if draw(st.booleans()):  # place the MoE layers by exceptions instead (mlp_only_layers)
            dense = draw(st.lists(st.integers(0, n_layers - 1), max_size=n_layers - 1))
            if dense and len(set(dense)) < n_layers:
                moe.update(first_dense_layers=0, every=1)
                mixers["layers"]["exceptions"] = ({"layers": sorted(set(dense)),
                                                   "ffn": "dense"},)
    kind = draw(st.sampled_from(["layernorm", "rmsnorm"]))
    parallel = not no_ffn and draw(st.booleans())
    weights = draw(st.booleans()) or draw(st.booleans())
    norm = {"kind": kind,
            "bias": draw(st.booleans()) if kind == "layernorm" and weights else False,
            "placement": "pre" if parallel else draw(
                st.sampled_from(["pre", "post", "sandwich", "reordered"])),
            "final": draw(st.booleans()), "embedding": draw(st.booleans()),
            "weights": weights, "sub_norms": draw(st.booleans())}
    context = draw(st.integers(1, 24))
    kinds = ["learned", "sinusoidal", "rope", "alibi", "none"]
    if not mla and "chunk_size" not in attention:  # relative positions: not in chunked layers
        kinds.append("relative")
    position_kind = draw(st.sampled_from(kinds))
    position: dict = {"kind": position_kind}
    if position_kind == "learned":
        position["max_positions"] = draw(st.integers(context, context + 4))
    vocab, tied = draw(st.integers(1, max_vocab)), draw(st.booleans())
    # an untied head may score only the first rows of the vocabulary (Apertus 1.5)
    narrower = not tied and vocab > 1 and draw(st.booleans())
    spec = calc.ModelSpec(
        name="random", vocab_size=vocab, d_model=d_model,
        n_layers=n_layers, context_length=context, attention=attention, ffn=ffn, moe=moe,
        norm=norm, position=position, tie_embeddings=tied,
        output_vocab_size=draw(st.integers(1, vocab - 1)) if narrower else None,
        lm_head_bias=draw(st.booleans()), parallel_block=parallel,
        parallel_norms=draw(st.sampled_from([1, 2])) if parallel else 1,
        mtp_modules=0 if no_ffn or "attention" not in mixers["layers"]["mixer_pattern"]
        else draw(st.integers(0, 2)),
        d_embedding=draw(st.none() | st.integers(1, max_width)), **mixers,
    )
    # Laguna, Gemma 4, Inkling, MiMo-V2-Flash: the attention layers of one kind with head
    # shapes of their own
    used = sorted({kind for kind in spec.attention_kinds if kind})
    if (used and not mla and "experts" not in attention and not spec.mtp_modules
            and not attention.get("differential") and draw(st.booleans())):
        heads = draw(st.integers(1, 8))
        kv = spec.n_kv_heads
        shape = {"n_heads": heads,
                 "n_kv_heads": draw(st.sampled_from(_divisors(heads)) if heads % kv
                                    else st.none() | st.sampled_from(_divisors(heads))),
                 "head_dim": draw(st.none() | st.integers(1, 16)),
                 "v_head_dim": draw(st.none() | st.integers(1, 16)),
                 "sinks": draw(st.none() | st.booleans())}  # MiMo-V2-Flash: sliding only
        spec = spec.updated(**{"attention.kind_shapes": {draw(st.sampled_from(used)): shape}})
    if (spec.moe is not None and not spec.parallel_block and not spec.mtp_modules
            and spec.layers.ffn_pattern is None and not spec.layers.exceptions
            and spec.n_layers >= 2 and draw(st.booleans())):
        # LongCat-Flash's shortcut-connected MoE: MoE and dense layers alternate, the last
        # layer dense
        last = ({"layers.exceptions": ({"layers": (spec.n_layers - 1,), "ffn": "dense"},)}
                if spec.n_layers % 2 else {})
        spec = spec.updated(**{"moe.shortcut": True, "moe.first_dense_layers": 0,
                               "moe.every": 1, "layers.ffn_pattern": ("moe", "dense"), **last})
    if (not mla and "experts" not in attention and not attention.get("differential")
            and draw(st.booleans())):
        spec = spec.updated(**draw(_gemma4_parts(spec)))
    # hyper-connections (HunYuan V4; DeepSeek-V4's mHC with residual_mix) on pre-norm layers
    # with an FFN, the embedding at d_model, no MTP and no shortcut MoE (ModelSpec's rule)
    if (spec.norm.placement == "pre" and not parallel and not no_ffn and not spec.mtp_modules
            and spec.d_embedding is None and not (spec.moe and spec.moe.shortcut)
            and draw(st.booleans())):
        mix, norm = draw(st.booleans()), spec.norm
        # Qwen4-Exp's gated low-rank maps: their grouped RMSNorms are the model's only norms
        gated = (not mix and norm.kind == "rmsnorm" and norm.weights and not norm.embedding
                 and not norm.sub_norms and norm.gate_rank is None and norm.first_mixer_norm
                 and draw(st.booleans()))
        if gated:
            spec = spec.updated(**{"norm.final": False})
        spec = spec.updated(hyper_connections={
            "streams": draw(st.integers(1, 4)), "residual_mix": mix,
            "gate_rank": draw(st.integers(1, 5)) if gated else None})
    if (spec.ffn is not None and not spec.ffn.activation_params
            and spec.hyper_connections is None and not spec.mtp_modules
            and draw(st.booleans())):
        # Gemma 3n's and Gemma 4's per-layer embeddings
        spec = spec.updated(per_layer_embeddings={
            "width": draw(st.integers(1, 8)), "vocab_size": draw(st.none() | st.integers(1, 9))})
    if (spec.norm.placement == "sandwich" and spec.ffn is not None
            and "none" not in spec.ffn_kinds and set(spec.mixer_kinds) == {"attention"}
            and spec.hyper_connections is None and not spec.mtp_modules
            and spec.shared_block is None and spec.d_embedding is None and draw(st.booleans())):
        # Gemma 3n's LAuReL beside the mixer and AltUp's streams around the layer (not around
        # an MoE layer: ModelSpec's rule)
        parts = {"laurel": draw(st.none() | st.builds(dict, rank=st.integers(1, 8)))}
        if spec.moe is None:
            parts["altup"] = draw(st.none() | st.builds(dict, streams=st.integers(1, 4)))
        spec = spec.updated(**parts)
    alone = (spec.per_layer_embeddings is None and spec.hyper_connections is None
             and not spec.mtp_modules and spec.shared_block is None and spec.d_embedding is None
             and spec.altup is None and spec.laurel is None and spec.prediction_head is None)
    if alone and draw(st.booleans()):
        # Gemma 4's drafters: fed a target's states, every layer reading its keys where all
        # are attention layers Gemma 4 can share (neither MLA, chunked nor experts)
        changes: dict = {"drafter": {"target_width": draw(st.integers(1, 16))}}
        att = spec.attention
        if (set(spec.mixer_kinds) == {"attention"} and "chunked" not in spec.attention_kinds
                and att.mla is None and att.indexer is None and not att.experts
                and not att.differential and draw(st.booleans())):
            changes["attention.kv_shared_layers"] = spec.n_layers
        spec = spec.updated(**changes)
    if (alone and spec.output_vocab_size is None and not spec.lm_head_bias
            and draw(st.booleans())):
        # a centroid head: C clusters dividing the vocabulary, the top k of them
        clusters = draw(st.sampled_from(_divisors(spec.vocab_size)))
        spec = spec.updated(centroid_head={"n_centroids": clusters,
                                           "top_k": draw(st.integers(1, clusters))})
    if (spec.mixer_kinds[-1] == "attention" and not spec.attention.experts
            and not spec.attention.out_bias and draw(st.booleans())):
        # GPT-NeoX-Japanese: W_O's bias on the last layer only
        spec = spec.updated(**{"attention.last_layer_out_bias": True})
    moe_layers = [i for i, kind in enumerate(spec.ffn_kinds) if kind == "moe"]
    if spec.moe is not None and not spec.moe.n_zero_experts and moe_layers and draw(
            st.booleans()):
        # DeepSeek-V4's hash_moe layers: some MoE layers pick experts by token id
        picked = draw(st.lists(st.sampled_from(moe_layers), min_size=1, unique=True))
        spec = spec.updated(**{"moe.hash_layers": tuple(sorted(picked))})
    att = spec.attention
    if (att.mla is None and not att.experts and not att.output_gate and not att.differential
            and not att.kind_shapes and draw(st.booleans())):
        # DeepSeek-V4's attention: queries through a latent, a grouped W_O, a query norm
        # without γ beside a key norm with one
        changes: dict = {}
        if not att.qkv_bias and draw(st.booleans()):
            changes["attention.q_lora_rank"] = draw(st.integers(1, 16))
        if not (att.out_bias or att.last_layer_out_bias) and draw(st.booleans()):
            width = att.n_heads * spec.head_dim_v
            changes["attention.output_groups"] = {
                "groups": draw(st.sampled_from(_divisors(width))), "rank": draw(
                    st.integers(1, 8))}
        if att.qk_norm == "head" and att.qk_norm_weights:
            changes["attention.q_norm_weights"] = draw(st.booleans())
        if changes:
            spec = spec.updated(**changes)
    att = spec.attention
    if att.mla is not None and draw(st.booleans()):  # dots3's norm over the shared RoPE key
        spec = spec.updated(**{"attention.mla.rope_key_norm": True})
        att = spec.attention
    used = sorted({kind for kind in spec.attention_kinds if kind}
                  - ({"global"} if att.indexer is not None else set()))
    if (att.mla is not None and used and not spec.mtp_modules and not att.kind_shapes
            and draw(st.booleans())):
        # dots3's sliding layers: a kind's own heads and latent attention
        mla = att.mla
        rope = draw(st.sampled_from([0, 2, 4]))
        spec = spec.updated(**{"attention.kind_shapes": {draw(st.sampled_from(used)): {
            "n_heads": draw(st.integers(1, 4)),
            "mla": {**mla.model_dump(),
                    "q_lora_rank": mla.q_lora_rank and draw(st.integers(1, 8)),
                    "kv_lora_rank": draw(st.integers(1, 8)),
                    "qk_nope_head_dim": draw(st.integers(0 if rope else 1, 6)),
                    "qk_rope_head_dim": rope, "v_head_dim": draw(st.integers(1, 6))}}}})
        att = spec.attention
    if (att.mla is not None and att.mla.q_lora_rank and att.output_gate
            and att.output_gate_per == "channel" and not att.output_gate_bias
            and draw(st.booleans())):  # A.X-K2's q_gate_proj: the gate from the query latent
        # (a kind's own latent attention, dots3's, takes the model's latent_gate too)
        spec = spec.updated(**{"attention.mla.latent_gate": True, **{
            f"attention.kind_shapes.{kind}.mla.latent_gate": True
            for kind, shape in att.kind_shapes.items() if shape.mla is not None}})
    att = spec.attention
    if (att.mla is None and not att.kind_shapes and not att.differential
            and spec.cross_attention is None and spec.shared_block is None
            and draw(st.booleans())):
        # CPM-Ant's bucketed score bias by relative-position bucket and segment pair, and its
        # segment table beside the token embedding
        spec = spec.updated(position={"kind": "bucketed", "buckets": draw(st.integers(1, 16)),
                                      "segments": draw(st.integers(0, 4))},
                            segment_embedding=draw(st.none() | st.integers(1, 4)))
    if (spec.d_embedding is None and spec.drafter is None and spec.centroid_head is None
            and draw(st.booleans())):
        # ModernBERT decoder's prediction head (dense, activation, norm) before the LM head
        spec = spec.updated(prediction_head={"bias": draw(st.booleans())})
    if (spec.norm.placement == "pre" and not spec.parallel_block
            and spec.hyper_connections is None and draw(st.booleans())):
        # ModernBERT decoder's layer 0 without its attention norm
        spec = spec.updated(**{"norm.first_mixer_norm": False})
    if (spec.norm.placement == "pre" and not spec.parallel_block and not spec.mtp_modules
            and spec.shared_block is None and spec.norm.first_mixer_norm
            and (spec.hyper_connections is None or spec.hyper_connections.gate_rank is None)
            and draw(st.booleans())):
        # A.X-K2's gated pre-norms (not where Qwen4-Exp's gated maps hold the only norms)
        spec = spec.updated(**{"norm.gate_rank": draw(st.integers(1, 4))})
    att = spec.attention
    if (att.output_gate and att.output_gate_per == "channel" and not att.output_gate_bias
            and att.mla is None and draw(st.booleans())):
        # HRM-Text's gate_proj beside q_proj
        spec = spec.updated(**{"attention.output_gate_own": True})
    try:  # nGPT's scale vectors where the model's layers can hold them (Dory's)
        if draw(st.booleans()):
            spec = spec.updated(ngpt=True)
    except calc.CalcError:
        pass
    spec = _inkling_parts(draw, draw(_zaya_parts(_doge_parts(draw, spec))))
    if not any(present(spec) for _, present in LOOP_REFUSED) and draw(st.booleans()):
        spec = spec.updated(loop=draw(_loops(spec.n_layers)))
    return spec


def _doge_parts(draw, spec: calc.ModelSpec) -> calc.ModelSpec:
    """Doge's parts where the spec allows them: the dynamic mask on attention-only models of
    global MHA/GQA heads and product-key experts (one neuron each, top_k up to ⌊√E⌋²) in place
    of a plain MoE (ZAYA1's parts draw the residual scales both use)."""
    att, moe = spec.attention, spec.moe
    if (set(spec.mixer_kinds) == {"attention"} and set(att.pattern) == {"global"}
            and set(spec.attention_kinds) == {"global"} and att.mla is None
            and att.indexer is None and att.compression is None and not att.experts
            and not att.differential and not att.kind_shapes and not att.k_eq_v
            and not att.kv_shared_layers and att.q_lora_rank is None
            and att.output_groups is None and att.sliding_window is None
            and att.chunk_size is None and spec.drafter is None and draw(st.booleans())):
        spec = spec.updated(**{"attention.dynamic_mask": {"keep": draw(st.integers(1, 10)),
                                                          "bias": draw(st.booleans())}})
    if (moe is not None and not (moe.n_zero_experts or moe.router_bias or moe.router_scales
                                 or moe.hash_layers or moe.shortcut or moe.branch_norms
                                 or moe.shared_expert_gate) and draw(st.booleans())):
        keys = math.isqrt(moe.n_experts)
        spec = spec.updated(**{"moe.product_keys": True, "moe.d_expert": 1,
                               "moe.top_k": min(moe.top_k, keys * keys)})
    return spec


@st.composite
def _zaya_parts(draw, spec: calc.ModelSpec) -> calc.ModelSpec:
    """ZAYA1's parts where the spec allows them: CCA on GQA heads of one width (its own L2
    norm in place of a QK-norm, no sinks), the MLP router where every layer is an MoE, and
    the residual scales on a sequential pre-norm layer (with an FFN or without)."""
    att = spec.attention
    if (att.mla is None and not att.experts and not att.differential and not att.kind_shapes
            and att.q_lora_rank is None and att.output_groups is None and not att.output_gate
            and not att.k_eq_v and not att.kv_shared_layers and att.indexer is None
            and att.compression is None and att.dynamic_mask is None and not spec.ngpt
            and spec.n_kv_heads * spec.head_dim_qk % 2 == 0
            and draw(st.booleans())):
        spec = spec.updated(**{"attention.cca": {"kernel": draw(st.integers(1, 3)),
                                                 "grouped_kernel": draw(st.integers(1, 3))},
                               "attention.qk_norm": "none", "attention.q_norm_weights": True,
                               "attention.sinks": False,
                               "attention.v_head_dim": None})
    moe = spec.moe
    if (moe is not None and all(spec.moe_layers) and not moe.n_zero_experts
            and not moe.hash_layers and not moe.shortcut and not spec.mtp_modules
            and not moe.product_keys
            and draw(st.booleans())):
        spec = spec.updated(**{"moe.router_mlp": {"width": draw(st.integers(1, 8))},
                               "moe.router_bias": False, "moe.router_scales": False,
                               "moe.first_dense_layers": 0, "moe.every": 1})
    if (spec.norm.placement == "pre" and not spec.parallel_block
            and spec.hyper_connections is None and spec.altup is None and spec.laurel is None
            and spec.shared_block is None and spec.per_layer_embeddings is None
            and spec.cross_attention is None and not spec.mtp_modules and not spec.ngpt
            and not (spec.moe and spec.moe.shortcut) and draw(st.booleans())):
        spec = spec.updated(residual_scales={key: draw(st.booleans()) for key in (
            "residual_bias", "branch", "embedding")})
    return spec


def _inkling_parts(draw, spec: calc.ModelSpec) -> calc.ModelSpec:
    """Inkling's parts, each where the spec allows it: the relative bias projected per token
    (its bank narrower or wider than the sequence), the residual short convolutions, the
    router scoring the shared experts with its global scale, the dense FFN's output scale;
    Inkling 2's sinks projected from the token, its scales on the queries and relative
    states, its per-token convolution taps, its attention residuals over blocks."""
    moe = spec.moe
    changes = {
        "attention.relative_logits": draw(st.none() | st.builds(
            dict, d_rel=st.integers(1, 4), extent=st.integers(1, 24), scale=st.booleans())),
        "attention.query_scale": draw(st.booleans()),
        "residual_conv": draw(st.none() | st.integers(1, 4)),
        # Inkling 2's per-token taps on these kinds' key and value convolutions
        "residual_conv_taps": tuple(draw(st.lists(st.sampled_from(["global", "local"]),
                                                  max_size=2, unique=True))),
        # Inkling 2's attention residuals over blocks, q/k/v split on some kinds
        "block_residual": draw(st.none() | st.builds(
            dict, layers=st.integers(1, 3), split_kinds=st.lists(
                st.sampled_from(["global", "local"]), max_size=2, unique=True).map(tuple))),
        "moe.router_global_scale": moe is not None and draw(st.booleans()),
        "moe.shared_in_router": moe is not None and draw(st.booleans()),
        "ffn.output_scale": spec.ffn is not None and draw(st.booleans())}
    # Inkling 2's sinks projected from each token (sink_proj d → h)
    sinks = {"attention.sinks": True, "attention.sink_proj": True} if draw(st.booleans()) else {}
    for change in [*({key: value} for key, value in changes.items() if value), sinks]:
        if change:
            try:  # a part the spec's other parts rule out stays off
                spec = spec.updated(**change)
            except CalcError:
                pass
    return spec


@st.composite
def block_sparse_specs(draw) -> calc.ModelSpec:
    """MiniMax-M3's block-sparse attention or Qwen4-Exp's QSA (attention.indexer without MLA,
    pooled or not): GQA heads with or without per-head QK norms, global layers that select K
    blocks of B keys or attend to every key (indexer.dense_layers), sliding and lightning layers
    beside them, dense or MoE FFNs."""
    heads = draw(st.integers(1, 4))
    layers = draw(st.integers(1, 5))
    kinds = draw(st.lists(st.sampled_from(["global", "local"]), min_size=1, max_size=2))
    mixers = draw(st.lists(st.sampled_from(["attention", "lightning"]), min_size=1,
                           max_size=2))
    pattern = ("attention", *mixers)
    lightning = any(pattern[i % len(pattern)] == "lightning" for i in range(layers))
    spec = calc.ModelSpec.model_validate({
        "vocab_size": draw(st.integers(2, 16)), "d_model": 4 * draw(st.integers(1, 4)),
        "n_layers": layers, "context_length": 64, "position": {"kind": "rope"},
        "attention": {"n_heads": heads, "n_kv_heads": draw(st.sampled_from(_divisors(heads))),
                      "head_dim": draw(st.integers(1, 6)),
                      "qk_norm": draw(st.sampled_from(["none", "head"])),
                      "sliding_window": draw(st.integers(1, 8)),
                      "layer_pattern": ("global", *kinds)},
        "layers": {"mixer_pattern": pattern},
        "lightning": {"n_heads": 1, "d_head": 2} if lightning else None,
        "ffn": {"activation": "swiglu", "d_ff": draw(st.integers(1, 8))},
        "moe": draw(st.none() | st.builds(dict, n_experts=st.just(3), top_k=st.integers(1, 3),
                                          d_expert=st.integers(1, 4)))})
    attending = [i for i, kind in enumerate(spec.attention_kinds) if kind == "global"]
    dense = draw(st.lists(st.sampled_from(attending), unique=True, max_size=len(attending) - 1))
    # Qwen4-Exp's QSA: blocks scored by their mean-pooled keys, one selection for every head
    pooled = draw(st.booleans())
    return spec.updated(**{"attention.indexer": {
        "n_heads": draw(st.integers(1, 3) if pooled else st.sampled_from(_divisors(heads))),
        "head_dim": draw(st.integers(1, 8)), "topk": draw(st.integers(1, 4)),
        "block_size": draw(st.integers(1, 5)), "dense_layers": sorted(dense),
        "pooled": pooled}})


@st.composite
def _loops(draw, n_layers: int) -> dict:
    """Looped layers (calc.spec.loop): the stored layers cut into spans, each run 1 to 3
    times, the whole schedule once or twice over (HRM-Text's H_cycles), and HRM-Text's
    initial state, its KV cache a slot per pass or per stored layer."""
    cuts = sorted(draw(st.sets(st.integers(1, n_layers - 1), max_size=2))) if n_layers > 1 \
        else []
    bounds = [0, *cuts, n_layers]
    runs = [[first, last - 1, draw(st.integers(1, 3))]
            for first, last in itertools.pairwise(bounds)]
    return {"runs": runs * draw(st.integers(1, 2)), "init_state": draw(st.booleans()),
            "cache": draw(st.sampled_from(["pass", "layer"]))}


@st.composite
def _gemma4_parts(draw, spec: calc.ModelSpec) -> dict:
    """Gemma 4's parts: keys used as values (the model's layers, or a kind's own), the last
    layers reading an earlier layer's keys and values (as many as leave a layer of each kind
    before them), and their FFN twice as wide."""
    def same_width(kind: str) -> bool:  # keys can be the values only as wide as they are
        _, _, width, values = spec.heads_of(kind)
        return width == values
    used = {kind for kind in spec.attention_kinds if kind}
    shaped = spec.attention.kind_shapes
    plain = all(same_width(kind) for kind in used - set(shaped))
    changes: dict = {"attention.k_eq_v": draw(st.booleans()) if plain else False}
    for kind, shape in shaped.items():
        own = draw(st.none() | st.booleans()) if same_width(kind) else False
        changes["attention.kind_shapes"] = {kind: {**shape.model_dump(), "k_eq_v": own}}
    mixers, kinds, most = spec.mixer_kinds, spec.attention_kinds, 0
    for shared in range(1, spec.n_layers):
        first = spec.n_layers - shared
        if (any(mixer != "attention" for mixer in mixers[first:]) or "chunked" in kinds[first:]
                or not set(kinds[first:]) <= set(kinds[:first])):
            break
        most = shared
    shared = changes["attention.kv_shared_layers"] = draw(st.integers(0, most))
    if shared and spec.ffn is not None:
        changes["ffn.double_wide"] = draw(st.booleans())
    return changes


@st.composite
def _indexer(draw, rope: int, n_layers: int, mixers: tuple[str, ...],
             kinds: tuple[str, ...] = ("global",)) -> dict:
    """DeepSeek Sparse Attention's indexer: a top-k that may be below the sequence length, and
    (GLM-5) global attention layers after the first that reuse an earlier indexer's keys."""
    attending = [i for i in range(n_layers) if "attention" in mixers[i % len(mixers)]
                 and kinds[i % len(kinds)] == "global"]
    shared = draw(st.lists(st.sampled_from(attending[1:]), unique=True)) if attending[1:] else []
    return {"n_heads": draw(st.integers(1, 3)), "head_dim": draw(st.integers(max(rope, 1), 8)),
            "topk": draw(st.integers(1, 12)), "shared_layers": sorted(shared)}


@st.composite
def _mixers(draw, n_layers: int) -> dict:
    """A mixer pattern and the mixers' shapes (Mamba, gated DeltaNet, lightning attention, RWKV,
    Griffin's recurrent block, mLSTM, short convolution); the
    key no_ffn says whether the layers go without FFN (Mamba)."""
    pattern = draw(st.lists(st.sampled_from(["attention", "mamba", "deltanet", "lightning",
                                             "rwkv", "griffin", "mlstm", "conv",
                                             "attention+mamba"]),
                            min_size=1, max_size=min(3, n_layers)))
    out: dict = {"layers": {"mixer_pattern": tuple(pattern)}, "no_ffn": False}
    if any("mamba" in m for m in pattern):
        version = draw(st.sampled_from([1, 2]))
        heads = draw(st.integers(1, 3))
        groups = draw(st.sampled_from([g for g in (1, 2, 3) if heads % g == 0]))
        out["mamba"] = {
            "version": version, "d_inner": heads * draw(st.integers(1, 3)),
            "d_state": draw(st.integers(1, 4)), "d_conv": draw(st.integers(1, 4)),
            "conv_bias": draw(st.booleans()), "bias": draw(st.booleans()),
            **({"dt_rank": draw(st.integers(1, 4)), "dt_norms": draw(st.booleans())}
               if version == 1 else
               {"n_heads": heads, "n_groups": groups, "gated_norm": draw(st.booleans())})}
        out["no_ffn"] = set(pattern) == {"mamba"} and draw(st.booleans())
    if "deltanet" in pattern:
        k_heads = draw(st.integers(1, 2))
        out["deltanet"] = {"n_k_heads": k_heads, "n_v_heads": k_heads * draw(st.integers(1, 2)),
                           "d_k": draw(st.integers(1, 4)), "d_v": draw(st.integers(1, 4)),
                           "d_conv": draw(st.integers(1, 4))}
        if draw(st.booleans()):  # Kimi Delta Attention's channel gate
            # low rank (Kimi Linear) or full rank (Ling 3)
            out["deltanet"].update(gate="channel",
                                   gate_rank=draw(st.none() | st.integers(1, 4)))
    if "lightning" in pattern:
        out["lightning"] = {"n_heads": draw(st.integers(1, 3)), "d_head": draw(st.integers(1, 4))}
    if "rwkv" in pattern:
        out["rwkv"] = {"d_attention": draw(st.integers(1, 6))}
    if "griffin" in pattern:
        blocks = draw(st.integers(1, 3))
        out["griffin"] = {"d_lru": blocks * draw(st.integers(1, 3)), "n_blocks": blocks,
                          "d_conv": draw(st.integers(1, 4))}
    if "mlstm" in pattern:
        heads = draw(st.integers(1, 3))
        out["mlstm"] = {"n_heads": heads, "d_qk": heads * draw(st.integers(1, 3)),
                        "d_v": heads * draw(st.integers(1, 3))}
    if "conv" in pattern:
        out["short_conv"] = {"d_conv": draw(st.integers(1, 4)), "bias": draw(st.booleans())}
    return out


def _plain_heads(draw, max_width: int) -> tuple[int, dict]:
    """Plain attention of any head shape, and a model width it fits: (d_model, attention)."""
    n_heads = draw(st.integers(1, 4))
    head_dim = draw(st.none() | st.integers(1, 8))
    d_model = (draw(st.integers(1, max_width // n_heads)) * n_heads if head_dim is None
               else draw(st.integers(2, max_width)))
    return d_model, {"n_heads": n_heads, "head_dim": head_dim,
                     "n_kv_heads": draw(st.sampled_from(_divisors(n_heads))),
                     "v_head_dim": draw(st.none() | st.integers(1, 8))}


@st.composite
def shared_block_specs(draw, max_width: int = 32, max_layers: int = 5):
    """Specs with a shared block (Zamba's, Zamba2's): any mixer pattern, with FFNs or without
    (the block still has one), plain attention of any head shapes, RoPE or none, one or more
    weight sets, adapters or none, on some of the layers."""
    n_layers = draw(st.integers(1, max_layers))
    d_model, attention = _plain_heads(draw, max_width)
    mixers = draw(_mixers(n_layers))
    if mixers.pop("no_ffn"):
        mixers["layers"]["ffn_pattern"] = ("none",)
    activation = draw(st.sampled_from(["relu", "gelu", "silu", "swiglu", "geglu"]))
    ffn = {"activation": activation, "d_ff": draw(st.integers(1, 2 * max_width)),
           "bias": draw(st.booleans())}
    depths = draw(st.lists(st.integers(0, n_layers - 1), min_size=1, max_size=n_layers,
                           unique=True))
    rank = draw(st.none() | st.integers(1, 4))
    block = {"layers": sorted(depths), "n_blocks": draw(st.integers(1, len(depths))),
             "adapter_rank": rank,
             "attention_adapters": rank is not None and draw(st.booleans())}
    kind = draw(st.sampled_from(["layernorm", "rmsnorm"]))
    return calc.ModelSpec(
        name="shared", vocab_size=draw(st.integers(1, 50)), d_model=d_model,
        n_layers=n_layers, context_length=draw(st.integers(1, 16)), attention=attention,
        ffn=ffn, norm={"kind": kind, "placement": "pre", "final": draw(st.booleans()),
                       "bias": kind == "layernorm" and draw(st.booleans())},
        position={"kind": draw(st.sampled_from(["rope", "none"]))},
        tie_embeddings=draw(st.booleans()), shared_block=block, **mixers)


@st.composite
def cross_attention_specs(draw, max_width: int = 32, max_layers: int = 5):
    """Specs with cross-attention layers (Llama 3.2 Vision's): some layers of any mixer
    pattern turned to cross_attention, the model's heads of any shape, a dense FFN of any
    activation, RMSNorm or LayerNorm, RoPE, ALiBi or no positions, text only or image tokens."""
    n_layers = draw(st.integers(1, max_layers))
    d_model, attention = _plain_heads(draw, max_width)
    mixers = draw(_mixers(n_layers))
    mixers.pop("no_ffn")
    cross = draw(st.lists(st.integers(0, n_layers - 1), min_size=1, max_size=n_layers,
                          unique=True))
    mixers["layers"]["exceptions"] = [{"layers": sorted(cross), "mixer": "cross_attention"}]
    pattern = mixers["layers"]["mixer_pattern"]
    used = {pattern[i % len(pattern)] for i in range(n_layers) if i not in cross}
    for part, kinds in (("mamba", ("mamba", "attention+mamba")), ("deltanet", ("deltanet",)),
                        ("lightning", ("lightning",)), ("rwkv", ("rwkv",)),
                        ("griffin", ("griffin",)), ("short_conv", ("conv",))):
        if part in mixers and not used & set(kinds):  # every layer of it turned cross
            del mixers[part]
    activation = draw(st.sampled_from(["relu", "gelu", "silu", "swiglu", "geglu"]))
    kind = draw(st.sampled_from(["layernorm", "rmsnorm"]))
    return calc.ModelSpec(
        name="cross", vocab_size=draw(st.integers(1, 50)), d_model=d_model,
        n_layers=n_layers, context_length=draw(st.integers(1, 16)), attention=attention,
        ffn={"activation": activation, "d_ff": draw(st.integers(1, 2 * max_width)),
             "bias": draw(st.booleans())},
        norm={"kind": kind, "placement": "pre", "final": draw(st.booleans()),
              "bias": kind == "layernorm" and draw(st.booleans())},
        position={"kind": draw(st.sampled_from(["rope", "none", "alibi"]))},
        tie_embeddings=draw(st.booleans()),
        cross_attention={"image_tokens": draw(st.integers(0, 6))}, **mixers)


@st.composite
def inkling_specs(draw, max_width: int = 32, max_layers: int = 4):
    """Inkling-shaped specs (the residual convolutions need every layer to be pre-norm
    attention with an FFN, which model_specs seldom draws): plain heads of any shape, full
    and sliding layers, the sliding ones with heads of their own or not, RoPE or none, the
    relative bias or not, an MoE on some layers or none, then each of Inkling's parts where
    it fits."""
    n_layers = draw(st.integers(1, max_layers))
    d_model, attention = _plain_heads(draw, max_width)
    pattern = tuple(draw(st.lists(st.sampled_from(["global", "local"]), min_size=1,
                                  max_size=n_layers)))
    if "local" in pattern:
        attention["sliding_window"] = draw(st.integers(1, 12))
        if draw(st.booleans()):
            heads = draw(st.integers(1, 4))
            attention["kind_shapes"] = {"local": {
                "n_heads": heads, "n_kv_heads": draw(st.sampled_from(_divisors(heads))),
                "head_dim": draw(st.integers(1, 8))}}
    activation = draw(st.sampled_from(["gelu", "swiglu"]))
    experts = draw(st.integers(1, 4))
    moe = draw(st.none() | st.builds(
        dict, n_experts=st.just(experts), top_k=st.integers(1, experts),
        d_expert=st.integers(1, 16), n_shared_experts=st.integers(0, 2),
        router_bias=st.booleans(), first_dense_layers=st.integers(0, n_layers - 1)))
    spec = calc.ModelSpec(
        name="inkling", vocab_size=draw(st.integers(1, 50)), d_model=d_model,
        n_layers=n_layers, context_length=draw(st.integers(1, 16)),
        attention={**attention, "layer_pattern": pattern, "qk_norm": "head"},
        ffn={"activation": activation, "d_ff": draw(st.integers(1, 2 * max_width))},
        moe=moe, norm={"kind": "rmsnorm", "placement": "pre", "embedding": True},
        position={"kind": draw(st.sampled_from(["rope", "none"]))},
        residual_conv=draw(st.integers(1, 4)))
    return _inkling_parts(draw, spec)


@st.composite
def ngpt_specs(draw) -> calc.ModelSpec:
    """nGPT's scale vectors on the layers that hold them (Dory's: attention with a gated dense
    FFN each): GQA heads, an output gate of its own or none, weightless norms in any
    placement, looped or not (model_specs draws them beside every other part, rarely)."""
    kv = draw(st.integers(1, 2))
    gate = draw(st.booleans())
    spec = calc.ModelSpec(
        vocab_size=draw(st.integers(1, 50)), d_model=draw(st.integers(1, 16)),
        n_layers=draw(st.integers(1, 4)), context_length=64,
        attention={"n_heads": kv * draw(st.integers(1, 2)), "n_kv_heads": kv,
                   "head_dim": draw(st.sampled_from([2, 4])), "output_gate": gate,
                   "output_gate_own": gate and draw(st.booleans()),
                   "qk_norm": draw(st.sampled_from(["none", "head"]))},
        ffn={"activation": "swiglu", "d_ff": draw(st.integers(1, 16))},
        norm={"kind": "rmsnorm", "placement": draw(st.sampled_from(["pre", "sandwich"])),
              "weights": draw(st.booleans()), "sub_norms": draw(st.booleans())},
        position={"kind": "rope"}, tie_embeddings=draw(st.booleans()), ngpt=True)
    if draw(st.booleans()):
        spec = spec.updated(loop=draw(_loops(spec.n_layers)))
    return spec
