"""calc against transformers' own models, built on the meta device (calc.verify.hf_reference).

The verification contract (issue 3, "How it will be checked"): for a released config.json,
`python -m calc CONFIG --format json --seq-len 128 --attention full` gives params.total equal to
transformers' parameter count and flops_per_token.forward × 128 equal to FlopCounterMode over
transformers' forward, exactly. Configs: tests/data/hf_configs (README.md cites each).
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from huggingface_hub.errors import StrictDataclassError  # noqa: E402
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402
from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # noqa: E402

import calc  # noqa: E402
from calc.errors import CalcError  # noqa: E402
from calc.hf import spec_from_hf_config, supported_types  # noqa: E402
from calc.hf.export import (  # noqa: E402
    buffer_params,
    hf_config_from_spec,
    shape,
    unread_params,
)
from calc.hf.multimodal import WRAPPERS  # noqa: E402
from calc.hf.registry import find  # noqa: E402
from calc.hf.writing import NO_TOKENS, Unexpressible  # noqa: E402
from calc.reports.verify import CPU_FORWARD_PARAMS, hf_seq_len, verify  # noqa: E402
from calc.verify import hf_reference  # noqa: E402
from calc.verify.hf_implementation import transformers_flops  # noqa: E402
from calc.verify.model import build as build_reference  # noqa: E402
from tests.draws import examples, one_feature  # noqa: E402
from tests.hf_family_strategies import FAMILY_TYPES, family_config  # noqa: E402
from tests.hf_released import (  # noqa: E402
    CONFIGS,
    DEFAULTS_REFUSED_BY_BOTH,
    REAL,
    REFUSAL_LAYERS,
)
from tests.hf_strategies import _NO_TOKENS, MIN_WINDOW, STRATEGIES, hf_configs  # noqa: E402

T = 128


def released(name: str, **changes) -> dict:
    return {**json.loads((CONFIGS / f"{name}.json").read_text()), **changes}


def assert_matches(spec: calc.ModelSpec, config: dict, seq_len: int) -> None:
    """Parameters equal; forward FLOPs equal where transformers runs the model as calc counts
    it, and with its own way where it does not (calc.verify.hf_implementation)."""
    seq_len = hf_seq_len(spec, seq_len)
    counted = hf_reference.count(config, seq_len)
    # small configs whose forward the meta device cannot run go through with real tensors (a
    # large one, LongCat-Flash's default, by its parameters alone)
    if counted.forward is None and counted.params <= CPU_FORWARD_PARAMS:
        counted = hf_reference.count(config, seq_len, "cpu")
    buffers = buffer_params(spec, config["model_type"])
    unread = unread_params(spec, config["model_type"])
    assert calc.count_params(spec).total - buffers + unread == counted.params
    if counted.forward is not None:
        assert transformers_flops(spec, config, seq_len)[0] == counted.forward


def exported_as(spec: calc.ModelSpec, model_type: str) -> dict:
    """calc's writer gives back a config of `model_type` that reads as the same shape."""
    exported = hf_config_from_spec(spec)
    assert exported["model_type"] == model_type
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    return exported


# transformers' CPU kernels of these types step through the tokens one at a time in Python
# (modeling_mamba.py MambaMixer.slow_forward, mamba_selective_scan in modeling_falcon_mamba.py
# and modeling_jamba.py, modeling_zamba.py ZambaMambaMixer.slow_forward, modeling_rwkv.py
# rwkv_linear_attention_cpu, modeling_recurrent_gemma.py RecurrentGemmaRglru._rnn_scan,
# modeling_xlstm.py mlstm_recurrent_sequence_native on the tokens after the last whole chunk),
# or through each expert its tokens picked (modeling_longcat_flash.py LongcatFlashExperts):
# their counts are per token, so STEPPED_T tokens check them as more do, in a fraction of the
# time.
STEPPED = {"mamba", "falcon_mamba", "jamba", "rwkv", "zamba", "recurrent_gemma", "xlstm",
           "longcat_flash"}
STEPPED_T = 4


def tokens(model_type: str, seq_len: int) -> int:
    return STEPPED_T if model_type in STEPPED else seq_len


@pytest.mark.parametrize("path", REAL, ids=lambda path: path.stem)
def test_released_config_through_the_cli_matches_transformers(cli, path):
    config = json.loads(path.read_text())
    t = tokens(config["model_type"], T)
    result = cli(str(path), "--format", "json", "--seq-len", str(t), "--attention", "full")
    assert result.code == 0, result.err
    data = result.json()
    counted = hf_reference.count(path, t)
    unread = unread_params(spec_from_hf_config(path), counted.model_type)
    assert data["params"]["total"] + unread == counted.params
    if counted.forward is None:  # its FLOPs: small configs on CPU (random configs below)
        assert counted.model_type in hf_reference.META_FORWARD_UNRUNNABLE
        return
    # Where transformers runs a part another way (hf_implementation), the difference is that
    # part's, computed from the spec; it is 0 for every attention-only model but Llama 4.
    spec = spec_from_hf_config(path)
    as_run = transformers_flops(spec, config, t)[0]
    difference = as_run - calc.count_flops(spec, t, "full").forward * t
    assert data["flops_per_token"]["forward"] * t + difference == counted.forward


# Quirk paths no released file above takes; each changes one field of a released config and
# shrinks depth to stay fast.
VARIANTS = {
    "llama biases": ("llama-3.2-3b", {"attention_bias": True, "mlp_bias": True}),
    "gpt2 untied, n_inner": ("gpt2", {"tie_word_embeddings": False, "n_inner": 1000}),
    "opt post-LN": ("opt-350m", {"word_embed_proj_dim": 1024}),
    "opt no final norm": ("opt-125m", {"_remove_final_layer_norm": True}),
    "opt no biases": ("opt-125m", {"enable_bias": False}),
    "neox sequential": ("pythia-160m", {"use_parallel_residual": False}),
    "neox no attention bias": ("pythia-160m", {"attention_bias": False}),
    "falcon new, one norm": ("falcon-40b", {"num_ln_in_parallel_attn": 1,
                                            "num_hidden_layers": 4}),
    "falcon old, MHA": ("falcon-7b", {"multi_query": False, "num_attention_heads": 71}),
    "bloom untied": ("bloom-560m", {"tie_word_embeddings": False}),
    "qwen2 sliding": ("qwen2.5-3b", {"use_sliding_window": True, "max_window_layers": 30}),
    "qwen2 head_dim": ("qwen2.5-3b", {"head_dim": 64, "num_attention_heads": 8}),
    "qwen2_moe sparse step": ("qwen1.5-moe-a2.7b", {"decoder_sparse_step": 2,
                                                    "mlp_only_layers": [1]}),
    "qwen3_moe dense first": ("qwen3-30b-a3b", {"mlp_only_layers": [0, 1],
                                                "num_hidden_layers": 6}),
    "gemma2 layer_types": ("gemma-2-9b", {"num_hidden_layers": 6, "layer_types":
                                          ["full_attention"] * 2 + ["sliding_attention"] * 4}),
    "deepseek_v2 q_lora": ("deepseek-v2-lite", {"q_lora_rank": 768, "attention_bias": True}),
    "flint irregular dense layers, biases, sparse step": ("flint-defaults", {
        "mlp_only_layers": [2], "attention_bias": True, "decoder_sparse_step": 2,
        "num_experts": 8, "num_hidden_layers": 6}),
    "deepseek_v3 no mtp": ("deepseek-v3", {"num_nextn_predict_layers": 0, "n_group": 1,
                                           "topk_group": 1, "n_routed_experts": 16,
                                           "num_hidden_layers": 5}),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_quirk_variants_match_transformers(name):
    base, changes = VARIANTS[name]
    config = released(base, **changes)
    assert_matches(spec_from_hf_config(config), config, 32)


@pytest.mark.parametrize("model_type", sorted(set(supported_types())
                                              - set(DEFAULTS_REFUSED_BY_BOTH)))
def test_an_empty_config_is_transformers_default_model(model_type):
    """Every ModelType's defaults against the classes themselves: every default calc reads,
    at once."""
    config = {"model_type": model_type}
    assert_matches(spec_from_hf_config(config), config, tokens(model_type, 16))


@pytest.mark.parametrize("model_type", sorted(DEFAULTS_REFUSED_BY_BOTH))
def test_default_configs_transformers_cannot_build_are_refused(model_type):
    with pytest.raises(CalcError, match=DEFAULTS_REFUSED_BY_BOTH[model_type]):
        spec_from_hf_config({"model_type": model_type})
    # huggingface_hub's StrictDataclassError: a config class's validate_architecture
    with pytest.raises((TypeError, ValueError, AttributeError, KeyError, StrictDataclassError)):
        hf_reference.count({"model_type": model_type,
                            "num_hidden_layers": REFUSAL_LAYERS.get(model_type, 1)}, 4)


def test_deepseek_v2_default_top_k_is_refused_by_both():
    # DeepseekV2Config.num_experts_per_tok defaults to None: torch.topk(k=None) fails.
    with pytest.raises(CalcError, match="num_experts_per_tok=None"):
        spec_from_hf_config({"model_type": "deepseek_v2"})
    with pytest.raises(TypeError):
        hf_reference.count({"model_type": "deepseek_v2", "num_hidden_layers": 2}, 4)


# GPT-2, the character GPT, Mixtral and DeepSeek-V3 (whose 58 × 256 routing biases transformers
# keeps as buffers: buffer_params) go through `verify --hf` at the same T in
# tests/test_verify.py, which builds the same exported model and makes the same comparison.
@pytest.mark.parametrize("name", ["llama3-8b", "mistral-7b", "mpt-7b", "starcoderbase-15.5b",
                                  "palm-540b"])
def test_presets_match_transformers(name):
    """What `verify --hf` checks for every preset, here one per architecture (test_hf.py
    round-trips them all)."""
    spec = calc.load_preset(name).spec
    assert_matches(spec, hf_config_from_spec(spec), 32)


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # n_shared_experts 0
@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hf_configs())
def test_random_configs_of_every_type_match_transformers(config):
    """Every reader against transformers on small random configs: both count the same model."""
    assert_matches(spec_from_hf_config(config), config, MIN_WINDOW)


