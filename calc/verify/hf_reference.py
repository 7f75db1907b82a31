"""transformers' own model of a config.json, built on the meta device and counted by torch.

The cross-check nobody here wrote: `AutoModelForCausalLM.from_config` under
`torch.device("meta")` (no weights, no hub, no initialisation cost: Llama 3.1 405B builds in
about a second), parameters counted by `numel` (a tied tensor once), forward FLOPs by
`torch.utils.flop_counter.FlopCounterMode` over input_ids of shape [1, T]. Two switches make
the forward countable, both as of transformers 5.24.0:

- `attn_implementation="eager"`: attention as explicit matmuls (FlopCounterMode has no formula
  for SDPA's fused CPU kernel and counts it 0).
- `experts_implementation="batched_mm"`: the default "grouped_mm" path
  (transformers/integrations/moe.py) calls torch._grouped_mm, which FlopCounterMode has no
  formula for, so expert FLOPs vanish; "eager" loops over the experts a token hit, which needs
  real routing values. batched_mm gathers each token's top-k experts' weights and runs one
  bmm per projection: exactly top-k experts per token, counted as bmm.

Two guards, for values meta tensors do not have. transformers' packed-sequence check
(masking_utils.find_packed_sequence_indices) reads a tensor's value; for one unpadded sequence
with positions 0..T-1 its answer is always "not packed" (None), so that answer is given directly.
JetMoE's router (JetMoeTopKGating) turns its choice into a Python list of tokens per expert; on
meta it is given a balanced choice (slot j of token t to expert (t·k + j) mod E: exactly k
experts a token, as calc.verify.model routes on meta), after its own router product.

LongCat-Flash's router picks from FFN and zero-computation experts, so the FLOPs of its experts
depend on the routing; its choice (LongcatFlashTopkRouter.get_topk_indices) is replaced on every
device by a balanced one with exactly calc's expected k_f = top_k·E/(E + E_0) FFN experts a
token (FFN expert (t·k_f + j) mod E, then zero experts), after its own router product and
softmax. Its experts (LongcatFlashExperts) loop over the experts hit with torch.nonzero and
.item(), values the meta device does not have; on meta the loop is given the tokens each FFN
expert gets under that routing (Python numbers) and runs the same products on the same shapes:
F.linear with gate_up_proj[e], the activation, F.linear with down_proj[e], each expert once.
tests/test_hf_reference.py checks that count against the real loop on the CPU.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import torch
import torch.nn.functional as F
import transformers
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from transformers import masking_utils
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

from calc.hf import read_hf_config
from calc.hf.multimodal import is_multimodal
from calc.verify.meta_kernels import cpp_meta_kernels

# Keys dropped before building. quantization_config: from_config does not quantise, and the
# key would only make transformers look for kernels (DeepSeek-V3 ships fp8). auto_map: names
# the authors' remote modeling code; the cross-check is transformers' own class, never code
# from the hub.
_NOT_ARCHITECTURE = ("quantization_config", "auto_map")
# Dynamic NTK RoPE (InternLM3's rope_scaling) rescales its frequencies from the largest
# position id, a value (Tensor.item) meta tensors lack. RoPE holds no parameters and no matrix
# product, so the cross-check builds the model with plain RoPE.
_ROPE_KEYS = ("rope_scaling", "rope_parameters")


def _dynamic_rope(value: Any) -> bool:
    return isinstance(value, dict) and "dynamic" in (value.get("rope_type"), value.get("type"))


def _config_dict(config: dict[str, Any] | str | Path) -> dict[str, Any]:
    data = config if isinstance(config, dict) else read_hf_config(config)
    return {key: value for key, value in data.items() if key not in _NOT_ARCHITECTURE
            and not (key in _ROPE_KEYS and _dynamic_rope(value))}


def _hf_config(data: dict[str, Any]) -> Any:
    """transformers' config object of a config.json dict (_config_dict's)."""
    fields = {key: value for key, value in data.items() if key != "model_type"}
    return transformers.AutoConfig.for_model(data["model_type"], **fields)


class LanguageModel(nn.Module):
    """A multimodal model's language model and LM head, the part calc counts
    (calc.hf.multimodal): input_ids → logits without the vision or audio towers."""

    def __init__(self, model: nn.Module):
        super().__init__()
        inner = model.model
        self.language_model = getattr(inner, "language_model", None) or inner.text_model
        self.lm_head = model.lm_head

    def forward(self, input_ids: torch.Tensor, use_cache: bool = False) -> torch.Tensor:
        hidden = self.language_model(input_ids=input_ids, use_cache=use_cache).last_hidden_state
        return self.lm_head(hidden)


# Types whose forward transformers cannot run on the meta device, and why: their FLOPs are
# compared on small configs with real tensors (device "cpu").
META_FORWARD_UNRUNNABLE = {
    "dbrx": "DbrxExperts loops over the experts its tokens picked (torch.nonzero), whose size "
            "the meta device cannot know",
    **dict.fromkeys(("qwen4_exp_text", "qwen4_exp"), (
        "Qwen4ExpTextQSAIndexer finds each query's visible keys by torch.nonzero, whose size "
        "the meta device cannot know")),
}


# Language models of multimodal configs that transformers' auto classes build only inside
# their wrapper: the class that builds the text model alone (modeling_emu3.py,
# modeling_mllama.py).
_TEXT_ONLY_CLASSES = {"emu3_text_model": "Emu3ForCausalLM",
                      "mllama_text_model": "MllamaForCausalLM"}


# Wrappers whose towers transformers builds only with a package calc does not install: their
# language model and head through the text class that holds the same two parts. Gemma 3n's
# vision tower is a timm model (Gemma3nModel: AutoModel.from_config(vision_config), a
# TimmWrapperModel); its language_model is Gemma3nTextModel and Gemma3nForConditionalGeneration's
# lm_head Linear(text hidden_size, text vocab_size) tied by the wrapper's tie_word_embeddings,
# which is Gemma3nForCausalLM's model and head (modeling_gemma3n.py, transformers 5.24.0).
_TOWERS_APART = {"gemma3n": "Gemma3nForCausalLM"}


def _text_apart(data: dict[str, Any], device: str, attention: str) -> nn.Module:
    """A _TOWERS_APART wrapper's language model and head, tied as the wrapper ties them."""
    wrapper = _hf_config(data)
    text = wrapper.text_config
    text.tie_word_embeddings = wrapper.tie_word_embeddings
    with torch.device(device):
        return getattr(transformers, _TOWERS_APART[data["model_type"]])._from_config(
            text, attn_implementation=attention)


