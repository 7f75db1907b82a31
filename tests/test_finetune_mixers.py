"""LoRA on every kind of layer, exact against transformers: the released configs of
tests/data/hf_configs (README.md cites each) built by transformers 5.24.0 on the meta device,
and r·(n_in + n_out) summed over the nn.Linear modules a target selects, as PEFT builds its
adapters (all-linear: every nn.Linear but the LM head, PEFT's definition)."""

from __future__ import annotations

import re

import pytest

import calc
from calc.evaluate import count_adapters
from calc.presets import resolve
from calc.spec.finetune import FineTune
from tests.hf_released import CONFIGS

ATTENTION = {"q": r"self_attn\.q_proj$", "k": r"self_attn\.k_proj$",
             "v": r"self_attn\.v_proj$", "o": r"self_attn\.o_proj$"}
MAMBA = {name: rf"(mixer|mamba)\.{name}$" for name in ("in_proj", "x_proj", "dt_proj",
                                                         "out_proj")}
# calc's targets → the modules transformers names them (a regular expression on the name)
TARGETS: dict[str, dict[str, str]] = {
    "mamba-130m-hf": MAMBA,
    "mamba-codestral-7b-v0.1": {k: MAMBA[k] for k in ("in_proj", "out_proj")},
    "ai21-jamba-1.5-mini": {**ATTENTION, **MAMBA, "up": r"feed_forward\.up_proj$",
                            "gate": r"feed_forward\.gate_proj$",
                            "down": r"feed_forward\.down_proj$"},
    "falcon-h1-0.5b-base": {**ATTENTION, "in_proj": MAMBA["in_proj"],
                            "out_proj": MAMBA["out_proj"], "up": r"feed_forward\.up_proj$",
                            "gate": r"feed_forward\.gate_proj$",
                            "down": r"feed_forward\.down_proj$"},
    "qwen3-next-80b-a3b-instruct": {
        **ATTENTION, "up": r"shared_expert\.up_proj$", "gate": r"shared_expert\.gate_proj$",
        "down": r"shared_expert\.down_proj$", "shared_expert_gate": r"shared_expert_gate$",
        "in_proj_qkvz": r"in_proj_qkvz$", "in_proj_ba": r"in_proj_ba$",
        "out_proj": r"linear_attn\.out_proj$"},
    "lfm2-1.2b": {**ATTENTION, "o": r"self_attn\.out_proj$", "up": r"feed_forward\.w3$",
                  "gate": r"feed_forward\.w1$", "down": r"feed_forward\.w2$",
                  "in_proj": r"conv\.in_proj$", "out_proj": r"conv\.out_proj$"},
    # lightning attention's own projections beside the attention layers' (the experts are fused
    # parameters, the router an nn.Parameter: neither is an nn.Linear)
    "minimax-text-01-hf": {**ATTENTION, "qkv_proj": r"self_attn\.qkv_proj$",
                           "output_gate": r"self_attn\.output_gate$",
                           "out_proj": r"self_attn\.out_proj$"},
    "qwen1.5-moe-a2.7b": {**ATTENTION, "up": r"shared_expert\.up_proj$",
                          "shared_expert_gate": r"shared_expert_gate$"},
    # two shared experts, one MLP of twice the width; a dense first layer
    "deepseek-v2-lite": {"o": ATTENTION["o"], "down": r"(mlp|shared_experts)\.down_proj$"},
    # two latent-attention blocks and two dense MLPs a decoder layer: calc's MoE layer's MLP
    # (mlps.0, its shared expert) and dense layer's (mlps.1) are one up/gate/down target each
    "longcat-flash-chat": {"o": r"self_attn\.\d+\.o_proj$", "up": r"mlps\.\d+\.up_proj$",
                           "gate": r"mlps\.\d+\.gate_proj$",
                           "down": r"mlps\.\d+\.down_proj$"},
    "llama-3.1-8b": {**ATTENTION, "up": r"mlp\.up_proj$", "down": r"mlp\.down_proj$"},
    # PEFT's names select the time-mix's and the channel-mix's module alike
    "rwkv-4-169m-pile": {name: rf"(attention|feed_forward)\.{name}$"
                         for name in ("key", "value", "receptance", "output")},
    # Griffin's recurrent block beside local attention (its gates are nn.Parameter, not
    # nn.Linear); the MLP's three projections are biased but adapted alike
    "recurrentgemma-2b": {
        **{k: rf"temporal_block\.{k}_proj$" for k in ("q", "k", "v", "o")},
        **{k: rf"mlp_block\.{k}_proj$" for k in ("up", "gate", "down")},
        **{name: rf"temporal_block\.{name}$" for name in ("linear_y", "linear_x",
                                                           "linear_out")}},
    # xLSTM's mLSTM (xLSTMLayer's q, k, v, three gate projections, out_proj) and its SwiGLU
    # FFN (proj_up_gate, proj_up, proj_down)
    "xlstm-7b": {**{name: rf"mlstm_layer\.{name}$" for name in (
        "q", "k", "v", "ogate_preact", "igate_preact", "fgate_preact", "out_proj")},
                 "up": r"ffn\.proj_up$", "gate": r"ffn\.proj_up_gate$",
                 "down": r"ffn\.proj_down$"},
    # the Mamba layers beside the shared block (whose targets calc refuses); Zamba's x_proj and
    # dt_proj are per-head nn.Parameters (ZambaMambaMixer), not modules PEFT adapts
    "zamba-7b-v1": {k: MAMBA[k] for k in ("in_proj", "out_proj")},
    # HRM-Text's two stacks: an adapter on each stored layer's modules once, however many
    # passes run them; its per-channel output gate is a gate_proj of its own
    "hrm-text-1b": {**ATTENTION, "g": r"self_attn\.gate_proj$", "up": r"mlp\.up_proj$",
                    "gate": r"mlp\.gate_proj$", "down": r"mlp\.down_proj$"},
}
RANK = 16


