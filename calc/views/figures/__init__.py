"""The figures of `calc.plot` / `python -m calc plot KIND`, one module per kind, each with
`draw(figure_class, models, **options) -> Figure` and a docstring whose first words name what
it draws; calc.views.plot lists the kinds from the modules here (a new module is a new kind)."""

from __future__ import annotations

COLOURS = ("#4C72B0", "#DD8452", "#C44E52", "#8172B3", "#55A868", "#937860", "#8C8C8C",
           "#DA8BC3", "#CCB974", "#64B5CD")


def parts(components: dict[str, int]) -> dict[str, int]:
    """Parameters by part: the component keys (calc.formulas.params, "attention/q") grouped by
    their prefix ("attention"), so a new component lands in its part without a list to edit."""
    grouped: dict[str, int] = {}
    for key, count in components.items():
        part = key.partition("/")[0]
        grouped[part] = grouped.get(part, 0) + count
    return grouped


def need_models(kind: str, names: list[str]) -> None:
    """A kind that draws models refuses to draw none."""
    if not names:
        from calc.errors import CalcError

        raise CalcError(f"plot {kind}: give at least one model")
