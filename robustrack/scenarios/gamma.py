"""The Γ Monte Carlo of a scenario (W 7.3, Figs. 7.1–7.8; ``robustrack gamma``).

Simulate the scenario's nominal controlled system once, sample the actual plants
(uniform ±spread on the masses by default, or on the parameters named) and estimate the
distribution of ``max_t ‖δq(t)‖∞`` with :func:`robustrack.uncertainty.estimate_gamma`.
"""

from __future__ import annotations

from dataclasses import dataclass

import contextlib
import time
import warnings
from typing import Callable, Sequence

import numpy as np

from ..constraints import FunctionConstraint
from ..errors import ParameterError, ScenarioError
from ..campaigns.sampling import check_seed, check_spread
from ..uncertainty import (DEFAULT_CHUNK, LargeMonteCarlo, check_gamma_settings, check_sample_count, estimate_gamma,
                           parameter_values, sample_stream)
from .scenario import Scenario, load_scenario

__all__ = ["run_gamma", "GammaStudy", "actuated_trajectory", "tracked_trajectory"]


def _no_constraint(n: int) -> FunctionConstraint:
    """``A = 0, b = 0``: the fundamental equation then gives Qᶜ = 0 exactly (docs/theory/fundamental-equation.md).

    Used for scenarios without constraints (W Remark 7.2's unconstrained nominal
    system), so the nominal trajectory comes from the same integrator.
    """
    return FunctionConstraint(lambda q, qd, t: np.zeros(np.shape(q)[:-1] + (1, n)),
                              lambda q, qd, t: np.zeros(np.shape(q)[:-1] + (1,)), n=n, m=1)


def _run_states(problem, run=None):
    """(run, t, q, q̇): the nominal run (integrated if not given) on the problem's output grid."""
    run = problem.nominal_run() if run is None else run
    n, t = problem.n, run.t_eval
    y = run.solution(t)
    return run, t, y[:, :n], y[:, n:]


def actuated_trajectory(problem, name: str = "the scenario"):
    """The nominal motion of an actuated scenario and the force its actuators apply, B τᶜ (docs/theory/constraint-models.md).

    Γ bounds δq = M_a⁻¹(Q_a + F) − M⁻¹(Q + F) along the nominal motion, F the nominal force
    the actual plant receives (W 5.3.5). With actuators that force is B τᶜ, τᶜ Gauss's
    command (:mod:`robustrack.tracking.actuators`), and the nominal motion is the servo
    motion ``M q̈ = Q + B τᶜ`` — not the ideal Qᶜ and its motion (they agree only for an
    invertible B).

    Parameters
    ----------
    problem : TrackingProblem
        A tracking problem with ``actuators`` (its nominal plant, constraint, initial state,
        output grid and tolerances; the nominal motion is integrated as in a tracking run,
        DOP853).
    name : str
        The scenario, for messages.

    Returns
    -------
    SimpleNamespace
        ``t (T,)``, ``q``, ``qd``, ``Qc (T, n)`` with ``Qc = B τᶜ``, and ``tau_c (T, k)``.

    Raises
    ------
    ScenarioError
        A nominal command |τᶜ| exceeds ``actuators.tau_max`` on the output grid: the
        actuators cannot apply B τᶜ even to the nominal plant, so the δq of W (5.3.5) is
        not the one the actual plant sees (it would depend on the compensator's τᵘ
        through the clipping), and no Γ is estimated.
    RealizabilityError
        The actuators cannot realize the constraint along the nominal motion.
    """
    from types import SimpleNamespace

    run, t, q, qd = _run_states(problem)
    actuators = problem.actuators
    force, tau_c, _ = run.actuators.nominal(q, qd, t)
    over = np.abs(tau_c) > actuators.tau_max
    if np.any(over):
        i, a = np.argwhere(over)[0]
        raise ScenarioError(
            f"scenario {name!r}: the nominal command saturates (|τᶜ_{a + 1}| = {abs(tau_c[i, a]):.4g} > tau_max = "
            f"{float(np.broadcast_to(actuators.tau_max, tau_c.shape[-1:])[a]):.4g} at t = {t[i]:.4g} s), so the "
            "actuators cannot apply the nominal force B τᶜ and the δq of W (5.3.5) is not defined by the nominal "
            "motion alone (it would depend on the compensator through the clipping). No Γ is estimated: raise "
            "`actuators.tau_max`, or give Γ yourself (`uncertainty.gamma`, and the design value `compensator.gss.gamma_prime` "
            "or `compensator.gd.gamma`).")
    return SimpleNamespace(t=t, q=q, qd=qd, Qc=force, tau_c=tau_c)