def _exported(spec: calc.ModelSpec) -> dict | None:
    """The config calc.hf.export writes for `spec`, or None when no writer holds it."""
    try:
        return hf_config_from_spec(spec)
    except CalcError:
        return None


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # n_shared_experts 0
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hf_configs())
def test_random_specs_that_export_match_transformers(config):
    """Every writer against transformers: the config calc.hf.export writes for a spec read from
    a random config of any type (often another type's config, the first writer's that holds
    it) builds a model of the counts calc gives the spec. The specs are read ones because those
    of tests/strategies.py almost never fit one transformers architecture; the few read ones
    no writer holds (a smollm3 with sliding layers and a biased MLP, ...) are not examples."""
    spec = spec_from_hf_config(config)
    exported = _exported(spec)
    assume(exported is not None)
    assert_matches(spec, exported, MIN_WINDOW)


# Specs the search above found that a writer once exported to configs transformers could not
# run, and the writer that now exports each: DeepseekV3Config's default of 128 KV heads
# (repeat_kv by heads // 128 = 0 empties the keys), and the Mamba geometry
# GraniteMoeHybridConfig checks on a model with attention on every layer.
_MLA_MOE = {"num_attention_heads": 2, "num_key_value_heads": 2, "hidden_size": 2,
            "num_hidden_layers": 1, "intermediate_size": 1, "q_lora_rank": None,
            "kv_lora_rank": 2, "qk_nope_head_dim": 0, "qk_rope_head_dim": 2, "v_head_dim": 1,
            "n_routed_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 1,
            "n_shared_experts": 0, "first_k_dense_replace": 0, "n_group": 1, "topk_group": 1,
            "vocab_size": 5, "max_position_embeddings": 64, "tie_word_embeddings": False,
            **NO_TOKENS}
EXPORTED = {
    "sarvam_mla": ("deepseek_v3", {**_MLA_MOE, "model_type": "sarvam_mla"}),
    "granitemoehybrid, attention only": ("granitemoehybrid", {
        "model_type": "granitemoehybrid", "num_attention_heads": 1, "hidden_size": 2,
        "num_key_value_heads": 1, "num_hidden_layers": 1, "intermediate_size": 1,
        "num_experts_per_tok": 1, "num_local_experts": 1, "layer_types": ["attention"],
        "shared_intermediate_size": 1, "position_embedding_type": None, "vocab_size": 5,
        "max_position_embeddings": 64, "tie_word_embeddings": False, **NO_TOKENS}),
}


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # n_shared_experts 0
@pytest.mark.parametrize("name", EXPORTED)
def test_specs_the_search_found_export_to_configs_transformers_runs(name):
    writer, config = EXPORTED[name]
    spec = spec_from_hf_config(config)
    exported = hf_config_from_spec(spec)
    assert exported["model_type"] == writer
    assert_matches(spec, exported, MIN_WINDOW)


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # n_shared_experts 0
def test_a_grouped_router_needs_two_experts():
    """DeepSeek-V3's router sums each group's top 2 scores (topk(2)): one expert cannot run, so
    its writer refuses the spec (and DeepSeek-V2's, which takes the top-k of all, writes it)."""
    config = {**_MLA_MOE, "model_type": "deepseek_v3", "n_routed_experts": 1,
              "num_nextn_predict_layers": 0}
    spec = spec_from_hf_config(config)
    with pytest.raises(Unexpressible, match=r"moe\.n_experts=1"):
        find("deepseek_v3").write(spec)
    # torch's C++ topk says "selected index k out of range", its Python meta kernel "k not in
    # range" (calc.verify.meta_kernels picks the first where it can)
    with pytest.raises(RuntimeError, match=r"k (out of|not in) range"):
        hf_reference.count(config, 4)
    assert hf_config_from_spec(spec)["model_type"] == "deepseek_v2"


