"""The main report (calc.estimate) as tables: parameters, FLOPs per token, rules, training."""

from __future__ import annotations

from calc.counting import (
    BACKWARD_PER_FORWARD,
    FROZEN_BACKWARD_PER_FORWARD,
    RULES,
    TERA,
    TOKENS_PER_PARAMETER,
    TRAIN_PER_FORWARD,
)
from calc.plan.training import TrainingReport
from calc.reports.estimate import Report
from calc.tables import Column, Table, View
from calc.views._finetune import finetune_table


def _params_table(report: Report) -> Table:
    p = report.params
    table = Table("Parameters", [Column("component"), Column("per layer", "int"),
                                 Column("layers", "int"), Column("total", "int"),
                                 Column("≈", "count"), Column("share", "pct")])
    for key, total in p.components.items():
        per_layer = p.per_layer.get(key)
        table.add(key, per_layer, p.layers.get(key), total, total,
                  total / p.total)
    table.add("total", None, None, p.total, p.total, 1.0)
    table.add("non-embedding (Kaplan N)", None, None, p.non_embedding, p.non_embedding,
              p.non_embedding / p.total)
    table.add("embedding", None, None, p.embedding, p.embedding, p.embedding / p.total)
    table.add("active per token", None, None, p.active, p.active, p.active / p.total)
    if p.mtp:
        table.add("multi-token prediction (apart)", None, None, p.mtp, p.mtp, p.mtp / p.total)
    if p.published is not None:
        ratio = p.total / (p.published - p.published_buffers)
        extra = f"; incl. {p.published_buffers:,} buffer values" if p.published_buffers else ""
        table.add(f"published (calc / published = {ratio:.4f}{extra})", None, None,
                  p.published, p.published, None)
    rule = (f"Chinchilla tokens ({TOKENS_PER_PARAMETER} per parameter)" if p.active == p.total
            else f"Chinchilla tokens ({TOKENS_PER_PARAMETER} × all parameters: a rule fitted "
                 f"on dense models, not one for MoE)")
    table.add(rule, None, None, p.chinchilla_tokens, p.chinchilla_tokens, None)
    return table


def _flops_table(report: Report) -> Table:
    f = report.flops_per_token
    title = (f"FLOPs per token (T = {f.seq_len:,}, {f.attention} attention; "
             f"attention share {100 * f.attention_share:.1f} %)")
    table = Table(title, [Column("quantity"), Column("FLOPs per token", "int"),
                          Column("≈", "flops"), Column("vs forward", "ratio")])
    for key, value in f.components.items():
        table.add(f"forward: {key}", value, value, value / f.forward)
    table.add("forward", f.forward, f.forward, 1.0)
    if report.finetune is None:
        table.add(f"backward ({BACKWARD_PER_FORWARD} × forward)", f.backward, f.backward,
                  f.backward / f.forward)
        table.add(f"train ({TRAIN_PER_FORWARD} × forward)", f.train, f.train,
                  f.train / f.forward)
    else:  # calc.formulas.finetune: frozen weights take input gradients only
        table.add("forward: LoRA adapters", f.adapters_forward, f.adapters_forward,
                  f.adapters_forward / f.forward)
        table.add(f"backward (frozen weights {FROZEN_BACKWARD_PER_FORWARD} ×, attention and "
                  f"adapters {BACKWARD_PER_FORWARD} ×)", f.backward, f.backward,
                  f.backward / f.forward)
        table.add(f"train ({report.finetune.method})", f.train, f.train, f.train / f.forward)
    table.add(f"inference: 1 new token at context {f.seq_len:,}", f.inference, f.inference,
              f.inference / f.forward)
    table.add("2N (forward rule)", f.two_n, f.two_n, f.two_n / f.forward)
    return table


def _rules_table(report: Report) -> Table:
    f = report.flops_per_token
    table = Table("Training FLOPs per token: calc's exact count beside the published rules",
                  [Column("rule"), Column("FLOPs per token", "int"), Column("≈", "flops"),
                   Column("rule / exact", "ratio"), Column("assumes")])
    step = f", {report.finetune.method} step" if report.finetune else ""
    table.add(f"calc exact ({f.attention}{step})", f.train, f.train, 1.0,
              "every matmul, attention over the chosen triangle")
    for key, value in f.rules.items():
        rule = RULES[key]
        table.add(rule.label, round(value), value, value / f.train, rule.assumes)
    return table


