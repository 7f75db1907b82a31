"""Count a built model the way torch does: parameters by `numel`, FLOPs by FlopCounterMode.

Both are attributed to the component tags of calc.verify.model (module → nearest tagged
ancestor), so they line up with calc's formula keys. FlopCounterMode credits an operator to
every module on the stack; a module's own share is its count minus its children's.

On the meta device a reference model's layers of one structure are counted by running one of
them (`_runs`); `every_layer=True` runs them all, and tests/test_verify.py holds the two equal.

FlopCounterMode counts matrix products and convolutions only. The state arithmetic of a scan
(calc.verify.parts.state_arithmetic) is counted by StateCounter, a dispatch mode of our own: one
FLOP per element each multiply, add or subtract produces there (calc.formulas.mixers).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from calc.verify.parts import state_region

# calc's FLOP components merge the FFN's two parameter components.
FLOP_COMPONENT = {"mlp/up": "mlp", "mlp/down": "mlp"}


def components(model: nn.Module) -> dict[str, str]:
    """Module name → component key (its own tag or its nearest tagged ancestor's)."""
    keys: dict[str, str] = {}
    for name, module in model.named_modules():
        own = getattr(module, "component", None)
        parent = name.rpartition(".")[0]
        keys[name] = own or keys.get(parent, "")
    return keys


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Unique parameters (a tied tensor once) per component."""
    keys = components(model)
    counts: dict[str, int] = defaultdict(int)
    for name, parameter in model.named_parameters():  # named_parameters skips duplicates
        counts[keys[name.rpartition(".")[0]]] += parameter.numel()
    return dict(counts)


_ARITHMETIC = {torch.ops.aten.mul, torch.ops.aten.add, torch.ops.aten.sub}


class StateCounter(TorchDispatchMode):
    """One FLOP per output element of every multiply, add or subtract inside a scan's
    state_arithmetic region, by the region's component."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        region = state_region()
        if region is not None and func.overloadpacket in _ARITHMETIC:
            self.counts[region] += out.numel()
        return out


@dataclass(frozen=True)
class FlopCount:
    forward: int  # FlopCounterMode's matrix products and convolutions + the state arithmetic
    forward_by_component: dict[str, int]
    forward_by_operator: dict[str, int]
    backward: int | None
    backward_by_operator: dict[str, int]
    matmul_forward: int  # FlopCounterMode's part of forward (what backward doubles)


def _exclusive(per_module: dict[str, dict], root: str) -> dict[str, int]:
    """Each module's own FLOPs (its count minus its nearest counted descendants'), keyed without
    the root's name. Containers that never run (ModuleList) have no entry of their own."""
    totals = {name: sum(ops.values()) for name, ops in per_module.items() if name != "Global"}
    own = dict(totals)
    for name, total in totals.items():
        parent = name.rpartition(".")[0]
        while parent and parent not in totals:
            parent = parent.rpartition(".")[0]
        if parent:
            own[parent] -= total
    return {name.removeprefix(root).lstrip("."): flops for name, flops in own.items() if flops}


@dataclass
class _Run:
    """What one forward (and backward) of a model ran: FlopCounterMode's forward counts per
    module and operator, the state arithmetic per component, the backward's per operator."""

    forward: dict[str, dict[Any, int]]
    states: dict[str, int]
    backward: dict[Any, int] | None

    def plus(self, other: _Run, times: int) -> _Run:
        """self + times × other, module by module and operator by operator."""
        forward = {name: dict(ops) for name, ops in self.forward.items()}
        for name, ops in other.forward.items():
            mine = forward.setdefault(name, {})
            for op, n in ops.items():
                mine[op] = mine.get(op, 0) + times * n
        states = dict(self.states)
        for key, n in other.states.items():
            states[key] = states.get(key, 0) + times * n
        backward = None
        if self.backward is not None and other.backward is not None:
            backward = dict(self.backward)
            for op, n in other.backward.items():
                backward[op] = backward.get(op, 0) + times * n
        return _Run(forward, states, backward)


def _run(model: nn.Module, ids: torch.Tensor, backward: bool) -> _Run:
    with FlopCounterMode(display=False) as forward_counter, StateCounter() as state:
        logits = model(ids)
    backward_ops = None
    if backward:
        with FlopCounterMode(display=False) as backward_counter:
            logits.float().sum().backward()
        backward_ops = dict(backward_counter.get_flop_counts().get("Global", {}))
    return _Run({name: dict(ops) for name, ops in forward_counter.get_flop_counts().items()},
                dict(state.counts), backward_ops)


def _runs(model: nn.Module, ids: torch.Tensor, backward: bool, every_layer: bool) -> _Run:
    """The model's counts. On the meta device, a reference model's layers of one structure
    (calc.verify.model.ReferenceModel.layer_groups) run the same operators, so the model runs
    without its layers once and with one layer of each structure once, and each structure's
    difference is counted as many times as it has layers: exact, and a few runs where a
    70-layer model took 70 layers' dispatch (meta operators cost a millisecond each). On real
    tensors a router's top-k gives each layer its own expert loads: every layer runs."""
    groups = getattr(model, "layer_groups", None)
    if every_layer or ids.device.type != "meta" or groups is None:
        return _run(model, ids, backward)
    try:
        model.running = ()
        skeleton = total = _run(model, ids, backward)
        for first, layers in groups().items():
            model.running = (first,)
            total = total.plus(_run(model, ids, backward).plus(skeleton, -1), layers)
    finally:
        model.running = None
    return total


def count_flops(model: nn.Module, seq_len: int, batch: int = 1, backward: bool = True,
                every_layer: bool = False) -> FlopCount:
    """FlopCounterMode over one forward (and backward) of `batch` sequences of `seq_len`;
    `every_layer` runs each layer even where one of its structure would do (_runs)."""
    device = next(model.parameters()).device
    ids = torch.zeros(batch, seq_len, dtype=torch.long, device=device)
    run = _runs(model, ids, backward, every_layer)
    per_module = run.forward
    root = type(model).__name__
    keys = components(model)
    by_component: dict[str, int] = defaultdict(int)
    for name, flops in _exclusive(per_module, root).items():
        key = keys.get(name, "")
        by_component[FLOP_COMPONENT.get(key, key)] += flops
    for key, flops in run.states.items():
        by_component[key] += flops
    by_operator = {str(op): int(n) for op, n in per_module.get("Global", {}).items()}
    backward_total, backward_ops = None, {}
    if run.backward is not None:
        backward_total = sum(run.backward.values())
        backward_ops = {str(op): int(n) for op, n in run.backward.items()}
    matmuls = sum(per_module.get("Global", {}).values())
    return FlopCount(matmuls + sum(run.states.values()), dict(by_component), by_operator,
                     backward_total, backward_ops, matmuls)
