"""Identifying the actual plant's parameters from tracking data (W ch. 10, "future work").

W ch. 10 proposes using the gap between the nominal and the controlled actual system to
reveal δm — "to turn an uncertain system into a certain one". The controlled actual
system obeys (W 5.2.17)

    M_a(q_c) q̈_c − Q_a(q_c, q̇_c) = Qᶜ(t) + Qᵘ(t)            (the applied force F),

and for the plants here M and Q are **linear in the inertial parameters** θ (the masses:
every entry of M and Q of the n-link pendulum, W (2.3.2)–(2.3.3), is a sum of tail masses
μ_ij = Σ m_k times a function of q, q̇). So with r(θ) = M(q; θ) q̈ − Q(q, q̇; θ),

    r(θ) = r(θ₀) + Y(q, q̇, q̈) (θ − θ₀),        Y_k = ∂r/∂θ_k,

and every sample of a run gives n linear equations Y δθ = F − r(θ₀) in the deviation
δθ = θ − θ₀ from the nominal values. Stacking the T samples of a run gives the
least-squares problem this module solves.

The regressor Y
---------------
* **sympy** where the plant has a symbolic form (``plant.codegen()``, :mod:`robustrack.symbolic`:
  :class:`~robustrack.plants.NLinkPendulum`, :class:`~robustrack.plants.LagrangianPlant`):
  Y_k = (∂M/∂θ_k) q̈ − ∂Q/∂θ_k, derived once per structure and checked linear
  (∂Y_k/∂θ_l ≡ 0, or else refused).
* **parameter perturbation** otherwise (your own :class:`~robustrack.plants.Plant` with
  ``replace``): Y_k = (r(θ₀ + h e_k) − r(θ₀ − h e_k)) / 2h with h = ½|θ₀,k|. For a plant
  linear in θ the central difference is *exact* up to rounding (no truncation term exists);
  the second difference r(θ₀ + h) − 2 r(θ₀) + r(θ₀ − h) is checked to vanish to rounding,
  so a plant that is not linear in a parameter is refused, never silently linearized.

Least squares, standard errors, conditioning
--------------------------------------------
The columns of the stacked regressor are scaled by the nominal values |θ₀,k| (the unknowns
become relative changes, whatever their units), and the problem is solved through its SVD.
The condition number of the scaled regressor says whether the motion excites every
parameter — one whose force along the run is tiny against the others', or two that act
alike: above ``condition_limit`` a
:class:`PoorExcitation` warning names the parameters in the weakly excited directions (a
parameter whose column is zero along the whole run is not excited at all: it stays at its
nominal value with an infinite standard error).

The standard errors are the cluster-robust (sandwich) ones, clustered on the time samples:

    Cov δθ̂ = (YᵀY)⁻¹ (Σ_t Y_tᵀ ρ_t ρ_tᵀ Y_t) (YᵀY)⁻¹ · T/(T − 1),

ρ_t the n residuals of sample t. Measurement noise on q, q̇, q̈ enters the n equations of one
sample through M(q; θ) and ∂r/∂q, correlated across the coordinates and of a size that
changes along the run; the sandwich needs only that different samples have independent
noise, where the textbook s²(YᵀY)⁻¹ would also assume equal, uncorrelated residuals. Noise in
the regressor itself (errors in variables) biases the estimate by O(σ²), below its O(σ)
standard error for noise small against the signal.

Accelerations
-------------
A saved run holds q_c, q̇_c, Qᶜ and Qᵘ on its output grid, not q̈_c. Two sources:

* :func:`simulated_accelerations` — the simulation's own accelerometer: the closed-loop
  right-hand side (W 5.2.17), q̈_c = M_a⁻¹ (Q_a + Qᶜ + Qᵘ), at the stored states with the
  stored force. The equation of motion then holds at every sample to rounding, whether the
  sample is a solver step or a dense-output point, so the noise-free estimate is exact to
  rounding times the condition number (the ≤ 1e-6 target). Differentiating the dense output
  instead would carry the integrator's local error (rtol 1e-8 on states of order 1, amplified
  by differentiation) into q̈ and, through m/δm ≈ 10, into δm.
* ``accelerations="differences"`` — second-order central differences of the stored q̇_c
  (``numpy.gradient``); its O(Δt²) error limits the accuracy (measured in
  ``docs/results/identification.md``).

What a real log holds — q, q̇ (noisy) and the applied force at the log rate — is used without
any q̈ by the integral form, the default of :func:`identify`
(:mod:`robustrack.identification.integral`).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from .._validate import as_float_array
from ..errors import ParameterError
from .friction import friction_columns, friction_names, friction_values, with_friction
from .symbolic import symbolic_form

__all__ = ["identify_motion", "Identification", "Regressor", "regressor", "parameter_values", "linear_parameters",
           "check_finite_run", "refuse_unexcited",
           "simulated_accelerations",
           "differentiated_accelerations", "applied_force", "PoorExcitation", "DEFAULT_CONDITION_LIMIT"]

#: Above this condition number of the θ₀-scaled regressor the motion is said not to excite
#: some parameter: a relative error of one part in 10⁶ of the data may then move the estimate by
#: its own size along the weak direction.
DEFAULT_CONDITION_LIMIT = 1e6

_PER_BODY = re.compile(r"([A-Za-z_]+?)([1-9][0-9]*)")


class PoorExcitation(UserWarning):
    """The motion does not excite some parameter: the regressor's condition number exceeds the limit."""


