"""One run configuration: every option of a training run, by section, declared once.

Each section is a schema in calc.spec whose fields are the options: the layout
(calc.spec.layout.Layout: parallelism, batch, activations, dtype, software stack), the model
states (calc.spec.memory.ModelStates: precision recipe, optimizer, GEMM precision), the offload
(calc.spec.offload.Offload), the fine-tuning (calc.spec.finetune.FineTune) and the costing
(calc.spec.costing.Costing). An option's name is its field's alias, or the field's name: the
library's keyword, the trainer readers' key and, with dashes, the CLI flag (calc.commands.args
derives the flags and their help from these fields).

`RunConfig` holds what was given, section by section, each value checked against its field's
type and range; what was not given is None and the plan's defaults apply when the run is
resolved against a model and GPUs (calc.plan.memory, calc.plan.step). A trainer config read
with `--from` gives options too (`with_file`); the options given beside it win, and the echo
says so.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Optional

from pydantic import ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from calc.errors import CalcError, one_line
from calc.lazy import load
from calc.spec.model import Frozen

if TYPE_CHECKING:  # the trainer readers load only with --from (start-up)
    from calc.trainers.base import Setting, TrainerConfig

# Each section's schema, loaded when a section is first asked for (the main command needs
# few of them: start-up).
SECTION_SCHEMAS = {
    "layout": "calc.spec.layout:Layout",
    "states": "calc.spec.memory:ModelStates",
    "offload": "calc.spec.offload:Offload",
    "finetune": "calc.spec.finetune:FineTune",
    "costing": "calc.spec.costing:Costing",
}


@cache
def schema(section: str) -> type[Frozen]:
    """The schema whose fields are `section`'s options."""
    return load(SECTION_SCHEMAS[section])


def option_name(name: str, info: FieldInfo) -> str:
    """The option a field is given as: its alias where it has one (FineTune.rank is lora_rank)."""
    return info.alias or name


@cache
def options_of(section: str) -> dict[str, str]:
    """{option: field} of one section."""
    return {option_name(name, info): name
            for name, info in schema(section).model_fields.items()}


@cache
def option_sections() -> dict[str, str]:
    """{option: section} of every option; an option belongs to one section only."""
    found: dict[str, str] = {}
    for section in SECTION_SCHEMAS:
        for option in options_of(section):
            assert option not in found, f"option {option} in {found.get(option)} and {section}"
            found[option] = section
    return found


@cache
def _given(section: str) -> type[Frozen]:
    """The section with every field optional (None: not given), each keeping its type, range
    and description; the section's cross-field rules run when the run is resolved."""
    fields: dict[str, Any] = {}
    for name, info in schema(section).model_fields.items():
        given = copy.copy(info)
        given.default, given.default_factory = None, None
        fields[name] = (Optional[info.annotation], given)  # noqa: UP045 - a runtime type
    config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, populate_by_name=True)
    return create_model(f"Given{schema(section).__name__}", __config__=config, **fields)


