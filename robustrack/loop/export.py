"""The designed controller as standalone C: τ(t, q, q̇) = Qᶜ(t) + M(q) u(t, e, ė, z), generated, not written.

:meth:`robustrack.loop.Controller.export` (and ``robustrack export NAME -o DIR``) writes four files
(docs/guide/robot.md, "Export to C"):

- ``robustrack_controller.h`` / ``.c`` — C99 that needs libm only, allocates nothing and compiles as C and as C++:
  ``rt_n()``, ``rt_nz()``, ``rt_t0()``, ``rt_horizon()``, ``rt_reference(t, q, qd)``,
  ``rt_torque(t, q, qd, tau)`` and ``rt_torque_z(t, q, qd, z, tau)`` (non-zero outside the horizon), and for a loop
  that measures positions only ``rt_update(state, t, q, tau)`` with the sensor model's velocity estimator
  (:func:`robustrack.loop.sensor.estimate_velocity`, traced) in a caller-owned ``rt_estimator``;
- ``main.c`` — a fixed-rate loop calling it, timed; ``CMakeLists.txt`` — builds both.

Every algorithm in the C comes from the one source the Python paths run, printed by sympy's C printer
(``sympy.printing.c``):

- M(q, t), Q(q, q̇, t), A, b of plants and constraints with sympy forms (:mod:`robustrack.symbolic`) — the same
  expressions :mod:`robustrack.compiled.codegen` generates the numba functions from, common subexpressions
  eliminated (``sympy.cse``);
- M, Q of a URDF robot and A, b of frame constraints — the rigid-body algorithms of
  :mod:`robustrack.compiled.rigid_body` (``crba``, ``given_force``, ``frame_rows`` and the helpers they call: the
  Python functions of the numba kernels) run over the robot's data on traced numbers (:mod:`robustrack.loop.trace`):
  the robot's numbers become C constants, every operation on the state a line of straight-line code;
- M, Q of a plant from your functions (:meth:`Plant.from_functions <robustrack.plants.Plant.from_functions>`) — your
  functions, traced the same way, their parameters C constants;
- the reference — :func:`robustrack.tracking.integrate.dop853_interpolant` (the Horner scheme of
  :meth:`~robustrack.tracking.integrate.NominalSolution.__call__`) traced with sympy symbols, over a table of the
  nominal run's steps (``t``, ``y``, ``F``: the run itself, not a resampling);
- the law u — the compensator's law function of :mod:`robustrack.controllers.laws` (GSS, GD, GD-bar, the linear
  baselines) and its control function :func:`~robustrack.controllers.laws.g_value`, traced;
- Qᶜ — the fundamental equation in its full-row-rank form, Qᶜ = Aᵀ (A M⁻¹ Aᵀ)⁻¹ (b − A M⁻¹ Q) (equal to the
  general form M^{1/2} (A M^{-1/2})⁺ (b − A M⁻¹ Q) when A has full row rank; docs/theory/fundamental-equation.md),
  by a Cholesky factorization and triangular solves written once here (:func:`constraint_force_program`), traced and
  unrolled for the plant's n and m.

Branches. M (and the law) are evaluated at the measured state: a branch on it cannot be traced and is refused. Q, A
and b are evaluated at the nominal state only: a branch on it that goes the same way at every step of the nominal
run (the orientation error's small-angle branch of ``rigid_body._log3``: the run holds the orientation) is kept,
and the C checks it at every call (``rt_torque`` returns 3 where the nominal state would take the other side); a
branch the run crosses is refused, naming the source line.

Hand-written C is glue only: the step search of the reference (a binary search), the calls in order, the horizon
and branch checks. Refused, with the reason (:class:`~robustrack.errors.ExportError`): a plant or constraint without
a form (its ``no_form_reason``: a robot with a joint the kernels do not take, parameters with sample axes),
your functions doing what the tracer cannot follow (a branch in M, a branch the run crosses, ``math``, scipy,
``np.linalg``, ``float()``), compensators or control functions of your own, and an A that loses row rank along the
nominal run (:class:`~robustrack.errors.RankConditionError`: the pseudo-inverse would be needed at run time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ExportError, RankConditionError

__all__ = ["export_controller", "CExport", "FILES", "RANK_RCOND"]

#: The files :func:`export_controller` writes.
FILES = ("robustrack_controller.h", "robustrack_controller.c", "main.c", "CMakeLists.txt")

#: A is refused as rank-deficient where σ_min(A) ≤ RANK_RCOND · (the largest σ_max(A) along the run) at a step of
#: the nominal run (relative to the run's scale, so a single row that vanishes is caught too).
RANK_RCOND = 1e-10


@dataclass(frozen=True)
class CExport:
    """What :func:`export_controller` wrote.

    Attributes
    ----------
    folder : Path
    files : tuple of Path
        The four files (:data:`FILES`).
    n, m, nz : int
        Coordinates, constraint rows, the compensator's states.
    steps : int
        The nominal run's steps tabulated for the reference.
    horizon : (float, float)
    """

    folder: Path
    files: tuple
    n: int
    m: int
    nz: int
    steps: int
    horizon: tuple
    #: "refuse" or "hold" past the horizon; the effort limits τ is clipped to (None: none)
    beyond: str = "refuse"
    limits: tuple | None = None


# --------------------------------------------------------------------------- #
# the parts of the C, each from its one source
# --------------------------------------------------------------------------- #
@dataclass
class _Code:
    """A C function's body: ``outputs`` (C target, sympy expression) after ``steps`` (``const double w = ...;``),
    the ``guards`` checked before the outputs are written (``return 3`` where one fails), common subexpressions
    eliminated first where ``cse`` (expressions grown whole: the sympy forms)."""

    outputs: list
    steps: list = field(default_factory=list)
    guards: list = field(default_factory=list)
    cse: bool = False


def _objects(items) -> np.ndarray:
    """A 1-d object array of ``items`` (numpy would make a 2-d array of Traced values that are sequences)."""
    items = list(items)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _traced_code(program, outputs) -> _Code:
    """The :class:`_Code` of traced outputs (C target, Traced or number): the steps they and the guards need."""
    from .trace import expression

    outputs = [(target, expression(x)) for target, x in outputs]
    return _Code(outputs, program.needed(e for _, e in outputs), list(program.guards))


class _TracedVector:
    """A law's ``e``, ``ed``, ``z`` (read) or ``u`` (written), indexed ``v[..., i]`` as the laws do (an element, not
    numpy's 0-d array)."""

    def __init__(self, items):
        self.items = list(items)
        self.shape = (len(self.items),)
        self.ndim = 1

    def __getitem__(self, key):
        return self.items[key[-1] if isinstance(key, tuple) else key]

    def __setitem__(self, key, value):
        self.items[key[-1] if isinstance(key, tuple) else key] = value


