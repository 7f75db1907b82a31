"""Offload options (DeepSpeed's offload_optimizer / offload_param): where the optimizer side and
the ZeRO-3 parameter partitions live, and the host memory that bounds it."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from calc.numbers import annotated
from calc.spec.model import Frozen

Device = Literal["none", "cpu", "nvme"]
HostMemory, NvmeRate = annotated("host_memory_gib"), annotated("nvme_gb_s")


class Offload(Frozen):
    """Where ZeRO-Offload / ZeRO-Infinity put the model states, and the node that holds them:
    its host memory (default the system's) and its NVMe drives' rates."""

    model_config = ConfigDict(**Frozen.model_config, populate_by_name=True)

    optimizer: Device = Field(
        "none", alias="offload_optimizer",
        description="fp32 master weights, optimizer states and fp32 gradients off the GPU: "
                    "cpu or nvme (needs ZeRO ≥ 1)")
    params: Device = Field("none", alias="offload_params",
                           description="the ZeRO-3 parameter partitions off the GPU: cpu or "
                                       "nvme (needs ZeRO 3)")
    host_memory_gib: HostMemory | None = Field(
        None, description="host memory per node, GiB (default: the system's)")
    gpus_per_node: int | None = Field(
        None, ge=1, le=1 << 16, description="GPUs sharing one node's host memory (default: the "
                                            "system's, or the run's GPUs on one node)")
    nvme_read_gb_s: NvmeRate | None = Field(
        None, description="the node's NVMe read bandwidth, GB/s, drives together (default: "
                          "the system's, where published)")
    nvme_write_gb_s: NvmeRate | None = Field(
        None, description="the node's NVMe write bandwidth, GB/s, drives together (default: "
                          "the system's, where published)")

    @property
    def active(self) -> bool:
        return self.optimizer != "none" or self.params != "none"
