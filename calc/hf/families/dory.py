"""Dory: dory, a looped normalised Transformer (nGPT) whose middle layers run several times per
token (calc.spec.loop) with nGPT's learned scale vectors (ModelSpec.ngpt)."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, layer_pattern
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import full_or_sliding, llama_like, need
from calc.spec import ModelSpec

_KINDS = {"full_attention": "global", "sliding_attention": "local"}


def _layout(c: HFConfig) -> tuple[list[str], int, int, int]:
    """(each layer's kind, input, recurrent and output layers), as DoryConfig.__post_init__
    reads them: a released config lists an attention and an mlp block per layer, which halves
    layer_types and the layer counts; without layer_types every fourth layer is full."""
    layers = c.size("num_hidden_layers")
    first, last = c.size("n_input_layers", minimum=0), c.size("n_output_layers", minimum=0)
    middle = c.size("n_recurrent_layers", minimum=0) if c.given("n_recurrent_layers") else None
    types = c["layer_types"]
    if types is not None and not isinstance(types, list):
        c.fail(f"layer_types must be a list, got {types!r}")
    if types is not None and "mlp" in types:
        types = types[::2]
        layers, first, last = layers // 2, first // 2, last // 2
        middle = middle // 2 if middle is not None else None
    if types is None:
        types = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
                 for i in range(layers)]
    if len(types) != layers or any(kind not in _KINDS for kind in types):
        c.fail(f"layer_types must list full_attention or sliding_attention for each of the "
               f"{layers} layers, got {c['layer_types']!r}")
    if middle is None:
        middle = layers - first - last
    if first + middle + last != layers or middle < 0:
        c.fail(f"n_input_layers + n_recurrent_layers + n_output_layers must equal "
               f"num_hidden_layers={layers} (DoryConfig.validate_architecture)")
    return [_KINDS[kind] for kind in types], first, middle, last


def _read(c: HFConfig) -> dict[str, Any]:
    # modular_dory.py (transformers 5.24.0): Gemma 2's sandwich layer with DoryL2Norm (no
    # weight) in all four places; AfmoeAttention's projections (attention_bias on q, k, v, o;
    # gate_proj d → h·head_dim without bias, a sigmoid gate per channel) with weightless L2
    # norms on each head's queries and keys and before o_proj (attn_sub_norm); a gated MLP
    # (mlp_bias) with a weightless norm before down_proj (ffn_sub_norm); nGPT's scale vectors
    # (ngpt); a weightless final norm; DoryModel.forward runs the input layers once, the
    # recurrent ones n_recurrent_loops times (each loop restarting from the input section's
    # output: elementwise), the output layers once, each pass's keys and values in a cache
    # slot of their own ('per_loop').
    if c.flag("attention_bias"):
        c.fail("attention_bias=true biases q, k, v and o but not Dory's gate_proj; calc's "
               "output gate carries the queries' bias")
    # recurrent_kv_cache_mode: 'per_loop' a cache slot per pass, 'last_loop' one per stored
    # layer, the last loop writing it (the earlier ones read it beside their own tokens)
    mode = c["recurrent_kv_cache_mode"]
    if mode not in ("per_loop", "last_loop"):
        c.fail(f"recurrent_kv_cache_mode={mode!r} must be 'per_loop' or 'last_loop'")
    kinds, first, middle, last = _layout(c)
    loops = c.size("n_recurrent_loops")
    spec = decoder(c, heads(c), ffn_bias=c.flag("mlp_bias"),
                   attention={"qk_norm": "head", "qk_norm_weights": False,
                              "output_gate": True, "output_gate_own": True,
                              **layer_pattern(c, kinds)},
                   norm={"kind": "rmsnorm", "placement": "sandwich", "weights": False,
                         "sub_norms": True},
                   ngpt=True)
    spec["n_layers"] = len(kinds)
    runs = [[start, start + size - 1, passes] for start, size, passes in (
        (0, first, 1), (first, middle, loops), (first + middle, last, 1)) if size]
    spec["loop"] = {"runs": runs, "cache": "pass" if mode == "per_loop" else "layer"}
    return spec


def _sections(spec: ModelSpec) -> tuple[int, int, int, int]:
    """(input, recurrent, output layers, loops) of Dory's schedule, or Unexpressible."""
    loop = spec.loop
    need(loop is not None and not loop.init_state, "no loop without init_state (Dory runs its "
         "recurrent layers n_recurrent_loops times)")
    assert loop is not None
    looped = [run for run in loop.runs if run[2] > 1]
    need(len(looped) <= 1 and all(run[2] == 1 or run is looped[0] for run in loop.runs),
         f"loop.runs={[list(r) for r in loop.runs]} (Dory loops one span of layers)")
    order = loop.order()
    if not looped:
        need(order == tuple(range(spec.n_layers)), f"loop.runs={[list(r) for r in loop.runs]}")
        return spec.n_layers, 0, 0, 1
    start, end, loops = looped[0]
    need(order == (*range(start), *[i for _ in range(loops) for i in range(start, end + 1)],
                   *range(end + 1, spec.n_layers)),
         f"loop.runs={[list(r) for r in loop.runs]} (Dory: input layers once, a recurrent "
         f"span n_recurrent_loops times, output layers once)")
    return start, end + 1 - start, spec.n_layers - end - 1, loops


def _write(spec: ModelSpec) -> dict[str, Any]:
    att, norm = spec.attention, spec.norm
    first, middle, last, loops = _sections(spec)
    need(spec.ngpt, "ngpt=False (Dory's nGPT scale vectors)")
    need(att.output_gate_own and not att.qkv_bias and not att.out_bias,
         "no attention.output_gate_own without biases (Dory's gate_proj beside q_proj)")
    need(att.qk_norm == "head" and not att.qk_norm_weights,
         f"attention.qk_norm={att.qk_norm!r} (Dory's weightless L2 norms per head)")
    need(norm.placement == "sandwich" and not norm.weights and norm.sub_norms and norm.final
         and not norm.embedding,
         "norm (Dory: weightless sandwich norms, sub-norms and a final norm)")
    return {**llama_like(spec, "dory"), **full_or_sliding(spec, "dory"),
            "attention_bias": False, "mlp_bias": spec.ffn.bias, "n_input_layers": first,
            "n_recurrent_layers": middle, "n_output_layers": last, "n_recurrent_loops": loops,
            "recurrent_kv_cache_mode": "per_loop" if spec.loop.cache == "pass" else "last_loop"}


DORY = ModelType(
    "dory", _read, write=_write, traits=Traits(),
    defaults={
        "vocab_size": 131072, "hidden_size": 2560, "intermediate_size": 7168,
        "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_act": "silu", "max_position_embeddings": 8192,
        "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
        "sliding_window": 1024, "layer_types": None, "n_input_layers": 8,
        "n_recurrent_layers": None, "n_output_layers": 8, "n_recurrent_loops": 2,
        "recurrent_kv_cache_mode": "per_loop",
    })
