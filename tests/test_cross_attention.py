"""Cross-attention layers (calc.spec.layers.CrossAttentionSpec): Llama 3.2 Vision's text model
(mllama_text_model, and the mllama wrapper's text_config) against transformers 5.24.0 on the
meta device, text only (the layers skipped) and with image tokens (cross_attention_states
given), and calc's reference model against calc's formulas."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import calc  # noqa: E402
from calc.errors import CalcError  # noqa: E402
from calc.hf import spec_from_hf_config  # noqa: E402
from calc.hf.export import hf_config_from_spec, shape  # noqa: E402
from calc.reports.verify import verify  # noqa: E402
from calc.spec import ModelSpec  # noqa: E402
from calc.verify import hf_reference  # noqa: E402
from tests.draws import examples  # noqa: E402
from tests.hf_released import CONFIGS  # noqa: E402
from tests.hf_strategies import STRATEGIES  # noqa: E402
from tests.strategies import cross_attention_specs  # noqa: E402

ELEVEN_B = CONFIGS / "llama-3.2-11b-vision-instruct.json"
NINETY_B = CONFIGS / "llama-3.2-90b-vision-instruct.json"


def with_images(spec: ModelSpec, images: int) -> ModelSpec:
    return spec.updated(**{"cross_attention.image_tokens": images})


def transformers_forward(config: dict, seq_len: int, images: int) -> tuple[int, int]:
    """(parameters, forward FLOPs) of transformers' model of `config` on the meta device over
    input_ids [1, seq_len], with `images` image tokens of width d as cross_attention_states
    (none: the text-only path, which skips the cross-attention layers)."""
    model = hf_reference.build(config)
    inner = getattr(model, "language_model", None) or model.model
    d = inner.config.hidden_size
    ids = torch.zeros(1, seq_len, dtype=torch.long, device="meta")
    states = torch.zeros(1, images, d, device="meta") if images else None
    with hf_reference.meta_guards(model)[0], torch.no_grad(), \
            FlopCounterMode(display=False) as counter:
        hidden = inner(input_ids=ids, cross_attention_states=states,
                       use_cache=False).last_hidden_state
        model.lm_head(hidden)
    params = sum(hf_reference.parameters_by_module(model).values())
    return params, counter.get_total_flops()


def assert_matches(config: dict, seq_len: int, images: int) -> ModelSpec:
    spec = spec_from_hf_config(config)
    if spec.cross_attention is not None:  # without such layers the image tokens go unread
        spec = with_images(spec, images)
    params, flops = transformers_forward(config, seq_len, images)
    assert calc.count_params(spec).total == params
    assert calc.count_flops(spec, seq_len, "full").forward * seq_len == flops
    return spec


def test_default_config_text_only_and_with_an_image():
    """MllamaTextConfig's defaults: 40 layers, 8 of them cross-attention (3, 8, ..., 38), an
    embedding of 128,256 + 8 rows; with one image of 4 tiles of (560/14)² + 1 = 1,601 patches
    (6,404 image tokens, the torchtune builder's encoder_max_seq_len / 20)."""
    spec = assert_matches({"model_type": "mllama_text_model"}, 16, 0)
    assert spec.layer_counts["cross_attention"] == 8
    assert (spec.vocab_size, spec.head_rows) == (128_264, 128_256)
    assert calc.count_params(spec).total == 9_775_192_080
    assert_matches({"model_type": "mllama_text_model"}, 16, 6404)


@pytest.mark.parametrize("path", [ELEVEN_B, NINETY_B], ids=lambda p: p.stem)
def test_released_language_models_with_an_image(path):
    """The released text_configs with one image's 6,404 tokens, at 16 tokens (their text-only
    forward at 128 runs in tests/test_hf_reference.py with every released file)."""
    config = json.loads(path.read_text())
    assert_matches(config, 16, 6404)


# Published counts of the Llama 3.1 text models the vision models are built on (the model
# card: "built on top of Llama 3.1 text-only model", its weights frozen); the presets cite them.
LLAMA_31 = {ELEVEN_B: (8_030_261_248, 8), NINETY_B: (70_553_706_496, 20)}


@pytest.mark.parametrize("path", [ELEVEN_B, NINETY_B], ids=lambda p: p.stem)
def test_the_language_model_is_llama_31_with_cross_attention_layers(path):
    """Llama 3.2 Vision's language model = Llama 3.1's published count + its cross-attention
    layers (each: the cross-attention part, two norms of d and a SwiGLU MLP 3·d·d_ff) + the 8
    embedding rows of the image token's range: 9,775,192,080 and 87,666,865,192."""
    spec = spec_from_hf_config(path)
    counts = calc.count_params(spec)
    published, layers = LLAMA_31[path]
    d, d_ff = spec.d_model, spec.ffn.d_ff
    cross = sum(n for key, n in counts.components.items() if key.startswith("cross_attention/"))
    assert spec.layer_counts["cross_attention"] == layers
    assert counts.total == published + cross + layers * (2 * d + 3 * d * d_ff) + 8 * d


@st.composite
def _configs(draw) -> dict:
    fields = draw(STRATEGIES["mllama_text_model"]("mllama_text_model"))
    text = {"model_type": "mllama_text_model", "vocab_size": draw(st.integers(1, 50)), **fields}
    return {"model_type": "mllama", "text_config": text} if draw(st.booleans()) else text


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_configs(), st.integers(1, 9), st.integers(0, 12))
def test_random_configs_match_transformers_and_export_back(config, seq_len, images):
    """Any heads, kv heads, width (a remainder past heads × head width), cross-attention
    layers and tie flag, bare or in the mllama wrapper, text only or with image tokens; and
    back through mllama_text_model's writer."""
    assert_matches(config, seq_len, images)
    exported = hf_config_from_spec(spec_from_hf_config(config))
    assert shape(spec_from_hf_config(exported)) == shape(spec_from_hf_config(config))
    if spec_from_hf_config(config).cross_attention is not None:
        assert exported["model_type"] == "mllama_text_model"