# --------------------------------------------------------------------------- data
def applied_force(data) -> np.ndarray:
    """F = Qᶜ + Qᵘ, the force applied to the controlled actual system (W 5.2.17), shape (T, n).

    With actuators the run stores Qᵘ as what the motors add to Qᶜ, so the sum is B τ.

    Parameters
    ----------
    data : TrackingResult or mapping
        A tracking run (``Qc``, ``Qu``).

    Returns
    -------
    ndarray (T, n)
    """
    return _array(data, "Qc") + _array(data, "Qu")


def _array(data, key: str) -> np.ndarray:
    value = data[key] if isinstance(data, Mapping) or hasattr(data, "files") else getattr(data, key, None)
    if value is None:
        raise ParameterError(f"the run has no `{key}`: identification needs a tracking run "
                             "(t, qc, qcd, Qc, Qu), as TrackingResult or `robustrack run NAME --save RUN.npz` "
                             "keeps it.")
    return np.asarray(value, dtype=float)


def _run_arrays(data):
    """(t, q_c, q̇_c, F) of a TrackingResult or a mapping with its arrays (``np.load`` of ``run --save``)."""
    try:
        arrays = {key: _array(data, key) for key in ("t", "qc", "qcd", "Qc", "Qu")}
    except KeyError as exc:
        raise ParameterError(f"the run has no array {exc}: identification needs t, qc, qcd, Qc and Qu "
                             "(a tracking run saved with `robustrack run NAME --save RUN.npz`).") from None
    check_finite_run(arrays, "the run")
    return arrays["t"], arrays["qc"], arrays["qcd"], arrays["Qc"] + arrays["Qu"]


def check_finite_run(arrays, where: str) -> None:
    """Refuse a run holding NaN or ±inf, naming the first array, its row and time (a malformed log).

    Parameters
    ----------
    arrays : mapping of str to array_like
        The run's arrays by name (``t``, ``qc``, ``qcd``, ``Qc``, ``Qu``); row i of each is the time ``t[i]``.
    where : str
        How the message names the run (``"the run"``, ``"'run.npz'"``).

    Raises
    ------
    ParameterError
        Naming the array, the row and its time.
    """
    t = np.asarray(arrays.get("t", ()), dtype=float)
    for key, value in arrays.items():
        value = np.asarray(value, dtype=float)
        bad = ~np.isfinite(value)
        if np.any(bad):
            row = int(np.argwhere(bad)[0][0]) if value.ndim else 0
            when = f" (t = {t[row]:g})" if key != "t" and t.ndim == 1 and row < t.size and np.isfinite(t[row]) else ""
            raise ParameterError(f"{where}: `{key}` holds {value[np.unravel_index(np.argmax(bad), value.shape)]} "
                                 f"at row {row}{when} — a damaged log: identification needs finite values "
                                 "throughout; cut the log before it, or record the run again.")