class _TracedFunction:
    """A built-in control function f(x) = g(x/ε) of the law's :class:`~robustrack.controllers.laws.ControlCode`,
    g traced through :func:`~robustrack.controllers.laws.g_value`."""

    def __init__(self, code, eps, alpha_c, p):
        self.kind, self.eps, self.alpha_c, self.p = code.kind, eps, alpha_c, p

    def g(self, x):
        """g(x) traced (:func:`~robustrack.controllers.laws.g_value`)."""
        from ..controllers.laws import g_value

        return g_value(self.kind, x, self.alpha_c, self.p)


def _law_code(call, name: str, q, qd, y, z):
    """u of the compensator's law traced on e = q − y[:n], ė = qd − y[n:], z and the parameters ``rt_law_p[i]``
    (which carry their values: a law may branch on them, not on the state).

    Returns
    -------
    (_Code, ndarray of the parameter values)
    """
    from ..controllers.laws import ControlCode
    from .trace import Program, Untraceable

    n = len(q)
    f = call.f if call.f is not None else ControlCode(0, 1.0, 1.0, 1.0)
    values = np.concatenate([np.asarray(call.params, dtype=float).reshape(-1), [f.eps, f.alpha_c, f.p]])
    prog = Program()
    params = _objects(prog.traced(s, v, fixed=True) for s, v in zip(_symbols("rt_law_p", values.size), values))
    k = len(call.params)
    fn = _TracedFunction(f, params[k], params[k + 1], params[k + 2])
    e = _TracedVector(prog.traced(q[i] - y[i]) for i in range(n))
    ed = _TracedVector(prog.traced(qd[i] - y[n + i]) for i in range(n))
    u = _TracedVector([0.0] * n)
    try:
        call.law(params[:k], fn, e, ed, _TracedVector(prog.traced(s) for s in z), u, None, None, None, False)
    except Untraceable as exc:
        raise ExportError(f"export: the compensator {name!r}'s law ({call.law.__name__}) {exc}; a traced law may "
                          "branch on its parameters only — write a branch on the state with np.sign, np.maximum or "
                          "np.minimum.") from None
    return _traced_code(prog, [(f"u[{i}]", u.items[i]) for i in range(n)]), values


def _robot_code(form, slot: str, q, qd, t, sample):
    """M (``slot = "mass"``), Q (``"force"``) or A, b (``"ab"``) of a robot's :class:`~robustrack.symbolic.KernelForm`:
    the rigid-body algorithm of :mod:`robustrack.compiled.rigid_body` run on traced numbers over the robot's data.

    M is traced on the measured q (no values: no branch on it); Q and A, b on the nominal state, with its values at
    every step of the nominal run (``sample`` = (t, y) of the run), so a branch on the state that goes the same way
    all along the run (the orientation error's small-angle branch) is kept as a guard.

    Returns
    -------
    _Code
        Outputs ``M[i*n + j]``, ``Q[i]`` or ``A[r*n + j]`` and ``b[r]``.
    """
    from .trace import RIGID_BODY, Program, Untraceable, robot_rows, rigid_body

    import sympy as sp

    data = np.array(form.values, dtype=float)
    n = len(q)
    t_s, y_s = sample
    prog = Program(times=t_s)
    known = slot != "mass"
    qs = _objects(prog.traced(q[i], y_s[:, i] if known else None) for i in range(n))
    qds = _objects(prog.traced(qd[i], y_s[:, n + i]) for i in range(n))
    algorithm = rigid_body(slot)
    try:
        if slot == "mass":
            M = np.full((n, n), 0.0, dtype=object)
            algorithm(data, qs, M)
            return _traced_code(prog, [(f"M[{i * n + j}]", M[i, j]) for i in range(n) for j in range(n)])
        if slot == "force":
            Q = np.full(n, 0.0, dtype=object)
            algorithm(data, qs, qds, Q)
            return _traced_code(prog, [(f"Q[{i}]", Q[i]) for i in range(n)])
        _, m = robot_rows(data)
        targets = np.zeros(0)
        if form.targets:  # the moving targets' x, ẋ, ẍ: sympy expressions in t, traced as given
            exprs, t_form = form.targets
            targets = _objects(prog.traced(e.xreplace({t_form: t}),
                                           np.broadcast_to(sp.lambdify(t_form, e, "numpy")(t_s), t_s.shape))
                               for e in exprs)
        out = np.full(m * n + m, 0.0, dtype=object)
        algorithm(qs, qds, data, targets, out, np.full(2 * m, 0.0, dtype=object))
        return _traced_code(prog, [(f"A[{i}]", out[i]) for i in range(m * n)]
                            + [(f"b[{r}]", out[m * n + r]) for r in range(m)])
    except Untraceable as exc:
        raise ExportError(f"export: the rigid-body algorithm {RIGID_BODY[slot]} (robustrack.compiled.rigid_body) "
                          f"{exc}; the C export cannot follow it there.") from None


