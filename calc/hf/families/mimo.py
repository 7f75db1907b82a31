"""MiMo (Xiaomi): mimo_v2_flash (MiMo-V2-Flash), a mixture of experts whose value heads are
narrower than its query/key heads, with twice the key/value heads and a sink logit per head on
its sliding-window layers."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, layer_kinds, no_null_head_dim, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, merge, per_layer, sparse_layers
from calc.hf.writing import full_or_sliding, llama_like, need, one_group
from calc.spec import ModelSpec

# MiMoV2FlashAttention (modeling_mimo_v2_flash.py, transformers 5.24.0): a sliding layer has
# num_key_value_heads × 2 key/value heads
SLIDING_KV = 2


def _hub_fields(c: HFConfig, kinds: list[str], sparse: list[bool], shape: dict[str, int]
                ) -> None:
    """The released config.json's own names for what transformers 5.24.0 fixes in code
    (hybrid_layer_pattern, moe_layer_freq, swa_*, add_*_attention_sink_bias): MiMoV2FlashConfig
    does not read them, so where a file gives one that says other than the model transformers
    builds, the line names it instead of counting a model the file does not describe."""
    raw = c.values
    built = {
        "hybrid_layer_pattern": [int(kind == "local") for kind in kinds],
        "moe_layer_freq": [int(moe) for moe in sparse],
        "swa_num_attention_heads": shape["n_heads"],
        "swa_num_key_value_heads": SLIDING_KV * shape["n_kv_heads"],
        "swa_head_dim": shape["head_dim"], "swa_v_head_dim": shape["v_head_dim"],
        "add_swa_attention_sink_bias": True, "add_full_attention_sink_bias": False,
    }
    for key, value in built.items():
        if key in raw and raw[key] is not None and raw[key] != value:
            c.fail(f"{key}={raw[key]!r}, but transformers {c.kind.name}'s model ignores the "
                   f"field and builds {value!r} (MiMoV2FlashConfig reads layer_types, "
                   f"mlp_layer_types and num_key_value_heads; sliding layers get twice the "
                   f"key/value heads and the sinks)")


def _read_mimo_v2_flash(c: HFConfig) -> dict[str, Any]:
    # modeling_mimo_v2_flash.py (transformers 5.24.0): MiMoV2FlashAttention has q_proj
    # d → h·head_dim, k_proj d → kv·head_dim and v_proj d → kv·v_head_dim (all three with
    # attention_bias), o_proj h·v_head_dim → d without bias; kv = num_key_value_heads on the
    # full_attention layers and twice it on the sliding_attention ones, which alone carry
    # `sinks` (one logit per query head). Values scaled by attention_value_scale and partial
    # rotary embeddings per layer type change no count. Each layer has an RMSNorm before each
    # sublayer; its FFN is MiMoV2FlashMoE where mlp_layer_types says "sparse" (by default
    # every layer but the first): a router weight (E × d) with e_score_correction_bias as a
    # buffer, n_routed_experts experts of moe_intermediate_size and no shared expert; else
    # MiMoV2FlashMLP of intermediate_size. `sliding_window_size` (the released file's name)
    # sets sliding_window to it + 1 (MiMoV2FlashConfig.__post_init__). The release's MTP layers
    # (model.mtp.*) are dropped on load (_keys_to_ignore_on_load_unexpected): none counted.
    no_null_head_dim(c)
    layers, h = c.size("num_hidden_layers"), c.size("num_attention_heads")
    kv = c.size("num_key_value_heads")
    # MiMoV2FlashConfig: the first layer and every 6th full, the others sliding
    kinds = layer_kinds(c, ["global" if i == 0 or not (i + 1) % 6 else "local"
                            for i in range(layers)])
    for kind, heads in (("full", kv), ("sliding", SLIDING_KV * kv)):
        if ("global" if kind == "full" else "local") in kinds and h % heads:
            c.fail(f"num_attention_heads={h} is not a multiple of the {heads} key/value heads "
                   f"of the {kind} layers (num_key_value_heads={kv}"
                   f"{', doubled on sliding layers' if kind == 'sliding' else ''})")
    sparse = sparse_layers(c, [False] + [True] * (layers - 1))
    shape = {"n_heads": h, "n_kv_heads": kv, "head_dim": c.size("head_dim"),
             "v_head_dim": c.size("v_head_dim")}
    _hub_fields(c, kinds, sparse, shape)
    sliding = {"n_kv_heads": SLIDING_KV * kv, "sinks": True}
    # the full layers' shape is the model's; a model of sliding layers only takes theirs
    main, own = ((shape, {"local": sliding}) if "global" in kinds and "local" in kinds
                 else ({**shape, **sliding}, {}) if "local" in kinds else (shape, {}))
    n_experts = c.size("n_routed_experts")
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts")}
    spec = decoder(c, main, moe=moe or None,
                   attention={"qkv_bias": c.flag("attention_bias"), "kind_shapes": own})
    spec = merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))
    window = c.values.get("sliding_window_size")
    if window is not None and "local" in kinds:
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            c.fail(f"sliding_window_size={window!r} must be a whole number >= 0")
        spec["attention"]["sliding_window"] = window + 1
    return spec


def _write_mimo_v2_flash(spec: ModelSpec) -> dict[str, Any]:
    att, moe = spec.attention, spec.moe
    need(not att.out_bias, "attention.out_bias=True (MiMo-V2-Flash's o_proj has no bias)")
    need(moe is None or not (moe.n_shared_experts or moe.router_bias),
         "moe with shared experts or a router bias parameter (MiMo-V2-Flash has neither)")
    full_kv = set()
    for kind in set(spec.attention_kinds) - {""}:
        h, kv, d_qk, d_v = spec.heads_of(kind)
        need((h, d_qk, d_v) == (att.n_heads, spec.head_dim_qk, spec.head_dim_v),
             f"attention.kind_shapes.{kind} with query heads or head widths of its own "
             f"(MiMo-V2-Flash varies the key/value heads only)")
        sliding = kind == "local"
        need(spec.sinks_of(kind) == sliding,
             f"sinks {'off' if sliding else 'on'} {kind} layers (MiMo-V2-Flash has a sink "
             f"logit per head on its sliding layers only)")
        need(not sliding or kv % SLIDING_KV == 0,
             f"{kv} key/value heads on the sliding layers (MiMo-V2-Flash's are twice the "
             f"full layers')")
        full_kv.add(kv // SLIDING_KV if sliding else kv)
    need(len(full_kv) == 1, "sliding layers without twice the full layers' key/value heads "
                            "(MiMo-V2-Flash's rule)")
    return {**llama_like(spec, "mimo_v2_flash"), **full_or_sliding(spec, "mimo_v2_flash"),
            "num_key_value_heads": full_kv.pop(), "v_head_dim": spec.head_dim_v,
            "attention_bias": att.qkv_bias,
            "mlp_layer_types": ["sparse" if s else "dense" for s in spec.moe_layers],
            **({"n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
                "moe_intermediate_size": moe.d_expert, **one_group(spec, "mimo_v2_flash")}
               if moe else {})}


MIMO_V2_FLASH = ModelType(
    "mimo_v2_flash", _read_mimo_v2_flash, write=_write_mimo_v2_flash, traits=Traits(moe=True),
    aliases={"num_local_experts": "n_routed_experts"},
    defaults={
        "vocab_size": 152576, "hidden_size": 4096, "intermediate_size": 16384,
        "num_hidden_layers": 48, "num_attention_heads": 64, "num_key_value_heads": 4,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "attention_bias": False, "moe_intermediate_size": 2048, "num_experts_per_tok": 8,
        "n_routed_experts": 256, "head_dim": 192, "v_head_dim": 128, "sliding_window": 129,
        "layer_types": None, "mlp_layer_types": None,
    })
