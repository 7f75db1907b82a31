"""The quirks of the Llama-shaped, rotary LayerNorm and GPT types (calc/hf/families/), multimodal
and quantized configs, and the refusal of unknown model types, without torch.

Released configs: tests/data/hf_configs (README.md cites each). Their counts against
transformers' own models are in test_hf_reference.py; here, the quirks each reader must get
right and the one-line refusals.
"""

from __future__ import annotations

import json

import pytest

import calc
from calc.counting import PER_LAYER_EMBEDDINGS
from calc.errors import CalcError
from calc.hf import hf_notes, spec_from_hf_config
from calc.hf.export import hf_config_from_spec
from calc.hf.quantization import quantization
from tests.hf_released import CONFIGS


def config(name: str, **changes) -> dict:
    return {**json.loads((CONFIGS / f"{name}.json").read_text()), **changes}


def spec_of(name: str, **changes) -> calc.ModelSpec:
    return spec_from_hf_config(config(name, **changes), name=name)


# ---- each family type's quirks --------------------------------------------------------------
def test_starcoder2_layernorm_biases_and_one_window():
    spec = spec_of("starcoder2-3b")
    assert spec.norm.kind == "layernorm" and spec.norm.has_bias
    assert spec.attention.qkv_bias and spec.attention.out_bias and spec.ffn.bias
    assert spec.n_kv_heads == 2 and spec.n_local_layers == 30
    assert spec.attention.sliding_window == 4096 and spec.tie_embeddings


def test_gpt_bigcode_multi_query_learned_positions():
    spec = spec_of("santacoder")
    assert spec.n_kv_heads == 1 and spec.position_table == 2048 and spec.ffn.d_ff == 8192
    assert spec_of("santacoder", multi_query=False).n_kv_heads == 16


def test_gpt_neo_expands_attention_types_into_alternating_windows():
    spec = spec_of("gpt-neo-125m")
    assert spec.attention.layer_pattern == ("global", "local")
    assert spec.attention.sliding_window == 256 and spec.n_local_layers == 6
    assert (spec.attention.qkv_bias, spec.attention.out_bias) == (False, True)


def test_gptj_parallel_block_and_biased_head():
    spec = spec_of("gpt-j-6b")
    assert spec.parallel_block and spec.norms_per_layer == 1 and spec.lm_head_bias
    assert not spec.attention.qkv_bias and spec.ffn.bias and spec.ffn.d_ff == 4 * 4096


def test_openai_gpt_is_post_layernorm_without_final_norm():
    spec = spec_of("openai-gpt")
    assert (spec.norm.placement, spec.norm.final) == ("post", False)
    assert spec.position_table == 512 and spec.tie_embeddings


def test_olmo_layernorms_have_no_parameters():
    # OLMo 1's non-parametric LayerNorm (Groeneveld et al. 2024, §2.1): no γ, no β anywhere.
    spec = spec_of("olmo-1b-hf")
    assert (spec.norm.kind, spec.norm.weights, spec.norm.has_bias) == ("layernorm", False, False)
    assert spec.ffn.gated and not spec.ffn.bias and spec.tie_embeddings
    params = calc.count_params(spec)
    assert not any(value for part, value in params.components.items() if "norm" in part)
    # the same shape with weighted LayerNorms carries 2·d per norm: 2 a layer and the final one
    weighted = spec.model_copy(update={"norm": spec.norm.model_copy(
        update={"weights": True, "bias": True})})
    assert calc.count_params(weighted).total - params.total == 2 * 2048 * (2 * 16 + 1)


def test_apertus_xielu_learns_two_scalars_in_every_mlp():
    spec = spec_of("apertus-8b-2509")
    assert (spec.ffn.activation, spec.ffn.gated, spec.attention.qk_norm) == ("xielu", False,
                                                                            "head")
    params = calc.count_params(spec)
    assert params.per_dense_ffn["mlp/act"] == 2 and params.components["mlp/act"] == 2 * 32
    relu2 = calc.count_params(spec_of("apertus-8b-2509", hidden_act="relu2"))
    assert params.total - relu2.total == 2 * 32


def test_apertus1p5_scores_only_the_text_tokens():
    """Apertus 1.5 8B (tests/data/hf_configs/README.md): the embedding keeps all 266,752 tokens
    (text, image and audio codes), the head the first 131,072 (output_vocab_size). 8,609,083,456
    parameters and 1,932,735,283,200 forward FLOPs at 128 tokens are transformers' own model's
    counts (python -m calc verify FILE --hf; test_hf_reference.py checks them)."""
    spec = spec_of("apertus-v1.5-8b")
    assert (spec.vocab_size, spec.output_vocab_size, spec.head_rows) == (266752, 131072, 131072)
    params = calc.count_params(spec)
    assert params.components["embedding/token"] == 266752 * 4096
    assert params.components["lm_head"] == 131072 * 4096
    assert params.total == 8_609_083_456
    assert calc.count_flops(spec, 128, "full").forward * 128 == 1_932_735_283_200
    assert calc.count_flops(spec, 128).components["lm_head"] == 2 * 4096 * 131072
    # the unpruned head of the same release would be the vocabulary's rows
    whole = spec_of("apertus-v1.5-8b", text_config={**config("apertus-v1.5-8b")["text_config"],
                                                    "output_vocab_size": None})
    assert calc.count_params(whole).total - params.total == (266752 - 131072) * 4096
    exported = hf_config_from_spec(spec)
    assert (exported["model_type"], exported["output_vocab_size"]) == ("apertus1p5_text", 131072)
    assert hf_config_from_spec(whole)["model_type"] == "apertus"


