"""Enclosures of δq, M̃ₐ and the nominal motion over cells of time × parameters (× the error tube).

Everything here is arb ball arithmetic (:mod:`robustrack.certification.arb`) on the problem's symbolic
forms: M(q, t), Q(q, q̇, t) of the plant, A(q, q̇, t), b(q, q̇, t) of the constraint
(:class:`~robustrack.symbolic.SymbolicForm`). A *cell* is one step k of the nominal run's DOP853
dense output with its local time x ∈ [x0, x1] ⊂ [0, 1] (t = t_k + h_k x), times a box of the
uncertain parameters; at the tube level also every error ‖e‖∞ ≤ ρ_e, ‖ė‖∞ ≤ ρ_ė around the nominal
state. The formulas (docs/theory/certificate.md):

    nominal, W (2.2.7):   Qᶜ = Aᵀ (A M⁻¹ Aᵀ)⁺ (b − A M⁻¹ Q),   q̈ = M⁻¹ (Q + Qᶜ)
    along the nominal, W (5.3.5) at q_c = q:   δq = M_a⁻¹ (δQ − δM q̈)
    in the tube, W (5.3.5):   δq = M_a(q_c)⁻¹ [δQ(q) − δM(q) q̈ + J_Qa (e, ė) − (J_Ma e) q̈]
    W (5.3.4):   M̃_a = I − M_a(q_c)⁻¹ M(q_c) = M_a(q_c)⁻¹ δM(q_c)

with δM = M_a − M and δQ = Q_a − Q expanded symbolically (the nominal terms cancel before any
ball is formed) and J the Jacobians over the hull of the tube (mean-value form). For one
constraint row A = g Â with g the gcd of A's entries: where g ≠ 0, Qᶜ = Âᵀ (b/g − Â a)/(Â M⁻¹ Âᵀ)
(b/g cancelled symbolically), and where g = 0, A = 0 and the Moore–Penrose answer is Qᶜ = 0
(W 2.2: a jump from a finite limit); a cell whose g may vanish encloses both branches.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from .arb import compile_arb, require_flint
from .box import ParameterBox, parameter_slots

__all__ = ["EnclosureModel", "Interpolant", "check_certifiable"]


def check_certifiable(problem) -> None:
    """Refuse, with the reason, a problem whose δq cannot be enclosed (before any time is spent).

    Parameters
    ----------
    problem : TrackingProblem

    Raises
    ------
    ParameterError
        No symbolic form of the plant (URDF through Pinocchio, plants from functions) or of the
        constraint, actuators (the nominal force B τᶜ is not enclosed), or python-flint missing.
    """
    from ..symbolic import SymbolicForm

    require_flint()
    plant = problem.nominal
    codegen = getattr(plant, "codegen", None)
    form = codegen() if callable(codegen) else None
    if not isinstance(form, SymbolicForm):  # a compiled robot or the user's functions are code, not expressions
        raise ParameterError(
            f"the plant {type(plant).__name__} has no symbolic form (M, Q as sympy expressions: plants from functions, "
            "URDF through Pinocchio), so δq cannot be enclosed in ball arithmetic and the plant cannot be certified. "
            "Describe it by a Lagrangian (robustrack.plants.LagrangianPlant) or a plant class with codegen(); its "
            "Γ can still be estimated by sampling (robustrack gamma / estimate_gamma).")
    constraint = problem.constraint
    if constraint is not None:
        cform = constraint.codegen() if callable(getattr(constraint, "codegen", None)) else None
        if not isinstance(cform, SymbolicForm):
            raise ParameterError(
                f"the constraint {type(constraint).__name__} has no symbolic form (A, b as sympy expressions), so Qᶜ "
                "and δq cannot be enclosed: the problem cannot be certified. Give the constraint as a Holonomic / "
                "Nonholonomic expression, or a FunctionConstraint with `codegen=`.")
    if problem.actuators is not None and not problem.actuators.per_joint:  # B = I: the nominal force is Qᶜ itself
        raise ParameterError("a problem with `actuators` cannot be certified yet: the nominal force is B τᶜ "
                             "(Gauss's command, with its limits), which this certificate does not enclose.")


@dataclass(frozen=True)
class Interpolant:
    """The nominal run's DOP853 dense output in the power basis of the local time x ∈ [0, 1], as arb balls.

    Attributes
    ----------
    t : ndarray (N + 1,)
        Step times.
    coef, dcoef : list of list of list of arb
        Per step, per state component, the coefficients of y(x) − y_k and of dy/dx (low order first).
    y : ndarray (N + 1, 2n)
        States at the steps.
    """

    t: np.ndarray
    coef: list
    dcoef: list
    y: np.ndarray

    @classmethod
    def of(cls, solution) -> "Interpolant":
        """From a :class:`~robustrack.tracking.integrate.NominalSolution` (scipy's nested DOP853 form expanded)."""
        flint = require_flint()
        arb = flint.arb
        F = np.asarray(solution.F, dtype=float)
        nf = F.shape[1]
        coef, dcoef = [], []
        for k in range(F.shape[0]):
            per = []
            for j in range(F.shape[2]):
                p = [arb(0)]
                for i in range(nf):  # y = (y + F[nf-1-i]) * (x if i even else 1 - x): scipy's Dop853DenseOutput
                    p[0] = p[0] + arb(float(F[k, nf - 1 - i, j]))
                    shifted = [arb(0)] + p
                    p = shifted if i % 2 == 0 else [a - b for a, b in zip(p + [arb(0)], shifted)]
                per.append(p)
            coef.append(per)
            dcoef.append([[c * i for i, c in enumerate(p)][1:] for p in per])
        return cls(np.asarray(solution.t, dtype=float), coef, dcoef, np.asarray(solution.y, dtype=float))

    @property
    def n_steps(self) -> int:
        return len(self.coef)

    def state(self, k: int, x0: float, x1: float):
        """Enclosure of the state over x ∈ [x0, x1] of step k: y(c) + y′([x0, x1]) [−r, r] (mean-value form)."""
        arb = require_flint().arb
        c, r = 0.5 * (x0 + x1), 0.5 * (x1 - x0)  # dyadic: exact
        X, R = arb(c, r), arb(0, r)
        return [self.y[k, j] + _horner(p, arb(c)) + _horner(dp, X) * R
                for j, (p, dp) in enumerate(zip(self.coef[k], self.dcoef[k]))]

    def time(self, k: int, x0: float, x1: float):
        """The times of x ∈ [x0, x1] on step k, t = t_k + (t_{k+1} − t_k) x, as a ball."""
        arb = require_flint().arb
        c, r = 0.5 * (x0 + x1), 0.5 * (x1 - x0)
        return arb(self.t[k]) + (arb(self.t[k + 1]) - arb(self.t[k])) * arb(c, r)

    def point(self, k: int, x: float):
        """(state balls, time ball) at the local time x of step k exactly (the centre of a cell is dyadic: exact)."""
        arb = require_flint().arb
        X = arb(x)
        T = arb(self.t[k]) + (arb(self.t[k + 1]) - arb(self.t[k])) * X
        return [self.y[k, j] + _horner(p, X) for j, p in enumerate(self.coef[k])], T


#: Sweeps of the centred forms: each uses the enclosure the previous one gave (2 measured enough: a third
#: changed the triple pendulum's enclosures by < 1 %).
_SWEEPS = 2


def _meet(a, b):
    """The intersection of two enclosures of one number (either alone is valid)."""
    return a.intersection(b) if a.overlaps(b) else (a if a.rad() < b.rad() else b)


def _horner(p, x):
    out = p[-1]
    for c in reversed(p[:-1]):
        out = out * x + c
    return out


#: Unit roundoff of IEEE double (round to nearest).
_U = 2.0 ** -53

#: The expansion of ‖M̃ₐ‖∞ enumerates the 2^(1 + k) vertices of a cell (time and k parameters): with more than
#: this many parameters the cells use the interval form instead.
_MAX_EXPANDED = 9


def _mid_rad(*mats):
    """(midpoints, radii) of arb matrices of one shape as float arrays (N, n, m): every entry lies in mid ± rad.

    The midpoint is rounded to the nearest float (within 2u|mid| of the ball's), the radius converted exactly (a
    mag has a 30-bit mantissa; below the least subnormal it would round to 0, hence the 1e-300)."""
    n, m = mats[0].nrows(), mats[0].ncols()
    entries = [x for X in mats for x in X.entries()]
    mid = np.array([float(x.mid()) for x in entries]).reshape(len(mats), n, m)
    rad = np.array([float(x.rad()) for x in entries]).reshape(len(mats), n, m)
    return mid, rad + 2 * _U * np.abs(mid) + 1e-300


def _magnitudes(balls) -> np.ndarray:
    """Upper bounds of |x| for arb balls, as floats."""
    return np.nextafter(np.array([float(x.abs_upper()) for x in balls]), np.inf)


def _sym_norm(Xm, Xr):
    """Upper bounds of ‖X‖₂ for every symmetric X with |X − Xm| ≤ Xr entrywise (arrays (V, n, n), one bound each).

    The least of ‖X‖∞, ‖X‖_F, ‖X²‖∞^(1/2) and ‖X⁴‖∞^(1/4) (X symmetric: ‖X‖₂^p = ‖X^p‖₂ ≤ ‖X^p‖∞), each from the
    midpoint and radius: with E = X − Xm, |X² − fl(Xm Xm)| ≤ γ_n |Xm||Xm| + |Xm| Xr + Xr |Xm| + Xr² (Higham 3.5 for
    the computed product), and the same again for X⁴ = (X²)². Every computed sum and product of non-negative
    terms is inflated by (1 + c), c = 16 (n + 4) u, which exceeds γ_n / (1 − γ_n) and the roundings of the sums.
    """
    n = Xm.shape[-1]
    c = 16 * (n + 4) * _U
    am = np.abs(Xm)
    mag = am + Xr
    inf1 = mag.sum(axis=-1).max(axis=-1)
    fro = np.sqrt((mag * mag).sum(axis=(-1, -2)))
    Ym = Xm @ Xm
    Yr = (c * (am @ am) + am @ Xr + Xr @ am + Xr @ Xr) * (1 + c)
    bm = np.abs(Ym)
    sq = np.sqrt((bm + Yr).sum(axis=-1).max(axis=-1) * (1 + c))
    Zr = (c * (bm @ bm) + bm @ Yr + Yr @ bm + Yr @ Yr) * (1 + c)
    qu = np.sqrt(np.sqrt((np.abs(Ym @ Ym) + Zr).sum(axis=-1).max(axis=-1) * (1 + c)))
    return np.nextafter(np.minimum(np.minimum(inf1, fro), np.minimum(sq, qu)) * (1 + c), np.inf)


def _vertex_ranges(m, mrad, coef, crad, signs, extra):
    """Lower and upper float bounds of every entry of Φ(z) over the box, Φ as in :func:`_vertex_row_sums`: the
    multilinear part's extremes are at vertices (affine in each coordinate alone), all evaluated; the computed
    values are within γ_{p+2} T of the exact ones (T the magnitudes), the remainders added, with the same margin c,
    and the ends rounded outward."""
    n, T = m.shape[0], coef.shape[0]
    vals = m[None] + np.tensordot(signs.T, coef, axes=1)
    mag = np.abs(m) + np.abs(coef).sum(axis=0)
    c = 8.0 * (2 * T + n + 8) * _U
    margin = (c * (mag + np.abs(vals).max(axis=0)) + mrad + crad.sum(axis=0) + extra) * (1.0 + c) + 1e-300
    return (np.nextafter(vals.min(axis=0) - margin, -np.inf), np.nextafter(vals.max(axis=0) + margin, np.inf))


def _rho(am, ar, dm, dr):
    """(λ, ‖·‖, ρ) of the expansion: λ ≤ λ_min(L⁻¹AL⁻ᵀ) from its midpoint and radius (am, ar), λ ≥ 1 − ‖· − I‖₂ (which
    also proves A positive definite); ‖·‖ ≥ ‖L⁻¹ΔL⁻ᵀ‖₂ over the box, from L⁻¹B_jL⁻ᵀ r_j (dm, dr: (k, n, n)) at every
    vertex (convex in d); ρ = ‖·‖/λ bounds the eigenvalues of K = A⁻¹Δ. ρ None: λ ≤ 0 or ρ ≥ 1 (not formed)."""
    n = am.shape[0]
    nl = dm.shape[0]
    dev = ((am - np.eye(n))[None], (ar + 2 * _U * (np.abs(am) + 1))[None])  # the subtraction's rounding in the radius
    if nl:
        vm = np.tensordot(_signs(nl), dm, axes=1)  # L⁻¹ΔL⁻ᵀ at every vertex: the rounding into the radius
        vr = dr.sum(axis=0) + (4 * (nl + 2) * _U) * (np.abs(dm).sum(axis=0) + dr.sum(axis=0))
        norms = _sym_norm(np.concatenate([dev[0], vm]), np.concatenate([dev[1], np.broadcast_to(vr, vm.shape)]))
        lam, norm = 1.0 - norms[0], float(norms[1:].max())
    else:
        lam, norm = 1.0 - _sym_norm(*dev)[0], 0.0
    if not lam > 0:
        return lam, norm, None
    rho = norm / lam * (1 + 1e-12)
    return lam, norm, rho if rho < 1 else None


@functools.lru_cache(maxsize=None)
def _signs(V: int) -> np.ndarray:
    """The 2^V vertices of [−1, 1]^V, (2^V, V)."""
    out = 1.0 - 2.0 * ((np.arange(2 ** V)[:, None] >> np.arange(V)[None, :]) & 1)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=None)
