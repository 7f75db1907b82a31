"""Latent attention variants: a kind's own latent shapes (dots3's sliding layers), the indexer on
the global layers beside sliding ones, the norm over the shared RoPE key, A.X-K2's gate from the
query latent and its gated norms, against calc's reference model, and the KV cache per kind."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from hypothesis import given
from hypothesis import strategies as st

import calc
from calc.reports.verify import verify
from tests.draws import one_feature


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


@one_feature
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


def test_dots3_notes_top_level_text_fields_are_its_text_model():
    """Published dots3-note config.json files hold the text model's fields at the top level
    (Dots3NoteConfig builds its text config from them when text_config is absent): calc reads
    them as dots3_note_text, the towers and the wrapper's token ids aside."""
    from calc.hf import spec_from_hf_config
    from calc.hf.config import read_hf
    from calc.hf.export import shape

    text = {"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
            "num_key_value_heads": 4, "q_lora_rank": 8, "kv_lora_rank": 6,
            "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 6,
            "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
            "intermediate_size": 16, "swa_num_attention_heads": 2,
            "swa_num_key_value_heads": 2, "sliding_window_size": 513, "vocab_size": 50}
    wrapped = {"model_type": "dots3_note", "architectures": ["Dot3NoteForCausalLM"],
               "image_token_id": 1, "vision_config": {"hidden_size": 8}, **text}
    spec = spec_from_hf_config(wrapped)
    assert shape(spec) == shape(spec_from_hf_config({"model_type": "dots3_note_text", **text}))
    assert spec.attention.sliding_window == 513
    assert any("vision tower" in note for note in read_hf(wrapped).notes)