def simulated_accelerations(data, actual) -> np.ndarray:
    """q̈_c from the closed-loop right-hand side at the stored states: M_a⁻¹ (Q_a + Qᶜ + Qᵘ) (W 5.2.17).

    The accelerometer of a simulated run: the acceleration the integrator's right-hand side
    gives at each stored state (q_c, q̇_c) under the stored applied force, evaluated through
    the actual plant's public ``mass_matrix`` and ``given_force``.

    Parameters
    ----------
    data : TrackingResult or mapping
        A tracking run (``t``, ``qc``, ``qcd``, ``Qc``, ``Qu``).
    actual : Plant
        The plant the run's controlled system was (the simulation's truth).

    Returns
    -------
    ndarray (T, n)
    """
    t, q, qd, F = _run_arrays(data)
    return np.linalg.solve(actual.mass_matrix(q, t), (actual.given_force(q, qd, t) + F)[..., None])[..., 0]


def differentiated_accelerations(t, qd) -> np.ndarray:
    """q̈ by second-order central differences of sampled velocities (``numpy.gradient``, one-sided at the ends).

    Parameters
    ----------
    t : array_like (T,)
        Increasing sample times, T ≥ 3.
    qd : array_like (T, n)

    Returns
    -------
    ndarray (T, n)
        Error O(Δt² d³q̇/dt³) inside, O(Δt²) at the ends too (``edge_order=2``).
    """
    t = as_float_array(t, "t")
    qd = as_float_array(qd, "qd", ndim_min=2)
    if t.ndim != 1 or t.size < 3 or np.any(np.diff(t) <= 0):
        raise ParameterError(f"`t` must be at least 3 increasing times to differentiate the velocities; "
                             f"got shape {t.shape}.")
    return np.gradient(qd, t, axis=0, edge_order=2)


# --------------------------------------------------------------------------- regressor
@dataclasses.dataclass(frozen=True)
class Regressor:
    """The equations of motion written linearly in the parameters: r(θ) = r(θ₀) + Y (θ − θ₀).

    Attributes
    ----------
    Y : ndarray (T, n, P)
        ∂r/∂θ_k at every sample, r = M q̈ − Q.
    r0 : ndarray (T, n)
        r(θ₀) = M(q; θ₀) q̈ − Q(q, q̇; θ₀), the nominal plant's residual force.
    nominal : ndarray (P,)
        θ₀, the plant's values of the parameters.
    method : str
        ``"sympy"`` or ``"perturbation"`` (the plant's parameters), ``"closed form"`` (friction coefficients only).
    """

    Y: np.ndarray
    r0: np.ndarray
    nominal: np.ndarray
    method: str


def regressor(plant, parameters: Sequence[str], q, qd, qdd, t=0.0, *, method: str = "auto") -> Regressor:
    """Y(q, q̇, q̈) with M q̈ − Q = r(θ₀) + Y (θ − θ₀) for the named parameters (module docstring).

    Parameters
    ----------
    plant : Plant
        The structure (and θ₀): usually the nominal plant.
    parameters : sequence of str
        Names ``plant.replace`` accepts (``"m1"``, ``"m2"`` for the pendulum's masses), and joint friction
        coefficients ``viscous_<coordinate>``, ``coulomb_<coordinate>`` (closed-form columns,
        :mod:`robustrack.identification.friction`).
    q, qd, qdd : array_like (T, n)
    t : float or array_like (T,)
    method : {"auto", "sympy", "perturbation"}
        ``auto``: sympy when the plant has a symbolic form naming every parameter of the plant.

    Returns
    -------
    Regressor

    Raises
    ------
    ParameterError
        An unknown parameter, or one the equations of motion are not linear in.
    """
    names = _parameter_names(parameters)
    q = as_float_array(q, "q", ndim_min=2)
    qd = as_float_array(qd, "qd", ndim_min=2)
    qdd = as_float_array(qdd, "qdd", ndim_min=2)
    t = np.broadcast_to(as_float_array(t, "t"), q.shape[:-1])
    if not (q.shape == qd.shape == qdd.shape) or q.shape[-1] != plant.n:
        raise ParameterError(f"`q`, `qd`, `qdd` must all have shape (T, {plant.n}) for the plant's coordinates "
                             f"{tuple(plant.coordinates)}; got {q.shape}, {qd.shape}, {qdd.shape}.")
    if method not in ("auto", "sympy", "perturbation"):
        raise ParameterError(f"`method` must be 'auto', 'sympy' or 'perturbation'; got {method!r}.")
    r0 = _residual_force(plant, q, qd, qdd, t)
    own, friction = friction_names(plant, names)
    if not own:  # friction coefficients only: their columns are closed forms
        return Regressor(friction_columns(plant, friction, qd), r0, friction_values(plant, friction), "closed form")
    form = symbolic_form(plant)
    symbolic = form is not None and set(own) <= set(_symbol_names(form, plant.n))
    if method == "sympy" and not symbolic:
        have = "no symbolic form" if form is None else f"symbols {_symbol_names(form, plant.n)}"
        raise ParameterError(f"`method='sympy'` needs a plant whose codegen() names {list(own)}; "
                             f"{type(plant).__name__} has {have}.")
    if symbolic and method != "perturbation":
        from .symbolic import symbolic_regressor

        Y, nominal = symbolic_regressor(form, plant.n, own, q, qd, qdd, t)
        kind = "sympy"
    else:
        nominal = np.array([_parameter_value(plant, p) for p in own])
        Y, kind = _perturbation_regressor(plant, own, nominal, q, qd, qdd, t, r0), "perturbation"
    if not friction:
        return Regressor(Y, r0, nominal, kind)
    # the friction's columns beside the plant's, in the order the names were given
    order = [(own + friction).index(p) for p in names]
    Y = np.concatenate([Y, friction_columns(plant, friction, qd)], axis=-1)[..., order]
    nominal = np.concatenate([nominal, friction_values(plant, friction)])[order]
    return Regressor(Y, r0, nominal, kind)


