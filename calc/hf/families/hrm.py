"""HRM-Text (Sapient): hrm_text, a hierarchical reasoning model whose two stacks of layers run
several times per token (calc.spec.loop)."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, divides
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import llama_like, need
from calc.spec import ModelSpec


def _per_stack(c: HFConfig) -> int:
    # configuration_hrm_text.py __post_init__: a config without num_layers_per_stack gives the
    # per-stack count as num_hidden_layers (which it then rewrites to the cache slots, n·H·(L+1));
    # a saved config carries both, num_layers_per_stack the real one
    key = "num_layers_per_stack" if c.given("num_layers_per_stack") else "num_hidden_layers"
    return c.size(key)


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_hrm_text.py (transformers 5.24.0): L_module and H_module, each a HrmTextStack of
    # num_layers_per_stack Llama layers and a final_norm; NanoChat's RMSNorm without a weight
    # everywhere. HrmTextAttention: MHA (k_proj, v_proj h·head_dim), gate_proj d → h·head_dim,
    # a sigmoid gate per channel of the output; attention_bias on q, k, v, gate and o; a gated
    # MLP with mlp_bias. HrmTextModel.forward: H_cycles times, the L stack L_cycles times then
    # the H stack once, each fed the sum of the two streams (elementwise); the low stream
    # starts from z_L_init, a d-wide frozen parameter; no final norm of the model's (the H
    # stack's ends it); the embedding scaled by embedding_scale (elementwise).
    divides(c)
    n, high, low = _per_stack(c), c.size("H_cycles"), c.size("L_cycles")
    bias = c.flag("attention_bias")
    spec = decoder(c, {"n_heads": c.size("num_attention_heads"), "head_dim": c.size("head_dim")},
                   ffn_bias=c.flag("mlp_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias, "output_gate": True,
                              "output_gate_own": True},
                   norm={"kind": "rmsnorm", "placement": "pre", "weights": False})
    spec["n_layers"] = 2 * n
    spec["loop"] = {"runs": [[0, n - 1, low], [n, 2 * n - 1, 1]] * high, "init_state": True}
    return spec


def _cycles(spec: ModelSpec) -> tuple[int, int, int]:
    """(layers per stack, H_cycles, L_cycles) of HRM-Text's schedule, or Unexpressible."""
    loop = spec.loop
    need(loop is not None and loop.init_state and loop.cache == "pass", "no loop with "
         "init_state caching each pass (HRM-Text's two stacks run in cycles from z_L_init)")
    assert loop is not None
    n = spec.n_layers // 2
    runs = loop.runs
    low = runs[0][2]
    need(spec.n_layers % 2 == 0 and len(runs) % 2 == 0
         and runs == ((0, n - 1, low), (n, 2 * n - 1, 1)) * (len(runs) // 2),
         f"loop.runs={[list(r) for r in runs]} (HRM-Text runs [[0, n-1, L_cycles], "
         f"[n, 2n-1, 1]] H_cycles times)")
    return n, len(runs) // 2, low


def _write(spec: ModelSpec) -> dict[str, Any]:
    att = spec.attention
    n, high, low = _cycles(spec)
    need(att.output_gate_own, "no attention.output_gate_own (HRM-Text's gate_proj d → "
         "h·head_dim beside q_proj)")
    need(not spec.norm.weights, "norm.weights=True (HRM-Text's RMSNorms have no weight)")
    need(spec.n_kv_heads == att.n_heads, f"attention.n_kv_heads={spec.n_kv_heads} "
         f"(HRM-Text's attention is MHA)")
    need(att.qkv_bias == att.out_bias, f"attention.out_bias={att.out_bias} with "
         f"attention.qkv_bias={att.qkv_bias} (HRM-Text has one attention_bias)")
    config = {**llama_like(spec, "hrm_text"), "num_hidden_layers": n, "H_cycles": high,
              "L_cycles": low, "attention_bias": att.qkv_bias, "mlp_bias": spec.ffn.bias}
    del config["num_key_value_heads"]  # not a field of HrmTextConfig
    return config


HRM_TEXT = ModelType(
    "hrm_text", _read, write=_write, traits=Traits(),
    defaults={
        "vocab_size": 151808, "hidden_size": 1536, "intermediate_size": 4096,
        "num_hidden_layers": 16, "num_attention_heads": 12, "hidden_act": "silu",
        "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "attention_bias": False, "mlp_bias": False, "head_dim": 128, "H_cycles": 2,
        "L_cycles": 3, "num_layers_per_stack": None,
    })
