"""Collective communication times: the alpha-beta model, t = steps × α + bytes on the wire / B.

B is the bus bandwidth per GPU per direction and α one hop's latency (calc.timing.network). The
bus-bandwidth factors are those of the NCCL performance notes (nccl-tests doc/PERFORMANCE.md):
a ring all-reduce moves 2(n−1)/n of the buffer through every GPU in 2(n−1) steps; reduce-scatter
and all-gather move (n−1)/n in n−1 steps; all-to-all sends (n−1)/n of each rank's buffer. NCCL's
double binary tree (NCCL 2.4) moves the same bytes in 2·⌈log₂ n⌉ latency steps, so an all-reduce
takes the faster of the two. `size` is the full buffer one rank holds before (all-reduce,
reduce-scatter, all-to-all) or after (all-gather) the collective.
"""

from __future__ import annotations

import math

from calc.timing.network import Link


def ring_all_reduce(size: float, n: int, link: Link) -> float:
    if n <= 1:
        return 0.0
    return 2 * (n - 1) / n * size / link.bandwidth + 2 * (n - 1) * link.latency


def tree_all_reduce(size: float, n: int, link: Link) -> float:
    if n <= 1:
        return 0.0
    return 2 * (n - 1) / n * size / link.bandwidth + 2 * math.ceil(math.log2(n)) * link.latency


def all_reduce(size: float, n: int, link: Link) -> float:
    """The faster of ring and tree (NCCL chooses by size and scale)."""
    return min(ring_all_reduce(size, n, link), tree_all_reduce(size, n, link))


def reduce_scatter(size: float, n: int, link: Link) -> float:
    if n <= 1:
        return 0.0
    return (n - 1) / n * size / link.bandwidth + (n - 1) * link.latency


all_gather = reduce_scatter  # the same bytes and steps, in the other direction


def all_to_all(size: float, n: int, link: Link) -> float:
    if n <= 1:
        return 0.0
    return (n - 1) / n * size / link.bandwidth + (n - 1) * link.latency


def node_all_to_all(size: float, n: int, local: int, intra: Link, inter: Link) -> float:
    """An all-to-all over n ranks in nodes of `local` of them: each rank sends (n − local)/n of
    its buffer to other nodes through its NIC and (local − 1)/n to its node's ranks over NVLink
    at the same time; the slower sets the pace, one network latency a peer."""
    if n <= 1:
        return 0.0
    return (max((n - local) / n * size / inter.bandwidth, (local - 1) / n * size / intra.bandwidth)
            + (n - 1) * inter.latency)


def p2p(size: float, link: Link) -> float:
    """One point-to-point send of `size` bytes."""
    return size / link.bandwidth + link.latency
