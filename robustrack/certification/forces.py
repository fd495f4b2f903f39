"""The actual plant's friction and disturbance a certificate encloses (docs/theory/certificate.md, "Friction and
disturbance").

The actual plant of W 5.2.12–5.2.16 may carry given forces the nominal model leaves out, δQ_f = −b q̇ −
F_c tanh(q̇ / v_s) + d(t) with ‖d(t)‖∞ ≤ D (:class:`~robustrack.uncertainty.JointFriction`, any
:class:`~robustrack.uncertainty.Disturbance` with a finite ``bound``; docs/guide/uncertainty.md). A
:class:`ForceBox` says which: each joint's viscous and Coulomb coefficients in an interval (a single value where
they are known, the ±``friction_spread`` box, or a named uncertain parameter's range), the smoothing v_s, and the
bound D. The friction enters the plant's symbolic δQ (:class:`~robustrack.certification.model.EnclosureModel`),
its ranged coefficients as dimensions of the searched box; d(t), a function of time alone that the certificate
does not follow, enters as the ball [−D, D] on every component of δQ. The box is recorded in the certificate
(``extras["forces"]``) and in its fingerprint (:meth:`ForceBox.fingerprint`), so a certificate is applied only to
plants with the same forces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["ForceBox", "problem_forces"]

#: The fingerprint's fields of the forces (:meth:`ForceBox.fingerprint`), in order.
FORCE_FIELDS = ("forces.viscous.lower", "forces.viscous.upper", "forces.coulomb.lower", "forces.coulomb.upper",
                "forces.coulomb_width", "forces.disturbance")


def _per_joint(value, n: int, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim > 1 or arr.size not in (1, n):
        raise ParameterError(f"{what} must be one number or one per coordinate ({n}); got shape {arr.shape} (a "
                             "coefficient with a sample axis is a Monte Carlo's, not a box: give the box).")
    return np.array(np.broadcast_to(arr.reshape(-1), (n,)), dtype=float)


def _bound(disturbance) -> float:
    """The finite bound D of a disturbance, or the refusal saying why it cannot be enclosed."""
    if disturbance is None:
        return 0.0
    bound = float(getattr(disturbance, "bound", math.inf))
    if not math.isfinite(bound) or bound < 0:
        from ..uncertainty import JointFriction

        why = (" (JointFriction's bound is infinite with a viscous term: give friction as `friction`, which is "
               "enclosed as a function of q̇)" if isinstance(disturbance, JointFriction) else "")
        raise ParameterError(
            f"the disturbance {type(disturbance).__name__} declares no finite bound (bound = {bound}){why}: the "
            "certificate encloses d(t) by the ball [−D, D] its bound D promises, so without one there is nothing to "
            "enclose. Declare a bound (FunctionDisturbance(func, bound=D)), or certify without the disturbance.")
    return bound


@dataclass(frozen=True)
class ForceBox:
    """The given forces of the actual plants a certificate covers: friction coefficients in intervals, a bound D.

    Attributes
    ----------
    coordinates : tuple of str
        The joints (the plant's coordinates), one per coefficient.
    viscous, coulomb : (ndarray (n,), ndarray (n,)) or None
        Lower and upper values of each joint's b_i and F_c,i (equal where the coefficient is known); None: the
        plant has no friction.
    smoothing : float or None
        v_s of the tanh (None without friction).
    disturbance : float
        D, the bound of ‖d(t)‖∞ (0: none).
    disturbance_kind : str or None
        The disturbance's type, for the text.
    """

    coordinates: tuple
    viscous: tuple | None = None
    coulomb: tuple | None = None
    smoothing: float | None = None
    disturbance: float = 0.0
    disturbance_kind: str | None = None

    def __post_init__(self):
        n = len(self.coordinates)
        if (self.viscous is None) != (self.coulomb is None) or (self.viscous is None) != (self.smoothing is None):
            raise ParameterError("a ForceBox's friction is `viscous`, `coulomb` and `smoothing` together, or none.")
        for key in ("viscous", "coulomb"):
            pair = getattr(self, key)
            if pair is None:
                continue
            lo, hi = (_per_joint(v, n, f"`{key}` of a ForceBox") for v in pair)
            if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all((0 <= lo) & (lo <= hi))):
                raise ParameterError(f"`{key}` of a ForceBox must be finite with 0 <= lower <= upper (friction opposes "
                                     f"the motion); got {lo.tolist()} and {hi.tolist()}.")
            lo.setflags(write=False)
            hi.setflags(write=False)
            object.__setattr__(self, key, (lo, hi))
        if self.smoothing is not None:
            if not (math.isfinite(self.smoothing) and self.smoothing > 0):
                raise ParameterError(f"`smoothing` (v_s) of a ForceBox must be a number > 0; got {self.smoothing!r}.")
            object.__setattr__(self, "smoothing", float(self.smoothing))
        if not (math.isfinite(self.disturbance) and self.disturbance >= 0):
            raise ParameterError(f"`disturbance` (D) of a ForceBox must be a finite number >= 0; got "
                                 f"{self.disturbance!r}.")
        object.__setattr__(self, "disturbance", float(self.disturbance))
        object.__setattr__(self, "coordinates", tuple(str(c) for c in self.coordinates))

    # -- made from the forces the toolbox has ----------------------------------------------------
    @classmethod
    def of(cls, forces, coordinates, named=None) -> "ForceBox | None":
        """The box of an :class:`~robustrack.uncertainty.ActualForces` (or of a given δQ).

        Parameters
        ----------
        forces : ActualForces, Disturbance, ForceBox or None
            ``ActualForces``: its friction's coefficients, each ``c (1 ± spread)`` (its draws' range), or where it
            names them (``coordinates``) as given unless ``named`` boxes them; its disturbance by its bound. A
            :class:`~robustrack.uncertainty.JointFriction`, a bounded disturbance or their sum: known coefficients
            and the sum of the other terms' bounds.
        coordinates : sequence of str
            The plant's coordinates.
        named : UncertainSet or sequence of UncertainParameter, optional
            Named friction coefficients (``viscous_<joint>``, ``coulomb_<joint>``) and their ranges.

        Returns
        -------
        ForceBox or None
            None for no forces.

        Raises
        ------
        ParameterError
            A disturbance without a finite bound, coefficients that are not one per joint, a named coefficient the
            forces do not have, two frictions in one sum.
        """
        from ..uncertainty import ActualForces, Disturbance, JointFriction, SumDisturbance, friction_coefficient

        coordinates = tuple(coordinates)
        n = len(coordinates)
        if forces is None or isinstance(forces, ForceBox):
            if named:
                raise ParameterError("named friction coefficients need the forces they name: give `forces` as an "
                                     "ActualForces with `coordinates`.")
            return forces
        if isinstance(forces, ActualForces):
            friction, D, kind = forces.friction, _bound(forces.disturbance), forces.disturbance
            spread = forces.spread
        elif isinstance(forces, Disturbance) or callable(forces):
            terms = list(forces.terms) if isinstance(forces, SumDisturbance) else [forces]
            frictions = [d for d in terms if isinstance(d, JointFriction)]
            if len(frictions) > 1:
                raise ParameterError("the actual plant's δQ holds two JointFriction terms: give one (the sum of their "
                                     "coefficients, with one smoothing).")
            friction = frictions[0] if frictions else None
            rest = [d for d in terms if not isinstance(d, JointFriction)]
            D = sum(_bound(d) for d in rest)
            kind = rest[0] if len(rest) == 1 else (SumDisturbance(tuple(rest)) if rest else None)
            spread = 0.0
        else:
            raise ParameterError(f"`forces` must be an ActualForces, a Disturbance (e.g. JointFriction(...) + "
                                 f"StepDisturbance(...)) or None; got {type(forces).__name__}.")
        fields = {}
        if friction is not None:
            b = _per_joint(friction.viscous, n, "the friction's `viscous`")
            F = _per_joint(friction.coulomb, n, "the friction's `coulomb`")
            fields = {"viscous": [b * (1 - spread), b * (1 + spread)], "coulomb": [F * (1 - spread), F * (1 + spread)],
                      "smoothing": friction.smoothing}
        if named:
            from ..uncertainty import uncertain_set

            given = forces.parameters if isinstance(forces, ActualForces) else {}
            for p in uncertain_set(named):
                if p.name not in given:
                    names = list(given) or "none (ActualForces names them with coordinates)"
                    raise ParameterError(f"`{p.name}` is not a friction coefficient of the actual plant's forces; "
                                         f"they are {names}.")
                key, j = friction_coefficient(p.name, coordinates)
                lo, hi = p.box()
                fields[key][0][j], fields[key][1][j] = lo, hi
        box = cls(coordinates, disturbance=D,
                  disturbance_kind=None if kind is None else type(kind).__name__,
                  **{k: (tuple(v) if k != "smoothing" else v) for k, v in fields.items()})
        return box

    # -- what the search and the certificate read -------------------------------------------------
    @property
    def friction(self) -> bool:
        """The plant has friction (its terms are in δQ, even at zero coefficients)."""
        return self.viscous is not None

    @property
    def dims(self) -> list:
        """The coefficients that vary, in order (viscous joints, then Coulomb): ``(key, joint index, lo, hi)``."""
        out = []
        if self.friction:
            for key in ("viscous", "coulomb"):
                lo, hi = getattr(self, key)
                out += [(key, j, float(lo[j]), float(hi[j])) for j in range(lo.size) if lo[j] < hi[j]]
        return out

    @property
    def labels(self) -> list:
        """``viscous_<joint>`` and ``coulomb_<joint>`` of :attr:`dims`."""
        return [f"{key}_{self.coordinates[j]}" for key, j, _, _ in self.dims]

    def fixed(self) -> tuple:
        """(b, F_c) per joint with the varying coefficients at 0: the part of the friction every plant has."""
        b, F = (np.where(lo < hi, 0.0, lo) for lo, hi in (self.viscous, self.coulomb))
        return b, F

    def coefficients(self, values) -> dict:
        """``{"viscous": [...], "coulomb": [...]}`` per joint with the varying coefficients at ``values`` (in the
        order of :attr:`dims`); {} without friction."""
        if not self.friction:
            return {}
        out = {"viscous": np.array(self.viscous[0], dtype=float), "coulomb": np.array(self.coulomb[0], dtype=float)}
        for (key, j, _, _), v in zip(self.dims, np.atleast_1d(np.asarray(values, dtype=float))):
            out[key][j] = v
        return {k: v.tolist() for k, v in out.items()}

    def given_force(self, coefficients=None, disturbance=None, start: float = 0.0):
        """The δQ of one plant of the box: its friction at ``coefficients`` (per joint, as :meth:`coefficients` or a
        witness's ``forces`` give them) plus the constant disturbance ``disturbance`` (a vector with ‖·‖∞ <= D, a
        step switched on at ``start``, the run's t0) — what a run of the plant a witness names has.

        Returns
        -------
        Disturbance or None

        Raises
        ------
        ParameterError
            A coefficient outside the box, a disturbance above D.
        """
        from ..uncertainty import JointFriction, StepDisturbance

        terms = []
        if self.friction:
            c = self.coefficients(()) if coefficients is None else coefficients
            b, F = (np.asarray(c[key], dtype=float) for key in ("viscous", "coulomb"))
            for key, value in (("viscous", b), ("coulomb", F)):
                lo, hi = getattr(self, key)
                if value.shape != lo.shape or np.any(value < lo) or np.any(value > hi):
                    raise ParameterError(f"the {key} coefficients {value.tolist()} are not in the box "
                                         f"[{lo.tolist()}, {hi.tolist()}].")
            terms.append(JointFriction(b, F, self.smoothing))
        if disturbance is not None:
            d = np.asarray(disturbance, dtype=float)
            if np.max(np.abs(d), initial=0.0) > self.disturbance:
                raise ParameterError(f"the disturbance {d.tolist()} exceeds the box's bound D = {self.disturbance:g}.")
            terms.append(StepDisturbance(d, start=start))
        if not terms:
            return None
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]

    # -- recorded ---------------------------------------------------------------------------------
    @property
    def zero(self) -> bool:
        """No force at all: every coefficient 0 and D = 0 (the plants are those without forces)."""
        none = not self.friction or all(not np.any(hi) for _, hi in (self.viscous, self.coulomb))
        return none and self.disturbance == 0

    def fingerprint(self) -> dict:
        """The fingerprint's fields (:data:`FORCE_FIELDS`): what decides the plants beside the parameters' box.
        Zero friction is no friction and D = 0 no disturbance: {} for :attr:`zero` forces (a certificate of those
        plants is one without forces)."""
        if self.zero:
            return {}
        out = dict.fromkeys(FORCE_FIELDS)
        if self.friction and any(np.any(hi) for _, hi in (self.viscous, self.coulomb)):
            for key in ("viscous", "coulomb"):
                lo, hi = getattr(self, key)
                out.update({f"forces.{key}.lower": lo.tolist(), f"forces.{key}.upper": hi.tolist()})
            out["forces.coulomb_width"] = self.smoothing
        out["forces.disturbance"] = self.disturbance if self.disturbance else None
        return out

    def to_dict(self) -> dict:
        """JSON-ready (what ``extras["forces"]`` holds; :meth:`from_dict` reads it back)."""
        return {"coordinates": list(self.coordinates),
                "viscous": None if not self.friction else [self.viscous[0].tolist(), self.viscous[1].tolist()],
                "coulomb": None if not self.friction else [self.coulomb[0].tolist(), self.coulomb[1].tolist()],
                "coulomb_width": self.smoothing, "disturbance": self.disturbance,
                "disturbance_kind": self.disturbance_kind}

    @classmethod
    def from_dict(cls, doc: dict) -> "ForceBox":
        """The box :meth:`to_dict` wrote.

        Raises
        ------
        ParameterError
            Not such a table.
        """
        try:
            return cls(tuple(doc["coordinates"]),
                       None if doc["viscous"] is None else tuple(doc["viscous"]),
                       None if doc["coulomb"] is None else tuple(doc["coulomb"]),
                       doc["coulomb_width"], float(doc["disturbance"]), doc.get("disturbance_kind"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(f"`forces` is not a table of the certified forces ({type(exc).__name__}: {exc}).") \
                from None

    def text(self) -> str:
        """One line: the friction's intervals and the disturbance's bound."""
        parts = []
        if self.friction:
            for key, sym in (("viscous", "b"), ("coulomb", "F_c")):
                lo, hi = getattr(self, key)
                parts.append(f"{sym} ∈ " + ", ".join(f"{c}: {a:.6g}" if a == b else f"{c}: [{a:.6g}, {b:.6g}]"
                                                     for c, a, b in zip(self.coordinates, lo, hi)))
            parts.append(f"v_s = {self.smoothing:.6g}")
        parts.append(f"‖d(t)‖∞ ≤ D = {self.disturbance:.6g}" + (f" ({self.disturbance_kind}, enclosed by its bound)"
                                                              if self.disturbance_kind else ""))
        return "forces: −b q̇ − F_c tanh(q̇/v_s) + d(t), " + "; ".join(parts)


def problem_forces(problem):
    """The given δQ of a problem's actual plant (a :class:`~robustrack.plants.ForcedPlant`'s), as a ForceBox of
    known coefficients; None where the actual plant adds none.

    Parameters
    ----------
    problem : TrackingProblem

    Returns
    -------
    ForceBox or None

    Raises
    ------
    ParameterError
        A δQ that cannot be enclosed (no finite bound), named.
    """
    from ..plants.forced import forced_terms

    terms = forced_terms(getattr(problem, "actual", None))
    if not terms:
        return None
    from ..uncertainty import SumDisturbance

    dQ = terms[0] if len(terms) == 1 else SumDisturbance(tuple(
        t for d in terms for t in (d.terms if isinstance(d, SumDisturbance) else (d,))))
    return ForceBox.of(dQ, problem.nominal.coordinates)
