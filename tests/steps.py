"""A step time from the engine's parts, without the planning layer: the timing tests' one way
to price a preset's layout on a network they give by hand."""

from __future__ import annotations

from typing import Any

from calc.presets import get_gpu, load_preset
from calc.spec.layout import Layout, check, make_layout
from calc.timing.constants import load_constants
from calc.timing.network import Network
from calc.timing.operators import model_terms
from calc.timing.schedule import StepTime, device_for, step_time

CONSTANTS = load_constants()


def engine_step(network: Network, model: str, gpus: int, gpu: str,
                **fields: Any) -> tuple[StepTime, Layout]:
    """`model`'s step on `gpus` × `gpu` with the layout `fields`, checked as calc.step checks."""
    spec = load_preset(model).spec
    layout, _ = check(spec, make_layout(gpus, **fields))
    framework = CONSTANTS.framework(layout.framework)
    device = device_for(get_gpu(gpu), layout.dtype, CONSTANTS, framework, layout.fp8_recipe)
    return step_time(model_terms(spec, layout.seq_len), layout, device, network,
                     framework), layout