def test_apertus1p5_head_of_all_rows_or_tied_is_the_vocabulary():
    """Apertus1p5TextConfig turns output_vocab_size == vocab_size into None; tied, the head is
    the embedding itself (tie_weights swaps in its vocab_size rows, whatever output_vocab_size
    says: transformers 5.24.0 builds logits of vocab_size)."""
    for extra in ({"output_vocab_size": 266752},
                  {"output_vocab_size": 1000, "tie_word_embeddings": True}):
        spec = spec_from_hf_config({"model_type": "apertus1p5_text", **extra})
        assert spec.output_vocab_size is None and spec.head_rows == 266752
    tied = spec_from_hf_config({"model_type": "apertus1p5_text", "output_vocab_size": 1000,
                                "tie_word_embeddings": True})
    assert tied.tie_embeddings and calc.count_params(tied).components["lm_head"] == 0


def test_a_narrower_head_is_written_only_where_a_type_holds_it():
    spec = spec_of("llama-3.1-8b").updated(output_vocab_size=1000)
    with pytest.raises(CalcError, match=r"cannot hold output_vocab_size=1000 \(\w+'s LM head "
                                        r"has vocab_size=128256 rows\)"):
        hf_config_from_spec(spec)


def test_nanochat_rmsnorms_have_no_weights():
    # modeling_nanochat.py: weightless RMSNorms after the embedding, before each sublayer, over
    # each head's queries and keys, and before the head; ReLU² MLP without bias.
    spec = spec_of("nanochat-d32")
    assert (spec.norm.kind, spec.norm.weights, spec.norm.embedding) == ("rmsnorm", False, True)
    assert (spec.attention.qk_norm, spec.attention.qk_norm_weights) == ("head", False)
    assert spec.ffn.activation == "relu2" and not spec.ffn.bias and not spec.tie_embeddings
    params = calc.count_params(spec)
    assert not any(value for part, value in params.components.items() if "norm" in part)
    # karpathy/nanochat discussion #8: d32 has 1,879,048,192 parameters
    assert params.total == 1_879_048_192


def test_granite_swa_sinks_windows_and_nope_layers():
    spec = spec_of("granite-swash-2b")
    assert spec.attention.sinks and spec.attention.sliding_window == 128
    assert spec.attention_kinds == ("global", "local", "local", "local") * 6
    params = calc.count_params(spec)
    # one sink logit per head in each of the 24 layers
    without = spec.model_copy(update={"attention": spec.attention.model_copy(
        update={"sinks": False})})
    assert params.total - calc.count_params(without).total == 20 * 24
    # a full layer whose layer_rope_theta is 0 has no position encoding; a sliding one keeps
    # its window (RoPE changes no count)
    thetas = [0.0, 10000.0, 0.0, 10000.0] * 6
    spec = spec_of("granite-swash-2b", layer_rope_theta=thetas)
    assert spec.attention_kinds == ("nope", "local", "local", "local") * 6


def test_phi_parallel_block_qk_layernorm_and_head_bias():
    spec = spec_of("phi-2")
    assert spec.parallel_block and spec.lm_head_bias and spec.attention.qk_norm == "none"
    assert spec_of("phi-2", qk_layernorm=True).attention.qk_norm == "head"


def test_cohere_parallel_layernorm_without_bias_and_per_head_qk_norm_weights():
    spec = spec_of("command-r-08-2024")
    assert spec.parallel_block and spec.norm.kind == "layernorm" and not spec.norm.has_bias
    plus = spec_of("command-r-08-2024", use_qk_norm=True)
    # CohereLayerNorm((heads, head_dim)): γ of (64 + 8) heads × 128, no β, in each of 40 layers
    norms = calc.count_params(plus).components["attention/qk_norm"]
    assert norms == 40 * (64 + 8) * 128


def test_stablelm_parallel_residual_shares_one_norm():
    spec = spec_of("stablelm-2-1_6b")
    assert spec.attention.qkv_bias and not spec.attention.out_bias and spec.ffn.gated
    assert spec.norms_per_layer == 2
    assert spec_of("stablelm-2-1_6b", use_parallel_residual=True).norms_per_layer == 1


def test_mpt_alibi_no_biases_and_a_four_times_mlp():
    spec = spec_of("mpt-7b")
    assert spec.position.kind == "alibi" and not spec.norm.has_bias and not spec.ffn.bias
    assert spec.ffn.d_ff == 4 * 4096
    preset = calc.load_preset("mpt-7b").spec
    assert calc.count_params(spec).total == calc.count_params(preset).total == 6_649_286_656