@pytest.fixture(scope="module")
def transformers_models():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.verify.hf_reference import build

    return {name: build(CONFIGS / f"{name}.json") for name in TARGETS}


def _spec(name: str):
    return resolve(str(CONFIGS / f"{name}.json")).spec


def assert_adapters_as_the_reference_model_counts(spec, targets, tokens: int = 8):
    """LoRA of rank 2 on `targets` in calc's reference model: its trainable parameters and
    forward FLOPs (FlopCounterMode over `tokens`) equal calc's counts; calc's counts returned."""
    from calc.evaluate import count_flops, finetune_train_flops
    from calc.verify.finetune import count_finetune

    ft = FineTune(method="lora", rank=2, targets=targets)
    ours = count_adapters(spec, ft)
    torch_count = count_finetune(spec, ft, tokens)
    adapters, _ = finetune_train_flops(spec, tokens, "full", ft, ours.targets)
    assert torch_count.trainable == ours.trainable
    assert torch_count.forward == tokens * (count_flops(spec, tokens, "full").forward + adapters)
    return ours


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_each_target_is_peft_on_transformers(name, transformers_models):
    from calc.verify.hf_reference import lora_parameters

    spec, model = _spec(name), transformers_models[name]
    for target, pattern in TARGETS[name].items():
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        assert counts.by_target == {f"lora/{target}": lora_parameters(model, RANK, pattern)}, \
            target


@pytest.mark.parametrize("name", sorted(set(TARGETS) - {"deepseek-v2-lite",
                                                        "longcat-flash-chat", "zamba-7b-v1"}))
def test_all_linear_is_every_linear_but_the_head(name, transformers_models):
    from calc.verify.hf_reference import lora_parameters

    counts = count_adapters(_spec(name), FineTune(method="qlora", rank=RANK,
                                                  targets="all-linear"))
    assert counts.trainable == lora_parameters(transformers_models[name], RANK)
    named = {target for pattern in [TARGETS[name]] for target in pattern}
    assert named <= set(counts.targets)


def test_routed_experts_are_a_target_of_their_own():
    """transformers 5 keeps routed experts as fused parameters, not nn.Linear: all-linear
    leaves them; `experts` adapts each one's up, gate and down (k of E per token)."""
    spec = _spec("qwen3-next-80b-a3b-instruct")
    moe, d, layers = spec.moe, spec.d_model, spec.layer_counts["moe"]
    counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets="experts"))
    assert counts.trainable == layers * moe.n_experts * 3 * RANK * (d + moe.d_expert)
    assert counts.adapters_active == layers * moe.top_k * 3 * RANK * (d + moe.d_expert)
    assert "experts" not in count_adapters(
        spec, FineTune(method="lora", rank=RANK, targets="all-linear")).targets


def test_zero_experts_hold_no_adapters_and_a_token_uses_the_expected_share():
    """LongCat-Flash's `experts` target: adapters on each of the 512 FFN experts' up, gate and
    down, none on the 256 identities; a token runs k_f = 12·512/768 = 8 experts' adapters."""
    spec = _spec("longcat-flash-chat")
    moe, d, layers = spec.moe, spec.d_model, spec.layer_counts["moe"]
    counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets="experts"))
    assert counts.trainable == layers * 512 * 3 * RANK * (d + moe.d_expert)
    assert counts.adapters_active == layers * 8 * 3 * RANK * (d + moe.d_expert)


