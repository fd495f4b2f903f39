"""W ch. 7–8 on the triple pendulum: a representative subset (2 s) by default, the full
10-s grid with ``pytest -m slow`` (about 12 minutes on 2 cores).

What is asserted is what the theory promises, not W's printed magnitudes: the measured
errors stay inside the bound each compensator promises whenever the run also satisfies
the bound's assumptions (‖δq‖∞ ≤ Γ, ‖M̃_a‖∞ ≤ 1 − α0/σ, measured along the run); the
compensated system tracks far better than the uncompensated one; the sign presets chatter.
"""

import pytest

from robustrack.scenarios.reproduction import run_row, w_grid

CONTINUOUS = {"gss", "gd", "gdbar"}


def check_row(doc):
    assert "error" not in doc, doc.get("error")
    m, b, r = doc["metrics"], doc["bounds"], doc["row"]
    assert doc["solver"]["success"]
    if r["compensator"] in CONTINUOUS:
        if b["assumptions_held"]:
            assert b["held"], (r, m["max_abs_e"], m["max_abs_edot"], b["e"], b["edot"])
        assert m["max_abs_e"] < 0.1 * m["actual_max_abs_e"]
        assert m["max_abs_e"] < 0.05 and m["max_abs_edot"] < 0.5


SUBSET = [
    ("triple-pendulum", "gss", "signed-quadratic", "case 1", 100.0),
    ("triple-pendulum", "gd", "cubic", "case 2", 100.0),
    ("triple-pendulum", "gdbar", "signed-quadratic", "case 1", 100.0),
    ("triple-pendulum", "gss", "cubic", "case 3 (±50 %)", 800.0),
]


@pytest.mark.parametrize("row", SUBSET, ids=lambda r: f"{r[1]}-{r[2]}-{r[3]}")
def test_subset_inside_promised_bounds(row):
    check_row(run_row(row, t_end=2.0))


def test_gamma_prime_misestimated_fivefold_changes_little():
    """W Remark 7.1: Γ′ = 500 instead of 100 changes errors and Qᵘ only slightly."""
    a = run_row(("triple-pendulum", "gss", "signed-quadratic", "case 1", 100.0), t_end=2.0)
    b = run_row(("triple-pendulum", "gss", "signed-quadratic", "case 1", 500.0), t_end=2.0)
    ratio_e = b["metrics"]["max_abs_e"] / a["metrics"]["max_abs_e"]
    ratio_Qu = b["metrics"]["max_abs_Qu"] / a["metrics"]["max_abs_Qu"]
    assert 0.2 < ratio_e < 1.0  # a larger gain tracks better, by a factor, not by orders
    assert 0.8 < ratio_Qu < 1.25  # the effort hardly changes


@pytest.mark.slow
@pytest.mark.parametrize("row", w_grid(), ids=lambda r: f"{r[0]}-{r[1]}-{r[2]}-{r[3]}-{r[4]:g}")
def test_full_grid(row):
    doc = run_row(row, t_end=10.0)
    check_row(doc)
    if row[1] in ("smc", "leitmann-corless", "lyapunov-redesign"):
        assert doc["metrics"]["chattering_Qu"] > 1e4  # continuous laws: ~1e3 (see docs/results)
        # in the sampled loop the bound is that loop's own (docs/theory/sensing.md): none derived → not judged; a
        # derived one held wherever its assumptions held (the sampled Lyapunov redesign of case 1 diverges with
        # ‖δq‖∞ far above Γ: its assumptions fail, and the verdict says so)
        b = doc["bounds"]
        if b["coverage"].startswith("no bound"):
            assert b["held"] is None
        else:
            assert b["held"] is True or doc["metrics"]["assumptions_held"] is False