def test_minicpm3_dense_mla_with_v_head_dim_from_the_width():
    spec = spec_of("minicpm3-4b")
    mla = spec.attention.mla
    assert (mla.q_lora_rank, mla.kv_lora_rank, mla.v_head_dim) == (768, 256, 2560 // 40)
    assert spec.moe is None and spec.tie_embeddings


def test_glm4_sandwich_norms_and_glm_query_key_value_biases():
    glm4 = spec_from_hf_config({"model_type": "glm4"})
    glm = spec_from_hf_config({"model_type": "glm"})
    assert glm4.norm.placement == "sandwich" and glm.norm.placement == "pre"
    assert (glm.attention.qkv_bias, glm.attention.out_bias) == (True, False)


@pytest.mark.parametrize("name, qkv, out, mlp", [
    ("seed-oss-36b-instruct", True, False, False), ("helium-1-preview-2b", False, False, False),
    ("ernie-4.5-0.3b-pt", False, False, False), ("granite-3.3-8b-instruct", False, False, False),
])
def test_llama_shaped_bias_switches(name, qkv, out, mlp):
    spec = spec_of(name)
    assert (spec.attention.qkv_bias, spec.attention.out_bias, spec.ffn.bias) == (qkv, out, mlp)


def test_hunyuan_per_head_qk_norm():
    assert spec_of("hy-mt2-7b").attention.qk_norm == "head"


def test_ministral_layer_types_become_a_pattern():
    spec = spec_from_hf_config({"model_type": "ministral", "head_dim": 128, "num_hidden_layers": 4,
                                "layer_types": ["sliding_attention"] * 3 + ["full_attention"]})
    assert spec.attention.layer_pattern == ("local", "local", "local", "global")


def test_exaone_reads_its_gpt_style_aliases():
    spec = spec_of("exaone-3.0-7.8b-instruct")  # num_layers, activation_function
    assert spec.n_layers == 32 and spec.ffn.activation == "swiglu"


# ---- refused: one line naming the field ------------------------------------------------------
BAD = [
    ({"model_type": "beam", "rope_parameters": {"full_attention": None,
                                                "sliding_attention": {"rope_type": "default"}}},
     "has no rope_theta: Beam's rotary embedding reads it unconverted"),
    ({"model_type": "beam", "rope_parameters": {"full_attention": None}},
     "has no 'sliding_attention' entry: transformers' Beam reads one per layer type"),
    ({"model_type": "beam", "rope_parameters": {"sliding_attention": None,
                                                "full_attention": None}},
     "rope_parameters['sliding_attention']=None: sliding layers without position"),
    ({"model_type": "beam", "sliding_window": None}, "sliding_window=null with sliding_atte"),
    ({"model_type": "dots3_note_text", "swa_head_dim": 200, "swa_qk_rope_head_dim": 64},
     "swa_head_dim=200 must equal swa_qk_nope_head_dim + swa_qk_rope_head_dim (192 + 64)"),
    ({"model_type": "dots3_note_text", "swa_num_key_value_heads": 8},
     "swa_num_key_value_heads=8 must equal swa_num_attention_heads"),
    ({"model_type": "dots3_note_text", "per_layer_config": {"0": {"q_lora_rank": 8}}},
     "per_layer_config gives layers different shapes"),
    ({"model_type": "dots3_note_text", "q_lora_rank": None}, "q_lora_rank=null: dots3"),
    ({"model_type": "axk2", "q_lora_rank": None},
     "q_lora_rank=null: A.X-K2's indexer and output gate read the query latent"),
    ({"model_type": "axk2", "num_hidden_layers": 2,
      "layer_types": ["indexed_attention", "full_attention"]},
     "layer_types=['indexed_attention', 'full_attention']: every A.X-K2 layer is indexed"),
    ({"model_type": "axk2", "gated_norm_rank": 0}, "gated_norm_rank=0 must be a whole number"),
    ({"model_type": "axk1", "q_lora_rank": None},
     "q_lora_rank=null: transformers' AXK1Attention always projects queries"),
    ({"model_type": "gpt_neox_japanese", "hidden_size": 64, "num_attention_heads": 5},
     "num_attention_heads=5 must divide hidden_size=64: the attention splits"),
    (config("hy-mt2-7b", use_cla=True), "use_cla=True: transformers' hunyuan_v1_dense does not"),
    (config("hy-mt2-7b", use_qk_norm=False), "use_qk_norm=False: transformers' hunyuan_v1_dense"),
    ({"model_type": "hunyuan_v1_dense"}, "head_dim=None: transformers' hunyuan_v1_dense"),
    ({"model_type": "ministral", "head_dim": 64, "sliding_window": None}, "sliding_window=None"),
    (config("internlm3-8b-instruct", qkv_bias=True), "qkv_bias=True with bias=False"),
    (config("helium-1-preview-2b", head_dim=64), "num_attention_heads=20 × head_dim=64 must"),
    (config("stablelm-2-1_6b", qk_layernorm=True), "qk_layernorm=true adds per-head LayerNorms"),
    (config("mpt-7b", expansion_ratio=8), "expansion_ratio=8: transformers' MPT always builds"),
    (config("mpt-7b", no_bias=False), "no_bias=False: transformers' MPT always builds"),
    (config("mpt-7b", attn_config={"alibi": False}), "attn_config.alibi=False: transformers'"),
    (config("mpt-7b", attn_config={"attn_type": "grouped_query_attention"}), "attn_type="),
    ({"model_type": "codegen", "n_embd": 1026, "n_head": 1}, "n_embd=1026 must be a multiple"),
    ({"model_type": "nemotron"}, "num_key_value_heads=None: transformers' Nemotron"),
    (config("openai-gpt", afn="gelu_new"), "afn='gelu_new': openai-gpt accepts relu, silu"),
    (config("gpt-neo-125m", attention_types=[[["global"], 5]]), "for each of the 12 layers"),
    (config("santacoder", add_cross_attention=True), "add_cross_attention=true"),
    (config("phi-2", qk_layernorm=True, head_dim=64), "head_dim=64 with qk_layernorm=true"),
    (config("minicpm3-4b", num_key_value_heads=8), "num_key_value_heads=8 must equal num_att"),
    (config("olmo-1b-hf", head_dim=None), "head_dim=None: transformers' olmo attention"),
    ({"model_type": "apertus1p5_text", "output_vocab_size": 266753},
     "output_vocab_size=266753 must be a whole number in [1, vocab_size=266752]"),
    ({"model_type": "apertus1p5_text", "output_vocab_size": 0}, "output_vocab_size=0 must be"),
    (config("granite-swash-2b", layer_rope_theta=[0.0]), "layer_rope_theta must list one"),
    (config("flint-defaults", mlp_only_layers=1), "mlp_only_layers=1 must be a list"),
    ({"model_type": "laguna", "num_hidden_layers": 3, "num_attention_heads_per_layer": [8, 16, 8],
      "layer_types": ["sliding_attention"] * 3},
     "gives the sliding layers [8, 16] query heads; calc holds one count per attention kind"),
    ({"model_type": "laguna", "num_hidden_layers": 2, "num_attention_heads_per_layer": [12, 8]},
     "num_attention_heads_per_layer has 12 heads, which num_key_value_heads=8 does not"),
    ({"model_type": "laguna", "gating": "per-element", "attention_bias": True},
     "attention_bias=true with gating per element"),
    ({"model_type": "laguna", "gating": "sigmoid"}, "gating='sigmoid': calc reads true or"),
    ({"model_type": "gemma4_unified_text", "use_bidirectional_attention": "all"},
     "use_bidirectional_attention='all' makes every layer bidirectional"),
    ({"model_type": "gemma4_unified_text", "num_hidden_layers": 8, "num_kv_shared_layers": 3},
     "no earlier global layer computes the keys and values the shared global layers read"),
    ({"model_type": "gemma4_unified_text", "num_hidden_layers": 6, "num_kv_shared_layers": 6},
     "attention.kv_shared_layers=6 must be below n_layers=6"),
    ({"model_type": "gemma4_unified_text", "num_hidden_layers": 3,
      "per_layer_config": {"0": {"head_dim": 128}}},
     "per_layer_config.0 gives sliding layer 0 a shape of its own"),
    ({"model_type": "gemma4_unified_text", "num_hidden_layers": 2,
      "layer_types": ["full_attention", "full_attention"],
      "per_layer_config": {"0": {"head_dim": 128}, "1": {"head_dim": 64}}},
     "per_layer_config gives the full layers different shapes"),
    ({"model_type": "gemma4_unified_text", "per_layer_config": {"5": {"intermediate_size": 8}}},
     "per_layer_config.5 sets ['intermediate_size']"),
    ({"model_type": "deepseek_v4", "num_hidden_layers": 3, "compress_ratios": [0, 0, 4, 128],
      "compress_rates": {"heavily_compressed_attention": 128}},
     "compress_rates['compressed_sparse_attention']=None must be a whole number >= 1"),
    ({"model_type": "deepseek_v4", "num_hidden_layers": 2, "compress_ratios": [0, 4],
      "index_topk": 0},
     "index_topk=0 must be a whole number >= 1"),
    ({"model_type": "deepseek_v4", "num_hidden_layers": 2, "compress_ratios": [0, 8]},
     "compress_ratios=[0, 8] must list 0, 4 or 128 for each layer"),
    ({"model_type": "deepseek_v4", "num_hidden_layers": 2,
      "layer_types": ["sliding_attention"] * 2, "mlp_layer_types": ["hash_moe", "dense"]},
     "mlp_layer_types must give each of the 2 layers hash_moe or moe"),
    ({"model_type": "deepseek_v4", "num_hidden_layers": 2,
      "layer_types": ["sliding_attention"] * 2, "mlp_bias": True},
     "mlp_bias=true biases the shared MLP but not the routed experts"),
    ({"model_type": "deepseek_v4", "num_hidden_layers": 2,
      "layer_types": ["sliding_attention"] * 2, "o_groups": 3},
     "o_groups=3 must divide num_attention_heads·head_dim = 32768"),
    ({"model_type": "gemma4_text", "hidden_size_per_layer_input": None},
     "hidden_size_per_layer_input=None must be a whole number >= 0"),
    ({"model_type": "gemma4_text", "enable_moe_block": True},
     "num_experts=None must be a whole number >= 1"),
    ({"model_type": "gemma4_text", "enable_moe_block": True, "num_experts": 4,
      "top_k_experts": 5, "moe_intermediate_size": 8},
     "top_k_experts=5 must not exceed num_experts=4"),
    ({"model_type": "gemma4", "text_config": {
        "model_type": "gemma4_text", "num_hidden_layers": 8, "num_kv_shared_layers": 2,
        "use_double_wide_mlp": True, "enable_moe_block": True, "num_experts": 4,
        "top_k_experts": 2, "moe_intermediate_size": 8}},
     "makes the kv-shared layers' dense MLP beside the experts 2 × intermediate_size wide"),
    ({"model_type": "diffllama", "num_key_value_heads": 1},
     "num_key_value_heads=1: transformers' DiffLlama splits the values in two halves"),
    (config("gemma-4-e2b-it-assistant", num_centroids=3),
     "num_centroids=3 must divide text_config.vocab_size=262144"),
    (config("gemma-4-e2b-it-assistant", num_centroids=4, centroid_intermediate_top_k=5),
     "centroid_intermediate_top_k=5 must not exceed num_centroids=4"),
    ({"model_type": "gemma4_assistant", "text_config": {"hidden_size_per_layer_input": 0,
                                                        "vocab_size_per_layer_input": 0,
                                                        "num_kv_shared_layers": 2}},
     "text_config.num_kv_shared_layers=2 must be num_hidden_layers=30"),
    ({"model_type": "gemma4_assistant", "text_config": {"hidden_size_per_layer_input": 0,
                                                        "vocab_size_per_layer_input": 0,
                                                        "enable_moe_block": True}},
     "text_config.enable_moe_block=True must be false"),
    ({"model_type": "gemma4_unified_assistant", "text_config": {"model_type": "gemma4_text"}},
     "text_config.model_type='gemma4_text': gemma4_unified_assistant builds its layers from "
     "'gemma4_unified_text'"),
    ({"model_type": "gemma4_unified_assistant", "text_config": "gemma"},
     "text_config='gemma' must be a config object"),
    ({"model_type": "diffllama", "attention_dropout": 0.1},
     "attention_dropout=0.1: transformers' DiffLlama refuses dropout"),
    ({"model_type": "mimo_v2_flash", "num_attention_heads": 4, "num_key_value_heads": 4},
     "num_attention_heads=4 is not a multiple of the 8 key/value heads of the sliding layers"),
    ({"model_type": "mimo_v2_flash", "hybrid_layer_pattern": [0] * 48},
     "but transformers mimo_v2_flash's model ignores the field and builds [0, 1, 1, 1, 1, 0, "),
    ({"model_type": "mimo_v2_flash", "swa_num_key_value_heads": 4},
     "swa_num_key_value_heads=4, but transformers mimo_v2_flash's model ignores the field and "
     "builds 8"),
    ({"model_type": "lfm3", "layer_types": ["chunked_attention"] * 24},
     "lfm3 builds conv, full_attention and sliding_attention"),
    ({"model_type": "lfm3", "head_dim": None}, "head_dim=None: transformers' lfm3 attention"),
    (config("nanochat-d32", head_dim=None), "head_dim=None: transformers' nanochat attention"),
    (config("apertus-8b-2509", post_norm=True), "post_norm=True: transformers' apertus always"),
    (config("apertus-8b-2509", hidden_act="xielu2"), "hidden_act='xielu2' is not an activ"),
    ({"model_type": "hy_v4", "q_lora_rank": None},
     "q_lora_rank=null: HYV4Attention always projects queries through q_a_proj"),
    ({"model_type": "hy_v4", "num_hidden_layers": 2, "indexer_types": ["shared", "full"]},
     "indexer_types[0]='shared': no earlier layer selects its keys"),
    ({"model_type": "hy_v4", "num_hidden_layers": 2, "indexer_types": ["full"]},
     "indexer_types must list 'full' or 'shared' for each of the 2 layers"),
    ({"model_type": "hy_v4", "hc_mult": 0}, "hc_mult=0 must be a whole number >= 1"),
    ({"model_type": "nemotron_nas"},
     "model_type='nemotron_nas' is not supported (closest supported: nemotron, nemotron_h)"),
    ({"model_type": "hrm_text", "L_cycles": 0}, "L_cycles=0 must be a whole number >= 1"),
    ({"model_type": "minimax_m3_vl_text", "num_hidden_layers": 2,
      "layer_types": ["full_attention", "minimax_m3_sparse"], "index_local_blocks": 0},
     "index_local_blocks=0: calc counts MiniMax-M3's block selection where the query's own"),
    ({"model_type": "minimax_m3_vl_text", "num_hidden_layers": 2,
      "sparse_attention_config": {"sparse_attention_freq": [0, 1], "sparse_num_index_heads": 3}},
     "index_n_heads=3 must divide num_attention_heads=64"),
    ({"model_type": "bert"}, "'bert' is a bidirectional encoder of the BERT family"),
    ({"model_type": "my_llama", "architectures": ["LlamaForCausalLM"]}, "closest supported: l"),
    ({"model_type": "t5"}, "write the model as a spec file (TOML, docs/custom-models.md)"),
    ({"model_type": "my_vlm", "text_config": {"hidden_size": 8}}, "text_config has no model_t"),
    ({"model_type": "my_vlm", "tie_word_embeddings": True,
      "text_config": {"model_type": "llama", "tie_word_embeddings": False}},
     "tie_word_embeddings=True and text_config.tie_word_embeddings=False"),
]


@pytest.mark.parametrize("bad, message", BAD, ids=[message for _, message in BAD])
def test_bad_configs_name_the_field(bad, message):
    with pytest.raises(CalcError) as error:
        spec_from_hf_config(bad)
    text = str(error.value)
    assert message in text and "\n" not in text


def test_cli_refuses_an_unknown_type_naming_the_closest(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "qwen3_6"}))
    result = cli(str(path), "--format", "json")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "closest supported: qwen3, qwen2, qwen3_moe" in result.err
    assert "docs/custom-models.md" in result.err


