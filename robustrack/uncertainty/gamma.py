"""Uncertain plants and the uncertainty bound Γ (W ch. 5, 7.3; docs/theory/nominal-actual.md).

The *nominal* plant ``M q̈ = Q`` is the best estimate; the *actual* plant is
``M_a = M + δM``, ``Q_a = Q + δQ`` (W 5.2.12–5.2.16). Here the actual plant is
built as ``nominal.replace(<parameters>)`` (δM and the mass-dependent part of
δQ) plus an additive given-force perturbation ``δQ(q, q̇, t)``
(:class:`~robustrack.plants.ForcedPlant`, :mod:`robustrack.uncertainty.forces`).

Along the nominal controlled trajectory (q_c = q, W 5.3.8) the uncertainty in
the acceleration is::

    exact, W (5.3.5):        δq = M_a⁻¹ (Q_a + Qᶜ) − M⁻¹ (Q + Qᶜ)
                                = M_a⁻¹ (δQ − δM q̈)
    first order, W (5.3.10): δq ≈ −M⁻¹ δM M⁻¹ (Q + Qᶜ) + M⁻¹ δQ
                                = M⁻¹ (δQ − δM q̈)
    bound, W (5.3.11):       ‖δq‖ ≲ ‖M⁻¹‖ (‖δM‖ ‖M⁻¹‖ ‖Q + Qᶜ‖ + ‖δQ‖)

with q̈ = M⁻¹ (Q + Qᶜ) the nominal constrained acceleration, δQ = Q_a − Q
(mass-dependent given forces AND the additive perturbation) and ‖·‖ the
infinity norm (induced ∞-norm, max row sum, for matrices), W's convention.
The two right-hand forms are algebraically equal to the left ones; they are the
ones computed (no cancellation between two large accelerations).

Note on the seed: W prints (5.3.10) and Appendix (A-5) with ``(M + δM)⁻¹`` in
place of the two outer ``M⁻¹`` factors; that form is algebraically identical to
the exact (5.3.5) at q_c = q. What is called "first order" here is the Taylor
form of docs/theory/nominal-actual.md (``M⁻¹`` throughout), which differs from the exact value at
O(‖M⁻¹δM‖²).

Γ by Monte Carlo (W 7.3, Figs. 7.1–7.8): for N sampled actual plants take
``max_t ‖δq(t)‖`` per sample, exact and first order, and choose Γ′ above the
distribution (:func:`estimate_gamma`). All samples are evaluated in one array
operation per block of (sample, time) pairs; nothing loops over samples in Python.
"""

from __future__ import annotations

__all__ = ["uncertainty_acceleration", "uncertainty_bound", "GammaEstimate", "estimate_gamma", "DEFAULT_CHUNK"]

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .._validate import finite, positive_int
from ..errors import MassMatrixError, ParameterError, RobustrackError
from ..plants.base import Plant, batch_contract_message
from ..plants.forced import ForcedPlant
from .parameters import _components, _parameter_names, parameter_label
from .sampling import ParameterSamples, SampleStream, check_gamma_settings

#: Default number of (sample, time) pairs evaluated per array operation in
#: :func:`estimate_gamma`. Each block holds a few arrays of shape
#: (samples, times, n, n): for n = 3 about 1.2 MB each, ~10 MB peak. Blocks that
#: fit in cache were fastest in ``benchmarks/bench_gamma.py`` (2**13–2**14 beat
#: 2**18 by ~1.5×); larger blocks only cut Python overhead.
DEFAULT_CHUNK = 2**14

#: Up to this n the batched SPD solve is unrolled over matrix entries (one numpy
#: operation per entry over the whole batch); larger n uses ``numpy.linalg.solve``.
_UNROLL_MAX = 6


# --------------------------------------------------------------------------- #
# δq: exact, first order, bound (pure array functions)
# --------------------------------------------------------------------------- #
def _max_last(a):
    """max over the last axis; for short axes an elementwise loop beats numpy's reduce."""
    if a.shape[-1] > _UNROLL_MAX:
        return np.max(a, axis=-1)
    out = a[..., 0].copy()
    for i in range(1, a.shape[-1]):
        np.maximum(out, a[..., i], out=out)
    return out


