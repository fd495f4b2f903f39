"""A tracking problem with a positive semi-definite mass matrix: W 4.4.2's springs with m1 = 0.

wall–k1–(massless body 1)–k2–m2 (:class:`~robustrack.plants.examples.TwoMassSprings`,
``M = diag(0, m2)``, W 4.4.10). The physical constraint is the massless body's force balance
``φ_p = (k1 + k2) x1 − k2 x2 + k2 (l10 + d) = 0`` (W 4.4.12–4.4.13), kept by the plant; the
control requirement makes m2 follow ``x2 = l10 + d + a sin(ω t)``, stabilized
(φ̈ + 2ξω_c φ̇ + ω_c² φ = 0, docs/theory/stabilization.md). The actual m2 is uncertain; the massless body stays
massless (a structural zero). Run by :func:`~robustrack.tracking.singular.simulate_singular_tracking`
(``python scripts/singular_tracking_report.py``; ``docs/results/singular-tracking.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SingularProblem", "massless_springs_problem"]


@dataclass(frozen=True)
class SingularProblem:
    """Everything :func:`~robustrack.tracking.singular.simulate_singular_tracking` takes but the actual plant."""

    nominal: object
    physical: object
    requirement: object
    compensator: object
    q0: tuple
    qd0: tuple
    t_span: tuple

    def args(self, actual):
        """The positional arguments of ``simulate_singular_tracking``'s earlier form for this actual plant
        (:data:`~robustrack.tracking.singular.OLD_ORDER`)."""
        return (self.nominal, actual, self.physical, self.requirement, self.compensator, self.q0, self.qd0,
                self.t_span)

    def tracking_problem(self, actual, **settings):
        """The :class:`~robustrack.tracking.TrackingProblem` of this actual plant (the requirement its constraint).

        Parameters
        ----------
        actual : Plant
        **settings
            Other fields of the problem (``n_points``, ``uncompensated``, ...).

        Returns
        -------
        TrackingProblem
            On numpy (the singular loop's backend); ``simulate_singular_tracking(problem, self.physical)``.
        """
        from .problem import TrackingProblem

        return TrackingProblem(self.nominal, self.requirement, self.compensator, self.q0, self.qd0, self.t_span,
                               actual=actual, backend="numpy", **settings)


def massless_springs_problem(*, m2: float = 1.0, amplitude: float = 0.3, omega: float = 2.0, xi: float = 1.0,
                             omega_c: float = 5.0, gamma_prime: float = 5.0, t_end: float = 10.0) -> SingularProblem:
    """W 4.4.2 (m1 = 0, k1 = 2, k2 = 3, l10 = 1, d = 0.2) tracked with GSS on the auxiliary system.

    GSS: K = 10, β0 = 10, α0 = 0.5, σ = 1, signed quadratic g with α_c = 2, ε = 1e-2 (W 7.3's
    settings) and Γ′ = ``gamma_prime`` (the largest ‖δq_r‖∞ over the ±30 % box of m2 is 0.51 m/s²).
    ``α0 = 0.5`` admits ‖M̃_r‖∞ = |δm2|/(m2 + δm2) ≤ 0.5, i.e. δm2 ≥ −m2/3.

    Parameters
    ----------
    m2 : float
        Nominal mass of body 2, kg.
    amplitude, omega : float
        The reference ``x2 = l10 + d + amplitude sin(omega t)`` (m, rad/s).
    xi, omega_c : float
        Its stabilization.
    gamma_prime : float
        GSS's Γ′ (m/s²).
    t_end : float
        Horizon, s.

    Returns
    -------
    SingularProblem
        Starting on both constraints: x2 = l10 + d, ẋ2 = amplitude·omega, x1 and ẋ1 from φ_p.
    """
    import sympy as sp

    from ..constraints import Holonomic, Stabilization
    from ..controllers import GSS, control_function
    from ..plants.examples import TwoMassSprings, two_mass_springs_constraint

    nominal = TwoMassSprings(m1=0.0, m2=m2)
    x1, x2, t = sp.symbols("x1 x2 t")
    rest = nominal.l10 + nominal.d
    requirement = Holonomic([x2 - rest - amplitude * sp.sin(omega * t)], [x1, x2], t,
                            stabilization=Stabilization.second_order(xi, omega_c))
    ratio = nominal.k2 / (nominal.k1 + nominal.k2)  # φ_p = 0: x1 = ratio (x2 − l10 − d)
    v0 = amplitude * omega
    gss = GSS(K=10.0, gamma_prime=gamma_prime, beta0=10.0, alpha0=0.5, sigma=1.0,
              f=control_function("signed-quadratic", eps=1e-2, alpha_c=2.0))
    return SingularProblem(nominal, two_mass_springs_constraint(nominal), requirement, gss, (0.0, rest),
                           (ratio * v0, v0), (0.0, float(t_end)))
