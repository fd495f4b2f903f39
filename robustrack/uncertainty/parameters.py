"""Named uncertain parameters: a name, a nominal value, a range and a distribution (docs/guide/uncertainty.md).

An :class:`UncertainParameter` is one plant parameter the studies vary, in the spirit of MATLAB's
``ureal`` (a named uncertain real with a nominal value and a range or percentage) and of the
uncertain parameters of RobustAndOptimalControl.jl: a Monte Carlo draws it from its distribution,
a worst-case search looks over its box. An :class:`UncertainSet` is the parameters a study takes
together.

Distributions
-------------
``uniform``
    On ``range = (lo, hi)`` (or ``nominal ± percent %`` of ``|nominal|``).
``normal``
    Mean ``nominal``, standard deviation ``sigma``; unbounded, so it has no box (a worst-case
    search refuses it: give a ``range`` and ``truncated-normal``).
``truncated-normal``
    The normal of mean ``nominal`` and ``sigma`` conditioned on ``range``.
``cases``
    One of the listed values, each equally likely; its box is ``(min, max)`` of the cases.

How draws are made
------------------
A set draws one array ``r = rng.random((n, k))`` of uniform numbers in [0, 1) and maps column j
through parameter j's quantile function (inverse CDF). Rows are therefore drawn one after the
other: n₁ rows and then n₂ give the same numbers as n₁ + n₂ at once, and a uniform parameter's
value ``mid + half (2r − 1)`` is the draw ``nominal + spread |nominal| U(−1, 1)`` of
:func:`robustrack.uncertainty.sample_parameters` with the same seed (numpy's ``uniform(-1, 1)``
is ``−1 + 2r`` of the same stream).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..plants.base import Plant

__all__ = ["UncertainParameter", "UncertainSet", "DISTRIBUTIONS", "uncertain_set", "parameter_values",
           "parameter_replacements", "parameter_label"]

#: The distributions an :class:`UncertainParameter` may have.
DISTRIBUTIONS = ("uniform", "normal", "truncated-normal", "cases")

#: The smallest uniform number the normal quantile function is evaluated at: ``rng.random`` can return
#: exactly 0 (probability 2⁻⁵³), where Φ⁻¹ is −∞; 2⁻⁵⁴ maps it to about −8.3σ instead.
_TINY = 2.0 ** -54


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
            not math.isfinite(float(value)):
        raise ParameterError(f"{what} must be a finite number; got {value!r}.")
    return float(value)


@dataclass(frozen=True, eq=False, repr=False)
class UncertainParameter:
    """One named uncertain plant parameter: nominal value, range and distribution (module docstring).

    Parameters
    ----------
    name : str
        The plant parameter it varies (a Python identifier, e.g. ``"m1"``, ``"payload_mass"``).
    nominal : float
        The nominal value (the plant's value in a scenario, unless given).
    range : (float, float), optional
        Absolute bounds ``(lo, hi)`` with ``lo <= nominal <= hi``. Not with ``percent``.
    percent : float, optional
        Relative bounds: ``nominal ± percent/100 · |nominal|`` (``percent = 10`` is ±10 %).
    distribution : {"uniform", "normal", "truncated-normal", "cases"}, optional
        Default: ``"cases"`` when ``cases`` are given, ``"truncated-normal"`` when ``sigma`` and a
        range are, ``"normal"`` when ``sigma`` alone is, else ``"uniform"``.
    sigma : float, optional
        Standard deviation (> 0, absolute) of the normal and truncated normal.
    cases : sequence of float, optional
        The values of a ``"cases"`` parameter.

    Raises
    ------
    ParameterError
        A key the distribution does not take (or lacks), a nominal outside its range, bounds in the
        wrong order, a non-positive sigma — the message names the key and what to give.

    Examples
    --------
    >>> UncertainParameter("m1", 1.0, percent=10)
    m1: uncertain real, nominal = 1, range = [0.9, 1.1], uniform
    >>> UncertainParameter("m1", 1.0, range=(0.8, 1.2), sigma=0.1)
    m1: uncertain real, nominal = 1, range = [0.8, 1.2], truncated normal σ = 0.1
    """

    name: str
    nominal: float
    range: tuple | None = None
    percent: float | None = None
    distribution: str | None = None
    sigma: float | None = None
    cases: tuple | None = None

    def __post_init__(self):
        set_ = lambda key, value: object.__setattr__(self, key, value)  # noqa: E731
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ParameterError(f"`name` of an uncertain parameter must be a plant parameter's name (an identifier "
                                 f"such as 'm1'); got {self.name!r}.")
        where = f"uncertain parameter `{self.name}`"
        set_("nominal", _number(self.nominal, f"`nominal` of {where}"))
        given = {key for key in ("range", "percent", "sigma", "cases") if getattr(self, key) is not None}
        dist = self.distribution
        if dist is None:
            dist = "cases" if "cases" in given else (
                ("truncated-normal" if given & {"range", "percent"} else "normal") if "sigma" in given else "uniform")
        dist = str(dist).strip().lower().replace("_", "-").replace(" ", "-")
        if dist not in DISTRIBUTIONS:
            raise ParameterError(f"`distribution` of {where} must be one of {list(DISTRIBUTIONS)}; got "
                                 f"{self.distribution!r}.")
        set_("distribution", dist)
        needs = {"uniform": ({"range", "percent"}, {"sigma", "cases"}),
                 "normal": ({"sigma"}, {"range", "percent", "cases"}),
                 "truncated-normal": ({"sigma", "range", "percent"}, {"cases"}),
                 "cases": ({"cases"}, {"range", "percent", "sigma"})}[dist]
        extra = sorted(given & needs[1])
        if extra:
            hint = " (a normal with bounds is distribution = 'truncated-normal')" if dist == "normal" else ""
            raise ParameterError(f"{where} is {dist}: it takes no `{extra[0]}`{hint}.")
        if "range" in given and "percent" in given:
            raise ParameterError(f"{where}: give `range` (absolute) or `percent` (relative), not both.")
        if dist in ("uniform", "truncated-normal") and not given & {"range", "percent"}:
            raise ParameterError(f"{where} is {dist}: give its bounds, `range = (lo, hi)` or `percent` (10 = ±10 %).")
        if dist in ("normal", "truncated-normal"):
            if "sigma" not in given:
                raise ParameterError(f"{where} is {dist}: give its standard deviation `sigma` (> 0, absolute).")
            set_("sigma", _number(self.sigma, f"`sigma` of {where}"))
            if self.sigma <= 0:
                raise ParameterError(f"`sigma` of {where} must be > 0; got {self.sigma!r}.")
        if self.percent is not None:
            set_("percent", _number(self.percent, f"`percent` of {where}"))
            if self.percent < 0:
                raise ParameterError(f"`percent` of {where} must be >= 0 (10 = ±10 %); got {self.percent!r}.")
            half = self.percent / 100 * abs(self.nominal)
            set_("range", (self.nominal - half, self.nominal + half))
        elif self.range is not None:
            try:
                lo, hi = self.range
            except (TypeError, ValueError):
                raise ParameterError(f"`range` of {where} must be two numbers (lo, hi); got {self.range!r}.") from None
            lo, hi = _number(lo, f"`range` of {where}"), _number(hi, f"`range` of {where}")
            if not lo <= self.nominal <= hi:
                raise ParameterError(f"`range` of {where} must hold its nominal value {self.nominal:g} "
                                     f"(lo <= nominal <= hi); got [{lo:g}, {hi:g}].")
            set_("range", (lo, hi))
        if dist == "truncated-normal" and not self.range[0] < self.range[1]:
            raise ParameterError(f"{where} is truncated-normal: its range must have lo < hi; got {list(self.range)}.")
        if dist == "cases":
            try:
                cases = tuple(_number(c, f"each of `cases` of {where}") for c in self.cases)
            except TypeError:
                raise ParameterError(f"`cases` of {where} must be a list of numbers; got {self.cases!r}.") from None
            if not cases:
                raise ParameterError(f"`cases` of {where} must list at least one value.")
            set_("cases", cases)

    # ------------------------------------------------------------------ #
    def __repr__(self) -> str:
        from .._format import format_value

        g = format_value
        if self.distribution == "cases":
            return f"{self.name}: uncertain real, nominal = {g(self.nominal)}, cases [{', '.join(map(g, self.cases))}]"
        kind = {"uniform": "uniform", "normal": f"normal σ = {g(self.sigma)}",
                "truncated-normal": f"truncated normal σ = {g(self.sigma)}"}[self.distribution]
        box = "" if self.range is None else f", range = [{g(self.range[0])}, {g(self.range[1])}]"
        return f"{self.name}: uncertain real, nominal = {g(self.nominal)}{box}, {kind}"

    def box(self) -> tuple[float, float]:
        """The interval ``(lo, hi)`` a worst-case search explores (the distribution is ignored).

        Returns
        -------
        (float, float)
            ``range`` (``(min, max)`` of the cases for ``"cases"``).

        Raises
        ------
        ParameterError
            For a ``"normal"`` parameter: it has no bounds.
        """
        if self.distribution == "cases":
            return (min(self.cases), max(self.cases))
        if self.range is None:
            raise ParameterError(f"uncertain parameter `{self.name}` is normal (unbounded): it has no box for a "
                                 "worst-case search; give it a `range` and distribution = 'truncated-normal'.")
        return self.range

    def quantile(self, r) -> np.ndarray:
        """The parameter's value at uniform numbers ``r`` in [0, 1): its quantile function (inverse CDF).

        Parameters
        ----------
        r : array_like
            Uniform draws in [0, 1).

        Returns
        -------
        ndarray
            Same shape as ``r``: values with this parameter's distribution when ``r`` is uniform.
        """
        r = np.asarray(r, dtype=float)
        dist = self.distribution
        if dist == "uniform":
            lo, hi = self.range
            if self.percent is not None:  # the half-width as the range was made from it (no rounding between)
                mid, half = self.nominal, self.percent / 100 * abs(self.nominal)
            else:
                mid, half = (lo + hi) / 2, (hi - lo) / 2
            return mid + half * (-1.0 + 2.0 * r)
        if dist == "cases":
            cases = np.asarray(self.cases)
            return cases[np.minimum((r * cases.size).astype(np.intp), cases.size - 1)]
        from scipy.special import ndtr, ndtri

        if dist == "normal":
            return self.nominal + self.sigma * ndtri(np.maximum(r, _TINY))
        lo, hi = self.range
        a, b = ndtr((lo - self.nominal) / self.sigma), ndtr((hi - self.nominal) / self.sigma)
        p = np.clip(a + r * (b - a), _TINY, 1 - _TINY)
        # Φ⁻¹ of a probability rounded at the ends could land a hair outside: clip to the stated range
        return np.clip(self.nominal + self.sigma * ndtri(p), lo, hi)

    def sample(self, n: int, rng=None) -> np.ndarray:
        """``n`` draws from the distribution.

        Parameters
        ----------
        n : int
            Number of draws (>= 1).
        rng : numpy.random.Generator or int, optional
            The generator, or a seed of ``numpy.random.default_rng`` (None: a fresh one).

        Returns
        -------
        ndarray (n,)
        """
        return UncertainSet((self,)).sample(n, rng)[:, 0]

    def describe(self) -> dict:
        """JSON-ready: name, nominal, distribution and its keys (what a campaign's store compares).

        Returns
        -------
        dict
        """
        out = {"name": self.name, "nominal": self.nominal, "distribution": self.distribution}
        for key in ("range", "percent", "sigma", "cases"):
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out


def _generator(rng):
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0):
        return np.random.default_rng(rng)
    raise ParameterError(f"`rng` must be a numpy.random.Generator or a seed (an integer >= 0); got {rng!r}.")


@dataclass(frozen=True, eq=False, repr=False)
class UncertainSet:
    """The uncertain parameters a study takes together (a Monte Carlo's draws, a worst-case box).

    Parameters
    ----------
    parameters : sequence of UncertainParameter
        Distinct names; the columns of :meth:`sample` and :meth:`box` are in this order.

    Examples
    --------
    >>> s = UncertainSet([UncertainParameter("m1", 1.0, percent=10),
    ...                   UncertainParameter("g", 9.81, cases=(9.78, 9.83))])
    >>> s.names, s.sample(4, rng=0).shape
    (('m1', 'g'), (4, 2))
    """

    parameters: tuple

    def __post_init__(self):
        params = tuple(self.parameters) if not isinstance(self.parameters, UncertainParameter) else (self.parameters,)
        if not params:
            raise ParameterError("an UncertainSet needs at least one UncertainParameter.")
        for p in params:
            if not isinstance(p, UncertainParameter):
                raise ParameterError(f"an UncertainSet holds UncertainParameter objects; got {p!r}.")
        names = [p.name for p in params]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ParameterError(f"uncertain parameter `{twice[0]}` is given twice; each plant parameter once.")
        object.__setattr__(self, "parameters", params)

    def __iter__(self):
        return iter(self.parameters)

    def __len__(self) -> int:
        return len(self.parameters)

    def __getitem__(self, name):
        """The parameter of that name (or at that position)."""
        if isinstance(name, str):
            for p in self.parameters:
                if p.name == name:
                    return p
            raise KeyError(name)
        return self.parameters[name]

    def __repr__(self) -> str:
        return "\n".join(repr(p) for p in self.parameters)

    @property
    def names(self) -> tuple:
        """The parameters' names, in order."""
        return tuple(p.name for p in self.parameters)

    @property
    def nominal(self) -> np.ndarray:
        """The nominal values, shape (k,)."""
        return np.array([p.nominal for p in self.parameters])

    def sample(self, n: int, rng=None) -> np.ndarray:
        """``n`` draws of every parameter, shape (n, k) (module docstring: one uniform array mapped per column).

        Parameters
        ----------
        n : int
            Number of draws (>= 1).
        rng : numpy.random.Generator or int, optional
            The generator, or a seed of ``numpy.random.default_rng`` (None: a fresh one).

        Returns
        -------
        ndarray (n, k)
        """
        from .._validate import positive_int

        n = positive_int(n, "n", what="number of samples")
        r = _generator(rng).random((n, len(self.parameters)))
        return np.stack([p.quantile(r[:, j]) for j, p in enumerate(self.parameters)], axis=1)

    def box(self) -> tuple[np.ndarray, np.ndarray]:
        """The box ``(lo (k,), hi (k,))`` a worst-case search explores; distributions are ignored.

        Returns
        -------
        (ndarray, ndarray)

        Raises
        ------
        ParameterError
            A ``"normal"`` parameter (no bounds).
        """
        lo, hi = zip(*(p.box() for p in self.parameters))
        return np.array(lo), np.array(hi)

    def box_note(self) -> str:
        """What a search over :meth:`box` leaves out: the sentence worst-case outputs print.

        Returns
        -------
        str
        """
        others = [f"{p.name} ({p.distribution})" for p in self.parameters if p.distribution != "uniform"]
        text = "the search is over the box of each parameter; the distributions are ignored"
        if others:
            text += f" (not uniform: {', '.join(others)})"
        if any(p.distribution == "cases" for p in self.parameters):
            text += "; a case parameter's box is [min, max] of its cases, the values between them included"
        return text

    def describe(self) -> list:
        """JSON-ready: one :meth:`UncertainParameter.describe` per parameter.

        Returns
        -------
        list of dict
        """
        return [p.describe() for p in self.parameters]


def uncertain_set(parameters) -> UncertainSet:
    """An :class:`UncertainSet` from one, a sequence of, or a set of :class:`UncertainParameter`.

    Parameters
    ----------
    parameters : UncertainSet, UncertainParameter or sequence of UncertainParameter

    Returns
    -------
    UncertainSet
    """
    return parameters if isinstance(parameters, UncertainSet) else UncertainSet(parameters)


# --------------------------------------------------------------------------- #
# the plant parameters a study varies, by name
# --------------------------------------------------------------------------- #
def _parameter_names(nominal: Plant, parameter):
    """``(names, k, scalar)``: the sampled parameter names, the columns k of a sample, scalar-ness.

    One parameter (a number, or 1-D per body) takes all k columns; several parameters
    must each be a number and take one column each, in the order named. An entry of an array
    parameter (:meth:`~robustrack.plants.Plant.parameter_components`: the pendulum's ``L2``, a URDF
    robot's ``payload_com_z``) is a number.
    """
    params = nominal.params
    names = (parameter,) if isinstance(parameter, str) else tuple(parameter)
    if isinstance(parameter, (tuple, list)) and not names:
        return (), 0, False  # no parameter of the plant varies (a given-force perturbation alone)
    if not names or not all(isinstance(name, str) for name in names):
        raise ParameterError(f"`parameter` must be a parameter name or a sequence of names; got {parameter!r}.")
    components = _components(nominal, names)
    missing = [name for name in names if name not in params and name not in components]
    if missing:
        raise ParameterError(f"{type(nominal).__name__} has no parameter `{missing[0]}`; its parameters are "
                             f"{sorted(params)}{_component_hint(nominal)}.")
    if len(names) == 1:
        if names[0] in components:
            return names, 1, True
        value = np.asarray(params[names[0]], dtype=float)
        if value.ndim > 1:
            raise ParameterError(
                f"`{names[0]}` of the nominal plant must be a number or 1-D to be sampled; got shape {value.shape}."
            )
        return names, max(value.size, 1), value.ndim == 0
    arrays = [name for name in names if name in params and np.ndim(params[name]) != 0]
    if arrays:
        raise ParameterError(
            f"parameters sampled together must each be a number; `{arrays[0]}` is an array (sample an array "
            f"parameter on its own, or name its entries{_component_hint(nominal, arrays[0])})."
        )
    return names, len(names), False


def _components(nominal: Plant, names) -> dict:
    """The plant's :meth:`~robustrack.plants.Plant.parameter_components` when a name is not a parameter, else {}."""
    params = nominal.params
    if all(name in params for name in names):
        return {}
    of = getattr(nominal, "parameter_components", None)
    return of() if callable(of) else {}


def _component_hint(nominal: Plant, array: str | None = None) -> str:
    """`` (and entries of its arrays: m1, m2, …)`` for a message, or ""."""
    of = getattr(nominal, "parameter_components", None)
    comps = of() if callable(of) else {}
    names = [c for c, (p, _) in comps.items() if array is None or p == array]
    if not names:
        return ""
    shown = ", ".join(names[:4]) + (", …" if len(names) > 4 else "")
    return f" (as {shown})" if array is not None else f", and the entries of its arrays ({shown})"


def parameter_replacements(nominal: Plant, names, values) -> dict:
    """The ``nominal.replace`` keywords that set each named parameter, or array entry, to its value.

    Parameters
    ----------
    nominal : Plant
    names : sequence of str
        Parameters of the plant or entries of its arrays (:meth:`~robustrack.plants.Plant.parameter_components`).
    values : sequence of float
        One value per name; entries of one array are set together, its other entries kept.

    Returns
    -------
    dict
    """
    params = nominal.params
    components = _components(nominal, names)
    out = {}
    for name, value in zip(names, values):
        if name in params:
            out[name] = value
            continue
        owner, i = components[name]
        if owner not in out:
            out[owner] = np.array(params[owner], dtype=float)
        out[owner][..., i] = value
    return out


def parameter_label(parameter) -> str:
    """A sampled parameter's name, or several names joined by ", " (for titles and tables).

    Parameters
    ----------
    parameter : str or sequence of str
        As in :func:`estimate_gamma` (or a JSON list of names).

    Returns
    -------
    str
    """
    return parameter if isinstance(parameter, str) else ", ".join(parameter)


def parameter_values(nominal: Plant, parameter) -> np.ndarray:
    """The nominal value(s) to sample around, for :func:`sample_parameters`.

    Parameters
    ----------
    nominal : Plant
        The nominal plant.
    parameter : str or sequence of str
        As in :func:`estimate_gamma`.

    Returns
    -------
    ndarray
        ``nominal.params[parameter]`` (a number or 1-D) for one name; the named
        scalars stacked, shape (k,), for several.

    Raises
    ------
    ParameterError
        An unknown name (the plant's parameters are listed), or an array among several names.
    """
    names, _, _ = _parameter_names(nominal, parameter)
    params = nominal.params
    components = _components(nominal, names)

    def value(name):
        if name in params:
            return float(params[name])
        owner, i = components[name]
        return float(np.asarray(params[owner], dtype=float)[..., i])

    if len(names) == 1:
        return np.asarray(params[names[0]], dtype=float) if names[0] in params else np.asarray(value(names[0]))
    return np.array([value(name) for name in names])