def _function_code(form, slot: str, q, qd, t, sample):
    """M (``slot = "mass"``) or Q (``"force"``) of a plant from your functions (:meth:`Plant.from_functions
    <robustrack.plants.Plant.from_functions>`): the function run on traced q (q̇, t) with its parameters as numbers
    (they become C constants). M is traced on the measured q (no values), Q on the nominal state with its values at
    every step of the nominal run (``sample``: a branch on it that goes one way all along the run is a guard).

    Returns
    -------
    _Code
    """
    from ..errors import RobustrackError
    from .trace import Program, Untraceable, traceable

    name = "M" if slot == "mass" else "Q"
    fn = form.functions[name]
    wanted, takes_t = form.takes[name]
    n = len(q)
    params = {}
    for key, offset, shape in form.layout:
        size = int(np.prod(shape, dtype=int))
        value = np.array(form.values[offset:offset + size], dtype=float).reshape(shape)
        params[key] = float(value) if value.ndim == 0 else value
    t_s, y_s = sample
    prog = Program(times=t_s)
    known = slot != "mass"
    states = [_objects(prog.traced(q[i], y_s[:, i] if known else None) for i in range(n))]
    if slot == "force":
        states.append(_objects(prog.traced(qd[i], y_s[:, n + i]) for i in range(n)))
    kwargs = {k: params[k] for k in wanted}
    if takes_t:
        kwargs["t"] = prog.traced(t, t_s if known else None)
    label = getattr(fn, "__qualname__", None) or repr(fn)
    whose = f"your function `{label}` (the {name} given to Plant.from_functions)"
    try:
        value = np.asarray(traceable(fn)(*states, **kwargs), dtype=object)
    except Untraceable as exc:
        why = ("M is evaluated at the measured q, so the C cannot take a branch on q or t chosen in advance"
               if slot == "mass" else "the C follows one side of a branch on the nominal state, only where the "
               "nominal run stays on it")
        raise ExportError(f"export: {whose} {exc}. {why[0].upper() + why[1:]}: write it without the branch (np.sign, "
                          "np.maximum, np.minimum, np.abs) or keep this design in Python.") from None
    except RobustrackError:
        raise
    except Exception as exc:  # noqa: BLE001 - what the user's code raised on traced numbers: said whole
        raise ExportError(f"export: {whose} does something the C export cannot trace — {type(exc).__name__}: "
                          f"{exc}. The export runs it on traced numbers: write it with Python arithmetic, numpy's "
                          "ufuncs (np.sin, np.cos, np.sqrt, np.tanh, np.sign, np.maximum, …) and arrays made with "
                          "np.array / np.zeros / np.empty (math.*, scipy, np.linalg and float() take floats only).") \
            from None
    tail = (n, n) if slot == "mass" else (n,)
    if value.size != int(np.prod(tail)):
        raise ExportError(f"export: {whose} returns shape {value.shape}; the plant needs {tail}.")
    value = value.reshape(tail)
    if slot == "mass":
        return _traced_code(prog, [(f"M[{i * n + j}]", value[i, j]) for i in range(n) for j in range(n)])
    return _traced_code(prog, [(f"Q[{i}]", value[i]) for i in range(n)])


# --------------------------------------------------------------------------- #
# the fundamental equation, written once over sympy symbols
# --------------------------------------------------------------------------- #
def _cholesky(S):
    """The lower Cholesky factor L of the symmetric positive definite S (lists), L Lᵀ = S."""
    n = len(S)
    L = [[0.0] * n for _ in range(n)]
    for j in range(n):
        L[j][j] = np.sqrt(S[j][j] - sum(L[j][k] * L[j][k] for k in range(j)))
        for i in range(j + 1, n):
            L[i][j] = (S[i][j] - sum(L[i][k] * L[j][k] for k in range(j))) / L[j][j]
    return L


def _forward(L, v):
    """L⁻¹ v (L lower triangular)."""
    x = []
    for i in range(len(L)):
        x.append((v[i] - sum(L[i][k] * x[k] for k in range(i))) / L[i][i])
    return x


def _backward(L, v):
    """L⁻ᵀ v (L lower triangular)."""
    n = len(L)
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (v[i] - sum(L[k][i] * x[k] for k in range(i + 1, n))) / L[i][i]
    return x


def constraint_force_program(M, Q, A, b):
    """Qᶜ = Aᵀ (A M⁻¹ Aᵀ)⁻¹ (b − A M⁻¹ Q) for a full-row-rank A (W 5.2.11), on any numbers: floats, or
    :class:`~robustrack.loop.trace.Traced` ones, which record it as straight-line steps for the C.

    With M = L Lᵀ, G = L⁻¹ Aᵀ and h = L⁻¹ Q: A M⁻¹ Aᵀ = Gᵀ G and A M⁻¹ Q = Gᵀ h, so two Cholesky
    factorizations (n × n, m × m) and triangular solves. Equal to the general form M^{1/2} (A M^{-1/2})⁺
    (b − A M⁻¹ Q) when A has full row rank (docs/theory/fundamental-equation.md); undefined (NaN) otherwise.

    Parameters
    ----------
    M : list of lists (n × n)
    Q : list (n)
    A : list of lists (m × n)
    b : list (m)

    Returns
    -------
    list (n)
        Qᶜ.
    """
    n, m = len(Q), len(b)
    if m == 0:
        return [0.0] * n
    L = _cholesky(M)
    h = _forward(L, Q)
    G = [_forward(L, A[r]) for r in range(m)]  # the columns of L⁻¹ Aᵀ
    S = [[sum(G[r][k] * G[s][k] for k in range(n)) for s in range(m)] for r in range(m)]
    rhs = [b[r] - sum(G[r][k] * h[k] for k in range(n)) for r in range(m)]
    Ls = _cholesky(S)
    lam = _backward(Ls, _forward(Ls, rhs))
    return [sum(A[r][j] * lam[r] for r in range(m)) for j in range(n)]


# --------------------------------------------------------------------------- #
# printing C
# --------------------------------------------------------------------------- #
_PRINTER = None


def _c(expr) -> str:
    """sympy's C99 printer (``sympy.printing.c``), one printer for every expression (making one costs ~1 ms), the
    operands in the order traced (``order="none"``: no sorting)."""
    global _PRINTER
    if _PRINTER is None:
        from sympy.printing.c import C99CodePrinter

        _PRINTER = C99CodePrinter({"order": "none"})
        _PRINTER._not_supported, _PRINTER._number_symbols = set(), set()
    text = _PRINTER._print(expr)  # doprint's core, without its per-call set-up
    if _PRINTER._not_supported or _PRINTER._number_symbols:
        what = sorted(map(str, _PRINTER._not_supported | {s for s, _ in _PRINTER._number_symbols}))
        _PRINTER = None
        raise ExportError(f"export: sympy's C printer cannot print {', '.join(what)} as C99; this design cannot be "
                          "exported.")
    return text


def _body(code: _Code) -> str:
    """C statements of a :class:`_Code`: its steps (``const double w = ...;``), common subexpressions
    (``const double x<k> = ...;``) where it asks, the guards (``if (!(cond)) return 3;``) and ``target = expr;``."""
    import sympy as sp

    targets = [t for t, _ in code.outputs]
    exprs = [sp.sympify(e) for _, e in code.outputs]
    lines = [f"    const double {s} = {_c(e)};" for s, e in code.steps]
    if code.cse:
        replacements, exprs = sp.cse(exprs, symbols=sp.numbered_symbols("x"), optimizations="basic")
        lines += [f"    const double {s} = {_c(e)};" for s, e in replacements]
    lines += [f"    if (!({_c(g)})) return 3; /* the branch traced at {where} */" for g, where in code.guards]
    lines += [f"    {t} = {_c(e)};" for t, e in zip(targets, exprs)]
    return "\n".join(lines)


