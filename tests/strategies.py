"""Hypothesis strategies: random *valid* ModelSpecs that cover every option the spec allows."""

from __future__ import annotations

from hypothesis import strategies as st

import calc


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


@st.composite
def model_specs(draw, max_width: int = 64, max_layers: int = 4, max_vocab: int = 97):
    """Small specs (cheap to build on the CPU) with every architecture choice drawn."""
    n_heads = draw(st.integers(1, 8))
    mla = draw(st.booleans())
    explicit_head_dim = mla or draw(st.booleans())
    head_dim = draw(st.integers(1, 16)) if explicit_head_dim else None
    d_model = draw(st.integers(1, max_width // n_heads)) * n_heads if not explicit_head_dim \
        else draw(st.integers(2, max_width))
    attention: dict = {"n_heads": n_heads}
    if mla:
        attention["mla"] = {
            "q_lora_rank": draw(st.none() | st.integers(1, 16)),
            "kv_lora_rank": draw(st.integers(1, 16)),
            "qk_nope_head_dim": draw(st.integers(0, 8)),
            "qk_rope_head_dim": draw(st.sampled_from([0, 2, 4, 8])),
            "v_head_dim": draw(st.integers(1, 8)),
        }
        if attention["mla"]["qk_nope_head_dim"] + attention["mla"]["qk_rope_head_dim"] == 0:
            attention["mla"]["qk_nope_head_dim"] = 1
    else:
        attention["head_dim"] = head_dim
        attention["n_kv_heads"] = draw(st.sampled_from(_divisors(n_heads)))
        attention["qk_norm"] = draw(st.sampled_from(["none", "head", "projection"]))
    attention["qkv_bias"] = draw(st.booleans())
    attention["out_bias"] = draw(st.booleans())
    n_layers = draw(st.integers(1, max_layers))
    if draw(st.booleans()):
        attention["sliding_window"] = draw(st.integers(1, 12))
        attention["layer_pattern"] = draw(st.none() | st.lists(
            st.sampled_from(["global", "local"]), min_size=1, max_size=3).map(tuple))
    activation = draw(st.sampled_from(["relu", "gelu", "silu", "swiglu", "geglu", "reglu"]))
    ffn = {"activation": activation, "d_ff": draw(st.integers(1, 4 * max_width)),
           "bias": draw(st.booleans())}
    moe = None
    if draw(st.booleans()):
        n_experts = draw(st.integers(1, 6))
        first_dense = draw(st.integers(0, n_layers - 1))
        moe = {
            "n_experts": n_experts, "top_k": draw(st.integers(1, n_experts)),
            "d_expert": draw(st.integers(1, 2 * max_width)),
            "n_shared_experts": (shared := draw(st.integers(0, 2))),
            "d_shared": draw(st.none() | st.integers(1, 2 * max_width)),
            "shared_expert_gate": shared > 0 and draw(st.booleans()),
            "router_bias": draw(st.booleans()),
            "first_dense_layers": first_dense,
            "every": draw(st.integers(1, max(1, n_layers - first_dense))),
        }
        # every must leave at least one MoE layer: layer i is MoE iff i >= k and (i+1) % every == 0
        if not any(i >= first_dense and (i + 1) % moe["every"] == 0 for i in range(n_layers)):
            moe["every"] = 1
    kind = draw(st.sampled_from(["layernorm", "rmsnorm"]))
    parallel = draw(st.booleans())
    norm = {"kind": kind, "bias": draw(st.booleans()) if kind == "layernorm" else False,
            "placement": "pre" if parallel else draw(
                st.sampled_from(["pre", "post", "sandwich", "reordered"])),
            "final": draw(st.booleans()), "embedding": draw(st.booleans())}
    context = draw(st.integers(1, 24))
    kinds = ["learned", "sinusoidal", "rope", "alibi", "none"] + ([] if mla else ["relative"])
    position_kind = draw(st.sampled_from(kinds))
    position: dict = {"kind": position_kind}
    if position_kind == "learned":
        position["max_positions"] = draw(st.integers(context, context + 4))
    return calc.ModelSpec(
        name="random", vocab_size=draw(st.integers(1, max_vocab)), d_model=d_model,
        n_layers=n_layers, context_length=context, attention=attention, ffn=ffn, moe=moe,
        norm=norm, position=position, tie_embeddings=draw(st.booleans()),
        lm_head_bias=draw(st.booleans()), parallel_block=parallel,
        parallel_norms=draw(st.sampled_from([1, 2])) if parallel else 1,
        mtp_modules=draw(st.integers(0, 2)),
    )
