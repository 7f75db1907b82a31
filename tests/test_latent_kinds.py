"""Latent attention variants: a kind's own latent shapes (dots3's sliding layers), the indexer on
the global layers beside sliding ones, the norm over the shared RoPE key, A.X-K2's gate from the
query latent and its gated norms, against calc's reference model, and the KV cache per kind."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import calc
from calc.reports.verify import verify


@st.composite
def latent_specs(draw) -> calc.ModelSpec:
    """MLA layers, global and local, the local ones with heads and latents of their own; the
    indexer on the global ones or none; the RoPE-key norm, the latent gate and gated norms."""
    q_rank = draw(st.integers(1, 8))
    latent_gate = draw(st.booleans())
    rope_norm = draw(st.booleans())

    def mla(rope: int) -> dict:
        return {"q_lora_rank": q_rank if draw(st.booleans()) else draw(st.integers(1, 8)),
                "kv_lora_rank": draw(st.integers(1, 8)),
                "qk_nope_head_dim": draw(st.integers(0 if rope else 1, 6)),
                "qk_rope_head_dim": rope, "v_head_dim": draw(st.integers(1, 6)),
                "rope_key_norm": rope_norm, "latent_gate": latent_gate}

    rope = draw(st.sampled_from([0, 2, 4]))
    rest = draw(st.lists(st.sampled_from(["global", "local"]), min_size=1, max_size=3))
    pattern = ("global", *rest)
    n_layers = draw(st.integers(len(pattern), 6))
    attention: dict = {
        "n_heads": draw(st.integers(1, 4)), "mla": mla(rope),
        "output_gate": latent_gate or draw(st.booleans()), "qkv_bias": draw(st.booleans()),
        "sliding_window": draw(st.integers(1, 8)), "layer_pattern": pattern}
    if attention["output_gate"]:
        attention["output_gate_per"] = "channel" if latent_gate else draw(
            st.sampled_from(["channel", "head"]))
    if draw(st.booleans()):
        attention["indexer"] = {"n_heads": draw(st.integers(1, 3)),
                                "head_dim": draw(st.integers(max(rope, 1), 8)),
                                "topk": draw(st.integers(1, 10))}
    if "local" in pattern[:n_layers] and draw(st.booleans()):
        attention["kind_shapes"] = {"local": {"n_heads": draw(st.integers(1, 4)),
                                              "mla": mla(draw(st.sampled_from([0, 2, 4])))}}
    experts = draw(st.integers(2, 4))
    return calc.ModelSpec(
        name="latent", vocab_size=draw(st.integers(1, 40)), d_model=draw(st.integers(2, 24)),
        n_layers=n_layers, context_length=32, attention=attention,
        ffn={"activation": "swiglu", "d_ff": draw(st.integers(1, 16))},
        moe={"n_experts": experts, "top_k": draw(st.integers(1, experts)),
             "d_expert": draw(st.integers(1, 8)), "n_shared_experts": draw(st.integers(0, 1)),
             "first_dense_layers": draw(st.integers(0, n_layers - 1))},
        norm={"kind": "rmsnorm", "gate_rank": draw(st.none() | st.integers(1, 4))},
        position={"kind": "rope"})


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=latent_specs(), seq_len=st.integers(1, 12), device=st.sampled_from(["meta", "cpu"]))
def test_latent_variants_verify_exactly(spec, seq_len, device):
    """Parameters and forward FLOPs, component by component, equal the reference model's."""
    report = verify(spec, seq_len, device=device)
    assert report.ok, [c for c in [*report.params, *report.flops] if not c.match]


def test_a_kinds_own_latents_are_its_kv_cache():
    """dots3's defaults: the 13 indexed layers cache 512 + 64 values a token and the indexer's
    key of 128, the 33 sliding ones 1024 + 64 over their window of 512 (kind_shapes.local.mla),
    not the model's latents."""
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config({"model_type": "dots3_note_text"})
    t = 4096
    cache = calc.infer(spec, gpu="h100", context=t).inference.kv_cache_bytes
    assert cache == 2 * (13 * t * (512 + 64 + 128) + 33 * 512 * (1024 + 64))
