"""Accelerators and the systems they are built into.

`GPU`: one chip as its datasheet describes it — dense peak throughput per dtype, memory, memory
bandwidth, its scale-up link (NVLink, Infinity Fabric) and its host link (PCIe), each per
direction. Peaks are dense: datasheets often print sparse figures (2× higher, marked "with
sparsity"), and a model's FLOPs are dense. Link bandwidths are per direction: datasheets print
the sum of both directions (A100: "NVLink 600 GB/s", which is 300 GB/s each way).

`System`: a named platform (DGX H100, GB200 NVL72, a TPU v5p pod): how many chips share the
scale-up domain (a "node"), the bandwidth per GPU inside it and across nodes (the NIC line rate
÷ 8), a per-step collective latency on each, and the host memory and NVMe bandwidth that
ZeRO-Offload and ZeRO-Infinity use.

Every entry in presets/gpus.toml and presets/systems.toml carries its source.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, model_validator

from calc.counting import TERA
from calc.errors import CalcError
from calc.spec.model import Frozen

Dtype = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]
DTYPES: tuple[str, ...] = get_args(Dtype)

# Upper bounds that catch a unit slip (Gb/s for GB/s, TB/s for GB/s), not real hardware limits.
MAX_LINK_GB_S = 100_000.0
MAX_GPUS_PER_NODE = 1 << 16
MAX_LATENCY_US = 10_000.0


class GPU(Frozen):
    """One accelerator as its datasheet describes it."""

    name: str = Field(min_length=1, description="catalogue key, e.g. 'a100'")
    title: str = Field(min_length=1, description="product name, e.g. 'NVIDIA A100 80GB SXM4'")
    device_name: tuple[str, ...] = Field(
        (), description="words that all appear, in any case, in the name torch gives the device "
                        "(torch.cuda.get_device_name: 'NVIDIA A100-SXM4-40GB'); the entry with "
                        "the most matching words wins ('A100', '40GB' over 'A100')")
    peak_tflops: dict[Dtype, float] = Field(
        description="dense peak in TFLOP/s (TOP/s for int8) per dtype; tensor cores where any")
    memory_gib: float = Field(gt=0, description="device memory (vendors' 'GB' here are GiB)")
    bandwidth_gb_s: float | None = Field(None, gt=0, description="memory bandwidth, GB/s")
    tdp_w: float | None = Field(None, gt=0, description="board power, W")
    nvlink_gb_s: float | None = Field(
        None, gt=0, le=MAX_LINK_GB_S,
        description="scale-up GPU-to-GPU bandwidth of one chip, per direction, GB/s (decimal): "
                    "NVLink, or AMD Infinity Fabric; None for a part without one (PCIe cards, "
                    "TPUs, whose inter-chip links are described by their system)")
    pcie_gb_s: float | None = Field(
        None, gt=0, le=MAX_LINK_GB_S,
        description="host link per direction, GB/s (decimal): PCIe Gen4 x16 ≈ 32, Gen5 x16 ≈ "
                    "64; a Grace superchip's NVLink-C2C where the GPU has no PCIe host link")
    system: str | None = Field(
        None, min_length=1,
        description="systems-catalogue key of the chip's reference platform (a100 → dgx-a100); "
                    "None when no named system is catalogued for it")
    generation: str | None = Field(
        None, min_length=1,
        description="step-time generation (presets/timing.toml) of a GPU its generations do "
                    "not list, e.g. in a user's GPU file ('ampere', 'ada', 'hopper', ...)")
    source: str = Field(min_length=1, description="datasheet or page the figures come from")
    notes: str = Field("", description="caveats: what is derived, what is unconfirmed")

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s at `dtype`; an error (never a guess) when the datasheet has none."""
        tflops = self.peak_tflops.get(dtype)  # type: ignore[call-overload]
        if tflops is None:
            have = ", ".join(self.peak_tflops)
            raise CalcError(f"dtype {dtype!r}: {self.name} has no dense {dtype} peak in its "
                            f"datasheet (it has: {have})")
        return tflops * TERA

    @model_validator(mode="after")
    def _peaks_positive(self) -> GPU:
        for dtype, tflops in self.peak_tflops.items():
            if not tflops > 0:
                raise ValueError(f"peak_tflops.{dtype}: {tflops!r} is not allowed; expected "
                                 f"a positive dense peak in TFLOP/s")
        return self


class System(Frozen):
    """A named platform: chips, the scale-up domain they share, and the network between nodes.

    A "node" is the scale-up domain — the chips one NVLink/NVSwitch (or Infinity Fabric, or
    ICI) fabric connects all-to-all: 8 in a DGX, 72 in a GB200 NVL72, a whole slice of a TPU
    pod. Tensor parallelism lives inside it; what crosses nodes goes over the NICs.
    """

    name: str = Field(min_length=1, description="catalogue key, e.g. 'dgx-h100'")
    title: str = Field(min_length=1, description="product name, e.g. 'NVIDIA DGX H100'")
    gpu: str = Field(min_length=1, description="GPU-catalogue key of its chips, e.g. 'h100'")
    gpus_per_node: int = Field(
        ge=1, le=MAX_GPUS_PER_NODE,
        description="chips in one scale-up domain (8 for a DGX, 72 for an NVL72)")
    intra_node_gb_s: float = Field(
        gt=0, le=MAX_LINK_GB_S,
        description="bandwidth per GPU per direction inside a node, GB/s (decimal)")
    inter_node_gb_s: float | None = Field(
        None, gt=0, le=MAX_LINK_GB_S,
        description="bandwidth per GPU per direction across nodes, GB/s: the NIC line rate in "
                    "Gb/s ÷ 8 (DGX H100: 400 Gb/s NDR per GPU → 50); None when unpublished")
    intra_node_latency_us: float = Field(
        gt=0, le=MAX_LATENCY_US,
        description="latency of one step of a ring collective inside a node, µs")
    inter_node_latency_us: float = Field(
        gt=0, le=MAX_LATENCY_US,
        description="latency of one step of a ring collective across nodes, µs")
    host_memory_gib: float | None = Field(
        None, gt=0, description="CPU memory per node, GiB as the vendor labels it (for CPU "
                                "offload); None when the platform leaves it to the builder")
    nvme_read_gb_s: float | None = Field(
        None, gt=0, le=MAX_LINK_GB_S,
        description="sequential read bandwidth of the node's local NVMe drives together, GB/s "
                    "(ZeRO-Infinity's NVMe offload); None when no measurement is published")
    nvme_write_gb_s: float | None = Field(
        None, gt=0, le=MAX_LINK_GB_S,
        description="sequential write bandwidth of the node's local NVMe drives together, GB/s")
    source: str = Field(min_length=1, description="system datasheet or page the figures come from")
    notes: str = Field("", description="what is derived, assumed or unconfirmed, and why")