# ---- the counter's switches ----------------------------------------------------------------
TINY_MOE = {"model_type": "mixtral", "vocab_size": 100, "hidden_size": 64,
            "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2}


def test_batched_mm_counts_exactly_top_k_experts_per_token():
    total, by_operator = hf_reference.hf_forward_flops(TINY_MOE, 16)
    attention = 2 * 16 * 16 * 4 * (16 + 16) * 2  # QKᵀ and AV: 2·T²·h·(d_qk + d_v), 2 layers
    experts = 2 * 16 * 2 * 3 * 64 * 96 * 2  # 2 FLOPs × T × top-k × 3 matrices × d × d_e × L
    assert by_operator["aten.bmm"] == attention + experts
    assert total == calc.count_flops(spec_from_hf_config(TINY_MOE), 16, "full").forward * 16


def test_default_grouped_mm_loses_the_experts():
    """Why hf_reference asks for batched_mm: FlopCounterMode has no formula for grouped_mm."""
    config = transformers.AutoConfig.for_model(**TINY_MOE)
    with torch.device("meta"):  # grouped_mm wants bf16; the default float32 refuses to run
        model = transformers.AutoModelForCausalLM.from_config(
            config, attn_implementation="eager", dtype=torch.bfloat16)
    total, by_operator = hf_reference.forward_flops(model, 16)
    assert by_operator["aten.bmm"] == 2 * 16 * 16 * 4 * (16 + 16) * 2  # attention only
    assert total < hf_reference.hf_forward_flops(TINY_MOE, 16)[0]


def test_the_packed_sequence_check_needs_the_guard_on_meta():
    """transformers' find_packed_sequence_indices reads a value (Tensor.item) meta lacks."""
    model = hf_reference.build(released("gpt2", n_layer=1))
    ids = torch.zeros(1, 8, dtype=torch.long, device="meta")
    with pytest.raises(RuntimeError, match="meta"), torch.no_grad(), \
            FlopCounterMode(display=False):
        model(input_ids=ids, use_cache=False)
    assert hf_reference.forward_flops(model, 8)[0] > 0  # with the guard


def test_parameters_by_module_count_a_tied_head_once():
    by_module = hf_reference.parameters_by_module(hf_reference.build(released("gpt2")))
    assert "lm_head" not in by_module  # tied to transformer.wte
    assert by_module["transformer.wte"] == 50257 * 768
    assert by_module["transformer.h.attn.c_attn"] == 12 * (768 * 3 * 768 + 3 * 768)
    assert sum(by_module.values()) == 124_439_808


# ---- the Llama-shaped, rotary LayerNorm and GPT types (tests/hf_family_strategies.py) --------
FAMILY_VARIANTS = {
    # Squared ReLU in Nemotron (LayerNorm1P, GQA) and Arcee (RMSNorm, plain MLP).
    "nemotron": (None, {"model_type": "nemotron", "num_key_value_heads": 8, "hidden_act": "relu2",
                        "num_hidden_layers": 2, "attention_bias": True}),
    "arcee": (None, {"model_type": "arcee", "num_hidden_layers": 2, "mlp_bias": True}),
    "persimmon without qk norms": ("persimmon-8b-base", {"qk_layernorm": False,
                                                         "num_hidden_layers": 2}),
    "phi qk_layernorm": ("phi-2", {"qk_layernorm": True, "num_hidden_layers": 2}),
    "command r+ qk norm": ("command-r-08-2024", {"use_qk_norm": True, "num_hidden_layers": 2}),
    "stablelm parallel": ("stablelm-2-1_6b", {"use_parallel_residual": True,
                                              "num_hidden_layers": 2}),
    "gpt_bigcode multi-head": ("santacoder", {"multi_query": False, "n_layer": 2}),
    "starcoder2 no window": ("starcoder2-3b", {"sliding_window": None, "num_hidden_layers": 2}),
    "olmo biases, GQA, clip_qkv": ("olmo-1b-hf", {"attention_bias": True, "clip_qkv": 8.0,
                                                   "num_key_value_heads": 4, "head_dim": 64,
                                                   "num_hidden_layers": 2}),
    "apertus gelu, biases, head_dim": ("apertus-8b-2509", {
        "hidden_act": "gelu", "attention_bias": True, "head_dim": 64, "num_hidden_layers": 2}),
    "nanochat biases, GQA, head_dim": ("nanochat-d32", {
        "attention_bias": True, "num_key_value_heads": 4, "head_dim": 64, "hidden_act": "gelu",
        "num_hidden_layers": 2}),
    "granite_swa biases, NoPE layers, default layer_types": ("granite-swash-2b", {
        "attention_bias": True, "mlp_bias": True, "layer_types": None, "num_hidden_layers": 5,
        "layer_rope_theta": [0.0, 10000.0, 0.0, 10000.0, 0.0]}),
    "minicpm3 q_lora off": ("minicpm3-4b", {"q_lora_rank": None, "attention_bias": True,
                                            "num_hidden_layers": 2}),
}


@pytest.mark.parametrize("name", FAMILY_VARIANTS)
def test_family_variants_match_transformers(name):
    base, changes = FAMILY_VARIANTS[name]
    config = released(base, **changes) if base else changes
    assert_matches(spec_from_hf_config(config), config, 32)


@st.composite
def _family_configs(draw) -> dict:
    model_type = draw(st.sampled_from(FAMILY_TYPES))
    return {"model_type": model_type, "vocab_size": draw(st.integers(1, 50)),
            **draw(family_config(model_type, MIN_WINDOW)),
            "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_family_configs())
def test_random_family_configs_match_transformers_and_export_back(config):
    """These readers against transformers, and their specs written back as a config that reads
    the same (each type's writer, or for a type without one an earlier writer's)."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert shape(spec_from_hf_config(hf_config_from_spec(spec))) == shape(spec)


# ---- the gate of one value per attention head (attention.output_gate_per "head") ----------
@st.composite
def _lfm3_configs(draw) -> dict:
    return {"model_type": "lfm3", "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **draw(STRATEGIES["lfm3"]("lfm3"))}


@one_feature
@given(_lfm3_configs())
def test_random_lfm3_configs_match_transformers_and_export_back(config):
    """LFM3's g_proj (d → heads, no bias, whatever attention_bias says), its sliding, full and
    conv layers and its sandwich norms against transformers, and back through lfm3's writer."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if spec.attention.output_gate and spec.n_attention_layers:
        assert exported["model_type"] == "lfm3"  # no other writer holds a per-head gate


# ---- attention layers of one kind with head shapes of their own (attention.kind_shapes) -------
@st.composite
def _laguna_configs(draw) -> dict:
    return {"model_type": "laguna", "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **draw(STRATEGIES["laguna"]("laguna"))}


def _assert_laguna_active(spec: calc.ModelSpec, config: dict) -> None:
    """Active parameters through transformers: the model built with only top-k experts per
    MoE layer has every weight a token runs through, less the router's rows (weight and
    e_score_correction_bias) of the other experts, which calc counts as active."""
    moe = spec.moe
    if moe is None:
        assert calc.count_params(spec).active == calc.count_params(spec).total
        return
    top = hf_reference.count({**config, "num_experts": moe.top_k}, 1, "meta").params
    router_rows = spec.n_moe_layers * (moe.n_experts - moe.top_k) * (spec.d_model + 1)
    assert calc.count_params(spec).active == top + router_rows


LAGUNA_XS2_SHAPE = {"model_type": "laguna", "hidden_size": 64, "num_hidden_layers": 8,
                    "num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 8,
                    "num_attention_heads_per_layer": [6, 8, 8, 8, 6, 8, 8, 8],
                    "layer_types": ["full_attention"] + ["sliding_attention"] * 3
                    + ["full_attention"] + ["sliding_attention"] * 3,
                    "sliding_window": MIN_WINDOW, "intermediate_size": 96, "num_experts": 8,
                    "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                    "shared_expert_intermediate_size": 16, "vocab_size": 64, **_NO_TOKENS}


@pytest.mark.parametrize("config", [{"model_type": "laguna"}, LAGUNA_XS2_SHAPE],
                         ids=["default", "xs2_shape"])
def test_laguna_matches_transformers(config):
    """Laguna's default config (33,189,975,808 parameters) and a small one with
    Laguna-XS.2's layout, a full layer then three sliding ones with more query heads
    (num_attention_heads_per_layer [48, 64, 64, 64] with those layer_types in the trimmed
    Laguna-XS config of ollama/ollama x/models/laguna/laguna_test.go, TestParseConfigLagunaXS;
    no verbatim config.json of poolside/Laguna-XS.2 was found): parameters, active parameters
    and forward FLOPs."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW + 4)  # longer than the window: it bites
    _assert_laguna_active(spec, config)
    if config is LAGUNA_XS2_SHAPE:
        assert spec.attention.kind_shapes["local"].n_heads == 8
        assert spec.heads_of("global")[0] == 6


@one_feature
@given(_laguna_configs())
def test_random_laguna_configs_match_transformers_and_export_back(config):
    """Laguna's query heads per attention kind (attention.kind_shapes), its g_proj per head or
    per channel, the router's bias parameter and the ungated shared expert against
    transformers, its active parameters, and back through laguna's writer."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    _assert_laguna_active(spec, config)
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if spec.attention.kind_shapes:
        assert exported["model_type"] == "laguna"  # no other writer holds kind_shapes


# ---- value heads narrower than the keys, sinks on one kind (MiMo-V2-Flash) -----------------
@st.composite
def _mimo_configs(draw) -> dict:
    return {"model_type": "mimo_v2_flash", "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **draw(STRATEGIES["mimo_v2_flash"]("mimo_v2_flash"))}


def _assert_top_k_active(spec: calc.ModelSpec, config: dict, experts_key: str) -> None:
    """Active parameters through transformers: the model built with only top-k experts per
    MoE layer has every weight a token runs through, less the router's rows of the other
    experts, which calc counts as active (MiMo-V2-Flash's routing bias is a buffer)."""
    moe = spec.moe
    if moe is None:
        assert calc.count_params(spec).active == calc.count_params(spec).total
        return
    # built only: a router of fewer than two experts cannot run its group top-2
    top = sum(p.numel() for p in hf_reference.build({**config, experts_key: moe.top_k})
              .parameters())
    router_rows = spec.n_moe_layers * (moe.n_experts - moe.top_k) * spec.d_model
    assert calc.count_params(spec).active == top + router_rows


# The released geometry at two layers' depth and a small width: layer 0 full and dense, the
# rest sliding and MoE, in the hub file's own names (hybrid_layer_pattern, moe_layer_freq,
# swa_*, add_*_attention_sink_bias, sliding_window_size), which MiMoV2FlashConfig ignores and
# calc checks against what it builds.
MIMO_SHAPE = {"model_type": "mimo_v2_flash", "hidden_size": 64, "num_hidden_layers": 3,
              "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 12,
              "v_head_dim": 8, "swa_num_attention_heads": 8, "swa_num_key_value_heads": 4,
              "swa_head_dim": 12, "swa_v_head_dim": 8, "hybrid_layer_pattern": [0, 1, 1],
              "moe_layer_freq": [0, 1, 1], "add_swa_attention_sink_bias": True,
              "add_full_attention_sink_bias": False, "sliding_window_size": MIN_WINDOW - 1,
              "intermediate_size": 96, "n_routed_experts": 8, "num_experts_per_tok": 2,
              "moe_intermediate_size": 16, "vocab_size": 64, **_NO_TOKENS}


@pytest.mark.parametrize("config", [{"model_type": "mimo_v2_flash"}, MIMO_SHAPE],
                         ids=["default", "hub_names"])
def test_mimo_v2_flash_matches_transformers(config):
    """MiMoV2FlashConfig's defaults (XiaomiMiMo/MiMo-V2-Flash's shape: 308,778,768,832
    parameters, 15,445,924,288 active) and a small model in the released file's names:
    parameters, active parameters and forward FLOPs."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW + 4)  # longer than the window: it bites
    _assert_top_k_active(spec, config, "n_routed_experts")
    assert spec.head_dim_v < spec.head_dim_qk and spec.sinks_of("local")
    assert not spec.sinks_of("global")
    assert spec.heads_of("local")[1] == 2 * spec.heads_of("global")[1]


@one_feature
@given(_mimo_configs())
def test_random_mimo_v2_flash_configs_match_transformers_and_export_back(config):
    """MiMo-V2-Flash's value width, the sliding layers' doubled key/value heads and sinks, the
    MoE placement against transformers, its active parameters, and back through its writer."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    _assert_top_k_active(spec, config, "n_routed_experts")
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if spec.head_dim_v != spec.head_dim_qk or "local" in spec.attention_kinds:
        assert exported["model_type"] == "mimo_v2_flash"  # no other writer holds them


# ---- differential attention (DiffLlama) -----------------------------------------------------
def test_diffllama_default_matches_transformers_as_it_runs():
    """DiffLlamaConfig's defaults: 1,204,885,504 parameters (4 λ vectors of 64 per layer, the
    head norm without weights), and the forward FLOPs transformers counts, which are calc's
    with each QKᵀ map computed a second time (hf_implementation); calc's own count has one."""
    config = {"model_type": "diffllama"}
    spec = spec_from_hf_config(config)
    # transformers' count and forward exactly: the default config's test
    assert calc.count_params(spec).total == 1_204_885_504
    assert calc.count_params(spec).components["attention/lambda"] == 16 * 4 * 64
    as_run, changed = transformers_flops(spec, config, 16)
    assert changed == ["DiffLlama: each QKᵀ map computed twice"]
    assert as_run - calc.count_flops(spec, 16, "full").forward * 16 == 16 * 2 * 32 * 64 * 16 ** 2


@one_feature
@given(st.builds(dict, STRATEGIES["diffllama"]("diffllama"), vocab_size=st.integers(1, 50)))
def test_random_diffllama_configs_match_transformers_and_export_back(config):
    """DiffLlama's λ vectors, paired heads and value halves, biases and head widths against
    transformers, and back through diffllama's writer (no other writer holds differential
    attention)."""
    config = {"model_type": "diffllama", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, "diffllama"), MIN_WINDOW)


# ---- the last layer's own W_O bias (GPT-NeoX-Japanese) ----------------------------------------
def test_gpt_neox_japanese_default_matches_transformers():
    """GPTNeoXJapaneseConfig's defaults (the gpt-neox-japanese-2.7b shape): 2,598,837,760
    parameters, of which dense_bias is hidden_size values on the last layer alone (a bias costs
    no FLOPs)."""
    config = {"model_type": "gpt_neox_japanese"}
    spec = spec_from_hf_config(config)
    assert spec.attention.last_layer_out_bias and not spec.attention.out_bias
    counts = calc.count_params(spec)
    assert counts.total == 2_598_837_760  # transformers' too: the default config's test
    assert counts.components["attention/o"] == 32 * 2560 * 2560 + 2560
    # without the last layer's bias, calc's count is hidden_size short of transformers'
    plain = spec.updated(**{"attention.last_layer_out_bias": False})
    assert counts.total - calc.count_params(plain).total == 2560


@one_feature
@given(st.builds(dict, STRATEGIES["gpt_neox_japanese"]("gpt_neox_japanese"),
                 vocab_size=st.integers(1, 50)))
def test_random_gpt_neox_japanese_configs_match_transformers_and_export_back(config):
    """The last layer's dense_bias, the FFN's multiple and partial RoPE against transformers,
    and back through gpt_neox_japanese's writer (no other writer holds the last layer's own
    bias)."""
    config = {"model_type": "gpt_neox_japanese", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, "gpt_neox_japanese"), MIN_WINDOW)


# ---- ModernBERT's decoder: a prediction head, layer 0 without its attention norm -------------
@one_feature
@given(st.builds(dict, STRATEGIES["modernbert-decoder"]("modernbert-decoder"),
                 vocab_size=st.integers(1, 50)))
def test_random_modernbert_decoder_configs_match_transformers_and_export_back(config):
    """The prediction head (dense with classifier_bias, a LayerNorm), the embedding's norm,
    layer 0's missing attn_norm, the fused GLU Wi, every bias switch and the full/sliding
    layers against transformers, and back through modernbert-decoder's writer (no other writer
    holds a prediction head)."""
    config = {"model_type": "modernbert-decoder", **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, "modernbert-decoder"), MIN_WINDOW)


# ---- ZAYA1: CCA, an MLP router carrying its state, learned residual scales ------------------
@one_feature
@given(st.builds(dict, STRATEGIES["zaya"]("zaya"), vocab_size=st.integers(1, 50)))
def test_random_zaya_configs_match_transformers_and_export_back(config):
    """CCA's two convolutions of any kernel (1: no padding), its split value projections and
    temperatures, the router's down projection, norm, MLP and skip class, the EDA scale on
    every layer but the first, the residual scales and the embedding's, full and sliding layers
    and every bias against transformers, whose CCA pads its depthwise conv and runs
    v_proj_delayed on a zero token (calc.verify.hf_implementation); and back through zaya's
    writer (no other writer holds CCA)."""
    config = {"model_type": "zaya", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, "zaya"), MIN_WINDOW)


def test_zaya_cache_states_are_calcs_state_cache():
    """transformers' cache after a forward of ZAYA1 (CPU): each CCA layer's conv state, the
    last (k_a − 1) + (k_b − 1) inputs over the query and key channels, and its recurrent state,
    the last token's delayed value (h_kv·d_h/2), beside the keys and values: calc's state cache
    (calc.formulas.inference), constant in the context."""
    config = {"model_type": "zaya", **_NO_TOKENS, "vocab_size": 64, "hidden_size": 32,
              "head_dim": 8, "num_attention_heads": 4, "num_key_value_heads": 2,
              "num_hidden_layers": 3, "num_experts": 3, "moe_intermediate_size": 16,
              "router_hidden_size": 8, "cca_time0": 3, "cca_time1": 2}
    model = hf_reference.build(config, device="cpu")
    cache = model(input_ids=torch.zeros(1, 5, dtype=torch.long), use_cache=True).cache
    states = sum(cache.get_conv_state(i, state_idx=0).numel()
                 + cache.get_recurrent_state(i, state_idx=0).numel() for i in range(3))
    assert states == 3 * ((2 + 1) * (4 + 2) * 8 + 2 * 8 // 2)
    spec = spec_from_hf_config(config)
    for context in (16, 64):
        served = calc.infer(spec, gpu="h100", context=context, batch=1).inference
        assert served.state_cache_bytes == 2 * states  # bf16


# ---- CPM-Ant: a bucketed score bias, segment and prompt embeddings --------------------------
@one_feature
@given(st.builds(dict, STRATEGIES["cpmant"]("cpmant"), vocab_size=st.integers(1, 50)))
def test_random_cpmant_configs_match_transformers(config):
    """The bias table (segment_types² + buckets rows × heads, one for the model), the segment
    table, the prompt rows beside the vocabulary and the head over the vocabulary alone, heads
    of dim_head, against transformers; its forward runs the prompt positions through the
    layers (calc.verify.hf_implementation); and back through cpmant's writer (no other
    writer holds a bucketed bias)."""
    config = {"model_type": "cpmant", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, "cpmant"), MIN_WINDOW)


# ---- Doge: the dynamic mask, product-key experts, residual scales ------------------------------
@one_feature
@given(st.builds(dict, STRATEGIES["doge"]("doge"), vocab_size=st.integers(1, 50)))
def test_random_doge_configs_match_transformers_and_export_back(config):
    """dt_proj and A on every attention layer, keep_window_size below T (transformers masks the
    keys it did not select, calc.verify.hf_implementation) and above it, the residual scales,
    every bias switch, and with is_moe the product-key router and the E × d down and up
    embeddings beside the shared MLP, against transformers; and back through doge's writer (no
    other writer holds the dynamic mask)."""
    config = {"model_type": "doge", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, "doge"), MIN_WINDOW)


