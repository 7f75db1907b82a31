"""OPT (Meta): opt."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import base, need, plain
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_opt.py: learned positions with 2 extra rows (OPTLearnedPositionalEmbedding,
    # offset 2); enable_bias on q, k, v, out_proj, fc1, fc2; do_layer_norm_before=false
    # (OPT-350m) puts the norms after each sublayer and drops the final norm.
    # word_embed_proj_dim (default hidden_size) ≠ hidden_size: the embedding and the tied head
    # are that wide, with project_in/project_out (no bias) around the decoder (OPT-350m: 512);
    # layer_norm_elementwise_affine=false: LayerNorms without any parameters.
    d = c.size("hidden_size")
    width = c.size("word_embed_proj_dim") if c.given("word_embed_proj_dim") else d
    affine = c.flag("layer_norm_elementwise_affine")
    pre = c.flag("do_layer_norm_before")
    positions = c.size("max_position_embeddings")
    return layernorm_decoder(
        c, heads(c, None, head_dim_key=None), c.size("ffn_dim"),
        c.activation("activation_function", gated=False), c.flag("enable_bias"),
        position={"kind": "learned", "max_positions": positions + 2},
        d_embedding=width if width != d else None,
        norm={"kind": "layernorm", "placement": "pre" if pre else "post",
              "final": pre and not c.flag("_remove_final_layer_norm"), "weights": affine,
              **({} if affine else {"bias": False})})


def _write(spec: ModelSpec) -> dict[str, Any]:
    need(spec.position_table >= 3,
         f"position.max_positions={spec.position_table} (opt stores max_position_embeddings "
         f"+ 2 rows)")
    return {**base(spec, "opt"), "ffn_dim": spec.ffn.d_ff,
            "max_position_embeddings": spec.position_table - 2,
            "do_layer_norm_before": spec.norm.placement == "pre",
            "_remove_final_layer_norm": not spec.norm.final,
            "activation_function": plain(spec, "opt"), "enable_bias": spec.ffn.bias,
            "word_embed_proj_dim": spec.embedding_width,
            "layer_norm_elementwise_affine": spec.norm.weights}


OPT = ModelType(
    "opt", _read, write=_write,
    traits=Traits(norm="layernorm", positions=("learned",), gated=False),
    defaults={
        "vocab_size": 50272, "hidden_size": 768, "num_hidden_layers": 12, "ffn_dim": 3072,
        "max_position_embeddings": 2048, "do_layer_norm_before": True,
        "_remove_final_layer_norm": False, "word_embed_proj_dim": None,
        "num_attention_heads": 12, "activation_function": "relu", "enable_bias": True,
        "layer_norm_elementwise_affine": True, "tie_word_embeddings": True,
    })