def tracked_trajectory(problem, run=None):
    """The nominal motion a tracking run follows, with its Qᶜ: ``problem.nominal_run()`` on the output grid.

    Γ bounds δq along the motion the controlled system tracks (W 5.3.5); that is the DOP853 dense
    output of :meth:`~robustrack.tracking.TrackingProblem.nominal_run`, not a second integration of
    the nominal system (on a chaotic plant two integrations part after a few seconds).

    Parameters
    ----------
    problem : TrackingProblem
        Without actuators (with them, :func:`actuated_trajectory`).
    run : NominalRun, optional
        ``problem.nominal_run()`` if already computed.

    Returns
    -------
    SimpleNamespace
        ``t (T,)`` (the problem's output grid), ``q``, ``qd``, ``Qc (T, n)``.
    """
    from types import SimpleNamespace

    from ..tracking.rhs import nominal_motion

    run, t, q, qd = _run_states(problem, run)
    if problem.constraint is None:
        Qc = np.zeros_like(q)
    else:
        Qc = np.asarray(nominal_motion(problem.nominal, problem.constraint, q, qd, t).Qc, dtype=float)
    return SimpleNamespace(t=t, q=q, qd=qd, Qc=Qc)


@dataclass(frozen=True)
class GammaStudy:
    """The Γ Monte Carlo of a scenario (W 5.3.5, 5.3.10): the estimate, and what was run.

    Attributes
    ----------
    estimate : GammaEstimate
        The distributions of max_t ‖δq‖∞ and the suggestion Γ′ (:func:`~robustrack.uncertainty.estimate_gamma`).
    doc : dict
        JSON-ready: the scenario, the draws (samples, spread, seed, parameter, nominal values), the
        quantiles, Γ′ and the wall times (see :func:`run_gamma`).
    """

    estimate: object
    doc: dict

    @property
    def gamma_prime(self) -> float:
        """Γ′ = margin × the quantile of the exact max_t ‖δq‖∞."""
        return float(self.doc["gamma_prime"])

    def to_dict(self) -> dict:
        """The study as a JSON-ready dict (a copy of ``doc``)."""
        return dict(self.doc)

    def plot(self, *, unit: str | None = None, used: float | None = None):
        """The densities of max_t ‖δq‖∞, exact and first order, Γ′ (and ``used``) marked (W Figs. 7.1–7.8).

        Returns
        -------
        matplotlib.figure.Figure
            :func:`~robustrack.campaigns.figures.gamma_density_figure`.
        """
        from ..campaigns.figures import gamma_density_figure

        return gamma_density_figure(self.estimate, unit=unit, used=used)


