"""Hyper-connections (spec.hyper_connections): the counts by hand from transformers' modules,
the one-line refusals, training memory, the step's operators and LoRA's targets."""

from __future__ import annotations

import json

import pytest

import calc
from calc.errors import CalcError
from calc.evaluate import count_flops, count_params
from calc.spec import ModelSpec
from calc.spec.finetune import FineTune, resolve_targets

BASE = dict(name="hc", vocab_size=50, d_model=16, n_layers=3, context_length=16,
            attention={"n_heads": 2}, ffn={"d_ff": 24, "activation": "swiglu"},
            position={"kind": "rope"})


def spec(**changes) -> ModelSpec:
    return ModelSpec.model_validate({**BASE, **changes})


@pytest.mark.parametrize("streams, mix", [(1, False), (4, False), (3, True)])
def test_parameters_and_flops_by_hand(streams, mix):
    """A map (HYV4HyperConnection: fn 2n × n·d, base 2n, scale 2; DeepseekV4HyperConnection:
    fn (2 + n)·n × n·d, base (2 + n)·n, scale 3) before the attention and one before the
    MLP of each layer, and the head map (hc_fn n × n·d, hc_base n, hc_scale 1); FLOPs twice
    each product's weights per token, and 2·n²·d per map for mHC's mix of the streams."""
    n, d, layers = streams, 16, 3
    outputs = 2 * n + (n * n if mix else 0)
    per_map = outputs * n * d + outputs + 2 + int(mix)
    with_hc = spec(hyper_connections={"streams": n, "residual_mix": mix})
    counts, plain = count_params(with_hc), count_params(spec())
    assert counts.components["hyper_connections/layers"] == layers * 2 * per_map
    assert counts.components["hyper_connections/head"] == n * n * d + n + 1
    assert counts.total - plain.total == layers * 2 * per_map + n * n * d + n + 1
    assert counts.active - plain.active == counts.total - plain.total
    flops = count_flops(with_hc, 8, "full")
    mixing = 2 * n * n * d if mix else 0
    assert flops.components["hyper_connections/layers"] == layers * 2 * (
        2 * outputs * n * d + mixing)
    assert flops.components["hyper_connections/head"] == 2 * n * n * d
    assert flops.forward - count_flops(spec(), 8, "full").forward == (
        layers * 2 * (2 * outputs * n * d + mixing) + 2 * n * n * d)


@pytest.mark.parametrize("changes, named", [
    ({"parallel_block": True}, "parallel_block=True"),
    ({"norm": {"placement": "post"}}, "norm.placement='post'"),
    ({"mtp_modules": 1}, "mtp_modules=1"),
    ({"d_embedding": 8}, "d_embedding=8"),
    ({"ffn": None, "layers": {"mixer_pattern": ["mamba"], "ffn_pattern": ["none"]},
      "mamba": {"d_inner": 32, "d_state": 4, "d_conv": 4, "dt_rank": 2}},
     "a layer without an FFN"),
])
def test_bad_combinations_are_refused_in_one_line(cli, tmp_path, changes, named):
    data = {**BASE, **changes, "hyper_connections": {"streams": 2}}
    with pytest.raises(ValueError, match="hyper_connections is defined for pre-norm"):
        ModelSpec.model_validate(data)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    result = cli(str(path))
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1
    assert "hyper_connections" in result.err and named in result.err


def test_streams_are_at_least_one():
    with pytest.raises(ValueError, match="streams"):
        spec(hyper_connections={"streams": 0})


