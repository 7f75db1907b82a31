"""Nemotron (NVIDIA): nemotron (Nemotron-4, Minitron) and nemotron_h (Nemotron-H and Nemotron 3:
Mamba-2, attention, MLP and MoE blocks).

Partial rotary embeddings (partial_rotary_factor) change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, decoder_defaults, heads, layernorm_decoder, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import merge, per_layer
from calc.hf.writing import base, need, one_group, plain, rope_decoder
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_nemotron.py: LayerNorm1P (γ stored as γ − 1, and β), attention_bias on q, k,
    # v, o, a plain MLP up_proj → act → down_proj with mlp_bias; the attention divides by
    # num_key_value_heads, so the file must give it.
    if not c.given("num_key_value_heads"):
        c.fail("num_key_value_heads=None: transformers' Nemotron attention divides by it and "
               "its config leaves it None")
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("attention_bias"),
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = c.flag("mlp_bias")
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    # As StarCoder2 without windows, with separate attention and MLP bias switches.
    return {**rope_decoder(spec, "nemotron", plain(spec, "nemotron")),
            "attention_bias": spec.attention.qkv_bias, "mlp_bias": spec.ffn.bias}


NEMOTRON = ModelType(
    "nemotron", _read, write=_write, traits=Traits(norm="layernorm", gated=False),
    defaults=decoder_defaults(256000, 6144, 24576, 32, 48, None, "relu2", 4096, False,
                              attention_bias=False, mlp_bias=False, head_dim=None))


# ---- nemotron_h -------------------------------------------------------------------------------
# configuration_nemotron_h.py: a block's type in layers_block_type (hybrid_override_pattern,
# the older string form, one character per block), with the older names of the layer types
_BLOCKS = {"M": "mamba", "linear_attention": "mamba", "mamba": "mamba",
           "*": "attention", "full_attention": "attention", "attention": "attention",
           "-": "dense", "mlp": "dense", "E": "moe", "moe": "moe"}


def _blocks(c: HFConfig) -> list[str]:
    raw = c["layers_block_type"]
    if raw is None and "hybrid_override_pattern" in c.values:
        raw = list(str(c.values["hybrid_override_pattern"]))
    if raw is None:
        raw = ["linear_attention", "moe", "full_attention", "mlp"]  # the class's default
    if not isinstance(raw, list) or not raw or any(b not in _BLOCKS for b in raw):
        c.fail(f"layers_block_type={raw!r} must list mamba (linear_attention), "
               f"full_attention, mlp and moe blocks")
    return [_BLOCKS[b] for b in raw]


def _read_nemotron_h(c: HFConfig) -> dict[str, Any]:
    # modeling_nemotron_h.py: every block is one RMSNorm and one mixer: a Mamba-2 mixer
    # (mamba_num_heads × mamba_head_dim channels, in_proj and out_proj with use_bias, the
    # gated RMSNorm in n_groups groups), attention without biases or positions, a plain MLP
    # (mlp_hidden_act, mlp_bias) or the MoE (a router without bias, e_score_correction_bias
    # a buffer; plain experts of moe_intermediate_size; one shared MLP of
    # moe_shared_expert_intermediate_size). calc's layer is a token mixer and the FFN after
    # it, each behind its norm: a mixer block with the MLP or MoE block after it is one layer
    # of calc's, a mixer block without one a layer without FFN, so the counts are the same
    # (a spec has FFNs on every layer or on none).
    blocks = _blocks(c)
    mixers: list[str] = []
    ffn: list[str] = []
    for i, block in enumerate(blocks):
        if block in ("mamba", "attention"):
            mixers.append(block)
            ffn.append("none")
        elif not ffn or ffn[-1] != "none":
            c.fail(f"layers_block_type[{i}] is an {block} block after "
                   f"{'another FFN block' if ffn else 'none'}: calc's layers pair a token mixer "
                   f"with the FFN after it")
        else:
            ffn[-1] = block
    if "none" in ffn and set(ffn) != {"none"}:
        c.fail(f"layers_block_type={c['layers_block_type']!r} has token-mixer blocks with an "
               f"MLP or MoE block after them and others without (Nemotron 3's patterns): "
               f"calc's spec cannot yet hold layers without an FFN beside layers with one")
    if c.flag("mlp_bias") and "moe" in ffn:
        c.fail("mlp_bias=true biases the MLPs and the shared expert but not the routed experts; "
               "calc's ffn.bias covers all of them")
    if c.given("moe_latent_size") and "moe" in ffn:
        c.fail("moe_latent_size projects the experts' input and output through a latent "
               "width; calc's experts read and write the model width")
    n_experts = c.size("n_routed_experts")
    moe = "moe" in ffn and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts"),
        "n_shared_experts": 1, "d_shared": c.size("moe_shared_expert_intermediate_size")}
    h, width = c.size("mamba_num_heads"), c.size("mamba_head_dim")
    spec = decoder(c, heads(c), act_key=None, ffn_bias=c.flag("mlp_bias"), moe=moe or None,
                   mamba={"version": 2, "d_inner": h * width, "d_state": c.size("ssm_state_size"),
                          "d_conv": c.size("conv_kernel"), "n_heads": h,
                          "n_groups": c.size("n_groups"), "conv_bias": c.flag("use_conv_bias"),
                          "bias": c.flag("use_bias"), "gated_norm": True}
                   if "mamba" in mixers else None)
    spec["ffn"]["activation"] = c.activation("mlp_hidden_act", gated=False)
    if set(ffn) == {"none"}:
        spec["ffn"] = None
    spec["n_layers"] = len(mixers)
    spec["position"] = {"kind": "none"}
    # NemotronHForCausalLM's _tied_weights_keys is empty: the head is never tied, whatever
    # tie_word_embeddings says
    spec["tie_embeddings"] = False
    kinds = ["global" if m == "attention" else "" for m in mixers]
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds, ffn=ffn))


def _write_nemotron_h(spec: ModelSpec) -> dict[str, Any]:
    # Mamba-2 and attention layers without positions, each with its plain MLP or MoE or none.
    m, moe, ffn = spec.mamba, spec.moe, spec.ffn
    names = {"mamba": "mamba", "attention": "attention", "dense": "mlp", "moe": "moe"}
    blocks: list[str] = []
    for mixer, kind in zip(spec.mixer_kinds, spec.ffn_kinds, strict=True):
        need(mixer in ("mamba", "attention"), f"a {mixer} layer (nemotron_h builds Mamba-2 and "
                                              f"attention blocks)")
        blocks += [names[mixer]] + ([names[kind]] if kind != "none" else [])
    config = {**base(spec, "nemotron_h"), "layers_block_type": blocks,
              "num_key_value_heads": spec.n_kv_heads, "head_dim": spec.head_dim_qk,
              "max_position_embeddings": spec.context_length}
    config.pop("num_hidden_layers")  # deprecated: the blocks give the depth
    if ffn is not None:
        config.update(intermediate_size=ffn.d_ff, mlp_hidden_act=plain(spec, "nemotron_h"),
                      mlp_bias=ffn.bias)
    if m is not None:
        need(m.version == 2 and m.n_heads is not None, "a mamba other than Mamba-2")
        assert m.n_heads is not None
        config.update(ssm_state_size=m.d_state, mamba_num_heads=m.n_heads,
                      mamba_head_dim=m.d_inner // m.n_heads, n_groups=m.n_groups,
                      conv_kernel=m.d_conv, use_conv_bias=m.conv_bias, use_bias=m.bias)
    if moe is not None:
        config.update(n_routed_experts=moe.n_experts, num_experts_per_tok=moe.top_k,
                      moe_intermediate_size=moe.d_expert,
                      moe_shared_expert_intermediate_size=moe.shared_width or 1,
                      **one_group(spec, "nemotron_h"))
    return config


NEMOTRON_H = ModelType(
    "nemotron_h", _read_nemotron_h, write=_write_nemotron_h,
    traits=Traits(norm="rmsnorm", positions=("none",), gated=False, moe=True, ssm=True),
    aliases={"layer_types": "layers_block_type", "num_local_experts": "n_routed_experts"},
    legacy_kwargs={"mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel",
                   "mamba_expand": "expand", "mamba_chunk_size": "chunk_size"},
    # deprecated and ignored when layers_block_type is given (configuration_nemotron_h.py)
    getattr_fields=("num_hidden_layers",),
    defaults={
        "vocab_size": 131072, "hidden_size": 4096, "layers_block_type": None,
        "tie_word_embeddings": False, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "max_position_embeddings": 4096, "intermediate_size": 21504,
        "mlp_hidden_act": "relu2", "mlp_bias": False, "ssm_state_size": 128,
        "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "conv_kernel": 4,
        "expand": 2, "use_conv_bias": True, "n_routed_experts": 8,
        "moe_intermediate_size": 7688, "moe_shared_expert_intermediate_size": 7688,
        "moe_latent_size": None, "num_experts_per_tok": 2, "use_bias": False,
        "chunk_size": 128,  # not read: the SSD chunk transformers' torch scan runs (verify)
    })
