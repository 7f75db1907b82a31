"""Hash-routed experts (moe.hash_layers, DeepSeek-V4's hash_moe layers): a table of token ids
picks each token's experts, the router's scores weigh them; counted as the learned router."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import calc  # noqa: E402
from calc.errors import CalcError  # noqa: E402
from calc.reports.verify import verify  # noqa: E402
from tests.draws import examples  # noqa: E402
from tests.strategies import model_specs  # noqa: E402

MOE_KEYS = ("moe/router", "moe/experts", "moe/shared")


def _spec(vocab: int, d: int, experts: int, top_k: int, width: int, layers: int = 1,
          hashed: tuple[int, ...] = (0,)) -> calc.ModelSpec:
    """DeepseekV4SparseMoeBlock as a spec: E experts of width f and one shared MLP of width f
    (DeepseekV4MLP reads intermediate_size, which DeepseekV4Config maps to
    moe_intermediate_size, whatever n_shared_experts says), SwiGLU, no biases."""
    return calc.ModelSpec(
        name="hash", vocab_size=vocab, d_model=d, n_layers=layers, context_length=16,
        attention={"n_heads": 2, "head_dim": 4}, ffn={"activation": "swiglu", "d_ff": width},
        position={"kind": "rope"}, norm={"kind": "rmsnorm"},
        moe={"n_experts": experts, "top_k": top_k, "d_expert": width, "n_shared_experts": 1,
             "hash_layers": hashed})


@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(vocab=st.integers(2, 40), d=st.integers(2, 12), experts=st.integers(1, 6),
       width=st.integers(1, 10), tokens=st.integers(1, 6), data=st.data())
def test_transformers_hash_routed_block_counts_as_calc(vocab, d, experts, width, tokens, data):
    """transformers' DeepseekV4SparseMoeBlock on a hash_moe layer (DeepseekV4HashRouter): its
    parameters and forward FLOPs on the CPU (batched_mm experts, real ids) equal calc's MoE
    terms of one hash-routed layer, and equal those of its learned-router layer; the table is
    a buffer of vocab_size × top_k."""
    from transformers import DeepseekV4Config
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4SparseMoeBlock

    top_k = data.draw(st.integers(1, experts))
    config = DeepseekV4Config(
        vocab_size=vocab, hidden_size=d, moe_intermediate_size=width, num_hidden_layers=2,
        n_routed_experts=experts, num_experts_per_tok=top_k,
        mlp_layer_types=["hash_moe", "moe"])
    config._experts_implementation = "batched_mm"  # counted bmm (calc.verify.hf_reference)
    spec = _spec(vocab, d, experts, top_k, width)
    params = calc.count_params(spec).components
    flops = calc.count_flops(spec, tokens).components
    for layer, hashed in ((0, True), (1, False)):
        block = DeepseekV4SparseMoeBlock(config, layer).requires_grad_(False)
        assert block.is_hash is hashed
        buffers = dict(block.named_buffers())
        if hashed:
            assert set(buffers) == {"gate.tid2eid"}
            assert tuple(buffers["gate.tid2eid"].shape) == (vocab, top_k)
        assert sum(p.numel() for p in block.parameters()) == sum(params[k] for k in MOE_KEYS)
        ids = torch.randint(0, vocab, (1, tokens))
        with FlopCounterMode(display=False) as counter:
            block(torch.randn(1, tokens, d), input_ids=ids)
        assert counter.get_total_flops() == tokens * sum(flops[k] for k in MOE_KEYS)
    assert calc.count_params(spec) == calc.count_params(spec.updated(**{"moe.hash_layers": ()}))


def test_reference_model_routes_a_hash_layer_by_the_token_id():
    """The reference model's hash-routed layer sends every token of id v to table[v] = the
    experts (v·k + j) mod E, whatever the router scores; its learned layer to the router's
    top-k."""
    from calc.verify.model import build

    spec = _spec(vocab=16, d=8, experts=5, top_k=2, width=4, layers=2)
    model = build(spec, "cpu")
    hit: dict[int, list[int]] = {0: [], 1: []}
    for index in (0, 1):
        model.layers[index].ffn.experts.register_forward_hook(
            lambda module, args, out, index=index: hit[index].extend(args[1]))
    assert not hasattr(model.layers[1].ffn, "table") or model.layers[1].ffn.table is None
    with torch.no_grad():
        model(torch.full((1, 7), 9))
    assert sorted(hit[0]) == [(9 * 2) % 5, (9 * 2 + 1) % 5]
    assert len(hit[1]) <= 2 and all(0 <= e < 5 for e in hit[1])


@settings(max_examples=examples(5), deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=model_specs().filter(lambda s: s.moe is not None and s.moe.hash_layers),
       seq_len=st.integers(1, 10), device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_hash_layers_verify_exactly(spec, seq_len, device):
    """Hash-routed layers beside every other option: the reference model (the table on the
    CPU, the balanced assignment on meta) counts what the formulas say."""
    if spec.position_table:
        seq_len = min(seq_len, spec.position_table)
    report = verify(spec, seq_len, device=device)
    assert report.ok, [c for c in [*report.params, *report.flops] if not c.match]


@pytest.mark.parametrize(("change", "message"), [
    ({"moe.hash_layers": (3,)}, "moe.hash_layers: layer 3 must be an MoE layer (the model "
                                "has 2 layers)"),
    ({"moe.hash_layers": (0,), "moe.first_dense_layers": 1},
     "moe.hash_layers: layer 0 must be an MoE layer (layer 0 is dense)"),
    ({"moe.hash_layers": (1, 0)}, "moe.hash_layers=[1, 0] must be increasing"),
    ({"moe.hash_layers": (0,), "moe.n_zero_experts": 4},
     "moe.hash_layers is not defined with moe.n_zero_experts"),
])
def test_bad_hash_layers_are_refused_in_one_line(change, message):
    spec = _spec(vocab=16, d=8, experts=4, top_k=2, width=4, layers=2, hashed=())
    with pytest.raises(CalcError, match="^spec: " + re.escape(message)) as caught:
        spec.updated(**change)
    assert "\n" not in str(caught.value)


def test_a_hash_routed_spec_is_not_written_as_a_learned_router_type():
    """No type calc writes has hash-routed layers: export refuses rather than drop them."""
    from calc.hf import hf_config_from_spec

    spec = _spec(vocab=16, d=8, experts=4, top_k=2, width=4, layers=2)
    with pytest.raises(CalcError, match="hash_layers"):
        hf_config_from_spec(spec)
    assert hf_config_from_spec(spec.updated(**{"moe.hash_layers": ()}))