def linear_parameters(plant, names, q, qd, qdd, t=0.0) -> tuple[tuple, dict]:
    """Which of ``names`` the least squares can estimate together: those M q̈ − Q is jointly linear in.

    The regression writes r(θ) = r(θ₀) + Y (θ − θ₀) exactly, so it takes only parameters r is linear in
    (module docstring), and jointly: with a symbolic form, the parameters are taken in order, each kept
    unless sympy finds ∂²r/∂θ² or ∂²r/∂θ∂θ′ (θ′ one already kept) not identically zero
    (:func:`~robustrack.identification.symbolic.nonlinear_pairs`: a length enters M as m L², g enters Q as
    m g, so after m it is left out); without one, each alone by the second difference in θ the perturbation
    regressor checks, at the given samples (a pair is not checked there: as :func:`regressor` itself). Joint
    friction coefficients are always kept: the friction force is linear in them, and their columns depend on no
    other parameter (:mod:`robustrack.identification.friction`).

    Parameters
    ----------
    plant : Plant
        The structure and θ₀.
    names : sequence of str
        Candidates, in the order of preference.
    q, qd, qdd : array_like (T, n)
        Samples of the motion (used without a symbolic form; a few dozen suffice).
    t : float or array_like (T,)

    Returns
    -------
    (tuple of str, dict of str to str)
        The parameters kept, in order, and the others with why each is left out.
    """
    names = _parameter_names(names)
    own, friction = friction_names(plant, names)
    if friction:  # linear in each, and their columns depend on no other parameter (friction module)
        kept, dropped = linear_parameters(plant, own, q, qd, qdd, t) if own else ((), {})
        return tuple(n for n in names if n in kept or n in friction), dropped
    form = symbolic_form(plant)
    dropped = {}
    if form is not None and set(names) <= set(_symbol_names(form, plant.n)):
        from .symbolic import nonlinear_pairs

        pairs = set(nonlinear_pairs(form, plant.n, names))
        kept = []
        for name in names:
            if (name, name) in pairs:
                dropped[name] = f"M q̈ − Q is not linear in `{name}` (∂²/∂{name}² ≠ 0)"
                continue
            other = next((k for k in kept if (k, name) in pairs), None)
            if other is not None:
                dropped[name] = (f"M q̈ − Q is linear in `{name}` alone but not together with `{other}` "
                                 f"(∂²/∂{other}∂{name} ≠ 0); --parameters {name} estimates it with `{other}` held")
                continue
            kept.append(name)
        return tuple(kept), dropped
    q = as_float_array(q, "q", ndim_min=2)
    qd, qdd = as_float_array(qd, "qd", ndim_min=2), as_float_array(qdd, "qdd", ndim_min=2)
    t = np.broadcast_to(as_float_array(t, "t"), q.shape[:-1])
    r0 = _residual_force(plant, q, qd, qdd, t)
    for name in names:
        try:
            _perturbation_regressor(plant, (name,), np.array([_parameter_value(plant, name)]), q, qd, qdd, t, r0)
        except ParameterError as exc:
            dropped[name] = str(exc).split(";")[0]
    return tuple(n for n in names if n not in dropped), dropped