def build(config: dict[str, Any] | str | Path, device: str = "meta",
          attention: str = "eager", experts: str | None = "batched_mm") -> nn.Module:
    """transformers' causal LM for `config` (a config.json dict or path), on the meta device
    (or, for a small config, with real tensors on "cpu"); for a multimodal config, its
    LanguageModel. `experts`: the MoE experts' implementation (None: transformers' default)."""
    data = _config_dict(config)
    model_type = data["model_type"]
    hf_config = _hf_config(data)
    multimodal = is_multimodal(data)
    if model_type in _TOWERS_APART:
        return _text_apart(data, device, attention)
    # an image-text wrapper through its own auto class; an audio one (moss_transcribe_diarize)
    # is in the causal-LM mapping
    auto = (transformers.AutoModelForImageTextToText
            if multimodal and model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
            else transformers.AutoModelForCausalLM)
    with torch.device(device):
        if model_type in _TEXT_ONLY_CLASSES:  # a text config no auto class maps
            model = getattr(transformers, _TEXT_ONLY_CLASSES[model_type])._from_config(
                hf_config, attn_implementation=attention)
        else:
            model = auto.from_config(hf_config, attn_implementation=attention,
                                     experts_implementation=experts)
    if multimodal and not hasattr(model, "model"):  # Llama 4: the wrapper holds a causal LM
        return model.language_model
    return LanguageModel(model) if multimodal else model


