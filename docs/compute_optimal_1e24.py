"""Worked example: the compute-optimal shape for a 1e24-FLOP training budget, found by sweeping.

    python docs/compute_optimal_1e24.py [--format text|markdown]

Every Llama-3-style shape (head width 128, 8 KV heads, SwiGLU with d_ff = 3.5·d, the
128,256-token vocabulary, T = 8,192) with width 1,024-24,576 and 8-256 layers, at the aspect
ratios real models use, is swept with calc.sweep. Each shape gets the tokens the budget buys
at its exact training FLOPs per token, D = C / F, and a loss from Chinchilla's parametric fit;
the lowest loss is the compute-optimal shape. Its GPU-hours come from calc.estimate, the
one-at-a-time path, on the same spec. docs/sweeps.md shows the output (python -m calc docs).
"""

from __future__ import annotations

import argparse

import numpy as np

import calc
from calc.counting import TOKENS_PER_PARAMETER  # Chinchilla's rule of thumb, D ≈ 20·N
from calc.tables import Column, Table, render_tables

BUDGET = 1e24  # training FLOPs
# Hoffmann et al. 2022 (Chinchilla) §3.3, Approach 3: L(N, D) = E + A/N^α + B/D^β, fitted with
# N = all parameters, embeddings included (as Pearce & Song 2024 read Chinchilla's counts).
E, A, B, ALPHA, BETA = 1.69, 406.4, 410.7, 0.34, 0.28
HEAD_DIM, KV_HEADS, FFN_RATIO = 128, 8, 3.5  # Llama 3 8B: 4096 / 32, 8 KV, 14336 / 4096
ASPECT = (64, 160)  # d_model / n_layers of GPT-3 175B (128), Llama 2 70B (102), 3.1 405B (130)
GPU, MFU, GPUS = "h100", 0.4, 4096


def shapes() -> dict[str, np.ndarray]:
    """Every (width, depth) on the grid whose aspect ratio is in ASPECT, as zipped axes."""
    # widths in steps of HEAD_DIM × KV_HEADS, so that the KV heads divide the heads
    width, depth = np.meshgrid(np.arange(1024, 24_577, HEAD_DIM * KV_HEADS),
                               np.arange(8, 257), indexing="ij")
    keep = (width >= ASPECT[0] * depth) & (width <= ASPECT[1] * depth)
    width, depth = width[keep], depth[keep]
    return {"d_model": width, "n_layers": depth, "n_heads": width // HEAD_DIM}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", default="text", choices=("text", "markdown"))
    fmt = parser.parse_args().format

    result = calc.sweep("llama3-8b", **shapes(), ffn_ratio=FFN_RATIO, grid=False)
    params, train = result["params_total"], result["flops_train"]
    tokens = BUDGET / train  # what the budget buys at each shape's exact FLOPs per token
    loss = E + A / params.astype(float) ** ALPHA + B / tokens**BETA
    best = int(np.argmin(loss))
    near_20 = np.abs(tokens / params / TOKENS_PER_PARAMETER - 1) <= 0.05
    rule = int(np.flatnonzero(near_20)[np.argmin(loss[near_20])])  # the best of those

    top = Table(f"The 5 lowest predicted losses of {len(result):,} shapes at C = {BUDGET:g}",
                [Column("d_model", "int"), Column("layers", "int"), Column("heads", "int"),
                 Column("KV heads", "int"), Column("d_ff", "int"), Column("params", "count"),
                 Column("tokens D = C / F", "sci"), Column("D / N", "ratio"),
                 Column("train FLOPs/token F", "flops"), Column("loss")])
    for i in np.argsort(loss)[:5]:
        row = result.row(int(i))
        top.add(row["d_model"], row["n_layers"], row["n_heads"], row["n_kv_heads"],
                row["d_ff"], row["params_total"], tokens[i], tokens[i] / params[i],
                row["flops_train"], f"{loss[i]:.5f}")

    optimum = Table(f"Compute-optimal at C = {BUDGET:g}: GPU-hours from calc.estimate on "
                    f"{GPU} at MFU {MFU:g}",
                    [Column("criterion"), Column("shape"), Column("params", "count"),
                     Column("tokens", "sci"), Column("6N / exact F", "ratio"),
                     Column("GPU-hours", "hours"), Column(f"days on {GPUS:,} GPUs", "hours")])
    for label, i in (("lowest Chinchilla loss (Approach 3)", best),
                     (f"D / N = {TOKENS_PER_PARAMETER} ± 5 %, lowest loss", rule)):
        row = result.row(i)
        spec = calc.load_preset("llama3-8b").spec.updated(**{
            "d_model": row["d_model"], "n_layers": row["n_layers"], "ffn.d_ff": row["d_ff"],
            "attention.n_heads": row["n_heads"], "attention.n_kv_heads": row["n_kv_heads"]})
        report = calc.estimate(spec, tokens=tokens[i], gpu=GPU, mfu=MFU, gpus=GPUS)
        assert report.params.total == row["params_total"]  # the sweep and estimate agree
        assert report.flops_per_token.train == row["flops_train"]
        shape = f"d {row['d_model']:,}, L {row['n_layers']}, h {row['n_heads']}"
        optimum.add(label, shape, row["params_total"], report.training.tokens,
                    report.flops_per_token.six_n / report.flops_per_token.train,
                    report.training.gpu_hours, report.training.days)

    notes = [
        f"Shapes: Llama 3 8B's architecture (GQA, SwiGLU, RMSNorm, RoPE, vocabulary 128,256, "
        f"T = 8,192, causal attention) with head width {HEAD_DIM}, {KV_HEADS} KV heads, "
        f"d_ff = {FFN_RATIO}·d_model, widths 1,024-24,576 in steps of "
        f"{HEAD_DIM * KV_HEADS:,}, 8-256 layers, d_model / layers in [{ASPECT[0]}, "
        f"{ASPECT[1]}].",
        f"Loss: L(N, D) = {E} + {A}/N^{ALPHA} + {B}/D^{BETA} (Hoffmann et al. 2022, Approach "
        f"3), N = total parameters; D = C / (calc's exact training FLOPs per token).",
        "Within the aspect band the loss prefers the widest shapes: the fit has no shape term, "
        "and wider shapes spend less of F on attention (L·T·d), so they buy more tokens.",
        f"GPU-hours: the chosen spec through calc.estimate (dense bf16 peak, MFU {MFU:g}); the "
        f"script asserts the sweep's parameters and FLOPs equal the estimate's.",
    ]
    print(render_tables(f"Compute-optimal shape for {BUDGET:g} training FLOPs",
                        [top, optimum], notes, fmt), end="")


if __name__ == "__main__":
    main()
