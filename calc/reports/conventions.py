"""One model's training FLOPs per token under every published rule, beside calc's exact count.

`calc.conventions_table("llama2-7b")` — the table that ends arguments about MFU: the same run,
at the same tokens per second, reports an MFU that scales with the FLOPs-per-token rule it is
divided by. Rows: calc's exact count under the causal and the full attention convention, then
each rule of calc.formulas.rules (labels, assumptions and sources in calc.counting.RULES).
Every number is read from calc.estimate's reports, never re-derived.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from calc import counting
from calc.counting import DEFAULT_MFU
from calc.document import Document, pandas
from calc.presets import Preset
from calc.reports.estimate import estimate
from calc.spec import ModelSpec
from calc.spec.model import Frozen

EXACT = {
    "causal": ("calc exact, causal attention",
               "every matrix product; query i scores keys 1..i (FlashAttention's causal work)",
               "calc.formulas.flops (this calculator)"),
    "full": ("calc exact, full attention",
             "every matrix product; every query scores all T keys (an explicit T×T matmul)",
             "calc.formulas.flops (this calculator)"),
}


class RuleRow(Frozen):
    key: str = Field(description="'exact-causal', 'exact-full' or a calc.counting.RULES key")
    label: str
    train: int | float = Field(description="training FLOPs per token (forward = train / 3)")
    vs_causal: float = Field(description="train / calc's exact causal train")
    vs_full: float = Field(description="train / calc's exact full train")
    mfu: float = Field(description="the MFU this rule reports for a run whose MFU by calc's "
                                   "exact causal count is the table's base_mfu")
    assumes: str
    source: str


class ConventionsTable(Document):
    model: str
    title: str
    seq_len: int
    base_mfu: float
    rows: list[RuleRow]
    spread: float = Field(description="largest / smallest training FLOPs per token")
    highest: str
    lowest: str
    conventions: list[str]

    def to_dataframe(self) -> Any:
        """One row per rule (pandas must be installed)."""

        return pandas().DataFrame([row.model_dump() for row in self.rows]).set_index("key")


def conventions_table(model: str | ModelSpec | Preset, *, seq_len: int | None = None,
                      mfu: float | None = None) -> ConventionsTable:
    """Training FLOPs per token of `model` at `seq_len` (default: its context) by every rule."""
    reports = {kind: estimate(model, seq_len=seq_len, attention=kind) for kind in EXACT}
    causal, full = (reports[k].flops_per_token.train for k in EXACT)
    base = DEFAULT_MFU if mfu is None else mfu
    values = {f"exact-{kind}": (*EXACT[kind], reports[kind].flops_per_token.train)
              for kind in EXACT}
    for key, value in reports["causal"].flops_per_token.rules.items():
        rule = counting.RULES[key]
        values[key] = (rule.label, rule.assumes, rule.source, value)
    rows = [RuleRow(key=key, label=label, train=train, vs_causal=train / causal,
                    vs_full=train / full, mfu=base * train / causal, assumes=assumes,
                    source=source)
            for key, (label, assumes, source, train) in values.items()]
    high = max(rows, key=lambda r: r.train)
    low = min(rows, key=lambda r: r.train)
    report = reports["causal"]
    notes = [counting.FLOPS, counting.ATTENTION["causal"], counting.ATTENTION["full"],
             counting.PASSES,
             f"MFU = achieved tokens/s × FLOPs per token / peak FLOP/s: the same run, at the "
             f"same tokens/s, reports an MFU proportional to the rule it uses. The MFU column "
             f"takes a run at {base:g} by calc's exact causal count (--mfu to change it).",
             f"Spread: {high.label} / {low.label} = {high.train / low.train:.3f}.",
             counting.UNITS, f"Source of the model: {report.source}."]
    notes += [f"{row.label}: {row.source}." for row in rows[2:]]
    return ConventionsTable(
        model=report.model, title=report.title, seq_len=report.flops_per_token.seq_len,
        base_mfu=base, rows=rows, spread=high.train / low.train, highest=high.key,
        lowest=low.key, conventions=notes)
