"""Training memory of the most loaded GPU: `calc.memory("llama2-7b", gpu="a100", zero=3, dp=8)`.

Model states by precision recipe and ZeRO stage, activations after Korthikanti et al. 2022, the
total against the GPU's memory and the largest micro-batch that fits: the numbers of
calc.plan.memory, labelled.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from calc import counting
from calc.document import Document
from calc.errors import CalcError
from calc.plan.finetune import FineTuneBlock, finetune_defaults
from calc.plan.memory import MemoryBlock, least_recompute
from calc.plan.offload import OffloadBlock
from calc.plan.options import ConfigEcho, RunConfig, run_config, with_file
from calc.presets import Preset, context_note, resolve
from calc.spec import ModelSpec
from calc.spec.finetune import LOSS_NOTES, QUANTS
from calc.spec.gemm_precision import precision_sentence
from calc.spec.layers import MIXER_NAMES
from calc.spec.layout import ACTIVATION_OFFLOAD_LAYERS, ACTIVATION_OFFLOAD_SOURCE
from calc.spec.memory import OPTIMIZER_IN_BACKWARD_SOURCE, OPTIMIZERS, RECIPES, RESERVE, STACKS

# The options of the memory model: the layout's (its global batch aside), the model states',
# the offload's and the fine-tuning's (calc.plan.options).
SECTIONS = ("layout", "states", "offload", "finetune")


class MemoryReport(Document):
    model: str
    title: str
    source: str
    memory: MemoryBlock
    config: ConfigEcho | None = Field(None, description="the trainer config read (--from)")
    conventions: list[str]



# What --framework hf counts (calc.formulas.memory, proved by calc.verify.memory)
HF_ACTIVATIONS = ("Activations as transformers' Llama-style modules save them for the backward "
                  "(modeling_llama.py, 5.24: each RMSNorm's fp32 input, reciprocal RMS and "
                  "normalised copy, keys and values after repeat_kv under eager attention, "
                  "its fp32 softmax beside the 16-bit one, SDPA's flash log-sum-exp, the gated "
                  "MLP's activation output, the rotary tables, PEFT's fp32 adapter copies, "
                  "under QLoRA no input of a 4-bit projection (bitsandbytes 0.50.2); "
                  "MoE layers as its default grouped_mm experts and TopKRouter keep them "
                  "(integrations/moe.py: each of the k assignments' gathered input, expert "
                  "output and routing weight, the fp32 softmax; not a renormalised top-k's "
                  "fp32 values); `verify MODEL --memory` checks them tensor by tensor; the "
                  "other mixers as calc's fused-kernel count, not checked)")

def memory(model: str | ModelSpec | Preset | None = None, *, gpu: str | None = None,
           system: str | None = None, from_file: str | None = None,
           run: RunConfig | None = None, **options: Any) -> MemoryReport:
    """Training memory of the most loaded GPU for a preset name, spec file, ModelSpec or Preset.

    The options (a calc.plan.options.RunConfig `run`, or its options as keywords over it) are
    the layout's (seq_len, micro_batch, dtype, zero, dp, tp, pp, cp, ep, vpp,
    split_embedding_loss, recompute, sequence_parallel, flash_attention, dropout), the model
    states' (recipe, optimizer, precision), the fine-tuning's (`finetune` 'full', 'lora' or
    'qlora' with the adapters' `lora_rank` and `lora_targets` ('q,v', 'all-linear'), QLoRA's
    `base_dtype` (nf4, fp4) and `double_quant`, and `paged` optimizer states) and the
    offload's (`offload_optimizer` / `offload_params` 'cpu' or 'nvme': ZeRO-Offload,
    ZeRO-Infinity, checked against a node's host memory: `system`'s, default the GPU's own, or
    `host_memory_gib` with `gpus_per_node`). `from_file` reads a trainer config (DeepSpeed,
    Megatron-LM, torchtitan, axolotl, transformers; calc.trainers) whose settings the options
    given here override, and whose model is used when `model` is None. Bad input raises
    CalcError naming the field, the value and what is allowed.
    """
    given = run_config(run, **options)
    unused = sorted(set(given.given()) - set(given.given(*SECTIONS)))
    if unused:
        raise CalcError(f"memory: {', '.join(unused)} price a run, not its memory; allowed: "
                        f"the layout, model-state, offload and fine-tuning options")
    echo = None
    if from_file is not None:
        read = with_file(from_file, model, given)
        model, given, echo = read.model, read.run, read.echo
        layout = given.given("layout")
        parallel = layout.get("tp", 1) * layout.get("pp", 1) * layout.get("cp", 1)
        if read.gpus and "dp" not in layout and read.gpus % parallel == 0:
            given = RunConfig.from_options(dp=read.gpus // parallel).over(given)
    if model is None:
        raise CalcError(f"model: {from_file} names no model calc knows; give a preset name, "
                        f"spec file or config.json as MODEL")
    preset = resolve(model)
    spec = preset.spec
    given, defaults = finetune_defaults(given, spec)
    block = least_recompute(spec, gpu, given, system)
    opts = block.options
    notes = [*preset.notes, *filter(None, [context_note(spec, opts.seq_len, "s")]), *defaults]
    if given.given("layout").get("recompute") == "auto":
        notes.append(f"recompute auto: {opts.recompute}, "
                     + ("the least that fits." if block.fits else "and even that does not fit."))
    return MemoryReport(model=preset.name, title=preset.title, source=preset.source,
                        memory=block, config=echo,
                        conventions=[*notes, *conventions(block, "recipe" in given.given())])


def finetune_sentences(block: FineTuneBlock) -> list[str]:
    """The sentences printed under a fine-tuning's memory."""
    if block.method == "full":
        return [counting.FULL_FINETUNE]
    lines = [counting.lora_sentence(block.method, block.rank, block.targets),
             counting.FINETUNE_PASSES, counting.LORA_ACTIVATIONS]
    if block.method == "qlora":
        quant = QUANTS[block.frozen_dtype or "nf4"]
        lines.append(counting.qlora_sentence(quant.label, block.frozen_dtype or "nf4",
                                             bool(block.double_quant),
                                             block.bytes_per_frozen_weight or 0, quant.source))
    if block.paged:
        lines.append(counting.PAGED_OPTIMIZER)
    return lines


