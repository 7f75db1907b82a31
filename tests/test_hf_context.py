"""What a config.json leaves to assumption, said in the report (issue 12).

A long-context config's max_position_embeddings is not the context it was pre-trained at
(DeepSeek-V3's config: T = 163,840 gave 15.0 M GPU-hours against the preset's 2.60 M); a field
misspelled or left out silently took transformers' default (`hiden_size` → 31.5 B instead of
~69 B; `{"model_type": "llama"}` alone → a full 6.7 B report). The configs are the released files
in tests/data/hf_configs (README.md there cites each)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import calc
from calc.errors import CalcError
from calc.hf import read_hf

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def config(name: str, **changes) -> dict:
    return {**json.loads((CONFIGS / f"{name}.json").read_text()), **changes}


def notes(data: dict) -> str:
    return " ".join(read_hf(data, name="m").notes)


@pytest.mark.parametrize("name, preset, context", [
    ("deepseek-v3", "deepseek-v3", 4096),  # yarn × 40 → 163,840
    ("llama-3.1-8b", "llama3.1-8b", 8192),  # llama3 × 8 → 131,072
])
def test_scaled_rope_configs_use_the_pre_training_context(name, preset, context):
    read = read_hf(config(name), name=name)
    assert read.spec.context_length == context == calc.load_preset(preset).spec.context_length
    assert "original_max_position_embeddings" in read.notes[0]
    assert "pre-training context" in read.notes[0]


def test_deepseek_v3_config_costs_what_the_preset_costs(tmp_path):
    """At the same context the config and the preset agree to the router-bias buffers."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config("deepseek-v3")))
    ours = calc.estimate(str(path), tokens=14.8e12, gpu="h800")
    preset = calc.estimate("deepseek-v3", tokens=14.8e12, gpu="h800")
    assert ours.flops_per_token.seq_len == 4096
    assert ours.training.gpu_hours == pytest.approx(preset.training.gpu_hours, rel=1e-4)
    assert "Context T = 4,096" in calc.render(ours)


def test_longrope_original_at_the_top_level():
    """Phi-3's 128k configs keep original_max_position_embeddings at the top level."""
    data = config("phi-3-mini-4k-instruct", max_position_embeddings=131072,
                  rope_scaling={"type": "longrope", "long_factor": [1.0] * 48,
                                "short_factor": [1.0] * 48})
    assert read_hf(data).spec.context_length == 4096
    plain = read_hf(config("phi-3-mini-4k-instruct"))
    assert plain.spec.context_length == 4096 and "gives as the pre-training" in plain.notes[0]


def test_transformers_5_rope_parameters_per_layer_type():
    data = config("llama-3.1-8b")
    rope = data.pop("rope_scaling")
    data["rope_parameters"] = {"full_attention": {**rope, "rope_type": "llama3"},
                               "sliding_attention": {"rope_type": "default"}}
    assert read_hf(data).spec.context_length == 8192


@pytest.mark.parametrize("scaling", [None, {"rope_type": "linear", "factor": 4.0},
                                     {"rope_type": "dynamic", "factor": 2.0}])
def test_without_a_stated_pre_training_context_t_is_the_maximum(scaling):
    data = config("qwen2.5-3b", rope_scaling=scaling)
    read = read_hf(data)
    assert read.spec.context_length == 32768
    assert "does not state the pre-training context" in read.notes[0]


def test_learned_positions_say_so():
    assert "learned position table" in notes(config("gpt2"))


def test_a_config_default_context_is_named():
    text = notes(config("falcon-7b"))
    assert "transformers' default max_position_embeddings" in text


def test_seq_len_past_the_context_is_noted():
    report = calc.estimate("llama2-7b", seq_len=10_000_000)
    assert any("10,000,000 is 2,441× the 4,096-token context" in n for n in report.notes)
    assert not calc.estimate("llama2-7b", seq_len=4096).notes
    memory = calc.memory("llama2-7b", seq_len=8192)
    assert "s = 8,192 is 2× the 4,096-token context" in memory.conventions[0]


def test_infer_says_the_largest_context_is_past_the_trained_one():
    """Issue 12: 'largest context at batch 16: 39,223' for a 4K model passed without a note."""
    report = calc.infer("llama2-7b", gpu="h200", batch=16)
    assert report.inference.max_context > 4096
    assert "past the 4,096-token context llama2-7b was trained for" in report.conventions[0]


# ---- misspelled and missing fields ---------------------------------------------------------
@pytest.mark.parametrize("wrong, right", [
    ("hiden_size", "hidden_size"), ("num_hidden_layer", "num_hidden_layers"),
    ("intermediate_szie", "intermediate_size"), ("vocabsize", "vocab_size"),
])
def test_a_key_one_edit_from_a_field_is_refused(wrong, right):
    data = config("llama-3.1-8b")
    data[wrong] = data.pop(right)
    with pytest.raises(CalcError) as caught:
        read_hf(data)
    message = str(caught.value)
    assert f"{wrong!r} is not a field of llama configs; did you mean {right!r}?" in message
    assert "default" in message and "\n" not in message


def test_near_keys_beside_the_real_field_pass():
    data = config("llama-3.1-8b", hiden_size=1, rope_theta=5e5)  # hidden_size is there too
    assert read_hf(data).spec.d_model == 4096


def test_the_cli_refuses_a_misspelled_config(cli, tmp_path):
    data = config("llama-3.1-8b")
    data["hiden_size"] = data.pop("hidden_size")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    result = cli(str(path))
    assert result.code == 2 and "did you mean 'hidden_size'" in result.err
    assert result.err.count("\n") == 1


def test_every_defaulted_field_is_listed(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama"}')
    report = calc.estimate(str(path))
    text = " ".join(report.notes)
    for field in ("vocab_size=32000", "hidden_size=4096", "intermediate_size=11008",
                  "num_hidden_layers=32", "num_attention_heads=32",
                  "max_position_embeddings=2048", "tie_word_embeddings=False"):
        assert field in text
    assert "transformers' default max_position_embeddings" in text
    complete = read_hf(config("llama-3.1-8b"))
    assert not any("defaults were used" in note for note in complete.notes)
