"""DeepSeek-V4's compressed layers (attention.compression, CSA and HCA): the compressors' and
the CSA indexer's parameters counted by hand from modeling_deepseek_v4.py's shapes, the
compressed entries' FLOPs by hand, the one-line refusals, LoRA's gate, and the entries the KV
cache keeps against transformers' own cache."""

from __future__ import annotations

import re

import pytest

import calc
from calc.errors import CalcError
from calc.spec.finetune import FineTune, resolve_targets

FLASH = "tests/data/hf_configs/deepseek-v4-flash.json"


def test_flash_compressors_by_hand():
    """DeepSeek-V4-Flash (tests/data/hf_configs/deepseek-v4-flash.json): 21 CSA and 20 HCA
    layers, d 4096, head_dim 512, rates 4 and 128, the indexer 64 heads of 128 from a query
    latent of 1024. transformers 5.24.0 modeling_deepseek_v4.py: DeepseekV4HCACompressor
    kv_proj, gate_proj 4096 × 512, position_bias 128 × 512, kv_norm 512; DeepseekV4CSACompressor
    kv_proj, gate_proj 4096 × 1024, position_bias 4 × 1024, kv_norm 512; DeepseekV4Indexer
    kv_proj, gate_proj 4096 × 256, position_bias 4 × 256, kv_norm 128, q_b_proj 1024 × 64·128,
    weights_proj 4096 × 64."""
    spec = calc.spec_from_hf_config(FLASH)
    comp = spec.attention.compression
    assert comp.sparse_layers == tuple(range(2, 43, 2))
    assert comp.heavy_layers == tuple(range(3, 42, 2))
    hca = 2 * 4096 * 512 + 128 * 512 + 512
    csa = 2 * 4096 * 1024 + 4 * 1024 + 512
    indexer = 2 * 4096 * 256 + 4 * 256 + 128 + 1024 * 64 * 128 + 4096 * 64
    params = calc.count_params(spec)
    assert params.components["attention/compressor"] == 21 * csa + 20 * hca
    assert params.components["attention/indexer"] == 21 * indexer
    assert 21 * (csa + indexer) + 20 * hca == 487_194_752
    assert params.total == 284_332_230_231  # transformers' count (tests/test_hf_reference.py)


