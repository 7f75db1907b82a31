"""One engine iteration on one serving replica: `decode` sequences each add a token attending to
`context` cached tokens, and `prefill` prompt tokens (of prompts `prompt` long) are processed
beside them.

Every term comes from calc's exact counts (calc.timing.operators: each product's FLOPs and
widths; calc.evaluate.count_flops: causal attention) and the bytes each kernel moves, priced
with the kernel efficiencies of presets/serving.toml (calc.serving.constants):

- matrix products: max(FLOPs / (peak × gemm_fraction × r/(r + half_rows)), weight bytes /
  (HBM × weight_stream_fraction)) with r the rows a product sees — the iteration's tokens, or
  for a routed expert the tokens routed to it. A decode iteration at small batch streams the
  weights; a large one computes. Routed experts read only the experts the iteration's tokens
  touch: E'·(1 − (1 − k/E')^n) of the E' = E + redundant expert slots for n tokens choosing k
  each, uniformly (calc's stated assumption; DeepSeek-V2 §2.2's balance losses aim at it);
- prefill attention: calc's causal attention FLOPs at prefill_attention_fraction of the 16-bit
  peak (flash kernels run in 16 bits);
- decode attention (paged): the sequences' KV cache read at kv_stream_fraction of HBM, or its
  FLOPs at the prefill fraction if more (MLA decodes in its absorbed form, FlashMLA's "MQA
  mode": 2·h·(r_kv + d_rope) + 2·h·r_kv FLOPs a cached token, compute-heavy at one GPU's
  heads, DeepSeek-V2 §2.1.2);
- element-wise kernels (norms, residuals, RoPE, activations, MoE permutes) at the weight
  streaming rate;
- tensor-parallel all-reduces after each sublayer (calc.timing.collectives' bytes on the link
  the group crosses, calc.timing.network) plus a fixed latency each; pipeline stages pass the
  hidden state point to point; expert parallelism across replicas adds a dispatch and a combine
  all-to-all per MoE layer (overlapped with compute where two micro-batches alternate:
  DeepSeek's and SGLang's two-batch overlap);
- a floor per layer, a floor per expert product a MoE layer runs (each touched expert's
  tiles are scheduled apart, however few tokens it has), a fixed overhead per iteration (the
  engine's scheduler) and a cost per decoding sequence per iteration (the engine's work for
  each request: scheduling, sampling, output processing), one of each for every engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from calc.counting import GIGA, MILLISECOND
from calc.errors import CalcError
from calc.evaluate import count_flops
from calc.serving.constants import ServingConstants
from calc.serving.layouts import Replica
from calc.serving.memory import ReplicaMemory, shard, stage_share, stored_bytes
from calc.spec import BYTES_PER_ELEMENT, GPU, ModelSpec, System
from calc.timing.collectives import all_reduce, all_to_all, p2p
from calc.timing.constants import load_constants
from calc.timing.kernels import ACTIVATION_BYTES
from calc.timing.mixers import tp_reductions
from calc.timing.network import MICROSECOND, Link, network_for
from calc.timing.operators import ModelTerms

WIDE = "bf16"  # attention kernels and activations run in 16 bits
# The bits a product runs in, for its efficiency class (int8 products run on fp8's rate on
# Hopper and Blackwell, and at the same width).
GEMM_WIDTH = {"fp64": 16, "fp32": 16, "tf32": 16, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8,
              "fp4": 4}


@dataclass(frozen=True)
class Product:
    """A matrix product on one GPU: its FLOPs per row, the weight bytes it reads once an
    iteration, and the output and input widths of its shard."""

    flops: float
    bytes: float
    n: float
    k: float


@dataclass(frozen=True)
class Experts:
    """A stage's routed experts on one GPU."""

    slots: int  # E + redundant copies, over the whole ep group
    top_k: int
    local: float  # expert slots on this GPU
    split: int  # ways each local expert is sliced by tensor parallelism (tp/ep when ep < tp)
    products: tuple[Product, ...]  # one expert slice: FLOPs per routed token, bytes, widths
    layers: int  # MoE layers in the stage


