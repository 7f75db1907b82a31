"""`python -m calc memory | infer | optimal` as a user meets them: the JSON keys the issue names,
the library's numbers, every format, and one-line errors (exit 2)."""

from __future__ import annotations

import pytest

import calc
from tests.conftest import heavy_imports

MEMORY = ("memory", "llama2-7b", "--gpu", "a100", "--zero", "3", "--dp", "8",
          "--flash-attention")
INFER = ("infer", "llama2-7b", "--gpu", "a100", "--context", "4096", "--batch", "8")
OPTIMAL = ("optimal", "--flops", "5.76e23")


def test_memory_json_contract(cli):
    data = cli(*MEMORY, "--format", "json").json()
    m = data["memory"]
    for key in ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                "buffers_bytes", "allocated_bytes", "margin_bytes", "total_bytes", "gpu_bytes",
                "fits"):
        assert key in m
    assert m["allocated_bytes"] == (m["weights_bytes"] + m["gradients_bytes"]
                                    + m["optimizer_bytes"] + m["activations_bytes"]
                                    + m["buffers_bytes"])
    assert m["total_bytes"] == m["allocated_bytes"] + m["margin_bytes"]
    assert m["margin_bytes"] == sum(m["margin"].values()) > 0
    assert m["gpu_bytes"] == 80 * 2**30 and m["fits"] is True
    assert m["weights_bytes"] == 2 * 6_738_415_616 / 8
    assert data == calc.memory("llama2-7b", gpu="a100", zero=3, dp=8,
                               flash_attention=True).to_dict()
    assert data["conventions"]


def test_infer_json_contract(cli):
    data = cli(*INFER, "--format", "json").json()
    i = data["inference"]
    for key in ("weights_bytes", "kv_cache_bytes_per_token", "prefill_seconds",
                "decode_seconds_per_token", "tokens_per_second", "max_batch"):
        assert key in i
    assert (i["weights_bytes"], i["kv_cache_bytes_per_token"]) == (13_476_831_232, 524_288)
    assert i["tokens_per_second"] == pytest.approx(8 / i["decode_seconds_per_token"])
    assert data == calc.infer("llama2-7b", gpu="a100", context=4096, batch=8).to_dict()


def test_optimal_json_contract(cli):
    data = cli(*OPTIMAL, "--format", "json").json()
    o = data["optimal"]
    assert o["flops"] == 5.76e23
    assert round(o["params"] / 1e9, 1) == 69.3 and round(o["tokens"] / 1e12, 1) == 1.4
    assert {"params", "tokens", "loss", "fit"} <= set(o["fitted"])
    assert o["fitted"]["fit"]["alpha"] == 0.34
    budget = cli("optimal", "--gpu", "h100", "--gpus", "1024", "--days", "30", "--format",
                 "json").json()["optimal"]
    assert budget["budget"]["gpus"] == 1024 and budget["budget"]["mfu"] == 0.4


@pytest.mark.parametrize("argv", [MEMORY, INFER, OPTIMAL])
@pytest.mark.parametrize("fmt, marker", [
    ("text", "Notes:"), ("markdown", "| "), ("latex", r"\begin{tabular}"), ("html", "<table>"),
    ("csv", "table,row,column,value"),
])
def test_every_format(cli, argv, fmt, marker):
    result = cli(*argv, "--format", fmt)
    assert result.code == 0 and result.err == "" and marker in result.out


def test_text_says_when_a_model_does_not_fit(cli):
    memory = cli("memory", "llama3.1-405b", "--gpu", "a100")
    assert memory.code == 0 and "does NOT fit" in memory.out
    # the note cells wrap in text; markdown keeps each cell on one line
    markdown = cli("memory", "llama3.1-405b", "--gpu", "a100", "--format", "markdown").out
    assert "the model states alone" in markdown
    infer = cli("infer", "deepseek-v3", "--gpu", "h100")
    assert "does NOT fit" in infer.out
    markdown = cli("infer", "deepseek-v3", "--gpu", "h100", "--format", "markdown").out
    assert "the weights alone do not fit" in markdown


BAD = [
    (("memory",), "the following arguments are required: MODEL"),
    (("memory", "llama2-7b", "--zero", "4"), "--zero: invalid choice"),
    (("memory", "llama2-7b", "--dp", "0"), "--dp"),
    (("memory", "llama2-7b", "--tp", "3"), "tp=3 does not divide the 32 attention heads"),
    (("memory", "llama2-7b", "--recipe", "fp32"), "recipe='fp32' does not go with"),
    (("memory", "llama2-7b", "--gpu", "a1000"), "did you mean a100"),
    (("memory", "gpt2", "--seq-len", "2048"), "learned position table of 1024"),
    (("infer", "llama2-7b"), "--gpu"),
    (("infer", "llama2-7b", "--gpu", "a100", "--context", "0"), "--context"),
    (("infer", "gpt2", "--gpu", "a100", "--context", "4096"), "context=4096 exceeds"),
    (("infer", "llama2-7b", "--gpu", "a100", "--dtype", "int3"), "--dtype: invalid choice"),
    (("infer", "llama2-7b", "--gpu", "a100", "--dtype", "fp8"), "no dense fp8 peak"),
    (("infer", "llama2-7b", "--gpu", "tpu-v3"), "no memory bandwidth"),
    (("infer", "llama2-7b", "--gpu", "a100", "--mfu", "2"), "--mfu"),
    (("optimal",), "give flops, or both gpu and days"),
    (("optimal", "--flops", "1e24", "--gpu", "h100", "--days", "2"), "not both"),
    (("optimal", "--flops", "abc"), "--flops: 'abc' is not a number"),
    (("optimal", "--flops", "10"), "give at least 6 × 20 = 120 FLOPs"),
    (("optimal", "--gpu", "h100", "--days", "-1"), "--days"),
]


@pytest.mark.parametrize("argv, message", BAD)
def test_bad_input_is_one_line_and_exit_2(cli, argv, message):
    result = cli(*argv)
    assert result.code == 2 and result.out == ""
    assert message in result.err and result.err.count("\n") == 1


@pytest.mark.parametrize("argv", [MEMORY, INFER, OPTIMAL])
def test_commands_run_without_torch_or_sympy(argv):
    """The planning commands' hot path imports neither sympy nor torch (calc._compiled only)."""
    assert heavy_imports(argv) == []


@pytest.mark.parametrize("argv, key, text", [
    (("infer", "llama2-7b", "--gpu", "a100"), "inference kv_cache_per_token", "2*L*d_qk*h*q_kv"),
    (("infer", "deepseek-v3", "--gpu", "h100"), "inference kv_cache_per_token",
     "L*q_kv*(d_rope + r_kv)"),
    (("memory", "gpt3-175b"), "memory_states optimizer", "(q_m + q_o)"),
    (("optimal",), "scaling_loss loss", "A_fit/N**alpha + B_fit/D**beta + E_irr"),
])
def test_formula_shows_what_each_command_evaluates(cli, argv, key, text):
    """--formula: the command's formulas, the model's structure substituted (MHA's K and V of
    h heads, MLA's latent and RoPE key), the options' symbols kept."""
    data = cli(*argv, "--formula", "--format", "json").json()
    assert text in data["formulas"][key]["text"] and data["formulas"][key]["latex"]
    assert cli(*argv, "--formula", "--format", "latex").code == 0
