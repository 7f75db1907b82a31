"""dots3 (rednote hi lab's dots3-note, text model): dots3_note_text.

DeepSeek-V3.2's latent attention and mixture of experts, with sliding-window layers whose latent
attention has shapes of its own beside the sparse-attention (indexed) layers.
"""

from __future__ import annotations

from typing import Any

from calc.hf.families.deepseek import read_mla_moe
from calc.hf.fields import HFConfig, layer_pattern
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import sparse_layers
from calc.hf.writing import base, experts, gated, need, one_group
from calc.spec import ModelSpec

# configuration_dots3_note.py (transformers 5.24.0), Dots3NoteTextConfig.__post_init__: the
# sliding layers' attention shapes are keywords it pops (swa_*), with these defaults;
# swa_qk_rope_head_dim defaults to swa_head_dim − swa_qk_nope_head_dim.
_SWA = {"num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 1024,
        "kv_lora_rank": 1024, "head_dim": 256, "qk_nope_head_dim": 192, "v_head_dim": 128}
_TYPES = {"full_attention": "global", "indexed_attention": "global",
          "sliding_attention": "local"}


def _layer_types(c: HFConfig, layers: int) -> list[str]:
    """layer_types as the config class makes them: the file's, else the first two and every
    fourth from layer 1 global and the others sliding (all global where use_sliding_window is
    false); then use_dsa (default true) makes every global layer indexed, or false full."""
    # use_dsa defaults to true where the file gives no per_layer_config (which calc refuses)
    use_dsa = c["use_dsa"] is not False
    if c.given("layer_types"):
        types = c["layer_types"]
        if not isinstance(types, list) or len(types) != layers or not set(types) <= set(_TYPES):
            c.fail(f"layer_types must list {', '.join(_TYPES)} for each of the {layers} "
                   f"layers, got {types!r}")
    else:
        sliding = c["use_sliding_window"] is not False
        full = "full_attention" if use_dsa is False else "indexed_attention"
        types = [full if not sliding or i < 2 or i % 4 == 1 else "sliding_attention"
                 for i in range(layers)]
    old, new = (("full_attention", "indexed_attention") if use_dsa
                else ("indexed_attention", "full_attention"))
    return [new if kind == old else kind for kind in types]


def _sparse(c: HFConfig, layers: int) -> list[bool]:
    """The MoE layers: mlp_layer_types, else from first_k_dense_replace (default 1) those
    moe_layer_freq picks (every freq-th layer, or a flag per layer)."""
    first = c.size("first_k_dense_replace", minimum=0) if c.given("first_k_dense_replace") \
        else 1
    freq = c["moe_layer_freq"] if c.given("moe_layer_freq") else 1
    if isinstance(freq, list):
        if len(freq) < layers:
            c.fail(f"moe_layer_freq lists {len(freq)} flags for {layers} layers")
        picked = [bool(freq[i]) for i in range(layers)]
    else:
        every = c.size("moe_layer_freq") if c.given("moe_layer_freq") else 1
        picked = [i % every == 0 for i in range(layers)]
    return sparse_layers(c, [i >= first and picked[i] for i in range(layers)])


