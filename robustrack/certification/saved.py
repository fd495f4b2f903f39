"""A certificate used by the studies: read back and checked to cover the plants it is used for.

``robustrack certify NAME --json FILE`` saves a :class:`~robustrack.certification.certificate.Certificate`;
``tune``, ``report``, ``montecarlo`` and ``worst-case`` take it with ``--certificate FILE`` (in Python: the
file, its JSON document, or the Certificate itself). :func:`certificate_summary` reads what they need of
it (the certified interval of sup ‖δq‖∞ = Γ, W 5.3.5, its level and lower-bound plant);
:func:`check_covers` refuses a certificate that does not cover the study's plants — a box that does not
contain the study's box, another horizon or another initial state — since its Γ would then be a number
about other plants (docs/theory/certificate.md, "Design to a certificate").
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..errors import ParameterError

__all__ = ["certificate_summary", "check_covers", "certified_gamma_text", "gamma_verdict"]


def certificate_summary(source, name: str = "certificate") -> dict:
    """What a certificate says of Γ: the certified interval of sup ‖δq‖∞, its level, box and lower-bound plant.

    Parameters
    ----------
    source : Certificate, dict, str or Path
        A :class:`~robustrack.certification.certificate.Certificate`, its ``to_dict()`` document, the
        JSON file ``robustrack certify --json`` wrote, or a summary this function returned.
    name : str
        How messages name the argument (``"--certificate"``).

    Returns
    -------
    dict
        ``gamma_lower``, ``gamma_upper`` (the certified Γ), ``delta`` (ndarray, the lower-bound plant's
        offset from the nominal parameters), ``t``, ``level``, ``finished``, ``closed`` (None below the
        closed level), ``box`` ({name: [lower, upper]}), ``t_span``, ``reference`` ({"q0", "qd0"} or None
        for a certificate saved before it was recorded), ``scenario`` (or None).

    Raises
    ------
    ParameterError
        Not a certificate (or its JSON).
    """
    try:
        if isinstance(source, dict) and "gamma_upper" in source and "box" in source:
            return dict(source)  # already a summary (read and checked once, passed on)
        if hasattr(source, "to_dict") and hasattr(source, "bounds"):
            doc = source.to_dict()
        elif isinstance(source, dict):
            doc = source
        else:
            doc = json.loads(Path(source).read_text(encoding="utf-8"))
        dq = doc["bounds"]["max_norm_dq"]
        out = {"delta": np.asarray(dq["witness"]["delta"], dtype=float), "t": float(dq["witness"]["t"]),
               "gamma_lower": float(dq["lower"]), "gamma_upper": float(dq["upper"]), "level": str(doc["level"]),
               "finished": bool(doc.get("finished")), "closed": doc.get("closed"),
               "box": {k: [np.asarray(v[0], dtype=float).tolist(), np.asarray(v[1], dtype=float).tolist()]
                       for k, v in doc["box"].items()},
               "t_span": [float(x) for x in doc["t_span"]], "reference": doc.get("reference"),
               "scenario": doc.get("scenario")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ParameterError(f"`{name}` {_shown(source)} is not a certificate written by `robustrack certify --json` "
                             f"({type(exc).__name__}: {exc}).") from None
    if not (math.isfinite(out["gamma_upper"]) and out["gamma_upper"] >= 0):
        raise ParameterError(f"`{name}` {_shown(source)} certifies no finite bound of sup ‖δq‖∞ (upper = "
                             f"{out['gamma_upper']}): certify again with a larger --budget or a smaller box.")
    return out


def _shown(source) -> str:
    return repr(str(source)) if isinstance(source, (str, Path)) else f"({type(source).__name__})"


def check_covers(summary: dict, problem, box=None, name: str = "certificate", *, spread_name: str = "spread",
                 scenario: str | None = None) -> None:
    """Refuse a certificate that does not cover a study's plants and run.

    It covers them when its box contains ``box`` (a wider certificate is still valid: its supremum is
    over more plants), its horizon is the problem's and its reference starts from the problem's initial
    state (δq is certified along ``problem.nominal_run()``, which those decide with the nominal plant —
    the box's centre — and the scenario's configuration; ``scenario`` names are compared when both are
    known).

    Parameters
    ----------
    summary : dict
        From :func:`certificate_summary`.
    problem : TrackingProblem
        The study's problem.
    box : ParameterBox, optional
        The study's plants (e.g. ``ParameterBox.around(problem.nominal, spread, parameters)``); None: a
        study of no box of its own (a report of one run), which then quotes the certificate's box.
    name, spread_name : str
        How messages name the certificate and the spread (``"--certificate"``, ``"--spread"``).
    scenario : str, optional
        The study's scenario name.

    Raises
    ------
    ParameterError
        The certificate is about other plants or another run, with what differs and the fix.
    """
    fix = "certify the study's scenario with the same --set and " + spread_name + \
          " (robustrack certify NAME --spread S --json FILE)"
    if scenario is not None and summary.get("scenario") not in (None, scenario):
        raise ParameterError(f"`{name}` certifies scenario {summary['scenario']!r}, not {scenario!r}: {fix}.")
    theirs = summary["box"]
    for pname, lo, hi in ([] if box is None else zip(box.names, box.lower, box.upper)):
        if pname not in theirs:
            raise ParameterError(f"`{name}` certifies a box on {sorted(theirs)}, which does not vary `{pname}`: {fix}.")
        clo, chi = (np.asarray(v, dtype=float) for v in theirs[pname])
        # the same box written to JSON and read back is equal bit for bit (repr round-trips floats); the
        # tolerance only forgives the last bits of ±spread·|m| computed in another order
        tol = 1e-12 * np.maximum(np.abs(lo), np.abs(hi))
        if clo.shape != np.shape(lo) or np.any(clo > lo + tol) or np.any(chi < hi - tol):
            raise ParameterError(f"`{name}` certifies `{pname}` ∈ [{clo.tolist()}, {chi.tolist()}], which does not "
                                 f"contain the study's [{np.asarray(lo).tolist()}, {np.asarray(hi).tolist()}] "
                                 f"({spread_name}): {fix}.")
    t_span = [float(x) for x in problem.t_span]
    if not np.allclose(summary["t_span"], t_span, rtol=1e-12, atol=0.0):
        raise ParameterError(f"`{name}` certifies the run over t ∈ {summary['t_span']} s, the study runs over "
                             f"{t_span} s: {fix}.")
    ref = summary.get("reference")
    if ref is not None:
        for key, mine in (("q0", problem.q0), ("qd0", problem.qd0)):
            if not np.array_equal(np.asarray(ref[key], dtype=float), np.asarray(mine, dtype=float)):
                raise ParameterError(f"`{name}` certifies the nominal motion from {key} = {ref[key]}, the study's "
                                     f"starts from {np.asarray(mine).tolist()}: {fix}.")


def certified_gamma_text(summary: dict, fmt=None) -> str:
    """One line: the certified interval of sup ‖δq‖∞, at which level, finished or not.

    Parameters
    ----------
    summary : dict
        From :func:`certificate_summary`.
    fmt : callable, optional
        ``fmt(value) -> str`` (e.g. a unit-aware formatter); default ``:.6g``.

    Returns
    -------
    str
    """
    fmt = fmt or (lambda v: f"{v:.6g}")
    where = ("over the box and the tube of the promised bound" if summary["level"] == "closed"
             else "over the box along the nominal motion")
    state = "" if summary["finished"] else ", UNFINISHED: the upper bound is valid, the gap above the tolerance"
    return (f"sup ‖δq‖∞ ∈ [{fmt(summary['gamma_lower'])}, {fmt(summary['gamma_upper'])}] certified {where} "
            f"({summary['level']} level{state})")


def gamma_verdict(summary: dict, gamma, fmt=None) -> str:
    """What a certificate says of a Γ: it holds for every plant in the box, it is exceeded by one, or not settled.

    Parameters
    ----------
    summary : dict
        From :func:`certificate_summary`.
    gamma : float or None
        The Γ a promise is made at (None: no verdict, an empty string).
    fmt : callable, optional
        ``fmt(value) -> str``; default ``:.6g``.

    Returns
    -------
    str
        ``"Γ = 100 holds for every plant in the box"`` (Γ >= the certified upper bound), ``"Γ = 100 is
        exceeded by a plant in the box (certified ≥ 159.5)"`` (Γ < the lower bound, attained by a real plant)
        or ``"Γ = 160 is inside the certified interval: not settled (...)"``.
    """
    if gamma is None:
        return ""
    fmt = fmt or (lambda v: f"{v:.6g}")
    lo, hi = summary["gamma_lower"], summary["gamma_upper"]
    if hi <= gamma:
        return f"Γ = {fmt(gamma)} holds for every plant in the box"
    if lo > gamma:
        return f"Γ = {fmt(gamma)} is exceeded by a plant in the box (certified ≥ {fmt(lo)})"
    return (f"Γ = {fmt(gamma)} is inside the certified interval: not settled (certify with a smaller --tolerance "
            "or a larger --budget)")