def test_the_per_head_output_gate_is_a_target_and_all_linear_takes_it():
    """LFM3's g_proj (d → heads) is PEFT's g_proj target; all-linear adapts it beside q, k, v,
    o, the MLP and the short convolutions' projections (transformers' default lfm3 config, no
    released one: tests/test_hf.py UNRELEASED)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build

    config = {"model_type": "lfm3"}
    spec, model = spec_from_hf_config(config), build(config)
    targets = {**ATTENTION, "g": r"self_attn\.g_proj$", "up": r"feed_forward\.w3$",
               "gate": r"feed_forward\.w1$", "down": r"feed_forward\.w2$",
               "in_proj": r"conv\.in_proj$", "out_proj": r"conv\.out_proj$"}
    _assert_adapters_as_peft_builds_them(spec, model, targets)
    all_linear = count_adapters(spec, FineTune(method="lora", rank=RANK, targets="all-linear"))
    assert set(all_linear.targets) == set(targets)
    with pytest.raises(calc.CalcError, match=re.escape("no output gate of its own (g_proj")):
        calc.memory(_spec("qwen3-next-80b-a3b-instruct"), finetune="lora", lora_targets="g")


def test_a_gate_of_its_own_with_a_bias_per_head_is_the_g_target():
    """Beam's gate_proj (d → heads · head_dim, beside q_proj, gate_bias one value per head) is
    calc's g target and not part of q, as PEFT adapts the two modules apart; all-linear takes
    it beside q, k, v, o, the dense MLPs and the router-free experts' neighbours (a small
    BeamConfig: no released config, tests/test_hf.py UNRELEASED)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build

    config = {"model_type": "beam", "hidden_size": 32, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 8, "num_hidden_layers": 4,
              "intermediate_size": 48, "moe_intermediate_size": 16, "num_experts": 4,
              "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "vocab_size": 64}
    spec, model = spec_from_hf_config(config), build(config)
    targets = {**ATTENTION, "g": r"self_attn\.gate_proj$", "up": r"mlp\.up_proj$",
               "gate": r"mlp\.gate_proj$", "down": r"mlp\.down_proj$"}
    _assert_adapters_as_peft_builds_them(spec, model, targets)
    all_linear = count_adapters(spec, FineTune(method="lora", rank=RANK, targets="all-linear"))
    assert set(all_linear.targets) == set(targets)


@pytest.mark.parametrize(("name", "targets", "message"), [
    ("mamba-130m-hf", "q,v", "has no 'q' projection (it has no attention layers)"),
    ("mamba-codestral-7b-v0.1", "x_proj", "has no 'x_proj' projection"),
    ("llama-3.1-8b", "in_proj", "has no 'in_proj' projection"),
    ("lfm2-1.2b", "experts", "has no 'experts' projection"),
    ("rwkv-4-169m-pile", "up", "its FFN is RWKV's channel-mix, whose matrices are key and value"),
    ("llama-3.1-8b", "linear_y", "has no 'linear_y' projection (no mixer with that projection)"),
])
def test_a_target_the_model_lacks_is_one_line(name, targets, message):
    with pytest.raises(calc.CalcError, match=re.escape(message)) as error:
        calc.memory(_spec(name), finetune="lora", lora_targets=targets)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("name", ["mamba-130m-hf", "qwen3-next-80b-a3b-instruct",
                                  "ai21-jamba-1.5-mini"])
def test_qlora_on_mixer_layers_fits_and_quantises_their_projections(name):
    spec = _spec(name)
    m = calc.memory(spec, gpu="h100", finetune="qlora", lora_rank=RANK,
                    lora_targets="all-linear", seq_len=2048, recompute="full").memory
    full = calc.memory(spec, gpu="h100", seq_len=2048, recompute="full").memory
    assert m.finetune.quantised > 0 and m.total_bytes < full.total_bytes
    # the mixers' projections are among the 4-bit weights: everything but embeddings, head,
    # norms, biases, conv kernels and the scan's A, D and Δ biases
    counts = calc.count_params(spec)
    assert m.finetune.quantised > 0.9 * (counts.total - counts.embedding
                                         - counts.components["lm_head"])


def test_lora_on_layers_of_one_kind_with_query_heads_of_their_own():
    """Laguna's sliding layers with more query heads than its full ones (attention.kind_shapes,
    read from num_attention_heads_per_layer): q, o and g_proj adapters of each layer's own
    width, k and v alike, as PEFT builds them on transformers' model; the step's adapter
    terms and all-linear's count agree."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build

    types = ["full_attention", "sliding_attention", "sliding_attention"]
    config = {"model_type": "laguna", "hidden_size": 64, "num_hidden_layers": 3,
              "num_attention_heads": 4, "num_attention_heads_per_layer": [4, 8, 8],
              "num_key_value_heads": 2, "head_dim": 8, "layer_types": types,
              "intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
              "moe_intermediate_size": 8, "shared_expert_intermediate_size": 8,
              "vocab_size": 64}
    spec, model = spec_from_hf_config(config), build(config)
    assert spec.attention.kind_shapes["local"].n_heads == 8
    patterns = {**ATTENTION, "g": r"self_attn\.g_proj$"}
    _assert_adapters_as_peft_builds_them(spec, model, patterns)


def test_lora_on_gemma4_kv_shared_and_keys_as_values():
    """Gemma 4's unified language model: the full layers' keys are their values (no v_proj)
    and the last layers have no k_proj or v_proj of their own (num_kv_shared_layers), their
    MLP twice as wide (use_double_wide_mlp): each target's adapters as PEFT builds them on
    transformers' model, the step's adapter terms and all-linear's count agree."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build

    config = {"model_type": "gemma4_unified_text", "vocab_size": 64, "hidden_size": 32,
              "intermediate_size": 24, "num_hidden_layers": 8, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 8, "global_head_dim": 16,
              "attention_k_eq_v": True, "num_global_key_value_heads": 1,
              "num_kv_shared_layers": 2, "use_double_wide_mlp": True, "sliding_window": 8}
    spec, model = spec_from_hf_config(config), build(config)
    assert spec.attention.kv_shared_layers == 2 and spec.double_wide_layers == 2
    patterns = {**ATTENTION, "up": r"mlp\.up_proj$", "gate": r"mlp\.gate_proj$",
                "down": r"mlp\.down_proj$"}
    _assert_adapters_as_peft_builds_them(spec, model, patterns)


# A Gemma 4 drafter (gemma4_assistant, transformers 5.24.0): 3 sliding : 1 full layers, all
# reading the target's keys, a 12-wide target and a centroid head of 4 clusters, top 2
GEMMA4_DRAFTER = {"model_type": "gemma4_assistant", "backbone_hidden_size": 12,
                  "use_ordered_embeddings": True, "num_centroids": 4,
                  "centroid_intermediate_top_k": 2, "text_config": {
                      "model_type": "gemma4_text", "vocab_size": 32, "hidden_size": 16,
                      "intermediate_size": 24, "num_hidden_layers": 4, "num_attention_heads": 4,
                      "num_key_value_heads": 1, "head_dim": 8, "global_head_dim": 16,
                      "hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 0,
                      "num_kv_shared_layers": 4, "sliding_window": 8,
                      "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}}


def test_lora_on_a_gemma4_drafter_as_peft_builds_it():
    """pre_projection, post_projection and the centroid head's centroids (nn.Linear modules
    PEFT's all-linear adapts; the layers have no k_proj or v_proj) as PEFT builds their
    adapters on transformers' Gemma4AssistantForCausalLM, the step's adapter terms and
    all-linear's count; and on calc's reference model, trainable parameters and FLOPs."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build

    spec, model = spec_from_hf_config(GEMMA4_DRAFTER), build(GEMMA4_DRAFTER)
    patterns = {"q": ATTENTION["q"], "o": ATTENTION["o"], "pre_projection": r"^pre_projection$",
                "post_projection": r"^post_projection$",
                "centroids": r"masked_embedding\.centroids$"}
    _assert_adapters_as_peft_builds_them(spec, model, patterns)
    with pytest.raises(calc.CalcError, match="has no 'k' projection"):
        calc.memory(spec, finetune="lora", lora_targets="k")
    assert_adapters_as_the_reference_model_counts(spec, ("pre_projection", "centroids", "q"))
    assert_adapters_as_the_reference_model_counts(spec, "all-linear")


def test_drafter_targets_are_refused_without_a_drafter():
    spec = calc.load_preset("llama3-8b").spec
    for target, why in (("pre_projection", "not a drafter"), ("centroids", "no centroids")):
        with pytest.raises(calc.CalcError, match=why):
            calc.memory(spec, finetune="lora", lora_targets=target)


@pytest.mark.parametrize("targets", ["all-linear", ("key",), ("value", "output"),
                                     ("receptance",)])
def test_rwkv_adapters_match_the_reference_model(targets):
    """Adapters on the reference model's time-mix, its channel-mix's receptance and the FFN
    that is the channel-mix's key and value: trainable parameters and forward FLOPs exact."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config({"model_type": "rwkv", "vocab_size": 11, "hidden_size": 6,
                                "num_hidden_layers": 2, "attention_hidden_size": 4,
                                "intermediate_size": 10, "context_length": 16})
    assert_adapters_as_the_reference_model_counts(spec, targets)


@pytest.mark.parametrize("targets", ["all-linear", ("linear_y",), ("linear_x", "linear_out"),
                                     ("q", "v", "up")])
def test_griffin_adapters_match_the_reference_model(targets):
    """Adapters on the reference model's recurrent blocks (linear_y, linear_x, linear_out)
    beside its local-attention layers and biased MLPs: trainable parameters and forward FLOPs
    exact, and the step's adapter terms agree with the counts."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config
    from calc.timing.finetune import adapter_terms

    spec = spec_from_hf_config({"model_type": "recurrent_gemma", "vocab_size": 11,
                                "hidden_size": 8, "num_hidden_layers": 3,
                                "num_attention_heads": 2, "num_key_value_heads": 1,
                                "lru_width": 6, "intermediate_size": 10})
    ours = assert_adapters_as_the_reference_model_counts(spec, targets)
    terms = adapter_terms(spec, ours.targets)
    assert sum(2 * (t.inputs + t.outputs) for t in terms) == ours.adapters_active


@pytest.mark.parametrize("targets", ["all-linear", ("q", "v"), ("igate_preact", "out_proj"),
                                     ("k", "ogate_preact", "fgate_preact", "gate")])
def test_mlstm_adapters_match_the_reference_model(targets):
    """Adapters on the reference model's mLSTM (q, k, v, the three gate projections, out_proj)
    and SwiGLU FFN: trainable parameters and forward FLOPs exact, and the step's adapter terms
    agree with the counts."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config
    from calc.timing.finetune import adapter_terms

    spec = spec_from_hf_config({"model_type": "xlstm", "vocab_size": 11, "hidden_size": 16,
                                "num_hidden_layers": 2, "num_heads": 2})
    ours = assert_adapters_as_the_reference_model_counts(spec, targets)
    terms = adapter_terms(spec, ours.targets)
    assert sum(2 * (t.inputs + t.outputs) for t in terms) == ours.adapters_active


def test_mlstm_q_beside_attention_takes_both_matrices():
    """q names attention's W_Q and the mLSTM's q alike (PEFT selects both by name): on a spec
    with both, its adapters are each layer's own matrix, and the step's terms agree."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config
    from calc.timing.finetune import adapter_terms

    spec = spec_from_hf_config({"model_type": "xlstm", "vocab_size": 11, "hidden_size": 16,
                                "num_hidden_layers": 3, "num_heads": 2}).updated(**{
        "layers.mixer_pattern": ("mlstm", "attention"), "attention.n_heads": 4,
        "position.kind": "rope"})
    ours = assert_adapters_as_the_reference_model_counts(spec, ("q",))
    # r · (two mLSTM q of d → d/2, one W_Q of d → 4 heads of d/4)
    assert ours.trainable == 2 * (2 * (16 + 8) + 1 * (16 + 16))
    terms = adapter_terms(spec, ours.targets)
    assert sum(2 * (t.inputs + t.outputs) for t in terms) == ours.adapters_active


def test_rwkv_adapters_refuse_other_layers_in_one_line():
    spec = _spec("rwkv-4-169m-pile").updated(**{"layers.mixer_pattern": ("rwkv", "attention")})
    with pytest.raises(calc.CalcError, match="beside other layers or FFNs") as error:
        calc.memory(spec, finetune="lora", lora_targets="key")
    assert "\n" not in str(error.value)


def _assert_adapters_as_peft_builds_them(spec, model, patterns: dict[str, str]) -> None:
    """Each target's adapters as PEFT builds them on transformers' `model` (modules matching
    its pattern), the step's adapter terms, and all-linear's count."""
    from calc.timing.finetune import adapter_terms
    from calc.verify.hf_reference import lora_parameters

    for target, pattern in patterns.items():
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        assert counts.by_target == {f"lora/{target}": lora_parameters(model, RANK, pattern)}, \
            target
        term, = adapter_terms(spec, (target,))
        assert RANK * (term.inputs + term.outputs) == counts.adapters_active, target
    counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets="all-linear"))
    assert counts.trainable == lora_parameters(model, RANK)


HY_V4 = {"model_type": "hy_v4", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 24,
         "moe_intermediate_size": 8, "num_hidden_layers": 3, "num_attention_heads": 4,
         "n_routed_experts": 4, "num_experts_per_tok": 2, "q_lora_rank": 16,
         "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
         "index_n_heads": 2, "index_head_dim": 8, "index_topk": 4, "hc_mult": 3,
         "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def test_lora_on_hy_v4_as_peft_builds_it():
    """HunYuan V4: o_proj, and the dense and shared MLPs' up and down projections, as PEFT
    builds their adapters on transformers' model; the hyper-connections' maps are parameters,
    not nn.Linear modules, so no target touches them; `gate` (PEFT's gate_proj would take the
    attention's output gate too) is refused in one line."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build, lora_parameters

    spec, model = spec_from_hf_config(HY_V4), build(HY_V4)
    for target, pattern in {"o": ATTENTION["o"], "up": r"(mlp|shared_experts)\.up_proj$",
                            "down": r"(mlp|shared_experts)\.down_proj$"}.items():
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        assert counts.by_target == {f"lora/{target}": lora_parameters(model, RANK, pattern)}
    with pytest.raises(calc.CalcError, match="gate_proj") as error:
        calc.memory(spec, finetune="lora", lora_targets="gate")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("targets, dense", [(("o",), False), (("o", "up", "down"), True)])
def test_hy_v4_adapters_match_the_reference_model(targets, dense):
    """Adapters on the reference model with hyper-connections (its MLPs dense where the
    adapters sit on them: the reference model adapts no stacked expert weights): trainable
    parameters and forward FLOPs exact."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config({**HY_V4, **({"mlp_layer_types": ["dense"] * 3} if dense
                                            else {})})
    assert_adapters_as_the_reference_model_counts(spec, targets)


# Gemma 4's per-layer embeddings (gemma4_text, transformers 5.24.0): a small model with them,
# kv-shared layers and keys as values on its full layers
GEMMA4_PLE = {"model_type": "gemma4_text", "vocab_size": 48, "hidden_size": 32,
              "intermediate_size": 24, "num_hidden_layers": 4, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 8, "global_head_dim": 16,
              "sliding_window": 8, "hidden_size_per_layer_input": 6,
              "vocab_size_per_layer_input": 40, "num_kv_shared_layers": 1,
              "attention_k_eq_v": True, "layer_types": ["sliding_attention", "full_attention",
                                                        "sliding_attention", "full_attention"]}


def test_per_layer_embedding_targets_are_peft_on_transformers():
    """per_layer_input_gate, per_layer_projection and per_layer_model_projection (PEFT's names
    of Gemma4TextDecoderLayer's and Gemma4TextModel's nn.Linear modules) one by one and under
    all-linear against PEFT's count on transformers' model, and on calc's reference model its
    trainable parameters and forward FLOPs."""
    from calc.hf import spec_from_hf_config
    from calc.spec.finetune import PER_LAYER_TARGETS
    from calc.verify.hf_reference import build, lora_parameters

    spec, model = spec_from_hf_config(GEMMA4_PLE), build(GEMMA4_PLE)
    for target in PER_LAYER_TARGETS:
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        assert counts.by_target == {
            f"lora/{target}": lora_parameters(model, RANK, rf"\.{target}$")}, target
    counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets="all-linear"))
    assert counts.trainable == lora_parameters(model, RANK)
    assert set(PER_LAYER_TARGETS) <= set(counts.targets)
    assert_adapters_as_the_reference_model_counts(spec, (*PER_LAYER_TARGETS, "q", "o"))


def test_per_layer_targets_need_per_layer_embeddings_and_gemma4_routers_refuse_all_linear():
    from calc.errors import CalcError
    from calc.hf import spec_from_hf_config

    with pytest.raises(CalcError, match="it has no per-layer embeddings"):
        count_adapters(_spec("qwen3-next-80b-a3b-instruct"),
                       FineTune(method="lora", rank=RANK, targets=("per_layer_projection",)))
    moe = spec_from_hf_config({**GEMMA4_PLE, "num_kv_shared_layers": 0, "enable_moe_block": True,
                               "num_experts": 4, "top_k_experts": 2,
                               "moe_intermediate_size": 8})
    with pytest.raises(CalcError, match=r"router projection is an nn.Linear"):
        count_adapters(moe, FineTune(method="lora", rank=RANK, targets="all-linear"))


AXK2 = {"model_type": "axk2", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 24,
        "moe_intermediate_size": 8, "num_hidden_layers": 3, "num_attention_heads": 4,
        "num_key_value_heads": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4,
        "v_head_dim": 8, "index_n_heads": 2, "index_head_dim": 8, "index_topk": 4,
        "gated_norm_rank": 3, "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def test_lora_on_axk2_as_peft_builds_it():
    """A.X-K2: o_proj and the dense and shared MLPs' gate_proj (its output gate is part of
    q_gate_proj, which PEFT's gate_proj does not select), as PEFT builds their adapters on
    transformers' model; all-linear would adapt the gated norms' fc1 and fc2, and is refused
    in one line (beside MLA's own refusal)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build, lora_parameters

    spec, model = spec_from_hf_config(AXK2), build(AXK2)
    counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=("o", "gate")))
    assert counts.by_target == {
        "lora/o": lora_parameters(model, RANK, ATTENTION["o"]),
        "lora/gate": lora_parameters(model, RANK, r"(mlp|shared_experts)\.gate_proj$")}
    # all-linear: refused for MLA first; without MLA for the gated norms' fc1/fc2
    gated = _spec("llama-3.1-8b").updated(**{"norm.gate_rank": 16})
    with pytest.raises(calc.CalcError, match=r"gated norms \(norm.gate_rank\)") as error:
        calc.memory(gated, finetune="lora", lora_targets="all-linear")
    assert "\n" not in str(error.value)


def test_axk2_adapters_match_the_reference_model():
    """Adapters on the reference model's o and dense MLPs beside the latent gate and the gated
    norms: trainable parameters and forward FLOPs exact."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config({**AXK2, "mlp_layer_types": ["dense"] * 3})
    assert_adapters_as_the_reference_model_counts(spec, ("o", "up", "gate", "down"))


DOTS3 = {"model_type": "dots3_note_text", "vocab_size": 64, "hidden_size": 32,
         "intermediate_size": 24, "moe_intermediate_size": 8, "num_hidden_layers": 4,
         "num_attention_heads": 4, "num_key_value_heads": 4, "n_routed_experts": 4,
         "num_experts_per_tok": 2, "q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 8,
         "qk_rope_head_dim": 4, "v_head_dim": 8, "head_dim": 12, "index_n_heads": 2,
         "index_head_dim": 8, "index_topk": 4, "shared_experts_intermediate_size": 6,
         "layer_types": ["indexed_attention", "sliding_attention", "sliding_attention",
                         "indexed_attention"], "sliding_window": 8,
         "swa_num_attention_heads": 2, "swa_num_key_value_heads": 2, "swa_q_lora_rank": 12,
         "swa_kv_lora_rank": 6, "swa_head_dim": 10, "swa_qk_nope_head_dim": 6,
         "swa_v_head_dim": 5, "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def test_lora_on_dots3_as_peft_builds_it():
    """dots3: o_proj and g_proj with each kind's own heads (the sliding layers' 2 heads of 5
    values, the indexed ones' 4 of 8) and the MLPs' gate_proj, as PEFT builds their adapters
    on transformers' model."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build, lora_parameters

    spec, model = spec_from_hf_config(DOTS3), build(DOTS3)
    counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=("o", "g", "gate")))
    assert counts.by_target == {
        "lora/o": lora_parameters(model, RANK, ATTENTION["o"]),
        "lora/g": lora_parameters(model, RANK, r"self_attn\.g_proj$"),
        "lora/gate": lora_parameters(model, RANK, r"(mlp|shared_experts)\.gate_proj$")}


