"""The reference model: any ModelSpec as a torch nn.Module, on the meta device or the CPU.

Written to be counted. Every module carries the component key its parameters and FLOPs belong
to (calc.verify.parts), attention is explicit matmuls (calc.verify.attention), the other mixers
run their scans token by token with counted state arithmetic (calc.verify.mixers), and an MoE
layer sends each token to exactly top-k experts: by the router's top-k on real tensors, by a
fixed balanced assignment on the meta device (which has no values to route on); with
zero-computation experts, exactly k_f = top_k·E/(E + E_0) of them FFN experts (calc's expected
share) and the rest identities, and with moe.shortcut (ScMoE) the routed output joins the
residual stream after the next layer. A hash-routed layer (moe.hash_layers) picks a token's
experts from a fixed table of token ids (a buffer) and weighs them by the router's scores. Experts
sharing
a token count run as one bmm. Each layer is built from its own mixer, attention kind and FFN
(ModelSpec.mixer_kinds, attention_kinds, ffn_kinds).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.spec.model import SELF_ATTENTION
from calc.verify.altup import AltUp, AltUpProjections, Laurel, laurel_sum
from calc.verify.attention import Attention, PositionBias
from calc.verify.cross_attention import CrossAttention, CrossAttentionGates
from calc.verify.hyper import HyperConnection, HyperHead, Spread
from calc.verify.mixers import (
    DeltaNet,
    Griffin,
    Lightning,
    Mamba,
    Mlstm,
    Rwkv,
    RwkvChannelMix,
    ShortConv,
)
from calc.verify.parts import (
    ACTIVATIONS,
    CausalConv,
    activation,
    linear,
    make_norm,
    scales,
    sinusoids,
    tag,
)
from calc.verify.shared_block import Depth, SharedBlock
from calc.verify.zaya import EmbeddingScale, ResidualScale, RouterMLP


# ---- feed-forward ---------------------------------------------------------------------------
class FeedForward(nn.Module):
    """W_down φ(W_up x), or W_down (φ(W_gate x) ⊙ W_up x) when gated; BitNet normalises the
    down projection's input (mlp/sub_norm)."""

    def __init__(self, spec: ModelSpec, width: int, up: str = "mlp/up", down: str = "mlp/down"):
        super().__init__()
        d, ffn = spec.d_model, spec.ffn
        assert ffn is not None
        self.act = activation(ffn.activation, "mlp/act" if up == "mlp/up" else up)
        self.up = linear(d, width, ffn.bias, up)
        self.gate = linear(d, width, ffn.bias, up) if ffn.gated else None
        self.sub_norm = (make_norm(spec.norm, width, "mlp/sub_norm")
                         if spec.norm.sub_norms and up == "mlp/up" else None)
        # nGPT (DoryMLP): suv_gate and suv_up
        self.scales = (scales("mlp/scales", gate=width, up=width)
                       if spec.ngpt and up == "mlp/up" else None)
        self.down = linear(width, d, ffn.bias, down)
        # Inkling's InklingMLP.global_scale on a dense FFN's output
        self.scale = (tag(LearnedValues(1), "mlp/scale") if ffn.output_scale and up == "mlp/up"
                      else None)

    def forward(self, x: Tensor) -> Tensor:
        hidden = self.act(self.gate(x)) * self.up(x) if self.gate else self.act(self.up(x))
        if self.sub_norm is not None:
            hidden = self.sub_norm(hidden)
        out = self.down(hidden)
        return out if self.scale is None else out * self.scale.values


class Experts(nn.Module):
    """E routed experts as stacked weights [E, ...]; experts with equal loads run as one bmm."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "moe/experts")
        moe, d, ffn = spec.moe, spec.d_model, spec.ffn
        assert moe is not None and ffn is not None
        n, width, gates = moe.n_experts, moe.d_expert, 1 + int(ffn.gated)
        self.act, self.gated = ACTIVATIONS[ffn.activation], ffn.gated
        # [up | gate] of every expert; initialised like nn.Linear's default (no-op on meta)
        self.w_in = nn.Parameter(torch.empty(n, d, gates * width).uniform_(-d**-0.5, d**-0.5))
        self.w_out = nn.Parameter(torch.empty(n, width, d).uniform_(-width**-0.5, width**-0.5))
        self.b_in = nn.Parameter(torch.zeros(n, 1, gates * width)) if ffn.bias else None
        self.b_out = nn.Parameter(torch.zeros(n, 1, d)) if ffn.bias else None

    def forward(self, x: Tensor, experts: list[int], load: int) -> Tensor:
        """x: [len(experts), load, d], the tokens of each expert in `experts`."""
        index = torch.tensor(experts, device=self.w_in.device)
        hidden = torch.bmm(x, self.w_in.index_select(0, index))
        if self.b_in is not None:
            hidden = hidden + self.b_in.index_select(0, index)
        if self.gated:
            up, gate = hidden.chunk(2, dim=-1)
            hidden = self.act(gate) * up
        else:
            hidden = self.act(hidden)
        out = torch.bmm(hidden, self.w_out.index_select(0, index))
        if self.b_out is not None:
            out = out + self.b_out.index_select(0, index)
        return out


class ProductKeyExperts(nn.Module):
    """Doge's product-key experts (moe.product_keys; modeling_doge.py DogeCDMoE): the router's
    2·⌊√E⌋ outputs are two halves of sub-key scores; the top ⌊√E⌋ of each half are paired, and
    the top_k of the pairs' summed scores pick the experts (sums and choices element-wise).
    Expert e is row e of `down` and of `up` (E × d each): d → 1 (a bmm), the activation times
    its softmax weight, 1 → d (a bmm), no gate and no bias."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "moe/experts")
        moe, ffn, d = spec.moe, spec.ffn, spec.d_model
        assert moe is not None and ffn is not None
        self.keys, self.k = moe.sub_keys, moe.top_k
        self.act = ACTIVATIONS[ffn.activation]
        self.down = nn.Parameter(torch.empty(moe.n_experts, d).uniform_(-0.1, 0.1))
        self.up = nn.Parameter(torch.empty(moe.n_experts, d).uniform_(-0.1, 0.1))

    def forward(self, x: Tensor, logits: Tensor) -> Tensor:
        """x [N, d], the router's logits [N, 2·⌊√E⌋] → [N, d]."""
        (sx, sy), (ix, iy) = logits.view(-1, 2, self.keys).transpose(0, 1).topk(self.keys, -1)
        scores = (sx[:, :, None] + sy[:, None, :]).flatten(1)  # [N, ⌊√E⌋²]
        experts = (ix[:, :, None] * self.keys + iy[:, None, :]).flatten(1)
        best, slot = scores.topk(self.k, dim=-1)
        chosen = experts.gather(-1, slot)  # [N, k]
        weights = self.act(torch.bmm(self.down[chosen], x[:, :, None])).squeeze(-1)
        weights = weights * best.softmax(-1)
        return torch.bmm(weights[:, None, :], self.up[chosen]).squeeze(1)


