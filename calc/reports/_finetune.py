"""What the memory and main reports share about fine-tuning: the options, the parameter block
and its sentences (LoRA, Hu et al. 2021; QLoRA, Dettmers et al. 2023)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from calc.counting import FINETUNE_PASSES
from calc.errors import CalcError, one_line
from calc.evaluate import AdapterCounts, count_adapters, finetune_values
from calc.spec import BYTES_PER_ELEMENT, ModelSpec
from calc.spec.finetune import QUANTS, FineTune
from calc.spec.model import Frozen

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
    trainable: int = Field(description="parameters that take gradients and optimizer states")
    frozen: int = Field(description="parameters held fixed")
    quantised: int = Field(description="frozen parameters stored in 4 bits (QLoRA)")
    adapters: dict[str, int] = Field(description="adapter parameters per target (non-zero)")
    adapters_active: int = Field(description="adapter parameters one token runs through")
    checkpoint_bytes: int = Field(description="the trainable parameters at 16 bits: what a "
                                              "fine-tuned checkpoint stores")


def finetune_options(finetune: str | FineTune, **options: Any) -> FineTune:
    """A validated FineTune from a method name and the lora_* keywords (None = default)."""
    if isinstance(finetune, FineTune):
        if options:
            raise CalcError(f"{', '.join(options)}: give them inside the FineTune object")
        return finetune
    names = {"lora_rank": "rank", "lora_targets": "targets", "base_dtype": "base_dtype",
             "double_quant": "double_quant", "paged": "paged"}
    unknown = set(options) - set(names)
    if unknown:
        raise CalcError(f"unknown fine-tuning option {sorted(unknown)[0]!r}; allowed: "
                        f"{', '.join(names)}")
    given = {names[key]: value for key, value in options.items() if value is not None}
    if finetune == "full" and {"rank", "targets"} & set(given):
        raise CalcError("lora_rank/lora_targets: they need finetune='lora' or 'qlora'")
    try:
        return FineTune(method=finetune, **given)
    except ValidationError as error:
        raise CalcError(one_line(error, "finetune")) from None


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
        paged=finetune.paged, trainable=counts.trainable, frozen=counts.frozen,
        quantised=counts.quantised, adapters=counts.by_target,
        adapters_active=counts.adapters_active,
        checkpoint_bytes=int(counts.trainable * BYTES_PER_ELEMENT[CHECKPOINT_DTYPE]))
    return block, counts


def finetune_sentences(block: FineTuneBlock) -> list[str]:
    """The sentences printed under a fine-tuning report."""
    if block.method == "full":
        return ["Fine-tuning: full — every parameter trains, as in pre-training."]
    lines = [
        f"Fine-tuning: {block.method}, rank r = {block.rank} on {', '.join(block.targets)}: an "
        f"adapter A·B beside each frozen n_in × n_out projection holds r·(n_in + n_out) "
        f"parameters (Hu et al. 2021 §4.1), on the nn.Linear modules transformers names so "
        f"(PEFT's target_modules; all-linear: every one but the LM head): an FFN target in the "
        f"dense layers and the shared experts' MLP, `experts` in every routed expert (fused "
        f"parameters in transformers 5, which all-linear leaves); q, k, v are separate "
        f"matrices (a fused QKV's adapter, r·(d + 3d), is smaller); no bias or extra module "
        f"trains (PEFT's bias='none'); lora_dropout 0.",
        FINETUNE_PASSES,
        "Activations: a frozen projection's backward needs its weight, not its input, so only "
        "inputs an adapter needs are stored; each adapter adds x·A, r per token.",
    ]
    if block.method == "qlora":
        quant = QUANTS[block.frozen_dtype or "nf4"]
        scheme = ("8-bit block constants per 64 weights, one fp32 constant per 256 blocks"
                  if block.double_quant else "one fp32 constant per 64 weights")
        lines.append(
            f"QLoRA: the layers' projections in {quant.label} ({block.frozen_dtype}) with "
            f"{scheme}: {8 * (block.bytes_per_frozen_weight or 0):.6g} bits per weight "
            f"({quant.source}); embeddings, LM head, norms and biases stay at the training "
            f"dtype; a dequantised matrix is a transient buffer, not counted.")
    if block.paged:
        lines.append("Paged optimizer (bitsandbytes; Dettmers et al. 2023 §3): the optimizer "
                     "states live in unified memory and move to the host when the GPU runs "
                     "short, so the fits verdict leaves them out (they need host memory "
                     "instead, not checked here).")
    return lines
