"""Zamba (Zyphra): zamba and zamba2, Mamba stacks with a Transformer block whose weights are
shared by the depths it runs at (calc.spec.layers.SharedBlockSpec).

Zamba (Glorioso et al. 2024, "Zamba: A Compact 7B SSM Hybrid Model", arXiv 2405.16712, §2 and
Fig. 2; modeling_zamba.py, transformers 5.24.0): every layer is a Mamba block (RMSNorm → Mamba
→ residual); on the "hybrid" layers one shared block (ZambaAttentionDecoderLayer: RMSNorm over
[hidden, embedding], attention, RMSNorm, gated MLP) runs first and each such layer's own
Linear(hidden, hidden, bias=False) adds its output to the Mamba block's input.
ZambaModel._tied_weights_keys ties every hybrid layer's shared_transf to the first one's.

Zamba2 ("The Zamba2 Suite: Technical Report", arXiv 2411.15242, Fig. 2; modeling_zamba2.py):
Mamba-2 blocks, num_mem_blocks shared blocks used in turn (hybrid layer i runs block i mod
num_mem_blocks, Zamba2Model.get_layers), low-rank adapters of each depth on the MLP's gate_up
projection and, with use_shared_attention_adapter, on q, k and v; RoPE on the shared attention
with use_mem_rope.

Neither has positions in its Mamba blocks nor an FFN outside the shared block.

The sharing is transformers' weight tying, and PreTrainedModel.get_expanded_tied_weights_keys
(modeling_utils.py, 5.24.0) ties nothing when tie_word_embeddings is false: each hybrid layer
then keeps the block it built, so an untied Zamba has one weight set per depth, and an untied
Zamba2 one per depth holding the adapters of every depth of its num_mem_blocks class (a count no
shared block has: refused).
"""

from __future__ import annotations

import math
from typing import Any

from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, gated, need
from calc.spec import ModelSpec

# transformers' config classes name a shared-block layer so (configuration_zamba.py,
# _zamba2.py: "hybrid" is a shared transformer followed by a mamba layer); every other value
# (after remap_legacy_layer_types) builds a Mamba layer alone.
HYBRID = "hybrid"


def _layer_types(c: HFConfig, default: list[str]) -> list[str]:
    """The config's layers_block_type (layer_types), else the class's default rule."""
    if not c.given("layers_block_type"):
        return default
    types = c["layers_block_type"]
    if not isinstance(types, list) or len(types) != c.size("num_hidden_layers"):
        c.fail(f"layers_block_type must list one type per layer ({c['num_hidden_layers']}), "
               f"got {types!r}")
    return [str(t) for t in types]


def _shared(c: HFConfig, types: list[str], heads: dict[str, Any], d_ff: int, act: str,
            bias: bool, mamba: dict[str, Any], context: int, rope: bool,
            block: dict[str, Any]) -> dict[str, Any]:
    """The spec: Mamba on every layer (RMSNorm before it, no FFN, the final RMSNorm, the head
    tied unless tie_word_embeddings is false) and the shared block before the hybrid layers;
    without a hybrid layer the attention and MLP are not built and the spec has neither."""
    depths = [i for i, t in enumerate(types) if t == HYBRID]
    tied = c.flag("tie_word_embeddings")  # the blocks are tied with the embeddings or not at all
    spec: dict[str, Any] = {
        "vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"),
        "n_layers": c.size("num_hidden_layers"), "context_length": context,
        "norm": {"kind": "rmsnorm", "placement": "pre"},
        "position": {"kind": "rope" if rope and depths else "none"},
        "layers": {"mixer_pattern": ["mamba"], "ffn_pattern": ["none"]},
        "mamba": mamba, "tie_embeddings": c.flag("tie_word_embeddings"),
    }
    if depths:
        spec.update({
            "attention": heads, "ffn": {"activation": act, "d_ff": d_ff, "bias": bias},
            "shared_block": {**block, "layers": depths,
                             "n_blocks": (min(block.get("n_blocks", 1), len(depths)) if tied
                                          else len(depths))},
        })
    return spec


def _heads(c: HFConfig, head_dim: int) -> dict[str, Any]:
    """Query and key/value heads of head_dim each (ZambaAttention, Zamba2Attention: q_proj
    2d → heads·head_dim, k_proj and v_proj 2d → kv_heads·head_dim; eager attention repeats
    each key/value head over heads / kv_heads queries)."""
    h = c.size("num_attention_heads")
    kv = c.size("num_key_value_heads") if c.given("num_key_value_heads") else h
    if h % kv:
        c.fail(f"num_key_value_heads={kv} must divide num_attention_heads={h}")
    return {"n_heads": h, "n_kv_heads": kv, "head_dim": head_dim}