def _parameter_names(parameters) -> tuple[str, ...]:
    if isinstance(parameters, str):
        parameters = [p.strip() for p in parameters.split(",")]
    names = tuple(str(p) for p in parameters)
    if not names or len(set(names)) != len(names) or not all(names):
        raise ParameterError(f"`parameters` must name at least one parameter, each once; got {list(names)}.")
    return names


def _symbol_names(form, n: int) -> list[str]:
    from .symbolic import form_parameter_names

    return form_parameter_names(form, n)


def _residual_force(plant, q, qd, qdd, t) -> np.ndarray:
    """r = M(q) q̈ − Q(q, q̇): the force the plant's equations need for the measured motion."""
    return (plant.mass_matrix(q, t) @ qdd[..., None])[..., 0] - plant.given_force(q, qd, t)


def parameter_values(plant, names) -> np.ndarray:
    """θ of a plant for the named parameters (those ``plant.replace`` takes, and joint friction coefficients), (P,).

    From the plant's symbolic form where it names them, else its scalar fields or components
    of its per-body fields (``m2`` → ``m[1]``); a friction coefficient (``viscous_<coordinate>``,
    ``coulomb_<coordinate>``) from the friction the plant adds, 0 where it adds none
    (:mod:`robustrack.identification.friction`).

    Parameters
    ----------
    plant : Plant
    names : sequence of str or str
        E.g. ``["m1", "m2"]`` or ``"m1,m2"``.

    Returns
    -------
    ndarray (P,)

    Raises
    ------
    ParameterError
        A name the plant has no scalar value for.
    """
    names = _parameter_names(names)
    form = symbolic_form(plant)
    symbols = [] if form is None else _symbol_names(form, plant.n)
    _, friction = friction_names(plant, names)
    coefficients = dict(zip(friction, friction_values(plant, friction)))
    return np.array([float(coefficients[p]) if p in friction else
                     float(form.values[symbols.index(p)]) if p in symbols else _parameter_value(plant, p)
                     for p in names])


def _parameter_value(plant, name: str) -> float:
    """θ₀ of a parameter: a scalar field, or component i of a per-body field (``m2`` → ``m[1]``)."""
    params = plant.params
    if name in params and np.ndim(params[name]) == 0:
        return float(params[name])
    match = _PER_BODY.fullmatch(name)
    if match and match.group(1) in params:
        values = np.asarray(params[match.group(1)], dtype=float)
        index = int(match.group(2)) - 1
        if values.ndim == 1 and index < values.size:
            return float(values[index])
    raise ParameterError(f"{type(plant).__name__} has no scalar parameter `{name}` to identify; its parameters "
                         f"are {sorted(params)} (per-body components as m1, m2, …), and its joints' friction "
                         f"coefficients viscous_<joint>, coulomb_<joint> for the joints {list(plant.coordinates)}.")


def _perturbation_regressor(plant, names, nominal, q, qd, qdd, t, r0) -> np.ndarray:
    """Y_k by central differences in θ_k — exact to rounding for r linear in θ (checked)."""
    Y = np.empty(r0.shape + (len(names),))
    scale = np.max(np.abs(r0)) + np.finfo(float).tiny
    for k, (name, value) in enumerate(zip(names, nominal)):
        h = 0.5 * abs(value) if value != 0 else 1.0
        plus = _residual_force(plant.replace(**{name: value + h}), q, qd, qdd, t)
        minus = _residual_force(plant.replace(**{name: value - h}), q, qd, qdd, t)
        Y[..., k] = (plus - minus) / (2 * h)
        curvature = np.max(np.abs(plus - 2 * r0 + minus))
        # linear r: the second difference is rounding only, a few ulps of the largest force involved
        size = max(scale, np.max(np.abs(plus)), np.max(np.abs(minus)))
        if curvature > 1e-9 * size:
            raise ParameterError(f"the equations of motion of {type(plant).__name__} are not linear in `{name}` "
                                 f"(second difference {curvature:.3g} against forces of {size:.3g}); identify only "
                                 "parameters M and Q are linear in (masses, inertias).")
    return Y