class MixtureOfExperts(nn.Module):
    """Router → exactly top-k experts per token (+ shared experts, optionally gated).

    `hashed` (moe.hash_layers): the experts of token id v are table[v], a buffer of vocab_size
    × top_k fixed at build, (v·k + j) mod E for j < k (k distinct experts, as top-k picks);
    the router still scores every expert and the picked ones' scores weigh their outputs
    (DeepseekV4HashRouter: tid2eid[input_ids], scores.gather)."""

    def __init__(self, spec: ModelSpec, hashed: bool = False, first: bool = False):
        super().__init__()
        moe = spec.moe
        assert moe is not None
        # with zero-computation experts a token uses k_f FFN experts and top_k − k_f zero ones
        # (calc's expected share, moe.experts_per_token); the router scores all E + E_0
        self.n, self.k = moe.n_experts, moe.experts_per_token
        self.zero = moe.top_k - moe.experts_per_token if moe.n_zero_experts else 0
        # Inkling's router also scores the shared experts (moe.shared_in_router): their
        # softmax weights scale their outputs; its routing bias stays the routed experts'
        extra = moe.n_shared_experts if moe.shared_in_router else 0
        # ZAYA1's MLP router (moe.router_mlp) and the router state it carries: the previous
        # layer's in, its own out (ReferenceModel passes it on; None where no layer ran before)
        self.router = (RouterMLP(spec, first) if moe.router_mlp is not None
                       else linear(spec.d_model, moe.router_width + extra,
                                   moe.router_bias and not extra, "moe/router"))
        self.state: Tensor | None = None
        self.router_bias = (tag(LearnedValues(moe.router_width), "moe/router")
                            if moe.router_bias and extra else None)
        self.shared_in_router = bool(extra)
        # InklingTopkRouter.global_scale on every routing weight
        self.global_scale = (tag(LearnedValues(1), "moe/router") if moe.router_global_scale
                             else None)
        # ScMoE: the routed part joins the residual stream a layer later (ReferenceModel)
        self.shortcut = moe.shortcut
        self.pending: Tensor | None = None
        self.product_keys = moe.product_keys
        self.experts = ProductKeyExperts(spec) if moe.product_keys else Experts(spec)
        self.shared = nn.ModuleList(
            FeedForward(spec, moe.shared_width, "moe/shared", "moe/shared")
            for _ in range(moe.n_shared_experts))
        self.shared_gate = (linear(spec.d_model, 1, False, "moe/shared")
                            if moe.shared_expert_gate else None)
        self.bias = tag(OutputBias(spec.d_model), "moe/bias") if moe.output_bias else None
        # A.X-K1's post_mlp_layernorm over the combined output
        self.norm = make_norm(spec.norm, spec.d_model, "moe/norm") if moe.output_norm else None
        self.ids: Tensor | None = None  # the token ids of the forward pass (hashed layers)
        if hashed:
            picks = torch.arange(spec.vocab_size)[:, None] * self.k + torch.arange(self.k)
            self.register_buffer("table", picks % self.n)
        else:
            self.table = None
        # Gemma 4: a norm before the routed experts and one after each branch
        # (pre_feedforward_layernorm_2, post_feedforward_layernorm_2 and _1)
        self.branch_norms = (nn.ModuleList(make_norm(spec.norm, spec.d_model, "moe/norm")
                                           for _ in range(3)) if moe.branch_norms else None)
        # Gemma4TextRouter's scale (d) and per_expert_scale (E)
        self.router_scales = RouterScales(spec.d_model, moe.n_experts) if moe.router_scales \
            else None

    def _route(self, probs: Tensor) -> tuple[Tensor, Tensor, list[int]]:
        """(token of each assignment, its gate weight, tokens per expert), sorted by expert.

        Real tensors: the router's top-k. Meta tensors have no values, so token t goes to
        experts (t·k + j) mod E — still exactly k distinct experts per token (k ≤ E)."""
        tokens = probs.shape[0]
        if probs.is_meta:
            loads = [0] * self.n
            for slot in range(tokens * self.k):
                loads[slot % self.n] += 1
            size = tokens * self.k
            token = torch.empty(size, dtype=torch.long, device="meta")
            weight = probs.reshape(-1)[:size]
            return token, weight, loads
        if self.table is None:
            weight, expert = probs.topk(self.k, dim=-1)
        else:
            assert self.ids is not None, "a hash-routed layer runs inside ReferenceModel"
            expert = self.table[self.ids.reshape(-1)]
            weight = probs.gather(1, expert)
        order = expert.reshape(-1).argsort(stable=True)
        loads = torch.bincount(expert.reshape(-1), minlength=self.n).tolist()
        return order // self.k, weight.reshape(-1)[order], loads

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        flat = x.reshape(b * t, d)
        scales = self.router_scales
        if self.product_keys:
            combined = self.experts(flat, self.router(flat))
            return (combined + sum(expert(flat) for expert in self.shared)).view(b, t, d)
        if isinstance(self.router, RouterMLP):  # the experts' scores and the skip class's
            logits, self.state = self.router(flat, self.state)
        else:
            logits = self.router(flat if scales is None else flat * scales.channel)
        if self.router_bias is not None:
            logits = torch.cat((logits[:, :self.n] + self.router_bias.values,
                                logits[:, self.n:]), dim=-1)
        probs = logits.softmax(-1)
        if self.global_scale is not None:
            probs = probs * self.global_scale.values
        token, weight, loads = self._route(probs[:, :self.n])
        if scales is not None:  # each chosen expert's weight times its own scale
            weight = weight * (scales.expert[:1] if weight.is_meta
                               else scales.expert.repeat_interleave(torch.tensor(loads)))
        routed_in = flat if self.branch_norms is None else self.branch_norms[0](flat)
        rows = routed_in.index_select(0, token)  # assignments, grouped by expert
        starts = [sum(loads[:e]) for e in range(self.n)]
        outputs = torch.zeros_like(rows)
        for load in sorted({n for n in loads if n}):
            experts = [e for e in range(self.n) if loads[e] == load]
            if rows.is_meta:
                picked = torch.empty(len(experts) * load, dtype=torch.long, device="meta")
            else:
                picked = torch.cat([torch.arange(starts[e], starts[e] + load, device=x.device)
                                    for e in experts])
            out = self.experts(rows.index_select(0, picked).view(len(experts), load, d),
                               experts, load)
            outputs = outputs.index_copy(0, picked, out.reshape(-1, d))
        combined = torch.zeros_like(flat).index_add(0, token, outputs * weight[:, None])
        if self.zero:  # identities: the token itself times its zero experts' weights
            zero = probs[:, self.n:]
            chosen = (zero[:, :1] if zero.is_meta else zero.topk(self.zero, dim=-1).values)
            combined = combined + flat * chosen.sum(-1, keepdim=True)
        if self.branch_norms is not None:
            combined = self.branch_norms[1](combined)
        if self.shortcut:
            self.pending, combined = combined.view(b, t, d), torch.zeros_like(flat)
        if self.shared and self.shared_in_router:  # each weighed by its router weight
            gammas = probs[:, self.n:]
            shared = sum(expert(flat) * gammas[:, i:i + 1]
                         for i, expert in enumerate(self.shared))
            combined = combined + shared
        elif self.shared:
            shared = sum(expert(flat) for expert in self.shared)
            if self.shared_gate is not None:
                shared = torch.sigmoid(self.shared_gate(flat)) * shared
            if self.branch_norms is not None:
                shared = self.branch_norms[2](shared)
            combined = combined + shared
        if self.bias is not None:
            combined = combined + self.bias.values
        if self.norm is not None:
            combined = self.norm(combined)
        return combined.view(b, t, d)


