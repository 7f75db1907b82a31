"""Hugging Face config.json import (calc.hf) and export (calc.hf.export), without torch.

The configs are released models' config.json files (tests/data/hf_configs/README.md cites each).
Their counts against transformers' own models are in test_hf_reference.py; here: the quirks
each reader must get right, the errors, the CLI, and the round trip of every preset.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import calc
from calc.errors import CalcError
from calc.hf import spec_from_hf_config, supported_types
from calc.hf.export import buffer_params, hf_config_from_spec, shape
from calc.hf.registry import MODEL_TYPES, find
from tests.hf_released import CONFIGS, DEFAULTS_REFUSED_BY_BOTH, REAL
from tests.hf_strategies import STRATEGIES


def config(name: str, **changes) -> dict:
    return {**json.loads((CONFIGS / f"{name}.json").read_text()), **changes}


def spec_of(name: str, **changes) -> calc.ModelSpec:
    return spec_from_hf_config(config(name, **changes), name=name)


# Types without a released config.json in tests/data, and why; each is still checked against
# transformers through its default config and random configs (tests/test_hf_reference.py).
UNRELEASED = {
    # Gemma4UnifiedAssistantConfig names google/gemma-4-12b-it; no checkpoint with
    # model_type gemma4_unified_assistant was found with the project's code search
    "gemma4_unified_assistant": "no released checkpoint of this type was found with the "
                                "project's code search",
    "ministral": "Ministral-8B-Instruct-2410, the checkpoint transformers' ministral was written "
                 "for, still names model_type mistral in its config.json",
    "qwen4_exp_text": "no released Qwen4-Exp checkpoint (configuration_qwen4_exp.py names "
                      "Qwen/Qwen4-Exp) was found with the project's code search",
    "gemma3n_text": "google/gemma-3n-E2B and E4B are gated and no public copy of their "
                    "config.json was found with the project's code search; Gemma3nTextConfig's "
                    "defaults are E4B's language model (configuration_gemma3n.py, checkpoint "
                    "google/gemma-3n-E4B) and tests/test_hf_reference.py builds E2B's from "
                    "Google's slicing table",
    **{model_type: f"no public copy of {checkpoint}'s config.json was found with the project's "
                   f"code search" for model_type, checkpoint in (
        ("glm", "THUDM/glm-4-9b-chat-hf"), ("glm4", "THUDM/GLM-4-9B-0414"),
        ("codegen", "Salesforce/codegen-350M-mono"), ("nemotron", "nvidia/Minitron-4B-Base"),
        ("arcee", "arcee-ai/AFM-4.5B"), ("gpt-sw3", "AI-Sweden-Models/gpt-sw3-126m"),
        ("iquestcoder", "IQuestLab/IQuest-Coder-V1-40B-Instruct"),
        ("ministral3", "mistralai/Ministral-3-8B-Base-2512"),
        ("sarvam_mla", "sarvamai/sarvam-105b"), ("sarvam_moe", "sarvamai/sarvam-30b"),
        ("qwen3_5_text", "Qwen/Qwen3.5-27B"), ("qwen3_5_moe_text", "Qwen/Qwen3.5-35B-A3B"),
        ("flex_olmo", "allenai/FlexOlmo-7x7B-1T"), ("cwm", "facebook/cwm"),
        ("granitemoeshared", "ibm-granite/granite-speech-3.2-8b"),
        ("minimax_m2", "MiniMaxAI/MiniMax-M2"), ("glm4_moe_lite", "zai-org/GLM-4.7-Flash"),
        ("solar_open", "upstage/Solar-Open-100B"),
        ("hyperclovax", "naver-hyperclovax/HyperCLOVAX-SEED-Think-14B"),
        ("jais2", "inceptionai/Jais-2-8B-Chat"), ("youtu", "tencent/Youtu-LLM-2B"),
        ("exaone_moe", "LGAI-EXAONE/K-EXAONE-236B-A23B"), ("lfm2_moe", "LiquidAI/LFM2-8B-A1B"),
        ("falcon_mamba", "tiiuae/falcon-mamba-7b"), ("bamba", "ibm-fms/Bamba-9.8b-2.2T-hf"),
        ("granitemoehybrid", "ibm-granite/granite-4.0-h-small"),
        ("olmo_hybrid", "allenai/Olmo-Hybrid-7B"), ("hy_v3", "tencent/Hy3-preview"),
        ("mellum", "JetBrains/Mellum2-12B-A2.5B-Base"),
        ("lara_mini", "translated/Lara-4-Mini-Base"),
        ("granitemoe_swa", "ibm-granite/granite-swash-3b-a600m"),
        ("kolibri1", "Aleph-Alpha/Kolibri-1"), ("afmoe", "arcee-ai/Trinity-Mini"),
        ("aria_text", "rhymes-ai/Aria"), ("cohere_compass_text", "CohereLabs/compass"),
        ("xglm", "facebook/xglm-564M"), ("biogpt", "microsoft/biogpt"),
        ("ctrl", "Salesforce/ctrl"), ("emu3_text_model", "BAAI/Emu3-Chat-hf"),
        ("cohere2_moe", "CohereLabs/command-a-plus-05-2026"), ("glm_moe_dsa", "zai-org/GLM-5"),
        ("lfm3", "LiquidAI/LFM3-1.7B"), ("laguna", "poolside/Laguna-XS.2"),
        ("mimo_v2_flash", "XiaomiMiMo/MiMo-V2-Flash"),
        ("diffllama", "kajuma/DiffLlama-0.3B-handcut"), ("hy_v4", "tencent/Hy4-preview"),
        ("gpt_neox_japanese", "abeja/gpt-neox-japanese-2.7b"), ("axk1", "skt/A.X-K1"),
        ("beam", "reflection/Beam-1.0-501B-A23B"), ("axk2", "skt/A.X-K2"),
        ("dots3_note_text", "dots-studio/dots3-note-prev"),
        ("bailing_hybrid", "inclusionAI/Ling-3.0-Flash"))},
    "minimax_m3_vl_text": "no public copy of MiniMaxAI/MiniMax-M3's config.json was found "
                          "whole with the project's code search (public repositories quote "
                          "its text_config in tests: sparse_attention_freq and moe_layer_freq "
                          "0 on layers 0-2, 1 after, the other fields the class's defaults); "
                          "tests/test_hf_reference.py checks that layout",
    "zamba2": "Zyphra/Zamba2-1.2B's config.json at revision "
              "4f8e85cd31975fe07d8fc3145239d58913192294 (found whole) is in Zyphra's format "
              "before the transformers port (layers_block_type 'm'/'g', lora_rank, state_size, "
              "ffn_hidden_size), which Zamba2Config does not read: transformers 5.24 builds no "
              "shared block from its 'g' layers; the ported files (Zyphra/Zamba2-2.7B-Instruct-v2) "
              "were found cut off after n_mamba_heads",
    "dory": "no public copy of a Dory checkpoint's config.json was found with the project's "
            "code or page search (a public GGUF converter reads another, Megatron-style "
            "layout); DoryConfig's defaults are counted exactly (the default-config test) and "
            "random configs against transformers (test_random_dory_configs_match_"
            "transformers)",
    "cpmant": "no public copy of openbmb/cpm-ant-10b's config.json was found with the "
              "project's code or page search; CpmAntConfig's defaults are that checkpoint's "
              "shape (configuration_cpmant.py), as OpenBMB/CPM-Live's own "
              "cpm-live/config/cpm-ant-10b.json at commit "
              "bcf89744d3603557a1a3b6500f5e8f8440c7e37a gives it "
              "(test_cpmant_default_is_cpm_live_s_cpm_ant_10b)",
    "inkling2_text": "no config.json of thinkingmachines/Inkling-2-Small-MXFP8 (the checkpoint "
                     "Inkling2TextConfig's docstring names) was found with the project's code "
                     "search (neither the name nor n_layers_per_attn_res_block occurs in a "
                     "stored file); transformers' Inkling2TextConfig default is read exactly "
                     "(test_an_empty_config_is_transformers_default_model, "
                     "test_inkling2_default_is_exact_and_its_wrapper_counts_the_language_model)",
    "inkling_text": "no config.json of thinkingmachines/Inkling-Small (or of the Inkling the "
                    "classes' docstrings name) was found whole with the project's code or page "
                    "search: a public repository quotes some of Inkling-Small's text_config "
                    "fields in its own checks, with no source calc can cite; transformers' "
                    "InklingTextConfig default is read exactly "
                    "(test_an_empty_config_is_transformers_default_model)",
    "nemotron_h": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16's pattern (copies quoted by "
                  "public repositories) has mixer blocks without an FFN block beside ones with, "
                  "which calc refuses; no verbatim config.json of another release was found",
}


def _language_type(path) -> str:
    config = json.loads(path.read_text())
    if find(config["model_type"]) is None:  # a multimodal file: its text model
        config = config["text_config"]
    return config["model_type"]


def test_every_supported_type_has_a_released_config():
    types = {_language_type(path) for path in CONFIGS.glob("*.json")}
    assert types | set(UNRELEASED) == set(supported_types())
    assert not types & set(UNRELEASED)


def test_the_registry_lists_every_type_once_with_a_config_strategy():
    names = [kind.name for kind in MODEL_TYPES]
    assert len(names) == len(set(names)) and sorted(names) == supported_types()
    # the read-only types close the list, where their place changes nothing
    has_writer = [kind.write is not None for kind in MODEL_TYPES]
    assert has_writer == sorted(has_writer, reverse=True)
    # every type is drawn by the random-config tests (tests/test_hf_reference.py)
    assert set(STRATEGIES) == set(names)


@pytest.mark.parametrize("path", REAL, ids=lambda path: path.stem)
def test_released_configs_import(path):
    spec = calc.spec_from_hf_config(path)
    assert spec.name == path.stem and calc.count_params(spec).total > 0


# ---- each model type's quirks, as transformers 5.24.0's modeling code builds them -----------
def test_gpt2_learned_positions_biases_tied_head():
    spec = spec_of("gpt2")
    assert spec.position_table == 1024 and spec.tie_embeddings
    assert spec.attention.qkv_bias and spec.attention.out_bias and spec.ffn.bias
    assert spec.ffn.d_ff == 4 * 768  # n_inner null
    assert calc.count_params(spec).total == 124_439_808  # the gpt2 preset's checkpoint count


def test_opt_position_table_is_two_rows_longer():
    spec = spec_of("opt-125m")
    assert (spec.context_length, spec.position_table) == (2048, 2050)
    assert calc.count_params(spec).components["embedding/position"] == 2050 * 768


def test_opt_post_layernorm_drops_the_final_norm():
    # OPT-350m's layout (do_layer_norm_before false) with its projections removed.
    spec = spec_of("opt-350m", word_embed_proj_dim=1024)
    assert (spec.norm.placement, spec.norm.final) == ("post", False)
    assert not spec_of("opt-125m", _remove_final_layer_norm=True).norm.final


def test_opt_350m_projects_its_narrower_embedding_in_and_out():
    """modeling_opt.py: a word_embed_proj_dim of 512 under hidden_size 1024 makes the embedding
    and the tied head 512 wide, with project_in and project_out (no bias) around the decoder."""
    c = calc.count_params(spec_of("opt-350m"))
    assert c.components["embedding/token"] == 50272 * 512
    assert c.components["embedding_projection"] == 2 * 512 * 1024
    assert "lm_head" not in c.components or c.components["lm_head"] == 0  # tied
    assert c.total == 331_196_416  # transformers' count (test_hf_reference), as published


def test_layernorms_without_parameters():
    """OPT's layer_norm_elementwise_affine=false: LayerNorms with neither γ nor β."""
    plain = calc.count_params(spec_of("opt-125m"))
    bare = calc.count_params(spec_of("opt-125m", layer_norm_elementwise_affine=False))
    assert bare.components.get("norms", 0) == 0 and bare.components.get("final_norm", 0) == 0
    assert plain.total - bare.total == (12 * 2 + 1) * 2 * 768


