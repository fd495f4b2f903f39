"""One door to the tracking loop's backends: :func:`prepare` gives a :class:`Loop`, compiled or numpy.

A :class:`Loop` integrates the three systems of W 5.2 (docs/theory/nominal-actual.md) for one nominal
plant, actual plant, constraint, compensator and actuators; it is implemented twice, with the same methods
and the same results:

- :class:`robustrack.compiled.backend.CompiledBackend` — the numba kernels (compiled once per machine);
- :class:`~robustrack.tracking.numpy_loop.NumpyLoop` — the numpy reference, for anything without a
  compiled form, and ``backend="numpy"``.

This module is the only place that chooses between them (:func:`prepare` for a tracking run,
:func:`nominal_loop` for its nominal system, :func:`constrained_loop` for the constrained system alone);
the integrators (:mod:`~robustrack.tracking.integrate`) and their callers never branch on the backend.
"""

from __future__ import annotations

import warnings
from typing import Protocol

from ..errors import RobustrackNotice

__all__ = ["Loop", "prepare", "nominal_loop", "constrained_loop", "CompilationFallback"]


class CompilationFallback(RobustrackNotice):
    """The tracking loop runs on numpy: something in it has no compiled form (one line says what)."""


class Loop(Protocol):
    """What a backend of the tracking loop does (W 5.2); every method returns what
    :mod:`~robustrack.tracking.integrate` defines (:class:`~robustrack.tracking.integrate.NominalSolution`,
    :class:`~robustrack.tracking.integrate.ControlledSolution`, :class:`~robustrack.tracking.integrate.SolverStats`).

    Attributes
    ----------
    name : str
        ``"compiled"`` or ``"numpy"`` (the solver statistics' ``backend``).
    compensator : Compensator or None
        The compensator of the loop (None: u = 0).
    """

    name: str
    compensator: object

    def nominal(self, y0, t0, t1, rtol, atol):
        """``M q̈ = Q + Qᶜ`` with DOP853 and its dense output (W 5.2.9–5.2.11) → NominalSolution."""

    def constrained(self, y0, t0, t1, t_eval, method, rtol, atol):
        """The constrained system alone on ``t_eval`` → ``(t, y, stats)``."""

    def controlled(self, nom, x0, t_span, t_eval, *, method, rtol, atol, progress=None):
        """The controlled actual system under continuous control (W 5.2.17) → ControlledSolution."""

    def sampled(self, nom, x0, t_span, t_eval, *, sample_period, rtol, atol, progress=None, sensor=None):
        """The controlled actual system under zero-order hold, the law seeing the state through ``sensor``
        (:class:`robustrack.loop.Sensor`; None: the state itself) → ControlledSolution."""

    def uncompensated(self, nom, x0, t_span, t_eval, *, rtol, atol):
        """``M_a q̈_a = Q_a + Qᶜ(t)`` (W 5.2.16) → ``(t_grid, x_grid, t_steps, x_steps, stats)``."""

    def measure(self, run, ctl):
        """At every point of a controlled solution of ``run`` (the output grid reached and every accepted step):
        ``(t, norms)``, norms (N × 6) with the columns ‖e‖∞, ‖ė‖∞, ‖Qᵘ‖∞, ‖δq‖∞, ‖M̃_a‖∞ and GD's
        ‖(I − M̃_a)(e + K_i z)‖∞ (W 5.3.4–5.3.5, W 8.2.17; not read without K_i); None when nothing was solved."""


def _numpy(nominal, actual, constraint, compensator=None, actuators=None, nonideal=None) -> Loop:
    from .numpy_loop import NumpyLoop

    return NumpyLoop(nominal, actual, constraint, compensator, actuators, nonideal)


def _compiled(loop, law=None, compensator=None) -> Loop:
    from ..compiled.backend import CompiledBackend

    return CompiledBackend(loop, law, compensator)


