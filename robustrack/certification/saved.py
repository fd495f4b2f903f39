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

__all__ = ["certificate_summary", "check_covers", "check_document", "certified_gamma_text", "gamma_verdict"]

#: What every refusal of a damaged or edited certificate asks for.
_RECERTIFY = "not a certificate as `robustrack certify --json` writes it (edited or damaged): certify again"


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
        for a certificate saved before it was recorded), ``scenario`` (or None), ``fingerprint``, ``forces`` (the
        friction and disturbance covered, :meth:`ForceBox.to_dict <robustrack.certification.forces.ForceBox.to_dict>`,
        or None), ``witness_forces`` (the lower-bound plant's friction and disturbance: ``viscous``, ``coulomb``
        per coordinate and ``disturbance``; None without forces).

    Raises
    ------
    ParameterError
        Not a certificate (or its JSON).
    """
    if isinstance(source, dict) and "gamma_upper" in source and "box" in source:
        return dict(source)  # already a summary (read and checked once, passed on)
    try:
        if hasattr(source, "to_dict") and hasattr(source, "bounds"):
            doc = source.to_dict()
        elif isinstance(source, dict):
            doc = source
        else:
            doc = json.loads(Path(source).read_text(encoding="utf-8"))
    except RecursionError:
        raise ParameterError(f"`{name}` {_shown(source)} is JSON nested deeper than Python reads: not a certificate "
                             "written by `robustrack certify --json`; certify again.") from None
    except (OSError, ValueError) as exc:
        raise ParameterError(f"`{name}` {_shown(source)} is not a certificate written by `robustrack certify --json` "
                             f"({type(exc).__name__}: {exc}).") from None
    check_document(doc, f"`{name}` {_shown(source)}", in_memory=not isinstance(source, (str, Path, dict)))
    try:
        dq = doc["bounds"]["max_norm_dq"]
        out = {"delta": np.asarray(dq["witness"]["delta"], dtype=float), "t": float(dq["witness"]["t"]),
               "gamma_lower": float(dq["lower"]), "gamma_upper": float(dq["upper"]), "level": str(doc["level"]),
               "finished": bool(doc.get("finished")), "closed": doc.get("closed"),
               "box": {k: [np.asarray(v[0], dtype=float).tolist(), np.asarray(v[1], dtype=float).tolist()]
                       for k, v in doc["box"].items()},
               "t_span": [float(x) for x in doc["t_span"]], "reference": doc.get("reference"),
               "scenario": doc.get("scenario"), "fingerprint": doc.get("fingerprint"), "forces": doc.get("forces"),
               "witness_forces": dq["witness"].get("forces"), "witness_params": dq["witness"].get("params")}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ParameterError(f"`{name}` {_shown(source)} is not a certificate written by `robustrack certify --json` "
                             f"({type(exc).__name__}: {exc}).") from None
    if not (math.isfinite(out["gamma_upper"]) and out["gamma_upper"] >= 0):
        raise ParameterError(f"`{name}` {_shown(source)} certifies no finite bound of sup ‖δq‖∞ (upper = "
                             f"{out['gamma_upper']}): certify again with a larger --budget or a smaller box.")
    return out


def _numbers(value, key: str, where: str, *, minimum=None, size=None, of: str = "") -> np.ndarray:
    """``value`` as a float array of finite numbers (a number or a flat list; JSON's booleans and strings are not
    numbers), at least ``minimum``, of ``size`` elements when given; else refused naming ``key``."""
    leaves = value if isinstance(value, list) else [value]
    if (not leaves and size is None) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                for v in leaves):
        raise ParameterError(f"{where}: `{key}` must be a finite number or a list of them; got {value!r}: "
                             f"{_RECERTIFY}.")
    arr = np.asarray(leaves, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{where}: `{key}` must be finite; got {value!r}: {_RECERTIFY}.")
    if minimum is not None and np.any(arr < minimum):
        raise ParameterError(f"{where}: `{key}` = {value!r} is below {minimum:g} (a norm's bound is >= 0): "
                             f"{_RECERTIFY}.")
    if size is not None and arr.size != size:
        raise ParameterError(f"{where}: `{key}` has {arr.size} values, {size} expected{of}: {_RECERTIFY}.")
    return arr if isinstance(value, list) else arr.reshape(())


def _table(doc, key: str, where: str) -> dict:
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, dict) or not value:
        raise ParameterError(f"{where}: `{key}` must be a non-empty table; got {value!r}: {_RECERTIFY}.")
    return value


def check_document(doc, where: str = "certificate", *, in_memory: bool = False) -> None:
    """Refuse a certificate document (``Certificate.to_dict()`` or the JSON of ``robustrack certify --json``) that
    is not whole: every field the studies read is checked before any is used (docs/theory/certificate.md,
    "A certificate is read whole").

    Checked: ``level`` is one of :data:`~robustrack.certification.certificate.LEVELS`; ``t_span`` two finite
    times, t0 < t1; ``tolerance`` in (0, 1); ``box`` a table of parameters, each ``[lower, upper]`` finite, of one
    shape, lower <= upper; ``bounds`` holds ``max_norm_dq``, each bound's ``lower`` finite >= 0 and <= its
    ``upper`` (null: unbounded, refused for sup ‖δq‖∞ later, with the fix), ``finished`` a boolean, its witness
    ``t`` inside ``t_span``, ``delta`` of the box's dimension and finite, ``params`` inside the box; the top
    ``finished`` the conjunction of the bounds'; the level consistent with what it carries (``box``: no tube,
    no conditions, ``closed`` null; ``closed``: a tube (its radii, or its parameters e0, rate, edot, e_end >= 0), Γ, the first-exit conditions, among
    them ``gamma``, held exactly when sup ‖δq‖∞'s upper bound is <= Γ, and ``closed`` their conjunction);
    ``reference`` q0 and qd0 finite, of one length; ``scenario`` a name (a file or a document must carry it and
    its reference: a Certificate object made in this process by :func:`~robustrack.certification.certify` on a
    bare problem has no scenario); ``fingerprint`` present (certificates saved before it are refused: certify
    again), with its fields, agreeing with the scenario, reference and horizon, and with the friction and
    disturbance the file states (``forces``; none on both sides for a certificate without them).

    Parameters
    ----------
    doc : dict
    where : str
        How messages name the certificate (```--certificate` 'c.json'``).
    in_memory : bool
        The document comes from a Certificate object (keyword-only): ``scenario`` may be absent.

    Raises
    ------
    ParameterError
        The first field that is missing or wrong, named with its key, and the fix.
    """
    from .certificate import LEVELS, QUANTITIES

    if not isinstance(doc, dict):
        raise ParameterError(f"{where}: a certificate is a JSON object (a table); got {type(doc).__name__}: "
                             f"{_RECERTIFY}.")
    level = doc.get("level")
    if level not in LEVELS:
        raise ParameterError(f"{where}: `level` must be one of {list(LEVELS)}; got {level!r}: {_RECERTIFY}.")
    t_span = _numbers(doc.get("t_span"), "t_span", where, size=2)
    if not t_span[0] < t_span[1]:
        raise ParameterError(f"{where}: `t_span` must be [t0, t1] with t0 < t1; got {t_span.tolist()}: {_RECERTIFY}.")
    tol = _numbers(doc.get("tolerance"), "tolerance", where)
    if not 0 < tol < 1:
        raise ParameterError(f"{where}: `tolerance` must be in (0, 1); got {float(tol)!r}: {_RECERTIFY}.")
    box, dim = {}, 0
    for pname, bounds in _table(doc, "box", where).items():
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise ParameterError(f"{where}: `box.{pname}` must be [lower, upper]; got {bounds!r}: {_RECERTIFY}.")
        lo, hi = (_numbers(v, f"box.{pname}", where) for v in bounds)
        if lo.shape != hi.shape or np.any(lo > hi):
            raise ParameterError(f"{where}: `box.{pname}` must have lower <= upper, of one shape; got "
                                 f"{lo.tolist()} and {hi.tolist()}: {_RECERTIFY}.")
        box[pname] = (lo, hi)
        dim += max(lo.size, 1)
    quantities = _table(doc, "bounds", where)
    if "max_norm_dq" not in quantities:
        raise ParameterError(f"{where}: `bounds` has no `max_norm_dq` (sup ‖δq‖∞, the Γ every study reads): "
                             f"{_RECERTIFY}.")
    for q, b in quantities.items():
        key = f"bounds.{q}"
        if q not in QUANTITIES or not isinstance(b, dict):
            raise ParameterError(f"{where}: `{key}` is not a certified quantity ({list(QUANTITIES)}): {_RECERTIFY}.")
        lower = _numbers(b.get("lower"), f"{key}.lower", where, minimum=0.0)
        if b.get("upper") is not None:
            upper = _numbers(b.get("upper"), f"{key}.upper", where, minimum=0.0)
            if lower > upper:
                raise ParameterError(f"{where}: `{key}` has lower {float(lower)!r} above upper {float(upper)!r} (an "
                                     f"interval [lower, upper] of the supremum): {_RECERTIFY}.")
        if not isinstance(b.get("finished"), bool):
            raise ParameterError(f"{where}: `{key}.finished` must be true or false; got {b.get('finished')!r}: "
                                 f"{_RECERTIFY}.")
        _check_witness(b.get("witness"), f"{key}.witness", where, t_span, box, dim)
    finished = doc.get("finished")
    if finished is not all(b["finished"] for b in quantities.values()):
        raise ParameterError(f"{where}: `finished` = {finished!r} but the bounds' are "
                             f"{[b['finished'] for b in quantities.values()]}: {_RECERTIFY}.")
    _check_level(doc, level, where, quantities["max_norm_dq"])
    ref = doc.get("reference")
    if ref is None or (doc.get("scenario") is None and not in_memory):
        missing = "reference" if ref is None else "scenario"
        raise ParameterError(f"{where}: no `{missing}` — a certificate records the scenario and the initial state "
                             "it certifies, and one without them could be applied to another problem: "
                             f"{_RECERTIFY} (robustrack certify NAME --json FILE).")
    if not isinstance(ref, dict):
        raise ParameterError(f"{where}: `reference` must be a table with q0 and qd0; got {ref!r}: {_RECERTIFY}.")
    q0 = _numbers(ref.get("q0"), "reference.q0", where)
    _numbers(ref.get("qd0"), "reference.qd0", where, size=q0.size, of=" (as many as q0)")
    if doc.get("scenario") is not None and not isinstance(doc["scenario"], str):
        raise ParameterError(f"{where}: `scenario` must be a scenario's name; got {doc['scenario']!r}: {_RECERTIFY}.")
    _check_fingerprint(doc, where, t_span)


def _check_fingerprint(doc, where, t_span) -> None:
    """The problem's fingerprint is present (a certificate saved before it was recorded cannot be bound to its
    problem: certify again), a table of the fields :func:`~robustrack.certification.fingerprint.problem_fingerprint`
    writes, agreeing with the scenario, reference and horizon the file states elsewhere."""
    fp = doc.get("fingerprint")
    if fp is None:
        raise ParameterError(f"{where}: no `fingerprint` — the problem it certifies (every plant and constraint "
                             "parameter, the reference, the horizon, the solver tolerances) is not recorded, so it "
                             "cannot be checked to be the study's: written before fingerprints, or edited; certify "
                             "again (robustrack certify NAME --json FILE).")
    required = ("plant.model", "constraint.model", "reference.q0", "reference.qd0", "t_span", "solver.rtol",
                "solver.atol")
    if not isinstance(fp, dict) or any(k not in fp for k in required):
        missing = [k for k in required if not isinstance(fp, dict) or k not in fp]
        raise ParameterError(f"{where}: `fingerprint` must be a table with {list(required)}; "
                             f"{'got ' + type(fp).__name__ if not isinstance(fp, dict) else 'missing ' + str(missing)}"
                             f": {_RECERTIFY}.")
    from .fingerprint import fingerprint_difference

    stated = {"scenario": doc.get("scenario"), "reference.q0": doc["reference"]["q0"],
              "reference.qd0": doc["reference"]["qd0"], "t_span": t_span.tolist()}
    differs = fingerprint_difference({k: fp.get(k) for k in stated}, stated)
    if differs is not None:
        raise ParameterError(f"{where}: `fingerprint` disagrees with the file's own fields ({differs.replace('this study', 'the file states')}): "
                             f"{_RECERTIFY}.")
    # the forces it covers (`forces`, certification/forces.py) are those its fingerprint binds it to
    from .forces import FORCE_FIELDS, ForceBox

    doc_forces = doc.get("forces")
    try:
        stated = {} if doc_forces is None else ForceBox.from_dict(doc_forces).fingerprint()
    except ParameterError as exc:
        raise ParameterError(f"{where}: {exc}: {_RECERTIFY}.") from None
    differs = fingerprint_difference({k: fp.get(k) for k in FORCE_FIELDS}, {k: stated.get(k) for k in FORCE_FIELDS})
    if differs is not None:
        raise ParameterError(f"{where}: `fingerprint` disagrees with the forces the file states (`forces`: "
                             f"{differs.replace('this study', 'the file states')}): {_RECERTIFY}.")


def _check_witness(w, key, where, t_span, box, dim) -> None:
    """The lower bound's plant and time: ``t`` in the run, ``delta`` (dim values), ``params`` inside the box."""
    if not isinstance(w, dict):
        raise ParameterError(f"{where}: `{key}` must be a table (t, params, delta); got {w!r}: {_RECERTIFY}.")
    t = _numbers(w.get("t"), f"{key}.t", where)
    span = t_span[1] - t_span[0]
    if not t_span[0] - 1e-12 * span <= t <= t_span[1] + 1e-12 * span:
        raise ParameterError(f"{where}: `{key}.t` = {float(t)!r} s is outside the run {t_span.tolist()} s: "
                             f"{_RECERTIFY}.")
    _numbers(w.get("delta"), f"{key}.delta", where, size=dim, of=" (one per parameter of the box)")
    params = w.get("params")
    if not isinstance(params, dict) or sorted(params) != sorted(box):
        raise ParameterError(f"{where}: `{key}.params` must give the box's parameters {sorted(box)}; got "
                             f"{params!r}: {_RECERTIFY}.")
    for pname, (lo, hi) in box.items():
        v = _numbers(params[pname], f"{key}.params.{pname}", where)
        slack = 1e-12 * np.maximum(np.abs(lo), np.abs(hi))
        if v.shape != lo.shape or np.any(v < lo - slack) or np.any(v > hi + slack):
            raise ParameterError(f"{where}: `{key}.params.{pname}` = {v.tolist()} is not inside the box "
                                 f"[{lo.tolist()}, {hi.tolist()}]: {_RECERTIFY}.")


