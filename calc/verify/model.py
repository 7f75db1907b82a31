"""The reference model: any ModelSpec as a torch nn.Module, on the meta device or the CPU.

Written to be counted. Every module carries the component key its parameters and FLOPs belong
to (`attention/q`, `mlp/up`, `moe/experts`, ...: the keys of calc.formulas), attention is
explicit matmuls (FlopCounterMode counts 0 for the fused CPU SDPA kernel), a sliding-window
layer computes only its band of keys, and an MoE layer sends each token to exactly top-k
experts: by the router's top-k on real tensors, by a fixed balanced assignment on the meta
device (which has no values to route on). Experts sharing a token count run as one bmm.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.spec.model import NormSpec

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu,
               "swiglu": F.silu, "geglu": F.gelu, "reglu": F.relu}


def tag(module: nn.Module, component: str) -> nn.Module:
    """Mark `module` (and what it owns) as part of `component`."""
    module.component = component  # type: ignore[assignment]
    return module


def make_norm(norm: NormSpec, width: int, component: str) -> nn.Module:
    if norm.kind == "rmsnorm":
        return tag(nn.RMSNorm(width), component)
    return tag(nn.LayerNorm(width, bias=norm.has_bias), component)


def linear(n_in: int, n_out: int, bias: bool, component: str) -> nn.Module:
    return tag(nn.Linear(n_in, n_out, bias=bias), component)


# ---- positions ------------------------------------------------------------------------------
def rope(x: Tensor, positions: Tensor) -> Tensor:
    """Rotary embedding on the last dimension (its largest even prefix); elementwise only."""
    width = x.shape[-1] // 2 * 2
    if width == 0:
        return x
    half = width // 2
    inv_freq = 1.0 / (10000 ** (torch.arange(half, device=x.device, dtype=x.dtype) / half))
    angles = positions[:, None].to(x.dtype) * inv_freq[None, :]  # [T, half]
    cos, sin = angles.cos(), angles.sin()
    a, b, rest = x[..., :half], x[..., half:width], x[..., width:]
    return torch.cat((a * cos - b * sin, a * sin + b * cos, rest), dim=-1)


def sinusoids(length: int, width: int, device: torch.device, dtype: torch.dtype) -> Tensor:
    """Vaswani et al. 2017 §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos."""
    position = torch.arange(length, device=device, dtype=dtype)[:, None]
    rate = torch.exp(torch.arange(0, width, 2, device=device, dtype=dtype)
                     * (-math.log(10000.0) / width))
    table = torch.zeros(length, width, device=device, dtype=dtype)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)[:, : width // 2]
    return table


def alibi_slopes(n_heads: int, device: torch.device, dtype: torch.dtype) -> Tensor:
    """Press et al. 2022: geometric slopes 2^(-8i/n) for n a power of two (interleaved else)."""
    def powers(n: int) -> list[float]:
        start = 2 ** (-8 / n)
        return [start ** (i + 1) for i in range(n)]

    closest = 2 ** math.floor(math.log2(n_heads))
    slopes = powers(closest) + powers(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, device=device, dtype=dtype)


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


# ---- attention ------------------------------------------------------------------------------
class Attention(nn.Module):
    """MHA/GQA/MQA or MLA; QKᵀ and A·V as explicit matmuls, tagged attention/scores."""

    def __init__(self, spec: ModelSpec, local: bool):
        super().__init__()
        tag(self, "attention/scores")
        att, d = spec.attention, spec.d_model
        self.h, self.h_kv = att.n_heads, spec.n_kv_heads
        self.d_qk, self.d_v = spec.head_dim_qk, spec.head_dim_v
        self.window = att.sliding_window if local else None
        self.rope = spec.position.kind == "rope"
        self.alibi = spec.position.kind == "alibi"
        self.relative = (RelativePositions(d, self.h, self.d_qk)
                         if spec.position.kind == "relative" else None)
        self.d = d
        self.mla = att.mla
        if att.mla is None:
            self.q = linear(d, self.h * self.d_qk, att.qkv_bias, "attention/q")
            self.kv = linear(d, self.h_kv * (self.d_qk + self.d_v), att.qkv_bias, "attention/kv")
        else:
            mla = att.mla
            self.d_rope = mla.qk_rope_head_dim
            if mla.q_lora_rank is None:
                self.q = linear(d, self.h * self.d_qk, False, "attention/q")
            else:
                self.q = tag(nn.Sequential(
                    linear(d, mla.q_lora_rank, att.qkv_bias, "attention/q"),
                    make_norm(spec.norm, mla.q_lora_rank, "attention/q"),
                    linear(mla.q_lora_rank, self.h * self.d_qk, False, "attention/q"),
                ), "attention/q")
            self.kv_a = linear(d, mla.kv_lora_rank + self.d_rope, att.qkv_bias, "attention/kv")
            self.kv_norm = make_norm(spec.norm, mla.kv_lora_rank, "attention/kv")
            self.kv_b = linear(mla.kv_lora_rank,
                               self.h * (self.d_qk - self.d_rope + self.d_v), False,
                               "attention/kv")
        self.o = linear(self.h * self.d_v, d, att.out_bias, "attention/o")
        self.qk_norm = att.qk_norm
        if att.qk_norm == "head":
            self.q_norm = make_norm(spec.norm, self.d_qk, "attention/qk_norm")
            self.k_norm = make_norm(spec.norm, self.d_qk, "attention/qk_norm")
        elif att.qk_norm == "projection":
            self.q_norm = make_norm(spec.norm, self.h * self.d_qk, "attention/qk_norm")
            self.k_norm = make_norm(spec.norm, self.h_kv * self.d_qk, "attention/qk_norm")

    def _heads(self, x: Tensor, n: int) -> Tensor:
        b, t, _ = x.shape
        return x.view(b, t, n, -1).transpose(1, 2)  # [B, n, T, width]

    def _mha(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        q, kv = self.q(x), self.kv(x)
        k, v = kv.split((self.h_kv * self.d_qk, self.h_kv * self.d_v), dim=-1)
        if self.qk_norm == "projection":
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = self._heads(q, self.h), self._heads(k, self.h_kv), self._heads(v, self.h_kv)
        if self.qk_norm == "head":
            q, k = self.q_norm(q), self.k_norm(k)
        if self.rope:
            q, k = rope(q, positions), rope(k, positions)
        if self.h_kv != self.h:  # GQA/MQA: shared keys, still scored by every query head
            k = k.repeat_interleave(self.h // self.h_kv, dim=1)
            v = v.repeat_interleave(self.h // self.h_kv, dim=1)
        return q, k, v

    def _mla(self, x: Tensor, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        q = self._heads(self.q(x), self.h)  # [B, h, T, d_qk]
        latent, k_rope = self.kv_a(x).split((self.kv_b.in_features, self.d_rope), dim=-1)
        kv = self._heads(self.kv_b(self.kv_norm(latent)), self.h)
        k_nope, v = kv.split((self.d_qk - self.d_rope, self.d_v), dim=-1)
        k_rope = rope(k_rope[:, None], positions)  # one RoPE key shared by all heads
        q = torch.cat((q[..., : self.d_qk - self.d_rope],
                       rope(q[..., self.d_qk - self.d_rope:], positions)), dim=-1)
        k = torch.cat((k_nope, k_rope.expand(-1, self.h, -1, -1)), dim=-1)
        return q, k, v

    def _bias(self, offsets: Tensor, dtype: torch.dtype) -> Tensor:
        """ALiBi: −slope·distance, broadcast over [B, h, T, keys]."""
        slopes = alibi_slopes(self.h, offsets.device, dtype)
        return -slopes[:, None, None] * offsets.to(dtype).abs()

    def _relative(self, q: Tensor, length: int) -> tuple[Tensor, Tensor | None]:
        """(query for the content scores, position scores [B, h, T, length] by distance)."""
        if self.relative is None:
            return q, None
        keys = self.relative.keys(length, self.d, q.device, q.dtype)
        return q + self.relative.u, (q + self.relative.v) @ keys.transpose(-2, -1)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        t = q.shape[2]
        scale = 1.0 / math.sqrt(self.d_qk)
        position = torch.arange(t, device=q.device)
        if self.window is None or self.window >= t:
            q, by_distance = self._relative(q, t)
            scores = (q @ k.transpose(-2, -1)) * scale  # [B, h, T, T]
            offsets = position[None, :] - position[:, None]  # key − query
            if by_distance is not None:  # entry (i, j) takes distance i − j (0 where masked)
                index = (-offsets).clamp(min=0).expand_as(scores)
                scores = scores + by_distance.gather(-1, index) * scale
            hidden = offsets > 0
            if self.window is not None:
                hidden = hidden | (offsets <= -self.window)
            if self.alibi:
                scores = scores + self._bias(offsets, scores.dtype)
            probs = scores.masked_fill(hidden, float("-inf")).softmax(-1)
            return probs @ v
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
        if self.alibi:
            scores = scores + self._bias(offsets.expand(t, w), scores.dtype)
        probs = scores.masked_fill(hidden, float("-inf")).softmax(-1)
        return (probs.unsqueeze(-2) @ values.transpose(-2, -1)).squeeze(-2)

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        q, k, v = self._mla(x, positions) if self.mla else self._mha(x, positions)
        out = self._attend(q, k, v)  # [B, h, T, d_v]
        b, _, t, _ = out.shape
        return self.o(out.transpose(1, 2).reshape(b, t, self.h * self.d_v))


# ---- feed-forward ---------------------------------------------------------------------------
class FeedForward(nn.Module):
    """W_down φ(W_up x), or W_down (φ(W_gate x) ⊙ W_up x) when gated."""

    def __init__(self, spec: ModelSpec, width: int, up: str = "mlp/up", down: str = "mlp/down"):
        super().__init__()
        d, ffn = spec.d_model, spec.ffn
        self.act = ACTIVATIONS[ffn.activation]
        self.up = linear(d, width, ffn.bias, up)
        self.gate = linear(d, width, ffn.bias, up) if ffn.gated else None
        self.down = linear(width, d, ffn.bias, down)

    def forward(self, x: Tensor) -> Tensor:
        hidden = self.act(self.gate(x)) * self.up(x) if self.gate else self.act(self.up(x))
        return self.down(hidden)


class Experts(nn.Module):
    """E routed experts as stacked weights [E, ...]; experts with equal loads run as one bmm."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "moe/experts")
        moe, d, ffn = spec.moe, spec.d_model, spec.ffn
        assert moe is not None
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


