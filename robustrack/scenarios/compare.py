"""Comparison runs: every compensator × control function × uncertainty case on one scenario.

:func:`compare` runs the grid ``compensators × fs × cases`` of a tracking
scenario (each row is ``run_scenario(load_scenario(scenario, overrides +
case_sets), compensator=c, f=f)``) and returns a :class:`ComparisonTable`: per
row the tracking errors (max and RMS of ‖e‖∞ and ‖ė‖∞, W 7.2.1–7.2.2), the
largest compensating force ‖Qᵘ‖∞ and nominal control force ‖Qᶜ‖∞, the effort
∫‖Qᵘ‖∞ dt, the chattering measure (total variation Σ‖ΔQᵘ‖₁ per second), the
constraint residual of the controlled actual system, the bounds the compensator
promised and whether they held (and whether what they assume held, W
5.3.3–5.3.6), the uncompensated error, solver evaluations and wall time.

Rules of the grid
-----------------
* A compensator whose control function is fixed (``none``, the sign presets
  ``smc``, ``leitmann-corless``, ``lyapunov-redesign``, and any name that is not a
  registered compensator with an ``f`` parameter, e.g. a baseline) gives one row
  per case with ``f = "—"``; the others give one row per f.
* A case is a name and a list of ``SECTION.KEY=VALUE`` overrides applied on top
  of ``overrides``. ``cases=None`` is the scenario as configured (one case, "as
  configured"); ``"w"`` is W's three δm cases on the triple pendulum
  (:data:`robustrack.scenarios.reproduction.CASES`; only δm changes: W runs case 3
  with Γ′ = Γ = 800: add :func:`~robustrack.scenarios.compensator_table.w_gamma_items` of 800 for that); a string
  ``NAME:SECTION.KEY=VALUE[;SECTION.KEY=VALUE...]`` is one user case
  (:func:`parse_case`).
* Cases from the scenario's named uncertain parameters (``[uncertainty.parameters.NAME]``,
  docs/guide/uncertainty.md; :func:`set_cases`), each the override ``uncertainty.dm=[δ…]`` that shifts the
  actual plant (one δ per named parameter in the tables' order, value − the plant's value, as a
  ``montecarlo`` sample's), so the store resumes them like any case:

  - ``"bounds"``: three cases, ``low`` (every parameter at the low end of its box: its range, or the
    smallest of its cases), ``nominal`` (every one at its nominal value) and ``high`` — the box's two
    corners along the diagonal, not its worst plant (``robustrack worst-case`` searches for that); refused
    for a ``normal`` parameter (no box). The ends are exact: δ is chosen so that the plant's value + δ is
    the end to the last bit.
  - ``"draws:N"``: N draws from the parameters' distributions, ``draw 1`` … ``draw N``, seeded by
    ``seed`` (``robustrack compare --seed``): the same stream as ``robustrack montecarlo --seed``, so
    ``draw i`` is the Monte Carlo's sample i − 1 (its δ, bit for bit; a per-sample friction spread or
    disturbance of ``[actual]`` not named in a table stays as the scenario gives it).
  - ``"cases:NAME"``: one case per listed value of NAME, a parameter of distribution ``"cases"``
    (``NAME = value``), the others at their nominal values.

  The parameters' values of every such case are in the table (``settings["case_values"]``, a line of
  the Markdown); a scenario without tables is refused with the reason.
* A row that raises (a parameter rule, an unknown compensator, a solver failure)
  becomes a failed row with ``status = "failed"`` and the reason in ``error``;
  the other rows still run.

Files and resuming
------------------
With ``out_dir``, every finished row is stored, one transaction each, in
``out_dir/comparison.sqlite`` (a :class:`~robustrack.campaigns.store.ComparisonStore`:
WAL, locked against a second running comparison, like a campaign's store), and
``comparison.md``, ``comparison.csv`` and ``comparison.json`` are rewritten after
every finished row, so an interrupted (or killed) comparison keeps what it finished.
When the store already exists, each of its successful rows whose scenario,
compensator, f, case and full override list (the ``overrides`` column) equal a row
of the new grid is kept instead of rerun; failed rows are run again. A folder whose
comparison files would lose work is refused before anything runs
(:class:`~robustrack.errors.OutputExistsError`): comparison files without their
``comparison.sqlite``, or finished rows of other settings (another scenario,
compensator, f, case or override list), or any previous comparison with
``resume=False`` (a ``comparison.sqlite`` that is not a comparison store is a
:class:`~robustrack.errors.ParameterError`). ``overwrite=True`` (CLI ``--overwrite``,
which also reruns every row) replaces them. An edited scenario TOML file with the
same name is not detected: use ``--overwrite`` (``resume=False, overwrite=True``)
after editing one.

Rows run on the campaigns' executors (:mod:`robustrack.campaigns.executors`): this
process, or a local pool with ``jobs > 1``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import pickle
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .._files import check_writable, write_atomic as _write_atomic
from .._json import from_jsonable, to_jsonable
from .._validate import positive_int
from ..campaigns.executors import Task, make_executor
from ..campaigns.store import ComparisonStore
from ..errors import OutputExistsError, ParameterError, ScenarioError
from .._format import format_value, markdown_table, with_unit
from .config import parse_override
from .runner import run_scenario
from .compensator_table import takes_f as takes_control_function
from .registry import choice_key
from .scenario import Scenario, resolve_scenario
from .units import MASS_UNIT, scenario_units

__all__ = ["COLUMNS", "FIXED_F", "ComparisonTable", "compare", "parse_case", "format_case", "resolve_cases",
           "set_cases", "takes_control_function", "W_CASES_NAME", "FILE_STEM", "SET_CASES"]

#: Columns of every row, in table order.
COLUMNS = ("scenario", "compensator", "f", "case", "dm", "max_abs_e", "rms_e", "max_abs_edot", "rms_edot",
           "max_abs_Qu", "max_abs_Qc", "effort_Qu", "chattering_Qu", "max_constraint_residual_controlled",
           "max_constraint_residual_gap", "bound_e", "bound_edot", "bounds_held", "assumptions_held", "actual_max_abs_e", "nfev", "wall_s",
           "status", "error", "overrides")

#: The f cell of a compensator whose control function is fixed.
FIXED_F = "—"

#: The ``cases`` shorthand for W's three δm cases.
W_CASES_NAME = "w"

#: The ``cases`` drawn from the scenario's named uncertain parameters (:func:`set_cases`).
SET_CASES = ("bounds", "draws:N", "cases:NAME")

_DRAWS = re.compile(r"draws:\s*([0-9]+)\s*")
_VALUES = re.compile(r"cases:\s*([A-Za-z_][A-Za-z0-9_]*)\s*")
#: What names a set case at all (``draws:abc`` is a malformed draws case, not a user case named "draws").
_SET_PREFIX = re.compile(r"(draws|cases):[^=]*", re.IGNORECASE)  # a user case NAME:SECTION.KEY=VALUE has "="

#: The comparison files' name in ``out_dir``: ``comparison.md``, ``.csv``, ``.json``, ``.sqlite``.
FILE_STEM = "comparison"
_METRIC_KEYS = ("max_abs_e", "rms_e", "max_abs_edot", "rms_edot", "max_abs_Qu", "max_abs_Qc", "effort_Qu",
                "chattering_Qu", "max_constraint_residual_controlled", "max_constraint_residual_gap",
                "actual_max_abs_e")
# Markdown headers (the CSV/JSON keep the column names) and the unit of each column: a key of the
# run summary's units["metrics"] / units["bounds"], or a literal unit ("s", "kg"); None: no unit.
_HEADERS = {
    "compensator": "compensator", "f": "f", "case": "case", "dm": "δm", "max_abs_e": "max‖e‖∞",
    "rms_e": "rms‖e‖∞", "max_abs_edot": "max‖ė‖∞", "rms_edot": "rms‖ė‖∞", "max_abs_Qu": "max‖Qᵘ‖∞",
    "max_abs_Qc": "max‖Qᶜ‖∞", "effort_Qu": "∫‖Qᵘ‖∞dt", "chattering_Qu": "TV(Qᵘ) per s",
    "max_constraint_residual_controlled": "max residual, controlled",
    "max_constraint_residual_gap": "max residual gap, controlled − nominal",
    "bound_e": "bound e", "bound_edot": "bound ė", "bounds_held": "held", "assumptions_held": "assumptions held",
    "actual_max_abs_e": "uncomp. max‖e‖∞", "nfev": "nfev", "wall_s": "wall", "status": "status",
}
_COLUMN_UNITS = {"dm": ("literal", MASS_UNIT), "wall_s": ("literal", "s"), "bound_e": ("bounds", "e"),
                 "bound_edot": ("bounds", "edot"),
                 **{k: ("metrics", k) for k in _METRIC_KEYS}}


# ---------------------------------------------------------------------------- cases

def parse_case(text: str) -> tuple[str, list[str]]:
    """Parse a user case ``NAME:SECTION.KEY=VALUE[;SECTION.KEY=VALUE...]``.

    The name ends at the first ``:``; the overrides are separated by ``;`` and
    each is checked as a ``--set`` item. ``NAME:`` (nothing after the colon) is
    the scenario as configured under that name.

    Parameters
    ----------
    text : str
        The case, e.g. ``"heavy tip:uncertainty.dm=[0, 0, 1.5]"``; the name is stripped
        of surrounding spaces, and so is each override (empty ones are dropped).

    Returns
    -------
    (name, overrides) : (str, list of str)

    Raises
    ------
    ParameterError
        No ``:``, an empty name, or an override that is not ``SECTION.KEY=VALUE``.

    Examples
    --------
    >>> parse_case("heavy tip:uncertainty.dm=[0, 0, 1.5];compensator.gss.gamma_prime=800")
    ('heavy tip', ['uncertainty.dm=[0, 0, 1.5]', 'compensator.gss.gamma_prime=800'])
    """
    if not isinstance(text, str) or ":" not in text:
        raise ParameterError(f"a case must be NAME:SECTION.KEY=VALUE[;SECTION.KEY=VALUE...] (or {W_CASES_NAME!r} "
                             f"for W's δm cases, or {', '.join(map(repr, SET_CASES))} of the named uncertain "
                             f"parameters); got {text!r}.")
    name, rest = text.split(":", 1)
    name = name.strip()
    if not name:
        raise ParameterError(f"a case needs a name before ':'; got {text!r}.")
    sets = [item.strip() for item in rest.split(";") if item.strip()]
    for item in sets:
        try:
            parse_override(item)
        except ScenarioError as exc:
            raise ParameterError(f"case {name!r}: {exc}") from None
    return name, sets


def format_case(name: str, overrides) -> str:
    """The text :func:`parse_case` reads back as ``(name, overrides)``.

    Parameters
    ----------
    name : str
        The case name: non-empty, no ``:``, no surrounding spaces.
    overrides : sequence of str
        ``SECTION.KEY=VALUE`` items, none containing ``;``.

    Returns
    -------
    str
        ``NAME:ITEM;ITEM...`` (``NAME:`` without overrides).

    Raises
    ------
    ParameterError
        A name or an override that the case syntax cannot carry.
    """
    if ":" in name or not name.strip() or name != name.strip():
        raise ParameterError(f"a case name must be non-empty, without ':' and surrounding spaces; got {name!r}.")
    if any(";" in item for item in overrides):
        raise ParameterError(f"case {name!r}: an override containing ';' cannot be written as a case string.")
    return f"{name}:" + ";".join(overrides)


def _w_cases() -> dict[str, list[str]]:
    from .reproduction import CASES

    return {name: [f"uncertainty.dm={dm}"] for name, dm in CASES.items()}


def _exact_shift(value: float, end: float) -> float:
    """δ with ``value + δ == end`` exactly where a float δ gives it (``end − value`` rounds; a step or two of
    nextafter repairs it), else ``end − value``."""
    import numpy as np

    delta = end - value
    for _ in range(4):
        got = value + delta
        if got == end:
            break
        delta = float(np.nextafter(delta, np.inf if got < end else -np.inf))
    return delta if value + delta == end else end - value


def set_cases(scenario, spec: str, seed: int = 0) -> tuple[dict, dict]:
    """The cases ``"bounds"``, ``"draws:N"`` or ``"cases:NAME"`` of a scenario's named uncertain parameters.

    Module docstring ("Rules of the grid"): each case is ``uncertainty.dm=[δ…]``, one δ per named parameter
    in the tables' order (the parameter's value minus the plant's, as a campaign's sample).

    Parameters
    ----------
    scenario : Scenario
        With its overrides applied (the tables it ends up with are the set).
    spec : str
        ``"bounds"``, ``"draws:N"`` (N >= 1) or ``"cases:NAME"``.
    seed : int
        The draws' seed (``montecarlo``'s: draw i is its sample i − 1).

    Returns
    -------
    (dict of str to list of str, dict of str to dict)
        Case name → its overrides; case name → {parameter: value}.

    Raises
    ------
    ParameterError
        A scenario without named parameters, a normal parameter for ``bounds``, N < 1, a NAME that is not a
        named ``cases`` parameter — each with the reason.
    """
    from ..campaigns.sampling import check_seed
    from .campaign import campaign_uncertainty
    from .parameter_shift import has_named_parameters

    from ..campaigns.montecarlo import check_samples

    text = spec.strip().lower() if spec.strip().lower() == "bounds" else spec.strip()
    draws, match = _DRAWS.fullmatch(text), _VALUES.fullmatch(text)
    if text != "bounds" and draws is None and match is None:  # before anything is built
        raise ParameterError(f"`cases` {spec!r}: write 'bounds', 'draws:N' with N a whole number >= 1, or "
                             "'cases:NAME' with NAME a named uncertain parameter.")
    if draws is not None:
        check_samples(int(draws.group(1)), "draws:N")
    if not has_named_parameters(scenario):
        raise ParameterError(f"`cases` {spec!r} are drawn from the scenario's named uncertain parameters "
                             f"([uncertainty.parameters.NAME] tables), and scenario {scenario.name!r} names none; "
                             "name them in tables (docs/guide/uncertainty.md), or give cases as "
                             "NAME:SECTION.KEY=VALUE.")
    seed = check_seed(seed, "seed")
    plant = scenario.build().nominal
    unc = campaign_uncertainty(scenario, None, seed)  # a montecarlo's draws of this scenario and seed
    named, values = unc.parameters, unc.nominal_values(plant)
    if text == "bounds":
        normal = [p.name for p in named if p.distribution == "normal"]
        if normal:
            raise ParameterError(f"`cases` 'bounds': uncertain parameter `{normal[0]}` is normal (unbounded), it has "
                                 "no low and high end; give it a range and distribution = 'truncated-normal', or "
                                 "use 'draws:N'.")
        lo, hi = named.box()
        shifts = _shifts(values, {"low": lo, "nominal": named.nominal, "high": hi})
    elif draws is not None:
        n = int(draws.group(1))
        shifts = {f"draw {i + 1}": row for i, row in enumerate(unc.draw(plant, n))}  # montecarlo's δ, bit for bit
    elif match is not None:
        name = match.group(1)
        if name not in named.names or named[name].distribution != "cases":
            have = [p.name for p in named if p.distribution == "cases"]
            raise ParameterError(f"`cases` {spec!r}: `{name}` is not a named uncertain parameter of distribution "
                                 f"'cases' (scenario {scenario.name!r} has {have or 'none'}); cases:NAME gives one "
                                 "case per listed value of such a parameter.")
        j = named.names.index(name)
        points = {}
        for value in dict.fromkeys(named[name].cases):  # each value once, in the listed order
            point = named.nominal.copy()
            point[j] = value
            points[f"{name} = {format_value(value)}"] = point
        shifts = _shifts(values, points)
    else:
        raise ParameterError(f"`cases` {spec!r} is not one of {list(SET_CASES)}.")
    cases, recorded = {}, {}
    for case, delta in shifts.items():
        cases[case] = ["uncertainty.dm=[" + ", ".join(repr(float(d)) for d in delta) + "]"]
        # the actual plant's values: the plant's + δ, as the run computes them
        recorded[case] = {name: float(v + d) for name, v, d in zip(named.names, values, delta)}
    return cases, recorded


def _shifts(values, points: dict) -> dict:
    """Case → δ taking the plant's ``values`` exactly to each point (:func:`_exact_shift`)."""
    return {case: [_exact_shift(float(v), float(p)) for v, p in zip(values, point)] for case, point in points.items()}


