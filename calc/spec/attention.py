"""Attention's spec: heads, KV sharing, biases, QK-norm, windows and chunks, sinks, output
gates, differential attention, MLA, DeepSeek Sparse Attention's indexer, Doge's dynamic mask,
and the head shapes of one kind of layer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.base import MAX_HEADS, MAX_LAYERS, MAX_TOKENS_CONTEXT, MAX_WIDTH, Frozen
from calc.spec.layers import AttentionKind


class MLASpec(Frozen):
    """Multi-head latent attention (DeepSeek-V2 §2.1): low-rank queries and a shared KV latent."""

    q_lora_rank: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="rank of the query down-projection; None projects queries directly (V2-Lite)")
    kv_lora_rank: int = Field(ge=1, le=MAX_WIDTH, description="rank of the joint KV latent")
    qk_nope_head_dim: int = Field(ge=0, le=MAX_WIDTH, description="per-head q/k width without RoPE")
    qk_rope_head_dim: int = Field(ge=0, le=MAX_WIDTH,
                                  description="per-head q width with RoPE; its key part is shared")
    v_head_dim: int = Field(ge=1, le=MAX_WIDTH, description="per-head value width")
    rope_key_norm: bool = Field(
        False, description="a norm (the model's kind) over the shared RoPE key, d_rope wide, "
                           "before its rotation (dots3's k_rope_only_layernorm)")
    latent_gate: bool = Field(
        False,
        description="the queries and the output gate (attention.output_gate, one value per "
                    "channel) are projected together from the query latent before and after "
                    "its norm, side by side (2·q_lora_rank): W_UQ 2·r_q × h·d_qk and W_G "
                    "2·r_q × h·d_v, without bias, in place of W_UQ r_q × h·d_qk and W_G "
                    "d × h·d_v (A.X-K2's q_gate_proj)")

    @model_validator(mode="after")
    def _qk_width(self) -> MLASpec:
        if self.qk_nope_head_dim + self.qk_rope_head_dim == 0:
            raise ValueError("attention.mla: qk_nope_head_dim + qk_rope_head_dim must be >= 1")
        return self


class IndexerSpec(Frozen):
    """A lightning indexer that picks the keys each query attends to: DeepSeek Sparse Attention
    (DSA; DeepSeek-V3.2-Exp, transformers' modeling_deepseek_v32.py DeepseekV32Indexer) picks
    `topk` keys, MiniMax-M3's block-sparse attention (modeling_minimax_m3_vl.py
    MiniMaxM3VLIndexer) `topk` blocks of `block_size` keys.

    With attention.mla (DSA) the indexer's queries come from MLA's query latent (wq_b: r_q →
    n_heads·head_dim), its one key per token from the residual (wk: d → head_dim, then a
    LayerNorm with bias), and a weight per head from the residual (weights_proj: d → n_heads);
    RoPE turns the first qk_rope_head_dim of each head. A key's score is Σ_heads weight ·
    ReLU(q·k). Without MLA (MiniMax-M3) its queries come from the residual (q_proj: d →
    n_heads·head_dim), its key too (k_proj: d → head_dim), each query head and the key through
    an RMSNorm of head_dim with γ; there are no head weights: each head scores every key by q·k,
    a block by its keys' maximum, and picks its own blocks for the attention.n_heads / n_heads
    query heads of its group, the query's own block always among them (index_local_blocks >= 1).
    """

    n_heads: int = Field(ge=1, le=MAX_HEADS, description="indexer heads (index_n_heads)")
    head_dim: int = Field(ge=1, le=MAX_WIDTH, description="indexer query/key width per head "
                                                          "(index_head_dim)")
    topk: int = Field(ge=1, le=MAX_TOKENS_CONTEXT,
                      description="keys, or blocks of block_size keys, each query attends to "
                                  "(index_topk, index_topk_blocks; all of them when fewer are "
                                  "visible)")
    block_size: int = Field(
        1, ge=1, le=MAX_TOKENS_CONTEXT,
        description="keys of one block the indexer selects whole (MiniMax-M3's "
                    "index_block_size; 1: DSA selects keys); a query attends to the visible "
                    "part of its own block and topk − 1 earlier blocks")
    pooled: bool = Field(
        False,
        description="Qwen4-Exp's QSA (Qwen4ExpTextQSAIndexer): blocks are scored by their "
                    "keys' mean (one key per complete block of block_size, normed and turned "
                    "at the block's start), a block's score Σ_heads ReLU(q·k)/√d_I shared by "
                    "every query head, and a query attends to the topk best complete blocks "
                    "plus its visible keys past the last complete one (no block forced); "
                    "without attention.mla; the queries and key from one fused projection "
                    "(index_qk_proj d → (n_heads + 1)·head_dim, the same weights)")
    shared_layers: tuple[int, ...] = Field(
        (), max_length=MAX_LAYERS,
        description="0-based attention layers without an indexer of their own, which reuse the "
                    "previous indexer layer's keys (GLM-5's indexer_types \"shared\")")
    dense_layers: tuple[int, ...] = Field(
        (), max_length=MAX_LAYERS,
        description="0-based global attention layers without an indexer, attending to every "
                    "key they see (MiniMax-M3's full_attention layers beside its "
                    "minimax_m3_sparse ones)")


class DynamicMaskSpec(Frozen):
    """Doge's dynamic mask attention (Shi et al. 2024, arXiv 2412.11834; transformers 5.24.0
    modeling_doge.py DogeAttention): each key gets a score per key/value head from its value,
    dt_proj (h_kv·d_v → h_kv) then exp(A·softplus(·)) with A one learned value per key/value
    head; the score is added to every query's logit of that key, and once more than `keep`
    keys are visible a query attends only to the `keep` of them with the highest scores
    (prepare_dynamic_mask's top-k over the keys, per key/value head)."""

    keep: int = Field(ge=1, le=MAX_TOKENS_CONTEXT,
                      description="keys each query attends to once more are visible "
                                  "(keep_window_size; all of them when fewer are)")
    bias: bool = Field(False, description="a bias on dt_proj, h_kv values (Doge's "
                                          "attention_bias)")


class OutputGroupsSpec(Frozen):
    """A grouped low-rank output projection (DeepSeek-V4; transformers 5.24.0
    modeling_deepseek_v4.py DeepseekV4Attention: o_a_proj, a DeepseekV4GroupedLinear, then
    o_b_proj): the h·d_v attention outputs in `groups` groups of h·d_v/groups channels, each
    projected by a block of its own to `rank`, then the groups·rank values to d by one W_O."""

    groups: int = Field(ge=1, le=MAX_HEADS, description="groups g of the heads' outputs "
                                                         "(o_groups)")
    rank: int = Field(ge=1, le=MAX_WIDTH, description="each group's projected width (o_lora_rank)")


class KindShape(Frozen):
    """The head shapes of the attention layers of one kind where they differ from the model's
    (Laguna: 64 query heads on its sliding layers, 48 on its full ones; Gemma 4: a wider
    head on its full layers; Inkling: heads of their own on its sliding layers; MiMo-V2-Flash:
    twice the key/value heads and sink logits on its sliding layers). A field left out keeps
    the model's value (its head width d_h, not d_model / n_heads; its value width
    attention.v_head_dim where the model gives one, else this kind's head width)."""

    n_heads: int | None = Field(None, ge=1, le=MAX_HEADS, description="query heads of these "
                                                                      "layers")
    n_kv_heads: int | None = Field(None, ge=1, le=MAX_HEADS,
                                   description="key/value heads of these layers")
    head_dim: int | None = Field(None, ge=1, le=MAX_WIDTH,
                                 description="width of one head of these layers")
    v_head_dim: int | None = Field(None, ge=1, le=MAX_WIDTH,
                                   description="width of one head's values in these layers")
    sinks: bool | None = Field(None, description="a learned sink logit per head in these "
                                                 "layers (MiMo-V2-Flash: its sliding ones)")
    k_eq_v: bool | None = Field(
        None, description="these layers' keys are their values: no W_V (Gemma 4's full "
                          "layers: attention_k_eq_v)")
    mla: MLASpec | None = Field(
        None, description="the latent attention shapes of these layers, with attention.mla "
                          "(dots3's sliding layers: swa_q_lora_rank, swa_kv_lora_rank, "
                          "swa_qk_nope_head_dim, ...); n_heads beside it, no n_kv_heads, "
                          "head_dim or v_head_dim")


class RelativeLogitsSpec(Frozen):
    """A relative-position bias projected from each token (Inkling; transformers 5.24.0
    modeling_inkling.py InklingRelativeLogits, modeling_inkling2.py
    Inkling2RelativePositionBias): r_proj Linear(d, h·d_rel, bias=False) gives each query
    head d_rel relative states; times a learned bank proj (d_rel × extent, one per layer,
    shared by its heads) they give one bias value per backward distance 0 … extent − 1, added
    to that head's score of the key at that distance (0 beyond). A sliding layer's bank is
    attention.sliding_window wide; every other layer's `extent`."""

    d_rel: int = Field(ge=1, le=MAX_WIDTH, description="relative states per head (d_rel)")
    extent: int = Field(ge=1, le=MAX_TOKENS_CONTEXT,
                        description="backward distances the bias covers on the layers that "
                                    "do not slide (rel_extent; a sliding layer's bank is its "
                                    "window wide)")
    scale: bool = Field(False, description="a learned scale per head and relative state, h × "
                                           "d_rel a layer, on r_proj's output (Inkling 2: "
                                           "Inkling2ScaledL2Clip.scale)")


class CompressionSpec(Frozen):
    """DeepSeek-V4's compressed attention (transformers 5.24.0 modeling_deepseek_v4.py; the
    DeepSeek-V4 report §2.3): on some of its sliding layers a compressor pools the keys of each
    `rate` tokens into one entry that joins the window's keys. A compressed sparse layer (CSA,
    DeepseekV4CSACompressor) pools windows of sparse_rate tokens, overlapping by one window
    (kv_proj and gate_proj d → 2·d_qk, position_bias sparse_rate × 2·d_qk, kv_norm d_qk), and
    its lightning indexer (`indexer`: DeepseekV4Indexer, keys pooled the same way at 2·d_I, its
    queries from attention.q_lora_rank's latent, a weight per head from the residual) picks
    `indexer.topk` of the entries for each query. A heavily compressed layer (HCA,
    DeepseekV4HCACompressor) pools windows of heavy_rate tokens (kv_proj and gate_proj
    d → d_qk, position_bias heavy_rate × d_qk, kv_norm d_qk) and every entry joins."""

    sparse_layers: tuple[int, ...] = Field(
        (), max_length=MAX_LAYERS,
        description="0-based sliding layers with compressed sparse attention (CSA: layer_types "
                    "compressed_sparse_attention)")
    sparse_rate: int = Field(
        4, ge=1, le=MAX_TOKENS_CONTEXT,
        description="tokens pooled into one compressed entry on the CSA layers "
                    "(compress_rates[\"compressed_sparse_attention\"])")
    heavy_layers: tuple[int, ...] = Field(
        (), max_length=MAX_LAYERS,
        description="0-based sliding layers with heavily compressed attention (HCA: layer_types "
                    "heavily_compressed_attention)")
    heavy_rate: int = Field(
        128, ge=1, le=MAX_TOKENS_CONTEXT,
        description="tokens pooled into one compressed entry on the HCA layers "
                    "(compress_rates[\"heavily_compressed_attention\"])")
    indexer: IndexerSpec | None = Field(
        None, description="the CSA layers' lightning indexer: its heads, width and the entries "
                          "each query attends to (index_n_heads, index_head_dim, index_topk); "
                          "needed with sparse_layers")

    @model_validator(mode="after")
    def _layers(self) -> CompressionSpec:
        both = set(self.sparse_layers) & set(self.heavy_layers)
        if both:
            raise ValueError(f"attention.compression: layer {min(both)} is in both "
                             f"sparse_layers and heavy_layers")
        for name in ("sparse_layers", "heavy_layers"):
            layers = getattr(self, name)
            if len(set(layers)) != len(layers):
                raise ValueError(f"attention.compression.{name}: a layer is listed twice")
        if bool(self.sparse_layers) != (self.indexer is not None):
            raise ValueError("attention.compression.indexer is the CSA layers' own: give it "
                             "with sparse_layers, and only then")
        if self.indexer is not None and self.indexer.shared_layers:
            raise ValueError("attention.compression.indexer.shared_layers: every CSA layer "
                             "has its own indexer")
        return self


class CCASpec(Frozen):
    """Compressed convolutional attention as ZAYA1 builds it (Figliolia et al. 2025, arXiv
    2510.04476; transformers 5.24.0 modeling_zaya.py ZayaCCAProjection, ZayaQKNorm): W_Q and W_K
    as GQA's, their outputs side by side, C = (h + h_kv)·d_h channels, through a causal depthwise
    conv1d of kernel k_a and then a grouped conv1d of kernel k_b with one group per head (d_h
    channels in and out), both with bias; to those the residual paths add the mean of each
    query head and its key head and, for each key head, the mean of that over its query heads
    (element-wise); W_V as two projections d → h_kv·d_h/2, one of the current token and one
    of the previous token (v_proj_current, v_proj_delayed); queries and keys L2-normed to
    √d_h and the keys scaled by one learned temperature per key/value head."""

    kernel: int = Field(2, ge=1, le=64, description="kernel k_a of the depthwise conv "
                                                    "(cca_time0)")
    grouped_kernel: int = Field(2, ge=1, le=64, description="kernel k_b of the grouped conv "
                                                            "(cca_time1)")


class AttentionSpec(Frozen):
    """Self-attention: heads, KV sharing, biases, QK-norm, windows, or MLA."""

    n_heads: int = Field(ge=1, le=MAX_HEADS, description="query heads h")
    n_kv_heads: int | None = Field(
        None, ge=1, le=MAX_HEADS,
        description="key/value heads: n_heads for MHA, 1 for MQA, a divisor for GQA; "
                    "default n_heads")
    head_dim: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="width d_h of one head; default d_model / n_heads (Gemma uses 256 instead)")
    v_head_dim: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="width of one head's values, W_V's and W_O's d_v; default head_dim "
                    "(MiMo-V2-Flash: 128 against query/key heads of 192)")
    qkv_bias: bool = Field(False, description="biases on the Q, K, V projections (Qwen2, GPT-2)")
    out_bias: bool = Field(False, description="bias on the output projection W_O")
    last_layer_out_bias: bool = Field(
        False, description="a bias on the output projection W_O of the last layer only, the "
                           "others without (GPT-NeoX-Japanese's dense_bias; needs out_bias "
                           "false and an attention last layer)")
    qk_norm: Literal["none", "head", "projection"] = Field(
        "none",
        description="norm on queries and keys: per head over d_h (Qwen3, Gemma 3) or over the "
                    "whole projection h·d_h (OLMo 2)")
    qk_norm_weights: bool = Field(
        True, description="the q/k norms carry a weight γ (false: Llama 4's L2 norm)")
    sliding_window: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="keys a query sees in a local layer, itself included (Mistral: 4096)")
    chunk_size: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="tokens per chunk of a chunked layer: a query sees the keys of its own "
                    "chunk only (Llama 4: attention_chunk_size 8192)")
    layer_pattern: tuple[AttentionKind, ...] | None = Field(
        None, min_length=1, max_length=1024,
        description="attention kind of layers 0, 1, ... repeated cyclically: global, local, "
                    "chunked or nope (global without position encoding); default all local "
                    "when sliding_window is set, all chunked when chunk_size is, else all "
                    "global (Gemma 2: local, global)")
    sinks: bool = Field(
        False, description="one learned logit per head joins every softmax as an extra key "
                           "without value (gpt-oss: attention sinks; a kind's own in kind_shapes)")
    query_scale: bool = Field(
        False, description="a learned scale per query channel, h·d_qk a layer, on W_Q's "
                           "output (Inkling 2: Inkling2ScaledL2Clip.scale before its L2 clip, "
                           "which has no parameter)")
    sink_proj: bool = Field(
        False, description="each head's sink logit is projected from the token, sink_proj "
                           "Linear(d, h) without bias, in place of one learned logit per head "
                           "(Inkling 2: Inkling2SlidingAttention.sink_proj); needs sinks")
    output_gate: bool = Field(
        False, description="each head's output is multiplied by a gate of the layer's input, "
                           "sigmoid(x W_G), before W_O (Qwen3-Next; output_gate_per says how "
                           "many values)")
    output_gate_per: Literal["channel", "head"] = Field(
        "channel",
        description="the output gate's values: one per channel, W_G d × h·d_v projected with "
                    "W_Q and carrying its bias (Qwen3-Next; with attention.mla its own "
                    "gate_proj without bias: HunYuan V4), or one per head broadcast over "
                    "its d_v channels, W_G d × h without bias (LFM3's g_proj; Laguna's, with "
                    "softplus: the function costs nothing)")
    output_gate_bias: bool = Field(
        False,
        description="the output gate's bias is one learned value per head, added before the "
                    "sigmoid and broadcast over the head's gate values, and its W_G a "
                    "projection of its own without bias (Beam: gate_proj d × h·d_v beside "
                    "q_proj, gate_bias of n_heads values); needs output_gate")
    output_gate_own: bool = Field(
        False,
        description="the per-channel output gate is a projection of its own, gate_proj d × "
                    "h·d_v with the queries' bias, beside q_proj (HRM-Text) rather than a part "
                    "of W_Q (Qwen3-Next): the same parameters and FLOPs; LoRA's g target "
                    "adapts it and q does not; needs output_gate per channel without "
                    "output_gate_bias")
    differential: bool = Field(
        False,
        description="differential attention (Ye et al. 2024, DIFF Transformer; transformers' "
                    "DiffLlamaAttention): the query heads in two halves, head i's softmax map "
                    "minus λ × head i + h/2's, each map weighing two KV heads' values side by "
                    "side (2·d_v wide); λ from four learned d_h vectors per layer, and a norm "
                    "without weights over each of the h/2 outputs")
    mla: MLASpec | None = Field(None, description="multi-head latent attention instead of MHA")
    q_lora_rank: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="queries through a low-rank latent outside MLA: d → r_q (no bias), a norm "
                    "of the model's kind over r_q, r_q → h·d_qk (no bias) (DeepSeek-V4's "
                    "q_a_proj, q_a_norm, q_b_proj); with MLA give attention.mla.q_lora_rank")
    q_norm_weights: bool = Field(
        True, description="the per-head query norm of qk_norm='head' carries γ (false: "
                          "DeepSeek-V4's q_b_norm has none while its key norm, kv_norm, has)")
    output_groups: OutputGroupsSpec | None = Field(
        None, description="W_O as a grouped low-rank projection: groups blocks of h·d_v/groups "
                          "→ rank, then groups·rank → d (DeepSeek-V4's o_a_proj, o_b_proj)")
    indexer: IndexerSpec | None = Field(
        None, description="DeepSeek Sparse Attention: an indexer picks the keys each query "
                          "attends to (needs attention.mla with q_lora_rank)")
    dynamic_mask: DynamicMaskSpec | None = Field(
        None, description="Doge's dynamic mask: a score per key from its value (dt_proj "
                          "h_kv·d_v → h_kv, A per key/value head) added to the logits, each "
                          "query attending to the `keep` best-scored keys it sees")
    compression: CompressionSpec | None = Field(
        None, description="compressed keys beside the window on some sliding layers "
                          "(DeepSeek-V4's CSA and HCA layers)")
    relative_logits: RelativeLogitsSpec | None = Field(
        None, description="a relative-position bias projected per token: r_proj d → h·d_rel "
                          "times a d_rel × extent bank gives each head a bias per backward "
                          "distance (Inkling's r_proj and rel_logits_proj)")
    cca: CCASpec | None = Field(
        None, description="compressed convolutional attention (ZAYA1): causal convolutions "
                          "over the queries and keys, residual q/k paths, values half of the "
                          "current and half of the previous token, a temperature per KV head")
    kind_shapes: dict[AttentionKind, KindShape] = Field(
        default_factory=dict, max_length=1,
        description="head shapes of their own for the attention layers of one kind (global, "
                    "local, chunked or nope), fields left out keeping the model's "
                    "(Laguna: {local = {n_heads = 64}}; MiMo-V2-Flash: {local = {n_kv_heads "
                    "= 8, sinks = true}}); one kind at most, as every released model has two "
                    "shapes")
    k_eq_v: bool = Field(
        False, description="the keys are the values: W_K's output is used as both and there "
                           "is no W_V (Gemma 4's attention_k_eq_v, on its full layers: "
                           "kind_shapes.global.k_eq_v)")
    kv_cached_once: bool = Field(
        False, description="with k_eq_v, the cache keeps the keys once: the same tensor is the "
                           "values (DeepSeek-V4: DeepseekV4HCACache.update sets values = keys; "
                           "Gemma 4's values are normed apart from the keys and cached apart)")
    kv_shared_layers: int = Field(
        0, ge=0, le=MAX_LAYERS,
        description="the last layers without keys and values of their own: each reads those "
                    "of the last earlier layer of its kind and has no W_K, W_V or key norm "
                    "(Gemma 4's num_kv_shared_layers)")
    experts: int | None = Field(
        None, ge=1, le=MAX_HEADS,
        description="mixture of attention heads (JetMoE: Shen et al. 2024 §2.2, after "
                    "ModuleFormer): W_Q and W_O are `experts` experts of n_kv_heads heads "
                    "each, sharing one K/V projection; a router Linear(d, experts) without bias "
                    "picks n_heads / n_kv_heads of them per token")

    def __hash__(self) -> int:
        # pydantic hashes a frozen model's fields, and a dict is not hashable: kind_shapes by
        # its items (a spec is a key of the reports' caches)
        return hash(tuple(tuple(sorted(value.items())) if isinstance(value, dict) else value
                          for value in (getattr(self, name) for name in type(self).model_fields)))

    @model_validator(mode="after")
    def _consistent(self) -> AttentionSpec:
        kv = self.n_kv_heads
        if self.mla is not None:
            if kv is not None and kv != self.n_heads:
                raise ValueError(f"attention.n_kv_heads={kv} has no meaning with attention.mla "
                                 f"(every head has its own keys); leave it unset")
            if self.head_dim is not None or self.v_head_dim is not None:
                field = "head_dim" if self.head_dim is not None else "v_head_dim"
                raise ValueError(f"attention.{field} has no meaning with attention.mla; "
                                 "give attention.mla.qk_nope_head_dim/qk_rope_head_dim/v_head_dim")
            if self.qk_norm != "none":
                raise ValueError("attention.qk_norm is not defined for attention.mla")
            if self.mla.latent_gate:
                self._check_latent_gate()
        elif kv is not None and self.n_heads % kv:
            raise ValueError(f"attention.n_kv_heads={kv} must divide attention.n_heads="
                             f"{self.n_heads}")
        if self.last_layer_out_bias and self.out_bias:
            raise ValueError("attention.last_layer_out_bias=true with attention.out_bias=true: "
                             "every layer's W_O already has its bias")
        if self.output_gate_bias and not self.output_gate:
            raise ValueError("attention.output_gate_bias=true needs attention.output_gate=true")
        if self.output_gate_own and (not self.output_gate or self.output_gate_per != "channel"
                                     or self.output_gate_bias or self.mla is not None):
            raise ValueError("attention.output_gate_own=true needs attention.output_gate=true "
                             "per channel, without output_gate_bias or mla")
        if self.sink_proj and not self.sinks:
            raise ValueError("attention.sink_proj=true needs attention.sinks=true")
        if self.sink_proj and "chunked" in self.pattern:
            raise ValueError("attention.sink_proj is not defined with chunked layers")
        selecting = (self.indexer is not None or self.dynamic_mask is not None
                     or self.compression is not None)
        # Inkling's relative bias and Inkling 2's token sinks score every key; no model has
        # them over the keys a selecting attention keeps
        for name, on in (("sink_proj", self.sink_proj),
                         ("relative_logits", self.relative_logits is not None)):
            if on and selecting:
                raise ValueError(f"attention.{name} is not defined with a selecting attention "
                                 f"(attention.indexer, dynamic_mask or compression)")
        if self.output_gate_per == "head" and not self.output_gate:
            raise ValueError("attention.output_gate_per='head' needs attention.output_gate=true")
        if self.experts is not None:
            self._check_experts()
        if self.differential:
            self._check_differential()
        if self.kind_shapes:
            self._check_kind_shapes()
        if self.indexer is not None:
            self._check_indexer()
        if self.q_lora_rank is not None or self.output_groups is not None:
            self._check_low_rank()
        if not self.q_norm_weights and (self.qk_norm != "head" or not self.qk_norm_weights):
            raise ValueError("attention.q_norm_weights=false needs qk_norm='head' with "
                             "qk_norm_weights=true (only the query norm loses its weight)")
        if self.compression is not None:
            self._check_compression()
        if self.dynamic_mask is not None:
            self._check_dynamic_mask()
        if self.relative_logits is not None:
            self._check_relative_logits()
        if self.cca is not None:
            self._check_cca()
        if self.kv_cached_once and not self.k_eq_v:
            raise ValueError("attention.kv_cached_once=true needs attention.k_eq_v=true (only "
                             "keys that are the values can be cached once)")
        if (self.k_eq_v or self.kv_shared_layers
                or any(shape.k_eq_v for shape in self.kind_shapes.values())) and (
                self.mla is not None or self.experts is not None or self.indexer is not None):
            raise ValueError("attention.k_eq_v and attention.kv_shared_layers are not defined "
                             "with attention.mla, attention.experts or attention.indexer")
        if self.layer_pattern is None and self.sliding_window and self.chunk_size:
            raise ValueError("attention.sliding_window and attention.chunk_size are both set: "
                             "give attention.layer_pattern to say which layers use which")
        for kind, size in (("local", "sliding_window"), ("chunked", "chunk_size")):
            if self.layer_pattern and kind in self.layer_pattern and getattr(self, size) is None:
                raise ValueError(f"attention.layer_pattern has {kind} layers but "
                                 f"attention.{size} is not set")
        return self

    def _check_cca(self) -> None:
        """CCA's convolutions read GQA's W_Q and W_K outputs of one head width, its values are
        viewed as heads of that width and its own L2 norm stands for a QK-norm (ZayaCCAProjection,
        ZayaQKNorm)."""
        parts = [name for name, on in (
            ("attention.mla", self.mla is not None), ("attention.experts", bool(self.experts)),
            ("attention.differential", self.differential),
            ("attention.kind_shapes", bool(self.kind_shapes)),
            ("attention.q_lora_rank", self.q_lora_rank is not None),
            ("attention.output_groups", self.output_groups is not None),
            ("attention.output_gate", self.output_gate), ("attention.k_eq_v", self.k_eq_v),
            ("attention.kv_shared_layers", bool(self.kv_shared_layers)),
            ("attention.v_head_dim", self.v_head_dim is not None),
            ("attention.qk_norm", self.qk_norm != "none"), ("attention.sinks", self.sinks),
            ("attention.indexer", self.indexer is not None),
            ("attention.compression", self.compression is not None)) if on]
        if parts:
            raise ValueError(f"attention.cca is not defined with {', '.join(parts)} (ZAYA1's "
                             f"CCA has GQA heads of one width and its own L2 norm)")

    def _check_latent_gate(self) -> None:
        """A.X-K2's q_gate_proj reads the query latent and yields a gate per channel."""
        assert self.mla is not None
        if self.mla.q_lora_rank is None:
            raise ValueError("attention.mla.latent_gate needs attention.mla.q_lora_rank: the "
                             "gate is projected from the query latent")
        if not self.output_gate or self.output_gate_per != "channel" or self.output_gate_bias:
            raise ValueError("attention.mla.latent_gate needs attention.output_gate=true with "
                             "output_gate_per='channel' and no output_gate_bias (its gate is "
                             "one value per channel from the query latent)")

    def _check_indexer(self) -> None:
        """DSA's indexer reads MLA's query latent, and RoPE turns the first qk_rope_head_dim of
        each indexer head (DeepseekV32Indexer); MiniMax-M3's, without MLA, reads the residual
        and each of its heads selects for a group of whole query heads (MiniMaxM3VLIndexer
        .build_block_mask repeats a head's selection n_heads / index_n_heads times)."""
        mla, indexer = self.mla, self.indexer
        assert indexer is not None
        if mla is not None:
            if mla.q_lora_rank is None:
                raise ValueError("attention.indexer needs attention.mla with q_lora_rank: its "
                                 "queries are projected from MLA's query latent (without MLA "
                                 "they come from the residual, MiniMax-M3's)")
            if indexer.head_dim < mla.qk_rope_head_dim:
                raise ValueError(f"attention.indexer.head_dim={indexer.head_dim} must be >= "
                                 f"attention.mla.qk_rope_head_dim={mla.qk_rope_head_dim} (RoPE "
                                 f"turns that part of each indexer head)")
            if indexer.pooled:
                raise ValueError("attention.indexer.pooled (Qwen4-Exp's QSA) projects its "
                                 "queries from the residual: not with attention.mla")
            if indexer.block_size != 1:
                raise ValueError(f"attention.indexer.block_size={indexer.block_size} with "
                                 f"attention.mla: DSA's indexer selects keys (1); blocks are "
                                 f"MiniMax-M3's, without MLA")
        else:
            if self.experts is not None or self.differential or self.q_lora_rank is not None:
                raise ValueError("attention.indexer without attention.mla is not defined with "
                                 "attention.experts, attention.differential or "
                                 "attention.q_lora_rank")
            if self.n_heads % indexer.n_heads and not indexer.pooled:  # QSA: one selection
                raise ValueError(f"attention.indexer.n_heads={indexer.n_heads} must divide "
                                 f"attention.n_heads={self.n_heads} (each indexer head selects "
                                 f"for a group of query heads)")
            if indexer.shared_layers:
                raise ValueError("attention.indexer.shared_layers needs attention.mla (GLM-5's "
                                 "shared indexer layers are DSA's)")
        # dots3: the indexer sits on the global layers, the local ones slide over their window
        if self.chunk_size or "nope" in self.pattern or "chunked" in self.pattern:
            raise ValueError("attention.indexer selects among all earlier keys of the global "
                             "layers: it is not defined with chunked or nope layers")
        if "global" not in self.pattern:
            raise ValueError("attention.indexer sits on the global layers: "
                             "attention.layer_pattern has none")

    def _check_dynamic_mask(self) -> None:
        """Doge's dynamic mask selects among all earlier keys of MHA/GQA/MQA heads of one
        shape, as DogeAttention does; the other ways of choosing or sharing keys are not
        defined with it."""
        parts = [name for name, on in (
            ("attention.mla", self.mla is not None), ("attention.indexer", bool(self.indexer)),
            ("attention.compression", self.compression is not None),
            ("attention.experts", self.experts is not None),
            ("attention.differential", self.differential),
            ("attention.kind_shapes", bool(self.kind_shapes)),
            ("attention.k_eq_v", self.k_eq_v),
            ("attention.kv_shared_layers", bool(self.kv_shared_layers)),
            ("attention.q_lora_rank", self.q_lora_rank is not None),
            ("attention.output_groups", self.output_groups is not None),
            ("attention.sliding_window", self.sliding_window is not None),
            ("attention.chunk_size", self.chunk_size is not None)) if on]
        if parts:
            raise ValueError(f"attention.dynamic_mask is not defined with {', '.join(parts)}")
        if set(self.pattern) != {"global"}:
            raise ValueError(f"attention.dynamic_mask selects among all earlier keys: every "
                             f"layer is global (attention.layer_pattern={list(self.pattern)})")

    def _check_compression(self) -> None:
        """The compressed entries are one head of d_qk that is both key and value, as
        DeepSeek-V4's kv is; CSA's indexer reads the query latent (q_residual)."""
        assert self.compression is not None
        if self.n_kv_heads != 1 or not self.k_eq_v or self.mla is not None:
            raise ValueError("attention.compression needs one key-and-value head "
                             "(attention.n_kv_heads=1, k_eq_v=true, no mla): a compressed "
                             "entry is both")
        if self.compression.sparse_layers and self.q_lora_rank is None:
            raise ValueError("attention.compression.sparse_layers needs attention.q_lora_rank: "
                             "the CSA indexer's queries come from the query latent")
        if self.indexer is not None or self.kind_shapes or self.experts is not None:
            raise ValueError("attention.compression is not defined with attention.indexer, "
                             "attention.kind_shapes or attention.experts")

    def _check_relative_logits(self) -> None:
        """Inkling's bias sits on MHA/GQA heads of global and sliding layers (a bank per
        layer, as wide as the window on a sliding one)."""
        parts = [name for name, on in (
            ("attention.mla", self.mla is not None), ("attention.experts", bool(self.experts)),
            ("attention.differential", self.differential),
            ("attention.kv_shared_layers", bool(self.kv_shared_layers)),
            ("attention.indexer", self.indexer is not None),
            ("attention.compression", self.compression is not None),
            ("chunked layers", "chunked" in self.pattern)) if on]
        if parts:
            raise ValueError(f"attention.relative_logits is not defined with "
                             f"{', '.join(parts)}")

    def _check_low_rank(self) -> None:
        """DeepSeek-V4's low-rank queries and grouped output projection, on MHA/GQA/MQA
        heads of one shape, without biases, gates or the other variants of W_Q and W_O."""
        parts = [name for name, on in (
            ("attention.mla", self.mla is not None), ("attention.experts", bool(self.experts)),
            ("attention.output_gate", self.output_gate),
            ("attention.differential", self.differential),
            ("attention.kind_shapes", bool(self.kind_shapes)),
            ("attention.qkv_bias", self.qkv_bias and self.q_lora_rank is not None),
            ("attention.out_bias", (self.out_bias or self.last_layer_out_bias)
             and self.output_groups is not None)) if on]
        if parts:
            raise ValueError(f"attention.q_lora_rank and attention.output_groups are not "
                             f"defined with {', '.join(parts)}")

    def _check_kind_shapes(self) -> None:
        """A kind's own shapes: MHA/GQA heads only, each KV head shared by whole query heads."""
        for kind, shape in self.kind_shapes.items():
            if self.mla is not None:
                self._check_latent_kind(kind, shape)
                continue
            if shape.mla is not None:
                raise ValueError(f"attention.kind_shapes.{kind}.mla needs attention.mla")
            if self.experts is not None or self.indexer is not None:
                raise ValueError(f"attention.kind_shapes.{kind} is not defined with "
                                 f"attention.experts or attention.indexer (without "
                                 f"attention.mla)")
            heads = shape.n_heads if shape.n_heads is not None else self.n_heads
            kv = (shape.n_kv_heads if shape.n_kv_heads is not None
                  else self.n_kv_heads if self.n_kv_heads is not None else self.n_heads)
            if heads % kv:
                raise ValueError(f"attention.kind_shapes.{kind}: {kv} key/value heads must "
                                 f"divide its {heads} query heads (give n_kv_heads)")

    def _check_latent_kind(self, kind: str, shape: KindShape) -> None:
        """A kind's own latent attention (dots3's sliding layers): its heads and MLA shapes,
        its query latent there where the model's is, its gate and norms as the model's."""
        assert self.mla is not None
        given = [name for name in ("n_kv_heads", "head_dim", "v_head_dim", "k_eq_v", "sinks")
                 if getattr(shape, name) is not None]
        if given:
            raise ValueError(f"attention.kind_shapes.{kind}.{given[0]} has no meaning with "
                             f"attention.mla; give kind_shapes.{kind}.mla")
        own = shape.mla
        if own is not None and ((own.q_lora_rank is None) != (self.mla.q_lora_rank is None)
                                or own.latent_gate != self.mla.latent_gate
                                or own.rope_key_norm != self.mla.rope_key_norm):
            raise ValueError(f"attention.kind_shapes.{kind}.mla: q_lora_rank set or not, "
                             f"latent_gate and rope_key_norm as attention.mla's (only the "
                             f"sizes are a kind's own)")
        if self.indexer is not None and kind == "global":
            raise ValueError("attention.kind_shapes.global is not defined with "
                             "attention.indexer (the indexer reads the model's query latent "
                             "on the global layers)")

    def _check_differential(self) -> None:
        """Differential attention pairs the query heads (head i with head i + h/2) and, as
        DiffLlamaAttention does, the key/value heads' values (the first half's beside the
        second's): both counts even."""
        if (self.mla is not None or self.experts is not None or self.indexer is not None
                or self.kind_shapes or self.k_eq_v or self.kv_shared_layers):
            raise ValueError("attention.differential is not defined with attention.mla, "
                             "attention.experts, attention.indexer, attention.kind_shapes, "
                             "attention.k_eq_v or attention.kv_shared_layers")
        kv = self.n_kv_heads if self.n_kv_heads is not None else self.n_heads
        for name, count in (("n_heads", self.n_heads), ("n_kv_heads", kv)):
            if count % 2:
                raise ValueError(f"attention.differential pairs the heads: attention.{name}="
                                 f"{count} must be even")

    def _check_experts(self) -> None:
        """A mixture of attention heads: each expert holds n_kv_heads query heads."""
        if self.mla is not None or self.output_gate or self.qkv_bias:
            raise ValueError("attention.experts (a mixture of attention heads) is not defined "
                             "with attention.mla, attention.output_gate or attention.qkv_bias")
        if self.n_kv_heads is None:
            raise ValueError("attention.experts needs attention.n_kv_heads: the query heads of "
                             "one expert")
        if self.n_heads // self.n_kv_heads > self.experts:
            raise ValueError(f"attention.n_heads / n_kv_heads = "
                             f"{self.n_heads // self.n_kv_heads} experts per token exceed "
                             f"attention.experts={self.experts}")

    @property
    def pattern(self) -> tuple[AttentionKind, ...]:
        """layer_pattern, or its default (all local, all chunked or all global)."""
        if self.layer_pattern:
            return self.layer_pattern
        return (("local",) if self.sliding_window else ("chunked",) if self.chunk_size
                else ("global",))