def test_irregular_moe_placement_is_read_layer_by_layer():
    """Qwen3-MoE's mlp_only_layers and DeepSeek's moe_layer_freq (modeling_deepseek.py: layer
    i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0) may place MoE layers
    where no first_dense_layers/every can."""
    qwen = spec_of("qwen3-30b-a3b", mlp_only_layers=[1, 3])
    assert qwen.moe_layers[:6] == (True, False, True, False, True, True)
    assert qwen.n_moe_layers == 46
    lite = spec_of("deepseek-v2-lite", moe_layer_freq=2)  # first_k_dense_replace 1
    assert lite.moe_layers == tuple(i >= 1 and i % 2 == 0 for i in range(27))


def test_bloom_alibi_embedding_norm_and_training_length():
    spec = spec_of("bloom-560m")
    assert spec.position.kind == "alibi" and spec.norm.embedding and spec.norm.has_bias
    assert spec.ffn.d_ff == 4 * 1024 and spec.tie_embeddings
    assert spec.context_length == 2048  # BLOOM trained at 2,048; its config has no limit
    assert spec_of("bloom-560m", seq_length=4096).context_length == 4096


@pytest.mark.parametrize("name, kv, parallel, norms, position", [
    ("falcon-7b", 1, True, 1, "rope"),  # multi_query, one shared input_layernorm
    ("falcon-40b", 8, True, 2, "rope"),  # new decoder architecture: ln_attn + ln_mlp
    ("falcon-rw-1b", 32, False, 1, "alibi"),  # sequential block, ALiBi, biases
])
def test_falcon_architectures(name, kv, parallel, norms, position):
    spec = spec_of(name)
    assert spec.n_kv_heads == kv and spec.parallel_block == parallel
    assert spec.norms_per_layer == (norms if parallel else 2)
    assert spec.position.kind == position
    assert spec.ffn.bias == (name == "falcon-rw-1b")


def test_falcon_new_architecture_with_one_norm():
    # Falcon2-11B's choice: num_ln_in_parallel_attn = 1 shares input_layernorm.
    assert spec_of("falcon-40b", num_ln_in_parallel_attn=1).norms_per_layer == 1


def test_gpt_neox_parallel_residual_two_norms():
    spec = spec_of("pythia-160m")
    assert spec.parallel_block and spec.parallel_norms == 2 and not spec.tie_embeddings
    sequential = spec_of("pythia-160m", use_parallel_residual=False)
    assert not sequential.parallel_block and sequential.norms_per_layer == 2


def test_gemma2_sandwich_and_alternating_windows():
    spec = spec_of("gemma-2-9b")
    assert spec.norm.placement == "sandwich" and spec.norms_per_layer == 4
    assert spec.attention.layer_pattern == ("local", "global")
    assert spec.attention.sliding_window == 4096 and spec.n_local_layers == 21


def test_layer_types_become_the_shortest_repeating_pattern():
    kinds = ["full_attention"] + ["sliding_attention"] * 5
    spec = spec_of("gemma-2-9b", num_hidden_layers=12, layer_types=kinds * 2)
    assert spec.attention.layer_pattern == ("global",) + ("local",) * 5


def test_qwen_sliding_layers_from_max_window_layers():
    spec = spec_of("qwen2.5-3b", use_sliding_window=True, max_window_layers=30)
    assert spec.layer_kinds == ("global",) * 30 + ("local",) * 6
    assert spec_of("qwen2.5-3b").n_local_layers == 0  # use_sliding_window false


def test_qk_norms_and_biases():
    qwen2, qwen3, olmo2 = spec_of("qwen2.5-3b"), spec_of("qwen3-4b"), spec_of("olmo-2-0425-1b")
    assert (qwen2.attention.qkv_bias, qwen2.attention.out_bias) == (True, False)
    assert qwen3.attention.qk_norm == "head" and qwen3.head_dim_qk == 128  # 2560 / 32 = 80
    assert olmo2.attention.qk_norm == "projection" and olmo2.norm.placement == "reordered"
    llama = spec_of("llama-3.1-8b", attention_bias=True, mlp_bias=True)
    assert llama.attention.qkv_bias and llama.attention.out_bias and llama.ffn.bias


def test_gemma_legacy_gelu_is_gated():
    assert spec_of("gemma-2b").ffn.activation == "geglu"
    assert spec_of("phi-3-mini-4k-instruct").attention.sliding_window == 2047


def test_qwen_moe_shared_expert_and_sparse_layers():
    spec = spec_of("qwen1.5-moe-a2.7b")
    moe = spec.moe
    assert (moe.n_experts, moe.top_k, moe.d_expert) == (60, 4, 1408)
    assert moe.n_shared_experts == 1 and moe.d_shared == 5632 and moe.shared_expert_gate
    stepped = spec_of("qwen3-30b-a3b", decoder_sparse_step=2, mlp_only_layers=[1, 3])
    assert stepped.moe_layers == tuple(i >= 4 and i % 2 == 1 for i in range(48))


def test_deepseek_mla_dense_layers_and_mtp():
    lite, v3 = spec_of("deepseek-v2-lite"), spec_of("deepseek-v3")
    assert lite.attention.mla.q_lora_rank is None and lite.moe.first_dense_layers == 1
    assert lite.moe.n_shared_experts == 2 and lite.mtp_modules == 0
    assert v3.moe.first_dense_layers == 3 and v3.mtp_modules == 1
    assert not v3.moe.router_bias  # a buffer in transformers (calc/hf/families/deepseek.py)


def test_deepseek_v3_is_transformers_count_not_the_published_one():
    """transformers keeps DeepSeek-V3's e_score_correction_bias (58 × 256) as buffers."""
    spec = spec_of("deepseek-v3")
    assert calc.count_params(spec).total == 671_026_419_200 - 58 * 256
    assert calc.count_params(calc.load_preset("deepseek-v3").spec).total == 671_026_419_200


def test_defaults_follow_transformers():
    # An empty config is transformers' default model of that type (LlamaConfig: Llama 2 7B).
    assert calc.count_params(spec_from_hf_config({"model_type": "llama"})).total \
        == calc.count_params(calc.load_preset("llama2-7b").spec).total
    assert spec_from_hf_config({"model_type": "mistral"}).attention.sliding_window == 4096
    assert spec_from_hf_config({"model_type": "gemma"}).tie_embeddings


