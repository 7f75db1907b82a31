"""attention.kind_shapes: the attention layers of one kind with head shapes of their own
(Laguna's sliding layers with more query heads, Gemma 4's wider full layers, Inkling's sliding
heads), through the spec's rules, the memory and time models and the KV cache."""

from __future__ import annotations

import re

import pytest

import calc
from calc import _compiled
from calc.errors import CalcError
from calc.evaluate import count_flops, count_params, memory_values
from calc.spec import TrainingMemory

BASE = {"name": "shaped", "vocab_size": 97, "d_model": 64, "n_layers": 4, "context_length": 64,
        "attention": {"n_heads": 4, "n_kv_heads": 2, "head_dim": 16, "sliding_window": 8,
                      "layer_pattern": ["global", "local"], "qk_norm": "head",
                      "output_gate": True, "output_gate_per": "head"},
        "ffn": {"activation": "swiglu", "d_ff": 96}, "position": {"kind": "rope"}}


def _spec(shape: dict | None = None, kind: str = "local", **attention) -> calc.ModelSpec:
    att = {**BASE["attention"], **attention}
    if shape is not None:
        att["kind_shapes"] = {kind: shape}
    return calc.ModelSpec.model_validate({**BASE, "attention": att})


@pytest.mark.parametrize(("shape", "attention", "message"), [
    ({"n_heads": 6, "n_kv_heads": 4}, {}, "attention.kind_shapes.local: 4 key/value heads must "
                                          "divide its 6 query heads"),
    ({"n_heads": 3}, {}, "2 key/value heads must divide its 3 query heads (give n_kv_heads)"),
    ({"n_heads": 8}, {"layer_pattern": ["global"]}, "attention.kind_shapes.local: no attention "
                                                    "layer is local"),
])
def test_a_shape_the_layers_cannot_have_is_one_line(shape, attention, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _spec(shape, **attention)


def test_one_kind_and_no_mtp_block():
    with pytest.raises(ValueError, match="at most 1 item"):
        calc.ModelSpec.model_validate({**BASE, "attention": {
            **BASE["attention"], "kind_shapes": {"local": {"n_heads": 8},
                                                 "global": {"n_heads": 2}}}})
    with pytest.raises(ValueError, match="mtp_modules: a multi-token-prediction block's"):
        calc.ModelSpec.model_validate({**BASE, "mtp_modules": 1, "attention": {
            **BASE["attention"], "kind_shapes": {"local": {"n_heads": 8}}}})


def test_a_kind_left_as_the_model_counts_as_no_kind_shapes():
    """Fields left out keep the model's: the override with the model's own shape counts the
    same as none, to the parameter and the FLOP."""
    plain, same = _spec(), _spec({"n_heads": 4})
    assert count_params(same) == count_params(plain)
    assert count_flops(same, 64).components == count_flops(plain, 64).components


def _activations(spec: calc.ModelSpec, **options) -> float:
    opts = TrainingMemory(seq_len=32, micro_batch=2, **options)
    opts = opts.model_copy(update={"recipe": opts.recipe_name})
    values = memory_values(spec, opts, 80)
    return _compiled.memory_activations(values)["layers"]


@pytest.mark.parametrize("options", [{}, {"tp": 2}, {"tp": 4, "sequence_parallel": True},
                                     {"flash_attention": False, "recompute": "none"},
                                     {"framework": "hf", "flash_attention": False}])
def test_activations_are_each_layers_own(options):
    """Training activations don't depend on the window, so two layers (global, local) of
    4 and 8 query heads keep what half of a model of 4 heads on every layer and half of one of
    8 keep: each layer's attention stores its own heads' tensors (h'_t K/V heads per rank)."""
    shaped = _spec({"n_heads": 8, "n_kv_heads": 4, "head_dim": 8})
    fours = _spec()
    eights = _spec(n_heads=8, n_kv_heads=4, head_dim=8)
    assert 2 * _activations(shaped, **options) == pytest.approx(
        _activations(fours, **options) + _activations(eights, **options), rel=1e-12)


def test_the_kv_cache_holds_each_kinds_heads():
    """infer: the local layers cache 4 heads of 8 for at most w = 8 tokens, the global layers
    2 heads of 16 for all of them: per token at context 64, q_kv = 2 bytes."""
    spec = _spec({"n_heads": 8, "n_kv_heads": 4, "head_dim": 8})
    block = calc.infer(spec, gpu="h100", context=64, batch=1).inference
    per_layer_global, per_layer_local = 2 * 16 * 2 * 2, 4 * 8 * 2 * 2
    assert block.kv_cache_bytes_per_token == 2 * per_layer_global + 2 * per_layer_local
    assert block.kv_cache_bytes == 2 * per_layer_global * 64 + 2 * per_layer_local * 8
    # on 4 GPUs the global layers' 2 KV heads are replicated twice, the local layers' 4 split
    four = calc.infer(spec, gpu="h100", gpus=4, context=64, batch=1)
    assert four.inference.kv_cache_bytes == 2 * (2 * per_layer_global * 64) \
        + 2 * per_layer_local * 8
    assert ("4 GPUs for 2 KV heads replicate each head 2 times (vLLM's QKVParallelLinear); "
            "the local layers' 4 KV heads split 4 ways") in " ".join(four.conventions)


def test_step_time_splits_the_attention_products_by_kind():
    """The step's operators: W_Q, W_K/W_V, W_O and the gate of each kind's widths over its
    layers, their FLOPs calc's exact count; the kind's key/value heads split its K/V product;
    its share of QKᵀ and A·V at its own head width."""
    from calc.timing.operators import model_terms

    spec = _spec({"n_heads": 8})
    terms = model_terms(spec, 64)
    q = [op for op in terms.matmuls if op.name == "attention/q"]
    assert [(op.n, op.layers) for op in q] == [(4 * 16, 2), (8 * 16, 2)]
    assert sum(op.flops for op in q) == count_flops(spec, 64).components["attention/q"]
    assert [op.flops for op in q] == [2 * 64 * 64 * 2, 2 * 64 * 128 * 2]

    wider = _spec({"n_heads": 8, "n_kv_heads": 4, "head_dim": 8})
    terms = model_terms(wider, 64)
    kv = [(op.n, op.layers, op.kv_heads) for op in terms.matmuls if op.name == "attention/kv"]
    assert kv == [(2 * 32, 2, 0), (4 * 16, 2, 4)]
    assert (terms.kind_layers, terms.kind_kv_heads, terms.kind_d_qk) == (2, 4, 8)
    # the local layers' scores: 8 heads × (8 + 8) per pair, doubled pairs over a window of 8
    pairs = sum(min(i, 8) for i in range(1, 65))
    assert terms.kind_attention_causal == 2 * 2 * 8 * 16 * pairs / 64


def test_serving_caches_each_kinds_keys_and_values():
    """A serving replica's cache of one sequence is infer's (calc.formulas.inference, each
    kind's own K/V heads and width over its cached tokens), at every context."""
    from calc.serving.layouts import Replica
    from calc.serving.memory import replica_memory
    from calc.timing.operators import model_terms

    spec = _spec({"n_heads": 8, "n_kv_heads": 4, "head_dim": 4})  # K, V 16 wide, not 32
    memory = replica_memory(spec, model_terms(spec, 64), Replica(), "bf16", "bf16", 80)
    for context in (1, 8, 9, 64):
        block = calc.infer(spec, gpu="h100", context=context, batch=1).inference
        assert memory.kv_bytes(context) == pytest.approx(block.kv_cache_bytes, rel=1e-12)


def test_tensor_parallelism_divides_every_kinds_heads():
    """tp = 4 divides the global layers' 4 heads but not the local layers' 6; tp = 2 their
    heads, but neither it nor the local layers' 3 key/value groups divides the other
    (Megatron-LM's rule)."""
    spec = _spec({"n_heads": 6})
    with pytest.raises(CalcError, match="tp=4 does not divide the 6 attention heads"):
        calc.step(spec, gpu="h100", gpus=4, tp=4, seq_len=64, global_batch=1)
    assert calc.step(spec, gpu="h100", gpus=2, tp=2, seq_len=64, global_batch=1)
    odd = _spec({"n_heads": 6, "n_kv_heads": 3})
    with pytest.raises(CalcError, match="tp=2 and the 3 KV groups of shaped: neither divides"):
        calc.step(odd, gpu="h100", gpus=2, tp=2, seq_len=64, global_batch=1)


def test_a_sweep_over_depth_counts_each_kinds_layers_at_every_depth():
    """calc.sweep's rows against the exact count of the spec at that depth (the pattern
    global, local re-applied: 1, 2 or 3 local layers), and a head axis the kind's own shapes
    would not follow refused in one line."""
    spec = _spec({"n_heads": 8})
    swept = calc.sweep(spec, n_layers=[3, 4, 6], seq_len=[32])
    for i, depth in enumerate((3, 4, 6)):
        row, exact = swept.row(i), spec.updated(n_layers=depth)
        assert row["params_total"] == count_params(exact).total
        assert row["flops_forward"] == count_flops(exact, 32).forward
    with pytest.raises(CalcError, match=re.escape("sweep n_heads: shaped gives its local "
                                                  "layers head shapes of their own")):
        calc.sweep(spec, n_heads=[2, 4])


def test_the_estimate_says_which_layers_have_which_heads():
    """W_Q's layers differ by kind: no one per-layer count; W_K's do not (4 query heads of 16 on
    the global layers, 8 on the local ones, 2 key/value heads on both)."""
    report = calc.estimate(_spec({"n_heads": 8}))
    assert "attention/q" not in report.params.per_layer
    assert report.params.per_layer["attention/kv"] == 64 * 2 * 2 * 16
    assert ("Attention by kind: the 2 local layers have 8 query heads and 2 key/value heads of "
            "width 16, the other attention layers 4 query heads and 2 key/value heads of width "
            "16") in " ".join(report.notes)


@pytest.mark.parametrize("targets", ["q,k,v,o,g", "k", "v,up,down"])
@pytest.mark.parametrize("values", [None, 8])
def test_adapters_on_the_reference_model_have_each_layers_widths(targets, values):
    """LoRA on calc's torch model of a spec whose local layers have heads, key/value heads and
    a head width of their own: numel and FlopCounterMode's step against calc's counts."""
    pytest.importorskip("torch")
    from calc.evaluate import count_adapters, finetune_train_flops
    from calc.spec.finetune import FineTune
    from calc.verify.finetune import count_finetune

    spec = _spec({"n_heads": 8, "n_kv_heads": 4, "head_dim": 4}, v_head_dim=values)
    ft = FineTune(method="lora", rank=4, targets=targets)
    torch_count, ours = count_finetune(spec, ft, 16), count_adapters(spec, ft)
    forward = count_flops(spec, 16, "full").forward
    adapters, train = finetune_train_flops(spec, 16, "full", ft, ours.targets)
    assert (torch_count.trainable, torch_count.frozen) == (ours.trainable, ours.frozen)
    assert torch_count.forward == 16 * (forward + adapters)
    assert torch_count.backward == 16 * (train - forward - adapters)


def test_compare_shows_the_kinds_own_heads(cli, tmp_path):
    path = tmp_path / "shaped.json"
    path.write_text(_spec({"n_heads": 8}).model_dump_json())
    result = cli("compare", str(path), "gpt2")
    assert result.code == 0, result.err
    assert "heads of one kind's own" in result.out and "local: 8, 2 KV, width 16" in result.out


# ---- values of their own width, sinks on one kind (MiMo-V2-Flash) ------------------------------
MIMO = {"n_kv_heads": 4, "sinks": True}  # the local layers: twice the KV heads, and sinks


def test_values_narrower_than_the_keys_count_in_w_v_w_o_and_a_v():
    """attention.v_head_dim (d_v 8 under d_qk 16): W_V d × h_kv·d_v, W_O h·d_v × d, A·V 2·d_v
    per head per key; a kind that keeps the model's value width, its own KV heads."""
    spec = _spec(MIMO, v_head_dim=8)
    params = count_params(spec).components
    assert params["attention/kv"] == 2 * 64 * 2 * (16 + 8) + 2 * 64 * 4 * (16 + 8)
    assert params["attention/o"] == 4 * 4 * 8 * 64
    assert params["attention/sinks"] == 2 * 4  # the 2 local layers' 4 heads only
    assert spec.heads_of("local") == (4, 4, 16, 8) and spec.sinks_of("local")
    assert not spec.sinks_of("global")
    # full attention at T = 8 (the window): QKᵀ 2·T²·h·d_qk, A·V 2·T²·h·d_v on every layer
    scores = count_flops(spec, 8, "full").components["attention/scores"] * 8
    assert scores == 4 * 2 * 8 * 8 * 4 * (16 + 8)


def test_a_kind_with_its_own_value_width():
    """KindShape.v_head_dim; left out, a kind with its own head width has values as wide
    unless the model gives attention.v_head_dim."""
    assert _spec({"head_dim": 8}).heads_of("local")[2:] == (8, 8)
    assert _spec({"head_dim": 8}, v_head_dim=4).heads_of("local")[2:] == (8, 4)
    assert _spec({"v_head_dim": 2}, v_head_dim=4).heads_of("local")[2:] == (16, 2)
    with pytest.raises(ValueError, match=r"attention\.v_head_dim has no meaning with "
                                         r"attention\.mla"):
        calc.ModelSpec.model_validate({**BASE, "attention": {
            "n_heads": 4, "v_head_dim": 8, "mla": {"kv_lora_rank": 8, "qk_nope_head_dim": 8,
                                                   "qk_rope_head_dim": 4, "v_head_dim": 8}}})


@pytest.mark.parametrize(("shape", "attention"), [
    (MIMO, {"v_head_dim": 8}), ({"sinks": False}, {"sinks": True}),
    ({"head_dim": 8, "v_head_dim": 12, "sinks": True}, {"v_head_dim": 4})])
def test_the_reference_model_counts_each_kinds_values_and_sinks(shape, attention):
    """calc's torch model of the spec: parameters per component and FlopCounterMode's forward
    against calc's counts (calc.reports.verify)."""
    pytest.importorskip("torch")
    from calc.reports.verify import verify

    assert verify(_spec(shape, **attention), 16).ok


def test_the_kv_cache_holds_each_kinds_value_width():
    """infer and serving: K at d_qk and V at d_v per cached token, each kind's KV heads (the
    local layers' 4 heads for at most w = 8 tokens, the global layers' 2 for all 64)."""
    from calc.serving.layouts import Replica
    from calc.serving.memory import replica_memory
    from calc.timing.operators import model_terms

    spec = _spec(MIMO, v_head_dim=8)
    block = calc.infer(spec, gpu="h100", context=64, batch=1).inference
    per_global, per_local = 2 * (16 + 8) * 2, 4 * (16 + 8) * 2  # bytes per token, 2-byte KV
    assert block.kv_cache_bytes == 2 * per_global * 64 + 2 * per_local * 8
    memory = replica_memory(spec, model_terms(spec, 64), Replica(), "bf16", "bf16", 80)
    for context in (1, 8, 9, 64):
        block = calc.infer(spec, gpu="h100", context=context, batch=1).inference
        assert memory.kv_bytes(context) == pytest.approx(block.kv_cache_bytes, rel=1e-12)


def test_step_time_prices_w_v_and_w_o_at_the_value_width():
    from calc.timing.operators import model_terms

    spec = _spec(MIMO, v_head_dim=8)
    terms = model_terms(spec, 64)
    kv = [(op.n, op.layers) for op in terms.matmuls if op.name == "attention/kv"]
    assert kv == [(2 * (16 + 8), 2), (4 * (16 + 8), 2)]
    o = [(op.k, op.layers) for op in terms.matmuls if op.name == "attention/o"]
    assert o == [(4 * 8, 2), (4 * 8, 2)]  # one operator per head shape
    assert (terms.d_v, terms.kind_d_v) == (8, 8)


def test_the_estimate_names_the_value_width_and_the_sinks():
    notes = " ".join(calc.estimate(_spec(MIMO, v_head_dim=8)).notes)
    assert ("the 2 local layers have 4 query heads and 4 key/value heads of width 16 (values 8 "
            "wide), with a sink logit per head, the other attention layers 4 query heads and 2 "
            "key/value heads of width 16 (values 8 wide)") in notes


@pytest.mark.parametrize("options", [{}, {"tp": 2}, {"framework": "hf", "flash_attention": False}])
def test_activations_keep_each_kinds_values_at_their_width(options):
    """Training activations of global/local layers with values 8 wide under keys of 16: half
    of a model of the global layers' shape on every layer, half of one of the local layers'."""
    shaped = _spec(MIMO, v_head_dim=8)
    globals_ = _spec(v_head_dim=8)
    locals_ = _spec(n_kv_heads=4, v_head_dim=8, sinks=True)
    assert 2 * _activations(shaped, **options) == pytest.approx(
        _activations(globals_, **options) + _activations(locals_, **options), rel=1e-12)
    assert _activations(shaped, **options) < _activations(_spec(MIMO), **options)
