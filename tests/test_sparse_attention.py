"""DeepSeek Sparse Attention and MiniMax-M3's block-sparse attention (attention.indexer): its
counts by hand, its refusals, its readers; the block-sparse form against the reference model.

The exact comparisons with torch and transformers run on random specs and configs elsewhere
(tests/test_verify.py, tests/test_hf_reference.py draw indexers); here, the counts a reader can
redo on paper and the one-line refusals.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import calc
from calc.errors import CalcError
from calc.hf import spec_from_hf_config
from tests.draws import one_feature
from tests.hf_released import CONFIGS
from tests.strategies import block_sparse_specs

MLA = {"q_lora_rank": 8, "kv_lora_rank": 4, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4,
       "v_head_dim": 4}


def _spec(layers: int = 3, **indexer) -> calc.ModelSpec:
    return calc.ModelSpec(
        vocab_size=10, d_model=16, n_layers=layers, context_length=64,
        position={"kind": "rope"}, ffn={"activation": "swiglu", "d_ff": 8},
        attention={"n_heads": 2, "mla": MLA,
                   "indexer": {"n_heads": 2, "head_dim": 8, "topk": 4, **indexer}})


def test_deepseek_v32_is_deepseek_v3_plus_its_indexers():
    """DeepSeek-V3.2's released config is DeepSeek-V3's plus, on each of the 61 layers, wq_b
    1536 → 64·128, wk 7168 → 128, its LayerNorm's γ and β (2·128) and weights_proj 7168 → 64
    (modeling_deepseek_v32.py DeepseekV32Indexer)."""
    v32 = json.loads((CONFIGS / "deepseek-v3.2.json").read_text())
    v3 = {**json.loads((CONFIGS / "deepseek-v3.json").read_text()), "num_nextn_predict_layers": 0}
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    ours, base = calc.count_params(spec_from_hf_config(v32)), calc.count_params(
        spec_from_hf_config(v3))
    assert ours.components["attention/indexer"] == 61 * indexer == 851_524_864
    assert ours.total == base.total + 61 * indexer
    assert ours.active == base.active + 61 * indexer


def test_flops_by_hand():
    """T = 10 tokens, top 4, full convention: each query's attention over 4 keys (2 heads ×
    (d_qk 8 + d_v 4) × 2 per key), the indexer's scores over all 10 (2 heads × (8 + 1) × 2)."""
    spec, t = _spec(), 10
    flops = calc.count_flops(spec, t, "full")
    per_query = 2 * 2 * (8 + 4) * 4 + 2 * 2 * (8 + 1) * t
    assert flops.attention_per_sequence == 3 * t * per_query
    # causal: query i sees min(i, 4) keys and the indexer scores i
    causal = calc.count_flops(spec, t, "causal")
    pairs = sum(min(i, 4) for i in range(1, t + 1))
    seen = sum(range(1, t + 1))
    assert causal.attention_per_sequence == 3 * (2 * 2 * 12 * pairs + 2 * 2 * 9 * seen)
    # a generated token at context T: 4 selected keys, T scored
    weights = sum(v for k, v in causal.components.items() if k != "attention/scores")
    assert causal.inference_per_token == weights + 3 * (2 * 2 * 12 * 4 + 2 * 2 * 9 * t)


def test_shared_layers_have_no_indexer_but_select_as_few_keys():
    one, two = _spec(), _spec(shared_layers=(1, 2))
    per_layer = calc.count_params(one).components["attention/indexer"] // 3
    assert calc.count_params(two).components["attention/indexer"] == per_layer
    t = 10
    difference = (calc.count_flops(one, t, "full").attention_per_sequence
                  - calc.count_flops(two, t, "full").attention_per_sequence)
    assert difference == 2 * t * 2 * 2 * (8 + 1) * t  # two layers' indexer scores only


