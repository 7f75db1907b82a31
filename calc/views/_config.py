"""A trainer config read with --from (memory, step): the settings read and what they became,
then, under the tables, the settings ignored and the flags that overrode the file."""

from __future__ import annotations

from calc.plan.options import ConfigEcho
from calc.tables import Column, Table


def config_table(config: ConfigEcho) -> Table:
    table = Table(f"Settings read from {config.path} ({config.format})",
                  [Column("setting"), Column("value", "text"), Column("taken as")])
    for setting in config.read:
        table.add(setting["key"], str(setting["value"]), setting["meaning"])
    return table


def config_notes(config: ConfigEcho) -> list[str]:
    ignored = ", ".join(config.ignored) or "none"
    notes = [f"Ignored from {config.path} (calc does not model them): {ignored}."]
    if config.overrides:
        changed = "; ".join(f"{o['option']} {o['file']} → {o['used']}" for o in config.overrides)
        notes.append(f"Flags given override {config.path}: {changed}.")
    return notes