class RouterScales(nn.Module):
    """Gemma 4's learned router scales: one per channel of the router's input, one per routed
    expert on its chosen weight (Gemma4TextRouter.scale, per_expert_scale)."""

    def __init__(self, width: int, experts: int):
        super().__init__()
        tag(self, "moe/router")
        self.channel = nn.Parameter(torch.ones(width))
        self.expert = nn.Parameter(torch.ones(experts))


class PerLayerInput(nn.Module):
    """A layer's per-layer embedding path (Gemma4TextDecoderLayer after its FFN): gate d → p,
    its activation times the layer's vector, projection p → d, a norm, added to the stream."""

    def __init__(self, spec: ModelSpec, width: int):
        super().__init__()
        assert spec.ffn is not None
        tag(self, "per_layer_embeddings/layers")
        d = spec.d_model
        self.gate = linear(d, width, False, "per_layer_embeddings/layers")
        self.act = ACTIVATIONS[spec.ffn.activation]
        self.projection = linear(width, d, False, "per_layer_embeddings/layers")
        self.norm = make_norm(spec.norm, d, "per_layer_embeddings/norms")

    def forward(self, x: Tensor, vector: Tensor) -> Tensor:
        return x + self.branch(x, vector)

    def branch(self, x: Tensor, vector: Tensor) -> Tensor:
        """What the path adds: N(W_proj (φ(W_gate x) ⊙ vector))."""
        return self.norm(self.projection(self.act(self.gate(x)) * vector))


class LearnedValues(nn.Module):
    """A few learned values under a module of their own, so they carry their component's tag
    (Inkling's global_scale scalars, its routing bias beside the shared experts' scores)."""

    def __init__(self, width: int):
        super().__init__()
        self.values = nn.Parameter(torch.ones(width))


class OutputBias(nn.Module):
    """JetMoE's one bias on an MoE layer's combined output, under a module of its own so it
    carries its component's tag."""

    def __init__(self, width: int):
        super().__init__()
        self.values = nn.Parameter(torch.zeros(width))


