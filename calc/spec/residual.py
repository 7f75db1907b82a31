"""Learned residual scales: each sublayer's residual add weighted by learned vectors.

A pre-norm layer adds each sublayer's output x to the residual r as r + x. Some models learn a
vector of width d that scales the residual there: Doge's `input_residual * residual + x`
(modeling_doge.py DogeDecoderLayer: input_residual, post_attention_residual); ZAYA1 learns a
scale and a bias on both terms, (r + b_r)·s_r + (x + b_x)·s_x (transformers 5.24.0
modeling_zaya.py ZayaResidualScaling: residual_scale, residual_bias, hidden_states_scale,
hidden_states_bias, one module after the attention and one after the MoE of every layer), and a
scale and bias on the token embedding before the first layer (ZayaModel:
input_hidden_states_scale, input_hidden_states_bias).

Parameters: d (the residual's scale) + d with residual_bias + 2d with branch per sublayer (the
mixer's, and the FFN's where the layer has one), and 2d once with embedding. FLOPs: 0, as calc
counts every element-wise product and sum (norms, biases, gates; calc.formulas.flops).
"""

from __future__ import annotations

from pydantic import Field

from calc.spec.base import Frozen


class ResidualScalesSpec(Frozen):
    """A learned scale of width d on the residual at each sublayer's add, and the optional
    biases and branch scale around it."""

    residual_bias: bool = Field(
        False, description="a learned bias of width d added to the residual before its scale "
                           "(ZAYA1's residual_bias)")
    branch: bool = Field(
        False, description="a learned bias and scale of width d on the sublayer's output "
                           "before the add, (x + b_x)·s_x (ZAYA1's hidden_states_bias and "
                           "hidden_states_scale)")
    embedding: bool = Field(
        False, description="a learned bias and scale of width d on the token embedding before "
                           "the first layer, (e + b)·s (ZAYA1's input_hidden_states_bias and "
                           "input_hidden_states_scale)")

    @property
    def per_sublayer(self) -> int:
        """Vectors of width d at one sublayer's add: the scale, its bias, the branch's two."""
        return 1 + int(self.residual_bias) + 2 * int(self.branch)
