"""What a training forward really keeps for the backward: every tensor autograd packs under
torch.autograd.graph.saved_tensors_hooks, counted once per storage, attributed to the module
that was running (a decoder layer, the embedding, the final norm and LM head with the loss).

transformers' own model of the config runs one forward with labels (its loss included) at the
training dtype, on the meta device (shapes only, any size) or the CPU. Weights saved for input
gradients are model states, not activations, and are left out; so are integer tensors (the
token ids and labels, which calc counts apart, and a kernel's random-number state). Storage
identity (the StorageImpl behind a tensor, which the meta device has too) deduplicates views: a
tensor split into q, k and v is one storage.

Two things a GPU run keeps that a meta forward would not show as it is:
- SDPA: on the meta device torch dispatches scaled_dot_product_attention to its math kernel,
  which upcasts and keeps the scores; a GPU runs the flash kernel wherever it can (16-bit
  inputs, no mask, head width ≤ 256, equal query/key and value widths). `flash_sdpa` calls
  torch's own flash operator there (aten._scaled_dot_product_flash_attention, whose meta kernel
  and autograd formula are torch's), so what it keeps is what the GPU's kernel keeps. On the
  CPU, where that operator has no kernel, torch's CPU flash operator
  (aten._scaled_dot_product_flash_attention_for_cpu) keeps the same floating-point tensors:
  query, key, value, output and the fp32 log-sum-exp, b·h·s (torch 2.13's autograd formulas;
  tests/test_verify_memory.py compares the two devices).
- Gradient checkpointing: transformers checkpoints each decoder layer without re-entry
  (use_reentrant=False), which keeps the layer's inputs alive for the recompute instead of
  packing tensors; those inputs (the hidden states, the rotary tables) are counted as the
  checkpoint's.
QLoRA's base runs bitsandbytes' 4-bit layers, which from_pretrained quantises with real
weights: those runs are built on the CPU at any --device (quantised_model).
MoE experts run transformers' default, grouped_mm (EXPERTS), on the meta device as on a GPU.
The rotary embedding's cos and sin tables, made once a forward and kept by every layer, are
attributed to the embedding part (positions), not to the first layer that keeps them.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from torch import nn

from calc.spec.finetune import ALL_LINEAR, PEFT_MODULES
from calc.verify.hf_reference import build, meta_guards, supports_sdpa

# a decoder layer's module: model.layers.N (most types), transformer.h.N (GPT-2, Falcon, BLOOM),
# transformer.blocks.N (MPT)
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d+)(?:\.|$)")
_EMBEDDINGS = ("embed", "wte", "wpe", "rotary_emb")  # token and position embeddings' modules
_POSITIONS = "rotary_emb"  # the module whose tables every layer keeps (embedding part)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# What torch's flash kernel takes (a GPU's SDPA picks it first where it can): 16-bit inputs,
# no attention mask, head widths ≤ 256 (torch 2.13 sdp_utils.cpp check_head_dim_size_flash).
_FLASH_DTYPES = (torch.float16, torch.bfloat16)
_FLASH_MAX_HEAD = 256
# The experts' implementation a training run gets: transformers' own default (None), which in
# 5.24.0 is "grouped_mm" for a type whose experts can switch (modeling_utils.py,
# PreTrainedModel.get_correct_experts_implementation; "eager" for the others, and a dense
# model refuses an explicit "grouped_mm"). integrations/moe.py's _grouped_mm calls
# torch.nn.functional.grouped_mm on a CUDA GPU of compute capability 8.0 or more
# (_can_use_grouped_mm) and on the meta device alike, whose autograd formula keeps its input
# and the expert weights (a parameter): every tensor the experts keep has S = tokens·top_k
# rows whatever the routing, so the meta forward's bytes are a GPU's.
EXPERTS = None


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
    return "embedding" if any(name in scope for name in _EMBEDDINGS) else "output"


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage()._cdata


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    """The tensors in a module's argument (tensors, tuples and lists of them)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _tensors(item)


@contextlib.contextmanager
def flash_sdpa() -> Iterator[None]:
    """Within the block, scaled_dot_product_attention runs torch's flash operator wherever a
    GPU's SDPA would pick the flash kernel (module docstring); elsewhere torch's own choice."""
    original = torch.nn.functional.scaled_dot_product_attention

    def sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
             attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
             is_causal: bool = False, scale: float | None = None,
             enable_gqa: bool = False) -> torch.Tensor:
        flash = (attn_mask is None and query.dtype in _FLASH_DTYPES
                 and query.shape[-1] == key.shape[-1] == value.shape[-1] <= _FLASH_MAX_HEAD
                 and (enable_gqa or key.shape[1] == query.shape[1]))
        if not flash:
            return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                            enable_gqa=enable_gqa)
        if query.device.type == "cpu":  # the CPU's flash kernel: the same tensors kept
            return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                query, key, value, dropout_p, is_causal, scale=scale)[0]
        return torch.ops.aten._scaled_dot_product_flash_attention(
            query, key, value, dropout_p, is_causal, False, scale=scale)[0]

    with mock.patch.object(torch.nn.functional, "scaled_dot_product_attention", sdpa):
        yield


