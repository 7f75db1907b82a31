"""The step-time engine (calc.timing): collectives by hand, links, the pipeline bubble, what each
parallel dimension adds or removes, and operators that add up to calc's exact FLOPs."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from calc.errors import CalcError
from calc.evaluate import count_flops, count_params, stage_values
from calc.presets import load_preset
from calc.reports.memory import memory
from calc.spec.layout import check, make_layout
from calc.timing.collectives import all_gather, all_reduce, all_to_all, p2p, ring_all_reduce
from calc.timing.communication import links
from calc.timing.compute import stage_layers
from calc.timing.network import Link, network_for
from calc.timing.operators import model_terms
from calc.timing.schedule import PARTS
from tests.steps import CONSTANTS, engine_step

# A DGX-A100-like node, given by hand so these tests do not depend on the systems catalogue.
NODE = SimpleNamespace(gpus_per_node=8, intra_node_gb_s=300, inter_node_gb_s=25,
                       intra_node_latency_us=3.4, inter_node_latency_us=14.0)
NETWORK = network_for(NODE, CONSTANTS.network)


def _step(model: str, gpus: int, gpu: str = "a100", **fields):
    return engine_step(NETWORK, model, gpus, gpu, **fields)


def test_ring_all_reduce_by_hand():
    """1 GB over 8 ranks at 100 GB/s, 5 µs a step: 2·7/8 · 10 ms + 14 · 5 µs (NCCL's ring)."""
    link = Link("test", 100e9, 5e-6)
    assert ring_all_reduce(1e9, 8, link) == pytest.approx(2 * 7 / 8 * 1e9 / 100e9 + 14 * 5e-6)
    # the tree's latency term is 2·log2(8) = 6 steps: NCCL's choice is the faster
    assert all_reduce(1e9, 8, link) == pytest.approx(2 * 7 / 8 * 1e-2 + 6 * 5e-6)
    assert all_gather(1e9, 8, link) == pytest.approx(7 / 8 * 1e-2 + 7 * 5e-6)
    assert all_to_all(1e9, 4, link) == pytest.approx(3 / 4 * 1e-2 + 3 * 5e-6)
    assert p2p(1e9, link) == pytest.approx(1e-2 + 5e-6)
    assert all_reduce(1e9, 1, link) == 0


def test_groups_cross_nodes_only_when_they_do_not_fit():
    assert NETWORK.link(stride=1, size=8).name == "intra-node"
    assert NETWORK.link(stride=1, size=16).name == "inter-node"
    assert NETWORK.link(stride=8, size=2).name == "inter-node"  # dp over tp=8 nodes
    assert NETWORK.link(stride=2, size=4).name == "intra-node"  # dp over tp=2 in one node
    assert NETWORK.intra.bandwidth == 300e9 * CONSTANTS.network.intra_fraction


def test_pure_data_parallel_in_one_node_has_no_model_parallel_time():
    step, layout = _step("llama2-7b", 8, global_batch=32, micro_batch=4, flash_attention=True)
    for part in ("tp_communication", "pp_communication", "cp_communication",
                 "ep_communication", "pipeline_bubble"):
        assert step.breakdown[part] == 0
    assert step.breakdown["compute"] > 0 and step.breakdown["dp_communication"] >= 0
    assert links(layout, NETWORK) == {"dp": "intra-node"}


def test_breakdown_sums_to_the_step():
    step, _ = _step("llama2-70b", 256, tp=8, pp=4, vpp=5, global_batch=512,
                    sequence_parallel=True, recompute="selective")
    assert list(step.breakdown) == list(PARTS)
    assert sum(step.breakdown.values()) == pytest.approx(step.step)


def test_doubling_tp_shrinks_per_gpu_compute_but_not_by_more_than_half():
    one, _ = _step("llama2-13b", 8, tp=2, global_batch=32, flash_attention=True)
    two, _ = _step("llama2-13b", 8, tp=4, global_batch=32, flash_attention=True)
    # per micro-batch: half the FLOPs per GPU at a lower efficiency (narrower products)
    assert one.compute.matmul / 2 < two.compute.matmul < one.compute.matmul
    assert two.breakdown["tp_communication"] > one.breakdown["tp_communication"]


@pytest.mark.parametrize(("pp", "vpp", "batch"), [(4, 1, 64), (4, 2, 64), (8, 5, 128),
                                                  (2, 1, 16)])
def test_bubble_is_p_minus_1_over_v_m_of_the_ideal(pp, vpp, batch):
    """Narayanan et al. 2021 §2.2: bubble = (p − 1)/(v·m) of m·t_mb."""
    step, layout = _step("llama2-70b", 8 * pp * 2, tp=8, pp=pp, vpp=vpp, global_batch=batch)
    m = layout.micro_batches
    ideal = m * step.micro_batch
    assert step.breakdown["pipeline_bubble"] == pytest.approx((pp - 1) / (vpp * m) * ideal)


def test_embedding_and_loss_as_layers_balance_llama3s_pipeline():
    """Llama 3 §3.3.2: 126 layers, one fewer on the first and the last of 16 stages, one layer
    per chunk, so V = 8. Refused without the split (128 chunks > 126 layers); with it every
    middle stage holds 8 layers and the last 7 and the head, and the bubble is (p−1)/v."""
    fields = dict(tp=8, pp=16, vpp=8, global_batch=16 * 64, micro_batch=1, seq_len=8192,
                  flash_attention=True, sequence_parallel=True, dropout=False)
    with pytest.raises(CalcError, match="exceeds n_layers=126"):
        _step("llama3.1-405b", 8192, gpu="h100", **fields)
    split, layout = _step("llama3.1-405b", 8192, gpu="h100", split_embedding_loss=True,
                          **fields)
    plain, _ = _step("llama3.1-405b", 8192, gpu="h100", **{**fields, "vpp": 1})
    terms = model_terms(load_preset("llama3.1-405b").spec, 8192)
    assert stage_layers(terms, layout) == 8
    # a middle stage paces it: no LM head on the slowest stage, 8 layers as without the split
    assert split.compute.head == 0 and plain.compute.head > 0
    assert split.compute.matmul == pytest.approx(plain.compute.matmul)
    assert split.breakdown["pipeline_bubble"] == pytest.approx(15 / 8 * split.micro_batch)


@pytest.mark.parametrize("vpp", [1, 2, 4])
def test_interleaving_hides_more_of_the_gradient_reduction(vpp):
    """The v chunks reduce their gradients one after another, p chunk-backwards apart: the
    exposed data-parallel time is max(C/v − c, C − c − (v−1)·p·c, 0), c = backward / v; at
    v = 1 the last micro-batch's backward alone hides it."""
    step, _ = _step("llama2-70b", 256, tp=8, pp=4, vpp=vpp, global_batch=128,
                    flash_attention=True, sequence_parallel=True, dropout=False, zero=0)
    reduce = step.gradients.grad_reduce
    chunk = (step.compute.backward - step.compute.recompute
             + step.communication.tp_backward) / vpp
    expected = max(0.0, reduce / vpp - chunk, reduce - chunk - (vpp - 1) * 4 * chunk)
    assert step.breakdown["dp_communication"] == pytest.approx(expected)
    assert reduce > 0


def test_interleaving_never_exposes_more_data_parallel_time():
    times = [_step("llama2-70b", 256, tp=8, pp=4, vpp=v, global_batch=128, zero=1,
                   flash_attention=True, dropout=False)[0].breakdown["dp_communication"]
             for v in (1, 2, 4)]
    assert times[0] > times[1] >= times[2]


def test_tensor_parallel_across_nodes_is_slower_than_inside():
    inside, layout_inside = _step("llama2-70b", 16, tp=8, pp=2, global_batch=16)
    across, layout_across = _step("llama2-70b", 16, tp=16, pp=1, global_batch=16)
    assert links(layout_inside, NETWORK)["tp"] == "intra-node"
    assert links(layout_across, NETWORK)["tp"] == "inter-node"
    per_layer_inside = inside.communication.tp_forward / math.ceil(80 / 2)
    per_layer_across = across.communication.tp_forward / 80
    # the ring crosses nodes on all eight rails: 8 x 21.25 GB/s against NVLink's 240, and the
    # network's latency on every step
    assert per_layer_across > 1.4 * per_layer_inside


def test_a_ring_over_a_nodes_gpus_crosses_the_network_on_every_rail():
    inter = NETWORK.inter.bandwidth
    assert NETWORK.ring(stride=1, size=16).bandwidth == pytest.approx(8 * inter)
    assert NETWORK.ring(stride=2, size=16).bandwidth == pytest.approx(4 * inter)
    assert NETWORK.ring(stride=8, size=4).bandwidth == inter  # one GPU a node: one NIC
    assert NETWORK.ring(stride=1, size=8) is NETWORK.intra
    fast = SimpleNamespace(**{**vars(NODE), "inter_node_gb_s": 100})  # 8 x 100 > NVLink
    assert network_for(fast, CONSTANTS.network).ring(1, 16).bandwidth == NETWORK.intra.bandwidth
    # an all-to-all or a send still leaves through one GPU's NIC
    assert NETWORK.link(stride=1, size=16).bandwidth == inter


def test_zero3_gathers_hide_better_behind_larger_micro_batches():
    """ZeRO-3 gathers every layer's weights per micro-batch: at micro-batch 1 of 512 tokens on
    64 GPUs they cannot hide behind the compute (even on all eight rails of each node); at 8
    they mostly can (issue 10's example, at a shorter sequence)."""
    small, _ = _step("llama2-7b", 64, zero=3, global_batch=64, flash_attention=True,
                     seq_len=512)
    large, _ = _step("llama2-7b", 64, zero=3, global_batch=512, micro_batch=8,
                     flash_attention=True, seq_len=512)
    share = {name: s.breakdown["zero_communication"] / s.step
             for name, s in (("small", small), ("large", large))}
    assert share["small"] > 0.2 and share["large"] < share["small"] / 2


def test_fp8_runs_the_products_faster():
    bf16, _ = _step("llama3-70b", 64, gpu="h100", tp=8, global_batch=64, flash_attention=True)
    fp8, _ = _step("llama3-70b", 64, gpu="h100", tp=8, global_batch=64, flash_attention=True,
                   dtype="fp8")
    assert fp8.compute.matmul < 0.75 * bf16.compute.matmul
    assert fp8.compute.attention == bf16.compute.attention  # attention stays 16-bit


def test_full_recomputation_adds_a_forward():
    none, _ = _step("gpt3-175b", 64, tp=8, pp=8, global_batch=64, seq_len=2048)
    full, _ = _step("gpt3-175b", 64, tp=8, pp=8, global_batch=64, seq_len=2048,
                    recompute="full")
    assert full.compute.recompute == pytest.approx(
        none.compute.matmul + none.compute.attention + none.compute.elementwise)
    assert full.compute.recompute_flops == pytest.approx(
        count_flops(load_preset("gpt3-175b").spec, 2048).forward
        - count_flops(load_preset("gpt3-175b").spec, 2048).components["lm_head"])


@pytest.mark.parametrize("model", ["llama2-7b", "deepseek-v3", "mixtral-8x7b", "gpt2",
                                   "mistral-7b"])
def test_operators_add_up_to_calcs_exact_forward_flops(model):
    """The work the engine schedules is calc's count: top-k experts, MLA, GQA, windows."""
    spec = load_preset(model).spec
    terms = model_terms(spec, 4096 if spec.position_table == 0 else spec.context_length)
    flops = count_flops(spec, terms.seq_len)
    total = sum(m.flops for m in terms.matmuls) + terms.attention_causal + terms.head.flops
    assert total == pytest.approx(flops.forward, rel=1e-12)
    assert terms.forward_flops == flops.forward


def test_experts_count_top_k_only():
    spec = load_preset("mixtral-8x7b").spec
    more = spec.updated(**{"moe.n_experts": 16})
    flops = {m.name: m.flops for m in model_terms(spec, 4096).matmuls}
    flops_more = {m.name: m.flops for m in model_terms(more, 4096).matmuls}
    assert flops["moe/experts/up"] == flops_more["moe/experts/up"]
    assert flops["moe/router"] * 2 == flops_more["moe/router"]


def test_expert_parallelism_adds_all_to_all_and_shrinks_states():
    step, layout = _step("mixtral-8x7b", 16, gpu="h100", ep=8, global_batch=16, seq_len=4096,
                         flash_attention=True)
    assert step.breakdown["ep_communication"] > 0
    assert links(layout, NETWORK)["ep"] == "intra-node"


@pytest.mark.parametrize(("model", "gpus", "fields", "message"), [
    ("llama2-7b", 8, dict(tp=3), "not divisible by tp × pp × cp"),
    ("llama2-7b", 8, dict(tp=2, dp=2), "must equal tp × pp × dp × cp"),
    ("llama2-70b", 48, dict(tp=6, global_batch=8), "tp=6 must divide attention.n_heads=64"),
    ("llama2-7b", 8, dict(global_batch=12), "not divisible by dp × micro_batch"),
    ("llama2-7b", 8, dict(ep=2), "needs a mixture-of-experts model"),
    ("mixtral-8x7b", 48, dict(ep=3, global_batch=48), "ep=3 must divide moe.n_experts=8"),
    ("mixtral-8x7b", 8, dict(ep=8, tp=2, global_batch=8), "ep=8 must divide dp=4"),
    ("llama2-7b", 64, dict(pp=16, vpp=4, global_batch=64), "pp × vpp = 64 exceeds n_layers"),
    ("llama2-7b", 8, dict(vpp=2), "vpp=2 needs pp > 1"),
    ("llama2-7b", 8, dict(pp=2), "global_batch is needed with pp=2"),
    ("llama2-7b", 64, dict(pp=64, global_batch=64), "pp=64 exceeds n_layers=32"),
    ("llama2-7b", 6, dict(cp=3), "divisible by 2 × cp"),
    ("llama2-7b", 8, dict(pp=2, vpp=2, global_batch=12, micro_batch=3),
     "needs micro-batches per step"),
])
def test_bad_layouts_get_one_clear_line(model, gpus, fields, message):
    spec = load_preset(model).spec
    with pytest.raises(CalcError, match=None) as error:
        check(spec, make_layout(gpus, **fields))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_replicated_kv_heads_are_a_note_not_an_error():
    spec = load_preset("llama2-70b").spec  # 8 KV heads
    _, notes = check(spec, make_layout(16, tp=16, global_batch=16))
    assert any("replicated" in note for note in notes)


def test_embedding_and_loss_as_layers_lighten_the_first_stage_in_memory():
    """With the split, the first of 16 stages holds ⌈128/16⌉ − 1 = 7 of Llama 3's 126 layers
    (and the embedding) where an even split of the layers holds 8; pp = 1 has nothing to split."""
    spec = load_preset("llama3.1-405b").spec
    assert stage_values(spec, 8, 16)["L_s"] == 8
    assert stage_values(spec, 8, 16, split_embedding_loss=True)["L_s"] == 7
    kw = dict(gpu="h100", tp=8, pp=16, vpp=8, dp=64, zero=1, sequence_parallel=True)
    # Megatron refuses 126 layers over 16 × 8 chunks (calc.spec.validity): the even split is
    # priced as a framework without that rule would run it
    plain = memory("llama3.1-405b", framework="other", **kw).memory
    split = memory("llama3.1-405b", split_embedding_loss=True, framework="other", **kw).memory
    layer = plain.params_per_gpu - split.params_per_gpu
    counts = count_params(spec)
    one_layer = sum(counts.per_layer.values()) + sum(counts.per_dense_ffn.values())
    # one layer over 8 tensor ranks (and its 1/126 share of the final norm, 16 parameters)
    assert layer == pytest.approx(one_layer / 8, rel=1e-7)
    with pytest.raises(CalcError, match="split_embedding_loss needs pp > 1"):
        memory("llama3.1-405b", gpu="h100", split_embedding_loss=True)


def test_doge_s_operators_add_up_and_split_by_expert_rows():
    """Doge-120M-MoE: dt_proj and the one-neuron experts among the operators, which add up to
    calc's forward; tensor parallelism splits the product-key experts' rows and the shared
    MLP (Doge's tp_plan: embedding_rowwise), not their one-neuron width."""
    from calc.hf import spec_from_hf_config
    from calc.spec.layout import tensor_parallel_units

    spec = spec_from_hf_config("tests/data/hf_configs/doge-120m-moe.json")
    terms = model_terms(spec, 2048)
    flops = count_flops(spec, 2048)
    total = sum(m.flops for m in terms.matmuls) + terms.attention_causal + terms.head.flops
    assert total == pytest.approx(flops.forward, rel=1e-12)
    names = {m.name for m in terms.matmuls}
    assert {"attention/dynamic_mask", "moe/experts/up", "moe/experts/down"} <= names
    units = {field: value for field, value, _ in tensor_parallel_units(spec)}
    assert units["moe.n_experts"] == 4096 and units["moe.d_shared"] == 1024
    assert "moe.d_expert" not in units


def test_zaya_operators_add_up_and_price_its_router_and_convs():
    """ZAYA1: the MLP router's four products, CCA's convs as a recurrence and the residual
    scales' element-wise bytes; the operators add up to calc's exact forward FLOPs."""
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config("tests/data/hf_configs/zaya1-8b.json")
    terms = model_terms(spec, 4096)
    flops = count_flops(spec, 4096)
    total = (sum(m.flops for m in terms.matmuls) + terms.attention_causal + terms.head.flops
             + sum(r.flops for r in terms.recurrences))
    assert total == pytest.approx(flops.forward, rel=1e-12)
    routers = [(m.n, m.k) for m in terms.matmuls if m.name == "moe/router"]
    assert routers == [(256, 2048), (256, 256), (256, 256), (17, 256)]
    assert [r.name for r in terms.recurrences] == ["attention/conv"]
    assert {e.name for e in terms.elementwise} >= {"zaya"}
