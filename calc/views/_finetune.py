"""The fine-tuning table the memory and main reports both print."""

from __future__ import annotations

from calc.plan.finetune import FineTuneBlock
from calc.tables import Column, Table


def finetune_table(ft: FineTuneBlock) -> Table:
    """Trainable and frozen parameters, by adapter target."""
    targets = ",".join(ft.targets)
    table = Table(f"Fine-tuning: {ft.method}, r = {ft.rank} on {targets}",
                  [Column("parameters"), Column("count", "int"), Column("≈", "count"),
                   Column("share", "pct")])
    everything = ft.trainable + ft.frozen
    for key, value in ft.adapters.items():
        table.add(f"  adapters: {key.removeprefix('lora/')}", value, value, value / everything)
    table.add("trainable", ft.trainable, ft.trainable, ft.trainable / everything)
    table.add("frozen", ft.frozen, ft.frozen, ft.frozen / everything)
    if ft.quantised:
        table.add(f"  of which in 4 bits ({ft.frozen_dtype})", ft.quantised, ft.quantised,
                  ft.quantised / everything)
    table.add("adapter checkpoint at 16 bits, bytes", ft.checkpoint_bytes, ft.checkpoint_bytes,
              None)
    return table