def _read(c: HFConfig) -> dict[str, Any]:
    # modular_dots3_note.py (transformers 5.24.0), Dots3NoteTextAttention: DeepSeek-V3's MLA
    # with the layer's own shapes (config.per_layer_config[layer_idx]), q_a_layernorm and
    # kv_a_layernorm, k_rope_only_layernorm over the shared RoPE key (attention.mla
    # .rope_key_norm), g_proj d → heads without bias, a sigmoid gate per head on the output
    # (output_gate_per head), and GLM-5's indexer on the indexed layers only; q_lora_scale and
    # kv_lora_scale are constants (no parameter, elementwise). Dots3NoteTextMoE: DeepSeek-V3.2's
    # router and experts, one shared MLP of n_shared_experts × shared_experts_intermediate_size.
    # The multi-token-prediction layer 46 is not built (_keys_to_ignore_on_load_unexpected).
    if not c.given("q_lora_rank"):
        c.fail("q_lora_rank=null: dots3 projects queries through q_lora_rank (its config "
               "class requires it)")
    for key in ("num_key_value_heads", "swa_num_key_value_heads"):
        heads = "num_attention_heads" if key == "num_key_value_heads" else \
            "swa_num_attention_heads"
        if c.given(key) and c[key] != (c[heads] if c.given(heads) else _SWA["num_attention_heads"]):
            c.fail(f"{key}={c[key]!r} must equal {heads} (dots3's config class requires it)")
    layers = c.size("num_hidden_layers")
    types = _layer_types(c, layers)
    kinds = [_TYPES[kind] for kind in types]
    spec = read_mla_moe(c, v3=True, mtp=False, sparse=_sparse(c, layers))
    attention, mla = spec["attention"], spec["attention"]["mla"]
    mla["rope_key_norm"] = True
    attention.update(output_gate=True, output_gate_per="head")
    if "indexed_attention" in types:
        if c.size("index_head_dim") < mla["qk_rope_head_dim"]:
            c.fail(f"index_head_dim={c['index_head_dim']} < qk_rope_head_dim="
                   f"{mla['qk_rope_head_dim']}: the indexer's RoPE part does not fit its head")
        attention["indexer"] = {"n_heads": c.size("index_n_heads"),
                                "head_dim": c.size("index_head_dim"),
                                "topk": c.size("index_topk")}
    if "local" in kinds:
        window = (c.size("sliding_window") if c.given("sliding_window")
                  else c.size("sliding_window_size") if c.given("sliding_window_size") else 512)
        attention.update(layer_pattern(_Window(c, window), kinds))
        swa = {key: c.size(f"swa_{key}", minimum=0 if "nope" in key else 1)
               if c.given(f"swa_{key}") else value for key, value in _SWA.items()}
        rope = (c.size("swa_qk_rope_head_dim", minimum=0) if c.given("swa_qk_rope_head_dim")
                else swa["head_dim"] - swa["qk_nope_head_dim"])
        if rope < 0 or swa["head_dim"] != swa["qk_nope_head_dim"] + rope:
            c.fail(f"swa_head_dim={swa['head_dim']} must equal swa_qk_nope_head_dim + "
                   f"swa_qk_rope_head_dim ({swa['qk_nope_head_dim']} + {rope})")
        attention["kind_shapes"] = {"local": {
            "n_heads": swa["num_attention_heads"],
            "mla": {"q_lora_rank": swa["q_lora_rank"], "kv_lora_rank": swa["kv_lora_rank"],
                    "qk_nope_head_dim": swa["qk_nope_head_dim"], "qk_rope_head_dim": rope,
                    "v_head_dim": swa["v_head_dim"], "rope_key_norm": True}}}
    if spec.get("moe"):
        shared = (c.size("moe_shared_expert_intermediate_size")
                  if c.given("moe_shared_expert_intermediate_size")
                  else c.size("shared_experts_intermediate_size"))
        spec["moe"]["d_shared"] = shared
    return spec


class _Window:
    """The window for fields.layer_pattern, which reads sliding_window (dots3's default comes
    from sliding_window_size, else 512)."""

    def __init__(self, c: HFConfig, window: int):
        self.c, self.window = c, window

    def size(self, key: str) -> int:
        assert key == "sliding_window"
        return self.window

    def fail(self, message: str) -> None:
        self.c.fail(message)


