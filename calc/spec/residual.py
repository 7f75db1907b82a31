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
from calc.spec.layers import AttentionKind


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


class BlockResidualSpec(Frozen):
    """Attention residuals over blocks of layers (Inkling 2; transformers 5.24.0
    modeling_inkling2.py Inkling2BlockAttentionResidual, Inkling2*DecoderLayer,
    Inkling2TextModel). Every `layers`-th layer (index 0, n, 2n, …) opens a block: the input it
    received is stored as a source and its attention output starts the residual afresh. Each
    sublayer's input, and the final norm's, is a softmax mix over the stored sources and the
    running residual: a learned query of width d scores each source, RMS-normed without
    weights, by q·s/√d, and the mix is the probabilities times the normed sources. Layer 0's
    attention reads the embedding unmixed.

    Parameters: d per learned query: one for each attention input but layer 0's, three on the
    layers of `split_kinds` (their queries, keys and values each read their own mix, each
    through its own input norm: two norms of d more), one for each FFN input and one for the
    final norm's. FLOPs: per token and query over S sources, 2·d·S for the scores and 2·d·S
    for the mix (the layer i's attention input sees ⌈i/n⌉ + 1 sources, its FFN input
    ⌊i/n⌋ + 2, the final one ⌈L/n⌉ + 1); the norms and the softmax 0."""

    layers: int = Field(ge=1, le=1024, description="layers per block (Inkling 2's "
                                                   "n_layers_per_attn_res_block)")
    split_kinds: tuple[AttentionKind, ...] = Field(
        (), max_length=4,
        description="the attention kinds whose queries, keys and values read a mix each, "
                    "through a norm each (Inkling 2's full layers: attention_input with 3 "
                    "queries, q/k/v_input_layernorm)")

    def sources(self, n_layers: int, kinds: tuple[str, ...]) -> list[tuple[int, int]]:
        """(queries, sources) of every mix in order: each layer's attention input (none on
        layer 0) and FFN input, then the final norm's."""
        n, mixes = self.layers, []
        for i, kind in enumerate(kinds):
            if i:
                mixes.append((3 if kind in self.split_kinds else 1, -(-i // n) + 1))
            mixes.append((1, i // n + 2))
        mixes.append((1, -(-n_layers // n) + 1))
        return mixes