class RunConfig(Frozen):
    """The options given for one training run, by section; a section given nothing is None
    (and its schema is never built: the CLI's main path stays light)."""

    layout: Any = None
    states: Any = None
    offload: Any = None
    finetune: Any = None
    costing: Any = None

    @classmethod
    def from_options(cls, **options: Any) -> RunConfig:
        """The run of flat options (None values are not given); CalcError naming an unknown
        option or a value its field refuses."""
        if all(value is None for value in options.values()):
            return _NOTHING  # a library call with no run options (calc.estimate's hot path)
        sections = option_sections()
        for key, value in list(options.items()):  # a whole section given as its object
            if isinstance(value, Frozen) and type(value) in map(schema, SECTION_SCHEMAS):
                section = next(s for s in SECTION_SCHEMAS if schema(s) is type(value))
                del options[key]
                options.update({option: getattr(value, name)
                                for option, name in options_of(section).items()})
        unknown = sorted(set(options) - set(sections))
        if unknown:
            raise CalcError(f"unknown option(s) {', '.join(unknown)}; allowed: "
                            f"{', '.join(sections)}")
        by_section: dict[str, dict[str, Any]] = {}
        for option, value in options.items():
            if value is not None:
                section = sections[option]
                by_section.setdefault(section, {})[option] = value  # errors name the option
        if not by_section:  # nothing given: nothing to validate (start-up, bench/startup.py)
            return _NOTHING
        try:
            return cls(**{section: _given(section)(**values)
                          for section, values in by_section.items()})
        except ValidationError as error:
            raise CalcError(one_line(error)) from None

    @property
    def empty(self) -> bool:
        """No option given (calc.estimate's hot path skips reading the sections)."""
        return all(getattr(self, section) is None for section in SECTION_SCHEMAS)

    def given(self, *sections: str) -> dict[str, Any]:
        """{option: value} of what was given, in `sections` (default all)."""
        found = {}
        for section in sections or tuple(SECTION_SCHEMAS):
            values = getattr(self, section)
            if values is None:
                continue
            for option, name in options_of(section).items():
                if getattr(values, name) is not None:
                    found[option] = getattr(values, name)
        return found

    def get(self, option: str) -> Any:
        """The value given for `option`, or None."""
        return self.given(option_sections()[option]).get(option)

    def over(self, base: RunConfig) -> RunConfig:
        """This run's options over `base`'s."""
        return RunConfig.from_options(**{**base.given(), **self.given()})


_NOTHING = RunConfig.model_construct()  # the run given no option: built once, unvalidated


def run_config(run: RunConfig | None = None, **options: Any) -> RunConfig:
    """`options` (a library call's keywords) over `run`."""
    given = RunConfig.from_options(**options)
    return given if run is None else given.over(run)


def fp8_layout(layout: dict[str, Any], precision: str | None) -> dict[str, Any]:
    """`layout`'s fields with the fp8 dtype and recipe that the GEMM precision of the model
    states implies, so the step prices the GEMMs the memory counts
    (calc.spec.gemm_precision.fp8_choice); CalcError where they disagree."""
    from calc.spec.gemm_precision import RECIPE_PRECISION, fp8_choice

    try:
        dtype, recipe, _ = fp8_choice(layout.get("dtype"), layout.get("fp8_recipe"), precision)
    except ValueError as error:
        raise CalcError(str(error)) from None
    if precision in RECIPE_PRECISION.values() and dtype != "fp8":
        raise CalcError(f"precision={precision!r} runs the projections' GEMMs in FP8, which a "
                        f"step prices at dtype 'fp8'; dtype={dtype!r} given (a step's FP8 "
                        f"GEMMs keep the model states of bf16: leave dtype out, or give bf16 "
                        f"or fp8)")
    chosen = {"dtype": dtype, "fp8_recipe": recipe}
    return {**layout, **{key: value for key, value in chosen.items() if value is not None}}


@dataclass(frozen=True)
class FileRun:
    """A trainer config's run: its model, its options with the given ones over them, what
    was read, ignored and overridden, and the GPUs the file fixes (None: the caller's)."""

    model: Any
    run: RunConfig
    echo: ConfigEcho
    notes: list[str] = field(default_factory=list)
    gpus: int | None = None


class ConfigEcho(Frozen):
    """A trainer config read with --from: every setting read and what it became, every one
    ignored (calc.trainers)."""

    format: str
    path: str
    read: list[dict[str, Any]] = Field(description="key, value and what calc took from it")
    ignored: list[str] = Field(description="settings calc does not model")
    overrides: list[dict[str, Any]] = Field(
        default_factory=list, description="options the file sets and a flag (or keyword) "
                                          "set otherwise: option, file value, value used")


# Options a trainer config may set that the step-time model does not price: listed as ignored
# by `step --from`, not silently dropped. LoRA/QLoRA are priced (calc.timing.finetune), their
# paged optimizer states by the step's memory.
NOT_PRICED: dict[str, str] = {}


def config_echo(config: TrainerConfig, given: dict[str, Any],
                ignored: list[str] | None = None, read: list[Setting] | None = None,
                options: dict[str, Any] | None = None) -> ConfigEcho:
    """The echo of `config` with `given` (flags, keywords) over its `options` (default the
    reader's): every setting read (`read`, default all), every one ignored, every option a flag
    overrode."""
    options = config.options if options is None else options
    overrides = [{"option": key, "file": options[key], "used": value}
                 for key, value in given.items()
                 if key in options and value is not None and value != options[key]]
    return ConfigEcho(format=config.format, path=config.path,
                      ignored=config.ignored if ignored is None else ignored,
                      read=[{"key": x.key, "value": x.value, "meaning": x.meaning}
                            for x in (config.read if read is None else read)],
                      overrides=overrides)


