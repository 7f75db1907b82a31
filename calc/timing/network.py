"""The links a collective crosses: NVLink/NVSwitch inside a node, the network between nodes.

A parallel group of n ranks whose neighbours are `stride` ranks apart (calc.spec.layout's rank
order, tensor-parallel innermost) stays inside one node when stride × n ≤ GPUs per node; it
crosses the network otherwise. Across nodes each GPU has its own NIC (a rail-optimised DGX
fabric): a point-to-point send leaves through one GPU's NIC, the per-GPU figure the system
catalogue states, and so does an all-to-all's share for the other nodes, while its share for the
node's own ranks crosses NVLink at the same time. A ring collective (all-reduce, reduce-scatter,
all-gather) whose group holds k of a node's GPUs runs as k rings side by side, one per rail (NCCL
builds a channel per NIC, each crossing between nodes on its own rail), so every rank's share of
the traffic crosses the network at k NICs' rate, capped by its NVLink: the "ring over all of a
node's NICs" that makes a tensor-parallel-1 data-parallel group (FSDP, ZeRO-3) reduce at the
node's aggregate bandwidth (nccl-tests doc/PERFORMANCE.md: bus bandwidth is per rank, whatever the
topology).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calc.counting import GIGA
from calc.errors import CalcError
from calc.timing.constants import NetworkConstants

MICROSECOND = 1e-6


@dataclass(frozen=True)
class Link:
    """Bus bandwidth per GPU per direction (bytes/s) and latency (s) of one hop."""

    name: str  # "intra-node" | "inter-node"
    bandwidth: float
    latency: float


@dataclass(frozen=True)
class Network:
    gpus_per_node: int
    intra: Link
    inter: Link | None  # None where the system publishes no network between nodes
    system: str = ""

    def link(self, stride: int, size: int) -> Link:
        """The link a group of `size` ranks, neighbours `stride` apart, is limited by."""
        if stride * size <= self.gpus_per_node:
            return self.intra
        if self.inter is None:
            raise CalcError(f"system {self.system!r} publishes no inter-node bandwidth, and a "
                            f"group of {size} ranks {stride} apart spans more than its "
                            f"{self.gpus_per_node} GPUs per node; keep the layout in one node")
        return self.inter

    def ranks_per_node(self, stride: int, size: int) -> int:
        """k: the group's ranks inside one node (GPUs per node / stride, at most the group)."""
        return min(size, self.gpus_per_node // stride) if stride < self.gpus_per_node else 1

    def ring(self, stride: int, size: int) -> Link:
        """The link a ring collective over the group is limited by: inside a node, NVLink;
        across nodes, the k = GPUs per node / stride NICs of the group's ranks in each node
        side by side, at most NVLink's rate."""
        link = self.link(stride, size)
        rails = self.ranks_per_node(stride, size)
        if link is self.intra or rails <= 1:
            return link
        return Link(link.name, min(self.intra.bandwidth, rails * link.bandwidth), link.latency)


def network_for(system: Any, constants: NetworkConstants) -> Network:
    """A Network from a catalogue system (calc.spec.hardware.System: per-GPU GB/s per
    direction and µs latencies), at the bus-bandwidth fractions NCCL reaches."""
    inter = None
    if system.inter_node_gb_s is not None:
        inter = Link("inter-node", system.inter_node_gb_s * GIGA * constants.inter_fraction,
                     system.inter_node_latency_us * MICROSECOND)
    return Network(
        gpus_per_node=system.gpus_per_node,
        intra=Link("intra-node", system.intra_node_gb_s * GIGA * constants.intra_fraction,
                   system.intra_node_latency_us * MICROSECOND),
        inter=inter, system=getattr(system, "name", ""))
