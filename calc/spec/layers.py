"""Per-layer structure: which mixer and which FFN each layer has, written as configs write it.

A model is a sequence of layers, each a token mixer (attention, a selective state-space scan, a
gated DeltaNet, lightning attention, RWKV's time-mix, Griffin's recurrent block, a short
convolution, or attention and Mamba side by side)
followed by an FFN (dense, mixture of experts, or none). Configs write the sequence compactly,
as a pattern that repeats plus exceptions (`layer_types`, `attn_layer_period`/`offset`,
`mlp_only_layers`, `first_k_dense_replace`, `interleave_moe_layer_step`, ...), and so does
`LayersSpec`: a mixer pattern and an FFN pattern, each repeated cyclically over the layers, and
`exceptions` by layer index. The attention kind of each layer (global, sliding window, chunked,
no position encoding) repeats the same way through `attention.layer_pattern`.

The shapes of the non-attention mixers live here too (MambaSpec, DeltaNetSpec, LightningSpec,
RwkvSpec, GriffinSpec, MlstmSpec, ShortConvSpec), one per model, as each config has one set of
them, the block shared by several depths (SharedBlockSpec: Zamba's) and the per-layer
embeddings that feed every layer a vector of its own (PerLayerEmbeddingsSpec: Gemma 3n's and
Gemma 4's).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.base import MAX_LAYERS, MAX_VOCAB, MAX_WIDTH, Frozen

# A layer's token mixer. "attention+mamba": both read the same normed input and their outputs
# are summed into the residual (Falcon-H1's parallel hybrid, Zuo et al. 2025).
# "cross_attention": attention from the text to image tokens in place of self-attention (Llama
# 3.2 Vision's cross-attention layers, calc.spec.layers.CrossAttentionSpec).
MixerKind = Literal["attention", "mamba", "deltanet", "lightning", "rwkv", "griffin", "mlstm",
                    "conv", "attention+mamba", "cross_attention"]
# How an attention layer sees the keys: all of them (global), the last w (local: sliding window),
# those of its own chunk of c tokens (chunked: Llama 4's attention_chunk_size), or all of them
# without any position encoding (nope: Llama 4's no_rope_layers, SmolLM3, Cohere 2).
AttentionKind = Literal["global", "local", "chunked", "nope"]
FFNKind = Literal["dense", "moe", "none"]
# The mixers other than attention, by the name layer_counts gives them, as reports print them.
MIXER_NAMES = {"mamba": "Mamba", "deltanet": "gated DeltaNet", "lightning": "lightning attention",
               "rwkv": "RWKV time-mix", "griffin": "Griffin recurrent block", "mlstm": "mLSTM",
               "conv": "short-convolution", "cross_attention": "cross-attention"}
MAX_PATTERN = 1024


class MambaSpec(Frozen):
    """A selective state-space mixer (S6): Mamba (Gu & Dao 2023, §3.4 and Fig. 3) or Mamba-2
    (Dao & Gu 2024, §7 and Fig. 6), as their reference code and transformers build it.

    Mamba: in_proj d → 2D (x and the gate z), a causal depthwise conv1d of kernel k over D
    channels, x_proj D → R + 2N (Δ's low rank, B, C), dt_proj R → D (with bias), A (D × N) and
    D (D), out_proj D → d. Mamba-2: in_proj d → 2D + 2GN + H (x, z, B and C per group, Δ per
    head), the conv over D + 2GN channels, Δ bias, A and D one per head, a gated RMSNorm over D.
    """

    version: Literal[1, 2] = Field(1, description="1: Mamba (S6); 2: Mamba-2 (SSD)")
    d_inner: int = Field(ge=1, le=MAX_WIDTH * 16,
                         description="channels D of the scan: expand × d_model (Mamba: 2d)")
    d_state: int = Field(ge=1, le=MAX_WIDTH, description="state size N per channel")
    d_conv: int = Field(4, ge=1, le=1024, description="kernel k of the causal depthwise conv1d")
    dt_rank: int | None = Field(None, ge=1, le=MAX_WIDTH,
                                description="Mamba: rank R of Δ's projection (⌈d/16⌉)")
    n_heads: int | None = Field(None, ge=1, le=MAX_WIDTH,
                                description="Mamba-2: heads H (one Δ, A, D each; width D/H)")
    n_groups: int = Field(1, ge=1, le=MAX_WIDTH,
                          description="Mamba-2: groups of heads sharing B and C")
    conv_bias: bool = Field(True, description="a bias on the conv1d")
    bias: bool = Field(False, description="biases on in_proj and out_proj")
    gated_norm: bool | None = Field(
        None, description="Mamba-2's gated RMSNorm over D before out_proj (default: on for "
                          "Mamba-2; Falcon-H1's mamba_rms_norm)")
    dt_norms: bool = Field(False, description="Mamba: RMSNorms on Δ, B and C (Jamba)")

    @model_validator(mode="after")
    def _version(self) -> MambaSpec:
        if self.version == 1:
            if self.dt_rank is None:
                raise ValueError("mamba.dt_rank is required for mamba.version=1")
            for name in ("n_heads", "gated_norm"):
                if getattr(self, name):
                    raise ValueError(f"mamba.{name} is a Mamba-2 field (mamba.version=2)")
            if self.n_groups != 1:
                raise ValueError("mamba.n_groups is a Mamba-2 field (mamba.version=2)")
            return self
        if self.n_heads is None:
            raise ValueError("mamba.n_heads is required for mamba.version=2")
        if self.dt_rank is not None or self.dt_norms:
            raise ValueError("mamba.dt_rank and mamba.dt_norms are Mamba-1 fields "
                             "(mamba.version=1)")
        if self.d_inner % self.n_heads:
            raise ValueError(f"mamba.n_heads={self.n_heads} must divide mamba.d_inner="
                             f"{self.d_inner}")
        if self.n_heads % self.n_groups:
            raise ValueError(f"mamba.n_groups={self.n_groups} must divide mamba.n_heads="
                             f"{self.n_heads}")
        return self

    @property
    def has_gated_norm(self) -> bool:
        return self.version == 2 and self.gated_norm is not False


class DeltaNetSpec(Frozen):
    """Gated DeltaNet (Yang, Kautz & Hatamizadeh 2025, ICLR; Qwen3-Next's linear attention):
    q, k, v and an output gate z projected together, β and the decay α per value head, a causal
    depthwise conv1d over q, k and v, a state of d_k × d_v per value head, a gated RMSNorm of
    width d_v (shared by the heads) and out_proj.

    Kimi Delta Attention (Kimi Team 2025, "Kimi Linear", §3; transformers'
    KimiLinearDeltaAttention) is the same rule with gate "channel": the decay is one per key
    channel of each state (f_a_proj d → r, f_b_proj r → H_v·d_k, a bias per channel, A per
    head), the output gate comes from g_a_proj d → r, g_b_proj r → H_v·d_v, and q, k, v and β
    are projected from d without them. Without a gate_rank the channel gate's two projections
    are full rank, d → H_v·d_k and d → H_v·d_v (Ling 3's KDA, transformers'
    BailingHybridDeltaAttention: forget_gate.f_proj and g_proj)."""

    n_k_heads: int = Field(ge=1, le=MAX_WIDTH, description="query/key heads")
    n_v_heads: int = Field(ge=1, le=MAX_WIDTH, description="value heads (each has a state)")
    d_k: int = Field(ge=1, le=MAX_WIDTH, description="query/key width per head")
    d_v: int = Field(ge=1, le=MAX_WIDTH, description="value width per head")
    d_conv: int = Field(4, ge=1, le=1024, description="kernel of the causal depthwise conv1d")
    gate: Literal["head", "channel"] = Field(
        "head", description="head: Gated DeltaNet's decay, one per value head, and output gate z "
                            "from in_proj; channel: Kimi Delta Attention's decay per key channel "
                            "(a bias per channel) and output gate, each through a low-rank "
                            "pair d → gate_rank → value heads × width, or one full-rank "
                            "projection d → value heads × width without gate_rank")
    gate_rank: int | None = Field(None, ge=1, le=MAX_WIDTH,
                                  description="gate channel: rank of the two low-rank gates "
                                              "(Kimi Linear: the head width); none: each gate "
                                              "one full-rank projection (Ling 3)")

    @model_validator(mode="after")
    def _groups(self) -> DeltaNetSpec:
        if self.n_v_heads % self.n_k_heads:
            raise ValueError(f"deltanet.n_k_heads={self.n_k_heads} must divide "
                             f"deltanet.n_v_heads={self.n_v_heads}")
        if self.gate_rank is not None and self.gate != "channel":
            raise ValueError(f"deltanet.gate_rank={self.gate_rank}: a rank comes only with "
                             f"deltanet.gate='channel' (gate={self.gate!r})")
        return self

    @property
    def channel_gate(self) -> bool:
        return self.gate == "channel"

    @property
    def full_rank_gates(self) -> bool:
        """The channel gate's decay and output gate each one projection from d (no rank)."""
        return self.channel_gate and self.gate_rank is None


class LightningSpec(Frozen):
    """Lightning attention (Qin et al. 2024, "Lightning Attention-2", arXiv 2401.04658; the
    MiniMax-01 report, arXiv 2501.08313, §2.2; transformers' MiniMaxLightningAttention): a
    linear attention with a fixed decay per head and no delta rule. qkv_proj d → 3·H·d_h (no
    bias, SiLU on q, k and v), a state S = λ·S + k vᵀ of d_h × d_h per head read as qᵀS, an
    RMSNorm over all H·d_h channels of the output, an output gate sigmoid(output_gate(x))
    with output_gate d → H·d_h, and out_proj H·d_h → d. The decay λ of each head is a fixed
    slope (ALiBi's, scaled by the layer's depth), a buffer, not a parameter; there is no
    convolution."""

    n_heads: int = Field(ge=1, le=MAX_WIDTH, description="heads H (one d_h × d_h state each)")
    d_head: int = Field(ge=1, le=MAX_WIDTH, description="width d_h of q, k and v per head")


class RwkvSpec(Frozen):
    """RWKV-4 (Peng et al. 2023, "RWKV: Reinventing RNNs for the Transformer Era", arXiv
    2305.13048, §3; transformers' RwkvSelfAttention and RwkvFeedForward). The time-mix: the
    token shift mixes each channel of x_t with x_{t−1} through three learned vectors of d
    (time_mix_key/value/receptance), key, value and receptance d → d_a and output d_a → d (no
    biases), and the WKV recurrence over d_a channels with a learned decay w and bonus u per
    channel (time_decay, time_first), read through sigmoid(receptance). The channel-mix's key
    d → d_ff and value d_ff → d, squared ReLU between them, are the layer's dense FFN
    (activation relu2, no gate: the same two matrices); what a dense FFN lacks is counted here:
    its own token shift (time_mix_key/receptance, 2d) and its receptance d → d, whose sigmoid
    multiplies the FFN's output."""

    d_attention: int = Field(ge=1, le=MAX_WIDTH,
                             description="channels d_a of key, value, receptance and the WKV "
                                         "state (attention_hidden_size)")


class GriffinSpec(Frozen):
    """Griffin's recurrent block (De et al. 2024, "Griffin: Mixing Gated Linear Recurrences with
    Local Attention for Efficient Language Models", arXiv 2402.19427, §2.4 and Fig. 2;
    RecurrentGemma, Botev et al. 2024, arXiv 2404.07839; transformers'
    RecurrentGemmaRecurrentBlock and RecurrentGemmaRglru). Two branches from the normed input:
    linear_y d → D (its GeLU output gates the block's result) and linear_x d → D, then a causal
    depthwise temporal conv1d of kernel k over the D channels, then the RG-LRU: its input gate
    and recurrence gate, each block-diagonal (n_blocks blocks of D/n_blocks × D/n_blocks, with a
    bias per channel), and its recurrent parameter Λ (one per channel) give
    a_t = σ(Λ)^{c·r_t} (c = 8; transformers: exp(−8·r_t·softplus(Λ))), and
    h_t = a_t ⊙ h_{t−1} + √(1 − a_t²) ⊙ (i_t ⊙ x_t); linear_out D → d
    reads h ⊙ GeLU(y). Every projection and the conv carry biases (nn.Linear and nn.Conv1d's
    default), as the gates do."""

    d_lru: int = Field(ge=1, le=MAX_WIDTH * 16,
                       description="channels D of both branches, the conv and the RG-LRU state "
                                   "(lru_width)")
    n_blocks: int = Field(ge=1, le=MAX_WIDTH,
                          description="blocks of the block-diagonal input and recurrence gates "
                                      "(RecurrentGemma: num_attention_heads)")
    d_conv: int = Field(4, ge=1, le=1024,
                        description="kernel k of the causal temporal conv1d (conv1d_width)")

    @model_validator(mode="after")
    def _blocks(self) -> GriffinSpec:
        if self.d_lru % self.n_blocks:
            raise ValueError(f"griffin.n_blocks={self.n_blocks} must divide griffin.d_lru="
                             f"{self.d_lru} (the gates' blocks are square, d_lru/n_blocks wide)")
        return self

    @property
    def block_width(self) -> int:
        return self.d_lru // self.n_blocks


class MlstmSpec(Frozen):
    """xLSTM's mLSTM layer (Beck et al. 2024, "xLSTM: Extended Long Short-Term Memory", arXiv
    2405.04517, §2.3; xLSTM 7B, Beck et al. 2025, arXiv 2503.13427, §3; transformers'
    xLSTMLayer): from the normed input, q and k d → d_qk and v d → d_v (split into n_heads
    heads), the output gate's preactivation d → d_v, and the input and forget gates d → n_heads
    with a bias each (soft-capped by gate_soft_cap's tanh, no parameter); per head a matrix
    memory C (d_qk/H × d_v/H) and normaliser n (d_qk/H) with exponential gating,
    C_t = f_t·C_{t−1} + i_t·k_t v_tᵀ, n_t = f_t·n_{t−1} + i_t·k_t, h_t = C_tᵀq_t / max(|n_tᵀq_t|,
    e^{−m_t}); a per-head LayerNorm over d_v (γ, no β), the sigmoid output gate, and out_proj
    d_v → d. The projections carry no biases (use_bias=False; the xLSTM-7B config)."""

    n_heads: int = Field(ge=1, le=MAX_WIDTH, description="heads H of the matrix memory "
                                                         "(num_heads)")
    d_qk: int = Field(ge=1, le=MAX_WIDTH * 16,
                      description="width of q and k over all heads (int(d · qk_dim_factor))")
    d_v: int = Field(ge=1, le=MAX_WIDTH * 16,
                     description="width of v, the output gate and the memory's readout over all "
                                 "heads (int(d · v_dim_factor))")

    @model_validator(mode="after")
    def _heads(self) -> MlstmSpec:
        for name in ("d_qk", "d_v"):
            if getattr(self, name) % self.n_heads:
                raise ValueError(f"mlstm.n_heads={self.n_heads} must divide mlstm.{name}="
                                 f"{getattr(self, name)} (q, k and v split into equal heads)")
        return self


class CrossAttentionSpec(Frozen):
    """Cross-attention layers (Llama 3.2 Vision; transformers 5.24.0 modeling_mllama.py
    MllamaCrossAttentionDecoderLayer and MllamaTextCrossAttention): at the layers whose mixer is
    cross_attention the text attends to image tokens in place of itself. W_Q reads the text
    (d → h·d_qk), W_K and W_V read the image tokens, already d wide (the wrapper's
    multi_modal_projector), d → h_kv·d_qk and h_kv·d_v, W_O h·d_v → d, none with a bias; an
    RMSNorm over d_qk on each query and each key head (q_norm, k_norm; no position encoding);
    the model's heads and head widths. The attention's and the FFN's outputs are scaled by
    tanh of a learned scalar each (cross_attn_attn_gate, cross_attn_mlp_gate) before the
    residual add; the layer's two norms and its dense FFN are the model's.

    Without image tokens transformers skips the layer whole (MllamaTextModel.forward: "For
    text-only path we should skip cross attention layers"), so its weights count as
    parameters and its FLOPs are 0. With `image_tokens` per sequence, a text token runs W_Q,
    W_O and the FFN of each such layer and scores all the image tokens (no causal mask across
    them), and each sequence's image tokens run W_K and W_V once per layer."""

    image_tokens: int = Field(
        0, ge=0, le=1 << 24,
        description="image tokens each sequence's text attends to (the vision tower's outputs, "
                    "cross_attention_states); 0: text only, the cross-attention layers are "
                    "skipped as transformers skips them")


class ShortConvSpec(Frozen):
    """A gated short convolution (LFM2): in_proj d → 3d (B, C and x), y = C ⊙ conv(B ⊙ x) with
    a causal depthwise conv1d of kernel k over d channels, out_proj d → d."""

    d_conv: int = Field(3, ge=1, le=1024, description="kernel k (LFM2's conv_L_cache)")
    bias: bool = Field(False, description="biases on the projections and the conv")


class PerLayerEmbeddingsSpec(Frozen):
    """Per-layer embeddings (Gemma 3n, Gemma 4 E2B/E4B; transformers 5.24.0 modeling_gemma4.py
    Gemma4TextModel and Gemma4TextDecoderLayer, modeling_gemma3n.py alike): every layer gets a
    vector of its own for each token, p wide, and adds it to the residual stream through a gate.

    Once per model: a table of vocab_size_per_layer rows × L·p (embed_tokens_per_layer, one
    p-wide slice per layer), a projection d → L·p of the token embedding
    (per_layer_model_projection, no bias) and a norm over each p-wide slice
    (per_layer_projection_norm, one p-wide weight for all the layers); a layer's input is the
    sum of its table slice and its projected slice. In each layer, after the FFN: a gate
    d → p (per_layer_input_gate, no bias) whose activated output multiplies the layer's input,
    a projection p → d (per_layer_projection, no bias) and a norm over d
    (post_per_layer_input_norm) before the residual add. The norms are the model's kind; the
    gate's activation is the FFN's."""

    width: int = Field(ge=1, le=MAX_WIDTH,
                       description="width p of each layer's vector (hidden_size_per_layer_input)")
    vocab_size: int | None = Field(
        None, ge=1, le=MAX_VOCAB,
        description="rows of the per-layer table (vocab_size_per_layer_input); unset: "
                    "vocab_size")


class AltUpSpec(Frozen):
    """Alternating updates (AltUp; Baykal et al. 2023, NeurIPS, "Alternating Updates for
    Efficient Transformers"; transformers 5.24.0 modeling_gemma3n.py Gemma3nTextAltUp): the
    residual stream widened to n copies of width d, of which each layer computes one.

    Once per model: the embedding copied into n streams through n − 1 projections d → d
    (altup_projections, no bias) and the streams collapsed after the last layer through n − 1
    more (altup_unembed_projections) and averaged. In each layer: a router d → n over the
    active stream after a norm (modality_router, no bias; router_norm), whose tanh gives the
    coefficients of a prediction n → n² (prediction_coefs, no bias: each stream predicted as a
    mix of all n) before the layer and of a correction n → n (correction_coefs, no bias) after
    it, the router run again on the layer's output; and a learned scale of width d on the
    corrected active stream (correct_output_scale). The layer runs on the active stream only;
    the norm is the model's kind."""

    streams: int = Field(ge=1, le=16, description="copies n of the residual stream "
                                                  "(altup_num_inputs)")


class LaurelSpec(Frozen):
    """Learned augmented residual layer (LAuReL; Menghani et al. 2025, arXiv 2411.07501, the
    low-rank variant; transformers 5.24.0 modeling_gemma3n.py Gemma3nTextLaurelBlock): beside
    each layer's mixer, its normed input x through a rank-r product d → r → d (linear_left,
    linear_right, no biases) and a norm over d (post_laurel_norm, the model's kind), x plus
    that added to the mixer's residual output and the sum scaled by 1/√2."""

    rank: int = Field(ge=1, le=MAX_WIDTH, description="rank r of the low-rank residual "
                                                      "(laurel_rank)")


class SharedBlockSpec(Frozen):
    """A Transformer block whose weights are shared by the depths it runs at (Zamba, Glorioso
    et al. 2024, arXiv 2405.16712, §2 and Fig. 2; Zamba2, arXiv 2411.15242, Fig. 2;
    transformers' ZambaAttentionDecoderLayer and Zamba2AttentionDecoderLayer).

    At each depth in `layers` the block runs before that layer's own mixer on the concatenation
    [hidden state, the token's embedding], 2d wide: an RMSNorm over 2d, attention whose W_Q,
    W_K, W_V read 2d (the model's heads, head widths and position encoding; no biases) and
    whose W_O writes d, an RMSNorm over d and the model's FFN (ffn: d_ff, gated, biases), no
    residual inside. A projection d → d of each depth's own (no bias) turns the block's output
    into an addition to the layer's mixer input. `n_blocks` weight sets are used in turn: the
    i-th depth runs set i mod n_blocks (Zamba2's num_mem_blocks; Zamba: one). Zamba2 adds
    low-rank adapters of each depth's own (rank r, no biases, outputs added to the shared
    projection's): d → r → the FFN's gate and up widths, and with `attention_adapters` 2d → r
    → each of W_Q's, W_K's and W_V's output widths.

    Parameters count each weight set once and each depth's projection and adapters once; FLOPs
    count the whole block, its projection and its adapters at every depth it runs."""

    layers: tuple[int, ...] = Field(
        min_length=1, max_length=MAX_LAYERS,
        description="0-based indices of the layers the block runs before (Zamba's hybrid "
                    "layers), ascending")
    n_blocks: int = Field(1, ge=1, le=MAX_LAYERS,
                          description="weight sets used in turn (Zamba2's num_mem_blocks); "
                                      "at most one per depth")
    adapter_rank: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="rank of the adapters of each depth on the FFN's gate and up projections "
                    "(Zamba2's adapter_rank); unset: none (Zamba)")
    attention_adapters: bool = Field(
        False, description="adapters of each depth on W_Q, W_K and W_V too (Zamba2's "
                           "use_shared_attention_adapter)")

    @model_validator(mode="after")
    def _depths(self) -> SharedBlockSpec:
        if list(self.layers) != sorted(set(self.layers)) or min(self.layers) < 0:
            raise ValueError(f"shared_block.layers={list(self.layers)} must be distinct "
                             f"non-negative layer indices in ascending order")
        if self.n_blocks > len(self.layers):
            raise ValueError(f"shared_block.n_blocks={self.n_blocks} must be at most the "
                             f"{len(self.layers)} depths it runs at (shared_block.layers)")
        if self.attention_adapters and self.adapter_rank is None:
            raise ValueError("shared_block.attention_adapters needs shared_block.adapter_rank")
        return self

    @property
    def depths(self) -> int:
        return len(self.layers)


class LayerAt(Frozen):
    """Layers that depart from the patterns; a field left out keeps the pattern's value."""

    layers: tuple[int, ...] = Field(min_length=1, max_length=MAX_LAYERS,
                                    description="0-based indices of the layers")
    mixer: MixerKind | None = None
    attention: AttentionKind | None = None
    ffn: FFNKind | None = None

    @model_validator(mode="after")
    def _indices(self) -> LayerAt:
        if min(self.layers) < 0:
            raise ValueError(f"layers.exceptions: layer index {min(self.layers)} must be >= 0")
        return self


class PredictionHeadSpec(Frozen):
    """A prediction head between the final norm and the LM head: a d × d dense layer, an
    activation and a norm of the model's kind (transformers 5.24.0 modeling_modernbert_decoder.py,
    ModernBertDecoderPredictionHead: dense, act, norm; the logits are decoder(lm_head(x)))."""

    bias: bool = Field(False, description="a bias on the dense layer (ModernBERT decoder's "
                                          "classifier_bias)")


class HyperConnectionsSpec(Frozen):
    """Hyper-connections (Zhu et al. 2024, arXiv 2409.19606): the residual stream widened to
    `streams` copies of width d. Before the mixer and before the FFN of every layer a map
    reads all n·d values (normed, without a weight) and yields, per token, n weights that sum
    the streams into the sublayer's input (pre) and n that spread its output back over them
    (post); DeepSeek-V4's manifold-constrained form (mHC) also yields an n × n matrix that
    mixes the streams themselves (residual_mix, made doubly stochastic by Sinkhorn
    iterations). Each map is a dynamic part, a weight of (2n [+ n²]) × n·d, and a static part,
    a bias of 2n [+ n²] values and a scale per output group (transformers 5.24.0
    modeling_hy_v4.py HYV4HyperConnection: fn, base, scale; modeling_deepseek_v4.py
    DeepseekV4HyperConnection). Before the final norm a head map collapses the streams into
    one (HYV4HyperHead, DeepseekV4HyperHead: hc_fn n × n·d, hc_base n, hc_scale 1)."""

    streams: int = Field(ge=1, le=64, description="residual streams n (hc_mult)")
    residual_mix: bool = Field(
        False, description="each map also yields an n × n matrix mixing the streams "
                           "(DeepSeek-V4's mHC comb; HunYuan V4's HYV4HyperConnection drops it)")
    gate_rank: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="the gated low-rank form (Qwen4-Exp's Qwen4ExpTextGatedResidual, "
                    "hc_lowrank r): each map norms the streams group-wise with a γ of n·d "
                    "(an RMSNorm per stream), gates every normed element by σ(W_up SiLU(W_down "
                    "y / n)) (n·d → r → n·d, no bias), takes the streams' mean as the "
                    "sublayer's input and spreads its output by 2σ(W_inj y / n) (n·d → n); "
                    "the head map is the same without W_inj. The maps' norms replace the "
                    "layers' and the final norm (the model has neither)")

    @model_validator(mode="after")
    def _gated(self) -> HyperConnectionsSpec:
        if self.gate_rank is not None and self.residual_mix:
            raise ValueError(f"hyper_connections.gate_rank={self.gate_rank} (Qwen4-Exp's "
                             f"gated maps) mixes no streams: residual_mix must be false")
        return self