@pytest.mark.parametrize("change, message", [
    ({"attention": {"n_heads": 3, "indexer": {"n_heads": 2, "head_dim": 4, "topk": 2}}},
     "attention.indexer.n_heads=2 must divide attention.n_heads=3"),
    ({"attention": {"n_heads": 2, "mla": MLA, "indexer": {"n_heads": 1, "head_dim": 4,
                                                          "topk": 2, "block_size": 4}}},
     "attention.indexer.block_size=4 with attention.mla"),
    ({"attention": {"n_heads": 2, "indexer": {"n_heads": 1, "head_dim": 4, "topk": 2,
                                              "dense_layers": [0, 1]}}},
     "dense_layers lists every global attention layer"),
    ({"attention": {"n_heads": 2, "indexer": {"n_heads": 1, "head_dim": 4, "topk": 2,
                                              "dense_layers": [2]}}},
     "attention.indexer.dense_layers: layer 2 is not a global attention layer"),
    ({"attention": {"n_heads": 2, "mla": {**MLA, "q_lora_rank": None},
                    "indexer": {"n_heads": 1, "head_dim": 4, "topk": 2}}},
     "attention.indexer needs attention.mla with q_lora_rank"),
    ({"attention": {"n_heads": 2, "mla": MLA, "indexer": {"n_heads": 1, "head_dim": 2,
                                                          "topk": 2}}},
     "attention.indexer.head_dim=2 must be >= attention.mla.qk_rope_head_dim=4"),
    ({"attention": {"n_heads": 2, "mla": MLA, "sliding_window": 4,
                    "indexer": {"n_heads": 1, "head_dim": 4, "topk": 2}}},
     "attention.indexer sits on the global layers: attention.layer_pattern has none"),
    ({"attention": {"n_heads": 2, "mla": MLA, "chunk_size": 4,
                    "indexer": {"n_heads": 1, "head_dim": 4, "topk": 2}}},
     "not defined with chunked or nope layers"),
    ({"attention": {"n_heads": 2, "mla": MLA, "indexer": {"n_heads": 1, "head_dim": 4,
                                                          "topk": 2, "shared_layers": [0]}}},
     "layer 0 is the first global attention layer"),
    ({"attention": {"n_heads": 2, "mla": MLA, "indexer": {"n_heads": 1, "head_dim": 4,
                                                          "topk": 2, "shared_layers": [7]}}},
     "layer 7 is not a global attention layer"),
])
def test_refusals_name_the_field(change, message):
    base = {"vocab_size": 10, "d_model": 16, "n_layers": 2, "context_length": 8,
            "position": {"kind": "rope"}, "ffn": {"activation": "gelu", "d_ff": 8}}
    with pytest.raises(ValueError, match="attention") as error:
        calc.ModelSpec.model_validate({**base, **change})
    assert message in str(error.value)


def test_a_bad_spec_file_is_one_line(cli, tmp_path):
    path = tmp_path / "dsa.toml"
    path.write_text('vocab_size = 10\nd_model = 16\nn_layers = 2\ncontext_length = 8\n'
                    'position = { kind = "rope" }\nffn = { activation = "gelu", d_ff = 8 }\n'
                    'attention = { n_heads = 3, indexer = { n_heads = 2, head_dim = 4, '
                    'topk = 2 } }\n')
    result = cli(str(path))
    assert result.code == 2 and result.err.count("\n") == 1
    assert "attention.indexer.n_heads=2 must divide attention.n_heads=3" in result.err


def test_glm_moe_dsa_reads_its_shared_layers():
    small = {"model_type": "glm_moe_dsa", "num_hidden_layers": 6, "hidden_size": 16,
             "num_attention_heads": 2, "q_lora_rank": 8, "kv_lora_rank": 4,
             "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 4,
             "index_n_heads": 2, "index_head_dim": 8, "n_routed_experts": 4,
             "moe_intermediate_size": 4, "intermediate_size": 8, "vocab_size": 10,
             "num_experts_per_tok": 2}
    # configuration_glm_moe_dsa.py: full when max(i − offset + 1, 0) % freq == 0 (offset 2)
    spec = spec_from_hf_config({**small, "index_topk_freq": 2})
    assert spec.attention.indexer.shared_layers == (2, 4)
    spec = spec_from_hf_config({**small, "index_topk_pattern": "FFSFSS"})
    assert spec.attention.indexer.shared_layers == (2, 4, 5)
    with pytest.raises(CalcError, match=r"indexer_types\[0\]='shared'"):
        spec_from_hf_config({**small, "indexer_types": ["shared"] + ["full"] * 5})
    with pytest.raises(CalcError, match="q_lora_rank=null"):
        spec_from_hf_config({**small, "q_lora_rank": None})


def test_the_reference_model_attends_causally_to_selected_keys():
    """On real tensors the indexer's top-k decides; a later token changes no earlier logit."""
    torch = pytest.importorskip("torch")
    from calc.verify.model import build

    spec = _spec(shared_layers=(2,))
    model = build(spec, "cpu")
    ids = torch.randint(0, spec.vocab_size, (1, 12))
    changed = ids.clone()
    changed[0, -1] = (changed[0, -1] + 1) % spec.vocab_size
    logits = model(ids)
    assert torch.isfinite(logits).all()
    assert torch.allclose(logits[0, :-1], model(changed)[0, :-1])