def test_doge_default_with_and_without_is_moe_matches_transformers():
    """DogeConfig's default (Doge-320M's shape) and the same with is_moe: 16384 product-key
    experts, 64 a token, beside the 2048-wide shared MLP; active = total − L·(E − k)·2d."""
    dense = spec_from_hf_config({"model_type": "doge"})
    counts = calc.count_params(dense)
    assert counts.total == counts.active == 403_055_872
    moe = spec_from_hf_config({"model_type": "doge", "is_moe": True})
    counts = calc.count_params(moe)
    assert counts.total == 1_485_186_304
    assert counts.active == counts.total - 32 * (16384 - 64) * 2 * 1024 == 415_638_784
    assert counts.components["moe/router"] == 32 * 1024 * 2 * 128  # 2·⌊√16384⌋ sub-keys
    assert_matches(moe, {"model_type": "doge", "is_moe": True}, 16)


# ---- Inkling: a relative bias projected per token, residual short convolutions ---------------
@one_feature
@given(st.builds(dict, STRATEGIES["inkling_text"]("inkling_text"), vocab_size=st.integers(1, 50)))
def test_random_inkling_configs_match_transformers_and_export_back(config):
    """The sliding layers' own heads, r_proj and each layer's bank (the window wide on the
    sliding layers) and its product per token, the four residual convolutions (transformers
    over T + k − 1 outputs), the router over the routed and shared experts with its global
    scale and buffer, the dense MLP's scale, the embedding's norm, against transformers at a
    T past some windows and extents; and back through inkling_text's writer (no other writer
    holds these parts)."""
    config = {"model_type": "inkling_text", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, "inkling_text"), MIN_WINDOW)


@one_feature
@given(STRATEGIES["inkling2_text"]("inkling2_text"))
def test_random_inkling2_configs_match_transformers_and_export_back(config):
    """Inkling 2's parts against transformers at a T past some windows and extents: the
    attention residuals over blocks (the stored blocks' count by layer, three queries and
    q/k/v norms on the full layers), the full layers' per-token convolution taps (element-wise
    in transformers), the projected sinks, the query and relative-state scales, the own
    output gate, the routed experts alone and the head of unpadded_vocab_size rows; and back
    through inkling2_text's writer."""
    config = {"model_type": "inkling2_text", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, "inkling2_text"), MIN_WINDOW)


def test_inkling2_default_is_exact_and_its_wrapper_counts_the_language_model():
    """Inkling2TextConfig's default (48 layers, 384 experts of which 8 a token): parameters,
    active parameters and the parts' counts; Inkling2Config (model_type inkling2) wraps it,
    its head untied."""
    spec = spec_from_hf_config({"model_type": "inkling2_text"})
    counts = calc.count_params(spec)
    assert (counts.total, counts.active) == (593_718_478_848, 18_880_727_040)
    assert counts.components["lm_head"] == 200_058 * 4608  # unpadded_vocab_size rows
    # 47 attention inputs (3 queries on the 8 full layers), 48 FFN inputs, the final one
    assert counts.components["block_residual"] == (39 + 3 * 8 + 48 + 1 + 2 * 8) * 4608
    text = {"model_type": "inkling2_text", "hidden_size": 8, "num_hidden_layers": 3,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
            "swa_num_attention_heads": 2, "swa_num_key_value_heads": 2, "swa_head_dim": 4,
            "moe_intermediate_size": 4, "n_routed_experts": 2, "num_experts_per_tok": 1,
            "vocab_size": 16, "unpadded_vocab_size": 12, **_NO_TOKENS}
    wrapped = calc.spec_from_hf_config({"model_type": "inkling2", "text_config": text})
    assert not wrapped.tie_embeddings
    assert calc.count_params(wrapped).total == hf_reference.count(text, 4).params


def test_inkling_wrapper_counts_its_language_model():
    """InklingConfig (model_type inkling_mm_model) wraps inkling_text: calc counts the text
    model, the head untied whatever the flag (InklingForConditionalGeneration ties none), as
    transformers' text model with its lm_head has it."""
    text = {"model_type": "inkling_text", "hidden_size": 8, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
            "swa_num_attention_heads": 2, "swa_num_key_value_heads": 2, "swa_head_dim": 4,
            "intermediate_size": 8, "moe_intermediate_size": 4, "n_routed_experts": 2,
            "num_experts_per_tok": 1, "vocab_size": 16, **_NO_TOKENS}
    wrapped = calc.spec_from_hf_config({"model_type": "inkling_mm_model",
                                        "tie_word_embeddings": True, "text_config": text})
    assert not wrapped.tie_embeddings
    assert calc.count_params(wrapped).total == hf_reference.count(text, 4).params


# ---- looped layers (calc.spec.loop): HRM-Text's stacks, Dory's nGPT --------------------------
@pytest.mark.parametrize("model_type", ["hrm_text", "dory"])
@one_feature
@given(data=st.data())
def test_random_looped_configs_match_transformers(model_type, data):
    """Stored layers' weights once, their products once per pass, against transformers:
    HRM-Text's two stacks (and z_L_init, d frozen values) over H_cycles × (L_cycles + 1) stack
    passes; Dory's input, recurrent and output sections (the released layout's attention and
    mlp blocks halved, either cache mode) with nGPT's scale vectors (lambda_1, lambda_2, sqk,
    s_gate, suv_gate, suv_up, logit_scale); and back through the type's own writer (no other
    writer holds a loop)."""
    config = {"model_type": model_type, **_NO_TOKENS,
              "vocab_size": data.draw(st.integers(1, 50)),
              **data.draw(STRATEGIES[model_type](model_type))}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    assert_matches(spec, exported_as(spec, model_type), MIN_WINDOW)