def _set_case_spec(item) -> bool:
    """Whether a ``cases`` entry is one of :data:`SET_CASES`."""
    if not isinstance(item, str):
        return False
    text = item.strip()
    return text.lower() == "bounds" or bool(_SET_PREFIX.fullmatch(text))


def resolve_cases(cases, scenario=None, seed: int = 0, values: dict | None = None) -> dict[str, list[str]]:
    """Named cases → override lists.

    ``None`` → ``{"as configured": []}``; ``"w"`` → W's δm cases; ``"bounds"``, ``"draws:N"``,
    ``"cases:NAME"`` → cases of the scenario's named uncertain parameters (:func:`set_cases`); a string
    ``NAME:...`` → one case (:func:`parse_case`); a mapping name → overrides;
    or a list mixing those strings and ``(name, overrides)`` pairs.

    Parameters
    ----------
    cases : None, str, mapping or list
        As above. ``"w"`` and ``"bounds"`` are matched case-insensitively; in a mapping or a pair, a
        single string of overrides stands for a one-item list.
    scenario : Scenario, optional
        The scenario (overrides applied) whose named parameters ``bounds``/``draws:N``/``cases:NAME`` use.
    seed : int
        The seed of ``draws:N``.
    values : dict, optional
        Filled with each set case's parameter values (case name → {parameter: value}).

    Returns
    -------
    dict of str to list of str
        Case name → its ``SECTION.KEY=VALUE`` overrides, in the order given.

    Raises
    ------
    ParameterError
        A malformed case, an empty list, a name used twice, or a set case without a scenario of named
        parameters.
    """
    if cases is None:
        return {"as configured": []}
    if isinstance(cases, (str, Mapping)):
        cases = [cases]
    out: dict[str, list[str]] = {}

    def add(name, sets):
        if name in out:
            raise ParameterError(f"case name {name!r} is used twice in `cases`; names must be unique.")
        if isinstance(sets, str):
            sets = [sets]
        out[name] = [str(s) for s in sets]

    for item in cases:
        if isinstance(item, str) and item.strip().lower() == W_CASES_NAME:
            for name, sets in _w_cases().items():
                add(name, sets)
        elif _set_case_spec(item):
            if scenario is None:
                raise ParameterError(f"`cases` {item!r} draws from a scenario's named uncertain parameters: give the "
                                     "scenario (resolve_cases(cases, scenario)).")
            drawn, recorded = set_cases(scenario, item, seed)
            for name, sets in drawn.items():
                add(name, sets)
            if values is not None:
                values.update(recorded)
        elif isinstance(item, str):
            add(*parse_case(item))
        elif isinstance(item, Mapping):
            for name, sets in item.items():
                add(str(name), sets)
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            add(item[0], item[1])
        else:
            raise ParameterError(f"`cases` entries must be 'w', 'NAME:SECTION.KEY=VALUE;...' or (name, overrides); "
                                 f"got {item!r}.")
    if not out:
        raise ParameterError("`cases` is empty; pass None for the scenario as configured.")
    return out


