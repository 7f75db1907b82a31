"""Compute time of one micro-batch on the slowest pipeline stage: matrix products, attention,
element-wise work, the LM head and loss; and the optimizer step.

Matrix products: t = max(FLOPs / (peak × e(M, N, K)), bytes / HBM), a roofline whose compute
roof is bent by the shape, e(M, N, K) = peak_fraction × Π_x x / (x + half_dim) over the rows M,
output width N and input width K after the tensor-parallel split (small or skinny products run
far below peak: a tile that is mostly padding, too few tiles for the SMs). The product form is
symmetric in M, N, K, so the two backward products (input and weight gradients, the same three
widths permuted) take twice the forward time, as their FLOPs do (Kaplan et al. 2020 §2.1).
Attention: flash kernels at flash_fraction of the 16-bit peak on the causal FLOPs, their backward
doing 5 products for the forward's 2 (Dao 2023 §3.1); eager kernels compute the full s×s square
as products, their softmax and dropout at HBM bandwidth. Element-wise kernels stream their bytes
at hbm_fraction of HBM bandwidth; their backward moves twice the bytes (saved input and incoming
gradient read, one gradient written). Scans and convolutions of the other mixers
(calc.timing.mixers) take max(FLOPs at the CUDA-core fp32 peak or at flash_fraction of the
16-bit peak for chunked tensor-core kernels, bytes at HBM bandwidth), their backward a stated
multiple of their forward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calc.counting import BACKWARD_PER_FORWARD
from calc.errors import CalcError
from calc.spec.layout import Layout, pipeline_slots
from calc.timing.attention import AttentionKernel
from calc.timing.operators import (
    LOSS_BACKWARD_BYTES,
    LOSS_FORWARD_BYTES,
    Matmul,
    ModelTerms,
    Recurrence,
)

FLASH_BACKWARD_PER_FORWARD = 5 / 2  # products: QKᵀ, dV, dP, dQ, dK (with QKᵀ recomputed)
MATMUL_BACKWARD_PER_FORWARD = BACKWARD_PER_FORWARD  # input and weight gradients
ELEMENTWISE_BACKWARD_PER_FORWARD = 2
# torchtitan's op-level selective recomputation saves all but every second product of a layer
# (presets/timing.toml frameworks.torchtitan): half of them, taken as half their time.
OP_POLICY_PRODUCTS = 1 / 2


@dataclass(frozen=True)
class Device:
    """A GPU as the compute model sees it, the generation's constants applied."""

    gemm_peak: float  # dense FLOP/s at the layout's dtype
    attention_peak: float  # dense 16-bit FLOP/s (attention kernels stay 16-bit)
    peak_fraction: float
    half_dim: float
    flash_fraction: float
    hbm: float  # bytes/s an element-wise kernel streams
    gemm_bytes: int
    compute_efficiency: float  # the framework's factor (1 for megatron)
    vector_peak: float = 0.0  # fp32 FLOP/s on CUDA cores (0: the datasheet gives none)
    # the stack's flash kernel as measured on this generation (None: flash_fraction instead)
    attention_kernel: AttentionKernel | None = None
    # a kernel priced from a measured one (presets/timing.toml attention_kernels): its speed
    # over the measured kernel's (or over flash_fraction where none was measured)
    attention_speed: float = 1.0
    # fp8 runs: the 16-bit products' share of the 16-bit peak (the LM head and routers stay
    # 16-bit), and the recipe's quantisation bytes per element (presets/timing.toml fp8_recipes)
    high_precision_fraction: float = 0.0
    selective_recompute: str = "attention"  # the framework's meaning of recompute selective
    quantise_activation_bytes: float = 0.0
    quantise_weight_bytes: float = 0.0

    @property
    def fp8(self) -> bool:
        return self.gemm_bytes == 1

    def gemm_efficiency(self, rows: float, n: float, k: float) -> float:
        h = self.half_dim
        return self.peak_fraction * rows / (rows + h) * n / (n + h) * k / (k + h)


