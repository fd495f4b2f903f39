"""The one exception family of robustrack.

Every error the toolbox raises on purpose derives from :class:`RobustrackError`,
so ``except robustrack.errors.RobustrackError`` catches them all. Messages say
what was wrong, the rule it broke, and what to do.
"""

from __future__ import annotations

import warnings

__all__ = [
    "LimitNotice",
    "RobustrackError",
    "ParameterError",
    "MassMatrixError",
    "RankConditionError",
    "ConstraintError",
    "InitialStateError",
    "ControlFunctionError",
    "HorizonError",
    "ControllerError",
    "ExportError",
    "ScenarioError",
    "SolverError",
    "OutputExistsError",
    "RealizabilityError",
    "KernelCacheError",
    "RobustrackNotice",
    "ConstraintNotice",
]


class RobustrackError(Exception):
    """Base class of every error robustrack raises on purpose."""


class ParameterError(RobustrackError, ValueError):
    """A parameter or array argument breaks a rule (shape, sign, finiteness, ...)."""


class MassMatrixError(RobustrackError, ValueError):
    """A mass matrix is not symmetric, or not positive (semi-)definite."""


class RankConditionError(MassMatrixError):
    """A singular mass matrix fails rank [M; A] = n (W ch. 4): accelerations are not unique."""


class ConstraintError(RobustrackError, ValueError):
    """A constraint is ill-formed (wrong shape, not differentiable, ...)."""


class InitialStateError(ConstraintError):
    """:func:`robustrack.requirements.consistent_initial_state` did not reach its tolerance."""


class ControlFunctionError(RobustrackError, ValueError):
    """A control function g fails a property a compensator needs (odd, increasing, ...)."""


class ScenarioError(RobustrackError, ValueError):
    """A scenario (TOML or Python) is invalid: an unknown key, a bad value, a missing entry."""


class SolverError(RobustrackError, RuntimeError):
    """The ODE integration failed.

    Attributes
    ----------
    t_reached : float
        The last time the solver reached.
    partial : object or None
        The partial result up to ``t_reached`` (kept, never thrown away).
    """

    def __init__(self, message: str, t_reached: float = float("nan"), partial=None):
        super().__init__(message)
        self.t_reached = t_reached
        self.partial = partial


class HorizonError(RobustrackError, ValueError):
    """A controller was asked for a time outside its design horizon (the reference does not exist there).

    ``status`` is 1, the exported C's return value for it (:data:`robustrack.loop.controller.STATUS`)."""

    status = 1


class ControllerError(ParameterError):
    """A controller's call refused at its boundary: a measurement of the wrong shape or not finite, a force that is
    not finite, an update not after the previous one (docs/guide/robot.md, "One boundary").

    ``status`` is the exported C's return value for the same call (2, or 4 for the update;
    :data:`robustrack.loop.controller.STATUS`)."""

    status = 2


class ExportError(RobustrackError, ValueError):
    """A design that the C export cannot write (yet): the message names the part and the reason
    (docs/guide/robot.md, "Export to C")."""


class OutputExistsError(RobustrackError, FileExistsError):
    """An output folder already holds work that writing there would replace.

    Raised before anything runs, so nothing is lost: choose another folder, or ask
    for the replacement explicitly (``overwrite=True``, ``--overwrite``).
    """


class RealizabilityError(RobustrackError):
    """A servo constraint cannot be realized by the given actuator directions (K, Beghin).

    The constraint ``A q̈ = b`` is to be enforced by forces ``N λ`` along given
    directions N (an actuator input matrix): ``A M⁻¹ N λ = b − A a`` must be solvable
    exactly, i.e. ``A M⁻¹ N`` of full row rank (one row, one actuator:
    ``(M⁻¹N, ∂Φ/∂q̇) ≠ 0``). Where it is not, no force along N keeps the constraint and
    the toolbox stops instead of returning a least-squares compromise.

    Attributes
    ----------
    t : float
        The time at which realizability failed (NaN when refused before any run).
    q, qd : ndarray or None
        The state there.
    margin : float
        The realizability margin found (``σ_min(A M⁻¹ N) / (‖A‖₂ ‖M⁻¹N‖₂)``).
    """

    def __init__(self, message: str, t: float = float("nan"), q=None, qd=None, margin: float = float("nan")):
        super().__init__(message)
        self.t = t
        self.q = q
        self.qd = qd
        self.margin = margin


class KernelCacheError(RobustrackError, OSError):
    """The folder of compiled kernels cannot be created or written (``ROBUSTRACK_CACHE_DIR``)."""


class RobustrackNotice(UserWarning):
    """A notice of robustrack (a warning that asks nothing of the user but to know): shown as ONE line,
    ``robustrack: notice: <message>``, in scripts too — without Python's file, line and source line."""


_FORMAT = warnings.formatwarning


def _format_notice(message, category, filename, lineno, line=None):
    """:func:`warnings.formatwarning` for :class:`RobustrackNotice` (one line); others as before."""
    if isinstance(category, type) and issubclass(category, RobustrackNotice):
        return "robustrack: notice: " + " ".join(str(message).split()) + "\n"
    return _FORMAT(message, category, filename, lineno, line)


if getattr(warnings.formatwarning, "__name__", "") != "_format_notice":  # once, however often reloaded
    warnings.formatwarning = _format_notice


class LimitNotice(RobustrackNotice):
    """A motion breaks a limit the plant declares (a URDF joint's velocity limit): said once per run, naming the
    joint, the limit, the largest value and when it was first exceeded (:meth:`robustrack.plants.Plant.motion_notes`)."""


class ConstraintNotice(RobustrackNotice):
    """A warning: rows of ``A q̈ = b`` the constrained motion does not meet (dependent and inconsistent,
    or a zero row with b ≠ 0), judged row by row against each row's own scale; the motion is the
    least-squares compromise (:mod:`robustrack.mechanics`)."""

