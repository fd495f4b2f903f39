"""Power and work of forces along a motion: of the control forces Qᶜ and Qᵘ along a tracking run, and their
workless share (S 3.8; docs/results/anatomy.md).

Both forces act on the controlled actual system (W 5.2.17:
``M_a q̈_c = Q_a + Qᶜ(t) + Qᵘ``), so their power is ``P = q̇_cᵀ F`` and their work
``W(t) = ∫₀ᵗ P dt`` (trapezoidal rule on the run's output grid,
:func:`work`); ``P_c + P_u`` is the rate of change of the actual
system's energy beyond what its own forces do.

Sławianowski's classes of control force (S §3, 3.8) differ in what they do to the energy
balance: a gyroscopic force ``S q̇`` (S = −Sᵀ) is "dual to velocity vectors" and does
no work. Any force F splits into a part along the motion and a workless part
orthogonal to q̇_c. The split needs a metric W: the working part is
``F∥ = (q̇ᵀF / q̇ᵀWq̇) W q̇`` and the workless part ``F⊥ = F − F∥`` has ``q̇ᵀF⊥ = 0``.
With the kinetic-energy metric W = M (S §1: "in the sense of the metric ∂²L/∂q̇∂q̇"; pass
the plant) the split does not depend on the coordinates; without a plant W = I
(Euclidean, meaningful when all coordinates share a unit). Sizes are measured in the
dual norm ``‖F‖² = Fᵀ W⁻¹ F``; the instantaneous workless share is
``‖F⊥‖²/‖F‖² = 1 − (q̇ᵀF)² / ((q̇ᵀWq̇)(FᵀW⁻¹F))`` (sin² of the angle between W⁻¹F
and q̇), the run's share is ``∫‖F⊥‖² dt / ∫‖F‖² dt``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["power", "work", "ForcePower", "ControlPower", "force_power", "control_power"]



def power(force, qd) -> np.ndarray:
    """The power ``q̇ᵀF`` of a generalized force along a motion.

    Parameters
    ----------
    force, qd : array_like (..., n)

    Returns
    -------
    ndarray (...)
    """
    return np.einsum("...i,...i->...", np.asarray(force, dtype=float), np.asarray(qd, dtype=float))


def work(t, p) -> np.ndarray:
    """The work ``∫₀ᵗ P dt`` by the trapezoidal rule on the grid t (error O(h²) on a smooth P).

    Parameters
    ----------
    t : array_like (T,)
        Increasing times.
    p : array_like (T, ...)
        Power at those times.

    Returns
    -------
    ndarray (T, ...)
        Cumulative work, 0 at t[0].
    """
    t, p = np.asarray(t, dtype=float), np.asarray(p, dtype=float)
    if t.ndim != 1 or p.shape[:1] != t.shape:
        raise ParameterError(f"`t` must be (T,) and the power (T, ...); got {t.shape} and {p.shape}.")
    dt = np.diff(t).reshape((-1,) + (1,) * (p.ndim - 1))
    out = np.zeros_like(p)
    out[1:] = np.cumsum(0.5 * dt * (p[1:] + p[:-1]), axis=0)
    return out


@dataclass(frozen=True)
class ForcePower:
    """Power, work and workless share of one force along a motion (see the module docstring).

    Attributes
    ----------
    power : ndarray (T,)
        ``q̇ᵀF`` (W).
    work : ndarray (T,)
        ``∫₀ᵗ P dt`` (J), trapezoidal.
    abs_work : float
        ``∫|P| dt`` (J): the energy the force moves in either direction.
    workless_share : ndarray (T,)
        ``‖F⊥‖²/‖F‖²`` at each time (NaN where F = 0 or q̇ = 0).
    run_workless_share : float
        ``∫‖F⊥‖² dt / ∫‖F‖² dt`` (NaN when F = 0 throughout).
    """

    power: np.ndarray
    work: np.ndarray
    abs_work: float
    workless_share: np.ndarray
    run_workless_share: float

    def summary(self) -> dict:
        """JSON-ready: final work, ∫|P| dt, max |P| and the run's workless share."""
        return {"work": float(self.work[-1]) if self.work.size else 0.0, "abs_work": self.abs_work,
                "max_abs_power": float(np.max(np.abs(self.power))) if self.power.size else 0.0,
                "workless_share": self.run_workless_share}


