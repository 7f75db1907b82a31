"""xLSTM (NX-AI): xlstm, a stack of mLSTM blocks without attention (Beck et al. 2024, "xLSTM:
Extended Long Short-Term Memory", arXiv 2405.04517; Beck et al. 2025, "xLSTM 7B: A Recurrent LLM
for Fast and Efficient Inference", arXiv 2503.13427, §3).

modeling_xlstm.py (transformers 5.24.0, its own kernels when the xlstm package is absent): each
xLSTMBlock is norm_mlstm → xLSTMLayer (the mLSTM, calc.spec.layers.MlstmSpec) → residual,
norm_ffn → xLSTMFeedForward → residual; out_norm before the head, built and applied whatever
add_out_norm says. The norms are RMSNorms with a weight (xLSTMRMSNorm). xLSTMLayer's widths
are int(hidden_size · qk_dim_factor) for q and k and int(hidden_size · v_dim_factor) for v and
the output gate (the config's qk_dim/v_dim properties round up to 64, but only the cache reads
them); the input and forget gates have num_heads outputs with a bias each. The FFN is gated
(proj_up_gate through SiLU times proj_up, then proj_down) at round_up(hidden_size ·
ffn_proj_factor, ffn_round_up_to_multiple_of), as round_up_to_next_multiple_of computes it. The
head is an nn.Linear of its own whatever tie_word_embeddings says: xLSTMForCausalLM declares no
_tied_weights_keys, and transformers 5.24 ties only what that names
(PreTrainedModel.get_expanded_tied_weights_keys). weight_mode "fused"
joins q, k, v and the output gate into one nn.Linear (qkv_opreact) and the two gates into
another (ifgate_preact): the same parameters and FLOPs. What counts no parameter and no matrix
FLOP: the tanh soft caps of the gates (gate_soft_cap) and of the logits (output_logit_soft_cap).

use_bias=True puts a bias on every projection and on the block's RMSNorms but not on out_norm,
which calc's norm (one bias setting for every norm, none on an RMSNorm) cannot hold: refused.
The config has no position limit (the recurrence has a fixed state): the default sequence length
is the one xLSTM 7B was pre-trained at, 8,192 tokens (arXiv 2503.13427: 2.3T tokens at a
context length of 8192; the released config's _name_or_path, "..._7B_ctx8192_...").
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, gated, need
from calc.spec import ModelSpec

TRAINED_CONTEXT = 8192  # xLSTM 7B's pretraining context (module docstring)
WEIGHT_MODES = ("single", "fused")


def _factor(c: HFConfig, key: str) -> float:
    value = c[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        c.fail(f"{key}={value!r} must be a number > 0")
    return float(value)


def _round_up(x: float, multiple: int) -> int:
    """round_up_to_next_multiple_of (configuration_xlstm.py), float arithmetic as it runs."""
    return int(((x + multiple - 1) // multiple) * multiple)


def _read_xlstm(c: HFConfig) -> dict[str, Any]:
    # xLSTMConfig.__post_init__: hidden_size (default 4096) wins over embedding_dim, and
    # num_blocks, when given, over num_hidden_layers; xLSTMModel builds num_blocks blocks and
    # an embedding embedding_dim wide, which must then be hidden_size for the blocks to run
    d = c.size("hidden_size")
    if c.given("embedding_dim") and c.size("embedding_dim") != d:
        c.fail(f"embedding_dim={c['embedding_dim']} differs from hidden_size={d}: xLSTMModel's "
               f"embedding would not feed its blocks")
    layers = c.size("num_blocks") if c.given("num_blocks") else c.size("num_hidden_layers")
    heads = c.size("num_heads")
    if c.flag("use_bias"):
        c.fail("use_bias=true puts a bias on the block RMSNorms but not on out_norm; calc's "
               "norm has no bias on an RMSNorm (use_bias=false, as xLSTM-7b)")
    if c["weight_mode"] not in WEIGHT_MODES:
        c.fail(f"weight_mode={c['weight_mode']!r} must be one of {', '.join(WEIGHT_MODES)}")
    widths = {}
    for name, key in (("d_qk", "qk_dim_factor"), ("d_v", "v_dim_factor")):
        width = int(d * _factor(c, key))  # xLSTMLayer's int(hidden_size * factor)
        if width < heads or width % heads:
            c.fail(f"{key}={c[key]!r} gives int(hidden_size · {key})={width}, which "
                   f"num_heads={heads} must divide (at least 1 per head)")
        widths[name] = width
    d_ff = _round_up(d * _factor(c, "ffn_proj_factor"),
                     c.size("ffn_round_up_to_multiple_of"))
    if d_ff < 1:
        c.fail(f"ffn_proj_factor={c['ffn_proj_factor']!r} gives an FFN of width {d_ff}")
    c.size("chunk_size")  # the chunkwise kernel's (calc.verify.hf_implementation)
    c.flag("tie_word_embeddings")  # read, and ignored by transformers (module docstring)
    return {
        "vocab_size": c.size("vocab_size"), "d_model": d, "n_layers": layers,
        "context_length": TRAINED_CONTEXT,
        "norm": {"kind": "rmsnorm", "placement": "pre"}, "position": {"kind": "none"},
        "ffn": {"activation": "swiglu", "d_ff": d_ff, "bias": False},
        "layers": {"mixer_pattern": ["mlstm"], "ffn_pattern": ["dense"]},
        "mlstm": {"n_heads": heads, **widths},
        "tie_embeddings": False,
    }


def _write_xlstm(spec: ModelSpec) -> dict[str, Any]:
    ml, ffn, norm = spec.mlstm, spec.ffn, spec.norm
    need(ml is not None and set(spec.mixer_kinds) == {"mlstm"},
         f"mixers {sorted(set(spec.mixer_kinds))} (xlstm builds an mLSTM on every layer)")
    assert ml is not None and ffn is not None
    need(set(spec.ffn_kinds) == {"dense"} and not ffn.bias and gated(spec, "xlstm") == "silu",
         f"ffn activation={ffn.activation}, bias={ffn.bias} on {sorted(set(spec.ffn_kinds))} "
         f"layers (xlstm's FFN is a dense SwiGLU without biases on every layer)")
    need(norm.kind == "rmsnorm" and norm.weights and norm.placement == "pre" and norm.final
         and not norm.embedding and not norm.sub_norms,
         "a norm other than xlstm's RMSNorms (norm_mlstm, norm_ffn before each sublayer, "
         "out_norm)")
    need(spec.position.kind == "none", f"position.kind={spec.position.kind!r} (xlstm has none)")
    need(not spec.tie_embeddings, "tie_embeddings=true (xlstm's head is never tied)")
    d = spec.d_model
    # int(d · factor) and round_up(d · factor, d_ff) give the widths back whatever the float
    # rounding: half a unit above the width, and the FFN's multiple the width itself
    return {"model_type": "xlstm", "vocab_size": spec.vocab_size, "hidden_size": d,
            "num_hidden_layers": spec.n_layers, "num_heads": ml.n_heads,
            "qk_dim_factor": (ml.d_qk + 0.5) / d, "v_dim_factor": (ml.d_v + 0.5) / d,
            "ffn_proj_factor": ffn.d_ff / d, "ffn_round_up_to_multiple_of": ffn.d_ff,
            "use_bias": False, "tie_word_embeddings": False, **NO_TOKENS}


XLSTM = ModelType(
    "xlstm", _read_xlstm, write=_write_xlstm,
    traits=Traits(norm="rmsnorm", positions=("none",), gated=True),
    defaults={
        "vocab_size": 50304, "hidden_size": 4096, "embedding_dim": None,
        "num_hidden_layers": 32, "num_blocks": None, "num_heads": 8, "use_bias": False,
        "qk_dim_factor": 0.5, "v_dim_factor": 1.0, "ffn_proj_factor": 2.667,
        "ffn_round_up_to_multiple_of": 64, "weight_mode": "single", "chunk_size": 64,
        "mode": "inference", "tie_word_embeddings": False,
    })