def with_file(from_file: str, model: Any, given: RunConfig, gpus: int | None = None,
              step: bool = False) -> FileRun:
    """The run a trainer config describes (calc.trainers), with the `given` options over it.
    For the memory of a GPU (`step` False) its batch per step is left out; for a step
    (`step` True) the batch is resolved (`_batch`), an fp8 recipe becomes the fp8 dtype, the
    file's format names the stack, and its LoRA/QLoRA settings priced."""
    from calc.trainers import read_trainer_config  # a file format reader: only when asked
    from calc.trainers.base import Setting

    config = read_trainer_config(from_file)
    options, flags = dict(config.options), given.given()
    accumulation = options.pop("gradient_accumulation", None)
    framework = config.framework
    if framework is not None:  # its stack: the recipe of its states, its rules, its constants
        options["framework"] = framework
    gpus = gpus or config.world_size
    if not step:  # the memory of a GPU does not depend on the batch per step
        options.pop("global_batch", None)
        return FileRun(model if model is not None else config.model,
                       given.over(RunConfig.from_options(**options)),
                       config_echo(config, flags), gpus=gpus)
    notes: list[str] = []
    if options.get("precision") == "fp8":  # FP8 GEMMs: the step's fp8 dtype
        options["dtype"] = "fp8"
    read, ignored = [], list(config.ignored)
    for setting in config.read:
        dropped = [NOT_PRICED[o] for o in setting.options if o in NOT_PRICED]
        if dropped:
            ignored.append(f"{setting.key} ({dropped[0]})")
        else:
            read.append(setting)
    if framework is not None:
        read.append(Setting("(format)", config.format, f"framework {framework}: its stack's "
                                                       f"constants price the step"))
    run = given.over(RunConfig.from_options(
        **{k: v for k, v in options.items() if k not in NOT_PRICED}))
    run = RunConfig.from_options(**_batch(run.given("layout"), accumulation, gpus,
                                          config.path)).over(run)
    optimizer = run.get("optimizer")
    if optimizer not in (None, "adamw"):
        notes.append(f"{config.path}: optimizer {optimizer}: calc.memory counts its states; "
                     f"the step time prices AdamW's optimizer streams")
    return FileRun(model if model is not None else config.model, run,
                   config_echo(config, flags, ignored, read, options), notes, gpus)


def _batch(layout: dict[str, Any], accumulation: int | None, gpus: int | None,
           path: str) -> dict[str, Any]:
    """The global batch (and micro-batch) a file's accumulation steps imply on its GPUs, each
    stack's own default: micro-batch × accumulation steps × data-parallel ranks (one
    micro-batch per step when the file has none); CalcError when they disagree."""
    if gpus is None and "dp" not in layout:
        raise CalcError(f"--from {path}: the file does not say how many GPUs the run has; "
                        f"give --gpus (or --dp)")
    model_parallel = layout.get("tp", 1) * layout.get("pp", 1) * layout.get("cp", 1)
    dp = layout.get("dp") or (gpus // model_parallel if gpus else 1)
    if "global_batch" not in layout:  # each stack's own default (Megatron-LM, torchtitan too)
        return {"global_batch": layout.get("micro_batch", 1) * (accumulation or 1) * dp}
    if accumulation is None:
        return {"global_batch": layout["global_batch"]}
    per_rank = layout["global_batch"] // (accumulation * dp) if dp else 0
    micro = layout.get("micro_batch", max(per_rank, 1))
    if micro * accumulation * dp != layout["global_batch"]:
        raise CalcError(f"--from {path}: global batch {layout['global_batch']} ≠ micro-batch "
                        f"{micro} × {accumulation} accumulation steps × dp {dp} (the file's "
                        f"batch does not match the GPUs)")
    return {"global_batch": layout["global_batch"], "micro_batch": micro}
