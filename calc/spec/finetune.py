"""Fine-tuning options: full, LoRA (Hu et al. 2021) or QLoRA (Dettmers et al. 2023).

LoRA freezes the pretrained weights and trains, beside each chosen projection W ∈ R^{n_in×n_out},
a pair A ∈ R^{n_in×r}, B ∈ R^{r×n_out} (Hu et al. 2021 §4.1): r·(n_in + n_out) parameters. QLoRA
keeps the frozen projections in 4 bits, NF4 or FP4, one absmax constant per block of 64 weights,
and with double quantisation those constants in 8 bits with one fp32 constant per 256 of them
(Dettmers et al. 2023 §3: 32/64 = 0.5 bits of constants per weight → 8/64 + 32/(64·256) =
0.127). What each target means in a model, and which it lacks, is checked here against the
ModelSpec, so a bad target or rank is one line naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from pydantic import Field, field_validator, model_validator

from calc.errors import CalcError
from calc.spec.model import MAX_WIDTH, Frozen, ModelSpec

Method = Literal["full", "lora", "qlora"]
LORA_TARGETS: tuple[str, ...] = ("q", "k", "v", "o", "up", "gate", "down")
ALL_LINEAR = "all-linear"
BITS_PER_BYTE = 8


@dataclass(frozen=True)
class QuantInfo:
    """A block-quantised storage format of the frozen weights and its constants."""

    bits: int  # per weight
    block: int  # weights per first-level constant
    constant_bits: int  # a first-level constant without double quantisation (fp32)
    double_bits: int  # a first-level constant with double quantisation
    double_block: int  # first-level constants per second-level constant
    second_bits: int  # a second-level constant
    label: str
    source: str

    def bytes_per_weight(self, double_quant: bool) -> Fraction:
        """Bytes per frozen weight, constants included (exact; block counts that divide)."""
        if double_quant:
            constants = Fraction(self.double_bits, self.block) + Fraction(
                self.second_bits, self.block * self.double_block)
        else:
            constants = Fraction(self.constant_bits, self.block)
        return (self.bits + constants) / BITS_PER_BYTE


_QLORA = ("Dettmers et al. 2023 (QLoRA) §3: blocksize 64, double quantisation with 8-bit "
          "constants and blocksize 256 (0.5 → 0.127 bits per parameter); bitsandbytes "
          "Linear4bit")
QUANTS: dict[str, QuantInfo] = {
    "nf4": QuantInfo(4, 64, 32, 8, 256, 32, "4-bit NormalFloat", _QLORA),
    "fp4": QuantInfo(4, 64, 32, 8, 256, 32, "4-bit float (bitsandbytes FP4)", _QLORA),
}


def parse_targets(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...] | str:
    """'q,v' → ('q', 'v'); 'all-linear' stays a word until the model is known."""
    if isinstance(value, str):
        if value.strip() == ALL_LINEAR:
            return ALL_LINEAR
        value = [part.strip() for part in value.split(",") if part.strip()]
    return tuple(value)


class FineTune(Frozen):
    """Which weights train: all (full), or low-rank adapters on a frozen, maybe 4-bit, base."""

    method: Method = Field("full", description="full, lora or qlora")
    rank: int = Field(8, ge=1, le=MAX_WIDTH,
                      description="LoRA rank r (default 8, PEFT's LoraConfig default)")
    targets: tuple[str, ...] | str = Field(
        ("q", "v"), description="projections with an adapter, or 'all-linear' (every projection "
                                "the model has); default q,v as Hu et al. 2021 §4.2")
    base_dtype: str | None = Field(
        None, description="QLoRA's 4-bit storage of the frozen projections, nf4 (default) or "
                          "fp4; LoRA keeps them in the training dtype")
    double_quant: bool = Field(True, description="QLoRA: quantise the block constants too")
    paged: bool = Field(False, description="optimizer states in paged (unified) memory, "
                                           "evicted to the host when the GPU runs short")

    @field_validator("targets", mode="before")
    @classmethod
    def _parse(cls, value: object) -> object:
        if not isinstance(value, (str, list, tuple)):
            return value
        targets = parse_targets(value)
        if targets != ALL_LINEAR:
            for target in targets:
                if target not in LORA_TARGETS:
                    raise ValueError(f"lora_targets: {target!r} is not a projection; allowed: "
                                     f"{', '.join(LORA_TARGETS)} or {ALL_LINEAR}")
        return targets

    @model_validator(mode="after")
    def _consistent(self) -> FineTune:
        if not self.targets:
            raise ValueError(f"lora_targets: give at least one of {', '.join(LORA_TARGETS)} "
                             f"or {ALL_LINEAR}")
        if isinstance(self.targets, tuple) and len(set(self.targets)) != len(self.targets):
            raise ValueError(f"lora_targets={','.join(self.targets)}: a target is repeated")
        if self.method == "qlora" and self.base_dtype not in (None, *QUANTS):
            raise ValueError(f"base_dtype={self.base_dtype!r}: QLoRA stores the frozen weights "
                             f"in 4 bits ({' or '.join(QUANTS)})")
        if self.method != "qlora" and self.base_dtype is not None:
            raise ValueError(f"base_dtype={self.base_dtype!r} with finetune={self.method!r}: "
                             f"only QLoRA stores the frozen weights apart from the training "
                             f"dtype ({' or '.join(QUANTS)})")
        return self

    @property
    def frozen_base(self) -> bool:
        return self.method != "full"

    def quant(self) -> QuantInfo | None:
        if self.method != "qlora":
            return None
        return QUANTS[self.base_dtype or "nf4"]


@dataclass(frozen=True)
class TargetShape:
    """One adapted projection: n_in × n_out, in dense layers and per expert in MoE layers."""

    dense: tuple[int, int] | None  # attention, or a dense FFN; None without dense FFN layers
    expert: tuple[int, int] | None  # a routed expert's matrix (MoE layers)
    shared: tuple[int, int] | None  # a shared expert's matrix


def target_shapes(spec: ModelSpec) -> dict[str, TargetShape]:
    """The matrices each target names in `spec`; a target the model lacks is absent."""
    d, h, h_kv = spec.d_model, spec.attention.n_heads, spec.n_kv_heads
    shapes: dict[str, TargetShape] = {}
    if spec.attention.mla is None:  # MLA has q_a/q_b/kv_a/kv_b projections instead
        shapes["q"] = TargetShape((d, h * spec.head_dim_qk), None, None)
        shapes["k"] = TargetShape((d, h_kv * spec.head_dim_qk), None, None)
        shapes["v"] = TargetShape((d, h_kv * spec.head_dim_v), None, None)
    shapes["o"] = TargetShape((h * spec.head_dim_v, d), None, None)
    moe = spec.moe
    dense = spec.n_layers > spec.n_moe_layers
    for name in ("up", "gate", "down"):
        if name == "gate" and not spec.ffn.gated:
            continue

        def oriented(width: int, name: str = name) -> tuple[int, int]:
            return (width, d) if name == "down" else (d, width)

        shapes[name] = TargetShape(
            oriented(spec.ffn.d_ff) if dense else None,
            oriented(moe.d_expert) if moe and spec.n_moe_layers else None,
            oriented(moe.shared_width) if moe and spec.n_moe_layers and moe.n_shared_experts
            else None)
    return shapes


def resolve_targets(spec: ModelSpec, finetune: FineTune) -> tuple[str, ...]:
    """The adapted targets of `spec`, checked: each exists, and r ≤ each matrix's smaller side."""
    if not finetune.frozen_base:
        return ()
    other = sorted(set(spec.mixer_kinds) - {"attention"}) + (
        ["FFN-less"] if "none" in spec.ffn_kinds else [])
    if other:  # calc.formulas.finetune adapts every layer's attention and FFN projections
        raise CalcError(f"finetune={finetune.method}: {spec.name} has {', '.join(other)} "
                        f"layers, whose adapters and frozen weights calc does not model "
                        f"(it adapts attention and FFN projections on every layer); full "
                        f"fine-tuning works")
    shapes = target_shapes(spec)
    if finetune.targets == ALL_LINEAR:
        if spec.attention.mla is not None:
            raise CalcError(
                f"lora_targets=all-linear: {spec.name} uses multi-head latent attention, whose "
                f"q_a/q_b/kv_a/kv_b projections calc does not adapt; name targets from "
                f"{', '.join(shapes)}")
        targets = tuple(shapes)
    else:
        targets = tuple(finetune.targets)
    for target in targets:
        if target not in shapes:
            why = ("its attention is MLA (no separate W_Q, W_K, W_V)" if target in "qkv"
                   else "its FFN is not gated")
            raise CalcError(f"lora_targets: {spec.name} has no {target!r} projection ({why}); "
                            f"it has {', '.join(shapes)}")
        shape = shapes[target]
        for matrix in (shape.dense, shape.expert, shape.shared):
            if matrix is not None and finetune.rank > min(matrix):
                raise CalcError(
                    f"lora_rank={finetune.rank} exceeds the {target!r} projection of "
                    f"{spec.name} ({matrix[0]:,} × {matrix[1]:,}): r must be at most "
                    f"{min(matrix):,}")
    return targets