# ---- blocks and model -----------------------------------------------------------------------
class Mixers(nn.Module):
    """A layer's token mixer: attention, Mamba, gated DeltaNet, lightning attention, RWKV's
    time-mix, Griffin's recurrent block, xLSTM's mLSTM, a short convolution, cross-attention to
    image tokens, or attention and Mamba side by side on the same input, their outputs summed
    (Falcon-H1)."""

    def __init__(self, spec: ModelSpec, mixer: str, kind: str, indexed: bool | None = True,
                 own_kv: bool = True, out_bias: bool = False, compressed: str = ""):
        super().__init__()
        parts: list[nn.Module] = []
        if mixer in SELF_ATTENTION:
            parts.append(Attention(spec, kind, indexed, own_kv, out_bias, compressed))
        if mixer == "cross_attention":
            parts.append(CrossAttention(spec))
        if "mamba" in mixer:
            parts.append(Mamba(spec))
        if mixer == "deltanet":
            parts.append(DeltaNet(spec))
        if mixer == "lightning":
            parts.append(Lightning(spec))
        if mixer == "rwkv":
            parts.append(Rwkv(spec))
        if mixer == "griffin":
            parts.append(Griffin(spec))
        if mixer == "mlstm":
            parts.append(Mlstm(spec))
        if mixer == "conv":
            parts.append(ShortConv(spec))
        self.parts = nn.ModuleList(parts)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        outputs = [part(x, positions) if isinstance(part, Attention) else part(x)
                   for part in self.parts]
        return outputs[0] if len(outputs) == 1 else sum(outputs)


class GatedNorm(nn.Module):
    """A.X-K2's gated norm (norm.gate_rank; modular_axk2.py AXK2GatedRMSNorm): the norm, then
    y · σ(W_2 SiLU(W_1 y)), W_1 d → r and W_2 r → d without bias (tagged norm_gates)."""

    def __init__(self, spec: ModelSpec, rank: int):
        super().__init__()
        self.norm = make_norm(spec.norm, spec.d_model, "norms")
        self.fc1 = linear(spec.d_model, rank, False, "norm_gates")
        self.fc2 = linear(rank, spec.d_model, False, "norm_gates")

    def forward(self, x: Tensor) -> Tensor:
        y = self.norm(x)
        return y * torch.sigmoid(self.fc2(F.silu(self.fc1(y))))


