"""Compute-optimal sizing against Chinchilla (70B, 1.4T tokens, 5.76e23 FLOPs) and against
calc's own training cost, plus the fitted law's optimum and the suggested shape."""

from __future__ import annotations

import math

import pytest

import calc
from calc import _compiled
from calc.evaluate import training_cost
from calc.reports.optimal import CHINCHILLA


def test_chinchilla_70b_14t_576e23():
    """Hoffmann et al. 2022: Chinchilla, 70B parameters on 1.4T tokens, used Gopher's budget,
    5.76e23 FLOPs (§3, Table 3 lists 5.76e23 for 67B). At C = 6·N·D and 20 tokens per parameter
    that budget gives N = √(5.76e23 / 120) = 69.3B and D = 1.39T; the other way, 6 × 70B × 1.4T
    = 5.88e23, 2.1 % more than 5.76e23 (the paper counts its FLOPs in detail, App. F)."""
    o = calc.optimal(flops=5.76e23).optimal
    assert o.params == pytest.approx(math.sqrt(5.76e23 / 120), rel=1e-12)
    assert round(o.params / 1e9, 1) == 69.3 and round(o.tokens / 1e12, 1) == 1.4
    assert 6 * o.params * o.tokens == pytest.approx(5.76e23, rel=1e-12)
    back = calc.optimal(flops=6 * 70e9 * 1.4e12).optimal
    assert back.params == pytest.approx(70e9, rel=1e-12)
    assert back.tokens == pytest.approx(1.4e12, rel=1e-12)
    assert round(back.flops / 5.76e23 - 1, 3) == 0.021


def test_budget_inverts_calcs_gpu_days():
    """C from GPUs × days × MFU × peak, spent at 6·N·D, takes exactly those days again."""
    o = calc.optimal(gpu="h100", gpus=1024, days=30, mfu=0.4).optimal
    assert o.flops == pytest.approx(1024 * 30 * 86_400 * 989.4e12 * 0.4, rel=1e-12)
    cost = training_cost(6 * o.params, o.tokens, 989.4e12, 0.4, 1024)
    assert cost.days == pytest.approx(30, rel=1e-12)
    assert o.budget.mfu_source == "flag"
    assert calc.optimal(gpu="h100", days=1).optimal.budget.mfu_source == "default"


def test_fitted_optimum_minimises_the_fitted_loss():
    """Approach 3 (Hoffmann et al. 2022 Eq. 4): N_opt ∝ C^(β/(α+β)); on C = 6ND every other
    split of the same budget has a higher fitted loss."""
    o = calc.optimal(flops=1e24).optimal
    f = o.fitted
    assert 6 * f.params * f.tokens == pytest.approx(1e24, rel=1e-9)
    fit = {"E_irr": CHINCHILLA.E, "A_fit": CHINCHILLA.A, "B_fit": CHINCHILLA.B,
           "alpha": CHINCHILLA.alpha, "beta": CHINCHILLA.beta}
    for scale in (0.9, 0.99, 1.01, 1.1):
        params = f.params * scale
        other = _compiled.scaling_loss({"N": params, "D": 1e24 / (6 * params), **fit})["loss"]
        assert other > f.loss
    assert f.loss < o.loss  # the 20-tokens point spends the same budget less well under the fit
    ten = calc.optimal(flops=1e25).optimal.fitted
    exponent = CHINCHILLA.beta / (CHINCHILLA.alpha + CHINCHILLA.beta)
    assert ten.params / f.params == pytest.approx(10**exponent, rel=1e-9)
    assert round(exponent, 2) == 0.45  # Table 2 prints a = 0.46 for approach 3 (rounded fit)


def test_fitted_loss_at_chinchilla():
    """L(70B, 1.4T) = 1.69 + 406.4/70e9^0.34 + 410.7/1.4e12^0.28 with the published constants."""
    o = calc.optimal(flops=6 * 70e9 * 1.4e12).optimal
    assert o.loss == pytest.approx(1.69 + 406.4 / 70e9**0.34 + 410.7 / 1.4e12**0.28, rel=1e-12)
    assert round(o.loss, 2) == 1.94


def test_shape_follows_the_nearest_preset():
    o = calc.optimal(flops=5.76e23).optimal
    shape = o.shape
    assert shape.aspect_from in ("llama2-70b", "llama3-70b")  # both 8,192 / 80
    assert shape.aspect_ratio == 8192 / 80
    assert shape.params == 12 * shape.layers * shape.d_model**2
    assert abs(shape.params / o.params - 1) < 0.02 and shape.d_model % 64 == 0


@pytest.mark.parametrize("kwargs", [
    dict(gpu="a100", gpus=1, days=1), dict(gpu="b200", gpus=100_000, days=365, mfu=0.5),
    dict(flops=120), dict(flops=1e40),
])
def test_extreme_budgets_stay_finite(kwargs):
    o = calc.optimal(**kwargs).optimal
    for value in (o.flops, o.params, o.tokens, o.loss, o.fitted.params, o.fitted.loss):
        assert 0 < value < float("inf")
    assert o.shape.layers >= 1 and o.shape.d_model >= 1


@pytest.mark.parametrize("kwargs, message", [
    (dict(flops=1), "give at least 6 × 20 = 120 FLOPs"),
    (dict(flops=1e24, gpu="h100", days=3), "not both"),
    (dict(gpu="h100"), "give flops, or both gpu and days"),
    (dict(), "give flops, or both gpu and days"),
    (dict(gpu="v100", days=1), "no dense bf16 peak"),
    (dict(flops=-5), "flops"),
])
def test_bad_budgets_are_one_clear_error(kwargs, message):
    with pytest.raises(calc.CalcError) as error:
        calc.optimal(**kwargs)
    assert message in str(error.value)
