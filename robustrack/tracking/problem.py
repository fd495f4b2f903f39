"""One closed-loop tracking problem (W 5.2): what every run, campaign sample and scenario shares.

A :class:`TrackingProblem` is frozen and validated once, when it is made: the nominal
plant (M, Q), the actual plant (M + δM, Q + δQ) or none (a campaign draws them), the
constraint (W 5.2.8), the compensator, the actuators, the initial states, the horizon,
the control sampling and the solver settings. :func:`~robustrack.tracking.simulate.simulate_tracking`
builds one from its keyword arguments; the campaigns and the scenario kinds take one; no
other object lists these fields.

Its methods run it: :meth:`TrackingProblem.simulate` (nominal, controlled and uncompensated
systems), :meth:`~TrackingProblem.nominal_run` then :meth:`~TrackingProblem.track` (many actual
plants against one nominal solve), :meth:`~TrackingProblem.peaks` (what a campaign keeps).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import KW_ONLY, dataclass

import numpy as np

from .._validate import finite, positive
from ..errors import ParameterError
from .defaults import DEFAULT_ATOL, DEFAULT_RTOL, DEFAULT_TRACKING_METHOD

__all__ = ["TrackingProblem", "ResidualInfo", "BACKENDS", "describe_value", "check_compensator_force",
           "check_positive_definite"]

#: ``backend`` values: "auto" compiles where it can (else numpy with a notice), "numpy" is the reference.
BACKENDS = ("auto", "numpy")


@dataclass(frozen=True)
class ResidualInfo:
    """What a constraint's raw residual (φ or ψ, ``Constraint.residual``) is: how a figure labels it.

    Attributes
    ----------
    symbol : str
        φ, ψ, or the rows' symbols.
    unit : str
        Unit of the largest |row| (``""``: dimensionless); ``"m or m²/s"`` when the rows
        have different units (:func:`~robustrack.plants.units.common_unit`).
    description : str
        What the residual is, with its formula.
    rows : tuple of str
        Unit of each row (empty: not stated per row).
    accel : str or None
        Unit of ``A q̈ − b`` (the acceleration-form rows: φ̈ of a holonomic row, ψ̇ of a
        velocity row); None: not stated.
    """

    symbol: str
    unit: str
    description: str
    rows: tuple = ()
    accel: str | None = None


@dataclass(frozen=True, eq=False)
class TrackingProblem:
    """The closed loop of W 5.2: nominal system, controlled actual system, and how they are solved.

    Every field is checked when the problem is made (the same messages as
    :func:`~robustrack.tracking.simulate_tracking`, which builds one); :meth:`replace` makes a
    changed copy, checked again.

    Attributes
    ----------
    nominal : Plant
        The nominal model (M, Q).
    constraint : Constraint or None
        The stacked physical constraints and control requirements (W 5.2.8); None: the
        unconstrained variant (W Remark 7.2, eq. 7.3.7).
    compensator : Compensator or None
        ``u(t, e, ė, z)``; None applies no compensation.
    q0, qd0 : ndarray (n,)
        Initial state of the nominal system.
    t_span : (float, float)
    actual : Plant or None
        The actual plant (M + δM, Q + δQ), keyword-only like every field below; None: the
        nominal plant itself (no uncertainty) — a campaign supplies its sampled plants.
    qc0, qcd0 : ndarray (n,) or None
        Initial state of the actual systems (None: the nominal one, e(0) = 0).
    actuators : Actuators or None
        Input matrix B and limits τ_max (:mod:`robustrack.tracking.actuators`); None: Qᶜ and
        Qᵘ act as generalized forces in every direction.
    sample_period : float or None
        Zero-order-hold period of the control; None: continuous (required for a
        discontinuous control function).
    gamma : float or None
        Γ of the promised bounds (None: the compensator's design value).
    transient : float or None
        Start of the bound check, from t0 (None: automatic,
        :func:`~robustrack.tracking.assess.default_transient`).
    uncompensated : bool
        Also integrate the actual system under Qᶜ alone (:meth:`simulate`).
    t_eval : ndarray (T,)
        Output times (given, or ``n_points`` evenly spaced over ``t_span``).
    n_points : int
        Number of evenly spaced output times when ``t_eval`` is not given.
    method : str
        Integrator of the controlled loop under continuous control (default BDF).
    rtol, atol : float
        Tolerances of every solve.
    backend : {"auto", "numpy"}
        "auto" runs compiled kernels where the parts have them; "numpy" the reference.
    residual : ResidualInfo or None
        What the constraint residual is, for figures and reports (None: "r").
    """

    nominal: object
    constraint: object
    compensator: object
    q0: np.ndarray
    qd0: np.ndarray
    t_span: tuple
    _: KW_ONLY
    actual: object = None
    qc0: np.ndarray | None = None
    qcd0: np.ndarray | None = None
    actuators: object = None
    sample_period: float | None = None
    gamma: float | None = None
    transient: float | None = None
    uncompensated: bool = True
    t_eval: np.ndarray | None = None
    n_points: int = 1001
    method: str = DEFAULT_TRACKING_METHOD
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    backend: str = "auto"
    residual: ResidualInfo | None = None

    def __post_init__(self):
        from .actuators import Actuators
        from .integrate import check_common, check_hold_intervals, output_times

        q0, qd0, t0, t1 = check_common(self.nominal, self.constraint, self.q0, self.qd0, self.t_span, self.rtol,
                                       self.atol, self.method)
        n = self.nominal.n
        if self.backend not in BACKENDS:
            raise ParameterError(f"`backend` must be one of {list(BACKENDS)}; got {self.backend!r}.")
        if self.actuators is not None and not isinstance(self.actuators, Actuators):
            raise ParameterError(f"`actuators` must be a robustrack.tracking.Actuators; got "
                                 f"{type(self.actuators).__name__}.")
        if self.actual is not None and self.actual.n != n:
            raise ParameterError(f"The actual plant has {self.actual.n} coordinates; the nominal has {n}.")
        comp = self.compensator
        if comp is not None and comp.discontinuous and self.sample_period is None:
            raise ParameterError(
                f"the compensator {getattr(comp, 'name', type(comp).__name__)!r} uses a "
                "discontinuous control function (sign), which stalls an adaptive integrator; pass "
                "`sample_period` (zero-order-hold control, e.g. 1e-3 s)."
            )
        sample_period = self.sample_period
        if sample_period is not None:
            sample_period = float(positive(sample_period, "sample_period"))
            check_hold_intervals(sample_period, t1 - t0)
        transient = self.transient
        if transient is not None:
            transient = float(positive(transient, "transient", allow_zero=True))
            if not transient < t1 - t0:
                raise ParameterError(f"`transient` must be in [0, {t1 - t0:g}) s (the bounds are judged after it, "
                                     f"inside the horizon); got {self.transient!r}.")
        check_compensator_force(comp, n)
        fields = {"q0": q0, "qd0": qd0, "t_span": (t0, t1), "sample_period": sample_period, "transient": transient,
                  "t_eval": output_times(self.t_eval, self.n_points, t0, t1), "rtol": float(self.rtol),
                  "atol": float(self.atol), "uncompensated": bool(self.uncompensated),
                  "qc0": None if self.qc0 is None else finite(self.qc0, "qc0").reshape(n),
                  "qcd0": None if self.qcd0 is None else finite(self.qcd0, "qcd0").reshape(n)}
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def n(self) -> int:
        """Number of generalized coordinates."""
        return self.nominal.n

    def replace(self, **changes) -> "TrackingProblem":
        """A copy with some fields changed, checked again.

        Parameters
        ----------
        **changes
            Field names and their new values.

        Returns
        -------
        TrackingProblem
        """
        return dataclasses.replace(self, **changes)

    def promised_bounds(self):
        """The bounds the compensator promises at ``gamma`` (None without a compensator).

        Returns
        -------
        PromisedBounds or None
        """
        return None if self.compensator is None else self.compensator.bounds(self.gamma)

    def nominal_run(self):
        """Integrate the nominal system once (W 5.2.9–5.2.11), for :meth:`track` with any actual plant.

        Returns
        -------
        NominalRun

        Raises
        ------
        RealizabilityError
            The actuators cannot realize the constraint force.
        SolverError
            The nominal system's solver failed.
        """
        from .simulate import integrate_nominal_run

        return integrate_nominal_run(self)

    def certify(self, box, **options):
        """Certified sup ‖δq‖∞ (Γ) and sup ‖M̃ₐ‖∞ over a box of plants and the whole run (docs/theory/certificate.md).

        Parameters
        ----------
        box : ParameterBox
            The actual plants (:class:`robustrack.certification.ParameterBox`).
        **options
            As :func:`robustrack.certification.certify` (tolerance, level, gamma, budget_s, ...).

        Returns
        -------
        Certificate
        """
        from ..certification import certify

        return certify(self, box, **options)

    def check(self, run) -> None:
        """Load the kernels of the loop once before a campaign (one notice if it runs on numpy).

        Parameters
        ----------
        run : NominalRun
            From :meth:`nominal_run`.
        """
        from .simulate import prepare

        prepare(run, self.nominal)

    def track(self, run, actual=None, *, uncompensated: bool = False, raise_on_failure: bool = True, progress=None):
        """Follow a nominal run with an actual plant: the controlled (and the uncompensated) system.

        Parameters
        ----------
        run : NominalRun
            From :meth:`nominal_run`.
        actual : Plant, optional
            Default: the problem's actual plant (else the nominal).
        uncompensated, raise_on_failure, progress
            As :func:`~robustrack.tracking.simulate_tracking` (keyword-only).

        Returns
        -------
        TrackingResult
        """
        from .simulate import track

        return track(run, actual, uncompensated=uncompensated, raise_on_failure=raise_on_failure, progress=progress)

    def peaks(self, run, actual):
        """What a campaign keeps of one actual plant: the controlled system's peaks and bound check.

        Parameters
        ----------
        run : NominalRun
        actual : Plant

        Returns
        -------
        TrackingPeaks
            :func:`~robustrack.tracking.simulate.track_peaks` (failures returned, not raised).
        """
        from .simulate import track_peaks

        return track_peaks(run, actual)

    def simulate(self, *, raise_on_failure: bool = True, progress=None):
        """The nominal, the controlled and (if ``uncompensated``) the uncompensated systems, assessed.

        Parameters
        ----------
        raise_on_failure : bool
            Raise :class:`~robustrack.errors.SolverError` (carrying the partial result) when a
            solver fails; else return it with ``success = False``.
        progress : callable, optional
            ``progress(t, t_end)`` about once a second while the controlled system is integrated.

        Returns
        -------
        TrackingResult
        """
        return self.track(self.nominal_run(), uncompensated=self.uncompensated, raise_on_failure=raise_on_failure,
                          progress=progress)

    def describe(self) -> dict:
        """A JSON-ready description (what a campaign store compares to refuse other settings).

        Returns
        -------
        dict
            Plant type and parameters, constraint type, compensator name and parameters (its
            control function by name, ε and shape), initial state, horizon and solver settings.
        """
        comp = self.compensator
        return {
            "nominal": {"type": type(self.nominal).__name__, "params": describe_value(self.nominal.params)},
            "constraint": None if self.constraint is None else type(self.constraint).__name__,
            "compensator": None if comp is None else {
                "name": getattr(comp, "name", type(comp).__name__), "params": describe_value(comp.params)},
            "q0": describe_value(self.q0), "qd0": describe_value(self.qd0),
            "t_span": describe_value(self.t_span), "sample_period": self.sample_period, "gamma": self.gamma,
            "transient": self.transient, "n_points": int(self.t_eval.size), "method": self.method,
            "rtol": float(self.rtol), "atol": float(self.atol), "backend": self.backend,
        }


def check_positive_definite(plant, role: str, q0, t0: float) -> None:
    """Refuse a plant whose M(q0, t0) is not positive definite: W 5.2.17 divides the actual system by it.

    The tracking loop's controlled actual system is M_a q̈ = Q_a + Qᶜ + M u; a massless body or
    redundant coordinates (positive semi-definite M) need the auxiliary system of W ch. 4,
    :func:`robustrack.tracking.singular.simulate_singular_tracking`. (The nominal system alone takes
    a singular M: :meth:`TrackingProblem.nominal_run` solves it on the augmented system.)

    Parameters
    ----------
    plant : Plant
    role : str
        "actual" or "nominal", for the message.
    q0 : ndarray (n,)
    t0 : float

    Raises
    ------
    ParameterError
        M(q0, t0) has no Cholesky factor (the message names the way out).
    """
    M = np.asarray(plant.mass_matrix(q0, t0), dtype=float)
    try:
        np.linalg.cholesky(M)
        return
    except np.linalg.LinAlgError:
        pass
    eig = np.linalg.eigvalsh(0.5 * (M + M.T)) if np.all(np.isfinite(M)) else np.array([np.nan])
    raise ParameterError(
        f"the {role} plant's mass matrix M(q0) is not positive definite (smallest eigenvalue "
        f"{float(np.min(eig)):.3g}): the tracking loop solves the actual system M_a q̈ = Q_a + Qᶜ + Qᵘ "
        "(W 5.2.17) with it. For a massless body or redundant coordinates, give the physical constraints "
        "apart and use robustrack.tracking.singular.simulate_singular_tracking (the auxiliary system of W ch. 4).")


def describe_value(v):
    """A JSON-ready form of a parameter value (arrays as lists, control functions by name, ε and shape).

    Parameters
    ----------
    v : object
        A number, array, mapping, sequence, control function or anything else
        (then its ``repr``).

    Returns
    -------
    object
        Plain Python numbers, strings, lists and dicts.
    """
    if isinstance(v, dict):
        return {str(k): describe_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [describe_value(x) for x in np.asarray(v, dtype=object).tolist()] if np.ndim(v) else \
            describe_value(np.asarray(v).item())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else repr(v)
    if v is None or isinstance(v, str):
        return v
    if hasattr(v, "g") and hasattr(v, "eps") and hasattr(v, "name"):  # a ControlFunction
        return {"name": v.name, "eps": float(v.eps), "params": describe_value(getattr(v, "params", {}))}
    return repr(v)


def check_compensator_force(compensator, n: int) -> None:
    """Refuse a compensator whose force is not finite at a unit error: its parameters overflow float64.

    ``u(0, e = 1, ė = 1, z = z0)`` must be finite; a gain like Γ′ = 1e308 or ε = 1e-300 makes
    it inf or NaN, and a run would only produce non-finite numbers.

    Parameters
    ----------
    compensator : Compensator or None
        None passes.
    n : int
        Number of coordinates.

    Raises
    ------
    ParameterError
        ``u`` is not finite there (the message lists the numeric parameters).
    """
    if compensator is None:
        return
    one = np.ones(n)
    with np.errstate(all="ignore"):
        u = np.asarray(compensator(0.0, one, one, compensator.initial_state(n)), dtype=float)
    if np.all(np.isfinite(u)):
        return
    params = {k: v for k, v in compensator.params.items() if isinstance(v, (int, float, np.ndarray, tuple, list))}
    if hasattr(compensator, "f"):
        params["eps"] = compensator.f.eps
    listing = ", ".join(f"`{k}` = {v!r}" for k, v in params.items())
    raise ParameterError(f"the compensator's force is not finite at a unit error (e = ė = 1 gives u = "
                         f"{u.tolist()}): its parameters overflow float64 ({listing}); take smaller gains or bound, "
                         "or a larger ε.")
