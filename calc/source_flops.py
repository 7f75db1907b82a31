"""Each published source's own FLOP count per training step, keyed by `flop_convention`.

A paper's "TFLOP/s per GPU" is its FLOP count per step ÷ (step time × GPUs), and its MFU is
that ÷ the peak. The counts differ — Narayanan et al. count the recomputed forward pass, NeMo
counts full (not causal) attention — so a measured TFLOP/s or MFU only becomes a step time
again through the source's own formula. These are those formulas, as each source writes them,
with calc's model sizes substituted (h = d_model, l = n_layers, a heads, g KV groups, V the
vocabulary: the sources' code takes one padded_vocab_size for the embedding and the output layer
alike, so V stays vocab_size here even for a narrower head, which no published run has). They
are not calc's count (calc.formulas.flops is); they reproduce the sources.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from calc.errors import CalcError
from calc.spec import ModelSpec
from calc.spec.throughput import PublishedThroughput

# Megatron-Core's gated-linear multiplier: a SwiGLU FFN has 3 matrices of h × f, not 2.
GATED_MULTIPLIER = 1.5


@dataclass(frozen=True)
class Convention:
    """A source's FLOP-counting rule: what it says, where it is from, and the count itself."""

    label: str
    formula: str
    source: str
    flops_per_step: Callable[[ModelSpec, int, int], float] | None


def _megatron_eq3(spec: ModelSpec, batch: int, seq: int) -> float:
    """Narayanan et al. 2021 §5.1 eq. 3: forward, backward and the recomputed forward."""
    h, l, v = spec.d_model, spec.n_layers, spec.vocab_size
    return 96 * batch * seq * l * h**2 * (1 + seq / (6 * h) + v / (16 * l * h))


def _megatron_model(spec: ModelSpec, batch: int, seq: int) -> float:
    """Korthikanti et al. 2022 §6.3: model FLOPs, no recomputation (their MFU)."""
    h, l, v = spec.d_model, spec.n_layers, spec.vocab_size
    return 72 * batch * seq * l * h**2 * (1 + seq / (6 * h) + v / (12 * l * h))


def _megatron_selective_hw(spec: ModelSpec, batch: int, seq: int) -> float:
    """Korthikanti et al. 2022 §6.3: hardware FLOPs under selective recomputation (their HFU)."""
    h, l, v = spec.d_model, spec.n_layers, spec.vocab_size
    return 72 * batch * seq * l * h**2 * (1 + seq / (3 * h) + v / (12 * l * h))


def _megatron_core_2024(spec: ModelSpec, batch: int, seq: int) -> float:
    """Megatron-Core's num_floating_point_operations (2024; full attention, no recompute)."""
    h, l, v = spec.d_model, spec.n_layers, spec.vocab_size
    heads = spec.attention.n_heads
    query_ratio = heads * spec.head_dim_qk / h
    gated = GATED_MULTIPLIER if spec.ffn.gated else 1
    if spec.moe is not None:
        if spec.n_moe_layers != l:
            raise CalcError(f"flop_convention 'megatron-core-2024' counts every layer as MoE; "
                            f"{spec.name} mixes dense and MoE layers")
        ffn = spec.moe.d_expert * spec.moe.experts_per_token
    else:
        ffn = spec.ffn.d_ff
    attention = (1 + spec.n_kv_heads / heads + seq / h) * query_ratio
    return 12 * batch * seq * l * h**2 * (attention + ffn / h * gated + v / (2 * l * h))


