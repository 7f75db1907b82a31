"""torchtune's memory recipes as run options: the optimizer in the backward (one gradient
resident, the largest parameter's) and activation offload (two checkpointed layers' inputs on
the GPU, the rest in pinned host memory), their refusals, and how the published torchtune rows
take them (calc.calibration.finetune)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import calc
from calc.calibration.finetune import run_options, unmodelled
from calc.evaluate import largest_parameter
from calc.hf import spec_from_hf_config
from calc.presets import load_finetune_runs
from calc.spec.finetune import LOSS_BYTES
from calc.spec.layout import ACTIVATION_OFFLOAD_LAYERS

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
LLAMA32_3B = calc.load_preset("llama3.2-3b").spec
# Llama 3.2 3B (meta-llama/Llama-3.2-3B config.json): V = 128,256, d = 3,072, 28 layers, tied
# embeddings; its largest tensor is the embedding.
EMBEDDING = 128_256 * 3_072
BASE = dict(seq_len=4096, micro_batch=2, recompute="full", framework="fsdp",
            recipe="pure-bf16")


def _memory(**options):
    return calc.memory("llama3.2-3b", **{**BASE, **options}).memory


def test_largest_parameter_of_llama_3_2_3b_is_its_tied_embedding():
    assert largest_parameter(LLAMA32_3B) == EMBEDDING == 394_002_432


def test_optimizer_in_backward_keeps_one_gradient_the_largest_parameters():
    full, one = _memory(), _memory(optimizer_in_backward=True)
    assert full.gradients_bytes == 2 * 3_212_749_824  # every bf16 gradient (Params 3.21B)
    assert one.gradients_bytes == 2 * EMBEDDING
    # nothing else moves: weights, optimizer states and activations are the same
    assert (one.weights_bytes, one.optimizer_bytes, one.activations_bytes) == (
        full.weights_bytes, full.optimizer_bytes, full.activations_bytes)


def test_optimizer_in_backward_under_fsdp_full_shard_keeps_the_largest_shard():
    one = calc.memory("llama3.2-3b", **{**BASE, "zero": 3, "dp": 8},
                      optimizer_in_backward=True).memory
    assert one.gradients_bytes == 2 * EMBEDDING // 8


def test_optimizer_in_backward_splits_with_tensor_parallelism():
    one = _memory(optimizer_in_backward=True, tp=2)
    assert one.gradients_bytes == 2 * EMBEDDING // 2


def test_activation_offload_keeps_two_layer_inputs_and_moves_the_rest_to_the_host():
    kept, offloaded = _memory(), _memory(activation_offload=True)
    checkpoint = 4096 * 2 * 3072 * 2  # s · b · d · 2 bytes, one layer's input
    assert kept.activations["layers"] == 28 * checkpoint
    assert ACTIVATION_OFFLOAD_LAYERS == 2
    assert offloaded.activations["layers"] == 2 * checkpoint
    assert offloaded.activations_host_bytes == 26 * checkpoint
    # the output head and loss stay (outside torchtune's offload)
    assert offloaded.activations["output"] == kept.activations["output"]
    assert kept.activations_host_bytes == 0
    assert kept.total_bytes - offloaded.total_bytes > 26 * checkpoint  # and its fragmentation


def test_activation_offload_of_a_model_with_fewer_layers_than_kept_moves_nothing():
    spec = LLAMA32_3B.model_copy(update={"n_layers": 1})
    spec = calc.ModelSpec(**spec.model_dump())
    offloaded = calc.memory(spec, **BASE, activation_offload=True).memory
    assert offloaded.activations_host_bytes == 0
    assert offloaded.activations["layers"] == 4096 * 2 * 3072 * 2


def test_recompute_auto_under_activation_offload_is_full():
    m = calc.memory("llama3.2-3b", gpu="a100", **{**BASE, "recompute": "auto"},
                    activation_offload=True).memory
    assert m.options.recompute == "full"


@pytest.mark.parametrize("argv, words", [
    (("step", "llama3.2-3b", "--gpu", "a100", "--global-batch", "8",
      "--optimizer-in-backward"), "optimizer_in_backward needs one micro-batch per step"),
    (("memory", "llama3.2-3b", "--zero", "1", "--dp", "2", "--optimizer-in-backward"),
     "optimizer_in_backward with zero=1 is not modelled"),
    (("memory", "llama3.2-3b", "--finetune", "lora", "--optimizer-in-backward"),
     "optimizer_in_backward with finetune='lora'"),
    (("memory", "llama3.2-3b", "--zero", "1", "--dp", "2", "--offload-optimizer", "cpu",
      "--optimizer-in-backward"), "zero=1"),
    (("memory", "llama3.2-3b", "--zero", "3", "--dp", "2", "--offload-optimizer", "cpu",
      "--optimizer-in-backward"), "offload_optimizer='cpu'"),
    (("memory", "mixtral-8x7b", "--optimizer-in-backward"), "largest parameter depends"),
    (("memory", "llama3.2-3b", "--activation-offload"),
     "activation_offload needs recompute='full' (got 'none')"),
    (("memory", "llama3.2-3b", "--activation-offload", "--recompute", "full", "--pp", "2"),
     "activation_offload with pp=2 is not modelled"),
])
def test_refusals_are_one_line(cli, argv, words):
    result = cli(*argv)
    assert result.code == 2, result.err
    assert words in result.err
    assert len(result.err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["llama-3.2-3b", "mistral-7b-v0.1", "qwen3-4b"])
@pytest.mark.parametrize("vocab", [None, 1000])  # with 1,000 tokens an FFN matrix is largest
def test_largest_parameter_equals_transformers_largest_tensor(name, vocab):
    torch = pytest.importorskip("torch")
    from calc.verify import hf_reference

    config = json.loads((CONFIGS / f"{name}.json").read_text())
    if vocab is not None:
        config = {**config, "vocab_size": vocab}
    spec = spec_from_hf_config(config)
    model = hf_reference.build(config)
    assert isinstance(next(model.parameters()), torch.Tensor)
    assert largest_parameter(spec) == max(p.numel() for p in model.parameters())


def test_largest_parameter_counts_a_kinds_own_heads():
    """A kind with heads of its own (attention.kind_shapes) can hold the largest matrix: 1,000
    tokens, no FFN larger, 64 query heads of 128 on the global layers against the model's 8."""
    spec = calc.load_preset("llama3.1-8b").spec.updated(**{
        "vocab_size": 1000, "ffn.d_ff": 256, "attention.n_heads": 8, "attention.n_kv_heads": 8,
        "attention.head_dim": 128, "attention.sliding_window": 128,
        "attention.layer_pattern": ("local", "global"),
        "attention.kind_shapes": {"global": {"n_heads": 64}}})
    assert largest_parameter(spec) == 4096 * 64 * 128