def _check_level(doc, level, where, dq) -> None:
    """The level and what it carries agree: a box certificate claims no closure; a closed one carries its tube,
    its Γ and conditions, ``closed`` their conjunction, the Γ condition held exactly when U(sup ‖δq‖∞) <= Γ."""
    tube, conditions, closed = doc.get("tube"), doc.get("conditions"), doc.get("closed")
    if level == "box":
        if tube is not None or conditions or closed is not None:
            raise ParameterError(f"{where}: `level` is 'box' but the file carries "
                                 + ("a `tube`" if tube is not None else "`conditions`" if conditions else
                                    f"`closed` = {closed!r}") + f" (the closed level's): {_RECERTIFY}.")
        return
    if tube is None or doc.get("gamma") is None or not conditions:
        missing = "tube" if tube is None else "gamma" if doc.get("gamma") is None else "conditions"
        raise ParameterError(f"{where}: `level` is 'closed' but `{missing}` is missing — the closed level is its "
                             f"tube, its Γ and the first-exit conditions: {_RECERTIFY} (--level closed).")
    if isinstance(tube, dict):  # what certify writes: the tube's parameters (Certificate.extras["tube"])
        if tube.get("kind") not in ("gss", "gd", "gdbar"):
            raise ParameterError(f"{where}: `tube.kind` must be 'gss', 'gd' or 'gdbar'; got {tube.get('kind')!r}: "
                                 f"{_RECERTIFY}.")
        for key in ("e0", "rate", "edot", "e_end"):
            _numbers(tube.get(key), f"tube.{key}", where, minimum=0.0)
    else:  # the radii (ρ_e, ρ_ė)
        _numbers(tube, "tube", where, minimum=0.0, size=2)
    gamma = float(_numbers(doc.get("gamma"), "gamma", where, minimum=0.0))
    if not isinstance(conditions, list) or not all(isinstance(c, dict) and isinstance(c.get("held"), bool)
                                                   and isinstance(c.get("name"), str) for c in conditions):
        raise ParameterError(f"{where}: `conditions` must be a list of {{name, value, limit, held}}; got "
                             f"{conditions!r}: {_RECERTIFY}.")
    held = {c["name"]: c["held"] for c in conditions}
    if "gamma" not in held:
        raise ParameterError(f"{where}: `conditions` has no `gamma` condition (sup ‖δq‖∞ <= Γ): {_RECERTIFY}.")
    upper = dq.get("upper")
    if held["gamma"] != (upper is not None and float(upper) <= gamma):
        raise ParameterError(f"{where}: the `gamma` condition says held = {held['gamma']} but sup ‖δq‖∞ <= "
                             f"{upper!r} against Γ = {gamma!r}: {_RECERTIFY}.")
    if closed is not all(held.values()):
        raise ParameterError(f"{where}: `closed` = {closed!r} but its conditions held {held}: {_RECERTIFY}.")