def _vec_norm(x):
    """‖x‖∞ over the last axis, shape (...)."""
    return _max_last(np.abs(x))


def _mat_norm(X):
    """Induced ∞-norm (max absolute row sum), shape (...)."""
    A = np.abs(X)
    rows = np.sum(A, axis=-1) if A.shape[-1] > _UNROLL_MAX else sum(A[..., j] for j in range(A.shape[-1]))
    return _max_last(rows)


def _not_pd(where: str) -> MassMatrixError:
    return MassMatrixError(
        f"The {where} mass matrix must be positive definite (finite, with a Cholesky factor) to "
        "evaluate δq; Γ needs M⁻¹ (W 5.3.5). For a singular M use the augmented system of W ch. 4."
    )


def _inverse(M, where: str) -> np.ndarray:
    """M⁻¹ for symmetric positive definite M, checked by a Cholesky factorization."""
    try:
        np.linalg.cholesky(M)
        return np.linalg.inv(M)
    except np.linalg.LinAlgError:
        raise _not_pd(where) from None


def _spd_solve(M, r, where: str) -> np.ndarray:
    """Solve ``M x = r`` for symmetric positive definite ``M (..., n, n)``, batched.

    For n <= ``_UNROLL_MAX`` the Cholesky factorization and the two triangular
    solves are unrolled over matrix entries: each step is one numpy operation over
    the whole batch (several times faster than ``numpy.linalg.solve``'s per-matrix
    LAPACK calls for 3 × 3 blocks of a million). Only the lower triangle is read.
    """
    n = M.shape[-1]
    if n > _UNROLL_MAX:
        try:
            np.linalg.cholesky(M)
            return np.linalg.solve(M, r[..., None])[..., 0]
        except np.linalg.LinAlgError:
            raise _not_pd(where) from None
    L = [[None] * n for _ in range(n)]
    for j in range(n):
        d = M[..., j, j] - sum(L[j][k] ** 2 for k in range(j))
        if not np.all(d > 0):
            raise _not_pd(where)
        L[j][j] = np.sqrt(d)
        for i in range(j + 1, n):
            L[i][j] = (M[..., i, j] - sum(L[i][k] * L[j][k] for k in range(j))) / L[j][j]
    y = []
    for i in range(n):
        y.append((r[..., i] - sum(L[i][k] * y[k] for k in range(i))) / L[i][i])
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum(L[k][i] * x[k] for k in range(i + 1, n))) / L[i][i]
    return np.stack(np.broadcast_arrays(*x), axis=-1)


def _matvec(X, v):
    return np.einsum("...ij,...j->...i", X, v)


@dataclass(frozen=True)
class _Nominal:
    """Nominal-only terms at a set of states: M, M⁻¹, Q, F = Q + Qᶜ, q̈ = M⁻¹ F."""

    M: np.ndarray
    Minv: np.ndarray
    Q: np.ndarray
    F: np.ndarray
    qdd: np.ndarray

    @classmethod
    def of(cls, M, Q, Qc):
        M = np.asarray(M, dtype=float)
        Q = np.asarray(Q, dtype=float)
        Minv = _inverse(M, "nominal")
        F = Q + np.asarray(Qc, dtype=float)
        return cls(M, Minv, Q, F, _matvec(Minv, F))

    def __getitem__(self, index) -> "_Nominal":
        """The terms at a subset of the states (index on the leading batch axis)."""
        return _Nominal(*(getattr(self, f.name)[index] for f in dataclasses.fields(self)))

    def terms(self, M_a, Q_a):
        """δM, δQ and the common right-hand side r = δQ − δM q̈."""
        dM = M_a - self.M
        dQ = Q_a - self.Q
        return dM, dQ, dQ - _matvec(dM, self.qdd)

    def exact(self, M_a, r):
        """W (5.3.5) at q_c = q: M_a⁻¹ r."""
        return _spd_solve(M_a, r, "actual")

    def first_order(self, r):
        """W (5.3.10) (docs/theory/nominal-actual.md form): M⁻¹ r."""
        return _matvec(self.Minv, r)

    def bound(self, dM, dQ):
        """W (5.3.11): ‖M⁻¹‖ (‖δM‖ ‖M⁻¹‖ ‖Q + Qᶜ‖ + ‖δQ‖)."""
        m_inv = _mat_norm(self.Minv)
        return m_inv * (_mat_norm(dM) * m_inv * _vec_norm(self.F) + _vec_norm(dQ))