# --------------------------------------------------------------------------- estimate
@dataclasses.dataclass(frozen=True)
class Identification:
    """A least-squares estimate of a plant's parameters from a run (module docstring).

    Attributes
    ----------
    parameters : tuple of str
    nominal : ndarray (P,)
        θ₀, the values of the plant the regressor was built on.
    estimate : ndarray (P,)
        θ̂ = θ₀ + δθ̂.
    std_error : ndarray (P,)
        Cluster-robust standard errors of θ̂ (inf for a parameter the motion does not excite).
    covariance : ndarray (P, P)
    condition : float
        Condition number of the regressor scaled by θ₀ (inf: some direction not excited).
    singular_values : ndarray (P,)
        Of the scaled regressor, largest first.
    excitation : ndarray (P,)
        RMS of each regressor column over the run's equations (force per unit parameter).
    rms_residual : float
        RMS of F − r(θ̂) over the run's equations (force units).
    samples : int
        Time samples T (the equations are T · n).
    method : str
        ``"sympy"``, ``"perturbation"`` or ``"closed form"`` (the regressor, :class:`Regressor`).
    accelerations : str
        Where q̈ came from (the integral form uses none).
    poorly_excited : tuple of str
        The parameters in the directions whose singular value is below 1/condition_limit of the
        largest (empty when the motion excites them all).
    form : str
        ``"differential"`` (M q̈ − Q = F at every sample) or ``"integral"`` (its windowed integral,
        :mod:`robustrack.identification.integral`: q, q̇ and F only).
    windows : tuple of int or None
        Integral form: (equations used, equations in the log: windows × n); the others were not resolved
        by the log rate.
    """

    parameters: tuple
    nominal: np.ndarray
    estimate: np.ndarray
    std_error: np.ndarray
    covariance: np.ndarray
    condition: float
    singular_values: np.ndarray
    excitation: np.ndarray
    rms_residual: float
    samples: int
    method: str
    accelerations: str
    poorly_excited: tuple = ()
    form: str = "differential"
    windows: tuple | None = None

    @property
    def data(self) -> str:
        """Which data the estimate used, in words."""
        if self.form == "integral":
            used, total = self.windows
            held = "; a force held between samples" if "held" in self.accelerations else ""
            return (f"q, q̇ and the applied force at {self.samples} samples, no q̈ (integral form{held}; {used} of "
                    f"{total} window equations resolved by the log rate)")
        return f"q, q̇, the applied force and q̈ ({self.accelerations}) at {self.samples} samples"

    @property
    def delta(self) -> np.ndarray:
        """δθ̂ = θ̂ − θ₀ (for masses: δm, W 7.3)."""
        return self.estimate - self.nominal

    def plant(self, nominal):
        """The identified plant (re-nominalize: nominal := identified): ``nominal.replace(**{name: θ̂})``, its friction
        coefficients set to theirs (:func:`~robustrack.identification.friction.with_friction`).

        Parameters
        ----------
        nominal : Plant
            The plant the estimate was made on (its friction gives a Coulomb coefficient's v_s).

        Returns
        -------
        Plant
        """
        values = dict(zip(self.parameters, (float(v) for v in self.estimate)))
        own, friction = friction_names(nominal, self.parameters)
        plant = nominal.replace(**{p: values[p] for p in own}) if own else nominal
        return with_friction(plant, {p: values[p] for p in friction})

    def to_dict(self) -> dict:
        """JSON-ready (lists and floats; inf where a parameter is not excited)."""
        return {"parameters": list(self.parameters), "nominal": self.nominal.tolist(),
                "estimate": self.estimate.tolist(), "delta": self.delta.tolist(),
                "std_error": self.std_error.tolist(), "covariance": self.covariance.tolist(),
                "condition": self.condition, "singular_values": self.singular_values.tolist(),
                "excitation": self.excitation.tolist(), "rms_residual": self.rms_residual,
                "samples": self.samples, "method": self.method, "accelerations": self.accelerations,
                "poorly_excited": list(self.poorly_excited), "form": self.form,
                "windows": None if self.windows is None else list(self.windows), "data": self.data}


