"""Gemma 3n's residual-stream parts in the reference model: AltUp's n copies of the stream
[B, T, n, d] around each layer, and LAuReL's low-rank residual beside the mixer
(calc.spec.layers.AltUpSpec, LaurelSpec; transformers 5.24.0 modeling_gemma3n.py).

AltUp's prediction is one product of each token's streams with its n × n coefficients
(torch.matmul, counted by FlopCounterMode as Gemma3nTextAltUp.predict's is); its correction
scales the innovation by broadcast (not counted there either). The magnitude matching of the
model's projections into and out of the copies is element-wise and left out: it changes no
count.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from calc.spec import ModelSpec
from calc.verify.parts import linear, make_norm, tag


class AltUp(nn.Module):
    """One layer's AltUp: the router over the active stream (after its norm), the prediction
    and correction coefficients, and the scale on the corrected active stream."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        assert spec.altup is not None
        tag(self, "altup/layers")
        n, d = spec.altup.streams, spec.d_model
        self.n = n
        self.router = linear(d, n, False, "altup/layers")
        self.prediction = linear(n, n * n, False, "altup/layers")
        self.correction = linear(n, n, False, "altup/layers")
        self.scale = nn.Parameter(torch.zeros(d))
        self.norm = make_norm(spec.norm, d, "altup/norms")

    def forward(self, streams: Tensor, output: Tensor | None = None) -> Tensor:
        """predict(streams), or correct(streams, output) given the layer's output: called
        through forward so that FlopCounterMode credits their products to this module."""
        return self.predict(streams) if output is None else self.correct(streams, output)

    def _modalities(self, x: Tensor) -> Tensor:
        return torch.tanh(self.router(self.norm(x)))

    def predict(self, streams: Tensor) -> Tensor:
        """Each stream predicted as its own value plus a mix of all n [B, T, n, d]."""
        coefs = self.prediction(self._modalities(streams[..., 0, :]))
        coefs = coefs.unflatten(-1, (self.n, self.n))  # [B, T, n, n]
        return streams + torch.matmul(streams.transpose(-1, -2), coefs).transpose(-1, -2)

    def correct(self, predictions: Tensor, output: Tensor) -> Tensor:
        """The predictions moved by the layer's innovation, each stream by its coefficient."""
        coefs = self.correction(self._modalities(output)) + 1.0  # [B, T, n]
        innovation = output - predictions[..., 0, :]
        return predictions + coefs.unsqueeze(-1) * innovation.unsqueeze(-2)


class Laurel(nn.Module):
    """x + N(W_right W_left x) on the mixer's normed input (Gemma3nTextLaurelBlock)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        assert spec.laurel is not None
        tag(self, "laurel/layers")
        d, r = spec.d_model, spec.laurel.rank
        self.left = linear(d, r, False, "laurel/layers")
        self.right = linear(r, d, False, "laurel/layers")
        self.norm = make_norm(spec.norm, d, "laurel/norms")

    def forward(self, x: Tensor) -> Tensor:
        return x + self.norm(self.right(self.left(x)))


def laurel_sum(residual: Tensor, laurel: Tensor) -> Tensor:
    """The mixer's residual output and LAuReL's, summed and scaled (Gemma3nTextDecoderLayer)."""
    return (residual + laurel) / math.sqrt(2)


class AltUpProjections(nn.Module):
    """The model's n − 1 projections d → d into the copies (from the embedding) and n − 1 out
    of them (before the final norm), the streams then averaged (Gemma3nTextModel)."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        assert spec.altup is not None
        tag(self, "altup/projections")
        d, n = spec.d_model, spec.altup.streams
        self.into = nn.ModuleList(linear(d, d, False, "altup/projections")
                                  for _ in range(n - 1))
        self.out = nn.ModuleList(linear(d, d, False, "altup/projections")
                                 for _ in range(n - 1))

    def expand(self, x: Tensor) -> Tensor:
        """[B, T, d] → [B, T, n, d]: the embedding and its n − 1 projections."""
        return torch.stack([x, *(project(x) for project in self.into)], dim=-2)

    def collapse(self, streams: Tensor) -> Tensor:
        """[B, T, n, d] → [B, T, d]: the first stream and the others projected, averaged."""
        outs = [streams[..., 0, :],
                *(project(streams[..., i + 1, :]) for i, project in enumerate(self.out))]
        return torch.stack(outs, dim=-2).mean(-2)