# ---- a norm over each MoE block's output (A.X-K1) ----------------------------------------------
def test_axk1_default_is_the_model_cards_size():
    """AXK1Config's defaults (A.X-K1's shape: 61 layers, the first dense, 192 routed experts and
    one shared): 518,983,052,288 parameters and 32,779,332,608 active, the model card's "519B
    total, 33B active" (skt/A.X-K1; transformers' count exactly, the default config's test);
    post_mlp_layernorm is d values on each of the 60 MoE layers and none on the dense one."""
    config = {"model_type": "axk1"}
    spec = spec_from_hf_config(config)
    assert spec.moe.output_norm and spec.moe_layers == (False,) + (True,) * 60
    counts = calc.count_params(spec)
    assert counts.total == 518_983_052_288
    assert counts.active == 32_779_332_608
    assert counts.components["moe/norm"] == 60 * 7168
    # the DeepSeek-V3 reading of the same fields is the norms short
    plain = spec.updated(**{"moe.output_norm": False})
    assert counts.total - calc.count_params(plain).total == 60 * 7168


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # n_shared_experts 0
@one_feature
@given(st.builds(dict, STRATEGIES["axk1"]("axk1"), vocab_size=st.integers(1, 50)))
def test_random_axk1_configs_match_transformers_and_export_back(config):
    """A.X-K1's MoE placement (mlp_layer_types, or first_k_dense_replace and moe_layer_freq) and
    its norm on the MoE blocks against transformers, and back through axk1's writer (no other
    writer holds moe.output_norm)."""
    config = {"model_type": "axk1", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    exported = _exported(spec)
    if spec.moe is None:  # every layer dense: deepseek_v3's writer holds it first
        return
    assert exported["model_type"] == "axk1"
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    assert_matches(spec, exported, MIN_WINDOW)


# ---- an output gate from the query latent, gated norms (A.X-K2) -------------------------------
def test_axk2_default_matches_transformers():
    """AXK2Config's defaults (A.X-K2-Light's shape: 48 layers, the first dense, 128 routed
    experts): 20,314,494,976 parameters, transformers' count exactly, and 2,572,589,056 active,
    its count less the 120 idle experts of each MoE layer. q_gate_proj 2·384 → 32·(96 + 64) is
    calc's W_UQ and W_G side by side; the gated norms are fc1 and fc2 (2048 × 16 each) on the
    48 input norms and the 47 MoE layers' post-attention norms."""
    config = {"model_type": "axk2"}
    spec = spec_from_hf_config(config)
    att = spec.attention
    assert att.mla.latent_gate and att.output_gate and spec.norm.gate_rank == 16
    counts = calc.count_params(spec)
    counted = hf_reference.count(config, 16)
    assert counts.total == counted.params == 20_314_494_976
    experts = counted.params_by_module["model.layers.mlp.experts"]
    assert counts.active == counted.params - experts * (128 - 8) // 128 == 2_572_589_056
    modules = counted.params_by_module
    assert (counts.components["attention/q"] + counts.components["attention/gate"]
            == sum(modules[f"model.layers.self_attn.{m}"]
                   for m in ("q_a_proj", "q_a_layernorm", "q_gate_proj")))
    assert counts.components["attention/gate"] == 48 * 2 * 384 * 32 * 64
    assert counts.components["norm_gates"] == sum(
        modules[f"model.layers.{norm}.mlp.{fc}"]
        for norm in ("input_layernorm", "post_attention_layernorm") for fc in ("fc1", "fc2"))
    # (its forward FLOPs: the default config's test)
    # without the features: DeepSeek-V3.2's q_b_proj and ungated norms
    plain = spec.updated(**{"attention.mla.latent_gate": False, "attention.output_gate": False,
                            "norm.gate_rank": None})
    assert counts.total - calc.count_params(plain).total == 48 * (
        384 * 32 * 96 + 2 * 384 * 32 * 64) + 95 * 2 * 2048 * 16


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # n_shared_experts 0
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.builds(dict, STRATEGIES["axk2"]("axk2"), vocab_size=st.integers(1, 50)))
def test_random_axk2_configs_match_transformers_and_export_back(config):
    """A.X-K2's latent gate, gated norms, indexer and MoE placement against transformers, and
    back through axk2's writer (no other writer holds attention.mla.latent_gate)."""
    config = {"model_type": "axk2", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    if spec.moe is None:  # every FFN dense: the DSA writers need their MoE
        return
    assert_matches(spec, exported_as(spec, "axk2"), MIN_WINDOW)


# ---- sliding layers with latent shapes of their own (dots3) -----------------------------------
def test_dots3_default_matches_transformers():
    """Dots3NoteTextConfig's defaults (dots-studio/dots3-note-prev's shape: 46 layers, 13
    indexed ones with 128 heads of 128 + 64 and ranks 1024/512, 33 sliding ones with 64 heads
    of 192 + 64 and ranks 1024/1024, the first FFN dense, 256 routed experts and one shared
    of 1536): 279,551,718,016 parameters, transformers' count exactly, and 16,254,284,416
    active, its count less the 248 idle experts of each of the 45 MoE layers."""
    config = {"model_type": "dots3_note_text"}
    spec = spec_from_hf_config(config)
    att = spec.attention
    assert spec.attention_kinds.count("local") == 33 and spec.n_indexer_layers == 13
    assert att.kind_shapes["local"].mla.kv_lora_rank == 1024 and att.mla.kv_lora_rank == 512
    counts = calc.count_params(spec)
    counted = hf_reference.count(config, 16)
    assert counts.total == counted.params == 279_551_718_016
    experts = sum(value for key, value in counted.params_by_module.items()
                  if key.endswith("mlp.experts"))
    assert counts.active == counted.params - experts * (256 - 8) // 256 == 16_254_284_416
    # (its forward FLOPs: the default config's test)
    # each sliding layer's attention as its own shapes give it (q_a, q_b, kv_a, kv_b, o, the
    # three norms, g_proj), 33 of them
    d, h, r_q, r_kv, nope, rope, v = 5120, 64, 1024, 1024, 192, 64, 128
    sliding = (d * r_q + r_q + r_q * h * (nope + rope) + d * (r_kv + rope) + r_kv + rope
               + r_kv * h * (nope + v) + h * v * d + d * h)
    plain = spec.updated(**{"attention.kind_shapes": {}})
    assert counts.total - calc.count_params(plain).total == 33 * (sliding - (
        d * 1024 + 1024 + 1024 * 128 * 192 + d * (512 + 64) + 512 + 64 + 512 * 128 * 256
        + 128 * 128 * d + d * 128))


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.builds(dict, STRATEGIES["dots3_note_text"]("dots3_note_text"),
                 vocab_size=st.integers(1, 50)))
def test_random_dots3_configs_match_transformers_and_export_back(config):
    """dots3's sliding shapes, indexed or full global layers, rope-key norm, per-head gate and
    MoE placement against transformers, and back through its writer (no other writer holds
    a kind's own latent attention)."""
    config = {"model_type": "dots3_note_text", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    if spec.moe is None:  # every FFN dense: dots3's writer needs its MoE
        return
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    assert_matches(spec, exported, MIN_WINDOW)


# ---- a bias per head on the output gate (Beam) -------------------------------------------------
def test_beam_default_is_the_checkpoints_size():
    """BeamConfig's defaults (the shape of reflection/Beam-1.0-501B-A23B, whose name gives 501B
    total and 23B active): 501,267,599,808 parameters, 23,431,516,608 active (transformers'
    count exactly, the default config's test); each layer's gate is gate_proj 5120 × 48·128
    and gate_bias's 48 values; full layers every sixth (and the last) without RoPE, the first
    3 FFNs dense."""
    config = {"model_type": "beam"}
    spec = spec_from_hf_config(config)
    att = spec.attention
    assert att.output_gate_bias and att.output_gate_per == "channel"
    assert spec.attention_kinds.count("nope") == 9 and spec.moe_layers.count(False) == 3
    counts = calc.count_params(spec)
    assert counts.total == 501_267_599_808
    assert counts.active == 23_431_516_608
    assert counts.components["attention/gate"] == 52 * (5120 * 48 * 128 + 48)
    # a per-channel gate without the per-head bias would carry no bias at all here
    plain = spec.updated(**{"attention.output_gate_bias": False})
    assert counts.total - calc.count_params(plain).total == 52 * 48
    biased = spec_from_hf_config({"model_type": "beam", "attention_bias": True})
    assert (calc.count_params(biased).components["attention/gate"]
            == counts.components["attention/gate"])


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")
@one_feature
@given(st.builds(dict, STRATEGIES["beam"]("beam"), vocab_size=st.integers(1, 50)))
def test_random_beam_configs_match_transformers_and_export_back(config):
    """Beam's gate bias, its sliding, RoPE and NoPE layers, dense and MoE layers and biases
    against transformers, and back through beam's writer (no other writer holds
    attention.output_gate_bias)."""
    config = {"model_type": "beam", **_NO_TOKENS, **config}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    if spec.moe is None:  # every FFN dense: Beam's writer needs its MoE
        return
    assert_matches(spec, exported_as(spec, "beam"), MIN_WINDOW)


# ---- Kimi Delta Attention beside MLA: low-rank gates (kimi_linear), full-rank (bailing_hybrid) -
@pytest.mark.parametrize("model_type", ["kimi_linear", "bailing_hybrid"])
@one_feature
@given(data=st.data())
def test_random_kda_configs_match_transformers_and_export_back(model_type, data):
    """KDA's q/k/v/b projections, its decay and output gates (Kimi Linear's low-rank f_a/f_b
    and g_a/g_b, Ling 3's full-rank f_proj and g_proj), per-channel dt_bias and chunked rule,
    the MLA layers (Ling 3's with a sigmoid gate per head) and the MoE placement against
    transformers, past one 64-token chunk of the rule; and back through the type's own writer
    (no other writer holds its KDA gates)."""
    config = {"model_type": model_type, **_NO_TOKENS,
              "vocab_size": data.draw(st.integers(1, 50)),
              **data.draw(STRATEGIES[model_type](model_type))}
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, 70)
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if spec.layer_counts["deltanet"]:
        assert exported["model_type"] == model_type


# ---- MiniMax-M3's text model, its block-sparse layers beside full ones ------------------------
@one_feature
@given(st.builds(dict, STRATEGIES["minimax_m3_vl_text"]("minimax_m3_vl_text"),
                 vocab_size=st.integers(1, 50)))
