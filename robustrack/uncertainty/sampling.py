"""Sampling the uncertain parameters for a Monte Carlo (W 7.3; docs/guide/uncertainty.md).

:func:`sample_parameters` draws a :class:`ParameterSamples` of nominal ± spread (uniform or normal, or the user's
sampler), :func:`sample_stream` the same rows block by block (:class:`SampleStream`), seeded; the sizes are checked
before any work (:func:`check_sample_count`, :class:`LargeMonteCarlo`).
"""

from __future__ import annotations

__all__ = ["ParameterSamples", "sample_parameters", "SampleStream", "sample_stream", "check_sample_count",
           "check_gamma_settings", "LargeMonteCarlo", "SAMPLING_KINDS"]

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._validate import as_float_array, check_memory, finite, positive_int
from ..errors import ParameterError

#: Built-in sampling kinds of :func:`sample_parameters` (``"callable"`` when a
#: user ``sampler`` is given).
SAMPLING_KINDS = ("uniform", "normal")

# --------------------------------------------------------------------------- #
# sampling parameters
# --------------------------------------------------------------------------- #
@dataclass(frozen=True, eq=False)
class ParameterSamples:
    """Sampled parameter values and how they were drawn (for reproducibility).

    Attributes
    ----------
    values : ndarray (N, k)
        The draws, one row per sampled plant (k = 1 for a scalar parameter).
    nominal : ndarray (k,)
        The nominal value the draws perturb.
    kind : str
        ``"uniform"``, ``"normal"`` or ``"callable"``.
    spread : float or ndarray (k,) or None
        Relative spread (``None`` for a user sampler).
    seed : int
        Seed of the ``numpy.random.Generator`` (``default_rng(seed)``) that drew them.
    """

    values: np.ndarray
    nominal: np.ndarray
    kind: str
    spread: float | np.ndarray | None
    seed: int

    def __len__(self) -> int:
        return self.values.shape[0]

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)

    @property
    def deltas(self) -> np.ndarray:
        """``values − nominal``, shape (N, k): the sampled δ (e.g. δm)."""
        return self.values - self.nominal


