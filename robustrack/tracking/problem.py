"""One closed-loop tracking problem (W 5.2): what every run, campaign sample and scenario shares.

A :class:`TrackingProblem` is frozen and validated once, when it is made: the nominal
plant (M, Q), the actual plant (M + δM, Q + δQ) or none (a campaign draws them), the
constraint (W 5.2.8), the compensator, the actuators, the initial states, the horizon,
the control sampling and the solver settings. :func:`simulate_tracking`
builds one from its keyword arguments; the campaigns and the scenario kinds take one; no
other object lists these fields.

Its methods run it: :meth:`TrackingProblem.simulate` (nominal, controlled and uncompensated
systems), :meth:`~TrackingProblem.nominal_run` then :meth:`~TrackingProblem.track` (many actual
plants against one nominal solve), :meth:`~TrackingProblem.peaks` (what a campaign keeps).
"""

from __future__ import annotations

import dataclasses
from dataclasses import KW_ONLY, dataclass, field
from typing import ClassVar

import numpy as np

from .._json import describe_value
from .._validate import finite, positive
from ..errors import ParameterError, RobustrackNotice
from .defaults import BACKENDS, DEFAULT_ATOL, DEFAULT_RTOL, DEFAULT_TRACKING_METHOD

__all__ = ["requirement_residual", "TrackingProblem", "ResidualInfo", "simulate_tracking", "BACKENDS",
           "check_compensator_force", "FIELD_ORDER", "OldCallOrder"]


class OldCallOrder(RobustrackNotice, FutureWarning):
    """A call in the order of earlier versions, still run: one line naming the call to write instead."""


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