# ---- multimodal: the language model is counted, the towers are named -------------------------
def test_llava_counts_its_language_model_and_names_the_tower():
    spec = spec_of("llava-1.5-7b-hf")
    vicuna = spec_from_hf_config({"model_type": "llama", "vocab_size": 32064,
                                  "max_position_embeddings": 4096})
    assert calc.count_params(spec).total == calc.count_params(vicuna).total
    assert hf_notes(config("llava-1.5-7b-hf")) == [
        "llava is multimodal: the counts are its language model (text_config, model_type "
        "llama); the vision tower (vision_config) and the projector are not counted."]


@pytest.mark.parametrize("wrapper, top, text, tied", [
    ("llava", None, True, True),  # either flag ties LLaVA's head
    ("llava", False, False, False),
    ("mistral3", None, False, True),  # Mistral 3 follows its own flag, default tied
    ("mistral3", False, True, False),
    ("llava_next", None, True, False),
])
def test_the_wrapper_decides_how_the_head_is_tied(wrapper, top, text, tied):
    inner = {"model_type": "mistral" if wrapper == "mistral3" else "llama",
             "tie_word_embeddings": text}
    wrapped = {"model_type": wrapper, "text_config": inner, "vision_config": {}}
    if top is not None:
        wrapped["tie_word_embeddings"] = top
    assert spec_from_hf_config(wrapped).tie_embeddings == tied