def test_random_minimax_m3_configs_match_transformers(config):
    """GQA with per-head QK norms, block-sparse layers (the indexer's projections, its scores
    over every key, attention over the selected blocks' keys: transformers masks the rest)
    beside full ones, the sigmoid-routed experts beside one shared MLP of its own width and
    the dense layers of theirs, placed by mlp_layer_types or moe_layer_freq, against
    transformers."""
    config = {"model_type": "minimax_m3_vl_text", **_NO_TOKENS, **config}
    assert_matches(spec_from_hf_config(config), config, 16)


def test_minimax_m3_released_layout_matches_transformers():
    """MiniMax-M3's released layout (its text_config as public repositories quote it, e.g.
    mlxcel's test_m3_config_parsing: the class's defaults but sparse_attention_config's
    sparse_attention_freq and moe_layer_freq, 0 on layers 0-2, 1 on 3-59): full attention and
    dense MLPs on the first three layers, block-sparse attention and experts after; at T = 2100,
    past the 16 blocks of 128 keys a query attends to, against transformers on meta."""
    freq = [0, 0, 0] + [1] * 57
    config = {"model_type": "minimax_m3_vl_text", "moe_layer_freq": freq,
              "max_position_embeddings": 1048576, "sparse_attention_config": {
                  "use_sparse_attention": True, "sparse_index_dim": 128,
                  "sparse_num_index_heads": 4, "sparse_topk_blocks": 16,
                  "sparse_block_size": 128, "sparse_init_block": 0, "sparse_local_block": 1,
                  "sparse_score_type": "max", "sparse_disable_index_value": freq,
                  "sparse_attention_freq": freq}}
    spec = spec_from_hf_config(config)
    indexer = spec.attention.indexer
    assert indexer is not None and indexer.dense_layers == (0, 1, 2)
    assert (indexer.n_heads, indexer.head_dim, indexer.topk, indexer.block_size) == (
        4, 128, 16, 128)
    counts = calc.count_params(spec)
    # 57 MoE layers of 128 experts, 4 a token, each 3 · 6144 · 3072
    assert counts.total == 426_174_565_632
    assert counts.active == counts.total - 57 * (128 - 4) * 3 * 6144 * 3072 == 25_962_466_560
    assert_matches(spec, config, 2100)


# ---- lightning attention beside softmax attention (minimax) ---------------------------------
@st.composite
def _minimax_configs(draw) -> dict:
    return {"model_type": "minimax", "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **draw(STRATEGIES["minimax"]("minimax"))}


@one_feature
@given(_minimax_configs(), st.integers(1, 11))
def test_random_minimax_configs_match_transformers_and_export_back(config, seq_len):
    """Lightning attention's qkv_proj, output gate, norm and out_proj, and its blocked form over
    whole and partial blocks (block_size 1, 3, 4 or 256), beside Mixtral's attention and experts,
    against transformers; and back through minimax's writer (no other writer holds lightning
    attention)."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, seq_len)
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if spec.layer_counts["lightning"]:
        assert exported["model_type"] == "minimax"


# ---- Gemma 3n: AltUp, LAuReL, per-layer embeddings, kv-shared layers ---------------------------
@one_feature
@given(st.builds(dict, STRATEGIES["gemma3n_text"]("gemma3n_text"), model_type=st.just(
    "gemma3n_text"), vocab_size=st.integers(1, 50), **{k: st.just(v) for k, v in
                                                       _NO_TOKENS.items()}))
def test_random_gemma3n_configs_match_transformers_and_export_back(config):
    """AltUp's streams (altup_num_inputs), LAuReL's rank, the per-layer embeddings and the last
    layers without keys and values of their own, with the Gaussian top-k on any layers,
    against transformers' Gemma3nForCausalLM: parameters (every one active: no experts) and
    forward FLOPs, and back through gemma3n_text's writer, the only one that holds its parts."""
    spec = spec_from_hf_config(config)
    assert spec.altup is not None and spec.laurel is not None
    assert_matches(spec, config, MIN_WINDOW + 4)
    counts = calc.count_params(spec)
    assert counts.active == counts.total
    exported_as(spec, "gemma3n_text")  # the same shape, so the same counts


# Gemma 3n E2B's language model: google/gemma-3n-E2B's config.json is gated (tests/test_hf.py,
# UNRELEASED). Google's slicing table (huggingface.co/datasets/google/gemma3n-slicing-configs,
# "Config for official E2B Model") gives it as E4B — Gemma3nTextConfig's defaults, whose
# docstring names google/gemma-3n-E4B — with 30 of its 35 layers (layers 20 to 24 skipped, so
# 10 of E4B's 15 kv-shared layers 20–34 remain) and every FFN 2048 × 4 wide.
GEMMA3N_E2B = {"model_type": "gemma3n_text", "num_hidden_layers": 30,
               "intermediate_size": [2048 * 4] * 30, "num_kv_shared_layers": 10}


def test_gemma3n_e4b_and_e2b_language_models():
    """E4B's language model is the default config (checked against transformers by
    test_an_empty_config_is_transformers_default_model); E2B's against Gemma3nForCausalLM at
    16 tokens. The totals: E4B 6,835,235,568 and E2B 4,435,182,688, each with a
    262,144 × L·256 per-layer table; every parameter active (no experts)."""
    e4b = calc.count_params(spec_from_hf_config({"model_type": "gemma3n_text"}))
    spec = spec_from_hf_config(GEMMA3N_E2B)
    e2b = calc.count_params(spec)
    assert (e4b.total, e2b.total) == (6_835_235_568, 4_435_182_688)
    assert e4b.components["per_layer_embeddings/table"] == 262_144 * 35 * 256
    assert e2b.components["per_layer_embeddings/table"] == 262_144 * 30 * 256
    assert (e4b.active, e2b.active) == (e4b.total, e2b.total)
    assert_matches(spec, GEMMA3N_E2B, 16)


# ---- Gemma 4: keys used as values, kv-shared layers, their double-wide MLP --------------------
@st.composite
def _gemma4_configs(draw) -> dict:
    model_type = draw(st.sampled_from(["gemma4_unified_text", "gemma4_text"]))
    return {"model_type": model_type, "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **draw(STRATEGIES[model_type](model_type))}


def _assert_gemma4_active(spec: calc.ModelSpec, config: dict) -> None:
    """Active parameters through transformers: Gemma 4 built with only top_k_experts experts
    has every weight a token runs through, less the router's rows and per_expert_scale values
    of the other experts, which calc counts as active (the router's)."""
    moe = spec.moe
    if moe is None:
        assert calc.count_params(spec).active == calc.count_params(spec).total
        return
    top = sum(p.numel() for p in hf_reference.build({**config, "num_experts": moe.top_k})
              .parameters())
    idle_router = spec.n_moe_layers * (moe.n_experts - moe.top_k) * (spec.d_model + 1)
    assert calc.count_params(spec).active == top + idle_router


@one_feature
@given(_gemma4_configs())
def test_random_gemma4_configs_match_transformers_and_export_back(config):
    """The full layers' own head width and KV heads, keys used as values there
    (attention_k_eq_v), the last layers without keys and values of their own
    (num_kv_shared_layers) and their MLP doubled (use_double_wide_mlp), gemma4_text's
    per-layer embeddings and MoE block beside the dense MLP (with their active parameters)
    against transformers' Gemma4UnifiedForCausalLM and Gemma4ForCausalLM, and back through
    gemma4_unified_text's writer (the first that holds them) where no writer lacks a part."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW + 4)
    _assert_gemma4_active(spec, config)
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if spec.moe is not None or spec.per_layer_embeddings is not None:
        assert exported["model_type"] == "gemma4_text"  # the only writer of its two parts
        assert_matches(spec, exported, MIN_WINDOW + 4)
    elif spec.attention.kv_shared_layers or spec.keys_are_values("global"):
        assert exported["model_type"] == "gemma4_unified_text"
        assert_matches(spec, exported, MIN_WINDOW + 4)


# ---- Gemma 4's drafters: the target's states and keys, the centroid-masked head --------------
@st.composite
def _gemma4_assistant_configs(draw) -> dict:
    model_type = draw(st.sampled_from(["gemma4_assistant", "gemma4_unified_assistant"]))
    return {"model_type": model_type, **draw(STRATEGIES[model_type](model_type))}


@one_feature
@given(_gemma4_assistant_configs())
def test_random_gemma4_assistant_configs_match_transformers(config):
    """pre_projection 2·backbone_hidden_size → d and post_projection back (drafter), kv-shared
    layers reading the target's keys (every layer, or the unified assistant's last ones), the
    centroid-masked head (use_ordered_embeddings: centroids d → C, then the top-k clusters'
    k·V/C head rows) against Gemma4AssistantForCausalLM and Gemma4UnifiedAssistantForCausalLM
    fed the target's states; active parameters are all of them (no experts); and back
    through the assistants' writers (gemma4_assistant's where its stricter text model holds
    the spec)."""
    spec = spec_from_hf_config(config)
    assert spec.drafter is not None
    assert (spec.centroid_head is not None) == config["use_ordered_embeddings"]
    assert calc.count_params(spec).active == calc.count_params(spec).total
    assert_matches(spec, config, MIN_WINDOW)
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if config["model_type"] == "gemma4_assistant":
        assert exported["model_type"] == "gemma4_assistant"


# ---- RWKV-4 (rwkv) -------------------------------------------------------------------------
@st.composite
def _rwkv_configs(draw) -> dict:
    return {"model_type": "rwkv", "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **draw(STRATEGIES["rwkv"]("rwkv"))}


@one_feature
@given(_rwkv_configs(), st.integers(1, 9))
def test_random_rwkv_configs_match_transformers_and_export_back(config, seq_len):
    """The time-mix's key, value, receptance, output, decay and bonus, both token shifts, the
    channel-mix's key, value and receptance, pre_ln on block 0 and ln_out, against
    transformers, with attention_hidden_size and intermediate_size given or derived; the WKV
    is element-wise in transformers (0 FLOPs); and back through rwkv's writer."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, seq_len)
    exported_as(spec, "rwkv")