def _shown(source) -> str:
    return repr(str(source)) if isinstance(source, (str, Path)) else f"({type(source).__name__})"


#: Stored figures recomputed from others of the file are compared to this relative tolerance: the same arithmetic on
#: the same doubles (a witness's params are rounded to 15 decimals as stored: certificate.py).
REDERIVED_RTOL = 1e-12


def witness_difference(box: dict, plant, delta, params) -> str | None:
    """None when a witness's δ gives its params (params = the plant's nominal values + δ over the box's parameters,
    as the certificate made them), else what differs, said for a message.

    Parameters
    ----------
    box : dict
        The certificate's ``box`` ({name: [lower, upper]}).
    plant : Plant
        The nominal plant.
    delta : array_like
        The witness's ``delta`` (one entry per component of the box).
    params : dict
        The witness's ``params``.

    Returns
    -------
    str or None
    """
    from .box import ParameterBox

    names = list(box)
    if not isinstance(params, dict) or any(k not in plant.params for k in names):
        return f"names a plant of parameters {params!r}, not of the box's {names}"
    pbox = ParameterBox(tuple(names), tuple(np.asarray(box[k][0], dtype=float) for k in names),
                        tuple(np.asarray(box[k][1], dtype=float) for k in names))
    nominal = np.concatenate([np.ravel(np.asarray(plant.params[k], dtype=float)) for k in names])
    d = np.asarray(delta, dtype=float).reshape(-1)
    if d.shape != nominal.shape:
        return f"has {d.size} entries, the box {nominal.size}"
    derived = pbox.values(nominal + d)
    for k in names:
        a = np.asarray(derived[k], dtype=float)
        try:
            b = np.asarray(params.get(k, np.nan), dtype=float)
        except (TypeError, ValueError):
            b = np.array(np.nan)
        if a.shape != b.shape or not np.all((a == b) | (np.abs(a - b) <= REDERIVED_RTOL * np.maximum(np.abs(a),
                                                                                                 np.abs(b)))):
            return (f"{d.tolist()} does not give the witness's params {params} from the nominal values "
                    f"{nominal.tolist()} (params = nominal + δ)")
    return None


