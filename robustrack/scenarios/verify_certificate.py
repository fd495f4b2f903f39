"""An auditor's re-check of a saved certificate: ``robustrack certify --verify FILE`` (docs/theory/certificate.md,
"Verifying a certificate").

What can be re-evaluated cheaply is: the file read whole (:func:`~robustrack.certification.saved.check_document`);
its fingerprint against the problem the scenario it names builds today (with the ``--set`` it was certified with);
each figure stored beside another it is derived from, recomputed (every witness's δ from its params and the nominal
values, the promised bounds from the compensator at the certified Γ), the first that differs refused by its field;
each lower bound's witness — the plant and time it names, along ``problem.nominal_run()`` (at the closed level at
the tube point it names, with the friction and constant disturbance it names), evaluated by the toolbox's own δq
and M̃ₐ (:func:`~robustrack.tracking.assess.uncertainty_along_run`) — against the lower bound; and a sample of the
box's plants (its vertices, a few random points, the witness; with friction drawn in its box and a disturbance at a
corner of ‖d‖∞ <= D) on the output grid against every upper bound. None of this re-proves an upper bound (that is
the certification's cost); a certificate whose numbers the code that reads it does not reproduce is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["verify_certificate", "Verification", "VerifyCheck"]


@dataclass(frozen=True)
class VerifyCheck:
    """One re-evaluation: what was checked, whether it held, and the numbers."""

    name: str
    held: bool
    text: str


@dataclass(frozen=True)
class Verification:
    """The checks of :func:`verify_certificate`, in order (the first failure ends them).

    Attributes
    ----------
    checks : tuple of VerifyCheck
    """

    checks: tuple

    @property
    def consistent(self) -> bool:
        """Every check held."""
        return bool(self.checks) and all(c.held for c in self.checks)

    def text(self) -> str:
        """One line a check, then the verdict naming the first that failed.

        Returns
        -------
        str
        """
        lines = [f"  [{'ok' if c.held else 'FAILS'}] {c.name}: {c.text}" for c in self.checks]
        failed = next((c for c in self.checks if not c.held), None)
        lines.append("consistent: the file is whole, certifies the scenario's problem, and its witnesses and "
                     "sampled plants are reproduced by this code" if failed is None else
                     f"NOT consistent: {failed.name} — {failed.text}")
        return "\n".join(lines)


def verify_certificate(source, scenario=None, overrides=None, *, name: str = "--verify", samples: int = 8,
                       seed: int = 0) -> Verification:
    """Re-evaluate what a saved certificate states that can be re-evaluated cheaply.

    Parameters
    ----------
    source : str, Path or dict
        The certificate (``robustrack certify --json``'s file or document).
    scenario : str, optional
        The scenario (catalog name or .toml) the certificate is checked against; default the ``source.name`` it
        records, else its ``scenario``.
    overrides : sequence of str, optional
        ``--set`` items; default the ones it records (``source.set``).
    name : str
        How messages name the certificate.
    samples : int, default 8
        Random plants of the box evaluated (besides its vertices, up to 16, and the witnesses).
    seed : int, default 0

    Returns
    -------
    Verification
        ``consistent`` and the checks; a failure of the file or of its fingerprint ends the checks there.

    Raises
    ------
    ScenarioError
        The scenario cannot be loaded (a usage error, not a verdict on the file).
    """
    from ..certification.saved import certificate_summary, check_covers
    from .scenario import load_scenario

    checks = []
    try:
        summary = certificate_summary(source, name)
    except ParameterError as exc:
        return Verification((VerifyCheck("the file", False, str(exc)),))
    doc = _document(source)
    checks.append(VerifyCheck("the file", True, "every field present, finite and consistent"))
    recorded = doc.get("source") if isinstance(doc.get("source"), dict) else {}
    scenario = scenario or recorded.get("name") or summary["scenario"]
    if overrides is None:
        overrides = list(recorded.get("set") or [])
    sc = load_scenario(scenario, overrides)
    problem = sc.build()
    from .certify import scenario_force_box

    try:
        # (the witness's δ is re-derived below, as a check of its own that names its field)
        check_covers({**summary, "witness_params": None}, problem, None, name, scenario=sc.name,
                     forces=scenario_force_box(sc, problem))
    except ParameterError as exc:
        shown = " ".join(f"--set {o}" for o in overrides)
        checks.append(VerifyCheck("the fingerprint", False, f"checked against {scenario!r}{' ' + shown if shown else ''}"
                                  f": {exc} (give the NAME and --set the certificate was made with; they are recorded "
                                  "as `source` in what certify --json writes)"))
        return Verification(tuple(checks))
    checks.append(VerifyCheck("the fingerprint", True, f"the problem {scenario!r} builds"
                              + (f" with --set {' '.join(overrides)}" if overrides else "") + " is the certified one"))
    derived = _rederived(doc, problem)
    checks.extend(derived)
    if all(c.held for c in derived):
        checks.extend(_numbers(doc, summary, problem, samples, seed))
    return Verification(tuple(checks))


def _rederived(doc, problem) -> list:
    """Each stored figure recomputed from what it is derived from, the first that differs refused by its field:
    every witness's δ against its params (params = the nominal values + δ), and the promised bounds against the
    compensator's bounds at the certified Γ (``promised_at_certified_gamma``: Γ the upper bound of sup ‖δq‖∞)."""
    from ..certification.saved import REDERIVED_RTOL, witness_difference

    checks = []
    for quantity, b in doc["bounds"].items():
        w = b["witness"]
        field = f"bounds.{quantity}.witness.delta"
        differs = witness_difference(doc["box"], problem.nominal, w["delta"], w["params"])
        checks.append(VerifyCheck(f"`{field}`", differs is None,
                                  f"the δ {w['delta']} gives the witness's params {w['params']}" if differs is None
                                  else f"the δ {differs}: a figure the file stores that its other figures do not "
                                       "give (edited)"))
        if differs is not None:
            return checks
    promised = doc.get("promised_at_certified_gamma")
    comp = problem.compensator
    if promised is not None and comp is not None:
        gamma = float(doc["bounds"]["max_norm_dq"]["upper"])
        again = comp.bounds(gamma)
        for key, want in (("gamma", gamma), ("e", float(again.e)), ("edot", float(again.edot))):
            field = f"promised_at_certified_gamma.{key}"
            stored = promised.get(key) if isinstance(promised, dict) else None
            ok = isinstance(stored, (int, float)) and abs(stored - want) <= REDERIVED_RTOL * max(abs(stored), abs(want))
            checks.append(VerifyCheck(f"`{field}`", ok, f"stored {stored!r}, recomputed {want!r} ("
                                      + ("the certified Γ, the upper bound of sup ‖δq‖∞" if key == "gamma" else
                                         f"{getattr(comp, 'name', type(comp).__name__)}'s bound at the certified Γ")
                                      + ")" + ("" if ok else ": a figure the file stores that its other figures "
                                                               "do not give (edited)")))
            if not ok:
                return checks
    return checks


def _document(source) -> dict:
    import json
    from pathlib import Path

    return dict(source) if isinstance(source, dict) else json.loads(Path(source).read_text(encoding="utf-8"))


#: The quantity → the key of :func:`~robustrack.tracking.assess.uncertainty_along_run`'s output (M_a⁻¹M's norm is
#: computed here from I − M̃ₐ).
_MEASURED = {"max_norm_dq": "dq_norm", "max_norm_Mtilde": "Mtilde_norm", "max_norm_MaInvM": "MaInvM_norm"}


def _measure(problem, actual, run, t, error=None) -> dict:
    """‖δq‖∞, ‖M̃ₐ‖∞ and ‖M_a⁻¹M‖∞ of ``actual`` along the nominal run at times ``t`` (at q + e, q̇ + ė)."""
    from ..tracking.assess import uncertainty_along_run
    from ..tracking.rhs import nominal_motion

    n = problem.n
    y = run.solution(t)
    q, qd = y[:, :n], y[:, n:]
    qc, qcd = q, qd
    if error is not None:
        e = np.asarray(error, dtype=float)
        qc, qcd = q + e[:n], qd + e[n:]
    Qc = (np.zeros_like(q) if problem.constraint is None else
          np.asarray(nominal_motion(problem.nominal, problem.constraint, q, qd, t).Qc, dtype=float))
    out = uncertainty_along_run(problem.nominal, actual, q, qd, qc, qcd, Qc, t)
    Ma, M = actual.mass_matrix(qc, t), problem.nominal.mass_matrix(qc, t)
    out["MaInvM_norm"] = np.abs(np.linalg.solve(Ma, M)).sum(axis=-1).max(axis=-1)
    return out


def _plant(problem, params: dict, forces=None, given=None):
    """The plant of ``params``, with the friction and constant disturbance ``given`` (a witness's ``forces``: per
    joint coefficients and d) of the box ``forces`` (a ForceBox; None: no forces)."""
    plant = problem.nominal.replace(**{k: np.asarray(v, dtype=float) for k, v in params.items()})
    dQ = None if forces is None or given is None else forces.given_force(
        {k: given[k] for k in ("viscous", "coulomb") if k in given} or None, given.get("disturbance"),
        start=float(problem.t_span[0]))
    if dQ is None:
        return plant
    from ..plants import ForcedPlant

    return ForcedPlant(plant, dQ)


def _numbers(doc, summary, problem, samples, seed) -> list:
    """The witnesses against their lower bounds, sampled plants against the upper bounds."""
    from ..certification.box import ParameterBox

    # The tolerance: the reference is the nominal solve's dense output, re-run here; a re-run on another machine
    # agrees with the certifying one far inside the solver's relative tolerance rtol (a larger difference means
    # another reference), and δq is a small difference of two accelerations, good to about 1e-9 relative in
    # double precision (tests/test_certify.py) — so values are compared to max(rtol, 1e-9) relative.
    tol = max(float(problem.rtol), 1e-9)
    run = problem.nominal_run()
    checks = []
    from ..certification.forces import ForceBox

    forces = None if doc.get("forces") is None else ForceBox.from_dict(doc["forces"])
    for quantity, b in doc["bounds"].items():
        w = b["witness"]
        t = np.array([float(w["t"])])
        try:
            actual = _plant(problem, w["params"], forces, w.get("forces"))
        except (ParameterError, KeyError, TypeError, ValueError) as exc:
            checks.append(VerifyCheck(f"the witness of {quantity}", False, f"its forces {w.get('forces')!r} are not "
                                      f"a plant of the certified forces ({exc})"))
            return checks
        value = float(_measure(problem, actual, run, t, w.get("error"))[_MEASURED[quantity]][0])
        lower = float(b["lower"])
        ok = abs(value - lower) <= tol * max(abs(lower), abs(value), 1e-300)
        checks.append(VerifyCheck(f"the witness of {quantity}", ok,
                                  f"re-evaluated {value:.10g} at t = {float(w['t']):.6g} s and the plant it names, "
                                  f"against the lower bound {lower:.10g} (relative tolerance {tol:.1g})"))
        if not ok:
            return checks
    box = summary["box"]
    names = list(box)
    lows = [np.asarray(box[k][0], dtype=float) for k in names]
    highs = [np.asarray(box[k][1], dtype=float) for k in names]
    pbox = ParameterBox(tuple(names), tuple(lows), tuple(highs))
    lo, hi = pbox.flat_lower, pbox.flat_upper
    k = lo.size
    points = ([np.where(np.array([(v >> j) & 1 for j in range(k)], bool), hi, lo) for v in range(2 ** k)]
              if k <= 4 else [lo, hi])
    rng = np.random.default_rng(seed)
    points += [lo + (hi - lo) * rng.random(k) for _ in range(samples)]
    t = np.asarray(run.t_eval, dtype=float)
    worst = {q: 0.0 for q in doc["bounds"]}
    dims = [] if forces is None else forces.dims
    for p in points:
        given = None
        if forces is not None:  # the friction's coefficients drawn in their box, a constant disturbance at a corner
            given = {**forces.coefficients([a + (b_ - a) * rng.random() for _, _, a, b_ in dims]),
                     "disturbance": (forces.disturbance * rng.choice([-1.0, 1.0], problem.n)).tolist()
                     if forces.disturbance else None}
        measured = _measure(problem, _plant(problem, pbox.values(p), forces, given), run, t)
        for q in worst:
            worst[q] = max(worst[q], float(np.max(measured[_MEASURED[q]])))
    for q, b in doc["bounds"].items():
        upper = b.get("upper")
        ok = upper is None or worst[q] <= float(upper) * (1 + tol)
        checks.append(VerifyCheck(f"sampled plants under the upper bound of {q}", ok,
                                  f"the largest of {len(points)} plants of the box"
                                  + (" (with forces of its box)" if forces is not None else "")
                                  + f" on {t.size} output times is "
                                  f"{worst[q]:.10g}, the certified upper bound {upper!r}"))
        if not ok:
            return checks
    return checks