# ---- refused configs: one line naming the field ---------------------------------------------
BAD = [
    ({"model_type": "t5"}, "model_type='t5' is not supported (supported: afmoe, apertus, "),
    (config("llama-3.1-8b", num_key_value_heads=5), "num_key_value_heads=5 must divide"),
    (config("mistral-7b-v0.1", num_attention_heads=30), "num_attention_heads=30 does not divide"),
    (config("llama-3.1-8b", hidden_size=-4096), "hidden_size=-4096 must be a whole number >= 1"),
    (config("qwen3-4b", num_hidden_layers=0), "num_hidden_layers=0 must be a whole number"),
    (config("mixtral-8x7b-v0.1", num_experts_per_tok=9), "num_experts_per_tok=9 must not exceed"),
    (config("deepseek-v3", num_experts_per_tok=300), "must not exceed n_routed_experts=256"),
    (config("deepseek-v2-lite", mlp_bias=True), "mlp_bias=true biases the dense"),
    (config("gemma-2-9b", layer_types=["chunked_attention"] * 42), "'chunked_attention'"),
    (config("gemma-2-9b", layer_types=["full_attention"]), "one type per layer (42)"),
    (config("gpt2", add_cross_attention=True), "add_cross_attention=true"),
    (config("gpt2", activation_function="tanh"), "activation_function='tanh' is not an"),
    (config("gpt2", n_embd=768, hidden_size=1024), "name the same field"),
    (config("falcon-7b", num_ln_in_parallel_attn=2), "needs new_decoder_architecture=true"),
    (config("falcon-40b", parallel_attn=False), "parallel_attn=false with new_decoder"),
    (config("llama-3.1-8b", per_layer_config={"0": {}}), "per_layer_config gives layers"),
    (config("llama-3.1-8b", tie_word_embeddings="yes"), "tie_word_embeddings='yes' must be"),
    (config("llama-3.1-8b", hidden_size=4100, head_dim=128), "transformers' validate_arch"),
    (config("deepseek-v2-lite", kv_lora_rank=0), "kv_lora_rank=0 must be a whole number >= 1"),
    # the spec's own validators, as one line: vocab_size is not read before them
    (config("qwen3-4b", vocab_size=-5), "as calc spec: vocab_size: Input should be greater"),
]


@pytest.mark.parametrize("bad, message", BAD, ids=[message for _, message in BAD])
def test_bad_configs_name_the_field(bad, message):
    with pytest.raises(CalcError) as error:
        spec_from_hf_config(bad)
    text = str(error.value)
    assert message in text and "\n" not in text


def test_cli_takes_a_config_json(cli, tmp_path):
    path = tmp_path / "Qwen3-4B" / "config.json"
    path.parent.mkdir()
    path.write_text((CONFIGS / "qwen3-4b.json").read_text())
    result = cli(str(path), "--tokens", "1e12", "--gpu", "h100", "--format", "json")
    assert result.code == 0 and result.err == ""
    data = result.json()
    assert data["model"] == "Qwen3-4B"  # the folder names a config.json
    assert data["params"]["total"] == 4_022_468_096  # Qwen/Qwen3-4B: 4.0B
    assert data["training"]["gpu"] == "h100"