def saved_tensors(model: nn.Module, batch: int, seq_len: int) -> SavedCount:
    """The storages one training forward of `batch` × `seq_len` tokens (labels = the inputs)
    keeps for the backward, weights and integer tensors left out: those autograd saves, and
    the inputs a checkpointed layer holds for its recompute."""
    device = next(model.parameters()).device
    weights = {_storage(p) for p in model.parameters()}
    seen: set[int] = set()
    tables: dict[int, str] = {}  # the rotary tables' storages: their module
    count, running = SavedCount(), [""]
    checkpointed = getattr(model, "is_activation_checkpointing", False)

    def keep(tensor: torch.Tensor, scope: str) -> None:
        key = _storage(tensor)
        if key not in weights and key not in seen and tensor.is_floating_point():
            seen.add(key)
            count.tensors.append(SavedTensor(tables.get(key, scope), str(tensor.dtype)
                                             .removeprefix("torch."), tuple(tensor.shape),
                                             tensor.untyped_storage().nbytes()))

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        keep(tensor, running[-1])
        return tensor

    def enter(name: str, module: nn.Module, args: tuple, kwargs: dict) -> None:
        running.append(name)
        if checkpointed and getattr(module, "gradient_checkpointing", False):
            for tensor in _tensors((args, tuple(kwargs.values()))):
                keep(tensor, name)

    def leave(name: str, output: Any) -> None:  # returns None: the output stays its own
        if name.endswith(_POSITIONS):
            tables.update((_storage(t), name) for t in _tensors(output))
        running.pop()

    handles = []
    for name, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(
            lambda module, args, kwargs, name=name: enter(name, module, args, kwargs),
            with_kwargs=True))
        handles.append(module.register_forward_hook(
            lambda _module, _args, output, name=name: leave(name, output)))
    ids = torch.zeros(batch, seq_len, dtype=torch.long, device=device)
    try:
        with contextlib.ExitStack() as stack:
            for guard in meta_guards(model):
                stack.enter_context(guard)
            stack.enter_context(flash_sdpa())
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
                model(input_ids=ids, labels=ids, use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    return count


@dataclass(frozen=True)
class Run:
    """One training forward compared: its attention, recomputation and adapters."""

    attention: str  # eager or sdpa
    recompute: str  # none, or full: every decoder layer checkpointed
    lora: str | None = None  # None (full training), or the LoRA targets ("q,v")
    quantised: bool = False  # QLoRA: the base in bitsandbytes' 4-bit layers (quantised_model)

    @property
    def finetune(self) -> str:
        if self.lora is None:
            return "full"
        return f"{'qlora' if self.quantised else 'lora'} {self.lora}"


# The adapters compared: PEFT's default targets, and every projection (all-linear)
LORA_RUNS = ("q,v", ALL_LINEAR)
LORA_RANK = 8  # PEFT's LoraConfig default
_SHARED_GATE = "shared_expert_gate"  # the shared experts' scalar gate, nn.Linear(d, 1)


def runs(config: dict[str, Any], dtype: str, adapters: bool = True,
         qlora: bool = False) -> list[Run]:
    """The runs compared for `config` at `dtype`: eager attention and SDPA, each without and
    with every layer checkpointed; SDPA where a GPU's SDPA would run the flash kernel (16-bit)
    and transformers offers SDPA for the type; each also with PEFT's LoRA adapters when
    `adapters` and PEFT is installed, and again on a 4-bit base when `qlora` (QLORA's recipe
    computes in bf16: bf16 runs only)."""
    compared = [Run("eager", "none"), Run("eager", "full")]
    if DTYPES[dtype] in _FLASH_DTYPES and supports_sdpa(config):
        compared += [Run("sdpa", "none"), Run("sdpa", "full")]
    if not adapters or find_spec("peft") is None:
        return compared
    lora = [Run(run.attention, run.recompute, targets) for run in compared
            for targets in LORA_RUNS]
    if qlora and dtype == QLORA_DTYPE:
        lora += [Run(run.attention, run.recompute, QLORA_TARGETS, True) for run in compared]
    return compared + lora


def with_adapters(model: nn.Module, targets: str) -> nn.Module | None:
    """`model` with PEFT's LoRA adapters (rank LORA_RANK, no dropout) on `targets`, its
    embedding's output taking gradients as transformers makes it under checkpointing and PEFT's
    k-bit preparation (so that the first layer keeps what every other keeps); None when the
    model names its projections otherwise (GPT-2's c_attn)."""
    from peft import LoraConfig, get_peft_model

    on = set(PEFT_MODULES.values()) if targets == ALL_LINEAR else set(targets.split(","))
    modules = [name for name, target in PEFT_MODULES.items() if target in on]
    names = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    # only a per-head output gate's g_proj, only Inkling's relative bias' r_proj, only
    # Inkling 2's sink_proj
    for optional in ("g_proj", "r_proj", "sink_proj"):
        if targets == ALL_LINEAR and optional not in names:
            modules.remove(optional)
    if targets == ALL_LINEAR and _SHARED_GATE in names:  # an nn.Linear too (Qwen2-MoE)
        modules.append(_SHARED_GATE)
    if not names.issuperset(modules):
        return None
    model.enable_input_require_grads()
    return get_peft_model(model, LoraConfig(r=LORA_RANK, target_modules=modules,
                                            lora_dropout=0.0))


# QLoRA as transformers and PEFT run it (Dettmers et al. 2023 §3; the QLoRA recipe of the
# transformers docs, bitsandbytes quantization): the checkpoint loaded by from_pretrained with
# a BitsAndBytesConfig, 4-bit NormalFloat with double quantisation and bf16 compute, dtype
# bf16, every nn.Linear but the LM head replaced by bitsandbytes' Linear4bit; then PEFT's
# adapters as under LoRA. bitsandbytes' 4-bit kernels have no meta implementation that
# from_pretrained's quantisation can run, so this model has real weights, on the CPU
# (bitsandbytes 0.50.2 ships CPU kernels for nf4): the compared model is limited to
# QLORA_CPU_PARAMETERS. Not run: PEFT's prepare_model_for_kbit_training, which casts the
# embedding, norms and head to fp32 and with them every activation; calc's hf stack models
# the model trained in its loaded dtype (calc.spec.memory.STACKS["hf"]).
QLORA_DTYPE = "bf16"
# Dettmers et al. 2023 §4, Figure 2: adapters on every linear layer of a block are what match
# 16-bit fine-tuning
QLORA_TARGETS = ALL_LINEAR
QLORA_CPU_PARAMETERS = 200_000_000


def quantised_model(config: dict[str, Any], attention: str, checkpoint: str) -> nn.Module:
    """transformers' model of `config` quantised as QLoRA's recipe above loads it, on the
    CPU, from `checkpoint` (a folder its bf16 weights are saved into first, when empty)."""
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    quantisation = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                      bnb_4bit_use_double_quant=True,
                                      bnb_4bit_compute_dtype=torch.bfloat16)
    with _quiet():
        if not any(Path(checkpoint).iterdir()):
            build(config, "cpu", attention).to(torch.bfloat16).save_pretrained(checkpoint)
        return AutoModelForCausalLM.from_pretrained(
            checkpoint, quantization_config=quantisation, dtype=torch.bfloat16,
            device_map="cpu", attn_implementation=attention)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """transformers' loading progress bars and notices off (its own switches)."""
    from transformers.utils import logging

    level, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(level)
        if bars:
            logging.enable_progress_bar()


def count_saved(config: dict[str, Any], batch: int, seq_len: int, run: Run,
                dtype: str = "bf16", device: str = "meta",
                checkpoint: str | None = None) -> SavedCount | None:
    """transformers' model of `config` at `dtype` as `run` trains it (its attention, every
    decoder layer checkpointed under recompute full, LoRA adapters; under QLoRA quantised on
    the CPU from `checkpoint`: quantised_model), training mode: one forward's saved tensors;
    None when the run's adapters have no module to sit on."""
    if run.quantised:
        if checkpoint is None:
            raise ValueError("a QLoRA run needs a checkpoint folder")
        model = quantised_model(config, run.attention, checkpoint)
    else:
        model = build(config, device, run.attention, EXPERTS).to(DTYPES[dtype])
    model.train()
    if run.recompute == "full":
        model.activation_checkpointing_enable()
    if run.lora is not None:
        with warnings.catch_warnings():  # PEFT reads the deprecated is_gradient_checkpointing
            warnings.simplefilter("ignore", FutureWarning)
            adapted = with_adapters(model, run.lora)
        if adapted is None:
            return None
        model = adapted
    return saved_tensors(model, batch, seq_len)
