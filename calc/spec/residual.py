"""Learned residual scales: a vector of d per sublayer that scales the residual stream before the
sublayer's output joins it, elementwise.

Doge (transformers 5.24.0 modeling_doge.py DogeDecoderLayer: input_residual and
post_attention_residual, hidden = scale ⊙ residual + branch) has the scale alone; ZAYA
(modeling_zaya.py ZayaResidualScaling: (residual + residual_bias) ⊙ residual_scale +
(branch + hidden_states_bias) ⊙ hidden_states_scale) adds a bias on the residual and a scale and
bias on the branch. Per sublayer (the mixer's, and the FFN's where the layer has one): d, + d
with residual_bias, + 2d with branch. The products are elementwise: 0 FLOPs.
"""

from __future__ import annotations

from pydantic import Field

from calc.spec.base import Frozen


class ResidualScalesSpec(Frozen):
    """A learned scale of d on the residual stream at each sublayer, and optionally a bias on
    it and a scale and bias on the sublayer's output."""

    residual_bias: bool = Field(
        False, description="a learned bias of d added to the residual stream before its scale "
                           "(ZAYA's residual_bias)")
    branch: bool = Field(
        False, description="a learned scale and bias of d each on the sublayer's output "
                           "before the sum (ZAYA's hidden_states_scale and hidden_states_bias)")

    @property
    def per_sublayer(self) -> int:
        """Vectors of width d per sublayer: the scale, the residual bias, the branch's scale
        and bias."""
        return 1 + int(self.residual_bias) + 2 * int(self.branch)