@dataclass(frozen=True)
class ComputeTimes:
    """Seconds for one micro-batch through the slowest stage (its layers and the LM head)."""

    matmul: float  # the layers' products, forward
    attention: float  # QKᵀ and A·V (and an eager softmax's products), forward
    attention_backward: float
    elementwise: float  # forward
    head: float  # LM head product and loss, forward
    head_backward: float
    recompute: float  # forward work done again in the backward pass
    recompute_flops: float  # per token of the whole model: what HFU adds
    scan: float = 0.0  # the other mixers' scans and convolutions, forward
    scan_backward: float = 0.0
    # a frozen base (LoRA, QLoRA; calc.timing.finetune): no weight gradients of the products,
    # the adapters' products, QLoRA's dequantisation of the 4-bit weights
    weight_gradients: bool = True
    adapters: float = 0.0
    adapters_backward: float = 0.0
    dequant: float = 0.0
    dequant_backward: float = 0.0
    # the products' input gradients (dX = dY·Wᵀ) and weight gradients (dW = Xᵀ·dY); None: as
    # long as the forward products each
    matmul_input_grad: float | None = None
    matmul_weight_grad: float | None = None
    quantise: float = 0.0  # fp8: the products' inputs and weights quantised, forward
    quantise_backward: float = 0.0  # fp8: the output gradients quantised
    # the routed experts' products, forward and backward (inside matmul and its gradients)
    experts: float = 0.0
    experts_backward: float = 0.0

    @property
    def forward(self) -> float:
        return (self.matmul + self.attention + self.elementwise + self.head + self.scan
                + self.adapters + self.dequant + self.quantise)

    @property
    def weight_gradient(self) -> float:
        """T_W: the layers' weight-gradient products (Zero Bubble's deferrable pass); none on a
        frozen base."""
        if not self.weight_gradients:
            return 0.0
        return self.matmul if self.matmul_weight_grad is None else self.matmul_weight_grad

    @property
    def matmul_backward(self) -> float:
        input_grad = self.matmul if self.matmul_input_grad is None else self.matmul_input_grad
        return input_grad + self.weight_gradient

    @property
    def backward(self) -> float:
        return (self.matmul_backward + self.attention_backward
                + ELEMENTWISE_BACKWARD_PER_FORWARD * self.elementwise + self.head_backward
                + self.scan_backward + self.quantise_backward + self.recompute
                + self.adapters_backward + self.dequant_backward)


def stage_layers(terms: ModelTerms, layout: Layout) -> int:
    """Layers of the largest pipeline stage: v virtual stages of ⌈L/(p·v)⌉ layers (Megatron-LM
    splits them evenly; an uneven split is paced by its largest chunk). Where the split counts
    the embedding and the loss as layers, L + 2 slots are split and a middle stage is largest."""
    slots = pipeline_slots(terms.layers, layout)
    return math.ceil(slots / (layout.pp * layout.vpp)) * layout.vpp


def tokens_per_micro_batch(terms: ModelTerms, layout: Layout) -> int:
    """Tokens of one micro-batch on one GPU: context parallelism splits the sequence."""
    return layout.micro_batch * terms.seq_len // layout.cp


def _shard(op: Matmul, terms: ModelTerms, tp: int) -> tuple[int, float, float]:
    """(ranks `op` is split over, its output width and its input width on one rank)."""
    match op.split:
        case "none":
            return 1, op.n, op.k
        case "kv":  # KV heads beyond h_kv are replicated: each rank computes one
            ways = min(tp, op.kv_heads or terms.kv_heads)
            return ways, op.n / ways, op.k
        case "column":
            return tp, op.n / tp, op.k
        case "row":
            return tp, op.n, op.k / tp
        case other:
            raise ValueError(f"{op.name}: split {other!r} is not a tensor-parallel split")


