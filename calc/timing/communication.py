"""What each parallel dimension sends, on the link its group crosses (calc.timing.network),
before any overlap: seconds per micro-batch (TP, CP, EP, PP, ZeRO-2/3) or per step (DP).

- TP (Shoeybi et al. 2019 §3, Fig. 4): per layer an all-reduce of the b·s·d activations after
  attention and after the MLP in the forward pass (one for a parallel block), as many in the
  backward, and the forward ones again under full recomputation; the LM head's input gradient
  once. Sequence parallelism (Korthikanti et al. 2022 §4.2.2) replaces each by a reduce-scatter
  and an all-gather of the same total bytes.
- CP (ring attention, Megatron-LM context parallelism): per layer each rank passes its K and V
  chunk around the ring cp − 1 times forward, K, V and their gradients backward.
- EP (Lepikhin et al. 2021, GShard §3): per MoE layer an all-to-all of the k routed copies of
  each token to its experts (dispatch) and back (combine), forward and backward; across nodes
  each rank's share for the other nodes leaves through its NIC while its own node's share
  crosses NVLink.
- PP (Narayanan et al. 2021 §4.1): per micro-batch and virtual stage one activation forward and
  one gradient backward, 1/t of it with the scatter/gather optimisation.
- DP: the gradients of the parameters this GPU holds, over the d·cp ranks that share them
  (experts over d·cp/ep): all-reduce (ZeRO 0), reduce-scatter then an all-gather of the updated
  16-bit weights (ZeRO 1, Megatron-LM's distributed optimizer), reduce-scatter per micro-batch
  (ZeRO 2), weights all-gathered for the forward and again for the backward of every micro-batch
  (ZeRO 3 / FSDP, Rajbhandari et al. 2020 §5.3: 1.5× the all-reduce volume).
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.spec.layout import Layout
from calc.timing.collectives import (
    all_gather,
    all_reduce,
    all_to_all,
    node_all_to_all,
    p2p,
    reduce_scatter,
)
from calc.timing.compute import stage_layers, tokens_per_micro_batch
from calc.timing.network import Network
from calc.timing.operators import ACTIVATION_BYTES, ModelTerms

WEIGHT_BYTES = 2  # 16-bit working weights, what ZeRO-1/3 all-gather


@dataclass(frozen=True)
class MicroBatchCommunication:
    """Seconds per micro-batch through the slowest stage, before overlap."""

    tp_forward: float
    tp_backward: float  # including recomputation's forward collectives
    cp_forward: float
    cp_backward: float
    ep: float  # forward and backward
    pp: float  # v sends forward and v backward


@dataclass(frozen=True)
class GradientCommunication:
    """Seconds of the data-parallel collectives, before overlap."""

    grad_reduce: float  # per step (ZeRO 0/1) or per micro-batch (ZeRO 2/3)
    param_gather: float  # per step (ZeRO 1/2) or per pass of a micro-batch (ZeRO 3)


def _tp_collective(size: float, layout: Layout, network: Network,
                   gather_bytes: float = ACTIVATION_BYTES) -> float:
    """One all-reduce of `size` bytes of 16-bit activations, or with sequence parallelism its
    reduce-scatter and all-gather; the all-gather sends `gather_bytes` per element (1: a stack
    that casts to fp8 before gathering)."""
    link = network.ring(layout.stride("tp"), layout.tp)
    if layout.sequence_parallel:
        return (reduce_scatter(size, layout.tp, link)
                + all_gather(size * gather_bytes / ACTIVATION_BYTES, layout.tp, link))
    return all_reduce(size, layout.tp, link)


def params_on_gpu(terms: ModelTerms, layout: Layout) -> tuple[float, float]:
    """(dense, expert) parameters the slowest stage's GPU holds, before ZeRO sharding: its
    layers' share, the embedding (and an untied head, or the tied copy the last stage keeps),
    split t ways; routed experts split ep·t ways."""
    stage = stage_layers(terms, layout) / terms.layers
    ends = terms.embedding_params + (terms.head_params if layout.pp == 1 else 0)
    if layout.pp > 1:  # first stage: embedding; last: head (or a tied copy); take the larger
        ends = max(terms.embedding_params, terms.head_params or terms.embedding_params)
    dense = (terms.layer_params * stage + ends) / layout.tp
    expert = terms.expert_params * stage / (layout.tp * layout.ep)
    return dense, expert


def micro_batch_communication(terms: ModelTerms, layout: Layout, network: Network,
                              gather_bytes: float = ACTIVATION_BYTES
                              ) -> MicroBatchCommunication:
    """`gather_bytes`: per element of the layers' sequence-parallel all-gathers (the inputs of
    the column-parallel products forward, the output gradients of the row-parallel ones
    backward); 1 where the stack gathers them in fp8. The LM head's stays 16-bit."""
    tokens = tokens_per_micro_batch(terms, layout)
    layers = stage_layers(terms, layout)
    activation = tokens * terms.d * ACTIVATION_BYTES

    one = _tp_collective(activation, layout, network)
    tp_forward = 0.0
    for per_layer, width in terms.tp_reductions:  # after each sublayer (and Mamba's x_proj)
        size = _tp_collective(tokens * width * ACTIVATION_BYTES, layout, network, gather_bytes)
        tp_forward += per_layer * layers * size
    recompute = tp_forward if layout.recompute == "full" else 0.0
    tp_backward = tp_forward + one + recompute  # + the LM head's input gradient

    cp_forward = cp_backward = 0.0
    if layout.cp > 1:
        link = network.link(layout.stride("cp"), layout.cp)
        # the layers of the model's K/V shape, and those of a kind with its own (kind_shapes)
        own = layers * terms.kind_layers / terms.layers
        for share, kv, width in ((layers - own, terms.kv_heads, terms.d_qk + terms.d_v),
                                 (own, terms.kind_kv_heads, terms.kind_d_qk + terms.kind_d_v)):
            if not share:
                continue
            heads = terms.heads / layout.tp if not kv else kv / min(layout.tp, kv)
            chunk = tokens * heads * width * ACTIVATION_BYTES
            cp_forward += share * (layout.cp - 1) * p2p(chunk, link)
        cp_backward = 2 * cp_forward  # K, V and their gradients

    ep = 0.0
    if layout.ep > 1:
        moe_layers = terms.moe_layers * layers / terms.layers
        routed = tokens * terms.top_k * terms.d * ACTIVATION_BYTES
        stride = layout.stride("ep")
        link = network.link(stride, layout.ep)
        passes = 4 + (2 if layout.recompute == "full" else 0)  # dispatch + combine, fwd + bwd
        one = all_to_all(routed, layout.ep, link)
        if link is not network.intra:  # the node's own share over NVLink meanwhile
            one = node_all_to_all(routed, layout.ep, network.ranks_per_node(stride, layout.ep),
                                  network.intra, link)
        ep = moe_layers * passes * one

    pp = 0.0
    if layout.pp > 1:
        link = network.link(layout.stride("pp"), layout.pp)
        pp = 2 * layout.vpp * p2p(activation / layout.tp, link)
    return MicroBatchCommunication(tp_forward, tp_backward, cp_forward, cp_backward, ep, pp)