def identify_motion(plant, parameters, t, q, qd, qdd, force, *, method: str = "auto",
                    condition_limit: float = DEFAULT_CONDITION_LIMIT, accelerations: str = "given") -> Identification:
    """Least-squares θ̂ from sampled motion and applied force: Y δθ = F − r(θ₀) (module docstring).

    Parameters
    ----------
    plant : Plant
        The structure and θ₀ (the nominal plant).
    parameters : sequence of str or str
        The names to identify (``"m1,m2,m3"`` or a list); the others keep the plant's values.
    t : array_like (T,)
    q, qd, qdd : array_like (T, n)
        Measured positions, velocities, accelerations.
    force : array_like (T, n)
        The applied generalized force (for a tracking run Qᶜ + Qᵘ).
    method : {"auto", "sympy", "perturbation"}
        The regressor (:func:`regressor`).
    condition_limit : float
        Warn (:class:`PoorExcitation`) above this condition number of the regressor scaled by θ₀.
    accelerations : str
        A label saying where q̈ came from (kept in the result).

    Returns
    -------
    Identification

    Warns
    -----
    PoorExcitation
        The motion does not excite some parameter (named in the message).
    """
    if not (np.isfinite(condition_limit) and condition_limit > 1):
        raise ParameterError(f"`condition_limit` must be a finite number > 1; got {condition_limit!r}.")
    force = as_float_array(force, "force", ndim_min=2)
    reg = regressor(plant, parameters, q, qd, qdd, t, method=method)
    if force.shape != reg.r0.shape:
        raise ParameterError(f"`force` must have shape {reg.r0.shape} like `q`; got {force.shape}.")
    return _least_squares(reg.Y, force - reg.r0, reg.nominal, _parameter_names(parameters), condition_limit,
                          samples=len(reg.Y), method=reg.method, data=accelerations)


def _least_squares(Y, rhs, nominal, names, condition_limit, *, samples, method, data, form="differential",
                   windows=None) -> Identification:
    """δθ̂ of the stacked equations Y δθ = rhs, (G, n, P) and (G, n), clustered on the first axis (module docstring).

    The groups G are the time samples of the differential form, the windows of the integral form
    (:mod:`robustrack.identification.integral`); the sandwich standard errors allow any
    correlation of the n equations of one group and assume independent groups.
    """
    T, n, P = Y.shape
    if T * n <= P:
        raise ParameterError(f"{T} {'windows' if form == 'integral' else 'samples'} of {n} coordinates give "
                             f"{T * n} equations for {P} parameters; give a longer run.")
    A = Y.reshape(T * n, P)
    b = rhs.reshape(T * n)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(b))):
        raise ParameterError("the run holds non-finite values (q, q̇, q̈ or the force): nothing to identify from.")
    norms = np.linalg.norm(A, axis=0)
    scale = _column_scale(nominal, norms)
    U, S, Vt = np.linalg.svd(A / scale, full_matrices=False)
    tiny = S[0] * max(T * n, P) * np.finfo(float).eps if S[0] > 0 else np.inf
    keep = S > tiny
    inv = np.where(keep, 1.0 / np.where(keep, S, 1.0), 0.0)
    pinv_scaled = (Vt.T * inv) @ U.T                       # (P, T n) of the scaled problem
    delta = (pinv_scaled @ b) / scale
    rho = (b - A @ delta).reshape(T, n)
    # sandwich: (AᵀA)⁻¹ Σ_g A_gᵀ ρ_g ρ_gᵀ A_g (AᵀA)⁻¹, clustered on the groups, small-sample factor G/(G − 1)
    bread = (Vt.T * inv**2) @ Vt / np.outer(scale, scale)
    if form == "integral":
        # few groups of high leverage: CR3, ρ_g → (I − H_gg)⁻¹ ρ_g (the cluster jackknife, MacKinnon & Webb)
        H = np.einsum("gip,pq,gjq->gij", Y, bread, Y)
        rho = np.linalg.solve(np.eye(n) - H, rho[..., None])[..., 0]
        factor = (T - 1) / T
    else:
        factor = T / (T - 1)
    meat_t = np.einsum("tnp,tn->tp", Y, rho)
    cov = bread @ (meat_t.T @ meat_t) @ bread * factor
    weak_dirs = S < S[0] / condition_limit
    unexcited = np.any(np.abs(Vt[~keep]) > 0.1, axis=0) if np.any(~keep) else np.zeros(P, bool)
    if np.all(unexcited):
        # Refused, not warned: no parameter is determined, so the "estimate" would be θ₀ itself with infinite
        # standard errors — the nominal values presented as identified. A run that excites some of them still
        # determines those: a PoorExcitation warning below names the rest (Identification.poorly_excited).
        refuse_unexcited(names, norms, form)
    var = np.where(unexcited, np.inf, np.diag(cov))
    condition = float(S[0] / S[-1]) if S[-1] > 0 else float("inf")
    weak = np.any(np.abs(Vt[weak_dirs]) > 0.1, axis=0) if np.any(weak_dirs) else np.zeros(P, bool)
    weak_names = tuple(p for p, w in zip(names, weak) if w)
    std_error = np.sqrt(np.maximum(var, 0))
    estimate = nominal + delta
    # the standard errors against the estimates: one as large as its estimate says the data do not determine
    # even the parameter's size (noise dominating a weak excitation), whatever the condition number says
    vague = tuple(p for p, w, se, v in zip(names, weak, std_error, estimate) if not w and np.isfinite(se) and se > 0
                  and se >= abs(v))
    if weak_names:
        warnings.warn(_excitation_message(names, weak_names, condition, condition_limit, norms, T * n, form),
                      PoorExcitation, stacklevel=4)
    if vague:
        warnings.warn(f"the data determine {', '.join(vague)} only to a standard error as large as "
                      f"{'the estimate' if len(vague) == 1 else 'the estimates'} ("
                      + ", ".join(f"{p} = {v:.3g} ± {se:.3g}" for p, v, se in zip(names, estimate, std_error)
                                  if p in vague)
                      + "): the motion excites them too little against the noise; use a run with more motion "
                      "(faster, larger) in the coordinates they act on, or a longer one.", PoorExcitation,
                      stacklevel=4)
        weak_names = weak_names + vague
    return Identification(
        parameters=names, nominal=nominal, estimate=estimate, std_error=std_error,
        covariance=cov, condition=condition, singular_values=S, excitation=norms / np.sqrt(T * n),
        rms_residual=float(np.sqrt(np.mean((b - A @ delta) ** 2))), samples=samples, method=method, accelerations=data,
        poorly_excited=weak_names, form=form, windows=windows)