# ---- MiniMax-M3's block-sparse attention (attention.indexer without MLA) --------------------
def _visible_keys(t: int, topk: int, block: int) -> int:
    """The keys the t queries of a causal sequence attend to, one by one (MiniMaxM3VLIndexer:
    the own block's visible keys and topk − 1 whole earlier blocks, or all while fewer)."""
    return sum(min(i + 1, i % block + 1 + (topk - 1) * block) for i in range(t))


@pytest.mark.parametrize("topk, block", [(1, 1), (2, 1), (1, 3), (2, 3), (3, 4)])
def test_block_selection_counts_each_querys_keys_under_causal(topk, block):
    """calc's closed form (flops._selected_per_sequence) against the keys counted query by
    query, at lengths inside, at and past topk·block, whole blocks or not."""
    spec = calc.ModelSpec.model_validate({
        "vocab_size": 10, "d_model": 8, "n_layers": 2, "context_length": 64,
        "position": {"kind": "rope"}, "ffn": {"activation": "swiglu", "d_ff": 8},
        "attention": {"n_heads": 2, "head_dim": 4, "indexer": {
            "n_heads": 1, "head_dim": 4, "topk": topk, "block_size": block,
            "dense_layers": [0]}}})
    dense = spec.updated(**{"attention.indexer": None})
    for t in range(1, 3 * topk * block + 3):
        pair, scores = 2 * 2 * (4 + 4), 2 * 1 * 4 * t * (t + 1) // 2
        masked = pair * (t * (t + 1) // 2 - _visible_keys(t, topk, block))
        assert (calc.count_flops(spec, t, "causal").attention_per_sequence
                == calc.count_flops(dense, t, "causal").attention_per_sequence
                - masked + scores), t


@one_feature
@given(spec=block_sparse_specs(), seq_len=st.integers(1, 24),
       device=st.sampled_from(["meta", "cpu"]))
def test_random_block_sparse_specs_verify_exactly(spec, seq_len, device):
    """Block-sparse layers beside dense global, sliding and lightning layers: the indexer's
    projections, its scores over every key, and QKᵀ and A·V over the keys of the selected
    blocks, against the reference model (calc.verify.indexer.BlockIndexer)."""
    from calc.reports.verify import verify

    report = verify(spec, seq_len, device=device)
    assert report.ok, [c for c in [*report.params, *report.flops] if not c.match]


def test_lora_q_and_k_are_refused_where_the_block_indexer_has_its_own():
    """PEFT's q_proj and k_proj select MiniMaxM3VLIndexer's beside the attention's; v and o are
    the attention's alone. A model without block-sparse layers adapts q and k."""
    from calc.spec.finetune import FineTune, resolve_targets

    sparse = spec_from_hf_config({"model_type": "minimax_m3_vl_text", "num_hidden_layers": 2,
                                  "layer_types": ["full_attention", "minimax_m3_sparse"]})
    with pytest.raises(CalcError, match=r"block-sparse indexer .* has its own q_proj/k_proj"):
        resolve_targets(sparse, FineTune(method="lora", lora_targets=("q", "k", "v")))
    assert resolve_targets(sparse, FineTune(method="lora", lora_targets=("v", "o"))) == (
        "v", "o")
    dense = spec_from_hf_config({"model_type": "minimax_m3_vl_text", "num_hidden_layers": 2})
    assert resolve_targets(dense, FineTune(method="lora", lora_targets=("q", "k"))) == ("q", "k")


def test_dense_layers_keep_every_score_the_selecting_ones_their_blocks_keys():
    """Eager attention's kept scores: a selecting layer's query scores the K·B keys of its
    blocks, a dense layer's all T (memory's L_s_sel), 2 heads · (64 − 2·4) keys · 64 tokens ·
    2 bytes apart a layer."""
    spec = calc.ModelSpec.model_validate({
        "vocab_size": 10, "d_model": 16, "n_layers": 4, "context_length": 64,
        "position": {"kind": "rope"}, "ffn": {"activation": "swiglu", "d_ff": 8},
        "attention": {"n_heads": 2, "head_dim": 4, "indexer": {
            "n_heads": 1, "head_dim": 4, "topk": 2, "block_size": 4}}})

    def layers(s: calc.ModelSpec) -> int:
        report = calc.memory(s, gpu="h100", seq_len=64, flash_attention=False)
        return report.memory.activations["layers"]

    per_layer = 2 * (64 - 2 * 4) * 64 * 2
    two_dense = spec.updated(**{"attention.indexer.dense_layers": (0, 2)})
    assert layers(two_dense) - layers(spec) == 2 * per_layer
    assert layers(spec.updated(**{"attention.indexer": None})) - layers(spec) == 4 * per_layer