def test_memory_keeps_each_maps_streams():
    """Per layer, two maps each keep n·d streams, their normed copy n·d, their outputs and the
    sublayer's d-wide output, in the activations' bytes (2 in bf16); a checkpointed layer
    keeps its n·d input."""
    n, d, layers, t = 3, 16, 3, 16
    options = dict(gpu="h100", seq_len=t, micro_batch=1, framework="megatron",
                   flash_attention=True, dropout=False)
    plain = calc.memory(spec(), **options)
    with_hc = calc.memory(spec(hyper_connections={"streams": n}), **options)
    stored = layers * 2 * (2 * n * d + d + 2 * n) * 2 * t
    assert with_hc.memory.activations["layers"] - plain.memory.activations["layers"] == stored
    full = {**options, "recompute": "full"}
    checkpointed = calc.memory(spec(hyper_connections={"streams": n}), **full).memory
    assert checkpointed.activations["layers"] == n * calc.memory(
        spec(), **full).memory.activations["layers"]


def test_operators_add_up_to_the_forward_flops():
    """The step time schedules calc's exact count: the maps and the head map are priced."""
    from calc.timing.operators import model_terms

    model = calc.spec_from_hf_config({"model_type": "hy_v4"})
    terms = model_terms(model, 4096)
    total = sum(m.flops for m in terms.matmuls) + terms.attention_causal + terms.head.flops
    assert total == pytest.approx(count_flops(model, 4096).forward, rel=1e-12)
    names = {m.name for m in terms.matmuls}
    assert {"hyper_connections/layers", "hyper_connections/head"} <= names
    assert any(e.name == "hyper_connections" for e in terms.elementwise)


def test_lora_gate_is_refused_where_mla_has_its_own_gate_proj():
    model = calc.spec_from_hf_config({"model_type": "hy_v4"})
    with pytest.raises(CalcError, match=r"lora_targets=gate: .*gate_proj"):
        resolve_targets(model, FineTune(method="lora", targets=("gate", "up")))
    assert resolve_targets(model, FineTune(method="lora", targets=("o", "up", "down"))) == (
        "o", "up", "down")


def _saved_bytes_per_token(streams: int, d: int, dtype_name: str, tokens: int = 8) -> float:
    """What transformers' HYV4HyperConnection and its spread (HYV4DecoderLayer: post · the
    sublayer's output + the streams) keep for the backward per token, its own parameters
    apart: every saved tensor's storage once."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import HYV4Config
    from transformers.models.hy_v4.modeling_hy_v4 import HYV4HyperConnection

    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    module = HYV4HyperConnection(HYV4Config(hidden_size=d, hc_mult=streams))
    weights = {p.untyped_storage().data_ptr() for p in module.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        # a weight's transpose (the product's input gradient) is a model state, not kept here
        if storage.data_ptr() not in weights and tensor.dim() and tensor.shape[0] == 1:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    x = torch.randn(1, tokens, streams, d, dtype=dtype, requires_grad=True)
    output = torch.randn(1, tokens, d, dtype=dtype, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        post, _ = module(x)
        (post.float().unsqueeze(-1) * output.float().unsqueeze(-2) + x.float()).to(dtype)
    return sum(saved.values()) / tokens


@pytest.mark.parametrize("streams, d, dtype", [(1, 32, "bf16"), (4, 64, "bf16"),
                                                (3, 48, "fp32")])
def test_hf_memory_is_what_transformers_keeps(streams, d, dtype):
    """Under --framework hf each of a layer's two maps adds what HYV4HyperConnection keeps."""
    model = spec(d_model=d, attention={"n_heads": 2}, hyper_connections={"streams": streams})
    options = dict(gpu="h100", seq_len=8, micro_batch=1, framework="hf",
                   flash_attention=True, dropout=False, dtype=dtype)
    extra = (calc.memory(model, **options).memory.activations["layers"]
             - calc.memory(model.updated(hyper_connections=None),
                           **options).memory.activations["layers"])
    assert extra == 3 * 2 * 8 * _saved_bytes_per_token(streams, d, dtype)


