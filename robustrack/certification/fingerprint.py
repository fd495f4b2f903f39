"""The fingerprint of the problem a certificate certifies (docs/theory/certificate.md, "A certificate is bound to
its problem").

A certificate bounds δq along one nominal motion for the plants of one box. That motion is decided by the
nominal plant (every parameter, not only the uncertain ones: a length or g changes it as much as a mass),
the constraint (its expressions and parameters), the initial state, the horizon and the tolerances of the
DOP853 solve whose dense output is the reference the enclosure follows; the plants, beside the box, by the
friction and disturbance they carry (:class:`~robustrack.certification.forces.ForceBox`).
:func:`problem_fingerprint` records them, flat and in that order, in every new certificate (``fingerprint``);
:func:`fingerprint_difference`
names the first field in which a study's problem differs, which :func:`~robustrack.certification.saved.
check_covers` turns into a refusal. The compensator is not part of it: ``tune`` designs new gains to a
certified Γ, and a closed certificate says which compensator it closed (``compensator``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["problem_fingerprint", "fingerprint_difference", "FINGERPRINT_FIELDS"]

#: The fields of a fingerprint in their order (``plant.NAME`` and ``constraint.NAME`` stand for one field per
#: parameter).
FINGERPRINT_FIELDS = ("scenario", "plant.model", "plant.NAME", "constraint.model", "constraint.NAME",
                      "reference.q0", "reference.qd0", "t_span", "solver.rtol", "solver.atol", "forces.viscous.lower",
                      "forces.viscous.upper", "forces.coulomb.lower", "forces.coulomb.upper", "forces.coulomb_width",
                      "forces.disturbance")


def _form(part):
    """The part's symbolic (or kernel) form, or None."""
    codegen = getattr(part, "codegen", None)
    try:
        return codegen() if callable(codegen) else None
    except Exception:  # noqa: BLE001 - a part without a form is fingerprinted by its type
        return None


def _named(constraint):
    """{name: value} of a constraint's parameters when it names them (members of a stack prefixed ``i.``);
    None when some member keeps them unnamed."""
    members = getattr(constraint, "constraints", None)
    if members is not None:
        out = {}
        for i, member in enumerate(members):
            own = _named(member)
            if own is None:
                return None
            out.update({f"{i}.{k}": v for k, v in own.items()})
        return out
    params = getattr(constraint, "params", None)
    if isinstance(params, dict):
        return {str(k): v for k, v in params.items()}
    return None


def _form_names(form, n: int):
    """{name: value} of a symbolic form's parameters, by the symbols its ``build`` returns (None when the names
    are not one per value, or the form builds no sympy)."""
    try:
        import sympy as sp

        q, qd = sp.symbols(f"_q0:{n}"), sp.symbols(f"_qd0:{n}")
        names = [str(p) for p in form.build(q, qd, sp.Symbol("_t"))[-1]]
    except Exception:  # noqa: BLE001 - a kernel form: its values stand unnamed
        return None
    values = np.asarray(form.values, dtype=float)
    if len(names) != values.size or len(set(names)) != len(names):
        return None
    return dict(zip(names, values.tolist()))


def problem_fingerprint(problem, scenario: str | None = None, forces=None) -> dict:
    """The fields that decide what a certificate of ``problem`` is about, flat and ordered.

    Parameters
    ----------
    problem : TrackingProblem
        The certified (or the studied) problem.
    scenario : str, optional
        The scenario's name (None: a problem made in Python).
    forces : ForceBox, optional
        The actual plants' friction and disturbance (:mod:`robustrack.certification.forces`): its fields
        (``forces.viscous.lower`` …, ``forces.coulomb_width``, ``forces.disturbance``) are added where there are
        any (zero friction and D = 0 are none).

    Returns
    -------
    dict
        ``scenario``; ``plant.model`` (the form's key: the equations' structure) and ``plant.NAME`` for every
        parameter of the nominal plant; ``constraint.model`` and ``constraint.NAME`` (its parameters, named as it or
        its form's symbols name them, else ``constraint.values``: the form's values in order); ``reference.q0``, ``reference.qd0``; ``t_span``;
        ``solver.rtol``, ``solver.atol`` (the nominal solve's); the forces' fields. Values are JSON's (lists,
        floats, strings).
    """
    from .._json import describe_value

    plant = problem.nominal
    form = _form(plant)
    out = {"scenario": scenario,
           "plant.model": getattr(form, "key", None) or type(plant).__name__}
    out.update({f"plant.{k}": describe_value(v) for k, v in plant.params.items()})
    constraint = problem.constraint
    if constraint is None:
        out["constraint.model"] = None
    else:
        cform = _form(constraint)
        out["constraint.model"] = getattr(cform, "key", None) or type(constraint).__name__
        named = _named(constraint)
        if named is None and cform is not None:
            named = _form_names(cform, problem.n)
        if named is not None:
            out.update({f"constraint.{k}": describe_value(v) for k, v in named.items()})
        elif cform is not None:
            out["constraint.values"] = describe_value(np.asarray(cform.values, dtype=float))
    out["reference.q0"] = describe_value(np.asarray(problem.q0, dtype=float))
    out["reference.qd0"] = describe_value(np.asarray(problem.qd0, dtype=float))
    out["t_span"] = describe_value([float(x) for x in problem.t_span])
    out["solver.rtol"] = float(problem.rtol)
    out["solver.atol"] = float(problem.atol)
    if forces is not None:
        out.update(forces.fingerprint())
    return out


def _same(a, b) -> bool:
    """Equal values: strings and None exactly; numbers (and lists of them) to 1e-12 relative — the same inputs
    read back from JSON are equal bit for bit, the tolerance forgives only a value computed in another order."""
    if isinstance(a, (str, type(None))) or isinstance(b, (str, type(None))):
        return a == b
    try:
        x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return a == b
    return x.shape == y.shape and bool(np.all(np.abs(x - y) <= 1e-12 * np.maximum(np.abs(x), np.abs(y))))


def _shown(value) -> str:
    if isinstance(value, float):
        return f"{value:.12g}"
    if isinstance(value, list) and all(isinstance(v, float) for v in value):
        return "[" + ", ".join(f"{v:.12g}" for v in value) + "]"
    return "none" if value is None else str(value)


def fingerprint_difference(certified: dict, study: dict) -> str | None:
    """The first field in which a study's fingerprint differs from a certificate's, said in one phrase.

    Parameters
    ----------
    certified : dict
        The certificate's ``fingerprint``.
    study : dict
        :func:`problem_fingerprint` of the study's problem.

    Returns
    -------
    str or None
        ``"`plant.g`: certified 9.81, this study 30"`` (a field only one side has: "none" on the other);
        None when they agree. ``scenario`` is compared only when both name one.
    """
    keys = list(certified) + [k for k in study if k not in certified]
    for key in keys:
        a, b = certified.get(key), study.get(key)
        if key == "scenario" and (a is None or b is None):
            continue
        if not _same(a, b):
            return f"`{key}`: certified {_shown(a)}, this study {_shown(b)}"
    return None
