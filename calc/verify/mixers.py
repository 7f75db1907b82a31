"""The reference model's other mixers: Mamba and Mamba-2, gated DeltaNet, lightning attention,
RWKV-4's time-mix and channel-mix, Griffin's recurrent block, xLSTM's mLSTM, short convolutions.

Each is written to be counted (calc.formulas.mixers states the conventions): projections are
nn.Linear, the convolution a causal depthwise conv1d with exactly T outputs, and the scan runs
token by token, its state arithmetic inside `state_arithmetic` (decay 1, write 2 per state
element, counted by calc.verify.count.StateCounter) and its reads of the state as matmuls
(2 per element, counted by FlopCounterMode). What prepares the coefficients (exp, softplus,
Δ·A, Δ·x, β, the gates, the D skip, q/k normalisation) runs outside those regions: 0 FLOPs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.parts import CausalConv, linear, rms_norm, state_arithmetic, tag


class Scan(nn.Module):
    """The selective scan over a state of P × N per head: h_t = a_t ⊙ h_{t−1} + u_t ⊗ b_t,
    read out as y_t = h_t c_t (Mamba-1: a head per channel, P = 1; Mamba-2: H heads of P)."""

    def __init__(self, component: str):
        super().__init__()
        tag(self, component)
        self.component = component

    def forward(self, decay: Tensor, u: Tensor, b: Tensor, c: Tensor) -> Tensor:
        """decay [B, T, H, 1 or P, 1 or N]; u [B, T, H, P]; b, c [B, T, H, N] → y [B, T, H, P]."""
        batch, t, heads, width = u.shape
        state = u.new_zeros(batch, heads, width, b.shape[-1])
        outputs = []
        for i in range(t):
            with state_arithmetic(self.component):
                state = state * decay[:, i]  # decay: 1 per element
                state = state + u[:, i, :, :, None] * b[:, i, :, None, :]  # write: 2
            outputs.append((state @ c[:, i, :, :, None]).squeeze(-1))  # read: 2 (a matmul)
        return torch.stack(outputs, dim=1)


class Mamba(nn.Module):
    """Mamba (S6) or Mamba-2 (SSD) as their reference code builds them (calc.formulas.mixers)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        m, d = spec.mamba, spec.d_model
        assert m is not None
        self.v2, self.n, self.inner = m.version == 2, m.d_state, m.d_inner
        self.heads = m.n_heads if self.v2 else m.d_inner  # Mamba-1: one "head" per channel
        self.groups = m.n_groups
        b_c = 2 * m.n_groups * m.d_state if self.v2 else 0
        extra = b_c + (m.n_heads or 0) if self.v2 else 0
        self.inp = linear(d, 2 * m.d_inner + extra, m.bias, "mamba/in")
        self.conv = CausalConv(m.d_inner + b_c, m.d_conv, m.conv_bias, "mamba/conv")
        heads = self.heads
        if self.v2:
            self.dt_bias = tag(_Vector(heads), "mamba/dt")
            self.norm = rms_norm(m.d_inner, "mamba/norm") if m.has_gated_norm else None
        else:
            assert m.dt_rank is not None
            self.rank = m.dt_rank
            self.x = linear(m.d_inner, m.dt_rank + 2 * m.d_state, False, "mamba/x")
            self.dt = linear(m.dt_rank, m.d_inner, True, "mamba/dt")
            self.dt_norms = (nn.ModuleList(rms_norm(w, "mamba/norm")
                                           for w in (m.dt_rank, m.d_state, m.d_state))
                             if m.dt_norms else None)
        self.a_log = tag(_Vector(heads, m.d_state if not self.v2 else 1), "mamba/ssm")
        self.skip = tag(_Vector(heads), "mamba/ssm")
        self.scan = Scan("mamba/scan")
        self.out = linear(m.d_inner, d, m.bias, "mamba/out")

    def _coefficients(self, xbc: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Mamba-1: Δ (low rank, then D channels), B and C from the conv's output."""
        low, b, c = self.x(xbc).split((self.rank, self.n, self.n), dim=-1)
        if self.dt_norms is not None:
            low, b, c = (norm(part) for norm, part in zip(self.dt_norms, (low, b, c),
                                                          strict=True))
        return F.softplus(self.dt(low)), b, c

    def forward(self, x: Tensor) -> Tensor:
        batch, t, _ = x.shape
        delta = self.heads if self.v2 else 0  # Mamba-2 projects Δ with x, z, B and C
        z, xbc, dt = self.inp(x).split(
            (self.inner, self.inp.out_features - self.inner - delta, delta), dim=-1)
        xbc = F.silu(self.conv(xbc))
        a = -torch.exp(self.a_log.values)  # [H, N] or [H, 1]
        if self.v2:
            xs, b, c = xbc.split((self.inner, self.groups * self.n, self.groups * self.n), -1)
            dt = F.softplus(dt + self.dt_bias.values)  # [B, T, H]
            per_group = self.heads // self.groups
            b, c = (part.view(batch, t, self.groups, 1, self.n)
                    .expand(-1, -1, -1, per_group, -1).reshape(batch, t, self.heads, self.n)
                    for part in (b, c))
            u = (dt[..., None] * xs.view(batch, t, self.heads, -1))  # [B, T, H, P]
            decay = torch.exp(dt * a.view(-1))[..., None, None]  # [B, T, H, 1, 1]
        else:
            xs = xbc
            dt, b, c = self._coefficients(xbc)  # [B, T, D], [B, T, N], [B, T, N]
            b, c = (part[:, :, None, :].expand(-1, -1, self.heads, -1) for part in (b, c))
            u = (dt * xs)[..., None]  # [B, T, D, 1]: each channel a head of width 1
            decay = torch.exp(dt[..., None] * a)[:, :, :, None, :]  # [B, T, D, 1, N]
        y = self.scan(decay, u, b, c).reshape(batch, t, self.inner)
        y = y + (xs.view(batch, t, self.heads, -1) * self.skip.values[:, None]).reshape(
            batch, t, self.inner)
        y = y * F.silu(z)
        if self.v2 and self.norm is not None:
            y = self.norm(y)
        return self.out(y)


class _Vector(nn.Module):
    """A learned vector or matrix (Δ's bias, A, the skip D) under a module of its own, so it
    carries its component's tag."""

    def __init__(self, *shape: int):
        super().__init__()
        self.values = nn.Parameter(torch.zeros(*shape))


class DeltaNet(nn.Module):
    """Gated DeltaNet (Yang et al. 2025; Qwen3-Next): S_t = α_t S_{t−1}(I − β_t k_t k_tᵀ)
    + β_t k_t v_tᵀ, o_t = S_tᵀ q_t, run token by token; a gated RMSNorm, out_proj. With the
    channel gate (Kimi Delta Attention) α_t is a vector over each state's key channels, from a
    low-rank pair, and the norm's gate is a sigmoid of another low-rank pair; at full rank
    (Ling 3) both are projected with q, k, v and β."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        n, d = spec.deltanet, spec.d_model
        assert n is not None
        self.hk, self.hv, self.dk, self.dv = n.n_k_heads, n.n_v_heads, n.d_k, n.d_v
        self.channel = n.channel_gate
        keys, values = n.n_k_heads * n.d_k, n.n_v_heads * n.d_v
        decay = n.n_v_heads * n.d_k if self.channel else n.n_v_heads
        # q, k, v, z, β, α; the channel gate projects q, k, v and β, and at full rank the
        # decay and the output gate after them (Ling 3's f_proj and g_proj)
        self.widths = ((keys, keys, values, n.n_v_heads) if self.channel
                       else (keys, keys, values, values, n.n_v_heads, n.n_v_heads))
        if n.full_rank_gates:
            self.widths += (decay, values)
        self.inp = linear(d, sum(self.widths), False, "deltanet/in")
        self.conv = CausalConv(2 * keys + values, n.d_conv, False, "deltanet/conv")
        self.dt_bias = tag(_Vector(decay), "deltanet/gates")
        self.a_log = tag(_Vector(n.n_v_heads), "deltanet/gates")
        self.lowrank = self.channel and not n.full_rank_gates
        if self.lowrank:
            rank = n.gate_rank or 0
            self.decay_a = linear(d, rank, False, "deltanet/lowrank")
            self.decay_b = linear(rank, decay, False, "deltanet/lowrank")
            self.gate_a = linear(d, rank, False, "deltanet/lowrank")
            self.gate_b = linear(rank, values, False, "deltanet/lowrank")
        self.norm = rms_norm(n.d_v, "deltanet/norm")
        self.rule = DeltaRule()
        self.out = linear(values, d, False, "deltanet/out")

    def _heads(self, x: Tensor, heads: int) -> Tensor:
        return x.unflatten(-1, (heads, -1))

    def forward(self, x: Tensor) -> Tensor:
        batch, t, _ = x.shape
        q, k, v, *rest = self.inp(x).split(self.widths, dim=-1)
        q, k, v = F.silu(self.conv(torch.cat((q, k, v), -1))).split(self.widths[:3], -1)
        repeat = self.hv // self.hk
        q, k = (F.normalize(self._heads(part, self.hk), dim=-1).repeat_interleave(repeat, 2)
                for part in (q, k))
        q = q * self.dk ** -0.5
        v = self._heads(v, self.hv)
        a_rate = torch.exp(self.a_log.values)  # [H_v]
        if self.channel:
            if self.lowrank:
                (b,) = rest
                a, g = self.decay_b(self.decay_a(x)), self.gate_b(self.gate_a(x))
            else:
                b, a, g = rest
            a = self._heads(a + self.dt_bias.values, self.hv)
            decay = torch.exp(-a_rate[:, None] * F.softplus(a))  # [B, T, H_v, d_k]
            gate = torch.sigmoid(self._heads(g, self.hv))
        else:
            z, b, a = rest
            decay = torch.exp(-a_rate * F.softplus(a + self.dt_bias.values))[..., None]
            gate = F.silu(self._heads(z, self.hv))
        beta = torch.sigmoid(b)  # [B, T, H_v]
        out = self.rule(q, k, v, beta, decay)
        out = self.norm(out) * gate
        return self.out(out.reshape(batch, t, -1))


class DeltaRule(nn.Module):
    """The gated delta rule token by token: decay (1), read kᵀS (2), write k ⊗ δ (2), read
    Sᵀq (2) per state element; δ = β(v − kᵀS) is per value element: 0."""

    def __init__(self) -> None:
        super().__init__()
        tag(self, "deltanet/scan")

    def forward(self, q: Tensor, k: Tensor, v: Tensor, beta: Tensor, decay: Tensor) -> Tensor:
        """decay: [B, T, H_v, 1] (one per head) or [B, T, H_v, d_k] (one per key channel)."""
        batch, t, heads, dk = k.shape
        state = v.new_zeros(batch, heads, dk, v.shape[-1])
        outputs = []
        for i in range(t):
            with state_arithmetic("deltanet/scan"):
                state = state * decay[:, i, :, :, None]
            remembered = (k[:, i, :, None, :] @ state).squeeze(-2)  # [B, H, d_v]
            delta = (v[:, i] - remembered) * beta[:, i, :, None]
            with state_arithmetic("deltanet/scan"):
                state = state + k[:, i, :, :, None] * delta[:, :, None, :]
            outputs.append((q[:, i, :, None, :] @ state).squeeze(-2))
        return torch.stack(outputs, dim=1)


class Lightning(nn.Module):
    """Lightning attention (MiniMax-01; transformers' MiniMaxLightningAttention): q, k, v =
    SiLU(qkv_proj(x)) per head, S_t = λ·S_{t−1} + k_t v_tᵀ and o_t = S_tᵀ q_t run token by token
    (Scan with the state stored transposed: v ⊗ k, read by q), an RMSNorm over the H·d_h output
    channels, times sigmoid(output_gate(x)), out_proj. λ is each head's fixed decay (ALiBi's
    slopes in transformers; its value changes no count)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        la, d = spec.lightning, spec.d_model
        assert la is not None
        self.heads, width = la.n_heads, la.n_heads * la.d_head
        self.qkv = linear(d, 3 * width, False, "lightning/qkv")
        self.scan = Scan("lightning/scan")
        self.norm = rms_norm(width, "lightning/norm")
        self.gate = linear(d, width, False, "lightning/gate")
        self.out = linear(width, d, False, "lightning/out")
        # 2^(−8/H)^(i+1), the slopes transformers' get_slope_rate starts from
        self.register_buffer("slope", 2.0 ** (-8.0 / la.n_heads * torch.arange(1, la.n_heads + 1)),
                             persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        batch, t, _ = x.shape
        q, k, v = F.silu(self.qkv(x)).unflatten(-1, (self.heads, -1)).chunk(3, dim=-1)
        decay = torch.exp(-self.slope).to(x.dtype)[:, None, None].expand(batch, t, -1, 1, 1)
        out = self.scan(decay, v, k, q).reshape(batch, t, -1)
        return self.out(self.norm(out) * torch.sigmoid(self.gate(x)))


def _shift(x: Tensor) -> Tensor:
    """x_{t−1} at each t, zeros at t = 0 (RWKV's time_shift: nn.ZeroPad2d((0, 0, 1, -1)))."""
    return F.pad(x, (0, 0, 1, -1))


class Wkv(nn.Module):
    """RWKV-4's WKV recurrence run token by token over d_a channels, two state elements each
    (calc.formulas.mixers): wkv_t = (a + e^{u+k}·v) / (b + e^{u+k}), then a ← e^{−w}·a + e^k·v
    and b ← e^{−w}·b + e^k. The exponentials are coefficients, outside the counted region; the
    division is a multiply by the reciprocal (reciprocal itself is a coefficient)."""

    def __init__(self) -> None:
        super().__init__()
        tag(self, "rwkv/scan")

    def forward(self, decay: Tensor, first: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """decay, first [d_a] (time_decay w, time_first u); k, v [B, T, d_a] → [B, T, d_a]."""
        batch, t, width = k.shape
        a = k.new_zeros(batch, width)
        b = k.new_zeros(batch, width)
        fade = torch.exp(-torch.exp(decay))
        outputs = []
        for i in range(t):
            bonus, ek = torch.exp(first + k[:, i]), torch.exp(k[:, i])
            with state_arithmetic("rwkv/scan"):
                numerator = a + bonus * v[:, i]  # read: 2
                denominator = b + bonus  # read: 1
            scale = torch.reciprocal(denominator)
            with state_arithmetic("rwkv/scan"):
                outputs.append(numerator * scale)  # read: 1 (the division)
                a = a * fade + ek * v[:, i]  # decay 1, write 2
                b = b * fade + ek  # decay 1, write 1
        return torch.stack(outputs, dim=1)


class Rwkv(nn.Module):
    """RWKV-4's time-mix (transformers' RwkvSelfAttention): the token shift mixes x_t and
    x_{t−1} by time_mix_key/value/receptance, key, value, receptance d → d_a, the WKV, times
    sigmoid(receptance), output d_a → d. `channel` is the layer's channel-mix extras."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        rwkv, d = spec.rwkv, spec.d_model
        assert rwkv is not None
        width = rwkv.d_attention
        self.mix = tag(_Vector(3, d), "rwkv/shift")
        self.decay = tag(_Vector(2, width), "rwkv/decay")  # time_decay, time_first
        self.key = linear(d, width, False, "rwkv/key")
        self.value = linear(d, width, False, "rwkv/value")
        self.receptance = linear(d, width, False, "rwkv/receptance")
        self.wkv = Wkv()
        self.output = linear(width, d, False, "rwkv/output")

    def forward(self, x: Tensor) -> Tensor:
        shifted, mix = _shift(x), self.mix.values
        k, v, r = (x * mix[i] + shifted * (1 - mix[i]) for i in range(3))
        wkv = self.wkv(self.decay.values[0], self.decay.values[1], self.key(k), self.value(v))
        return self.output(torch.sigmoid(self.receptance(r)) * wkv)


class RwkvChannelMix(nn.Module):
    """RWKV-4's channel-mix around the layer's FFN (transformers' RwkvFeedForward): the token
    shift by time_mix_key/receptance, FFN(key mix) (its key and value: a relu2 FFN) times
    sigmoid(receptance(receptance mix)), receptance d → d."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        d = spec.d_model
        self.mix = tag(_Vector(2, d), "rwkv/shift")
        self.receptance = linear(d, d, False, "rwkv/gate")

    def forward(self, x: Tensor, ffn: nn.Module) -> Tensor:
        shifted, mix = _shift(x), self.mix.values
        k, r = (x * mix[i] + shifted * (1 - mix[i]) for i in range(2))
        return torch.sigmoid(self.receptance(r)) * ffn(k)


class _BlockGates(nn.Module):
    """The RG-LRU's input and recurrence gates: sigmoid(x·W + b) with W block-diagonal, one bmm
    over the blocks each (RecurrentGemmaRglru's baddbmm), the bias added after."""

    def __init__(self, blocks: int, width: int):
        super().__init__()
        tag(self, "griffin/gates")
        self.blocks, self.width = blocks, width
        self.weight = nn.Parameter(torch.zeros(2, blocks, width, width))
        self.bias = nn.Parameter(torch.zeros(2, blocks * width))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        batch, t, channels = x.shape
        blocks = x.reshape(batch * t, self.blocks, self.width).transpose(0, 1)
        gates = []
        for which in range(2):
            out = torch.bmm(blocks, self.weight[which])  # [blocks, B·T, w]
            out = out.transpose(0, 1).reshape(batch, t, channels) + self.bias[which]
            gates.append(torch.sigmoid(out))
        return gates[0], gates[1]


class Griffin(nn.Module):
    """Griffin's recurrent block (transformers' RecurrentGemmaRecurrentBlock and
    RecurrentGemmaRglru): y = GeLU(linear_y(x)); x' = conv(linear_x(x)); the RG-LRU's input gate
    i and recurrence gate r, each block-diagonal (one bmm over the blocks, the bias added after);
    a = exp(−8·r·softplus(Λ)); h_t = a_t ⊙ h_{t−1} + √(1 − a_t²) ⊙ (i_t ⊙ x'_t) run token by
    token; linear_out(h ⊙ y). The coefficients (a, √(1 − a²)) and the gated input i ⊙ x' are
    prepared outside the counted region (calc.formulas.mixers)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        gr, d = spec.griffin, spec.d_model
        assert gr is not None
        self.blocks, self.width = gr.n_blocks, gr.block_width
        self.y = linear(d, gr.d_lru, True, "griffin/y")
        self.x = linear(d, gr.d_lru, True, "griffin/x")
        self.conv = CausalConv(gr.d_lru, gr.d_conv, True, "griffin/conv")
        self.gates = _BlockGates(gr.n_blocks, self.width)
        self.decay = tag(_Vector(gr.d_lru), "griffin/decay")  # the recurrent parameter Λ
        self.out = linear(gr.d_lru, d, True, "griffin/out")

    def forward(self, x: Tensor) -> Tensor:
        y = F.gelu(self.y(x), approximate="tanh")
        xs = self.conv(self.x(x))
        gate_in, gate_a = self.gates(xs)
        log_a = -8.0 * gate_a * F.softplus(self.decay.values)
        a = torch.exp(log_a)
        # the normaliser √(1 − a²) and the gated input; their product is the write's multiply
        # (Mamba's B̄·x), inside the counted region
        normaliser, gated = torch.sqrt(1 - torch.exp(2 * log_a)), gate_in * xs
        state = xs.new_zeros(xs.shape[0], xs.shape[2])
        outputs = []
        for i in range(xs.shape[1]):
            with state_arithmetic("griffin/scan"):
                state = state * a[:, i]  # decay: 1 per channel
                state = state + normaliser[:, i] * gated[:, i]  # write: 2
            outputs.append(state)
        return self.out(torch.stack(outputs, dim=1) * y)


class Mlstm(nn.Module):
    """xLSTM's mLSTM layer (transformers' xLSTMLayer, calc.spec.layers.MlstmSpec): q, k, v, the
    output gate's preactivation, the input and forget gates (d → H each, with biases), the
    memory run token by token, a per-head
    LayerNorm with γ only, sigmoid(o) times it, out_proj.

    Each head's matrix memory C (d_v × d_k) and normaliser n (d_k) are one Scan state of
    (d_v + 1) × d_k: the values with a constant 1 appended are written against i_t·k_t, so
    the write is k vᵀ into C and k into n, and q reads both, h̃ = Cq and nᵀq (calc.formulas.
    mixers: 5 FLOPs per element). The gates' exponentials, f_t = σ(f̃_t), i_t·k_t and the
    division h̃ / max(|nᵀq|, 1) prepare or normalise (0); the running stabiliser m_t of
    transformers' kernels is numerics and left out (the gates here are soft-capped, so
    exp(i) stays finite)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        ml, d = spec.mlstm, spec.d_model
        assert ml is not None
        self.heads, self.d_k = ml.n_heads, ml.d_qk // ml.n_heads
        self.q = linear(d, ml.d_qk, False, "mlstm/q")
        self.k = linear(d, ml.d_qk, False, "mlstm/k")
        self.v = linear(d, ml.d_v, False, "mlstm/v")
        self.ogate = linear(d, ml.d_v, False, "mlstm/ogate")
        self.igate = linear(d, ml.n_heads, True, "mlstm/gates")
        self.fgate = linear(d, ml.n_heads, True, "mlstm/gates")
        self.scan = Scan("mlstm/scan")
        self.norm = tag(_Vector(ml.d_v), "mlstm/norm")  # the head norm's γ
        self.out = linear(ml.d_v, d, False, "mlstm/out")

    def forward(self, x: Tensor) -> Tensor:
        batch, t, _ = x.shape
        heads = self.heads
        q = self.q(x).unflatten(-1, (heads, -1)) * self.d_k ** -0.5
        k, v = self.k(x).unflatten(-1, (heads, -1)), self.v(x).unflatten(-1, (heads, -1))
        cap = 15.0  # gate_soft_cap (xLSTM-7b's), a tanh: no parameter, no matrix FLOP
        gate_i = cap * torch.tanh(self.igate(x) / cap)
        gate_f = cap * torch.tanh(self.fgate(x) / cap)
        forget = torch.sigmoid(gate_f)[..., None, None]  # [B, T, H, 1, 1]
        written = k * torch.exp(gate_i)[..., None]  # i_t·k_t
        values = torch.cat([v, v.new_ones(batch, t, heads, 1)], dim=-1)
        read = self.scan(forget, values, written, q)  # [B, T, H, d_v + 1]
        h = read[..., :-1] / torch.clamp(read[..., -1:].abs(), min=1.0)
        h = F.layer_norm(h, h.shape[-1:]).flatten(2) * self.norm.values
        return self.out(torch.sigmoid(self.ogate(x)) * h)


class ShortConv(nn.Module):
    """LFM2's gated short convolution: B, C, x = in_proj(x); out_proj(C ⊙ conv(B ⊙ x))."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        sc, d = spec.short_conv, spec.d_model
        assert sc is not None
        self.inp = linear(d, 3 * d, sc.bias, "conv/in")
        self.conv = CausalConv(d, sc.d_conv, sc.bias, "conv/conv")
        self.out = linear(d, d, sc.bias, "conv/out")

    def forward(self, x: Tensor) -> Tensor:
        b, c, h = self.inp(x).chunk(3, dim=-1)
        return self.out(c * self.conv(b * h))