# ---------------------------------------------------------------------------- the grid

def _names(values, what: str) -> list[str]:
    if isinstance(values, str):
        values = values.split(",")
    names = []
    for v in values:
        v = str(v).strip().lower()
        if v and v not in names:
            names.append(v)
    if not names:
        raise ParameterError(f"`{what}` must name at least one entry; got {values!r}.")
    return names


def _case_dm(scenario, sets):
    """δm (kg) of a case: ``uncertainty.dm`` of the scenario with its overrides (no run); None if invalid."""
    try:
        return list(_load(scenario, sets).config.get("uncertainty", {}).get("dm")) or None
    except (ScenarioError, TypeError):  # the row will fail and say why
        return None


def _grid(scenario, label: str, compensators, fs, cases: dict, overrides) -> list[dict]:
    specs = []
    dms = {case: _case_dm(scenario, [*overrides, *case_sets]) for case, case_sets in cases.items()}
    for comp in compensators:
        for f in (fs if takes_control_function(comp) else [FIXED_F]):
            for case, case_sets in cases.items():
                specs.append({"scenario": label, "compensator": comp, "f": f, "case": case,
                              "sets": [*overrides, *case_sets], "dm": dms[case]})
    return specs


def _key(row: dict) -> tuple:
    return (row["scenario"], row["compensator"], row["f"], row["case"], row["overrides"])


