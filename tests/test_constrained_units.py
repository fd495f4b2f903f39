"""Every number of a constrained (non-tracking) run carries its unit (issue 11).

The expected units are derived here from the physics of each scenario — what its residual φ or
ψ is, in SI, and how often the constraint row is differentiated to A q̈ = b (a holonomic row
twice: A q̈ − b = φ̈; a velocity row once: ψ̇) — not read from the code under test.
"""

from __future__ import annotations

import json
import math

import pytest
import sympy as sp

from robustrack.cli import main
from robustrack.errors import ParameterError
from robustrack.plants import LagrangianPlant
from robustrack.scenarios import KINDS, list_scenarios, load_scenario, run_scenario
from robustrack.scenarios.units import per_time, residual_info

SHORT = ["simulation.t_end=0.2", "simulation.n_points=21"]

# scenario → (residual, A q̈ − b, closed-form error, {extra: unit}); "" is dimensionless
EXPECTED = {
    # ψ = ż² − ẋ² − ẏ²: a squared speed; differentiated once
    "appell-particle": ("m²/s²", "m²/s³", "m", {}),
    # ψ = ẋ sin φ − ẏ cos φ: a velocity (sin φ is a number)
    "chaplygin-skate": ("m/s", "m/s²", "m or rad", {}),
    # φ = R sin β θ − y: a length (θ in rad, a number); holonomic
    "rolling-wheel": ("m", "m/s²", "rad or m", {"max_Qc_error_vs_closed_form": "N·m or N"}),
    # φᵢ = rᵢ − εᵢxᵢ − pᵢ (m, holonomic), ψᵢ = xᵢẏᵢ − yᵢẋᵢ − cᵢ (m·m/s, velocity row): mixed rows
    "two-ellipses": ("m or m²/s", "m/s² or m²/s²", "m", {"max_Qc": "N", "max_Qc_error_vs_closed_form": "N"}),
    # φ = ½(uᵀu − 1), u a unit quaternion: a number; holonomic; Q conjugate to a number is an energy
    "quaternion-rigid-body": ("", "1/s²", "", {"max_Qc_error_vs_closed_form": "J", "energy_drift": "J"}),
    # ψ = x φ̇ − r ψ̇: metres times rad/s
    "speed-reducer": ("m/s", "m/s²", "rad or m", {"max_x_error_vs_closed_form": "m",
                                                  "max_phi_dot_error_vs_closed_form": "rad/s",
                                                  "rotational_energy_drift": "J"}),
    # ψ = ω·l (l a unit vector): rad/s; the servo torque a moment along a unit vector
    "suslov-servo": ("rad/s", "rad/s²", "rad", {"max_abs_omega_dot_l": "rad/s", "energy_drift": "J",
                                                "max_abs_servo_torque": "N·m", "min_realizability_margin": ""}),
    # ψ = E₁/(m₁L₁) = ½L₁θ̇₁² − g cos θ₁: m·(1/s)² and m/s²; E₁ an energy
    "triple-pendulum-energy": ("m/s²", "m/s³", "rad", {"E1_initial": "J", "E1_final": "J",
                                                       "E1_max_second_half": "J"}),
    # φ = x² + y² − L²(…): an area; holonomic
    "cartesian-pendulum": ("m²", "m²/s²", "m", {}),
    # φ = (k₁ + k₂)x₁ − k₂x₂ + …: N/m · m, a force; holonomic
    "two-masses-springs": ("N", "N/s²", "m", {}),
    # φ = x₁ − x₂ − A e^(−αt) sin ωt: a length; holonomic
    "duffing": ("m", "m/s²", "m", {}),
    # ψ = ẏ − z ẋ, z a number (KU)
    "nonholonomic-particle": ("m/s", "m/s²", "m", {}),
    # Φ (m/s) and μ̇ − λ with λ in N·s (λ̇ ∂Φ/∂ẋ is a force, ∂Φ/∂ẋ = sin φ); μ = ∫λ dt in N·s²
    "chaplygin-skate-vakonomic": ("m/s or N·s", "m/s² or N", "m or rad or N·s²",
                                  {"x_end": "m", "lambda_end": "N·s", "energy_drift": "J", "x_end_nonholonomic": "m"}),
    # a penalty model: no constraint rows, so no residual at all
    "skate-friction": (None, None, "m or rad", {"max_abs_slip": "m/s", "x_end": "m"}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_units_of_each_constrained_run(name):
    residual, accel, closed, extra = EXPECTED[name]
    summary = run_scenario(load_scenario(name, SHORT))
    mu, m = summary["units"]["metrics"], summary["metrics"]
    if residual is None:
        assert m["max_constraint_residual"] is None and m["max_accel_residual"] is None  # not NaN
    else:
        assert mu["max_constraint_residual"] == mu["final_constraint_residual"] == residual
        assert mu["max_accel_residual"] == accel
    if m["max_error_vs_closed_form"] is not None:
        assert mu["max_error_vs_closed_form"] == closed
    for key, unit in extra.items():
        assert key in m and mu[key] == unit, key
    # nothing printed without a unit entry: every metric of the run is in the units map
    assert set(m) <= set(mu), set(m) - set(mu)


def test_every_catalog_constrained_run_has_a_unit_for_every_metric():
    for sc in list_scenarios():
        if KINDS[sc.kind].tracking or sc.name in EXPECTED:
            continue
        summary = run_scenario(load_scenario(sc.name, SHORT))
        assert set(summary["metrics"]) <= set(summary["units"]["metrics"]), sc.name
        assert "[q]" not in json.dumps(summary["units"]["metrics"], ensure_ascii=False), sc.name  # none unknown


def test_cli_prints_the_units_and_each_row_of_a_mixed_residual(tmp_path, capsys):
    assert main(["run", "two-ellipses", *[a for s in SHORT for a in ("--set", s)], "--json",
                 str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    rows = doc["metrics"]["max_constraint_residual_per_row"]
    assert doc["units"]["residual_rows"] == ["m", "m", "m²/s", "m²/s"]
    assert math.isclose(max(rows), doc["metrics"]["max_constraint_residual"])
    line = next(ln for ln in out.splitlines() if "per row" in ln)
    assert line.split(None, 2)[2].endswith("m²/s") and line.count(" m,") == 2 and line.count("m²/s") == 2
    assert "max_Qc " in out and next(ln for ln in out.splitlines() if "max_Qc " in ln).rstrip().endswith(" N")
    assert all(isinstance(v, (float, int, list)) or v is None for v in doc["metrics"].values())  # plain numbers


def test_appell_cli_line():
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["run", "appell-particle"]) == 0
    lines = {ln.split()[0]: ln.split()[1:] for ln in buf.getvalue().splitlines()[1:] if ln.startswith("  max")}
    assert lines["max_constraint_residual"][1] == "m²/s²" and lines["max_accel_residual"][1] == "m²/s³"
    assert lines["max_error_vs_closed_form"][1] == "m"


@pytest.mark.parametrize("unit, order, expected", [
    ("m", 2, "m/s²"), ("m/s", 1, "m/s²"), ("m/s", 2, "m/s³"), ("m²/s²", 1, "m²/s³"), ("", 2, "1/s²"),
    ("N·s", 1, "N"), ("N", 0, "N"), ("rad/s", 1, "rad/s²")])
def test_per_time(unit, order, expected):
    assert per_time(unit, order) == expected


def test_residual_info_rows():
    info = residual_info("(φ, ψ)", "d", [("m", 2), ("m/s", 1)])
    assert (info.unit, info.rows, info.accel) == ("m or m/s", ("m", "m/s"), "m/s²")


def test_lagrangian_plant_kinds():
    x, v, m = sp.symbols("x v m")
    plant = LagrangianPlant.from_energies([x], m * v**2 / 2, 0, qd=[v], params={m: 1.0}, kinds=["length"])
    assert plant.coordinate_kinds == ("length",) and plant.replace(m=2.0).coordinate_kinds == ("length",)
    assert LagrangianPlant.from_energies([x], m * v**2 / 2, 0, qd=[v], params={m: 1.0}).coordinate_kinds == (None,)
    with pytest.raises(ParameterError, match="`kinds`"):
        LagrangianPlant.from_energies([x], m * v**2 / 2, 0, qd=[v], params={m: 1.0}, kinds=["mass"])
