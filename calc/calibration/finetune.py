"""A published fine-tuning run (presets/published/finetune/) as calc's options: one fixed table
of rules, written before any row was compared, that turns each row's stated settings into the
options calc's memory and step models take, names what calc does not model, and reads the
run's speed from its own figures: its precision a recipe, its optimizer calc's, its sharding a
ZeRO stage over its GPUs, its attention flash or eager, FSDP's CPU offload ZeRO-Offload of the
optimizer and the parameters, the optimizer in the backward and torchtune's activation
offload as calc's options of the same names, transformers' modules for a stack built on them,
PyTorch FSDP's framework constants for every stack. calc.reports.finetune_runs sets the models'
numbers beside the published ones."""

from __future__ import annotations

from typing import Any

from calc.spec.finetune_runs import PublishedFinetune
from calc.spec.memory import STATES_16_BIT

RECIPE = {"bf16-true": ("pure-bf16", "bf16"), "bf16-mixed": ("mixed", "bf16"),
          "fp16-mixed": ("mixed", "fp16"), "fp32": ("fp32", "fp32")}
OPTIMIZER = {"adamw": ("adamw", False), "adamw-8bit": ("adam8bit", False),
             "paged-adamw-8bit": ("adam8bit", True), "paged-adamw-32bit": ("adamw", True),
             "sgd": ("sgd", False)}
ZERO = {"none": 0, "ddp": 0, "fsdp-full-shard": 3, "fsdp-shard-grad-op": 2}
# The loss as each row computes it (calc.spec.finetune.LOSS_BYTES): its fused or chunked loss,
# else the stack's own; stacks built on transformers' models take transformers' loss.
FUSED_LOSS = {"chunked-ce": "chunked", "liger-flce": "fused"}
HF_STACKS = ("fsdp_qlora", "transformers+peft", "axolotl", "llama-factory", "trl")
# Stacks whose own loss calc models, for the methods it is modelled for: LitGPT's LoRA script
# (litgpt/finetune/lora.py at 00af8b0d) runs its head in 128-token chunks (loss litgpt); its
# full.py runs the head whole and chunks only the cross-entropy, not modelled.
OWN_LOSS = {("litgpt", "lora"): "litgpt", ("litgpt", "qlora"): "litgpt"}
# The stack: transformers' models (their activations and loss, --framework hf) for the stacks
# built on them, PyTorch FSDP for the others (torchtune, LitGPT, Unsloth: their own model code
# and training loop); both priced with PyTorch FSDP's constants.
FRAMEWORK = "fsdp"
# The stacks whose activation offload is calc's activation_offload (torchtune's
# OffloadActivations, calc.spec.layout.ACTIVATION_OFFLOAD_SOURCE); Unsloth's offloaded
# checkpointing is its own code, not read.
OFFLOAD_STACKS = ("torchtune",)
# The stacks calc models with their own code (calc.spec.memory.STACKS), framework = the stack:
# LitGPT's untied head and 4-bit path (calc.spec.memory.LITGPT_SOURCE).
OWN_STACKS = ("litgpt",)
# LitGPT's lora.py (00af8b0d) replaces the configured optimizer under BitsandbytesPrecision with
# bitsandbytes' PagedAdamW (litgpt/utils.py instantiate_bnb_optimizer): 32-bit states, paged
# (bitsandbytes/optim/optimizer.py get_state_buffer at 0.42.0: every state of 1e5 values or
# more in unified memory; LoRA's r·n matrices are).
QUANTISED_OPTIMIZER = {"litgpt": ("adamw", True)}
RULES = [
    "precision bf16-true → recipe pure-bf16 (weights, gradients, optimizer states bf16: "
    "torch's AdamW makes m and v like the parameter, adamw → adamw-bf16, 4 B); "
    "bf16-mixed / fp16-mixed → mixed; fp32 → fp32",
    "optimizer adamw-8bit → adam8bit; paged-* → the same states, paged (unified memory "
    "outside PyTorch's allocator: not in the GPU bytes compared, whatever the method)",
    "sharding ddp → dp = GPUs; fsdp-full-shard → ZeRO 3 over the GPUs; fsdp-shard-grad-op → "
    "ZeRO 2; FSDP CPU offload → optimizer and parameters offloaded to the host",
    "attention sdpa / flash-attention-2 / unstated → flash (no s×s scores); eager → eager",
    "loss chunked-ce → chunked, chunked-compiled with torch.compile (torchtune compiles "
    "each chunk's upcast and cross-entropy); liger-flce → fused; none on a stack built on "
    "transformers' models (fsdp_qlora, transformers+peft, axolotl, LLaMA-Factory, TRL) → hf; "
    "none on LitGPT's LoRA and QLoRA → litgpt (its 128-token chunks of 16-bit logits); "
    "otherwise calc's "
    "default fp32 logits, the stack's own loss listed as not modelled",
    "rows not all seq_len long (unpacked data): memory at seq_len, the longest batch; no time "
    "(the tokens are unknown)",
    "time: tokens/s per GPU as printed, the job's ÷ GPUs, or samples × seq_len ÷ the run's wall "
    "time ÷ GPUs; a multi-GPU figure whose scope is unstated is not compared",
    "optimizer_in_bwd → optimizer_in_backward (one gradient resident, the largest "
    "parameter's); torchtune's enable_activation_offloading → activation_offload (two "
    "checkpointed layers' inputs on the GPU, the rest in pinned host memory); another "
    "stack's activation offload (Unsloth's) listed as not modelled; torch.compile's memory "
    "modelled only with the chunked loss and full recomputation (their stored tensors), its "
    "speed never",
    f"framework: hf (transformers' modules' activations) for a stack built on transformers' "
    f"models (as for the loss), litgpt for LitGPT (its head built apart from the embedding; "
    f"under QLoRA the head in 4 bits, every 4-bit projection's input kept by bitsandbytes "
    f"0.42's MatMul4Bit, the head's fp16 and bf16 dequantised copies at the backward's start, "
    f"and bitsandbytes' PagedAdamW in place of the configured optimizer), {FRAMEWORK} "
    f"otherwise; {FRAMEWORK}'s constants for every stack; global batch = micro-batch × "
    f"accumulation × GPUs",
]