class MixtureOfExperts(nn.Module):
    """Router → exactly top-k experts per token (+ shared experts, optionally gated)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        moe = spec.moe
        assert moe is not None
        self.n, self.k = moe.n_experts, moe.top_k
        self.router = linear(spec.d_model, moe.n_experts, moe.router_bias, "moe/router")
        self.experts = Experts(spec)
        self.shared = nn.ModuleList(
            FeedForward(spec, moe.shared_width, "moe/shared", "moe/shared")
            for _ in range(moe.n_shared_experts))
        self.shared_gate = (linear(spec.d_model, 1, False, "moe/shared")
                            if moe.shared_expert_gate else None)

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
        weight, expert = probs.topk(self.k, dim=-1)
        order = expert.reshape(-1).argsort(stable=True)
        loads = torch.bincount(expert.reshape(-1), minlength=self.n).tolist()
        return order // self.k, weight.reshape(-1)[order], loads

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        flat = x.reshape(b * t, d)
        token, weight, loads = self._route(self.router(flat).softmax(-1))
        rows = flat.index_select(0, token)  # assignments, grouped by expert
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
        if self.shared:
            shared = sum(expert(flat) for expert in self.shared)
            if self.shared_gate is not None:
                shared = torch.sigmoid(self.shared_gate(flat)) * shared
            combined = combined + shared
        return combined.view(b, t, d)


# ---- blocks and model -----------------------------------------------------------------------
class Block(nn.Module):
    """One layer: attention and FFN with the spec's norm placement (pre/post/sandwich/...)."""

    def __init__(self, spec: ModelSpec, local: bool, moe: bool):
        super().__init__()
        self.placement, self.parallel = spec.norm.placement, spec.parallel_block
        self.attention = Attention(spec, local)
        self.ffn = MixtureOfExperts(spec) if moe else FeedForward(spec, spec.ffn.d_ff)
        self.norms = nn.ModuleList(make_norm(spec.norm, spec.d_model, "norms")
                                   for _ in range(spec.norms_per_layer))

    def forward(self, x: Tensor, positions: Tensor) -> Tensor:
        n = self.norms
        if self.parallel:  # x + Attn(N(x)) + FFN(N'(x)), N' = N with one shared norm
            a = n[0](x)
            return x + self.attention(a, positions) + self.ffn(n[-1](x) if len(n) > 1 else a)
        if self.placement == "pre":
            x = x + self.attention(n[0](x), positions)
            return x + self.ffn(n[1](x))
        if self.placement == "post":
            x = n[0](x + self.attention(x, positions))
            return n[1](x + self.ffn(x))
        if self.placement == "sandwich":
            x = x + n[1](self.attention(n[0](x), positions))
            return x + n[3](self.ffn(n[2](x)))
        x = x + n[0](self.attention(x, positions))  # reordered (OLMo 2)
        return x + n[1](self.ffn(x))


