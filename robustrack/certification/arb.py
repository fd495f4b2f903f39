"""Rigorous evaluation of sympy expressions on arb balls (python-flint), for the certificates.

An arb ball ``[m ± r]`` encloses a real number; every arb operation rounds outward, so the
ball it returns contains the exact result of the operation on every point of its inputs
(`docs/theory/certificate.md`, "Rigor"). :func:`compile_arb` turns sympy expressions into
one Python function on balls: common subexpressions once (``sympy.cse``), integer powers
written as products (python-flint's ``arb ** int`` returns NaN for a ball that contains
0), even powers through ``abs`` so that ``x²`` of ``[−1, 1]`` is ``[0, 1]``, not
``[−1, 1]``, rational constants as exact quotients. A function the printer does not
know is refused by name (nothing is evaluated in floating point).

python-flint is an optional dependency (``pip install 'robustrack[certify]'``);
:func:`require_flint` says how to install it.
"""

from __future__ import annotations

import math

from ..errors import ParameterError

__all__ = ["require_flint", "compile_arb", "ArbFunction", "FUNCTIONS", "FLINT_HINT"]

#: What to type when python-flint is missing.
FLINT_HINT = ("certification needs python-flint (arb ball arithmetic): pip install 'robustrack[certify]' "
              "(or pip install python-flint)")

#: sympy functions the printer maps to arb (name in sympy → method of arb, or a helper here: ``_abs``, ``_tanh``).
#: Anything else is refused.
FUNCTIONS = {"sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log", "sqrt": "sqrt",
             "tanh": "_tanh", "sinh": "sinh", "cosh": "cosh", "atan": "atan", "Abs": "_abs"}


def require_flint():
    """The ``flint`` module, or a :class:`~robustrack.errors.ParameterError` that says how to install it.

    Returns
    -------
    module
        ``flint`` (python-flint).

    Raises
    ------
    ParameterError
        python-flint is not installed (the message gives the pip command).
    """
    try:
        import flint
    except ImportError:
        raise ParameterError(FLINT_HINT + ".") from None
    return flint


def _products(x, k: int):
    """x**k for an integer k >= 1 by repeated squaring (products only)."""
    result, base = None, x
    while k:
        if k & 1:
            result = base if result is None else result * base
        k >>= 1
        if k:
            base = base * base
    return result


def _ipow(x, k: int):
    """x**k for an integer k >= 1 as products; an even power of a ball around 0 is the hull of |x|'s end points
    raised to k (t ↦ t**k increases on t >= 0): [0, r**k], never a negative part."""
    if k % 2 == 0 and x.contains(0):
        return _products(x.abs_lower(), k).union(_products(x.abs_upper(), k))
    return _products(x, k)  # a ball off 0: (m ± r)² = m² ± (2|m|r + r²) is already the hull


def _abs(x):
    """|x| as the hull of its end points (arb's own ``abs`` of a ball around 0 keeps the negative half)."""
    return x.abs_lower().union(x.abs_upper())


def _tanh(x):
    """tanh(x) as the hull of its values at the end points (tanh increases): arb's own ``tanh`` of a wide ball
    bounds the radius by a derivative estimate, [±5.6] for [±1] and NaN for [±30] (python-flint 0.9), where the
    range is inside [−1, 1] — the Coulomb friction's tanh(q̇/v_s) over a cell is such a ball."""
    if x.rad() == 0:
        return x.tanh()
    return x.lower().tanh().union(x.upper().tanh())