def _load(scenario, sets, compensator=None, f=None):
    return resolve_scenario(scenario, sets, compensator=compensator, f=f)  # validated once


def _empty_row(spec: dict) -> dict:
    row = dict.fromkeys(COLUMNS)
    row.update(scenario=spec["scenario"], compensator=spec["compensator"], f=spec["f"], case=spec["case"],
               dm=spec.get("dm"), overrides="; ".join(spec["sets"]))
    return row


def _run_row(scenario, spec: dict) -> dict:
    """Run one grid row; never raises (a failure becomes ``status = "failed"``)."""
    row = _empty_row(spec)
    start = time.perf_counter()
    try:
        chosen = {"compensator": spec["compensator"], "f": None if spec["f"] == FIXED_F else spec["f"]}
        doc = run_scenario(_load(scenario, spec["sets"], **chosen), **chosen)  # run_scenario finds them applied
    except Exception as exc:  # any failure is this row's, the others still run
        row.update(status="failed", error=f"{type(exc).__name__}: {exc}", wall_s=time.perf_counter() - start)
        return row
    row["wall_s"] = time.perf_counter() - start
    m, b, s = doc["metrics"], doc.get("bounds", {}), doc["solver"]
    row.update({k: m.get(k) for k in _METRIC_KEYS})
    row.update(bound_e=b.get("e"), bound_edot=b.get("edot"), assumptions_held=b.get("assumptions_held"),
               nfev=s.get("nfev"))
    # with nothing promised (compensator "none") there is nothing to hold
    promised = b.get("e") is not None or b.get("edot") is not None
    row["bounds_held"] = b.get("held") if promised else None
    if s.get("success", True):
        row["status"] = "ok"
    else:
        row.update(status="failed", error=f"solver: {s.get('message', 'failed')}")
    return row


