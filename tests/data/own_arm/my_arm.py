"""A user's own system, not in the catalog: a planar two-link arm whose tip follows a moving line.

``problem()`` returns the TrackingProblem that ``arm.toml`` (``kind = "python"``) names; the tests
run it from this script, from the TOML through the command line, and in campaigns.
"""

import sympy as sp

from robustrack.constraints import Holonomic, Stabilization
from robustrack.controllers import GSS, control_function
from robustrack.plants import LagrangianPlant
from robustrack.tracking import TrackingProblem


def arm() -> LagrangianPlant:
    """Point masses m1 (elbow) and m2 (tip) on massless links, viscous joint friction c."""
    th1, th2, w1, w2 = sp.symbols("theta1 theta2 omega1 omega2")
    m1, m2, L1, L2, g, c = sp.symbols("m1 m2 L1 L2 g c", positive=True)
    x1, y1 = L1 * sp.sin(th1), -L1 * sp.cos(th1)
    x2, y2 = x1 + L2 * sp.sin(th1 + th2), y1 - L2 * sp.cos(th1 + th2)
    vel = lambda p: sum(sp.diff(p, th) * w for th, w in ((th1, w1), (th2, w2)))  # noqa: E731
    T = m1 * (vel(x1) ** 2 + vel(y1) ** 2) / 2 + m2 * (vel(x2) ** 2 + vel(y2) ** 2) / 2
    V = m1 * g * y1 + m2 * g * y2
    return LagrangianPlant.from_energies([th1, th2], T, V, forces=[-c * w1, -c * w2], qd=[w1, w2],
                                         params={m1: 1.0, m2: 0.5, L1: 1.0, L2: 0.8, g: 9.81, c: 0.1})


def tip_on_line() -> Holonomic:
    """φ(q, t) = x_tip(q) − (1 + 0.2 sin 2t) = 0, stabilized at second order."""
    th1, th2, t = sp.symbols("theta1 theta2 t")
    phi = sp.sin(th1) + 0.8 * sp.sin(th1 + th2) - (1 + 0.2 * sp.sin(2 * t))
    return Holonomic(phi, [th1, th2], t, stabilization=Stabilization.second_order(xi=1.0, omega=5.0))


def problem() -> TrackingProblem:
    """The arm, a 20 % heavier tip mass on the real arm, GSS, 1 s."""
    nominal = arm()
    gss = GSS(K=5.0, gamma_prime=60.0, beta0=5.0, alpha0=0.15, sigma=1.0,
              f=control_function("signed-quadratic", eps=1e-2, alpha_c=2.0))
    return TrackingProblem(nominal, tip_on_line(), gss, q0=[0.6, 0.5], qd0=[0.0, 0.0], t_span=(0.0, 1.0),
                           actual=nominal.replace(m2=0.6), n_points=101)