def test_a_multimodal_text_type_calc_does_not_read_is_named():
    with pytest.raises(CalcError, match="text_config: model_type='siglip_text' is not supported"):
        spec_from_hf_config({"model_type": "llava", "text_config": {"model_type": "siglip_text"}})


# ---- quantized: counts of the unquantized model, memory at the quantized bytes ---------------
@pytest.mark.parametrize("quantization_config, dtype, compute", [
    ({"quant_method": "gptq", "bits": 4}, "int4", "bf16"),
    ({"quant_method": "awq", "bits": 4}, "int4", "bf16"),
    ({"quant_method": "gptq", "bits": 8}, "int8", "bf16"),
    ({"quant_method": "gptq", "bits": 3}, None, "bf16"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
     "int4", "bf16"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8", None),
    ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8", None),
    ({"quant_method": "mxfp4"}, "fp4", "bf16"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "int"}, "input_activations": None}}}, "int4", "bf16"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 8, "type": "float"},
        "input_activations": {"num_bits": 8, "type": "float"}}}}, "fp8", None),
    ({"quant_method": "hqq"}, None, None),
])
def test_quantization_configs_give_the_storage_of_the_weights(quantization_config, dtype,
                                                              compute):
    stored = quantization({"model_type": "llama", "quantization_config": quantization_config})
    assert (stored.dtype, stored.compute) == (dtype, compute)


def test_a_quantized_config_counts_the_unquantized_model_and_says_so():
    quantized = config("deepseek-v3")  # the release's block fp8
    plain = {key: value for key, value in quantized.items() if key != "quantization_config"}
    assert calc.count_params(spec_from_hf_config(quantized)).total \
        == calc.count_params(spec_from_hf_config(plain)).total
    (note,) = hf_notes(quantized)
    assert note.startswith("quantization_config (fp8, 8-bit float weights): parameter and FLOP "
                           "counts are of the unquantized model; infer stores the weights at fp8")
    assert hf_notes(plain) == []


