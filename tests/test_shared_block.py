"""The shared block (calc.spec.layers.SharedBlockSpec; Zamba, Zamba2): hand counts of
Zyphra/Zamba-7B-v1 (tests/data/hf_configs/zamba-7b-v1.json) through every layer that prices it,
and the one-line refusals."""

from __future__ import annotations

import json

import pytest

import calc
from calc.errors import CalcError
from calc.hf import spec_from_hf_config
from tests.test_hf import CONFIGS

ZAMBA = json.loads((CONFIGS / "zamba-7b-v1.json").read_text())
D, HEADS, HEAD_DIM, D_FF, V = 3712, 16, 2 * 3712 // 16, 14848, 32000
# ZambaConfig's rule at 76 layers, period 6, offset 4: layer 2, then 3 + i for i % 6 == 4
DEPTHS = [2, *(3 + i for i in range(73) if i % 6 == 4)]
# one set of the shared block: q, k, v read [hidden, embedding] (2d), o writes d; the gated
# MLP; the norms over 2d and d
ATTENTION = 3 * 2 * D * HEADS * HEAD_DIM + HEADS * HEAD_DIM * D
MLP = 3 * D * D_FF
NORMS = 2 * D + D
PROJECTION = D * D  # each depth's own


def spec(**changes) -> calc.ModelSpec:
    return spec_from_hf_config({**ZAMBA, **changes})


def test_zamba_7b_counts_the_shared_block_once_and_each_projection_per_depth():
    counts = calc.count_params(spec())
    assert len(DEPTHS) == 13 and counts.components["shared_block/attention"] == ATTENTION
    assert counts.components["shared_block/mlp"] == MLP
    assert counts.components["shared_block/norms"] == NORMS
    assert counts.components["shared_block/projection"] == 13 * PROJECTION
    assert counts.total == counts.active == 7_232_490_496  # transformers' count (test_hf_reference)


def test_untied_zamba_keeps_a_block_per_depth_as_transformers_builds_it():
    """Without tie_word_embeddings transformers ties nothing (get_expanded_tied_weights_keys):
    12 more sets of the block and the head: 11,650,438,656, transformers 5.24.0's count."""
    untied = spec(tie_word_embeddings=False)
    assert untied.shared_block.n_blocks == 13
    extra = 12 * (ATTENTION + MLP + NORMS) + V * D
    assert calc.count_params(untied).total == 7_232_490_496 + extra == 11_650_438_656


@pytest.mark.parametrize("seq_len", [1, 4096])
def test_the_block_runs_at_every_depth(seq_len):
    """Forward FLOPs beside the same Mamba stack without hybrid layers: 2 × (the block's
    weights and the projection) at each of the 13 depths, and QKᵀ and A·V over all T keys
    (full convention) at each."""
    plain = spec(layers_block_type=["mamba"] * 76)
    assert plain.shared_block is None
    weights = 2 * 13 * (ATTENTION + MLP + PROJECTION)
    scores = 13 * HEADS * (HEAD_DIM + HEAD_DIM) * 2 * seq_len
    with_block = calc.count_flops(spec(), seq_len, "full").forward * seq_len
    without = calc.count_flops(plain, seq_len, "full").forward * seq_len
    assert with_block - without == (weights + scores) * seq_len


def test_each_depth_caches_its_keys_and_values():
    """13 depths × 16 KV heads × (464 + 464) × 2 bytes = 386,048 bytes per token."""
    report = calc.infer(spec(), gpu="h100")
    assert report.inference.kv_cache_bytes_per_token == 13 * HEADS * 2 * HEAD_DIM * 2


def test_step_time_holds_the_weights_once_and_runs_them_at_each_depth():
    from calc.timing.operators import model_terms

    terms = model_terms(spec(), 4096)
    block = [op for op in terms.matmuls if op.name.startswith("shared_block/attention")]
    assert {op.layers for op in block} == {13} and {op.weight_sets for op in block} == {1}
    assert sum(op.n * op.k for op in block) == ATTENTION


def test_pipeline_parallelism_of_a_shared_block_is_refused_in_one_line(cli):
    result = cli("memory", str(CONFIGS / "zamba-7b-v1.json"), "--gpu", "h100", "--pp", "2")
    assert result.code == 2 and "shared block" in result.err and "pp=1" in result.err
    assert len(result.err.strip().splitlines()) == 1