def _megatron_core_2025(spec: ModelSpec, batch: int, seq: int) -> float:
    """Megatron Bridge's num_floating_point_operations (2025): causal attention (half the score
    and value products), dense and MoE layers apart, shared experts, multi-latent attention and
    the multi-token-prediction layers, each counted as that file counts them."""
    h, a, v = spec.d_model, spec.attention.n_heads, spec.vocab_size
    mtp = spec.mtp_modules
    layers = spec.n_layers + mtp
    moe = spec.moe
    dense, sparse = spec.n_layers - spec.n_moe_layers, spec.n_moe_layers
    if moe is not None:  # the MTP layers are MoE layers when the last layer is
        sparse += mtp
    else:
        dense += mtp
    gated = GATED_MULTIPLIER if spec.ffn.gated else 1
    routed = moe.d_expert * moe.experts_per_token if moe is not None else 0
    shared = moe.n_shared_experts * moe.shared_width if moe is not None else 0
    mlp = 12 * h * gated * (spec.ffn.d_ff * dense + (routed + shared) * sparse)
    mla = spec.attention.mla
    if mla is not None:
        qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        q = (mla.q_lora_rank * (h + a * qk + 1) if mla.q_lora_rank is not None else h * a * qk)
        attention = 6 * layers * (
            q + mla.kv_lora_rank * (h + a * (mla.qk_nope_head_dim + mla.v_head_dim) + 1)
            + h * mla.qk_rope_head_dim + a * mla.v_head_dim * h
            + seq * a * qk / 2 + seq * a * mla.v_head_dim / 2)
    else:
        ratio = a * spec.head_dim_qk / h
        attention = 12 * layers * h**2 * (1 + spec.n_kv_heads / a + seq / h / 2) * ratio
    mtp_extra = 6 * mtp * (3 * h + 2 * h**2)
    logits = 6 * h * v * (mtp + 1)
    return batch * seq * (mlp + attention + mtp_extra + logits)


def _palm(spec: ModelSpec, batch: int, seq: int) -> float:
    """Chowdhery et al. 2022 (PaLM) App. B: 6N + 12·L·H·Q·T per token, full attention; N all
    (active) parameters but a learned position table (as calc.formulas.rules reads it)."""
    from calc.evaluate import count_params  # the exact count; imported only where used

    counts = count_params(spec)
    n = counts.active - counts.components.get("embedding/position", 0)
    width = spec.attention.n_heads * spec.head_dim_qk
    return (6 * n + 12 * spec.n_layers * width * seq) * batch * seq


def _six_n(spec: ModelSpec, batch: int, seq: int) -> float:
    """6·N·D with N all (active) parameters — Kaplan et al. 2020 §2.1."""
    from calc.evaluate import count_params  # the exact count; imported only where used

    return 6 * count_params(spec).active * batch * seq


def _foundry_params(spec: ModelSpec, seq: int) -> int:
    """llm-foundry's n_params: every parameter of the model it built, whose learned position
    table (if any) has max_seq_len = seq rows (the benchmark sets max_seq_len per run)."""
    from calc.evaluate import count_params  # the exact count; imported only where used

    counts = count_params(spec)
    table = counts.components.get("embedding/position", 0)
    return counts.total - table + (seq * spec.d_model if table else 0)


def _foundry(spec: ModelSpec, batch: int, seq: int) -> float:
    """llm-foundry's MFU count: 3 × (2·n_params·s + 4·l·d·s²) per sequence."""
    return 3 * (2 * _foundry_params(spec, seq) * seq + 4 * spec.n_layers * spec.d_model
                * seq**2) * batch


def _foundry_recompute(spec: ModelSpec, batch: int, seq: int) -> float:
    """llm-foundry's HFU count with activation checkpointing: one more forward, 4 × not 3 ×."""
    return _foundry(spec, batch, seq) * 4 / 3