def test_family_specs_export_to_their_own_writers():
    # The first writer that round-trips wins: these need a family writer of their own.
    for name, model_type in [("mpt-7b", "mpt"), ("santacoder", "gpt_bigcode"),
                             ("gpt-neo-125m", "gpt_neo"), ("command-r-08-2024", "cohere"),
                             ("minicpm3-4b", "minicpm3"), ("starcoder2-3b", "starcoder2"),
                             ("olmo-1b-hf", "olmo"), ("apertus-8b-2509", "apertus"),
                             ("apertus-v1.5-8b", "apertus1p5_text"),
                             ("nanochat-d32", "nanochat"),
                             ("granite-swash-2b", "granite_swa")]:
        assert hf_config_from_spec(spec_of(name))["model_type"] == model_type, name


# ---- what the reports say and do with them ---------------------------------------------------
def test_infer_stores_a_quantized_checkpoint_at_its_own_dtype(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config("llama-3.1-8b", quantization_config={
        "quant_method": "gptq", "bits": 4, "group_size": 128})))
    data = cli("infer", str(path), "--gpu", "h100", "--format", "json").json()
    block = data["inference"]
    assert (block["options"]["dtype"], block["options"]["compute_dtype"]) == ("int4", "bf16")
    assert block["weights_bytes"] == block["params"] // 2  # 0.5 B a weight
    assert any("gptq, 4-bit weights" in line for line in data["conventions"])
    chosen = cli("infer", str(path), "--gpu", "h100", "--dtype", "bf16", "--format", "json")
    assert chosen.json()["inference"]["weights_bytes"] == 2 * block["params"]


def test_infer_of_an_unquantized_config_keeps_bf16(cli):
    data = cli("infer", str(CONFIGS / "llama-3.1-8b.json"), "--gpu", "h100",
               "--format", "json").json()
    assert data["inference"]["options"]["dtype"] == "bf16"


def test_the_estimate_says_what_a_multimodal_count_leaves_out(cli):
    data = cli(str(CONFIGS / "llava-1.5-7b-hf.json"), "--format", "json").json()
    assert data["params"]["total"] == 6_738_939_904
    assert any("vision tower (vision_config) and the projector are not counted" in line
               for line in data["notes"])


def test_the_refusal_docs_quote_is_what_calc_says():
    """docs/custom-models.md quotes the line an unknown model_type gets (wrapped at 100)."""
    page = (CONFIGS.parents[2] / "docs" / "custom-models.md").read_text()
    quoted = page.split("```text\n", 1)[1].split("```", 1)[0]
    with pytest.raises(CalcError) as error:
        spec_from_hf_config({"model_type": "internlm2"}, where="config file 'config.json'")
    assert " ".join(quoted.split()) == str(error.value)


# ---- Gemma 4's unified language model --------------------------------------------------------
def test_gemma4_12b_reads_its_full_layers_shape_and_keys_as_values():
    """google/gemma-4-12B (tests/data/hf_configs/gemma-4-12b.json): 48 layers, every 6th full
    with head_dim 512 (global_head_dim) and one KV head whose keys are its values
    (num_global_key_value_heads, attention_k_eq_v: no v_proj); 11,907,350,272 parameters in
    its language model, transformers' own Gemma4UnifiedForConditionalGeneration's count less
    its vision and audio embedders (python -m calc verify --hf, tests/test_hf_reference.py)."""
    spec = spec_of("gemma-4-12b")
    att = spec.attention
    assert att.layer_pattern == ("local",) * 5 + ("global",)
    assert att.kind_shapes["global"].model_dump(exclude_none=True) == {
        "n_kv_heads": 1, "head_dim": 512, "k_eq_v": True}
    assert not att.k_eq_v and att.kv_shared_layers == 0 and spec.double_wide_layers == 0
    counts = calc.count_params(spec)
    assert counts.total == 11_907_350_272
    # W_K alone on the 8 full layers (3840 × 512), W_K and W_V on the 40 sliding ones
    assert counts.components["attention/kv"] == 8 * 3840 * 512 + 40 * 2 * 3840 * 8 * 256


def test_gemma4_kv_shared_layers_and_their_double_wide_mlp():
    """The last num_kv_shared_layers layers build no k_proj, v_proj or k_norm
    (modeling_gemma4_unified.py, kv_sharing_modes "reuse") and, with use_double_wide_mlp, an
    MLP of 2 × intermediate_size; they cache nothing; use_double_wide_mlp without them is
    nothing."""
    base = {"model_type": "gemma4_unified_text", "vocab_size": 64, "hidden_size": 32,
            "intermediate_size": 24, "num_hidden_layers": 8, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "global_head_dim": 16,
            "sliding_window": 8, "use_double_wide_mlp": True}
    plain = spec_from_hf_config(base)
    assert plain.ffn.double_wide is False and plain.double_wide_layers == 0
    shared = spec_from_hf_config({**base, "num_kv_shared_layers": 2})
    assert shared.kv_shared_counts == (2, 1, 1, 0)  # layers 6 (sliding) and 7 (full)
    assert shared.double_wide_layers == 2
    a, b = calc.count_params(plain).components, calc.count_params(shared).components
    # layer 6: W_K, W_V 32 × 2·8 each and k_norm 8; layer 7: 32 × 2·16 each and k_norm 16
    assert a["attention/kv"] - b["attention/kv"] == 2 * 32 * 16 + 2 * 32 * 32
    assert a["attention/qk_norm"] - b["attention/qk_norm"] == 8 + 16
    assert b["mlp/up"] - a["mlp/up"] == 2 * 2 * 32 * 24  # two layers, up and gate doubled
    cache = [calc.infer(s, gpu="h100", context=4).inference.kv_cache_bytes_per_token
             for s in (plain, shared)]
    assert cache[0] - cache[1] == 2 * (2 * 2 * 8 + 2 * 2 * 16)  # bf16 K and V of 6 and 7


