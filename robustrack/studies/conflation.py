"""W ch. 3: constraints substituted into the Lagrangian ("conflated") give wrong equations.

Hamel's paradox (W 3.1) and W's four examples (W 3.3.1–3.3.4): the unconstrained
system must be described with *independent* coordinates (W 2.2 step 1) and the
constraints imposed afterwards (step 2, the fundamental equation). Substituting a
nonholonomic constraint into the kinetic energy (or Lagrangian) before deriving
Lagrange's equations "conflates" the unconstrained and the constrained descriptions:
the result is neither, and its motion is wrong — whichever way the constraint is then
imposed (W shows both ways agree, 3.3.25 = 3.3.32, 3.3.40 = 3.3.47). For *holonomic*
constraints the substitution is a change of coordinates and harmless (W 3.3.4).

How the toolbox keeps a user from building the conflated model by accident
----------------------------------------------------------------------------
1. By construction. A plant is the unconstrained system only:
   :meth:`~robustrack.plants.LagrangianPlant.from_energies` takes T, V and forces and
   has no parameter for constraints; constraints are separate objects
   (:mod:`robustrack.constraints`) imposed by the fundamental equation. No code path of
   the toolbox substitutes a constraint into a Lagrangian — except one:
2. The substitution exists only as :func:`conflated_model`, an explicit opt-in whose
   name says what it does. It returns a :class:`ConflatedModel`, which is deliberately
   *not* a :class:`~robustrack.plants.Plant`: no simulation, tracking loop, scenario or
   model builder that takes a plant accepts it (it has its own ``simulate`` to *show*
   the error, as the W ch. 3 pairs do).
3. By refusal where a builder can see it. :func:`check_not_conflated` refuses anything
   marked ``conflated`` and the footprint a full substitution leaves behind in a
   hand-written plant: a velocity that a nonholonomic constraint row involves but the
   kinetic energy no longer weighs (W 3.3.1: "this substitution has eliminated z from
   the expression for the kinetic energy T+!"). The model builders of
   :mod:`robustrack.studies.constraint_models` run it. It cannot see every conflation: a
   *partial* substitution (W 3.3.2 with α < 1) or Hamel's (a term ∝ the constraint
   dropped, W 3.1.13) leaves a Lagrangian that is a valid description of *another*
   unconstrained system — nothing in it is wrong by itself. That is why 1 and 2 are
   the guarantee and 3 is a safety net.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._lambdify import lambdify
from ..constraints import Nonholonomic
from ..errors import ParameterError
from ..plants.conflation import check_not_conflated, conflation_footprint  # noqa: F401 (re-exported)

__all__ = ["ConflatedModel", "ConflatedRun", "conflated_model", "check_not_conflated", "conflation_footprint",
           "ConflationExample", "w_chapter3_examples"]


@dataclasses.dataclass(frozen=True)
class ConflatedRun:
    """A simulation of a :class:`ConflatedModel` (:meth:`ConflatedModel.simulate`).

    Attributes
    ----------
    t : ndarray (T,)
    q, qd : ndarray (T, n)
    residual : ndarray (T, m)
        The raw constraint values along the run.
    success : bool
    message : str
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    residual: np.ndarray
    success: bool
    message: str