def _torchtitan(spec: ModelSpec, batch: int, seq: int) -> float:
    """torchtitan's get_num_flop_per_token with exclude_embedding: 6·(N − V·d) + 12·l·H·Q·T,
    H·Q = heads × (dim // heads)."""
    from calc.evaluate import count_params  # the exact count; imported only where used

    n = count_params(spec).total - spec.vocab_size * spec.d_model
    width = spec.attention.n_heads * (spec.d_model // spec.attention.n_heads)
    return (6 * n + 12 * spec.n_layers * width * seq) * batch * seq


CONVENTIONS: dict[str, Convention] = {
    "megatron-eq3": Convention(
        "Megatron eq. 3 (with full recomputation)",
        "96·B·s·l·h²·(1 + s/6h + V/16lh) per step",
        "Narayanan et al. 2021 (arXiv:2104.04473) §5.1 eq. 3; also Megatron-DeepSpeed's "
        "logged TFLOPs (BLOOM) and Smith et al. 2022 (MT-NLG)", _megatron_eq3),
    "megatron-model": Convention(
        "Megatron model FLOPs (Korthikanti)",
        "72·B·s·l·h²·(1 + s/6h + V/12lh) per step",
        "Korthikanti et al. 2022 (arXiv:2205.05198) §6.3, model FLOPs utilisation",
        _megatron_model),
    "megatron-selective-hw": Convention(
        "Megatron hardware FLOPs, selective recomputation (Korthikanti)",
        "72·B·s·l·h²·(1 + s/3h + V/12lh) per step",
        "Korthikanti et al. 2022 (arXiv:2205.05198) §6.3, hardware FLOPs utilisation",
        _megatron_selective_hw),
    "megatron-core-2024": Convention(
        "Megatron-Core / NeMo 2024 (full attention)",
        "12·B·s·l·h²·((1 + g/a + s/h)·a·d_h/h + (f/h)·k·glu + V/2lh) per step, "
        "glu = 1.5 for a gated FFN, k = experts per token",
        "Megatron-LM megatron/training/training.py num_floating_point_operations (2024, before "
        "its 2025 causal-attention discount); NeMo nemo/utils/flops_formulas.py, same terms, "
        "until its August 2025 causal discount", _megatron_core_2024),
    "megatron-core-2025": Convention(
        "Megatron-Core / Megatron Bridge 2025 (causal attention)",
        "12·B·s·l·h²·((1 + g/a + s/2h)·a·d_h/h + (f/h)·k·glu + V/2lh) per step for a "
        "dense model: the 2024 count with half the attention scores; dense and MoE layers "
        "apart, shared experts, MLA's low-rank projections and the MTP layers as the file "
        "counts them",
        "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py "
        "num_floating_point_operations at tag v0.2.0 (the 25.11 container; 'Only half of the "
        "attention matrix is non-zero'); its vocabulary is padded to a multiple of 128 × TP, "
        "which calc leaves out (under 0.05 % of a Llama 3 step)", _megatron_core_2025),
    "foundry": Convention(
        "llm-foundry MFU",
        "3·(2·N·s + 4·l·d·s²)·B per step, N every parameter with a position table of s rows",
        "mosaicml/llm-foundry scripts/train/benchmarking/collect_results.py (commit 495218376): "
        "flops_per_seq = 2·n_params·seq_len, attn_flops_per_seq = n_layers·2·2·d_model·"
        "seq_len², MFU = 3·(both)·samples/s ÷ (GPUs × peak)", _foundry),
    "foundry-recompute": Convention(
        "llm-foundry HFU with activation checkpointing",
        "4·(2·N·s + 4·l·d·s²)·B per step",
        "mosaicml/llm-foundry scripts/train/benchmarking/collect_results.py (commit 495218376): "
        "hfu = 4·(both)·samples/s ÷ (GPUs × peak) when activation_checkpointing is set",
        _foundry_recompute),
    "torchtitan": Convention(
        "torchtitan (embedding excluded)",
        "(6·(N − V·d) + 12·l·H·Q·T)·B·T per step, H·Q = heads × (d // heads)",
        "pytorch/torchtitan torchtitan/utils.py get_num_flop_per_token and train.py's "
        "get_num_params(model, exclude_embedding=True) (commits 3faaa1a0d, 9dec370ad)",
        _torchtitan),
    "palm": Convention(
        "PaLM 6N + 12·L·H·Q·T",
        "(6·N + 12·L·H·Q·T)·B·T per step, N the parameters without a position table",
        "Chowdhery et al. 2022 (PaLM, arXiv:2204.02311) Appendix B", _palm),
    "6N": Convention(
        "6N", "6·N·B·s per step, N all (active) parameters",
        "Kaplan et al. 2020 §2.1", _six_n),
    "unstated": Convention(
        "not stated by the source", "—", "the run's own source", None),
}


def source_flops_per_step(run: PublishedThroughput, spec: ModelSpec,
                          convention: str | None = None) -> float:
    """FLOPs of one optimizer step of `run` as its source counts them (default: the run's
    `flop_convention`; pass `run.hfu_convention` for the count behind its HFU)."""
    key = convention or run.flop_convention
    if run.mtp_modules is not None and run.mtp_modules != spec.mtp_modules:
        spec = spec.updated(mtp_modules=run.mtp_modules)  # the modules the run trained
    rule = CONVENTIONS[key].flops_per_step
    if rule is None:
        raise CalcError(f"run {run.name!r}: its source does not state how it counts FLOPs "
                        f"(flop_convention {key!r}); compare its step time or tokens/s instead")
    return rule(spec, run.global_batch, run.seq_len)
