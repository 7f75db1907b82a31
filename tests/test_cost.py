"""Cost, energy and emissions of a run (calc.formulas.cost) against LLaMA's own footprint table."""

from __future__ import annotations

import pytest

import calc
from calc.counting import DEFAULT_PUE
from calc.evaluate import run_cost


@pytest.mark.parametrize("model, mwh, tonnes", [
    ("llama1-7b", 36, 14), ("llama1-13b", 59, 23), ("llama1-33b", 233, 90),
    ("llama1-65b", 449, 173),
])
def test_llama_table_15(model, mwh, tonnes):
    """Touvron et al. 2023 (LLaMA) Table 15: A100-80GB at 400 W, PUE 1.1, 0.385 kg CO2e/kWh;
    the published GPU-hours (the presets' training facts) give the published MWh and tCO2eq
    (the paper rounds to whole units)."""
    run = calc.load_preset(model).training
    gpu = calc.get_gpu(run.gpu)
    money = run_cost(run.gpu_hours, None, gpu.tdp_w, DEFAULT_PUE, 385)
    assert gpu.tdp_w == 400 and DEFAULT_PUE == 1.1
    assert int(money["energy_kwh"] / 1000) == mwh
    assert round(money["co2e_kg"] / 1000) == tonnes
    assert money["cost"] is None


def test_report_shows_cost_and_energy_when_asked():
    plain = calc.estimate("llama2-7b", tokens=2e12, gpu="h100")
    assert plain.training.energy_kwh is None and plain.training.cost is None
    r = calc.estimate("llama2-7b", tokens=2e12, gpu="h100", price=2.5, grid_intensity=400)
    t = r.training
    assert t.cost == pytest.approx(2.5 * t.gpu_hours)
    assert t.energy_kwh == pytest.approx(t.gpu_hours * 700 * DEFAULT_PUE / 1000)
    assert t.co2e_kg == pytest.approx(t.energy_kwh * 0.4)
    assert any(line.startswith("Energy = GPU-hours") for line in r.conventions)
    priced = calc.estimate("llama2-7b", tokens=2e12, gpu="h100", pue=1.4).training
    assert priced.energy_kwh == pytest.approx(t.energy_kwh * 1.4 / DEFAULT_PUE)


def test_compare_shows_the_cost_rows_only_when_asked():
    asked = calc.compare(["gpt2", "llama2-7b"], tokens=1e12, gpu="a100", energy=True)
    assert asked.value("training.energy_kwh", "llama2-7b") > 0
    plain = calc.compare(["gpt2", "llama2-7b"], tokens=1e12, gpu="a100")
    assert all(row.key != "training.energy_kwh" for row in plain.rows)


@pytest.mark.parametrize("options, message", [
    (dict(pue=0.9), "pue"), (dict(price=-1), "price"),
])
def test_bad_cost_input(options, message):
    with pytest.raises(calc.CalcError, match=message):
        calc.estimate("gpt2", tokens=1e9, gpu="a100", **options)


def test_cli(cli):
    result = cli("llama2-7b", "--tokens", "2T", "--gpu", "a100", "--price", "1.8",
                 "--grid-intensity", "385")
    assert result.code == 0 and "cost at 1.8 per GPU-hour" in result.out