def loss_sentences(block: FineTuneBlock) -> list[str]:
    """How the loss holds the logits, when not Megatron-LM's way."""
    return ([f"Loss (--loss {block.loss}): {LOSS_NOTES[block.loss]}."]
            if block.loss != "fp32" else [])


def offload_sentence(block: OffloadBlock) -> str:
    """What the offload block counts, printed under the memory tables."""
    where = block.host_memory_source or "no system or host memory given: not checked"
    return (
        f"Offload (optimizer → {block.optimizer}, parameters → {block.params}): ZeRO-Offload "
        f"(Ren et al. 2021 §4.1) keeps the 16-bit weights on the GPU, streams the gradients to "
        f"the host from ZeRO stage 2 on (buckets not counted) and keeps the fp32 master "
        f"weights, optimizer states and fp32 gradients of the rank's partition there; "
        f"ZeRO-Infinity (Rajbhandari et al. 2021 §5) also the stage-3 parameter partitions, "
        f"with two of the largest gathered modules (a layer or the embedding) live on the GPU "
        f"(an assumption; DeepSpeed's prefetch and live-parameter limits set it). Host memory "
        f"per node: {block.gpus_per_node} GPUs × the per-GPU share, against {where}. Host-link "
        f"traffic: gradients down and weights up once per optimizer step (no weights up when "
        f"the parameters live off the GPU); parameter partitions up for the forward and the "
        f"backward of every micro-batch. Their time, the CPU optimizer step and NVMe swapping "
        f"are parts of `calc step --offload-optimizer/--offload-params` (docs/step-time.md).")


