"""An LM head narrower than the vocabulary (ModelSpec.output_vocab_size, the symbol V_o): the
spec's rules, and every count downstream that reads the head's rows rather than the
embedding's — parameters, FLOPs, the published rules, training memory's logits, step time's head
operator, serving's logits, the sweeps.

The model is Apertus 1.5 8B (tests/data/hf_configs/apertus-v1.5-8b.json, its source in the
README there): an embedding of 266,752 rows and a head of the first 131,072. Each number below
is the same spec's with the whole head minus the pruned one, worked from the formula it tests,
so a term that read the vocabulary where it should read the head's rows fails here.
"""

from __future__ import annotations

import pytest

import calc
from calc.evaluate import rule_flops
from calc.hf import spec_from_hf_config
from calc.serving.layouts import Replica
from calc.serving.memory import workspace_bytes
from calc.timing.operators import model_terms
from tests.hf_released import CONFIGS

V, V_O, D = 266_752, 131_072, 4096
DROPPED = V - V_O  # rows of the head the release prunes


@pytest.fixture(scope="module")
def pruned() -> calc.ModelSpec:
    return spec_from_hf_config(CONFIGS / "apertus-v1.5-8b.json")


@pytest.fixture(scope="module")
def whole(pruned) -> calc.ModelSpec:
    return pruned.updated(output_vocab_size=None)


def test_the_head_has_its_own_rows_and_the_embedding_keeps_the_vocabulary(pruned, whole):
    assert (pruned.head_rows, whole.head_rows) == (V_O, V)
    a, b = calc.count_params(pruned), calc.count_params(whole)
    assert a.components["embedding/token"] == b.components["embedding/token"] == V * D
    assert b.components["lm_head"] - a.components["lm_head"] == DROPPED * D
    # Kaplan's N leaves out the embedding and an untied head whatever their rows
    assert a.non_embedding == b.non_embedding
    # a multiply-add per row and width: 2·d·V_o a token
    assert calc.count_flops(pruned, 128).components["lm_head"] == 2 * D * V_O


@pytest.mark.parametrize("change, message", [
    ({"output_vocab_size": V}, f"output_vocab_size={V} must be below vocab_size={V}; leave it "
                               f"out"),
    ({"output_vocab_size": V + 1}, "must be below vocab_size"),
    ({"tie_embeddings": True}, f"output_vocab_size={V_O} with tie_embeddings=True: a tied LM "
                               f"head is the embedding's vocab_size={V} rows"),
])
def test_a_head_as_wide_as_the_vocabulary_or_tied_is_refused_in_one_line(pruned, change,
                                                                         message):
    with pytest.raises(calc.CalcError, match=message.replace("(", r"\(")) as error:
        pruned.updated(**change)
    assert "\n" not in str(error.value)


def test_the_rules_count_the_head_s_logits_and_the_embedding_s_rows(pruned, whole):
    """6N, PaLM (6N), Megatron (6·d·V logits) and Chinchilla (3 × 2·d·V logits; its embedding
    term 2·V·d keeps the vocabulary) lose 6·d per pruned row; Kaplan's has no head."""
    a, b = rule_flops(pruned, 1024), rule_flops(whole, 1024)
    assert {rule: b[rule] - a[rule] for rule in a} == {
        "6N": 6 * D * DROPPED, "kaplan": 0, "palm": 6 * D * DROPPED,
        "megatron": 6 * D * DROPPED, "chinchilla": 6 * D * DROPPED}


def test_training_memory_holds_logits_of_the_head_s_rows(pruned, whole):
    """The fp32 logits the loss holds (4 bytes × T × V_o) and their fp32 gradient at the start
    of the backward (4 bytes × T × V_o), one sequence of 1,024 tokens on one GPU."""
    a = calc.memory(pruned, seq_len=1024).memory
    b = calc.memory(whole, seq_len=1024).memory
    assert a.buffers["logits_gradient"] == 4 * 1024 * V_O
    assert b.buffers["logits_gradient"] - a.buffers["logits_gradient"] == 4 * 1024 * DROPPED
    assert b.activations["output"] - a.activations["output"] == 4 * 1024 * DROPPED


def test_step_time_and_serving_read_the_head_s_rows(pruned, whole):
    terms = model_terms(pruned, 1024)
    assert (terms.head.n, terms.head.k, terms.head_rows) == (V_O, D, V_O)
    assert terms.head.flops == 2 * D * V_O
    assert model_terms(whole, 1024).head.n == V
    # a serving iteration's fp32 logits, one row of V_o per sequence finishing
    replica, tokens, sequences = Replica(), 512, 8
    assert (workspace_bytes(whole, model_terms(whole, 1024), replica, tokens, sequences)
            - workspace_bytes(pruned, terms, replica, tokens, sequences)) == 4 * sequences * DROPPED


def test_a_sweep_over_the_vocabulary_keeps_the_pruned_head(pruned):
    """The head keeps its 131,072 rows while the vocabulary moves; a vocabulary not above them
    is no such model and is dropped, saying why."""
    result = calc.sweep(pruned, vocab_size=[100_000, V_O, 200_000, V])
    assert result.dropped == {"vocab_size not above output_vocab_size": 2}
    rows = [result.row(i) for i in range(len(result))]
    assert [row["vocab_size"] for row in rows] == [200_000, V]
    assert rows[1]["params_total"] == calc.count_params(pruned).total
    assert rows[0]["params_total"] == calc.count_params(pruned.updated(vocab_size=200_000)).total
    # an unpruned model's head follows the vocabulary
    plain = calc.sweep(calc.load_preset("llama2-7b").spec, vocab_size=[32_000, 64_000])
    assert plain.row(1)["params_total"] - plain.row(0)["params_total"] == 2 * 32_000 * 4096