def supports_sdpa(config: dict[str, Any]) -> bool:
    """Whether transformers runs the causal LM of `config` (a text config.json dict) with
    attn_implementation="sdpa" (its class's _supports_sdpa)."""
    model_class = transformers.AutoModelForCausalLM._model_mapping.get(
        type(_hf_config(_config_dict(config))), None)
    return bool(model_class and model_class._supports_sdpa)


def parameters_by_module(model: nn.Module) -> dict[str, int]:
    """Unique parameters per module kind, layer indices folded: `model.layers.self_attn.q_proj`
    sums every layer's q_proj. A tied tensor counts once, under its first name."""
    counts: dict[str, int] = defaultdict(int)
    for name, parameter in model.named_parameters():  # skips a tied duplicate
        module = re.sub(r"\.\d+(?=\.|$)", "", name.rpartition(".")[0])
        counts[module] += parameter.numel()
    return dict(counts)


def _balanced_gating(gating: nn.Module, hidden_states: torch.Tensor) -> tuple:
    """JetMoeTopKGating.forward on the meta device: its router product, then exactly top_k
    experts a token, balanced over the experts (the shapes its callers need)."""
    logits = gating.layer(hidden_states).float()
    slots = hidden_states.shape[0] * gating.top_k
    loads = [slots // gating.num_experts + (e < slots % gating.num_experts)
             for e in range(gating.num_experts)]
    order = torch.empty(slots, dtype=torch.long, device=hidden_states.device)
    gates = torch.empty(slots, dtype=hidden_states.dtype, device=hidden_states.device)
    return order, order, gates, loads, logits


def _expected_choice(router: nn.Module, scores: torch.Tensor) -> torch.Tensor:
    """LongcatFlashTopkRouter.get_topk_indices with calc's expected share of FFN experts: token
    t takes FFN experts (t·k_f + j) mod E for j < k_f and zero experts E + (t·(k − k_f) + j)
    mod E_0 for the rest, k_f = k·E/(E + E_0) (module docstring)."""
    pool, k = router.n_routed_experts, router.top_k
    ffn = router.num_experts  # config.num_local_experts: the FFN experts
    zero, k_ffn = pool - ffn, k * ffn // pool
    tokens = torch.arange(scores.shape[0], device="cpu")[:, None]
    picked = [(tokens * k_ffn + j) % ffn for j in range(k_ffn)]
    picked += [ffn + (tokens * (k - k_ffn) + j) % zero for j in range(k - k_ffn)]
    return torch.cat(picked, dim=1).to(scores.device)