MIXERS_SENTENCE = (
    "{kinds} layers keep what their fused kernels save for the backward pass (the scan's "
    "states are recomputed from the saved inputs: Gu & Dao 2023 §3.3.2; Dao & Gu 2024 §6): "
    "Mamba-1 xz, the scan output, x_dbl and B, C (state-spaces/mamba MambaInnerFn); Mamba-2 "
    "zxbcdt and the scan output (MambaSplitConv1dScanCombinedFn); gated DeltaNet the conv "
    "input, q, k, v, β, g, the 64-token chunks' WY matrices and the gated norm's inputs "
    "(flash-linear-attention chunk_gated_delta_rule; Kimi Delta Attention's g one per key "
    "channel, and its low-rank gates' inputs); lightning attention its qkv projection before "
    "and after the SiLU, the kernel's output, the output gate before its sigmoid, the norm's "
    "output and out_proj's input (a chunked kernel that recomputes the states, as "
    "flash-linear-attention's chunk_simple_gla); RWKV k, v, the WKV kernel's output, "
    "sigmoid(r) and output's input (its CUDA kernel recomputes the states), the token shifts' "
    "inputs and mixes, and the channel-mix's gate and the FFN output it multiplies; Griffin's "
    "recurrent block linear_y's output and its GeLU, linear_x's output, the conv's output, the "
    "two gates, a_t, the scan's input and output and linear_out's input (the scan kernel "
    "recomputes the states); the mLSTM q, k, v, the kernel's output, the head norm's output, "
    "the sigmoid output gate, out_proj's input, the two gates and the kernel's normaliser and "
    "maximum per token (a chunkwise kernel that recomputes the memory, as mlstm_kernels'); a "
    "short "
    "convolution B, C, x, B⊙x, the "
    "conv output and out_proj's input; split t ways by heads or channels as Megatron-LM's "
    "MambaMixer and GatedDeltaNet and vLLM's MambaMixer and ShortConv split them "
    "(calc.formulas.mixers).")



def recipe_sentence(framework: str, dtype: str, given: bool) -> str:
    """Where the recipe comes from: the framework's own (calc.spec.memory.STACKS) or given."""
    own = STACKS[framework].recipes[dtype]
    if given:
        return f"given (--recipe); {framework}'s own for {dtype} is {own!r}"
    return f"{framework}'s own for {dtype} (calc.spec.memory.STACKS)"


def buffers_sentence(block: MemoryBlock) -> str:
    """What the buffers row counts, for the block's framework."""
    o = block.options
    return (f"Buffers as {o.framework} allocates them (calc.spec.memory.STACKS): DeepSpeed's "
            f"ZeRO gradient bucket, the 16-bit weights ZeRO-3/FSDP gathers (two layers, FSDP2's "
            f"prefetch; the whole stage under torchtitan with a pipeline) and one layer's "
            f"unsharded gradient, and the fp32 gradient of the fp32 logits at the loss (one-"
            f"stage pipelines; the last stage otherwise, not the most loaded); Megatron-LM's "
            f"buckets are views of its gradient buffer. Counted at the backward's peak, beside "
            f"the states and every activation.")