def test_dots3_adapters_match_the_reference_model():
    """Adapters on o, g and the dense MLPs beside a kind's own latent attention: trainable
    parameters and forward FLOPs exact in calc's reference model."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config({**DOTS3, "mlp_layer_types": ["dense"] * 4})
    assert_adapters_as_the_reference_model_counts(spec, ("o", "g", "up", "gate", "down"))


GEMMA3N = {"model_type": "gemma3n_text", "vocab_size": 64, "hidden_size": 32,
           "intermediate_size": 48, "num_hidden_layers": 5, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 8, "num_kv_shared_layers": 0,
           "vocab_size_per_layer_input": 40, "hidden_size_per_layer_input": 4,
           "altup_num_inputs": 3, "laurel_rank": 6, "pad_token_id": None,
           "bos_token_id": None, "eos_token_id": None}


def test_altup_and_laurel_targets_are_peft_on_transformers():
    """LAuReL's linear_left and linear_right and AltUp's modality_router, prediction_coefs,
    correction_coefs and the model's altup_projections and altup_unembed_projections
    (Gemma3nTextLaurelBlock's, Gemma3nTextAltUp's and Gemma3nTextModel's nn.Linear modules)
    one by one and under all-linear against PEFT's count on transformers' model, and on
    calc's reference model their trainable parameters and forward FLOPs (the router's adapter
    runs twice a layer). Rank 3: calc refuses a rank above a matrix's larger side, and the
    correction coefficients are n × n (3 × 3 here; Gemma 3n's 4 × 4)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.spec.finetune import ALTUP_TARGETS, LAUREL_TARGETS
    from calc.verify.hf_reference import build, lora_parameters

    spec, model = spec_from_hf_config(GEMMA3N), build(GEMMA3N)
    for target in (*LAUREL_TARGETS, *ALTUP_TARGETS):
        counts = count_adapters(spec, FineTune(method="lora", rank=3, targets=(target,)))
        assert counts.by_target == {
            f"lora/{target}": lora_parameters(model, 3, rf"\.{target}(\.\d+)?$")}, target
    counts = count_adapters(spec, FineTune(method="lora", rank=3, targets="all-linear"))
    assert counts.trainable == lora_parameters(model, 3)
    assert set(LAUREL_TARGETS) | set(ALTUP_TARGETS) <= set(counts.targets)
    assert_adapters_as_the_reference_model_counts(spec, (*LAUREL_TARGETS, *ALTUP_TARGETS, "q"))
    with pytest.raises(calc.CalcError, match="it has no LAuReL blocks"):
        count_adapters(_spec("llama-3.1-8b"),
                       FineTune(method="lora", rank=RANK, targets=("linear_left",)))


def test_lora_on_modernbert_decoder_as_peft_builds_it():
    """ModernBERT's decoder: q_proj, k_proj, v_proj and the attention's and MLP's Wo as PEFT
    builds their adapters on transformers' model; its fused Wi (d → 2·d_ff) takes calc's one
    adapter per part for up and gate (r·d more than PEFT's one on Wi, as for a fused QKV:
    docs/finetune.md); all-linear is refused beside the prediction head's dense."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build, lora_parameters

    config = {"model_type": "modernbert-decoder", "vocab_size": 64, "hidden_size": 32,
              "intermediate_size": 24, "num_hidden_layers": 3, "num_attention_heads": 4,
              "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0, "cls_token_id": 0,
              "sep_token_id": 0}
    spec, model = spec_from_hf_config(config), build(config)
    targets = {"q": r"attn\.q_proj$", "k": r"attn\.k_proj$", "v": r"attn\.v_proj$",
               "o": r"attn\.Wo$", "down": r"mlp\.Wo$"}
    for target, pattern in targets.items():
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        assert counts.by_target == {f"lora/{target}": lora_parameters(model, RANK, pattern)}
    fused = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=("up", "gate")))
    assert fused.trainable == lora_parameters(model, RANK, r"mlp\.Wi$") + 3 * RANK * 32
    with pytest.raises(calc.CalcError, match=re.escape("prediction head has its own dense")):
        count_adapters(spec, FineTune(method="lora", rank=RANK, targets="all-linear"))


def test_lora_on_cpmant_as_peft_builds_it():
    """CPM-Ant's project_q/k/v, attention_out, w_0 (GELU gate), w_1 and w_out are calc's q, k,
    v, o, gate, up and down, as PEFT adapts them on transformers' model, and all-linear every
    one of them (the bias table is a parameter, not an nn.Linear)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build

    config = {"model_type": "cpmant", "vocab_size": 64, "hidden_size": 32, "dim_head": 8,
              "num_attention_heads": 4, "dim_ff": 24, "num_hidden_layers": 2,
              "position_bias_num_buckets": 8, "prompt_types": 3, "prompt_length": 2,
              "segment_types": 3}
    spec, model = spec_from_hf_config(config), build(config)
    targets = {"q": r"project_q$", "k": r"project_k$", "v": r"project_v$",
               "o": r"attention_out$", "gate": r"w_in\.w_0$", "up": r"w_in\.w_1$",
               "down": r"ffn\.w_out$"}
    _assert_adapters_as_peft_builds_them(spec, model, targets)


def test_lora_on_doge_as_peft_builds_it():
    """Doge's q, k, v, o_proj, its dynamic mask's dt_proj (h_kv·d_h → h_kv) and the MLP's
    gate, up and down_proj are calc's targets as PEFT adapts them, all-linear every one; with
    is_moe the product-key experts are embedding rows (no `experts` target) and all-linear
    is refused for the router_gate nn.Linear, while the shared MLP keeps its targets."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build, lora_parameters

    config = {"model_type": "doge", "vocab_size": 64, "hidden_size": 32,
              "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24,
              "num_hidden_layers": 2, "keep_window_size": 4}
    spec, model = spec_from_hf_config(config), build(config)
    targets = {name: rf"{name}_proj$" for name in ("q", "k", "v", "o", "gate", "up", "down")}
    _assert_adapters_as_peft_builds_them(spec, model, {**targets, "dt_proj": r"dt_proj$"})
    moe_config = {**config, "is_moe": True, "num_experts": 16, "num_experts_per_tok": 3}
    spec, model = spec_from_hf_config(moe_config), build(moe_config)
    for target in ("up", "gate", "down", "dt_proj"):
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        assert counts.trainable == lora_parameters(model, RANK, rf"{target}$"
                                                   if target == "dt_proj" else
                                                   rf"{target}_proj$")
    with pytest.raises(calc.CalcError, match="router_gate"):
        count_adapters(spec, FineTune(method="lora", rank=RANK, targets="all-linear"))
    with pytest.raises(calc.CalcError, match="rows of embedding tables"):
        count_adapters(spec, FineTune(method="lora", rank=RANK, targets=("experts",)))


INKLING = {"model_type": "inkling_text", "vocab_size": 64, "hidden_size": 32,
           "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 8, "swa_num_attention_heads": 8, "swa_num_key_value_heads": 4,
           "swa_head_dim": 4, "sliding_window_size": 8, "rel_extent": 12, "d_rel": 4,
           "intermediate_size": 48, "moe_intermediate_size": 16, "n_routed_experts": 4,
           "num_experts_per_tok": 2, "n_shared_experts": 2, "dense_mlp_idx": 1,
           "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def test_lora_on_inkling_as_peft_builds_it():
    """Inkling's r_proj is the r target beside q, k, v, o (the sliding layers' with their own
    heads), its dense MLP's projections up, gate and down; its shared experts, stacked
    parameters weighed by the router (InklingSharedExperts), take no adapter, and all-linear
    is every nn.Linear of its layers."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build

    spec, model = spec_from_hf_config(INKLING), build(INKLING)
    targets = {**ATTENTION, "r": r"self_attn\.r_proj$", "up": r"mlp\.up_proj$",
               "gate": r"mlp\.gate_proj$", "down": r"mlp\.down_proj$"}
    _assert_adapters_as_peft_builds_them(spec, model, targets)
    with pytest.raises(calc.CalcError, match=re.escape("no relative bias projected per token")):
        count_adapters(_spec("llama-3.1-8b"), FineTune(method="lora", rank=RANK, targets=("r",)))