class LayersSpec(Frozen):
    """The sequence of layers: patterns repeated cyclically over the layers, and exceptions."""

    mixer_pattern: tuple[MixerKind, ...] = Field(
        ("attention",), min_length=1, max_length=MAX_PATTERN,
        description="mixer of layers 0, 1, ... repeated cyclically (Qwen3-Next: deltanet, "
                    "deltanet, deltanet, attention; MiniMax-Text-01: lightning × 7, attention)")
    ffn_pattern: tuple[FFNKind, ...] | None = Field(
        None, min_length=1, max_length=MAX_PATTERN,
        description="FFN of layers 0, 1, ... repeated cyclically; default: moe's "
                    "first_dense_layers and every, else dense (none: Mamba)")
    exceptions: tuple[LayerAt, ...] = Field(
        (), max_length=MAX_PATTERN,
        description="layers that depart from the patterns (Qwen3-MoE's mlp_only_layers: "
                    "{layers = [0, 1], ffn = 'dense'})")

    def at(self, field: str) -> dict[int, str]:
        """Layer index → the exceptions' value of `field` (mixer, attention or ffn)."""
        return {i: getattr(e, field) for e in self.exceptions for i in e.layers
                if getattr(e, field) is not None}


def repeat(pattern: tuple[str, ...], n: int, exceptions: dict[int, str]) -> tuple[str, ...]:
    """The pattern repeated over n layers, with the exceptions."""
    return tuple(exceptions.get(i) or pattern[i % len(pattern)] for i in range(n))