SMALL = {"vocab_size": 136, "output_vocab_size": 128, "d_model": 64, "n_layers": 5,
         "context_length": 32, "attention": {"n_heads": 4, "n_kv_heads": 2},
         "ffn": {"d_ff": 96, "activation": "swiglu"}, "norm": {"kind": "rmsnorm"},
         "position": {"kind": "rope"},
         "layers": {"exceptions": [{"layers": [1, 3], "mixer": "cross_attention"}]}}


@pytest.mark.parametrize("images", [0, 10])
def test_reference_model_matches_the_formulas(images):
    """Every parameter and FLOP component of calc's reference model, and its backward (2 ×
    forward: the image tokens take a gradient as a trained tower's output would)."""
    spec = ModelSpec(**SMALL, cross_attention={"image_tokens": images})
    report = verify(spec, 16)
    assert report.ok, [c for c in (*report.params, *report.flops) if not c.match]
    flops = calc.count_flops(spec, 16, "full").components
    assert (flops["cross_attention/kv"] > 0) == (images > 0)
    assert (flops["mlp"] == 3 * 2 * 64 * 96 * 5) == (images > 0)  # the skipped layers' MLP


def test_image_tokens_cost_per_sequence_and_per_token():
    """With T_img image tokens, a text token pays W_Q, W_O and the MLP of each cross-attention
    layer and 2·T_img·h·(d_qk + d_v) for its scores; the sequence pays W_K and W_V of its
    T_img tokens once per layer (2·T_img·d·h_kv·(d_qk + d_v)), shared by its T tokens."""
    spec = ModelSpec(**SMALL, cross_attention={"image_tokens": 10})
    text = ModelSpec(**SMALL, cross_attention={})
    t, layers, d, h, kv, d_h = 16, 2, 64, 4, 2, 16
    per_layer = 2 * (d * h * d_h + h * d_h * d + 3 * d * 96) + 2 * 10 * h * 2 * d_h
    per_sequence = 2 * 10 * d * kv * 2 * d_h
    difference = (calc.count_flops(spec, t, "full").forward
                  - calc.count_flops(text, t, "full").forward)
    assert difference * t == layers * (per_layer * t + per_sequence)
    # and the same under the causal convention: nothing masks an image token
    assert (calc.count_flops(spec, t, "causal").forward
            - calc.count_flops(text, t, "causal").forward) == difference


@pytest.mark.parametrize("change, words", [
    ({"cross_attention": None}, "layers: cross_attention layers need cross_attention"),
    ({"layers": {}}, "cross_attention is given but no layer's mixer is cross_attention"),
    ({"norm": {"kind": "rmsnorm", "placement": "post"}},
     "norm.placement other than pre is not allowed with cross_attention"),
    ({"layers": {"exceptions": [{"layers": [1], "mixer": "cross_attention", "ffn": "none"}]}},
     "an FFN of kind none must be on every layer"),
    ({"attention": {"n_heads": 4, "qkv_bias": True}},
     "attention.qkv_bias is not allowed with cross_attention"),
])
def test_what_a_cross_attention_layer_cannot_be_is_refused(change, words):
    data = {**SMALL, "cross_attention": {"image_tokens": 1}, **change}
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        ModelSpec(**data)


def test_a_bad_cross_attention_layers_field_is_one_line():
    with pytest.raises(CalcError, match="cross_attention_layers='3' must be a list"):
        spec_from_hf_config({"model_type": "mllama_text_model", "cross_attention_layers": "3"})
    with pytest.raises(CalcError, match="pad_token_id=200 must lie within"):
        spec_from_hf_config({"model_type": "mllama_text_model", "vocab_size": 100,
                             "pad_token_id": 200})