class MultiTokenPrediction(nn.Module):
    """DeepSeek-V3 §2.2: norms on the hidden state and the next token's embedding, M_k: 2d → d,
    one more block, and a norm before the shared output head. Counted, not run."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.input_norms = nn.ModuleList(make_norm(spec.norm, spec.d_model, "mtp/norms")
                                         for _ in range(2))
        self.projection = linear(2 * spec.d_model, spec.d_model, False, "mtp/projection")
        self.block = Block(spec, local=False, moe=spec.moe is not None)
        for module in self.block.modules():  # all of it is the MTP block's, whatever inside
            tag(module, "mtp/block")
        self.head_norm = make_norm(spec.norm, spec.d_model, "mtp/norms")


class LMHead(nn.Module):
    """W_U (its own, or the token embedding's when tied) and an optional bias."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        tag(self, "lm_head")
        v, d = spec.vocab_size, spec.d_model
        self.weight = (None if spec.tie_embeddings
                       else nn.Parameter(torch.empty(v, d).uniform_(-d**-0.5, d**-0.5)))
        self.bias = nn.Parameter(torch.zeros(v)) if spec.lm_head_bias else None

    def forward(self, x: Tensor, embedding: Tensor) -> Tensor:
        return F.linear(x, embedding if self.weight is None else self.weight, self.bias)


class ReferenceModel(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        d = spec.d_model
        self.token = tag(nn.Embedding(spec.vocab_size, d), "embedding/token")
        self.position = (tag(nn.Embedding(spec.position_table, d), "embedding/position")
                         if spec.position.kind == "learned" else None)
        self.embedding_norm = (make_norm(spec.norm, d, "embedding/norm")
                               if spec.norm.embedding else None)
        self.layers = nn.ModuleList(
            Block(spec, local=kind == "local", moe=is_moe)
            for kind, is_moe in zip(spec.layer_kinds, spec.moe_layers, strict=True))
        self.final_norm = make_norm(spec.norm, d, "final_norm") if spec.norm.final else None
        self.lm_head = LMHead(spec)
        self.mtp = nn.ModuleList(MultiTokenPrediction(spec) for _ in range(spec.mtp_modules))

    def forward(self, ids: Tensor) -> Tensor:
        """Logits [B, T, V] for token ids [B, T]."""
        t = ids.shape[1]
        positions = torch.arange(t, device=ids.device)
        x = self.token(ids)
        if self.position is not None:
            x = x + self.position(positions)
        elif self.spec.position.kind == "sinusoidal":
            x = x + sinusoids(t, x.shape[-1], x.device, x.dtype)
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        for layer in self.layers:
            x = layer(x, positions)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return self.lm_head(x, self.token.weight)


def build(spec: ModelSpec, device: str | torch.device = "meta",
          dtype: torch.dtype = torch.float32, seed: int = 0) -> ReferenceModel:
    """The reference model of `spec`: shapes only on "meta" (any size, no memory), or
    initialised on a real device (PyTorch's default initialisation, seeded)."""
    torch.manual_seed(seed)
    with torch.device(device):
        return ReferenceModel(spec).to(dtype)
