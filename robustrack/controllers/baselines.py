"""Baseline compensators engineers already use: computed-torque PD and LQR state feedback.

They follow the compensator contract of :mod:`robustrack.controllers.compensators`
(u is an acceleration, the simulator applies ``Qᵘ = M(q_c) u`` with the NOMINAL
mass matrix, W 5.2.17) so that the comparison table can put them next to GSS, GD
and GD-bar. Neither promises a robust bound: ``bounds()`` returns ``inf`` with a
text saying so.

The error dynamics these are designed on
----------------------------------------
With ``e = q_c − q`` the tracking error obeys (W 5.3.3–5.3.6)

    ë = δq + u − M̃_a u,

where δq collects every difference between the actual plant at (q_c, q̇_c) and the
nominal one at (q, q̇). For a perfect model (M̃_a = 0) δq is the nominal model's
own difference ``a(q_c) + M(q_c)⁻¹Qᶜ(t) − q̈``, zero at e = ė = 0. Weighting u by
the nominal inertia (``Qᵘ = M(q_c) u``) is the feedback-linearizing part of
computed torque: the design model is the decoupled double integrator ``ë = u``
per coordinate. A full computed-torque law would also cancel the model difference
above (it needs q and q_c, which the contract ``u(t, e, ė, z)`` does not pass),
so it enters these loops as a state-dependent disturbance, O(‖e‖ + ‖ė‖).

:meth:`LQR.from_linearization` designs on the linearized error dynamics instead:
``ë ≈ A21 e + A22 ė + u``, with (A21, A22) the Jacobian of the unconstrained
nominal acceleration ``M⁻¹(Q + Qᶜ)`` at a point of the nominal trajectory and Qᶜ
held at its value there (in the loop Qᶜ(t) is computed on the nominal state and
applied to the actual plant as a given force, so it does not react to e).

Measured (triple pendulum, δm = (0.1, −0.2, 0.3) kg, energy constraint, W's ICs,
LSODA rtol 1e-8 / atol 1e-12; max ‖e‖∞ rad / max ‖ė‖∞ rad/s / max ‖Qᵘ‖∞):

==========================  =========================  ==========================
compensator                 1 s                        10 s
==========================  =========================  ==========================
none                        5.3e-2 / 3.6e-1 / 0        1.0e+2 / 1.6e+2 / 0
computed-torque (defaults)  6.4e-3 / 4.9e-2 / 4.7      3.5e-1 / 3.3 / 223
lqr (defaults)              6.8e-3 / 5.5e-2 / 4.7      6.1e-1 / 9.9 / 292
lqr.from_linearization(t=0) 7.0e-3 / 5.7e-2 / 4.7      6.6e-1 / 10.7 / 366
gss (seed settings)         4.8e-5 / 5.2e-4 / 5.0      1.3e-4 / 4.5e-3 / 386
==========================  =========================  ==========================

With ω_n = 10 rad/s the linear baselines reduce the drift by an order of magnitude
but stay three orders of magnitude behind GSS for similar peak effort: δq reaches
~90 (W's Γ ≈ 100) and a linear loop leaves an error of order δq/K_p.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from .._validate import as_float_array
from ..errors import ParameterError
from .compensators import Compensator, PromisedBounds

__all__ = ["ComputedTorque", "LQR", "double_integrator_lqr"]


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.array(arr, dtype=float)
    arr.setflags(write=False)
    return arr


def _per_coordinate(value, name: str, rule: str, test) -> float | np.ndarray:
    """A scalar or a 1-D vector (one value per coordinate), every entry passing ``test``."""
    arr = as_float_array(value, name)
    if arr.ndim > 1:
        raise ParameterError(f"`{name}` must be a scalar or one value per coordinate (1-D); got shape {arr.shape}.")
    if arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(test(arr)):
        raise ParameterError(f"`{name}` must be {rule} (every entry, finite); got {value!r}.")
    return float(arr) if arr.ndim == 0 else _frozen(arr)


def _positive_gains(value, name: str):
    return _per_coordinate(value, name, "> 0", lambda a: a > 0)


def _no_bound(law: str) -> PromisedBounds:
    return PromisedBounds(
        e=math.inf,
        edot=math.inf,
        region="none: a baseline (linear) compensator promises no robust bound",
        formula=f"{law}; no bound on ‖e‖, ‖ė‖ is derived under δq",
        assumptions="none (baseline for comparison; the errors are measured, not promised)",
        gamma=None,
    )



# --------------------------------------------------------------------------- #
# computed torque
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True, eq=False)
class ComputedTorque(Compensator):
    """Computed-torque (feedback-linearizing PD) compensator on the nominal model.

    ``u = −K_p e − K_d ė`` (an acceleration), applied as ``Qᵘ = M(q_c) u``: with the
    nominal inertia it makes the nominal error dynamics ``ë + K_d ė + K_p e = 0``
    per coordinate (poles ``−ζω_n ± ω_n√(ζ² − 1)`` with ``ω_n = √K_p``,
    ``ζ = K_d/(2√K_p)``), up to the nominal model's O(e) difference described in
    the module docstring.

    Parameters
    ----------
    Kp : float or array_like (n,)
        Position gains > 0 (1/s²); default 100 (ω_n = 10 rad/s).
    Kd : float or array_like (n,)
        Velocity gains > 0 (1/s); default 20 (ζ = 1, critically damped).

    Examples
    --------
    >>> c = ComputedTorque()
    >>> c(0.0, np.array([0.01, 0.0]), np.array([0.0, -0.1])).tolist()
    [-1.0, 2.0]
    >>> c.bounds().e
    inf
    """

    name: ClassVar[str] = "computed-torque"
    source: ClassVar[str] = ("baseline, not from the seeds: computed-torque PD on the nominal model, designed on "
                             "ë = u (robustrack.controllers.baselines)")
    parameter_info: ClassVar[dict] = {
        "Kp": ("K_p", "1/s²", "position gain, ω_n = √K_p"),
        "Kd": ("K_d", "1/s", "velocity gain, ζ = K_d/(2√K_p)"),
    }
    Kp: float | np.ndarray = 100.0
    Kd: float | np.ndarray = 20.0

    _rules: ClassVar[dict] = {"Kp": _positive_gains, "Kd": _positive_gains}

    def __call__(self, t, e, edot, z=None):
        """u = −K_p e − K_d ė, shape ``(..., n)``."""
        return -(self.Kp * e + self.Kd * edot)

    def bounds(self, gamma=None) -> PromisedBounds:
        """No robust bound (``inf``): a linear baseline. ``gamma`` is ignored."""
        return _no_bound("u = −K_p e − K_d ė (computed torque, Qᵘ = M(q_c) u), designed on ë = u")


# --------------------------------------------------------------------------- #
# LQR
# --------------------------------------------------------------------------- #
def double_integrator_lqr(q_e, q_edot, r) -> tuple[float, float]:
    """LQR gains (k_p, k_d) of ``ë = u`` with cost ∫ q_e e² + q_ė ė² + r u² dt (``control.lqr``).

    Closed form, for reference: ``k_p = √(q_e/r)``, ``k_d = √(q_ė/r + 2 k_p)``.

    Parameters
    ----------
    q_e : float
        Weight of e² in the cost (>= 0).
    q_edot : float
        Weight of ė² in the cost (>= 0).
    r : float
        Weight of u² in the cost (> 0).

    Returns
    -------
    k_p, k_d : float
        The gains of ``u = −k_p e − k_d ė``.
    """
    import control  # python-control: imported where it is used (start-up time)

    K, _, _ = control.lqr(np.array([[0.0, 1.0], [0.0, 0.0]]), np.array([[0.0], [1.0]]),
                          np.diag([q_e, q_edot]), np.array([[r]]))
    return float(K[0, 0]), float(K[0, 1])


def _weights(value, name: str) -> np.ndarray:
    arr = as_float_array(value, name)
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"All entries of `{name}` must be finite; got {value!r}.")
    return arr


@dataclasses.dataclass(frozen=True, eq=False)
class LQR(Compensator):
    """LQR state feedback ``u = −K [e; ė]`` on the error dynamics, K from ``control.lqr``.

    Two designs:

    * default (``A = B = None``): the nominal error dynamics left by the ``Qᵘ = M u``
      structure, ``ë = u``, a double integrator per coordinate; ``Q = (q_e, q_ė)`` are
      the weights of e_i² and ė_i² (each a scalar or one per coordinate) and ``R`` the
      weight of u_i² (scalar or per coordinate). The design decouples: K = [k_p I, k_d I]
      (per coordinate), ``k_p = √(q_e/r)``, ``k_d = √(q_ė/r + 2k_p)``.
    * a design model (``A`` (2n, 2n), ``B`` (2n, n) for ``d/dt [e; ė] = A [e; ė] + B u``),
      e.g. from :meth:`from_linearization`; ``Q`` is then a (2n, 2n) matrix or the pair
      ``(q_e, q_ė)`` (→ ``diag(q_e I, q_ė I)``), ``R`` an (n, n) matrix or a scalar (→ r I).

    Parameters
    ----------
    Q : array_like
        State weights; default ``(100, 1)``.
    R : float or array_like
        Input weight; default ``1e-2``. With the defaults k_p = 100, k_d = √300 ≈ 17.3:
        ω_n = 10 rad/s like :class:`ComputedTorque`'s default, ζ ≈ 0.87.
    A, B : array_like, optional
        The design model (both or neither).

    Examples
    --------
    >>> c = LQR()
    >>> np.round(c.gain_matrix(1), 4).tolist()
    [[100.0, 17.3205]]
    >>> c(0.0, np.array([0.01]), np.array([0.0])).round(6).tolist()
    [-1.0]
    """

    name: ClassVar[str] = "lqr"
    source: ClassVar[str] = ("baseline, not from the seeds: LQR state feedback from python-control's control.lqr, "
                             "designed on ë = u (robustrack.controllers.baselines)")
    parameter_info: ClassVar[dict] = {
        "Q": ("Q = (q_e, q_ė)", "1/{q}², s²/{q}²", "weights of e² and ė² in the LQR cost"),
        "R": ("R", "s⁴/{q}²", "weight of u² in the LQR cost"),
        "A": ("A", "1/s, 1 / 1/s², 1/s (blocks)", "design model d/dt [e; ė] = A [e; ė] + B u (—: ë = u)"),
        "B": ("B", "", "input matrix of the design model (—: ë = u)"),
    }
    Q: object = (100.0, 1.0)
    R: object = 1e-2
    A: object = None
    B: object = None

    def _check_relations(self):
        if (self.A is None) != (self.B is None):
            given = {k: "None" if v is None else "given" for k, v in (("A", self.A), ("B", self.B))}
            raise ParameterError(f"`A` and `B` (the design model) must be given together; got "
                                 f"A {given['A']}, B {given['B']}.")
        if self.A is None:
            self._check_decoupled()
        else:
            self._check_model()

    def _check_decoupled(self):
        Q = _weights(self.Q, "Q")
        if Q.ndim not in (1, 2) or Q.shape[0] != 2:
            raise ParameterError(f"`Q` must be the pair (q_e, q_ė) (shape (2,) or (2, n)) when no design model "
                                 f"A, B is given; got shape {Q.shape}.")
        if not (np.all(Q[0] > 0) and np.all(Q[1] >= 0)):
            raise ParameterError(f"`Q` = (q_e, q_ė) needs q_e > 0 (else nothing drives e to 0) and q_ė >= 0; "
                                 f"got {self.Q!r}.")
        R = _per_coordinate(self.R, "R", "> 0", lambda a: a > 0)
        qe, qed, r = np.broadcast_arrays(Q[0], Q[1], R)
        gains = np.array([double_integrator_lqr(a, b, c) for a, b, c in zip(qe.ravel(), qed.ravel(), r.ravel())])
        kp, kd = gains[:, 0].reshape(qe.shape), gains[:, 1].reshape(qe.shape)
        object.__setattr__(self, "Q", _frozen(Q))
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "_kp", float(kp) if kp.ndim == 0 else _frozen(kp))
        object.__setattr__(self, "_kd", float(kd) if kd.ndim == 0 else _frozen(kd))
        object.__setattr__(self, "_K", None)

    def _check_model(self):
        A, B = _weights(self.A, "A"), _weights(self.B, "B")
        if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] % 2:
            raise ParameterError(f"`A` must be a square (2n, 2n) matrix for the state [e; ė]; got shape {A.shape}.")
        n = A.shape[0] // 2
        if B.shape != (2 * n, n):
            raise ParameterError(f"`B` must have shape ({2 * n}, {n}) for A of shape {A.shape}; got {B.shape}.")
        Q = _weights(self.Q, "Q")
        if Q.shape != (2 * n, 2 * n):
            if Q.ndim not in (1, 2) or Q.shape[0] != 2 or (Q.ndim == 2 and Q.shape[1] != n):
                raise ParameterError(f"`Q` must be a ({2 * n}, {2 * n}) matrix or the pair (q_e, q_ė); got shape "
                                     f"{Q.shape}.")
            Q = np.diag(np.concatenate([np.broadcast_to(Q[0], n), np.broadcast_to(Q[1], n)]))
        R = _weights(self.R, "R")
        if R.ndim < 2:
            R = np.diag(np.broadcast_to(R, (n,)).astype(float))
        if R.shape != (n, n):
            raise ParameterError(f"`R` must be an ({n}, {n}) matrix, a scalar or one weight per input; "
                                 f"got shape {R.shape}.")
        if not (np.allclose(Q, Q.T) and np.all(np.linalg.eigvalsh(Q) >= -1e-12 * max(1.0, np.abs(Q).max()))):
            raise ParameterError(f"`Q` must be symmetric positive semi-definite; got {self.Q!r}.")
        if not (np.allclose(R, R.T) and np.all(np.linalg.eigvalsh(R) > 0)):
            raise ParameterError(f"`R` must be symmetric positive definite; got {self.R!r}.")
        try:
            import control

            K, _, poles = control.lqr(A, B, Q, R)
        except Exception as exc:  # python-control/slycot raise several types
            raise ParameterError(f"LQR design failed for the given `A`, `B`, `Q`, `R` (is (A, B) stabilizable and "
                                 f"(A, Q) detectable?): {exc}") from None
        if not np.all(np.real(poles) < 0):
            raise ParameterError(f"The LQR loop is not asymptotically stable (poles {poles}); check that (A, Q) is "
                                 "detectable.")
        for pname, val in (("A", A), ("B", B), ("Q", Q), ("R", R)):
            object.__setattr__(self, pname, _frozen(val))
        object.__setattr__(self, "_kp", None)
        object.__setattr__(self, "_kd", None)
        object.__setattr__(self, "_K", _frozen(K))

    @classmethod
    def from_linearization(cls, plant, constraint, q, qd, t: float = 0.0, *, Q=(100.0, 1.0), R=1e-2) -> "LQR":
        """LQR on the error dynamics linearized at a point (q, q̇, t) of the nominal trajectory.

        ``d/dt [e; ė] = A [e; ė] + B u`` with A the Jacobian of the unconstrained
        ``M⁻¹(Q + Qᶜ)`` at the point, Qᶜ = the constraint force there held fixed
        (:func:`robustrack.plants.linearize_motion` with ``constraint=None, force=Qᶜ``),
        and ``B = B_Q M(q)`` (= [0; I]: u is an acceleration, ``Qᵘ = M u``).

        Parameters
        ----------
        plant : Plant
            The nominal plant.
        constraint : Constraint or None
            Gives Qᶜ at the point (None: Qᶜ = 0).
        q, qd : array_like (n,)
        t : float
        Q, R :
            Weights as in :class:`LQR`.
        """
        from ..plants.motion import constrained_motion, linearize_motion

        q = np.asarray(q, dtype=float).reshape(-1)
        qd = np.asarray(qd, dtype=float).reshape(-1)
        M = plant.mass_matrix(q, t)
        Qc = constrained_motion(plant, constraint, q, qd, t, M=M).Qc
        A, B = linearize_motion(plant, None, q, qd, t, Qc)
        return cls(Q=Q, R=R, A=A, B=B @ M)

    def gain_matrix(self, n: int) -> np.ndarray:
        """K of ``u = −K [e; ė]``, shape (n, 2n)."""
        if self._K is not None:
            if self._K.shape[0] != n:
                raise ParameterError(f"This LQR was designed for {self._K.shape[0]} coordinates; got n = {n}.")
            return np.array(self._K)
        return np.hstack([np.diag(np.broadcast_to(self._kp, (n,))), np.diag(np.broadcast_to(self._kd, (n,)))])

    def __call__(self, t, e, edot, z=None):
        """u = −K [e; ė], shape ``(..., n)``."""
        if self._K is None:
            return -(self._kp * e + self._kd * edot)
        return -(np.concatenate([e, edot], axis=-1) @ self._K.T)

    def bounds(self, gamma=None) -> PromisedBounds:
        """No robust bound (``inf``): a linear baseline. ``gamma`` is ignored."""
        design = "ë = u per coordinate" if self._K is None else "the design model (A, B)"
        return _no_bound(f"u = −K [e; ė], K from control.lqr on {design}")
