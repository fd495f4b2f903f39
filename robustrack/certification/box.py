"""The uncertainty set of a certificate: a box on named plant parameters (W 5.2.12–5.2.16).

The actual plants are ``nominal.replace(**values)`` for every value of the named parameters
inside the box (componentwise intervals, e.g. each mass within ±10 % of its nominal value,
W 7.3). :class:`ParameterBox` holds the box; :func:`parameter_slots` finds where each
named parameter enters the plant's symbolic form (:class:`~robustrack.symbolic.SymbolicForm`),
by changing it and watching which of the form's values move (so any plant with a form
works, without it naming its symbols).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import as_float_array
from ..errors import ParameterError

__all__ = ["ParameterBox", "parameter_slots", "check_physical", "MAX_CORNERS"]

#: The most corners of a box :func:`check_physical` visits all of (2^k); a larger box has each parameter's two ends
#: (the others nominal) and its lowest and highest corners checked.
MAX_CORNERS = 256


@dataclass(frozen=True)
class ParameterBox:
    """A box of actual plant parameters: ``lower[i] <= value[i] <= upper[i]`` for each named parameter.

    Attributes
    ----------
    names : tuple of str
        The plant parameters that vary (e.g. ``("m",)``, or ``("m1", "m2")``).
    lower, upper : tuple of ndarray
        Per name, the lower and upper values (shape of the nominal value: a number or 1-D).
    """

    names: tuple
    lower: tuple
    upper: tuple

    def __post_init__(self):
        names = (self.names,) if isinstance(self.names, str) else tuple(self.names)
        if not names or len(names) != len(self.lower) or len(names) != len(self.upper):
            raise ParameterError("`names`, `lower` and `upper` of a ParameterBox must have the same length >= 1.")
        lows, highs = [], []
        for name, lo, hi in zip(names, self.lower, self.upper):
            lo = as_float_array(lo, f"lower of `{name}`")
            hi = as_float_array(hi, f"upper of `{name}`")
            if lo.shape != hi.shape or lo.ndim > 1:
                raise ParameterError(f"the bounds of `{name}` must be numbers or 1-D of one shape; got {lo.shape} "
                                     f"and {hi.shape}.")
            if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo <= hi)):
                raise ParameterError(f"the bounds of `{name}` must be finite with lower <= upper; got {lo.tolist()} "
                                     f"and {hi.tolist()}.")
            lo.setflags(write=False)
            hi.setflags(write=False)
            lows.append(lo)
            highs.append(hi)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "lower", tuple(lows))
        object.__setattr__(self, "upper", tuple(highs))

    @classmethod
    def around(cls, plant, spread, parameters=("m",)) -> "ParameterBox":
        """±``spread`` (relative) around the plant's values of ``parameters``: W 7.3's "±10 % of each mass".

        Parameters
        ----------
        plant : Plant
            The nominal plant.
        spread : float
            Relative half-width, 0 <= spread < 1 (0.1 = ±10 %).
        parameters : str or sequence of str
            Plant parameters (numbers or 1-D arrays).

        Returns
        -------
        ParameterBox
        """
        spread_ = as_float_array(spread, "spread")
        if spread_.ndim != 0 or not 0 <= spread_ < 1:
            raise ParameterError(f"`spread` must be a number in [0, 1) (0.1 = ±10 %); got {spread!r}.")
        names = (parameters,) if isinstance(parameters, str) else tuple(parameters)
        lows, highs = [], []
        for name in names:
            if name not in plant.params:
                raise ParameterError(f"{type(plant).__name__} has no parameter `{name}`; its parameters are "
                                     f"{sorted(plant.params)}.")
            value = as_float_array(plant.params[name], f"`{name}` of the plant")
            half = float(spread_) * np.abs(value)
            lows.append(value - half)
            highs.append(value + half)
        return cls(names, tuple(lows), tuple(highs))

    @classmethod
    def of_set(cls, plant, parameters) -> "ParameterBox":
        """The box of named uncertain parameters (their ranges; distributions ignored), on the plant's parameters.

        A named entry of an array parameter (:meth:`~robustrack.plants.Plant.parameter_components`: the pendulum's
        ``L2``) boxes that entry; the array's other entries stay at the plant's values (a degenerate interval).

        Parameters
        ----------
        plant : Plant
            The nominal plant.
        parameters : UncertainSet or sequence of UncertainParameter
            Each a number of the plant or an entry of one of its arrays (docs/guide/uncertainty.md).

        Returns
        -------
        ParameterBox

        Raises
        ------
        ParameterError
            A name the plant lacks, or a normal parameter (it has no box).
        """
        from ..uncertainty import uncertain_set

        named = uncertain_set(parameters)
        params = plant.params
        components = plant.parameter_components() if callable(getattr(plant, "parameter_components", None)) else {}
        lows, highs = {}, {}
        for p in named:
            lo, hi = p.box()
            if p.name in params:
                if np.ndim(params[p.name]) != 0:
                    raise ParameterError(f"`{p.name}` of {type(plant).__name__} is an array; a named uncertain "
                                         "parameter is one number (name its entries).")
                lows[p.name], highs[p.name] = lo, hi
                continue
            if p.name not in components:
                raise ParameterError(f"{type(plant).__name__} has no parameter `{p.name}`; its parameters are "
                                     f"{sorted(params)} and the entries of its arrays ({', '.join(components)}).")
            owner, i = components[p.name]
            if owner not in lows:
                lows[owner] = np.array(params[owner], dtype=float)
                highs[owner] = np.array(params[owner], dtype=float)
            lows[owner][i], highs[owner][i] = lo, hi
        return cls(tuple(lows), tuple(lows.values()), tuple(highs.values()))

    @property
    def flat_lower(self) -> np.ndarray:
        """The lower values of every component, in order (k,)."""
        return np.concatenate([np.atleast_1d(x) for x in self.lower])

    @property
    def flat_upper(self) -> np.ndarray:
        """The upper values of every component, in order (k,)."""
        return np.concatenate([np.atleast_1d(x) for x in self.upper])

    @property
    def labels(self) -> list:
        """One label per component: ``m[1]`` (1-based, as W numbers the bodies) or the name of a number."""
        out = []
        for name, lo in zip(self.names, self.lower):
            out += [name] if lo.ndim == 0 else [f"{name}[{i + 1}]" for i in range(lo.size)]
        return out

    def values(self, flat) -> dict:
        """``{name: value}`` of a point given componentwise (k,), for ``plant.replace(**values)``.

        Parameters
        ----------
        flat : array_like (k,)

        Returns
        -------
        dict
        """
        flat = np.asarray(flat, dtype=float).reshape(-1)
        out, i = {}, 0
        for name, lo in zip(self.names, self.lower):
            size = max(lo.size, 1)
            out[name] = float(flat[i]) if lo.ndim == 0 else flat[i:i + size].copy()
            i += size
        return out

    def to_dict(self) -> dict:
        """JSON-ready: ``{name: [lower, upper]}``."""
        return {name: [lo.tolist(), hi.tolist()] for name, lo, hi in zip(self.names, self.lower, self.upper)}


def parameter_slots(plant, box: ParameterBox) -> np.ndarray:
    """Where each component of the box enters ``plant.codegen().values`` (one index per component).

    Each component is moved by a small amount with ``plant.replace``; exactly one value of the
    symbolic form must move, by exactly that amount, and the form's structure (its key) must not
    change: the parameter is then a symbol of the form, and the box is a box on that symbol.

    Parameters
    ----------
    plant : Plant
        The nominal plant (with a symbolic form).
    box : ParameterBox

    Returns
    -------
    ndarray of int (k,)

    Raises
    ------
    ParameterError
        A parameter the plant lacks, or one that enters the form otherwise than as one of its values.
    """
    form = plant.codegen()
    base = np.asarray(form.values, dtype=float)
    slots = []
    for name, lo in zip(box.names, box.lower):
        if name not in plant.params:
            raise ParameterError(f"{type(plant).__name__} has no parameter `{name}`; its parameters are "
                                 f"{sorted(plant.params)}.")
        value = np.asarray(plant.params[name], dtype=float)
        if value.shape != lo.shape:
            raise ParameterError(f"the box of `{name}` has shape {lo.shape}; the plant's value has {value.shape}.")
        for j in range(max(value.size, 1)):
            probe = value.copy().reshape(-1)
            step = 2.0 ** (np.floor(np.log2(abs(probe[j]) or 1.0)) - 10)  # exact in binary: v + step − v == step
            probe[j] += step
            moved = plant.replace(**{name: probe.reshape(value.shape) if value.ndim else float(probe[0])}).codegen()
            if moved is None or moved.key != form.key or moved.values.shape != base.shape:
                raise ParameterError(f"changing `{name}` changes the structure of {type(plant).__name__}'s symbolic "
                                     "form: it cannot be certified as a box on that parameter.")
            diff = np.asarray(moved.values, dtype=float) - base
            where = np.flatnonzero(diff)
            if where.size != 1 or diff[where[0]] != step:
                raise ParameterError(
                    f"`{name}` enters {type(plant).__name__}'s symbolic form through derived values "
                    f"({where.size} values move): a box on `{name}` is not a box on the form's parameters, so it "
                    "cannot be certified this way. Give the plant's form `{name}` as its own parameter.")
            slots.append(int(where[0]))
    if len(set(slots)) != len(slots):
        raise ParameterError(f"two components of the box ({', '.join(box.labels)}) are the same parameter of the "
                             "symbolic form.")
    return np.array(slots, dtype=int)


def _corners(nominal, lo, hi):
    """(label of the corner, point) to check: each component alone at its two ends (the others nominal), then every
    corner (the lowest and highest only beyond :data:`MAX_CORNERS`)."""
    k = lo.size
    for j in range(k):
        for end, v in (("lower", lo[j]), ("upper", hi[j])):
            if v != nominal[j]:
                p = nominal.copy()
                p[j] = v
                yield (j, end), p
    if 2 ** k <= MAX_CORNERS:
        for v in range(2 ** k):
            yield None, np.where(np.array([(v >> j) & 1 for j in range(k)], bool), hi, lo)
    else:
        yield None, lo.copy()
        yield None, hi.copy()


def check_physical(plant, box: ParameterBox, q=None, qd=None, t=None, *, where: str = "the box",
                   names=None) -> None:
    """Refuse a box that reaches a plant the plant's own checks refuse, before any search or sample
    (docs/theory/certificate.md, "The box").

    At each component's two ends (the others nominal) and at the box's corners: ``plant.replace(**values)`` (the
    plant's rules on its parameters: a mass > 0, a length > 0, ...), and with states, M symmetric positive definite
    at them (:func:`~robustrack.plants.motion.check_mass_matrix`: the nominal run's states for a certificate).

    Parameters
    ----------
    plant : Plant
        The nominal plant.
    box : ParameterBox
    q, qd : array_like (k, n), optional
        States at which M must be positive definite (none: the parameters' rules only).
    t : array_like (k,), optional
    where : str
        How the message names the box (keyword-only).
    names : sequence of str, optional
        The name the user typed for each component (default the box's labels).

    Raises
    ------
    ParameterError
        Naming the parameter at its end (or the corner: every component's value) and the plant's reason.
    """
    from ..errors import MassMatrixError

    labels = list(names) if names is not None else box.labels
    lo, hi = box.flat_lower, box.flat_upper
    nominal = np.concatenate([np.atleast_1d(np.asarray(plant.params[k], dtype=float)).reshape(-1)
                              for k in box.names])
    if nominal.shape != lo.shape:
        return  # not a box on this plant's values: parameter_slots refuses it by name
    nominal = np.clip(nominal, lo, hi)
    for at, point in _corners(nominal, lo, hi):
        try:
            actual = plant.replace(**box.values(point))
            if q is not None:
                from ..plants.motion import check_mass_matrix

                check_mass_matrix(actual, q, qd if qd is not None else np.zeros_like(q), 0.0 if t is None else t)
        except (ParameterError, MassMatrixError) as exc:
            if at is not None:
                j, end = at
                place = f"at `{labels[j]}` = {point[j]:.6g} (its range's {end} end; the others nominal)"
            else:
                place = "at the corner " + ", ".join(f"{n} = {v:.6g}" for n, v in zip(labels, point))
            raise ParameterError(f"{where} reaches a plant {type(plant).__name__} refuses, {place}: {exc} Every plant "
                                 "of the box must be a plant: narrow the range so that it stays physical.") from None