def _instances(op: Matmul, terms: ModelTerms, layout: Layout,
               stage: float) -> tuple[float, float]:
    """(rows of one call of `op`, calls per micro-batch) over a `stage` share of the layers."""
    tokens = tokens_per_micro_batch(terms, layout)
    rows, calls = float(tokens), op.layers * stage
    if op.expert:  # each GPU holds E/ep experts; a balanced router sends each k·ep/E of the
        rows = tokens * terms.top_k * layout.ep / terms.experts  # ep group's tokens
        calls *= terms.experts / layout.ep
    return rows, calls


def in_fp8(op: Matmul, device: Device) -> bool:
    """Whether `op` runs in fp8: on an fp8 device every layer product split by tensor
    parallelism does; the replicated ones (routers, embedding projections) and the LM head stay
    16-bit (presets/timing.toml fp8_recipes)."""
    return device.fp8 and op.split != "none" and op.name != "lm_head"


def matmul_times(op: Matmul, terms: ModelTerms, layout: Layout, device: Device,
                 stage: float) -> tuple[float, float, float]:
    """Seconds of `op`'s forward product Y = XW (M×N over depth K), its input gradient
    dX = dY·Wᵀ (M×K over N) and its weight gradient dW = Xᵀ·dY (K×N over M) for one
    micro-batch over a `stage` share of the model's layers: the same FLOPs and bytes each,
    the shape penalty of each's own output and depth."""
    tokens = tokens_per_micro_batch(terms, layout)
    split, n, k = _shard(op, terms, layout.tp)
    rows, calls = _instances(op, terms, layout, stage)
    flops = op.flops * tokens * stage / split
    peak, fraction, size = device.gemm_peak, device.peak_fraction, device.gemm_bytes
    if device.fp8 and not in_fp8(op, device):
        peak, fraction, size = device.attention_peak, device.high_precision_fraction, 2
    memory = calls * (rows * k + k * n + rows * n) * size / device.hbm
    scale = fraction / device.peak_fraction
    return tuple(max(flops / (peak * scale * device.gemm_efficiency(*shape)), memory)
                 for shape in ((rows, n, k), (rows, k, n), (k, n, rows)))  # type: ignore


def matmul_time(op: Matmul, terms: ModelTerms, layout: Layout, device: Device,
                stage: float) -> float:
    """Forward time of `op` for one micro-batch over a `stage` share of the model's layers."""
    return matmul_times(op, terms, layout, device, stage)[0]


def quantise_time(op: Matmul, terms: ModelTerms, layout: Layout, device: Device,
                  stage: float) -> tuple[float, float]:
    """Forward and backward seconds of an fp8 recipe's quantisation around `op`: its input X
    (and its weights, re-quantised each micro-batch) before the forward product, its output
    gradient dY before the backward ones, at the element-wise rate."""
    if not in_fp8(op, device):
        return 0.0, 0.0
    _, n, k = _shard(op, terms, layout.tp)
    rows, calls = _instances(op, terms, layout, stage)
    forward = calls * (rows * k * device.quantise_activation_bytes
                       + k * n * device.quantise_weight_bytes)
    return forward / device.hbm, calls * rows * n * device.quantise_activation_bytes / device.hbm


def _attention(terms: ModelTerms, layout: Layout, device: Device,
               stage: float) -> tuple[float, float]:
    """Forward and backward seconds of QKᵀ and A·V for one micro-batch: the layers of the
    model's head width, and those of a kind with its own (attention.kind_shapes), each at its
    kernel's rate for its width."""
    parts = [(terms.attention_causal - terms.kind_attention_causal,
              terms.attention_full - terms.kind_attention_full, terms.d_qk)]
    if terms.kind_layers:
        parts.append((terms.kind_attention_causal, terms.kind_attention_full, terms.kind_d_qk))
    forward = backward = 0.0
    for causal, full, d_qk in parts:
        seconds = _attention_part(causal, full, d_qk, terms, layout, device, stage)
        forward, backward = forward + seconds[0], backward + seconds[1]
    return forward, backward


