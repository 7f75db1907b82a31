"""A speculative-decoding drafter's parts (Gemma 4's assistants): the projections that feed it
the target model's states and give its state back, and the LM head that scores only the tokens
of the centroids a token picks.

transformers 5.24.0, modeling_gemma4_assistant.py (Gemma4AssistantForCausalLM; the unified
assistant, modeling_gemma4_unified_assistant.py, is the same class over gemma4_unified_text):
the drafter's input is the target's [token embedding, last hidden state], 2·D wide (D the
target's hidden_size, backbone_hidden_size), projected to the drafter's width d by
pre_projection (no bias) before its layers; its final-norm output goes back to the target's
width through post_projection d → D (no bias) beside the LM head. Its attention layers that
share keys read those of the target (shared_kv_states: the target's last layer of each type).
Gemma4AssistantMaskedEmbedder (use_ordered_embeddings) replaces the full LM head: centroids
d → C (no bias) score C clusters of V/C tokens each, the top k clusters' k·V/C rows of the LM
head's weight are gathered and multiplied with the token's state, and the other tokens get the
lowest selected logit less one.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from calc.spec.base import MAX_VOCAB, MAX_WIDTH, Frozen


class DrafterSpec(Frozen):
    """A drafter fed the target model's states (Gemma4AssistantForCausalLM): pre_projection
    2·D → d before the layers, post_projection d → D after the final norm, no biases; its
    kv-shared attention layers (attention.kv_shared_layers, which may then be every layer)
    read the target's keys and values."""

    target_width: int = Field(ge=1, le=MAX_WIDTH,
                              description="the target model's hidden width D "
                                          "(backbone_hidden_size)")


class CentroidHeadSpec(Frozen):
    """An LM head that scores only the tokens of the top_k of n_centroids clusters
    (Gemma4AssistantMaskedEmbedder): centroids d → C without bias, then the k·V/C head rows of
    the chosen clusters times the token's state. The head's weight keeps all V rows."""

    n_centroids: int = Field(ge=1, le=MAX_VOCAB,
                             description="clusters C the vocabulary is split into, V/C tokens "
                                         "each (num_centroids)")
    top_k: int = Field(ge=1, le=MAX_VOCAB,
                       description="clusters k a token's head scores "
                                   "(centroid_intermediate_top_k)")

    @model_validator(mode="after")
    def _k_of_c(self) -> CentroidHeadSpec:
        if self.top_k > self.n_centroids:
            raise ValueError(f"centroid_head.top_k={self.top_k} must not exceed "
                             f"centroid_head.n_centroids={self.n_centroids}")
        return self