@dataclass(frozen=True)
class Parts:
    """Seconds of one iteration by what limits them."""

    compute: float = 0.0
    bandwidth: float = 0.0
    network: float = 0.0
    overhead: float = 0.0

    @property
    def total(self) -> float:
        return self.compute + self.bandwidth + self.network + self.overhead

    @property
    def bound(self) -> str:
        named = {"compute": self.compute, "bandwidth": self.bandwidth,
                 "network": self.network, "overhead": self.overhead}
        return max(named, key=named.__getitem__)

    def __add__(self, other: Parts) -> Parts:
        return Parts(self.compute + other.compute, self.bandwidth + other.bandwidth,
                     self.network + other.network, self.overhead + other.overhead)

    def scaled(self, factor: float) -> Parts:
        return Parts(self.compute * factor, self.bandwidth * factor, self.network * factor,
                     self.overhead * factor)


@dataclass(frozen=True)
class StepModel:
    """What pricing an iteration needs for one model, layout, GPU and dtype, computed once."""

    spec: ModelSpec
    replica: Replica
    memory: ReplicaMemory
    vendor: str
    gemm_class: str  # gemm16, gemm8 or gemm4: the width the products run in
    gemm_peak: float
    attention_peak: float
    bandwidth: float
    stage_layers: int
    dense: tuple[Product, ...]  # the stage's non-expert products on this GPU
    head: Product  # per sequence whose logits are computed
    experts: Experts | None
    elementwise_bytes: float  # per token
    key_flops: float  # decode attention FLOPs per cached token per layer on this GPU
    reductions: float  # tensor-parallel all-reduces an iteration of the stage
    reduce_bytes: float  # per token each
    tp_link: Link | None
    pp_link: Link | None
    ep_link: Link | None
    hidden_bytes: float  # per token, a stage boundary's point-to-point send
    overlap_ep: bool
    kind_key_flops: float = 0.0  # the same in a layer of the kind with its own query heads
    _prefill_attention: dict[int, float] = field(default_factory=dict, compare=False)

    def prefill_attention_flops(self, prompt: int) -> float:
        """Causal attention FLOPs per prompt token on this GPU (calc's exact count)."""
        if prompt not in self._prefill_attention:
            per_token = count_flops(self.spec, max(1, prompt)).components["attention/scores"]
            kind = self.spec.shaped_kind  # its layers' own query heads (kind_shapes)
            heads = min(self.spec.attention.n_heads,
                        self.spec.heads_of(kind)[0] if kind else self.spec.attention.n_heads)
            self._prefill_attention[prompt] = per_token * stage_share(
                self.spec.n_layers, self.replica.pp) / min(self.replica.tp, heads)
        return self._prefill_attention[prompt]

    def _gemm(self, products: tuple[Product, ...], rows: float, rate: float, stream: float,
              half: float, scale: float = 1.0) -> tuple[float, float]:
        """(compute, bandwidth) seconds of `products` at `rows` rows, each the larger side of
        its roofline; `scale` multiplies the weight bytes (experts touched)."""
        if rows <= 0:
            return 0.0, 0.0
        compute = bandwidth = 0.0
        shape_rows = (rows + half) / rows
        for p in products:
            flops = p.flops * rows * shape_rows * (p.n + half) / p.n * (p.k + half) / p.k / rate
            memory = p.bytes * scale / stream
            if flops >= memory:
                compute += flops
            else:
                bandwidth += memory
        return compute, bandwidth

    def stage(self, decode: float, context: float, prefill: float, prompt: int,
              c: ServingConstants) -> Parts:
        """One micro-batch through one pipeline stage (the whole model when pp = 1)."""
        rows = decode + prefill
        if rows <= 0:
            return Parts()
        half = c.value("gemm_half_dim")
        rate = self.gemm_peak * c.value(f"{self.vendor}.{self.gemm_class}_fraction")
        stream = self.bandwidth * c.value(f"{self.vendor}.weight_stream_fraction")
        compute, bandwidth = self._gemm(self.dense, rows, rate, stream, half)
        finishing = decode + (prefill / prompt if prompt else 0.0)  # sequences needing logits
        more = self._gemm((self.head,), finishing, rate, stream, half)
        compute, bandwidth = compute + more[0], bandwidth + more[1]
        more = self._experts(rows, rate, stream, half)
        compute, bandwidth = compute + more[0], bandwidth + more[1]
        attention_rate = self.attention_peak * c.value("prefill_attention_fraction")
        if prefill:
            compute += prefill * self.prefill_attention_flops(prompt) / attention_rate
        if decode:
            read = decode * self.memory.kv_bytes(context) / (
                self.bandwidth * c.value("kv_stream_fraction"))
            own = self.memory.kind_token_layers(context)
            flops = decode * (self.key_flops * (self.memory.token_layers(context) - own)
                              + self.kind_key_flops * own) / attention_rate
            if flops > read:
                compute += flops
            else:
                bandwidth += read
        bandwidth += rows * self.elementwise_bytes / stream
        network = self._tp(rows, c)
        overhead = (self.stage_layers * c.value("layer_floor_us")
                    + self.expert_products(rows) * c.value("expert_floor_us")) * MICROSECOND
        exchange = self._ep(rows, c)
        if exchange and self.overlap_ep:  # hidden behind the other micro-batch's compute
            network += max(0.0, exchange - compute - bandwidth)
        else:
            network += exchange
        return Parts(compute, bandwidth, network, overhead)

    def _experts(self, rows: float, rate: float, stream: float,
                 half: float) -> tuple[float, float]:
        e = self.experts
        if e is None:
            return 0.0, 0.0
        tokens = rows * self.replica.group  # every replica of the ep group routes here
        touched = e.local * (1 - (1 - e.top_k / e.slots) ** tokens)
        assignments = tokens * e.top_k * e.local / e.slots
        if touched <= 0:
            return 0.0, 0.0
        # each touched expert: its routed tokens as rows, its weights read once
        compute, bandwidth = self._gemm(e.products, assignments / touched, rate, stream, half)
        return compute * touched, bandwidth * touched

    def expert_products(self, rows: float) -> float:
        """Expert products an iteration of `rows` tokens runs in the stage: each touched
        expert's up/gate and down products in every MoE layer (a grouped or fused MoE kernel
        schedules each expert's tiles apart, so each costs a floor however few its rows)."""
        e = self.experts
        if e is None or rows <= 0:
            return 0.0
        tokens = rows * self.replica.group
        touched = e.local * (1 - (1 - e.top_k / e.slots) ** tokens)
        return touched * len(e.products) * e.layers

    def _tp(self, rows: float, c: ServingConstants) -> float:
        tp = self.replica.tp
        if tp == 1 or self.tp_link is None:
            return 0.0
        bandwidth = Link(self.tp_link.name, self.tp_link.bandwidth, 0.0)
        each = all_reduce(rows * self.reduce_bytes, tp, bandwidth)
        return self.reductions * (each + c.value("collective_latency_us") * MICROSECOND)

    def _ep(self, rows: float, c: ServingConstants) -> float:
        e, link = self.experts, self.ep_link
        if e is None or link is None or self.replica.group == 1:
            return 0.0
        size = rows * e.top_k * self.hidden_bytes  # this GPU's tokens, k copies each
        bandwidth = Link(link.name, link.bandwidth, 0.0)
        each = all_to_all(size, self.replica.ep, bandwidth)
        return 2 * e.layers * (each + c.value("collective_latency_us") * MICROSECOND)

    def iteration(self, decode: float, context: float, prefill: float, prompt: int,
                  c: ServingConstants) -> Parts:
        """One iteration of the replica: pp micro-batches through pp stages (each stage busy
        with one micro-batch at a time), plus the engine's fixed overhead and its cost for
        each decoding sequence."""
        pp = self.replica.pp
        stage = self.stage(decode / pp, context, prefill / pp, prompt, c)
        if pp > 1 and self.pp_link is not None:
            rows = (decode + prefill) / pp
            stage += Parts(network=p2p(rows * self.hidden_bytes, self.pp_link))
        # one of each for every engine (presets/serving.toml says why)
        engine = (c.value("step_overhead_ms") * MILLISECOND
                  + decode * c.value("sequence_overhead_us") * MICROSECOND)
        return stage.scaled(pp) + Parts(overhead=engine)