def _replicas(layout: Layout) -> tuple[int, int]:
    """Ranks holding the same dense parameters (d·cp) and the same experts (d·cp/ep)."""
    return layout.dp * layout.cp, layout.dp * layout.cp // layout.ep


def gradient_communication(terms: ModelTerms, layout: Layout, network: Network,
                           grad_bytes: int) -> GradientCommunication:
    dense, expert = params_on_gpu(terms, layout)
    replicas, expert_replicas = _replicas(layout)
    dense_link = network.ring(layout.tp, replicas)  # cp and dp ranks are contiguous
    # a model without routed experts has no expert group (and no link for it to cross)
    expert_link = network.ring(layout.stride("edp"), expert_replicas) if expert else dense_link
    reduce = all_reduce if layout.zero == 0 else reduce_scatter
    grad_reduce = (reduce(dense * grad_bytes, replicas, dense_link)
                   + reduce(expert * grad_bytes, expert_replicas, expert_link))
    param_gather = 0.0
    if layout.zero >= 1:
        param_gather = (all_gather(dense * WEIGHT_BYTES, replicas, dense_link)
                        + all_gather(expert * WEIGHT_BYTES, expert_replicas, expert_link))
    return GradientCommunication(grad_reduce, param_gather)


def links(layout: Layout, network: Network) -> dict[str, str]:
    """Each parallel group of more than one rank -> the link it crosses."""
    groups = {"tp": layout.tp, "cp": layout.cp, "ep": layout.ep, "dp": _replicas(layout)[0],
              "pp": layout.pp}
    strides = {"dp": layout.tp}  # the d·cp ranks that reduce gradients together
    return {group: network.link(strides.get(group, layout.stride(group)), size).name
            for group, size in groups.items() if size > 1}