@pytest.mark.parametrize("convention", ["causal", "full"])
def test_compressed_entries_flops_by_hand(convention):
    """One HCA layer (rate 3) and one CSA layer (rate 2, top 2 of the entries, 3 indexer heads
    of 4) at T = 9 beyond the same layers all sliding: query i (1-based) has passed ⌊i/m⌋
    entries (all ⌊T/m⌋ under full), QKᵀ and A·V 2·h·(d_qk + d_v) each, the CSA layer min(2,
    ⌊i/2⌋) of them and its indexer 2·3·(4 + 1) per entry seen; the projections per token."""
    base = {"model_type": "deepseek_v4", "vocab_size": 16, "hidden_size": 8,
            "num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 8, "q_lora_rank": 4,
            "o_groups": 1, "o_lora_rank": 4, "n_routed_experts": 2, "num_experts_per_tok": 1,
            "moe_intermediate_size": 4, "hc_mult": 1, "sliding_window": 16,
            "compress_rates": {"compressed_sparse_attention": 2,
                               "heavily_compressed_attention": 3},
            "index_n_heads": 3, "index_head_dim": 4, "index_topk": 2}
    t, h, width = 9, 2, 8
    compressed = calc.spec_from_hf_config({**base, "layer_types": [
        "heavily_compressed_attention", "compressed_sparse_attention"]})
    plain = calc.spec_from_hf_config({**base, "layer_types": ["sliding_attention"] * 2})
    seen = range(1, t + 1)
    hca = [t // 3] * t if convention == "full" else [i // 3 for i in seen]
    csa = [t // 2] * t if convention == "full" else [i // 2 for i in seen]
    pair, index_pair = 2 * h * (width + width), 2 * 3 * (4 + 1)
    scores = (pair * sum(hca) + pair * sum(min(2, n) for n in csa)
              + index_pair * sum(csa))
    projections = t * 2 * (2 * 8 * width + 2 * 8 * 2 * width  # the compressors
                           + 2 * 8 * 2 * 4 + 4 * 3 * 4 + 8 * 3)  # the indexer
    difference = (calc.count_flops(compressed, t, convention).forward * t
                  - calc.count_flops(plain, t, convention).forward * t)
    assert difference == scores + projections


@pytest.mark.parametrize(("changes", "message"), [
    ({"attention.k_eq_v": False, "attention.kv_cached_once": False},
     "attention.compression needs one key-and-value head"),
    ({"attention.q_lora_rank": None},
     "attention.compression.sparse_layers needs attention.q_lora_rank"),
    ({"attention.compression.indexer": None},
     "attention.compression.indexer is the CSA layers' own"),
    ({"attention.compression.heavy_layers": (0, 3)},
     "attention.compression: layer 3 is in both sparse_layers and heavy_layers"),
    ({"attention.compression.heavy_layers": (5,)},
     "attention.compression.heavy_layers: layer 5 is not a local (sliding) attention layer "
     "of the 4"),
])
def test_bad_compression_is_refused_in_one_line(changes, message):
    spec = calc.spec_from_hf_config({"model_type": "deepseek_v4", "num_hidden_layers": 4})
    with pytest.raises(CalcError, match=re.escape(message)) as caught:
        spec.updated(**changes)
    assert "\n" not in str(caught.value)


def test_lora_gate_is_refused_where_compressors_have_gate_projections():
    """PEFT's gate_proj selects the compressors' and the indexer's gate_proj beside the FFN's."""
    spec = calc.spec_from_hf_config({"model_type": "deepseek_v4", "num_hidden_layers": 4})
    named = "compressors (attention.compression) have gate projections named gate_proj"
    with pytest.raises(CalcError, match=re.escape(named)):
        resolve_targets(spec, FineTune(method="lora", lora_targets=("gate", "up")))
    assert resolve_targets(spec, FineTune(method="lora", lora_targets=("k", "up"))) == (
        "k", "up")


def test_the_cache_keeps_the_compressed_entries_as_transformers_does():
    """After 11 tokens a CSA layer of rate 2 holds 5 entries of head_dim 16 and its indexer's 5
    of 8, an HCA layer of rate 4 holds 2 (DeepseekV4CSACache and DeepseekV4HCACache's
    compressed_kv): calc's cache beyond the same layers all sliding is those elements, at bf16."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.verify import hf_reference

    config = {"model_type": "deepseek_v4", "vocab_size": 32, "hidden_size": 8,
              "num_hidden_layers": 3, "num_attention_heads": 2, "head_dim": 16,
              "q_lora_rank": 4, "o_groups": 2, "o_lora_rank": 4, "n_routed_experts": 2,
              "num_experts_per_tok": 1, "moe_intermediate_size": 4, "hc_mult": 2,
              "sliding_window": 16, "layer_types": [
                  "sliding_attention", "compressed_sparse_attention",
                  "heavily_compressed_attention"],
              "compress_rates": {"compressed_sparse_attention": 2,
                                 "heavily_compressed_attention": 4},
              "index_n_heads": 2, "index_head_dim": 8, "index_topk": 2}
    tokens = 11
    model = hf_reference.build(config, "cpu")
    with torch.no_grad():
        cache = model(input_ids=torch.randint(0, 32, (1, tokens)),
                      use_cache=True).past_key_values
    entries = sum(tensor.numel() for layer in cache.layers
                  for tensor in getattr(layer, "compressed_kv", {}).values()
                  if tensor is not None)
    assert entries == 5 * 16 + 5 * 8 + 2 * 16
    spec = calc.spec_from_hf_config(config)
    plain = spec.updated(**{"attention.compression": None})
    kv = [calc.infer(s, gpu="h100", context=tokens, batch=1).inference.kv_cache_bytes
          for s in (spec, plain)]
    assert kv[0] - kv[1] == 2 * entries