def _expansion_signs(k: int) -> np.ndarray:
    """(1 + 2k, 2^(1+k)): the sign of each multilinear term of the expansion at every vertex of (x, d_1..d_k):
    x, then d_j, then x d_j."""
    sg = _signs(1 + k)
    out = np.concatenate([sg[:, :1].T, sg[:, 1:].T, (sg[:, :1] * sg[:, 1:]).T])
    out.setflags(write=False)
    return out


def _vertex_row_sums(m, mrad, coef, crad, signs, extra):
    """Upper bounds, per row i, of max over the box |z − c| ≤ r of Σ_j |Φ_ij(z)|, where every entry satisfies

        |Φ_ij(z) − m_ij − Σ_t g_tij Π_{l ∈ S_t} (z_l − c_l)| ≤ mrad_ij + Σ_t grad_tij Π_{l ∈ S_t} r_l + extra_ij,

    given ``coef`` = g_t Π r_l (floats, the radii's product rounded), ``crad`` = grad_t Π r_l, and ``signs`` (T,
    2^V), Π_{l ∈ S_t} σ_l at every vertex σ. The multilinear part is affine in each z_l alone, so its row sum of
    absolute values is convex along every coordinate: its maximum over the box is at one of the vertices (move one
    coordinate at a time to the end that does not decrease it), all of them evaluated. Floating point: with
    γ_p = p u/(1 − p u) (Higham, Thm 3.1/3.5), a computed sum of p terms, each a product of at most 3 floats, is
    within γ_{p+2} of the sum of their magnitudes, so the exact multilinear row sum is at most the computed one
    plus γ_{p+2} Σ_j T_ij (T the magnitudes); each computed sum of non-negative terms is within a factor (1 + γ_p)
    of the exact one. Every p here is ≤ 2T + n + 8; (Ŝ + c T̂ + Ω̂)(1 + c) with c = 8 (2T + n + 8) u exceeds the
    product of those factors (γ_p ≤ 1.01 p u for p u < 0.01); 1e-300 covers underflow's absolute errors.
    """
    n, T = m.shape[0], coef.shape[0]
    vals = m[None] + np.tensordot(signs.T, coef, axes=1)  # the multilinear part at every vertex (2^V, n, n)
    best = np.abs(vals).sum(axis=2).max(axis=0)
    mag = np.abs(m) + np.abs(coef).sum(axis=0)
    omega = mrad + crad.sum(axis=0) + extra
    c = 8.0 * (2 * T + n + 8) * _U
    return np.nextafter((best + c * mag.sum(axis=1) + omega.sum(axis=1)) * (1.0 + c) + 1e-300, np.inf)


#: Expand δq, ‖M̃ₐ‖∞ and ‖M_a⁻¹M‖∞ in the parameters where M_a (and for δq Q_a) are affine in them
#: (EnclosureModel.dq_expansion, mtilde_expansion; docs/theory/certificate.md); False: the centred and interval
#: forms everywhere, as before issue 43 (benchmarks/bench_certify.py's baseline and the tests' comparison).
EXPAND = True

#: Compiled ball functions by (plant form key, constraint form key, slots, tube level, n, forces): what EnclosureModel
#: keeps of a structure (at most 16 structures a process).
_COMPILED: dict = {}
_COMPILED_NAMES = ("m", "gated", "gate", "_nominal", "_actual", "_actual_float", "_slopes", "_nominal_dot",
                   "_actual_dot", "expandable", "_parts", "_parts_dot", "dq_expandable", "_qparts", "_qparts_dot",
                   "_jac", "fixed_force")


