"""ZeRO-Offload and ZeRO-Infinity as numbers: what leaves the GPU and where it goes
(calc.formulas.offload), whether the node's host memory holds it, the host-link traffic it costs,
and the host's rates that price that traffic in a step (calc.timing.offload)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from calc import _compiled
from calc.counting import GIB, GIGA, Bytes, whole
from calc.errors import CalcError
from calc.presets import get_system
from calc.spec import GPU, System
from calc.spec.layout import Layout
from calc.spec.model import Frozen
from calc.spec.offload import Offload
from calc.timing.constants import OffloadConstants
from calc.timing.offload import HostSide, OffloadTraffic, with_offload
from calc.timing.schedule import StepTime

DEFAULT_GPUS_PER_NODE = 8  # an HGX/DGX board, when neither a system nor a count is given


@dataclass(frozen=True)
class Placement:
    """Bytes per GPU of one placement (calc.formulas.offload's values, `values`)."""

    host: float  # held in CPU memory
    nvme: float  # held on NVMe
    gpu_change: float  # added to the GPU's memory: gathered weights live − what left
    values: dict[str, float]


def placement(s: dict[str, Any], optimizer: str, params: str) -> Placement:
    """The offload of the optimizer side to `optimizer` and of the ZeRO-3 partitions to
    `params` ('none', 'cpu' or 'nvme'), with the memory symbols `s`."""
    values = _compiled.offload({**s, "i_off_o": int(optimizer != "none"),
                                "i_off_p": int(params != "none")})
    def where(device: str) -> float:
        return (values["optimizer_host"] * (optimizer == device)
                + values["params_host"] * (params == device))
    return Placement(where("cpu"), where("nvme"),
                     values["params_gpu_live"] - values["optimizer_gpu_freed"]
                     - values["params_gpu_freed"], values)


def check_zero(offload: Offload, zero: int) -> None:
    """CalcError when the ZeRO stage cannot offload what `offload` asks."""
    if offload.params != "none" and zero != 3:
        raise CalcError(f"offload_params={offload.params!r} needs zero=3 (got zero={zero}): "
                        f"ZeRO-Infinity offloads the stage-3 partitions")
    if offload.optimizer != "none" and zero == 0:
        raise CalcError(f"offload_optimizer={offload.optimizer!r} needs zero >= 1: DeepSpeed "
                        f"offloads the ZeRO optimizer partitions")


class OffloadBlock(Frozen):
    optimizer: str = Field(description="where the optimizer side lives: cpu or nvme (or none)")
    params: str = Field(description="where the parameter partitions live: cpu, nvme or none")
    host_bytes_per_gpu: Bytes = Field(description="offloaded to CPU memory, per GPU")
    nvme_bytes_per_gpu: Bytes = Field(description="offloaded to NVMe, per GPU")
    gpu_freed_bytes: Bytes = Field(description="what leaves the GPU")
    gpu_live_bytes: Bytes = Field(description="gathered weights held during compute (two of "
                                              "the largest modules)")
    gpus_per_node: int
    host_bytes_per_node: Bytes
    host_memory_bytes: int | None = Field(description="the node's host memory (GiB × 2^30)")
    host_memory_source: str | None = None
    transfer_per_step_bytes: Bytes = Field(description="host link, per GPU, per optimizer "
                                                       "step: gradients down, weights up")
    gradients_to_host_bytes: Bytes = Field(description="of it, the 16-bit gradients down")
    weights_from_host_bytes: Bytes = Field(description="of it, the updated 16-bit weights up "
                                                       "(none when the parameters live off "
                                                       "the GPU)")
    optimizer_offloaded_bytes: Bytes = Field(description="optimizer side held off the GPU, "
                                                         "per GPU (CPU or NVMe)")
    params_offloaded_bytes: Bytes = Field(description="parameter partitions held off the GPU, "
                                                      "per GPU (CPU or NVMe)")
    transfer_per_micro_batch_bytes: Bytes = Field(
        description="host link, per GPU, per micro-batch: parameter partitions up, twice")
    host_link_gb_s: float | None = Field(description="the GPU's host link per direction")
    transfer_per_step_seconds: float | None = None
    transfer_per_micro_batch_seconds: float | None = None


def host_memory(offload: Offload, gpu: GPU | None,
                system: str | None) -> tuple[int | None, str | None, int]:
    """(host memory per node in bytes, where it comes from, GPUs per node): given, or the
    `system`'s (default the GPU's reference system)."""
    if offload.host_memory_gib is not None:
        return (int(offload.host_memory_gib * GIB), "given",
                offload.gpus_per_node or DEFAULT_GPUS_PER_NODE)
    name = system or (gpu.system if gpu else None)
    if name is None:
        return None, None, offload.gpus_per_node or DEFAULT_GPUS_PER_NODE
    node = get_system(name)
    memory = int(node.host_memory_gib * GIB) if node.host_memory_gib else None
    return memory, f"{node.name} ({node.title})", offload.gpus_per_node or node.gpus_per_node


def offload_block(offload: Offload, zero: int, gpu: GPU | None, system: str | None,
                  s: dict[str, Any]) -> OffloadBlock:
    """The offload of a run at ZeRO stage `zero` on `gpu` in `system`, with the memory symbols
    `s`; CalcError when the stage cannot offload it or the node's host memory cannot hold it."""
    check_zero(offload, zero)
    placed = placement(s, offload.optimizer, offload.params)
    values, host = placed.values, placed.host
    memory, source, per_node = host_memory(offload, gpu, system)
    if memory is not None and host * per_node > memory:
        raise CalcError(
            f"offload: {host * per_node / GIB:,.1f} GiB of offloaded states per node "
            f"({per_node} GPUs × {host / GIB:,.1f} GiB) exceed the host memory "
            f"{memory / GIB:,.0f} GiB of {source}; offload to nvme, shard over more GPUs or "
            f"give host_memory_gib")
    link = gpu.pcie_gb_s if gpu else None
    step, micro = values["optimizer_transfer_per_step"], values["params_transfer_per_micro_batch"]
    return OffloadBlock(
        optimizer=offload.optimizer, params=offload.params, host_bytes_per_gpu=whole(host),
        nvme_bytes_per_gpu=whole(placed.nvme),
        gpu_freed_bytes=whole(values["optimizer_gpu_freed"] + values["params_gpu_freed"]),
        gpu_live_bytes=whole(values["params_gpu_live"]), gpus_per_node=per_node,
        host_bytes_per_node=whole(host * per_node), host_memory_bytes=memory,
        host_memory_source=source, transfer_per_step_bytes=whole(step),
        gradients_to_host_bytes=whole(values["gradients_to_host_per_step"]),
        weights_from_host_bytes=whole(values["weights_from_host_per_step"]),
        optimizer_offloaded_bytes=whole(values["optimizer_host"]),
        params_offloaded_bytes=whole(values["params_host"]),
        transfer_per_micro_batch_bytes=whole(micro), host_link_gb_s=link,
        transfer_per_step_seconds=step / (link * GIGA) if link else None,
        transfer_per_micro_batch_seconds=micro / (link * GIGA) if link else None)


class StepOffload(Frozen):
    optimizer: str = Field(description="where the optimizer side lives: none, cpu or nvme")
    params: str = Field(description="where the ZeRO-3 parameter partitions live")
    gpus_per_node: int = Field(description="the run's GPUs sharing one node's CPUs, memory "
                                           "and drives")
    pcie_gb_s: float = Field(description="each GPU's host link per direction, GB/s")
    cpu_adam_params_per_s: float = Field(description="parameters a node's CPUs update per "
                                                     "second (presets/timing.toml [offload])")
    nvme_read_gb_s: float | None = Field(description="the node's NVMe read bandwidth, GB/s")
    nvme_write_gb_s: float | None = Field(description="the node's NVMe write bandwidth, GB/s")
    nvme_source: str | None = Field(description="where the NVMe rates come from")
    gradients_to_host_bytes: Bytes = Field(description="per GPU per step, PCIe down")
    weights_from_host_bytes: Bytes = Field(description="per GPU per step, PCIe up")
    params_to_gpu_per_micro_batch_bytes: Bytes = Field(
        description="per GPU per micro-batch, PCIe up: the partitions for forward and backward")
    host_bytes_per_node: Bytes = Field(description="offloaded states in one node's memory")
    host_memory_bytes: int | None = Field(description="the node's host memory (None: not "
                                                      "checked)")
    host_memory_source: str | None = None
    host_fits: bool = Field(description="host_bytes_per_node ≤ host_memory_bytes (True when "
                                        "no host memory is known)")


def host_side(optimizer: str, params: str, gpu: GPU, system: System,
              constants: OffloadConstants, gpus_per_node: int,
              nvme_read_gb_s: float | None = None, nvme_write_gb_s: float | None = None
              ) -> tuple[HostSide, str | None]:
    """The rates offload runs at, and where the NVMe ones come from; CalcError naming what is
    missing (a GPU with no host-link figure, NVMe offload without NVMe rates)."""
    if gpu.pcie_gb_s is None:
        raise CalcError(f"offload: gpu {gpu.name!r} has no host-link bandwidth (pcie_gb_s) in "
                        f"presets/gpus.toml, so the transfers to the host cannot be timed")
    read = nvme_read_gb_s if nvme_read_gb_s is not None else system.nvme_read_gb_s
    write = nvme_write_gb_s if nvme_write_gb_s is not None else system.nvme_write_gb_s
    given = nvme_read_gb_s is not None or nvme_write_gb_s is not None
    source = "given" if given else (f"{system.name} ({system.title})" if read else None)
    if "nvme" in (optimizer, params) and not (read and write):
        raise CalcError(f"offload to nvme: system {system.name!r} publishes no NVMe bandwidth "
                        f"(nvme_read_gb_s, nvme_write_gb_s in presets/systems.toml); give "
                        f"--nvme-read-gb-s and --nvme-write-gb-s, or offload to cpu")
    host = HostSide(pcie=gpu.pcie_gb_s * GIGA, gpus_per_node=gpus_per_node,
                    cpu_adam=constants.cpu_adam_params_per_s,
                    nvme_read=read * GIGA if read else None,
                    nvme_write=write * GIGA if write else None)
    return host, source


def offloaded_step(time: StepTime, layout: Layout, block: OffloadBlock, gpu: GPU,
                   system: System, constants: OffloadConstants, updated_params: float,
                   overlap: bool, nvme_read_gb_s: float | None = None,
                   nvme_write_gb_s: float | None = None) -> tuple[StepTime, StepOffload]:
    """The step with its optimizer on the host and the offload parts added, and the block
    that says what priced them."""
    host, nvme_source = host_side(block.optimizer, block.params, gpu, system, constants,
                                  block.gpus_per_node, nvme_read_gb_s, nvme_write_gb_s)
    moved = OffloadTraffic(
        optimizer=block.optimizer, params=block.params,
        gradients_down=block.gradients_to_host_bytes,
        weights_up=block.weights_from_host_bytes,
        params_up=block.transfer_per_micro_batch_bytes,
        optimizer_stored=block.optimizer_offloaded_bytes,
        params_stored=block.params_offloaded_bytes)
    priced = with_offload(time, layout, moved, host, updated_params, overlap)
    capacity = block.host_memory_bytes
    return priced, StepOffload(
        optimizer=block.optimizer, params=block.params, gpus_per_node=block.gpus_per_node,
        pcie_gb_s=host.pcie / GIGA, cpu_adam_params_per_s=host.cpu_adam,
        nvme_read_gb_s=host.nvme_read / GIGA if host.nvme_read else None,
        nvme_write_gb_s=host.nvme_write / GIGA if host.nvme_write else None,
        nvme_source=nvme_source, gradients_to_host_bytes=block.gradients_to_host_bytes,
        weights_from_host_bytes=block.weights_from_host_bytes,
        params_to_gpu_per_micro_batch_bytes=block.transfer_per_micro_batch_bytes,
        host_bytes_per_node=block.host_bytes_per_node, host_memory_bytes=capacity,
        host_memory_source=block.host_memory_source,
        host_fits=capacity is None or block.host_bytes_per_node <= capacity)