@pytest.mark.parametrize("streams, layers, tokens", [(1, 1, 3), (3, 2, 5), (4, 2, 2)])
def test_deepseek_v4_maps_count_as_transformers(streams, layers, tokens):
    """mHC (residual_mix) as transformers 5.24.0 builds and runs it: DeepseekV4HyperConnection
    (attn_hc, ffn_hc) and DeepseekV4HyperHead (hc_head) hold calc's hyper_connections/layers
    and /head parameters, and their products plus each decoder layer's own stream mix
    (torch.matmul(comb.T, streams), outside the maps: what a layer counts beside its
    self_attn and mlp) are calc's FLOPs, on real CPU tensors."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import DeepseekV4Config, DeepseekV4ForCausalLM

    d = 16
    config = DeepseekV4Config(
        vocab_size=32, hidden_size=d, moe_intermediate_size=8, num_hidden_layers=layers,
        n_routed_experts=4, num_experts_per_tok=2, num_attention_heads=2, head_dim=8,
        q_lora_rank=8, o_groups=2, o_lora_rank=4, index_n_heads=2, index_head_dim=8,
        hc_mult=streams, layer_types=["sliding_attention"] * layers, attn_implementation="eager")
    config._experts_implementation = "batched_mm"  # counted bmm (calc.verify.hf_reference)
    model = DeepseekV4ForCausalLM(config).requires_grad_(False)
    with FlopCounterMode(display=False) as counter:
        model(input_ids=torch.randint(0, 32, (1, tokens)), use_cache=False)
    flops = {name: sum(ops.values()) for name, ops in counter.get_flop_counts().items()}
    owned = {name: sum(p.numel() for p in module.parameters())
             for name, module in model.named_modules()}
    prefix = "DeepseekV4ForCausalLM.model"
    in_layers = sum(flops[f"{prefix}.layers.{i}"] - flops[f"{prefix}.layers.{i}.self_attn"]
                    - flops[f"{prefix}.layers.{i}.mlp"] for i in range(layers))
    hc = spec(n_layers=layers, hyper_connections={"streams": streams, "residual_mix": True})
    counts, per_token = count_params(hc).components, count_flops(hc, tokens).components
    assert sum(owned[f"model.layers.{i}.{part}"] for i in range(layers)
               for part in ("attn_hc", "ffn_hc")) == counts["hyper_connections/layers"]
    assert owned["model.hc_head"] == counts["hyper_connections/head"]
    assert in_layers == tokens * per_token["hyper_connections/layers"]
    assert flops[f"{prefix}.hc_head"] == tokens * per_token["hyper_connections/head"]


GATED_NORM = {"kind": "rmsnorm", "final": False}


@pytest.mark.parametrize("streams, rank", [(2, 3), (4, 5)])
def test_gated_maps_count_by_hand_and_verify(streams, rank):
    """Qwen4-Exp's gated maps (Qwen4ExpTextGatedResidual): hc_norm γ n·d, down n·d → r, up
    r → n·d and block_inject_weight n·d → n, no bias; the head map (hyper_connection_mixer)
    without block_inject_weight; the layers' and the final norm gone. FLOPs twice each
    product's weights per token; the reference model agrees on the meta device."""
    from calc.reports.verify import verify

    n, d, layers, r = streams, 16, 3, rank
    gated = spec(norm=GATED_NORM, hyper_connections={"streams": n, "gate_rank": r})
    plain = spec(norm={"kind": "rmsnorm"})
    counts = count_params(gated)
    per_map = n * d + 2 * r * n * d + n * n * d
    assert counts.components["hyper_connections/layers"] == layers * 2 * per_map
    assert counts.components["hyper_connections/head"] == n * d + 2 * r * n * d
    # the layers' two norms and the final norm (d each) are gone
    assert counts.total - count_params(plain).total == (
        layers * 2 * per_map + n * d + 2 * r * n * d - (2 * layers + 1) * d)
    flops = count_flops(gated, 8, "full")
    assert flops.components["hyper_connections/layers"] == layers * 2 * 2 * (
        2 * r * n * d + n * n * d)
    assert flops.components["hyper_connections/head"] == 2 * 2 * r * n * d
    report = verify(gated, 8)
    assert report.ok, [c for c in [*report.params, *report.flops] if not c.match]