def _array(name: str, values) -> str:
    """``static const double name[..] = {...};`` (nested braces for each axis) with every double printed to
    round-trip."""
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).all():
        raise ExportError(f"export: {name} holds values that are not finite; the design cannot be exported.")

    def braces(a, indent):
        if a.ndim == 1:
            return "{" + ", ".join(repr(float(v)) for v in a) + "}"
        inner = ",\n".join(" " * (indent + 4) + braces(row, indent + 4) for row in a)
        return "{\n" + inner + "\n" + " " * indent + "}"

    shape = "".join(f"[{k}]" for k in values.shape)
    return f"static const double {name}{shape} = {braces(values, 0)};\n"


def _symbols(prefix: str, count: int):
    import sympy as sp

    return [sp.Symbol(f"{prefix}[{i}]", real=True) for i in range(count)]


def _form_of(obj, what: str):
    """The object's form for code generation (``codegen()``), or the export refused with the reason."""
    form = obj.codegen() if callable(getattr(obj, "codegen", None)) else None
    if form is None:
        why = getattr(obj, "no_form_reason", None) or "has no form for code generation (codegen() gives None)"
        why = why if why.startswith(("has", "is")) else f"has none: {why}"
        raise ExportError(f"export: the {what} {type(obj).__name__} cannot be exported to C: it {why}. The C export "
                          "covers plants with sympy expressions (LagrangianPlant, the built-in symbolic plants), URDF "
                          "robots and plants from your functions, and constraints with sympy expressions or frame "
                          "constraints; run this design through robustrack.loop.Controller in Python.")
    return form


def _refused_form(obj, what: str, form):
    return ExportError(f"export: the {what} {type(obj).__name__} has a compiled form the C export does not know "
                       f"({type(form).__name__} {getattr(form, 'key', '')!r}); run this design through "
                       "robustrack.loop.Controller in Python.")


def _plant_codes(plant, q, qd, t, sample):
    """M(q, t) and Q(q, q̇, t) of the nominal plant as C bodies, from its one source: its sympy expressions, the
    rigid-body algorithms over its data (a URDF robot) or your functions (a plant from functions).

    Returns
    -------
    (_Code, _Code, ndarray)
        M (``M[i*n + j]``), Q (``Q[i]``) and the parameter table ``rt_plant_p`` their expressions read.
    """
    from ..symbolic import KernelForm, SymbolicForm

    form = _form_of(plant, "nominal plant")
    n = len(q)
    if isinstance(form, SymbolicForm):
        Mx, Qx = _built(form, q, qd, t, "rt_plant_p")
        if any(s.name.startswith("qd[") for s in Mx.free_symbols):
            raise ExportError("export: the plant's mass matrix depends on the velocities; M(q, t) is required.")
        return (_Code([(f"M[{i * n + j}]", Mx[i, j]) for i in range(n) for j in range(n)], cse=True),
                _Code([(f"Q[{i}]", Qx[i]) for i in range(n)], cse=True), form.values)
    if isinstance(form, KernelForm) and form.kernels.get("mass") == "mass" and form.kernels.get("force") == "force":
        return (_robot_code(form, "mass", q, qd, t, sample), _robot_code(form, "force", q, qd, t, sample),
                np.zeros(0))
    if hasattr(form, "functions") and hasattr(form, "takes"):
        return (_function_code(form, "mass", q, qd, t, sample), _function_code(form, "force", q, qd, t, sample),
                np.zeros(0))
    raise _refused_form(plant, "nominal plant", form)


def _constraint_code(constraint, q, qd, t, sample):
    """A(q, q̇, t), b(q, q̇, t) as a C body, from the constraint's sympy expressions or, for frame constraints, the
    rigid-body algorithm ``frame_rows`` over the robot's data.

    Returns
    -------
    (_Code, int, ndarray)
        The body (``A[r*n + j]``, ``b[r]``), m and the parameter table ``rt_con_p``.
    """
    from ..symbolic import KernelForm, SymbolicForm
    from .trace import robot_rows

    form = _form_of(constraint, "constraint")
    n = len(q)
    if isinstance(form, SymbolicForm):
        Ax, bx = _built(form, q, qd, t, "rt_con_p")
        m = Ax.shape[0]
        return (_Code([(f"A[{r * n + j}]", Ax[r, j]) for r in range(m) for j in range(n)]
                      + [(f"b[{r}]", bx[r]) for r in range(m)], cse=True), m, form.values)
    if isinstance(form, KernelForm) and "ab" in form.kernels and form.key.startswith("frames"):
        return _robot_code(form, "ab", q, qd, t, sample), robot_rows(form.values)[1], np.zeros(0)
    raise _refused_form(constraint, "constraint", form)


def _built(form, q, qd, t, prefix: str):
    """``form.build`` on the C-named symbols, the parameters renamed ``prefix[i]``: (X, Y) as lists."""
    import sympy as sp

    X, Y, P = form.build(q, qd, t)
    rename = {s: sp.Symbol(f"{prefix}[{i}]", real=True) for i, s in enumerate(P)}
    X, Y = sp.Matrix(X).xreplace(rename), sp.Matrix(Y).xreplace(rename)
    return X, Y


def _law_call(compensator, n: int):
    """The compensator's :class:`~robustrack.controllers.laws.LawCall`, or the export refused."""
    from ..controllers import laws
    from ..controllers.laws import LawCall, NoParams, no_law, pack

    if compensator is None:
        return LawCall(no_law, pack(NoParams(), n), None, 0)
    name = getattr(compensator, "name", type(compensator).__name__)
    call = compensator.kernel_law(n)
    if call is None:
        raise ExportError(f"export: the compensator {name!r} has no law the C export can trace (a compensator or "
                          "control function of your own, or one without a compiled law); the export covers the "
                          "built-in compensators (gss, gd, gdbar, computed-torque, lqr) with the built-in control "
                          "functions.")
    if getattr(call.law, "__module__", None) != laws.__name__:
        raise ExportError(f"export: the compensator {name!r} runs a law of your own ({call.law.__name__}); the C "
                          "export traces the built-in laws of robustrack.controllers.laws only (not yet yours).")
    return call


