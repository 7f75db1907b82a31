"""`verify MODEL --memory`: the bytes transformers' model saves for the backward beside calc's
activation bytes for the same run (calc.verify.memory), part by part, the difference listed by
tensor. The report model needs no torch; counting imports it.

calc's side is calc.memory's activations at the same sequence length, micro-batch and dtype,
no recomputation, full training, no dropout, flash attention for SDPA and stored scores for
eager attention, and the loss's stored part only (the fp32 logits: --loss fp32), since a saved
tensor is what the backward keeps, not the transient gradients --loss hf adds at the peak.
"""

from __future__ import annotations

from importlib.util import find_spec

from pydantic import Field

from calc.document import Document
from calc.errors import CalcError, install
from calc.spec import ModelSpec
from calc.spec.model import Frozen

ATTENTIONS = ("eager", "sdpa")
PARTS = ("layers", "embedding", "output")


class MemoryCheck(Frozen):
    stack: str = Field(description="whose model ran: hf (transformers' own)")
    attention: str = Field(description="eager or sdpa")
    recompute: str
    finetune: str
    part: str = Field(description="layers, embedding, output (final norm, head, loss), total")
    saved_bytes: int = Field(description="storages saved for the backward, deduplicated")
    calc_bytes: int = Field(description="calc.memory's activation bytes of the part")
    exact: bool


class SavedRow(Frozen):
    attention: str
    part: str = Field(description="'layer 1' (a whole layer as representative) or 'output'")
    module: str
    dtype: str
    shape: list[int]
    bytes: int


class MemoryCheckReport(Document):
    model: str
    seq_len: int
    batch: int
    dtype: str
    device: str
    memory_check: list[MemoryCheck]
    calc_per_layer_bytes: dict[str, int] = Field(
        description="calc's one layer, one micro-batch, by attention")
    saved: list[SavedRow] = Field(description="what one layer and the output part saved")
    ok: bool
    conventions: list[str]


def verify_memory(spec: ModelSpec, hf_config: dict | None, seq_len: int, batch: int = 1,
                  device: str = "meta", dtype: str = "bf16") -> MemoryCheckReport:
    """transformers' saved tensors against calc's activation bytes, eager and SDPA."""
    if find_spec("transformers") is None:
        raise CalcError(f"verify --memory needs transformers: {install('hf')}")
    from calc.hf.export import hf_config_from_spec
    from calc.reports.memory import memory
    from calc.verify.memory import count_saved

    config = hf_config or hf_config_from_spec(spec)
    checks, saved, per_layer = [], [], {}
    for attention in ATTENTIONS:
        counted = count_saved(config, batch, seq_len, attention, dtype, device)
        parts = counted.by_part()
        found = {"layers": sum(v for k, v in parts.items() if k.startswith("layer ")),
                 "embedding": parts.get("embedding", 0), "output": parts.get("output", 0)}
        block = memory(spec, seq_len=seq_len, micro_batch=batch, dtype=dtype,
                       recompute="none", dropout=False,
                       flash_attention=attention != "eager").memory
        ours = {part: int(block.activations.get(part, 0)) for part in PARTS}
        per_layer[attention] = int(block.activations_per_layer_bytes or 0)
        for part in (*PARTS, "total"):
            mine = sum(ours.values()) if part == "total" else ours[part]
            theirs = sum(found.values()) if part == "total" else found[part]
            checks.append(MemoryCheck(stack="hf", attention=attention, recompute="none",
                                      finetune="full", part=part, saved_bytes=theirs,
                                      calc_bytes=mine, exact=mine == theirs))
        shown = "layer 1" if spec.n_layers > 1 else "layer 0"
        saved += [SavedRow(attention=attention, part=part, module=t.scope or "(loss)",
                           dtype=t.dtype, shape=list(t.shape), bytes=t.nbytes)
                  for part in (shown, "output") for t in counted.in_part(part)]
    return MemoryCheckReport(
        model=spec.name, seq_len=seq_len, batch=batch, dtype=dtype, device=device,
        memory_check=checks, calc_per_layer_bytes=per_layer, saved=saved,
        ok=all(check.exact for check in checks), conventions=CONVENTIONS)


CONVENTIONS = [
    "Saved: every floating-point tensor autograd packs in one training forward of "
    "transformers' model (labels = inputs, its loss included) under "
    "torch.autograd.graph.saved_tensors_hooks, once per storage, weights left out "
    "(calc.verify.memory).",
    "calc: calc.memory's activations at the same s, b and dtype, no recomputation or dropout, "
    "full training, the loss's stored fp32 logits (--loss fp32); flash attention for sdpa, "
    "stored s×s scores for eager.",
    "On the meta device torch's SDPA dispatches to its math kernel (no fused kernel there), "
    "which upcasts and saves the scores like eager attention; a GPU's flash or "
    "memory-efficient kernel saves only its output and log-sum-exp.",
    "Not compared yet: gradient checkpointing and LoRA/QLoRA adapters (the issue's other "
    "rows), and calc's reference model for configs transformers cannot build.",
]