class EnclosureModel:
    """The compiled ball functions of one problem and box: nominal terms, δq and M̃ₐ on cells.

    Parameters
    ----------
    problem : TrackingProblem
        Checked by :func:`check_certifiable`.
    box : ParameterBox
        The uncertain parameters of the actual plant.
    tube : bool
        Also compile the Jacobians the tube level needs.
    forces : ForceBox, optional
        The actual plant's friction and disturbance (:mod:`robustrack.certification.forces`): the friction
        −b q̇ − F_c tanh(q̇/v_s) is added to Q_a symbolically, its known coefficients as values and its varying ones
        as dimensions of the box after the plant's (:attr:`force_dims`); the disturbance's bound D widens δq by
        D Σ_j |(M_a⁻¹)_ij| (:meth:`dq`).
    """

    def __init__(self, problem, box: ParameterBox, *, tube: bool = False, forces=None):
        import sympy as sp

        check_certifiable(problem)
        flint = require_flint()
        self._flint = flint
        arb = flint.arb
        plant = problem.nominal
        self.n = n = plant.n
        self.box = box
        self.slots = parameter_slots(plant, box)
        form = plant.codegen()
        self.forces = forces
        # the friction's coefficients: known ones are values of the form (b_i, F_i, then v_s), the varying ones
        # values 0 shifted by their own dimension (their interval is absolute: d_j is the coefficient)
        friction = forces is not None and forces.friction
        dims = [] if forces is None else forces.dims
        extra = []
        if friction:
            b0, F0 = forces.fixed()
            extra = [*b0, *F0, forces.smoothing]
        self.disturbance = 0.0 if forces is None else forces.disturbance
        values = [*(float(v) for v in form.values), *extra]
        self.p_values = [arb(v) for v in values]
        self.kp = len(self.slots)  # the plant's dimensions of the box: the first kp of every cell's
        self.force_dims = len(dims)
        self.nominal_d = np.concatenate([np.asarray(form.values, dtype=float)[self.slots], np.zeros(len(dims))])
        self._p_float = values
        self._eye = flint.arb_mat(n, n, [1 if i == j else 0 for i in range(n) for j in range(n)])
        self.k = self.kp + len(dims)
        cform = None if problem.constraint is None else problem.constraint.codegen()
        self.c_values = [] if cform is None else [arb(float(v)) for v in cform.values]
        # the compiled functions take every value as an argument: they depend on the forms' structure only (their
        # keys), so a process compiles them once per structure, slots, forces and level
        # (a disturbance alone compiles nothing of its own: it widens δq at run time)
        structure = None if not friction else tuple((key, j) for key, j, _, _ in dims)
        key = (form.key, None if cform is None else cform.key, tuple(int(i) for i in self.slots), bool(tube), n,
               structure)
        if form.key and (cform is None or cform.key) and key in _COMPILED:
            self.__dict__.update(_COMPILED[key])
            return
        q = sp.symbols(f"q0:{n}", real=True)
        qd = sp.symbols(f"qd0:{n}", real=True)
        t = sp.Symbol("t", real=True)
        M, Q, p = form.build(q, qd, t)
        M, Q = sp.Matrix(M), sp.Matrix(Q)
        p = list(p)
        d = [sp.Dummy(f"d{j}", real=True) for j in range(self.k)]
        shift = {p[s]: p[s] + dj for s, dj in zip(self.slots, d)}
        Ma, Qa = M.xreplace(shift), Q.xreplace(shift)
        self.fixed_force = False
        if friction:
            b = [sp.Dummy(f"b{i}", real=True) for i in range(n)]
            F = [sp.Dummy(f"F{i}", real=True) for i in range(n)]
            vs = sp.Dummy("v_s", positive=True)
            p += [*b, *F, vs]
            coef = {"viscous": list(b), "coulomb": list(F)}
            for (kind, i, _, _), dj in zip(dims, d[self.kp:]):
                coef[kind][i] = coef[kind][i] + dj
            Qa = Qa + sp.Matrix([-coef["viscous"][i] * qd[i] - coef["coulomb"][i] * sp.tanh(qd[i] / vs)
                                 for i in range(n)])
            self.fixed_force = len(dims) < 2 * n  # some coefficient is a known value: δQ at d = 0 is not 0
        dM = (Ma - M).applyfunc(sp.expand)
        dQ = (Qa - Q).applyfunc(sp.expand)
        state = list(q) + list(qd) + [t]
        outs = list(M) + list(Q)
        self.m = 0
        self.gated = False
        self.dq_expandable = False
        if cform is not None:
            A, b, cp = cform.build(q, qd, t)
            # the constraint's parameters are its own (a plant's `L1` and the constraint's `L1` are one sympy
            # Symbol but may hold different values): renamed apart
            fresh = [sp.Dummy(str(s), real=True) for s in cp]
            A = sp.Matrix(A).xreplace(dict(zip(cp, fresh)))
            b = sp.Matrix(b).xreplace(dict(zip(cp, fresh)))
            cp = fresh
            self.m = A.shape[0]
            if self.m == 1:
                A, b = self._gate(A, b, set(state))
            outs += list(A) + list(b) + ([self.gate] if self.gated else [])
        else:
            cp = []
        self._nominal = compile_arb(state + p + cp, outs, "nominal_terms")
        self._actual = compile_arb(state + p + d, list(Ma) + list(Qa) + list(dM) + list(dQ), "actual_terms")
        # M_a and δM in floating point, for choosing among candidate points only (a lower bound's value is always
        # computed again in arb at the point chosen): many points in one numpy call
        from .._lambdify import lambdify

        self._actual_float = lambdify(state + p + d, list(Ma) + list(dM), modules="numpy")
        # ∂M_a/∂d_j and ∂δQ/∂d_j (∂δM/∂d_j = ∂M_a/∂d_j): the centred forms in the parameters
        self._slopes = compile_arb(state + p + d, [e for dj in d for e in [*Ma.diff(dj), *dQ.diff(dj)]],
                                   "parameter_slopes")
        # derivatives along the local time x of a cell (v = dy/dx, ht = dt/dx): the centred forms in time
        v = sp.symbols(f"v0:{2 * n}", real=True)
        ht = sp.Symbol("ht", real=True)
        y = list(q) + list(qd)

        def along(expr):
            return expr.diff(t) * ht + sum((expr.diff(yj) * vj for yj, vj in zip(y, v)), sp.Integer(0))

        nom_exprs = [along(e) for e in outs[:n * n + n + (self.m * n + self.m if self.m else 0)]]
        self._nominal_dot = compile_arb(state + list(v) + [ht] + p + cp, nom_exprs, "nominal_along")
        self._actual_dot = compile_arb(state + list(v) + [ht] + p + d,
                                       [along(e) for e in [*Ma, *dM, *dQ]], "actual_along")
        # M_a = M + Σ_j d_j B_j affine in the box's parameters, M and every B_j symmetric: M̃ₐ is expanded in the
        # parameters around each cell's centre (mtilde_expansion); else only the interval form (mtilde)
        # (the friction's dimensions do not enter M_a: B_j = 0 there, and only the plant's are compiled)
        B = [Ma.diff(dj).applyfunc(sp.expand) for dj in d[:self.kp]]
        symmetric = all(sp.expand(X[i, j] - X[j, i]) == 0 for X in [M, *B] for i in range(n) for j in range(i))
        self.expandable = symmetric and all(not (Bj.free_symbols & set(d)) for Bj in B)
        if self.expandable:
            parts = list(M) + [e for Bj in B for e in Bj]
            self._parts = compile_arb(state + p, parts, "mass_parts")
            self._parts_dot = compile_arb(state + list(v) + [ht] + p, [along(e) for e in parts], "mass_parts_along")
            # Q_a = Q + Σ_j d_j C_j affine as well (+ the known friction C_0, δQ at d = 0): δq is expanded in the
            # parameters too (dq_expansion)
            C = [Qa.diff(dj).applyfunc(sp.expand) for dj in d]
            self.dq_expandable = all(not (Cj.free_symbols & set(d)) for Cj in C)
            if self.dq_expandable:
                cparts = [e for Cj in C for e in Cj]
                if self.fixed_force:
                    cparts += list(dQ.xreplace({dj: 0 for dj in d}))
                self._qparts = compile_arb(state + p, cparts, "force_parts")
                self._qparts_dot = compile_arb(state + list(v) + [ht] + p, [along(e) for e in cparts],
                                               "force_parts_along")
        self._jac = None
        if tube:
            X = list(q) + list(qd)
            JQ = Qa.jacobian(X)  # n × 2n
            JM = [Ma.diff(qk) for qk in q]  # n of n × n
            self._jac = compile_arb(state + p + d, list(JQ) + [e for J in JM for e in J], "actual_jacobians")
        if form.key and (cform is None or cform.key):
            if len(_COMPILED) >= 16:
                _COMPILED.pop(next(iter(_COMPILED)))
            _COMPILED[key] = {name: getattr(self, name) for name in _COMPILED_NAMES if hasattr(self, name)}

    # -- one constraint row: A = g Â, b/g cancelled ------------------------------------------
    def _gate(self, A, b, state_symbols):
        import sympy as sp

        g = sp.gcd_list(list(A)) if any(a != 0 for a in A) else sp.Integer(1)
        if g.free_symbols & state_symbols:
            Ah = A.applyfunc(lambda a: sp.cancel(a / g))
            bh = sp.cancel(b[0] / g)
            den = sp.fraction(sp.together(bh))[1]
            dens = [sp.fraction(sp.together(a))[1] for a in Ah]
            if not any(x.free_symbols & g.free_symbols & state_symbols for x in [den, *dens]):
                self.gated, self.gate = True, g
                return Ah, sp.Matrix([bh])
        return A, b

    # -- the nominal motion on a cell --------------------------------------------------------
    def _mat(self, rows, cols, vals):
        return self._flint.arb_mat(rows, cols, list(vals))

    def _nominal_parts(self, vals):
        n, m = self.n, self.m
        M = self._mat(n, n, vals[:n * n])
        Q = self._mat(n, 1, vals[n * n:n * n + n])
        if not m:
            return M, Q, None, None, None
        i0 = n * n + n
        A = self._mat(m, n, vals[i0:i0 + m * n])
        b = self._mat(m, 1, vals[i0 + m * n:i0 + m * n + m])
        g = vals[i0 + m * n + m] if self.gated else None
        return M, Q, A, b, g

    def nominal(self, Y, T, branch: str = "joint"):
        """(q̈, Qᶜ, open) over the state enclosure Y (2n balls) and time T; ``open``: A may vanish there.

        ``branch``: "continuous" (the cancelled formula, the limit where A → 0), "zero" (Qᶜ = 0, the
        Moore–Penrose answer where A = 0) or "joint" (their hull where A may vanish). None when M or
        Â M⁻¹ Âᵀ may be singular there (split the cell).
        """
        arb = self._flint.arb
        n = self.n
        M, Q, A, b, g = self._nominal_parts(self._nominal(*Y, T, *self.p_values, *self.c_values))
        both = g is not None and g.contains(0)
        try:
            if A is None or branch == "zero":
                return [M.solve(Q)[i, 0] for i in range(n)], [arb(0)] * n, both
            a = M.solve(Q)
            G = A * M.solve(A.transpose())
            lam = G.solve(b - A * a)
            Qc = A.transpose() * lam
            if both and branch == "joint":  # A may be 0 here: the Moore–Penrose answer Qᶜ = 0 joins the hull
                Qc = self._mat(n, 1, [Qc[i, 0].union(0) for i in range(n)])
            qdd = M.solve(Q + Qc)
        except ZeroDivisionError:
            return None
        return [qdd[i, 0] for i in range(n)], [Qc[i, 0] for i in range(n)], both

    def nominal_slope(self, Y, T, V, ht, qdd, zero: bool = False):
        """d q̈/dx over the cell (V = dy/dx, ht = dt/dx), by the chain rule through the fundamental equation:
        ȧ = M⁻¹(Q̇ − Ṁa), Ḃ = M⁻¹(Âᵀ̇ − ṀB), λ̇ = G⁻¹(ḃ − Ȧa − Âȧ − Ġλ), q̈̇ = M⁻¹(Q̇ + Q̇ᶜ − Ṁq̈). None: not enclosed."""
        n = self.n
        M, Q, A, b, _ = self._nominal_parts(self._nominal(*Y, T, *self.p_values, *self.c_values))
        dvals = self._nominal_dot(*Y, T, *V, ht, *self.p_values, *self.c_values)
        dM, dQ, dA, db, _ = self._nominal_parts(list(dvals) + ([None] if self.gated else []))
        x = self._mat(n, 1, qdd)
        try:
            if A is None or zero:
                rhs = dQ - dM * x
            else:
                a = M.solve(Q)
                da = M.solve(dQ - dM * a)
                B = M.solve(A.transpose())
                dB = M.solve(dA.transpose() - dM * B)
                G = A * B
                dG = dA * B + A * dB
                lam = G.solve(b - A * a)
                dlam = G.solve(db - dA * a - A * da - dG * lam)
                dQc = dA.transpose() * lam + A.transpose() * dlam
                rhs = dQ + dQc - dM * x
            out = M.solve(rhs)
        except ZeroDivisionError:
            return None
        return [out[i, 0] for i in range(n)]

    def _actual_terms(self, Y, T, D):
        n = self.n
        vals = self._actual(*Y, T, *self.p_values, *D)
        return (self._mat(n, n, vals[:n * n]), self._mat(n, 1, vals[n * n:n * n + n]),
                self._mat(n, n, vals[n * n + n:2 * n * n + n]), self._mat(n, 1, vals[2 * n * n + n:]))

    def _slope_terms(self, Y, T, D):
        """[(∂M_a/∂d_j, ∂δQ/∂d_j)] over the cell."""
        n, w = self.n, self.n * self.n + self.n
        S = self._slopes(*Y, T, *self.p_values, *D)
        return [(self._mat(n, n, S[j * w:j * w + n * n]), self._mat(n, 1, S[j * w + n * n:(j + 1) * w]))
                for j in range(self.k)]

    def _pa(self, Y, T, D, centre_terms: bool = False):
        """(P M_a(Y, D), P, slopes): M_a over the cell in its centred form in the parameters, preconditioned by P
        ≈ M_a(mid)⁻¹ (a point matrix): interval Gaussian elimination on it works where M_a itself looks singular.
        ``centre_terms``: also the actual terms at the parameters' centre (M_a, Q_a, δM, δQ), computed here anyway."""
        arb = self._flint.arb
        n = self.n
        Dc = [arb(d.mid()) for d in D]
        at_centre = self._actual_terms(Y, T, Dc)
        A0 = at_centre[0]
        slopes = self._slope_terms(Y, T, D)
        mid = np.array([[float(A0[i, j].mid()) for j in range(n)] for i in range(n)])
        try:
            P = self._mat(n, n, [arb(v) for v in np.linalg.inv(mid).reshape(-1)])
        except np.linalg.LinAlgError:
            return None
        PA = P * A0
        for (Aj, _), d, c in zip(slopes, D, Dc):
            PA = PA + (P * Aj) * (d - c)
        return (PA, P, slopes, at_centre) if centre_terms else (PA, P, slopes)

    def dq(self, cell, D, tube=None, enough=-math.inf):
        """δq (n balls) over a time cell × the parameter box D (× the tube (ρ_e, ρ_ė)). None: not enclosed.

        Centred form in the cell's time and parameters around its centre, met with the direct enclosure:
        δq(xc, Dc) + ∂ₓδq [−r, r] + Σ_j ∂δq/∂d_j (d_j − Dc_j), ∂ₓδq = M_a⁻¹(Ṙ − Ṁ_a δq),
        ∂δq/∂d_j = M_a⁻¹(R_j − A_j δq), R = δQ − δM q̈ (docs/theory/certificate.md). Where A may vanish in
        the cell, both branches of Qᶜ (its limit and 0) are enclosed and joined. ``enough``: once every |δq_i|
        is below it the sweeps stop (the caller drops such a cell anyway).
        """
        self.last_contrib = self.last_sign = None
        if not cell.branches:
            return None
        outs = []
        for branch in cell.branches:
            out = None
            if self.dq_expandable and EXPAND:
                out = self.dq_expansion(cell, branch, D)
                if out is not None and tube is not None:
                    try:
                        out = self._tube_correction(cell, D, tube, out, self._mat(self.n, 1, branch.qdd))
                    except ZeroDivisionError:
                        return None
            if out is None:
                out = self._dq_branch(cell, branch, D, tube, enough)
            if out is None:
                return None
            outs.append(out)
        out = [outs[0][i] if len(outs) == 1 else outs[0][i].union(outs[1][i]) for i in range(self.n)]
        if self.disturbance:
            width = self._disturbance_width(cell, D, tube)
            if width is None:
                return None
            out = [o + w for o, w in zip(out, width)]
        return out

    def _disturbance_width(self, cell, D, tube):
        """Balls [−w_i, w_i] containing (M_a⁻¹ d)_i for every ‖d‖∞ <= D over the cell × the box (× the tube):
        w_i = D Σ_j |(M_a⁻¹)_ij| bounded above, M_a⁻¹ by the preconditioned interval solve (None: not enclosed).

        δq is linear in δQ, and d(t) is no function of the state: δq = δq_f + M_a⁻¹ d, whose i-th component ranges
        over δq_f,i ± D Σ_j |(M_a⁻¹)_ij| as d ranges over the box ‖d‖∞ <= D (docs/theory/certificate.md)."""
        arb = self._flint.arb
        n = self.n
        Y = cell.Y
        if tube is not None:
            Y = [y + arb(0, tube[0] if j < n else tube[1]) for j, y in enumerate(Y)]
        pre = self._pa(Y, cell.T, D)
        if pre is None:
            return None
        PA, P, _ = pre
        try:
            inv = PA.solve(P)
        except ZeroDivisionError:
            return None
        bound = arb(self.disturbance)
        out = []
        for i in range(n):
            row = inv[i, 0].abs_upper()
            for j in range(1, n):
                row = row + inv[i, j].abs_upper()
            w = math.nextafter(float((bound * row).abs_upper()), math.inf)
            if not math.isfinite(w):
                return None
            out.append(arb(0, w))
        return out

    def _force_parts_over(self, cell):
        """[C_1, …, C_k] (∂Q_a/∂d_j; then C_0, δQ at d = 0, where a friction coefficient is known) over the cell's
        states, along x there, and at the centre: cached on the cell."""
        got = cell.cache.get("force parts")
        if got is None:
            n, k = self.n, self.k + (1 if self.fixed_force else 0)  # C_1 … C_k, and C_0 (the known friction)

            def vecs(vals):
                return [self._mat(n, 1, vals[j * n:(j + 1) * n]) for j in range(k)]

            got = cell.cache["force parts"] = (
                vecs(self._qparts(*cell.Y, cell.T, *self.p_values)),
                vecs(self._qparts_dot(*cell.Y, cell.T, *cell.V, cell.ht, *self.p_values)),
                vecs(self._qparts(*cell.point.Y, cell.point.T, *self.p_values)))
        return got

    def dq_expansion(self, cell, branch, D):
        """δq (n balls) over the time cell × D for one branch of the nominal terms, expanded in the parameters; None
        where it cannot be formed (the caller then uses the centred form). Needs :attr:`dq_expandable`:
        M_a = M + Σ_j d_j B_j, Q_a = Q + Σ_j d_j C_j.

        docs/theory/certificate.md, "δq expanded in the parameters". At one time, F(d) = δQ − δM q̈ = Σ_j d_j f_j,
        f_j = C_j − B_j q̈; with c the centre of D, A = M_a(c), w(d) = A⁻¹F(d) = w_c + Σ_j (d_j − c_j) w_j,
        H_j = A⁻¹B_j, K = Σ_j (d_j − c_j) H_j, exactly δq(d) = (I + K)⁻¹ w(d) =

            w_c + Σ_j (d_j − c_j) g_j − Σ_a Σ_b (d_a − c_a)(d_b − c_b) H_a g_b + K² v − K³ (I + K)⁻¹ w(d),

        g_j = w_j − H_j w_c, v = Σ_j (d_j − c_j) w_j. With ρ ≥ |eigenvalues of K| (as in :meth:`mtilde_expansion`),
        |(K² v)_i| ≤ ρ² √(A⁻¹)_ii ‖v‖_A and |(K³(I + K)⁻¹w)_i| ≤ ρ³/(1 − ρ) √(A⁻¹)_ii ‖w‖_A, ‖w_j‖_A² = f_jᵀ w_j.
        w_c and g_j in their mean-value forms in the time x (ẇ = A⁻¹(ḟ − Ȧw), Ḣ_j = A⁻¹(Ḃ_j − ȦH_j), q̈̇ the
        branch's slope); the multilinear part's extremes are at the vertices of (x, d), all evaluated.
        """
        if branch.slope is None or branch.point_qdd is None:
            return None
        arb, n, k, kp = self._flint.arb, self.n, self.k, self.kp
        r = np.array([float(x.rad()) for x in D])
        if kp + int(np.count_nonzero(r[kp:])) > _MAX_EXPANDED:
            return None
        (M, *B), (dM, *dB), (Mp, *Bp) = self._parts_over(cell, None)
        C, dC, Cp = self._force_parts_over(cell)
        zero = self._mat(n, n, [0] * (n * n))
        # the friction's dimensions and C_0 (the known friction, last): B = 0
        B, dB, Bp = (X + [zero] * (len(C) - kp) for X in (B, dB, Bp))
        c = [arb(x.mid()) for x in D]
        A, dA, Ap = M, dM, Mp
        for cj, Bj, dBj, Bpj in zip(c[:kp], B, dB, Bp):
            A, dA, Ap = A + Bj * cj, dA + dBj * cj, Ap + Bpj * cj
        mid = np.array([float(x) for x in Ap.mid().entries()]).reshape(n, n)
        try:
            Linv = np.linalg.inv(np.linalg.cholesky(mid))
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(Linv)):
            return None
        P = self._flint.arb_mat(n, n, (Linv.T @ Linv).reshape(-1).tolist())
        qv, qs, qp = (self._mat(n, 1, x) for x in (branch.qdd, branch.slope, branch.point_qdd))
        f = [Cj - Bj * qv for Cj, Bj in zip(C, B)]
        df = [dCj - dBj * qv - Bj * qs for dCj, dBj, Bj in zip(dC, dB, B)]
        fp = [Cj - Bj * qp for Cj, Bj in zip(Cp, Bp)]
        Fc, dFc, Fcp = f[0] * c[0], df[0] * c[0], fp[0] * c[0]
        for j in range(1, k):
            Fc, dFc, Fcp = Fc + f[j] * c[j], dFc + df[j] * c[j], Fcp + fp[j] * c[j]
        if self.fixed_force:  # F(d) = C_0 + Σ_j d_j f_j: the known friction every plant has
            Fc, dFc, Fcp = Fc + f[k], dFc + df[k], Fcp + fp[k]
            f, df, fp, B, dB, Bp = f[:k], df[:k], fp[:k], B[:k], dB[:k], Bp[:k]
        try:
            PA, PAp = P * A, P * Ap
            wc = PA.solve(P * Fc)  # δq(·, c) over the cell
            w = [PA.solve(P * fj) for fj in f]
            H = [PA.solve(P * Bj) if j < kp else zero for j, Bj in enumerate(B)]
            g = [wj - Hj * wc for wj, Hj in zip(w, H)]
            Ainv = PA.solve(P)
            dwc = PA.solve(P * (dFc - dA * wc))
            dg = [PA.solve(P * (dfj - dA * wj)) - PA.solve(P * (dBj - dA * Hj)) * wc - Hj * dwc if j < kp
                  else PA.solve(P * (dfj - dA * wj)) for j, (dfj, wj, dBj, Hj) in enumerate(zip(df, w, dB, H))]
            wcp = PAp.solve(P * Fcp)  # at the centre
            gp = [PAp.solve(P * fpj) - PAp.solve(P * Bpj) * wcp if j < kp else PAp.solve(P * fpj)
                  for j, (fpj, Bpj) in enumerate(zip(fp, Bp))]
        except ZeroDivisionError:
            return None
        live = [j for j in range(k) if r[j] > 0]
        nl = len(live)
        rl = r[live]
        mass = [j for j in live if j < kp]  # (the friction's dimensions leave M_a alone: they do not enter ρ)
        rm = r[mass]
        Lm = self._flint.arb_mat(n, n, Linv.reshape(-1).tolist())
        LmT = Lm.transpose()
        sq, sr = _mid_rad(Lm * A * LmT, *[Lm * B[j] * LmT for j in mass])
        lam, norm, rho = _rho(sq[0], sr[0], sq[1:] * rm[:, None, None], sr[1:] * rm[:, None, None])
        if rho is None:
            return None
        vm, vr = _mid_rad(wcp, dwc, *[gp[j] for j in live], *[dg[j] for j in live])
        # the quadratic term's pairs: H_a g_b + H_b g_a vanishes where both are the friction's (H = 0)
        pairs = [(a, b) for ia, a in enumerate(live) for b in live[ia:] if a < kp or b < kp]
        quads = [H[a] * g[b] if a == b else H[a] * g[b] + H[b] * g[a] for a, b in pairs]
        mags = _magnitudes([x for T in quads for x in T.entries()]
                           + [Ainv[i, i] for i in range(n)] + [(fj.transpose() * wj)[0, 0] for fj, wj in zip(f, w)]
                           + [(Fc.transpose() * wc)[0, 0]])
        np_ = len(pairs) * n
        terms = mags[:np_].reshape(len(pairs), n, 1) * np.array([r[a] * r[b] for a, b in pairs])[:, None, None]
        quad = terms.sum(axis=0)
        a_i = np.sqrt(mags[np_:np_ + n])[:, None]
        wA = np.sqrt(mags[np_ + n:np_ + n + k])
        vA = float((r * wA).sum())
        rem = a_i * (rho ** 2 * vA + rho ** 3 / (1 - rho) * (float(np.sqrt(mags[-1])) + vA))
        extra = (quad + rem) * (1 + 1e-12)
        rx = float(cell.R.rad())
        rxl = (rx * rl)[:, None, None]
        coef = np.concatenate([rx * vm[1:2], vm[2:2 + nl] * rl[:, None, None], vm[2 + nl:] * rxl])
        crad = np.concatenate([rx * vr[1:2], vr[2:2 + nl] * rl[:, None, None], vr[2 + nl:] * rxl])
        lo, hi = _vertex_ranges(vm[0], vr[0], coef, crad, _expansion_signs(nl), extra)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            return None
        out = [arb(float(a)).union(arb(float(b))) for a, b in zip(lo[:, 0], hi[:, 0])]
        # where to split (the worst component): time, the remainders of ẇ_c and ġ_j; a parameter, its share of the
        # quadratic term, the largest relative radius the rest; the signs of the slopes point to its largest value
        i = int(np.argmax(np.maximum(-lo[:, 0], hi[:, 0])))
        contrib = np.zeros(1 + k)
        contrib[0] = crad[0, i].sum() + crad[1 + nl:, i].sum()
        for (a, b), t in zip(pairs, terms[:, i, 0]):
            contrib[1 + a] += t / 2
            contrib[1 + b] += t / 2
        if mass:  # (ρ comes from the plant's dimensions alone)
            contrib[1 + mass[int(np.argmax(rm / np.maximum(np.abs(self.nominal_d[mass]), 1e-300)))]] += rem[i, 0]
        self.last_contrib = contrib.tolist()
        sign = np.zeros(k)
        sign[live] = np.sign(vm[2:2 + nl, i, 0]) * (1.0 if vm[0, i, 0] >= 0 else -1.0)
        self.last_sign = sign.tolist()
        return out

    def _dq_branch(self, cell, branch, D, tube, enough):
        arb = self._flint.arb
        n = self.n
        pre = self._pa(cell.Y, cell.T, D)
        if pre is None:
            return None
        PA, P, slopes = pre
        qv = self._mat(n, 1, branch.qdd)
        _, _, dM, dQ = self._actual_terms(cell.Y, cell.T, D)
        R = dQ - dM * qv
        Dc = [arb(d.mid()) for d in D]
        try:
            x = PA.solve(P * R)  # the direct enclosure over the cell
            out = [x[i, 0] for i in range(n)]
            if branch.point_qdd is not None and branch.slope is not None:
                xp = self.dq_point(cell.point, Dc, qdd=branch.point_qdd, Qc=branch.point_Qc)
                # time: Ṙ = δQ̇ − δṀ q̈ − δM q̈̇ over the cell
                dv = self._actual_dot(*cell.Y, cell.T, *cell.V, cell.ht, *self.p_values, *D)
                dMa = self._mat(n, n, dv[:n * n])
                ddM = self._mat(n, n, dv[n * n:2 * n * n])
                ddQ = self._mat(n, 1, dv[2 * n * n:])
                Rt = ddQ - ddM * qv - dM * self._mat(n, 1, branch.slope)
                for _ in range(_SWEEPS):  # the slopes use δq over the cell: each sweep tightens it
                    xt = PA.solve(P * (Rt - dMa * x))
                    cf = [xp[i] + xt[i, 0] * cell.R for i in range(n)]
                    xjs = []
                    for (Aj, dQj), d, c in zip(slopes, D, Dc):
                        xjs.append(PA.solve(P * ((dQj - Aj * qv) - Aj * x)))
                        cf = [cf[i] + xjs[-1][i, 0] * (d - c) for i in range(n)]
                    out = [_meet(a, b) for a, b in zip(out, cf)]
                    x = self._mat(n, 1, out)
                    if tube is None and max(float(o.abs_upper()) for o in out) < enough:
                        break
                i = max(range(n), key=lambda j: float(out[j].abs_upper()))
                # what each direction contributes to the width of the worst component: where to split next
                self.last_contrib = [float(xt[i, 0].abs_upper()) * float(cell.R.rad())] + [
                    float(xj[i, 0].abs_upper()) * float((d - c).rad()) for xj, d, c in zip(xjs, D, Dc)]
                self.last_sign = [float(np.sign(float(xj[i, 0].mid()))) for xj in xjs]
            if tube is not None:
                out = self._tube_correction(cell, D, tube, out, qv)
        except ZeroDivisionError:
            return None
        return out

    def _tube_correction(self, cell, D, tube, dq0, qv):
        """δq in the tube = δq₀ + M_a(q_c)⁻¹ [J_Qa (e, ė) − (J_Ma e) q̈ − (J_Ma e) δq₀] (mean-value form, hull)."""
        arb = self._flint.arb
        n = self.n
        E = [arb(0, tube[0])] * n + [arb(0, tube[1])] * n
        Yc = [y + e for y, e in zip(cell.Y, E)]
        pre = self._pa(Yc, cell.T, D)
        if pre is None:
            raise ZeroDivisionError
        PA, P, _ = pre
        J = self._jac(*Yc, cell.T, *self.p_values, *D)
        x0 = self._mat(n, 1, dq0)
        extra = self._mat(n, 2 * n, J[:2 * n * n]) * self._mat(2 * n, 1, E)
        for i in range(n):
            JMi = self._mat(n, n, J[2 * n * n + i * n * n:2 * n * n + (i + 1) * n * n])
            extra = extra - (JMi * (qv + x0)) * E[i]
        c = PA.solve(P * extra)
        return [dq0[i] + c[i, 0] for i in range(n)]

    def mtilde(self, cell, D, tube=None):
        """M̃ₐ = M_a⁻¹ δM over the cell (at q_c in the tube), an arb matrix; None: not enclosed.

        Centred form in the parameters met with the direct enclosure: ∂M̃ₐ/∂d_j = M_a⁻¹ A_j (I − M̃ₐ).
        """
        arb = self._flint.arb
        n, k = self.n, self.k
        self.last_contrib = None
        Y = cell.Y
        if tube is not None:
            Y = [y + arb(0, tube[0] if j < n else tube[1]) for j, y in enumerate(Y)]
        pre = self._pa(Y, cell.T, D, centre_terms=True)
        if pre is None:
            return None
        PA, P, slopes, (A0, _, dM0, _) = pre
        Dc = [arb(d.mid()) for d in D]
        dM = self._actual_terms(Y, cell.T, D)[2]
        eye = self._mat(n, n, [arb(1) if i == j else arb(0) for i in range(n) for j in range(n)])
        try:
            Mt = PA.solve(P * dM)
            if all(d.rad() == 0 for d in D):
                self.last_contrib = [1.0] + [0.0] * k
                return Mt
            # centre value at Dc over the cell's states (M_a at Dc preconditioned by the same P), then the slopes
            centre = (P * A0).solve(P * dM0)
            for _ in range(_SWEEPS):
                Mc = centre
                terms = []
                for (Aj, _), d, c in zip(slopes, D, Dc):
                    terms.append(PA.solve(P * (Aj * (eye - Mt))) * (d - c))
                    Mc = Mc + terms[-1]
                Mt = self._mat(n, n, [_meet(Mt[i, j], Mc[i, j]) for i in range(n) for j in range(n)])
        except ZeroDivisionError:
            return None
        # what each direction contributes to the widest row: the centre's width over the cell's times, then
        # each parameter's term (where to split next)
        i = max(range(n), key=lambda r: sum(float(Mt[r, j].rad()) for j in range(n)))
        self.last_contrib = [sum(float(centre[i, j].rad()) for j in range(n))] + [
            sum(float(t[i, j].abs_upper()) for j in range(n)) for t in terms]
        return Mt

    def _parts_over(self, cell, tube):
        """[M, B_1, …, B_k] over the cell's states (× the tube), their derivatives along x there, and the same at the
        cell's centre (over the tube there): cached on the time cell, per tube."""
        key = ("parts", tube)
        got = cell.cache.get(key)
        if got is None:
            arb = self._flint.arb
            n, nn = self.n, self.n * self.n
            Y, Yc = cell.Y, cell.point.Y
            if tube is not None:
                E = [arb(0, tube[0] if j < n else tube[1]) for j in range(2 * n)]
                Y = [y + e for y, e in zip(Y, E)]
                Yc = [y + e for y, e in zip(Yc, E)]

            def mats(vals):
                return [self._mat(n, n, vals[i * nn:(i + 1) * nn]) for i in range(self.kp + 1)]

            got = cell.cache[key] = (mats(self._parts(*Y, cell.T, *self.p_values)),
                                     mats(self._parts_dot(*Y, cell.T, *cell.V, cell.ht, *self.p_values)),
                                     mats(self._parts(*Yc, cell.point.T, *self.p_values)))
        return got

    def mtilde_expansion(self, cell, D, tube=None, inverse_ratio: bool = False):
        """An upper bound of ‖M̃ₐ‖∞ (``inverse_ratio``: ‖I − M̃ₐ‖∞ = ‖M_a⁻¹M‖∞) over the time cell × the parameter
        box D (× the tube) and the direction to split next (-1: time, j: parameter j); None where it cannot be
        formed (the caller then uses :meth:`mtilde`). Needs :attr:`expandable`: M_a = M + Σ_j d_j B_j.

        docs/theory/certificate.md, "‖M̃ₐ‖∞ expanded in the parameters". With c the centre of D, A = M_a(c),
        K = A⁻¹ Σ_j (d_j − c_j) B_j and R = A⁻¹M, exactly

            M̃ₐ(d) = M̃ₐ(c) + Σ_j (d_j − c_j) G_j − K² R + K³ (I + K)⁻¹ R,   G_j = A⁻¹ B_j R = ∂M̃ₐ/∂d_j at c.

        K is A-self-adjoint, so its eigenvalues lie in [−ρ, ρ] with ρ ≥ ‖L⁻¹ΔL⁻ᵀ‖₂ / λ_min(L⁻¹AL⁻ᵀ) for any
        nonsingular L (here a floating-point Cholesky factor of A at the centre): |(K³(I + K)⁻¹R)_il| ≤
        ρ³/(1 − ρ) √(A⁻¹)_ii √(M A⁻¹ M)_ll. The quadratic term is bounded by its magnitude; the constant and linear
        parts — with M̃ₐ(·, c) in its mean-value form in the time x, and each G_j over the time cell split into a
        float and an interval containing 0 — are affine in (x, d): their row sum is convex, and its maximum over
        the cell's box is found exactly at the vertices (:func:`_vertex_row_sums`). Everything is evaluated at
        the one parameter point c over the cell's states (the parameters enter only through ρ and the radii), so
        the enclosure does not blow up over a wide box of an ill-conditioned M_a as the interval solve does.
        The friction's dimensions (after the plant's) leave M_a alone: only D's first :attr:`kp` are read.
        """
        arb = self._flint.arb
        n, k = self.n, self.kp
        D = D[:k]
        (M, *B), (dM, *dB), (Mp, *Bp) = self._parts_over(cell, tube)
        c = [arb(x.mid()) for x in D]  # floats, exactly the balls' centres
        r = np.array([float(x.rad()) for x in D])  # exactly the radii: [c − r, c + r] ⊇ D
        A, dA, Ap = M, dM, Mp
        for cj, Bj, dBj, Bpj in zip(c, B, dB, Bp):
            A, dA, Ap = A + Bj * cj, dA + dBj * cj, Ap + Bpj * cj
        r = r if r.size <= _MAX_EXPANDED else None
        if r is None:
            return None
        mid = np.array([float(x) for x in Ap.mid().entries()]).reshape(n, n)
        try:
            Linv = np.linalg.inv(np.linalg.cholesky(mid))  # any nonsingular L will do: L⁻¹AL⁻ᵀ ≈ I
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(Linv)):
            return None
        P = self._flint.arb_mat(n, n, (Linv.T @ Linv).reshape(-1).tolist())  # ≈ A⁻¹ at the centre: a preconditioner
        try:
            PA, PAp = P * A, P * Ap
            R = PA.solve(P * M)  # A⁻¹M over the cell: I − M̃ₐ(·, c)
            H = [PA.solve(P * Bj) for Bj in B]
            G = [Hj * R for Hj in H]
            Ainv = PA.solve(P)
            dR = PA.solve(P * (dM - dA * R))  # Ṙ = A⁻¹(Ṁ − ȦR) = −∂ₓM̃ₐ(·, c)
            dG = [PA.solve(P * (dBj - dA * Hj)) * R + Hj * dR for Hj, dBj in zip(H, dB)]  # Ġ_j = Ḣ_j R + H_j Ṙ
            Rp = PAp.solve(P * Mp)  # at the cell's centre
            Gp = [PAp.solve(P * Bpj) * Rp for Bpj in Bp]
        except ZeroDivisionError:
            return None
        # every float the bounds below need, extracted at once (a parameter of zero radius drops out)
        live = [j for j in range(k) if r[j] > 0]
        nl = len(live)
        rl = r[live]
        Lm = self._flint.arb_mat(n, n, Linv.reshape(-1).tolist())
        LmT = Lm.transpose()
        centre = Rp if inverse_ratio else self._eye - Rp
        mid, rad = _mid_rad(Lm * A * LmT, centre, dR, *[Lm * B[j] * LmT for j in live], *[Gp[j] for j in live],
                            *[dG[j] for j in live])
        am, ar = mid[0], rad[0]
        m, pr = mid[1], rad[1]
        tm, tr = mid[2], rad[2]
        dm, dr = mid[3:3 + nl] * rl[:, None, None], rad[3:3 + nl] * rl[:, None, None]
        gm, gr = mid[3 + nl:3 + 2 * nl], rad[3 + nl:3 + 2 * nl]
        hm, hr = mid[3 + 2 * nl:], rad[3 + 2 * nl:]
        # ρ ≥ ‖L⁻¹ΔL⁻ᵀ‖₂ / λ_min(L⁻¹AL⁻ᵀ): λ_min ≥ 1 − ‖L⁻¹AL⁻ᵀ − I‖₂ (which also proves A positive definite);
        # ‖L⁻¹ΔL⁻ᵀ‖₂ is convex in d, largest at a vertex of the box
        lam, norm, rho = _rho(am, ar, dm, dr)
        if rho is None:
            return None
        # the quadratic term: Σ_a r_a² |H_a G_a| + Σ_{a<b} r_a r_b |H_a G_b + H_b G_a|; the cubic remainder
        pairs = [(a, b) for ia, a in enumerate(live) for b in live[ia:]]
        MR = M * R
        quads = [H[a] * G[b] if a == b else H[a] * G[b] + H[b] * G[a] for a, b in pairs]
        mags = _magnitudes([x for T in quads for x in T.entries()]
                           + [Ainv[i, i] for i in range(n)] + [MR[i, i] for i in range(n)])
        weights = np.array([r[a] * r[b] for a, b in pairs])[:, None, None]
        terms = mags[:len(pairs) * n * n].reshape(len(pairs), n, n) * weights
        quad = terms.sum(axis=0)
        diag = mags[len(pairs) * n * n:]
        ab = np.outer(np.sqrt(diag[:n]), np.sqrt(diag[n:]))
        cubic = rho ** 3 / (1 - rho) * ab
        extra = (np.minimum(quad, rho ** 2 * ab) + cubic) * (1 + 1e-12)  # |(K²R)_il| ≤ ρ² √(A⁻¹)_ii √(MA⁻¹M)_ll too
        # the multilinear part in (x, d): at the centre; −Ṙ (x − x_c); G_j(x_c)(d_j − c_j); Ġ_j (x − x_c)(d_j − c_j)
        # (G_j(x) = G_j(x_c) + Ġ_j(ξ)(x − x_c)). Φ = M̃ₐ = I − R, or I − M̃ₐ = R
        sign = -1.0 if inverse_ratio else 1.0
        rx = float(cell.R.rad())
        rxl = (rx * rl)[:, None, None]
        coef = np.concatenate([(-sign * rx) * tm[None], sign * gm * rl[:, None, None], sign * hm * rxl])
        crad = np.concatenate([rx * tr[None], gr * rl[:, None, None], hr * rxl])
        bound = _vertex_row_sums(m, pr, coef, crad, _expansion_signs(nl), extra)
        if not np.all(np.isfinite(bound)):
            return None
        # where to split: time shrinks the remainders of Ṙ and Ġ; a parameter its share of the quadratic term, and
        # the one of the largest relative radius the cubic term
        i = int(np.argmax(bound))
        contrib = np.zeros(1 + k)
        contrib[0] = crad[0, i].sum() + crad[1 + nl:, i].sum()
        for (a, b), t in zip(pairs, terms[:, i].sum(axis=1)):
            contrib[1 + a] += t / 2
            contrib[1 + b] += t / 2
        if nl and norm > 0:
            contrib[1 + live[int(np.argmax(np.abs(dm).sum(axis=(1, 2))))]] += cubic[i].sum()
        return float(np.max(bound)), int(np.argmax(contrib)) - 1

    # -- points (lower bounds) -----------------------------------------------------------------
    def dq_point(self, point, D, E=None, *, qdd=None, Qc=None, disturbance=None):
        """δq at one point, directly from (5.3.5): M_a(q_c)⁻¹ (Q_a(q_c, q̇_c) + d + Qᶜ) − q̈ (E: the error (e, ė));
        ``qdd``, ``Qc``: a branch's nominal terms instead of the point's; ``disturbance``: d, a vector of floats
        (none: 0)."""
        n = self.n
        qdd = point.qdd if qdd is None else qdd
        Qc = point.Qc if Qc is None else Qc
        Y = point.Y if E is None else [y + e for y, e in zip(point.Y, E)]
        Ma, Qa, _, _ = self._actual_terms(Y, point.T, D)
        rhs = Qa + self._mat(n, 1, Qc)
        if disturbance is not None:
            rhs = rhs + self._mat(n, 1, [float(x) for x in disturbance])
        x = Ma.solve(rhs)
        return [x[i, 0] - qdd[i] for i in range(n)]

    def worst_disturbance(self, point, D, E, values) -> list:
        """The constant disturbance d, ‖d‖∞ = D, that pushes the largest |δq_i| of ``values`` (δq at the point
        without it) furthest: d_j = D sign(δq_i) sign((M_a⁻¹)_ij) (floats)."""
        Y = point.Y if E is None else [y + e for y, e in zip(point.Y, E)]
        Ma = self._actual_terms(Y, point.T, D)[0]
        inv = Ma.solve(self._eye)
        i = max(range(self.n), key=lambda j: float(values[j].abs_upper()))
        s = 1.0 if float(values[i].mid()) >= 0 else -1.0
        return [s * self.disturbance * (1.0 if float(inv[i, j].mid()) >= 0 else -1.0) for j in range(self.n)]

    def mtilde_screen(self, point, Ds, E=None, inverse_ratio: bool = False):
        """‖M̃ₐ‖∞ (or ‖I − M̃ₐ‖∞) at one time for many parameter points ``Ds`` (V, k), in floating point.

        Only for choosing where to evaluate a lower bound rigorously (:meth:`mtilde_point`); NaN where M_a
        is singular in floating point.
        """
        n = self.n
        Y = [float(y.mid()) for y in point.Y]
        if E is not None:
            Y = [y + float(e.mid()) for y, e in zip(Y, E)]
        Ds = np.asarray(Ds, dtype=float)
        V = Ds.shape[0]
        vals = self._actual_float(*Y, float(point.T.mid()), *self._p_float, *Ds.T)
        out = np.empty((V, 2 * n * n))
        for i, v in enumerate(vals):
            out[:, i] = v  # a constant entry broadcasts
        vals = out
        Ma, dM = vals[:, :n * n].reshape(V, n, n), vals[:, n * n:].reshape(V, n, n)
        with np.errstate(all="ignore"):
            try:
                Mt = np.linalg.solve(Ma, dM)
            except np.linalg.LinAlgError:
                return np.full(V, np.nan)
        if inverse_ratio:
            Mt = np.eye(n) - Mt
        return np.abs(Mt).sum(axis=-1).max(axis=-1)

    def mtilde_point(self, point, D, E=None):
        """M̃ₐ = M_a(q_c)⁻¹ δM(q_c) at one point."""
        Y = point.Y if E is None else [y + e for y, e in zip(point.Y, E)]
        Ma, _, dM, _ = self._actual_terms(Y, point.T, D)
        return Ma.solve(dM)

    def worst_error(self, point, D, i: int, tube):
        """An error (e, ė) at a corner of the tube that pushes |δq_i| up (first order), as balls."""
        arb = self._flint.arb
        n = self.n
        J = self._jac(*point.Y, point.T, *self.p_values, *D)
        row = np.array([float(J[i * 2 * n + j].mid()) for j in range(2 * n)])
        for k in range(n):
            row[k] -= sum(float(J[2 * n * n + k * n * n + i * n + j].mid()) * float(point.qdd[j].mid())
                          for j in range(n))
        base = self.dq_point(point, D)[i]
        sign = 1.0 if float(base.mid()) >= 0 else -1.0
        radii = [tube[0]] * n + [tube[1]] * n
        return [arb(sign * (1.0 if r >= 0 else -1.0) * rad) for r, rad in zip(row, radii)]


