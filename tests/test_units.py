"""Units: from the plant's coordinate kinds to every number a run prints.

Truths independent of the unit tables: what each seed plant's coordinates are (angles of a
pendulum, positions of the Duffing masses; docs/theory/triple-pendulum.md, docs/theory/seed-examples.md), and dimensional analysis by
scaling — if a compensator's declared parameter units are right, measuring lengths and
times in other units (every parameter rescaled by its declared unit) rescales u by the
unit of an acceleration and the promised bounds by those of e and ė, exactly.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import sympy as sp

from robustrack.studies.constraint_models import VakonomicPlant
from robustrack.controllers import COMPENSATORS, LQR, ComputedTorque, control_function, make_compensator
from robustrack.errors import ParameterError
from robustrack.plants import PLANTS, CoupledDuffing, coordinate_units, get_plant, triple_pendulum
from robustrack.plants.rigid_body import EulerRigidBody
from robustrack.plants.units import COORDINATE_KINDS, fill_units
from robustrack.scenarios import load_scenario
from robustrack.reports.text import format_metric
from robustrack.scenarios.units import TRACKING_METRIC_UNITS, scenario_units, tracking_units
from robustrack.tracking import TrackingMetrics
from robustrack.plants import ForcedPlant


def _plants():
    out = []
    for name, factory in PLANTS.items():
        out.append(get_plant(name, m=(1.0, 2.0), L=(1.0, 1.0)) if name == "n-link-pendulum" else get_plant(name))
    return out + [EulerRigidBody(J=(1.0, 2.0, 3.0))]


@pytest.mark.parametrize("plant", _plants(), ids=lambda p: type(p).__name__)
def test_every_shipped_plant_names_a_known_kind_per_coordinate(plant):
    kinds = plant.coordinate_kinds
    assert len(kinds) == plant.n and all(k in COORDINATE_KINDS and k is not None for k in kinds)


def test_units_follow_what_the_coordinates_are():
    pend = coordinate_units(triple_pendulum())  # angles from the vertical (docs/theory/triple-pendulum.md)
    assert (pend.q, pend.qd, pend.qdd, pend.Q) == ("rad", "rad/s", "rad/s²", "N·m")
    duff = coordinate_units(CoupledDuffing())  # positions x1, x2 of two masses (KU ex. 3)
    assert (duff.q, duff.qd, duff.qdd, duff.Q) == ("m", "m/s", "m/s²", "N")
    skate = coordinate_units(get_plant("chaplygin-sleigh"))  # x, y, φ
    assert skate.per_coordinate("q") == ("m", "m", "rad") and skate.q == "m or rad"
    quat = coordinate_units(get_plant("quaternion-rigid-body"))
    assert quat.q == "" and quat.qd == "1/s" and quat.Q == "J"


def test_wrappers_keep_the_base_kinds_and_unknown_is_said():
    base = CoupledDuffing()
    assert ForcedPlant(base, lambda q, qd, t: np.zeros(2)).coordinate_kinds == ("length", "length")
    vk = VakonomicPlant(base, lambda q, qd, t: np.zeros((1, 2)), 1)
    assert vk.coordinate_kinds == ("length", "length", None)
    assert coordinate_units(vk).q == "m or [q]"

    @dataclasses.dataclass(frozen=True, eq=False)
    class Bad(CoupledDuffing):
        coordinate_kinds = ("length", "furlong")

    with pytest.raises(ParameterError, match="coordinate_kinds"):
        coordinate_units(Bad())


def test_fill_units():
    assert fill_units("{Q}·s", "m", "m/s", "m/s²", "N") == "N·s"
    assert fill_units("{qdd}/({qd})^5", "rad", "rad/s", "rad/s²", "N·m") == "rad/s²/(rad/s)^5"
    assert fill_units("{q}", "", "1/s", "1/s²", "J") == ""  # dimensionless


def test_every_tracking_metric_has_a_unit():
    assert set(TRACKING_METRIC_UNITS) == {f.name for f in dataclasses.fields(TrackingMetrics)}
    u = scenario_units(load_scenario("duffing-tracking"))
    assert u["metrics"]["max_abs_e"] == "m" and u["metrics"]["chattering_Qu"] == "N/s"
    assert u["metrics"]["max_constraint_residual_gap"] == "m" and u["bounds"]["gamma"] == "m/s²"
    assert all("rad" not in v for v in u["metrics"].values())
    p = scenario_units(load_scenario("triple-pendulum"))
    assert p["metrics"]["effort_Qu"] == "N·m·s" and p["residual"] == "m/s²"


def test_reaching_time_reads_what_it_means():
    u = tracking_units(triple_pendulum(), "m/s²")
    promised = {"e": 1e-3, "edot": 1e-2}
    assert format_metric("reaching_time", 0.0, u, promised) == "inside the bounds from the start (t = 0 s)"
    assert format_metric("reaching_time", 1.25, u, promised) == "1.25 s"
    assert format_metric("reaching_time", None, u, promised) == "— (the errors end outside the bounds)"
    assert format_metric("reaching_time", 0.0, u, {"e": None, "edot": None}) == "— (nothing promised)"
    assert format_metric("transient_s", 0.0, u) == "0 s (judged from the start)"
    assert format_metric("max_abs_Qu", 2.5, u) == "2.5 N·m"


# ----------------------------------------------------------------------------- dimensional analysis
_L, _T = sp.symbols("L s", positive=True)


def _factor(unit: str, a: float, b: float) -> float:
    """How a quantity of ``unit`` (in terms of L, s) changes when lengths are measured ×a and times ×b."""
    if unit == "":
        return 1.0
    text = (unit.replace("²", "**2").replace("³", "**3").replace("⁴", "**4").replace("^", "**")
            .replace("·", "*"))
    text = re.sub(r"\bL\b", "L", text)
    expr = sp.sympify(text, locals={"L": _L, "s": _T})
    return float(expr.subs({_L: a, _T: b}))


def _unit(comp, name):
    return fill_units(comp.parameter_unit(name), "L", "L/s", "L/s**2", "F")


def _rescaled(comp, a, b):
    params = {k: v for k, v in comp.params.items() if k != "f"}
    new = {k: np.asarray(v) * _factor(_unit(comp, k), a, b) for k, v in params.items()}
    new = {k: float(v) if v.ndim == 0 else v for k, v in new.items()}
    f = getattr(comp, "f", None)
    if f is not None and "f" in comp.params:
        new["f"] = control_function(f.name, eps=f.eps * _factor(_unit(comp, "eps"), a, b), **f.params)
    return type(comp)(**new)


_LAWS = [make_compensator("gss", K=np.array([10.0, 4.0])), make_compensator("gd", Ki=0.5, Kd=3.0),
         make_compensator("gdbar"), make_compensator("gdbar", n=2.0, k=3.0),
         make_compensator("gss", f=control_function("cubic", eps=0.02, alpha_c=3.0)),
         ComputedTorque(Kp=100.0, Kd=20.0)]


@pytest.mark.parametrize("comp", _LAWS, ids=lambda c: f"{c.name}")
@pytest.mark.parametrize("a, b", [(1.5, 1.0), (1.0, 0.9), (1.3, 1.1)])
def test_declared_parameter_units_are_dimensionally_consistent(comp, a, b):
    rng = np.random.default_rng(3)
    e, ed, z = rng.normal(size=(3, 5, 2)) * 1e-2
    if comp.name in ("gd", "gdbar") and b != 1.0:
        # W's GD and GD-bar fix the gain of e at K_p = 1 (in 1/s², not a parameter): a new time unit
        # changes that gain's number, so only the e-free part of the law is covariant under it
        e = np.zeros_like(e)
    scaled = _rescaled(comp, a, b)
    u = comp(0.0, e, ed, z)
    u_scaled = scaled(0.0, e * a, ed * a / b, z * a * b)  # z = ∫e dt: length × time
    np.testing.assert_allclose(u_scaled, u * a / b**2, rtol=1e-10, atol=0)  # u is an acceleration
    gamma = 50.0
    if comp.name != "computed-torque":
        before, after = comp.bounds(gamma), scaled.bounds(gamma * a / b**2)
        for key, factor in (("e", a), ("edot", a / b)):
            if np.isfinite(getattr(before, key)):
                # the bounds come from bisection / fixed-point iteration to ~1e-14 relative
                assert getattr(after, key) == pytest.approx(getattr(before, key) * factor, rel=1e-9)


def test_lqr_weights_units_make_the_gains_accelerations():
    """LQR's Q = (q_e, q_ė), R: rescaled by their units, k_p = √(q_e/r) and k_d keep 1/s², 1/s."""
    c = LQR()
    a, b = 1.7, 0.8
    qe_unit, qed_unit = [fill_units(t, "L", "L/s", "L/s**2", "F") for t in c.parameter_unit("Q").split(", ")]
    r_unit = fill_units(c.parameter_unit("R"), "L", "L/s", "L/s**2", "F")
    Q = (c.Q[0] * _factor(qe_unit, a, b), c.Q[1] * _factor(qed_unit, a, b))
    scaled = LQR(Q=Q, R=c.R * _factor(r_unit, a, b))
    e, ed = np.array([1e-3, -2e-3]), np.array([4e-3, 1e-3])
    np.testing.assert_allclose(scaled(0.0, e * a, ed * a / b), c(0.0, e, ed) * a / b**2, rtol=1e-9)


def test_every_registered_compensator_cites_its_source_and_lists_its_parameters():
    for name, cls in COMPENSATORS.items():
        assert cls.source, name
        comp = cls()
        for pname in comp.params:
            if pname != "f":
                assert pname in cls.parameter_info, (name, pname)