def _experts_on_meta(experts: nn.Module, hidden_states: torch.Tensor,
                     top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> torch.Tensor:
    """LongcatFlashExperts.forward on the meta device: its loop over the FFN experts hit, each
    given the tokens _expected_choice sends it (slot s = t·k_f + j of the T·k_f FFN slots goes
    to expert s mod E), with its products: F.linear(x, gate_up_proj[e]), the activation of the
    gate times up, F.linear(·, down_proj[e]), scaled by the routing weight and added back. The
    zero experts' identity multiplies nothing."""
    tokens, k = top_k_index.shape
    ffn, pool = experts.num_routed_experts, experts.total_experts
    loads = [0] * ffn
    for slot in range(tokens * (k * ffn // pool)):
        loads[slot % ffn] += 1
    final = torch.zeros_like(hidden_states)
    for expert, load in enumerate(loads):
        if not load:
            continue
        state = hidden_states[:load]
        gate, up = F.linear(state, experts.gate_up_proj[expert]).chunk(2, dim=-1)
        out = F.linear(experts.act_fn(gate) * up, experts.down_proj[expert])
        out = out * top_k_weights[:load, :1]
        index = torch.empty(load, dtype=torch.long, device=hidden_states.device)
        final = final.index_add(0, index, out.to(hidden_states.dtype))
    return final


def _masked_embedder_on_meta(embedder: nn.Module, hidden_states: torch.Tensor,
                             lm_head_weight: torch.Tensor) -> torch.Tensor:
    """Gemma4AssistantMaskedEmbedder.forward on the meta device: its products (the centroid
    logits, then the state times the top_k·V/C gathered head rows) on the same shapes; the
    fill value of the unscored tokens, selected_logits.min().item() − 1, is a value meta
    tensors lack and multiplies nothing, so it is 0 here."""
    batch, seq_len = hidden_states.shape[:2]
    centroid_logits = embedder.centroids(hidden_states)
    _, top = torch.topk(centroid_logits, k=embedder.centroid_intermediate_top_k, dim=-1)
    clusters = embedder.token_ordering.long().view(embedder.num_centroids,
                                                   embedder.vocab_size_per_centroid)
    selected = clusters[top]
    rows = lm_head_weight[selected.reshape(-1)].view(
        batch, seq_len, embedder.centroid_intermediate_top_k * embedder.vocab_size_per_centroid,
        embedder.hidden_size)
    logits = (hidden_states.unsqueeze(-2) @ rows.transpose(-1, -2)).squeeze(-2)
    output = torch.zeros(batch, seq_len, embedder.vocab_size, dtype=hidden_states.dtype,
                         device=hidden_states.device)
    return output.scatter_(dim=-1, index=selected.view(batch, seq_len, -1), src=logits)


# Gemma 4's drafters (modeling_gemma4_assistant.py, modeling_gemma4_unified_assistant.py): a
# forward reads the target's [embedding, hidden state] (inputs_embeds, 2·backbone_hidden_size
# wide) and its keys and values (shared_kv_states), not input_ids
_DRAFTERS = ("Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM")


def _forward_inputs(model: nn.Module, ids: torch.Tensor) -> dict[str, Any]:
    """The keywords of one forward over `ids`' T tokens. A drafter is given zeros for the
    target's states, 2·backbone_hidden_size wide, and the target's keys and values of the T
    tokens for each layer type, shaped as its layers read them (heads // num_key_value_groups
    KV heads of the layer's head_dim); logits_to_keep=None keeps every token through its
    kv-shared layers (Gemma4TextModel._maybe_slice_kv_shared_inputs slices an integer's)."""
    if type(model).__name__ not in _DRAFTERS:
        return {"input_ids": ids, "use_cache": False}
    tokens = ids.shape[1]
    states = ids.new_zeros(1, tokens, 2 * model.backbone_hidden_size,
                           dtype=model.pre_projection.weight.dtype)
    heads = model.config.get_text_config().num_attention_heads
    shared = {}
    for layer in model.model.layers:
        attention = layer.self_attn
        if attention.layer_type not in shared:
            keys = states.new_zeros(1, heads // attention.num_key_value_groups, tokens,
                                    attention.head_dim)
            shared[attention.layer_type] = (keys, keys)
    # create_attention_masks reads both types' (a target has both); a type no layer here has
    # only sizes its mask
    for layer_type in ("full_attention", "sliding_attention"):
        shared.setdefault(layer_type, next(iter(shared.values())))
    return {"inputs_embeds": states, "shared_kv_states": shared, "logits_to_keep": None}


def meta_guards(model: nn.Module) -> list[Any]:
    """The patches a forward on the meta device needs (module docstring), and LongCat-Flash's
    routing with calc's expected share of FFN experts on any device."""
    guards = [mock.patch.object(masking_utils, "find_packed_sequence_indices",
                                lambda position_ids: None)]
    from transformers.models.longcat_flash import modeling_longcat_flash

    guards.append(mock.patch.object(modeling_longcat_flash.LongcatFlashTopkRouter,
                                    "get_topk_indices", _expected_choice))
    if next(model.parameters()).is_meta:
        from transformers.models.jetmoe import modeling_jetmoe

        guards.append(mock.patch.object(modeling_jetmoe.JetMoeTopKGating, "forward",
                                        _balanced_gating))
        guards.append(mock.patch.object(modeling_longcat_flash.LongcatFlashExperts, "forward",
                                        _experts_on_meta))
        from transformers.models.gemma4_assistant import modeling_gemma4_assistant
        from transformers.models.gemma4_unified_assistant import (
            modeling_gemma4_unified_assistant,
        )

        for module, name in ((modeling_gemma4_assistant, "Gemma4AssistantMaskedEmbedder"),
                             (modeling_gemma4_unified_assistant,
                              "Gemma4UnifiedAssistantMaskedEmbedder")):
            guards.append(mock.patch.object(getattr(module, name), "forward",
                                            _masked_embedder_on_meta))
    return guards


def forward_flops(model: nn.Module, seq_len: int) -> tuple[int, dict[str, int]]:
    """FlopCounterMode over one forward of input_ids [1, seq_len]: (total, {operator: FLOPs})."""
    ids = torch.zeros(1, seq_len, dtype=torch.long, device=next(model.parameters()).device)
    # Parameter views taken under no_grad (DbrxExperts') would still require grad on real
    # tensors, and FlopCounterMode's module tracker fails on them: nothing here trains.
    model.requires_grad_(False)
    with contextlib.ExitStack() as stack:
        for guard in meta_guards(model):
            stack.enter_context(guard)
        stack.enter_context(cpp_meta_kernels())
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(**_forward_inputs(model, ids))
    by_operator = {str(op): int(n) for op, n in counter.get_flop_counts()["Global"].items()}
    return int(counter.get_total_flops()), by_operator


@dataclass(frozen=True)
class HFCount:
    """transformers' counts of one config: parameters and forward FLOPs at seq_len."""

    model_type: str
    params: int
    params_by_module: dict[str, int]
    seq_len: int
    forward: int | None  # FLOPs of one forward over seq_len tokens (None: not run)
    forward_by_operator: dict[str, int]
    build_seconds: float
    count_seconds: float


def count(config: dict[str, Any] | str | Path, seq_len: int = 128,
          device: str = "meta") -> HFCount:
    """Build transformers' model of `config` on `device` and count parameters and forward
    FLOPs (on meta, no forward for META_FORWARD_UNRUNNABLE's types: forward None)."""
    data = _config_dict(config)
    start = time.perf_counter()
    model = build(data, device)
    built = time.perf_counter()
    by_module = parameters_by_module(model)
    total: int | None
    if device == "meta" and data["model_type"] in META_FORWARD_UNRUNNABLE:
        total, by_operator = None, {}
    else:
        total, by_operator = forward_flops(model, seq_len)
    return HFCount(data["model_type"], sum(by_module.values()), by_module, seq_len, total,
                   by_operator, built - start, time.perf_counter() - built)


def hf_parameter_count(config: dict[str, Any] | str | Path) -> int:
    """transformers' unique parameter count of `config` (a tied tensor once)."""
    return sum(parameters_by_module(build(config)).values())


def hf_forward_flops(config: dict[str, Any] | str | Path,
                     seq_len: int = 128) -> tuple[int, dict[str, int]]:
    """FlopCounterMode's forward FLOPs of transformers' model: (total, {operator: FLOPs})."""
    return forward_flops(build(config), seq_len)


def lora_parameters(model: nn.Module, rank: int, pattern: str | None = None) -> int:
    """LoRA's trainable parameters on transformers' model, as PEFT builds them: r·(in + out)
    for each nn.Linear whose name `pattern` (a regular expression) matches; without a pattern,
    PEFT's `all-linear`: every nn.Linear but the output layer (get_output_embeddings)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    total = 0
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear) or module is head:
            continue
        if pattern is None or re.search(pattern, name):
            total += rank * (module.in_features + module.out_features)
    return total
