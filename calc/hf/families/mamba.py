"""Mamba (state-space models): mamba and mamba2, stacks of Mamba blocks without attention or
FFNs.

A pure state-space model has no position limit: its default sequence length is the one its
paper trained at (Mamba: 2,048, Gu & Dao 2023 §4.2; Mamba-2: 2,048, Dao & Gu 2024 §9.2).
"""

from __future__ import annotations

import math
from typing import Any

from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, need
from calc.spec import ModelSpec

TRAINED_CONTEXT = 2048  # Mamba and Mamba-2's pretraining sequence length (module docstring)
_TRAITS = Traits(positions=("none",), gated=False, ssm=True, ffn=False)


def _ssm_only(c: HFConfig, mamba: dict[str, Any]) -> dict[str, Any]:
    """A stack of Mamba blocks: RMSNorm → mixer → residual, a final norm, the LM head."""
    return {
        "vocab_size": c["vocab_size"], "d_model": c["hidden_size"],
        "n_layers": c["num_hidden_layers"], "context_length": TRAINED_CONTEXT,
        "norm": {"kind": "rmsnorm", "placement": "pre"}, "position": {"kind": "none"},
        "layers": {"mixer_pattern": ["mamba"], "ffn_pattern": ["none"]}, "mamba": mamba,
        "tie_embeddings": c.flag("tie_word_embeddings"),
    }


def _inner(c: HFConfig) -> int:
    """configuration_mamba.py / _mamba2.py: intermediate_size = int(expand · hidden_size)."""
    expand = c["expand"]
    if isinstance(expand, bool) or not isinstance(expand, int | float) or expand <= 0:
        c.fail(f"expand={expand!r} must be a positive number")
    inner = int(expand * c.size("hidden_size"))
    if inner < 1:
        c.fail(f"expand={expand!r} × hidden_size={c['hidden_size']} must be at least 1")
    return inner


def _write_common(spec: ModelSpec, model_type: str, version: int) -> dict[str, Any]:
    m = spec.mamba
    need(m is not None and m.version == version,
         f"mamba.version={m.version if m else None} ({model_type} is Mamba-{version})")
    assert m is not None
    need(m.d_inner % spec.d_model == 0,
         f"mamba.d_inner={m.d_inner} ({model_type} makes it an integer expand × d_model)")
    return {"model_type": model_type, "vocab_size": spec.vocab_size,
            "hidden_size": spec.d_model, "num_hidden_layers": spec.n_layers,
            "expand": m.d_inner // spec.d_model, "state_size": m.d_state,
            "conv_kernel": m.d_conv, "use_bias": m.bias, "use_conv_bias": m.conv_bias,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


# ---- mamba ------------------------------------------------------------------------------------
def _read_mamba(c: HFConfig) -> dict[str, Any]:
    # modeling_mamba.py, MambaMixer: in_proj d → 2D and out_proj (use_bias), conv1d over D
    # (use_conv_bias), x_proj D → R + 2N, dt_proj R → D with bias, A_log D × N, D; the rank R
    # is ⌈d/16⌉ when time_step_rank is "auto" (configuration_mamba.py).
    rank = c["time_step_rank"]
    rank = math.ceil(c.size("hidden_size") / 16) if rank == "auto" else c.size("time_step_rank")
    return _ssm_only(c, {
        "version": 1, "d_inner": _inner(c), "d_state": c.size("state_size"),
        "d_conv": c.size("conv_kernel"), "dt_rank": rank, "conv_bias": c.flag("use_conv_bias"),
        "bias": c.flag("use_bias")})


def _write_mamba(spec: ModelSpec) -> dict[str, Any]:
    config = _write_common(spec, "mamba", 1)
    assert spec.mamba is not None
    return {**config, "time_step_rank": spec.mamba.dt_rank}


MAMBA = ModelType(
    "mamba", _read_mamba, write=_write_mamba, traits=_TRAITS,
    defaults={
        "vocab_size": 50280, "hidden_size": 768, "state_size": 16, "num_hidden_layers": 32,
        "expand": 2, "conv_kernel": 4, "use_bias": False, "use_conv_bias": True,
        "time_step_rank": "auto", "tie_word_embeddings": True,
    })


# ---- mamba2 -----------------------------------------------------------------------------------
def _read_mamba2(c: HFConfig) -> dict[str, Any]:
    # modeling_mamba2.py, Mamba2Mixer: in_proj d → 2D + 2GN + H, conv1d over D + 2GN, dt_bias,
    # A_log and D per head, a gated RMSNorm over D; the heads must tile D (its forward views
    # the scan input as num_heads × head_dim).
    inner, h = _inner(c), c.size("num_heads")
    if h * c.size("head_dim") != inner:
        c.fail(f"num_heads={h} × head_dim={c['head_dim']} must equal expand × hidden_size = "
               f"{inner}")
    return _ssm_only(c, {
        "version": 2, "d_inner": inner, "d_state": c.size("state_size"),
        "d_conv": c.size("conv_kernel"), "n_heads": h, "n_groups": c.size("n_groups"),
        "conv_bias": c.flag("use_conv_bias"), "bias": c.flag("use_bias")})


def _write_mamba2(spec: ModelSpec) -> dict[str, Any]:
    config = _write_common(spec, "mamba2", 2)
    m = spec.mamba
    assert m is not None and m.n_heads is not None
    return {**config, "num_heads": m.n_heads, "head_dim": m.d_inner // m.n_heads,
            "n_groups": m.n_groups}


MAMBA2 = ModelType(
    "mamba2", _read_mamba2, write=_write_mamba2, traits=_TRAITS,
    defaults={
        "num_heads": 128, "head_dim": 64, "vocab_size": 32768, "hidden_size": 4096,
        "state_size": 128, "num_hidden_layers": 64, "expand": 2, "conv_kernel": 4,
        "n_groups": 8, "use_bias": False, "use_conv_bias": True, "tie_word_embeddings": False,
    })
