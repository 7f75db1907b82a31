"""Step time v2's physics: Zero Bubble and DualPipe bubbles, TP-communication overlap, DualPipe's
overlapped all-to-all, fp8 recipes' quantisation, torchtitan's op-level recomputation."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from calc.errors import CalcError
from calc.presets import get_gpu, load_preset
from calc.spec.layout import make_layout
from calc.timing.compute import compute_times, in_fp8
from calc.timing.network import network_for
from calc.timing.operators import model_terms
from calc.timing.schedule import device_for, pipeline_bubble
from tests.steps import CONSTANTS, engine_step

NODE = SimpleNamespace(gpus_per_node=8, intra_node_gb_s=450, inter_node_gb_s=50,
                       intra_node_latency_us=3.4, inter_node_latency_us=14.0)
NETWORK = network_for(NODE, CONSTANTS.network)


def _step(model: str, gpus: int, gpu: str = "h100", **fields):
    return engine_step(NETWORK, model, gpus, gpu, **fields)


PIPELINE = dict(pp=8, global_batch=64, micro_batch=1, seq_len=4096)


def test_zero_bubble_bubbles_by_hand():
    """Qi et al. 2024 Table 2 with T_F = 1, T_B = 1, T_W = 1 (t_mb = 3) and p = 8, m = 64:
    1F1B 7·3, ZB-H1 7·(1 + 1 − 1), ZB-H2 7·(1 + 1 − 2) = 0."""
    layout = make_layout(8, pp=8, global_batch=64)
    for schedule, bubble in ((None, 21), ("1f1b", 21), ("zb-1p", 7), ("zb-h1", 7),
                             ("zb-2p", 0), ("zb-h2", 0)):
        schedule_layout = layout.model_copy(update={"pipeline_schedule": schedule})
        assert pipeline_bubble(schedule_layout, 3.0, 1.0, 1.0) == pytest.approx(bubble)


def test_zero_bubble_defers_no_more_weight_passes_than_other_micro_batches():
    """With m = 3 micro-batches a stage can defer 2 W passes whatever its memory allows."""
    layout = make_layout(8, pp=8, global_batch=3, pipeline_schedule="zb-2p")
    assert pipeline_bubble(layout, 3.0, 1.0, 1.0) == pytest.approx(7 * 2 - 2)


def test_dualpipe_bubble_by_hand():
    """DeepSeek-V3 report Table 2: (p/2 − 1)(F&B + B − 3W), B the whole backward: with T_F = 1,
    input gradient 1, T_W = 1 and p = 16: 7 · (3 + 2 − 3) = 14."""
    layout = make_layout(16, pp=16, global_batch=64, pipeline_schedule="dualpipe")
    assert pipeline_bubble(layout, 3.0, 1.0, 1.0) == pytest.approx(14)


def test_zero_bubble_runs_faster_than_1f1b_on_the_same_layout():
    steps = {schedule: _step("llama2-7b", 8, pipeline_schedule=schedule, **PIPELINE)[0]
             for schedule in ("1f1b", "zb-1p", "zb-2p")}
    bubbles = [steps[s].breakdown["pipeline_bubble"] for s in ("1f1b", "zb-1p", "zb-2p")]
    assert bubbles[0] > bubbles[1] > bubbles[2] >= 0
    assert steps["1f1b"].breakdown["compute"] == steps["zb-2p"].breakdown["compute"]


def test_schedules_the_layout_cannot_run_are_one_line_errors():
    with pytest.raises(CalcError, match="needs pp > 1"):
        make_layout(8, pipeline_schedule="zb-1p")
    with pytest.raises(CalcError, match="even pp"):
        make_layout(3, pp=3, global_batch=6, pipeline_schedule="dualpipe")
    with pytest.raises(CalcError, match="needs dtype='fp8'"):
        make_layout(8, fp8_recipe="rowwise")
    with pytest.raises(CalcError, match="not priced"):
        _step("llama2-7b", 8, pipeline_schedule="zbv", **PIPELINE)


def test_tp_overlap_hides_tensor_parallel_collectives_behind_the_products():
    fields = dict(tp=8, sequence_parallel=True, global_batch=8, seq_len=4096)
    plain, _ = _step("llama2-70b", 8, **fields)
    overlapped, _ = _step("llama2-70b", 8, tp_overlap=True, **fields)
    assert plain.breakdown["tp_communication"] > 0
    assert overlapped.breakdown["tp_communication"] < plain.breakdown["tp_communication"]
    assert overlapped.step < plain.step


def test_dualpipe_overlaps_the_expert_all_to_all():
    fields = dict(pp=2, ep=8, global_batch=64, seq_len=4096, dtype="bf16")
    plain, _ = _step("deepseek-v3", 32, pipeline_schedule="1f1b", **fields)
    dual, _ = _step("deepseek-v3", 32, pipeline_schedule="dualpipe", **fields)
    assert plain.breakdown["ep_communication"] > dual.breakdown["ep_communication"]


def test_fp8_recipes_add_their_quantisation_in_the_order_of_their_bytes():
    """Per element: delayed and MXFP8 4 bytes, current 6 (an amax pass first), rowwise 8 (the
    weight gradient's operands re-quantised along the other axis)."""
    fields = dict(global_batch=8, seq_len=4096, dtype="fp8")
    work = {recipe: _step("llama3-8b", 8, fp8_recipe=recipe, **fields)[0].compute
            for recipe in ("delayed", "mxfp8", "current", "rowwise")}
    assert work["delayed"].quantise == pytest.approx(work["mxfp8"].quantise)
    assert work["delayed"].quantise < work["current"].quantise < work["rowwise"].quantise
    assert work["current"].quantise == pytest.approx(1.5 * work["delayed"].quantise)
    assert work["rowwise"].quantise_backward == pytest.approx(
        2 * work["delayed"].quantise_backward)
    bf16 = _step("llama3-8b", 8, global_batch=8, seq_len=4096)[0].compute
    assert bf16.quantise == bf16.quantise_backward == 0


def test_fp8_keeps_the_lm_head_and_routers_in_16_bit():
    spec = load_preset("llama3-8b").spec
    terms = model_terms(spec, 4096)
    framework = CONSTANTS.framework("megatron")
    fp8 = device_for(get_gpu("h100"), "fp8", CONSTANTS, framework)
    assert not in_fp8(terms.head, fp8)
    assert all(in_fp8(op, fp8) for op in terms.matmuls if op.split != "none")
    bf16 = device_for(get_gpu("h100"), "bf16", CONSTANTS, framework)
    assert not any(in_fp8(op, bf16) for op in terms.matmuls)


def test_torchtitan_selective_recomputes_products_megatron_the_attention_core():
    fields = dict(global_batch=8, seq_len=8192, recompute="selective")
    megatron, _ = _step("llama3-8b", 8, framework="megatron", **fields)
    torchtitan, _ = _step("llama3-8b", 8, framework="torchtitan", **fields)
    assert megatron.compute.recompute == pytest.approx(megatron.compute.attention)
    assert torchtitan.compute.recompute == pytest.approx(
        torchtitan.compute.matmul / 2 + torchtitan.compute.elementwise)


def test_an_all_to_all_across_nodes_sends_the_nodes_own_share_over_nvlink():
    """64 ranks, 8 a node, 1 GB each: 56/64 GB through the NIC while 7/64 GB cross NVLink."""
    from calc.timing.collectives import all_to_all, node_all_to_all

    inter, intra = NETWORK.inter, NETWORK.intra
    both = node_all_to_all(1e9, 64, 8, intra, inter)
    assert both == pytest.approx(56 / 64 * 1e9 / inter.bandwidth + 63 * inter.latency)
    assert both < all_to_all(1e9, 64, inter)
    assert NETWORK.ranks_per_node(stride=1, size=64) == 8
    assert NETWORK.ranks_per_node(stride=8, size=64) == 1


def test_recomputed_norms_and_mla_up_projections_cost_their_forward_again():
    """DeepSeek-V3 report §3.2.3: the up-projections' FLOPs (W_UQ, W_UK, W_UV) and the norms'
    bytes again in the backward; a model without MLA recomputes only its norms."""
    fields = dict(pp=2, ep=8, global_batch=64, seq_len=4096, dtype="bf16")
    plain, _ = _step("deepseek-v3", 32, **fields)
    again, _ = _step("deepseek-v3", 32, recompute_norm_up=True, **fields)
    spec = load_preset("deepseek-v3").spec
    mla, h = spec.attention.mla, spec.attention.n_heads
    by_hand = 2 * spec.n_layers * h * (mla.q_lora_rank * spec.head_dim_qk + mla.kv_lora_rank * (
        spec.head_dim_qk - mla.qk_rope_head_dim + spec.head_dim_v))
    assert model_terms(spec, 4096).mla_up_flops == pytest.approx(by_hand)
    assert plain.compute.recompute == 0 < again.compute.recompute
    assert again.compute.recompute_flops == pytest.approx(by_hand)
    assert again.compute.recompute < 0.05 * (again.compute.forward + again.compute.backward)
    llama, _ = _step("llama3-8b", 8, recompute_norm_up=True, global_batch=8, seq_len=4096)
    assert llama.compute.recompute > 0 == llama.compute.recompute_flops


@pytest.mark.parametrize("gpu", ["h100", "a100"])
def test_a_derived_attention_kernel_runs_at_its_share_of_the_measured_ones_speed(gpu):
    """LLM Foundry's benchmarks ran the FlashAttention-1-era Triton kernel (presets/timing.toml
    frameworks.foundry): its attention takes 1/relative_speed of FlashAttention-2's time, from
    the H100 series and from A100's flash_fraction alike; nothing else changes."""
    fa1 = CONSTANTS.attention_kernels["fa1"]
    assert CONSTANTS.framework("foundry").attention_kernel == "fa1"
    assert fa1.measured_as == CONSTANTS.framework("fsdp").attention_kernel == "fa2"
    fields = dict(global_batch=8, seq_len=8192, zero=3)
    foundry, _ = engine_step(NETWORK, "llama3-8b", 8, gpu, framework="foundry", **fields)
    fsdp, _ = engine_step(NETWORK, "llama3-8b", 8, gpu, framework="fsdp", **fields)
    for part in ("attention", "attention_backward"):
        assert getattr(foundry.compute, part) == pytest.approx(
            getattr(fsdp.compute, part) / fa1.relative_speed)
    assert foundry.compute.matmul == fsdp.compute.matmul


def test_a_power_limited_part_runs_its_tensor_core_work_at_its_sustained_rate():
    """torchtitan's H100s run at a 500 W limit (presets/timing.toml power_limits): its products
    and attention take 1/tensor_rate of the time the same part would at full power; the
    element-wise kernels, bound by HBM bandwidth, do not change."""
    gpu = "h100-hbm2e-500w"
    rate = CONSTANTS.power_limits[gpu].tensor_rate
    assert rate < 1
    spec = load_preset("llama3-8b").spec
    layout = make_layout(8, global_batch=8, seq_len=8192, zero=3, framework="torchtitan")
    framework = CONSTANTS.framework("torchtitan")
    full_power = CONSTANTS.model_copy(update={"power_limits": {}})
    terms = model_terms(spec, layout.seq_len)
    limited, full = (compute_times(terms, layout, device_for(get_gpu(gpu), "bf16", constants,
                                                             framework))
                     for constants in (CONSTANTS, full_power))
    for part in ("matmul", "attention", "attention_backward"):
        assert getattr(limited, part) == pytest.approx(getattr(full, part) / rate)
    assert limited.elementwise == full.elementwise


def test_torchtitan_gathers_tensorwise_fp8_inputs_in_fp8():
    """torchao's Float8ColwiseParallel / Float8RowwiseParallel cast before the sequence-parallel
    all-gathers under tensorwise scaling ('current'); row-wise recipes and bf16 gather 16-bit,
    and the reduce-scatters stay 16-bit, so the all-gathers are what shrinks."""
    fields = dict(tp=8, sequence_parallel=True, global_batch=8, seq_len=8192, dtype="fp8")
    comm = {recipe: _step("llama3-8b", 8, framework="torchtitan", fp8_recipe=recipe,
                          **fields)[0].communication for recipe in ("current", "rowwise")}
    megatron = _step("llama3-8b", 8, framework="megatron", fp8_recipe="current",
                     **fields)[0].communication
    assert comm["current"].tp_forward < comm["rowwise"].tp_forward == megatron.tp_forward
    # with the all-gathers at half their bytes the forward collectives cost more than half
    assert comm["current"].tp_forward > comm["rowwise"].tp_forward / 2
    bf16 = {framework: _step("llama3-8b", 8, framework=framework,
                             **{**fields, "dtype": "bf16"})[0].communication.tp_forward
            for framework in ("torchtitan", "megatron")}
    assert bf16["torchtitan"] == bf16["megatron"]


def test_shortcut_moe_hides_the_expert_all_to_all_under_the_dense_work():
    """ScMoE (LongCat-Flash): each MoE layer's dispatch and combine run beside the dense work
    around it, so the exposed expert all-to-all is what the pass's non-expert work does not
    cover; without the shortcut all of it is exposed (1F1B)."""
    import calc
    from calc.presets import resolve
    from tests.hf_released import CONFIGS

    spec = resolve(str(CONFIGS / "longcat-flash-chat.json")).spec
    plain_spec = spec.updated(**{"moe.shortcut": False})
    fields = dict(gpu="h100", gpus=512, tp=8, ep=64)
    scmoe, plain = calc.step(spec, **fields), calc.step(plain_spec, **fields)
    assert plain.breakdown["compute"] == scmoe.breakdown["compute"]
    layout = make_layout(512, tp=8, ep=64, global_batch=scmoe.layout.global_batch,
                         micro_batch=scmoe.layout.micro_batch, seq_len=scmoe.layout.seq_len)
    framework = CONSTANTS.framework(layout.framework)
    device = device_for(get_gpu("h100"), layout.dtype, CONSTANTS, framework)
    work = compute_times(model_terms(spec, layout.seq_len), layout, device)
    assert work.experts > 0 and work.experts_backward > 2 * work.experts * 0.99
    dense = work.forward + work.backward - work.recompute - work.experts - work.experts_backward
    m = scmoe.layout.micro_batches
    assert scmoe.breakdown["ep_communication"] == pytest.approx(
        max(0.0, plain.breakdown["ep_communication"] - m * dense))
    assert 0 < scmoe.breakdown["ep_communication"] < plain.breakdown["ep_communication"]