def _experts(terms: ModelTerms, replica: Replica, q: float, share: float) -> Experts | None:
    ops = [op for op in terms.matmuls if op.expert]
    if not ops:
        return None
    slots = terms.experts + replica.redundant_experts
    ep = replica.ep
    split = max(1, replica.tp // ep) if ep <= replica.tp else 1
    products = []
    for op in ops:  # column-parallel up (n split), row-parallel down (k split)
        n, k = (op.n / split, op.k) if op.split == "column" else (op.n, op.k / split)
        products.append(Product(flops=op.flops / terms.top_k * share / split,
                                bytes=op.n * op.k * op.layers * q * share / split, n=n, k=k))
    return Experts(slots=slots, top_k=terms.top_k, local=slots / ep, split=split,
                   products=tuple(products), layers=math.ceil(terms.moe_layers * share))


def _link(network, stride: int, size: int) -> Link | None:
    if size <= 1:
        return None
    try:
        return network.link(stride, size)
    except CalcError:
        return None


def key_flops(spec: ModelSpec, tp: int, kind: str = "") -> float:
    """Decode attention FLOPs for one cached token in one layer (of `kind`, whose query heads
    may be its own: attention.kind_shapes) on one GPU: QKᵀ and A·V of the GPU's h/tp query
    heads; MLA in its absorbed form (scores over r_kv + d_rope, values r_kv); differential
    attention's maps each weigh values 2·d_v wide (calc.formulas.flops)."""
    query_heads = spec.heads_of(kind)[0]
    heads = query_heads / min(tp, query_heads)
    mla = spec.attention.mla
    if mla is not None:
        return 2 * heads * (mla.kv_lora_rank + mla.qk_rope_head_dim) \
            + 2 * heads * mla.kv_lora_rank
    _, _, d_qk, d_v = spec.heads_of(kind)
    return 2 * heads * (d_qk + (1 + spec.attention.differential) * d_v)


def step_model(spec: ModelSpec, terms: ModelTerms, replica: Replica, memory: ReplicaMemory,
               gpu: GPU, system: System | None, dtype: str, compute_dtype: str, vendor: str,
               overlap_ep: bool = False) -> StepModel:
    """The StepModel of `spec` on `replica` (every constant-free term, computed once)."""
    if gpu.bandwidth_gb_s is None:
        raise CalcError(f"gpu {gpu.name!r} has no memory bandwidth in the catalogue; serving "
                        f"time needs one (python -m calc gpus)")
    tp, pp = replica.tp, replica.pp
    q = stored_bytes(dtype)
    share = stage_share(terms.layers, pp)
    dense = []
    for op in terms.matmuls:
        if op.expert:
            continue
        ways = shard(op, terms, tp)
        n, k = (op.n, op.k / ways) if op.split == "row" else (op.n / ways, op.k)
        dense.append(Product(flops=op.flops / ways * share,
                             bytes=op.n * op.k * op.layers / ways * share * q, n=n, k=k))
    head_q = ACTIVATION_BYTES if BYTES_PER_ELEMENT[dtype] < ACTIVATION_BYTES else q
    elementwise = sum(t.bytes for t in terms.elementwise if t.runs(False, True)
                      and t.region == "replicated") + sum(
        t.bytes / tp for t in terms.elementwise if t.runs(False, True) and t.region == "tensor")
    network = None
    if system is not None:
        network = network_for(system, load_constants().network)
    reductions = sum(per_layer for per_layer, _ in tp_reductions(spec)) * terms.layers * share
    width = max(w for _, w in tp_reductions(spec))
    return StepModel(
        spec=spec, replica=replica, memory=memory, vendor=vendor,
        gemm_class=f"gemm{GEMM_WIDTH[compute_dtype]}",
        gemm_peak=gpu.peak_flops(compute_dtype), attention_peak=gpu.peak_flops(
            WIDE if WIDE in gpu.peak_tflops else "fp16"),
        bandwidth=gpu.bandwidth_gb_s * GIGA, stage_layers=math.ceil(terms.layers / pp),
        dense=tuple(dense), head=Product(
            flops=terms.head.flops / tp, bytes=terms.head.n * terms.head.k / tp * head_q,
            n=terms.head.n / tp, k=terms.head.k),
        experts=_experts(terms, replica, q, share),
        elementwise_bytes=elementwise * share, key_flops=key_flops(spec, tp),
        kind_key_flops=key_flops(spec, tp, spec.shaped_kind or ""),
        reductions=reductions, reduce_bytes=width * ACTIVATION_BYTES,
        tp_link=_link(network, 1, tp) if network else None,
        pp_link=_link(network, tp, pp) if network else None,
        ep_link=_link(network, 1, replica.ep) if network else None,
        hidden_bytes=terms.d * ACTIVATION_BYTES, overlap_ep=overlap_ep)
