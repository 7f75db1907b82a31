"""Fine-tuning options: full, LoRA (Hu et al. 2021) or QLoRA (Dettmers et al. 2023).

LoRA freezes the pretrained weights and trains, beside each chosen projection W ∈ R^{n_in×n_out},
a pair A ∈ R^{n_in×r}, B ∈ R^{r×n_out} (Hu et al. 2021 §4.1): r·(n_in + n_out) parameters. QLoRA
keeps the frozen projections in 4 bits, NF4 or FP4, one absmax constant per block of 64 weights,
and with double quantisation those constants in 8 bits with one fp32 constant per 256 of them
(Dettmers et al. 2023 §3: 32/64 = 0.5 bits of constants per weight → 8/64 + 32/(64·256) =
0.127). What each target means in a model, and which it lacks, is checked here against the
ModelSpec, so a bad target or rank is one line naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from calc.counting import BITS_PER_BYTE
from calc.errors import CalcError
from calc.spec.model import MAX_WIDTH, Frozen, ModelSpec

Method = Literal["full", "lora", "qlora"]
# The projections an adapter can sit on, named as the modules transformers builds (PEFT's
# target_modules select them by name): attention (q_proj, k_proj, v_proj, o_proj, and the per-head
# output gate's g_proj: LFM3, Laguna), the FFN of dense layers and the shared experts (up_proj,
# gate_proj, down_proj; LFM2's w3, w1, w2), Qwen2-MoE's and Qwen3-Next's shared_expert_gate, the
# Mamba mixer (in_proj, x_proj, dt_proj, out_proj), gated DeltaNet's (in_proj_qkvz, in_proj_ba,
# out_proj), lightning attention's (qkv_proj, output_gate, out_proj: MiniMaxLightningAttention), the
# short convolution's (in_proj, out_proj) and RWKV's (key, value, receptance: each both the
# time-mix's and the channel-mix's, whose key and value are the FFN's two matrices; output:
# RwkvSelfAttention's) and Griffin's recurrent block's (linear_y, linear_x, linear_out; its gates
# are plain parameters, which PEFT's target_modules do not select) and xLSTM's mLSTM's (q, k, v,
# named as PEFT names xLSTMLayer's modules, the same targets as attention's; ogate_preact,
# igate_preact, fgate_preact; out_proj). `experts`: each routed
# expert's up, gate and down matrices, which transformers 5 stores fused as parameters
# (gate_up_proj, down_proj), not as nn.Linear modules (PEFT's target_parameters adapts them).
# `r`: Inkling's r_proj, the relative bias' projection d → h·d_rel (attention.relative_logits);
# `sink`: Inkling 2's sink_proj d → h (attention.sink_proj)
ATTENTION_TARGETS = ("q", "k", "v", "o", "g", "r", "sink")
FFN_TARGETS = ("up", "gate", "down")
MIXER_TARGETS = ("in_proj", "x_proj", "dt_proj", "out_proj", "in_proj_qkvz", "in_proj_ba",
                 "qkv_proj", "output_gate", "key", "value", "receptance", "output",
                 "linear_y", "linear_x", "linear_out", "ogate_preact", "igate_preact",
                 "fgate_preact")
# Per-layer embeddings' nn.Linear modules as transformers names them (modeling_gemma4.py):
# each layer's gate and projection, and the model's projection of the embedding
PER_LAYER_TARGETS = ("per_layer_input_gate", "per_layer_projection",
                     "per_layer_model_projection")
# Gemma 3n's LAuReL and AltUp nn.Linear modules as transformers names them
# (modeling_gemma3n.py: Gemma3nTextLaurelBlock, Gemma3nTextAltUp, Gemma3nTextModel)
LAUREL_TARGETS = ("linear_left", "linear_right")
ALTUP_TARGETS = ("modality_router", "prediction_coefs", "correction_coefs", "altup_projections",
                 "altup_unembed_projections")
# A drafter's projections and a centroid head's centroids, as transformers names them
# (modeling_gemma4_assistant.py: pre_projection, post_projection, masked_embedding.centroids)
DRAFTER_TARGETS = ("pre_projection", "post_projection", "centroids")
LORA_TARGETS: tuple[str, ...] = (*ATTENTION_TARGETS, *FFN_TARGETS, "experts",
                                 "shared_expert_gate", *MIXER_TARGETS, *PER_LAYER_TARGETS,
                                 *LAUREL_TARGETS, *ALTUP_TARGETS, *DRAFTER_TARGETS)
ALL_LINEAR = "all-linear"
# The attention and FFN targets' module names in Llama-style models (Llama, Mistral, Qwen, ...),
# as PEFT's target_modules and the trainers' configs name them
PEFT_MODULES = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "g_proj": "g",
                "r_proj": "r", "sink_proj": "sink",
                "up_proj": "up", "gate_proj": "gate", "down_proj": "down"}
# Bytes per logit held at the loss's peak (the start of the backward, every activation alive),
# by how the stack computes the loss:
# - fp32: the logits once in fp32 (Megatron-LM's fused vocab-parallel cross-entropy;
#   theoretical_memory_usage.py's 4·s·b·V);
# - hf: transformers 5.24 (loss/loss_utils.py ForCausalLMLoss: `logits = logits.float()` before
#   cross_entropy): the 16-bit logits the model returns (2), the fp32 log-softmax output saved
#   for the backward (4), and in the backward its gradient (4) and the gradient of its input
#   (4) before the cast back: 2 + 4 + 4 + 4;
# - chunked: torchtune's CEWithChunkedOutputLoss (8 chunks, each upcast and reduced alone): the
#   16-bit logits (2), every chunk's fp32 log-softmax output saved (4), one chunk's two fp32
#   gradients in the backward (8/8);
# - chunked-compiled: the same loss with its compute_cross_entropy (the upcast and the
#   cross-entropy of one chunk) under torch.compile, as torchtune's compile_loss does with
#   compile=True (torchtune/training/_compile.py at 1814feb17): the compiled chunk saves its
#   16-bit input, two fp32 values per token (the row's max and log-sum-exp) and the labels, no
#   fp32 copy of the logits, and its backward writes the 16-bit gradient of the chunk and
#   nothing per logit in fp32 (measured with torch 2.13's inductor: tests/test_memory_recipes.py
#   reads the saved tensors and the generated code's buffers); so the 16-bit logits (2) and,
#   in the backward, one chunk's 16-bit gradient beside them (2/8); the 8 bytes per token are
#   not counted;
# - fused: a fused linear cross-entropy (Liger's FLCE) never holds the whole logits: a chunk's
#   transient only, not counted;
# - litgpt: LitGPT's fine-tuning loop (litgpt/finetune/lora.py and full.py at 00af8b0d:
#   model(input_ids, lm_head_chunk_size=128), then litgpt/utils.py chunked_cross_entropy) runs
#   the head on 128-token chunks and keeps their 16-bit logits in a list through the backward
#   (2), and F.cross_entropy of each 16-bit chunk, with no upcast, saves its 16-bit log-softmax
#   output (2); in the backward one chunk at a time has its two 16-bit gradients
#   (LOSS_GRADIENT_BYTES, by the chunk's share of the sequence).
CHUNKS = 8  # torchtune's CEWithChunkedOutputLoss num_output_chunks
LITGPT_CHUNK_TOKENS = 128  # LitGPT's lm_head_chunk_size and chunked_cross_entropy chunk_size
LOSS_BYTES = {"fp32": 4, "hf": 14, "chunked": 7, "chunked-compiled": 2 + 2 / CHUNKS, "fused": 0,
              "litgpt": 2 + 2}
# Bytes per logit of the gradient of the logits beside them at the backward's start, a
# transient buffer (calc.formulas.memory.BUFFERS): fp32's logits take one fp32 gradient; hf and
# chunked hold theirs in LOSS_BYTES already, and a fused loss never makes the whole gradient;
# litgpt's one chunk of 128 tokens has two 16-bit gradients (loss_gradient_bytes).
LOSS_GRADIENT_BYTES = {"fp32": 4, "hf": 0, "chunked": 0, "chunked-compiled": 0, "fused": 0,
                       "litgpt": 2 + 2}


def loss_gradient_bytes(loss: str, seq_len: int | None) -> float:
    """LOSS_GRADIENT_BYTES per logit of the sequence: litgpt's gradients are one chunk's, a
    LITGPT_CHUNK_TOKENS share of a seq_len-token sequence (all of it when shorter; without a
    sequence length, one whole chunk)."""
    if loss != "litgpt":
        return LOSS_GRADIENT_BYTES[loss]
    share = 1 if seq_len is None else min(LITGPT_CHUNK_TOKENS, seq_len) / seq_len
    return LOSS_GRADIENT_BYTES[loss] * share
LOSS_NOTES = {
    "fp32": "the logits once in fp32 (Megatron-LM's fused cross-entropy)",
    "hf": "transformers' loss (loss_utils.py ForCausalLMLoss upcasts the logits): the 16-bit "
          "logits, the fp32 log-softmax output and, at the backward's start, its gradient and "
          "its input's gradient: 2 + 4 + 4 + 4 = 14 B per logit",
    "chunked": "torchtune's CEWithChunkedOutputLoss: the 16-bit logits in 8 chunks, each "
               "chunk's fp32 log-softmax output saved, one chunk's fp32 gradients at a time: "
               "2 + 4 + 8/8 = 7 B per logit",
    "chunked-compiled": "torchtune's CEWithChunkedOutputLoss with each chunk's upcast and "
                        "cross-entropy compiled (torchtune's compile_loss): the 16-bit "
                        "logits, no fp32 copy saved, one chunk's 16-bit gradient at a time: "
                        "2 + 2/8 = 2.25 B per logit",
    "fused": "a fused linear cross-entropy (Liger's FLCE): the logits are never whole; a "
             "chunk's transient is not counted",
    "litgpt": "LitGPT's chunked head and cross-entropy (litgpt/utils.py chunked_cross_entropy, "
              "00af8b0d): the 16-bit logits of every 128-token chunk and each chunk's 16-bit "
              "log-softmax output, 2 + 2 = 4 B per logit, and one chunk's two 16-bit "
              "gradients at a time in the backward",
}
Loss = Literal["fp32", "hf", "chunked", "chunked-compiled", "fused", "litgpt"]


@dataclass(frozen=True)
class QuantInfo:
    """A block-quantised storage format of the frozen weights and its constants."""

    bits: int  # per weight
    block: int  # weights per first-level constant
    constant_bits: int  # a first-level constant without double quantisation (fp32)
    double_bits: int  # a first-level constant with double quantisation
    double_block: int  # first-level constants per second-level constant
    second_bits: int  # a second-level constant
    label: str
    source: str

    def bytes_per_weight(self, double_quant: bool) -> Fraction:
        """Bytes per frozen weight, constants included (exact; block counts that divide)."""
        if double_quant:
            constants = Fraction(self.double_bits, self.block) + Fraction(
                self.second_bits, self.block * self.double_block)
        else:
            constants = Fraction(self.constant_bits, self.block)
        return (self.bits + constants) / BITS_PER_BYTE


_QLORA = ("Dettmers et al. 2023 (QLoRA) §3: blocksize 64, double quantisation with 8-bit "
          "constants and blocksize 256 (0.5 → 0.127 bits per parameter); bitsandbytes "
          "Linear4bit")
QUANTS: dict[str, QuantInfo] = {
    "nf4": QuantInfo(4, 64, 32, 8, 256, 32, "4-bit NormalFloat", _QLORA),
    "fp4": QuantInfo(4, 64, 32, 8, 256, 32, "4-bit float (bitsandbytes FP4)", _QLORA),
}


def parse_targets(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...] | str:
    """'q,v' → ('q', 'v'); 'all-linear' stays a word until the model is known."""
    if isinstance(value, str):
        if value.strip() == ALL_LINEAR:
            return ALL_LINEAR
        value = [part.strip() for part in value.split(",") if part.strip()]
    return tuple(value)


class FineTune(Frozen):
    """Which weights train: all (full), or low-rank adapters on a frozen, maybe 4-bit, base."""

    model_config = ConfigDict(**Frozen.model_config, populate_by_name=True)

    method: Method = Field("full", alias="finetune",
                           description="what trains: every weight (full), or LoRA adapters on "
                                       "a frozen base (qlora: stored in 4 bits)")
    rank: int = Field(8, ge=1, le=MAX_WIDTH, alias="lora_rank",
                      description="LoRA rank r (default 8, PEFT's LoraConfig default)")
    targets: tuple[str, ...] | str = Field(
        ("q", "v"), alias="lora_targets",
        description="projections with an adapter, or 'all-linear' (every nn.Linear "
                    "of the layers, PEFT's definition: routed experts are not "
                    "nn.Linear in transformers 5); default q,v as Hu et al. 2021 §4.2")
    base_dtype: str | None = Field(
        None, description="QLoRA's 4-bit storage of the frozen projections, nf4 (default) or "
                          "fp4; LoRA keeps them in the training dtype")
    double_quant: bool = Field(True, description="QLoRA: quantise the block constants too")
    paged: bool = Field(False, description="optimizer states in paged (unified) memory, "
                                           "evicted to the host when the GPU runs short")
    loss: Loss = Field("fp32", description="how the loss holds the logits: fp32 (Megatron-LM's "
                                           "fused cross-entropy, 4 B per logit), hf "
                                           "(transformers' upcast and its gradients, 14 B), "
                                           "chunked (torchtune, 7 B), chunked-compiled "
                                           "(torchtune's, compiled, 2.25 B), fused (Liger's "
                                           "fused linear cross-entropy, none), litgpt "
                                           "(LitGPT's 128-token chunks, 4 B)")

    @field_validator("targets", mode="before")
    @classmethod
    def _parse(cls, value: object) -> object:
        if not isinstance(value, (str, list, tuple)):
            return value
        targets = parse_targets(value)
        if targets != ALL_LINEAR:
            for target in targets:
                if target not in LORA_TARGETS:
                    raise ValueError(f"lora_targets: {target!r} is not a projection; allowed: "
                                     f"{', '.join(LORA_TARGETS)} or {ALL_LINEAR}")
        return targets

    @model_validator(mode="after")
    def _consistent(self) -> FineTune:
        if not self.targets:
            raise ValueError(f"lora_targets: give at least one of {', '.join(LORA_TARGETS)} "
                             f"or {ALL_LINEAR}")
        if isinstance(self.targets, tuple) and len(set(self.targets)) != len(self.targets):
            raise ValueError(f"lora_targets={','.join(self.targets)}: a target is repeated")
        if self.method == "qlora" and self.base_dtype not in (None, *QUANTS):
            raise ValueError(f"base_dtype={self.base_dtype!r}: QLoRA stores the frozen weights "
                             f"in 4 bits ({' or '.join(QUANTS)})")
        if self.method != "qlora" and self.base_dtype is not None:
            raise ValueError(f"base_dtype={self.base_dtype!r} with finetune={self.method!r}: "
                             f"only QLoRA stores the frozen weights apart from the training "
                             f"dtype ({' or '.join(QUANTS)})")
        return self

    @property
    def frozen_base(self) -> bool:
        return self.method != "full"

    def quant(self) -> QuantInfo | None:
        if self.method != "qlora":
            return None
        return QUANTS[self.base_dtype or "nf4"]


# Full training: FineTune()'s defaults, which are valid as they are, built without validating
# (tests/test_startup.py compares it with FineTune()): every estimate that asks for no
# fine-tuning uses it, and a process that validates nothing builds no validator.
FULL_TRAINING = FineTune.model_construct()


@dataclass(frozen=True)
class TargetShape:
    """One adapted projection: each matrix it names (n_in × n_out) and the layers that have it.

    `matrices` are per layer: a target may name several (the Mamba and short-convolution
    in_proj; out_proj of every mixer), each in its own layers."""

    matrices: tuple[tuple[int, int], ...]


def ffn_widths(spec: ModelSpec) -> list[tuple[int, int]]:
    """(width, layers) of each FFN the up/gate/down targets adapt: the dense FFNs (the L_dw
    double-wide ones, ffn.double_wide, apart) and the shared experts' MLP (transformers builds
    the E_s shared experts as one MLP of width E_s·d_s). Inkling's shared experts, weighed by
    its router (moe.shared_in_router), are stacked nn.Parameter weights run by bmm in
    transformers (InklingSharedExperts), no nn.Linear: no target adapts them."""
    moe, counts, wide = spec.moe, spec.layer_counts, spec.double_wide_layers
    # RWKV's FFN is its channel-mix's key and value (_mixer_shapes)
    dense = counts["dense"] - wide if not counts["rwkv"] else 0
    widths = [(spec.ffn.d_ff, dense)] if dense else []
    if wide:
        widths.append((2 * spec.ffn.d_ff, wide))
    if moe is not None and counts["moe"] and moe.n_shared_experts and not moe.shared_in_router:
        widths.append((moe.n_shared_experts * moe.shared_width, counts["moe"]))
    return widths


def _ffn_shapes(spec: ModelSpec) -> dict[str, TargetShape]:
    """up, gate, down of the dense FFNs and the shared experts (ffn_widths); the routed
    experts apart (`experts`)."""
    d, moe, counts = spec.d_model, spec.moe, spec.layer_counts
    widths = [width for width, _ in ffn_widths(spec)]
    shapes = {}
    for name in FFN_TARGETS:
        if widths and (name != "gate" or spec.ffn.gated):
            shapes[name] = TargetShape(tuple((w, d) if name == "down" else (d, w)
                                             for w in widths))
    # product-key experts are rows of two nn.Embedding tables (DogeCDMoE's down_embed and
    # up_embed), not projections
    if moe is not None and counts["moe"] and not moe.product_keys:
        shapes["experts"] = TargetShape(((d, moe.d_expert), (moe.d_expert, d)))
        if moe.shared_expert_gate:
            shapes["shared_expert_gate"] = TargetShape(((d, 1),))
    return shapes


def _mixer_shapes(spec: ModelSpec) -> dict[str, list[tuple[int, int]]]:
    """The projections of the Mamba, gated DeltaNet, lightning-attention, RWKV, Griffin, mLSTM
    and short-convolution mixers."""
    d, mamba, dn, la = spec.d_model, spec.mamba, spec.deltanet, spec.lightning
    shapes: dict[str, list[tuple[int, int]]] = {}
    if mamba is not None:
        inner, n = mamba.d_inner, mamba.d_state
        extra = 2 * mamba.n_groups * n + (mamba.n_heads or 0) if mamba.version == 2 else 0
        shapes.setdefault("in_proj", []).append((d, 2 * inner + extra))
        if mamba.version == 1:
            rank = mamba.dt_rank or 0
            shapes["x_proj"] = [(inner, rank + 2 * n)]
            shapes["dt_proj"] = [(rank, inner)]
        shapes.setdefault("out_proj", []).append((inner, d))
    if dn is not None and not dn.channel_gate:  # Kimi Delta Attention: resolve_targets
        keys, values = dn.n_k_heads * dn.d_k, dn.n_v_heads * dn.d_v
        shapes["in_proj_qkvz"] = [(d, 2 * keys + 2 * values)]
        shapes["in_proj_ba"] = [(d, 2 * dn.n_v_heads)]
        shapes.setdefault("out_proj", []).append((values, d))
    if la is not None:
        width = la.n_heads * la.d_head
        shapes["qkv_proj"] = [(d, 3 * width)]
        shapes["output_gate"] = [(d, width)]
        shapes.setdefault("out_proj", []).append((width, d))
    if spec.rwkv is not None and spec.ffn is not None:  # time-mix's, then channel-mix's
        width, d_ff = spec.rwkv.d_attention, spec.ffn.d_ff
        shapes["key"] = [(d, width), (d, d_ff)]
        shapes["value"] = [(d, width), (d_ff, d)]
        shapes["receptance"] = [(d, width), (d, d)]
        shapes["output"] = [(width, d)]
    if spec.griffin is not None:  # RecurrentGemmaRecurrentBlock's nn.Linear modules
        width = spec.griffin.d_lru
        shapes["linear_y"] = [(d, width)]
        shapes["linear_x"] = [(d, width)]
        shapes["linear_out"] = [(width, d)]
    if spec.mlstm is not None:  # xLSTMLayer's nn.Linear modules (q, k, v: target_shapes)
        ml = spec.mlstm
        shapes["ogate_preact"] = [(d, ml.d_v)]
        shapes["igate_preact"] = [(d, ml.n_heads)]
        shapes["fgate_preact"] = [(d, ml.n_heads)]
        shapes.setdefault("out_proj", []).append((ml.d_v, d))
    if spec.short_conv is not None:
        shapes.setdefault("in_proj", []).append((d, 3 * d))
        shapes.setdefault("out_proj", []).append((d, d))
    return shapes


def _attention_shapes(spec: ModelSpec) -> dict[str, TargetShape]:
    """The attention targets' matrices of one attention layer of `spec`'s head shapes."""
    d, h, h_kv = spec.d_model, spec.attention.n_heads, spec.n_kv_heads
    att = spec.attention
    own_gate = att.output_gate and (att.output_gate_per == "head" or att.output_gate_bias
                                    or att.output_gate_own)
    shapes: dict[str, TargetShape] = {}
    if spec.attention.mla is None:  # MLA has q_a/q_b/kv_a/kv_b projections instead
        # a per-channel output gate is projected in q_proj (Qwen3-Next); a per-head one is
        # its own g_proj, and so is a gate with a bias per head (Beam's gate_proj)
        gate = spec.output_gate_width if spec.attention.output_gate and not own_gate else 0
        shapes["q"] = TargetShape(((d, h * spec.head_dim_qk + gate),))
        shapes["k"] = TargetShape(((d, h_kv * spec.head_dim_qk),))
        shapes["v"] = TargetShape(((d, h_kv * spec.head_dim_v),))
    shapes["o"] = TargetShape(((h * spec.head_dim_v, d),))
    if own_gate:  # g_proj d → h (LFM3, Laguna); Beam's gate_proj d → h·d_v
        shapes["g"] = TargetShape(((d, spec.output_gate_width),))
    mask = att.dynamic_mask
    if mask is not None:  # Doge's DogeAttention.dt_proj h_kv·d_v → h_kv (PEFT's dt_proj)
        shapes["dt_proj"] = TargetShape(((h_kv * spec.head_dim_v, h_kv),))
    if att.relative_logits is not None:  # Inkling's r_proj d → h·d_rel
        shapes["r"] = TargetShape(((d, h * att.relative_logits.d_rel),))
    if att.sink_proj:  # Inkling 2's sink_proj d → h
        shapes["sink"] = TargetShape(((d, h),))
    if spec.attention.experts is not None:  # JetMoE: W_Q, W_O are experts, not nn.Linear
        del shapes["q"], shapes["o"]
    # DeepSeek-V4: W_Q through a latent (q_a_proj, q_b_proj), W_O grouped (o_a_proj, o_b_proj)
    if att.q_lora_rank is not None:
        del shapes["q"]
    if att.output_groups is not None:
        del shapes["o"]
    return shapes


def target_shapes(spec: ModelSpec) -> dict[str, TargetShape]:
    """The matrices each target names in `spec`; a target the model lacks is absent. An
    attention target lists its matrix in the layers of the model's head shapes, then, where
    one kind has its own (attention.kind_shapes), its matrix there."""
    shapes: dict[str, TargetShape] = {}
    if spec.n_attention_layers:
        shapes.update(_attention_shapes(spec))
        if spec.shaped_kind:
            for name, shape in _attention_shapes(spec.for_kind(spec.shaped_kind)).items():
                shapes[name] = TargetShape(shapes[name].matrices + shape.matrices)
    if spec.ffn is not None:
        shapes.update(_ffn_shapes(spec))
    shapes.update({name: TargetShape(tuple(matrices))
                   for name, matrices in _mixer_shapes(spec).items()})
    if spec.mlstm is not None and spec.layer_counts["mlstm"]:
        # the mLSTM's q, k (d → d_qk) and v (d → d_v), after attention's matrices
        ml = spec.mlstm
        for name, width in (("q", ml.d_qk), ("k", ml.d_qk), ("v", ml.d_v)):
            before = shapes[name].matrices if name in shapes else ()
            shapes[name] = TargetShape((*before, (spec.d_model, width)))
    ple = spec.per_layer_embeddings
    if ple is not None:  # Gemma4TextDecoderLayer's and Gemma4TextModel's nn.Linear modules
        d, p = spec.d_model, ple.width
        shapes["per_layer_input_gate"] = TargetShape(((d, p),))
        shapes["per_layer_projection"] = TargetShape(((p, d),))
        shapes["per_layer_model_projection"] = TargetShape(((d, spec.n_layers * p),))
    if spec.laurel is not None:  # Gemma3nTextLaurelBlock's
        d, r = spec.d_model, spec.laurel.rank
        shapes["linear_left"] = TargetShape(((d, r),))
        shapes["linear_right"] = TargetShape(((r, d),))
    if spec.altup is not None:  # Gemma3nTextAltUp's, and Gemma3nTextModel's n − 1 each
        d, n = spec.d_model, spec.altup.streams
        shapes["modality_router"] = TargetShape(((d, n),))
        shapes["prediction_coefs"] = TargetShape(((n, n * n),))
        shapes["correction_coefs"] = TargetShape(((n, n),))
        if n > 1:
            shapes["altup_projections"] = TargetShape(((d, d),))
            shapes["altup_unembed_projections"] = TargetShape(((d, d),))
    if spec.attention.cca is not None:  # ZayaCCAProjection: v_proj_current, v_proj_delayed
        shapes.pop("v", None)
    if spec.attention.kv_shared_layers == spec.n_layers:  # a drafter's layers read the target's
        for name in ("k", "v"):  # keys and values: no k_proj or v_proj anywhere
            shapes.pop(name, None)
    if spec.drafter is not None:  # Gemma4AssistantForCausalLM's, once each
        d, width = spec.d_model, spec.drafter.target_width
        shapes["pre_projection"] = TargetShape(((2 * width, d),))
        shapes["post_projection"] = TargetShape(((d, width),))
    if spec.centroid_head is not None:  # Gemma4AssistantMaskedEmbedder.centroids
        shapes["centroids"] = TargetShape(((spec.d_model, spec.centroid_head.n_centroids),))
    return shapes


def _lacks(spec: ModelSpec, target: str) -> str:
    """Why `spec` has no `target` projection."""
    att = spec.attention
    if target == "g" and not (att.output_gate and (
            att.output_gate_per == "head" or att.output_gate_bias or att.output_gate_own)):
        return ("its attention has no output gate of its own (g_proj, Beam's and HRM-Text's "
                "gate_proj)")
    if target == "r" and att.relative_logits is None:
        return "its attention has no relative bias projected per token (r_proj)"
    if target == "sink" and not att.sink_proj:
        return "its attention has no sinks projected from the token (sink_proj)"
    if target == "v" and att.cca is not None:
        return ("its values are CCA's v_proj_current and v_proj_delayed, which PEFT's v_proj "
                "does not select")
    if target in ("k", "v") and spec.attention.kv_shared_layers == spec.n_layers:
        return "every layer reads the target's keys and values (attention.kv_shared_layers)"
    if target in ATTENTION_TARGETS:
        if spec.attention.experts is not None:
            return "its W_Q and W_O are attention experts, not nn.Linear modules"
        if target == "q" and spec.attention.q_lora_rank is not None:
            return "its queries come through a latent (q_a_proj, q_b_proj)"
        if target == "o" and spec.attention.output_groups is not None:
            return "its W_O is a grouped projection (o_a_proj, o_b_proj)"
        return ("its attention is MLA (no separate W_Q, W_K, W_V)" if spec.n_attention_layers
                else "it has no attention layers")
    if target == "gate" and spec.ffn is not None and not spec.ffn.gated:
        return "its FFN is not gated"
    if target in FFN_TARGETS and spec.layer_counts["rwkv"]:
        return "its FFN is RWKV's channel-mix, whose matrices are key and value"
    if target == "experts" and spec.moe is not None and spec.moe.product_keys:
        return "its experts are rows of embedding tables (moe.product_keys), not projections"
    if target in (*FFN_TARGETS, "experts", "shared_expert_gate"):
        return "no FFN of that kind"
    if target in PER_LAYER_TARGETS:
        return "it has no per-layer embeddings"
    if target in LAUREL_TARGETS:
        return "it has no LAuReL blocks"
    if target in ALTUP_TARGETS:
        return "it has no AltUp (or one stream, without projections)"
    if target == "centroids":
        return "its LM head has no centroids (centroid_head)"
    if target in DRAFTER_TARGETS:
        return "it is not a drafter fed a target's states (drafter)"
    return "no mixer with that projection"


def resolve_targets(spec: ModelSpec, finetune: FineTune) -> tuple[str, ...]:
    """The adapted targets of `spec`, checked: each exists, and r is at most the larger side of
    each matrix (PEFT builds an adapter whose r exceeds the smaller side, as for Mamba's dt_proj
    or the shared experts' gate d × 1, but one past both sides is a mistake).

    all-linear is PEFT's: every nn.Linear of the layers transformers builds, which is every
    target but the routed experts (fused parameters in transformers 5)."""
    if not finetune.frozen_base:
        return ()
    counts = spec.layer_counts
    if counts["rwkv"] and (counts["rwkv"] != spec.n_layers or counts["dense"] != spec.n_layers):
        raise CalcError(
            f"lora: {spec.name} has rwkv layers beside other layers or FFNs; calc adapts RWKV "
            f"(key, value, receptance, output) only where every layer is RWKV's with a dense "
            f"FFN, as transformers' rwkv builds it")
    shapes = target_shapes(spec)
    block_targets = (*ATTENTION_TARGETS, *FFN_TARGETS)
    if spec.shared_block is not None and (
            finetune.targets == ALL_LINEAR or set(finetune.targets) & set(block_targets)):
        # PEFT wraps each depth's modules (transformers builds one block per depth and ties
        # their weights), so each depth would take adapters of its own on shared weights
        mamba = [t for t in shapes if t not in block_targets]
        named = (finetune.targets if isinstance(finetune.targets, str)
                 else ",".join(finetune.targets))
        raise CalcError(
            f"lora_targets={named}: "
            f"calc does not adapt {spec.name}'s shared block (shared_block: one set of weights, "
            f"an adapter per depth under PEFT); name targets of its other layers from "
            f"{', '.join(mamba) or 'none'}")
    if finetune.targets == ALL_LINEAR:
        if spec.attention.mla is not None and spec.n_attention_layers:
            raise CalcError(
                f"lora_targets=all-linear: {spec.name} uses multi-head latent attention, whose "
                f"q_a/q_b/kv_a/kv_b projections calc does not adapt; name targets from "
                f"{', '.join(shapes)}")
        att = spec.attention
        if (att.q_lora_rank is not None or att.output_groups is not None) \
                and spec.n_attention_layers:
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s queries come through a latent or its "
                f"W_O is grouped (q_a/q_b, o_a/o_b projections), which calc does not adapt; "
                f"name targets from {', '.join(shapes)}")
        if spec.attention.experts is not None and spec.n_attention_layers:
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s nn.Linear modules are its fused kv_proj "
                f"and its routers, which calc does not adapt; name targets from "
                f"{', '.join(shapes)}")
        if spec.moe is not None and spec.moe.router_scales and spec.n_moe_layers:
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s router projection is an nn.Linear "
                f"(Gemma4TextRouter.proj), which PEFT adapts and calc does not; name targets "
                f"from {', '.join(shapes)}")
        if spec.moe is not None and spec.moe.product_keys and spec.n_moe_layers:
            # DogeCDMoE.router_gate is an nn.Linear all-linear adapts (other routers are
            # parameters of router modules)
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s product-key router (router_gate) is "
                f"an nn.Linear, which PEFT adapts and calc does not; name targets from "
                f"{', '.join(shapes)}")
        if spec.norm.gate_rank is not None:
            # AXK2GateMLP's fc1 and fc2 (modular_axk2.py) are nn.Linear modules all-linear
            # would adapt
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s gated norms (norm.gate_rank) have "
                f"their own fc1/fc2 projections, which calc does not adapt; name targets from "
                f"{', '.join(shapes)}")
        hc = spec.hyper_connections
        if hc is not None and hc.gate_rank:
            # Qwen4ExpTextGatedResidual's input_mix_weight_down/_up and block_inject_weight
            # (modular_qwen4_exp.py) are nn.Linear modules all-linear would adapt
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s gated hyper-connection maps "
                f"(hyper_connections.gate_rank) are nn.Linear modules, which PEFT adapts and "
                f"calc does not; name targets from {', '.join(shapes)}")
        moe = spec.moe
        if (moe is not None and moe.router_mlp is not None and spec.n_moe_layers) or (
                spec.attention.cca is not None and spec.n_attention_layers):
            # ZayaRouter's down_proj and ZayaRouterMLP's fc1, fc2, out_proj, and
            # ZayaCCAProjection's v_proj_current and v_proj_delayed are nn.Linear modules
            # all-linear adapts
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s MLP router (moe.router_mlp) and CCA's "
                f"split value projections (attention.cca) are nn.Linear modules PEFT adapts and "
                f"calc does not; name targets from {', '.join(shapes)}")
        if spec.residual_conv_taps and spec.n_attention_layers:
            # Inkling2DynamicShortConvolution's weight_proj (the taps of the keys' and values'
            # convolutions on the listed kinds) is an nn.Linear all-linear adapts
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s per-token convolution taps "
                f"(residual_conv_taps: weight_proj) are nn.Linear modules PEFT adapts and calc "
                f"does not; name targets from {', '.join(shapes)}")
        if spec.prediction_head is not None:
            # ModernBertDecoderPredictionHead's dense is an nn.Linear all-linear adapts (only
            # the output layer, decoder, is left out)
            raise CalcError(
                f"lora_targets=all-linear: {spec.name}'s prediction head has its own dense "
                f"projection (prediction_head), which calc does not adapt; name targets from "
                f"{', '.join(shapes)}")
        targets = tuple(name for name in shapes if name != "experts")
    else:
        targets = tuple(finetune.targets)
    dn = spec.deltanet
    if dn is not None and dn.channel_gate and spec.layer_counts["deltanet"]:
        # KimiLinearDeltaAttention's nn.Linear modules are q_proj, k_proj, v_proj, o_proj
        # (which PEFT's names select beside the attention's), b_proj and the low-rank
        # f_a/f_b/g_a/g_b_proj: adapters calc does not count; at full rank
        # (BailingHybridDeltaAttention) its output gate is a g_proj, which PEFT's g selects
        # beside the attention's per-head g_proj
        own = ("q", "k", "v", "o", "g") if dn.full_rank_gates else ("q", "k", "v", "o")
        kda = [t for t in targets if t in own]
        if kda:
            raise CalcError(
                f"lora_targets={','.join(kda)}: {spec.name}'s Kimi Delta Attention layers "
                f"(deltanet.gate='channel') have their own {'/'.join(kda)}_proj, which calc "
                f"does not adapt; name targets from {', '.join(t for t in shapes if t not in kda)}")
    att = spec.attention
    # (A.X-K2's gate is projected with the queries by q_gate_proj, which PEFT's gate_proj does
    # not select: attention.mla.latent_gate)
    if ("gate" in targets and att.mla is not None and att.output_gate
            and att.output_gate_per == "channel" and not att.mla.latent_gate
            and spec.n_attention_layers):
        # modeling_hy_v4.py HYV4Attention.gate_proj: PEFT's gate_proj selects it beside the
        # FFN's gate_proj
        raise CalcError(
            f"lora_targets=gate: {spec.name}'s MLA attention has an output gate of its own "
            f"named gate_proj (HunYuan V4), which PEFT's gate_proj adapts beside the FFN's and "
            f"calc does not count; name targets from {', '.join(t for t in shapes if t != 'gate')}")
    if "gate" in targets and att.compression is not None and spec.n_attention_layers:
        # modeling_deepseek_v4.py: DeepseekV4CSACompressor, DeepseekV4HCACompressor and
        # DeepseekV4Indexer each hold a gate_proj (d → the pooling gates), which PEFT's
        # gate_proj selects beside the FFN's
        raise CalcError(
            f"lora_targets=gate: {spec.name}'s compressors (attention.compression) have gate "
            f"projections named gate_proj, which PEFT's gate_proj adapts beside the FFN's and "
            f"calc does not count; name targets from {', '.join(t for t in shapes if t != 'gate')}")
    own = [t for t in ("q", "k") if t in targets]
    if (own and att.indexer is not None and att.mla is None and not att.indexer.pooled
            and spec.n_indexer_layers):
        # modeling_minimax_m3_vl.py MiniMaxM3VLIndexer: q_proj and k_proj, which PEFT's q_proj
        # and k_proj select beside the attention's (Qwen4-Exp's QSA fuses them into
        # index_qk_proj, which neither selects)
        raise CalcError(
            f"lora_targets={','.join(own)}: {spec.name}'s block-sparse indexer (attention.indexer "
            f"without MLA, MiniMax-M3's) has its own {'/'.join(t + '_proj' for t in own)}, which "
            f"PEFT adapts "
            f"beside the attention's and calc does not count; name targets from "
            f"{', '.join(t for t in shapes if t not in own)}")
    for target in targets:
        if target not in shapes:
            raise CalcError(f"lora_targets: {spec.name} has no {target!r} projection "
                            f"({_lacks(spec, target)}); it has {', '.join(shapes)}")
        for matrix in shapes[target].matrices:
            if finetune.rank > max(matrix):
                raise CalcError(
                    f"lora_rank={finetune.rank} exceeds the {target!r} projection of "
                    f"{spec.name} ({matrix[0]:,} × {matrix[1]:,}): r must be at most "
                    f"{max(matrix):,}")
    return targets