def force_power(t, force, qd, metric=None) -> ForcePower:
    """Power, work and workless share of a force F(t) along a motion q̇(t).

    Parameters
    ----------
    t : array_like (T,)
        Increasing times.
    force, qd : array_like (T, n)
        The generalized force and the velocity of the system it acts on.
    metric : array_like (T, n, n) or (n, n), optional
        Symmetric positive definite metric W for the split (the mass matrix); None: I.

    Returns
    -------
    ForcePower
    """
    t, F, v = (np.asarray(x, dtype=float) for x in (t, force, qd))
    if t.ndim != 1 or F.shape != v.shape or F.shape[:1] != t.shape or F.ndim != 2:
        raise ParameterError(f"`t` must be (T,), `force` and `qd` (T, n) with the same T; got {t.shape}, "
                             f"{F.shape}, {v.shape}.")
    P = power(F, v)
    if metric is None:
        vWv, FWF = power(v, v), power(F, F)
    else:
        W = np.broadcast_to(np.asarray(metric, dtype=float), F.shape + F.shape[-1:])
        vWv = np.einsum("...i,...ij,...j->...", v, W, v)
        FWF = power(F, np.linalg.solve(W, F[..., None])[..., 0])
    perp = np.maximum(FWF - np.divide(P**2, vWv, out=np.zeros_like(P), where=vWv > 0), 0.0)
    perp = np.where(vWv > 0, perp, FWF)  # at rest every force is workless
    share = np.divide(perp, FWF, out=np.full_like(P, np.nan), where=FWF > 0)
    whole = float(work(t, FWF)[-1]) if t.size > 1 else float(np.sum(FWF))
    run_share = float(work(t, perp)[-1]) / whole if t.size > 1 and whole > 0 else float("nan")
    return ForcePower(power=P, work=work(t, P), abs_work=float(work(t, np.abs(P))[-1]) if t.size else 0.0,
                      workless_share=share, run_workless_share=run_share)


@dataclass(frozen=True)
class ControlPower:
    """:class:`ForcePower` of Qᶜ and Qᵘ along a tracking run (on the controlled actual system).

    Attributes
    ----------
    t : ndarray (T,)
    Qc, Qu : ForcePower
    metric : str
        ``"M"`` (the nominal plant's mass matrix at q_c) or ``"I"`` (Euclidean).
    """

    t: np.ndarray
    Qc: ForcePower
    Qu: ForcePower
    metric: str

    def summary(self) -> dict:
        """JSON-ready: ``{"metric", "Qc": {...}, "Qu": {...}}`` (:meth:`ForcePower.summary`; J, W)."""
        return {"metric": self.metric, "Qc": self.Qc.summary(), "Qu": self.Qu.summary()}

    def caption(self) -> str:
        """A sentence stating the numbers the power figure shows."""
        c, u = self.Qc.summary(), self.Qu.summary()

        def pct(x):
            return "n/a" if not np.isfinite(x) else f"{100 * x:.3g} %"

        return (f"Power q̇_cᵀF of Qᶜ (grey) and Qᵘ (orange) on the controlled actual system, their work and the "
                f"share of each force orthogonal to q̇_c ({'mass-matrix' if self.metric == 'M' else 'Euclidean'} "
                f"metric), which does no work. Work of Qᶜ {c['work']:.4g} J (∫|P| dt {c['abs_work']:.4g} J), "
                f"workless share {pct(c['workless_share'])}; work of Qᵘ {u['work']:.4g} J (∫|P| dt "
                f"{u['abs_work']:.4g} J), workless share {pct(u['workless_share'])}.")


def control_power(result, plant=None) -> ControlPower:
    """Power and work of Qᶜ and Qᵘ along a tracking run, and the share of each that does no work.

    Computed from what the run holds: ``t``, ``qcd`` (the controlled actual system's
    velocity, which both forces act on), ``Qc`` and ``Qu``.

    Parameters
    ----------
    result : TrackingResult
        The run (also one loaded with ``TrackingResult.load``).
    plant : Plant, optional
        The nominal plant: its mass matrix at q_c is the metric of the workless split
        (coordinate-free). None: the Euclidean metric.

    Returns
    -------
    ControlPower
    """
    for name in ("t", "qc", "qcd", "Qc", "Qu"):
        if not hasattr(result, name):
            raise ParameterError(f"`result` must be a TrackingResult (it has no `{name}`); got "
                                 f"{type(result).__name__}.")
    metric = None if plant is None else plant.mass_matrix(result.qc, result.t)
    return ControlPower(t=np.asarray(result.t, dtype=float),
                        Qc=force_power(result.t, result.Qc, result.qcd, metric),
                        Qu=force_power(result.t, result.Qu, result.qcd, metric),
                        metric="I" if plant is None else "M")
