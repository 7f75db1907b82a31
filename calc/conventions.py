"""The counting conventions: their named factors and the sentences printed under every table
(DESIGN.md, "Counting conventions")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from calc.report import TrainingReport

# Named factors (Kaplan et al. 2020 §2.1): gradients w.r.t. activations and w.r.t. weights each
# cost about one forward pass; training = forward + backward. Used by the formulas, the numeric
# path and the sweeps alike.
BACKWARD_PER_FORWARD = 2
TRAIN_PER_FORWARD = 1 + BACKWARD_PER_FORWARD

PARAMETERS = (
    "Parameters: unique tensors, a tied weight counted once. non-embedding = total − token and "
    "position embeddings − an untied LM head (Kaplan et al. 2020); active = what one token "
    "uses (top-k of the routed experts, the shared experts and the router).")
FLOPS = (
    "FLOPs: matrix products only, a multiply-add = 2 FLOPs (what torch's FlopCounterMode "
    "counts); the embedding lookup, norms, softmax, activations, biases, RoPE and a relative-"
    "position projection (Transformer-XL: once per batch, not per token) count 0; the LM head "
    "counts even when tied; MoE counts only the experts a token uses.")
ATTENTION = {
    "causal": "Attention: causal — query i scores keys 1..i (the lower triangle with its "
              "diagonal), at most w in a sliding-window layer; GQA/MQA do not reduce score "
              "FLOPs. Inference: one new token attends to all T (or w) cached keys.",
    "full": "Attention: full — every query scores all T keys (the T×T square, as torch counts "
            "an explicit matmul), at most w in a sliding-window layer; GQA/MQA do not reduce "
            "score FLOPs. Inference: one new token attends to all T (or w) cached keys.",
}
SCANS = (
    "Scans and convolutions (Mamba, gated DeltaNet, short convolutions) are not matrix "
    "products: a causal conv costs 2·k FLOPs per channel per token (a multiply-add per tap); "
    "a scan counts its recurrence run token by token, 1 FLOP per multiply or add on a state "
    "element (decay 1, write 2, each read 2: Mamba 5, gated DeltaNet 7 per element); what "
    "prepares the coefficients (exp, softplus, gates) counts 0.")
PASSES = ("Backward = 2 × forward (activation and weight gradients); train = 3 × forward. "
          "Recomputation (activation checkpointing) is hardware FLOPs, not counted.")
UNITS = "Units: decimal — 1 M = 1e6, 1 B = 1e9, 1 T = 1e12; GFLOP = 1e9 FLOPs."


def describe(attention: str, training: TrainingReport | None,
             scans: bool = False) -> list[str]:
    """The convention sentences for a report counted under `attention` (and `scans`: the model
    has Mamba, gated DeltaNet or short-convolution layers)."""
    lines = [PARAMETERS, FLOPS, ATTENTION[attention], *([SCANS] if scans else []), PASSES]
    if training is not None and training.peak_flops is not None:
        mfu_note = {"default": "default: the source chapter's realistic 40 %",
                    "flag": "given with --mfu"}.get(training.mfu_source, training.mfu_source)
        lines.append(
            f"GPU-hours = training FLOPs / (dense {training.dtype} peak of one "
            f"{training.gpu} = {training.peak_flops / 1e12:g} TFLOP/s × MFU "
            f"{training.mfu:.3g} [{mfu_note}]) / 3600; days = GPU-hours / ({training.gpus:,} "
            f"GPUs × 24).")
    lines.append(UNITS)
    return lines


@dataclass(frozen=True)
class RuleInfo:
    """A published training-FLOPs rule: its label, what it assumes, where it comes from.

    The expressions themselves are in calc.formulas.rules (sympy), keyed the same way.
    """

    label: str
    assumes: str
    source: str


RULES: dict[str, RuleInfo] = {
    "6N": RuleInfo(
        "6N", "N = all (active) parameters, embeddings included; attention ignored",
        "Kaplan et al. 2020 §2.1 (C ≈ 6N); chapter 1.3: each parameter one multiply-add"),
    "kaplan": RuleInfo(
        "Kaplan 3·(2N + 2·L·T·d_attn)",
        "N non-embedding; one T×d_attn score term per layer (the 'Mask' row); no LM head",
        "Kaplan et al. 2020 Table 1, Eq. 2.2 (C_forward = 2N + 2·n_layer·n_ctx·d_attn)"),
    "palm": RuleInfo(
        "PaLM 6N + 12·L·H·Q·T",
        "full T×T attention; N without position embeddings (nanoGPT's reading)",
        "Chowdhery et al. 2022 (PaLM) Appendix B"),
    "megatron": RuleInfo(
        "Megatron-LM (causal)",
        "MHA/GQA projections (not MLA), gated FFN, top-k experts; T/2 keys per query; no router",
        "Narayanan et al. 2021 §5.1 Eq. 3 without recomputation, as generalised in "
        "Megatron-LM's training FLOPs count (causal attention halved since 2025)"),
    "chinchilla": RuleInfo(
        "Chinchilla App. F",
        "embeddings and softmax counted; K, Q, V all h·d_qk wide; 2-matrix FFN; full T×T",
        "Hoffmann et al. 2022 (Chinchilla) Appendix F, per sequence ÷ T; backward = 2×"),
}
