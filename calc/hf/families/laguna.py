"""Laguna (Poolside): laguna, a mixture of experts whose layers of one attention kind may have
a query-head count of their own (num_attention_heads_per_layer), with a softplus output gate."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, layer_kinds, no_null_head_dim, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, merge, per_layer, sparse_layers
from calc.hf.writing import experts, full_or_sliding, llama_like, need, one_attention_bias
from calc.spec import ModelSpec

# LagunaAttention: `gating` True or "per-head" gives one gate per head, any other value one per
# channel (gate_per_head in modeling_laguna.py); calc reads the two the config documents.
_PER_HEAD, _PER_CHANNEL = (True, "per-head"), (False, "per-element")


def _heads_by_kind(c: HFConfig, kinds: list[str], kv: int) -> dict[str, int]:
    """The query heads of each attention kind's layers: num_attention_heads_per_layer
    (configuration_laguna.py: num_attention_heads on every layer without it), one count per
    kind, each a multiple of the KV heads (LagunaAttention's num_key_value_groups)."""
    per_layer_heads = c["num_attention_heads_per_layer"]
    if per_layer_heads is None:
        per_layer_heads = [c.size("num_attention_heads")] * len(kinds)
    if (not isinstance(per_layer_heads, list) or len(per_layer_heads) != len(kinds)
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1
                       for n in per_layer_heads)):
        c.fail(f"num_attention_heads_per_layer must list a positive head count for each of "
               f"the {len(kinds)} layers, got {per_layer_heads!r}")
    by_kind: dict[str, set[int]] = {}
    for kind, n in zip(kinds, per_layer_heads, strict=True):
        by_kind.setdefault(kind, set()).add(n)
        if n % kv:
            c.fail(f"num_attention_heads_per_layer has {n} heads, which "
                   f"num_key_value_heads={kv} does not divide")
    for kind, counts in by_kind.items():
        if len(counts) > 1:
            name = "full" if kind == "global" else "sliding"
            c.fail(f"num_attention_heads_per_layer={per_layer_heads!r} gives the {name} "
                   f"layers {sorted(counts)} query heads; calc holds one count per attention "
                   f"kind (attention.kind_shapes)")
    return {kind: counts.pop() for kind, counts in by_kind.items()}


def _read_laguna(c: HFConfig) -> dict[str, Any]:
    # modeling_laguna.py (transformers 5.24.0): LagunaAttention is AFMoE's (q_proj, k_proj,
    # v_proj, o_proj with attention_bias; q_norm/k_norm per head; the window on the
    # sliding_attention layers) with num_attention_heads_per_layer[i] query heads on layer i
    # and g_proj Linear(d, heads) without bias (one softplus gate per head; per channel:
    # heads · head_dim) in place of AFMoE's gate_proj. Each layer has a norm before each
    # sublayer (Glm4MoeLiteDecoderLayer); its FFN is the MoE where mlp_layer_types says
    # "sparse" (by default every layer but the first): LagunaTopKRouter's weight and its
    # e_score_correction_bias, an nn.Parameter of one value per expert (calc's router bias),
    # num_experts experts of moe_intermediate_size and one shared LagunaMLP of
    # shared_expert_intermediate_size without a gate; elsewhere LagunaMLP of
    # intermediate_size. The rotary parameters per layer type (partial_rotary_factor) and
    # moe_routed_scaling_factor change no count.
    no_null_head_dim(c)
    if c.flag("moe_apply_router_weight_on_input"):
        c.fail("moe_apply_router_weight_on_input=true: transformers' Laguna raises "
               "NotImplementedError")
    layers = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global"] * layers)  # LagunaConfig: all full_attention
    kv = c.size("num_key_value_heads")
    heads = _heads_by_kind(c, kinds, kv)
    main = "global" if "global" in heads else "local"
    gating = c["gating"]
    if gating not in _PER_HEAD + _PER_CHANNEL:
        c.fail(f"gating={gating!r}: calc reads true or 'per-head' (one gate per head) and "
               f"false or 'per-element' (one per channel)")
    per_head = gating in _PER_HEAD
    bias = c.flag("attention_bias")
    if bias and not per_head:
        c.fail("attention_bias=true with gating per element: Laguna's g_proj has no bias, "
               "calc's per-channel gate carries the queries' bias")
    sparse = sparse_layers(c, [False] + [True] * (layers - 1))
    n_experts = c.size("num_experts")
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
        "n_shared_experts": 1, "d_shared": c.size("shared_expert_intermediate_size"),
        "router_bias": True}
    own = {kind: {"n_heads": n} for kind, n in heads.items() if n != heads[main]}
    spec = decoder(c, {"n_heads": heads[main], "n_kv_heads": kv, "head_dim": c.size("head_dim")},
                   moe=moe or None,
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head",
                              "output_gate": True,
                              "output_gate_per": "head" if per_head else "channel",
                              "kind_shapes": own})
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


def _write_laguna(spec: ModelSpec) -> dict[str, Any]:
    att, moe = spec.attention, experts(spec, "laguna")
    need(att.output_gate, "attention.output_gate=false (Laguna gates every attention output)")
    need(moe.n_shared_experts == 1 and not moe.shared_expert_gate and moe.router_bias,
         "moe without exactly one ungated shared expert and a router bias (Laguna's MoE)")
    kv, width = spec.n_kv_heads, spec.head_dim_qk
    for kind in att.kind_shapes:
        _, kind_kv, kind_width, _ = spec.heads_of(kind)
        need((kind_kv, kind_width) == (kv, width),
             f"attention.kind_shapes.{kind} with KV heads or a head width of its own (Laguna "
             f"varies the query heads only)")
    heads = [spec.heads_of(kind)[0] for kind in spec.attention_kinds]
    return {**llama_like(spec, "laguna"), **full_or_sliding(spec, "laguna"),
            "num_attention_heads_per_layer": heads,
            "attention_bias": one_attention_bias(spec, "laguna"),
            "gating": "per-head" if att.output_gate_per == "head" else "per-element",
            "mlp_layer_types": ["sparse" if s else "dense" for s in spec.moe_layers],
            "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert,
            "shared_expert_intermediate_size": moe.shared_width}


LAGUNA = ModelType(
    "laguna", _read_laguna, write=_write_laguna, traits=Traits(moe=True),
    defaults={
        "vocab_size": 100352, "hidden_size": 2048, "intermediate_size": 8192,
        "num_hidden_layers": 40, "num_attention_heads": 48, "num_key_value_heads": 8,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "sliding_window": 512, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "num_experts_per_tok": 8, "num_experts": 256,
        "layer_types": None, "head_dim": 128, "attention_bias": False, "gating": True,
        "num_attention_heads_per_layer": None, "mlp_layer_types": None,
        "moe_apply_router_weight_on_input": False,
    })