class _Printer:
    """sympy expression → Python source on arb balls (names of the inputs given)."""

    def __init__(self, names: dict):
        self.names = names

    def __call__(self, e) -> str:
        import sympy as sp

        if e in self.names:
            return self.names[e]
        if isinstance(e, sp.Integer):
            return f"_A({int(e)})"
        if isinstance(e, sp.Rational):
            return f"(_A({int(e.p)}) / {int(e.q)})"
        if isinstance(e, sp.Float):
            return f"_A({float(e)!r})"  # the float as written is the value the toolbox uses
        if e is sp.pi:
            return "_PI"
        if e is sp.E:
            return "_A(1).exp()"
        if isinstance(e, sp.Add):
            return "(" + " + ".join(self(a) for a in e.args) + ")"
        if isinstance(e, sp.Mul):
            num, den = [], []
            for a in e.args:
                if isinstance(a, sp.Pow) and a.exp.is_Integer and a.exp < 0:
                    den.append(self(a.base) if a.exp == -1 else self(sp.Pow(a.base, -a.exp, evaluate=False)))
                else:
                    num.append(self(a))
            top = " * ".join(num) if num else "_A(1)"
            return f"({top})" if not den else f"(({top}) / ({' * '.join(den)}))"
        if isinstance(e, sp.Pow):
            base, k = e.base, e.exp
            if k.is_Integer:
                k = int(k)
                if k == 0:
                    return "_A(1)"
                if k > 0:
                    return f"_ipow({self(base)}, {k})"
                return f"(_A(1) / _ipow({self(base)}, {-k}))"
            if k == sp.Rational(1, 2):
                return f"({self(base)}).sqrt()"
            if k == sp.Rational(-1, 2):
                return f"({self(base)}).rsqrt()"
            return f"(({self(base)}).log() * {self(k)}).exp()"  # base > 0 needed: NaN (refused) otherwise
        if isinstance(e, sp.Function) or isinstance(e, sp.Abs):
            name = type(e).__name__
            if name not in FUNCTIONS:
                raise ParameterError(
                    f"the symbolic form uses `{name}`, which the certificate cannot enclose in ball arithmetic "
                    f"(known: {', '.join(sorted(FUNCTIONS))}); rewrite it with these functions.")
            if len(e.args) != 1:
                raise ParameterError(f"`{name}` with {len(e.args)} arguments cannot be enclosed.")
            if FUNCTIONS[name].startswith("_"):
                return f"{FUNCTIONS[name]}({self(e.args[0])})"
            return f"({self(e.args[0])}).{FUNCTIONS[name]}()"
        if isinstance(e, sp.Symbol):
            raise ParameterError(f"the symbolic form has a free symbol `{e}` that is neither a coordinate, a "
                                 "velocity, the time nor a parameter: it cannot be enclosed.")
        raise ParameterError(f"the symbolic form contains `{type(e).__name__}` ({e}), which the certificate "
                             "cannot enclose in ball arithmetic.")


class ArbFunction:
    """A compiled function ``f(*inputs) -> list of arb`` of sympy expressions (see :func:`compile_arb`).

    Attributes
    ----------
    source : str
        The generated Python source (for reading).
    n_out : int
        Number of outputs.
    """

    def __init__(self, source: str, func, n_out: int):
        self.source = source
        self._func = func
        self.n_out = n_out

    def __call__(self, *inputs):
        return self._func(*inputs)


def compile_arb(inputs, outputs, name: str = "f") -> ArbFunction:
    """Compile sympy ``outputs`` of the symbols ``inputs`` into one function on arb balls.

    Parameters
    ----------
    inputs : sequence of sympy Symbol
        The arguments, in order (one ball each).
    outputs : sequence of sympy expressions
        What the function returns, as a list in this order.
    name : str
        The generated function's name (for tracebacks).

    Returns
    -------
    ArbFunction

    Raises
    ------
    ParameterError
        python-flint is missing, or an expression uses a function arb cannot enclose.
    """
    import sympy as sp

    flint = require_flint()
    inputs = list(inputs)
    outputs = [sp.sympify(o) for o in outputs]
    names = {s: f"_x{i}" for i, s in enumerate(inputs)}
    replacements, reduced = sp.cse(outputs, symbols=sp.numbered_symbols("_c"), optimizations="basic")
    lines = [f"def {name}({', '.join(names[s] for s in inputs)}):"]
    for sym, expr in replacements:
        printer = _Printer(names)
        lines.append(f"    {sym} = {printer(expr)}")
        names[sym] = str(sym)
    printer = _Printer(names)
    lines.append("    return [" + ", ".join(printer(o) for o in reduced) + "]")
    source = "\n".join(lines)
    namespace = {"_A": flint.arb, "_ipow": _ipow, "_abs": _abs, "_tanh": _tanh, "_PI": flint.arb.pi(), "math": math}
    exec(compile(source, f"<robustrack.certification.{name}>", "exec"), namespace)  # noqa: S102 - generated above
    return ArbFunction(source, namespace[name], len(outputs))
