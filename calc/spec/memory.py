"""Training-memory options: precision recipe, optimizer, ZeRO stage, parallelism, recomputation,
and what each software stack keeps beside them.

The recipes and optimizers are data: bytes per parameter for each piece of the model states, each
with the source that publishes it (its `source`: ZeRO §3.1, Megatron-LM's
theoretical_memory_usage.py and README, Hugging Face's docs and Ultra-Scale Playbook, PyTorch's
FSDP2 MixedPrecisionPolicy). `STACKS` says, per framework, which recipe it keeps its states in,
which sharding stages it offers and the transient buffers it allocates (gradient buckets, gathered
weights); `RESERVE` what a GPU holds beside any run (CUDA context, NCCL, fragmentation), each
from a measurement a reader can open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from calc.numbers import annotated
from calc.spec.gemm_precision import GemmPrecision, fp8_choice
from calc.spec.layout import Framework, Layout
from calc.spec.model import Frozen

Recipe = Literal["mixed", "mixed-fp32-grads", "mixed-fp32-grad-copy", "fp32", "pure-bf16",
                 "fsdp-mixed"]
Optimizer = Literal["adamw", "adamw-bf16", "adam8bit", "sgd", "lion", "adafactor", "muon"]
# Where an exponential moving average of the parameters is kept: nowhere, beside the model
# states on the GPU, or in host memory (DeepSeek-V3 report §3.2.3, "Exponential Moving Average
# in CPU": updated asynchronously after each step, no GPU memory).
EmaPlace = Literal["none", "device", "host"]
# An EMA copy: fp32, one value per parameter. The DeepSeek-V3 report does not print its
# precision; fp32 is the precision of the master weights it averages (§3.3.3), stated here as
# the assumption.
EMA_BYTES = 4
Margin = annotated("memory_margin")
# The optimizer in the backward: each parameter's optimizer steps in a hook that runs once its
# gradient is accumulated, then frees the gradient (PyTorch tutorial "How to save memory by
# fusing the optimizer step into the backward pass", register_post_accumulate_grad_hook;
# torchtune torchtune/training/memory.py register_optim_in_bwd_hooks at 1814feb17). torchtune
# refuses it with gradient accumulation and gradient clipping (recipes/full_finetune_single_
# device.py at 1814feb17, lines 146-157; the same in recipes/full_finetune_distributed.py at
# bd2a0fc7c, which runs it under FSDP2).
OPTIMIZER_IN_BACKWARD_SOURCE = (
    "PyTorch tutorial 'How to save memory by fusing the optimizer step into the backward "
    "pass' (Tensor.register_post_accumulate_grad_hook); torchtune torchtune/training/memory.py "
    "register_optim_in_bwd_hooks and recipes/full_finetune_single_device.py (1814feb17)")


@dataclass(frozen=True)
class RecipeInfo:
    """Bytes per parameter of each model-state piece (optimizer states come from Optimizer)."""

    weights: int  # working weights the forward pass reads
    gradients: int
    gradient_copy: int  # an fp32 copy of the gradients, sharded with the optimizer
    master: int  # fp32 master weights the optimizer updates
    label: str
    source: str


RECIPES: dict[str, RecipeInfo] = {
    "mixed": RecipeInfo(
        2, 2, 0, 4, "16-bit weights and gradients, fp32 master weights",
        "Rajbhandari et al. 2020 (ZeRO) §3.1: 2Ψ + 2Ψ + KΨ, K = 12 with Adam → 16 bytes"),
    "mixed-fp32-grads": RecipeInfo(
        2, 4, 0, 4, "16-bit weights, fp32 gradients (bf16 with fp32 gradient accumulation), "
        "fp32 master weights",
        "Megatron-LM megatron/training/theoretical_memory_usage.py (38644dd756): 18 bytes per "
        "parameter, 6 + 12/d with --use-distributed-optimizer; Megatron-LM README, 'bf16 param, "
        "fp32 grads' 18 → 6 + 12/d; Hugging Face Transformers docs, model_memory_anatomy "
        "(weights 6 = 2 + 4, gradients 4, AdamW 8 → 18)"),
    "mixed-fp32-grad-copy": RecipeInfo(
        2, 2, 4, 4, "16-bit weights and gradients, fp32 copies of both",
        "Hugging Face Ultra-Scale Playbook, memory section (2 + 2 + fp32 params 4 + fp32 "
        "grads 4 + Adam 8 → 20); Megatron-LM README, 'fp16 param, fp16 grads' 20 → 4 + 16/d"),
    "fp32": RecipeInfo(
        4, 4, 0, 0, "fp32 weights and gradients, no master copy",
        "Megatron-LM README, 'fp32 param, fp32 grads' 16 → 8 + 8/d"),
    "pure-bf16": RecipeInfo(
        2, 2, 0, 0, "16-bit weights and gradients, no fp32 master copy",
        "Dettmers et al. 2023 (QLoRA) §1: regular 16-bit fine-tuning of a 65B model needs "
        ">780 GB, 12 bytes per parameter (2 + 2 + Adam's 8)"),
    "fsdp-mixed": RecipeInfo(
        4, 4, 0, 0, "fp32 parameters and gradients, sharded; 16-bit weights only in the "
        "gathered layers (FSDP mixed precision: the fp32 shard is the optimizer's copy)",
        "PyTorch torch/distributed/fsdp/_fully_shard/_fsdp_api.py MixedPrecisionPolicy (2.13): "
        "FSDP keeps the high-precision sharded parameters, so no extra fp32 copy for the "
        "optimizer; param_dtype is the dtype of the unsharded (gathered) parameter; torchtitan "
        "torchtitan/config/job_config.py (8a2686c4a4) mixed_precision_param bfloat16, "
        "mixed_precision_reduce float32"),
}


@dataclass(frozen=True)
class OptimizerInfo:
    state_bytes: float  # per parameter; for a shaped optimizer, per parameter of a hidden matrix
    label: str
    source: str
    # Optimizers whose states depend on the shapes: the key of their bytes in
    # calc.formulas.optimizer.OPTIMIZER_STATES (the whole model; "<key>_adapters" under LoRA).
    shaped: str | None = None


OPTIMIZERS: dict[str, OptimizerInfo] = {
    "adamw": OptimizerInfo(8, "AdamW: fp32 m and v",
                           "Hugging Face Transformers docs, model_memory_anatomy: 8 bytes"),
    "adamw-bf16": OptimizerInfo(
        4, "AdamW: bf16 m and v",
        "DeepSeek-AI 2024, DeepSeek-V3 report (arXiv:2412.19437) §3.3.3 'Low-Precision "
        "Optimizer States': the BF16 format instead of FP32 tracks AdamW's first and second "
        "moments; master weights and gradients stay FP32"),
    "adam8bit": OptimizerInfo(
        2, "8-bit AdamW (bitsandbytes): 1-byte m and v",
        "Hugging Face Transformers docs, model_memory_anatomy: 2 bytes; Dettmers et al. 2022 "
        "(8-bit Optimizers via Block-wise Quantization) §2: one fp32 absmax per block of 2048 "
        "values, +0.2 %, not counted"),
    "sgd": OptimizerInfo(4, "SGD with momentum: one fp32 state",
                         "Hugging Face Transformers docs, model_memory_anatomy: 4 bytes"),
    "lion": OptimizerInfo(4, "Lion: one fp32 momentum",
                          "Chen et al. 2023 (Symbolic Discovery of Optimization Algorithms) §2: "
                          "Lion keeps only the momentum, half of AdamW's states"),
    "adafactor": OptimizerInfo(
        0, "Adafactor: factored fp32 second moment, no first moment",
        "Shazeer & Stern 2018 (Adafactor) §3: n + m values for an n × m matrix, a full second "
        "moment for vectors; Hugging Face's Adafactor default beta1=None (no momentum)",
        shaped="adafactor"),
    "muon": OptimizerInfo(
        4, "Muon: one fp32 momentum per hidden matrix, AdamW's 8 bytes elsewhere",
        "Jordan et al. 2024 (Muon: an optimizer for hidden layers); Liu et al. 2025 (Muon is "
        "Scalable for LLM Training) §2: embeddings, LM head and vectors keep AdamW",
        shaped="muon"),
}


@dataclass(frozen=True)
class StackMemory:
    """How a software stack keeps a run's memory, as the framework runs it: the recipe of its
    model states for each training dtype, the sharding stages it offers (in ZeRO's numbering)
    and the transient buffers it allocates beside the states and activations."""

    recipes: dict[str, str]  # training dtype → RECIPES key
    zero: dict[int, str]  # ZeRO stage → what the stack calls it; a stage not here is refused
    bucket_elements: float  # a gradient bucket outside the gradients (16-bit), 0: none
    gathered_layers: int  # ZeRO-3/FSDP: layers whose 16-bit weights are gathered at once
    gathered_stage: bool  # with a pipeline, every layer of the stage stays gathered
    prefetch_elements: float  # ZeRO-3: parameters prefetched beyond the gathered layers
    reduce_bytes: int  # bytes per element of a gathered layer's unsharded gradient, 0: bucketed
    source: str
    # The optimizer makes its states like the parameters it steps (torch.optim.AdamW's
    # zeros_like), so a recipe without an fp32 master copy keeps them 16-bit (STATES_16_BIT);
    # off: the optimizer's own table row whatever the parameters' dtype.
    states_like_parameters: bool = False
    # LoRA adapters kept in fp32 whatever the base's dtype (PEFT's autocast_adapter_dtype),
    # their states fp32 too.
    fp32_adapters: bool = False
    # The stack's own model code and 4-bit path, where it is not transformers' or Megatron's
    # (LitGPT's, LITGPT below): the LM head built apart from the embedding even where the
    # model ties them; under QLoRA the head stored in 4 bits too, every 4-bit projection's
    # input kept for its backward (as in full training), and the dequantised copies of one
    # 4-bit matrix, dequantised_bytes a weight, transient at the backward's peak.
    untied_head: bool = False
    quantised_head: bool = False
    quantised_inputs_kept: bool = False
    dequantised_bytes: int = 0


# torch.optim.AdamW makes m and v with zeros_like(param) (torch/optim/adam.py _init_group, 2.13):
# on 16-bit parameters its states are 16-bit, 4 bytes a parameter.
STATES_16_BIT = {"adamw": "adamw-bf16"}


# The recipes Megatron-LM runs: bf16 with fp32 main gradients, fp16 with fp32 copies of both
# (its README's distributed-optimizer table), fp32 without a copy.
_MEGATRON_RECIPES = {"bf16": "mixed-fp32-grads", "fp8": "mixed-fp32-grads",
                     "fp16": "mixed-fp32-grad-copy", "fp32": "fp32"}
_FSDP_RECIPES = {"bf16": "fsdp-mixed", "fp8": "fsdp-mixed", "fp16": "fsdp-mixed",
                 "fp32": "fp32"}
_ZERO_RECIPES = {"bf16": "mixed", "fp8": "mixed", "fp16": "mixed", "fp32": "fp32"}
_FSDP_STAGES = {0: "NO_SHARD", 3: "FULL_SHARD"}

STACKS: dict[Framework, StackMemory] = {
    "megatron": StackMemory(
        _MEGATRON_RECIPES,
        {0: "DDP", 1: "--use-distributed-optimizer", 2: "Megatron-FSDP optim_grads",
         3: "Megatron-FSDP optim_grads_params"},
        0, 2, False, 0, 4,
        "Megatron-LM megatron/training/theoretical_memory_usage.py (38644dd756): 18 bytes per "
        "parameter, 6 + 12/d with the distributed optimizer; the gradient buckets are views "
        "of the fp32 main-gradient buffer (megatron/core/distributed/param_and_grad_buffer.py), "
        "the distributed optimizer gathers into the parameter buffer: no extra buffer; "
        "--data-parallel-sharding-strategy (megatron/training/arguments.py, 779c5b748d) for "
        "stages 2 and 3, whose buffers were not read: counted as FSDP2's (two gathered layers, "
        "their fp32 gradient)"),
    "deepspeed": StackMemory(
        _ZERO_RECIPES, {0: "ZeRO disabled", 1: "ZeRO stage 1", 2: "ZeRO stage 2",
                        3: "ZeRO stage 3"},
        5e8, 1, False, 5e7, 0,
        "DeepSpeed deepspeed/runtime/zero/config.py (38327e07f6): reduce_bucket_size 5e8 "
        "elements, stage3_prefetch_bucket_size 5e7, overlap_comm off at stages 1-2; "
        "stage_1_and_2.py allocates the reduce bucket (ipg_buffer) in the model's 16-bit dtype "
        "for the backward, stage3.py one flat bucket of the same size; ZeRO paper §3.1's 16 "
        "bytes per parameter"),
    "torchtitan": StackMemory(
        _FSDP_RECIPES, {0: "DDP (data_parallel_replicate only)",
                        3: "FSDP2 fully_shard (data_parallel_shard)"},
        0, 2, True, 0, 4,
        "torchtitan torchtitan/config/job_config.py (8a2686c4a4): mixed_precision_param "
        "bfloat16, mixed_precision_reduce float32 (each layer's unsharded gradient in fp32 "
        "before its reduce-scatter); torchtitan/models/llama3/infra/parallelize.py:288 "
        "reshard_after_forward = not pp_enabled (with a pipeline the stage stays gathered); "
        "FSDP2 gathers one layer ahead (implicit prefetch): two layers at once"),
    "fsdp": StackMemory(
        _FSDP_RECIPES, _FSDP_STAGES, 0, 2, False, 0, 2,
        "PyTorch torch/distributed/fsdp/api.py MixedPrecision (2.13): reduce_dtype None takes "
        "param_dtype (16-bit gradient reduction); BackwardPrefetch.BACKWARD_PRE gathers the "
        "next layer beside the current one; SHARD_GRAD_OP and HYBRID_SHARD are not modelled"),
    "foundry": StackMemory(
        _FSDP_RECIPES, _FSDP_STAGES, 0, 2, False, 0, 2,
        "llm-foundry scripts/train/yamls/pretrain/mpt-70b.yaml (ef9e5a3da3): fsdp_config "
        "sharding_strategy FULL_SHARD, mixed_precision PURE (Composer's PURE: parameters, "
        "reductions and buffers in bf16), over PyTorch FSDP; SHARD_GRAD_OP not modelled"),
    # transformers' models train in the dtype they are loaded in (the LoRA and QLoRA recipes
    # load torch_dtype=bfloat16; calc.verify.memory runs them so): Trainer hands bf16=True to
    # accelerate as mixed_precision, an autocast that leaves the parameters as loaded, and its
    # default optimizer is torch's AdamW, whose states follow the parameters: a bf16-loaded
    # model keeps 16-bit weights, gradients and AdamW states, no fp32 copy. fp16 is loaded in
    # fp32 (accelerate's GradScaler refuses fp16 gradients): fp32 parameters and states,
    # priced as the mixed recipe's 16 bytes.
    # Under QLoRA its 4-bit path is bitsandbytes 0.50.2's (pyproject's hf extra pins it;
    # calc.verify.memory quantises with it): MatMul4Bit.forward keeps ctx.tensors = (None, B),
    # the 4-bit weight alone, not the input A (0.42.0 kept (A, B): LITGPT_SOURCE), and its
    # backward dequantises B to the gradient's dtype, a transient (bitsandbytes/autograd/
    # _functions.py at 0.50.2); transformers leaves the LM head and tied weights unquantised
    # (transformers 5.24 quantizers/base.py get_keys_to_not_convert); PEFT's bnb Linear4bit
    # adds its adapters as on nn.Linear, the base output cloned, which keeps nothing (peft
    # 0.21.2 tuners/lora/bnb.py Linear4bit.forward). A 4-bit projection so keeps what a frozen
    # 16-bit one keeps, no input: no own 4-bit path here.
    "hf": StackMemory(
        {"bf16": "pure-bf16", "fp8": "pure-bf16", "fp16": "mixed", "fp32": "fp32"},
        _FSDP_STAGES, 0, 2, False, 0, 2,
        "transformers Trainer (training_args.py: ddp, or fsdp through accelerate) over "
        "PyTorch DDP/FSDP, whose buffers are counted as fsdp's; the model in its loaded dtype "
        "(transformers 5.24 trainer.py _build_accelerator_args: mixed_precision to accelerate, "
        "an autocast; training_args.py default optim adamw_torch_fused on torch >= 2.8): "
        "16-bit weights and gradients and torch AdamW's states like the parameters, bf16 "
        "(torch/optim/adam.py _init_group, zeros_like); PEFT's adapters upcast to fp32 "
        "(peft 0.21 get_peft_model autocast_adapter_dtype=True) keep fp32 states; under "
        "QLoRA bitsandbytes 0.50.2's MatMul4Bit keeps its 4-bit weight, not its input "
        "(bitsandbytes/autograd/_functions.py)",
        states_like_parameters=True, fp32_adapters=True),
    # LitGPT's fine-tuning (litgpt at 00af8b0d, lightning 2.4.0.dev20240728 and bitsandbytes
    # 0.42.0 as its pyproject.toml pins them): bf16-true casts the whole model to bf16 and
    # torch's AdamW keeps its states so; LitGPT's own model code (LITGPT_SOURCE).
    "litgpt": StackMemory(
        {"bf16": "pure-bf16", "fp8": "pure-bf16", "fp16": "pure-bf16", "fp32": "fp32"},
        _FSDP_STAGES, 0, 2, False, 0, 2,
        "LitGPT litgpt/finetune/full.py and lora.py (00af8b0d) over Lightning Fabric's "
        "FSDPStrategy (PyTorch FSDP, whose buffers are counted as fsdp's); precision "
        "bf16-true: weights and gradients bf16 and torch AdamW's states like them; the head "
        "untied, and under QLoRA quantised with its input and the projections' inputs kept "
        "and a dequantised copy transient (calc.spec.memory.LITGPT_SOURCE)",
        states_like_parameters=True, untied_head=True, quantised_head=True,
        quantised_inputs_kept=True, dequantised_bytes=2 + 2),
    "jax": StackMemory(
        _ZERO_RECIPES, {0: "replicated", 1: "ZeRO stage 1", 2: "ZeRO stage 2", 3: "FSDP"},
        0, 0, False, 0, 0,
        "no framework recipe read (MaxText-style XLA): the ZeRO paper's mixed precision, no "
        "buffers counted"),
    "other": StackMemory(
        _MEGATRON_RECIPES, {0: "no sharding", 1: "ZeRO stage 1", 2: "ZeRO stage 2",
                            3: "ZeRO stage 3"},
        0, 2, False, 0, 4,
        "an in-house stack a source does not name: Megatron-LM's recipe and buffers"),
}


# What LitGPT's stack holds, each from a file at a commit (litgpt 00af8b0d; lightning
# 2.4.0.dev20240728 and bitsandbytes 0.42.0, the versions its pyproject.toml pins):
# - the head apart: litgpt/model.py GPT.__init__ builds lm_head (nn.Linear) and wte
#   (nn.Embedding) as two tensors; only pretrain.py ties them (train.tie_embeddings), which
#   finetune/lora.py and full.py refuse (validate_args), so a tied checkpoint's head is copied;
# - the head in 4 bits: lora.py builds the model under fabric.init_module, where
#   BitsandbytesPrecision.module_init_context (lightning src/lightning/fabric/plugins/precision/
#   bitsandbytes.py) replaces torch.nn.Linear with its 4-bit class for every layer built, the
#   LoRA head's inner nn.Linear (litgpt/lora.py GPT.lm_head) included; quantised on the GPU as
#   it is made (_Linear4bit.__init__), so no whole bf16 model is held;
# - the inputs kept: bitsandbytes/autograd/_functions.py (0.42.0) MatMul4Bit.forward keeps
#   ctx.tensors = (A, B) whenever an input needs a gradient, the activation A though only B's
#   dequantised copy is read in backward: every 4-bit projection's input is held as in full
#   training;
# - the dequantised copies: _Linear4bit.quantize quantises weight.to(torch.half), so
#   dequantize_4bit returns fp16, and MatMul4Bit casts it .to(A.dtype), bf16: 2 + 2 bytes a
#   weight of the matrix being multiplied, the largest being the head's at the backward's start.
LITGPT_SOURCE = (
    "Lightning-AI/litgpt litgpt/model.py, litgpt/lora.py, litgpt/finetune/lora.py (00af8b0d); "
    "Lightning-AI/pytorch-lightning src/lightning/fabric/plugins/precision/bitsandbytes.py "
    "(2.4.0.dev20240728: module_init_context, _Linear4bit); bitsandbytes "
    "bitsandbytes/autograd/_functions.py MatMul4Bit (0.42.0)")


@dataclass(frozen=True)
class Reserve:
    """Memory a GPU holds beside what a run allocates, as measured."""

    value: float  # bytes, or a share of the allocated bytes (fragmentation)
    label: str
    source: str


# The default margin of a GPU (calc.plan.memory.margin): the CUDA context once, one NCCL
# communicator per parallel group of more than one rank (an expert-parallel group's all-to-all
# connects every peer), and the allocator's fragmentation as a share of what is allocated.
RESERVE: dict[str, Reserve] = {
    "cuda_context": Reserve(
        300e6, "CUDA context (driver, kernels loaded lazily)",
        "pytorch/pytorch#107667, ptrblck 2023-08-28: ~300 MB with lazy module loading (CUDA "
        ">= 11.7), >1000 MB before"),
    "nccl_communicator": Reserve(
        1.06e9, "one NCCL communicator (buffers per channel and peer)",
        "NVIDIA/nccl#1685, kwen2501 2025-04-16: 1.06 GB outside PyTorch on each of 8 H100s "
        "before the first all-to-all; NVIDIA/nccl#864 (2023-06-02): about 1.6 GB with one "
        "communicator after an all-reduce, more with each communicator; nccl-tests keeps "
        "1 GiB per GPU for CUDA and NCCL (NVIDIA/nccl-tests#198, AddyLaddy 2024-03-10: the "
        "empirical usage on HGX/DGX)"),
    "nccl_all_to_all": Reserve(
        4.34e9, "an NCCL communicator after an all-to-all (expert parallelism)",
        "NVIDIA/nccl#1685, kwen2501 2025-04-16: 4.34 GB outside PyTorch on each of 8 H100s "
        "after the first all_to_all_single (32 channels to every peer)"),
    "fragmentation": Reserve(
        1.83 / 75.31, "the caching allocator's reserved but unallocated memory",
        "vllm-project/compressed-tensors#587 (2026-02-17): a Llama 3.3 70B run on an 80 GB GPU "
        "with 75.31 GiB allocated and 1.83 GiB reserved but unallocated at its OOM (2.4 %); "
        "much more without PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (meta-pytorch/"
        "torchtune#1185: 16.39 GiB peak, 10.83 GiB with it)"),
}


class ModelStates(Frozen):
    """How the model states are kept (their precision recipe, the optimizer, the precision of
    the projections' GEMMs) and the memory a GPU keeps beside them."""

    recipe: Recipe | None = Field(
        None, description="model-state precision recipe; default the framework's own "
                          "(calc.spec.memory.STACKS: megatron bf16 → mixed-fp32-grads, "
                          "deepspeed → mixed, torchtitan/fsdp/foundry → fsdp-mixed, hf → "
                          "pure-bf16)")
    optimizer: Optimizer = Field("adamw", description="optimizer whose states are kept")
    precision: GemmPrecision = Field(
        "bf16", description="the projections' GEMMs: bf16 (the dtype), or fp8/mxfp8/nvfp4 "
                            "with cached low-precision weight copies (calc.spec.gemm_precision)")
    ema: EmaPlace = Field(
        "none", description="an exponential moving average of the parameters: none, device "
                            "(fp32, sharded as the master weights) or host (in CPU memory, "
                            "DeepSeek-V3 report §3.2.3: no GPU memory)")
    mtp_shared_embedding: bool = Field(
        True, description="the multi-token-prediction modules use the main model's embedding "
                          "and output head where both sit on their GPU (one pipeline stage, "
                          "or DualPipe's first rank: DeepSeek-V3 report §3.2.3); off, each "
                          "module keeps its own copies, as the released checkpoint stores "
                          "them")
    optimizer_in_backward: bool = Field(
        False, description="the optimizer steps each parameter as soon as its gradient is "
                           "made and frees it (torchtune's optimizer_in_bwd, PyTorch's "
                           "register_post_accumulate_grad_hook): one parameter's gradient "
                           "resident, not all; needs one micro-batch per step, ZeRO 0 or 3")
    memory_margin: Margin | None = Field(
        None, description="GiB per GPU kept free beside the run (default: the CUDA context, "
                          "one NCCL communicator per parallel group and the allocator's "
                          "fragmentation, calc.spec.memory.RESERVE); a layout within it "
                          "does not fit")


class TrainingMemory(ModelStates, Layout):  # fields in reverse order: the layout's first
    """How a model is trained, as far as the memory of one GPU can tell: a layout and how its
    model states are kept."""

    gpu: str | None = Field(None, description="GPU catalogue name whose memory is the budget")

    @model_validator(mode="before")
    @classmethod
    def _one_fp8_choice(cls, data: Any) -> Any:
        """The fp8 dtype and recipe the step prices, and the GEMM precision counted here, as
        one choice (calc.spec.gemm_precision.fp8_choice)."""
        if not isinstance(data, dict):
            return data
        dtype, recipe, precision = fp8_choice(data.get("dtype"), data.get("fp8_recipe"),
                                              data.get("precision"))
        chosen = {"dtype": dtype, "fp8_recipe": recipe, "precision": precision}
        return {**data, **{key: value for key, value in chosen.items() if value is not None}}

    @model_validator(mode="after")
    def _recipe_matches_dtype(self) -> TrainingMemory:
        self._check_optimizer_in_backward()
        if self.recipe is None:
            return self
        if (self.recipe == "fp32") != (self.dtype == "fp32"):
            raise ValueError(
                f"recipe={self.recipe!r} does not go with dtype={self.dtype!r}: recipe 'fp32' "
                f"needs dtype 'fp32', the mixed recipes need bf16, fp16 or fp8")
        return self

    def _check_optimizer_in_backward(self) -> None:
        """torchtune's rules (recipes/full_finetune_single_device.py and
        full_finetune_distributed.py, OPTIMIZER_IN_BACKWARD_SOURCE): no gradient accumulation;
        sharded only as FSDP2's full shard, whose hook steps each parameter's shard."""
        if not self.optimizer_in_backward:
            return
        if self.micro_batches > 1:
            raise ValueError(
                f"optimizer_in_backward needs one micro-batch per step (got global_batch="
                f"{self.global_batch} = {self.micro_batches} micro-batches of dp × micro_batch "
                f"= {self.dp} × {self.micro_batch}): each gradient is applied as soon as it is "
                f"made, so none accumulate (torchtune refuses gradient_accumulation_steps > 1)")
        if self.zero in (1, 2):
            raise ValueError(
                f"optimizer_in_backward with zero={self.zero} is not modelled: torchtune runs "
                f"it unsharded (zero 0) or under FSDP2's full shard (zero 3)")

    @property
    def stack(self) -> StackMemory:
        return STACKS[self.framework]

    @property
    def recipe_name(self) -> str:
        """The recipe given, or the framework's own for the dtype."""
        return self.recipe if self.recipe is not None else self.stack.recipes[self.dtype]

    def optimizer_kept(self, frozen_base: bool = False) -> str:
        """The OPTIMIZERS row of the states as the stack keeps them: on a stack whose optimizer
        makes its states like the parameters (StackMemory.states_like_parameters), under a
        recipe of 16-bit parameters without an fp32 master copy, AdamW's are 16-bit
        (STATES_16_BIT); adapters on a frozen base kept in fp32 (StackMemory.fp32_adapters:
        PEFT's) keep the states given."""
        recipe = RECIPES[self.recipe_name]
        fp32 = frozen_base and self.stack.fp32_adapters
        if (self.stack.states_like_parameters and not fp32 and recipe.master == 0
                and recipe.weights == 2):
            return STATES_16_BIT.get(self.optimizer, self.optimizer)
        return self.optimizer