class Block(nn.Module):
    """One layer: its mixer and its FFN (or none) with the spec's norm placement
    (pre/post/sandwich/reordered/parallel)."""

    def __init__(self, spec: ModelSpec, mixer: str = "attention", kind: str = "global",
                 ffn: str = "dense", indexed: bool | None = True, own_kv: bool = True,
                 out_bias: bool = False, shared: bool = False, hashed: bool = False,
                 mixer_norm: bool = True, compressed: str = "", first_router: bool = False,
                 block: tuple[int, bool, int, int] = (0, False, 0, 0)):
        super().__init__()
        # with the spec, all that makes this layer (a DSA layer with its own indexer or not,
        # a layer with its own keys and values or not, the last layer's own W_O bias or not,
        # the shared block before it or not, its experts picked by hash or not, its mixer's
        # pre-norm or not, DeepSeek-V4's compressor on it or not: "sparse" CSA, "heavy" HCA)
        # ZAYA1's first layer, whose MLP router has no scale for a state carried in
        # Inkling 2's mixes over blocks (block_residual): the attention input's queries (0 on
        # layer 0), whether the layer opens a block, and the sources each mix sees
        self.structure = (mixer, kind, ffn, indexed, own_kv, out_bias, shared, hashed,
                          mixer_norm, compressed, first_router, block)
        self.placement, self.parallel = spec.norm.placement, spec.parallel_block
        self.attention = Mixers(spec, mixer, kind, indexed, own_kv, out_bias, compressed)
        # ffn.double_wide: the kv-shared layers' FFN is 2·d_ff wide (Gemma4TextMLP)
        width = spec.ffn.d_ff * (2 if spec.ffn.double_wide and not own_kv else 1) if spec.ffn \
            else 0
        self.ffn = (None if ffn == "none"
                    else MixtureOfExperts(spec, hashed, first_router) if ffn == "moe"
                    else FeedForward(spec, width))
        # residual_scales: learned vectors at the mixer's and the FFN's residual adds
        # (the mixer's, and the FFN's where the layer has one)
        self.residual = (nn.ModuleList(ResidualScale(spec) for _ in range(1 + (ffn != "none")))
                         if spec.residual_scales is not None else None)
        self.norms = nn.ModuleList(make_norm(spec.norm, spec.d_model, "norms")
                                   for _ in range(spec.norms_per_layer))
        # nGPT (DoryDecoderLayer): lambda_1 and lambda_2, the residual's rates
        self.residual_scales = (scales("residual_scales", attention=spec.d_model,
                                       ffn=spec.d_model) if spec.ngpt else None)
        if not mixer_norm:  # ModernBERT decoder's layer 0: attn_norm is nn.Identity
            self.norms[0] = nn.Identity()
        rank = spec.norm.gate_rank
        if rank is not None:  # the mixer's pre-norm, and the FFN's on an MoE layer (pre only)
            for i in range(1 + (ffn == "moe")):
                self.norms[i] = GatedNorm(spec, rank)
        # RWKV: the channel-mix's token shift and receptance gate around the FFN
        self.channel = RwkvChannelMix(spec) if mixer == "rwkv" else None
        # hyper-connections: a map before the mixer and one before the FFN (pre-norm layers
        # with an FFN only: ModelSpec's rule)
        self.hc = (nn.ModuleList(HyperConnection(spec) for _ in range(2))
                   if spec.hyper_connections is not None else None)
        self.spread = Spread() if self.hc is not None else None
        ple = spec.per_layer_embeddings
        self.per_layer = PerLayerInput(spec, ple.width) if ple is not None else None
        # Gemma 3n: AltUp's prediction and correction around the layer, LAuReL beside its
        # mixer (sandwich-normed attention layers with an FFN: ModelSpec's rule)
        self.altup = AltUp(spec) if spec.altup is not None else None
        self.laurel = Laurel(spec) if spec.laurel is not None else None
        # a cross-attention layer: tanh gates on its attention and FFN outputs, and the whole
        # layer skipped without image tokens (MllamaTextModel.forward)
        cross = mixer == "cross_attention"
        self.gates = CrossAttentionGates() if cross else None
        self.skipped = cross and spec.cross_attention is not None \
            and not spec.cross_attention.image_tokens
        # Inkling's attn_sconv and mlp_sconv: x + conv(x) on each sublayer's output before
        # its residual add (pre-norm layers: ModelSpec's rule)
        kernel = spec.residual_conv
        self.convs = (nn.ModuleList(CausalConv(spec.d_model, kernel, False, "residual_conv")
                                    for _ in range(2)) if kernel is not None else None)
        residual = spec.block_residual
        queries, self.opens_block = block[0], block[1]
        self.split = residual is not None and kind in residual.split_kinds
        self.attention_mix = BlockMix(spec.d_model, queries) if queries else None
        self.mlp_mix = BlockMix(spec.d_model, 1) if residual is not None else None
        # a split layer's key and value input norms (k/v_input_layernorm)
        self.kv_norms = (nn.ModuleList(make_norm(spec.norm, spec.d_model, "block_residual")
                                       for _ in range(2)) if self.split else None)
        self.blocks: list[Tensor] = []  # the stored blocks' states, the model's list

    def _ffn(self, x: Tensor) -> Tensor:
        assert self.ffn is not None
        return self.ffn(x) if self.channel is None else self.channel(x, self.ffn)

    def _streams(self, x: Tensor, positions: Tensor) -> Tensor:
        """A pre-norm layer on hyper-connected streams x [B, T, n, d] (HYV4DecoderLayer)."""
        assert self.hc is not None and self.spread is not None
        mixer_map, ffn_map = self.hc
        # the gated maps' own norms replace the layer's (Qwen4ExpTextDecoderLayer: none)
        n = self.norms if len(self.norms) else (nn.Identity(), nn.Identity())
        post, mix, a = mixer_map(x)
        x = self.spread(post, mix, self.attention(n[0](a), positions), x)
        post, mix, a = ffn_map(x)
        return self.spread(post, mix, self._ffn(n[1](a)), x)

    def forward(self, x: Tensor, positions: Tensor, extra: Tensor | None = None,
                vector: Tensor | None = None) -> Tensor:
        """`extra`: the shared block's output at this depth, added to the mixer's input
        before its norm and not to the residual (ZambaMambaDecoderLayer; pre-norm only,
        calc.spec.model); `vector`: this layer's per-layer embedding, added through its gate
        after the FFN (Gemma4TextDecoderLayer)."""
        if self.altup is not None:
            return self._altup(x, positions, vector)
        x = self._layer(x, positions, extra)
        if self.per_layer is not None:
            assert vector is not None
            x = self.per_layer(x, vector)
        return x

    def _altup(self, streams: Tensor, positions: Tensor, vector: Tensor | None) -> Tensor:
        """The layer on AltUp's streams [B, T, n, d] (Gemma3nTextDecoderLayer): predict, run
        the layer on the active stream, correct; the per-layer embedding's path reads the
        corrected active stream, scaled, and adds to the other streams."""
        assert self.altup is not None
        predictions = self.altup(streams)
        corrected = self.altup(predictions, self._layer(predictions[..., 0, :], positions, None))
        if self.per_layer is None:
            return corrected
        assert vector is not None
        added = self.per_layer.branch(corrected[..., 0, :] * self.altup.scale, vector)
        return torch.cat([corrected[..., :1, :], corrected[..., 1:, :] + added.unsqueeze(-2)],
                         dim=-2)

    def _layer(self, x: Tensor, positions: Tensor, extra: Tensor | None) -> Tensor:
        n = self.norms
        if self.skipped:
            return x
        if self.gates is not None:  # pre-norm and sequential (ModelSpec's rule)
            x = x + torch.tanh(self.gates.attention) * self.attention(n[0](x), positions)
            return x + torch.tanh(self.gates.mlp) * self._ffn(n[1](x))
        if self.hc is not None:
            return self._streams(x, positions)
        if self.mlp_mix is not None:
            return self._blocks(x, positions)
        mixed = x if extra is None else x + extra
        if self.residual is not None:  # pre-norm, sequential (ModelSpec's rule)
            x = self.residual[0](x, self.attention(n[0](mixed), positions))
            return x if self.ffn is None else self.residual[1](x, self._ffn(n[1](x)))
        if self.ffn is None:  # the mixer alone (Mamba)
            if self.placement == "pre":
                return x + self.attention(n[0](mixed), positions)
            if self.placement == "post":
                return n[0](x + self.attention(x, positions))
            if self.placement == "sandwich":
                return x + n[1](self.attention(n[0](x), positions))
            return x + n[0](self.attention(x, positions))
        if self.parallel:  # x + Attn(N(x)) + FFN(N'(x)), N' = N with one shared norm
            a = n[0](x)
            return x + self.attention(a, positions) + self._ffn(n[-1](x) if len(n) > 1 else a)
        if self.convs is not None:  # pre-norm (ModelSpec's rule)
            a = self.attention(n[0](mixed), positions)
            x = x + a + self.convs[0](a)
            f = self._ffn(n[1](x))
            return x + f + self.convs[1](f)
        if self.placement == "pre":
            x = x + self.attention(n[0](mixed), positions)
            return x + self._ffn(n[1](x))
        if self.placement == "post":
            x = n[0](x + self.attention(x, positions))
            return n[1](x + self._ffn(x))
        if self.placement == "sandwich":
            a = n[0](x)
            x = x + n[1](self.attention(a, positions))
            if self.laurel is not None:  # Gemma3nTextDecoderLayer: beside the attention
                x = laurel_sum(x, self.laurel(a))
            return x + n[3](self._ffn(n[2](x)))
        x = x + n[0](self.attention(x, positions))  # reordered (OLMo 2)
        return x + n[1](self._ffn(x))


    def _blocks(self, x: Tensor, positions: Tensor) -> Tensor:
        """A pre-norm layer whose sublayer inputs mix the stored blocks and the residual
        (Inkling2SlidingDecoderLayer, Inkling2FullDecoderLayer): a layer that opens a block
        stores its input and restarts the residual from its attention output."""
        assert self.mlp_mix is not None
        n = self.norms
        inputs = (self.attention_mix([*self.blocks, x]) if self.attention_mix is not None
                  else (x, x, x))
        attention = self.attention.parts[0]
        if self.kv_norms is not None:
            attention.kv_inputs = (self.kv_norms[0](inputs[1]), self.kv_norms[1](inputs[2]))
        a = self.attention(n[0](inputs[0]), positions)
        attention.kv_inputs = None
        if self.convs is not None:
            a = a + self.convs[0](a)
        if self.opens_block:
            self.blocks.append(x)
            x = a
        else:
            x = x + a
        f = self._ffn(n[1](self.mlp_mix([*self.blocks, x])[0]))
        return x + f + (self.convs[1](f) if self.convs is not None else 0)


