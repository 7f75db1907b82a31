"""The offload block of the step report: the host resources ZeRO-Offload and ZeRO-Infinity use
(the GPU's PCIe link, the node's CPUs and NVMe drives), where each figure comes from, and the
step with the offload parts added (calc.timing.offload)."""

from __future__ import annotations

from pydantic import Field

from calc.counting import Bytes
from calc.errors import CalcError
from calc.reports._offload import OffloadBlock
from calc.spec import GPU, System
from calc.spec.layout import Layout
from calc.spec.model import Frozen
from calc.timing.constants import OffloadConstants
from calc.timing.offload import HostSide, OffloadTraffic, with_offload
from calc.timing.schedule import StepTime

GB = 1e9  # the catalogue's GB/s are decimal


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
    host = HostSide(pcie=gpu.pcie_gb_s * GB, gpus_per_node=gpus_per_node,
                    cpu_adam=constants.cpu_adam_params_per_s,
                    nvme_read=read * GB if read else None,
                    nvme_write=write * GB if write else None)
    return host, source


def traffic_of(block: OffloadBlock) -> OffloadTraffic:
    return OffloadTraffic(
        optimizer=block.optimizer, params=block.params,
        gradients_down=block.gradients_to_host_bytes,
        weights_up=block.weights_from_host_bytes,
        params_up=block.transfer_per_micro_batch_bytes,
        optimizer_stored=block.optimizer_offloaded_bytes,
        params_stored=block.params_offloaded_bytes)


def offloaded_step(time: StepTime, layout: Layout, block: OffloadBlock, gpu: GPU,
                   system: System, constants: OffloadConstants, updated_params: float,
                   overlap: bool, nvme_read_gb_s: float | None = None,
                   nvme_write_gb_s: float | None = None) -> tuple[StepTime, StepOffload]:
    """The step with its optimizer on the host and the offload parts added, and the block
    that says what priced them."""
    host, nvme_source = host_side(block.optimizer, block.params, gpu, system, constants,
                                  block.gpus_per_node, nvme_read_gb_s, nvme_write_gb_s)
    priced = with_offload(time, layout, traffic_of(block), host, updated_params, overlap)
    capacity = block.host_memory_bytes
    return priced, StepOffload(
        optimizer=block.optimizer, params=block.params, gpus_per_node=block.gpus_per_node,
        pcie_gb_s=host.pcie / GB, cpu_adam_params_per_s=host.cpu_adam,
        nvme_read_gb_s=host.nvme_read / GB if host.nvme_read else None,
        nvme_write_gb_s=host.nvme_write / GB if host.nvme_write else None,
        nvme_source=nvme_source, gradients_to_host_bytes=block.gradients_to_host_bytes,
        weights_from_host_bytes=block.weights_from_host_bytes,
        params_to_gpu_per_micro_batch_bytes=block.transfer_per_micro_batch_bytes,
        host_bytes_per_node=block.host_bytes_per_node, host_memory_bytes=capacity,
        host_memory_source=block.host_memory_source,
        host_fits=capacity is None or block.host_bytes_per_node <= capacity)


def offload_sentence(block: StepOffload) -> str:
    """What the offload parts of the step model, printed under the step tables."""
    nvme = (f"; NVMe at {block.nvme_read_gb_s:g} GB/s read, {block.nvme_write_gb_s:g} GB/s "
            f"write per node ({block.nvme_source})" if block.nvme_read_gb_s else "")
    return (
        f"Offload (optimizer → {block.optimizer}, parameters → {block.params}; ZeRO-Offload, "
        f"Ren et al. 2021; ZeRO-Infinity, Rajbhandari et al. 2021): gradients down and "
        f"weights up over each GPU's PCIe link ({block.pcie_gb_s:g} GB/s per direction), the "
        f"gradients hidden behind the last backward, the weights behind the CPU step; "
        f"CPU-Adam at {block.cpu_adam_params_per_s:.3g} parameters/s per node, shared by the "
        f"node's {block.gpus_per_node} GPU(s), not overlapped (no delayed parameter update): "
        f"Ren et al.'s measurement on a DGX-2's CPUs (presets/timing.toml [offload]){nvme}; "
        f"offloaded parameters fetched for every forward and backward, prefetched behind "
        f"compute. Terms and what is left out: docs/step-time.md.")