def _amount(value: float) -> str:
    """Thousands separators for everyday sizes, scientific beyond 1e15."""
    return f"{value:.4g}" if value >= 1e15 else f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def _cost_rows(table: Table, t: TrainingReport) -> None:
    """Cost, energy and emissions when they were asked for (calc.formulas.cost)."""
    scale = t.gpu_hours_6nd / t.gpu_hours if t.gpu_hours else 1.0
    if t.cost is not None:
        table.add(f"cost at {t.price:g} per GPU-hour", _amount(t.cost), _amount(t.cost * scale))
    if t.energy_kwh is not None:
        table.add(f"energy, kWh (TDP × PUE {t.pue:g})", _amount(t.energy_kwh),
                  _amount(t.energy_kwh * scale))
    if t.co2e_kg is not None:
        table.add(f"emissions, t CO2e ({t.grid_intensity:g} g/kWh)", _amount(t.co2e_kg / 1000),
                  _amount(t.co2e_kg / 1000 * scale))


def _training_table(report: Report) -> Table:
    t = report.training
    assert t is not None
    table = Table("Training", [Column("quantity"), Column("value", "text"),
                               Column("6N·D instead", "text")])
    table.add("tokens", f"{t.tokens:.4g}", "")
    table.add("training FLOPs", f"{t.flops:.4g}", f"{t.flops_6nd:.4g}")
    if t.gpu is not None:
        recipe = t.dtype if t.precision == "bf16" else f"{t.dtype} + {t.precision} effective"
        table.add("GPU", f"{t.gpu} ({t.gpu_title}), {recipe} dense peak "
                         f"{t.peak_flops / TERA:g} TFLOP/s", "")
        if t.low_precision_share is not None:
            table.add(f"{t.precision} GEMMs", f"{100 * t.low_precision_share:.1f} % of the "
                      f"FLOPs at {t.low_precision_peak / TERA:g} TFLOP/s", "")
        table.add("MFU", f"{t.mfu:.3g} ({t.mfu_source})", "")
        table.add("GPU-hours", _amount(t.gpu_hours), _amount(t.gpu_hours_6nd))
        table.add(f"days on {t.gpus:,} GPU{'s' if t.gpus > 1 else ''}", _amount(t.days),
                  _amount(t.days * t.gpu_hours_6nd / t.gpu_hours))
        _cost_rows(table, t)
    else:
        table.add("GPU-hours", "give --gpu for GPU-hours", "")
    if t.predicted is not None:
        p = t.predicted
        fits = "" if p.fits else " (does NOT fit in memory)"
        table.add("MFU predicted by calc step", f"{p.mfu:.3g} ({p.step_time_s:,.3g} s per step)",
                  "")
        table.add(f"  {'searched best layout' if p.searched else 'layout'}",
                  p.layout.label + fits, "")
        table.add("GPU-hours at the predicted MFU", _amount(p.gpu_hours), "")
        table.add(f"days on {t.gpus:,} GPUs at the predicted MFU", _amount(p.days), "")
    pub = t.published
    if pub is not None:
        hours = _amount(pub.gpu_hours) if pub.gpu_hours else "not published"
        other = f"; a different run: {', '.join(pub.differs)} differ" if pub.differs else ""
        table.add(f"published ({pub.tokens:.3g} tokens on {pub.gpu or 'unpublished hardware'}"
                  f"{other})", f"{hours} GPU-hours", "")
        if pub.ratio is not None:
            table.add("estimate / published", f"{pub.ratio:.3f}",
                      f"{t.gpu_hours_6nd / pub.gpu_hours:.3f}")
            table.add("MFU the published hours imply", f"{pub.implied_mfu:.3f}",
                      f"{pub.implied_mfu_6nd:.3f}")
        if pub.mfu is not None:
            table.add("published MFU", f"{pub.mfu:g}", "")
        if pub.flops is not None:
            table.add("published training FLOPs", f"{pub.flops:.3g}", "")
    return table


def _sources(report: Report) -> list[str]:
    lines = [f"Source of the model: {report.source}."]
    if report.params.published_source:
        lines.append(f"Source of the published count: {report.params.published_source}.")
    training = report.training
    if training is not None and training.published is not None:
        pub = training.published
        scope = f" ({pub.scope})" if pub.scope else ""
        lines.append(f"Source of the published run{scope}: {pub.source}.")
    return lines


def view(report: Report) -> View:
    tables = [_params_table(report), _flops_table(report), _rules_table(report)]
    if report.finetune is not None:
        tables.insert(1, finetune_table(report.finetune))
    if report.training is not None:
        tables.append(_training_table(report))
    return View(f"{report.model} — {report.title}", tables,
                report.notes + report.conventions + _sources(report))