def test_inkling_adapters_match_the_reference_model():
    """Adapters on the reference model's q, k, v, o and r_proj beside the relative bias'
    bank and the residual convolutions: trainable parameters and forward FLOPs exact."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config(INKLING)
    assert_adapters_as_the_reference_model_counts(spec, ("q", "k", "v", "o", "r"))


INKLING2 = {"model_type": "inkling2_text", "vocab_size": 64, "unpadded_vocab_size": 60,
            "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "swa_num_attention_heads": 2,
            "swa_num_key_value_heads": 1, "swa_head_dim": 4, "sliding_window_size": 8,
            "rel_extent": 12, "d_rel": 4, "moe_intermediate_size": 16, "n_routed_experts": 4,
            "num_experts_per_tok": 2, "n_layers_per_attn_res_block": 2,
            "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding"],
            "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def test_lora_on_inkling2_as_peft_builds_it():
    """Inkling 2's projections sit inside modules of their own (Inkling2QueryProjection's
    linear, Inkling2GatedOutputProjection's gate_proj and linear, the relative bias' linear):
    each calc target's adapters equal PEFT's on the modules it names, sink_proj the target
    sink; all-linear, which would also adapt the full layers' weight_proj (no calc target), is
    refused."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build, lora_parameters

    spec, model = spec_from_hf_config(INKLING2), build(INKLING2)
    targets = {"q": r"q_proj\.linear$", "k": r"k_proj\.linear$", "v": r"v_proj\.linear$",
               "o": r"o_proj\.linear$", "g": r"o_proj\.gate_proj$",
               "r": r"relative_position_bias\.linear$", "sink": r"self_attn\.sink_proj$"}
    for target, pattern in targets.items():
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        assert counts.by_target == {f"lora/{target}": lora_parameters(model, RANK, pattern)}, \
            target
    with pytest.raises(calc.CalcError, match=re.escape("residual_conv_taps: weight_proj")):
        count_adapters(spec, FineTune(method="lora", rank=RANK, targets="all-linear"))


