"""The offload block of the memory report: what leaves the GPU, where it goes, whether the
node's host memory holds it, and the host-link traffic it costs (calc.formulas.offload)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import Bytes, whole
from calc.errors import CalcError, one_line
from calc.presets import get_system
from calc.spec import GPU, TrainingMemory
from calc.spec.model import Frozen
from calc.spec.offload import Offload
from calc.tables import GIB

DEFAULT_GPUS_PER_NODE = 8  # an HGX/DGX board, when neither a system nor a count is given


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


def offload_options(**given: Any) -> Offload:
    try:
        return Offload(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as error:
        raise CalcError(one_line(error, "offload")) from None


def _host_memory(offload: Offload, gpu: GPU | None) -> tuple[int | None, str | None, int]:
    """(host memory per node in bytes, where it comes from, GPUs per node)."""
    if offload.host_memory_gib is not None:
        return (int(offload.host_memory_gib * GIB), "given",
                offload.gpus_per_node or DEFAULT_GPUS_PER_NODE)
    name = offload.system or (gpu.system if gpu else None)
    if name is None:
        return None, None, offload.gpus_per_node or DEFAULT_GPUS_PER_NODE
    system = get_system(name)
    memory = int(system.host_memory_gib * GIB) if system.host_memory_gib else None
    return memory, f"{system.name} ({system.title})", offload.gpus_per_node or system.gpus_per_node


def offload_block(offload: Offload, options: TrainingMemory, gpu: GPU | None,
                  s: dict[str, Any]) -> OffloadBlock:
    """The offload of `options` on `gpu`, with the symbol values `s` of the memory report."""
    if offload.params != "none" and options.zero != 3:
        raise CalcError(f"offload_params={offload.params!r} needs zero=3 (got zero="
                        f"{options.zero}): ZeRO-Infinity offloads the stage-3 partitions")
    if offload.optimizer != "none" and options.zero == 0:
        raise CalcError(f"offload_optimizer={offload.optimizer!r} needs zero >= 1: DeepSpeed "
                        f"offloads the ZeRO optimizer partitions")
    values = _compiled.offload({**s, "i_off_o": int(offload.optimizer != "none"),
                                "i_off_p": int(offload.params != "none")})
    host = (values["optimizer_host"] * (offload.optimizer == "cpu")
            + values["params_host"] * (offload.params == "cpu"))
    nvme = (values["optimizer_host"] * (offload.optimizer == "nvme")
            + values["params_host"] * (offload.params == "nvme"))
    memory, source, per_node = _host_memory(offload, gpu)
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
        nvme_bytes_per_gpu=whole(nvme),
        gpu_freed_bytes=whole(values["optimizer_gpu_freed"] + values["params_gpu_freed"]),
        gpu_live_bytes=whole(values["params_gpu_live"]), gpus_per_node=per_node,
        host_bytes_per_node=whole(host * per_node), host_memory_bytes=memory,
        host_memory_source=source, transfer_per_step_bytes=whole(step),
        gradients_to_host_bytes=whole(values["gradients_to_host_per_step"]),
        weights_from_host_bytes=whole(values["weights_from_host_per_step"]),
        optimizer_offloaded_bytes=whole(values["optimizer_host"]),
        params_offloaded_bytes=whole(values["params_host"]),
        transfer_per_micro_batch_bytes=whole(micro), host_link_gb_s=link,
        transfer_per_step_seconds=step / (link * 1e9) if link else None,
        transfer_per_micro_batch_seconds=micro / (link * 1e9) if link else None)


def offload_sentence(block: OffloadBlock) -> str:
    where = block.host_memory_source or "no system or host memory given: not checked"
    return (
        f"Offload (optimizer → {block.optimizer}, parameters → {block.params}): ZeRO-Offload "
        f"(Ren et al. 2021 §4.1) keeps the 16-bit weights on the GPU, streams the gradients to "
        f"the host from ZeRO stage 2 on (buckets not counted) and keeps the fp32 master "
        f"weights, optimizer states and fp32 gradients of the rank's partition there; "
        f"ZeRO-Infinity (Rajbhandari et al. 2021 §5) also the stage-3 parameter partitions, "
        f"with two of the largest gathered modules (a layer or the embedding) live on the GPU "
        f"(an assumption; DeepSpeed's prefetch and live-parameter limits set it). Host memory "
        f"per node: {block.gpus_per_node} GPUs × the per-GPU share, against {where}. Host-link "
        f"traffic: gradients down and weights up once per optimizer step (no weights up when "
        f"the parameters live off the GPU); parameter partitions up for the forward and the "
        f"backward of every micro-batch. Their time, the CPU optimizer step and NVMe swapping "
        f"are parts of `calc step --offload-optimizer/--offload-params` (docs/step-time.md).")