@dataclass
class Point:
    """The nominal motion at one time: state, time, q̈ and Qᶜ as balls."""

    t: float
    Y: list
    T: object
    qdd: list
    Qc: list


@dataclass
class Branch:
    """One branch of the nominal terms on a time cell: q̈ over the cell, dq̈/dx, and q̈, Qᶜ at the centre."""

    qdd: list
    slope: list = None
    point_qdd: list = None
    point_Qc: list = None


@dataclass
class TimeCell:
    """One time cell: step k, local times [x0, x1]; its enclosures (state, q̈ per branch) and centre point."""

    k: int
    x0: float
    x1: float
    Y: list = None
    T: object = None
    V: list = None
    ht: object = None
    R: object = None
    branches: list = None
    point: Point = None
    both: bool = False
    cache: dict = field(default_factory=dict)  # what the enclosures keep of this time cell

    @property
    def qdd(self):
        """q̈ over the cell (the branches joined); None: not enclosed."""
        if not self.branches:
            return None
        b = self.branches
        return b[0].qdd if len(b) == 1 else [x.union(y) for x, y in zip(b[0].qdd, b[1].qdd)]

    @property
    def slope(self):
        """dq̈/dx of a single smooth branch (None with two branches or none)."""
        return self.branches[0].slope if self.branches and len(self.branches) == 1 else None


