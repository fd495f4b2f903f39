"""Which actual plants a campaign draws: parameters of the nominal plant perturbed by δ.

:class:`ParameterUncertainty` draws δ of one or more plant parameters (the masses by
default) with :func:`robustrack.uncertainty.sample_parameters` — uniform ±spread
relative per parameter, as ``robustrack gamma`` does, or normal, or any
``sampler(rng, n)`` — and builds the actual plant ``nominal.replace(p = p + δ)``,
optionally with a given-force perturbation δQ drawn per sample.

Determinism: the N draws of a campaign are the rows of one ``sample_parameters(..., N,
seed=seed)`` call, drawn up front in the process that runs the campaign, so sample i's δ
depends on the seed and i alone — not on the number of workers or the order in which
samples finish — and equals the i-th draw of ``robustrack gamma`` with the same seed.
A δQ family is drawn for sample i from its own generator ``default_rng([seed, i])``.

Named uncertain parameters (``parameters=``, an :class:`~robustrack.uncertainty.UncertainSet`)
replace ``parameter``/``spread``/``kind``: each is drawn from its own distribution
(:meth:`~robustrack.uncertainty.UncertainSet.sample`, one generator ``default_rng(seed)``),
δ is the drawn value minus the plant's value, and the worst-case box is their box (distributions
ignored; docs/guide/uncertainty.md). A named parameter may be a number of the plant, an entry of one
of its arrays (:meth:`~robustrack.plants.Plant.parameter_components`: ``L2``, ``payload_com_z``), or a
friction coefficient of the actual plant's forces (``viscous_<joint>``, ``coulomb_<joint>``: the
``disturbance`` is then an :class:`~robustrack.uncertainty.ActualForces` that names them, and δ is
added to its given coefficient).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._validate import as_float_array, positive_int
from ..errors import ParameterError

__all__ = ["ParameterUncertainty", "check_spread", "check_seed"]


def check_spread(spread, name: str = "spread", *, kind: str = "uniform"):
    """Validate a relative spread: finite, in [0, 1) for uniform draws (a mass must stay > 0).

    Parameters
    ----------
    spread : float or array_like
        Relative half-width (0.1 = ±10 %), one number or one per parameter.
    name : str
        The name to put in the message (e.g. ``"--spread"``).
    kind : str
        The distribution; only ``"uniform"`` needs spread < 1.

    Returns
    -------
    float or tuple of float

    Raises
    ------
    ParameterError
        Not numeric, not finite, negative, or >= 1 for uniform draws.
    """
    try:
        arr = np.asarray(spread, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"`{name}` must be a number in [0, 1) (0.1 = ±10 %); got {spread!r}.") from None
    if arr.ndim > 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0) or \
            (kind == "uniform" and np.any(arr >= 1)):
        rule = "in [0, 1)" if kind == "uniform" else ">= 0 and finite"
        raise ParameterError(f"`{name}` must be {rule} (a relative spread: 0.1 = ±10 % of each mass; 1 would "
                             f"allow a zero mass); got {spread!r}.")
    return float(arr) if arr.ndim == 0 else tuple(float(x) for x in arr)


def check_seed(seed, name: str = "seed") -> int:
    """Validate a seed: an integer >= 0.

    Parameters
    ----------
    seed : int
    name : str
        The name to put in the message.

    Returns
    -------
    int

    Raises
    ------
    ParameterError
    """
    return positive_int(seed, name, minimum=0)


@dataclass(frozen=True, eq=False)
class ParameterUncertainty:
    """δ of plant parameters, drawn reproducibly from a seed (module docstring).

    Parameters
    ----------
    parameter : str or tuple of str, default "m"
        The perturbed parameter: one name (a number, or 1-D with one entry per body,
        e.g. the pendulum's ``m``) or several scalar names sampled together
        (``("m1", "m2")``).
    spread : float or tuple, default 0.1
        Relative spread (uniform: ``p + spread·|p|·U(−1, 1)``; normal: ``·N(0, 1)``).
    seed : int, default 0
    kind : {"uniform", "normal"}, default "uniform"
    sampler : callable, optional
        ``sampler(rng, n) -> (n, k)`` parameter VALUES (as
        :func:`~robustrack.uncertainty.sample_parameters`); overrides ``kind``.
    disturbance : callable, optional
        ``disturbance(rng, dm) -> dQ`` for sample i with ``rng = default_rng([seed, i])``:
        a :class:`~robustrack.uncertainty.Disturbance` or a callable ``dQ(q, qd, t)``
        added to the actual plant's given force (:class:`~robustrack.plants.ForcedPlant`),
        or None for none. Must be picklable to run on several processes (a module-level
        function).
    parameters : UncertainSet or sequence of UncertainParameter, optional
        Named uncertain parameters (:mod:`robustrack.uncertainty.parameters`), each drawn from its own
        distribution; ``parameter`` becomes their names, ``spread`` and ``kind`` are not used (give
        neither) and ``sampler`` is refused. δ of a sample is its drawn values minus the plant's values.
    """

    parameter: str | tuple = "m"
    spread: float | tuple = 0.1
    seed: int = 0
    kind: str = "uniform"
    sampler: Callable | None = None
    disturbance: Callable | None = None
    parameters: object = None

    def __post_init__(self):
        if self.parameters is not None:
            self._named()
        names = (self.parameter,) if isinstance(self.parameter, str) else tuple(self.parameter)
        if not names or not all(isinstance(n, str) for n in names):
            raise ParameterError(f"`parameter` must be a parameter name or a sequence of names; got "
                                 f"{self.parameter!r}.")
        object.__setattr__(self, "parameter", names[0] if len(names) == 1 else names)
        if self.parameters is not None:
            pass
        elif self.sampler is None:
            if self.kind not in ("uniform", "normal"):
                raise ParameterError(f"`kind` must be 'uniform' or 'normal' (or give `sampler`); got {self.kind!r}.")
            object.__setattr__(self, "spread", check_spread(self.spread, kind=self.kind))
        elif not callable(self.sampler):
            raise ParameterError(f"`sampler` must be callable sampler(rng, n) -> (n, k); got {self.sampler!r}.")
        object.__setattr__(self, "seed", check_seed(self.seed))
        if self.disturbance is not None and not callable(self.disturbance):
            raise ParameterError(f"`disturbance` must be callable disturbance(rng, dm) -> dQ; got "
                                 f"{self.disturbance!r}.")

    def _named(self):
        """Check and adopt named parameters: ``parameter`` their names, no spread, kind or sampler of one's own."""
        from ..uncertainty import uncertain_set

        named = uncertain_set(self.parameters)
        if self.sampler is not None:
            raise ParameterError("give `parameters` (named uncertain parameters) or `sampler`, not both.")
        if self.kind != "uniform" or self.spread not in (0.1, None):
            raise ParameterError("`spread` and `kind` do not apply to named uncertain parameters: each has its own "
                                 "range and distribution (UncertainParameter); leave them out.")
        if self.parameter != "m" and tuple([self.parameter] if isinstance(self.parameter, str) else
                                           self.parameter) != named.names:
            raise ParameterError(f"`parameter` {self.parameter!r} differs from the named parameters' names "
                                 f"{list(named.names)}; leave `parameter` out.")
        object.__setattr__(self, "parameters", named)
        object.__setattr__(self, "parameter", named.names[0] if len(named) == 1 else named.names)
        object.__setattr__(self, "spread", None)
        object.__setattr__(self, "kind", "named")

    @property
    def names(self) -> tuple:
        """The perturbed parameter names, as a tuple."""
        return (self.parameter,) if isinstance(self.parameter, str) else tuple(self.parameter)

    def nominal_values(self, nominal) -> np.ndarray:
        """The nominal value(s) δ perturbs, shape (k,).

        Parameters
        ----------
        nominal : Plant

        Returns
        -------
        ndarray (k,)

        Raises
        ------
        ParameterError
            The plant has no such parameter (its parameters are listed).
        """
        from ..uncertainty import parameter_values

        forces = self._force_names()
        if not forces:
            return np.atleast_1d(np.asarray(parameter_values(nominal, self.parameter), dtype=float))
        plant = [name for name in self.names if name not in forces]
        values = dict(zip(plant, np.atleast_1d(parameter_values(nominal, tuple(plant))))) if plant else {}
        given = self.disturbance.parameters
        return np.array([float(values[name]) if name in values else given[name] for name in self.names])

    def draw(self, nominal, n: int) -> np.ndarray:
        """The δ of samples 0 … n−1, shape (n, k): row i depends on the seed and i only.

        Parameters
        ----------
        nominal : Plant
        n : int
            Number of samples.

        Returns
        -------
        ndarray (n, k)
            ``values − nominal`` of :func:`~robustrack.uncertainty.sample_parameters`.
        """
        from ..uncertainty import sample_parameters

        values = self.nominal_values(nominal)
        if self.parameters is not None:
            self._fits(values)
            return self.parameters.sample(n, np.random.default_rng(self.seed)) - values
        draws = sample_parameters(values, n, spread=self.spread, kind=self.kind, seed=self.seed,
                                  sampler=self.sampler)
        return np.asarray(draws.values) - values

    def box(self, nominal) -> tuple[np.ndarray, np.ndarray]:
        """The δ box ``±spread·|p|`` that uniform draws fill (the worst-case search's domain).

        Parameters
        ----------
        nominal : Plant

        Returns
        -------
        (lo, hi) : ndarray (k,) each

        Raises
        ------
        ParameterError
            For normal draws or a user sampler (no box), a named ``normal`` parameter (unbounded).
        """
        if self.parameters is not None:
            values = self.nominal_values(nominal)
            self._fits(values)
            lo, hi = self.parameters.box()
            return lo - values, hi - values
        if self.sampler is not None or self.kind != "uniform":
            raise ParameterError("the δ box needs uniform draws (kind='uniform', no sampler).")
        values = self.nominal_values(nominal)
        half = np.asarray(self.spread, dtype=float) * np.abs(values)
        return -half * np.ones_like(values), half * np.ones_like(values)

    def _fits(self, values) -> None:
        """Refuse named parameters that are not one number each in the plant (e.g. a per-body array)."""
        if values.size != len(self.parameters):
            raise ParameterError(f"the named uncertain parameters {list(self.parameters.names)} must each be one "
                                 f"number of the plant; they hold {values.size} values. Name scalar parameters.")

    def box_note(self) -> str:
        """What a worst-case search over :meth:`box` leaves out (printed with its result).

        Returns
        -------
        str
            For named parameters, :meth:`~robustrack.uncertainty.UncertainSet.box_note`; else
            the uniform box's own description.
        """
        note = (self.parameters.box_note() if self.parameters is not None else
                "the search is over the box of the uniform draws, ±spread·|p| per parameter")
        if self._force_names():
            note += ("; the named friction coefficients are searched with the other parameters, the disturbance (if "
                     "any) held as given")
        elif self.disturbance is not None:
            note += "; the actual plant's δQ (friction, disturbance) is held at its given values, not searched"
        return note

    def actual(self, nominal, dm, index: int = 0):
        """The actual plant of a sample: ``nominal.replace(p = p + δ)`` (plus its δQ).

        Parameters
        ----------
        nominal : Plant
        dm : array_like (k,)
            The sample's δ.
        index : int
            The sample's index (seeds its δQ draw).

        Returns
        -------
        Plant
        """
        from ..uncertainty import actual_plant

        dq = None
        forces = self._force_names()
        if self.disturbance is not None and not forces:
            dq = self.disturbance(np.random.default_rng([self.seed, int(index)]), np.asarray(dm, dtype=float))
        names = self.names
        dm = as_float_array(dm, "dm").reshape(-1)
        if forces:  # named friction coefficients: δ added to the given ones; the rest shifts the plant
            given = self.disturbance.parameters
            dq = self.disturbance.at({name: given[name] + dm[i] for i, name in enumerate(names) if name in forces})
            keep = [i for i, name in enumerate(names) if name not in forces]
            names, dm = tuple(names[i] for i in keep), dm[keep]
            if not names:
                return actual_plant(nominal, dQ=dq)
        return actual_plant(nominal, dm=dm, parameter=names if len(names) > 1 else names[0], dQ=dq)

    def _force_names(self) -> tuple:
        """The named parameters that are friction coefficients of ``disturbance`` (:class:`ActualForces` ``parameters``)."""
        if self.parameters is None:
            return ()
        given = getattr(self.disturbance, "parameters", None)
        return tuple(name for name in self.names if isinstance(given, dict) and name in given)

    def describe(self) -> dict:
        """A JSON-ready description (what a store compares).

        Returns
        -------
        dict
            ``parameter``, ``spread``, ``seed``, ``kind`` and the names of a user
            sampler or disturbance; ``parameters`` (each one's description) for named parameters.
        """
        def name(f):
            return None if f is None else f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', repr(f))}"

        spread = self.spread
        doc = {"parameter": list(self.names), "spread": spread if not isinstance(spread, tuple) else list(spread),
               "seed": self.seed, "kind": "callable" if self.sampler is not None else self.kind,
               "sampler": name(self.sampler),
               "disturbance": self.disturbance.describe() if callable(getattr(self.disturbance, "describe", None))
               else name(self.disturbance)}
        if self.parameters is not None:
            doc["parameters"] = self.parameters.describe()
        return doc