# ---------------------------------------------------------------------------- the table

def _csv_cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(v, (list, tuple)):
        return json.dumps(v)
    return str(v)


@dataclass(frozen=True)
class ComparisonTable:
    """Rows of a comparison run (one dict per compensator × f × case, keys :data:`COLUMNS`): what :func:`compare` returns.

    Attributes
    ----------
    rows : tuple of dict
        ``status`` is ``"ok"`` or ``"failed"`` (then ``error`` says why and the
        metric cells are None). Norms over coordinates are infinity norms;
        ``bound_e``/``bound_edot`` are the promised bounds (``inf``: none on that
        error; None: no compensator); ``bounds_held`` is None where nothing was
        promised or the law is sampled; ``overrides`` are the ``--set`` items the
        row ran with (rerun it alone with ``robustrack run``).
    settings : dict
        What was asked: scenario, compensators, fs, cases, overrides.
    """

    rows: tuple
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "rows", tuple(self.rows))

    @property
    def failed(self) -> list[dict]:
        """The rows with ``status == "failed"``."""
        return [r for r in self.rows if r["status"] != "ok"]

    def column_unit(self, column: str) -> str | None:
        """The unit of a column (from ``settings["units"]``, the scenario's plant); None if unknown.

        Parameters
        ----------
        column : str
            A name of :data:`COLUMNS`.

        Returns
        -------
        str or None
            ``""`` for a dimensionless column, None for a column without unit (names,
            flags) or when the settings hold no units (a table written before they did).
        """
        where = _COLUMN_UNITS.get(column)
        if where is None or (column == "dm" and self.settings.get("parameters")):  # named parameters: mixed units
            return None
        if where[0] == "literal":
            return where[1]
        return ((self.settings.get("units") or {}).get(where[0]) or {}).get(where[1])

    def to_markdown(self) -> str:
        """A Markdown table: units in the headers, δm beside each case, 3 significant digits.

        Failed rows show their reason in the status column.

        Returns
        -------
        str
        """
        cols = list(_HEADERS)
        scenarios = sorted({r["scenario"] for r in self.rows})
        lines = [f"Comparison on {', '.join(scenarios) or self.settings.get('scenario', '?')} "
                 f"({len(self.rows)} rows, {len(self.failed)} failed). Norms are infinity norms over the "
                 "coordinates; δm is the actual plant's mass change (actual = nominal + δm); bound ∞: none "
                 "promised; held —: nothing promised or a sampled sign law.", ""]
        if self.settings.get("overrides"):
            lines[-1:] = [f"Overrides: `{'; '.join(self.settings['overrides'])}`", ""]
        if self.settings.get("parameters"):
            lines[0] = lines[0].replace("δm is the actual plant's mass change (actual = nominal + δm)",
                                        f"δ is the actual plant's change of the named uncertain parameters "
                                        f"({', '.join(self.settings['parameters'])}; actual = nominal + δ)")
        if self.settings.get("case_values"):
            seed = f" (draws seeded {self.settings['seed']}: draw i is montecarlo --seed {self.settings['seed']}'s " \
                   "sample i − 1)" if any(c.startswith("draw ") for c in self.settings["case_values"]) else ""
            lines[-1:] = ["Cases of the named uncertain parameters, the actual plant's values" + seed + ": "
                          + "; ".join(f"{case}: " + ", ".join(f"{k} = {format_value(v)}" for k, v in vals.items())
                                      for case, vals in self.settings["case_values"].items()) + ".", ""]
        rows = []
        for r in self.rows:
            cells = [r[c] if isinstance(r[c], str) else format_value(r[c], digits=3) for c in cols]
            if r["status"] != "ok":
                cells[-1] = "failed: " + str(r["error"])
            rows.append(cells)
        header = [with_unit(_HEADERS[c], self.column_unit(c)) for c in cols]
        if self.settings.get("parameters"):
            header[cols.index("dm")] = f"δ({', '.join(self.settings['parameters'])})"
        return "\n".join(lines) + "\n" + markdown_table(header, rows) + "\n"

    def to_csv(self, path) -> Path:
        """Write the rows as CSV (header :data:`COLUMNS`; None → empty, inf → ``inf``, bools true/false)."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(COLUMNS)
        for r in self.rows:
            writer.writerow([_csv_cell(r[c]) for c in COLUMNS])
        return _write_atomic(Path(path), buf.getvalue())

    def to_dict(self) -> dict:
        """``{"settings", "columns", "rows"}``: what :meth:`to_json` writes (before non-finite numbers are made strings).

        Returns
        -------
        dict
        """
        return {"settings": self.settings, "columns": list(COLUMNS), "rows": list(self.rows)}

    def to_json(self, path) -> Path:
        """Write ``{"settings", "columns", "rows"}`` as JSON (non-finite numbers as ``"inf"``/``"nan"``)."""
        text = json.dumps(to_jsonable(self.to_dict(), nonfinite="string"), indent=2, ensure_ascii=False)
        return _write_atomic(Path(path), text + "\n")

    @classmethod
    def from_json(cls, path) -> "ComparisonTable":
        """Read what :meth:`to_json` wrote.

        Raises
        ------
        ParameterError
            The file is not a comparison JSON.
        """
        path = Path(path)
        try:
            doc = from_jsonable(json.loads(path.read_text(encoding="utf-8")))
            rows = [{c: r.get(c) for c in COLUMNS} for r in doc["rows"]]
            if not all(isinstance(r["status"], str) for r in rows):
                raise ValueError("a row without status")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ParameterError(f"{path} is not a comparison JSON written by robustrack ({exc}); delete it, or "
                                 "start over with --overwrite (resume=False, overwrite=True).") from None
        return cls(rows=rows, settings=doc.get("settings", {}))

    def write(self, out_dir) -> dict[str, Path]:
        """Write ``comparison.md``, ``comparison.csv``, ``comparison.json`` into ``out_dir``."""
        out = Path(out_dir)
        return {"markdown": _write_atomic(out / f"{FILE_STEM}.md", self.to_markdown()),
                "csv": self.to_csv(out / f"{FILE_STEM}.csv"),
                "json": self.to_json(out / f"{FILE_STEM}.json")}


# ---------------------------------------------------------------------------- running

def _print_progress(done: int, total: int, row: dict, note: str | None = None, named: bool = False) -> None:
    dm = "" if row.get("dm") is None else \
        f" (δ = {format_value(row['dm'])})" if named else f" (δm = {format_value(row['dm'], MASS_UNIT)})"
    label = f"[{done}/{total}] {row['compensator']} {row['f']} {row['case']}{dm}"
    if note:
        print(f"{label}: {note}", file=sys.stderr, flush=True)
    elif row["status"] == "ok":
        print(f"{label}: done in {format_value(row['wall_s'], 's', digits=3)}", file=sys.stderr, flush=True)
    else:
        print(f"{label}: failed in {format_value(row['wall_s'], 's', digits=3)}: {row['error']}", file=sys.stderr,
              flush=True)


def _run_rows(key: str, payload: bytes, items) -> list:
    """The comparison's :class:`~robustrack.campaigns.executors.Task`: run ``(index, spec)`` rows of one scenario.

    Parameters
    ----------
    key : str
        Unused (every chunk carries the same scenario).
    payload : bytes
        The pickled scenario (a name, a path or a :class:`Scenario`).
    items : sequence of (int, dict)
        Grid rows: their position and spec.

    Returns
    -------
    list of (int, dict)
        ``(index, row)`` per item, in order; a row never raises (:func:`_run_row`).
    """
    scenario = pickle.loads(payload)
    return [(i, _run_row(scenario, spec)) for i, spec in items]


def _failed_rows(items, message: str) -> list:
    """Rows whose worker process died: failed, with ``message`` as their error."""
    return [(i, {**_empty_row(spec), "status": "failed", "error": message}) for i, spec in items]


_ROWS = Task(_run_rows, _failed_rows)


def _store_key(row: dict) -> str:
    return json.dumps(_key(row), ensure_ascii=False)


def _open_store(out: Path, specs: list, resume: bool, overwrite: bool):
    """The store of ``out`` and its finished rows to keep, by key; refuse to lose other work."""
    files = [out / f"{FILE_STEM}.{ext}" for ext in ("md", "csv", "json")]
    path = out / f"{FILE_STEM}.sqlite"
    if not path.exists() and any(p.exists() for p in files) and not overwrite:
        raise OutputExistsError(
            f"`{out}` holds {', '.join(p.name for p in files if p.exists())} but no {path.name} to resume "
            "from; nothing was run. Choose another folder (-o DIR), or replace them with --overwrite "
            "(overwrite=True)."
        )
    store = ComparisonStore.open(path, {"columns": list(COLUMNS)}, name="out_dir")
    try:
        rows = store.rows()
        wanted = {_store_key(_empty_row(spec)) for spec in specs}
        if not resume and rows and not overwrite:
            raise OutputExistsError(
                f"`{path}` holds {len(rows)} rows of a previous comparison and resume=False would replace "
                "them; nothing was run. Pass overwrite=True too, or choose another folder."
            )
        ok = {k: r for k, r in rows.items() if r["status"] == "ok"} if resume else {}
        other = [r for k, r in ok.items() if k not in wanted]
        if other and not overwrite:
            r = other[0]
            raise OutputExistsError(
                f"`{path}` holds {len(other)} finished row(s) of other settings, e.g. "
                f"{r['compensator']} / {r['f']} / {r['case']} on {r['scenario']!r} with overrides "
                f"{r['overrides'] or 'none'!r}, that this comparison would drop; nothing was run. Choose another "
                "folder (-o DIR), or start over there with --overwrite (overwrite=True)."
            )
        kept = {k: r for k, r in ok.items() if k in wanted}
        store.keep_rows(kept)  # failed rows run again; other settings' rows go (overwrite)
    except BaseException:
        store.close()
        raise
    return store, kept


def compare(scenario, *, compensators=("gss", "gd", "gdbar", "none"), fs=("signed-quadratic",), cases=None,
            overrides=(), out_dir=None, progress=None, jobs: int = 1, resume: bool = True,
            overwrite: bool = False, seed: int = 0) -> ComparisonTable:
    """Run every compensator × control function × case of a tracking scenario (module docstring).

    Parameters
    ----------
    scenario : str, path or Scenario
        A catalog name, a TOML path, or a :class:`Scenario`; must be a tracking scenario.
    compensators : sequence of str or comma-separated str
        Compensator names (``compensator.type`` values); fixed-f ones give one row per case.
    fs : sequence of str or comma-separated str
        Control function names for the compensators that take one.
    cases : None, "w", str, mapping or list
        Uncertainty cases (:func:`resolve_cases`): also ``"bounds"``, ``"draws:N"``, ``"cases:NAME"`` of the
        scenario's named uncertain parameters (module docstring).
    overrides : sequence of str
        ``SECTION.KEY=VALUE`` items applied to every row (before the case's own).
    out_dir : path, optional
        Store every finished row in ``out_dir/comparison.sqlite`` and rewrite
        comparison.md/.csv/.json after every row; resume from the store.
    progress : None, False or callable
        None prints ``[k/N] comp f case: done in T s`` to stderr per row; False is
        silent; a callable is called as ``progress(k, N, row)``.
    jobs : int
        Rows run in parallel processes when > 1 (rows are independent): the campaigns'
        local pool (:class:`~robustrack.campaigns.executors.LocalPool`).
    resume : bool
        Keep the successful rows of an existing ``out_dir/comparison.sqlite`` that
        belong to this grid.
    overwrite : bool
        Allow replacing comparison files in ``out_dir`` that hold other work (rows
        of other settings; any previous rows when ``resume=False``).
    seed : int
        The seed of ``"draws:N"`` cases (``montecarlo``'s: draw i is its sample i − 1).

    Returns
    -------
    ComparisonTable
        Rows in grid order (compensator, then f, then case).

    Raises
    ------
    ScenarioError
        Unknown scenario, invalid ``overrides``, or a scenario that is not a tracking one.
    ParameterError
        Malformed cases, empty lists, ``jobs`` < 1, a store that is not a comparison
        store or is in use by another running comparison.
    OutputExistsError
        ``out_dir`` holds comparison files that this run would replace and lose
        (module docstring), and ``overwrite`` is False.
    """
    positive_int(jobs, "jobs")
    overrides = [str(o) for o in ([overrides] if isinstance(overrides, str) else overrides)]
    base = _load(scenario, overrides)  # unknown scenario or bad --set: the whole comparison is wrong
    if not base.spec.tracking:
        raise ScenarioError(f"scenario {base.name!r} (kind {base.kind!r}) has no compensator; compare needs a "
                            "tracking scenario, e.g. 'triple-pendulum'.")
    label = scenario.name if isinstance(scenario, Scenario) else str(scenario)
    values: dict = {}
    comps, f_names = _names(compensators, "compensators"), _names(fs, "fs")
    case_sets = resolve_cases(cases, base, seed, values)
    for what, names, key in (("compensators", comps, "compensator.type"), ("fs", f_names, "compensator.f")):
        allowed = base.spec.choices.get(key, ())
        unknown = [name for name in names if choice_key(name) not in allowed]
        if unknown:  # refused before any row runs (each would fail)
            raise ParameterError(f"`{what}` must name entries of {list(allowed)} (`{key}` of kind {base.kind!r}); "
                                 f"got {unknown}.")
    specs = _grid(scenario, label, comps, f_names, case_sets, overrides)
    units = scenario_units(base)
    settings = {"scenario": label, "compensators": comps, "fs": f_names, "cases": case_sets,
                "overrides": overrides, "units": {"metrics": units["metrics"], "bounds": units["bounds"]}}
    from .parameter_shift import has_named_parameters

    if has_named_parameters(base):  # δ is then of the named parameters (not only masses): named in the header
        settings["parameters"] = list(base.config["uncertainty"]["parameters"])
    if values:
        settings.update(case_values=values, seed=seed)
    report = _print_progress if progress is None or progress is True else (progress or (lambda *a, **k: None))

    store, previous = None, {}
    if out_dir is not None:
        check_writable(out_dir, "out_dir", folder=True)
        store, previous = _open_store(Path(out_dir), specs, resume, overwrite)
    executor = None
    start = time.perf_counter()
    try:
        results: list[dict | None] = [None] * len(specs)
        total, done = len(specs), 0

        def finish(i, row, note=None):
            nonlocal done
            results[i] = row
            done += 1
            if store is not None:
                if note is None:
                    store.add_row(_store_key(row), row, row["status"] == "ok", wall_s=time.perf_counter() - start)
                ComparisonTable([r for r in results if r is not None], settings).write(out_dir)
            if report is _print_progress:
                report(done, total, row, note, named="parameters" in settings)
            else:
                report(done, total, row)

        pending = []
        for i, spec in enumerate(specs):
            kept = previous.get(_store_key(_empty_row(spec)))
            if kept is not None:
                finish(i, {**kept, "dm": spec["dm"]}, "kept from the previous run")
            else:
                pending.append(i)
        executor = make_executor(1 if len(pending) <= 1 else min(jobs, len(pending)))
        if store is not None:
            store.start_session(executor.description)
        payload = pickle.dumps(scenario, protocol=pickle.HIGHEST_PROTOCOL)
        chunks = [[(i, specs[i])] for i in pending]
        try:
            for _, rows in executor.run("compare", payload, chunks, task=_ROWS):
                for i, row in rows:
                    finish(i, row)
        except BaseException:  # Ctrl-C (or a failure): stop the workers; finished rows are stored
            executor.abort()
            raise
        return ComparisonTable(results, settings)
    finally:
        if executor is not None:
            executor.close()
        if store is not None:
            store.end_session(time.perf_counter() - start)
            store.close()
