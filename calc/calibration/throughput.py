"""A published run (presets/published/step/) beside the step-time model: its step time from its
own figures, and calc's prediction for its stated layout.

Time needs no FLOP convention, so each run becomes seconds per step: printed directly, from
tokens/s (tokens per step ÷ tokens/s) or sequences/s (sequences per step ÷ sequences/s), or
from the source's TFLOP/s or MFU through the source's own FLOP formula (calc.source_flops):
step = source FLOPs per step ÷ (TFLOP/s × GPUs), or ÷ (MFU × the dense peak the source divides
by × GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.counting import TERA
from calc.presets import get_gpu, get_system, load_preset, system_for_gpu
from calc.source_flops import CONVENTIONS, source_flops_per_step
from calc.spec import ModelSpec
from calc.spec.layout import Layout, check
from calc.spec.throughput import PublishedThroughput
from calc.timing.constants import TimingConstants
from calc.timing.operators import ModelTerms, model_terms
from calc.timing.pricing import price


@dataclass(frozen=True)
class Published:
    seconds: float  # one optimizer step
    how: str  # the figure and formula it comes from


def published_step(run: PublishedThroughput, spec: ModelSpec) -> Published:
    """The run's seconds per step from its own figures, direct ones first."""
    tokens = run.tokens_per_step
    if run.step_time_s is not None:
        return Published(run.step_time_s, "step time as printed")
    if run.tokens_per_s_per_gpu is not None:
        return Published(tokens / (run.tokens_per_s_per_gpu * run.gpus),
                         f"tokens/step ÷ ({run.tokens_per_s_per_gpu:,.0f} tokens/s/GPU × "
                         f"{run.gpus:,})")
    if run.tokens_per_s is not None:
        return Published(tokens / run.tokens_per_s,
                         f"tokens/step ÷ {run.tokens_per_s:,.0f} tokens/s")
    if run.samples_per_s_per_gpu is not None:
        return Published(run.global_batch / (run.samples_per_s_per_gpu * run.gpus),
                         f"sequences/step ÷ ({run.samples_per_s_per_gpu:g} sequences/s/GPU × "
                         f"{run.gpus:,})")
    convention = CONVENTIONS[run.flop_convention]
    flops = source_flops_per_step(run, spec)
    if run.tflops_per_gpu is not None:
        return Published(flops / (run.tflops_per_gpu * TERA * run.gpus),
                         f"{convention.formula} ÷ ({run.tflops_per_gpu:g} TFLOP/s × "
                         f"{run.gpus:,})")
    assert run.mfu is not None  # PublishedThroughput requires one figure
    peak = get_gpu(run.gpu).peak_flops(run.mfu_peak_dtype or run.dtype)
    return Published(flops / (run.mfu * peak * run.gpus),
                     f"{convention.formula} ÷ (MFU {run.mfu:g} × {peak / TERA:g} TFLOP/s × "
                     f"{run.gpus:,})")


def run_layout(run: PublishedThroughput, spec: ModelSpec) -> Layout:
    """The run's stated layout as calc's Layout, checked against its model. Dropout is not in
    the data: the eager-attention runs (Megatron-LM GPT 2021-22, MT-NLG, BLOOM) are taken with
    Megatron-LM's default dropout 0.1, the flash-attention runs (Llama 3, Nemotron, NeMo
    recipes) without, as those models train."""
    layout = Layout(tp=run.tp, pp=run.pp, dp=run.dp, cp=run.cp, ep=run.ep, vpp=run.vpp,
                    split_embedding_loss=run.split_embedding_loss,
                    micro_batch=run.micro_batch, global_batch=run.global_batch,
                    seq_len=run.seq_len, recompute=run.recompute, zero=run.zero,
                    sequence_parallel=run.sequence_parallel,
                    flash_attention=run.flash_attention, dtype=run.dtype,
                    framework=run.framework, pipeline_schedule=run.pipeline_schedule,
                    fp8_recipe=run.fp8_recipe, tp_overlap=bool(run.tp_overlap),
                    dropout=not run.flash_attention)
    return check(spec, layout)[0]


@dataclass(frozen=True)
class RunModel:
    """What pricing a run needs, computed once (the fit prices each run many times)."""

    run: PublishedThroughput
    spec: ModelSpec
    terms: ModelTerms
    layout: Layout
    published: Published


def run_spec(run: PublishedThroughput) -> ModelSpec:
    """The run's model preset, with the learned position table and the multi-token-prediction
    modules the run built where it says."""
    spec = load_preset(run.model).spec
    if run.position_table is not None:
        spec = spec.updated(**{"position.max_positions": run.position_table})
    if run.mtp_modules is not None:
        spec = spec.updated(mtp_modules=run.mtp_modules)
    return spec


def prepare(run: PublishedThroughput) -> RunModel:
    spec = run_spec(run)
    return RunModel(run, spec, model_terms(spec, run.seq_len), run_layout(run, spec),
                    published_step(run, spec))


def predicted_step(model: RunModel, constants: TimingConstants) -> float:
    run = model.run
    system = get_system(run.system) if run.system else system_for_gpu(run.gpu)
    return price(model.terms, model.layout, get_gpu(run.gpu), system, constants).step
