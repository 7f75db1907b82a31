"""`verify MODEL --memory`: the bytes transformers' model keeps for the backward beside calc's
activation bytes for the same run (calc.verify.memory), part by part, the difference listed by
tensor. The report model needs no torch; counting imports it.

calc's side is calc.memory's activations under --framework hf (what transformers' modules save,
calc.formulas.memory) at the same sequence length, micro-batch and dtype, full training, no
dropout; eager attention with its scores, SDPA as a GPU's flash kernel runs it; no
recomputation, and SDPA with every layer checkpointed (--recompute full); the loss's stored part
only (the fp32 log-softmax: --loss fp32), since a saved tensor is what the backward keeps, not
the transient gradients --loss hf adds at the peak; the int64 token ids left out on both sides.
"""

from __future__ import annotations

import tempfile
from importlib.util import find_spec
from typing import TYPE_CHECKING

from pydantic import Field

from calc.counting import TOKEN_ID_BYTES
from calc.document import Document
from calc.errors import CalcError, install
from calc.spec import ModelSpec
from calc.spec.model import Frozen

if TYPE_CHECKING:  # torch only when counting
    from calc.verify.memory import Run, SavedCount

PARTS = ("layers", "embedding", "output")
# torch 2.13's meta kernel of grouped_mm (_meta_registrations.py, _meta_grouped_mm_common)
# takes bf16 inputs alone; transformers' default experts run it (calc.verify.memory.EXPERTS)
MOE_DTYPE = "bf16"


class MemoryCheck(Frozen):
    stack: str = Field(description="whose model ran: hf (transformers' own)")
    attention: str = Field(description="eager or sdpa")
    recompute: str = Field(description="none, or full (every decoder layer checkpointed)")
    finetune: str
    part: str = Field(description="layers, embedding, output (final norm, head, loss), total")
    saved_bytes: int = Field(description="storages saved for the backward, deduplicated")
    calc_bytes: int = Field(description="calc.memory's activation bytes of the part")
    exact: bool


class SavedRow(Frozen):
    attention: str
    recompute: str
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
        description="calc's one layer, one micro-batch, by attention (no recomputation)")
    saved: list[SavedRow] = Field(description="what one layer and the output part saved")
    ok: bool
    conventions: list[str]


def verify_memory(spec: ModelSpec, hf_config: dict | None, seq_len: int, batch: int = 1,
                  device: str = "meta", dtype: str = "bf16",
                  adapters: bool = True, qlora: bool = True) -> MemoryCheckReport:
    """transformers' saved tensors against calc's activation bytes, eager and SDPA, with and
    without checkpointed layers, and with PEFT's LoRA adapters unless `adapters` is False:
    on a 16-bit base, and on a 4-bit one (QLoRA) unless `qlora` is False, where the dtype is
    bf16, bitsandbytes is installed and the CPU builds the model (QLORA_CPU_PARAMETERS)."""
    if find_spec("transformers") is None:
        raise CalcError(f"verify --memory needs transformers: {install('hf')}")
    from calc.evaluate import count_params
    from calc.hf.export import hf_config_from_spec
    from calc.hf.multimodal import is_multimodal, language_config
    from calc.verify.memory import QLORA_CPU_PARAMETERS, QLORA_DTYPE, count_saved, runs

    if spec.moe is not None and dtype != MOE_DTYPE:
        raise CalcError(f"verify --memory: --dtype {dtype} with MoE layers ({spec.name}): "
                        f"their experts are compared in {MOE_DTYPE} only, the one dtype "
                        f"torch 2.13's meta grouped_mm (transformers' default experts) takes")
    config = hf_config or hf_config_from_spec(spec)
    if is_multimodal(config):  # the language model calc counts, built alone
        config, _ = language_config(config, "verify --memory")
    ids = TOKEN_ID_BYTES * seq_len * batch  # int64: counted by calc, not by the verifier
    parameters = count_params(spec).total
    block_note = []
    if spec.shared_block is not None and adapters:  # PEFT's q,v and all-linear take the block
        adapters = False
        block_note = [f"{spec.name}'s shared block takes no adapters in calc (calc.spec.finetune"
                      f".resolve_targets): the LoRA and QLoRA runs are left out"]
    wanted = qlora and adapters and dtype == QLORA_DTYPE
    installed = find_spec("bitsandbytes") is not None
    qlora = wanted and installed and parameters <= QLORA_CPU_PARAMETERS
    notes = block_note + ([QLORA_CONVENTION.format(QLORA_CPU_PARAMETERS)] if qlora else
                          [qlora_skipped(spec.name, parameters, installed)] if wanted else [])
    checks, saved, per_layer = [], [], {}
    with tempfile.TemporaryDirectory(prefix="calc-qlora-") as checkpoint:
        unadapted = set()  # LoRA targets PEFT's Llama-style names do not find: not quantised
        for run in runs(config, dtype, adapters, qlora):
            if run.quantised and run.lora in unadapted:
                continue
            counted = count_saved(config, batch, seq_len, run, dtype, device, checkpoint)
            if counted is None:
                unadapted.add(run.lora)
                continue
            checks += compare_run(spec, run, counted, seq_len, batch, dtype, ids, per_layer)
            if run.lora is None:  # the tensors of one layer, the positions and the output
                shown = "layer 1" if spec.n_layers > 1 else "layer 0"
                saved += [SavedRow(attention=run.attention, recompute=run.recompute,
                                   part=part, module=t.scope or "(loss)", dtype=t.dtype,
                                   shape=list(t.shape), bytes=t.nbytes)
                          for part in (shown, "embedding", "output")
                          for t in counted.in_part(part)]
    return MemoryCheckReport(
        model=spec.name, seq_len=seq_len, batch=batch, dtype=dtype, device=device,
        memory_check=checks, calc_per_layer_bytes=per_layer, saved=saved,
        ok=all(check.exact for check in checks),
        conventions=CONVENTIONS + notes + ([MOE_CONVENTION] if spec.moe else []))