class BlockMix(nn.Module):
    """Inkling2BlockAttentionResidual: `queries` learned vectors of d score the sources, each
    RMS-normed without weights, by q·s/√d; the mix is their softmax times the normed sources
    (two matmuls per token: 2·d·S FLOPs each per query)."""

    def __init__(self, d: int, queries: int):
        super().__init__()
        tag(self, "block_residual")
        self.query = nn.Parameter(torch.zeros(queries, d))
        self.norm = nn.RMSNorm(d, elementwise_affine=False)

    def forward(self, sources: list[Tensor]) -> tuple[Tensor, ...]:
        stacked = self.norm(torch.stack(sources, dim=-2))  # [B, T, S, d]
        scores = (self.query @ stacked.transpose(-2, -1)) / math.sqrt(stacked.shape[-1])
        return (scores.softmax(-1) @ stacked).unbind(-2)  # each [B, T, d]


class MultiTokenPrediction(nn.Module):
    """DeepSeek-V3 §2.2: norms on the hidden state and the next token's embedding, M_k: 2d → d,
    one more block, and a norm before the shared output head. Counted, not run."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.input_norms = nn.ModuleList(make_norm(spec.norm, spec.d_model, "mtp/norms")
                                         for _ in range(2))
        self.projection = linear(2 * spec.d_model, spec.d_model, False, "mtp/projection")
        self.block = Block(spec, ffn="moe" if spec.moe is not None else "dense")
        for module in self.block.modules():  # all of it is the MTP block's, whatever inside
            tag(module, "mtp/block")
        self.head_norm = make_norm(spec.norm, spec.d_model, "mtp/norms")


class PredictionHead(nn.Module):
    """ModernBERT decoder's head before the logits (ModernBertDecoderPredictionHead): a d × d
    dense layer, GELU (its classifier_activation; any activation counts 0) and a norm."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        assert spec.prediction_head is not None
        d = spec.d_model
        self.dense = linear(d, d, spec.prediction_head.bias, "prediction_head")
        self.norm = make_norm(spec.norm, d, "prediction_head")

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(F.gelu(self.dense(x)))


class LMHead(nn.Module):
    """W_U (its own, or the token embedding's when tied) and an optional bias; head_rows rows,
    fewer than the embedding's where the head scores only the first output_vocab_size tokens."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "lm_head")
        v, d = spec.head_rows, spec.embedding_width
        self.weight = (None if spec.tie_embeddings
                       else nn.Parameter(torch.empty(v, d).uniform_(-d**-0.5, d**-0.5)))
        self.bias = nn.Parameter(torch.zeros(v)) if spec.lm_head_bias else None
        # nGPT (DoryLMHead): logit_scale, one per row
        self.logit_scale = nn.Parameter(torch.ones(v)) if spec.ngpt else None

        # a centroid head (Gemma4AssistantMaskedEmbedder): centroids d → C, then the rows of
        # the top k clusters (V/C consecutive rows each here; transformers' token_ordering
        # permutes which rows, not how many)
        head = spec.centroid_head
        self.centroids = linear(spec.d_model, head.n_centroids, False, "centroid_head") \
            if head is not None else None
        self.top_k = head.top_k if head is not None else 0
        self.per_cluster = spec.vocab_size // head.n_centroids if head is not None else 0

    def forward(self, x: Tensor, embedding: Tensor) -> Tensor:
        weight = embedding if self.weight is None else self.weight
        if self.centroids is None:
            return F.linear(x, weight, self.bias)
        chosen, clusters = torch.topk(self.centroids(x), self.top_k, dim=-1)  # [B, T, k]
        offsets = torch.arange(self.per_cluster, device=x.device)
        rows = (clusters.unsqueeze(-1) * self.per_cluster + offsets).flatten(-2)  # [B, T, k·V/C]
        logits = (x.unsqueeze(-2) @ weight[rows].transpose(-1, -2)).squeeze(-2)
        # the unscored tokens get one value (transformers: the lowest scored logit less one);
        # 0 · the chosen centroid logits gives the centroids' weight the backward calc counts
        # (2 × forward: topk's indices carry no gradient in transformers)
        full = x.new_zeros(*x.shape[:-1], weight.shape[0]).scatter(-1, rows, logits)
        return full + 0 * chosen.sum(-1, keepdim=True)


def _link_shared(layers: nn.ModuleList) -> None:
    """DSA's shared layers read the keys the last indexer layer before them selected."""
    last: Attention | None = None
    for layer in layers:
        for part in layer.attention.parts:
            if isinstance(part, Attention) and part.dsa:
                if part.indexer is None:
                    assert last is not None
                    part.shares = (last,)
                else:
                    last = part


