"""JetMoE's mixture of attention heads in the reference model (Shen et al. 2024 §2.2; transformers'
JetMoeMoA): a router picks k of E experts per token; expert e projects the token to h_kv query
heads with its own W_Q and maps those heads' outputs back with its own W_O; the k outputs are
summed by the router's weights, plus one bias. Keys and values stay one shared projection
(calc.verify.attention). Each expert multiplies the tokens routed to it (one matmul per expert),
so FlopCounterMode sees exactly k experts per token, as calc counts them.

Routing: the router's top-k on real tensors; on the meta device, which has no values, slot j of
token t goes to expert (t·k + j) mod E, still k distinct experts a token (k ≤ E).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.parts import linear, tag


@dataclass(frozen=True)
class Routing:
    """The token slots (slot t·k + j: token t's j-th expert) sorted by expert."""

    slots: Tensor  # [N·k] slot ids, grouped by expert
    weights: Tensor  # [N·k] the router's weight of each sorted slot
    loads: list[int]  # slots per expert


def route(probs: Tensor, k: int) -> Routing:
    """Each token's top-k experts (balanced on the meta device)."""
    tokens, experts = probs.shape
    if probs.is_meta:
        loads = [0] * experts
        for slot in range(tokens * k):
            loads[slot % experts] += 1
        empty = torch.empty(tokens * k, dtype=torch.long, device="meta")
        return Routing(empty, probs.reshape(-1)[: tokens * k], loads)
    weight, chosen = probs.topk(k, dim=-1)
    order = chosen.reshape(-1).argsort(stable=True)
    loads = torch.bincount(chosen.reshape(-1), minlength=experts).tolist()
    return Routing(order, weight.reshape(-1)[order], loads)


class _Stacked(nn.Module):
    """E expert matrices [E, n_in, n_out]; rows grouped by expert, one matmul each."""

    def __init__(self, experts: int, n_in: int, n_out: int, component: str):
        super().__init__()
        tag(self, component)
        self.weight = nn.Parameter(torch.empty(experts, n_in, n_out).uniform_(
            -n_in**-0.5, n_in**-0.5))

    def run(self, rows: Tensor, loads: list[int]) -> Tensor:
        pieces, start = [], 0
        for expert, load in enumerate(loads):
            if load:
                pieces.append(rows[start:start + load] @ self.weight[expert])
            start += load
        return torch.cat(pieces)


class ExpertQueries(_Stacked):
    """The router and the experts' W_Q: x [B, T, d] → queries [B, T, k·h_kv·d_qk]."""

    def __init__(self, spec: ModelSpec):
        att = spec.attention
        assert att.experts is not None
        super().__init__(att.experts, spec.d_model, spec.n_kv_heads * spec.head_dim_qk,
                         "attention/q")
        self.k = att.n_heads // spec.n_kv_heads
        self.router = linear(spec.d_model, att.experts, False, "attention/router")

    def forward(self, x: Tensor) -> tuple[Tensor, Routing]:
        b, t, d = x.shape
        flat = x.reshape(b * t, d)
        routing = route(self.router(flat).softmax(-1), self.k)
        rows = flat.index_select(0, routing.slots // self.k)
        sorted_out = self.run(rows, routing.loads)
        out = torch.zeros_like(sorted_out).index_copy(0, routing.slots, sorted_out)
        return out.view(b, t, -1), routing


class ExpertOutputs(_Stacked):
    """The experts' W_O and the output bias: heads [B, T, k·h_kv·d_v] → [B, T, d]."""

    def __init__(self, spec: ModelSpec):
        att = spec.attention
        assert att.experts is not None
        super().__init__(att.experts, spec.n_kv_heads * spec.head_dim_v, spec.d_model,
                         "attention/o")
        self.k = att.n_heads // spec.n_kv_heads
        self.bias = nn.Parameter(torch.zeros(spec.d_model)) if att.out_bias else None

    def forward(self, heads: Tensor, routing: Routing) -> Tensor:
        b, t, _ = heads.shape
        per_slot = heads.reshape(b * t * self.k, -1).index_select(0, routing.slots)
        out = self.run(per_slot, routing.loads) * routing.weights[:, None]
        combined = out.new_zeros(b * t, out.shape[-1]).index_add(
            0, routing.slots // self.k, out)
        if self.bias is not None:
            combined = combined + self.bias
        return combined.view(b, t, -1)
