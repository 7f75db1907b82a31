"""Offload as parts of the step time: ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840) and
ZeRO-Infinity (Rajbhandari et al. 2021, arXiv:2104.07857) as DeepSpeed runs them.

What moves comes from calc.formulas.offload (bytes per GPU); here it is priced on the link or
device it uses, each shared as the hardware is: every GPU has its own host link (PCIe, at the
catalogue's per-direction rate); the CPUs and the NVMe drives belong to the node and are shared
by the run's GPUs on it.

- offload_gradients: the rank's 16-bit gradients to the host once per step, copied bucket by
  bucket as the backward produces them (DeepSpeed overlap_comm; Ren et al. §4.1, Fig. 5), so
  hidden behind the last micro-batch's backward where the framework overlaps.
- cpu_optimizer: the CPU-Adam step over the node's partitions, at the measured rate of
  presets/timing.toml [offload]; not overlapped: the next forward needs its weights. (The
  paper's one-step delayed parameter update, §5.2, would hide it; DeepSpeed's configuration
  does not offer it, and it is not modelled.)
- offload_weights: the updated 16-bit weights back to the GPU; DeepSpeed's CPU-Adam copies
  each sub-group as soon as it is updated (DeepSpeedCPUAdam.step with fp16_param_groups), so
  only what outlasts the CPU step is exposed.
- nvme_swap (optimizer or parameters on NVMe): the optimizer states read from and written back
  to the node's drives every step (ZeRO-Infinity §5.1), and the updated parameters written back;
  not overlapped (DeepSpeed's offload_optimizer pipeline_read / pipeline_write default false).
- offload_params (ZeRO-Infinity, ZeRO-3 partitions on the host or NVMe): every partition up for
  each micro-batch's forward and again for its backward, prefetched while the previous layers
  compute (§6.3, overlap-centric design); it runs beside the ZeRO-3 all-gathers on another
  link, so what is exposed is the slower of the two beyond the compute, less what the gathers
  alone already expose.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from calc.spec.layout import Layout
from calc.timing.schedule import StepTime

PARTS = ("offload_gradients", "cpu_optimizer", "offload_weights", "nvme_swap", "offload_params")
# The link or device each part uses (the step view's "link" column).
PART_LINK = {"offload_gradients": "PCIe", "offload_weights": "PCIe", "offload_params": "PCIe",
             "cpu_optimizer": "host CPUs", "nvme_swap": "node NVMe"}


@dataclass(frozen=True)
class HostSide:
    """The host resources offload uses, as rates."""

    pcie: float  # bytes/s per GPU per direction: the GPU's own host link
    gpus_per_node: int  # the run's GPUs on one node, sharing its CPUs and drives
    cpu_adam: float  # parameters/s the node's CPUs update
    nvme_read: float | None  # bytes/s, the node's drives together
    nvme_write: float | None


@dataclass(frozen=True)
class OffloadTraffic:
    """What offload moves, per GPU (calc.formulas.offload)."""

    optimizer: str  # none | cpu | nvme
    params: str
    gradients_down: float  # bytes per step
    weights_up: float  # bytes per step
    params_up: float  # bytes per micro-batch: forward and backward
    optimizer_stored: float  # bytes of the optimizer side held off the GPU
    params_stored: float  # bytes of 16-bit parameter partitions held off the GPU


def offload_traffic(values: dict[str, Any], optimizer: str, params: str) -> OffloadTraffic:
    """From calc._compiled.offload's values for the same optimizer and parameter placement."""
    return OffloadTraffic(
        optimizer=optimizer, params=params,
        gradients_down=float(values["gradients_to_host_per_step"]),
        weights_up=float(values["weights_from_host_per_step"]),
        params_up=float(values["params_transfer_per_micro_batch"]),
        optimizer_stored=float(values["optimizer_host"]),
        params_stored=float(values["params_host"]))


def _behind(seconds: float, compute: float, overlap: bool) -> float:
    """What of `seconds` is left after the `compute` it runs beside (all of it without
    overlap)."""
    return max(0.0, seconds - compute) if overlap else seconds


def offload_seconds(time: StepTime, layout: Layout, traffic: OffloadTraffic, host: HostSide,
                    updated_params: float, overlap: bool) -> tuple[dict[str, float], float]:
    """(seconds per step of each offload part, seconds added to each micro-batch)."""
    work, grads = time.compute, time.gradients
    backward = work.backward - work.recompute
    parts = dict.fromkeys(PARTS, 0.0)
    nvme = 0.0  # bytes the node writes to and reads from its drives per step
    if traffic.optimizer != "none":
        parts["offload_gradients"] = _behind(traffic.gradients_down / host.pcie, backward,
                                             overlap)
        cpu = host.gpus_per_node * updated_params / host.cpu_adam
        parts["cpu_optimizer"] = cpu
        parts["offload_weights"] = max(0.0, traffic.weights_up / host.pcie - cpu)
    per_micro_batch = 0.0
    if traffic.params != "none":
        one_pass = traffic.params_up / 2
        fetch = one_pass / host.pcie
        if traffic.params == "nvme":
            fetch = max(fetch, host.gpus_per_node * one_pass / _rate(host.nvme_read))
        for gather, compute in ((grads.param_gather, work.forward),
                                (grads.param_gather + grads.grad_reduce,
                                 backward + work.recompute)):
            per_micro_batch += (_behind(max(fetch, gather), compute, overlap)
                                - _behind(gather, compute, overlap))
        parts["offload_params"] = layout.micro_batches * per_micro_batch
    if traffic.optimizer == "nvme":
        stored = host.gpus_per_node * traffic.optimizer_stored
        nvme += stored / _rate(host.nvme_read) + stored / _rate(host.nvme_write)
    if traffic.params == "nvme":  # the updated partitions written back once per step
        nvme += host.gpus_per_node * traffic.params_stored / _rate(host.nvme_write)
    parts["nvme_swap"] = nvme
    return parts, per_micro_batch


def _rate(value: float | None) -> float:
    assert value, "NVMe rates are checked before pricing (calc.reports.step.host_side)"
    return value


def with_offload(time: StepTime, layout: Layout, traffic: OffloadTraffic, host: HostSide,
                 updated_params: float, overlap: bool) -> StepTime:
    """`time` with the optimizer step moved to the host and the offload parts added; the
    pipeline bubble grows with the micro-batch when parameter fetches are exposed."""
    parts, per_micro_batch = offload_seconds(time, layout, traffic, host, updated_params,
                                             overlap)
    breakdown = dict(time.breakdown)
    if traffic.optimizer != "none":
        breakdown["optimizer"] = 0.0  # the GPU no longer steps the optimizer
    micro_batch = time.micro_batch + per_micro_batch
    breakdown["pipeline_bubble"] = (layout.pp - 1) / layout.vpp * micro_batch
    breakdown.update(parts)
    return replace(time, step=sum(breakdown.values()), breakdown=breakdown,
                   micro_batch=micro_batch)
