"""Units of a plant's coordinates, from what each coordinate is (its kind).

Every plant names the kind of each generalized coordinate in ``coordinate_kinds``
(``"angle"``, ``"length"``, ``"dimensionless"``, or None when unknown, e.g. a user's
Lagrangian plant). The kind fixes the SI units of the coordinate, its rate, its
acceleration and of the generalized force conjugate to it (virtual work Qᵢ δqᵢ is in J):

=============  =====  =====  ======  =====
kind           q      q̇      q̈       Q
=============  =====  =====  ======  =====
angle          rad    rad/s  rad/s²  N·m
length         m      m/s    m/s²    N
dimensionless  (1)    1/s    1/s²    J
unknown        [q]    [q]/s  [q]/s²  [Q]
=============  =====  =====  ======  =====

An infinity norm over coordinates (W's ‖e‖∞) has one unit when all coordinates share
it; over mixed coordinates (a skate's x, y, φ) the unit is written ``"m or rad"``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ParameterError

__all__ = ["COORDINATE_KINDS", "CoordinateUnits", "coordinate_units", "fill_units", "common_unit"]

#: kind -> units of (q, q̇, q̈, Q); "" is dimensionless.
COORDINATE_KINDS = {
    "angle": ("rad", "rad/s", "rad/s²", "N·m"),
    "length": ("m", "m/s", "m/s²", "N"),
    "dimensionless": ("", "1/s", "1/s²", "J"),
    None: ("[q]", "[q]/s", "[q]/s²", "[Q]"),
}

def fill_units(template: str, q: str, qd: str, qdd: str, Q: str) -> str:
    """A unit template with ``{q}``, ``{qd}``, ``{qdd}``, ``{Q}`` replaced.

    Parameters
    ----------
    template : str
        E.g. ``"{Q}·s"`` (an effort), ``"{qdd}"`` (Γ), ``"1/s"`` (a gain).
    q, qd, qdd, Q : str
        The units of the coordinates, their rates, accelerations and the generalized
        forces (``""``: dimensionless).

    Returns
    -------
    str
        The unit. A dimensionless q is written ``1`` inside a composite (``"1/(1)²"``);
        a template that reduces to ``1`` gives ``""``.

    Examples
    --------
    >>> fill_units("{Q}·s", "rad", "rad/s", "rad/s²", "N·m")
    'N·m·s'
    """
    text = template.format(q=q or "1", qd=qd, qdd=qdd, Q=Q)
    return "" if text == "1" else text

def common_unit(units) -> str:
    """The unit of an infinity norm over quantities in ``units``: the common one, or ``"m or rad"``.

    Parameters
    ----------
    units : sequence of str
        One unit per quantity (``""``: dimensionless).

    Returns
    -------
    str
        The unit they share, or the distinct units joined by " or " (``1`` for a
        dimensionless one) when they differ; ``""`` for no quantities.

    Examples
    --------
    >>> common_unit(("m", "m", "rad")), common_unit(("rad/s",) * 3)
    ('m or rad', 'rad/s')
    """
    distinct = list(dict.fromkeys(units))
    if not distinct:
        return ""
    return distinct[0] if len(distinct) == 1 else " or ".join(u or "1" for u in distinct)

@dataclass(frozen=True)
class CoordinateUnits:
    """The units of a plant's coordinates, rates, accelerations and generalized forces.

    Attributes
    ----------
    names : tuple of str
        The coordinates, in order.
    kinds : tuple of str or None
        Their kinds (keys of :data:`COORDINATE_KINDS`).
    q, qd, qdd, Q : str
        Unit of an infinity norm over the coordinates of q, q̇, q̈ (δq, Γ) and of the
        generalized forces (Qᶜ, Qᵘ): the common unit, or ``"m or rad"`` when they differ;
        ``""`` for dimensionless.
    """

    names: tuple
    kinds: tuple

    def per_coordinate(self, which: str) -> tuple:
        """Units of each coordinate's ``which`` (``"q"``, ``"qd"``, ``"qdd"`` or ``"Q"``).

        Parameters
        ----------
        which : str
            One of ``"q"``, ``"qd"``, ``"qdd"``, ``"Q"``.

        Returns
        -------
        tuple of str
        """
        col = {"q": 0, "qd": 1, "qdd": 2, "Q": 3}
        if which not in col:
            raise ParameterError(f"`which` must be one of {sorted(col)}; got {which!r}.")
        return tuple(COORDINATE_KINDS[k][col[which]] for k in self.kinds)

    @property
    def q(self) -> str:
        return common_unit(self.per_coordinate("q"))

    @property
    def qd(self) -> str:
        return common_unit(self.per_coordinate("qd"))

    @property
    def qdd(self) -> str:
        return common_unit(self.per_coordinate("qdd"))

    @property
    def Q(self) -> str:
        return common_unit(self.per_coordinate("Q"))

    def fill(self, template: str) -> str:
        """``template`` with ``{q}``, ``{qd}``, ``{qdd}``, ``{Q}`` replaced by these units.

        Parameters
        ----------
        template : str
            E.g. ``"{Q}·s"`` (an effort) or ``"{qdd}"`` (Γ).

        Returns
        -------
        str
            As :func:`fill_units`.
        """
        return fill_units(template, self.q, self.qd, self.qdd, self.Q)

    def to_dict(self) -> dict:
        """``{"coordinates", "kinds", "q", "qd", "qdd", "Q"}`` (JSON-ready)."""
        return {"coordinates": list(self.names), "kinds": list(self.kinds), "q": self.q, "qd": self.qd,
                "qdd": self.qdd, "Q": self.Q}

def coordinate_units(plant) -> CoordinateUnits:
    """The units of ``plant``'s coordinates, from its ``coordinate_kinds``.

    Parameters
    ----------
    plant : Plant
        Its ``coordinates`` and ``coordinate_kinds`` (one kind per coordinate, each a key
        of :data:`COORDINATE_KINDS`) are read.

    Returns
    -------
    CoordinateUnits

    Raises
    ------
    ParameterError
        ``coordinate_kinds`` does not list one known kind per coordinate.

    Examples
    --------
    >>> from robustrack.plants import triple_pendulum
    >>> u = coordinate_units(triple_pendulum())
    >>> u.q, u.qd, u.qdd, u.Q
    ('rad', 'rad/s', 'rad/s²', 'N·m')
    """
    names = tuple(plant.coordinates)
    kinds = tuple(plant.coordinate_kinds)
    if len(kinds) != len(names) or any(k not in COORDINATE_KINDS for k in kinds):
        raise ParameterError(
            f"{type(plant).__name__}.coordinate_kinds must give one of {[k for k in COORDINATE_KINDS if k]} "
            f"(or None: unknown) for each coordinate {names}; got {kinds}."
        )
    return CoordinateUnits(names, kinds)