def uncertainty_acceleration(M, Q, Qc, M_a, Q_a, *, first_order: bool = False) -> np.ndarray:
    """δq along the nominal trajectory (q_c = q): exact W (5.3.5) or first order W (5.3.10).

    Parameters
    ----------
    M, Q : array_like (..., n, n), (..., n)
        Nominal mass matrix and given forces at the states.
    Qc : array_like (..., n)
        Nominal constraint (control) force Qᶜ at the states.
    M_a, Q_a : array_like (..., n, n), (..., n)
        Actual mass matrix and given forces (incl. any δQ) at the same states;
        may carry extra leading sample axes that broadcast against M's.
    first_order : bool
        False: exact ``M_a⁻¹(Q_a + Qᶜ) − M⁻¹(Q + Qᶜ)``. True: the first-order
        estimate ``−M⁻¹ δM M⁻¹ (Q + Qᶜ) + M⁻¹ δQ``.

    Returns
    -------
    ndarray (..., n)

    Raises
    ------
    MassMatrixError
        If M (or, for the exact form, M_a) is not positive definite.
    """
    nom = _Nominal.of(M, Q, Qc)
    M_a = np.asarray(M_a, dtype=float)
    _, _, r = nom.terms(M_a, np.asarray(Q_a, dtype=float))
    if first_order:
        return nom.first_order(r)
    return nom.exact(np.broadcast_to(M_a, r.shape + r.shape[-1:]), r)


def uncertainty_bound(M, Q, Qc, M_a, Q_a) -> np.ndarray:
    """The bound W (5.3.11) on the first-order δq: ``‖M⁻¹‖ (‖δM‖ ‖M⁻¹‖ ‖Q + Qᶜ‖ + ‖δQ‖)``.

    Infinity norms (induced for matrices). It bounds the first-order estimate
    exactly (triangle inequality) and the exact δq only while ‖M⁻¹δM‖ ≪ 1.
    Parameters as in :func:`uncertainty_acceleration`; only δM = M_a − M and
    δQ = Q_a − Q enter (M_a is not inverted).

    Returns
    -------
    ndarray (...)
        The bound at each state (and sample).

    Raises
    ------
    MassMatrixError
        If M is not positive definite.
    """
    nom = _Nominal.of(M, Q, Qc)
    dM, dQ, _ = nom.terms(np.asarray(M_a, dtype=float), np.asarray(Q_a, dtype=float))
    return nom.bound(dM, dQ)


# --------------------------------------------------------------------------- #
# Γ by Monte Carlo
# --------------------------------------------------------------------------- #
_SUMMARY_KEYS = ("min", "median", "p95", "p99", "max")


def _summary(x: np.ndarray) -> dict:
    p = np.quantile(x, [0.0, 0.5, 0.95, 0.99, 1.0])
    return dict(zip(_SUMMARY_KEYS, (float(v) for v in p)))