def _column_scale(nominal, norms) -> np.ndarray:
    """Scale of each regressor column: |θ₀,k| (relative parameter changes), so that a parameter whose
    force along the run is small against the others' shows as a small singular value.

    A parameter with θ₀ = 0 has no natural size: its column is scaled to the largest scaled one.
    A zero column keeps scale 1 (a zero singular value: not excited at all).
    """
    scale = np.abs(nominal).astype(float)
    largest = np.max(norms * scale) if np.any(scale > 0) else 0.0
    zero = scale == 0
    scale[zero] = np.where(norms[zero] > 0, (largest or 1.0) / np.where(norms[zero] > 0, norms[zero], 1.0), 1.0)
    return np.where(norms > 0, scale, 1.0)


def refuse_unexcited(names, norms, form: str = "differential") -> None:
    """Refuse a run that excites none of the parameters: what is missing and the fix (a run with more motion).

    Parameters
    ----------
    names : sequence of str
        The parameters asked for.
    norms : array_like (P,)
        Norm of each parameter's regressor column along the run (zero: the parameter never enters).
    form : str
        ``"differential"`` or ``"integral"`` (how the equations were formed; named in the message).

    Raises
    ------
    ParameterError
        Always.
    """
    zero = [p for p, v in zip(names, np.asarray(norms, dtype=float)) if v == 0]
    why = ("their regressor columns are zero along the whole run: the coordinates they act on do not accelerate "
           "(constant q, or q̇ ≡ 0)" if len(zero) == len(names) else
           f"{', '.join(zero) + ' never enter the equations and ' if zero else ''}the others act only in directions "
           "the run does not move")
    raise ParameterError(f"the run does not excite {', '.join(names)} ({form} form): {why}, so it determines none of "
                         "them — the estimate would be the nominal values with infinite standard errors. Identify "
                         "from a run with more motion: one that moves and accelerates the coordinates these "
                         "parameters act on (a richer reference, a longer horizon).")


def _excitation_message(names, weak, condition, limit, norms, rows, form="differential") -> str:
    zero = [p for p, v in zip(names, norms) if v == 0]
    where, why = (("the window equations the log rate resolves", "zero regressor column; the integral form uses only "
                   "those") if form == "integral" else ("the equations along this motion", "zero regressor column"))
    what = (f"{', '.join(zero)} {'never enters' if len(zero) == 1 else 'never enter'} {where} ({why}): kept at the "
            "nominal value with an infinite standard error" if zero else
            f"the regressor's condition number is {condition:.3g} > {limit:.3g}")
    return (f"the motion does not excite {', '.join(weak)}: {what}. This run does not determine "
            f"{'that estimate' if len(weak) == 1 else 'those estimates'}; use a run that moves the coordinates "
            "the parameters act on, or identify fewer parameters.")