def run_gamma(
    scenario: Scenario | str,
    samples: int,
    spread: float | None = None,
    seed: int = 0,
    *,
    parameter: str | Sequence[str] | None = None,
    quantile: float = 0.99,
    margin: float = 1.2,
    progress: Callable[[float], None] | None = None,
    labels: dict | None = None,
):
    """Run the Γ Monte Carlo of ``scenario``.

    Parameters
    ----------
    scenario : Scenario or str
        A scenario (or catalog name) whose config has a ``simulation`` section
        (t_end, method, rtol, atol, n_points) and whose plant has ``parameter``.
        Constrained-simulation kinds give the plant as ``plant`` (the nominal trajectory is
        simulated with the scenario's own solver settings); tracking kinds as ``nominal``
        (their actual plant and compensator are not used: the Monte Carlo samples its own
        actual plants along the nominal motion the tracking follows, ``nominal_run()``,
        :func:`tracked_trajectory`).
        Without a constraint (the unconstrained variant) Qᶜ = 0. With ``[actuators]`` the
        nominal force is the one the actuators apply, B τᶜ, along the servo motion
        (:func:`actuated_trajectory`; refused if the nominal command saturates).
    samples : int
        Number N of sampled actual plants (W uses 1014 and 10 028).
    spread : float, optional
        Relative half-width of the uniform draws, e.g. 0.1 for ±10 % of each mass (default 0.1). Refused
        for a scenario with named uncertain parameters (``[uncertainty.parameters.NAME]``): each is then
        drawn from its own distribution (all draws held at once: 8 bytes × parameters a sample).
    seed : int, default 0
        Seed of the draws (recorded in ``doc``).
    parameter : str or sequence of str, optional
        The plant parameter(s) to perturb (see :func:`robustrack.uncertainty.estimate_gamma`);
        default: the scenario kind's masses (``Scenario.spec.uncertain``: ``m``, or
        ``("m1", "m2")`` for the Duffing oscillator).
    quantile, margin : float
        Γ′ = margin × (quantile quantile of the exact distribution).
    progress : callable, optional
        Called with the finished fraction of the Monte Carlo after each block.
    labels : dict, optional
        How messages name ``samples``, ``spread``, ``seed``, ``quantile`` and ``margin`` (default: so;
        the command line passes its flags).

    Returns
    -------
    GammaStudy
        ``estimate`` (a GammaEstimate) and ``doc``, JSON-ready: ``scenario``, ``samples``, ``spread``, ``seed``, ``parameter``,
        ``nominal`` (the nominal parameter value), ``n_times``, ``quantile``,
        ``margin``, ``gamma_prime``, ``exact`` / ``first_order`` / ``analytic``
        (each ``{min, median, p95, p99, max}``), ``wall_s`` (Monte Carlo),
        ``trajectory_wall_s`` (nominal simulation).

    Raises
    ------
    ScenarioError
        The plant has no ``parameter`` (the message lists its parameters), or the
        scenario has no ``simulation`` section.
    """
    from .parameter_shift import DEFAULT_SPREAD, has_named_parameters, scenario_uncertain_set

    from .declared_gamma import without_gamma

    if isinstance(scenario, str):
        scenario = load_scenario(scenario)
    scenario = without_gamma(scenario)  # Γ is what this study estimates (a user's plant declares none before it)
    names = {**{k: k for k in ("samples", "spread", "seed", "quantile", "margin")}, **(labels or {})}
    # everything that can be refused is refused before the nominal trajectory is simulated
    built = scenario.build() if parameter is None and has_named_parameters(scenario) else None  # built once
    named = scenario_uncertain_set(scenario, nominal=getattr(built, "nominal", None)) if parameter is None else None
    if named is not None:
        if spread is not None:
            raise ParameterError(f"`{names['spread']}` does not apply: scenario {scenario.name!r} names its uncertain "
                                 "parameters ([uncertainty.parameters.NAME]), each with its own range and "
                                 "distribution; leave it out.")
        parameter = named.names
    if parameter is None:
        parameter = scenario.spec.uncertain_parameters(scenario.config)
    k = 1 if isinstance(parameter, str) else len(parameter)
    samples = check_sample_count(samples, k, names["samples"], streamed=named is None)
    spread = None if named is not None else check_spread(DEFAULT_SPREAD if spread is None else spread,
                                                         names["spread"])
    seed = check_seed(seed, names["seed"])
    check_gamma_settings(quantile, margin, (names["quantile"], names["margin"]))
    sim = scenario.config.get("simulation")
    if not isinstance(sim, dict):
        raise ScenarioError(f"scenario {scenario.name!r} has no [simulation] section; the Γ Monte Carlo "
                            "needs one to simulate the nominal trajectory.")
    problem = scenario.build() if built is None else built
    # constrained-simulation kinds build `plant`, tracking kinds `nominal` (+ actual, compensator)
    plant = getattr(problem, "plant", None) or getattr(problem, "nominal", None)
    if plant is None:
        raise ScenarioError(f"scenario {scenario.name!r} builds no nominal plant (`plant` or `nominal`).")
    constraint = problem.constraint if problem.constraint is not None else _no_constraint(plant.n)
    try:
        if named is not None:  # the plant's values, and the friction coefficients' given ones
            from .actual_forces import friction_parameters

            friction = friction_parameters(scenario.config, plant.coordinates)
            own = [name for name in parameter if name not in friction]
            values = dict(zip(own, np.atleast_1d(parameter_values(plant, tuple(own))))) if own else {}
            nominal_value = np.array([float(values[name]) if name in values else friction[name] for name in parameter])
        else:
            nominal_value = parameter_values(plant, parameter)
    except ParameterError as exc:
        raise ScenarioError(f"scenario {scenario.name!r}: {exc}") from None
    start = time.perf_counter()
    actuators = getattr(problem, "actuators", None)
    if actuators is not None and not actuators.per_joint:  # B = I: the force is Qᶜ (the effort limits do not change δq)
        trajectory = actuated_trajectory(problem, scenario.name)
    elif callable(getattr(problem, "nominal_run", None)):
        # a tracking problem: along the motion the tracking follows (its DOP853 dense output), not a second
        # integration of the nominal system
        trajectory = tracked_trajectory(problem)
    else:
        # mechanics evaluates 0/0 in a branch it discards where A = 0; silence that only
        # for the identically zero constraint of the unconstrained variant
        quiet = problem.constraint is None
        with np.errstate(invalid="ignore", divide="ignore") if quiet else contextlib.nullcontext():
            from ..tracking import simulate_constrained

            trajectory = simulate_constrained(
                plant, constraint, problem.q0, problem.qd0, problem.t_span,
                n_points=sim["n_points"], method=sim["method"], rtol=sim["rtol"], atol=sim["atol"],
                nonideal=getattr(problem, "nonideal", None),
            )
    trajectory_wall = time.perf_counter() - start
    if named is not None:  # each named parameter from its distribution, one generator (as a campaign draws them)
        draws = named.sample(samples, np.random.default_rng(seed))
        sampling, nominal_value = "named", np.atleast_1d(nominal_value)
    else:
        with warnings.catch_warnings():  # the size was announced above
            warnings.simplefilter("ignore", LargeMonteCarlo)
            # drawn block by block inside the estimator: memory holds the maxima, not the draws
            draws = sample_stream(nominal_value, samples, spread=spread, kind="uniform", seed=seed)
        sampling, nominal_value = draws.kind, draws.nominal
    from .actual_forces import scenario_forces

    # friction and disturbance: sample i's as a campaign's (its seed, i); named coefficients: their columns of the draws
    forces = scenario_forces(scenario.config, plant.coordinates if named is not None else None)
    coefficients = {} if forces is None or named is None else forces.parameters
    columns = [j for j, name in enumerate(parameter) if name in coefficients]  # the draws' friction columns
    if columns:
        dQ = forces.at({parameter[j]: draws[:, j] for j in columns})
        keep = [j for j in range(len(parameter)) if j not in columns]
        draws, parameter = draws[:, keep], tuple(parameter[j] for j in keep)
        if len(parameter) == 1:
            parameter = parameter[0]
    else:
        dQ = None if forces is None else forces.batch(samples, seed)
    # per-sample friction carries a sample axis: every sample in one block (blocks then run over times)
    sampled = columns or (forces is not None and not forces.deterministic)
    chunk = max(DEFAULT_CHUNK, samples) if sampled else DEFAULT_CHUNK
    estimate = estimate_gamma(plant, trajectory, draws, parameter=parameter, dQ=dQ, quantile=quantile,
                              margin=margin, chunk=chunk, progress=progress)
    doc = {"scenario": scenario.name, **estimate.to_dict(), "sampling": sampling,
           "nominal": nominal_value.tolist(), "trajectory_wall_s": trajectory_wall}
    if named is not None:
        doc.update(seed=seed, parameters=named.describe())
    if forces is not None:
        doc["actual_forces"] = forces.describe()
    return GammaStudy(estimate, doc)