def recipe_sentences(block: MemoryBlock) -> list[str]:
    """DualPipe's placement and the memory-saving items of DeepSeek-V3's report, when used."""
    o, found = block.options, []
    if o.pipeline_schedule == "dualpipe":
        found.append(
            f"DualPipe (DeepSeek-V3 report §3.2.1, Table 2: 2× parameters, PP + 1 "
            f"activations): the first rank holds the first and the last stage, "
            f"{block.weight_layers} layers' parameters (mean layers, as every stage is "
            f"counted), the embedding and the output head, and p + 1 = {o.pp + 1} "
            f"micro-batches in flight, each counted through the first stage's "
            f"{block.stage_layers} layers.")
    if block.head_on_gpu and block.mtp_modules:
        found.append(
            "Multi-token prediction: its modules sit beside the output head with their own "
            "parameters and logits; the embedding and head "
            + ("shared with the main model (DeepSeek-V3 report §3.2.3)"
               if o.mtp_shared_embedding else "copied per module (--no-mtp-shared-embedding)")
            + ".")
    if o.recompute_norm_up:
        found.append(
            "Norms and MLA up-projections recomputed in the backward (DeepSeek-V3 report "
            "§3.2.3): the norms' outputs (the projections' inputs after them) and MLA's Q, K "
            "and V are not stored; the norms' inputs, MLA's latents and the shared RoPE key "
            "are. calc step prices the recomputation: the up-projections at the speed of the query "
            "and key/value products, the norms at HBM speed.")
    if o.optimizer_in_backward:
        found.append(
            "Optimizer in the backward: each parameter's optimizer steps in a hook as soon as "
            "autograd has accumulated its gradient, which is then freed, so one gradient is "
            "resident, counted as the largest parameter's (each weight matrix a tensor of its "
            "own; under ZeRO 3 / FSDP2 its shard; the states stay whole). No gradient "
            f"accumulation and no gradient clipping (torchtune refuses both). Sources: "
            f"{OPTIMIZER_IN_BACKWARD_SOURCE}.")
    if o.activation_offload:
        found.append(
            f"Activation offload: each checkpointed layer's input is copied to pinned host "
            f"memory as the forward saves it and brought back when the backward needs it; "
            f"{ACTIVATION_OFFLOAD_LAYERS} layers' inputs stay on the GPU (the layer being "
            f"recomputed and the one before it, freed when the next autograd node starts), the "
            f"output head's and the loss's tensors too (outside the offload), "
            f"{block.activations_host_bytes / counting.GIB:,.3g} GiB in host memory; the "
            f"copies run on a second stream, not priced in the step time. Source: "
            f"{ACTIVATION_OFFLOAD_SOURCE}.")
    if o.ema != "none":
        found.append(
            f"EMA of the parameters ({o.ema}): fp32, one value per parameter (the report does "
            f"not print its precision), sharded as the master weights; "
            + ("on the GPU." if o.ema == "device" else
               "in host memory, updated asynchronously (DeepSeek-V3 report §3.2.3): no GPU "
               "memory."))
    return found


def margin_sentence(block: MemoryBlock) -> str:
    """How the margin was set: given, or RESERVE's parts with their sources."""
    if "given" in block.margin:
        return (f"Margin {block.margin_bytes / counting.GIB:.3g} GiB as given (--memory-margin):"
                f" kept free beside the run; a run within it does not fit.")
    threads = (re.findall(r"[\w.-]+/[\w.-]+#\d+", r.source) for r in RESERVE.values())
    parts = ", ".join(dict.fromkeys(thread for found in threads for thread in found))
    return (f"Margin kept free beside the run, a run within it does not fit: the CUDA context, "
            f"one NCCL communicator for each parallel group of more than one rank "
            f"({', '.join(block.margin_groups) or 'none here'}; an expert-parallel group's "
            f"after its all-to-all) and the allocator's fragmentation as a share of what is "
            f"allocated (assumes PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True); "
            f"--memory-margin sets it. Measured in {parts} (calc.spec.memory.RESERVE).")


