"""An empty layout search explained: why no layout of the model runs or fits, and the nearest
change that gives some (a pin dropped, another global batch or GPU count, more memory per GPU),
found by the validators alone, without pricing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pydantic import ValidationError

from calc.counting import GIB
from calc.errors import CalcError
from calc.plan.search import Allowed, Search, SearchSetup, proposals, variants
from calc.spec import ModelSpec
from calc.spec.layout import Layout, check
from calc.spec.validity import Model, refusal


def no_layout(model: str, setup: SearchSetup, found: Search, gpus: int, global_batch: int,
              allowed: Allowed) -> str:
    """Why a search found no layout, in one line, with the nearest change that gives some:
    without a pin, another global batch or GPU count (no valid layout), or more memory per
    GPU (valid layouts, none fits)."""
    head = (f"no layout of {model} on {gpus:,} × {setup.gpu.name} for global batch "
            f"{global_batch:,}")
    if found.rejected:
        least = min(found.rejected, key=lambda c: c.memory_bytes)
        return (f"{head} fits: the {len(found.rejected):,} valid layouts need at least "
                f"{least.memory_bytes / GIB:,.1f} GiB per GPU ({least.layout.label}; margin "
                f"{least.margin_bytes / GIB:,.1f} GiB) of {setup.capacity / GIB:,.0f} GiB; "
                f"nearest: a GPU with {least.memory_bytes / GIB:,.0f} GiB or more, more GPUs, "
                f"or offload (--offload-optimizer cpu)")

    def valid(gpu_count: int, batch: int, pinned: Allowed) -> bool:
        return any_valid(setup.spec, gpu_count, batch, setup.seq_len, setup.gpus_per_node,
                         setup.fixed, pinned)

    changes = []
    for key in allowed:  # a pin that alone empties the search
        if valid(gpus, global_batch, {k: v for k, v in allowed.items() if k != key}):
            changes.append(f"drop the pin {pinned({key: allowed[key]})}")
    batch = nearest(outward(global_batch, 1, 2 * global_batch),
                    lambda b: valid(gpus, b, allowed))
    if batch is not None:
        changes.append(f"--global-batch {batch}")
    count = nearest(outward(gpus, 1, 2 * gpus), lambda g: valid(g, global_batch, allowed))
    if count is not None:
        changes.append(f"--gpus {count}")
    reasons = ("no split of the GPUs into tp × pp × cp × dp that the framework runs, with dp "
               "dividing the global batch"
               + (f" and the pins ({pinned(allowed)})" if allowed else ""))
    nearest_change = "; ".join(changes) if changes else "none found within 2× the batch or GPUs"
    return f"{head}: {reasons}; nearest: {nearest_change}"


def pinned(allowed: Allowed) -> str:
    return ", ".join(f"{key} {','.join(str(v) for v in values)}"
                     for key, values in allowed.items())


def any_valid(spec: ModelSpec, gpus: int, global_batch: int, seq_len: int,
              gpus_per_node: int, fixed: dict[str, Any], allowed: Allowed | None = None) -> bool:
    """Whether some layout within `allowed` passes the validators and its framework's rules
    (no pricing: what an empty search tries its nearest changes with)."""
    model = Model.of(spec)
    for fields in proposals(spec, gpus, global_batch, seq_len, gpus_per_node, fixed, allowed):
        try:
            base, _ = check(spec, Layout(**fields))
        except (ValidationError, CalcError):
            continue
        if any(refusal(model, lay, gpus_per_node) is None for lay in variants(base, allowed)):
            return True
    return False


def nearest(values: Iterator[int], valid: Callable[[int], bool]) -> int | None:
    """The first of `values` that is `valid`, or None."""
    return next((value for value in values if valid(value)), None)


def outward(center: int, low: int, high: int) -> Iterator[int]:
    """center ± 1, ± 2, … within [low, high], nearer first, lower first on a tie."""
    for step in range(1, max(center - low, high - center) + 1):
        for value in (center - step, center + step):
            if low <= value <= high:
                yield value
