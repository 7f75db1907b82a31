"""What every published row shares, whatever it measured (a training step, a fine-tuning run, a
serving benchmark): where its figures were printed, which independent publisher it belongs to,
and which settings the source left unprinted and calc filled in (`assumed`, from the source's
text, written before any prediction was compared)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from calc.spec.base import Frozen


class PublishedRow(Frozen):
    """A row of presets/published/: its provenance beside the fields its kind adds."""

    assumed: tuple[str, ...] = Field(
        (), description="settings the source does not print, filled in by calc (notes say how)")
    source: str = Field(min_length=1, description="document, table and commit (or page) of the "
                                                  "figures")
    publisher: str = Field(
        min_length=1, description="the independent source the row belongs to (one paper, or "
                                  "one framework's or vendor's pages): leave-one-source-out "
                                  "holds out every row of a publisher at once")
    notes: str = Field("", description="what is uncertain, derived or assumed")

    def check_assumed(self, allowed: Iterable[str]) -> None:
        """ValueError naming what `assumed` lists beyond the settings calc may assume."""
        allowed = tuple(allowed)
        unknown = sorted(set(self.assumed) - set(allowed))
        if unknown:
            raise ValueError(f"assumed: {unknown} are not settings calc may assume "
                             f"(allowed: {', '.join(allowed)})")
