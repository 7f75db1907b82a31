"""One training step: micro-batches through a pipeline, the communication left exposed, the
bubble and the optimizer, as a sum of named parts.

1F1B and interleaved 1F1B (Narayanan et al. 2021 §2.2): a stage runs its m micro-batches in
m·t_mb and waits (p − 1)/v · t_mb for the pipeline to fill and drain, a bubble of (p − 1)/(v·m)
of the ideal time, where t_mb is one micro-batch's forward and backward through the stage's
layers, with whatever communication of it is exposed. Overlap (when the framework does it):
gradient reduction runs during the last micro-batch's backward (Megatron-LM
--overlap-grad-reduce, DeepSpeed overlap_comm, FSDP); the updated weights' gather (ZeRO-1/2,
Megatron's distributed optimizer with --overlap-param-gather) during the next first forward. In
an interleaved pipeline each of the v model chunks reduces its gradients once its own last
backward is done, and the chunks finish one after another, p chunk-backwards apart (the
schedule runs micro-batches in groups of p per chunk, Narayanan et al. 2021 §2.2.2): the
reductions queue on the link while the later chunks still compute, and only what outruns them is
exposed (the gathers mirror this in the next step's warm-up). ZeRO-3 gathers the next weights
during the current forward/backward and reduce-scatters during the backward; what does not fit in
that compute is exposed. ZeRO-2 under a pipeline reduces once per step: gradients accumulate
unsharded over the micro-batches (FSDP's no_sync, as torchtitan's pipeline schedules do), and
DeepSpeed refuses per-micro-batch reduction with a pipeline. TP, EP and pipeline sends are on the
critical path and fully exposed, except where the stack overlaps them: with TP-communication
overlap (Megatron-LM --tp-comm-overlap, Transformer Engine's userbuffers; torchtitan's async TP)
each all-gather and reduce-scatter of sequence parallelism runs in chunks under the product it
feeds or follows, and only what outlasts the layers' products is exposed; DualPipe runs one
micro-batch's expert all-to-all under another's computation (DeepSeek-AI 2024 §3.2.1), exposing
only what outlasts it. Ring attention's exchanges hide behind the attention they feed.

Schedules that split the backward pass (Qi et al. 2024, Zero Bubble, arXiv:2401.10241) into the
input gradient B and the weight gradient W fill the bubble with deferred W passes. A stage's last
input gradient reaches the first stage (p − 1)(T_F + T_B) after the pipeline starts filling, where
1F1B also waits for W; so the bubble is (p − 1)(T_F + T_B) − w·T_W, with w the W passes a stage
can defer: none in 1F1B (whose B carries W, (p − 1)(T_F + T_B + T_W)), p − 1 in ZB-H1 and ZB-1p
(activation memory of p micro-batches: (p − 1)(T_F + T_B − T_W), the paper's Table 2), 2(p − 1)
in ZB-H2 and ZB-2p (2p − 1 micro-batches: (p − 1)(T_F + T_B − 2T_W)), never more than the m − 1
other micro-batches. DualPipe's bubble is (p/2 − 1)(T_F&B + T_B − 3T_W) (DeepSeek-V3 report,
Table 2, B the whole backward), T_F&B the overlapped forward and backward of two micro-batches.
T_W is the layers' weight-gradient products (as long as their forward products).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from calc.counting import GIGA, TERA
from calc.errors import CalcError
from calc.spec.hardware import GPU
from calc.spec.layout import Layout
from calc.spec.memory import OPTIMIZERS, RECIPES
from calc.spec.precision import BYTES_PER_ELEMENT
from calc.timing.attention import attention_kernel
from calc.timing.communication import (
    GradientCommunication,
    MicroBatchCommunication,
    gradient_communication,
    micro_batch_communication,
    params_on_gpu,
)
from calc.timing.compute import (
    ComputeTimes,
    Device,
    compute_times,
    matmul_time,
    optimizer_time,
    stage_layers,
)
from calc.timing.constants import FrameworkConstants, TimingConstants
from calc.timing.finetune import FineTuneTerms, frozen_times, trainable_share
from calc.timing.network import Network
from calc.timing.operators import ACTIVATION_BYTES, ModelTerms

T = TypeVar("T")
# An fp8 layout that names no recipe: Transformer Engine's default, DelayedScaling (fp8_autocast
# with no recipe), what Megatron-LM and NeMo ran before current scaling.
DEFAULT_FP8_RECIPE = "delayed"
# Attention kernels stay 16-bit in fp8 recipes (Transformer Engine's default).
ATTENTION_DTYPE = {"fp8": "bf16"}
# The parts of a step, in the order they are printed; they sum to the step time.
PARTS = ("compute", "recompute", "tp_communication", "cp_communication", "ep_communication",
         "pp_communication", "zero_communication", "pipeline_bubble", "dp_communication",
         "optimizer")


@dataclass(frozen=True)
class StepTime:
    step: float  # seconds
    breakdown: dict[str, float]  # PARTS -> seconds; sums to step
    micro_batch: float  # t_mb: one micro-batch through the slowest stage, exposed parts in
    compute: ComputeTimes
    communication: MicroBatchCommunication
    gradients: GradientCommunication


def device_for(gpu: GPU, dtype: str, constants: TimingConstants,
               framework: FrameworkConstants, fp8_recipe: str | None = None) -> Device:
    _, generation = constants.generation(gpu.name, gpu.generation)
    bandwidth = (gpu.bandwidth_gb_s or 0) * GIGA
    recipe = constants.fp8_recipe(fp8_recipe or DEFAULT_FP8_RECIPE) if dtype == "fp8" else None
    kernel, attention_speed = framework.attention_kernel, 1.0
    if kernel in constants.attention_kernels:  # priced from a measured kernel
        derived = constants.attention_kernels[kernel]
        kernel, attention_speed = derived.measured_as, derived.relative_speed
    # a power-limited part: every tensor-core product (GEMMs, attention) at its sustained rate
    limit = constants.power_limits.get(gpu.name)
    tensor_rate = limit.tensor_rate if limit else 1.0
    measured = attention_kernel(kernel, gpu.name, generation.gpus)
    if measured is not None:
        measured = replace(measured, scale=measured.scale * tensor_rate)
    return Device(
        high_precision_fraction=generation.peak_fraction,
        selective_recompute=framework.selective_recompute,
        quantise_activation_bytes=recipe.activation_bytes if recipe else 0.0,
        quantise_weight_bytes=recipe.weight_bytes if recipe else 0.0,
        attention_kernel=measured, attention_speed=attention_speed,
        gemm_peak=gpu.peak_flops(dtype) * tensor_rate,
        attention_peak=gpu.peak_flops(ATTENTION_DTYPE.get(dtype, dtype)) * tensor_rate,
        peak_fraction=generation.fp8_fraction if dtype == "fp8" else generation.peak_fraction,
        half_dim=constants.gemm.half_dim,
        flash_fraction=generation.flash_fraction,
        hbm=bandwidth * constants.memory.hbm_fraction, gemm_bytes=BYTES_PER_ELEMENT[dtype],
        compute_efficiency=framework.compute_efficiency,
        vector_peak=gpu.peak_tflops.get("fp32", 0.0) * TERA)


def optimizer_bytes_per_param(grad_bytes: int) -> int:
    """AdamW with mixed precision: read the fp32 master weights, both moments and the gradient;
    write the master weights, the moments and the 16-bit working copy (ZeRO §3.1's 2 + 2 + 12
    bytes, each touched once)."""
    recipe, adam = RECIPES["mixed"], OPTIMIZERS["adamw"]
    return (recipe.master + adam.state_bytes + grad_bytes) + (recipe.master + adam.state_bytes
                                                              + recipe.weights)


def updated_params(terms: ModelTerms, layout: Layout) -> float:
    """Parameters one GPU's optimizer step updates: those it holds, its 1/(d·cp) partition of
    them under ZeRO ≥ 1 (experts: over the d·cp/ep ranks that share them)."""
    dense, expert = params_on_gpu(terms, layout)
    if layout.zero >= 1:
        dense, expert = (dense / (layout.dp * layout.cp),
                         expert * layout.ep / (layout.dp * layout.cp))
    return dense + expert


def tp_gather_bytes(layout: Layout, framework: FrameworkConstants) -> int:
    """Bytes per element of the layers' sequence-parallel all-gathers: 1 where the stack casts
    to fp8 before gathering under this fp8 recipe (presets/timing.toml fp8_tp_all_gather),
    else 16-bit."""
    recipe = layout.fp8_recipe or DEFAULT_FP8_RECIPE
    if layout.dtype == "fp8" and recipe in framework.fp8_tp_all_gather:
        return BYTES_PER_ELEMENT["fp8"]
    return ACTIVATION_BYTES


def _micro_batch_key(layout: Layout) -> tuple:
    """The fields compute and per-micro-batch communication read: layouts equal on these
    share them (the layout search's cache)."""
    return (layout.tp, layout.cp, layout.ep, layout.pp, layout.vpp, layout.split_embedding_loss,
            layout.micro_batch, layout.recompute, layout.recompute_norm_up,
            layout.sequence_parallel, layout.flash_attention, layout.dropout, layout.fp8_recipe)


def _gradient_key(layout: Layout) -> tuple:
    return ("dp", layout.tp, layout.pp, layout.cp, layout.ep, layout.dp, layout.zero)


def _cached(cache: dict | None, key: tuple, make: Callable[[], T]) -> T:
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _frozen(terms: ModelTerms, layout: Layout, device: Device, work: ComputeTimes,
            finetune: FineTuneTerms) -> ComputeTimes:
    """`work` on a frozen base with `finetune`'s adapters (calc.timing.finetune)."""
    stage = stage_layers(terms, layout) / terms.layers
    head = matmul_time(terms.head, terms, layout, device, 1.0)
    return frozen_times(work, terms, finetune, layout, device, stage, head)


# W passes a stage of p may defer into the bubble, by schedule (module doc); None: 1F1B's 0.
DEFERRED_W = {"zb-h1": 1, "zb-1p": 1, "zb-h2": 2, "zb-2p": 2}
UNPRICED_SCHEDULES = ("zbv", "looped-bfs")


def pipeline_bubble(layout: Layout, micro_batch: float, forward: float,
                    weight_gradient: float) -> float:
    """Idle time of the slowest stage per step: `micro_batch` is t_mb = T_F + T_B + T_W with
    the exposed communication, `forward` T_F and `weight_gradient` T_W (the module doc)."""
    p, v, m, schedule = layout.pp, layout.vpp, layout.micro_batches, layout.pipeline_schedule
    if p == 1:
        return 0.0
    if schedule in UNPRICED_SCHEDULES:
        raise CalcError(f"pipeline_schedule={schedule!r} is not priced (priced: 1f1b, "
                        f"interleaved, gpipe, zb-h1, zb-h2, zb-1p, zb-2p, dualpipe)")
    if schedule == "dualpipe":  # T_F&B + (T_B + T_W) − 3T_W, T_F&B = T_F + T_B + T_W
        return max(0.0, (p / 2 - 1) * (2 * micro_batch - forward - 3 * weight_gradient))
    deferred = min(m - 1, DEFERRED_W.get(schedule or "", 0) * (p - 1))
    if not deferred:  # GPipe idles as long as 1F1B (Narayanan et al. 2021 §2.2.1)
        return (p - 1) / v * micro_batch
    return max(0.0, (p - 1) * (micro_batch - weight_gradient) - deferred * weight_gradient) / v


def step_time(terms: ModelTerms, layout: Layout, device: Device, network: Network,
              framework: FrameworkConstants, cache: dict | None = None,
              finetune: FineTuneTerms | None = None) -> StepTime:
    """The step of `layout`; `cache` (the layout search's) reuses the parts that layouts
    differing only in ZeRO stage or data parallelism share. `finetune`: LoRA or QLoRA on a
    frozen base (None: every weight trains)."""
    work, comm = _cached(cache, _micro_batch_key(layout), lambda: (
        compute_times(terms, layout, device),
        micro_batch_communication(terms, layout, network, tp_gather_bytes(layout, framework))))
    grads = _cached(cache, _gradient_key(layout), lambda: gradient_communication(
        terms, layout, network, framework.grad_reduce_bytes))
    share = trainable_share(finetune)
    if finetune is not None:  # only the adapters' gradients are reduced and updated
        work = _frozen(terms, layout, device, work, finetune)
        grads = replace(grads, grad_reduce=grads.grad_reduce * share,
                        param_gather=grads.param_gather * (1 if layout.zero == 3 else share))
    overlap = framework.overlap_grad_reduce
    forward, backward = work.forward, work.backward - work.recompute

    def exposed(seconds: float, hidden_by: float) -> float:
        return max(0.0, seconds - hidden_by) if overlap else seconds

    def exposed_by_chunk(seconds: float, micro_batch_pass: float) -> float:
        """Per-step collective of `seconds` over v chunks whose last passes (each
        micro_batch_pass / v long, tensor-parallel exchanges included: they run on NVLink,
        these on the data-parallel link) end p chunk-passes apart."""
        if not overlap:
            return seconds
        v, chunk = layout.vpp, micro_batch_pass / layout.vpp
        apart = (v - 1) * layout.pp * chunk
        return max(0.0, seconds / v - chunk, seconds - chunk - apart)

    cp = (max(0.0, comm.cp_forward - work.attention)
          + max(0.0, comm.cp_backward - work.attention_backward))
    zero_mb = 0.0  # per micro-batch
    if layout.zero == 3:
        zero_mb = (exposed(grads.param_gather, forward)
                   + exposed(grads.param_gather + grads.grad_reduce, backward + work.recompute))
    elif layout.zero == 2 and layout.pp == 1:
        zero_mb = exposed(grads.grad_reduce, backward)
    tp = comm.tp_forward + comm.tp_backward
    if layout.tp_overlap:  # forward collectives under the forward products, backward under 2×
        tp = (max(0.0, comm.tp_forward - work.matmul)
              + max(0.0, comm.tp_backward - work.matmul_backward))
    ep = comm.ep
    if layout.pipeline_schedule == "dualpipe":  # under the paired micro-batch's computation
        ep = max(0.0, comm.ep - forward - backward - work.recompute)
    elif terms.shortcut:
        # ScMoE (LongCat-Flash, arXiv 2509.01322 §2.2): an MoE layer's dispatch and combine
        # run while the dense layers around it compute, so they hide under the work of the
        # pass that is not the routed experts' own products
        dense = forward + backward - work.experts - work.experts_backward
        ep = max(0.0, comm.ep - dense)
    per_mb = (forward + backward, work.recompute, tp, cp, ep, comm.pp, zero_mb)
    micro_batch = sum(per_mb)
    m = layout.micro_batches
    dp = 0.0
    if layout.zero <= 1 or (layout.zero == 2 and layout.pp > 1):
        dp += exposed_by_chunk(grads.grad_reduce, backward + comm.tp_backward)
    if layout.zero in (1, 2):  # the updated weights, gathered for the next forward
        dp += exposed_by_chunk(grads.param_gather, forward + comm.tp_forward)
    optimizer = optimizer_time(updated_params(terms, layout) * share,
                               optimizer_bytes_per_param(framework.grad_reduce_bytes), device)
    breakdown = dict(zip(PARTS[:7], (m * value for value in per_mb), strict=True))
    breakdown["pipeline_bubble"] = pipeline_bubble(
        layout, micro_batch, forward + comm.tp_forward, work.weight_gradient)
    breakdown["dp_communication"] = dp
    breakdown["optimizer"] = optimizer
    return StepTime(step=sum(breakdown.values()), breakdown=breakdown, micro_batch=micro_batch,
                    compute=work, communication=comm, gradients=grads)