@pytest.mark.parametrize("images", [0, 10])
def test_adapters_on_the_cross_attention_projections_as_the_reference_model_counts(images):
    """LoRA on q, o and the FFN: the cross-attention layers' W_Q and W_O and their MLP carry
    adapters too, which a token runs through only where there are image tokens."""
    from tests.test_finetune_mixers import assert_adapters_as_the_reference_model_counts

    spec = ModelSpec(**SMALL, cross_attention={"image_tokens": images})
    ours = assert_adapters_as_the_reference_model_counts(spec, ("q", "o", "up", "down"))
    assert ours.by_target["lora/q"] == 2 * 5 * (64 + 64)


def test_lora_targets_are_peft_on_transformers():
    """PEFT's q_proj, k_proj, v_proj and o_proj match self_attn's and cross_attn's alike on
    MllamaForCausalLM; calc counts both (the default config, rank 8)."""
    from calc.evaluate import count_adapters
    from calc.spec.finetune import FineTune
    from calc.verify.hf_reference import lora_parameters

    config = {"model_type": "mllama_text_model"}
    spec, model = spec_from_hf_config(config), hf_reference.build(config)
    for target in ("q", "k", "v", "o"):
        counts = count_adapters(spec, FineTune(method="lora", rank=8, targets=(target,)))
        assert counts.by_target == {f"lora/{target}": lora_parameters(
            model, 8, rf"\.{target}_proj$")}, target
    everything = count_adapters(spec, FineTune(method="lora", rank=8, targets="all-linear"))
    assert everything.trainable == lora_parameters(model, 8)


@pytest.mark.parametrize(("dtype", "batch"), [("bf16", 2), ("fp32", 1)])
def test_text_only_training_keeps_nothing_of_the_skipped_layers(dtype, batch):
    """verify --memory: transformers' text-only training forward of the mllama wrapper's
    language model (two of four layers cross-attention, skipped) keeps exactly what calc's hf
    accounting counts, in every run (eager and SDPA, checkpointed or not, full and LoRA): none
    of the skipped layers' norms, MLP or checkpointed input. (QLoRA's reload is left out:
    AutoModelForCausalLM does not map the saved MllamaTextConfig.)"""
    from calc.reports.memory_check import verify_memory

    text = {"model_type": "mllama_text_model", "hidden_size": 64, "intermediate_size": 96,
            "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 100, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0,
            "cross_attention_layers": [1, 3]}
    config = {"model_type": "mllama", "text_config": text}
    report = verify_memory(spec_from_hf_config(config), config, 16, batch=batch, dtype=dtype,
                           qlora=False)
    assert [c for c in report.memory_check if not c.exact] == []
    assert len(report.memory_check) == 24  # each run: layers, embedding, output, total


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=cross_attention_specs(), seq_len=st.integers(1, 12))
def test_random_specs_on_the_reference_model(spec, seq_len):
    """Cross-attention layers among any mixers, of any head shapes, FFN, norm and positions,
    text only or with image tokens: calc's reference model counts what the formulas count,
    component by component, and its backward is 2 × forward."""
    report = verify(spec, seq_len)
    assert report.ok, [c for c in (*report.params, *report.flops) if not c.match]


def test_the_image_keys_and_values_are_a_cache_per_sequence():
    """Serving: each sequence caches its image tokens' keys and values in every
    cross-attention layer (fixed whatever the context: MllamaTextCrossAttention's cache), the
    self-attention layers' cache grows per token; text only there are none."""
    spec = spec_from_hf_config(ELEVEN_B)
    text = calc.infer(spec, gpu="h100", batch=4, context=4096).inference
    image = calc.infer(with_images(spec, 6404), gpu="h100", batch=4, context=4096).inference
    assert text.state_cache_bytes == 0
    assert text.kv_cache_bytes_per_token == image.kv_cache_bytes_per_token == 32 * 8 * 256 * 2
    assert image.state_cache_bytes == 4 * 8 * 6404 * 8 * 256 * 2  # b × L_xa × T_img × KV × bf16


def test_image_tokens_on_the_command_line(cli):
    """--set cross_attention.image_tokens=N prices N image tokens a sequence; a bad value is
    one line naming the field, exit 2."""
    path = str(ELEVEN_B)
    text = cli(path, "--seq-len", "1024", "--format", "json").json()
    image = cli(path, "--seq-len", "1024", "--format", "json",
                "--set", "cross_attention.image_tokens=6404").json()
    spec = with_images(spec_from_hf_config(ELEVEN_B), 6404)
    assert image["flops_per_token"]["forward"] == calc.count_flops(spec, 1024).forward
    assert image["flops_per_token"]["forward"] > text["flops_per_token"]["forward"]
    assert image["params"]["total"] == text["params"]["total"] == 9_775_192_080
    bad = cli(path, "--set", "cross_attention.image_tokens=-1")
    assert bad.code == 2 and "cross_attention.image_tokens" in bad.err
    assert len(bad.err.strip().splitlines()) == 1
