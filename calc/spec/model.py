"""ModelSpec: every architecture choice of a decoder-only Transformer that changes a count.

One frozen pydantic model with parts for attention (MHA/GQA/MQA, MLA, QK-norm, sliding windows,
mixtures of heads; calc.spec.attention), the feed-forward network and mixture of experts
(calc.spec.ffn), normalisation (calc.spec.norm), positions (calc.spec.position), and the per-layer
structure with the other mixers (Mamba, gated DeltaNet, lightning attention, RWKV, Griffin's
recurrent block, short convolutions; calc.spec.layers). The names follow the papers (d_model, d_ff,
n_heads: Vaswani et al. 2017 §3; n_layers, context_length as n_ctx: Kaplan et al. 2020 Table 1) and
the Hugging Face config fields they map to. Cross-field rules are validators whose messages name
the fields; derived values (head width, MoE layer count, ...) are properties, and those that walk
the layers are computed once per spec (calc.spec.base.Frozen keeps them).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal

from pydantic import Field, ModelWrapValidatorHandler, ValidationError, model_validator

from calc.errors import CalcError, one_line
from calc.spec.attention import AttentionSpec, MLASpec
from calc.spec.base import (
    MAX_HEADS,
    MAX_LAYERS,
    MAX_TOKENS_CONTEXT,
    MAX_VOCAB,
    MAX_WIDTH,
    Frozen,
)
from calc.spec.drafter import CentroidHeadSpec, DrafterSpec
from calc.spec.ffn import GATED, FFNSpec, MoESpec
from calc.spec.layers import (
    AltUpSpec,
    AttentionKind,
    CrossAttentionSpec,
    DeltaNetSpec,
    GriffinSpec,
    HyperConnectionsSpec,
    LaurelSpec,
    LayersSpec,
    LightningSpec,
    MambaSpec,
    MlstmSpec,
    PerLayerEmbeddingsSpec,
    PredictionHeadSpec,
    RwkvSpec,
    SharedBlockSpec,
    ShortConvSpec,
    repeat,
)
from calc.spec.loop import LoopSpec, check_loop, executed
from calc.spec.norm import NormSpec
from calc.spec.position import MAX_SEGMENTS, PositionSpec
from calc.spec.residual import BlockResidualSpec, ResidualScalesSpec

__all__ = [
    "GATED",
    "MAX_HEADS",
    "MAX_LAYERS",
    "MAX_TOKENS_CONTEXT",
    "MAX_VOCAB",
    "MAX_WIDTH",
    "AttentionSpec",
    "FFNSpec",
    "Frozen",
    "MLASpec",
    "MoESpec",
    "ModelSpec",
    "NormSpec",
    "PositionSpec",
]


# The attention and FFN parts whose shared-block form no model has (one line each)
SHARED_BLOCK_REFUSED: tuple[tuple[str, Any], ...] = (
    ("attention.mla", lambda s: s.attention.mla is not None),
    ("attention.indexer", lambda s: s.attention.indexer is not None),
    ("attention.experts", lambda s: s.attention.experts is not None),
    ("attention.differential", lambda s: s.attention.differential),
    ("attention.sinks", lambda s: s.attention.sinks),
    ("attention.output_gate", lambda s: s.attention.output_gate),
    ("attention.qk_norm", lambda s: s.attention.qk_norm != "none"),
    ("attention.qkv_bias", lambda s: s.attention.qkv_bias),
    ("attention.out_bias", lambda s: s.attention.out_bias),
    ("attention.k_eq_v", lambda s: s.attention.k_eq_v),
    ("attention.kind_shapes", lambda s: bool(s.attention.kind_shapes)),
    ("attention.kv_shared_layers", lambda s: bool(s.attention.kv_shared_layers)),
    ("ffn.activation (learned parameters)",
     lambda s: s.ffn is not None and bool(s.ffn.activation_params)),
    ("ffn.double_wide", lambda s: s.ffn is not None and s.ffn.double_wide),
    ("norm.sub_norms", lambda s: s.norm.sub_norms),
    ("norm.gate_rank", lambda s: s.norm.gate_rank is not None),
    ("parallel_block", lambda s: s.parallel_block),
    ("norm.placement other than pre", lambda s: s.norm.placement != "pre"),
    ("mtp_modules", lambda s: bool(s.mtp_modules)),
    ("attention.last_layer_out_bias", lambda s: s.attention.last_layer_out_bias),
    ("hyper_connections", lambda s: s.hyper_connections is not None),
    ("moe.shortcut", lambda s: s.moe is not None and s.moe.shortcut),
)


# Mixers with self-attention (the attention layers, attention_kinds); cross_attention attends to
# image tokens instead (calc.spec.layers.CrossAttentionSpec).
SELF_ATTENTION = ("attention", "attention+mamba")

# The parts a cross-attention layer of modeling_mllama.py has no form for (one line each)
CROSS_ATTENTION_REFUSED: tuple[tuple[str, Any], ...] = (
    *((name, present) for name, present in SHARED_BLOCK_REFUSED
      if name not in ("attention.qk_norm", "ffn.activation (learned parameters)")),
    ("shared_block", lambda s: s.shared_block is not None),
    ("position.kind relative", lambda s: s.position.kind == "relative"),
    ("d_embedding", lambda s: s.d_embedding is not None),
)


class ModelSpec(Frozen):
    """A decoder-only Transformer language model, as far as parameters and FLOPs can tell."""

    name: str = Field("custom", min_length=1, max_length=200, description="a label for reports")
    vocab_size: int = Field(ge=1, le=MAX_VOCAB, description="vocabulary size V")
    d_model: int = Field(ge=1, le=MAX_WIDTH, description="residual width d")
    n_layers: int = Field(ge=1, le=MAX_LAYERS, description="Transformer blocks L")
    context_length: int = Field(ge=1, le=MAX_TOKENS_CONTEXT,
                                description="training context T; the default sequence length")
    attention: AttentionSpec = Field(
        default_factory=lambda: AttentionSpec(n_heads=1),
        description="the attention of the attention layers (required when a layer has one)")
    ffn: FFNSpec | None = Field(
        None, description="the dense FFN (and the experts' shape); required unless no layer "
                          "has an FFN (layers.ffn_pattern none: Mamba)")
    moe: MoESpec | None = Field(None, description="mixture-of-experts FFN on some layers")
    norm: NormSpec = Field(default_factory=NormSpec)
    position: PositionSpec
    layers: LayersSpec = Field(
        default_factory=LayersSpec,
        description="each layer's mixer and FFN: patterns and exceptions (default: attention "
                    "and the FFN on every layer, MoE where moe puts it)")
    mamba: MambaSpec | None = Field(None, description="the Mamba mixer of the mamba layers")
    deltanet: DeltaNetSpec | None = Field(
        None, description="the gated DeltaNet mixer of the deltanet layers")
    lightning: LightningSpec | None = Field(
        None, description="the lightning-attention mixer of the lightning layers")
    rwkv: RwkvSpec | None = Field(
        None, description="RWKV's time-mix of the rwkv layers (and its channel-mix's extras)")
    griffin: GriffinSpec | None = Field(
        None, description="Griffin's recurrent block (RG-LRU) of the griffin layers")
    mlstm: MlstmSpec | None = Field(
        None, description="xLSTM's mLSTM layer (matrix memory) of the mlstm layers")
    short_conv: ShortConvSpec | None = Field(
        None, description="the short-convolution mixer of the conv layers")
    cross_attention: CrossAttentionSpec | None = Field(
        None, description="the cross-attention to image tokens of the cross_attention layers "
                          "(Llama 3.2 Vision's text model)")
    shared_block: SharedBlockSpec | None = Field(
        None, description="an attention block (the model's attention and FFN) whose weights "
                          "are shared by the depths it runs at, fed [hidden, embedding] (Zamba, "
                          "Zamba2)")
    per_layer_embeddings: PerLayerEmbeddingsSpec | None = Field(
        None, description="a vector of each layer's own for every token, from a table and a "
                          "projection of the embedding, added through a gate after each "
                          "layer's FFN (Gemma 3n, Gemma 4 E2B/E4B)")
    altup: AltUpSpec | None = Field(
        None, description="AltUp: the residual stream as n copies of width d, each layer "
                          "run on one and the others predicted and corrected around it, with "
                          "projections into and out of the copies (Gemma 3n)")
    laurel: LaurelSpec | None = Field(
        None, description="LAuReL: a low-rank residual d → r → d with a norm beside each "
                          "layer's mixer (Gemma 3n)")
    drafter: DrafterSpec | None = Field(
        None, description="a speculative-decoding drafter fed the target model's [embedding, "
                          "hidden state] through a projection 2·D → d, its state projected "
                          "back d → D, its kv-shared layers reading the target's keys and "
                          "values (Gemma 4's assistants)")
    centroid_head: CentroidHeadSpec | None = Field(
        None, description="an LM head that scores only the tokens of the top_k of n_centroids "
                          "clusters a token's centroid logits pick (Gemma 4's E2B and E4B "
                          "assistants)")
    d_embedding: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="width of the token embedding and LM head when it is not d_model: "
                    "projections d_embedding → d after the embedding and d → d_embedding before "
                    "the head (OPT-350m's word_embed_proj_dim, project_in/project_out)")
    output_vocab_size: int | None = Field(
        None, ge=1, le=MAX_VOCAB,
        description="rows of an LM head narrower than the vocabulary: the head scores only the "
                    "first output_vocab_size tokens while the embedding keeps vocab_size rows "
                    "(Apertus 1.5 drops its image and audio tokens from the head); unset: "
                    "vocab_size rows")
    segment_embedding: int | None = Field(
        None, ge=1, le=MAX_SEGMENTS,
        description="rows of a segment table whose row for each token's segment is added to "
                    "the token embedding (CPM-Ant's segment_embedding, segment_types rows)")
    residual_conv: int | None = Field(
        None, ge=1, le=1024,
        description="kernel k of residual short convolutions, x + conv(x) with a causal "
                    "depthwise conv1d without bias, on each attention layer's keys and values "
                    "(after W_K and W_V) and on its attention and FFN outputs before the "
                    "residual adds (Inkling's k_sconv, v_sconv, attn_sconv and mlp_sconv)")
    residual_conv_taps: tuple[AttentionKind, ...] = Field(
        (), max_length=4,
        description="the attention kinds whose key and value convolutions (residual_conv) add "
                    "taps projected from each token to their static ones: weight_proj d → "
                    "h_kv·k without bias for the keys and one for the values, each head's "
                    "channels sharing its k taps (Inkling 2's full layers: "
                    "Inkling2DynamicShortConvolution)")
    tie_embeddings: bool = Field(False, description="LM head shares the token embedding matrix")
    lm_head_bias: bool = Field(False, description="a bias on the LM head (one value per row)")
    prediction_head: PredictionHeadSpec | None = Field(
        None, description="a d × d dense layer, an activation and a norm between the final "
                          "norm and the LM head (ModernBERT decoder's lm_head, "
                          "ModernBertDecoderPredictionHead)")
    parallel_block: bool = Field(
        False, description="attention and FFN read the same input: x + Attn(N(x)) + FFN(N(x)) "
                           "(GPT-J, PaLM, Falcon)")
    parallel_norms: Literal[1, 2] = Field(
        1, description="norms per parallel block: 1 shared (GPT-J, Falcon-7B) or 2 "
                       "(GPT-NeoX, Falcon-40B)")
    mtp_modules: int = Field(
        0, ge=0, le=64,
        description="multi-token-prediction modules (DeepSeek-V3 §2.2), counted apart from the "
                    "main model: each a projection 2d→d, three norms and one more block")
    hyper_connections: HyperConnectionsSpec | None = Field(
        None, description="hyper-connections: the residual stream as n streams of width d, "
                          "mixed into and out of each mixer and FFN by learned maps and "
                          "collapsed by a head map before the final norm (HunYuan V4's "
                          "hc_mult; DeepSeek-V4's mHC with residual_mix)")
    residual_scales: ResidualScalesSpec | None = Field(
        None, description="learned residual scales: each sublayer (the mixer's and the FFN's) "
                          "scales the residual stream by a vector of d before its output joins "
                          "it (Doge's input_residual and post_attention_residual), with "
                          "residual_bias a bias of d on the stream and with branch a scale and "
                          "bias of d on the output (ZAYA's ZayaResidualScaling)")

    block_residual: BlockResidualSpec | None = Field(
        None, description="attention residuals over blocks of layers: each sublayer's input a "
                          "softmax mix of the stored blocks' states and the running residual "
                          "by learned queries (Inkling 2's Inkling2BlockAttentionResidual)")
    residual_scales: ResidualScalesSpec | None = Field(
        None, description="learned vectors on each sublayer's residual add: a scale on the "
                          "residual, optionally its bias, and a scale and bias on the "
                          "sublayer's output; optionally a scale and bias on the embedding "
                          "(Doge's input_residual; ZAYA1's ZayaResidualScaling)")

    ngpt: bool = Field(
        False, description="nGPT's learned scale vectors (Loshchilov et al. 2024, arXiv "
                           "2410.01131; Dory): per layer two residual rates of d, per "
                           "attention layer a query scale h·d_qk and an output-gate scale "
                           "h·d_v, per FFN scales on its gate and up outputs (2·d_ff), a "
                           "logit scale per head row; elementwise: 0 FLOPs")
    loop: LoopSpec | None = Field(
        None, description="stored layers run more than once per token, in runs [first, last, "
                          "passes] (HRM-Text's stacks, Dory's recurrent section): parameters "
                          "count each stored layer once, FLOPs, activations and the KV cache "
                          "each pass")

    @model_validator(mode="wrap")
    @classmethod
    def _checked(cls, data: Any, handler: ModelWrapValidatorHandler[ModelSpec]) -> ModelSpec:
        """A spec built from data is checked; one passed where a spec is expected (Preset.spec,
        Report.spec) was checked when it was built and is kept as it is (pydantic's
        revalidate_instances="never"), not checked again by every report that holds it."""
        if isinstance(data, ModelSpec):
            return data
        return handler(data)._consistent()

    def _consistent(self) -> ModelSpec:
        att = self.attention
        self._check_head_rows()
        if att.mla is None and att.head_dim is None and self.d_model % att.n_heads:
            raise ValueError(
                f"attention.n_heads={att.n_heads} does not divide d_model={self.d_model}; "
                f"use a divisor or give attention.head_dim")
        self._check_layers()
        if self.position.kind == "learned" and self.position_table < self.context_length:
            raise ValueError(
                f"context_length={self.context_length} exceeds the learned position table "
                f"(position.max_positions={self.position_table})")
        if self.parallel_block and self.norm.placement != "pre":
            raise ValueError(f"parallel_block=True needs norm.placement='pre', not "
                             f"{self.norm.placement!r}")
        if self.position.kind == "relative" and "chunked" in self.attention_kinds:
            raise ValueError("position.kind='relative' is not defined for chunked attention "
                             "layers")
        if self.position.kind == "bucketed":
            self._check_bucketed()
        if self.position.kind == "relative" and att.mla is not None:
            raise ValueError("position.kind='relative' is not defined for attention.mla "
                             "(MLA carries its own decoupled RoPE)")
        if self.mtp_modules and not (self.n_attention_layers and self.has_ffn):
            raise ValueError("mtp_modules: a multi-token-prediction module is an attention "
                             "block with an FFN; the model has no such layers")
        if self.parallel_norms == 2 and not self.parallel_block:
            raise ValueError("parallel_norms=2 needs parallel_block=True")
        if self.norm.gate_rank is not None and (self.parallel_block or self.mtp_modules):
            # A.X-K2's gated norms sit on the two pre-norms of a sequential layer; it builds
            # no multi-token-prediction layer
            raise ValueError(f"norm.gate_rank={self.norm.gate_rank} is not defined with "
                             f"parallel_block=True or mtp_modules")
        if att.indexer is not None:
            self._check_indexer()
        if not self.norm.first_mixer_norm and (self.parallel_block or self.hyper_connections):
            raise ValueError("norm.first_mixer_norm=False is defined for a sequential layer on "
                             "one residual stream, not with parallel_block or "
                             "hyper_connections")
        if self.prediction_head is not None and self.d_embedding is not None:
            raise ValueError(f"prediction_head is d_model wide; d_embedding="
                             f"{self.d_embedding} (a head of another width) is not defined "
                             f"with it")
        if att.compression is not None:
            self._check_compression()
        if att.relative_logits is not None:
            self._check_relative_logits()
        if att.sink_proj and (self.cross_attention is not None or self.shared_block is not None
                              or self.mtp_modules):
            # their attention is counted apart from the layers' (calc.formulas.params)
            raise ValueError("attention.sink_proj is not defined with cross_attention, "
                             "shared_block or mtp_modules")
        if self.residual_conv is not None:
            self._check_residual_conv()
        if self.block_residual is not None:
            self._check_block_residual()
        if self.residual_conv_taps and self.residual_conv is None:
            raise ValueError(f"residual_conv_taps={list(self.residual_conv_taps)} needs "
                             f"residual_conv (the convolutions the taps join)")
        if self.hyper_connections is not None:
            self._check_hyper_connections()
        for kind in att.kind_shapes:
            if kind not in self.attention_kinds:
                raise ValueError(f"attention.kind_shapes.{kind}: no attention layer is {kind} "
                                 f"(attention.layer_pattern, layers.exceptions)")
            if self.mtp_modules:
                raise ValueError("mtp_modules: a multi-token-prediction block's attention "
                                 "shape is not defined with attention.kind_shapes")
        if att.kv_shared_layers or (self.ffn is not None and self.ffn.double_wide):
            self._check_kv_shared()
        if att.last_layer_out_bias and (self.mixer_kinds[-1] != "attention" or att.experts):
            raise ValueError("attention.last_layer_out_bias: the last layer must be an "
                             "attention layer with one W_O (layers.mixer_pattern, "
                             "attention.experts)")
        for kind in sorted(set(self.attention_kinds) - {""}):
            _, _, width, values = self.heads_of(kind)
            if self.keys_are_values(kind) and width != values:
                raise ValueError(f"attention.k_eq_v: the {kind} layers' keys are their values, "
                                 f"so their value width must be their key width {width}, not "
                                 f"{values} (attention.v_head_dim)")
        if self.moe is not None and self.moe.shortcut:
            self._check_shortcut()
        if self.moe is not None and self.moe.hash_layers:
            self._check_hash_layers()
        groups = att.output_groups
        if groups is not None and (att.n_heads * self.head_dim_v) % groups.groups:
            raise ValueError(f"attention.output_groups.groups={groups.groups} must divide the "
                             f"heads' output n_heads·v_head_dim = "
                             f"{att.n_heads * self.head_dim_v}")
        if self.shared_block is not None:
            self._check_shared_block()
        if self.per_layer_embeddings is not None:
            self._check_per_layer_embeddings()
        if self.drafter is not None or self.centroid_head is not None:
            self._check_drafter()
        if self.cross_attention is not None:
            self._check_cross_attention()
        if self.altup is not None or self.laurel is not None:
            self._check_gemma3n_residual()
        if self.residual_scales is not None:
            self._check_residual_scales()
        if att.dynamic_mask is not None and set(self.mixer_kinds) != {"attention"}:
            raise ValueError("attention.dynamic_mask: every layer's mixer is attention (Doge); "
                             "it is not defined beside other mixers")
        if att.cca is not None and (self.n_kv_heads * self.head_dim_qk) % 2:
            raise ValueError(f"attention.cca: the values are half of the current and half of "
                             f"the previous token, so n_kv_heads·head_dim = "
                             f"{self.n_kv_heads * self.head_dim_qk} must be even")
        if self.moe is not None and self.moe.router_mlp is not None and (
                not all(self.moe_layers) or self.mtp_modules):
            raise ValueError("moe.router_mlp carries the router's state from each layer to the "
                             "next: every layer's FFN must be an MoE (layers.ffn_pattern), "
                             "without mtp_modules")
        if self.loop is not None:
            check_loop(self)
        if self.ngpt:
            self._check_ngpt()
        if self.ngpt and att.query_scale:  # nGPT's sqk is already a scale per query channel
            raise ValueError("attention.query_scale is not defined with ngpt (its sqk is one)")
        if self.moe is not None and self.ffn is not None and self.ffn.activation_params:
            raise ValueError(f"ffn.activation={self.ffn.activation!r} is not allowed with moe: "
                             f"its learned parameters are counted per dense FFN (no released "
                             f"mixture of experts uses it)")
        return self

    def _check_block_residual(self) -> None:
        """The mixes sit at the inputs of sequential pre-norm attention + FFN layers on one
        residual stream; a split layer's keys and values have projections of their own."""
        att = self.attention
        plain = (all(mixer == "attention" for mixer in self.mixer_kinds) and self.has_ffn
                 and "none" not in self.ffn_kinds)
        if (not plain or self.parallel_block or self.norm.placement != "pre"
                or self.shared_block is not None or self.loop is not None
                or self.hyper_connections is not None or self.altup is not None
                or self.laurel is not None or self.mtp_modules or self.ngpt
                or self.residual_scales is not None or self.per_layer_embeddings is not None):
            raise ValueError("block_residual is defined for sequential pre-norm layers of "
                             "attention and an FFN each, without parallel_block, shared_block, "
                             "loop, hyper_connections, altup, laurel, ngpt, residual_scales, "
                             "per_layer_embeddings or mtp_modules")
        split = self.block_residual.split_kinds if self.block_residual else ()
        if split and (att.mla is not None or att.experts or att.kv_shared_layers
                      or att.cca is not None or att.k_eq_v or att.differential
                      or any(shape.k_eq_v for shape in att.kind_shapes.values())):
            raise ValueError("block_residual.split_kinds needs keys and values projected "
                             "apart (no mla, experts, cca, differential, k_eq_v or kv-shared "
                             "layers)")

    def _check_residual_scales(self) -> None:
        """Scales at the residual adds of a sequential pre-norm layer (its mixer's, and its
        FFN's where it has one) on one residual stream (DogeDecoderLayer, ZayaDecoderLayer)."""
        why = ("parallel_block=True" if self.parallel_block
               else f"norm.placement={self.norm.placement!r}" if self.norm.placement != "pre"
               else "hyper_connections" if self.hyper_connections is not None
               else "altup" if self.altup is not None
               else "laurel" if self.laurel is not None
               else "shared_block" if self.shared_block is not None
               else "per_layer_embeddings" if self.per_layer_embeddings is not None
               else "cross_attention" if self.cross_attention is not None
               else f"mtp_modules={self.mtp_modules}" if self.mtp_modules
               else "moe.shortcut" if self.moe is not None and self.moe.shortcut
               else "ngpt" if self.ngpt
               else None)
        if why is not None:
            raise ValueError(f"residual_scales is not allowed with {why}: calc holds the scales "
                             f"at the two residual adds of a sequential pre-norm layer")

    def _check_ngpt(self) -> None:
        """nGPT's scales as Dory holds them: attention layers with a gated dense FFN each."""
        ffn, att = self.ffn, self.attention
        why = ("every layer's mixer must be attention" if set(self.mixer_kinds) != {"attention"}
               else "every layer's FFN must be dense" if set(self.ffn_kinds) != {"dense"}
               else "ffn must be gated" if ffn is None or not ffn.gated
               else "attention.mla" if att.mla is not None
               else "attention.experts" if att.experts is not None
               else "attention.kind_shapes" if att.kind_shapes
               else "attention.output_gate_per='head'" if att.output_gate_per == "head"
               and att.output_gate
               else "mtp_modules" if self.mtp_modules
               else "shared_block" if self.shared_block is not None else None)
        if why is not None:
            raise ValueError(f"ngpt: {why} (nGPT's scales sit on attention layers with a "
                             f"gated dense FFN)")

    def _check_bucketed(self) -> None:
        """A bucketed bias has one value per head of the model's attention for each row, and
        is added to the self-attention scores only."""
        att = self.attention
        why = ("attention.mla" if att.mla is not None
               else "attention.kind_shapes" if att.kind_shapes
               else "attention.differential" if att.differential
               else "cross_attention" if self.cross_attention is not None
               else None)
        if why is not None:
            raise ValueError(f"position.kind='bucketed' (a bias per head of the model's "
                             f"attention) is not defined with {why}")

    def _check_relative_logits(self) -> None:
        """Inkling's bias is a part of the self-attention layers only."""
        if self.cross_attention is not None or self.shared_block is not None or self.mtp_modules:
            raise ValueError("attention.relative_logits is not defined with cross_attention, "
                             "shared_block or mtp_modules")

    def _check_residual_conv(self) -> None:
        """Inkling's four residual convolutions sit in a sequential attention + FFN layer on
        one residual stream."""
        plain = (all(mixer == "attention" for mixer in self.mixer_kinds) and self.has_ffn
                 and "none" not in self.ffn_kinds)
        if (not plain or self.parallel_block or self.norm.placement != "pre"
                or self.shared_block is not None
                or self.hyper_connections is not None or self.altup is not None
                or self.laurel is not None or self.mtp_modules
                or self.attention.mla is not None or self.attention.experts
                or self.attention.kv_shared_layers or self.attention.differential
                or self.attention.k_eq_v or self.attention.cca is not None
                or self.residual_scales is not None
                or any(shape.k_eq_v for shape in self.attention.kind_shapes.values())):
            raise ValueError("residual_conv is defined for sequential pre-norm layers of "
                             "attention (MHA/GQA, no mla, experts, differential, k_eq_v, cca "
                             "or kv-shared layers) and an FFN each, without parallel_block, "
                             "shared_block, hyper_connections, altup, laurel, residual_scales "
                             "or mtp_modules")

    def _check_per_layer_embeddings(self) -> None:
        """Per-layer embeddings as Gemma 4 builds them: the gate's activation is the FFN's, the
        vector joins the one residual stream after a layer's FFN."""
        if self.ffn is None:
            raise ValueError("ffn: required, per_layer_embeddings' gate uses the FFN's "
                             "activation (Gemma4TextDecoderLayer: hidden_activation)")
        if self.ffn.activation_params:
            raise ValueError(f"ffn.activation={self.ffn.activation!r} is not allowed with "
                             f"per_layer_embeddings: its learned parameters are counted per "
                             f"dense FFN, not in each layer's gate")
        for name, value in (("hyper_connections", self.hyper_connections),
                            ("mtp_modules", self.mtp_modules)):
            if value:
                raise ValueError(f"{name} is not allowed with per_layer_embeddings (no model "
                                 f"has both; calc adds each layer's vector to one residual "
                                 f"stream of the main model's layers)")

    def _check_gemma3n_residual(self) -> None:
        """AltUp and LAuReL as Gemma 3n builds them (Gemma3nTextDecoderLayer): a sequential
        layer with sandwich norms and an FFN on one residual stream of the main model's layers,
        AltUp's streams around it (no model has them with the parts refused here)."""
        name = "altup" if self.altup is not None else "laurel"
        why = (f"norm.placement={self.norm.placement!r} (Gemma 3n's layers are sandwich-normed)"
               if self.norm.placement != "sandwich"
               else "a layer without an FFN" if self.ffn is None or "none" in self.ffn_kinds
               else "moe (the streams around an MoE layer are not defined)"
               if self.altup is not None and self.moe is not None
               else "a mixer other than self-attention"
               if set(self.mixer_kinds) != {"attention"}
               else "hyper_connections" if self.hyper_connections is not None
               else f"mtp_modules={self.mtp_modules}" if self.mtp_modules
               else "shared_block" if self.shared_block is not None
               else f"d_embedding={self.d_embedding}" if self.d_embedding is not None
               else None)
        if why is not None:
            raise ValueError(f"{name} is not allowed with {why}; calc holds it as Gemma 3n's "
                             f"layer has it")

    def _check_drafter(self) -> None:
        """A drafter and a centroid head as Gemma 4's assistants build them: one residual
        stream, the head d wide over all V tokens (modeling_gemma4_assistant.py), V/C whole
        tokens a cluster (token_ordering.view(C, V // C) fails otherwise)."""
        parts = (("mtp_modules", self.mtp_modules), ("hyper_connections", self.hyper_connections),
                 ("shared_block", self.shared_block),
                 ("per_layer_embeddings", self.per_layer_embeddings),
                 ("d_embedding", self.d_embedding), ("altup", self.altup),
                 ("laurel", self.laurel), ("prediction_head", self.prediction_head))
        name = "drafter" if self.drafter is not None else "centroid_head"
        for part, value in parts:
            if value:
                raise ValueError(f"{part} is not allowed with {name} (Gemma 4's assistants "
                                 f"have no {part}; calc holds a drafter as they build it)")
        head = self.centroid_head
        if head is None:
            return
        if self.output_vocab_size is not None or self.lm_head_bias:
            raise ValueError("centroid_head: the head's rows are the vocabulary's, without a "
                             "bias (output_vocab_size and lm_head_bias must be unset)")
        if self.vocab_size % head.n_centroids:
            raise ValueError(f"centroid_head.n_centroids={head.n_centroids} must divide "
                             f"vocab_size={self.vocab_size} (V/C tokens each cluster)")

    def _check_hyper_connections(self) -> None:
        """Hyper-connections as transformers builds them (HYV4DecoderLayer,
        DeepseekV4DecoderLayer): a map before each of a pre-norm layer's two sublayers, the
        streams expanded from the embedding and collapsed before the final norm."""
        why = ("parallel_block=True" if self.parallel_block
               else f"norm.placement={self.norm.placement!r}" if self.norm.placement != "pre"
               else "a layer without an FFN (layers.ffn_pattern none)"
               if "none" in self.ffn_kinds
               else f"mtp_modules={self.mtp_modules}" if self.mtp_modules
               else f"d_embedding={self.d_embedding}" if self.d_embedding is not None
               else None)
        if why is not None:
            raise ValueError(f"hyper_connections is defined for pre-norm layers of a mixer "
                             f"and an FFN, with the embedding and head at d_model, and no "
                             f"multi-token prediction; not with {why}")
        rank = self.hyper_connections.gate_rank if self.hyper_connections else None
        # Qwen4ExpTextDecoderLayer has no input or post-attention norm and Qwen4ExpTextModel
        # no final norm: the maps' grouped RMSNorms are the model's only norms
        why = ("norm.kind='layernorm'" if self.norm.kind != "rmsnorm"
               else "norm.final=True" if self.norm.final
               else "norm.embedding=True" if self.norm.embedding
               else "norm.sub_norms=True" if self.norm.sub_norms
               else "norm.weights=False" if not self.norm.weights
               else f"norm.gate_rank={self.norm.gate_rank}" if self.norm.gate_rank
               else None)
        if rank is not None and why is not None:
            raise ValueError(f"hyper_connections.gate_rank={rank}: its maps' grouped RMSNorms "
                             f"(with γ) replace the layers' and the final norm; not with {why}")

    def _check_hash_layers(self) -> None:
        """A hash-routed layer is an MoE layer of the model (DeepseekV4SparseMoeBlock builds a
        DeepseekV4HashRouter where mlp_layer_types says hash_moe)."""
        assert self.moe is not None
        kinds = self.ffn_kinds
        for i in self.moe.hash_layers:
            if i >= self.n_layers or kinds[i] != "moe":
                what = (f"the model has {self.n_layers} layers" if i >= self.n_layers
                        else f"layer {i} is {kinds[i]}")
                raise ValueError(f"moe.hash_layers: layer {i} must be an MoE layer ({what})")

    def _check_shortcut(self) -> None:
        """ScMoE: an MoE layer's experts join the residual stream after the next layer's FFN
        (modeling_longcat_flash.py, LongcatFlashDecoderLayer.forward), so that layer exists and
        is dense, and the block is sequential."""
        kinds = self.ffn_kinds
        for i, kind in enumerate(kinds):
            if kind == "moe" and (i + 1 == self.n_layers or kinds[i + 1] != "dense"):
                after = "no next layer" if i + 1 == self.n_layers else f"layer {i + 1} is " \
                                                                       f"{kinds[i + 1]}"
                raise ValueError(f"moe.shortcut: MoE layer {i} needs a dense layer after it, "
                                 f"whose FFN its experts' output joins ({after})")
        if self.parallel_block:
            raise ValueError("moe.shortcut is not defined with parallel_block=True")
        if self.mtp_modules:
            raise ValueError("moe.shortcut: a multi-token-prediction block's MoE has no next "
                             "layer to join; mtp_modules must be 0")
        if self.hyper_connections is not None:
            raise ValueError("moe.shortcut is not defined with hyper_connections: which of the "
                             "streams the routed output joins is not said by either model")

    def _check_kv_shared(self) -> None:
        """The last kv_shared_layers layers are attention layers that read the keys and values
        of the last earlier layer of their kind (configuration_gemma4.py, kv_sharing_modes:
        transformers refuses a kind with no such layer)."""
        shared = self.attention.kv_shared_layers
        if self.ffn is not None and self.ffn.double_wide and not shared:
            raise ValueError("ffn.double_wide widens the FFN of the layers without keys and "
                             "values of their own; set attention.kv_shared_layers")
        # a drafter whose every layer is shared reads the target's keys (Gemma4AssistantConfig,
        # shared_kv_states); with fewer, kv_sharing_modes wants a producer of each kind, as here
        drafter = self.drafter is not None and shared == self.n_layers
        if shared > self.n_layers or (shared == self.n_layers and not drafter):
            raise ValueError(f"attention.kv_shared_layers={shared} must be below n_layers="
                             f"{self.n_layers}: an earlier layer computes the keys they read "
                             f"(or at most n_layers with drafter, which reads the target's)")
        first = self.n_layers - shared
        if any(mixer != "attention" for mixer in self.mixer_kinds[first:]):
            raise ValueError(f"attention.kv_shared_layers={shared}: the last {shared} layers "
                             f"must be attention layers")
        kinds = self.attention_kinds
        if "chunked" in kinds[first:]:
            raise ValueError(f"attention.kv_shared_layers={shared}: the shared layers must be "
                             f"global or local, not chunked")
        for kind in set() if drafter else set(kinds[first:]) - set(kinds[:first]):
            raise ValueError(f"attention.kv_shared_layers={shared}: no earlier {kind} layer "
                             f"computes the keys and values the shared {kind} layers read")

    def _check_shared_block(self) -> None:
        """The shared block runs at layers of the model, reads the model's attention (which
        must be given) and FFN, and holds plain attention (Zamba's): no part the block of
        either Zamba lacks."""
        block = self.shared_block
        assert block is not None
        if block.layers[-1] >= self.n_layers:
            raise ValueError(f"shared_block.layers: layer {block.layers[-1]} is beyond "
                             f"n_layers={self.n_layers}")
        if "attention" not in self.model_fields_set:
            raise ValueError("attention: required, the shared block (shared_block) has "
                             "attention")
        if self.ffn is None:
            raise ValueError("ffn: required, the shared block (shared_block) has an FFN")
        if self.position.kind not in ("rope", "none"):
            raise ValueError(f"position.kind={self.position.kind!r} is not allowed with "
                             f"shared_block (its attention takes rope or none)")
        for name, present in SHARED_BLOCK_REFUSED:
            if present(self):
                raise ValueError(f"{name} is not allowed with shared_block (the shared block "
                                 f"holds plain multi-head attention and the FFN)")

    def _check_cross_attention(self) -> None:
        """Cross-attention layers as modeling_mllama.py builds them: plain projections of the
        model's heads, per-head norms, pre-norm, a dense FFN of d_ff on each."""
        for i, (mixer, ffn) in enumerate(zip(self.mixer_kinds, self.ffn_kinds, strict=True)):
            if mixer == "cross_attention" and ffn != "dense":
                raise ValueError(f"layers: cross-attention layer {i} has a {ffn} FFN; "
                                 f"MllamaCrossAttentionDecoderLayer has a dense one")
        if "attention" not in self.model_fields_set:
            raise ValueError("attention: required, the cross-attention layers take its heads")
        for name, present in CROSS_ATTENTION_REFUSED:
            if present(self):
                raise ValueError(f"{name} is not allowed with cross_attention (a "
                                 f"cross-attention layer's projections are plain, of the "
                                 f"model's heads, in a pre-norm sequential block)")

    def _check_head_rows(self) -> None:
        """A narrower head has fewer rows than the embedding, so it cannot be the embedding:
        transformers ties a pruned Apertus 1.5 head by replacing it with the whole embedding
        (vocab_size rows), which a config says by leaving output_vocab_size out."""
        rows = self.output_vocab_size
        if rows is None:
            return
        if rows >= self.vocab_size:
            raise ValueError(f"output_vocab_size={rows} must be below vocab_size="
                             f"{self.vocab_size}; leave it out for a head of vocab_size rows")
        if self.tie_embeddings:
            raise ValueError(f"output_vocab_size={rows} with tie_embeddings=True: a tied LM "
                             f"head is the embedding's vocab_size={self.vocab_size} rows; untie "
                             f"it or leave output_vocab_size out")

    def _check_indexer(self) -> None:
        """DSA's indexer is on every global attention layer but the shared ones, which reuse
        the keys of an earlier indexer layer (GlmMoeDsaAttention), and the dense ones, which
        attend to every key (MiniMax-M3's full_attention layers); the others are local
        (dots3's sliding layers, without an indexer)."""
        indexer = self.attention.indexer
        assert indexer is not None
        attending = [i for i, kind in enumerate(self.attention_kinds) if kind == "global"]
        if {kind for kind in self.attention_kinds if kind} - {"global", "local"}:
            raise ValueError("attention.indexer: every attention layer must be global or local "
                             "(layers.exceptions sets another attention kind)")
        for name in ("shared_layers", "dense_layers"):
            listed = getattr(indexer, name)
            if len(set(listed)) != len(listed):
                raise ValueError(f"attention.indexer.{name}: a layer is listed twice")
            for i in listed:
                if i not in attending:
                    raise ValueError(f"attention.indexer.{name}: layer {i} is not a global "
                                     f"attention layer of the {self.n_layers}")
        if set(indexer.shared_layers) & set(indexer.dense_layers):
            raise ValueError("attention.indexer: a layer is both in shared_layers and in "
                             "dense_layers")
        selecting = [i for i in attending if i not in indexer.dense_layers]
        if indexer.dense_layers and not selecting:
            raise ValueError("attention.indexer.dense_layers lists every global attention "
                             "layer: leave attention.indexer out")
        for i in indexer.shared_layers:
            if i == selecting[0]:
                raise ValueError(f"attention.indexer.shared_layers: layer {i} is the first "
                                 f"global attention layer; no earlier indexer picks its keys")

    def _check_compression(self) -> None:
        """DeepSeek-V4's compressed layers are sliding attention layers (their keys are the
        window's and the compressed entries), without a multi-token-prediction block."""
        compression = self.attention.compression
        assert compression is not None
        kinds = self.attention_kinds
        for name in ("sparse_layers", "heavy_layers"):
            for i in getattr(compression, name):
                if i >= self.n_layers or kinds[i] != "local":
                    raise ValueError(f"attention.compression.{name}: layer {i} is not a local "
                                     f"(sliding) attention layer of the {self.n_layers}")
        if self.mtp_modules:
            raise ValueError("mtp_modules: a multi-token-prediction block's attention is not "
                             "defined with attention.compression")

    @property
    def n_sparse_layers(self) -> int:
        """DeepSeek-V4's compressed sparse attention (CSA) layers (0 without compression)."""
        compression = self.attention.compression
        return len(compression.sparse_layers) if compression else 0

    @property
    def n_heavy_layers(self) -> int:
        """DeepSeek-V4's heavily compressed attention (HCA) layers (0 without compression)."""
        compression = self.attention.compression
        return len(compression.heavy_layers) if compression else 0

    @property
    def n_indexer_layers(self) -> int:
        """Attention layers with an indexer of their own (0 without attention.indexer)."""
        indexer = self.attention.indexer
        if indexer is None:
            return 0
        return self.n_selecting_layers - len(indexer.shared_layers)

    @property
    def n_selecting_layers(self) -> int:
        """Attention layers that attend to the keys an indexer selects: the global ones but
        attention.indexer.dense_layers (dots3's sliding layers have none); 0 without one."""
        indexer = self.attention.indexer
        if indexer is None:
            return 0
        return self.attention_kinds.count("global") - len(indexer.dense_layers)

    def _check_layers(self) -> None:
        """Every layer kind has its part, every part is used, and the counts stay uniform."""
        beyond = [i for e in self.layers.exceptions for i in e.layers if i >= self.n_layers]
        if beyond:
            raise ValueError(f"layers.exceptions: layer {beyond[0]} is beyond n_layers="
                             f"{self.n_layers}")
        mixers = set(self.mixer_kinds)
        parts = {"mamba": ("mamba", "attention+mamba"), "deltanet": ("deltanet",),
                 "lightning": ("lightning",), "rwkv": ("rwkv",), "griffin": ("griffin",),
                 "mlstm": ("mlstm",),
                 "short_conv": ("conv",), "cross_attention": ("cross_attention",)}
        for part, kinds in parts.items():
            used = bool(mixers & set(kinds))
            if used and getattr(self, part) is None:
                raise ValueError(f"layers: {'/'.join(kinds)} layers need {part}")
            if not used and getattr(self, part) is not None:
                raise ValueError(f"{part} is given but no layer's mixer is "
                                 f"{' or '.join(kinds)} (layers.mixer_pattern)")
        lone = [i for i, (m, f) in enumerate(zip(self.mixer_kinds, self.ffn_kinds, strict=True))
                if m == "rwkv" and f == "none"]
        if lone:
            raise ValueError(f"layers: layer {lone[0]} is an rwkv layer without an FFN (RWKV's "
                             f"channel-mix gates the layer's FFN; give it dense or moe)")
        if self.n_attention_layers and "attention" not in self.model_fields_set:
            raise ValueError("attention: required, the model has attention layers")
        kinds = self.attention_kinds
        for kind, size in (("local", "sliding_window"), ("chunked", "chunk_size")):
            if kind in kinds and getattr(self.attention, size) is None:
                raise ValueError(f"layers.exceptions has {kind} attention layers but "
                                 f"attention.{size} is not set")
        ffns = set(self.ffn_kinds)
        if "none" in ffns and len(ffns) > 1:
            raise ValueError("layers: an FFN of kind none must be on every layer or none "
                             "(norms per layer stay uniform)")
        if self.ffn is None and ffns != {"none"}:
            raise ValueError("ffn: required, the model has FFN layers")
        if self.ffn is not None and ffns == {"none"} and self.shared_block is None:
            raise ValueError("ffn is given but every layer's FFN is none (and there is no "
                             "shared_block)")
        if "none" in ffns and self.parallel_block:
            raise ValueError("parallel_block=True needs an FFN on every layer")
        if self.moe is not None and self.n_moe_layers == 0:
            placed_by = ("layers.ffn_pattern/exceptions" if self.layers.ffn_pattern
                         or self.layers.at("ffn") else
                         f"moe.first_dense_layers={self.moe.first_dense_layers} and moe.every="
                         f"{self.moe.every}")
            raise ValueError(f"{placed_by} leave no MoE layer among n_layers={self.n_layers}")
        if self.moe is None and "moe" in ffns:
            raise ValueError("layers: moe FFN layers need moe")
        placed = self.layers.ffn_pattern or self.layers.at("ffn")
        if placed and self.moe and (self.moe.first_dense_layers or self.moe.every != 1):
            raise ValueError("moe.first_dense_layers/moe.every and layers.ffn_pattern/exceptions "
                             "both place the MoE layers; give one of them")

    # ---- derived values -------------------------------------------------------------------
    @property
    def head_rows(self) -> int:
        """Rows of the LM head, logits per token: output_vocab_size, else vocab_size."""
        rows = self.output_vocab_size
        return self.vocab_size if rows is None else rows

    @property
    def n_kv_heads(self) -> int:
        att = self.attention
        if att.mla is not None:
            return att.n_heads
        return att.n_kv_heads if att.n_kv_heads is not None else att.n_heads

    @property
    def head_dim_qk(self) -> int:
        """Query/key width per head (MLA: the no-RoPE and RoPE parts together)."""
        att = self.attention
        if att.mla is not None:
            return att.mla.qk_nope_head_dim + att.mla.qk_rope_head_dim
        return att.head_dim if att.head_dim is not None else self.d_model // att.n_heads

    @property
    def head_dim_v(self) -> int:
        """Value width per head: MLA's, attention.v_head_dim, else the query/key width."""
        att = self.attention
        if att.mla is not None:
            return att.mla.v_head_dim
        return att.v_head_dim if att.v_head_dim is not None else self.head_dim_qk

    @property
    def output_gate_width(self) -> int:
        """Values of the attention output gate per token: h·d_v (one per channel), h (one per
        head), 0 without a gate."""
        att = self.attention
        if not att.output_gate:
            return 0
        return att.n_heads * (1 if att.output_gate_per == "head" else self.head_dim_v)

    @property
    def shaped_kind(self) -> str | None:
        """The attention kind whose layers have head shapes of their own (None: one shape)."""
        return next(iter(self.attention.kind_shapes), None)

    @property
    def shaped_layers(self) -> int:
        """Attention layers of shaped_kind, whose head shapes are their own (0: one shape)."""
        kind = self.shaped_kind
        return self.attention_kinds.count(kind) if kind else 0

    @property
    def kv_shared_counts(self) -> tuple[int, int, int, int]:
        """Attention layers without keys and values of their own (attention.kv_shared_layers:
        the last ones): all, of shaped_kind, and of each of those the local ones."""
        shared = self.attention.kv_shared_layers
        kinds = self.attention_kinds[self.n_layers - shared:] if shared else ()
        kind = self.shaped_kind
        own = kinds.count(kind) if kind else 0
        return shared, own, kinds.count("local"), own * (kind == "local")

    @property
    def double_wide_layers(self) -> int:
        """Dense FFN layers 2·d_ff wide: the kv-shared ones when ffn.double_wide."""
        ffn, shared = self.ffn, self.attention.kv_shared_layers
        if ffn is None or not ffn.double_wide:
            return 0
        return self.ffn_kinds[self.n_layers - shared:].count("dense")

    def keys_are_values(self, kind: str) -> bool:
        """Whether the attention layers of `kind` use their keys as values (no W_V):
        attention.k_eq_v, or the kind's own kind_shapes k_eq_v where it is given."""
        shape = self.attention.kind_shapes.get(kind)
        if shape is not None and shape.k_eq_v is not None:
            return shape.k_eq_v
        return self.attention.k_eq_v

    def heads_of(self, kind: str) -> tuple[int, int, int, int]:
        """(query heads, key/value heads, d_qk, d_v) of the attention layers of `kind`: the
        model's, or attention.kind_shapes' for that kind (fields left out keep the model's)."""
        h, kv, d_qk, d_v = (self.attention.n_heads, self.n_kv_heads, self.head_dim_qk,
                            self.head_dim_v)
        shape = self.attention.kind_shapes.get(kind)
        if shape is None:
            return h, kv, d_qk, d_v
        if self.attention.mla is not None:  # a kind's own latent attention (dots3)
            mla = shape.mla or self.attention.mla
            heads = shape.n_heads if shape.n_heads is not None else h
            return heads, heads, mla.qk_nope_head_dim + mla.qk_rope_head_dim, mla.v_head_dim
        width = shape.head_dim if shape.head_dim is not None else d_qk
        # the values: the kind's own width, else the model's v_head_dim, else as wide as the
        # kind's queries and keys
        values = (shape.v_head_dim if shape.v_head_dim is not None
                  else self.attention.v_head_dim if self.attention.v_head_dim is not None
                  else width)
        return (shape.n_heads if shape.n_heads is not None else h,
                shape.n_kv_heads if shape.n_kv_heads is not None else kv, width, values)

    def sinks_of(self, kind: str) -> bool:
        """Whether the attention layers of `kind` have a sink logit per head: attention.sinks,
        or attention.kind_shapes' for that kind (MiMo-V2-Flash: its sliding layers only)."""
        shape = self.attention.kind_shapes.get(kind)
        own = shape.sinks if shape is not None else None
        return self.attention.sinks if own is None else own

    def for_kind(self, kind: str) -> ModelSpec:
        """This spec with one head shape: that of the attention layers of `kind` (itself when
        the kind has no shapes of its own), for what builds or times one layer at a time."""
        if kind not in self.attention.kind_shapes:
            return self
        h, kv, width, values = self.heads_of(kind)
        if self.attention.mla is not None:
            # the kind's latent attention; the indexer sits on the global layers only
            shape = self.attention.kind_shapes[kind]
            return self.updated(**{"attention.n_heads": h,
                                   "attention.mla": shape.mla or self.attention.mla,
                                   "attention.kind_shapes": {},
                                   "attention.indexer": (self.attention.indexer
                                                         if kind == "global" else None)})
        return self.updated(**{"attention.n_heads": h, "attention.n_kv_heads": kv,
                               "attention.head_dim": width, "attention.v_head_dim": values,
                               "attention.sinks": self.sinks_of(kind),
                               # a kind without sinks has no sink_proj either
                               "attention.sink_proj": (self.attention.sink_proj
                                                       and self.sinks_of(kind)),
                               "attention.kind_shapes": {},
                               "attention.k_eq_v": self.keys_are_values(kind)})

    @cached_property
    def executed(self) -> ModelSpec:
        """The layers as they run (calc.spec.loop.executed): itself without a loop."""
        return self if self.loop is None else executed(self)

    @property
    def cached(self) -> ModelSpec:
        """The layers whose keys and values the KV cache holds: the executed ones, or the stored
        ones where a loop keeps one slot a stored layer (loop.cache 'layer')."""
        return self if self.loop is not None and self.loop.cache == "layer" else self.executed

    @property
    def position_table(self) -> int:
        """Rows of the learned position table (0 without one)."""
        if self.position.kind != "learned":
            return 0
        rows = self.position.max_positions
        return rows if rows is not None else self.context_length

    # ---- the layers, one entry each ---------------------------------------------------------
    @cached_property
    def mixer_kinds(self) -> tuple[str, ...]:
        """Every layer's mixer: attention, mamba, deltanet, lightning, rwkv, griffin, mlstm, conv or
        attention+mamba."""
        return repeat(self.layers.mixer_pattern, self.n_layers, self.layers.at("mixer"))

    @cached_property
    def attention_kinds(self) -> tuple[str, ...]:
        """Every attention layer's kind (global, local, chunked, nope); '' for other mixers."""
        kinds = repeat(self.attention.pattern, self.n_layers, self.layers.at("attention"))
        return tuple(kind if mixer in SELF_ATTENTION else ""
                     for kind, mixer in zip(kinds, self.mixer_kinds, strict=True))

    @cached_property
    def layer_kinds(self) -> tuple[str, ...]:
        """'global' or 'local' for every layer (nope layers are global; chunked stay chunked)."""
        return tuple("global" if kind in ("nope", "") else kind for kind in self.attention_kinds)

    @cached_property
    def ffn_kinds(self) -> tuple[str, ...]:
        """Every layer's FFN: dense, moe or none."""
        at = self.layers.at("ffn")
        if self.layers.ffn_pattern:
            return repeat(self.layers.ffn_pattern, self.n_layers, at)
        moe = self.moe
        default = tuple("moe" if moe is not None and moe.is_moe_layer(i) else "dense"
                        for i in range(self.n_layers))
        return tuple(at.get(i) or kind for i, kind in enumerate(default))

    @cached_property
    def layer_counts(self) -> Mapping[str, int]:
        """Layers of each kind: mixers (attention counts attention+mamba too, as does mamba),
        attention kinds among the attention layers, FFN kinds. Read-only: it is kept."""
        mixers, kinds, ffns = self.mixer_kinds, self.attention_kinds, self.ffn_kinds
        return MappingProxyType({
            "attention": sum(m in SELF_ATTENTION for m in mixers),
            "local": kinds.count("local"), "chunked": kinds.count("chunked"),
            "mamba": sum("mamba" in m for m in mixers), "deltanet": mixers.count("deltanet"),
            "lightning": mixers.count("lightning"), "rwkv": mixers.count("rwkv"),
            "griffin": mixers.count("griffin"), "mlstm": mixers.count("mlstm"),
            "cross_attention": mixers.count("cross_attention"),
            "conv": mixers.count("conv"), "dense": ffns.count("dense"), "moe": ffns.count("moe"),
        })

    @property
    def has_attention(self) -> bool:
        """Attention layers, or the shared block's attention (shared_block)."""
        return bool(self.n_attention_layers) or self.shared_block is not None

    @property
    def n_attention_layers(self) -> int:
        return self.layer_counts["attention"]

    @property
    def n_local_layers(self) -> int:
        """layer_kinds.count("local"); with attention on every layer and no exceptions, counted
        per repeat of the pattern (no per-layer tuple: calc.estimate reads it on every call)."""
        if self.layers.exceptions or self.layers.mixer_pattern != ("attention",):
            return self.layer_counts["local"]
        pattern = self.attention.pattern
        whole, rest = divmod(self.n_layers, len(pattern))
        return whole * pattern.count("local") + pattern[:rest].count("local")

    @cached_property
    def moe_layers(self) -> tuple[bool, ...]:
        """For every layer, whether its FFN is a mixture of experts."""
        return tuple(kind == "moe" for kind in self.ffn_kinds)

    @property
    def n_moe_layers(self) -> int:
        """sum(moe_layers); without an FFN pattern or exceptions, without the per-layer tuple:
        layer i is MoE when i >= first_dense_layers and every divides i + 1, so the MoE layers
        are the multiples of `every` in (first_dense_layers, n_layers]."""
        moe = self.moe
        if moe is None:
            return 0
        if self.layers.ffn_pattern or self.layers.at("ffn"):
            return sum(self.moe_layers)
        return max(0, self.n_layers // moe.every - moe.first_dense_layers // moe.every)

    @property
    def kv_channels(self) -> int:
        """W_K's and W_V's output channels summed over the attention layers, each kind with its
        own heads (the channels Inkling's k_sconv and v_sconv convolve: residual_conv)."""
        return sum(kv * (width + values) for kv, width, values in (
            self.heads_of(kind)[1:] for kind in self.attention_kinds if kind))

    @property
    def has_ffn(self) -> bool:
        """The layers have FFNs (the shared block's own, shared_block, aside)."""
        return self.ffn is not None and set(self.ffn_kinds) != {"none"}

    @property
    def norms_per_layer(self) -> int:
        """Norm modules in one block: 2 (pre/post/reordered), 4 (sandwich), 1 or 2 (parallel);
        half of that without an FFN (Mamba: 1)."""
        if self.parallel_block:
            return self.parallel_norms
        if self.hyper_connections is not None and self.hyper_connections.gate_rank:
            return 0  # the gated maps' grouped norms replace them (Qwen4ExpTextDecoderLayer)
        per_sublayer = 2 if self.norm.placement == "sandwich" else 1
        return per_sublayer * (2 if self.has_ffn else 1)

    @property
    def embedding_width(self) -> int:
        """Width of the token embedding and the LM head (d_model unless d_embedding)."""
        return self.d_embedding if self.d_embedding is not None else self.d_model

    def updated(self, **changes: Any) -> ModelSpec:
        """A re-validated copy with top-level or dotted (`attention.n_heads`) fields changed.

        `model_copy(update=...)` would skip validation; this does not.
        """
        data = self.model_dump(exclude_unset=False)
        for key, value in changes.items():
            *parents, leaf = key.split(".")
            node = data
            for part in parents:
                if not isinstance(node.get(part), dict):
                    raise CalcError(f"{key}: {part!r} is not a part of the spec")
                node = node[part]
            node[leaf] = value
        try:
            return ModelSpec.model_validate(data)
        except ValidationError as error:
            raise CalcError(one_line(error, "spec")) from None