def _attention_part(causal: float, full: float, d_qk: int, terms: ModelTerms, layout: Layout,
                    device: Device, stage: float) -> tuple[float, float]:
    """Forward and backward seconds of `causal` (flash) or `full` (eager) attention FLOPs per
    token of heads d_qk wide, for one micro-batch."""
    tokens = tokens_per_micro_batch(terms, layout)
    if layout.flash_attention:
        flops = causal * tokens * stage / layout.tp
        kernel = device.attention_kernel
        speed = device.attention_speed
        if kernel is None:
            forward = flops / (device.attention_peak * device.flash_fraction * speed)
            return forward, FLASH_BACKWARD_PER_FORWARD * forward
        length = terms.seq_len / layout.cp  # each call of a ring's step: s/cp against s/cp
        return (flops / (speed * kernel.flops_per_s("forward", True, d_qk, length)),
                FLASH_BACKWARD_PER_FORWARD * flops
                / (speed * kernel.flops_per_s("backward", True, d_qk, length)))
    flops = full * tokens * stage / layout.tp
    rows = terms.seq_len / layout.cp  # one head's queries against all s keys, d_qk wide
    efficiency = device.gemm_efficiency(rows, terms.seq_len, d_qk)
    forward = flops / (device.attention_peak * efficiency)
    return forward, MATMUL_BACKWARD_PER_FORWARD * forward


def _elementwise(terms: ModelTerms, layout: Layout, device: Device, stage: float,
                 only: tuple[str, ...] = ()) -> float:
    """Forward seconds of the element-wise kernels `layout` runs (all, or those in `only`)."""
    tokens = tokens_per_micro_batch(terms, layout)
    total = 0.0
    for term in terms.elementwise:
        if not term.runs(layout.dropout, layout.flash_attention) or (
                only and term.name not in only):
            continue
        match term.region:
            case "tensor":
                split = layout.tp
            case "replicated":
                split = layout.tp if layout.sequence_parallel else 1
            case other:
                raise ValueError(f"{term.name}: region {other!r} is not a kernel region")
        total += term.bytes * tokens * stage / split
    return total / device.hbm


def recurrence_time(op: Recurrence, terms: ModelTerms, layout: Layout, device: Device,
                    stage: float) -> float:
    """Forward time of a scan or convolution for one micro-batch over a `stage` share of the
    layers: the slower of its FLOPs and its bytes, split t ways by heads or channels."""
    share = tokens_per_micro_batch(terms, layout) * stage / layout.tp
    match op.unit:
        case "tensor":
            peak = device.attention_peak * device.flash_fraction
        case "vector" if device.vector_peak:
            peak = device.vector_peak
        case "vector":
            raise CalcError(f"{op.name}: the GPU's datasheet gives no fp32 peak, which prices "
                            f"the scans and convolutions that run on CUDA cores")
        case other:
            raise ValueError(f"{op.name}: unit {other!r} is not a compute unit")
    return max(op.flops * share / peak, op.bytes * share / device.hbm)


def compute_times(terms: ModelTerms, layout: Layout, device: Device) -> ComputeTimes:
    """One micro-batch through the slowest stage: the last, with `stage_layers` layers and the
    LM head; where the split counts the loss as a layer, the last stage holds one layer fewer
    and a middle stage (from pp = 3) may be slower."""
    largest = stage_layers(terms, layout)
    last = _stage_times(terms, layout, device, largest - layout.split_embedding_loss, True)
    if not layout.split_embedding_loss or layout.pp < 3:
        return last
    middle = _stage_times(terms, layout, device, largest, False)
    return max(last, middle, key=lambda times: times.forward + times.backward)


