"""The bench report: this device's matmul ceiling and a real training step, with the MFU they
imply; `python -m calc bench --save` keeps it and `--mfu-from` feeds the MFU back into estimates.

The measuring (torch) is calc.verify.bench's, imported only when `bench()` runs.
"""

from __future__ import annotations

import datetime

from pydantic import Field, ValidationError

from calc.counting import DEFAULT_MFU, TRAIN_PER_FORWARD
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import count_flops, count_params
from calc.host import memory_errors, require_memory
from calc.presets import get_gpu, load_model, sequence_length
from calc.spec.model import Frozen
from calc.verify.bench import DeviceInfo, MatmulResult

# A training step in fp32 keeps 4 bytes of weights, 4 of gradients and 8 of AdamW's m and v per
# parameter (autocast adds 16-bit copies and activations on top): the least it can need.
TRAINING_BYTES_PER_PARAM = 16


class StepResult(Frozen):
    model: str
    params: int
    batch: int
    seq_len: int
    repeats: int
    median_seconds: float
    tokens_per_second: float
    model_flops: float = Field(description="calc's training FLOPs of one step (causal)")
    executed_flops: float = Field(description="the same under the full attention convention, "
                                              "what the step's matmuls compute")
    achieved_flops_per_second: float = Field(description="model FLOPs / measured seconds")
    mfu_vs_peak: float | None = Field(description="against the catalogue's dense peak")
    mfu_vs_ceiling: float = Field(description="against the measured matmul ceiling")
    predicted_seconds_at_peak: float | None = Field(
        description=f"model FLOPs / (dense peak × default MFU {DEFAULT_MFU:g})")
    predicted_seconds_at_ceiling: float = Field(
        description="model FLOPs / measured ceiling: the fastest the step could be")


class BenchReport(Document):
    device: DeviceInfo
    dtype: str
    peak_flops: float | None = Field(description="catalogue dense peak at dtype, when known")
    matmul: MatmulResult
    step: StepResult
    date: str
    torch_version: str
    conventions: list[str]

    @property
    def mfu(self) -> float:
        """The MFU to feed back: against the catalogue peak when known, else the ceiling."""
        return self.step.mfu_vs_peak or self.step.mfu_vs_ceiling

    @property
    def mfu_source(self) -> str:
        against = (f"the {self.device.gpu} dense {self.dtype} peak" if self.step.mfu_vs_peak
                   else "its measured matmul ceiling")
        return (f"measured {self.date} on {self.device.name}: {self.step.model} training "
                f"step, against {against}")