def _estimator_code(n: int, cutoff) -> "_Code":
    """v of :func:`robustrack.loop.sensor.estimate_velocity` traced on this and the previous measured q, the previous
    estimate and dt (the filter's gain a function of dt, as :meth:`~robustrack.loop.Controller.update` computes it)."""
    import sympy as sp

    from .sensor import estimate_velocity
    from .trace import Program, traceable

    prog = Program()
    q, q_prev, v_prev = (_objects(prog.traced(s) for s in _symbols(name, n)) for name in ("q", "q_prev", "v_prev"))
    v = traceable(estimate_velocity)(q, q_prev, v_prev, prog.traced(sp.Symbol("dt", real=True)), cutoff)
    return _traced_code(prog, [(f"v[{i}]", v[i]) for i in range(n)])


def _estimator_name(sensor) -> str:
    """The estimator the C runs, in words (the sensor's, or the backward difference where it measures q̇)."""
    if sensor.cutoff is not None:
        return f"filtered difference, cutoff {sensor.cutoff:g} Hz"
    return "backward difference" + (" (the sensor measures qd: a positions-only loop differences q)"
                                    if sensor.velocity == "exact" else "")


def _check_rank(problem, run) -> None:
    """Refuse an A that loses row rank, or an M that is not positive definite, at a step of the nominal run."""
    sol = run.solution
    n = problem.n
    q, qd, t = sol.y[:, :n], sol.y[:, n:], sol.t
    M = np.stack([np.asarray(problem.nominal.mass_matrix(q[j], t[j]), dtype=float) for j in range(t.size)])
    lowest = np.linalg.eigvalsh(M)[:, 0]
    if not np.all(lowest > 0):
        j = int(np.argmin(lowest))
        raise RankConditionError(f"export: the nominal mass matrix is not positive definite at t = {t[j]:.6g} s; "
                                 "the C export factors M by Cholesky (a singular M needs the augmented system, "
                                 "not exported yet).")
    if problem.constraint is None:
        return
    A, _ = problem.constraint.matrices(q, qd, t)
    s = np.linalg.svd(np.asarray(A, dtype=float), compute_uv=False)
    scale = float(s[:, 0].max()) if s.size else 0.0  # the run's largest σ_max: one row vanishing counts too
    bad = s[:, -1] <= RANK_RCOND * scale
    if bad.any():
        j = int(np.argmax(bad))
        raise RankConditionError(
            f"export: the constraint matrix A loses row rank at t = {t[j]:.6g} s of the nominal run (σ_min = "
            f"{s[j, -1]:.3g} ≤ {RANK_RCOND:g} × the run's largest σ_max {scale:.3g}): its rows are dependent (or "
            "vanish) there, and Qᶜ needs the "
            "pseudo-inverse at run time, which the C export does not generate yet. Remove the dependent rows "
            "(keep independent ones) and export again.")


# --------------------------------------------------------------------------- #
# the export
# --------------------------------------------------------------------------- #
def _limits_array(limits, n: int) -> str:
    """``rt_tau_max``: the effort limits each τ is clipped to (``DBL_MAX`` where a joint has none, or without limits:
    a finite τ is never clipped there)."""
    lim = np.full(n, np.inf) if limits is None else np.asarray(limits, dtype=float)
    return ("static const double rt_tau_max[RT_N] = {"
            + ", ".join(repr(float(v)) if np.isfinite(v) else "DBL_MAX" for v in lim) + "};\n")


def export_controller(controller, folder, *, beyond: str | None = None) -> CExport:
    """Write the controller as standalone C99 (module docstring; docs/guide/robot.md, "Export to C").

    Parameters
    ----------
    controller : Controller
        :meth:`robustrack.tracking.TrackingProblem.controller`'s.
    folder : str or Path
        Made if missing; the four files (:data:`FILES`) are written there (replacing earlier ones).
    beyond : {"refuse", "hold"}, optional
        Outside the horizon the C returns 1, or holds the reference of the horizon's end and says so with
        ``RT_HOLDING`` in its status (keyword-only); default the controller's ``beyond``.

    Returns
    -------
    CExport

    Raises
    ------
    ExportError
        A plant or constraint without a form for code generation, your functions doing what the tracer cannot
        follow (module docstring), a compensator or control function of the user's own.
    RankConditionError
        A loses row rank (or M is not positive definite) at a step of the nominal run.
    """
    import sympy as sp

    from .._files import write_atomic
    from ..tracking.integrate import dop853_interpolant
    from .trace import Program

    pb = controller.problem
    n, nz = controller.n, controller.nz
    beyond = controller.beyond if beyond is None else beyond
    if beyond not in ("refuse", "hold"):
        raise ExportError(f"export: `beyond` must be 'refuse' or 'hold'; got {beyond!r}.")
    call = _law_call(pb.compensator, n)
    _form_of(pb.nominal, "nominal plant")
    if pb.constraint is not None:
        _form_of(pb.constraint, "constraint")
    _check_rank(pb, controller.run)

    q, qd, t = _symbols("q", n), _symbols("qd", n), sp.Symbol("t", real=True)
    sol = controller.run.solution
    sample = (sol.t, sol.y)  # the nominal state at every step: a branch on it must go one way at all of them
    mass_code, force_code, plant_values = _plant_codes(pb.nominal, q, qd, t, sample)
    assert not mass_code.guards  # M is traced without values: a branch on q is refused
    mass, force = _body(mass_code), _body(force_code)
    m = 0
    ab = "    (void)A; (void)b;"
    con_values = np.zeros(0)
    if pb.constraint is not None:
        ab_code, m, con_values = _constraint_code(pb.constraint, q, qd, t, sample)
        ab = _body(ab_code)

    prog = Program()
    Ms, Qs, As, bs = _symbols("M", n * n), _symbols("Q", n), _symbols("A", m * n), _symbols("b", m)
    Mt, Qt, At, bt = ([prog.traced(s) for s in symbols] for symbols in (Ms, Qs, As, bs))
    Qc = constraint_force_program([[Mt[i * n + j] for j in range(n)] for i in range(n)], Qt,
                                  [[At[r * n + j] for j in range(n)] for r in range(m)], bt)
    fundamental = _body(_traced_code(prog, [(f"Qc[{i}]", Qc[i]) for i in range(n)]))

    y, z = _symbols("y", 2 * n), _symbols("z", max(nz, 1))[:nz]
    name = getattr(pb.compensator, "name", "none") if pb.compensator is not None else "none"
    law_code, law_values = _law_code(call, name, q, qd, y, z)
    law = _body(law_code)
    us = _symbols("u", n)
    tau = _body(_Code([(f"tau[{i}]", Qs[i] + sum(Ms[i * n + k] * us[k] for k in range(n))) for i in range(n)]))

    estimator = _body(_estimator_code(n, controller.sensor.cutoff))

    coeff = np.array(_symbols("f", 7), dtype=object).reshape(7, 1)
    y0, x = np.array([sp.Symbol("y0", real=True)], dtype=object), sp.Symbol("x", real=True)
    (interp,) = dop853_interpolant(coeff, y0, x)
    interp = f"    return {_c(interp)}"

    steps = sol.F.shape[0]
    t0, t1 = (float(v) for v in pb.t_span)
    F = np.ascontiguousarray(np.transpose(sol.F, (0, 2, 1)))  # (N, 2n, 7): a component's 7 coefficients together
    source = _SOURCE.format(
        n=n, m=m, nz=nz, steps=steps, t0=repr(t0), t1=repr(t1), name=name,
        plant=type(pb.nominal).__name__, constraint=type(pb.constraint).__name__ if m else "none",
        tables="\n".join([_array("rt_plant_p", plant_values if plant_values.size else np.zeros(1)),
                          _array("rt_con_p", con_values if con_values.size else np.zeros(1)),
                          _array("rt_law_p", law_values), _array("rt_T", sol.t),
                          _array("rt_Y", sol.y), _array("rt_F", F)]),
        interp=interp, mass=mass, force=force, ab=ab, fundamental=fundamental, law=law, tau=tau, estimator=estimator,
        estimator_name=_estimator_name(controller.sensor),
        A_size=max(m * n, 1), b_size=max(m, 1), z_size=max(nz, 1), zero_z=", ".join(["0.0"] * max(nz, 1)),
        hold=int(beyond == "hold"), limits=_limits_array(controller.limits, n))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    texts = (_HEADER.format(n=n, nz=nz, z_size=max(nz, 1)), source, _MAIN, _CMAKE)
    files = tuple(write_atomic(folder / f, text) for f, text in zip(FILES, texts))
    return CExport(folder=folder, files=files, n=n, m=m, nz=nz, steps=steps, horizon=(t0, t1), beyond=beyond,
                   limits=None if controller.limits is None else tuple(float(v) for v in controller.limits))