def test_inkling2_adapters_match_the_reference_model():
    """Adapters on the reference model's q, k, v (the full layers' k_proj and v_proj apart, as
    their inputs are), o, the own gate, r_proj and sink_proj beside the mixes over blocks and
    the per-token taps: trainable parameters and forward FLOPs exact."""
    pytest.importorskip("torch")
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config(INKLING2)
    assert_adapters_as_the_reference_model_counts(spec, ("q", "k", "v", "o", "g", "r", "sink"))


def test_sink_adapters_match_the_reference_model():
    """An adapter on Inkling 2's sink_proj d → h (attention.sink_proj), with a sliding kind of
    heads of its own: trainable parameters and forward FLOPs exact; a model without it says
    so in one line."""
    pytest.importorskip("torch")
    spec = calc.ModelSpec(
        name="sinks", vocab_size=11, d_model=16, n_layers=3, context_length=16,
        attention={"n_heads": 4, "n_kv_heads": 2, "head_dim": 4, "sliding_window": 3,
                   "layer_pattern": ("global", "local"), "sinks": True, "sink_proj": True,
                   "kind_shapes": {"local": {"n_heads": 2, "n_kv_heads": 1, "head_dim": 5}}},
        ffn={"activation": "swiglu", "d_ff": 8}, position={"kind": "rope"})
    ours = assert_adapters_as_the_reference_model_counts(spec, ("sink", "o"))
    assert ours.by_target["lora/sink"] == 2 * (2 * (16 + 4) + (16 + 2))
    with pytest.raises(calc.CalcError, match=re.escape("no sinks projected from the token")):
        count_adapters(_spec("llama-3.1-8b"), FineTune(method="lora", rank=RANK,
                                                       targets=("sink",)))