def state_cell(ip: Interpolant, k: int, x0: float, x1: float) -> TimeCell:
    """A time cell with its state and time only (and the state at its centre): what M̃ₐ needs, not q̈."""
    arb = require_flint().arb
    cell = TimeCell(k, x0, x1)
    cell.Y, cell.T = ip.state(k, x0, x1), ip.time(k, x0, x1)
    c, r = 0.5 * (x0 + x1), 0.5 * (x1 - x0)  # dyadic: exact
    cell.V = [_horner(dp, arb(c, r)) for dp in ip.dcoef[k]]
    cell.ht = arb(ip.t[k + 1]) - arb(ip.t[k])
    cell.R = arb(0, r)
    Y, T = ip.point(k, c)
    cell.point = Point(float(T.mid()), Y, T, None, None)
    return cell


def time_cell(model: EnclosureModel, ip: Interpolant, k: int, x0: float, x1: float) -> TimeCell:
    """Enclose the nominal motion on step k, x ∈ [x0, x1]: state, q̈ per branch (centred form in time, met
    with the direct enclosure), dq̈/dx, and the centre point (for the centred forms and the lower bounds).

    Where A may vanish in the cell (one gated constraint row), two branches: the continuous formula and
    Qᶜ = 0, each smooth, each in its centred form (docs/theory/certificate.md).
    """
    arb = model._flint.arb
    cell = TimeCell(k, x0, x1)
    c, r = 0.5 * (x0 + x1), 0.5 * (x1 - x0)
    cell.Y, cell.T = ip.state(k, x0, x1), ip.time(k, x0, x1)
    X = arb(c, r)
    cell.V = [_horner(dp, X) for dp in ip.dcoef[k]]
    cell.ht = arb(ip.t[k + 1]) - arb(ip.t[k])
    cell.R = arb(0, r)
    cell.point = point_at(model, ip, k, c)  # at x = c exactly: the centred forms need the cell's own centre
    first = model.nominal(cell.Y, cell.T, "continuous")
    if first is None:
        return cell
    cell.both = first[2]
    cell.branches = []
    for name in ("continuous", "zero") if cell.both else ("continuous",):
        direct = first if name == "continuous" else model.nominal(cell.Y, cell.T, "zero")
        pt = None if cell.point is None else model.nominal(cell.point.Y, cell.point.T, name)
        if direct is None:
            cell.branches = []
            return cell
        branch = Branch(direct[0])
        if pt is not None:
            branch.point_qdd, branch.point_Qc = pt[0], pt[1]
            slope = model.nominal_slope(cell.Y, cell.T, cell.V, cell.ht, direct[0], zero=name == "zero")
            if slope is not None:
                branch.slope = slope
                branch.qdd = [_meet(a, p + s * cell.R) for a, p, s in zip(direct[0], pt[0], slope)]
        cell.branches.append(branch)
    return cell


def point_at(model: EnclosureModel, ip: Interpolant, k: int, x: float):
    """The nominal motion at local time x of step k (None where M may be singular); ``t`` is that time rounded
    to a float (what a run is asked for to reproduce a value there)."""
    Y, T = ip.point(k, x)
    nom = model.nominal(Y, T)
    if nom is None:
        return None
    return Point(float(T.mid()), Y, T, nom[0], nom[1])
