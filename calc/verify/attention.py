"""Attention in the reference model: MHA/GQA/MQA or MLA, with QKᵀ and A·V as explicit matmuls
(FlopCounterMode counts 0 for the fused CPU SDPA kernel), tagged attention/scores.

A sliding-window layer multiplies each query with its w keys only, a chunked layer each chunk
with itself; sinks join each softmax as one more logit per head; an output gate multiplies each
head's output by sigmoid(x W_G), per channel or per head; DeepSeek Sparse Attention's layers
attend to the keys the indexer selects (calc.verify.indexer); differential attention weighs
two KV heads' values side by side by each map and subtracts λ × the second half of the heads'
outputs from the first's (DifferentialLambda). DeepSeek-V4's queries come through a latent
(attention.q_lora_rank) and its W_O is grouped (GroupedOutput); its compressed layers attend to
their window's keys and, in one softmax, to a compressor's entries (calc.verify.compressor):
all of them on an HCA layer, those the CSA indexer selects on a CSA layer. Doge's dynamic mask
(DynamicMask) scores each key from its value per key/value head, adds the score to its logits
and keeps each query's top min(keep, keys seen) keys, which it then multiplies alone.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.compressor import CompressedIndexer, Compressor, select_entries, visible
from calc.verify.indexer import (
    BlockIndexer,
    Indexer,
    attend_selected,
    select,
    select_blocks,
    select_pooled,
)
from calc.verify.moa import ExpertOutputs, ExpertQueries
from calc.verify.parts import (
    CausalConv,
    alibi_slopes,
    linear,
    make_norm,
    rope,
    scales,
    sinusoids,
    tag,
)
from calc.verify.zaya import CCAProjection


class RelativePositions(nn.Module):
    """Transformer-XL relative positions (Dai et al. 2019 §3.3): W_R projects the sinusoidal
    embedding of every distance 0..T−1 into keys; u and v stand in for the query in the content
    and position terms. The projection depends on positions only, so it is done once per batch,
    and as a broadcast product: calc counts it 0 per token (calc.formulas.flops), and neither
    does FlopCounterMode, which counts matrix products only."""

    def __init__(self, d: int, heads: int, width: int):
        super().__init__()
        tag(self, "attention/position")
        self.heads, self.width = heads, width
        self.proj = linear(d, heads * width, False, "attention/position")  # W_R
        self.u = nn.Parameter(torch.zeros(heads, 1, width))
        self.v = nn.Parameter(torch.zeros(heads, 1, width))

    def keys(self, length: int, d: int, device: torch.device, dtype: torch.dtype) -> Tensor:
        """[h, T, width]: the projected embedding of each distance 0..T−1."""
        table = sinusoids(length, d, device, dtype)  # [T, d]
        keys = (table[:, :, None] * self.proj.weight.t()[None]).sum(1)  # [T, h·width]
        return keys.view(length, self.heads, self.width).transpose(0, 1)


class PositionBias(nn.Module):
    """A bucketed score bias (position.kind 'bucketed'): one table for the model, a value per
    head for each relative-position bucket and each segment pair (CPM-Ant's
    CpmAntSegmentPositionEmbedding, T5's relative attention bias). Every token of the
    reference model is in one segment, so its rows are the buckets'; the lookup is an
    indexing and the add element-wise, both 0 FLOPs (calc.formulas.flops)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "position_bias")
        position = spec.position
        assert position.buckets is not None
        self.buckets, self.far = position.buckets, max(spec.context_length, 2)
        self.table = nn.Parameter(torch.zeros(position.bias_rows, spec.attention.n_heads))

    def bucket(self, offsets: Tensor) -> Tensor:
        """Each key − query offset's bucket: half the buckets for keys after the query; in
        each half, distances below a quarter of the buckets their own, longer ones on a log
        scale up to the context (the last bucket beyond)."""
        half = self.buckets // 2
        exact = max(half // 2, 1)
        side = (offsets > 0).long() * half
        distance = offsets.abs()
        scaled = torch.log(distance.clamp(min=1).float() / exact) / math.log(max(self.far / exact,
                                                                                 2.0))
        far = exact + (scaled * (half - exact)).long()
        inside = torch.where(distance < exact, distance, far).clamp(0, max(half - 1, 0))
        return (side + inside).clamp(0, self.buckets - 1)

    def forward(self, offsets: Tensor, dtype: torch.dtype) -> Tensor:
        """[h, *offsets.shape]: each head's bias for each offset."""
        return F.embedding(self.bucket(offsets), self.table).to(dtype).movedim(-1, 0)


class RelativeLogits(nn.Module):
    """Inkling's relative-position bias projected per token (attention.relative_logits;
    modeling_inkling.py InklingAttention.r_proj and InklingRelativeLogits): r_proj d → h·d_rel,
    then each head's d_rel states times the d_rel × extent bank, one logit per backward
    distance, as transformers computes it (a matmul per token, tagged attention/relative)."""

    def __init__(self, d: int, heads: int, d_rel: int, extent: int, scale: bool = False):
        super().__init__()
        tag(self, "attention/relative")
        self.heads, self.extent = heads, extent
        self.r = linear(d, heads * d_rel, False, "attention/relative")
        self.bank = nn.Parameter(torch.empty(d_rel, extent).uniform_(-0.1, 0.1))
        # Inkling 2's scale per head and state (Inkling2ScaledL2Clip.scale): element-wise, held
        self.scale = nn.Parameter(torch.ones(heads, d_rel)) if scale else None

    def forward(self, x: Tensor) -> Tensor:
        """[B, h, T, extent]: each query head's bias for distances 0 … extent − 1."""
        b, t, _ = x.shape
        return (self.r(x).view(b, t, self.heads, -1) @ self.bank).transpose(1, 2)

    def bias(self, logits: Tensor, distance: Tensor) -> Tensor:
        """Each score's bias: the logit of its query − key distance, 0 from extent on and for
        keys after the query (the mask hides those); a lookup, 0 FLOPs."""
        index = distance.clamp(0, self.extent - 1).expand(*logits.shape[:3], -1)
        far = (distance < 0) | (distance >= self.extent)
        return logits.gather(-1, index).masked_fill(far, 0.0)


class Attention(nn.Module):
    """MHA/GQA/MQA or MLA; QKᵀ and A·V as explicit matmuls, tagged attention/scores."""

    def __init__(self, spec: ModelSpec, kind: str, indexed: bool | None = True, own_kv: bool = True,
                 out_bias: bool = False, compressed: str = ""):
        super().__init__()
        tag(self, "attention/scores")
        spec = spec.for_kind(kind)  # this kind's head shapes (attention.kind_shapes)
        att, d = spec.attention, spec.d_model
        self.h, self.h_kv = att.n_heads, spec.n_kv_heads
        self.d_qk, self.d_v = spec.head_dim_qk, spec.head_dim_v
        self.window = att.sliding_window if kind == "local" else None
        self.chunk = att.chunk_size if kind == "chunked" else None
        self.rope = spec.position.kind == "rope" and kind != "nope"
        self.alibi = spec.position.kind == "alibi"
        # the model's bucketed bias table (ReferenceModel links it; not a part of this layer)
        self.position_bias: tuple[PositionBias, ...] = ()
        self.bucketed = spec.position.kind == "bucketed" and kind != "nope"
        self.relative = (RelativePositions(d, self.h, self.d_qk)
                         if spec.position.kind == "relative" else None)
        self.d = d
        # Inkling's bias per backward distance, its bank the window wide on a sliding layer;
        # the logits of this forward, made from the layer's input
        rel = att.relative_logits
        self.relative_logits = (RelativeLogits(d, self.h, rel.d_rel, self.window or rel.extent,
                                               rel.scale)
                                if rel is not None else None)
        self.rel_logits: Tensor | None = None
        # Inkling's residual short convolutions on W_K's and W_V's outputs (k_sconv, v_sconv)
        kernel = spec.residual_conv
        self.kv_convs = (nn.ModuleList(CausalConv(self.h_kv * width, kernel, False,
                                                  "attention/conv")
                                       for width in (self.d_qk, self.d_v))
                         if kernel is not None else None)
        # Inkling 2's per-token taps on them (residual_conv_taps: weight_proj d → h_kv·k)
        self.conv_taps = (nn.ModuleList(linear(d, self.h_kv * kernel, False,
                                               "attention/conv_taps") for _ in range(2))
                          if kernel is not None and kind in spec.residual_conv_taps else None)
        self.mla = att.mla
        self.cca: CCAProjection | None = None
        self.expert_q = ExpertQueries(spec) if att.experts else None  # JetMoE's W_Q, W_O
        self.expert_o = ExpertOutputs(spec) if att.experts else None
        if att.mla is None:
            self.q = (None if att.experts else
                      linear(d, self.h * self.d_qk, att.qkv_bias, "attention/q")
                      if att.q_lora_rank is None else
                      tag(nn.Sequential(  # DeepSeek-V4: q_a_proj, q_a_norm, q_b_proj
                          linear(d, att.q_lora_rank, False, "attention/q"),
                          make_norm(spec.norm, att.q_lora_rank, "attention/q"),
                          linear(att.q_lora_rank, self.h * self.d_qk, False, "attention/q"),
                      ), "attention/q"))
            # k_eq_v: W_K's output is the values too (no W_V); a kv-shared layer has neither
            self.k_eq_v = att.k_eq_v
            width = self.h_kv * (self.d_qk + (0 if att.k_eq_v or att.cca else self.d_v))
            block = spec.block_residual
            # Inkling 2's full layers: keys and values read inputs of their own (SplitKV)
            self.kv = (None if not own_kv
                       else SplitKV(d, self.h_kv * self.d_qk, self.h_kv * self.d_v,
                                    att.qkv_bias)
                       if block is not None and kind in block.split_kinds
                       else linear(d, width, att.qkv_bias, "attention/kv"))
            # ZAYA1's CCA: W_K is k_proj alone; the convs, split values and temperature here
            self.cca = CCAProjection(spec) if att.cca is not None else None
        else:
            mla = att.mla
            self.d_rope = mla.qk_rope_head_dim
            if mla.q_lora_rank is None:
                self.q = linear(d, self.h * self.d_qk, False, "attention/q")
            else:
                # latent_gate (A.X-K2's q_gate_proj): W_UQ reads the latent after and before
                # its norm side by side, 2·r_q
                up = mla.q_lora_rank * (2 if mla.latent_gate else 1)
                self.q = tag(nn.Sequential(
                    linear(d, mla.q_lora_rank, att.qkv_bias, "attention/q"),
                    make_norm(spec.norm, mla.q_lora_rank, "attention/q"),
                    linear(up, self.h * self.d_qk, False, "attention/q"),
                ), "attention/q")
            self.kv_a = linear(d, mla.kv_lora_rank + self.d_rope, att.qkv_bias, "attention/kv")
            self.kv_norm = make_norm(spec.norm, mla.kv_lora_rank, "attention/kv")
            # dots3's k_rope_only_layernorm over the shared RoPE key (mla.rope_key_norm)
            self.k_rope_norm = (make_norm(spec.norm, self.d_rope, "attention/kv")
                                if mla.rope_key_norm else None)
            self.kv_b = linear(mla.kv_lora_rank,
                               self.h * (self.d_qk - self.d_rope + self.d_v), False,
                               "attention/kv")
        self.o = (None if att.experts else
                  linear(self.h * self.d_v, d, att.out_bias or out_bias, "attention/o")
                  if att.output_groups is None else
                  tag(GroupedOutput(self.h * self.d_v, d, att.output_groups.groups,
                                    att.output_groups.rank), "attention/o"))
        # the output gate: d → h·d_v with W_Q's bias (one gate per channel), or its own
        # d → h without bias (one per head, LFM3's and Laguna's g_proj)
        per_head = att.output_gate_per == "head"
        # with attention.mla.latent_gate the gate reads the 2·r_q query latent, not x
        self.latent_gate = att.mla is not None and att.mla.latent_gate
        gate_in = 2 * att.mla.q_lora_rank if self.latent_gate and att.mla.q_lora_rank else d
        self.latent: Tensor | None = None  # that latent, kept by _mla for the gate
        self.gate = (linear(gate_in, spec.output_gate_width,
                            att.qkv_bias and not per_head and att.mla is None
                            and not att.output_gate_bias,
                            "attention/gate") if att.output_gate else None)
        # Beam's gate_bias: one value per head added to the gate before the sigmoid
        self.gate_bias = (tag(GateBias(self.h), "attention/gate") if att.output_gate_bias
                          else None)
        self.sinks = (tag(SinkLogits(self.h), "attention/sinks")
                      if att.sinks and not att.sink_proj else None)
        # Inkling 2's sinks projected from the token (sink_proj d → h), and this forward's
        self.sink_proj = (linear(d, self.h, False, "attention/sinks")
                          if att.sinks and att.sink_proj else None)
        self.token_sinks: Tensor | None = None
        # the key's and the value's own inputs of this forward (block_residual.split_kinds)
        self.kv_inputs: tuple[Tensor, Tensor] | None = None
        # nGPT (DoryAttention): sqk per query channel, s_gate per gate value
        self.scales = (scales("attention/scales", query=self.h * self.d_qk,
                              **({"gate": spec.output_gate_width} if att.output_gate else {}))
                       if spec.ngpt else scales("attention/scales", query=self.h * self.d_qk)
                       if att.query_scale else None)
        self.differential = (tag(DifferentialLambda(self.d_qk), "attention/lambda")
                             if att.differential else None)
        self.dynamic = (tag(DynamicMask(self.h_kv, self.d_v, att.dynamic_mask.bias,
                                        att.dynamic_mask.keep), "attention/dynamic_mask")
                        if att.dynamic_mask is not None else None)
        self.key_scores: Tensor | None = None  # this forward's [B, h, T] (dynamic mask)
        norms = spec.norm.model_copy(update={"weights": spec.norm.weights and att.qk_norm_weights})
        self.qk_norm = att.qk_norm
        if att.qk_norm == "head":  # q_norm_weights=false: DeepSeek-V4's q_b_norm has no γ
            q_norms = norms.model_copy(update={"weights": norms.weights and att.q_norm_weights})
            self.q_norm = make_norm(q_norms, self.d_qk, "attention/qk_norm")
            self.k_norm = make_norm(norms, self.d_qk, "attention/qk_norm") if own_kv else None
        elif att.qk_norm == "projection":
            self.q_norm = make_norm(norms, self.h * self.d_qk, "attention/qk_norm")
            self.k_norm = (make_norm(norms, self.h_kv * self.d_qk, "attention/qk_norm")
                           if own_kv else None)
        self.sub_norm = (make_norm(spec.norm, self.h * self.d_v, "attention/sub_norm")
                         if spec.norm.sub_norms else None)
        # DSA: this layer's own indexer, or (a shared layer) the keys an earlier one selected,
        # linked by the model after building (`shares`: a plain tuple, not a submodule);
        # MiniMax-M3's without MLA; none on a dense layer (indexed None: dense_layers)
        self.dsa = (att.indexer is not None and kind == "global"  # dots3: not on local layers
                    and indexed is not None)
        self.indexer: Indexer | BlockIndexer | None = None
        if self.dsa and indexed:
            self.indexer = Indexer(spec) if att.mla is not None else BlockIndexer(spec)
        self.shares: tuple[Attention, ...] = ()
        self.selected: Tensor | None = None
        # attention.kv_shared_layers: the layer whose keys and values this one reads (linked
        # by the model; a plain tuple, not a submodule), and what a producer kept of its own
        self.kv_source: tuple[Attention, ...] = ()
        self.kept: tuple[Tensor, Tensor] | None = None
        # DeepSeek-V4: a CSA ("sparse") or HCA ("heavy") layer's compressor, and the CSA
        # layer's indexer; the entries and the selection of this forward
        comp = att.compression
        self.compressor = self.compressed_indexer = None
        self.rate = 1
        if compressed and comp is not None:
            sparse = compressed == "sparse"
            self.rate = comp.sparse_rate if sparse else comp.heavy_rate
            self.compressor = Compressor(d, self.d_qk, self.rate, sparse, "attention/compressor")
            if sparse and comp.indexer is not None and att.q_lora_rank is not None:
                ix = comp.indexer
                self.compressed_indexer = CompressedIndexer(
                    d, att.q_lora_rank, ix.n_heads, ix.head_dim, ix.topk, self.rate)
        self.entries: Tensor | None = None
        self.chosen: Tensor | None = None

    def _heads(self, x: Tensor, n: int) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, n, -1).transpose(1, 2)  # [B, n, T, width]

    def _mha(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        if self.cca is not None:
            return self._cca(x, positions)
        if self.expert_q is not None:
            q, self._routing = self.expert_q(x)
        elif self.compressor is not None:  # DeepSeek-V4's compressed layers
            q = self._compress(x, positions)
        else:
            q = self.q(x)
        if self.qk_norm == "projection":
            q = self.q_norm(q)
        q = self._heads(q, self.h)
        if self.qk_norm == "head":
            q = self.q_norm(q)
        if self.rope:
            q = rope(q, positions)
        k, v = self._own_kv(x, positions) if self.kv is not None else self._read_kv(q)
        if isinstance(self.indexer, BlockIndexer):  # MiniMax-M3: the residual's queries
            q_i, k_i = self.indexer(x, positions)
            self.selected = (select_pooled(self.indexer, q_i, k_i, positions)
                             if self.indexer.pooled else select_blocks(self.indexer, q_i, k_i))
        if self.differential is not None:  # the first half's values beside the second half's
            v = torch.cat([half.repeat(1, 2, 1, 1) for half in v.chunk(2, dim=1)], dim=-1)
        if self.dynamic is not None:  # each key's score from its value, per key/value head
            self.key_scores = self.dynamic(v).repeat_interleave(self.h // self.h_kv, dim=1)
        if self.h_kv != self.h:  # GQA/MQA: shared keys, still scored by every query head
            k = k.repeat_interleave(self.h // self.h_kv, dim=1)
            v = v.repeat_interleave(self.h // self.h_kv, dim=1)
        return q, k, v

    def _cca(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """CCA's queries, keys and values (calc.verify.zaya), rotated, the keys and values
        repeated for each query head."""
        assert self.cca is not None
        q, k, v = self.cca(x, self.q(x), self.kv(x))
        if self.rope:
            q, k = rope(q, positions), rope(k, positions)
        group = self.h // self.h_kv
        return q, k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)

    def _compress(self, x: Tensor, positions: Tensor) -> Tensor:
        """The queries, this forward's compressed entries [B, 1, n, d_qk] and, on a CSA layer,
        the entries each query attends to [B, T, K] (the indexer reads the query latent)."""
        assert self.compressor is not None
        self.entries = self.compressor(x)[:, None]
        if self.compressed_indexer is None:
            return self.q(x)
        latent = self.q[1](self.q[0](x))  # q_a_proj, q_a_norm: the indexer's q_residual
        self.chosen = select_entries(self.compressed_indexer,
                                     *self.compressed_indexer(x, latent))
        return self.q[2](latent)

    def _attend_compressed(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """The window's keys and the entries in one softmax: QKᵀ and A·V over the window (as
        _attend) and over all the entries (HCA) or the chosen ones (CSA), an entry being its
        own value; the entries a query has not passed yet are masked."""
        entries = self.entries
        assert entries is not None and self.window is not None
        b, _, t, _ = q.shape
        n, w = entries.shape[2], min(self.window, t)
        scale = 1.0 / math.sqrt(self.d_qk)
        position = torch.arange(t, device=q.device)
        if self.window >= t:
            local = (q @ k.transpose(-2, -1)) * scale  # [B, h, T, T]
            offsets = position[None, :] - position[:, None]
            hidden_local = offsets > 0
        else:
            keys = F.pad(k, (0, 0, w - 1, 0)).unfold(2, w, 1)  # [B, h, T, d_qk, w]
            local = (q.unsqueeze(-2) @ keys).squeeze(-2) * scale  # [B, h, T, w]
            hidden_local = (position[:, None] + torch.arange(1 - w, 1, device=q.device)) < 0
        hidden_local = hidden_local[None, None].expand(b, 1, t, -1)
        if self.chosen is None:  # HCA: every entry
            far = (q @ entries.transpose(-2, -1)) * scale  # [B, h, T, n]
            hidden_far = visible(t, n, self.rate, q.device)[None, None].expand(b, 1, t, n)
        else:  # CSA: the chosen entries of each query
            batch = torch.arange(b, device=q.device)[:, None, None]
            picked = entries[:, 0][batch, self.chosen][:, None]  # [B, 1, T, K, d_qk]
            far = (q.unsqueeze(-2) @ picked.transpose(-2, -1)).squeeze(-2) * scale
            hidden_far = (self.chosen >= ((position + 1) // self.rate)[None, :, None])[:, None]
        probs = self._softmax(torch.cat((local, far), dim=-1),
                              torch.cat((hidden_local, hidden_far), dim=-1))
        near_p, far_p = probs.split((local.shape[-1], far.shape[-1]), dim=-1)
        if self.window >= t:
            out = near_p @ v
        else:
            values = F.pad(v, (0, 0, w - 1, 0)).unfold(2, w, 1)  # [B, h, T, d_v, w]
            out = (near_p.unsqueeze(-2) @ values.transpose(-2, -1)).squeeze(-2)
        if self.chosen is None:
            return out + far_p @ entries
        return out + (far_p.unsqueeze(-2) @ picked).squeeze(-2)

    def _token_taps(self, states: Tensor, taps: Tensor) -> Tensor:
        """Inkling 2's per-token taps (Inkling2DynamicShortConvolution): token i's k weights
        per key/value head times the channels of tokens i, i − 1, … (0 before the first);
        element-wise, as transformers computes them (0 FLOPs)."""
        b, t, channels = states.shape
        kernel = taps.shape[-1] // self.h_kv
        padded = F.pad(states, (0, 0, kernel - 1, 0))
        windows = padded.unfold(1, kernel, 1).flip(-1)  # [B, T, C, k]: lag 0 first
        weights = taps.view(b, t, self.h_kv, 1, kernel)
        return (windows.reshape(b, t, self.h_kv, -1, kernel) * weights).sum(-1).reshape(
            b, t, channels)

    def _own_kv(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """This layer's keys and values [B, h_kv, T, width], kept for the kv-shared layers."""
        x_k, x_v = self.kv_inputs or (x, x)
        if isinstance(self.kv, SplitKV):
            k, v = self.kv.k(x_k), self.kv.v(x_v)
        elif self.k_eq_v:  # the keys (before their norm and RoPE) are the values
            k = v = self.kv(x)
        else:
            k, v = self.kv(x).split((self.h_kv * self.d_qk, self.h_kv * self.d_v), dim=-1)
        if self.kv_convs is not None:  # x + conv(x) on the keys and on the values
            k, v = k + self.kv_convs[0](k), v + self.kv_convs[1](v)
        if self.conv_taps is not None:
            k = k + self._token_taps(k, self.conv_taps[0](x_k))
            v = v + self._token_taps(v, self.conv_taps[1](x_v))
        if self.qk_norm == "projection":
            k = self.k_norm(k)
        k, v = self._heads(k, self.h_kv), self._heads(v, self.h_kv)
        if self.qk_norm == "head":
            k = self.k_norm(k)
        if self.rope:
            k = rope(k, positions)
        self.kept = (k, v)
        return k, v

    def _read_kv(self, q: Tensor) -> tuple[Tensor, Tensor]:
        """A kv-shared layer's keys and values: those the last earlier layer of its kind made
        in this forward. On the meta device calc.verify.count may run this layer alone (one
        layer per structure); zeros of the shape count the same there, needing a gradient as
        the source's keys and values would (the backward's products with them)."""
        b, _, t, _ = q.shape
        if not self.kv_source:  # a drafter's layer without a source of its kind: the target's
            grad = torch.is_grad_enabled()  # keys and values (calc.spec.drafter), T of them
            return (q.new_zeros(b, self.h_kv, t, self.d_qk).requires_grad_(grad),
                    q.new_zeros(b, self.h_kv, t, self.d_v).requires_grad_(grad))
        kept = self.kv_source[0].kept
        if kept is None or kept[0].shape[2] != t or q.device.type == "meta":
            assert q.device.type == "meta", "a kv-shared layer ran before its source layer"
            grad = torch.is_grad_enabled()
            return (q.new_zeros(b, self.h_kv, t, self.d_qk).requires_grad_(grad),
                    q.new_zeros(b, self.h_kv, t, self.d_v).requires_grad_(grad))
        return kept

    def _mla(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        if self.dsa or self.latent_gate:
            raw = self.q[0](x)
            latent = self.q[1](raw)
            if self.latent_gate:  # AXK2Attention: q_gate_proj(cat([q_resid, q_compressed]))
                self.latent = torch.cat((latent, raw), dim=-1)
            q = self._heads(self.q[2](self.latent if self.latent_gate else latent), self.h)
            if self.dsa:  # the indexer reads the normed query latent (q_resid)
                self.selected = (select(self.indexer, *self.indexer(x, latent, positions))
                                 if self.indexer is not None else self._shared(x))
        else:
            q = self._heads(self.q(x), self.h)  # [B, h, T, d_qk]
        latent, k_rope = self.kv_a(x).split((self.kv_b.in_features, self.d_rope), dim=-1)
        kv = self._heads(self.kv_b(self.kv_norm(latent)), self.h)
        k_nope, v = kv.split((self.d_qk - self.d_rope, self.d_v), dim=-1)
        if self.k_rope_norm is not None:
            k_rope = self.k_rope_norm(k_rope)
        k_rope = rope(k_rope[:, None], positions)  # one RoPE key shared by all heads
        q = torch.cat((q[..., : self.d_qk - self.d_rope],
                       rope(q[..., self.d_qk - self.d_rope:], positions)), dim=-1)
        k = torch.cat((k_nope, k_rope.expand(-1, self.h, -1, -1)), dim=-1)
        return q, k, v

    def _shared(self, x: Tensor) -> Tensor:
        """A shared DSA layer's keys: those its indexer layer selected in this forward. On the
        meta device calc.verify.count may run this layer without that one (one layer per
        structure); any indices of the shape count the same there."""
        selected = self.shares[0].selected
        b, t = x.shape[:2]
        if selected is None or selected.shape[:2] != (b, t) or x.device.type == "meta":
            assert x.device.type == "meta", "a shared DSA layer ran before its indexer layer"
            topk = min(self.shares[0].indexer.topk, t)
            return torch.zeros(b, t, topk, dtype=torch.long, device=x.device)
        return selected

    def _bias(self, offsets: Tensor, dtype: torch.dtype) -> Tensor:
        """ALiBi: −slope·distance, or the bucketed bias, broadcast over [B, h, T, keys]."""
        if self.bucketed:
            return self.position_bias[0](offsets, dtype)
        slopes = alibi_slopes(self.h, offsets.device, dtype)
        return -slopes[:, None, None] * offsets.to(dtype).abs()

    def _relative(self, q: Tensor, length: int) -> tuple[Tensor, Tensor | None]:
        """(query for the content scores, position scores [B, h, T, length] by distance)."""
        if self.relative is None:
            return q, None
        keys = self.relative.keys(length, self.d, q.device, q.dtype)
        return q + self.relative.u, (q + self.relative.v) @ keys.transpose(-2, -1)

    def _softmax(self, scores: Tensor, hidden: Tensor) -> Tensor:
        """softmax over the keys, with each head's sink logit as one more key (its probability
        is dropped: a sink has no value)."""
        scores = scores.masked_fill(hidden, float("-inf"))
        if self.token_sinks is not None:  # one logit per head and query token [B, h, T]
            sink = self.token_sinks[..., None].expand(*scores.shape[:-1], 1)
        elif self.sinks is None:
            return scores.softmax(-1)
        else:
            sink = self.sinks.logits.view(1, -1, 1, 1).expand(*scores.shape[:-1], 1)
        return torch.cat((scores, sink.to(scores.dtype)), dim=-1).softmax(-1)[..., :-1]

    def _chunked(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """Each chunk of c tokens attends within itself only (Llama 4): the full chunks as one
        batch of c × c products, the last, shorter one apart."""
        t, c = q.shape[2], self.chunk
        assert c is not None
        outputs = []
        for start, size, n in ((0, c, t // c), (t // c * c, t % c, 1)):
            if not n or not size:
                continue
            part = slice(start, start + n * size)
            qs, ks, vs = (x[:, :, part].unflatten(2, (n, size)) for x in (q, k, v))
            scores = (qs @ ks.transpose(-2, -1)) / math.sqrt(self.d_qk)  # [B, h, n, c, c]
            position = torch.arange(size, device=q.device)
            hidden = position[None, :] > position[:, None]
            if self.alibi or self.bucketed:
                scores = scores + self._bias(position[None, :] - position[:, None],
                                             scores.dtype)[:, None]
            probs = self._softmax(scores.flatten(2, 3), hidden.repeat(n, 1))
            outputs.append((probs.unflatten(2, (n, size)) @ vs).flatten(2, 3))
        return torch.cat(outputs, dim=2)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        t = q.shape[2]
        scale = 1.0 / math.sqrt(self.d_qk)
        position = torch.arange(t, device=q.device)
        if self.chunk is not None and self.chunk < t:
            return self._chunked(q, k, v)
        if self.selected is not None and self.selected.shape[-1] < t:
            return attend_selected(q, k, v, self.selected, scale)
        bias = self.key_scores
        if self.dynamic is not None and bias is not None and self.dynamic.keep < t:
            return attend_selected(q, k, v, self.dynamic.select(bias), scale, bias)
        if self.window is None or self.window >= t:
            q, by_distance = self._relative(q, t)
            scores = (q @ k.transpose(-2, -1)) * scale  # [B, h, T, T]
            if bias is not None:  # the dynamic mask's score of each key (element-wise)
                scores = scores + bias[:, :, None, :]
            offsets = position[None, :] - position[:, None]  # key − query
            if by_distance is not None:  # entry (i, j) takes distance i − j (0 where masked)
                index = (-offsets).clamp(min=0).expand_as(scores)
                scores = scores + by_distance.gather(-1, index) * scale
            hidden = offsets > 0
            if self.window is not None:
                hidden = hidden | (offsets <= -self.window)
            if self.alibi or self.bucketed:
                scores = scores + self._bias(offsets, scores.dtype)
            if self.rel_logits is not None:
                scores = scores + self.relative_logits.bias(self.rel_logits, -offsets)
            return self._softmax(scores, hidden) @ v
        # A sliding window narrower than T: each query multiplies only its w keys.
        w = self.window
        keys = F.pad(k, (0, 0, w - 1, 0)).unfold(2, w, 1)  # [B, h, T, d_qk, w]
        values = F.pad(v, (0, 0, w - 1, 0)).unfold(2, w, 1)  # [B, h, T, d_v, w]
        q, by_distance = self._relative(q, w)
        scores = (q.unsqueeze(-2) @ keys).squeeze(-2) * scale  # [B, h, T, w]
        if by_distance is not None:  # band slot m holds distance w − 1 − m
            scores = scores + by_distance.flip(-1) * scale
        offsets = torch.arange(1 - w, 1, device=q.device)[None, :]  # key − query in the band
        hidden = (position[:, None] + offsets) < 0  # padding before the first token
        if self.alibi or self.bucketed:
            scores = scores + self._bias(offsets.expand(t, w), scores.dtype)
        if self.rel_logits is not None:
            scores = scores + self.relative_logits.bias(self.rel_logits, -offsets.expand(t, w))
        probs = self._softmax(scores, hidden)
        return (probs.unsqueeze(-2) @ values.transpose(-2, -1)).squeeze(-2)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        q, k, v = self._mla(x, positions) if self.mla else self._mha(x, positions)
        if self.relative_logits is not None:
            self.rel_logits = self.relative_logits(x)
        if self.sink_proj is not None:
            self.token_sinks = self.sink_proj(x).transpose(1, 2)
        out = (self._attend(q, k, v) if self.compressor is None
               else self._attend_compressed(q, k, v))  # [B, h, T, d_v]; differential: 2·d_v
        if self.differential is not None:
            out = self.differential(out)  # [B, h/2, T, 2·d_v]
        b, _, t, _ = out.shape
        out = out.transpose(1, 2).reshape(b, t, self.h * self.d_v)
        if self.gate is not None:  # a gate per head multiplies its d_v channels alike
            gate = self.gate(self.latent if self.latent_gate else x)
            if self.gate_bias is not None:
                gate = (gate.view(b, t, self.h, -1) + self.gate_bias.values[:, None]).flatten(2)
            gate = torch.sigmoid(gate)
            out = out * gate.repeat_interleave(out.shape[-1] // gate.shape[-1], dim=-1)
        if self.sub_norm is not None:
            out = self.sub_norm(out)
        if self.expert_o is not None:
            return self.expert_o(out, self._routing)
        return self.o(out)


class GroupedOutput(nn.Module):
    """DeepSeek-V4's grouped W_O (modeling_deepseek_v4.py: o_a_proj, a DeepseekV4GroupedLinear
    whose g·r × width/g weight holds each group's block, run as one bmm over the groups; then
    o_b_proj g·r → d)."""

    def __init__(self, width: int, d: int, groups: int, rank: int):
        super().__init__()
        self.groups = groups
        self.a = nn.Parameter(torch.empty(groups * rank, width // groups).uniform_(-0.1, 0.1))
        self.b = linear(groups * rank, d, False, "attention/o")

    def forward(self, x: Tensor) -> Tensor:
        b, t, width = x.shape
        blocks = self.a.view(self.groups, -1, width // self.groups).transpose(1, 2)
        grouped = x.reshape(b * t, self.groups, -1).transpose(0, 1)  # [g, B·T, width/g]
        return self.b(torch.bmm(grouped, blocks).transpose(0, 1).reshape(b, t, -1))


class DifferentialLambda(nn.Module):
    """Differential attention's λ (Ye et al. 2024, DIFF Transformer §2.1; transformers'
    DiffLlamaAttention): four learned vectors of one head's width, λ = exp(λ_q1·λ_k1) −
    exp(λ_q2·λ_k2) + λ_init; head i's output minus λ × head i + h/2's, normalised over its
    2·d_v channels by a norm without weights and scaled by 1 − λ_init. λ_init depends on the
    layer's depth in the paper; a constant here changes no count. Products of vectors
    (elementwise, then a sum) count 0, as in transformers."""

    LAMBDA_INIT = 0.8

    def __init__(self, width: int):
        super().__init__()
        self.q1, self.k1, self.q2, self.k2 = (nn.Parameter(torch.zeros(width)) for _ in range(4))

    def forward(self, out: Tensor) -> Tensor:
        first, second = out.chunk(2, dim=1)
        lam = (torch.exp((self.q1 * self.k1).sum()) - torch.exp((self.q2 * self.k2).sum())
               + self.LAMBDA_INIT)
        combined = first - lam.to(out.dtype) * second
        return (1 - self.LAMBDA_INIT) * F.rms_norm(combined, (combined.shape[-1],))


class DynamicMask(nn.Module):
    """Doge's dynamic mask (modeling_doge.py DogeAttention): dt_proj h_kv·d_v → h_kv over each
    token's values and A, one value per key/value head, give each key the score
    exp(A·softplus(dt)) [B, h_kv, T]; `select` keeps each query's `keep` best-scored keys among
    those it sees (prepare_dynamic_mask's top-k; a query seeing fewer keeps all of them, the
    rest of its top-k masked by attend_selected)."""

    def __init__(self, kv_heads: int, width: int, bias: bool, keep: int):
        super().__init__()
        self.keep = keep
        self.dt_proj = linear(kv_heads * width, kv_heads, bias, "attention/dynamic_mask")
        self.A = nn.Parameter(torch.zeros(kv_heads))

    def forward(self, v: Tensor) -> Tensor:
        b, _, t, _ = v.shape
        dt = self.dt_proj(v.transpose(1, 2).reshape(b, t, -1))  # [B, T, h_kv]
        return torch.exp(self.A * F.softplus(dt)).transpose(1, 2)

    def select(self, scores: Tensor) -> Tensor:
        """[B, h, T, keep]: each query's keys, by their scores [B, h, T], among those it sees."""
        t = scores.shape[-1]
        position = torch.arange(t, device=scores.device)
        seen = scores[:, :, None, :].expand(-1, -1, t, -1)
        seen = seen.masked_fill(position[None, :] > position[:, None], float("-inf"))
        return seen.topk(min(self.keep, t), dim=-1).indices


class GateBias(nn.Module):
    """Beam's gate_bias: one learned value per head on the output gate's input, under a module
    of its own so it carries its component's tag."""

    def __init__(self, heads: int):
        super().__init__()
        self.values = nn.Parameter(torch.zeros(heads))


class SplitKV(nn.Module):
    """W_K and W_V apart, for a layer whose keys and values read inputs of their own
    (block_residual.split_kinds: Inkling 2's k_proj and v_proj after k_input_layernorm and
    v_input_layernorm); called on one input, both side by side as the fused W_KV."""

    def __init__(self, d: int, keys: int, values: int, bias: bool):
        super().__init__()
        tag(self, "attention/kv")
        self.k = linear(d, keys, bias, "attention/kv")
        self.v = linear(d, values, bias, "attention/kv")
        self.out_features = keys + values

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat((self.k(x), self.v(x)), dim=-1)


class SinkLogits(nn.Module):
    """gpt-oss's attention sinks: one learned logit per head (modeling_gpt_oss.py `sinks`)."""

    def __init__(self, heads: int):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(heads))