@dataclass(frozen=True, eq=False)
class GammaEstimate:
    """Result of :func:`estimate_gamma`: the distribution of ``max_t ‖δq(t)‖∞``.

    Attributes
    ----------
    exact, first_order, analytic : ndarray (N,)
        Per sampled plant, the maximum over the trajectory of ‖δq‖∞ by the exact
        form W (5.3.5), the first-order form W (5.3.10), and of the bound W (5.3.11).
    profile : ndarray (T,)
        ``max`` over samples of the exact ‖δq(t)‖∞ at each time: an empirical Γ(t).
    t : ndarray (T,)
        The trajectory's times.
    samples : ndarray (N, k) or SampleStream
        The parameter values of the sampled plants; for draws made block by block, the
        :class:`SampleStream` itself (``np.asarray`` of it regenerates the values).
    parameter : str or tuple of str
        Name(s) of the sampled plant parameter(s).
    seed : int or None
        Seed of the draws (``None`` when raw arrays were given).
    spread : float or ndarray or None
        Relative spread of the draws (``None`` when unknown).
    quantile, margin : float
        Γ′ = ``margin`` × (``quantile`` quantile of ``exact``).
    gamma_prime : float
        The suggested Γ′ for the compensators (docs/theory/compensators.md: Γ′ > Γ).
    wall_s : float
        Wall time of the Monte Carlo evaluation, seconds.
    """

    exact: np.ndarray
    first_order: np.ndarray
    analytic: np.ndarray
    profile: np.ndarray
    t: np.ndarray
    samples: np.ndarray
    parameter: str | tuple
    seed: int | None
    spread: float | np.ndarray | None
    quantile: float
    margin: float
    gamma_prime: float
    wall_s: float

    @property
    def n_samples(self) -> int:
        return int(self.exact.shape[0])

    def __repr__(self) -> str:
        """A summary (the distribution's quantiles and Γ′) — not every sample."""
        from .._format import format_value

        parameter = self.parameter if isinstance(self.parameter, str) else ", ".join(self.parameter)
        spread = "" if self.spread is None else f", spread ±{format_value(np.max(self.spread))}"
        ex = self.summary()["exact"]
        return (f"GammaEstimate({self.n_samples} samples of {parameter}{spread}, {self.t.size} times: max_t ‖δq‖∞ "
                f"median {format_value(ex['median'])}, p99 {format_value(ex['p99'])}, max {format_value(ex['max'])}; "
                f"Γ′ = {format_value(self.margin)} × its {format_value(self.quantile)} quantile = {format_value(self.gamma_prime)})")

    def summary(self) -> dict:
        """``{"exact": {min, median, p95, p99, max}, "first_order": {...}, "analytic": {...}}``."""
        return {name: _summary(getattr(self, name)) for name in ("exact", "first_order", "analytic")}

    def to_dict(self) -> dict:
        """JSON-ready summary (no per-sample arrays)."""
        spread = self.spread.tolist() if isinstance(self.spread, np.ndarray) else self.spread
        parameter = self.parameter if isinstance(self.parameter, str) else list(self.parameter)
        return {"samples": self.n_samples, "parameter": parameter, "spread": spread, "seed": self.seed,
                "n_times": int(self.t.shape[0]), "quantile": self.quantile, "margin": self.margin,
                "gamma_prime": self.gamma_prime, **self.summary(), "wall_s": self.wall_s}


def _trajectory(trajectory, n: int):
    arrays = {}
    for name in ("t", "q", "qd", "Qc"):
        if not hasattr(trajectory, name):
            raise ParameterError(
                f"`trajectory` must have attributes t, q, qd, Qc (e.g. a ConstrainedResult); it lacks `{name}`."
            )
        arrays[name] = finite(getattr(trajectory, name), f"trajectory.{name}")
    t = arrays["t"]
    if t.ndim != 1 or t.size == 0:
        raise ParameterError(f"`trajectory.t` must have shape (T,) with T >= 1; got {t.shape}.")
    for name in ("q", "qd", "Qc"):
        if arrays[name].shape != (t.size, n):
            raise ParameterError(
                f"`trajectory.{name}` must have shape (T, n) = ({t.size}, {n}); got {arrays[name].shape}."
            )
    return t, arrays["q"], arrays["qd"], arrays["Qc"]