def test_gemma4_per_layer_config_as_a_saved_config_carries_it():
    """A config transformers saved holds per_layer_config (configuration_utils.py) instead of
    global_head_dim: the full layers' head_dim and num_key_value_heads from it."""
    types = ["sliding_attention", "full_attention"] * 2
    spec = spec_from_hf_config({
        "model_type": "gemma4_unified_text", "num_hidden_layers": 4, "layer_types": types,
        "attention_k_eq_v": True,
        "per_layer_config": {"1": {"head_dim": 128, "num_key_value_heads": 2},
                             "3": {"head_dim": 128, "num_key_value_heads": 2}}})
    assert spec.heads_of("global") == (8, 2, 128, 128) and spec.keys_are_values("global")
    # without attention_k_eq_v, num_global_key_value_heads is not read (configuration_gemma4)
    spec = spec_from_hf_config({"model_type": "gemma4_unified_text",
                                "num_global_key_value_heads": 1})
    assert spec.heads_of("global") == (8, 4, 512, 512) and not spec.keys_are_values("global")


def test_gemma4_e2b_assistant_counts_its_projections_and_centroid_head():
    """google/gemma-4-E2B-it-assistant (tests/data/hf_configs): 77,731,328 parameters, as
    transformers builds them (test_released_config_through_the_cli_matches_transformers): the
    tied 262144 × 256 table, pre_projection 3072 × 256 and post_projection 256 × 1536, the
    centroids 256 × 2048; per token the head multiplies 32 clusters × 128 rows, not 262144."""
    spec = spec_of("gemma-4-e2b-it-assistant")
    counts = calc.count_params(spec)
    assert counts.total == 77_731_328
    assert counts.components["drafter/projections"] == 2 * 1536 * 256 + 256 * 1536
    assert counts.components["centroid_head"] == 256 * 2048
    assert counts.components["attention/kv"] == 0  # every layer reads the target's
    flops = calc.count_flops(spec, 128, "full").components
    assert flops["lm_head"] == 2 * 256 * 32 * (262144 // 2048)
    assert flops["centroid_head"] == 2 * 256 * 2048


def test_gemma4_e2b_assistant_training_memory_keeps_the_states_and_the_gathered_rows():
    """Training the E2B drafter at s = 512: pre_projection keeps its 3072-wide input (bf16)
    beside the token ids, and the centroid head's bmm keeps its 32 × 128 gathered head rows
    (256 wide, bf16) and their int64 indices, per token (calc.formulas.memory)."""
    spec = spec_of("gemma-4-e2b-it-assistant")
    plain = spec.updated(centroid_head=None, drafter=None, **{"attention.kv_shared_layers": 0})
    with_parts, without = (calc.memory(s, gpu="h100", seq_len=512).memory.activations
                           for s in (spec, plain))
    assert with_parts["embedding"] - without["embedding"] == 512 * 3072 * 2
    assert with_parts["output"] - without["output"] == 512 * 32 * 128 * (256 * 2 + 8)


def test_gemma4_unified_wrapper_counts_its_language_model():
    wrapped = spec_of("gemma-4-12b")
    text = json.loads((CONFIGS / "gemma-4-12b.json").read_text())["text_config"]
    assert calc.count_params(spec_from_hf_config(text)) == calc.count_params(wrapped)


def test_gemma4_31b_is_gemma4_unified_texts_layers():
    """google/gemma-4-31B (tests/data/hf_configs/gemma-4-31b.json): gemma4_text without
    per-layer embeddings or an MoE block builds gemma4_unified_text's layers
    (modeling_gemma4.py), 60 of them, the 10 full ones with 4 KV heads of 512 whose keys are
    their values: 30,697,345,280 parameters in its language model, transformers 5.24.0's own
    count (python -m calc verify --hf)."""
    spec = spec_of("gemma-4-31b")
    assert spec.heads_of("global") == (32, 4, 512, 512) and spec.keys_are_values("global")
    assert spec.heads_of("local") == (32, 16, 256, 256) and not spec.keys_are_values("local")
    assert calc.count_params(spec).total == 30_697_345_280
    text = json.loads((CONFIGS / "gemma-4-31b.json").read_text())["text_config"]
    unified = spec_from_hf_config({**text, "model_type": "gemma4_unified_text"})
    assert calc.count_params(unified) == calc.count_params(spec)


def test_gemma4_e2b_and_e4b_read_their_per_layer_embeddings():
    """google/gemma-4-E2B and E4B (tests/data/hf_configs): per-layer embeddings 256 wide, a
    262,144-row table of 35·256 (E2B) and 42·256 (E4B) columns, the embedding's projection
    d → L·256, and in each layer a gate d → 256 and a projection 256 → d (modeling_gemma4.py).
    The table is an embedding (params.embedding, Kaplan's N leaves it out) and costs no
    FLOPs; the projections cost 2 FLOPs a weight. Totals: transformers 5.24.0's counts of the
    models the files build (test_hf_reference.py holds them equal)."""
    for name, d, layers, total in (("gemma-4-e2b", 1536, 35, 4_628_569_344),
                                   ("gemma-4-e4b", 2560, 42, 7_463_013_376)):
        spec = spec_of(name)
        assert spec.per_layer_embeddings.width == 256 and spec.moe is None
        counts = calc.count_params(spec)
        parts = counts.components
        assert parts["per_layer_embeddings/table"] == 262_144 * layers * 256
        assert parts["per_layer_embeddings/projection"] == d * layers * 256
        assert parts["per_layer_embeddings/layers"] == layers * 2 * d * 256
        assert parts["per_layer_embeddings/norms"] == 256 + layers * d
        assert counts.embedding == 262_144 * d + 262_144 * layers * 256
        assert counts.total == counts.active == total
        flops = calc.count_flops(spec, 128, "full").components
        assert flops["per_layer_embeddings/projection"] == 2 * d * layers * 256
        assert flops["per_layer_embeddings/layers"] == 2 * layers * 2 * d * 256
        assert "per_layer_embeddings/table" not in flops
        assert PER_LAYER_EMBEDDINGS in calc.estimate(spec).conventions
    assert PER_LAYER_EMBEDDINGS not in calc.estimate(spec_of("gemma-4-31b")).conventions


def test_gemma4_26b_a4b_reads_its_moe_block_beside_the_dense_mlp():
    """google/gemma-4-26B-A4B (tests/data/hf_configs/gemma-4-26b-a4b.json): every layer keeps
    its dense MLP of 2112 (a shared expert every token runs) beside 128 experts of 704, top 8,
    a router d → 128 with its scale (d) and per_expert_scale (128), and three more norms
    (modeling_gemma4.py, Gemma4TextDecoderLayer with enable_moe_block): 25,233,141,760
    parameters, transformers 5.24.0's count; 3,822,530,560 active (the other 120 experts of
    each layer idle; test_hf_reference.py checks active parameters against transformers on
    random configs)."""
    spec = spec_of("gemma-4-26b-a4b")
    moe, d = spec.moe, 2816
    assert (moe.n_experts, moe.top_k, moe.d_expert, moe.n_shared_experts, moe.shared_width) \
        == (128, 8, 704, 1, 2112)
    assert moe.branch_norms and moe.router_scales and spec.per_layer_embeddings is None
    counts = calc.count_params(spec)
    assert counts.per_moe_ffn["moe/router"] == d * 128 + d + 128
    assert counts.per_moe_ffn["moe/norm"] == 3 * d
    assert counts.total == 25_233_141_760
    assert counts.total - counts.active == 30 * 120 * 3 * d * 704


def test_hy_v4_reads_hyv4configs_rules():
    """HYV4Config's defaults: layer 0 dense and the rest MoE, indexers of their own on layers 0,
    1, 5, 9, ... (i == 0 or (i − 1) % 4 == 0) and the rest reusing the last one's keys, a sink
    and a gate per head, hc_mult = 4 streams without a stream mix."""
    model = spec_from_hf_config({"model_type": "hy_v4", "num_hidden_layers": 10})
    assert model.moe_layers == (False,) + (True,) * 9
    assert model.attention.indexer.shared_layers == (2, 3, 4, 6, 7, 8)
    assert model.attention.sinks and model.attention.output_gate
    assert model.hyper_connections.streams == 4 and not model.hyper_connections.residual_mix


def test_deepseek_v4_legacy_keywords_place_the_layers_as_transformers_does():
    """DeepseekV4Config.__post_init__ folds the legacy compress_ratios (one per layer, released
    configs list more than num_hidden_layers: the MTP layers') into layer_types and
    num_hash_layers into mlp_layer_types; calc reads them the same way."""
    transformers = pytest.importorskip("transformers")
    fields = {"num_hidden_layers": 3, "compress_ratios": [0, 0, 0, 0, 0], "num_hash_layers": 2}
    config = transformers.DeepseekV4Config(**fields)
    spec = calc.spec_from_hf_config({"model_type": "deepseek_v4", **fields})
    assert config.layer_types == ["sliding_attention"] * 3
    assert set(spec.layer_kinds) == {"local"} and spec.attention.compression is None
    assert spec.moe.hash_layers == tuple(
        i for i, kind in enumerate(config.mlp_layer_types) if kind == "hash_moe") == (0, 1)
    # compress_ratios 4 and 128 name CSA and HCA layers; compress_rate_csa and
    # compress_rate_hca fold into compress_rates
    fields = {"num_hidden_layers": 4, "compress_ratios": [128, 4, 0, 4, 128, 0],
              "compress_rate_csa": 2, "compress_rate_hca": 8}
    config = transformers.DeepseekV4Config(**fields)
    compression = calc.spec_from_hf_config({"model_type": "deepseek_v4", **fields}
                                           ).attention.compression
    assert compression.sparse_layers == tuple(
        i for i, kind in enumerate(config.layer_types) if kind == "compressed_sparse_attention"
    ) == (1, 3)
    assert compression.heavy_layers == tuple(
        i for i, kind in enumerate(config.layer_types) if kind == "heavily_compressed_attention"
    ) == (0,)
    assert (compression.sparse_rate, compression.heavy_rate) == (
        config.compress_rates["compressed_sparse_attention"],
        config.compress_rates["heavily_compressed_attention"]) == (2, 8)


@pytest.mark.parametrize("changes, message", [
    ({"intermediate_size": [16, 16, 32]}, r"intermediate_size=\[16, 16, 32\] gives layers "
                                          r"different MLP widths"),
    ({"intermediate_size": [16, 16]}, "intermediate_size lists 2 widths for 3 layers"),
    ({"activation_sparsity_pattern": [0.95]}, "activation_sparsity_pattern lists 1 values"),
    ({"hidden_size_per_layer_input": 0}, "hidden_size_per_layer_input=0 must be a whole number"),
    ({"laurel_rank": 0}, "laurel_rank=0 must be a whole number"),
    ({"altup_num_inputs": 0}, "altup_num_inputs=0 must be a whole number"),
])
def test_gemma3n_refuses_what_its_spec_cannot_hold_in_one_line(changes, message):
    """Gemma 3n's per-layer MLP widths (MatFormer's mix-and-match) when they differ, lists of
    the wrong length (configuration_gemma3n.py refuses them too), and zero-width parts, which
    transformers would build as empty matrices beside their norms."""
    config = {"model_type": "gemma3n_text", "num_hidden_layers": 3, "num_kv_shared_layers": 0,
              "intermediate_size": 16, **changes}
    with pytest.raises(CalcError, match=message):
        spec_from_hf_config(config)


def test_gemma3n_reads_one_width_listed_per_layer_and_its_parts():
    """intermediate_size listed once per layer, all the same, reads as one width; AltUp's
    streams, LAuReL's rank and the per-layer embeddings come from their fields."""
    spec = spec_from_hf_config({"model_type": "gemma3n_text", "num_hidden_layers": 3,
                                "num_kv_shared_layers": 0, "intermediate_size": [24] * 3,
                                "altup_num_inputs": 2, "laurel_rank": 8})
    assert spec.ffn.d_ff == 24 and spec.altup.streams == 2 and spec.laurel.rank == 8
    assert spec.per_layer_embeddings.width == 256 and spec.attention.kv_shared_layers == 0
    assert spec.attention_kinds == ("local", "local", "local")  # every 5th layer full