def _stage_times(terms: ModelTerms, layout: Layout, device: Device, layers: int,
                 with_head: bool) -> ComputeTimes:
    """One micro-batch through a stage of `layers` layers, with or without the LM head."""
    stage = layers / terms.layers
    tokens = tokens_per_micro_batch(terms, layout)
    slow = 1 / device.compute_efficiency
    products = [matmul_times(op, terms, layout, device, stage) for op in terms.matmuls]
    matmul, input_grad, weight_grad = (sum(column) for column in zip(*products, strict=True)) \
        if products else (0.0, 0.0, 0.0)
    routed = [times for op, times in zip(terms.matmuls, products, strict=True) if op.expert]
    quantised = [quantise_time(op, terms, layout, device, stage) for op in terms.matmuls]
    quantise = sum(forward for forward, _ in quantised)
    attention, attention_backward = _attention(terms, layout, device, stage)
    elementwise = _elementwise(terms, layout, device, stage)
    scans = [(recurrence_time(op, terms, layout, device, stage), op.backward)
             for op in terms.recurrences]
    scan = sum(seconds for seconds, _ in scans)
    head, *head_backward = (matmul_times(terms.head, terms, layout, device, 1.0) if with_head
                            else (0.0, 0.0, 0.0))
    # vocabulary-parallel: V/t logits per token
    logits = terms.head_rows / layout.tp * tokens if with_head else 0.0
    recompute, recompute_flops = 0.0, 0.0
    if layout.recompute == "selective" and device.selective_recompute == "op":
        # every element-wise kernel and every second product: half the products' time
        recompute = OP_POLICY_PRODUCTS * matmul + elementwise + quantise
        recompute_flops = OP_POLICY_PRODUCTS * sum(op.flops for op in terms.matmuls)
    elif layout.recompute == "selective":  # the attention core (Korthikanti et al. 2022 §5)
        recompute = attention + _elementwise(terms, layout, device, stage,
                                             ("softmax", "attention dropout"))
        recompute_flops = terms.attention_causal
    elif layout.recompute == "full":  # every layer's forward again (not the LM head)
        recompute = matmul + attention + elementwise + scan + quantise
        recompute_flops = terms.forward_flops - terms.head.flops
    if layout.recompute_norm_up and layout.recompute != "full":
        # DeepSeek-V3 §3.2.3: every norm and MLA's up-projections again in the backward, the
        # up-projections at the speed of the query and key/value products they are part of
        qkv = [(op, times[0]) for op, times in zip(terms.matmuls, products, strict=True)
               if op.name in ("attention/q", "attention/kv")]
        qkv_flops = sum(op.flops for op, _ in qkv)
        if qkv_flops:
            recompute += sum(seconds for _, seconds in qkv) * terms.mla_up_flops / qkv_flops
        recompute += _elementwise(terms, layout, device, stage, ("norms",))
        recompute_flops += terms.mla_up_flops
    return ComputeTimes(
        matmul=matmul * slow, attention=attention * slow,
        attention_backward=attention_backward * slow, elementwise=elementwise * slow,
        head=(head + LOSS_FORWARD_BYTES * logits / device.hbm) * slow,
        head_backward=(sum(head_backward) + LOSS_BACKWARD_BYTES * logits / device.hbm) * slow,
        matmul_input_grad=input_grad * slow, matmul_weight_grad=weight_grad * slow,
        recompute=recompute * slow, recompute_flops=recompute_flops, scan=scan * slow,
        scan_backward=sum(seconds * backward for seconds, backward in scans) * slow,
        quantise=quantise * slow,
        quantise_backward=sum(backward for _, backward in quantised) * slow,
        experts=sum(times[0] for times in routed) * slow,
        experts_backward=sum(times[1] + times[2] for times in routed) * slow)


def optimizer_time(params: float, bytes_per_param: float, device: Device) -> float:
    """The optimizer step streams its states once: `bytes_per_param` read and written for each
    of the `params` this GPU updates."""
    return params * bytes_per_param / device.hbm