def requirement_residual(constraint, plant) -> ResidualInfo | None:
    """What the residual of a requirement is (:mod:`robustrack.requirements`), from its rows' units.

    Parameters
    ----------
    constraint : Constraint or None
        A :class:`~robustrack.requirements.JointTrajectory` or
        :class:`~robustrack.requirements.TaskSpaceTrajectory` (any constraint with ``row_units``).
    plant : Plant
        The nominal plant (a joint reference's rows are its coordinates).

    Returns
    -------
    ResidualInfo or None
        None for a constraint that does not state its rows' units.
    """
    from ..plants.units import common_unit

    row_units = getattr(constraint, "row_units", None)
    if row_units is None:
        return None
    try:
        rows = tuple(row_units(plant))
    except NotImplementedError:
        return None
    accel = common_unit(tuple(f"{u}/s²" if u else "1/s²" for u in rows))
    return ResidualInfo(getattr(constraint, "residual_symbol", "φ"), common_unit(rows),
                        getattr(constraint, "residual_description", type(constraint).__name__), rows, accel)


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
    actuators : Actuators, None or "auto"
        Input matrix B and limits τ_max (:mod:`robustrack.tracking.actuators`); None: Qᶜ and
        Qᵘ act as generalized forces in every direction. "auto" (the default): a robot whose plant
        declares effort limits (a URDF's ``<limit effort>``: ``plant.effort_limit``) gets one motor per
        joint at those limits (:meth:`Actuators.joint_torques`, docs/guide/robot.md "Effort limits"),
        any other plant none.
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
        What the constraint residual is, for figures and reports. None: a requirement's own
        (:func:`requirement_residual`: a joint reference in the coordinates' units, a task-space
        path in its ``unit``), else unknown ("r").
    sensor : Sensor or None
        What the compensator sees at the sample instants (:class:`robustrack.loop.Sensor`: noise,
        quantization, an estimated velocity, a delay; needs ``sample_period``); None: the state itself.
        The promised bounds are then widened by its measurement error (docs/theory/sensing.md).
    """

    #: What :func:`~robustrack.tracking.simulate.integrate_nominal_run` checks (the steps never import this
    #: module, so the class is recognised by this mark rather than by ``isinstance``).
    is_tracking_problem: ClassVar[bool] = True

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
    actuators: object = "auto"
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
    sensor: object = None
    #: Whether ``t_eval`` was given (else it is the ``n_points`` grid over ``t_span``, made again by :meth:`replace`).
    _grid_given: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self):
        from .actuators import Actuators
        from .integrate import check_common, check_hold_intervals, output_times

        q0, qd0, t0, t1 = check_common(self.nominal, self.constraint, self.q0, self.qd0, self.t_span, self.rtol,
                                       self.atol, self.method)
        n = self.nominal.n
        if self.backend not in BACKENDS:
            raise ParameterError(f"`backend` must be one of {list(BACKENDS)}; got {self.backend!r}.")
        if isinstance(self.actuators, str) and self.actuators == "auto":
            limits = getattr(self.nominal, "effort_limit", None)
            auto = (Actuators.joint_torques(self.nominal)
                    if limits is not None and np.any(np.isfinite(np.asarray(limits, dtype=float))) else None)
            object.__setattr__(self, "actuators", auto)
        if self.actuators is not None and not isinstance(self.actuators, Actuators):
            raise ParameterError(f"`actuators` must be a robustrack.tracking.Actuators, None or \"auto\"; got "
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
        _check_sensor(self.sensor, comp, sample_period, n)
        fields = {"q0": q0, "qd0": qd0, "t_span": (t0, t1), "sample_period": sample_period, "transient": transient,
                  "t_eval": output_times(self.t_eval, self.n_points, t0, t1), "rtol": float(self.rtol),
                  "atol": float(self.atol), "uncompensated": bool(self.uncompensated),
                  "qc0": None if self.qc0 is None else finite(self.qc0, "qc0").reshape(n),
                  "qcd0": None if self.qcd0 is None else finite(self.qcd0, "qcd0").reshape(n)}
        fields["_grid_given"] = self.t_eval is not None
        if self.residual is None:
            fields["residual"] = requirement_residual(self.constraint, self.nominal)
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def n(self) -> int:
        """Number of generalized coordinates."""
        return self.nominal.n

    def replace(self, **changes) -> "TrackingProblem":
        """A copy with some fields changed, checked again.

        An output grid that was not given (``n_points`` evenly spaced over ``t_span``) is made again from the
        copy's ``t_span`` and ``n_points``; a given ``t_eval`` is kept unless ``changes`` has one.

        Parameters
        ----------
        **changes
            Field names and their new values.

        Returns
        -------
        TrackingProblem
        """
        if not self._grid_given and "t_eval" not in changes:
            changes["t_eval"] = None
        return dataclasses.replace(self, **changes)

    def promised_bounds(self, run=None):
        """The bounds the compensator promises at ``gamma`` (None without a compensator).

        In a sampled loop (a ``sample_period``, with or without a ``sensor``), the bounds of that loop — the hold, the
        delay and the measurement errors inside them (:func:`robustrack.loop.sensed_bounds`, which needs the nominal
        ``run`` for the acceleration; made here if not given).

        Parameters
        ----------
        run : NominalRun, optional
            From :meth:`nominal_run` (read only with a sensor).

        Returns
        -------
        PromisedBounds or None
        """
        if self.compensator is None:
            return None
        if self.sample_period is None:
            return self.compensator.bounds(self.gamma)
        from ..loop.bounds import sensed_bounds

        return sensed_bounds(self, self.nominal_run() if run is None else run)

    def controller(self, run=None, **options):
        """The designed controller as an object: τ(t, q, q̇) = Qᶜ(t) + M(q) u (docs/guide/robot.md).

        Parameters
        ----------
        run : NominalRun, optional
            From :meth:`nominal_run` (made if not given).
        **options
            As :class:`robustrack.loop.Controller` (``sensor``, ``beyond``, ``backend``).

        Returns
        -------
        Controller
        """
        from ..loop import Controller

        return Controller(self, run, **options)

    def initial_errors(self):
        """e(0) = q_c(0) − q(0) and ė(0) of the controlled motion's start against the nominal's (zeros where the actual
        systems start on it, ``qc0``/``qcd0`` None).

        Returns
        -------
        (ndarray (n,), ndarray (n,))
        """
        e0 = np.zeros(self.n) if self.qc0 is None else np.asarray(self.qc0, dtype=float) - self.q0
        ed0 = np.zeros(self.n) if self.qcd0 is None else np.asarray(self.qcd0, dtype=float) - self.qd0
        return e0, ed0

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
        """Load the kernels of the loop once before a campaign, with those measuring along its samples (one notice
        if it runs on numpy).

        Parameters
        ----------
        run : NominalRun
            From :meth:`nominal_run`.
        """
        from .simulate import prepare

        prepare(run, self.nominal, measure=True)

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

    def peaks(self, run, actual, *, sensor=None):
        """What a campaign keeps of one actual plant: the controlled system's peaks and bound check.

        Parameters
        ----------
        run : NominalRun
        actual : Plant
        sensor : Sensor, optional
            This sample's sensor (its own noise stream; keyword-only); default the problem's.

        Returns
        -------
        TrackingPeaks
            :func:`~robustrack.tracking.simulate.track_peaks` (failures returned, not raised).
        """
        from .simulate import track_peaks

        return track_peaks(run, actual, sensor=sensor)

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
            **({} if self.sensor is None else {"sensor": self.sensor.to_dict()}),
            # the actuators and their limits (a robot's effort limits): a campaign store of other limits is refused
            **({} if self.actuators is None else {"actuators": self.actuators.to_dict()}),
        }
def _check_sensor(sensor, compensator, sample_period, n: int) -> None:
    """Refuse a sensor the loop cannot run: not a Sensor, without a hold period (with a compensator), a delay that is not
    a whole number of periods, per-joint values of another length, or GD's integral of the measured error."""
    if sensor is None:
        return
    if not hasattr(sensor, "measure") or not hasattr(sensor, "delay_samples"):
        raise ParameterError(f"`sensor` must be a robustrack.loop.Sensor; got {type(sensor).__name__}.")
    if compensator is None:  # nothing measures: the loop is Qᶜ(t) alone (a comparison's "none" row)
        sensor.per_joint(n)
        return
    if sample_period is None:
        raise ParameterError("`sensor` measures at the sample instants of a zero-order hold: set `sample_period` "
                             "(e.g. 1e-3 s for a 1 kHz loop).")
    sensor.delay_samples(sample_period)
    sensor.per_joint(n)
    Ki = getattr(compensator, "Ki", 0.0)
    if getattr(compensator, "integral_states", False) and np.any(np.asarray(Ki) > 0):
        raise ParameterError(f"`sensor` with GD's integral gain K_i = {Ki!r} > 0 is not supported: the integral of "
                             "the measured error is not modelled (take K_i = 0, as the seed's GD).")


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


#: The positional fields of :class:`TrackingProblem`, in its order: what :func:`simulate_tracking` takes.
FIELD_ORDER = ("nominal", "constraint", "compensator", "q0", "qd0", "t_span")
#: The order :func:`simulate_tracking` took in earlier versions (the actual plant second), still run with a notice.
OLD_ORDER = ("nominal", "actual", "constraint", "compensator", "q0", "qd0", "t_span")


def simulate_tracking(*fields, raise_on_failure: bool = True, progress=None, **settings):
    """Track the nominal system with the actual one: nominal, controlled and uncompensated runs.

    The nominal system is integrated first (its own solve, dense output), then the
    controlled actual system driven by it, then — if asked — the actual system under
    Qᶜ(t) alone (W 5.2; :mod:`robustrack.tracking.integrate`). The nominal trajectory
    does not depend on the compensator. The fields are :class:`TrackingProblem`'s, in its
    order: ``simulate_tracking(nominal, constraint, compensator, q0, qd0, t_span, actual=actual, **settings)``
    is ``TrackingProblem(nominal, constraint, compensator, q0, qd0, t_span, actual=actual, **settings).simulate()``
    (build one to track many actual plants against one nominal run), and
    ``simulate_tracking(problem, **changes)`` simulates ``problem.replace(**changes)``.

    The order of earlier versions, ``simulate_tracking(nominal, actual, constraint, compensator, q0, qd0,
    t_span)`` (the actual plant second, recognised as a plant), still runs, with an :class:`OldCallOrder`
    notice (a ``FutureWarning``) naming the call to write instead.

    Parameters
    ----------
    *fields
        A :class:`TrackingProblem`, or up to six of its fields by position, in its order — each may
        be given by keyword instead:

        - ``nominal`` (Plant): the nominal model (M, Q);
        - ``constraint`` (Constraint or None): the stacked physical constraints and control requirements
          (W 5.2.8); None gives the unconstrained variant (W Remark 7.2, eq. 7.3.7): no Qᶜ, the actual
          system tracks the unconstrained nominal one;
        - ``compensator`` (Compensator or None): ``u(t, e, ė, z)``; None applies no compensation (u = 0);
        - ``q0``, ``qd0`` (array_like (n,)): the initial state of the nominal system;
        - ``t_span`` ((float, float)): start and end time ``(t0, t1)``, t1 > t0.
    raise_on_failure : bool
        If a solver fails, raise :class:`SolverError` carrying the partial
        result (default); otherwise return it with ``success = False``.
    progress : callable, optional
        ``progress(t, t_end)``, called about once per second of wall time while the
        controlled system is integrated, and once at the end.
    **settings
        The fields above by keyword, and the other fields of :class:`~robustrack.tracking.problem.TrackingProblem`,
        keyword-only: ``actual`` (the actual plant M + δM, Q + δQ, e.g. ``nominal.replace(m=...)`` wrapped with a
        force perturbation; default the nominal one),
        ``qc0``, ``qcd0`` (initial state of the actual systems; default the nominal one),
        ``uncompensated`` (default True: also the actual system under Qᶜ alone),
        ``sample_period`` (zero-order hold; required for a discontinuous control function such
        as sign), ``gamma`` (Γ of the promised bounds; default the compensator's),
        ``transient`` (start of the bound check from t0; default automatic), ``t_eval`` or
        ``n_points`` (output grid, default 1001 points; metrics are also taken on every
        accepted step), ``method`` (the controlled loop's integrator under continuous control,
        default BDF with the exact Jacobian; LSODA, Radau … through scipy), ``rtol``, ``atol``
        (default 1e-8, 1e-12 as W 7.3), ``backend`` ("auto": compiled kernels where the parts
        have them, else numpy with a :class:`CompilationFallback` notice; "numpy": the
        reference), ``actuators`` (an :class:`~robustrack.tracking.actuators.Actuators`: Qᶜ
        realized as B τᶜ, Qᵘ as B τᵘ clipped to ±τ_max; saturation reported).

    Returns
    -------
    TrackingResult
        The three systems on the output times, Qᶜ, Qᵘ, residuals, the promised bounds, metrics and
        solver statistics of each solve.

    Raises
    ------
    ParameterError
        Invalid initial states, ``t_span``, tolerances, ``method``, ``sample_period`` or
        ``backend``; mismatched numbers of coordinates; a discontinuous compensator
        without ``sample_period``; a keyword that is not a field; a field given twice or missing.
    RealizabilityError
        The actuators cannot realize the constraint force (before the run, or along it: the
        time, state and reason are in the message).
    SolverError
        A solver failed and ``raise_on_failure`` is True.
    """
    if fields and getattr(fields[0], "is_tracking_problem", False):
        if len(fields) > 1:
            raise ParameterError(f"simulate_tracking(problem, ...) takes the problem alone by position (changes "
                                 f"by keyword, e.g. actual=...); got {len(fields)} positional arguments.")
        _check_settings(settings, allowed=[f.name for f in dataclasses.fields(TrackingProblem) if f.init])
        problem = fields[0].replace(**settings) if settings else fields[0]
        return problem.simulate(raise_on_failure=raise_on_failure, progress=progress)
    old = len(fields) >= 2 and _is_plant(fields[1])
    order = OLD_ORDER if old else FIELD_ORDER
    if len(fields) > len(order):
        raise ParameterError(f"simulate_tracking takes at most {len(order)} positional arguments ({', '.join(order)});"
                             f" got {len(fields)}.")
    given = dict(zip(order, fields))
    twice = sorted(set(given) & set(settings))
    if twice:
        raise ParameterError(f"simulate_tracking got `{twice[0]}` both by position and by keyword; give it once.")
    if old:
        import warnings

        rest = ", ".join(n for n in FIELD_ORDER if n in given)
        warnings.warn(f"simulate_tracking(nominal, actual, constraint, ...): the actual plant second is the old "
                      f"order; write simulate_tracking({rest}, actual=..., ...) — the order of TrackingProblem "
                      "(the old order will be refused in a later release).", OldCallOrder, stacklevel=2)
    settings = {**given, **settings}
    missing = [n for n in FIELD_ORDER if n not in settings]
    if missing:
        raise ParameterError(f"simulate_tracking needs {', '.join(f'`{n}`' for n in missing)} (the fields "
                             f"{', '.join(FIELD_ORDER)}, by position in this order or by keyword).")
    positional = [settings.pop(n) for n in FIELD_ORDER]
    _check_settings(settings)
    problem = TrackingProblem(*positional, **settings)
    return problem.simulate(raise_on_failure=raise_on_failure, progress=progress)


def _is_plant(obj) -> bool:
    """Whether ``obj`` is a plant (what the old order of :func:`simulate_tracking` had second; a constraint has
    no mass matrix)."""
    return hasattr(obj, "mass_matrix") and hasattr(obj, "given_force")


def _check_settings(settings: dict, allowed=None) -> None:
    """Refuse a keyword that is not a :class:`TrackingProblem` field, naming the ones there are."""
    fields = allowed or [f.name for f in dataclasses.fields(TrackingProblem) if f.kw_only and f.init]
    unknown = sorted(set(settings) - set(fields))
    if unknown:
        raise ParameterError(f"simulate_tracking got unknown keyword(s) {unknown}; the settings are {fields}.")