@pytest.mark.parametrize("content, message", [
    (json.dumps({"model_type": "reformer"}), "model_type='reformer' needs LSH and chunked"),
    (json.dumps(config("qwen3-4b", num_key_value_heads=3)), "num_key_value_heads=3 must"),
    (json.dumps(config("mixtral-8x7b-v0.1", num_local_experts=-8)), "num_local_experts=-8"),
    (json.dumps(config("qwen3-30b-a3b", num_experts_per_tok=129)), "must not exceed num_exp"),
    ("{not json", "is not valid JSON"),
])
def test_cli_refuses_bad_configs_in_one_line(cli, tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    result = cli(str(path), "--format", "json")
    assert result.code == 2 and result.out == ""
    assert message in result.err and result.err.count("\n") == 1


def test_import_needs_neither_torch_nor_transformers():
    code = ("import sys, calc.hf.export; calc.spec_from_hf_config(sys.argv[1]); "
            "calc.hf.export.hf_config_from_spec(calc.load_preset('llama2-7b').spec); "
            "bad = {'torch', 'transformers'} & set(sys.modules); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code, str(CONFIGS / "deepseek-v3.json")], check=True)


# ---- export: presets as transformers configs ------------------------------------------------
# Presets no architecture calc.hf writes can hold, and the first field that stops the closest.
UNEXPORTABLE = {
    "gpt3-13b": "gpt2, cannot hold attention.head_dim=128 with d_model=5140",  # Table 2.1
    # Transformer-XL's relative positions: no transformers architecture has them.
    "gopher-280b": "arcee, cannot hold position.kind='relative'",
    "chinchilla-70b": "arcee, cannot hold position.kind='relative'",
    "glm-130b": "stablelm, cannot hold attention.out_bias=True",  # post-LN GeGLU with biases
    "megascale-175b-ptb": "gpt2, cannot hold parallel_block=True",  # MegaScale's PTB block
}


@pytest.mark.parametrize("name", calc.list_presets())
def test_presets_round_trip_or_name_what_is_missing(name):
    spec = calc.load_preset(name).spec
    try:
        exported = hf_config_from_spec(spec)
    except CalcError as error:
        assert name in UNEXPORTABLE and UNEXPORTABLE[name] in str(error)
        return
    assert name not in UNEXPORTABLE
    back = spec_from_hf_config(exported, name=name)
    if spec.moe is not None and spec.moe.router_bias:
        spec = spec.updated(**{"moe.router_bias": False})
    assert shape(back) == shape(spec)


@pytest.mark.parametrize("name, model_type", [
    ("gpt2", "gpt2"), ("chapter-char-gpt", "gpt2"), ("llama3.1-405b", "llama"),
    ("mistral-7b", "mistral"), ("mixtral-8x7b", "mixtral"), ("deepseek-v3", "deepseek_v3"),
])
def test_presets_pick_their_own_architecture(name, model_type):
    assert hf_config_from_spec(calc.load_preset(name).spec)["model_type"] == model_type


def test_an_indexer_is_never_dropped_by_a_writer_without_one():
    """A one-layer DeepSeek-V3.2 whose layer is dense (first_k_dense_replace 1) has no DSA
    writer that holds it; MiniCPM3's MLA once took it and left its indexer out (hypothesis found
    this config in test_hf_reference's export search)."""
    config = {"model_type": "deepseek_v32", "vocab_size": 1, "num_attention_heads": 1,
              "num_key_value_heads": 1, "hidden_size": 1, "num_hidden_layers": 1,
              "intermediate_size": 1, "q_lora_rank": 1, "kv_lora_rank": 2,
              "qk_nope_head_dim": 0, "qk_rope_head_dim": 2, "v_head_dim": 1,
              "n_routed_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 1,
              "n_shared_experts": 0, "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1,
              "tie_word_embeddings": False, "max_position_embeddings": 64, "index_n_heads": 1,
              "index_head_dim": 2, "index_topk": 1}
    with pytest.raises(CalcError, match=r"minicpm3, cannot hold attention\.indexer"):
        hf_config_from_spec(spec_from_hf_config(config))


def test_the_char_gpt_untied_head_is_gpt2_with_untied_embeddings():
    exported = hf_config_from_spec(calc.load_preset("chapter-char-gpt").spec)
    assert exported["tie_word_embeddings"] is False and exported["n_positions"] == 256


def test_deepseek_v3_routing_bias_is_the_named_buffer_difference():
    assert buffer_params(calc.load_preset("deepseek-v3").spec) == 58 * 256
    assert buffer_params(calc.load_preset("mixtral-8x7b").spec) == 0


@pytest.mark.parametrize("path", REAL, ids=lambda path: path.stem)
def test_released_configs_export_back_to_the_same_model(path):
    spec = calc.spec_from_hf_config(path)
    assert shape(spec_from_hf_config(hf_config_from_spec(spec))) == shape(spec)


@pytest.mark.parametrize("model_type", sorted(set(supported_types())
                                              - set(DEFAULTS_REFUSED_BY_BOTH)))
def test_default_configs_export_back_to_the_same_model(model_type):
    """Every type's default model is written as a config (its own writer's, or for a type
    without one an earlier writer's) that reads back the same."""
    spec = spec_from_hf_config({"model_type": model_type})
    assert shape(spec_from_hf_config(hf_config_from_spec(spec))) == shape(spec)


def test_published_exact_counts_of_per_layer_models():
    # Liquid AI's LFM2-1.2B model card, "Parameters: 1,170,340,608"; Mamba-Codestral-7B's
    # safetensors index (metadata.total_size / 2 bytes in bf16): 7,285,403,648.
    assert calc.count_params(spec_of("lfm2-1.2b")).total == 1_170_340_608
    assert calc.count_params(spec_of("mamba-codestral-7b-v0.1")).total == 7_285_403_648


def test_flint_sinks_dense_first_layers_and_an_ungated_shared_mlp():
    # configuration_flint.py defaults: full attention on layers 0, 1, every fourth from 1 and
    # the last; dense MLPs on mlp_only_layers [0, 1]; modeling_flint.py: the shared MLP is
    # added without a gate, and each layer has one sink logit per head.
    spec = spec_of("flint-defaults")
    full = [i for i, kind in enumerate(spec.attention_kinds) if kind == "global"]
    assert full == [0, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 48]
    assert spec.moe_layers == (False, False) + (True,) * 47
    moe = spec.moe
    assert (moe.n_shared_experts, moe.shared_width, moe.shared_expert_gate) == (1, 1024, False)
    assert spec.attention.sinks and spec.attention.qk_norm == "head"
    without = spec.model_copy(update={"attention": spec.attention.model_copy(
        update={"sinks": False})})
    assert calc.count_params(spec).total - calc.count_params(without).total == 32 * 49


def test_lfm3_gates_each_head_with_one_value():
    """Lfm3Config's defaults (no released config.json: UNRELEASED): full attention at layers
    2, 6, ..., 22, sliding at 4, 8, ..., 20, short convolutions elsewhere; g_proj d → heads
    without a bias even under attention_bias (modeling_lfm3.py); 1,728,801,536 parameters,
    transformers' own model's count (python -m calc verify, --hf)."""
    spec = calc.spec_from_hf_config({"model_type": "lfm3"})
    assert [i for i, k in enumerate(spec.attention_kinds) if k] == [2, 4, 6, 8, 10, 12, 14, 16,
                                                                   18, 20, 22]
    assert spec.n_local_layers == 5 and spec.norm.placement == "sandwich"
    assert spec.attention.output_gate_per == "head" and spec.output_gate_width == 16
    counts = calc.count_params(spec)
    assert counts.components["attention/gate"] == 11 * 2048 * 16
    assert counts.total == 1_728_801_536
    biased = calc.spec_from_hf_config({"model_type": "lfm3", "attention_bias": True})
    assert calc.count_params(biased).components["attention/gate"] == 11 * 2048 * 16
    ungated = calc.spec_from_hf_config({"model_type": "lfm3", "use_attention_gate": False})
    assert calc.count_params(ungated).total == counts.total - 11 * 2048 * 16
    with pytest.raises(ValueError, match=r"output_gate_per='head' needs attention\.output_gate"):
        spec.updated(**{"attention.output_gate": False})


def test_kimi_linear_reads_kda_beside_nope_mla():
    """Kimi-Linear-48B-A3B-Instruct (tests/data): linear_attn_config's 1-based lists put MLA on
    layers 4, 8, ..., 24 and 27; KDA's sizes come from that sub-dict; the head is untied whatever
    tie_word_embeddings says (KimiLinearForCausalLM._tied_weights_keys is empty); 49,122,675,072
    parameters, transformers' own model's count (python -m calc verify --hf)."""
    spec = spec_of("kimi-linear-48b-a3b-instruct")
    assert [i for i, m in enumerate(spec.mixer_kinds) if m == "attention"] == [3, 7, 11, 15, 19,
                                                                              23, 26]
    n = spec.deltanet
    assert n is not None and n.gate == "channel" and n.gate_rank == n.d_k == n.d_v == 128
    assert n.n_k_heads == n.n_v_heads == 32 and n.d_conv == 4
    assert spec.position.kind == "none" and not spec.tie_embeddings
    counts = calc.count_params(spec)
    d, width = 2304, 32 * 128
    # q, k, v, β; the decay's and the output gate's low-rank pairs; A per head, a bias per channel
    assert counts.components["deltanet/in"] == 20 * d * (3 * width + 32)
    assert counts.components["deltanet/lowrank"] == 20 * 2 * (d * 128 + 128 * width)
    assert counts.components["deltanet/gates"] == 20 * (32 + width)
    assert counts.total == 49_122_675_072
    assert calc.count_params(spec_of("kimi-linear-48b-a3b-instruct",
                                     tie_word_embeddings=True)).total == counts.total
    # the class field the sub-dict overrides, and the class's placement without either
    plain = {k: v for k, v in config("kimi-linear-48b-a3b-instruct").items()
             if k != "linear_attn_config"}
    default = spec_from_hf_config({**plain, "linear_head_dim": 64})
    assert default.deltanet is not None and default.deltanet.d_k == 64
    assert [i for i, m in enumerate(default.mixer_kinds) if m == "attention"] == [4, 8, 12, 16,
                                                                                 20, 24]


@pytest.mark.parametrize(("changes", "message"), [
    ({"num_key_value_heads": 8}, "num_key_value_heads=8 must equal num_attention_heads=32"),
    ({"linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 2, 3]}},
     "layer 5 is in neither linear_attn_config.full_attn_layers nor kda_layers"),
    ({"linear_attn_config": {"full_attn_layers": [0], "kda_layers": []}},
     r"linear_attn_config.full_attn_layers has 0; its layers are numbered 1 to 27"),
    ({"layer_types": ["sliding_attention"] * 27}, "layer_types must list 'full_attention'"),
])
def test_kimi_linear_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=message):
        spec_of("kimi-linear-48b-a3b-instruct", **changes)


def test_a_gate_rank_only_with_the_channel_gate_and_lora_refuses_kda_projections():
    spec = spec_of("kimi-linear-48b-a3b-instruct")
    with pytest.raises(ValueError, match=r"deltanet\.gate_rank=4: a rank comes only with"):
        spec_of("qwen3-next-80b-a3b-instruct").updated(**{"deltanet.gate_rank": 4})
    from calc.spec.finetune import FineTune, resolve_targets
    with pytest.raises(CalcError, match=r"lora_targets=o: .* own o_proj, which calc does not"):
        resolve_targets(spec, FineTune(finetune="lora", lora_targets=("o", "up")))
    assert resolve_targets(spec, FineTune(finetune="lora", lora_targets=("up", "experts"))) == (
        "up", "experts")
    # without a rank the gates are full-rank projections (Ling 3): the low-rank pairs' weights
    # 2·d·r + r·H_v·(d_k + d_v) per layer give way to d·H_v·(d_k + d_v) in deltanet/in
    full = spec.updated(**{"deltanet.gate_rank": None})
    n, d, layers = spec.deltanet, spec.d_model, spec.layer_counts["deltanet"]
    low, high = calc.count_params(spec).components, calc.count_params(full).components
    assert high["deltanet/lowrank"] == 0
    assert high["deltanet/in"] - low["deltanet/in"] == layers * d * n.n_v_heads * (n.d_k + n.d_v)
    # PEFT's g selects Ling 3's KDA g_proj beside the attention's per-head g_proj
    ling = calc.spec_from_hf_config({"model_type": "bailing_hybrid", "num_hidden_layers": 6})
    with pytest.raises(CalcError, match=r"lora_targets=g: .* own g_proj, which calc does not"):
        resolve_targets(ling, FineTune(finetune="lora", lora_targets=("g", "up")))


def test_minimax_reads_lightning_attention_beside_softmax_attention():
    """MiniMax-Text-01 (tests/data, MiniMaxAI/MiniMax-Text-01-hf): a softmax attention layer
    after every 7 lightning-attention layers, 32 experts top-2 on every layer. Its model card
    (huggingface.co/MiniMaxAI/MiniMax-Text-01, §2) gives 456B parameters and 45.9B activated
    per token: calc's exact total is 456,089,655,296 (transformers' own count, python -m calc
    verify --hf), and the active parameters outside the embedding and the LM head are
    45,944,920,064."""
    spec = spec_of("minimax-text-01-hf")
    assert [i for i, m in enumerate(spec.mixer_kinds) if m == "attention"] == list(range(7, 80,
                                                                                        8))
    assert spec.lightning is not None
    assert (spec.lightning.n_heads, spec.lightning.d_head) == (64, 128)
    assert spec.moe is not None and (spec.moe.n_experts, spec.moe.top_k) == (32, 2)
    counts = calc.count_params(spec)
    d, width = 6144, 64 * 128
    # qkv_proj, output_gate, out_proj and the norm over the 8192 output channels, 70 layers
    assert counts.components["lightning/qkv"] == 70 * d * 3 * width
    assert counts.components["lightning/gate"] == counts.components["lightning/out"] == (
        70 * d * width)
    assert counts.components["lightning/norm"] == 70 * width
    assert counts.total == 456_089_655_296
    assert round(counts.total / 1e9) == 456
    active = counts.active - counts.components["embedding/token"] - counts.components["lm_head"]
    assert active == 45_944_920_064 and round(active / 1e8) == 459
    # the scan's convention: decay, write and read, 5 FLOPs per element of d_h × d_h per head
    flops = calc.count_flops(spec, 8, "full")
    assert flops.components["lightning/scan"] == 70 * 5 * 64 * 128 * 128
    # the class's placement without layer_types: attention on the even layers
    plain = {k: v for k, v in config("minimax-text-01-hf").items() if k != "layer_types"}
    assert spec_from_hf_config(plain).layers.mixer_pattern == ("attention", "lightning")


@pytest.mark.parametrize(("changes", "message"), [
    ({"layer_types": ["sliding_attention"] * 80}, "layer_types must list 'full_attention'"),
    ({"layer_types": ["linear_attention"] * 3}, "for each of the 80 layers"),
    ({"num_experts_per_tok": 33}, "num_experts_per_tok=33 must not exceed num_local_experts"),
])
def test_minimax_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=message):
        spec_of("minimax-text-01-hf", **changes)


def test_rwkv_reads_time_mix_and_channel_mix():
    """RWKV/rwkv-4-169m-pile (tests/data; its model card's title: "169M parameters"): 12 RWKV
    blocks of 768 over a vocabulary of 50,277, attention_hidden_size 768, intermediate_size
    3072. calc's exact total is 169,342,464 (transformers' own count, python -m calc verify
    --hf), each part a hand count from the config."""
    spec = spec_of("rwkv-4-169m-pile")
    assert spec.mixer_kinds == ("rwkv",) * 12 and spec.ffn_kinds == ("dense",) * 12
    assert spec.rwkv is not None and spec.rwkv.d_attention == 768
    assert spec.ffn is not None and (spec.ffn.activation, spec.ffn.d_ff) == ("relu2", 3072)
    counts = calc.count_params(spec)
    d, a, f, v, n = 768, 768, 3072, 50277, 12
    for part in ("key", "value", "receptance"):  # the time-mix's d → a, no bias
        assert counts.components[f"rwkv/{part}"] == n * d * a
    assert counts.components["rwkv/output"] == n * a * d
    assert counts.components["rwkv/gate"] == n * d * d  # the channel-mix's receptance
    assert counts.components["rwkv/decay"] == n * 2 * a  # time_decay, time_first
    assert counts.components["rwkv/shift"] == n * 5 * d  # 3 time_mix_* + 2 time_mix_*
    assert counts.components["mlp/up"] == counts.components["mlp/down"] == n * d * f
    assert counts.components["norms"] == n * 2 * 2 * d  # ln1, ln2 with β
    assert counts.components["embedding/norm"] == counts.components["final_norm"] == 2 * d
    assert counts.components["lm_head"] == counts.components["embedding/token"] == v * d
    assert counts.total == 169_342_464 and round(counts.total / 1e6) == 169
    assert counts.active == counts.total  # no experts: every parameter runs for each token
    # the WKV: decay 2, write 3, read 4 per channel and token
    assert calc.count_flops(spec, 8, "full").components["rwkv/scan"] == n * 9 * a
    # a serving state per sequence: the WKV's numerator, denominator, maximum per channel and
    # the last token's input to each mix
    state = calc.infer(spec, gpu="h100", context=1024, batch=1).inference.state_cache_bytes
    assert state == n * (3 * a + 2 * d) * 2


@pytest.mark.parametrize(("changes", "message"), [
    ({"attention_hidden_size": 0}, "attention_hidden_size=0 must be a whole number >= 1"),
    ({"intermediate_size": "big"}, "intermediate_size='big' must be a whole number"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings='no' must be true or false"),
])
def test_rwkv_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=message):
        spec_of("rwkv-4-169m-pile", **changes)


def test_recurrent_gemma_reads_griffin_blocks_beside_local_attention():
    """google/recurrentgemma-2b (tests/data; the RecurrentGemma report, arXiv 2404.07839:
    "2B non-embedding parameters"): 26 layers cycling recurrent, recurrent, attention (18
    Griffin blocks, 8 local-attention layers of 10 query heads and 1 KV head of 256, window
    2,048), lru_width 2,560 in 10 gate blocks of 256, conv width 4, a biased GeGLU MLP at
    15,360 // 2, tied head. Each part a hand count from the config; the total 2,682,862,080
    is transformers' own count (python -m calc verify --hf)."""
    spec = spec_of("recurrentgemma-2b")
    assert spec.mixer_kinds == ("griffin", "griffin", "attention") * 8 + ("griffin",) * 2
    assert set(spec.attention_kinds[i] for i in range(2, 26, 3)) == {"local"}
    assert spec.attention.sliding_window == 2048 and spec.context_length == 8192
    counts = calc.count_params(spec)
    c = counts.components
    d, lru, w, k, f, v, g, a = 2560, 2560, 256, 4, 15360 // 2, 256000, 18, 8
    assert c["griffin/y"] == c["griffin/x"] == c["griffin/out"] - g * (d - lru) == g * (
        d * lru + lru)  # linear_y, linear_x d → lru with bias; linear_out lru → d with bias
    assert c["griffin/conv"] == g * lru * (k + 1)  # depthwise taps and a bias per channel
    assert c["griffin/gates"] == g * 2 * (10 * w * w + lru)  # two block-diagonal gates, biased
    assert c["griffin/decay"] == g * lru  # the recurrent parameter Λ
    assert c["attention/q"] == a * d * 10 * 256 and c["attention/kv"] == a * 2 * d * 256
    assert c["attention/o"] == a * (10 * 256 * d + d)  # o_proj always has a bias
    assert c["mlp/up"] == 26 * 2 * (d * f + f) and c["mlp/down"] == 26 * (f * d + d)
    assert c["norms"] == 26 * 2 * d and c["final_norm"] == d
    assert c["embedding/token"] == v * d and c["lm_head"] == 0  # tied
    assert counts.total == 2_682_862_080 and counts.non_embedding == 2_027_502_080
    assert round(counts.non_embedding / 1e9) == 2  # the report's "2B non-embedding"
    flops = calc.count_flops(spec, 8, "full").components
    assert flops["griffin/scan"] == g * 3 * lru  # decay 1, write 2 per channel and token
    assert flops["griffin/conv"] == g * 2 * k * lru
    assert flops["griffin/gates"] == g * 2 * 2 * lru * w
    # a serving state per sequence: the RG-LRU's state and the conv's last k − 1 inputs
    state = calc.infer(spec, gpu="h100", context=1024, batch=1).inference.state_cache_bytes
    assert state == g * (lru + (k - 1) * lru) * 2


@pytest.mark.parametrize(("changes", "message"), [
    ({"lru_width": 2561}, "lru_width=2561 must be a multiple of num_attention_heads=10"),
    ({"block_types": ["recurrent", "mlp"]}, "must be a non-empty list of 'recurrent' and"),
    ({"block_types": []}, "must be a non-empty list"),
    ({"num_key_value_heads": 3}, "num_key_value_heads=3 must divide num_attention_heads=10"),
    ({"num_key_value_heads": 20}, "num_key_value_heads=20 must not exceed"),
    ({"_block_types": ["attention"]}, "_block_types=['attention'] differs from block_types"),
    ({"head_dim": None}, "head_dim=None"),
    ({"intermediate_size": 1}, "intermediate_size=1 must be at least 2"),
    ({"num_hidden_layers": 301}, "num_hidden_layers=301 exceeds 100 × len(block_types)=300"),
    ({"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}},
     "supports the default RoPE only"),
])
def test_recurrent_gemma_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("recurrentgemma-2b", **changes)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("update", "message"), [
    ({"griffin.n_blocks": 3}, "griffin.n_blocks=3 must divide griffin.d_lru=2560"),
    ({"layers.mixer_pattern": ("attention",)}, "griffin is given but no layer's mixer is griffin"),
])
def test_griffin_spec_refuses_in_one_line(update, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("recurrentgemma-2b").updated(**update)
    assert "\n" not in str(error.value)


def test_modernbert_decoder_reads_the_prediction_head_and_layer_0_without_its_norm():
    """ettin-decoder-1b (tests/data, from the Ettin training config): 28 layers, every third
    full from layer 0 and the others sliding over local_attention // 2 = 64 keys, LayerNorms
    without β, a norm after the embedding and none before layer 0's attention, the fused GLU
    Wi, a prediction head (dense 1,792 × 1,792, no bias; a LayerNorm) and the tied decoder
    with its bias. Each part a hand count from the config; the total 1,031,314,112 is
    transformers' own count (the released-config test)."""
    spec = spec_of("ettin-decoder-1b")
    assert spec.attention.layer_pattern == ("global", "local", "local")
    assert spec.attention.sliding_window == 64 and spec.ffn.activation == "geglu"
    d, n, f, v = 1792, 28, 3840, 50368
    counts = calc.count_params(spec)
    c = counts.components
    assert c["attention/q"] + c["attention/kv"] + c["attention/o"] == n * 4 * d * d
    assert c["mlp/up"] == n * 2 * d * f and c["mlp/down"] == n * f * d  # Wi gate|up, Wo
    assert c["embedding/norm"] == c["final_norm"] == d
    assert c["norms"] == (2 * n - 1) * d  # no attn_norm on layer 0
    assert c["prediction_head"] == d * d + d  # dense without bias, a LayerNorm without β
    assert c["embedding/token"] == v * d and c["lm_head"] == v  # tied, with decoder's bias
    assert counts.total == 1_031_314_112
    flops = calc.count_flops(spec, 8, "full").components
    assert flops["prediction_head"] == 2 * d * d
    # without the head (d² + d) and with layer 0's norm (d), calc's count is d² short
    plain = spec.updated(prediction_head=None, **{"norm.first_mixer_norm": True})
    assert counts.total - calc.count_params(plain).total == (d * d + d) - d


@pytest.mark.parametrize(("changes", "message"), [
    ({"pad_token_id": 50368}, "pad_token_id=50368 must lie within the embedding's vocab_size"),
    ({"local_attention": None}, "local_attention=None must be a whole number >= 2"),
    ({"classifier_activation": "mish2"}, "classifier_activation='mish2' is not an activation"),
    ({"num_attention_heads": 27}, "num_attention_heads=27 must divide hidden_size=1792"),
])
def test_modernbert_decoder_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("ettin-decoder-1b", **changes)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("update", "message"), [
    ({"norm.placement": "post", "norm.first_mixer_norm": False},
     "norm.first_mixer_norm=False drops layer 0's pre-norm"),
    ({"parallel_block": True}, "norm.first_mixer_norm=False is defined for a sequential layer"),
    ({"d_embedding": 64}, "prediction_head is d_model wide; d_embedding=64"),
])
def test_modernbert_decoder_parts_refuse_in_one_line(update, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("ettin-decoder-1b").updated(**update)
    assert "\n" not in str(error.value)


def test_cpmant_default_is_cpm_live_s_cpm_ant_10b():
    """CpmAntConfig's defaults against CPM-Ant 10B's own config (OpenBMB/CPM-Live at commit
    bcf89744d3603557a1a3b6500f5e8f8440c7e37a, cpm-live/config/cpm-ant-10b.json): dim_model
    4,096, dim_ff 10,240, 48 layers, 32 heads of 128, 512 buckets up to distance 2,048, 32
    prompt types of 32 tokens, 32 segment types. CPM-Live keeps a prompt table of 32 · 32 rows
    beside an input table of its vocab_size 31,744, tied to the logits; transformers' port
    holds the same 31,744 + 1,024 rows less 1,024 (vocab_size 30,720 + the prompt rows in one
    table) and an untied head over the 30,720. Each part a hand count; the total
    9,517,453,312 is transformers' own count (the default-config test)."""
    spec = spec_from_hf_config({"model_type": "cpmant"})
    d, n, f, h, w, v, p = 4096, 48, 10240, 32, 128, 30720, 32 * 32
    assert (spec.vocab_size, spec.output_vocab_size, spec.tie_embeddings) == (v + p, v, False)
    counts = calc.count_params(spec)
    c = counts.components
    assert c["embedding/token"] == (v + p) * d and c["embedding/segment"] == 32 * d
    assert c["position_bias"] == (32 * 32 + 512) * h  # one table for the 48 layers
    assert c["attention/q"] + c["attention/kv"] + c["attention/o"] == n * 4 * d * h * w
    assert c["mlp/up"] + c["mlp/down"] == n * 3 * d * f  # w_0 and w_1 (GeGLU), w_out
    assert c["norms"] == n * 2 * d and c["final_norm"] == d  # RMSNorms with a weight
    assert c["lm_head"] == v * d
    assert counts.total == 9_517_453_312
    assert counts.embedding == (v + p + 32) * d  # the token and segment tables
    flops = calc.count_flops(spec, 8, "full").components
    assert not {"position_bias", "embedding/segment"} & set(flops)  # lookups and adds: 0
    assert flops["lm_head"] == 2 * d * v  # the head scores the vocabulary, not the prompts


@pytest.mark.parametrize(("changes", "message"), [
    ({"prompt_types": 2}, "prompt_types=2 must be a whole number >= 3"),
    ({"segment_types": 1}, "segment_types=1 must be a whole number >= 3"),
    ({"position_bias_num_buckets": 3}, "position_bias_num_buckets=3 must be a whole number >= 4"),
])
def test_cpmant_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_from_hf_config({"model_type": "cpmant", **changes})
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("update", "message"), [
    ({"position.segments": 3}, "position.segments is only for position.kind='bucketed'"),
    ({"position.buckets": 3}, "position.buckets is required by position.kind='bucketed' and "
                              "only for it"),
])
def test_bucketed_bias_fields_refuse_in_one_line(update, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("ettin-decoder-1b").updated(**update)
    assert "\n" not in str(error.value)


def test_bucketed_bias_refuses_other_head_shapes_in_one_line():
    spec = spec_from_hf_config({"model_type": "cpmant", "num_hidden_layers": 2})
    with pytest.raises(CalcError, match=re.escape(
            "position.kind='bucketed' (a bias per head of the model's attention) is not defined "
            "with attention.differential")) as error:
        spec.updated(**{"attention.differential": True})
    assert "\n" not in str(error.value)


def test_hrm_text_1b_counts_stored_layers_once_and_passes_each_time():
    """sapientinc/HRM-Text-1B (tests/data): two stacks of 16 layers of width 1,536 (12 MHA
    heads of 128, a sigmoid gate d → h·d_h, a SwiGLU MLP of 4,096, weightless RMSNorms),
    H_cycles 2 × (L_cycles 3 low-stack passes + 1 high-stack pass). Parameters: the 32 stored
    layers once, z_L_init's d beside them; FLOPs: each of the 2 · (3 · 16 + 16) = 128 layer
    passes; the KV cache: one slot per pass, as transformers' DynamicCache holds
    num_hidden_layers = 16 · 2 · (3 + 1) = 128 of them; a decode step reads each layer's
    weights each pass."""
    spec = spec_of("hrm-text-1b")
    d, n, f, h, w, v = 1536, 16, 4096, 12, 128, 65536
    assert (spec.n_layers, spec.loop.passes, spec.executed.n_layers) == (2 * n, 128, 128)
    counts = calc.count_params(spec)
    c = counts.components
    layer = 5 * d * h * w + 3 * d * f  # q, k, v, gate, o; gate, up, down
    assert c["loop/state"] == d and c["norms"] == c["final_norm"] == 0
    assert counts.total == 2 * v * d + 2 * n * layer + d == 1_182_795_264
    flops = calc.count_flops(spec, 128, "full")
    assert flops.components["lm_head"] == 2 * d * v
    assert flops.components["attention/q"] + flops.components["attention/kv"] \
        + flops.components["attention/gate"] + flops.components["attention/o"] \
        + flops.components["mlp"] == 128 * 2 * layer
    assert flops.components["attention/scores"] == 128 * 2 * 2 * h * w * 128  # QKᵀ, A·V
    block = calc.infer(spec, gpu="h100", context=4).inference
    assert block.kv_cache_bytes_per_token == 128 * 2 * h * w * 2  # bf16 K and V, 128 slots
    # a decode step reads the weights each layer pass uses: 128 layers' for 32 stored
    assert block.weights_bytes == 2 * counts.total
    assert block.decode_weights_read_bytes == 2 * (2 * v * d + 128 * layer + d)


@pytest.mark.parametrize(("update", "message"), [
    ({"loop": {"runs": [[0, 2, 1]]}}, "loop.runs: [0, 2, 1] reaches past the n_layers=2"),
    ({"loop": {"runs": [[0, 0, 2]]}}, "loop.runs: stored layer 1 never runs"),
    ({"loop": {"runs": [[1, 0, 2]]}}, "loop.runs: [1, 0, 2] needs 0 <= first <= last"),
    ({"loop": {"runs": [[0, 1, 0]]}}, "loop.runs: [0, 1, 0] needs passes from 1"),
    ({"loop": {"runs": [[0, 1, 2]]}, "mtp_modules": 1},
     "loop: mtp_modules is not defined with looped layers"),
])
def test_loop_fields_refuse_in_one_line(update, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("qwen3-4b").updated(n_layers=2, **update)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("changes", "message"), [
    ({"recurrent_kv_cache_mode": "loop1"}, "recurrent_kv_cache_mode='loop1' must be "
                                           "'per_loop' or 'last_loop'"),
    ({"attention_bias": True}, "attention_bias=true biases q, k, v and o but not Dory's"),
    ({"n_input_layers": 30}, "n_input_layers + n_recurrent_layers + n_output_layers must "
                             "equal num_hidden_layers=36"),
])
def test_dory_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_from_hf_config({"model_type": "dory", **changes})
    assert "\n" not in str(error.value)


def test_dory_default_counts_its_recurrent_layers_once_a_loop():
    """DoryConfig's defaults: 36 layers of width 2,560 (16 query heads and 4 KV heads of 256,
    a gate_proj, a SwiGLU MLP of 7,168), the middle 20 run twice: 56 layer passes a token.
    nGPT's scale vectors count once a stored layer, 0 FLOPs."""
    spec = spec_from_hf_config({"model_type": "dory"})
    d, f, h, kv, w, v = 2560, 7168, 16, 4, 256, 131072
    assert spec.loop.runs == ((0, 7, 1), (8, 27, 2), (28, 35, 1)) and spec.loop.passes == 56
    c = calc.count_params(spec).components
    assert c["residual_scales"] == 36 * 2 * d and c["attention/scales"] == 36 * 2 * h * w
    assert c["mlp/scales"] == 36 * 2 * f and c["lm_head"] == v * d + v
    flops = calc.count_flops(spec, 8, "full").components
    assert flops["mlp"] == 56 * 2 * 3 * d * f
    assert not {"residual_scales", "attention/scales", "mlp/scales"} & set(flops)
    # the KV cache: 56 slots ('per_loop'), or 36 where only the last loop writes ('last_loop')
    slot = 2 * kv * w * 2  # bf16 keys and values of the 4 KV heads
    for mode, slots in (("per_loop", 56), ("last_loop", 36)):
        looped = spec_from_hf_config({"model_type": "dory", "recurrent_kv_cache_mode": mode})
        assert calc.count_flops(looped, 8, "full").forward == calc.count_flops(spec, 8,
                                                                               "full").forward
        cache = calc.infer(looped, gpu="h100", context=4).inference.kv_cache_bytes_per_token
        assert cache == slots * slot


def test_a_looped_model_refuses_adapter_memory_in_one_line():
    """An adapter's states are per stored layer, its activations per pass: the memory of LoRA
    on a looped model is refused; its count and FLOPs are not (tests/test_finetune.py)."""
    with pytest.raises(CalcError, match=re.escape("finetune: the memory of adapters on a "
                                                  "looped model")) as error:
        calc.memory(spec_of("hrm-text-1b"), gpu="h100", finetune="lora")
    assert "\n" not in str(error.value)


def test_a_looped_model_refuses_pipeline_stages_in_one_line():
    with pytest.raises(CalcError, match=re.escape("pp=2: pipeline stages of a looped model")):
        calc.estimate(spec_of("hrm-text-1b"), tokens=1e9, gpu="h100", gpus=2, pp=2,
                      global_batch=8)


def test_xlstm_reads_mlstm_blocks():
    """NX-AI/xLSTM-7b (tests/data; arXiv 2503.13427, "xLSTM 7B", a 7-billion-parameter LLM): 32
    mLSTM blocks of width 4,096 (embedding_dim; hidden_size left at its default, the same), 8
    heads, q and k 4,096 · 0.5 = 2,048 wide, v and the output gate 4,096, the gates one output
    per head with a bias, the head norm's γ over v, out_proj; a SwiGLU FFN at round_up(4,096 ·
    2.667, 64) = 10,944; RMSNorms; an untied head. Each part a hand count from the config; the
    total 6,865,424,896 is transformers' own count (python -m calc verify --hf)."""
    spec = spec_of("xlstm-7b")
    assert spec.mixer_kinds == ("mlstm",) * 32 and spec.context_length == 8192
    c = calc.count_params(spec).components
    d, qk, v, h, f, vocab, n = 4096, 2048, 4096, 8, 10944, 50304, 32
    assert c["mlstm/q"] == c["mlstm/k"] == n * d * qk
    assert c["mlstm/v"] == c["mlstm/ogate"] == c["mlstm/out"] == n * d * v
    assert c["mlstm/gates"] == n * 2 * (d * h + h)  # igate_preact, fgate_preact with biases
    assert c["mlstm/norm"] == n * v  # multihead_norm's weight, no bias (use_bias false)
    assert c["mlp/up"] == n * 2 * d * f and c["mlp/down"] == n * f * d
    assert c["norms"] == n * 2 * d and c["final_norm"] == d
    assert c["embedding/token"] == c["lm_head"] == vocab * d
    total = calc.count_params(spec).total
    assert total == 6_865_424_896 and round(total / 1e9) == 7  # the paper's "7B"
    # the matrix memory, token by token: 5 FLOPs per element of C (d_k × d_v) and n, per head
    flops = calc.count_flops(spec, 8, "full").components
    assert flops["mlstm/scan"] == n * 5 * h * (qk // h) * (v // h + 1)
    assert flops["mlstm/gates"] == n * 2 * 2 * d * h
    # a serving state per sequence: each head's C, n and m (xLSTMCache.rnn_state)
    state = calc.infer(spec, gpu="h100", context=1024, batch=1).inference.state_cache_bytes
    assert state == n * h * ((qk // h) * (v // h) + qk // h + 1) * 2


@pytest.mark.parametrize(("changes", "message"), [
    ({"use_bias": True}, "use_bias=true puts a bias on the block RMSNorms"),
    ({"embedding_dim": 512}, "embedding_dim=512 differs from hidden_size=4096"),
    ({"num_heads": 3}, "qk_dim_factor=0.5 gives int(hidden_size · qk_dim_factor)=2048, which "
                       "num_heads=3 must divide"),
    ({"v_dim_factor": 0.0001}, "v_dim_factor=0.0001 gives int(hidden_size · v_dim_factor)=0"),
    ({"qk_dim_factor": "half"}, "qk_dim_factor='half' must be a number > 0"),
    ({"weight_mode": "split"}, "weight_mode='split' must be one of single, fused"),
    ({"num_blocks": 0}, "num_blocks=0 must be a whole number >= 1"),
    ({"chunk_size": 0}, "chunk_size=0 must be a whole number >= 1"),
])
def test_xlstm_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("xlstm-7b", **changes)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("update", "message"), [
    ({"mlstm.n_heads": 3}, "mlstm.n_heads=3 must divide mlstm.d_qk=2048"),
    ({"layers.mixer_pattern": ("attention",)}, "mlstm is given but no layer's mixer is mlstm"),
])
def test_mlstm_spec_refuses_in_one_line(update, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("xlstm-7b").updated(**update)
    assert "\n" not in str(error.value)


def test_mlstm_tensor_parallelism_splits_the_heads():
    """tp must divide mlstm.n_heads: the matrix memories split by whole heads."""
    with pytest.raises(CalcError, match=re.escape("tp=16 must divide mlstm.n_heads=8")):
        calc.memory(spec_of("xlstm-7b"), tp=16)
    assert calc.memory(spec_of("xlstm-7b"), tp=8).memory.total_bytes > 0


def test_griffin_tensor_parallelism_splits_the_gate_blocks():
    """tp must divide griffin.n_blocks: the gates split by whole blocks, even where the
    attention heads divide."""
    spec = spec_of("recurrentgemma-2b").updated(**{"griffin.n_blocks": 5})
    with pytest.raises(CalcError, match=re.escape("tp=2 must divide griffin.n_blocks=5")):
        calc.memory(spec, tp=2)
    assert calc.memory(spec_of("recurrentgemma-2b"), tp=2).memory.total_bytes > 0


def test_longcat_flash_reads_two_blocks_per_layer_and_zero_experts():
    """meituan-longcat/LongCat-Flash-Chat (tests/data): 28 decoder layers, each two latent
    attention blocks with a dense SwiGLU MLP of 12,288 and one MoE beside them (512 experts of
    2,048 and 256 zero-computation experts, top-12), d 6,144, vocabulary 131,072. calc reads 56
    layers: an MoE layer whose MLP is its shared expert, then a dense one. Each part a hand
    count from the config; the total 560,664,958,976 is the model card's "560B" (LongCat Team
    2025, arXiv 2509.01322), and the ~27B it activates on average (18.6B–31.3B) is the
    active count at top-12·512/768 = 8 FFN experts a token, less the token embedding."""
    spec = spec_of("longcat-flash-chat")
    moe = spec.moe
    assert spec.n_layers == 56 and spec.ffn_kinds == ("moe", "dense") * 28
    assert moe is not None and moe.shortcut and moe.n_zero_experts == 256
    assert (moe.n_experts, moe.top_k, moe.experts_per_token) == (512, 12, 8)
    assert (moe.n_shared_experts, moe.shared_width) == (1, 12288)
    counts = calc.count_params(spec)
    d, v, blocks, layers = 6144, 131072, 56, 28
    c = counts.components
    assert c["attention/q"] == blocks * (d * 1536 + 1536 + 1536 * 64 * 192)  # q_a, its norm, q_b
    assert c["attention/kv"] == blocks * (d * (512 + 64) + 512 + 512 * 64 * (128 + 128))
    assert c["attention/o"] == blocks * 64 * 128 * d
    assert c["moe/router"] == layers * d * (512 + 256)  # the zero experts scored too
    assert c["moe/experts"] == layers * 512 * 3 * d * 2048  # an identity holds no weights
    assert c["moe/shared"] == layers * 3 * d * 12288  # mlps[0]
    assert c["mlp/up"] + c["mlp/down"] == layers * 3 * d * 12288  # mlps[1]
    assert c["norms"] == blocks * 2 * d and c["final_norm"] == d
    assert c["embedding/token"] == c["lm_head"] == v * d
    assert counts.total == 560_664_958_976 and round(counts.total / 1e9) == 561
    # active: 8 of the 512 experts' weights a token (top-12 of 768, 2/3 of them FFN experts)
    assert counts.active == counts.total - layers * (512 - 8) * 3 * d * 2048
    assert counts.active == 27_954_796_544
    assert round((counts.active - v * d) / 1e9) == 27
    # the report's 18.6B–31.3B: no FFN expert and all 12 slots on FFN experts, embedding out
    per_expert = layers * 3 * d * 2048
    low, high = counts.active - v * d - 8 * per_expert, counts.active - v * d + 4 * per_expert
    assert (low // 10**8, high // 10**8) == (186, 313)
    flops = calc.count_flops(spec, 4096, "full").components
    assert flops["moe/experts"] == 2 * layers * 8 * 3 * d * 2048
    assert flops["moe/router"] == 2 * layers * d * 768
    note = next(n for n in calc.estimate(spec).notes if n.startswith("Experts:"))
    assert "12·512/768 = 8 FFN experts" in note and "moe.shortcut" in note


@pytest.mark.parametrize(("changes", "message"), [
    ({"num_key_value_heads": 8}, "num_key_value_heads=8 must equal num_attention_heads=64"),
    ({"head_dim": 128}, "head_dim=128 must equal qk_rope_head_dim=64"),
    ({"qk_head_dim": 64}, "qk_head_dim=64 must be qk_nope_head_dim \\+ qk_rope_head_dim"),
    ({"num_hidden_layers": 7}, "num_hidden_layers=7 must be even"),
    ({"moe_topk": 769}, "moe_topk=769 must not exceed n_routed_experts \\+ zero_expert_num"),
    ({"moe_topk": 5}, "moe_topk=5, n_routed_experts=512, zero_expert_num=256: calc counts"),
    ({"zero_expert_num": -1}, "zero_expert_num=-1 must be a whole number >= 0"),
    ({"q_lora_rank": None}, "q_lora_rank must be given"),
])
def test_longcat_flash_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=message) as error:
        spec_of("longcat-flash-chat", **changes)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("changes", "message"), [
    ({"mtp_modules": 1}, "moe.shortcut: a multi-token-prediction block's MoE has no next layer"),
    ({"parallel_block": True}, "moe.shortcut is not defined with parallel_block=True"),
    ({"layers.ffn_pattern": ("dense", "moe")},
     "moe.shortcut: MoE layer 55 needs a dense layer after it, whose FFN its experts' output "
     "joins \\(no next layer\\)"),
    ({"moe.top_k": 769}, "moe.top_k=769 must not exceed moe.n_experts=512 \\+ "
                         "moe.n_zero_experts=256"),
])
def test_the_spec_refuses_what_scmoe_and_zero_experts_cannot_be_in_one_line(changes, message):
    with pytest.raises(CalcError, match=message) as error:
        spec_of("longcat-flash-chat").updated(**changes)
    assert "\n" not in str(error.value)


def test_longcat_flash_num_hidden_layers_wins_as_in_transformers():
    """LongcatFlashConfig's num_hidden_layers is 2·num_layers, and a file's num_hidden_layers
    sets num_layers to half of it, over the file's own num_layers."""
    assert spec_of("longcat-flash-chat", num_hidden_layers=8).n_layers == 8
    assert spec_of("longcat-flash-chat", num_layers=3).n_layers == 6


def test_hybrid_layer_placement():
    jamba, lfm2 = spec_of("ai21-jamba-1.5-mini"), spec_of("lfm2-1.2b")
    assert [i for i, m in enumerate(jamba.mixer_kinds) if m == "attention"] == [4, 12, 20, 28]
    assert jamba.moe_layers == tuple(i % 2 == 1 for i in range(32))
    assert jamba.position.kind == "none" and jamba.mamba.dt_rank == 256
    assert [i for i, m in enumerate(lfm2.mixer_kinds) if m == "attention"] == [2, 5, 8, 10, 12,
                                                                                14]
    assert lfm2.ffn.d_ff == 8192  # 2/3 of block_ff_dim 12288, a multiple of 256


def test_gpt_neox_japanese_biases_the_last_layers_output_only():
    """modeling_gpt_neox_japanese.py: dense_bias on the layer whose number is
    num_hidden_layers - 1 only; the spec's one-line rules for the field."""
    spec = calc.spec_from_hf_config({"model_type": "gpt_neox_japanese", "num_hidden_layers": 3,
                                     "hidden_size": 64, "num_attention_heads": 4})
    att = spec.attention
    assert att.last_layer_out_bias and not att.out_bias and not att.qkv_bias
    assert spec.ffn.d_ff == 4 * 64 and not spec.ffn.bias and spec.tie_embeddings
    assert calc.count_params(spec).components["attention/o"] == 3 * 64 * 64 + 64
    with pytest.raises(ValueError, match=r"last_layer_out_bias=true with attention\.out_bias"):
        spec.updated(**{"attention.out_bias": True})
    with pytest.raises(ValueError, match=r"last_layer_out_bias: the last layer must be an "):
        spec.updated(**{"layers.mixer_pattern": ("attention", "conv", "conv"),
                        "short_conv": {"d_conv": 3}})


def test_doge_120m_moe_is_its_name():
    """SmallDoge's Doge-120M-MoE (its recipe's model_config, README): 122,728,992 parameters,
    the dynamic mask on every layer keeping 2048 keys, 4096 one-neuron experts routed by
    2·64 product sub-keys, 32 a token, beside the 1024-wide shared MLP."""
    spec = spec_of("doge-120m-moe")
    counts = calc.count_params(spec)
    assert counts.total == 122_728_992
    assert counts.active == counts.total - 16 * (4096 - 32) * 2 * 512
    assert spec.attention.dynamic_mask.keep == 2048 and spec.moe.sub_keys == 64
    # input_residual and post_attention_residual: one scale of d per sublayer, none other
    assert calc.count_params(spec).components["residual_scales"] == 16 * 2 * 512


@pytest.mark.parametrize(("changes", "message"), [
    ({"sliding_window": 64}, "sliding_window=64: calc reads Doge's dynamic mask over all"),
    ({"is_moe": True, "num_experts": 10, "num_experts_per_tok": 10},
     "moe.top_k=10 exceeds the 9 product keys"),
])
def test_doge_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_from_hf_config({"model_type": "doge", **changes})
    assert "\n" not in str(error.value)


def test_zaya1_8b_by_hand():
    """Zyphra/ZAYA1-8B (tests/data): 40 layers of d 2,048, 8 query and 2 KV heads of 128,
    CCA kernels 2 and 2, 16 experts of 2,048 (SwiGLU), a router of 256 with a skip class, the
    residual scales at both adds and on the embedding, the tied head. Each part a hand count
    from modeling_zaya.py; the total is transformers' own count (the released-config test)."""
    spec = spec_of("zaya1-8b")
    d, n, hd, (h, kv), r, e = 2048, 40, 128, (8, 2), 256, 16
    c = calc.count_params(spec).components
    channels = (h + kv) * hd
    # k_proj d → h_kv·d_h, v_proj_current and v_proj_delayed d → h_kv·d_h/2 each
    assert c["attention/kv"] == n * 2 * d * kv * hd
    assert c["attention/conv"] == n * (channels * 2 + channels + channels * hd * 2 + channels)
    assert c["attention/qk_norm"] == n * kv  # ZayaQKNorm.temp
    assert c["moe/router"] == n * (d * r + r + r + 2 * (r * r + r) + r * (e + 1)) + (n - 1) * r
    assert c["residual_scales"] == n * 2 * 4 * d + 2 * d
    assert calc.count_params(spec).total == 8_840_488_784
    flops = calc.count_flops(spec, 8, "full").components
    assert flops["attention/conv"] == n * 2 * channels * (2 + hd * 2)
    assert flops["moe/router"] == n * 2 * (d * r + 2 * r * r + r * (e + 1))
    assert flops.get("residual_scales", 0) == 0  # element-wise


@pytest.mark.parametrize(("changes", "message"), [
    ({"num_experts_per_tok": 2}, "num_experts_per_tok=2: ZayaConfig supports 1 only"),
    ({"layer_types": ["hybrid"] * 39 + ["full_attention"]},
     "layer_types must list 'hybrid' or 'hybrid_sliding' for each of the 40 layers"),
    ({"layer_types": ["hybrid_sliding"] * 40}, "sliding_window"),
    ({"num_key_value_heads": 3}, "num_attention_heads=8 must be a multiple of "
                                 "num_key_value_heads=3"),
])
def test_zaya_refuses_in_one_line(changes, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("zaya1-8b", **changes)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("update", "message"), [
    ({"attention.qk_norm": "head"}, "attention.cca is not defined with attention.qk_norm"),
    ({"attention.head_dim": 3, "attention.n_kv_heads": 1, "attention.n_heads": 1},
     "n_kv_heads·head_dim = 3 must be even"),
    ({"moe.first_dense_layers": 1}, "moe.router_mlp is not defined with moe.first_dense_layers"),
    ({"layers.exceptions": ({"layers": [0], "ffn": "dense"},)},
     "moe.router_mlp carries the router's state from each layer to the next"),
    ({"norm.placement": "sandwich"}, "residual_scales is not allowed with "
                                     "norm.placement='sandwich'"),
    ({"parallel_block": True}, "residual_scales is not allowed with parallel_block=True"),
])
def test_zaya_parts_refuse_in_one_line(update, message):
    with pytest.raises(CalcError, match=re.escape(message)) as error:
        spec_of("zaya1-8b").updated(**update)
    assert "\n" not in str(error.value)
