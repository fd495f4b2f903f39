"""The result of a tracking simulation: arrays, typed metrics, lossless save/load, plot().

:class:`TrackingResult` holds the three systems W compares (W 5.2, 7.3): the
controlled nominal system (q), the controlled actual system (q_c, under Qᶜ(t) + Qᵘ)
and optionally the actual system under Qᶜ(t) alone (q_a, the "uncompensated" one),
on the output grid, plus Qᶜ, Qᵘ, e = q_c − q, ė, constraint residuals, the bounds the
compensator promised, :class:`TrackingMetrics` and solver statistics.
"""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._files import write_atomic
from .._json import from_jsonable, to_jsonable
from ..errors import ParameterError

__all__ = ["TrackingResult", "TrackingMetrics", "RunInfo"]

_ARRAYS = ("t", "q", "qd", "qc", "qcd", "qa", "qad", "z", "Qc", "Qu", "residual_nominal",
           "residual_controlled", "u_times", "u_held", "tau", "contact")


@dataclass(frozen=True)
class TrackingMetrics(Mapping):
    """The metrics of a tracking run (:func:`robustrack.tracking.assess.tracking_metrics`).

    Norms over coordinates are infinity norms; maxima are taken on the solution itself
    (every accepted step and the output grid). Units are those of the coordinates
    (rad, m), their rates, and generalized forces (N·m, N). Fields that do not apply to
    a run are None (e.g. ``actual_max_abs_e`` without the uncompensated copy; the
    saturation, command and realizability fields without actuators — see
    :mod:`robustrack.tracking.actuators`: ``saturation_fraction`` is the time-weighted
    fraction of the run with any command beyond its limit). Read-only
    mapping access (``metrics["max_abs_e"]``) serves JSON and tables; an unknown name is
    a KeyError, never a silent new field.
    """

    max_abs_e: float
    max_abs_edot: float
    rms_e: float
    rms_edot: float
    iae_e: float
    max_abs_e_per_coordinate: list
    max_abs_edot_per_coordinate: list
    rms_e_per_coordinate: list
    rms_edot_per_coordinate: list
    iae_e_per_coordinate: list
    max_abs_Qu: float
    max_abs_Qc: float
    effort_Qu: float
    chattering_Qu: float
    transient_s: float
    reaching_time: float | None
    max_abs_e_after_transient: float | None
    max_abs_edot_after_transient: float | None
    bounds_held: bool | None
    max_constraint_residual_nominal: float | None = None
    max_constraint_residual_controlled: float | None = None
    max_constraint_residual_gap: float | None = None
    actual_max_abs_e: float | None = None
    actual_max_abs_e_per_coordinate: list | None = None
    max_norm_dq: float | None = None
    max_norm_Mtilde: float | None = None
    max_norm_P: float | None = None
    assumptions_held: bool | None = None
    #: Why the verdict is only observed: the start lies outside the bound's invariant set
    #: (:func:`~robustrack.tracking.assess.start_in_invariant_set`); None inside it, or when nothing is promised.
    start_note: str | None = None
    saturation_fraction: float | None = None
    first_saturation_time: float | None = None
    first_saturation_after_transient: float | None = None
    max_abs_tau_per_actuator: list | None = None
    max_abs_tau_demand_per_actuator: list | None = None
    min_realizability_margin: float | None = None

    @classmethod
    def from_dict(cls, d: Mapping) -> "TrackingMetrics":
        """From a mapping with these names (extra names are refused)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ParameterError(f"unknown metric(s) {unknown}; the metrics are {sorted(names)}.")
        return cls(**d)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def __getitem__(self, key):
        if not isinstance(key, str) or key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self.__dataclass_fields__)

    def __len__(self) -> int:
        return len(self.__dataclass_fields__)


class _Bounds(dict):
    """A run's promised bounds: a plain dict whose keys are also attributes (``bounds.e`` as ``bounds["e"]``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"the promised bounds have no {name!r}; they have {sorted(self)}") from None


