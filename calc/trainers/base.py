"""What every trainer-config reader returns, and the helpers they share."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from calc.errors import CalcError
from calc.presets import list_presets, load_preset, preset_for_hub_id
from calc.spec import ModelSpec

# Values that mean "decided elsewhere" (the launcher, the Trainer, the hardware).
UNDECIDED = ("auto", None, "")
# Options a reader may set that only the step time uses (calc.step): the batch per step, as a
# count of sequences or of micro-batches accumulated per data-parallel rank. calc.memory, whose
# activations depend on the micro-batch alone, leaves them out.
STEP_ONLY = ("global_batch", "gradient_accumulation")


@dataclass(frozen=True)
class Setting:
    key: str  # as the file spells it (nested keys joined by '.')
    value: Any
    meaning: str  # what calc took from it, or why it leaves it to its default
    options: tuple[str, ...] = ()  # the options it set


@dataclass
class TrainerConfig:
    format: str
    path: str
    model: str | ModelSpec | None = None  # a preset, a spec built from the file, or None
    options: dict[str, Any] = field(default_factory=dict)  # calc.memory's keyword arguments,
    # and the STEP_ONLY ones
    read: list[Setting] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    world_size: int | None = None  # GPUs the file fixes (its launcher's), None: the caller's
    framework: str | None = None  # the stack that runs it (calc.spec.layout.Framework)

    def take(self, key: str, value: Any, meaning: str, **options: Any) -> None:
        """Record `key` as read and what it sets."""
        self.read.append(Setting(key, value, meaning, tuple(options)))
        self.options.update(options)


def peft_stack(config: TrainerConfig) -> None:
    """A Hugging Face Trainer config that trains adapters runs on calc's hf stack: PEFT wraps the
    nn.Linear modules of transformers' own model (peft 0.21.2 tuners/lora/model.py,
    LoraModel._create_and_replace) and the Trainer runs that model's forward (transformers
    5.24 trainer.py, compute_loss: model(**inputs)), so the activations are what
    transformers' modules and PEFT's LoRA layers save (calc.spec.memory.STACKS['hf'], proved by
    calc.verify.memory) and the frozen base sits in the dtype it was loaded in. A full
    fine-tune keeps the reader's stack (how the Trainer and accelerate keep its model states
    is not read here); a DeepSpeed config keeps DeepSpeed's."""
    if config.framework == "fsdp" and config.options.get("finetune") in ("lora", "qlora"):
        config.framework = "hf"


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} → {'a.b': 1}; lists stay values."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def number(key: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise CalcError(f"{key}={value!r}: expected a number") from None


def _stem(model_id: str) -> str:
    """A checkpoint's name without organisation, 'Meta-', '-Instruct', '-fp16', '-hf' or
    punctuation (NousResearch/Meta-Llama-3.1-8B and meta-llama/Llama-3.1-8B: 'llama318b')."""
    name = model_id.strip().lower().rpartition("/")[2]
    name = re.sub(r"^meta-", "", name)
    name = re.sub(r"-(instruct|fp16|hf)$", "", name)
    return re.sub(r"[^a-z0-9]", "", name)


def checkpoint_preset(model_id: str) -> tuple[str | None, str]:
    """The preset a checkpoint id in a trainer file trains, and how it was found: the preset
    citing that id's config.json (or a mirror's), else the one whose cited checkpoint has the
    same name once organisation, 'Meta-', '-Instruct', '-fp16', '-hf' and punctuation are
    dropped (a fine-tuned or re-uploaded copy of the same shape)."""
    exact = preset_for_hub_id(model_id)
    if exact is not None:
        return exact, f"model {exact}"
    wanted, found = _stem(model_id), []
    for preset in list_presets():
        cited = re.findall(r"([\w.-]+/[\w.-]+) config\.json", load_preset(preset).source)
        if any(_stem(other) == wanted for other in cited):
            found.append(preset)
    if len(found) == 1:
        return found[0], (f"model {found[0]}: the shape of the checkpoint it cites (the same "
                          f"name once -Instruct/-fp16/Meta- are dropped)")
    return None, "no preset names this checkpoint: give MODEL"