# ---- Griffin's recurrent block beside local attention (recurrent_gemma) -----------------------
@st.composite
def _recurrent_gemma_configs(draw) -> dict:
    return {"model_type": "recurrent_gemma", "vocab_size": draw(st.integers(1, 50)),
            **_NO_TOKENS, **draw(STRATEGIES["recurrent_gemma"]("recurrent_gemma"))}


@one_feature
@given(_recurrent_gemma_configs(), st.integers(1, 9))
def test_random_recurrent_gemma_configs_match_transformers_and_export_back(config, seq_len):
    """linear_y, linear_x, the temporal conv (over T + k − 1 outputs in transformers), the
    block-diagonal gates, Λ and linear_out, beside sliding-window attention with a biased o_proj
    and a biased gated MLP at intermediate_size // 2, for any block_types, lru_width, head_dim
    and kv heads, against transformers (its RG-LRU element-wise: 0 FLOPs); and back through
    recurrent_gemma's writer."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, seq_len)
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if spec.layer_counts["griffin"]:
        assert exported["model_type"] == "recurrent_gemma"
        assert_matches(spec, exported, seq_len)


# ---- LongCat-Flash (longcat_flash): zero-computation experts, shortcut-connected MoE --------
@st.composite
def _longcat_configs(draw) -> dict:
    return {"model_type": "longcat_flash", "vocab_size": draw(st.integers(1, 50)),
            **_NO_TOKENS, **draw(STRATEGIES["longcat_flash"]("longcat_flash"))}


@one_feature
@given(_longcat_configs(), st.integers(1, 9))
def test_random_longcat_configs_match_transformers_and_export_back(config, seq_len):
    """Two latent-attention blocks and two dense MLPs per decoder layer beside one MoE whose
    router scores n_routed + zero_expert_num experts, against transformers on the meta device
    (its routing given calc's expected share of FFN experts, hf_reference._expected_choice), its
    zero experts' unread gate_up_proj rows named; and back through longcat_flash's writer."""
    spec = spec_from_hf_config(config)
    assert spec.moe is not None and spec.moe.shortcut
    assert_matches(spec, config, seq_len)
    exported_as(spec, "longcat_flash")


@one_feature
@given(_longcat_configs(), st.integers(1, 9))
def test_longcat_experts_on_meta_count_what_their_loop_runs_on_the_cpu(config, seq_len):
    """The meta device's stand-in for LongcatFlashExperts' loop (hf_reference._experts_on_meta)
    runs the products transformers' own loop runs on real tensors under the same routing,
    operator by operator."""
    meta, cpu = (hf_reference.count(config, seq_len, device) for device in ("meta", "cpu"))
    assert meta.forward_by_operator == cpu.forward_by_operator
    assert meta.forward == cpu.forward


def test_longcat_expected_routing_is_exact_and_data_independent():
    """The routing hf_reference gives transformers' LongCat router: every token exactly
    k·E/(E + E_0) FFN experts, each once, and the rest zero experts, whatever the scores."""
    from transformers.models.longcat_flash.modeling_longcat_flash import LongcatFlashTopkRouter

    config = transformers.AutoConfig.for_model(
        "longcat_flash", hidden_size=8, n_routed_experts=4, zero_expert_num=2, moe_topk=3)
    router = LongcatFlashTopkRouter(config)
    picked = hf_reference._expected_choice(router, torch.rand(7, 6))
    for row in picked.tolist():
        assert len(set(row)) == 3 and sum(e < 4 for e in row) == 2


# ---- xLSTM's mLSTM blocks (xlstm) ---------------------------------------------------------------
@st.composite
def _xlstm_configs(draw) -> tuple[dict, int]:
    """A random xlstm config and a sequence length: mode "inference" at any length (whole chunks
    chunkwise, the rest stepped), or "train" at whole chunks (transformers refuses others)."""
    config = {"model_type": "xlstm", "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
              **draw(STRATEGIES["xlstm"]("xlstm"))}
    if draw(st.booleans()):
        return config, draw(st.integers(1, 9))
    return {**config, "mode": "train"}, config["chunk_size"] * draw(st.integers(1, 2))


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_xlstm_configs())
def test_random_xlstm_configs_match_transformers_and_export_back(drawn):
    """q, k, v, the output gate, the input and forget gates with their biases, the head norm,
    out_proj and the SwiGLU FFN at its rounded width, for any factors, chunk size, weight mode
    and mode, against transformers (its mLSTM chunkwise over whole chunks and stepped on the
    rest); and back through xlstm's writer."""
    config, seq_len = drawn
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, seq_len)
    assert_matches(spec, exported_as(spec, "xlstm"), seq_len)


def test_xlstm_forward_is_the_chunkwise_form_over_whole_chunks():
    """At 3 tokens (all stepped: 4·d_k·d_v + 2·d_k per head and token as matmuls) and at 10
    (two chunks of 4 chunkwise, 2 stepped), FlopCounterMode's bmm count of transformers'
    forward is the hand count, and the whole forward differs from calc's token-by-token count
    by the mLSTM's part only."""
    config = {"model_type": "xlstm", "vocab_size": 11, "hidden_size": 32, "num_heads": 2,
              "num_hidden_layers": 2, "chunk_size": 4, **_NO_TOKENS}
    spec = spec_from_hf_config(config)
    layers, heads, dk, dv = 2, 2, 16 // 2, 32 // 2
    for t, chunked in ((3, 0), (10, 8)):
        counted = hf_reference.count(config, t)
        bmm = layers * heads * (t * 2 * (2 * dk * dv + dk) + chunked * 2 * 4 * (dk + dv))
        assert counted.forward_by_operator["aten.bmm"] == bmm
        ours = calc.count_flops(spec, t, "full")
        assert counted.forward == ours.forward * t - ours.components["mlstm/scan"] * t + bmm


# ---- an LM head narrower than the vocabulary (output_vocab_size) ----------------------------
@st.composite
def _apertus1p5_configs(draw) -> dict:
    return {"model_type": "apertus1p5_text", **_NO_TOKENS,
            **draw(STRATEGIES["apertus1p5_text"]("apertus1p5_text"))}


@one_feature
@given(_apertus1p5_configs())
def test_random_apertus1p5_configs_match_transformers_and_export_back(config):
    """Apertus 1.5's head of output_vocab_size rows beside the embedding's vocab_size, tied or
    not, against transformers; a narrower head written back only as apertus1p5_text, one of
    all the rows as apertus (the first writer that holds it)."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, MIN_WINDOW)
    exported = hf_config_from_spec(spec)
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    narrower = spec.output_vocab_size is not None
    assert exported["model_type"] == ("apertus1p5_text" if narrower else "apertus")
    if narrower:
        assert_matches(spec, exported, MIN_WINDOW)


def test_a_narrower_head_beside_the_embedding_on_the_reference_model():
    """calc's own torch model of a pruned head: its logits have output_vocab_size columns, its
    parameters and FLOPs are calc's (calc.verify)."""
    spec = spec_from_hf_config({"model_type": "apertus1p5_text", **_TINY_TEXT, **_NO_TOKENS,
                                "output_vocab_size": 37})
    model = build_reference(spec, "cpu")
    assert model(torch.zeros(1, 4, dtype=torch.long)).shape == (1, 4, 37)
    assert model.lm_head.weight.shape == (37, 64) and model.token.weight.shape == (100, 64)
    assert verify(spec, 8).ok


# ---- multimodal wrappers (calc.hf.multimodal) ------------------------------------------------
_TINY_TEXT = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
              "head_dim": 16}


