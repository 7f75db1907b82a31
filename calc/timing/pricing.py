"""Price one checked layout of one model on one system under a set of constants: the entry point
the step report, the throughput comparison and the constants' fit share."""

from __future__ import annotations

from calc.spec import GPU, ModelSpec, System
from calc.spec.layout import Layout
from calc.timing.constants import TimingConstants
from calc.timing.finetune import FineTuneTerms
from calc.timing.network import network_for
from calc.timing.operators import ModelTerms, model_terms
from calc.timing.schedule import StepTime, device_for, step_time


def price(spec: ModelSpec | ModelTerms, layout: Layout, gpu: GPU, system: System,
          constants: TimingConstants, finetune: FineTuneTerms | None = None) -> StepTime:
    """The step of `layout` (seq_len resolved, checked against the model) on `gpu` in `system`,
    LoRA/QLoRA on a frozen base when `finetune` (calc.timing.finetune) is given. `spec` may be
    the model's precomputed terms when many layouts or constants are priced."""
    assert layout.seq_len is not None
    terms = spec if isinstance(spec, ModelTerms) else model_terms(spec, layout.seq_len)
    framework = constants.framework(layout.framework)
    device = device_for(gpu, layout.dtype, constants, framework, layout.fp8_recipe)
    return step_time(terms, layout, device, network_for(system, constants.network), framework,
                     finetune=finetune)