def test_lora_on_zaya_as_peft_builds_it():
    """ZAYA1: q_proj, k_proj and o_proj as PEFT builds their adapters on transformers' model
    and as calc's reference model runs them;
    v is refused (CCA's v_proj_current and v_proj_delayed, which PEFT's v_proj does not
    select), as is all-linear beside the MLP router's and the split values' nn.Linear."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build, lora_parameters

    config = {"model_type": "zaya", "vocab_size": 64, "hidden_size": 32, "head_dim": 8,
              "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
              "num_experts": 3, "moe_intermediate_size": 16, "router_hidden_size": 8,
              "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}
    spec, model = spec_from_hf_config(config), build(config)
    for target in ("q", "k", "o"):
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        pattern = rf"self_attn\.(qkv_proj\.)?{target}_proj$"
        assert counts.by_target == {f"lora/{target}": lora_parameters(model, RANK, pattern)}
        assert counts.by_target[f"lora/{target}"] > 0
    assert_adapters_as_the_reference_model_counts(spec, ("q", "k", "o"))
    with pytest.raises(calc.CalcError, match=re.escape("v_proj_current and v_proj_delayed")):
        count_adapters(spec, FineTune(method="lora", rank=RANK, targets=("v",)))
    with pytest.raises(calc.CalcError, match=re.escape("MLP router (moe.router_mlp)")):
        count_adapters(spec, FineTune(method="lora", rank=RANK, targets="all-linear"))


QWEN4_EXP = {"model_type": "qwen4_exp_text", "vocab_size": 64, "hidden_size": 32,
             "num_hidden_layers": 2, "layer_types": ["linear_attention", "indexed_attention"],
             "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
             "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
             "linear_value_head_dim": 8, "num_experts": 4, "num_experts_per_tok": 2,
             "moe_intermediate_size": 8, "shared_expert_intermediate_size": 12, "hc_count": 3,
             "hc_lowrank": 5, "indexer_n_heads": 2, "indexer_kv_heads": 1,
             "indexer_head_dim": 8, "indexer_budget": 4, "indexer_compress_ratio": 2,
             "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def test_lora_on_qwen4_exp_as_peft_builds_it():
    """Qwen4-Exp: the attention's q_proj, k_proj, v_proj and o_proj as PEFT builds their
    adapters on transformers' model (QSA's fused index_qk_proj is neither q_proj nor k_proj,
    unlike MiniMax-M3's indexer); all-linear would adapt the gated hyper-connection maps'
    nn.Linear modules, and is refused in one line."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify.hf_reference import build, lora_parameters

    spec, model = spec_from_hf_config(QWEN4_EXP), build(QWEN4_EXP)
    for target, pattern in ATTENTION.items():
        counts = count_adapters(spec, FineTune(method="lora", rank=RANK, targets=(target,)))
        assert counts.by_target == {f"lora/{target}": lora_parameters(model, RANK, pattern)}
    with pytest.raises(calc.CalcError, match="gated hyper-connection maps") as error:
        calc.memory(spec, finetune="lora", lora_targets="all-linear")
    assert "\n" not in str(error.value)