def test_torchtune_rows_take_the_options_their_settings_name():
    runs = load_finetune_runs()
    oib = runs["torchtune-llama3.2-3b-optimizer-in-backward-a100"]
    offload = runs["torchtune-llama3.2-3b-activation-offload-a100"]
    assert run_options(oib)["optimizer_in_backward"] is True
    assert "activation_offload" not in run_options(oib)
    assert run_options(offload)["activation_offload"] is True
    assert unmodelled(offload) == [] and unmodelled(offload, "time") == ["torch.compile"]
    # Unsloth's own offloaded checkpointing is not torchtune's: still listed, not priced
    unsloth = next(r for r in runs.values() if r.stack == "unsloth" and r.activation_offload)
    assert "activation offload" in unmodelled(unsloth)
    assert "activation_offload" not in run_options(unsloth)


def test_bf16_true_rows_keep_torch_adamw_states_in_bf16():
    """torch.optim.AdamW makes m and v with zeros_like(param) (torch/optim/adam.py): on a model
    cast to bf16 they are bf16, as each file's header says of bf16-true."""
    torch = pytest.importorskip("torch")
    param = torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))
    param.grad = torch.zeros_like(param)
    optimizer = torch.optim.AdamW([param])
    optimizer.step()
    assert {t.dtype for t in optimizer.state[param].values() if t.numel() > 1} == {
        torch.bfloat16}
    runs = load_finetune_runs()
    assert run_options(runs["torchtune-llama3.2-3b-checkpointing-a100"])["optimizer"] == (
        "adamw-bf16")
    # bitsandbytes' 8-bit states are one byte whatever the parameter's dtype
    assert run_options(runs["torchtune-llama3.2-3b-adamw-8bit-a100"])["optimizer"] == "adam8bit"


def test_compiled_chunk_loss_saves_its_16_bit_input_and_no_fp32_logits():
    """What LOSS_BYTES['chunked-compiled'] stands on: torchtune's compute_cross_entropy
    (F.cross_entropy(logits.float(), labels, reduction='sum')) under torch.compile saves the
    chunk's bf16 logits, two fp32 values per token and the labels; eager saves fp32 logits."""
    import shutil

    torch = pytest.importorskip("torch")
    if shutil.which("g++") is None and shutil.which("cc") is None:
        pytest.skip("inductor on CPU needs a C++ compiler")
    import torch.nn.functional as F

    def compute_cross_entropy(logits, labels):
        return F.cross_entropy(logits.float(), labels, ignore_index=-100, reduction="sum")

    tokens, vocab = 64, 1000

    def saved_bytes(fn) -> dict:
        logits = torch.randn(tokens, vocab, dtype=torch.bfloat16, requires_grad=True)
        labels = torch.randint(0, vocab, (tokens,))
        found: dict = {}

        def pack(t):
            found[t.dtype] = found.get(t.dtype, 0) + t.numel() * t.element_size()
            return t
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = fn(logits, labels)
        loss.backward()
        return found

    compiled = saved_bytes(torch.compile(compute_cross_entropy))
    assert compiled[torch.bfloat16] == 2 * tokens * vocab  # the chunk itself
    assert compiled[torch.float32] == 2 * 4 * tokens  # max and log-sum-exp per token
    assert saved_bytes(compute_cross_entropy)[torch.float32] >= 4 * tokens * vocab  # eager
    assert LOSS_BYTES["chunked-compiled"] == 2 + 2 / 8 < LOSS_BYTES["chunked"]


def test_torchtune_compiled_chunked_rows_take_the_compiled_loss():
    runs = load_finetune_runs()
    checkpointed = runs["torchtune-llama3.2-3b-checkpointing-a100"]
    assert run_options(checkpointed)["loss"] == "chunked-compiled"
    assert unmodelled(checkpointed) == [] and unmodelled(checkpointed, "time") == [
        "torch.compile"]
    # compiled layers without recomputation keep what calc does not count
    assert "torch.compile" in unmodelled(runs["torchtune-llama3.2-3b-chunked-ce-a100"])


def test_the_layout_search_does_not_take_the_optimizer_in_backward():
    """The search proposes ZeRO 1-2 and accumulated micro-batches, which it rules out."""
    from calc.commands.layout import parser
    from calc.errors import CalcError

    with pytest.raises(CalcError, match="optimizer_in_backward are not taken by the search"):
        calc.layout("llama3.2-3b", gpu="a100", gpus=8, global_batch=64,
                    optimizer_in_backward=True)
    assert "--optimizer-in-backward" not in parser().format_help()
