"""Offload options (DeepSpeed's offload_optimizer / offload_param): where the optimizer side and
the ZeRO-3 parameter partitions live, and the host memory that bounds it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from calc.spec.model import Frozen

Device = Literal["none", "cpu", "nvme"]


class Offload(Frozen):
    optimizer: Device = Field("none", description="fp32 master weights, optimizer states and "
                                                  "the fp32 gradients: on the GPU, cpu or nvme")
    params: Device = Field("none", description="the 16-bit parameter partitions (ZeRO-3 only)")
    system: str | None = Field(None, description="systems-catalogue name whose node's host "
                                                 "memory bounds a CPU offload; default the "
                                                 "GPU's reference system")
    host_memory_gib: float | None = Field(
        None, gt=0, le=1 << 24, description="host memory per node, GiB (instead of a system)")
    gpus_per_node: int | None = Field(None, ge=1, le=1 << 16,
                                      description="GPUs sharing one node's host memory")

    @property
    def active(self) -> bool:
        return self.optimizer != "none" or self.params != "none"
