"""What a training forward really saves for the backward: every tensor autograd packs under
torch.autograd.graph.saved_tensors_hooks, counted once per storage, attributed to the module
that was running (a decoder layer, the embedding, the final norm and LM head with the loss).

transformers' own model of the config runs one forward with labels (its loss included) at the
training dtype, on the meta device (shapes only, any size) or the CPU. Weights saved for input
gradients are model states, not activations, and are left out; so are the integer token ids and
labels, which calc counts apart. Storage identity (the StorageImpl behind a tensor, which the
meta device has too) deduplicates views: a tensor split into q, k and v is one storage.
"""

from __future__ import annotations

import contextlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from calc.verify.hf_reference import build, meta_guards

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)(?:\.|$)")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass(frozen=True)
class SavedTensor:
    scope: str  # the innermost module running when it was saved
    dtype: str
    shape: tuple[int, ...]
    nbytes: int  # its storage's bytes


@dataclass
class SavedCount:
    """Saved storages by part: 'layer N', 'embedding', 'output' (final norm, head, loss)."""

    tensors: list[SavedTensor] = field(default_factory=list)

    def by_part(self) -> dict[str, int]:
        parts: dict[str, int] = defaultdict(int)
        for tensor in self.tensors:
            parts[part_of(tensor.scope)] += tensor.nbytes
        return dict(parts)

    def in_part(self, part: str) -> list[SavedTensor]:
        return [t for t in self.tensors if part_of(t.scope) == part]


def part_of(scope: str) -> str:
    """The part a module name belongs to."""
    layer = _LAYER.search(scope)
    if layer:
        return f"layer {int(layer.group(1))}"
    return "embedding" if "embed" in scope else "output"


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage()._cdata


def saved_tensors(model: nn.Module, batch: int, seq_len: int) -> SavedCount:
    """The storages one training forward of `batch` × `seq_len` tokens (labels = the inputs)
    saves for the backward, weights and integer tensors left out."""
    device = next(model.parameters()).device
    weights = {_storage(p) for p in model.parameters()}
    seen: set[int] = set()
    count, running = SavedCount(), [""]

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        key = _storage(tensor)
        if key not in weights and key not in seen and tensor.is_floating_point():
            seen.add(key)
            count.tensors.append(SavedTensor(running[-1], str(tensor.dtype).removeprefix(
                "torch."), tuple(tensor.shape), tensor.untyped_storage().nbytes()))
        return tensor

    def enter(name: str) -> None:
        running.append(name)

    def leave(*_: Any) -> None:  # returns None: the module's output stays its own
        running.pop()

    handles = []
    for name, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(lambda *_, name=name: enter(name)))
        handles.append(module.register_forward_hook(leave))
    ids = torch.zeros(batch, seq_len, dtype=torch.long, device=device)
    try:
        with contextlib.ExitStack() as stack:
            for guard in meta_guards(model):
                stack.enter_context(guard)
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
                model(input_ids=ids, labels=ids, use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    return count


def count_saved(config: dict[str, Any], batch: int, seq_len: int, attention: str,
                dtype: str = "bf16", device: str = "meta") -> SavedCount:
    """transformers' model of `config` at `dtype` with `attention` ('eager' or 'sdpa'),
    training mode, one forward's saved tensors."""
    model = build(config, device, attention).to(DTYPES[dtype])
    model.train()
    return saved_tensors(model, batch, seq_len)
