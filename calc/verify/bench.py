"""Measured throughput: the matmul ceiling and a real training step on the device at hand.

Timing follows the usual rules for honest GPU/CPU numbers: warm-up runs first, fresh random
inputs (never zeros) every repeat, CUDA events with synchronisation on a GPU, the median of the
repeats. Achieved FLOP/s of the training step uses calc's own analytic training FLOPs (causal
attention, model FLOPs as PaLM defines MFU), so the measured MFU can be fed back into calc's
GPU-hour estimates (`python -m calc MODEL --mfu-from bench.json`). torch is imported inside the
measuring functions only. calc.reports.bench turns these measurements into the bench report.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from pydantic import Field

from calc.presets import gpu_for_device, load_model
from calc.spec.model import Frozen

# The defaults: a model whose step takes well under a second on this project's 2-core CPU, and
# a ~1B-parameter GPT-3-XL-shaped model on a GPU.
DEFAULT_MODEL = {"cpu": "chapter-char-gpt", "cuda": "gpt3-1.3b"}
DEFAULT_SHAPE = {"cpu": (8, 128), "cuda": (8, 2048)}  # (batch, sequence length)
MATMUL_SIZE = {"cpu": 2048, "cuda": 8192}
TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
STEP_REPEATS = 5


class DeviceInfo(Frozen):
    kind: str = Field(description="'cpu' or 'cuda'")
    name: str = Field(description="CPU model or CUDA device name as the system reports it")
    cores: int | None = Field(None, description="logical CPUs (CPU) or SMs (CUDA)")
    threads: int | None = Field(None, description="torch intra-op threads")
    gpu: str | None = Field(None, description="catalogue name the device maps to")
    note: str = ""


class MatmulResult(Frozen):
    size: int = Field(description="n of the n×n @ n×n products")
    dtype: str
    repeats: int
    median_seconds: float
    flops: float = Field(description="2·n³ per product")
    flops_per_second: float


def _median_seconds(run: Callable[[], None], sync: Callable[[], None], repeats: int,
                    warmup: int, timer: Callable[[Callable[[], None]], float]) -> float:
    for _ in range(warmup):
        run()
    sync()
    return statistics.median(timer(run) for _ in range(repeats))


def _timers(device: str) -> tuple[Callable[[], None], Callable[[Callable[[], None]], float]]:
    import torch

    if device == "cuda":
        def cuda_time(run: Callable[[], None]) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3
        return torch.cuda.synchronize, cuda_time

    def cpu_time(run: Callable[[], None]) -> float:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start
    return lambda: None, cpu_time


def catalogue_name(cuda_name: str) -> str | None:
    """The GPU catalogue entry a CUDA device name maps to (its `device_name` words), or None."""
    gpu = gpu_for_device(cuda_name)
    return gpu.name if gpu else None


def describe_device(device: str) -> DeviceInfo:
    import torch

    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        name = props.name
        gpu = catalogue_name(name)
        note = "" if gpu else f"{name!r} is not in the GPU catalogue: MFU only vs the ceiling"
        return DeviceInfo(kind="cuda", name=name, cores=props.multi_processor_count,
                          gpu=gpu, note=note)
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            name = next(line.split(":", 1)[1].strip() for line in info
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return DeviceInfo(kind="cpu", name=name, cores=os.cpu_count(),
                      threads=torch.get_num_threads(),
                      note="CPUs have no dense peak in the catalogue: MFU vs the measured "
                           "matmul ceiling")


def matmul_ceiling(device: str, dtype: str, size: int | None = None,
                   repeats: int = 7) -> MatmulResult:
    """Median FLOP/s of n×n @ n×n products with fresh random inputs each repeat."""
    import torch

    n = size or MATMUL_SIZE[device]
    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    sync, timer = _timers(device)
    inputs: list[tuple[Any, Any]] = []

    def prepare() -> None:  # new random operands, outside the timed region
        inputs.append((torch.randn(n, n, device=device, dtype=torch_dtype),
                       torch.randn(n, n, device=device, dtype=torch_dtype)))

    def product() -> None:
        a, b = inputs.pop()
        torch.mm(a, b)

    def timed(run: Callable[[], None]) -> float:
        prepare()
        sync()
        return timer(run)

    for _ in range(2):  # warm-up
        prepare()
        product()
    sync()
    seconds = statistics.median(timed(product) for _ in range(repeats))
    flops = 2.0 * n**3
    return MatmulResult(size=n, dtype=dtype, repeats=repeats, median_seconds=seconds,
                        flops=flops, flops_per_second=flops / seconds)


def training_step(model_name: str, device: str, dtype: str, batch: int, seq_len: int,
                  repeats: int = 5) -> tuple[float, int]:
    """Median seconds of one AdamW training step (forward, backward, optimizer) of the
    reference model of `model_name`, on random tokens; and the parameter count."""
    import torch

    from calc.verify.model import build

    spec = load_model(model_name).spec
    model = build(spec, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    autocast = dtype in ("bf16", "fp16")
    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    sync, timer = _timers(device)

    def step() -> None:
        # ids the head can score (head_rows), so every target is a logit of the model
        ids = torch.randint(0, spec.head_rows, (batch, seq_len + 1), device=device)
        with torch.autocast(device_type=device, dtype=torch_dtype, enabled=autocast):
            logits = model(ids[:, :-1])
            loss = torch.nn.functional.cross_entropy(
                logits.float().reshape(-1, spec.head_rows), ids[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    seconds = _median_seconds(step, sync, repeats, warmup=2, timer=timer)
    return seconds, sum(p.numel() for p in model.parameters())