def bench(device: str = "cpu", dtype: str | None = None, model: str | None = None,
          batch: int | None = None, seq_len: int | None = None,
          matmul_size: int | None = None) -> BenchReport:
    """Measure the device: its matmul ceiling and a real training step of `model`."""
    import torch

    from calc.verify.bench import (
        DEFAULT_MODEL,
        DEFAULT_SHAPE,
        STEP_REPEATS,
        describe_device,
        matmul_ceiling,
        training_step,
    )

    if device == "cuda" and not torch.cuda.is_available():
        raise CalcError("--device: 'cuda' is not available here (torch sees no CUDA device); "
                        "use --device cpu")
    dtype = dtype or ("bf16" if device == "cuda" else "fp32")
    name = model or DEFAULT_MODEL[device]
    spec = load_model(name).spec
    counts = count_params(spec)
    free = torch.cuda.mem_get_info()[0] if device == "cuda" else None
    require_memory(  # before building: a model too big for the machine is one line, not a kill
        TRAINING_BYTES_PER_PARAM * (counts.total + counts.mtp),
        f"bench: a training step of {name} ({counts.total + counts.mtp:,} parameters, "
        f"{TRAINING_BYTES_PER_PARAM} bytes each for fp32 weights, gradients and AdamW's two "
        f"states, before activations)",
        f"bench a smaller model (the default is {DEFAULT_MODEL[device]}); `python -m calc "
        f"verify {name}` counts it on the meta device without memory", free)
    default_batch, default_len = DEFAULT_SHAPE[device]
    b = batch or default_batch
    t = sequence_length(spec, seq_len or min(default_len, spec.context_length))
    info = describe_device(device)
    peak = get_gpu(info.gpu).peak_flops(dtype) if info.gpu else None
    ceiling = matmul_ceiling(device, dtype, matmul_size)
    with memory_errors(f"bench: the training step of {name} (batch {b} × {t} tokens)",
                       "give a smaller --batch or --seq-len, or a smaller model"):
        seconds, params = training_step(name, device, dtype, b, t, STEP_REPEATS)
    assert params == counts.total + counts.mtp  # the model calc counts
    tokens = b * t
    model_flops = float(count_flops(spec, t, "causal").train) * tokens
    executed = float(count_flops(spec, t, "full").train) * tokens
    achieved = model_flops / seconds
    step = StepResult(
        model=name, params=params, batch=b, seq_len=t, repeats=STEP_REPEATS,
        median_seconds=seconds,
        tokens_per_second=tokens / seconds, model_flops=model_flops, executed_flops=executed,
        achieved_flops_per_second=achieved,
        mfu_vs_peak=achieved / peak if peak else None,
        mfu_vs_ceiling=achieved / ceiling.flops_per_second,
        predicted_seconds_at_peak=model_flops / (peak * DEFAULT_MFU) if peak else None,
        predicted_seconds_at_ceiling=model_flops / ceiling.flops_per_second)
    return BenchReport(
        device=info, dtype=dtype, peak_flops=peak, matmul=ceiling, step=step,
        date=datetime.date.today().isoformat(), torch_version=torch.__version__,
        conventions=[
            "Matmul ceiling: median of torch.mm on fresh random n×n operands after warm-up; "
            "2·n³ FLOPs each; CUDA timed with events and synchronisation.",
            "Training step: forward, cross-entropy, backward and AdamW step of calc's "
            f"reference model on random tokens; median of {STEP_REPEATS} after 2 warm-up steps; "
            f"{'autocast ' + dtype if dtype != 'fp32' else 'fp32'}.",
            f"Model FLOPs: calc's exact training FLOPs ({TRAIN_PER_FORWARD} × forward, causal "
            "attention) per "
            "step; executed FLOPs count the full T×T attention the step computes.",
            "MFU = model FLOPs / measured seconds / peak; against the catalogue's dense peak "
            "when the device is in it, and against the measured matmul ceiling.",
        ])


def load_bench(path: str) -> BenchReport:
    """A saved `python -m calc bench --save PATH` result; CalcError in one line otherwise."""
    import json

    name = f"--mfu-from: {path!r}"
    try:
        with open(path, encoding="utf-8") as file:
            return BenchReport.model_validate(json.load(file))
    except FileNotFoundError:
        raise CalcError(f"{name} does not exist") from None
    except IsADirectoryError:
        raise CalcError(f"{name} is a directory, not a saved bench result") from None
    except ValidationError as error:
        raise CalcError(one_line(error, f"{name} is not a saved bench result "
                                        f"(python -m calc bench --save PATH)")[:300]) from None
    except (OSError, ValueError) as error:
        raise CalcError(f"{name} is not a saved bench result (python -m calc bench --save "
                        f"PATH): {' '.join(str(error).split())[:120]}") from None


def measured_mfu(measured: BenchReport, gpu: str | None) -> float:
    """The MFU a bench file measured, for an estimate on `gpu`: refused when it was measured on
    another device (a CPU's MFU says nothing about an H100's)."""
    where = measured.device.gpu or f"{measured.device.kind} ({measured.device.name})"
    if gpu is None:
        return measured.mfu
    asked = get_gpu(gpu).name
    if measured.device.gpu != asked:
        raise CalcError(f"--mfu-from: measured on {where}, not on {asked}; an MFU does not carry "
                        f"from one device to another: bench on a {asked}, or give --mfu")
    return measured.mfu