_HEADER = """\
/* robustrack_controller.h — generated by robustrack (robustrack.loop.export); do not edit.
 * The designed controller tau(t, q, qd) = Qc(t) + M(q) u(t, e, edot, z) as standalone C99 (libm only, no
 * allocation, no global state written). Calls are reentrant. */
#ifndef ROBUSTRACK_CONTROLLER_H
#define ROBUSTRACK_CONTROLLER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {{
#endif

/* Degrees of freedom n ({n} here). */
int rt_n(void);
/* The compensator's own states n_z (GD's integral of e; {nz} here). */
int rt_nz(void);
/* The design horizon [rt_t0(), rt_horizon()] in seconds: the reference exists there. */
double rt_t0(void);
double rt_horizon(void);
/* The status bits a call may add to a return value of 0 (tau written): the torque was clipped to a joint's effort
 * limit (as a motor driver does; rt_tau_max), or t was past the horizon and the reference of its end is held
 * (exported with beyond = "hold"). A call failed when (ret & RT_ERROR_MASK) != 0. */
#define RT_ERROR_MASK 15
#define RT_SATURATED 16
#define RT_HOLDING 32
/* The effort limit of joint i (HUGE_VAL: none). */
double rt_effort_limit(int i);

/* The nominal q(t), qd(t) (n each). Returns 0 (| RT_HOLDING past the horizon when holding), or 1 outside the
 * horizon (nothing written). */
int rt_reference(double t, double *q, double *qd);
/* The generalized force tau (n) for the measured state q, qd (n each) at t, the compensator's states z = 0
 * (their initial value; GD with Ki != 0: keep your own integral and call rt_torque_z).
 * Returns 0 (with the status bits RT_SATURATED, RT_HOLDING), 1 outside the horizon or t NaN (tau not written; with
 * beyond = "hold" only for a NaN t), 2 where a measurement (q, qd, z) is not finite (tau not written) or the nominal
 * motion is not defined (tau not finite), 3 where the nominal state leaves a side of a branch on the state the export
 * followed (tau not written; the
 * export checked every step of the nominal run, and the source names each branch). */
int rt_torque(double t, const double *q, const double *qd, double *tau);
/* As rt_torque with the compensator's states z (rt_nz() of them; NULL when there are none). */
int rt_torque_z(double t, const double *q, const double *qd, const double *z, double *tau);

/* A loop that measures positions only: the sensor model's velocity estimator and the compensator's states, owned by
 * the caller (one per loop; nothing global). rt_estimator_reset it, then call rt_update at every sample. */
typedef struct {{
    int started;      /* 0 until the first rt_update: that one takes the reference's velocity */
    double t;         /* the previous call's t */
    double q[{n}];     /* the previous measured q */
    double v[{n}];     /* the previous velocity estimate */
    double z[{z_size}];     /* the compensator's states (GD's integral of e, summed over the calls) */
}} rt_estimator;
/* sizeof(rt_estimator), for callers that allocate it themselves (ctypes: a buffer of this many bytes). */
size_t rt_estimator_size(void);
/* Start over: the next rt_update takes the reference's velocity, z its initial value. */
void rt_estimator_reset(rt_estimator *s);
/* tau for the measured positions q (n) at t: qd estimated as robustrack.loop.Controller.update does (the sensor
 * model's estimator over the time since the previous call), then rt_torque_z. Returns as rt_torque (the estimator
 * keeps this call only when (ret & RT_ERROR_MASK) == 0), or 4 where t is not after the previous call's (nothing
 * changed). */
int rt_update(rt_estimator *s, double t, const double *q, double *tau);

#ifdef __cplusplus
}}
#endif

#endif
"""