def qlora_skipped(model: str, parameters: int, installed: bool) -> str:
    """The line saying why a bf16 check has no QLoRA rows."""
    from calc.verify.memory import QLORA_CPU_PARAMETERS

    if not installed:
        return f"QLoRA not compared: bitsandbytes is not installed ({install('hf')})."
    return (f"QLoRA not compared: {model} has {parameters:,} parameters, above the "
            f"{QLORA_CPU_PARAMETERS:,} up to which its 4-bit model is built on the CPU "
            f"(bitsandbytes' 4-bit layers have no meta kernels).")


def compare_run(spec: ModelSpec, run: Run, counted: SavedCount, seq_len: int, batch: int,
                dtype: str, ids: int, per_layer: dict[str, int]) -> list[MemoryCheck]:
    """One run's parts against calc.memory's activations for the same run (`ids`: the token
    ids' bytes, left out of calc's embedding part; `per_layer` takes calc's one layer)."""
    from calc.reports.memory import memory
    from calc.verify.memory import LORA_RANK

    parts = counted.by_part()
    found = {"layers": sum(v for k, v in parts.items() if k.startswith("layer ")),
             "embedding": parts.get("embedding", 0), "output": parts.get("output", 0)}
    method = "qlora" if run.quantised else "lora"
    adapters = ({} if run.lora is None else
                dict(finetune=method, lora_rank=LORA_RANK, lora_targets=run.lora))
    block = memory(spec, seq_len=seq_len, micro_batch=batch, dtype=dtype,
                   recompute=run.recompute, dropout=False, framework="hf", loss="fp32",
                   flash_attention=run.attention != "eager", **adapters).memory
    ours = {part: int(block.activations.get(part, 0)) for part in PARTS}
    ours["layers"] += int(block.activations.get("adapters", 0))
    ours["embedding"] -= ids
    if run.recompute == "none" and run.lora is None:
        per_layer[run.attention] = int(block.activations_per_layer_bytes or 0)
    checks = []
    for part in (*PARTS, "total"):
        mine = sum(ours.values()) if part == "total" else ours[part]
        theirs = sum(found.values()) if part == "total" else found[part]
        checks.append(MemoryCheck(stack="hf", attention=run.attention, recompute=run.recompute,
                                  finetune=run.finetune, part=part, saved_bytes=theirs,
                                  calc_bytes=mine, exact=mine == theirs))
    return checks

CONVENTIONS = [
    "Saved: every floating-point tensor autograd packs in one training forward of "
    "transformers' model (labels = inputs, its loss included) under "
    "torch.autograd.graph.saved_tensors_hooks, once per storage, weights and integer tensors "
    "left out; with recomputation, the inputs each checkpointed layer holds for its recompute "
    "(calc.verify.memory).",
    "calc: calc.memory's activations under --framework hf (transformers' modules) at the same "
    "s, b and dtype, no dropout, full training, the loss's stored fp32 log-softmax (--loss "
    "fp32); its int64 token ids (8 B a token) left out, as the verifier leaves out integers.",
    "SDPA runs torch's flash operator wherever a GPU would (16-bit, no mask, head width ≤ "
    "256): on the meta device torch would pick its math kernel, which upcasts and keeps the "
    "scores as no GPU run does.",
    "The rotary tables (cos, sin) are made once a forward and kept by every layer: counted in "
    "the embedding part.",
    "SDPA on the CPU (--device cpu, and QLoRA) runs torch's CPU flash operator, which keeps "
    "the same tensors as the GPU's (query, key, value, output, the fp32 log-sum-exp).",
    "Not compared yet: SDPA in fp32 (a GPU runs its memory-efficient kernel there), a type "
    "transformers runs without SDPA (eager only), MoE layers in fp16 or fp32 (torch's meta "
    "grouped_mm takes bf16 alone), QLoRA in fp16 or fp32 or after PEFT's "
    "prepare_model_for_kbit_training (which casts the embedding, norms and head, and so the "
    "activations, to fp32), LoRA without PEFT installed (pip install peft), and calc's "
    "reference model for configs transformers cannot build.",
    "LoRA: PEFT's adapters (rank 8, no dropout) on q,v and on every projection, fp32 on a 16-bit "
    "base as get_peft_model makes them, the embedding's output taking gradients "
    "(enable_input_require_grads, as under checkpointing and k-bit preparation); on models "
    "whose projections have Llama's names (q_proj, ..., down_proj).",
]
MOE_CONVENTION = (
    "MoE layers: transformers' default experts (grouped_mm, integrations/moe.py), as a GPU "
    "training run gets them, keeping tokens·top_k rows whatever the routing; calc's hf "
    "accounting leaves out two router choices its spec does not hold, a renormalised top-k's "
    "fp32 values and their sum (Mixtral; Qwen's norm_topk_prob) and Mixtral's fp32 routing "
    "weights, which the check lists as differences.")
QLORA_CONVENTION = (
    "QLoRA: transformers' from_pretrained with bitsandbytes 0.50.2's 4-bit NormalFloat, "
    "double quantisation and bf16 compute (every projection a Linear4bit, the LM head not), "
    "dtype bf16, PEFT's adapters on every projection (QLoRA §4); built with real weights on "
    "the CPU, bitsandbytes' 4-bit layers having no meta kernels, for models of at most {:,} "
    "parameters; calc: --finetune qlora (nf4, double quantisation) under --framework hf.")