def _link_kv_shared(layers: nn.ModuleList, kinds: tuple[str, ...]) -> None:
    """The kv-shared layers read the keys and values of the last earlier layer of their kind
    with its own (Gemma 4's kv_sharing_modes "store" and "reuse")."""
    last: dict[str, Attention] = {}
    for layer, kind in zip(layers, kinds, strict=True):
        for part in layer.attention.parts:
            if isinstance(part, Attention) and part.mla is None:
                if part.kv is None:  # none earlier in a drafter: it reads the target's
                    part.kv_source = (last[kind],) if kind in last else ()
                else:
                    last[kind] = part


class ReferenceModel(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        d, width = spec.d_model, spec.embedding_width
        self.token = tag(nn.Embedding(spec.vocab_size, width), "embedding/token")
        # OPT-350m: the embedding is narrower than the model; project in and back out
        projected = width != d
        self.project_in = linear(width, d, False, "embedding_projection") if projected else None
        self.project_out = linear(d, width, False, "embedding_projection") if projected else None
        self.position = (tag(nn.Embedding(spec.position_table, d), "embedding/position")
                         if spec.position.kind == "learned" else None)
        self.embedding_norm = (make_norm(spec.norm, d, "embedding/norm")
                               if spec.norm.embedding else None)
        scales = spec.residual_scales
        self.embedding_scale = (EmbeddingScale(d) if scales is not None and scales.embedding
                                else None)
        # CPM-Ant's segment table, its row added to each token's embedding
        self.segment = (tag(nn.Embedding(spec.segment_embedding, d), "embedding/segment")
                        if spec.segment_embedding else None)
        # per-layer embeddings: the table, the projection of the embedding and its norm over
        # each layer's p-wide slice (Gemma4TextModel)
        ple = spec.per_layer_embeddings
        self.ple_table = self.ple_projection = self.ple_norm = None
        if ple is not None:
            packed = spec.n_layers * ple.width
            self.ple_table = tag(nn.Embedding(ple.vocab_size or spec.vocab_size, packed),
                                 "per_layer_embeddings/table")
            self.ple_projection = linear(d, packed, False, "per_layer_embeddings/projection")
            self.ple_norm = make_norm(spec.norm, ple.width, "per_layer_embeddings/norms")
        # AltUp: the projections into the streams and out of them (Gemma3nTextModel)
        self.altup = AltUpProjections(spec) if spec.altup is not None else None
        indexer = spec.attention.indexer
        shared = set(indexer.shared_layers) if indexer else set()
        dense = set(indexer.dense_layers) if indexer else set()  # no indexer: None
        first_kv_shared = spec.n_layers - spec.attention.kv_shared_layers
        # attention.last_layer_out_bias: W_O's bias on the last layer only (GPT-NeoX-Japanese)
        last_bias = spec.n_layers - 1 if spec.attention.last_layer_out_bias else None
        block = spec.shared_block
        depths = block.layers if block is not None else ()
        hashed = set(spec.moe.hash_layers) if spec.moe is not None else set()
        comp = spec.attention.compression
        compressed = ({**{i: "sparse" for i in comp.sparse_layers},
                       **{i: "heavy" for i in comp.heavy_layers}} if comp is not None else {})
        residual = spec.block_residual
        mixes = (residual.sources(spec.n_layers, spec.attention_kinds)
                 if residual is not None else [])
        blocks = ([(mixes[2 * i - 1][0] if i else 0, i % residual.layers == 0,
                    mixes[2 * i - 1][1] if i else 0, mixes[2 * i][1])
                   for i in range(spec.n_layers)] if residual is not None else [])
        self.layers = nn.ModuleList(
            Block(spec, mixer, kind, ffn, None if i in dense else i not in shared,
                  i < first_kv_shared, i == last_bias,
                  i in depths, i in hashed, i > 0 or spec.norm.first_mixer_norm,
                  compressed.get(i, ""), i == 0, *([blocks[i]] if blocks else []))
            for i, (mixer, kind, ffn) in
            enumerate(zip(spec.mixer_kinds, spec.attention_kinds, spec.ffn_kinds, strict=True)))
        # the shared block's weight sets, and each depth's own parts; depth j runs set
        # j mod n_blocks (calc.spec.layers.SharedBlockSpec)
        self.shared_blocks = nn.ModuleList(
            SharedBlock(spec) for _ in range(block.n_blocks if block is not None else 0))
        self.depths = nn.ModuleList(Depth(spec) for _ in depths)
        self.depth_of = {layer: j for j, layer in enumerate(depths)}
        _link_shared(self.layers)
        _link_kv_shared(self.layers, spec.attention_kinds)
        # the bucketed score bias: one table, read by every attention layer
        self.position_bias = (PositionBias(spec) if spec.position.kind == "bucketed"
                              else None)
        if self.position_bias is not None:
            for module in self.layers.modules():
                if isinstance(module, Attention):
                    module.position_bias = (self.position_bias,)
        self.hc_head = HyperHead(spec) if spec.hyper_connections is not None else None
        # Inkling 2's final_input: the last mix over the blocks, before the final norm
        self.final_mix = BlockMix(d, 1) if residual is not None else None
        self.final_norm = make_norm(spec.norm, d, "final_norm") if spec.norm.final else None
        self.prediction_head = (PredictionHead(spec) if spec.prediction_head is not None
                                else None)
        # a drafter: pre_projection 2·D → d of the target's [embedding, hidden state] and
        # post_projection d → D of its final-norm state (Gemma4AssistantForCausalLM)
        drafter = spec.drafter
        self.pre_projection = self.post_projection = None
        if drafter is not None:
            width = drafter.target_width
            self.pre_projection = linear(2 * width, d, False, "drafter/projections")
            self.post_projection = linear(d, width, False, "drafter/projections")
        self.lm_head = LMHead(spec)
        self.mtp = nn.ModuleList(MultiTokenPrediction(spec) for _ in range(spec.mtp_modules))
        # a looped model's stored layers run in its schedule (calc.spec.loop), and HRM-Text's
        # initial state of the low-level stream, a frozen parameter (HrmTextModel.z_L_init)
        self.order = spec.loop.order() if spec.loop is not None else tuple(range(spec.n_layers))
        self.init_state = (tag(nn.ParameterDict({"state": nn.Parameter(
            torch.zeros(d), requires_grad=False)}), "loop/state")
            if spec.loop is not None and spec.loop.init_state else None)
        self.running: tuple[int, ...] | None = None  # the layers forward runs; None: all

    def layer_groups(self) -> dict[int, int]:
        """{first layer of each structure: the layers of that structure}. A layer is built
        from the spec and its structure alone, so layers of one structure run the same
        operators on inputs of one shape (calc.verify.count counts one of them)."""
        first: dict[tuple[str, str, str], int] = {}
        groups: dict[int, int] = {}
        for index in self.order:  # a looped layer once per pass
            head = first.setdefault(self.layers[index].structure, index)
            groups[head] = groups.get(head, 0) + 1
        return groups

    def forward(self, ids: Tensor) -> Tensor:
        """Logits [B, T, V_o] (head_rows) for token ids [B, T]."""
        t = ids.shape[1]
        positions = torch.arange(t, device=ids.device)
        x = self.token(ids)
        if self.pre_projection is not None:  # the target's states in place of the embedding
            assert self.spec.drafter is not None
            states = x.new_zeros(*ids.shape, 2 * self.spec.drafter.target_width)
            x = self.pre_projection(states.requires_grad_(torch.is_grad_enabled()))
        if self.project_in is not None:
            x = self.project_in(x)
        if self.segment is not None:  # one segment, 0, for every token
            x = x + self.segment(torch.zeros_like(ids))
        if self.position is not None:
            x = x + self.position(positions)
        elif self.spec.position.kind == "sinusoidal":
            x = x + sinusoids(t, x.shape[-1], x.device, x.dtype)
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        if self.embedding_scale is not None:
            x = self.embedding_scale(x)
        if self.hc_head is not None:  # n copies of the embedding (HYV4Model.forward)
            hc = self.spec.hyper_connections
            assert hc is not None
            x = x.unsqueeze(2).expand(-1, -1, hc.streams, -1).contiguous()
        embedding = x  # what the shared block reads beside the hidden state
        vectors = None  # per-layer embeddings [B, T, L, p]: the table's and the projection's
        if self.ple_table is not None:
            assert self.ple_projection is not None and self.ple_norm is not None
            shape = (*ids.shape, self.spec.n_layers, -1)
            vectors = (self.ple_table(ids).view(shape)
                       + self.ple_norm(self.ple_projection(x).view(shape)))
            if self.running == ():  # calc.verify.count's run without layers: the vectors
                # still reach the output (times 0, elementwise), so the projection's backward
                # runs there as in every other run, not once per counted layer
                x = x + 0 * vectors[:, :, :1, :1].squeeze(-1)
        if self.altup is not None:  # n copies of the embedding (Gemma3nTextModel.forward)
            x = self.altup.expand(x)
        blocks: list[Tensor] = []  # block_residual: the stored blocks' states
        pending = None  # ScMoE: an MoE layer's routed output, added after the next layer
        router_state = None  # ZAYA1: the router state each layer hands the next
        for index in self.order if self.running is None else self.running:
            layer = self.layers[index]
            j = self.depth_of.get(index)
            extra = (None if j is None else self.shared_blocks[j % len(self.shared_blocks)]
                     .apply(x, embedding, positions, self.depths[j]))
            if isinstance(layer.ffn, MixtureOfExperts):
                layer.ffn.ids = ids  # a hash-routed layer's table reads them
                layer.ffn.state = router_state
            if self.final_mix is not None:
                # the blocks stored before this layer (its input stands for those of layers a
                # counting run skips: calc.verify.count)
                residual = self.spec.block_residual
                assert residual is not None
                blocks += [x] * (-(-index // residual.layers) - len(blocks))
                layer.blocks = blocks
            x = layer(x, positions, extra, None if vectors is None else vectors[:, :, index])
            if isinstance(layer.ffn, MixtureOfExperts):
                router_state, layer.ffn.state = layer.ffn.state, None
            if pending is not None:
                x, pending = x + pending, None
            if isinstance(layer.ffn, MixtureOfExperts) and layer.ffn.pending is not None:
                pending, layer.ffn.pending = layer.ffn.pending, None
        if pending is not None:  # a counting run of that MoE layer alone
            x = x + pending
        if self.hc_head is not None:
            x = self.hc_head(x)
        if self.final_mix is not None:
            residual = self.spec.block_residual
            assert residual is not None
            blocks += [x] * (-(-self.spec.n_layers // residual.layers) - len(blocks))
            x = self.final_mix([*blocks, x])[0]
        if self.altup is not None:
            x = self.altup.collapse(x)
        if self.final_norm is not None:
            x = self.final_norm(x)
        if self.project_out is not None:
            x = self.project_out(x)
        state = x  # the final norm's output: a drafter hands it back to the target
        if self.prediction_head is not None:
            x = self.prediction_head(x)
        logits = self.lm_head(x, self.token.weight)
        if self.post_projection is not None:  # the state handed back to the target, an output
            logits = logits + 0 * self.post_projection(state).sum(-1, keepdim=True)  # beside them
        return logits


def build(spec: ModelSpec, device: str | torch.device = "meta",
          dtype: torch.dtype = torch.float32, seed: int = 0) -> ReferenceModel:
    """The reference model of `spec`: shapes only on "meta" (any size, no memory), or
    initialised on a real device (PyTorch's default initialisation, seeded)."""
    torch.manual_seed(seed)
    with torch.device(device):
        return ReferenceModel(spec).to(dtype)