def _sample_values(nominal: Plant, samples, parameter):
    """``(names, values (N, k), replace, seed, spread)``; ``replace(block)`` gives the ``nominal.replace``
    keywords of a block of sample rows (:func:`_parameter_names` says which column goes where)."""
    names, k, scalar = _parameter_names(nominal, parameter)
    if isinstance(samples, SampleStream):
        if samples.nominal.shape[0] != k:
            raise ParameterError(f"`samples` draw {samples.nominal.shape[0]} values per sampled plant; "
                                 f"`{', '.join(names)}` needs {k}.")
        return names, samples, _replacer(nominal, names, scalar), samples.seed, samples.spread
    if isinstance(samples, ParameterSamples):
        seed, spread = samples.seed, samples.spread
        values = samples.values
    else:
        seed = spread = None
        values = finite(samples, "samples")
    if values.ndim == 1 and k == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[1] != k or values.shape[0] == 0:
        raise ParameterError(
            f"`samples` must have shape (N, {k}) (one row of `{', '.join(names)}` per sampled plant); "
            f"got {values.shape}."
        )

    return names, values, _replacer(nominal, names, scalar), seed, spread


def _replacer(nominal: Plant, names, scalar: bool):
    """``replace(block)``: the ``nominal.replace`` keywords of a block of sample rows."""
    params = nominal.params
    components = _components(nominal, names)

    def replace(block):
        # sample axis first, then the time axis of q: (S, 1) for scalars, (S, 1, k) per body
        if not names:
            return {}
        if not components:
            if len(names) > 1:
                return {name: block[:, i:i + 1] for i, name in enumerate(names)}
            return {names[0]: block[:, :1] if scalar else block[:, None, :]}
        out = {}
        for i, name in enumerate(names):
            if name in params:
                out[name] = block[:, i:i + 1]
                continue
            owner, j = components[name]  # an array's entry: the array per sample, (S, 1, k), its others kept
            if owner not in out:
                base = np.asarray(params[owner], dtype=float)
                out[owner] = np.array(np.broadcast_to(base, (block.shape[0], 1, base.size)))
            out[owner][:, 0, j] = block[:, i]
        return out

    return replace


def _sample_blocks(values, size: int):
    """(first row, block) over the sampled plants: slices of an array, or a stream's draws block by block."""
    blocks = values.blocks(size) if isinstance(values, SampleStream) else (
        values[s0:s0 + size] for s0 in range(0, values.shape[0], size))
    s0 = 0
    for block in blocks:
        yield s0, block
        s0 += block.shape[0]