_SOURCE = """\
/* robustrack_controller.c — generated by robustrack (robustrack.loop.export); do not edit.
 * Plant {plant} (n = {n}), constraint {constraint} (m = {m}), compensator {name} (n_z = {nz}),
 * horizon [{t0}, {t1}] s, reference: the nominal run's {steps} DOP853 steps.
 * The formulas are printed by sympy's C printer from robustrack's own sources (docs/guide/robot.md). */
#include <float.h>
#include <math.h>
#include <stddef.h>

#include "robustrack_controller.h"

#define RT_N {n}
#define RT_M {m}
#define RT_NZ {nz}
#define RT_STEPS {steps}
/* 1: past the horizon (or before it) the reference of its end (start) is held, said with RT_HOLDING; 0: refused */
#define RT_HOLD {hold}

{tables}{limits}
int rt_n(void) {{ return RT_N; }}
int rt_nz(void) {{ return RT_NZ; }}
double rt_t0(void) {{ return {t0}; }}
double rt_horizon(void) {{ return {t1}; }}
double rt_effort_limit(int i) {{ return (i < 0 || i >= RT_N || rt_tau_max[i] == DBL_MAX) ? HUGE_VAL : rt_tau_max[i]; }}

/* The time the reference is read at: t inside the horizon (0), its end or start held (RT_HOLDING, RT_HOLD only), or
 * refused (1; a NaN t always) — robustrack.loop.Controller's beyond. */
static int rt_clock(double *t) {{
    if (*t >= {t0} && *t <= {t1}) return 0;
    if (!RT_HOLD || *t != *t) return 1;
    *t = *t > {t1} ? {t1} : {t0};
    return RT_HOLDING;
}}

/* Each tau clipped to +-rt_tau_max, as a motor driver does (robustrack.tracking.actuators.Actuators.saturate): RT_SATURATED
 * where one was, else 0. */
static int rt_saturate(double *tau) {{
    int i, clipped = 0;
    for (i = 0; i < RT_N; i++) {{
        if (tau[i] > rt_tau_max[i]) {{ tau[i] = rt_tau_max[i]; clipped = RT_SATURATED; }}
        else if (tau[i] < -rt_tau_max[i]) {{ tau[i] = -rt_tau_max[i]; clipped = RT_SATURATED; }}
    }}
    return clipped;
}}

/* DOP853's dense output on one step, x the fraction of the step (robustrack.tracking.integrate.dop853_interpolant). */
static double rt_interp(double x, const double *f, double y0) {{
{interp};
}}

/* The nominal state y = (q, qd) at t in the horizon: the step k with rt_T[k] <= t < rt_T[k + 1] (the last step
 * at its end), as NominalSolution.__call__ finds it. */
static void rt_state(double t, double *y) {{
    int lo = 0, hi = RT_STEPS + 1, c;
    while (lo < hi) {{ /* the first index with rt_T[index] > t */
        int mid = lo + (hi - lo) / 2;
        if (rt_T[mid] <= t) lo = mid + 1; else hi = mid;
    }}
    int k = lo - 1;
    if (k < 0) k = 0;
    if (k > RT_STEPS - 1) k = RT_STEPS - 1;
    double x = (t - rt_T[k]) / (rt_T[k + 1] - rt_T[k]);
    for (c = 0; c < 2 * RT_N; c++) y[c] = rt_interp(x, rt_F[k][c], rt_Y[k][c]);
}}

/* M(q, t), row-major. */
static void rt_mass(double t, const double *q, double *M) {{
    (void)t; (void)q; (void)rt_plant_p;
{mass}
}}

/* Q(q, qd, t) at the nominal state. Returns 0, or 3 where it leaves a side of a branch the export followed. */
static int rt_force(double t, const double *q, const double *qd, double *Q) {{
    (void)t; (void)q; (void)qd;
{force}
    return 0;
}}

/* A(q, qd, t) (m x n, row-major) and b(q, qd, t) (m) at the nominal state. Returns 0, or 3 where it leaves a side
 * of a branch the export followed. */
static int rt_ab(double t, const double *q, const double *qd, double *A, double *b) {{
    (void)t; (void)q; (void)qd; (void)rt_con_p;
{ab}
    return 0;
}}

/* Qc = A^T (A M^-1 A^T)^-1 (b - A M^-1 Q) (full row rank A; Cholesky of M and of A M^-1 A^T). */
static void rt_constraint_force(const double *M, const double *Q, const double *A, const double *b, double *Qc) {{
    (void)M; (void)Q; (void)A; (void)b;
{fundamental}
}}

/* u(e, edot, z) of the compensator, e = q - y[0:n], edot = qd - y[n:2n]. */
static void rt_law(const double *q, const double *qd, const double *y, const double *z, double *u) {{
    (void)q; (void)qd; (void)y; (void)z; (void)rt_law_p;
{law}
}}

/* tau = Qc + M u. */
static void rt_tau(const double *Q, const double *M, const double *u, double *tau) {{
{tau}
}}

int rt_reference(double t, double *q, double *qd) {{
    double y[2 * RT_N];
    int i, held = rt_clock(&t);
    if (held == 1) return 1;
    rt_state(t, y);
    for (i = 0; i < RT_N; i++) {{ q[i] = y[i]; qd[i] = y[RT_N + i]; }}
    return held;
}}

/* The boundary of a call (robustrack.loop.Controller's _check_call): 0, or 2 where a measurement is not finite. */
static int rt_check_call(const double *q, const double *qd, const double *z) {{
    int i, ok = 1;
    for (i = 0; i < RT_N; i++) ok = ok && isfinite(q[i]) && isfinite(qd[i]);
    for (i = 0; i < RT_NZ; i++) ok = ok && isfinite(z[i]);
    return ok ? 0 : 2;
}}

int rt_torque_z(double t, const double *q, const double *qd, const double *z, double *tau) {{
    double y[2 * RT_N], Mn[RT_N * RT_N], Qn[RT_N], A[{A_size}], b[{b_size}], Qc[RT_N], u[RT_N], M[RT_N * RT_N];
    int i, ok = 1, held = rt_clock(&t);
    if (held == 1) return 1;
    if (rt_check_call(q, qd, z) != 0) return 2;
    rt_state(t, y);
    rt_mass(t, y, Mn);
    if (rt_force(t, y, y + RT_N, Qn) != 0 || rt_ab(t, y, y + RT_N, A, b) != 0) return 3;
    rt_constraint_force(Mn, Qn, A, b, Qc);
    rt_law(q, qd, y, z, u);
    rt_mass(t, q, M);
    rt_tau(Qc, M, u, tau);
    for (i = 0; i < RT_N; i++) ok = ok && isfinite(tau[i]);
    if (!ok) return 2;
    return held | rt_saturate(tau);
}}

int rt_torque(double t, const double *q, const double *qd, double *tau) {{
    static const double z0[{z_size}] = {{{zero_z}}};
    return rt_torque_z(t, q, qd, z0, tau);
}}

/* The sensor model's velocity estimator ({estimator_name}): v from this and the previous measured q over dt
 * (robustrack.loop.sensor.estimate_velocity, traced). */
static void rt_estimate(const double *q, const double *q_prev, const double *v_prev, double dt, double *v) {{
    (void)q; (void)q_prev; (void)v_prev; (void)dt;
{estimator}
}}

size_t rt_estimator_size(void) {{ return sizeof(rt_estimator); }}

void rt_estimator_reset(rt_estimator *s) {{
    static const double z0[{z_size}] = {{{zero_z}}};
    int i;
    s->started = 0;
    s->t = 0.0;
    for (i = 0; i < RT_N; i++) {{ s->q[i] = 0.0; s->v[i] = 0.0; }}
    for (i = 0; i < {z_size}; i++) s->z[i] = z0[i];
}}

int rt_update(rt_estimator *s, double t, const double *q, double *tau) {{
    double v[RT_N], y[2 * RT_N], z[{z_size}], t_ref = t, t_prev;
    int i, ret;
    if (rt_clock(&t_ref) == 1) return 1;
    for (i = 0; i < {z_size}; i++) z[i] = s->z[i];
    if (!s->started) {{
        rt_state(t_ref, y);
        for (i = 0; i < RT_N; i++) v[i] = y[RT_N + i];
    }} else {{
        double dt = t - s->t;
        if (!(dt > 0.0)) return 4;
        rt_estimate(q, s->q, s->v, dt, v);
        if (RT_NZ > 0) {{ /* z += dt (q_prev - q_nominal(t_prev)): the rectangle rule on the measured e */
            t_prev = s->t;
            rt_clock(&t_prev);
            rt_state(t_prev, y);
            for (i = 0; i < RT_NZ; i++) z[i] += dt * (s->q[i] - y[i]);
        }}
    }}
    ret = rt_torque_z(t, q, v, z, tau);
    if ((ret & RT_ERROR_MASK) != 0) return ret;
    s->started = 1;
    s->t = t;
    for (i = 0; i < RT_N; i++) {{ s->q[i] = q[i]; s->v[i] = v[i]; }}
    for (i = 0; i < {z_size}; i++) s->z[i] = z[i];
    return ret;
}}
"""