def check_covers(summary: dict, problem, box=None, name: str = "certificate", *, spread_name: str = "spread",
                 scenario: str | None = None, named: bool = False, forces=None) -> None:
    """Refuse a certificate that does not cover a study's plants and run.

    It covers them when its fingerprint is the problem's (:func:`~robustrack.certification.fingerprint.
    problem_fingerprint`: every plant and constraint parameter, the initial state, the horizon, the nominal
    solve's tolerances — what decides ``problem.nominal_run()``, along which δq is certified; the actual plants'
    friction and disturbance; ``scenario`` names are compared when both are known) and its box contains ``box``
    (a wider certificate is still valid: its supremum is over more plants). The first field that differs is named.

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
    named : bool
        The study's box is its scenario's named uncertain parameters (``[uncertainty.parameters.NAME]``):
        messages name the tables, not ``spread_name`` (keyword-only).
    forces : ForceBox, optional
        The study's friction and disturbance (a scenario's: :func:`~robustrack.scenarios.certify.scenario_force_box`);
        default the problem's actual plant's δQ at its given values (none without one). A certificate with forces
        does not cover a study without them, nor the reverse.

    Raises
    ------
    ParameterError
        The certificate is about other plants or another run, with what differs and the fix.
    """
    if named:
        spread_name = "the [uncertainty.parameters.NAME] tables"
        fix = ("certify the study's scenario with the same --set (robustrack certify NAME --json FILE: its box is the "
               "tables')")
    else:
        fix = "certify the study's scenario with the same --set and " + spread_name + \
              " (robustrack certify NAME --spread S --json FILE)"
    if scenario is not None and summary.get("scenario") not in (None, scenario):
        raise ParameterError(f"`{name}` certifies scenario {summary['scenario']!r}, not {scenario!r}: {fix}.")
    from .fingerprint import fingerprint_difference, problem_fingerprint

    if summary.get("fingerprint") is None:  # (check_document refuses a file or a document without one)
        raise ParameterError(f"`{name}` records no fingerprint of the problem it certifies: certify again "
                             "(robustrack certify NAME --json FILE).")
    if forces is None:
        from .forces import problem_forces

        forces = problem_forces(problem)
    differs = fingerprint_difference(summary["fingerprint"], problem_fingerprint(problem, scenario, forces))
    if differs is not None:
        raise ParameterError(f"`{name}` certifies another problem — {differs}: {fix}.")
    theirs = summary["box"]
    params = problem.nominal.params
    for pname, (clo, _) in theirs.items():  # the box is of this plant's parameters and their dimensions
        mine = np.asarray(params[pname], dtype=float) if pname in params else None
        if mine is None or mine.shape != np.shape(clo):
            raise ParameterError(f"`{name}` certifies a box on `{pname}` of shape {np.shape(clo)}, the study's plant "
                                 + ("has no such parameter" if mine is None else f"has `{pname}` of shape {mine.shape}")
                                 + f": {fix}.")
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
    if summary.get("witness_params") is not None:  # the δ a study starts from (worst-case) must be its plant's
        differs = witness_difference(theirs, problem.nominal, summary["delta"], summary["witness_params"])
        if differs is not None:
            raise ParameterError(f"`{name}`: `bounds.max_norm_dq.witness.delta` {differs}: the file was edited; "
                                 "certify again (robustrack certify NAME --json FILE).")
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