def estimate_gamma(
    nominal: Plant,
    trajectory,
    samples,
    *,
    parameter: str | Sequence[str] = "m",
    dQ: Callable | None = None,
    quantile: float = 0.99,
    margin: float = 1.2,
    chunk: int = DEFAULT_CHUNK,
    progress: Callable[[float], None] | None = None,
) -> GammaEstimate:
    """Monte Carlo estimate of the uncertainty bound Γ (W 5.3.5, 5.3.10–5.3.11, 7.3).

    For each sampled actual plant ``nominal.replace(**{parameter: sample})`` (plus
    ``dQ``), evaluate δq along the nominal controlled trajectory with the exact form
    (5.3.5, q_c = q) and the first-order form (5.3.10), and the bound (5.3.11);
    keep ``max_t ‖·‖∞`` per sample.

    Parameters
    ----------
    nominal : Plant
        The nominal plant. Its parameter arrays must broadcast over sample axes
        (body index last), as :class:`~robustrack.plants.NLinkPendulum` does.
    trajectory : object with t (T,), q (T, n), qd (T, n), Qc (T, n)
        The nominal controlled motion, e.g. a
        :class:`~robustrack.tracking.ConstrainedResult`.
    samples : ParameterSamples, SampleStream or array_like (N, k)
        Values of ``parameter`` for the N sampled plants (see :func:`sample_parameters`).
        A :class:`SampleStream` (:func:`sample_stream`) is drawn block by block as the
        blocks are evaluated: only the three per-sample maxima (24 bytes a sample) are
        held, whatever N, and the result is bit-identical to the same draws given at once.
    parameter : str or sequence of str, default "m"
        Which plant parameter the samples replace: one name (a number, or 1-D with
        one column per body), or several names of scalar parameters sampled together
        (one column each, in that order; e.g. ``("m1", "m2")``; an entry of an array,
        :meth:`~robustrack.plants.Plant.parameter_components`, is a scalar). ``()`` with samples
        of shape (N, 0): no parameter varies, the N plants differ by their ``dQ`` alone.
    dQ : callable, optional
        Additive given-force perturbation of the actual plants, ``dQ(q, qd, t)``; its
        output must broadcast to (N, T, n) (the same for all samples, or with its
        own sample axis).
    quantile : float in (0, 1], default 0.99
    margin : float >= 1, default 1.2
        Γ′ = margin × (``quantile`` quantile of the exact distribution). A
        user choice: W picks Γ′ above the densities it plots (100 for ±10 %,
        800 for ±50 %).
    chunk : int, default :data:`DEFAULT_CHUNK` (2**14)
        Number of (sample, time) pairs per array operation; memory scales with it
        (about ``chunk × n² × 8`` bytes per array, a handful of arrays at once).
    progress : callable, optional
        Called with the finished fraction (0–1] after each block.

    Returns
    -------
    GammaEstimate

    Raises
    ------
    ParameterError
        Unknown parameter, wrong shapes, bad quantile/margin/chunk.
    MassMatrixError
        A nominal or sampled mass matrix is not positive definite.
    """
    start = time.perf_counter()
    n = nominal.n
    t, q, qd, Qc = _trajectory(trajectory, n)
    names, values, replace, seed, spread = _sample_values(nominal, samples, parameter)
    quantile_, margin_ = check_gamma_settings(quantile, margin)
    positive_int(chunk, "chunk")

    N, T = len(values), t.size
    nominal_terms = _Nominal.of(nominal.mass_matrix(q, t), nominal.given_force(q, qd, t), Qc)
    exact = np.zeros(N)
    first = np.zeros(N)
    analytic = np.zeros(N)
    profile = np.zeros(T)
    s_block = min(N, int(chunk))
    t_block = max(1, int(chunk) // s_block)
    total, done = N * T, 0
    for s0, block in _sample_blocks(values, s_block):
        try:
            actual = nominal.replace(**replace(block))
        except RobustrackError:
            raise
        except Exception as exc:  # e.g. a __post_init__ that tests `if m1 > 0` on an array
            raise ParameterError(batch_contract_message(type(nominal).__name__, f"of {block.shape[0]} sampled "
                                 f"`{parameter_label(names)}`", exc)) from exc
        if dQ is not None:
            actual = ForcedPlant(actual, dQ)
        S = block.shape[0]
        for t0 in range(0, T, t_block):
            sl = slice(t0, t0 + t_block)
            qs, qds, ts = q[sl], qd[sl], t[sl]
            shape = (S, ts.size)
            try:
                M_a = np.broadcast_to(actual.mass_matrix(qs, ts), shape + (n, n))
                Q_a = np.broadcast_to(actual.given_force(qs, qds, ts), shape + (n,))
            except RobustrackError:
                raise
            except Exception as exc:  # the user's plant broke the batch contract: say what to do
                raise ParameterError(batch_contract_message(type(nominal).__name__, f"{shape} (samples of "
                                     f"`{parameter_label(names)}`, times)", exc)) from exc
            part = nominal_terms[sl]
            dM, dQ_tot, r = part.terms(M_a, Q_a)
            e = _vec_norm(part.exact(M_a, r))
            exact[s0:s0 + S] = np.maximum(exact[s0:s0 + S], e.max(axis=1))
            profile[sl] = np.maximum(profile[sl], e.max(axis=0))
            first[s0:s0 + S] = np.maximum(first[s0:s0 + S], _vec_norm(part.first_order(r)).max(axis=1))
            analytic[s0:s0 + S] = np.maximum(analytic[s0:s0 + S], part.bound(dM, dQ_tot).max(axis=1))
            done += S * ts.size
            if progress is not None:
                progress(done / total)

    gamma_prime = float(margin_) * float(np.quantile(exact, float(quantile_)))
    for arr in (exact, first, analytic, profile):
        arr.setflags(write=False)
    return GammaEstimate(
        exact=exact, first_order=first, analytic=analytic, profile=profile, t=t, samples=values,
        parameter=names[0] if len(names) == 1 else names, seed=seed, spread=spread, quantile=float(quantile_),
        margin=float(margin_),
        gamma_prime=gamma_prime, wall_s=time.perf_counter() - start,
    )