def _check_spread(spread, k: int) -> float | np.ndarray:
    arr = as_float_array(spread, "spread")
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != k):
        raise ParameterError(f"`spread` must be a number or have shape ({k},); got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ParameterError(f"`spread` must be finite and >= 0 (a relative spread, 0.1 = ±10 %); got {spread!r}.")
    return float(arr) if arr.ndim == 0 else arr


#: Bytes one sample of a Γ Monte Carlo holds per uncertain parameter (its uniform draw, value
#: and δ) and on its own (the exact, first-order and bound maxima and bookkeeping).
_GAMMA_BYTES_PER_PARAMETER, _GAMMA_BYTES_PER_SAMPLE = 24, 32

#: Bytes one sample holds when the draws are streamed (:class:`SampleStream`): its three maxima.
_GAMMA_BYTES_STREAMED = 24

#: Above this estimate a Γ Monte Carlo says how much memory it will hold before it starts (GiB).
LARGE_MONTE_CARLO_GIB = 0.5


class LargeMonteCarlo(UserWarning):
    """A Γ Monte Carlo will hold more than :data:`LARGE_MONTE_CARLO_GIB` GiB (said before it starts)."""


def check_sample_count(n, k: int, name: str = "n", *, notice: bool = True, streamed: bool = False) -> int:
    """Validate a Γ Monte Carlo's number of samples: an integer >= 1 whose draws fit in memory.

    Parameters
    ----------
    n : int
        The number of sampled plants.
    k : int
        Uncertain parameters per sample.
    name : str
        The argument as the user typed it (``"n"``, ``"--samples"``).
    notice : bool
        Above :data:`LARGE_MONTE_CARLO_GIB` GiB, say how much will be held with a
        :class:`LargeMonteCarlo` warning (keyword-only; once per run).
    streamed : bool
        The draws are made block by block (:class:`SampleStream`): only the three
        per-sample maxima are held, 24 bytes a sample, not the draws (keyword-only).

    Returns
    -------
    int

    Raises
    ------
    ParameterError
        Not an integer >= 1, or more than half of the available memory needed (said
        before anything is drawn).
    """
    n = positive_int(n, name, what="number of samples")
    need = n * (_GAMMA_BYTES_STREAMED if streamed else _GAMMA_BYTES_PER_SAMPLE + _GAMMA_BYTES_PER_PARAMETER * k)
    check_memory(need, name, n, advice="Run fewer samples (the quantiles of 10⁴–10⁵ samples are already "
                 "stable), or several seeds one after another.")
    if notice and need > LARGE_MONTE_CARLO_GIB * 2**30:
        held = ("per-sample maxima (exact, first order, bound; the draws are made block by block)" if streamed
                else "draws and maxima")
        warnings.warn(f"`{name}` = {n}: the Γ Monte Carlo will hold about {need / 2**30:.1f} GiB of {held}.",
                      LargeMonteCarlo, stacklevel=3)
    return n


def check_gamma_settings(quantile, margin, names=("quantile", "margin")) -> tuple[float, float]:
    """Validate the quantile and margin of Γ′ = margin × quantile (before any work).

    Parameters
    ----------
    quantile : float
        In (0, 1].
    margin : float
        Finite, >= 1.
    names : (str, str)
        Their names as the user typed them (``("--quantile", "--margin")`` on the CLI).

    Returns
    -------
    (float, float)
    """
    quantile_ = as_float_array(quantile, names[0])
    if quantile_.ndim != 0 or not 0 < quantile_ <= 1:
        raise ParameterError(f"`{names[0]}` must be a number in (0, 1]; got {quantile!r}.")
    margin_ = as_float_array(margin, names[1])
    if margin_.ndim != 0 or not np.isfinite(margin_) or margin_ < 1:
        raise ParameterError(f"`{names[1]}` must be a finite number >= 1 (Γ′ must exceed Γ); got {margin!r}.")
    return float(quantile_), float(margin_)


def sample_parameters(
    nominal_value,
    n: int,
    *,
    spread=None,
    kind: str = "uniform",
    seed: int | None = None,
    sampler: Callable | None = None,
    positive: bool = True,
) -> ParameterSamples:
    """Draw ``n`` values of a plant parameter around its nominal value.

    Parameters
    ----------
    nominal_value : float or array_like (k,)
        The nominal parameter (e.g. ``plant.m``).
    n : int
        Number of samples (>= 1).
    spread : float or array_like (k,)
        Relative spread s >= 0 (0.1 = 10 %):

        * ``kind="uniform"``: ``value = nominal + s |nominal| U(−1, 1)`` (W 7.3's
          "±10 % of each mass");
        * ``kind="normal"``: ``value = nominal + s |nominal| N(0, 1)``.
    kind : {"uniform", "normal"}
        Ignored when ``sampler`` is given.
    seed : int, optional
        Seed of ``numpy.random.default_rng``; ``None`` draws a fresh one from the
        OS. Either way it is recorded in the result so the draws can be repeated.
    sampler : callable, optional
        ``sampler(rng, n) -> (n, k)`` array of parameter VALUES (not deltas).
    positive : bool, default True
        The parameter must stay > 0 (masses). Draws that break this are refused
        with :class:`ParameterError`, never silently resampled (resampling would
        change the distribution to a truncated one). ``kind="uniform"`` with
        ``spread >= 1`` is refused up front.

    Returns
    -------
    ParameterSamples
        ``values`` of shape (n, k) plus nominal, kind, spread, seed.

    Examples
    --------
    >>> s = sample_parameters([1.0, 2.0, 3.0], 4, spread=0.1, seed=0)
    >>> s.values.shape, bool(np.all(np.abs(s.deltas) <= 0.1 * s.nominal))
    ((4, 3), True)
    """
    nominal = _nominal_value(nominal_value, positive)
    k = nominal.shape[0]
    n = check_sample_count(n, k, "n")
    seed = _seed(seed)
    rng = np.random.default_rng(seed)

    if sampler is not None:
        if not callable(sampler):
            raise ParameterError(f"`sampler` must be callable sampler(rng, n) -> (n, k); got {sampler!r}.")
        kind, spread = "callable", None if spread is None else _check_spread(spread, k)
        values = as_float_array(sampler(rng, n), "sampler(rng, n)")
        if values.shape == (n,) and k == 1:
            values = values[:, None]
        if values.shape != (n, k):
            raise ParameterError(f"`sampler(rng, n)` must return shape ({n}, {k}); got {values.shape}.")
        if not np.all(np.isfinite(values)):
            raise ParameterError("`sampler(rng, n)` returned non-finite values.")
    else:
        spread = _builtin_spread(kind, spread, k, positive)
        values = _draw(rng, nominal, spread, kind, n)

    if positive:
        _refuse_nonpositive(values, kind, spread, seed)
    values = np.ascontiguousarray(values, dtype=float)
    values.setflags(write=False)
    nominal.setflags(write=False)
    return ParameterSamples(values=values, nominal=nominal, kind=kind, spread=spread, seed=seed)


def _nominal_value(nominal_value, positive: bool) -> np.ndarray:
    """The nominal value as a fresh (k,) array, checked (finite, at most 1-D, > 0 when ``positive``)."""
    nominal = finite(nominal_value, "nominal_value")
    if nominal.ndim > 1:
        raise ParameterError(f"`nominal_value` must be a number or a 1-D array; got shape {nominal.shape}.")
    nominal = np.atleast_1d(nominal).copy()
    if positive and np.any(nominal <= 0):
        raise ParameterError(f"`nominal_value` must be > 0 (positive=True); got {nominal_value!r}.")
    return nominal


def _seed(seed) -> int:
    """The seed as given (an integer >= 0), or a fresh one from the OS for None."""
    return int(np.random.SeedSequence().entropy) if seed is None else positive_int(seed, "seed", minimum=0)


def _builtin_spread(kind: str, spread, k: int, positive: bool):
    """The checked spread of a built-in sampling kind."""
    if kind not in SAMPLING_KINDS:
        raise ParameterError(f"`kind` must be one of {list(SAMPLING_KINDS)} (or give `sampler`); got {kind!r}.")
    if spread is None:
        raise ParameterError(f"`spread` is required for kind={kind!r} (a relative spread, 0.1 = ±10 %).")
    spread = _check_spread(spread, k)
    if kind == "uniform" and positive and np.any(np.asarray(spread) >= 1):
        raise ParameterError(
            f"kind='uniform' with `spread` >= 1 can make a positive parameter <= 0; got spread {spread!r}. "
            "Use spread < 1."
        )
    return spread


def _draw(rng, nominal, spread, kind: str, n: int) -> np.ndarray:
    """``n`` rows of a built-in kind from ``rng``. Drawing n₁ rows and then n₂ gives the same numbers as
    n₁ + n₂ at once (the generator's stream is consumed value by value, row after row)."""
    unit = rng.uniform(-1.0, 1.0, (n, nominal.shape[0])) if kind == "uniform" else \
        rng.standard_normal((n, nominal.shape[0]))
    return nominal + np.asarray(spread) * np.abs(nominal) * unit


def _refuse_nonpositive(values, kind, spread, seed) -> None:
    bad = values <= 0
    if np.any(bad):
        raise ParameterError(
            f"{int(bad.sum())} of {values.size} sampled values are <= 0 (kind={kind!r}, spread={spread!r}, "
            f"seed={seed}); the parameter must stay positive. Use a smaller spread or kind='uniform' "
            "(draws are refused, not resampled, so the stated distribution is the one used)."
        )


@dataclass(frozen=True, eq=False)
class SampleStream:
    """The draws of :func:`sample_parameters` (built-in kinds), made block by block when used.

    :func:`estimate_gamma` draws one block of samples, evaluates it and keeps only its
    per-sample maxima, so memory does not grow with the draws (8·k bytes a sample). The
    values are bit-identical to ``sample_parameters(nominal, n, spread=..., kind=...,
    seed=...).values``. Made by :func:`sample_stream`.

    Attributes
    ----------
    nominal : ndarray (k,)
    n : int
    kind : str
        ``"uniform"`` or ``"normal"``.
    spread : float or ndarray (k,)
    seed : int
    positive : bool
    """

    nominal: np.ndarray
    n: int
    kind: str
    spread: float | np.ndarray
    seed: int
    positive: bool = True

    def __len__(self) -> int:
        return self.n

    def blocks(self, size: int):
        """Yield the draws in blocks of ``size`` rows (the last may be shorter).

        Parameters
        ----------
        size : int
            Rows per block (>= 1).

        Yields
        ------
        ndarray (rows, k)
        """
        size = positive_int(size, "size")
        rng = np.random.default_rng(self.seed)
        for start in range(0, self.n, size):
            values = np.ascontiguousarray(_draw(rng, self.nominal, self.spread, self.kind,
                                                min(size, self.n - start)), dtype=float)
            if self.positive:
                _refuse_nonpositive(values, self.kind, self.spread, self.seed)
            yield values

    def __array__(self, dtype=None, copy=None):
        """All the draws at once, (n, k) (memory grows with n)."""
        return np.asarray(np.concatenate(list(self.blocks(max(1, min(self.n, 2**16))))), dtype=dtype)


def sample_stream(nominal_value, n: int, *, spread, kind: str = "uniform", seed: int | None = None,
                  positive: bool = True) -> SampleStream:
    """Draws like :func:`sample_parameters`, made block by block when used (a Γ Monte Carlo of any size).

    Parameters
    ----------
    nominal_value : float or array_like (k,)
        The nominal parameter.
    n : int
        Number of samples (>= 1; memory is checked for 24 bytes a sample, the maxima
        :func:`estimate_gamma` keeps).
    spread : float or array_like (k,)
        Relative spread, as in :func:`sample_parameters`.
    kind : {"uniform", "normal"}
        As in :func:`sample_parameters`.
    seed : int, optional
        Seed of ``numpy.random.default_rng``; None draws one from the OS (recorded).
    positive : bool, default True
        Refuse draws <= 0 (checked block by block, before the block is used).

    Returns
    -------
    SampleStream
    """
    nominal = _nominal_value(nominal_value, positive)
    n = check_sample_count(n, nominal.shape[0], "n", streamed=True)
    spread = _builtin_spread(kind, spread, nominal.shape[0], positive)
    nominal.setflags(write=False)
    return SampleStream(nominal=nominal, n=n, kind=kind, spread=spread, seed=_seed(seed), positive=positive)