# Fields a wrapper's own model needs to build (Emu3Model maps its image tokens through
# vocabulary_map, None by default)
# Text fields a wrapper's text model needs beside _TINY_TEXT (dots3: as many KV heads as
# query heads)
_WRAPPER_TEXT = {"dots3_note": {"num_key_value_heads": 4},
                 # Inkling 2's head: unpadded_vocab_size rows, within the tiny vocabulary
                 "inkling2": {"unpadded_vocab_size": 90},
                 # Gemma 3n: its 15 kv-shared layers are more than the tiny model's 2, and a
                 # small per-layer table and width keep the meta model small
                 "gemma3n": {"num_kv_shared_layers": 0, "vocab_size_per_layer_input": 100,
                             "hidden_size_per_layer_input": 8, "laurel_rank": 8},
                 # Qwen4-Exp: its two tiny layers linear_attention (the indexed ones are
                 # not read yet), small experts and gate rank
                 "qwen4_exp": {"layer_types": ["linear_attention"] * 2, "num_experts": 4,
                               "num_experts_per_tok": 2, "moe_intermediate_size": 8,
                               "shared_expert_intermediate_size": 8, "hc_lowrank": 8,
                               "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                               "linear_key_head_dim": 8, "linear_value_head_dim": 8}}
_WRAPPER_FIELDS = {"emu3": {"vocabulary_map": {}},
                   # Inkling2Config wants the vision projector as wide as the text model
                   "inkling2": {"vision_config": {"text_hidden_size": 64}},
                   # Dots3NoteConfig wants the towers' adapters as wide as the text model
                   "dots3_note": {"vision_config": {"adapter_out_dim": 64},
                                  "audio_config": {"adapter_out_dim": 64}},
                   # Apertus1p5Config wants the image and audio code ranges inside the
                   # vocabulary: codebooks of 8 at 80 and 88 fit the tiny one
                   "apertus1p5": {"vision_config": {"codebook_size": 8},
                                  "audio_config": {"model_type": "wavtokenizer_encoder",
                                                   "codebook_size": 8},
                                  "image_token_offset": 80, "audio_token_offset": 88}}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_wrapper_table_is_transformers(wrapper):
    """Each wrapper's default text model, default tie and tie rule, from its classes: with
    text_config tied and the wrapper's flag false, only "either" ties the head. Every default
    text model is one calc reads, so each wrapper's count is checked too."""
    text_type, _, tied = WRAPPERS[wrapper]
    config_class = CONFIG_MAPPING[wrapper]
    assert config_class().text_config.model_type == text_type
    defaults = {f.name: f.default for f in dataclasses.fields(config_class)}
    # MllamaConfig has no such field, and its classes tie nothing (calc.hf.families.mllama):
    # the loop below builds it both ways
    assert defaults.get("tie_word_embeddings", False) is tied
    assert text_type in supported_types()
    for top, text in ((False, True), (None, False)):
        inner = {"model_type": text_type, **_TINY_TEXT, "tie_word_embeddings": text,
                 "pad_token_id": 0,  # Emu3TextConfig's default id is past the tiny vocab
                 **_WRAPPER_TEXT.get(wrapper, {})}
        config = {"model_type": wrapper, "text_config": inner, **_WRAPPER_FIELDS.get(wrapper, {})}
        if top is not None:
            config["tie_word_embeddings"] = top
        assert_matches(spec_from_hf_config(config), config, 8)


@pytest.mark.parametrize("name, model_type", [("gpt-neo-125m", "gpt_neo"),
                                              ("llava-1.5-7b-hf", "llava"),
                                              ("apertus-v1.5-8b", "apertus1p5")])
def test_verify_hf_takes_family_and_multimodal_configs(cli, name, model_type):
    """`verify --hf CONFIG` builds transformers' model of the file itself (a multimodal one:
    its language model) and compares."""
    result = cli("verify", str(CONFIGS / f"{name}.json"), "--hf", "--seq-len", "32",
                 "--format", "json")
    data = result.json()
    assert result.code == 0 and data["ok"] and data["hf"]["model_type"] == model_type
    assert [check["match"] for check in data["hf"]["checks"]] == [True, True]


# ---- HunYuan V4 (hy_v4): hyper-connections ---------------------------------------------------
@st.composite
def _hy_v4_configs(draw) -> dict:
    return {"model_type": "hy_v4", "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **draw(STRATEGIES["hy_v4"]("hy_v4"))}


def test_hy_v4_default_matches_transformers():
    """HYV4Config's defaults: 58,278,193,133 parameters, of which each layer's two maps hold
    2·(8 × 4·2816 + 8 + 2) = 180,244 and the head map 4 × 4·2816 + 4 + 1 = 45,061, exact
    against transformers with forward FLOPs at 32 tokens (under index_topk: no masked keys)."""
    config = {"model_type": "hy_v4"}
    spec = spec_from_hf_config(config)
    counts = calc.count_params(spec)
    assert counts.total == 58_278_193_133
    assert counts.components["hyper_connections/layers"] == 34 * 180_244
    assert counts.components["hyper_connections/head"] == 45_061
    assert_matches(spec, config, 32)


@one_feature
@given(_hy_v4_configs(), st.integers(1, 12))
def test_random_hy_v4_configs_match_transformers_and_export_back(config, seq_len):
    """DSA's MLA with gate_proj and sinks, the MoE where mlp_layer_types puts it, the indexer
    on the full layers of indexer_types (given or by HYV4Config's rule), and hc_mult streams
    around every attention and MLP with the head map, against transformers at lengths below
    and above index_topk; and back through hy_v4's writer."""
    spec = spec_from_hf_config(config)
    assert spec.hyper_connections.streams == config["hc_mult"]
    assert_matches(spec, config, seq_len)
    exported_as(spec, "hy_v4")


# ---- the shared block (zamba, zamba2) ----------------------------------------------------------
@st.composite
def _zamba_configs(draw) -> dict:
    model_type = draw(st.sampled_from(["zamba", "zamba2"]))
    return {"model_type": model_type, **_NO_TOKENS, **draw(STRATEGIES[model_type](model_type))}


@one_feature
@given(_zamba_configs(), st.integers(1, 9))
def test_random_zamba_configs_match_transformers(config, seq_len):
    """The shared block's weight sets counted once (one per depth where Zamba is untied), its
    projection and adapters per depth, its attention over [hidden, embedding] with grouped
    heads, RoPE or none, and its products at every depth, beside Zamba's multi-head Mamba and
    Zamba2's Mamba-2, against transformers' ZambaForCausalLM and Zamba2ForCausalLM; and back
    through their writers (no other writer holds a shared block)."""
    spec = spec_from_hf_config(config)
    assert_matches(spec, config, seq_len)
    hybrid = [t == "hybrid" for t in transformers.AutoConfig.for_model(
        config["model_type"], **{k: v for k, v in config.items() if k != "model_type"}
    ).layers_block_type]
    assert (spec.shared_block.depths if spec.shared_block else 0) == sum(hybrid)
    exported = hf_config_from_spec(spec)  # back through the writers: zamba's or zamba2's
    assert shape(spec_from_hf_config(exported)) == shape(spec)
    if spec.shared_block is not None:
        assert exported["model_type"] == config["model_type"]
        assert_matches(spec, exported, seq_len)


# ---- deepseek_v4 -------------------------------------------------------------------------------
@st.composite
def _deepseek_v4_configs(draw) -> dict:
    return {"model_type": "deepseek_v4", "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **draw(STRATEGIES["deepseek_v4"]("deepseek_v4"))}


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_deepseek_v4_configs(), st.integers(1, MIN_WINDOW))
def test_random_deepseek_v4_configs_match_transformers_and_export_back(config, seq_len):
    """DeepseekV4Attention (queries through q_lora_rank with a weighted and a weightless norm,
    one key-and-value head with its norm, sinks, o_groups blocks to o_lora_rank then o_b_proj)
    on sliding, CSA and HCA layers (DeepseekV4CSACompressor with its DeepseekV4Indexer,
    DeepseekV4HCACompressor, their entries beside the window's keys), DeepseekV4SparseMoeBlock
    with its hash_moe layers (by mlp_layer_types, num_hash_layers or the default 3) and the mHC
    streams, against transformers within the window (where its mask and calc's window agree);
    calc's reference model of the same spec counts as calc's formulas do."""
    spec = spec_from_hf_config(config)
    types = config.get("mlp_layer_types") or (
        ["hash_moe"] * config.get("num_hash_layers", 3) + ["moe"] * 3)[:len(spec.ffn_kinds)]
    assert spec.moe.hash_layers == tuple(i for i, t in enumerate(types) if t == "hash_moe")
    comp = spec.attention.compression
    for kind, layers in (("compressed_sparse_attention", comp.sparse_layers if comp else ()),
                         ("heavily_compressed_attention", comp.heavy_layers if comp else ())):
        assert layers == tuple(i for i, t in enumerate(config["layer_types"]) if t == kind)
    assert_matches(spec, config, seq_len)
    report = verify(spec, seq_len=seq_len)
    assert all(check.match for check in report.params + report.flops)
    exported_as(spec, "deepseek_v4")


# ---- Qwen4-Exp: gated low-rank hyper-connections (hyper_connections.gate_rank), QSA --------
# Qwen4ExpTextConfig's indexer fields are None by default, which builds no indexed_attention
# layer (DEFAULTS_REFUSED_BY_BOTH); "the default" here is the default with these set (the
# index head as wide as the attention's rotary width, head_dim 256 at partial_rotary_factor 1)
QSA = {"indexer_n_heads": 16, "indexer_kv_heads": 1, "indexer_head_dim": 256,
       "indexer_budget": 2048, "indexer_compress_ratio": 64}
@st.composite
def _qwen4_exp_text_configs(draw) -> dict:
    return {"model_type": "qwen4_exp_text", "vocab_size": draw(st.integers(1, 50)),
            **_NO_TOKENS, **draw(STRATEGIES["qwen4_exp_text"]("qwen4_exp_text"))}


@one_feature
@given(_qwen4_exp_text_configs())
def test_random_qwen4_exp_text_configs_match_transformers(config):
    """Qwen4ExpTextGatedResidual's maps around every gated DeltaNet, QSA attention and MoE
    sublayer and the hyper_connection_mixer in place of the final norm, against transformers
    (with real tensors: the QSA indexer's torch.nonzero has no meta form), without PLE."""
    assert_matches(spec_from_hf_config(config), config, MIN_WINDOW)


@pytest.mark.parametrize("changes, named", [
    ({"num_hidden_layers": 4}, "indexer_n_heads=None: Qwen4-Exp's indexed_attention layers"),
    ({"num_hidden_layers": 1, "ple_layer_ids": [1], "eos_token_id": 0},
     "ple_layer_ids=[1]: Qwen4ExpTextPLELayer"),
    ({"num_hidden_layers": 1, "hc_count": 1}, "hc_count=1 must be a whole number >= 2"),
    ({"num_hidden_layers": 1, "output_gate_type": "gelu"}, "output_gate_type='gelu'"),
    ({**QSA, "indexer_kv_heads": 2}, "indexer_kv_heads=2"),
    ({**QSA, "indexer_budget": 6}, "indexer_budget=6 must be a multiple"),
    ({**QSA, "indexer_head_dim": 128}, "indexer_head_dim=128 < the attention's rotary width"),
])
def test_qwen4_exp_text_refuses_what_calc_does_not_read_in_one_line(changes, named):
    with pytest.raises(CalcError, match=re.escape(named)) as error:
        spec_from_hf_config({"model_type": "qwen4_exp_text", **changes})
    assert "\n" not in str(error.value)


def test_qwen4_exp_text_default_with_the_indexer_matches_transformers():
    """Qwen4ExpTextConfig's defaults with QSA set: 67,410,763,392 parameters, as transformers
    builds them (its forward needs real tensors: the parameters alone at this size). Each
    layer's two gated maps hold n·d + 2·r·n·d + n·n·d = 8,192 + 5,242,880 + 32,768 =
    5,283,840, the head map 8,192 + 5,242,880 = 5,251,072, and each of the 10
    indexed_attention layers' indexer 2048 × 17 × 256 + 2 × 256 = 8,913,408."""
    config = {"model_type": "qwen4_exp_text", **QSA}
    spec = spec_from_hf_config(config)
    counts = calc.count_params(spec)
    assert counts.total == 67_410_763_392
    assert counts.components["hyper_connections/layers"] == 40 * 2 * 5_283_840
    assert counts.components["hyper_connections/head"] == 5_251_072
    assert counts.components["attention/indexer"] == 10 * 8_913_408
    assert (spec.attention.indexer.topk, spec.attention.indexer.block_size) == (32, 64)
    assert_matches(spec, config, 8)