def prepare(problem, actual, actuators=None, *, stacklevel: int = 2, measure: bool = False) -> Loop:
    """The loop of a problem tracked with one actual plant: compiled where every part has a compiled form.

    With ``backend="auto"`` and something without one (a plant or a constraint without a symbolic form,
    a compensator or control function that is not built in, a callable input matrix), the loop runs on
    numpy after one :class:`CompilationFallback` notice saying what.

    Parameters
    ----------
    problem : TrackingProblem
        Its nominal plant, constraint, compensator, actuators, sampling and ``backend``.
    actual : Plant
        The tracked actual plant.
    actuators : BoundActuators, optional
        ``problem.actuators`` bound to the nominal plant and constraint (the numpy loop's).
    stacklevel : int
        Of the notice, counted from the caller of :func:`prepare`.
    measure : bool
        The loop will measure along its runs (a campaign's samples, keyword-only): compiled kernels for it now,
        not at the first sample (:func:`~robustrack.compiled.loop.compiled_loop`).

    Returns
    -------
    Loop
    """
    from ..compiled.loop import compiled_loop, fallback_reason, kernel_law

    nominal, constraint, compensator = problem.nominal, problem.constraint, problem.compensator
    if problem.backend == "auto":
        reason = fallback_reason(nominal, actual, constraint, problem.actuators)
        law = kernel_law(compensator, nominal.n) if reason is None else None  # a user's law compiles: not in vain
        if reason is None and law is None:
            from ..compiled.laws import refusal

            call = compensator.kernel_law(nominal.n)
            why = None if call is None else refusal(call.law)
            reason = (f"the compensator {type(compensator).__name__} (or its control function) has no law the "
                      "compiled loop can run (docs/guide/compensators.md: your own compensator)" if why is None else
                      f"numba does not compile the law {call.law.__name__} of {type(compensator).__name__}: {why} "
                      "(docs/guide/compensators.md: your own compensator)")
        if reason is None:
            loop = compiled_loop(nominal, actual, constraint, problem.actuators,
                                 hold=problem.sample_period is not None, measure=measure)
            return _compiled(loop, law, compensator)
        warnings.warn(f"tracking loop runs on numpy (slower): {reason}.", CompilationFallback,
                      stacklevel=stacklevel + 1)
    return _numpy(nominal, actual, constraint, compensator, actuators)


def nominal_loop(problem, actuators=None, *, reference: bool = False) -> Loop:
    """The loop of a problem's nominal system (the nominal plant as the actual one, no compensator).

    Compiled with ``backend="auto"`` where the plant, the constraint and the actuators have compiled forms
    (silently numpy otherwise: the tracking run's :func:`prepare` says why); a tracking run follows, so a
    helper process compiles its kernels meanwhile where this machine has not yet.

    Parameters
    ----------
    problem : TrackingProblem
    actuators : BoundActuators, optional
        ``problem.actuators`` bound to the nominal plant and constraint.
    reference : bool
        The numpy reference whatever the backend (keyword-only): a failed compiled run restarted to name
        the state where the actuators' force stopped being realizable.

    Returns
    -------
    Loop
    """
    from ..compiled.loop import compiled_loop, fallback_reason

    nominal, constraint = problem.nominal, problem.constraint
    if not reference and problem.backend == "auto" and \
            fallback_reason(nominal, nominal, constraint, problem.actuators) is None:
        return _compiled(compiled_loop(nominal, nominal, constraint, problem.actuators, jacobian=False, ahead=True,
                                       hold=problem.sample_period is not None))
    return _numpy(nominal, nominal, constraint, None, actuators)


def constrained_loop(plant, constraint, nonideal=None) -> Loop:
    """The loop of the constrained system alone (:func:`~robustrack.tracking.simulate_constrained`).

    Parameters
    ----------
    plant : Plant
    constraint : Constraint or None
    nonideal : callable, optional
        ``C(q, q̇, t)`` (W 4.2.6): runs on numpy.

    Returns
    -------
    Loop
        Compiled where the plant and the constraint have compiled forms and there is no ``nonideal``.
    """
    from ..compiled.loop import compiled_loop

    loop = compiled_loop(plant, plant, constraint, jacobian=False) if nonideal is None else None
    return _numpy(plant, plant, constraint, nonideal=nonideal) if loop is None else _compiled(loop)
