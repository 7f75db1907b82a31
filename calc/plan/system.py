"""The system a run's GPUs sit in: a named one, the GPU's reference system, or — for a card no
named system holds (an RTX 4090, an L40S, an RTX A6000 in a workstation or a PCIe server) — one
derived from the GPU's own datasheet links.

A derived box is one node of `gpus_per_node` cards (default: the run's GPUs) joined by PCIe, or
by the NVLink bridge where the card has one and the box holds two (a bridge joins a pair of
cards: RTX A6000, RTX 3090, H100 NVL; with more cards a ring crosses PCIe between the pairs).
There is no network: a layout whose groups span more than one box is refused where it is
priced (calc.timing.network). Latency per ring step from NCCL's own cost model
(src/graph/tuning.cc, hwLat, Ring, Simple protocol): 3.4 µs over NVLink, as the catalogue's
systems take it, and 5.7 µs over PCIe.
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.presets import get_system, load_systems
from calc.spec import GPU, System

NVLINK_STEP_US = 3.4
PCIE_STEP_US = 5.7
LATENCY_SOURCE = "NCCL src/graph/tuning.cc hwLat (Ring, Simple): NVLink 3.4 µs, PCI 5.7 µs"
BRIDGED = 2  # cards one NVLink bridge joins


def derived_system(gpu: GPU, gpus_per_node: int) -> System:
    """One box of `gpus_per_node` × `gpu` on the card's own links."""
    bridge = gpu.nvlink_gb_s is not None and gpus_per_node <= BRIDGED
    if not bridge and gpu.pcie_gb_s is None and gpus_per_node > 1:
        raise CalcError(f"gpu {gpu.name!r}: its catalogue entry has no pcie_gb_s, so a box of "
                        f"{gpus_per_node} cards cannot be derived; name a system with --system")
    link = gpu.nvlink_gb_s if bridge else gpu.pcie_gb_s
    kind = "NVLink bridge" if bridge else "PCIe"
    return System(
        name=f"{gpu.name}-box-{gpus_per_node}",
        title=f"{gpus_per_node} × {gpu.title} in one host ({kind}, derived)",
        gpu=gpu.name, gpus_per_node=gpus_per_node,
        intra_node_gb_s=link or 1.0,  # one card: no collective crosses it
        intra_node_latency_us=NVLINK_STEP_US if bridge else PCIE_STEP_US,
        inter_node_latency_us=PCIE_STEP_US,
        source=f"derived from the {gpu.name} datasheet's links ({gpu.source}); {LATENCY_SOURCE}",
        notes=f"no named system holds the {gpu.name}: {gpus_per_node} card(s) in one host, "
              f"{kind} at {link or 0:g} GB/s per direction between them, no network between "
              f"hosts (--gpus-per-node sets the box)")


def system_of(gpu: GPU, system: str | None, gpus: int,
              gpus_per_node: int | None = None) -> System:
    """The system `gpus` × `gpu` run in: `system` (which must hold this GPU), the GPU's
    reference system, or a derived box of `gpus_per_node` (default `gpus`) cards."""
    if system is not None:
        platform = get_system(system)
        if platform.gpu != gpu.name:
            raise CalcError(f"system={platform.name!r} holds {platform.gpu} GPUs, not "
                            f"{gpu.name}; give --gpu {platform.gpu}, or leave out --system to "
                            f"run the {gpu.name} in a box derived from its datasheet")
        return platform
    if gpu.system is not None and gpus_per_node is None:
        return get_system(gpu.system)
    return derived_system(gpu, gpus_per_node or gpus)


def catalogued(platform: System) -> str | None:
    """The catalogue name of `platform`, None for a derived box (its host memory unknown)."""
    return platform.name if platform.name in load_systems() else None


def derived(platform: System) -> bool:
    return catalogued(platform) is None