def _write(spec: ModelSpec) -> dict[str, Any]:
    att, moe = spec.attention, experts(spec, "dots3_note_text")
    mla = att.mla
    need(mla is not None and mla.q_lora_rank is not None and mla.rope_key_norm,
         "attention.mla with q_lora_rank and rope_key_norm (dots3's latent attention)")
    assert mla is not None
    need(att.output_gate and att.output_gate_per == "head",
         "attention.output_gate per head (dots3's g_proj)")
    need((not att.qkv_bias and not att.out_bias) or att.qkv_bias == att.out_bias,
         "attention.qkv_bias == out_bias (dots3's attention_bias is both)")
    need(spec.mtp_modules == 0, "mtp_modules (transformers does not build dots3's)")
    need(not att.indexer or not att.indexer.shared_layers,
         "attention.indexer.shared_layers (dots3 gives every indexed layer its own)")
    need(moe.n_shared_experts >= 1, "moe.n_shared_experts=0 (dots3 requires a shared expert)")
    need(set(att.kind_shapes) <= {"local"}, "attention.kind_shapes other than local")
    kinds = spec.attention_kinds
    need(set(kinds) <= {"global", "local"}, "an attention kind other than global or local")
    glob = "indexed_attention" if att.indexer else "full_attention"
    out = {**base(spec, "dots3_note_text"), "num_key_value_heads": att.n_heads,
           "intermediate_size": spec.ffn.d_ff if spec.ffn else 1,
           "hidden_act": gated(spec, "dots3_note_text"),
           "max_position_embeddings": spec.context_length, "attention_bias": att.qkv_bias,
           "q_lora_rank": mla.q_lora_rank, "kv_lora_rank": mla.kv_lora_rank,
           "qk_nope_head_dim": mla.qk_nope_head_dim, "qk_rope_head_dim": mla.qk_rope_head_dim,
           "v_head_dim": mla.v_head_dim,
           "head_dim": mla.qk_nope_head_dim + mla.qk_rope_head_dim,
           "n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
           "moe_intermediate_size": moe.d_expert, "n_shared_experts": moe.n_shared_experts,
           "shared_experts_intermediate_size": moe.shared_width,
           **one_group(spec, "dots3_note_text"),
           "mlp_layer_types": ["sparse" if m else "dense" for m in spec.moe_layers],
           "layer_types": [glob if k == "global" else "sliding_attention" for k in kinds],
           # without it the config class makes full layers indexed
           "use_dsa": att.indexer is not None}
    if att.indexer is not None:
        out.update(index_n_heads=att.indexer.n_heads, index_head_dim=att.indexer.head_dim,
                   index_topk=att.indexer.topk)
    if "local" in kinds:
        h, _, _, _ = spec.heads_of("local")
        own = spec.for_kind("local").attention.mla
        assert own is not None
        out.update(sliding_window=att.sliding_window, swa_num_attention_heads=h,
                   swa_num_key_value_heads=h, swa_q_lora_rank=own.q_lora_rank,
                   swa_kv_lora_rank=own.kv_lora_rank,
                   swa_head_dim=own.qk_nope_head_dim + own.qk_rope_head_dim,
                   swa_qk_nope_head_dim=own.qk_nope_head_dim,
                   swa_qk_rope_head_dim=own.qk_rope_head_dim, swa_v_head_dim=own.v_head_dim)
    return out


DOTS3 = ModelType(
    "dots3_note_text", _read, write=_write, traits=Traits(moe=True, mla=True),
    # e_score_correction_bias: a buffer of Dots3NoteTextTopkRouter (DeepseekV32TopkRouter's)
    router_bias_buffer=True,
    aliases={"num_local_experts": "n_routed_experts"},
    # keywords configuration_dots3_note.py's __post_init__ pops, not fields
    getattr_fields=("first_k_dense_replace", "moe_layer_freq", "use_dsa", "use_sliding_window",
                    "sliding_window_size", "moe_shared_expert_intermediate_size",
                    *(f"swa_{key}" for key in (*_SWA, "qk_rope_head_dim"))),
    defaults={
        "vocab_size": 152064, "hidden_size": 5120, "intermediate_size": 13824,
        "moe_intermediate_size": 1536, "num_hidden_layers": 46, "num_attention_heads": 128,
        "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
        "kv_lora_rank": 512, "q_lora_rank": 1024, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "qk_nope_head_dim": 128, "n_group": 1, "topk_group": 1, "num_experts_per_tok": 8,
        "hidden_act": "silu", "max_position_embeddings": 524288, "tie_word_embeddings": False,
        "mlp_layer_types": None, "attention_bias": False, "index_topk": 2048,
        "index_head_dim": 128, "index_n_heads": 64, "mlp_bias": False, "head_dim": 256,
        "layer_types": None, "sliding_window": None, "shared_experts_intermediate_size": 1536,
        "first_k_dense_replace": None, "moe_layer_freq": None, "use_dsa": None,
        "use_sliding_window": None, "sliding_window_size": None,
        "moe_shared_expert_intermediate_size": None,
        **{f"swa_{key}": None for key in (*_SWA, "qk_rope_head_dim")},
    })