def conventions(block: MemoryBlock, recipe_given: bool = False) -> list[str]:
    """The sentences printed under the memory tables."""
    o = block.options
    recipe = RECIPES[o.recipe_name]
    optimizer = OPTIMIZERS[o.optimizer_kept(block.finetune.method != "full")]
    per_param = sum(block.bytes_per_param.values())
    zero = {0: "no ZeRO: every data-parallel rank holds all model states",
            1: "ZeRO stage 1: optimizer states, fp32 master weights and any fp32 gradient "
               "copy are split over the N_d = {dp} data-parallel ranks",
            2: "ZeRO stage 2: gradients too are split over the N_d = {dp} ranks",
            3: "ZeRO stage 3: weights too are split over the N_d = {dp} ranks"}[o.zero]
    scores = ("flash attention stores no s×s scores" if o.flash_attention else
              "eager attention stores the s×s scores (the 5·a·s/h term)")
    kept = {"none": scores,
            "selective": "selective recomputation recomputes the attention core (no s×s "
                         "scores kept)",
            "full": "full recomputation keeps only each layer's input, s·b·h·q_a bytes"}
    kv_heads = block.kv_heads
    kv = (f"with t > {kv_heads} KV heads each rank holds one whole KV head, each head "
          f"replicated t/{kv_heads} = {o.tp // kv_heads} times (as vLLM's QKVParallelLinear "
          f"does)" if o.tp > kv_heads else f"the {kv_heads} KV heads split t ways")
    sp = ("sequence parallelism splits norm inputs and dropout masks t ways"
          if o.sequence_parallel else
          "norm inputs and dropout masks are replicated on the t ranks (no sequence parallelism)")
    trained = ("" if block.finetune.method == "full" else
               " of each trained (adapter) parameter"
               + (", the adapters in fp32 (PEFT's autocast_adapter_dtype): 4-byte weights and "
                  "gradients, no fp32 copies" if o.stack.fp32_adapters else "")
               + "; the frozen base only its weights")
    k = block.bytes_per_param["master"] + block.bytes_per_param["optimizer_states"]
    return [
        f"Model states: recipe {o.recipe_name!r} ({recipe.label}) with {optimizer.label}: "
        f"{per_param:.4g} bytes per parameter before sharding{trained}; "
        f"{recipe_sentence(o.framework, o.dtype, recipe_given)}. Sources: {recipe.source}; "
        f"{optimizer.source}.",
        f"optimizer_bytes holds the optimizer states and the fp32 master weights (ZeRO's "
        f"K = {k:.4g}); "
        f"{zero.format(dp=o.dp)} (Rajbhandari et al. 2020 §5, Fig. 1).",
        f"Parallelism: the most loaded GPU holds the first pipeline stage's "
        f"{block.stage_layers} = ⌈L/p⌉ of the {block.layers} layers and the embedding (and "
        f"an untied LM head when p = 1), split t = {o.tp} ways, routed experts e = {o.ep} ways "
        f"more (Megatron-LM theoretical_memory_usage.py); {kv}; ZeRO shards over the "
        f"N_d·c = {o.dp * o.cp} data- and context-parallel ranks (experts over N_d·c/e); "
        f"context parallelism keeps s/c = {o.seq_len // o.cp:,} tokens of each sequence per GPU"
        + (f"; the interleaved schedule (v = {o.vpp}) keeps 1 + (p − 1)/(p·v) times the "
           f"activations in flight" if o.vpp > 1 else "") + ".",
        (HF_ACTIVATIONS if o.framework == "hf" else
         "Activations after Korthikanti et al. 2022 §4 (s·b·h·(34 + 5·a·s/h) per layer for "
         "2-byte activations, 1-byte dropout masks, a 4h GeLU MLP), each tensor at this "
         "model's widths") + f": {kept[o.recompute]}; "
        f"{'dropout masks stored' if o.dropout else 'no dropout'}; {sp}. Defaults are current "
        f"practice (flash attention, no dropout); the paper's setting is --paper-2022. The "
        f"first pipeline stage holds its layers for p micro-batches in flight (1F1B); the "
        f"embedding and output layer as "
        f"{'transformers keeps them' if o.framework == 'hf' else 'Megatron-LM counts them'}.",
        *([MIXERS_SENTENCE.format(kinds=", ".join(MIXER_NAMES[kind] for kind in
                                                  block.activations_per_mixer_bytes))]
          if block.activations_per_mixer_bytes else []),
        *recipe_sentences(block),
        buffers_sentence(block),
        margin_sentence(block),
        *(finetune_sentences(block.finetune) if block.finetune.method != "full" else []),
        *loss_sentences(block.finetune),
        *([precision_sentence(o.precision)] if o.precision != "bf16" else []),
        *([offload_sentence(block.offload)] if block.offload else []),
        "Units: bytes; GB = 1e9 bytes (the ZeRO paper's unit: 7.5B × 16 bytes = 120 GB), "
        "GiB = 2^30 bytes; a GPU's memory is its catalogue memory_gib × 2^30 (vendors' "
        "'80GB' of HBM is 80 GiB).",
    ]
