"""Count a built model the way torch does: parameters by `numel`, FLOPs by FlopCounterMode.

Both are attributed to the component tags of calc.verify.model (module → nearest tagged
ancestor), so they line up with calc's formula keys. FlopCounterMode credits an operator to
every module on the stack; a module's own share is its count minus its children's.

FlopCounterMode counts matrix products and convolutions only. The state arithmetic of a scan
(calc.verify.parts.state_arithmetic) is counted by StateCounter, a dispatch mode of our own: one
FLOP per element each multiply, add or subtract produces there (calc.formulas.mixers).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

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


def count_flops(model: nn.Module, seq_len: int, batch: int = 1,
                backward: bool = True) -> FlopCount:
    """FlopCounterMode over one forward (and backward) of `batch` sequences of `seq_len`."""
    device = next(model.parameters()).device
    ids = torch.zeros(batch, seq_len, dtype=torch.long, device=device)
    with FlopCounterMode(display=False) as forward_counter, StateCounter() as state:
        logits = model(ids)
    per_module = forward_counter.get_flop_counts()
    root = type(model).__name__
    keys = components(model)
    by_component: dict[str, int] = defaultdict(int)
    for name, flops in _exclusive(per_module, root).items():
        key = keys.get(name, "")
        by_component[FLOP_COMPONENT.get(key, key)] += flops
    for key, flops in state.counts.items():
        by_component[key] += flops
    by_operator = {str(op): int(n) for op, n in per_module.get("Global", {}).items()}
    backward_total, backward_ops = None, {}
    if backward:
        with FlopCounterMode(display=False) as backward_counter:
            logits.float().sum().backward()
        backward_total = backward_counter.get_total_flops()
        backward_ops = {str(op): int(n)
                        for op, n in backward_counter.get_flop_counts().get("Global", {}).items()}
    matmuls = forward_counter.get_total_flops()
    return FlopCount(matmuls + sum(state.counts.values()), dict(by_component), by_operator,
                     backward_total, backward_ops, matmuls)