class _ReadOnly(Mapping):
    """A read-only mapping (item assignment is a TypeError) that pickles and copies, unlike
    ``types.MappingProxyType``: results cross process boundaries (campaign workers, Dask)."""

    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)

    def __reduce__(self):
        return (_ReadOnly, (self._data,))


def _freeze(x):
    """A read-only copy: mappings as read-only mappings, lists as tuples, all the way down."""
    if isinstance(x, Mapping) and not isinstance(x, TrackingMetrics):
        return _ReadOnly({k: _freeze(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    return x


def _thaw(x):
    """A plain copy of a :func:`_freeze` value: dicts and lists again (what JSON and callers take)."""
    if isinstance(x, Mapping):
        return {k: _thaw(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return [_thaw(v) for v in x]
    return x


@dataclass(frozen=True)
class RunInfo:
    """What a tracking run reports beside its arrays: typed and read-only (docs/guide/compensators.md).

    :func:`~robustrack.tracking.simulate.assemble` writes the run's part; a scenario run adds
    ``scenario`` and ``units`` by making a new result (:meth:`TrackingResult.with_info`), never by writing
    into this one. Mappings are read-only and lists are tuples (both pickle, for campaign workers);
    :meth:`to_dict` gives plain dicts and lists (the saved JSON, ``TrackingResult.info``).

    Attributes
    ----------
    compensator : Mapping or None
        ``name``, ``params`` and ``control_function`` (``name``, ``eps``); None without a compensator.
    bounds : Mapping or None
        The promised bounds (:meth:`PromisedBounds.to_dict <robustrack.controllers.PromisedBounds.to_dict>`).
    bounds_note : str or None
        Why ``bounds_held`` is None (a sampled discontinuous law, an underactuated B, saturation), or a remark.
    metrics : TrackingMetrics or None
        None for a run that produced no samples.
    solver : Mapping
        The controlled system's solve (:class:`~robustrack.tracking.integrate.SolverStats`), ``success`` the run's.
    solvers : Mapping
        ``nominal``, ``controlled``, ``uncompensated`` (None when not run): each solve's statistics.
    sample_period : float or None
    constrained : bool or None
    contact : tuple of str or None
        The columns of :attr:`TrackingResult.contact`.
    coordinates : tuple of str
    actuators : Mapping or None
        B, τ_max and ``fully_actuated``; None without actuators.
    scenario : Mapping or None
        The scenario that made the run (set by :func:`robustrack.scenarios.run_scenario`).
    units : Mapping or None
        The unit of every metric and bound (set by a scenario run).
    uncompensated_limit : Mapping or None
        ``t`` and ``joint`` where the uncompensated copy left the actual plant's position limits (a URDF robot's):
        it is reported up to there, the motion beyond not being one the robot can make; None: it stayed inside.
    """

    compensator: Mapping | None = None
    bounds: Mapping | None = None
    bounds_note: str | None = None
    metrics: TrackingMetrics | None = None
    solver: Mapping = field(default_factory=dict)
    solvers: Mapping = field(default_factory=dict)
    sample_period: float | None = None
    constrained: bool | None = None
    contact: tuple | None = None
    coordinates: tuple = ()
    actuators: Mapping | None = None
    scenario: Mapping | None = None
    units: Mapping | None = None
    uncompensated_limit: Mapping | None = None

    #: The names a saved run's JSON may hold only when set (a run made outside a scenario has none).
    OPTIONAL = ("scenario", "units", "uncompensated_limit")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "metrics":
                if isinstance(value, Mapping) and not isinstance(value, TrackingMetrics):
                    value = TrackingMetrics.from_dict(value) if value else None
            else:
                value = _freeze(value)
            object.__setattr__(self, f.name, value)

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "the run's metadata") -> "RunInfo":
        """From the mapping a saved run's JSON holds (what ``TrackingResult.info`` was); unknown names refused.

        Parameters
        ----------
        d : Mapping
        where : str
            What ``d`` is, for the message.

        Returns
        -------
        RunInfo
        """
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise ParameterError(f"{where} holds unknown name(s) {unknown}; a tracking run's are {names}.")
        return cls(**{k: v for k, v in d.items() if not (k == "metrics" and v is None)})

    def to_dict(self) -> dict:
        """Plain dicts and lists, JSON-ready (``scenario`` and ``units`` only when set).

        Returns
        -------
        dict
        """
        out = {f.name: _thaw(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["metrics"] = self.metrics.to_dict() if self.metrics is not None else {}
        for name in self.OPTIONAL:
            if out[name] is None:
                del out[name]
        return out


def _check_saved_shapes(base, arrays: dict) -> None:
    """Refuse saved arrays that cannot be one run: non-float, or time axes and coordinates that disagree."""
    bad = [k for k, a in arrays.items() if a.dtype.kind not in "fiu"]
    t = arrays["t"]
    T = t.shape[0] if t.ndim == 1 else -1
    n = arrays["q"].shape[-1] if arrays["q"].ndim == 2 else -1
    timed = [k for k in _ARRAYS if k in arrays and k not in ("t", "u_times", "u_held")]
    bad += [k for k in timed if arrays[k].ndim != 2 or arrays[k].shape[0] != T]
    bad += [k for k in ("q", "qd", "qc", "qcd", "qa", "qad", "Qc", "Qu") if k in arrays and arrays[k].shape[-1] != n]
    if T < 0 or n < 0 or bad:
        shapes = {k: tuple(a.shape) for k, a in arrays.items()}
        raise ParameterError(f"{base}.npz is not a consistent tracking result: array(s) {sorted(set(bad))} do not "
                             f"match t (T,) and q (T, n); shapes {shapes}. Save it again with TrackingResult.save.")


@dataclass(frozen=True)
class TrackingResult:
    """A tracking run: nominal, controlled actual and (optionally) uncompensated actual.

    Arrays have time first: ``t (T,)``, ``q, qd, qc, qcd, qa, qad, Qc, Qu (T, n)``,
    ``z (T, n_z)`` compensator states, ``residual_* (T, m)`` raw constraint values.
    ``u_times``/``u_held`` hold the sampled control (zero-order hold) when used; ``tau (T, k)``
    the applied actuator commands when the run has actuators (then Qᶜ = B τᶜ and
    Qᶜ + Qᵘ = B τ). ``contact (T, k)``: beside Qᶜ, the contact forces (and moments) of the
    constraint's frame constraints along the nominal motion, in their frames
    (:func:`robustrack.plants.motion.contact_forces`; the columns named in ``run_info.contact``).
    ``run_info`` (:class:`RunInfo`, typed and read-only) holds the rest: compensator name and parameters,
    promised bounds, metrics, solver statistics, and after a scenario run the scenario and units
    (:meth:`with_info` makes the new result); ``info`` is its plain-dict copy. ``problem`` is the
    :class:`~robustrack.tracking.TrackingProblem` that produced the run, with its actual plant
    (not saved: None for a loaded result), so that a report can present it.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qc: np.ndarray
    qcd: np.ndarray
    Qc: np.ndarray
    Qu: np.ndarray
    z: np.ndarray
    qa: np.ndarray | None = None
    qad: np.ndarray | None = None
    residual_nominal: np.ndarray | None = None
    residual_controlled: np.ndarray | None = None
    u_times: np.ndarray | None = None
    u_held: np.ndarray | None = None
    tau: np.ndarray | None = None
    contact: np.ndarray | None = None
    run_info: RunInfo = field(default_factory=RunInfo)
    problem: object = field(default=None, repr=False, compare=False)

    @property
    def info(self) -> dict:
        """The metadata as plain dicts and lists (a copy of :attr:`run_info`: writing into it changes nothing)."""
        return self.run_info.to_dict()

    def with_info(self, **changes) -> "TrackingResult":
        """A new result with some fields of :attr:`run_info` changed (e.g. ``scenario``, ``units``).

        Parameters
        ----------
        **changes
            :class:`RunInfo` field names and their values.

        Returns
        -------
        TrackingResult
        """
        return dataclasses.replace(self, run_info=dataclasses.replace(self.run_info, **changes))

    @property
    def e(self) -> np.ndarray:
        """Tracking error e = q_c − q (W 7.2.1)."""
        return self.qc - self.q

    @property
    def edot(self) -> np.ndarray:
        """ė = q̇_c − q̇ (W 7.2.2)."""
        return self.qcd - self.qd

    @property
    def metrics(self) -> TrackingMetrics | None:
        """The typed metrics (None for a run that produced no samples)."""
        return self.run_info.metrics

    @property
    def bounds(self) -> dict:
        """The promised bounds (a plain copy; empty without them): ``result.bounds["e"]`` or ``result.bounds.e``,
        as :meth:`Compensator.bounds <robustrack.controllers.Compensator.bounds>` gives ``.e``."""
        return _Bounds(_thaw(self.run_info.bounds) or {})

    @property
    def solver(self) -> dict:
        """The controlled system's solve and the run's ``success`` (a plain copy)."""
        return _thaw(self.run_info.solver)

    @property
    def success(self) -> bool:
        return bool(self.run_info.solver.get("success", False))

    def save(self, path) -> tuple[Path, Path]:
        """Write ``PATH.npz`` (arrays, float64, lossless) and ``PATH.json`` (metadata)."""
        base = Path(path)
        base = base.with_suffix("") if base.suffix in (".npz", ".json") else base
        arrays = {k: getattr(self, k) for k in _ARRAYS if getattr(self, k) is not None}
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        write_atomic(base.with_suffix(".npz"), buf.getvalue())
        write_atomic(base.with_suffix(".json"), json.dumps(to_jsonable(self.info, nonfinite="string"), indent=2) + "\n")
        return base.with_suffix(".npz"), base.with_suffix(".json")

    @classmethod
    def load(cls, path) -> "TrackingResult":
        """Read what :meth:`save` wrote."""
        base = Path(path)
        base = base.with_suffix("") if base.suffix in (".npz", ".json") else base
        try:
            with np.load(base.with_suffix(".npz"), allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            info = from_jsonable(json.loads(base.with_suffix(".json").read_text(encoding="utf-8")))
        except FileNotFoundError as exc:
            raise ParameterError(f"no saved tracking result at {base}(.npz/.json): {exc}") from None
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
            raise ParameterError(
                f"{base}(.npz/.json) is not a readable tracking result ({type(exc).__name__}: {exc}); "
                "save it again with TrackingResult.save."
            ) from None
        if not isinstance(info, dict):
            raise ParameterError(f"{base}.json holds a {type(info).__name__}, not a tracking result's metadata "
                                 "(a JSON object); save it again with TrackingResult.save.")
        unknown = sorted(set(arrays) - set(_ARRAYS))
        missing = sorted({"t", "q", "qd", "qc", "qcd", "Qc", "Qu", "z"} - set(arrays))
        if unknown or missing:
            raise ParameterError(
                f"{base}.npz is not a tracking result: missing arrays {missing}, unknown arrays {unknown}."
            )
        _check_saved_shapes(base, arrays)
        return cls(run_info=RunInfo.from_dict(info, f"{base}.json"), **arrays)

    def contact_peaks(self) -> dict:
        """max over the run of |each contact-force column| (:attr:`contact`, in its frame), by column label.

        Returns
        -------
        dict
            ``{"tool0 plane F_z (N)": 23.1, …}``; empty when the run reports no contact force.
        """
        labels = self.run_info.contact or ()
        if self.contact is None or not labels or not self.contact.size:
            return {}
        return {label: float(np.max(np.abs(self.contact[:, i]))) for i, label in enumerate(labels)}

    def to_dict(self) -> dict:
        """Metadata (no arrays): compensator, bounds, metrics, solver, config."""
        return self.run_info.to_dict()

    def __repr__(self) -> str:
        """A summary (like python-control's response objects): what ran, the peaks, the verdict — not the arrays."""
        from .._format import format_value
        from .assess import bounds_verdict

        units = {}
        if self.problem is not None:
            from ..plants.units import coordinate_units

            cu = coordinate_units(self.problem.nominal)
            units = {"q": cu.q, "qd": cu.qd, "Q": cu.Q}
        comp = (self.run_info.compensator or {}).get("name", "no compensator")
        n = self.q.shape[1] if self.q.ndim == 2 else "?"
        head = (f"TrackingResult({comp}, n = {n}, t = {format_value(float(self.t[0]))}–{format_value(float(self.t[-1]), 's')}"
                f" on {self.t.size} points, {'success' if self.success else 'FAILED: ' + str(self.solver.get('message'))})")
        m = self.metrics
        if m is None:
            return head
        return "\n".join([
            head,
            f"  max‖e‖∞ {format_value(m.max_abs_e, units.get('q'))}, max‖ė‖∞ {format_value(m.max_abs_edot, units.get('qd'))}"
            f", max‖Qᵘ‖∞ {format_value(m.max_abs_Qu, units.get('Q'))}, max‖Qᶜ‖∞ {format_value(m.max_abs_Qc, units.get('Q'))}",
            "  " + bounds_verdict(m, self.bounds, units=units, note=self.run_info.bounds_note)])

    def power(self, plant=None):
        """Power and work of Qᶜ and Qᵘ on the controlled actual system and their workless share.

        See :func:`robustrack.plants.power.control_power` (S 3.8: a force orthogonal to q̇
        does no work).

        Parameters
        ----------
        plant : Plant, optional
            The nominal plant: its mass matrix is the metric of the workless split; None: Euclidean.

        Returns
        -------
        ControlPower
        """
        from ..plants.power import control_power

        return control_power(self, plant)

    def plot(self, *, kind: str = "errors"):
        """A figure of this run, like python-control's ``TimeResponseData.plot()``.

        Parameters
        ----------
        kind : {"errors", "coordinates", "forces", "power", "residual", "trajectory", "task"}
            Which of the report's figures (:mod:`robustrack.tracking.figures`); "trajectory" needs a
            plant with ``positions(q)``, "task" a :class:`~robustrack.requirements.TaskSpaceTrajectory`
            constraint (both read from the run's ``problem``).

        Returns
        -------
        matplotlib.figure.Figure
            Not shown: ``fig.savefig(...)``, or display it in a notebook.
        """
        from . import figures

        makers = {"errors": figures.errors_figure, "coordinates": figures.coordinates_figure,
                  "forces": figures.forces_figure, "power": figures.power_figure, "residual": figures.residual_figure}
        problem = self.problem
        if kind == "trajectory" and problem is not None and getattr(problem.nominal, "has_positions", False):
            return figures.trajectory_figure(self, problem.nominal)
        if kind == "task" and problem is not None and hasattr(problem.constraint, "task_position"):
            return figures.task_space_figure(self, problem.constraint)
        if kind in ("trajectory", "task"):
            need = ("a plant with positions(q) (URDFPlant, the catalog's pendulums)" if kind == "trajectory"
                    else "a TaskSpaceTrajectory as the problem's constraint (robustrack.requirements)")
            raise ParameterError(f"plot(kind={kind!r}) needs {need}" + (
                "; a loaded result has no problem: call robustrack.tracking.figures directly." if problem is None
                else f"; this run's are {type(problem.nominal).__name__} and {type(problem.constraint).__name__}."))
        if kind not in makers:
            raise ParameterError(f"`kind` must be one of {sorted(makers) + ['task', 'trajectory']}; got {kind!r}.")
        return makers[kind](self)