class ConflatedModel:
    """Equations from a Lagrangian with a constraint substituted into it (W ch. 3) — WRONG.

    Made only by :func:`conflated_model`. Deliberately *not* a
    :class:`~robustrack.plants.Plant`: nothing in the toolbox that takes a plant
    accepts it. Its "unconstrained" equations ``M+(q, q̇, t) q̈ = Q+(q, q̇, t)`` come from
    Lagrange's equations of L+ as if the coordinates were still independent (W 3.3.14,
    3.3.23, 3.3.39, 3.3.66); M+ may be singular (W 3.3.14, 3.3.66) or depend on the
    velocities (W 3.3.39). The constraint is then imposed with the fundamental equation
    (:func:`~robustrack.mechanics.solve_constrained`; singular M+ through the augmented
    system, W 2.2.10 / ch. 4), as W does; W shows that imposing it through constrained
    virtual displacements instead gives the same equations (3.3.25 = 3.3.32,
    3.3.40 = 3.3.47).

    Attributes
    ----------
    q, qd : tuple of sympy Symbols
    t : sympy Symbol
    lagrangian : sympy expression
        L+ (with the substitution made).
    M, Q : sympy Matrix
        ∂²L+/∂q̇² and the rest of Lagrange's equations (+ forces).
    constraint : Constraint
        Imposed on the conflated equations.
    substitution : dict
    fraction : float
        W's α.
    """

    conflated = True

    def __init__(self, q, qd, t, lagrangian, forces, constraint, params, substitution, fraction):
        import sympy as sp

        self.q, self.qd, self.t = tuple(q), tuple(qd), t
        self.lagrangian, self.constraint = lagrangian, constraint
        self.substitution, self.fraction = dict(substitution), float(fraction)
        qv, qdv = sp.Matrix(self.q), sp.Matrix(self.qd)
        p = sp.Matrix([lagrangian]).jacobian(qdv).T  # ∂L/∂q̇
        self.M = p.jacobian(qdv)
        F = sp.Matrix(list(forces)) if forces is not None else sp.zeros(len(self.q), 1)
        self.Q = sp.Matrix([lagrangian]).jacobian(qv).T - p.jacobian(qv) * qdv - p.diff(t) + F
        known = set(self.q) | set(self.qd) | {t}
        missing = sorted(str(x) for x in (self.M.free_symbols | self.Q.free_symbols) - known - set(params))
        if missing:
            raise ParameterError(f"Missing value(s) for parameter(s) {missing} of the conflated Lagrangian.")
        args = [*self.q, *self.qd, t, *params]
        self._values = [float(v) for v in params.values()]
        self._fM = lambdify(args, list(self.M), modules="numpy", cse=True)
        self._fQ = lambdify(args, list(self.Q), modules="numpy", cse=True)

    @property
    def n(self) -> int:
        """Number of coordinates."""
        return len(self.q)

    def _eval(self, f, shape, q, qd, t):
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        batch = np.broadcast_shapes(q.shape[:-1], qd.shape[:-1], np.shape(t))
        vals = f(*(q[..., i] for i in range(self.n)), *(qd[..., i] for i in range(self.n)), t, *self._values)
        out = np.empty(batch + (len(vals),))
        for j, v in enumerate(vals):
            out[..., j] = v
        return out.reshape(batch + shape)

    def mass_matrix(self, q, qd, t=0.0) -> np.ndarray:
        """M+(q, q̇, t) = ∂²L+/∂q̇², shape ``(..., n, n)`` (may be singular or velocity-dependent).

        Parameters
        ----------
        q, qd : array_like (..., n)
            States.
        t : float
            Time.

        Returns
        -------
        ndarray
        """
        return self._eval(self._fM, (self.n, self.n), q, qd, t)

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q+(q, q̇, t): every term of Lagrange's equations of L+ but M+ q̈, plus the forces.

        Parameters
        ----------
        q, qd : array_like (..., n)
            States.
        t : float
            Time.

        Returns
        -------
        ndarray (..., n)
        """
        return self._eval(self._fQ, (self.n,), q, qd, t)

    def motion(self, q, qd, t=0.0):
        """The conflated constrained motion: the fundamental equation on (M+, Q+) with the constraint.

        Parameters
        ----------
        q, qd : array_like (..., n)
            States.
        t : float
            Time.

        Returns
        -------
        ConstrainedMotion
            As :func:`~robustrack.mechanics.solve_constrained`.
        """
        from ..plants.motion import constrained_motion

        # M+ depends on q̇ (W 3.3.39): evaluated here, the rest as for any plant
        return constrained_motion(self, self.constraint, q, qd, t, M=self.mass_matrix(q, qd, t))

    def simulate(self, q0, qd0, t_end, *, n_points=501, rtol=1e-10, atol=1e-12) -> ConflatedRun:
        """Integrate the conflated equations from (q0, q̇0) over [0, t_end] (scipy DOP853).

        Parameters
        ----------
        q0, qd0 : array_like (n,)
            Initial state (on the constraint).
        t_end : float
            Horizon (> 0).
        n_points : int
            Output times, evenly spaced (keyword-only).
        rtol, atol : float
            Solver tolerances (keyword-only).

        Returns
        -------
        ConflatedRun
        """
        from scipy.integrate import solve_ivp

        n = self.n
        y0 = np.concatenate([np.asarray(q0, dtype=float), np.asarray(qd0, dtype=float)])
        if y0.shape != (2 * n,) or not np.all(np.isfinite(y0)) or not t_end > 0:
            raise ParameterError(f"`q0`, `qd0` must be finite of shape ({n},) and `t_end` > 0; got {q0!r}, {qd0!r}, "
                                 f"{t_end!r}.")
        t_eval = np.linspace(0.0, float(t_end), int(n_points))
        sol = solve_ivp(lambda t, y: np.concatenate([y[n:], self.motion(y[:n], y[n:], t).qdd]), (0.0, float(t_end)),
                        y0, method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
        q, qd = sol.y[:n].T, sol.y[n:].T
        return ConflatedRun(sol.t, q, qd, self.constraint.residual(q, qd, sol.t), bool(sol.success), str(sol.message))

    def __repr__(self) -> str:
        return (f"ConflatedModel(L+ = {self.lagrangian}, substitution={self.substitution}, "
                f"fraction={self.fraction}) — WRONG")


def conflated_model(q, T, V, substitution, constraint, *, qd, forces=None, params=None, t=None,
                    fraction=1.0) -> ConflatedModel:
    """Substitute a constraint into the Lagrangian, then derive the equations: the WRONG model of W ch. 3.

    ``L+ = (1 − α)(T − V) + α (T − V)|subs`` (α = ``fraction``; W 3.3.21–3.3.22 for a
    partial substitution; 3.1.13, 3.3.8, 3.3.38, 3.3.56 for full ones), Lagrange's
    equations of L+ as if the coordinates were independent, and the constraint imposed by
    the fundamental equation (see :class:`ConflatedModel`). It exists to *show* the error;
    for holonomic constraints the result is right (a change of coordinates, W 3.3.4).

    Parameters
    ----------
    q : sequence of sympy Symbols
        The coordinates (all of them: the substitution does not remove any).
    T, V : sympy expressions
        Kinetic and potential energy of the *unconstrained* system.
    substitution : dict
        ``{sub-expression: replacement}`` applied with sympy ``subs``, e.g.
        ``{zd**2: xd**2 + yd**2}`` (Appell, W 3.3.8) or ``{yd*cos(th) - xd*sin(th): 0}``
        (Hamel, W 3.1.13, with T written as W 3.1.1 writes it).
    constraint : Constraint
        The constraint, imposed on the conflated equations.
    qd : sequence of sympy Symbols
        Velocity symbols, one per coordinate (keyword-only).
    forces : sequence of sympy expressions, optional
        Generalized non-conservative forces, kept as they are (W 3.3.14).
    params : mapping, optional
        Values of the other symbols (those the substitution removes are dropped; those it
        brings in, such as the constraint's parameters, must be given).
    t : sympy Symbol, optional
        The time symbol (default: the constraint's).
    fraction : float
        α in [0, 1] (W 3.3.21): how much of the Lagrangian is substituted; default 1.

    Returns
    -------
    ConflatedModel

    Raises
    ------
    ParameterError
        ``fraction`` outside [0, 1], a substitution that changes nothing, or a parameter
        without a value.
    """
    import sympy as sp

    alpha = float(fraction)
    if not (0.0 <= alpha <= 1.0):
        raise ParameterError(f"`fraction` (W's α, 3.3.21) must be in [0, 1]; got {fraction!r}.")
    if not isinstance(substitution, dict) or not substitution:
        raise ParameterError(
            f"`substitution` must be a non-empty dict {{expression: replacement}}; got {substitution!r}.")
    L = sp.sympify(T) - sp.sympify(V)
    L_s = L.subs(substitution)
    if sp.simplify(L_s - L) == 0:
        raise ParameterError(
            f"The substitution {substitution} changes neither T nor V: write T so that the substituted "
            "sub-expression appears in it literally (sympy `subs`)."
        )
    L_p = L_s if alpha == 1.0 else (1 - alpha) * L + alpha * L_s
    t = getattr(constraint, "t", None) if t is None else t
    t = sp.Symbol("t", real=True) if t is None else t
    used = {str(x) for x in L_p.free_symbols} | {str(x) for f in (forces or ()) for x in sp.sympify(f).free_symbols}
    params = {k if isinstance(k, sp.Symbol) else sp.Symbol(str(k)): v
              for k, v in dict(params or {}).items() if str(k) in used}
    return ConflatedModel(q, qd, t, L_p, forces, constraint, params, substitution, alpha)


# --------------------------------------------------------------------------- #
# W ch. 3: Hamel's paradox and the four examples
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class ConflationExample:
    """One W ch. 3 system: the correct model and the conflated one, with a start and a horizon.

    Attributes
    ----------
    name, title, source : str
        Identifier, one-line description, seed section and equations.
    q, qd : tuple of sympy Symbols
        Coordinates and velocities.
    T, V : sympy expressions
        Kinetic and potential energy of the unconstrained system (W 2.2 step 1).
    forces : tuple or None
        Non-conservative generalized forces.
    constraint : Constraint
        The constraint (Nonholonomic or Holonomic), imposed on both models.
    substitution : dict
        What the conflated model substitutes into T and V.
    fraction : float
        W's α (1: the whole term).
    params : dict
        Parameter values.
    q0, qd0 : tuple of floats
        A start on the constraint.
    t_end : float
        Horizon, s.
    note : str
        What to expect.
    """

    name: str
    title: str
    source: str
    q: tuple
    qd: tuple
    T: object
    V: object
    forces: tuple | None
    constraint: object
    substitution: dict
    fraction: float
    params: dict
    q0: tuple
    qd0: tuple
    t_end: float
    note: str

    def correct(self):
        """``(plant, constraint)``: W's three steps (2.2) — the unconstrained plant, the constraint apart.

        Returns
        -------
        (LagrangianPlant, Constraint)
        """
        from ..plants.lagrangian import LagrangianPlant

        plant = LagrangianPlant.from_energies(list(self.q), self.T, self.V, self.forces, self.params,
                                              self.constraint.t, qd=list(self.qd))
        return plant, self.constraint

    def conflated(self) -> ConflatedModel:
        """The constraint substituted into T, V first (:func:`conflated_model`) — wrong.

        Returns
        -------
        ConflatedModel
        """
        # the substitution brings the constraint's parameters (W 3.3.2's c) into the Lagrangian
        params = {**{k: float(v) for k, v in self.constraint.params.items()}, **self.params}
        return conflated_model(list(self.q), self.T, self.V, self.substitution, self.constraint, qd=list(self.qd),
                               forces=self.forces, params=params, t=self.constraint.t, fraction=self.fraction)


def w_chapter3_examples(*, push: float = 1.0, alpha: float = 0.5) -> dict:
    """W ch. 3's systems: Hamel's skate (3.1) and the four examples (3.3.1–3.3.4).

    Parameters (W leaves forces and numbers open; ours are stated here):

    - ``hamel-skate`` (W 3.1.1–3.1.14): m = 1, s = 0.5, I_B = 0.5, no forces; conflated
      T+ drops the term ``m s θ̇ (ẏ cos θ − ẋ sin θ)`` ∝ the constraint (3.1.13).
    - ``appell-particle`` (W 3.3.1, 3.3.1–3.3.13): unit mass, gravity g = 9.81 along −z and a
      horizontal push ``push`` along x; ż² = ẋ² + ẏ²; conflated T+ = ẋ² + ẏ² (3.3.8), M+
      singular. With ``push = 0`` both models coincide (z̈ = −g/2 either way).
    - ``w-3.3.2`` (3.3.15–3.3.32): free unit particle, ẏ = c z ẋ, c = 1; the fraction α =
      ``alpha`` of ½ẏ² replaced by ½(c z ẋ)² (3.3.22).
    - ``w-3.3.3`` (3.3.33–3.3.47): V = ½x², the constraint x = c ẏ ż (nonlinear in the
      velocities; c = 1); conflated L+ with x replaced by c ẏ ż (3.3.38).
    - ``w-3.3.4`` (3.3.48–3.3.67): holonomic y = ½ z², gravity g = 1 along −y; T+ and V+
      with y = ½z², ẏ = z ż (3.3.56): the conflated model is RIGHT here.

    Parameters
    ----------
    push : float
        Horizontal force on Appell's particle (keyword-only); default 1.
    alpha : float
        W's α for example 3.3.2 (keyword-only); default 0.5.

    Returns
    -------
    dict
        name → :class:`ConflationExample`, in W's order.
    """
    import sympy as sp

    from ..constraints import Holonomic

    x, y, z, th = sp.symbols("x y z theta", real=True)
    xd, yd, zd, thd = sp.symbols("x_dot y_dot z_dot theta_dot", real=True)
    out = {}

    m, s, IB = sp.symbols("m s I_B", positive=True)
    psi_h = yd * sp.cos(th) - xd * sp.sin(th)
    out["hamel-skate"] = ConflationExample(
        "hamel-skate", "Hamel's skate: T+ drops the term proportional to the constraint",
        "W 3.1, eqs. 3.1.1–3.1.14",
        (x, y, th), (xd, yd, thd),
        m / 2 * (xd**2 + yd**2) + m * s * thd * psi_h + IB / 2 * thd**2, sp.Integer(0), None,
        Nonholonomic(psi_h, [x, y, th], [xd, yd, thd]), {psi_h: 0}, 1.0,
        {m: 1.0, s: 0.5, IB: 0.5}, (0.0, 0.0, 0.0), (1.0, 0.0, 1.0), 10.0,
        "correct: the blade's spin θ̇ decays as it aligns with its velocity; conflated: θ̈ = 0.")

    g = sp.Symbol("g", positive=True)
    f = sp.Symbol("f", real=True)
    out["appell-particle"] = ConflationExample(
        "appell-particle", "Appell's particle ż² = ẋ² + ẏ²: T+ = ẋ² + ẏ² (singular M+)",
        "W 3.3.1, eqs. 3.3.1–3.3.14",
        (x, y, z), (xd, yd, zd), (xd**2 + yd**2 + zd**2) / 2, g * z, (f, sp.Integer(0), sp.Integer(0)),
        Nonholonomic(zd**2 - xd**2 - yd**2, [x, y, z], [xd, yd, zd]), {zd**2: xd**2 + yd**2}, 1.0,
        {g: 9.81, f: float(push)}, (0.0, 0.0, 0.0), (0.6, 0.8, -1.0), 1.0,
        "gravity alone: both models give z̈ = −g/2; the horizontal push separates them.")

    c = sp.Symbol("c", real=True)
    out["w-3.3.2"] = ConflationExample(
        "w-3.3.2", "Particle with ẏ = c z ẋ: a fraction α of ½ẏ² substituted",
        "W 3.3.2, eqs. 3.3.15–3.3.32",
        (x, y, z), (xd, yd, zd), (xd**2 + yd**2 + zd**2) / 2, sp.Integer(0), None,
        Nonholonomic(yd - c * z * xd, [x, y, z], [xd, yd, zd], params={c: 1.0}), {yd: c * z * xd}, float(alpha),
        {}, (0.0, 0.0, 0.5), (1.0, 0.5, 1.0), 5.0,
        "the conflated equations depend on α (3.3.25); α = 0 is the correct model.")

    out["w-3.3.3"] = ConflationExample(
        "w-3.3.3", "Particle in V = ½x² with x = c ẏ ż: x substituted in the Lagrangian",
        "W 3.3.3, eqs. 3.3.33–3.3.47",
        (x, y, z), (xd, yd, zd), (xd**2 + yd**2 + zd**2) / 2, x**2 / 2, None,
        Nonholonomic(x - c * yd * zd, [x, y, z], [xd, yd, zd], params={c: 1.0}), {x: c * yd * zd}, 1.0,
        {}, (0.12, 0.0, 0.0), (0.1, 0.3, 0.4), 1.5,
        "the conflated Lagrangian loses the spring on x and couples ẏ, ż (3.3.39); M+ stays definite "
        "only while c ẏ, c ż are small.")

    g1 = sp.Symbol("g", positive=True)
    out["w-3.3.4"] = ConflationExample(
        "w-3.3.4", "Holonomic y = ½z²: the substitution is a change of coordinates",
        "W 3.3.4, eqs. 3.3.48–3.3.67",
        (x, y, z), (xd, yd, zd), (xd**2 + yd**2 + zd**2) / 2, g1 * y, None,
        Holonomic(y - z**2 / 2, [x, y, z]), {yd: z * zd, y: z**2 / 2}, 1.0,
        {g1: 1.0}, (0.0, 0.5, 1.0), (0.3, 0.0, 0.0), 10.0,
        "holonomic: both models agree (W 3.3.4), to the solver's tolerance.")
    return out