@pytest.mark.parametrize("changes, named", [
    ({"norm": {"kind": "rmsnorm"}}, "norm.final=True"),
    ({"norm": {"final": False}}, "norm.kind='layernorm'"),
    ({"norm": GATED_NORM, "hyper_connections": {"streams": 2, "gate_rank": 2,
                                                "residual_mix": True}}, "residual_mix"),
])
def test_gated_maps_refuse_other_norms_in_one_line(changes, named):
    data = {**BASE, "hyper_connections": {"streams": 2, "gate_rank": 2}, **changes}
    with pytest.raises(ValueError, match="gate_rank") as error:
        ModelSpec.model_validate(data)
    assert named in str(error.value)


def test_gated_maps_memory_and_operators():
    """The gated maps keep, by convention, the plain maps' tensors with n outputs and the
    gate's 2r and n·d (the layers' norms gone: their inputs are not kept); the step time
    prices the gate and inject as the count has them."""
    from calc.timing.operators import model_terms

    n, d, layers, t, r = 2, 16, 3, 16, 3
    options = dict(gpu="h100", seq_len=t, micro_batch=1, framework="megatron",
                   flash_attention=True, dropout=False)
    gated = spec(norm=GATED_NORM, hyper_connections={"streams": n, "gate_rank": r})
    ungated = spec(norm={"kind": "rmsnorm"}, hyper_connections={"streams": n})
    kept = calc.memory(gated, **options).memory.activations["layers"]
    plain = calc.memory(ungated, **options).memory.activations["layers"]
    norms = calc.memory(spec(norm={"kind": "rmsnorm"}), **options).memory.activations["layers"]
    bare = calc.memory(spec(norm={"kind": "rmsnorm"}).updated(**{"norm.final": False}),
                       **options).memory.activations["layers"]
    assert norms == bare  # the final norm is not a layer's
    per_map = (2 * n * d + d + n + 2 * r + n * d) * 2 * t
    assert kept - plain == layers * 2 * (per_map - (2 * n * d + d + 2 * n) * 2 * t) - (
        layers * 2 * 2 * d * t)  # the layers' two norms' d-wide inputs, bf16
    terms = model_terms(gated, 64)
    total = sum(m.flops for m in terms.matmuls) + terms.attention_causal + terms.head.flops
    assert total == pytest.approx(count_flops(gated, 64).forward, rel=1e-12)


@pytest.mark.parametrize("topk, size", [(1, 3), (2, 2), (3, 4), (2, 1)])
def test_qsa_counts_each_query_by_hand(topk, size):
    """Qwen4-Exp's QSA (attention.indexer.pooled), causal: query i (1-based) scores its
    ⌊i/B⌋ complete blocks (2·h_I·d_I each) and attends to the min(K, ⌊i/B⌋) best and its
    i − B·⌊i/B⌋ keys past them (QK and AV 2·h·(d_qk + d_v) a key), summed as transformers'
    loop over the queries runs it; the reference model agrees under the full convention."""
    from calc.reports.verify import verify

    h, d_h, h_i, d_i, t = 2, 8, 3, 4, 13
    qsa = spec(norm={"kind": "rmsnorm"}, attention={"n_heads": h, "indexer": {
        "n_heads": h_i, "head_dim": d_i, "topk": topk, "block_size": size, "pooled": True}})
    blocks = [i // size for i in range(1, t + 1)]
    keys = [min(topk, i // size) * size + i % size for i in range(1, t + 1)]
    expected = 3 * (2 * h * 2 * d_h * sum(keys) + 2 * h_i * d_i * sum(blocks))
    assert count_flops(qsa, t, "causal").components["attention/scores"] * t == expected
    report = verify(qsa, t)
    assert report.ok, [c for c in [*report.params, *report.flops] if not c.match]
    assert "QSA (Qwen4-Exp)" in " ".join(calc.estimate(qsa).conventions)