# ---- zamba ------------------------------------------------------------------------------------
def _zamba_default_types(c: HFConfig) -> list[str]:
    """ZambaConfig.__post_init__ without layers_block_type: layers 0 and 1 Mamba, layer 2
    hybrid, then layer 3 + i hybrid where i % attn_layer_period == attn_layer_offset."""
    period, offset = c.size("attn_layer_period"), c.size("attn_layer_offset", 0)
    if c.size("num_hidden_layers") < 3:
        c.fail(f"num_hidden_layers={c['num_hidden_layers']}: without layers_block_type "
               f"ZambaConfig lists three layers at least (two Mamba, one hybrid); give "
               f"layers_block_type")
    rest = [HYBRID if i % period == offset else "mamba"
            for i in range(c.size("num_hidden_layers") - 3)]
    return ["mamba", "mamba", HYBRID, *rest]


def _read_zamba(c: HFConfig) -> dict[str, Any]:
    d = c.size("hidden_size")
    # ZambaConfig.__post_init__: attention_hidden_size or 2·hidden_size, attention_head_dim or
    # 2·hidden_size // num_attention_heads; the block concatenates [hidden, embedding] (2d)
    # before input_layernorm(attention_hidden_size), so another width cannot run
    width = c.size("attention_hidden_size") if c.given("attention_hidden_size") else 2 * d
    if width != 2 * d:
        c.fail(f"attention_hidden_size={width} must be 2 × hidden_size = {2 * d} (the shared "
               f"block reads the hidden state and the embedding side by side)")
    head_dim = (c.size("attention_head_dim") if c.given("attention_head_dim")
                else 2 * d // c.size("num_attention_heads"))
    if head_dim < 1:
        c.fail(f"num_attention_heads={c['num_attention_heads']} exceeds 2 × hidden_size = "
               f"{2 * d}: the default attention_head_dim would be 0")
    # ZambaMambaMixer: Mamba-1 over mamba_expand·hidden_size channels split into n_mamba_heads
    # heads, each with its own x_proj (head_dim → R + 2N) and dt_proj (R → head_dim):
    # n_mamba_heads · head_dim · (R + 2N) = D·(R + 2N) and D·R weights, Mamba-1's counts, and
    # a bmm per head of the same products, so the heads change no count (dt_proj_bias, A_log
    # and D are D, D·N and D as Mamba-1's). validate_architecture: the heads divide D.
    inner = c.size("mamba_expand") * d
    if inner % c.size("n_mamba_heads"):
        c.fail(f"n_mamba_heads={c['n_mamba_heads']} must divide mamba_expand × hidden_size = "
               f"{inner} (transformers' validate_architecture)")
    rank = c["mamba_dt_rank"]
    rank = math.ceil(d / 16) if rank == "auto" else c.size("mamba_dt_rank")
    mamba = {"version": 1, "d_inner": inner, "d_state": c.size("mamba_d_state"),
             "d_conv": c.size("mamba_d_conv"), "dt_rank": rank,
             "conv_bias": c.flag("mamba_conv_bias"), "bias": c.flag("mamba_proj_bias")}
    types = _layer_types(c, _zamba_default_types(c))
    if types.count(HYBRID) == 1 and c.flag("tie_word_embeddings"):
        # ZambaModel ties layers.(?!i\.)\d+.shared_transf to the first hybrid layer's; with no
        # other hybrid layer the pattern matches nothing and get_expanded_tied_weights_keys
        # raises
        c.fail("one hybrid layer with tie_word_embeddings=true: transformers' tie of the "
               "shared block finds no other depth to tie and refuses the config; give two "
               "hybrid layers or more, or none")
    # ZambaMLP: gate_proj, up_proj, down_proj without biases, hidden_act on the gate
    return _shared(c, types, _heads(c, head_dim),
                   c.size("intermediate_size"), c.activation("hidden_act", gated=True), False,
                   mamba, c.size("max_position_embeddings"), rope=False, block={})


def _write_common(spec: ModelSpec, arch: str, version: int) -> dict[str, Any]:
    """What zamba and zamba2 share: Mamba on every layer (RMSNorm before it, the final norm,
    no FFN but the shared block's), the shared block before the hybrid layers."""
    block, m, norm = spec.shared_block, spec.mamba, spec.norm
    need(block is not None, f"no shared_block ({arch}'s attention and MLP are its shared "
                            f"block)")
    assert block is not None and m is not None
    need(set(spec.mixer_kinds) == {"mamba"} and set(spec.ffn_kinds) == {"none"},
         f"layers other than Mamba without an FFN ({arch} builds those, the shared block "
         f"before some)")
    need(m.version == version and m.d_inner % spec.d_model == 0,
         f"a mamba other than Mamba-{version} of an integer expand × d_model ({arch}'s)")
    need(norm.kind == "rmsnorm" and norm.weights and norm.final and not norm.embedding,
         f"a norm other than {arch}'s RMSNorms")
    depths = set(block.layers)
    return {"model_type": arch, "vocab_size": spec.vocab_size, "hidden_size": spec.d_model,
            "num_hidden_layers": spec.n_layers,
            "layers_block_type": [HYBRID if i in depths else "mamba"
                                  for i in range(spec.n_layers)],
            "num_attention_heads": spec.attention.n_heads,
            "num_key_value_heads": spec.n_kv_heads,
            "intermediate_size": spec.ffn.d_ff if spec.ffn else None,
            "hidden_act": gated(spec, arch), "mamba_d_state": m.d_state,
            "mamba_d_conv": m.d_conv, "mamba_expand": m.d_inner // spec.d_model,
            "max_position_embeddings": spec.context_length,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


def _write_zamba(spec: ModelSpec) -> dict[str, Any]:
    config = _write_common(spec, "zamba", 1)
    block, m, ffn = spec.shared_block, spec.mamba, spec.ffn
    assert block is not None and m is not None and ffn is not None
    need(block.adapter_rank is None, "shared_block.adapter_rank (zamba has no adapters)")
    need(spec.position.kind == "none", f"position.kind={spec.position.kind!r} (zamba's shared "
                                       f"attention has no position encoding)")
    need(not ffn.bias, "ffn.bias (ZambaMLP has none)")
    need(spec.head_dim_v == spec.head_dim_qk, "attention.v_head_dim (zamba's is the head width)")
    sets = 1 if spec.tie_embeddings else block.depths  # untied, each depth keeps its own
    need(block.n_blocks == sets, f"shared_block.n_blocks={block.n_blocks} (zamba shares one "
                                 f"set when tied, none when untied: {sets} here)")
    need(not (spec.tie_embeddings and block.depths == 1),
         "one depth with tie_embeddings (transformers refuses zamba's tie then)")
    return {**config, "attention_hidden_size": 2 * spec.d_model,
            "attention_head_dim": spec.head_dim_qk, "n_mamba_heads": 1,
            "mamba_dt_rank": m.dt_rank, "mamba_conv_bias": m.conv_bias,
            "mamba_proj_bias": m.bias}


ZAMBA = ModelType(
    "zamba", _read_zamba, write=_write_zamba,
    traits=Traits(positions=("none",), ssm=True, ffn=False),
    aliases={"layer_types": "layers_block_type", "head_dim": "attention_head_dim"},
    defaults={
        "vocab_size": 32000, "tie_word_embeddings": True, "hidden_size": 3712,
        "attention_hidden_size": None, "intermediate_size": 14848, "num_hidden_layers": 76,
        "num_attention_heads": 16, "attention_head_dim": None, "num_key_value_heads": 16,
        "n_mamba_heads": 2, "hidden_act": "gelu", "max_position_embeddings": 4096,
        "attn_layer_period": 6, "attn_layer_offset": 4, "mamba_d_state": 16,
        "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto",
        "mamba_conv_bias": True, "mamba_proj_bias": False, "layers_block_type": None,
    })


# ---- zamba2 -----------------------------------------------------------------------------------
# Zamba2Config.__post_init__'s layers_block_type without one (54 layers)
_ZAMBA2_TYPES = (["mamba"] + (["mamba"] * 5 + [HYBRID]) * 7 + ["mamba"] * 4 + [HYBRID]
                 + ["mamba"] * 3 + [HYBRID] + ["mamba"] * 2)
LONG_CONTEXT = 16384  # Zamba2Config: use_long_context sets max_position_embeddings


def _read_zamba2(c: HFConfig) -> dict[str, Any]:
    d, h = c.size("hidden_size"), c.size("num_attention_heads")
    # Zamba2Config.__post_init__ sets attention_hidden_size = 2·hidden_size and
    # attention_head_dim = 2·hidden_size // num_attention_heads whatever the file says
    head_dim = 2 * d // h
    if head_dim < 1:
        c.fail(f"num_attention_heads={h} exceeds 2 × hidden_size = {2 * d}: "
               f"attention_head_dim would be 0")
    heads = _heads(c, head_dim)
    attention_adapters = c.flag("use_shared_attention_adapter")
    if attention_adapters and (heads["n_kv_heads"] != h or h * head_dim != 2 * d):
        # Zamba2Attention adds each adapter's attention_hidden_size output to q, k and v
        c.fail(f"use_shared_attention_adapter needs num_key_value_heads = num_attention_heads "
               f"and num_attention_heads dividing 2 × hidden_size = {2 * d} (the adapters' "
               f"outputs, 2 × hidden_size wide, are added to q, k and v)")
    # Zamba2MambaMixer: Mamba-2 over int(mamba_expand·hidden_size) channels in n_mamba_heads
    # heads, mamba_ngroups groups of B and C, in_proj and out_proj with add_bias_linear, the
    # conv always with a bias (nn.Conv1d(..., bias=True)), the gated RMSNorm over D
    inner, n = int(c["mamba_expand"] * d), c.size("n_mamba_heads")
    if inner < 1 or inner % n:
        c.fail(f"n_mamba_heads={n} must divide mamba_expand × hidden_size = {inner}")
    groups = c.size("mamba_ngroups")
    if n % groups:
        c.fail(f"mamba_ngroups={groups} must divide n_mamba_heads={n}")
    if not c.flag("tie_word_embeddings"):
        c.fail("tie_word_embeddings=false: transformers then ties none of the shared blocks "
               "(get_expanded_tied_weights_keys), and each hybrid layer's block keeps the "
               "adapters of every depth of its num_mem_blocks class, unused but its own; calc "
               "reads zamba2 with tie_word_embeddings=true")
    bias = c.flag("add_bias_linear")
    mamba = {"version": 2, "d_inner": inner, "d_state": c.size("mamba_d_state"),
             "d_conv": c.size("mamba_d_conv"), "n_heads": n, "n_groups": groups,
             "conv_bias": True, "bias": bias}  # gated_norm: on for Mamba-2
    # Zamba2MLP: gate_up_proj d → 2·intermediate_size and down_proj, both with
    # add_bias_linear; intermediate_size or 4·hidden_size
    d_ff = c.size("intermediate_size") if c.given("intermediate_size") else 4 * d
    context = LONG_CONTEXT if c.flag("use_long_context") else c.size("max_position_embeddings")
    block = {"n_blocks": c.size("num_mem_blocks"), "adapter_rank": c.size("adapter_rank"),
             "attention_adapters": attention_adapters}
    return _shared(c, _layer_types(c, list(_ZAMBA2_TYPES)), heads, d_ff,
                   c.activation("hidden_act", gated=True), bias, mamba, context,
                   rope=c.flag("use_mem_rope"), block=block)


def _write_zamba2(spec: ModelSpec) -> dict[str, Any]:
    config = _write_common(spec, "zamba2", 2)
    block, m, ffn, d = spec.shared_block, spec.mamba, spec.ffn, spec.d_model
    assert block is not None and m is not None and m.n_heads is not None and ffn is not None
    need(block.adapter_rank is not None, "no shared_block.adapter_rank (zamba2 adapts the "
                                         "shared MLP at every depth)")
    need(spec.tie_embeddings, "tie_embeddings=False (calc reads zamba2 tied only)")
    need(spec.head_dim_qk == spec.head_dim_v == 2 * d // spec.attention.n_heads,
         f"attention.head_dim={spec.head_dim_qk} (zamba2's is 2 × d_model // n_heads)")
    need(m.bias == ffn.bias and m.conv_bias and m.has_gated_norm,
         "mamba.bias ≠ ffn.bias, or a Mamba-2 without conv bias or gated norm (zamba2's "
         "add_bias_linear sets both; its conv always has a bias)")
    need(spec.position.kind in ("rope", "none"), f"position.kind={spec.position.kind!r}")
    return {**config, "n_mamba_heads": m.n_heads, "mamba_ngroups": m.n_groups,
            "num_mem_blocks": block.n_blocks, "adapter_rank": block.adapter_rank,
            "use_shared_attention_adapter": block.attention_adapters,
            "add_bias_linear": ffn.bias, "use_mem_rope": spec.position.kind == "rope",
            "use_long_context": False}


ZAMBA2 = ModelType(
    "zamba2", _read_zamba2, write=_write_zamba2,
    traits=Traits(positions=("rope", "none"), ssm=True, ffn=False),
    aliases={"layer_types": "layers_block_type"},
    defaults={
        "vocab_size": 32000, "max_position_embeddings": 4096, "hidden_size": 2560,
        "num_hidden_layers": 54, "layers_block_type": None, "mamba_d_state": 64,
        "mamba_d_conv": 4, "mamba_expand": 2, "mamba_ngroups": 1, "n_mamba_heads": 8,
        "add_bias_linear": False, "intermediate_size": None, "hidden_act": "gelu",
        "num_attention_heads": 32, "num_key_value_heads": None, "num_mem_blocks": 1,
        "use_shared_attention_adapter": False, "adapter_rank": 128, "use_mem_rope": False,
        "use_long_context": False, "tie_word_embeddings": True,
    })