def compile_modelled(run: PublishedFinetune) -> bool:
    """Whether calc's memory holds what torch.compile changes in the run: its chunked loss
    compiled as torchtune compiles it (loss 'chunked-compiled'), and full recomputation, whose
    stored tensors are the layers' inputs whatever compile does inside a layer. Its speed is
    not modelled."""
    return run.compile and run.fused_loss == "chunked-ce" and run.recompute == "full"


def unmodelled(run: PublishedFinetune, quantity: str = "memory") -> list[str]:
    """What the run does that calc's model of `quantity` (memory or time) leaves out."""
    found = []
    if run.fused_loss not in ("none", *FUSED_LOSS):
        found.append(run.fused_loss)
    if (run.fused_loss == "none" and run.stack not in HF_STACKS
            and (run.stack, run.method) not in OWN_LOSS):
        found.append(f"{run.stack}'s loss")
    if run.activation_offload and run.stack not in OFFLOAD_STACKS:
        found.append("activation offload")
    if run.compile and (quantity == "time" or not compile_modelled(run)):
        found.append("torch.compile")
    if run.lora_head:
        found.append("LoRA on the LM head")
    if not run.rows_full:
        found.append("unpacked rows")
    return found


def loss_of(run: PublishedFinetune) -> str:
    """How the run's loss holds the logits (RULES)."""
    if run.fused_loss == "chunked-ce" and run.compile:  # torchtune's compile_loss
        return "chunked-compiled"
    if run.fused_loss in FUSED_LOSS:
        return FUSED_LOSS[run.fused_loss]
    if run.fused_loss == "none" and (run.stack, run.method) in OWN_LOSS:
        return OWN_LOSS[run.stack, run.method]
    return "hf" if run.fused_loss == "none" and run.stack in HF_STACKS else "fp32"


def framework_of(run: PublishedFinetune) -> str:
    """The framework whose model code the run's stack runs (RULES)."""
    if run.stack in HF_STACKS:
        return "hf"
    return run.stack if run.stack in OWN_STACKS else FRAMEWORK


def run_options(run: PublishedFinetune) -> dict[str, Any]:
    """The run's settings as calc's options (RULES)."""
    recipe, dtype = RECIPE[run.precision]
    optimizer, paged = OPTIMIZER[run.optimizer]
    if run.precision == "bf16-true":
        # bf16-true casts the whole model to bf16, and torch's AdamW makes its states like the
        # parameters (STATES_16_BIT); the rows' headers say so for each publisher
        optimizer = STATES_16_BIT.get(optimizer, optimizer)
    if run.quant is not None and run.stack in QUANTISED_OPTIMIZER:
        optimizer, paged = QUANTISED_OPTIMIZER[run.stack]
    options: dict[str, Any] = dict(
        recipe=recipe, dtype=dtype, optimizer=optimizer, zero=ZERO[run.sharding],
        dp=run.gpus, micro_batch=run.micro_batch, seq_len=run.seq_len,
        recompute=run.recompute, flash_attention=run.attention != "eager",
        finetune=run.method, loss=loss_of(run), paged=paged,
        framework=framework_of(run))
    if run.method != "full":
        options.update(lora_rank=run.lora_rank, lora_targets=run.lora_targets)
    if run.quant is not None:
        options.update(base_dtype=run.quant, double_quant=bool(run.double_quant))
    if run.optimizer_in_backward:
        options.update(optimizer_in_backward=True)
    if run.activation_offload and run.stack in OFFLOAD_STACKS:
        options.update(activation_offload=True)
    if run.cpu_offload:
        options.update(offload_optimizer="cpu", offload_params="cpu")
    return options


def published_tokens_per_s(run: PublishedFinetune) -> tuple[float | None, str | None]:
    """(tokens/s per GPU from the run's figures, or None with why)."""
    if run.tokens_per_s is not None:
        if run.tokens_scope == "per_gpu" or run.gpus == 1:
            return run.tokens_per_s, None
        if run.tokens_scope == "job":
            return run.tokens_per_s / run.gpus, None
        return None, "tokens/s: per GPU or for the job is unstated"
    if run.run_time_s is not None:
        if not run.rows_full or run.seq_len is None:
            return None, "run time: rows of varying length, tokens unknown"
        if run.run_samples is None:
            return None, "run time: samples unstated"
        return run.run_samples * run.seq_len / run.run_time_s / run.gpus, None
    return None, "no speed figure"
