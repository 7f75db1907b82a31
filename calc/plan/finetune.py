"""What trains in a fine-tune, as numbers: the validated fine-tuning options and the block of
trainable, frozen and 4-bit parameters (LoRA, Hu et al. 2021; QLoRA, Dettmers et al. 2023)."""

from __future__ import annotations

from pydantic import Field, ValidationError

from calc.errors import CalcError, one_line
from calc.evaluate import AdapterCounts, count_adapters, finetune_values
from calc.plan.options import RunConfig
from calc.spec import BYTES_PER_ELEMENT, GPU, ModelSpec
from calc.spec.finetune import FULL_TRAINING, FineTune
from calc.spec.model import Frozen

# What a fine-tune runs at when its sequence length, recomputation and stack are not given: the
# defaults of TRL's SFTConfig, the trainer most Hugging Face fine-tunes go through
# (huggingface/trl 016013e8, trl/trainer/sft_config.py: max_length 1024, gradient_checkpointing
# True "instead of False"), on transformers' own models (--framework hf), not pre-training's full
# context without recomputation on Megatron-LM.
FINETUNE_SEQ_LEN = 1024
FINETUNE_RECOMPUTE = "full"
FINETUNE_FRAMEWORK = "hf"
FINETUNE_DEFAULTS_SOURCE = ("TRL SFTConfig defaults (huggingface/trl 016013e8 "
                            "trl/trainer/sft_config.py): max_length 1024, gradient_checkpointing "
                            "True, transformers' models")
# The loss of a run on transformers' models unless --loss says otherwise: theirs (hf).
HF_LOSS = "hf"


def finetune_defaults(run: RunConfig, spec: ModelSpec) -> tuple[RunConfig, list[str]]:
    """`run` with a fine-tune's defaults where --finetune is given and seq_len, recompute or
    framework are not (from the flags or a trainer config), and transformers' loss on their
    stack where no loss is given; the note saying so."""
    layout, defaults = run.given("layout"), {}
    if "finetune" in run.given("finetune"):
        if "seq_len" not in layout:
            defaults["seq_len"] = min(FINETUNE_SEQ_LEN, spec.context_length)
        if "recompute" not in layout:
            defaults["recompute"] = FINETUNE_RECOMPUTE
        if "framework" not in layout:
            defaults["framework"] = FINETUNE_FRAMEWORK
    framework = defaults.get("framework", layout.get("framework"))
    if framework == "hf" and "loss" not in run.given("finetune"):
        defaults["loss"] = HF_LOSS
    if not defaults:
        return run, []
    said = ", ".join(f"{key} {value}" for key, value in defaults.items())
    return run.over(RunConfig.from_options(**defaults)), [
        f"Fine-tuning defaults: {said} ({FINETUNE_DEFAULTS_SOURCE}); give --seq-len, "
        f"--recompute, --framework or --loss to change them."]


# A LoRA checkpoint holds the adapters at 16 bits (Hu et al. 2021 §4.2: GPT-3 175B, r = 4 on
# W_q and W_v, "from 350GB to 35MB").
CHECKPOINT_DTYPE = "bf16"


class FineTuneBlock(Frozen):
    method: str = Field(description="full, lora or qlora")
    rank: int | None = Field(description="LoRA rank r (None in full fine-tuning)")
    targets: tuple[str, ...] = Field(description="adapted projections, 'all-linear' expanded")
    frozen_dtype: str | None = Field(description="storage of the frozen projections: the "
                                                 "training dtype (LoRA), nf4 or fp4 (QLoRA)")
    bytes_per_frozen_weight: float | None = Field(
        description="bytes per frozen projection weight, QLoRA's block constants included")
    double_quant: bool | None = None
    paged: bool = Field(description="optimizer states pageable to host memory")
    loss: str = Field("fp32", description="how the loss holds the logits "
                                          "(calc.spec.finetune.LOSS_BYTES)")
    trainable: int = Field(description="parameters that take gradients and optimizer states")
    frozen: int = Field(description="parameters held fixed")
    quantised: int = Field(description="frozen parameters stored in 4 bits (QLoRA)")
    adapters: dict[str, int] = Field(description="adapter parameters per target (non-zero)")
    adapters_active: int = Field(description="adapter parameters one token runs through")
    checkpoint_bytes: int = Field(description="the trainable parameters at 16 bits: what a "
                                              "fine-tuned checkpoint stores")


def finetune_of(run: RunConfig) -> FineTune:
    """The run's validated fine-tuning (full unless given); CalcError naming the option."""
    given = run.given("finetune")
    if given.get("finetune", "full") == "full" and {"lora_rank", "lora_targets"} & set(given):
        raise CalcError("lora_rank/lora_targets: they need finetune='lora' or 'qlora'")
    if not given:  # full training, built once (calc.spec.finetune)
        return FULL_TRAINING
    try:
        return FineTune(**given)
    except ValidationError as error:
        raise CalcError(one_line(error, "finetune")) from None


# bitsandbytes' NF4/FP4 kernels (Linear4bit): NVIDIA GPUs of compute capability 5.0 or newer,
# AMD GPUs through its ROCm backend; none for TPUs (bitsandbytes 0.46 installation guide,
# "NF4/FP4 quantization 5.0+"; multi-backend: CPU, ROCm, Intel XPU, Gaudi).
NO_4BIT_KERNELS = ("tpu",)


def check_quant_kernels(finetune: FineTune, gpu: GPU) -> None:
    """CalcError when QLoRA asks for 4-bit kernels the GPU has no backend for."""
    if finetune.method == "qlora" and gpu.name.startswith(NO_4BIT_KERNELS):
        raise CalcError(f"finetune=qlora on {gpu.name}: bitsandbytes' 4-bit (NF4/FP4) kernels "
                        f"run on NVIDIA GPUs of compute capability 5.0+ and AMD GPUs (ROCm), "
                        f"not on {gpu.title}; use finetune=lora")


def finetune_block(spec: ModelSpec, finetune: FineTune,
                   dtype: str) -> tuple[FineTuneBlock, AdapterCounts]:
    """The parameter block of `spec` fine-tuned as `finetune` with `dtype` weights."""
    counts = count_adapters(spec, finetune)
    quant = finetune.quant()
    frozen = finetune.frozen_base
    q_f = finetune_values(finetune, counts.targets, BYTES_PER_ELEMENT[dtype])["q_f"]
    block = FineTuneBlock(
        method=finetune.method, rank=finetune.rank if frozen else None, targets=counts.targets,
        frozen_dtype=(finetune.base_dtype or "nf4") if quant else dtype if frozen else None,
        bytes_per_frozen_weight=q_f if frozen else None,
        double_quant=finetune.double_quant if quant else None,
        paged=finetune.paged, loss=finetune.loss, trainable=counts.trainable, frozen=counts.frozen,
        quantised=counts.quantised, adapters=counts.by_target,
        adapters_active=counts.adapters_active,
        checkpoint_bytes=int(counts.trainable * BYTES_PER_ELEMENT[CHECKPOINT_DTYPE]))
    return block, counts
