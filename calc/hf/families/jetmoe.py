"""JetMoE: jetmoe, a mixture of attention heads and of MLP experts."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import experts, llama_like, need
from calc.spec import ModelSpec

# The names of JetMoE's release (its own configuration_jetmoe.py, which the jetmoe/jetmoe-8b
# config.json uses) and the fields transformers' JetMoeConfig reads in their place; it ignores
# the old names, so where both are given they must agree.
_OLD_NAMES = {"ffn_hidden_size": "intermediate_size",
              "moe_num_experts": "num_local_experts", "moe_top_k": "num_experts_per_tok"}


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_jetmoe.py: a mixture of attention heads (JetMoeMoA: num_local_experts experts,
    # each a W_Q of num_key_value_heads heads of kv_channels and a W_O; a router Linear without
    # bias; one bias of hidden_size on the merged output) beside one kv_proj d → 2·h_kv·d_h;
    # num_experts_per_tok experts per token, so num_attention_heads = h_kv × top-k
    # (JetMoeConfig.__post_init__). Every FFN is the MoE (JetMoeMoE): GLU experts of
    # intermediate_size, a router without bias, one bias on the merged output. RMSNorms, RoPE.
    for old, new in _OLD_NAMES.items():
        if old in c.values and c.values[old] != c[new]:
            c.fail(f"{old}={c.values[old]!r}: transformers' JetMoeConfig reads {new} "
                   f"({c[new]!r}) instead")
    for old in ("glu", "bias"):  # the release's switches; transformers builds both always
        if c.values.get(old, True) is not True:
            c.fail(f"{old}={c.values[old]!r}: transformers' JetMoe builds GLU experts and the "
                   f"output biases whatever this says")
    kv, n_experts = c.size("num_key_value_heads"), c.size("num_local_experts")
    chosen = top_k(c, "num_experts_per_tok", n_experts, "num_local_experts")
    stated = c.values.get("num_attention_heads")
    if stated is not None and stated != kv * chosen:
        c.fail(f"num_attention_heads={stated!r}: JetMoeConfig sets it to num_key_value_heads × "
               f"num_experts_per_tok = {kv * chosen}")
    return decoder(c, {"n_heads": kv * chosen, "n_kv_heads": kv,
                       "head_dim": c.size("kv_channels"), "experts": n_experts},
                   act_key="activation_function", attention={"out_bias": True},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": chosen, "output_bias": True})


def _write(spec: ModelSpec) -> dict[str, Any]:
    moe, att = experts(spec, "jetmoe"), spec.attention
    need(att.experts == moe.n_experts, f"attention.experts={att.experts} ≠ moe.n_experts="
                                       f"{moe.n_experts} (jetmoe's num_local_experts is both)")
    need(att.n_heads == spec.n_kv_heads * moe.top_k,
         f"attention.n_heads={att.n_heads} ≠ n_kv_heads × moe.top_k (jetmoe routes a token to "
         f"num_experts_per_tok attention and MLP experts alike)")
    config = {**llama_like(spec, "jetmoe"), "kv_channels": spec.head_dim_qk,
              "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
              "intermediate_size": moe.d_expert}
    config["activation_function"] = config.pop("hidden_act")
    del config["head_dim"], config["num_attention_heads"]  # kv_channels; h_kv × top-k
    return config


JETMOE = ModelType(
    "jetmoe", _read, write=_write, traits=Traits(moe=True),
    aliases={"head_dim": "kv_channels"},
    defaults={
        "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 12,
        "num_key_value_heads": 16, "kv_channels": 128, "intermediate_size": 5632,
        "max_position_embeddings": 4096, "activation_function": "silu",
        "num_local_experts": 8, "num_experts_per_tok": 2, "tie_word_embeddings": True,
    })
