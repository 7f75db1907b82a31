"""What every trainer-config reader returns, and the helpers they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calc.errors import CalcError
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

    def take(self, key: str, value: Any, meaning: str, **options: Any) -> None:
        """Record `key` as read and what it sets."""
        self.read.append(Setting(key, value, meaning, tuple(options)))
        self.options.update(options)


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