@pytest.mark.parametrize("targets", ["all-linear", "q,v", "up"])
def test_lora_on_the_block_is_refused_naming_the_mamba_targets(cli, targets):
    result = cli("memory", str(CONFIGS / "zamba-7b-v1.json"), "--gpu", "h100", "--finetune",
                 "lora", "--lora-targets", targets)
    assert result.code == 2 and "in_proj, x_proj, dt_proj, out_proj" in result.err


def test_lora_on_the_mamba_layers_is_counted(cli):
    result = cli("memory", str(CONFIGS / "zamba-7b-v1.json"), "--gpu", "h100", "--finetune",
                 "lora", "--lora-targets", "in_proj,out_proj", "--format", "json")
    assert result.code == 0, result.err


_BASE = {"vocab_size": 10, "d_model": 8, "n_layers": 3, "context_length": 16,
         "attention": {"n_heads": 2}, "ffn": {"activation": "swiglu", "d_ff": 16},
         "norm": {"kind": "rmsnorm"}, "position": {"kind": "none"},
         "layers": {"mixer_pattern": ["mamba"], "ffn_pattern": ["none"]},
         "mamba": {"version": 1, "d_inner": 16, "d_state": 2, "dt_rank": 1},
         "shared_block": {"layers": [1, 2]}}


@pytest.mark.parametrize(("change", "message"), [
    ({"shared_block": {"layers": [1, 3]}}, "shared_block.layers: layer 3 is beyond"),
    ({"shared_block": {"layers": [2, 1]}}, "ascending order"),
    ({"shared_block": {"layers": [1], "n_blocks": 2}}, "n_blocks=2 must be at most"),
    ({"shared_block": {"layers": [1], "attention_adapters": True}}, "needs shared_block."),
    ({"position": {"kind": "learned", "max_positions": 16}}, "position.kind='learned'"),
    ({"attention": {"n_heads": 2, "qkv_bias": True}}, "attention.qkv_bias is not allowed"),
    ({"norm": {"kind": "rmsnorm", "placement": "post"}}, "norm.placement other than pre"),
    ({"ffn": None}, "ffn: required, the shared block"),
])
def test_a_spec_the_block_cannot_hold_is_one_line(change, message):
    with pytest.raises(ValueError, match=message):
        calc.ModelSpec(**{**_BASE, **change})


def test_a_spec_with_the_block_and_no_layer_ffn_keeps_one_norm_per_layer():
    spec = calc.ModelSpec(**_BASE)
    assert spec.norms_per_layer == 1 and not spec.has_ffn and spec.has_attention


@pytest.mark.parametrize(("config", "message"), [
    ({"model_type": "zamba2", "tie_word_embeddings": False}, "tie_word_embeddings=false"),
    ({"model_type": "zamba2", "use_shared_attention_adapter": True, "num_key_value_heads": 8},
     "use_shared_attention_adapter needs num_key_value_heads"),
    ({"model_type": "zamba", "attention_hidden_size": 1000}, "attention_hidden_size=1000"),
    ({"model_type": "zamba", "num_hidden_layers": 4, "layers_block_type":
      ["mamba", "hybrid", "mamba", "mamba"]}, "one hybrid layer with tie_word_embeddings"),
])
def test_configs_transformers_cannot_share_are_refused(config, message):
    with pytest.raises(CalcError, match=message):
        spec_from_hf_config(config)


@pytest.mark.parametrize("targets", [("in_proj",), ("in_proj", "out_proj")])
def test_mamba_adapters_beside_the_block_match_the_reference_model(targets):
    """LoRA on the Mamba layers of a Zamba2 with two weight sets and attention adapters:
    trainable parameters and forward FLOPs of the reference model with its adapters."""
    pytest.importorskip("torch")
    from tests.test_finetune_mixers import assert_adapters_as_the_reference_model_counts

    small = spec_from_hf_config({
        "model_type": "zamba2", "vocab_size": 11, "hidden_size": 8, "num_hidden_layers": 4,
        "num_attention_heads": 2, "n_mamba_heads": 2, "intermediate_size": 12,
        "layers_block_type": ["mamba", "hybrid", "hybrid", "hybrid"], "num_mem_blocks": 2,
        "adapter_rank": 2, "use_shared_attention_adapter": True, "mamba_d_state": 2})
    assert_adapters_as_the_reference_model_counts(small, targets)