_MAIN = """\
/* main.c — an example fixed-rate loop around the exported controller (generated by robustrack; edit freely).
 * Usage: rt_example [rate_hz] [timing_calls]. It reads the state (here: the reference, offset by a small error
 * standing in for your robot's measurement), computes tau, and would send it; then it times rt_torque. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "robustrack_controller.h"

#define RT_MAX_N 64

int main(int argc, char **argv) {
    double rate = argc > 1 ? atof(argv[1]) : 1000.0;
    long calls = argc > 2 ? atol(argv[2]) : 100000;
    int n = rt_n(), i;
    double q[RT_MAX_N], qd[RT_MAX_N], tau[RT_MAX_N], sink = 0.0;
    long k, steps;
    clock_t start;
    if (n > RT_MAX_N || rate <= 0.0) return 2;
    steps = (long)((rt_horizon() - rt_t0()) * rate);
    for (k = 0; k <= steps; k++) { /* the fixed-rate loop: one sample every 1/rate s */
        double t = rt_t0() + k / rate;
        if (rt_reference(t, q, qd) != 0) break;
        for (i = 0; i < n; i++) { q[i] += 1e-3; qd[i] -= 1e-3; } /* your robot's measurement here */
        if ((rt_torque(t, q, qd, tau) & RT_ERROR_MASK) != 0) { fprintf(stderr, "rt_torque failed at t = %g\\n", t); return 1; }
        if (k % (steps / 10 > 0 ? steps / 10 : 1) == 0) printf("t = %8.4f s  tau[0] = % .6e\\n", t, tau[0]);
        /* send tau to the actuators here */
    }
    { /* a loop that measures positions only: rt_update estimates qd as the sensor model does */
        rt_estimator est;
        rt_estimator_reset(&est);
        for (k = 0; k <= steps; k++) {
            double t = rt_t0() + k / rate;
            if (rt_reference(t, q, qd) != 0) break;
            for (i = 0; i < n; i++) q[i] += 1e-3; /* your robot's encoders here */
            if ((rt_update(&est, t, q, tau) & RT_ERROR_MASK) != 0) { fprintf(stderr, "rt_update failed at t = %g\\n", t); return 1; }
            /* send tau to the actuators here */
        }
        printf("rt_update: %ld samples from positions only\\n", steps + 1);
    }
    { /* past the horizon: refused (1), or held with RT_HOLDING when exported with beyond = "hold" */
        int past = rt_torque(rt_horizon() + 1.0, q, qd, tau);
        if (past != 1 && !(past & RT_HOLDING)) { fprintf(stderr, "the horizon is neither refused nor held\\n"); return 1; }
        printf("past the horizon: %s\\n", past == 1 ? "refused" : "holding the reference of its end");
    }
    rt_reference(rt_t0(), q, qd);
    start = clock();
    for (k = 0; k < calls; k++) {
        double t = rt_t0() + (rt_horizon() - rt_t0()) * (double)k / (double)calls;
        rt_torque(t, q, qd, tau);
        sink += tau[0];
    }
    printf("rt_torque: %.3f us per call (%ld calls; checksum %g)\\n",
           1e6 * (double)(clock() - start) / CLOCKS_PER_SEC / (double)calls, calls, sink);
    return 0;
}
"""

_CMAKE = """\
# Generated by robustrack (robustrack.loop.export). cmake -S . -B build && cmake --build build && ./build/rt_example
cmake_minimum_required(VERSION 3.10)
project(robustrack_controller C)
set(CMAKE_C_STANDARD 99)
set(CMAKE_C_STANDARD_REQUIRED ON)
add_library(robustrack_controller robustrack_controller.c)
target_include_directories(robustrack_controller PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
find_library(MATH_LIBRARY m)
if(MATH_LIBRARY)
  target_link_libraries(robustrack_controller PUBLIC ${MATH_LIBRARY})
endif()
set_target_properties(robustrack_controller PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_executable(rt_example main.c)
target_link_libraries(rt_example robustrack_controller)
"""
