"""Scenarios: a named, validated configuration that builds a runnable problem.

A :class:`Scenario` is read from TOML (the built-in catalog ships in
``robustrack/scenarios/catalog/``) or built in Python; its ``kind`` names a
:class:`ScenarioKind` in :data:`KINDS` that declares the schema and builds the
plant, constraint, initial state and (where the seed has one) the closed-form
solution.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ConstraintError, ControlFunctionError, ParameterError, ScenarioError
from .config import META_KEYS, apply_overrides, read_toml, validate

__all__ = ["Problem", "ScenarioKind", "Scenario", "KINDS", "register_kind", "load_scenario",
           "list_scenarios", "catalog_path"]


@dataclass(frozen=True)
class Problem:
    """Everything a constrained simulation needs, built from a scenario.

    ``reference(t) -> (T, n)`` is the closed-form q(t) where the seed gives one.
    ``extra_metrics(result) -> dict`` adds scenario-specific numbers to the report.
    ``residual`` says what the constraint's raw residual is, row by row
    (:func:`robustrack.scenarios.units.residual_info`; None: no rows), and ``units`` gives
    each extra metric's unit template (``{q}``, ``{Q}`` … or a plain unit such as ``"J"``).
    """

    plant: object
    constraint: object
    q0: np.ndarray
    qd0: np.ndarray
    t_span: tuple
    reference: Callable | None = None
    extra_metrics: Callable | None = None
    nonideal: Callable | None = None
    residual: object = None
    units: dict | None = None


@dataclass(frozen=True)
class ScenarioKind:
    """A family of scenarios: the schema (sections → keys → defaults) and a builder.

    ``uncertain`` names the plant parameter(s) the Γ Monte Carlo perturbs by default
    (:func:`robustrack.scenarios.gamma.run_gamma`): the masses. ``check(cfg, where)``,
    optional, refuses values no run can use when the scenario is loaded (before any
    time is spent; :func:`~robustrack.scenarios.config.validate`).
    """

    name: str
    schema: dict
    build: Callable[[dict], Problem]
    description: str = ""
    tracking: bool = False
    uncertain: tuple = ("m",)
    check: Callable | None = None


KINDS: dict[str, ScenarioKind] = {}

#: Sections every constrained-simulation kind has.
SIMULATION_DEFAULTS = {"t_end": 10.0, "method": "DOP853", "rtol": 1e-8, "atol": 1e-12, "n_points": 1001}


def register_kind(kind: ScenarioKind) -> ScenarioKind:
    """Add a kind to :data:`KINDS` (name must be new).

    Parameters
    ----------
    kind : ScenarioKind
        The kind to register under ``kind.name``.

    Returns
    -------
    ScenarioKind
        ``kind`` itself.

    Raises
    ------
    ScenarioError
        A kind of that name is already registered.
    """
    if kind.name in KINDS:
        raise ScenarioError(f"scenario kind {kind.name!r} is already registered.")
    KINDS[kind.name] = kind
    return kind


def catalog_path() -> Path:
    """Folder of the built-in scenario TOML files."""
    return Path(str(resources.files("robustrack.scenarios") / "catalog"))


@dataclass(frozen=True)
class Scenario:
    """A validated scenario.

    Attributes
    ----------
    name, kind, title, source : str
    config : dict
        Sections → keys → values, complete (defaults filled in) and validated.
    origin : str
        Where it came from (file path or "<python>").
    """

    name: str
    kind: str
    title: str
    source: str
    config: dict = field(repr=False)
    origin: str = "<python>"

    def build(self) -> Problem:
        """Build the plant, constraint and initial state.

        An error about a constructor's argument (``L``, ``m1``) is re-raised naming the
        scenario key the user typed (``constraint.L``, ``plant.m1``) where that name is a
        key of exactly one section.
        """
        try:
            return KINDS[self.kind].build(self.config)
        except (ParameterError, ConstraintError, ControlFunctionError) as exc:
            message = str(exc)
            sections = {}
            for section, table in self.config.items():
                for key in table if isinstance(table, dict) else ():
                    sections.setdefault(key, []).append(section)
            for key, where in sections.items():
                if len(where) == 1:
                    message = re.sub(rf"`{re.escape(key)}`", f"`{where[0]}.{key}`", message)
            if message == str(exc):
                raise
            raise type(exc)(message) from None

    def with_overrides(self, overrides) -> "Scenario":
        """A new scenario with ``SECTION.KEY=VALUE`` overrides applied and validated."""
        data = apply_overrides(self.config, overrides)
        cfg = validate(data, KINDS[self.kind].schema, origin=f"{self.origin} (with --set)",
                       check=KINDS[self.kind].check)
        return dataclasses.replace(self, config=cfg)

    def to_toml(self) -> str:
        """The scenario as a TOML file that :func:`load_scenario` reads back to the same configuration."""
        from .toml_writer import scenario_toml

        return scenario_toml(self)

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "title": self.title, "source": self.source,
                "config": self.config}


def _from_data(data: dict, origin: str, text: str | None) -> Scenario:
    meta = data.pop("scenario", None)
    if not isinstance(meta, dict):
        raise ScenarioError(f"{origin}: missing [scenario] table with `name` and `kind`.")
    for key in meta:
        if key not in META_KEYS:
            raise ScenarioError(f"{origin}: unknown key `scenario.{key}`; [scenario] accepts {sorted(META_KEYS)}.")
    for key in ("name", "kind"):
        if not isinstance(meta.get(key), str):
            raise ScenarioError(f"{origin}: [scenario] needs a string `{key}`.")
    if meta["kind"] not in KINDS:
        raise ScenarioError(f"{origin}: unknown scenario kind {meta['kind']!r}; known kinds: {sorted(KINDS)}.")
    cfg = validate(data, KINDS[meta["kind"]].schema, origin=origin, text=text, check=KINDS[meta["kind"]].check)
    return Scenario(name=meta["name"], kind=meta["kind"], title=meta.get("title", ""),
                    source=meta.get("source", ""), config=cfg, origin=origin)


def list_scenarios() -> list[Scenario]:
    """The built-in catalog, sorted by name."""
    _ensure_kinds()
    return sorted((load_scenario(p) for p in catalog_path().glob("*.toml")), key=lambda s: s.name)


def load_scenario(name_or_path, overrides=None) -> Scenario:
    """Load a catalog scenario by name, or a TOML file by path; apply overrides.

    Parameters
    ----------
    name_or_path : str or Path
        A catalog name (``robustrack list``), or the path of a ``.toml`` file (any
        argument ending in ``.toml`` is taken as a path).
    overrides : sequence of str, optional
        ``SECTION.KEY=VALUE`` items (``--set``), applied after loading and validated
        (:meth:`Scenario.with_overrides`).

    Returns
    -------
    Scenario
        Validated, defaults filled in; ``origin`` is the file name.

    Raises
    ------
    ScenarioError
        Unknown name (the message lists the catalog), unknown keys (with line),
        wrong types.
    """
    _ensure_kinds()
    path = Path(str(name_or_path))
    if path.suffix == ".toml" and not path.exists():
        raise ScenarioError(f"no scenario file {str(path)!r} (not found); check the path, or give a catalog "
                            "name (robustrack list).")
    if path.suffix != ".toml":
        candidate = catalog_path() / f"{name_or_path}.toml"
        if not candidate.exists():
            names = sorted(p.stem for p in catalog_path().glob("*.toml"))
            raise ScenarioError(f"unknown scenario {str(name_or_path)!r}; the catalog has {names} "
                                "(or give a path to a .toml file).")
        path = candidate
    data, text = read_toml(path)
    origin = path.name
    scenario = _from_data(data, origin, text)
    return scenario.with_overrides(overrides) if overrides else scenario


def _ensure_kinds():
    from . import kinds, model_kinds, tracking_kinds  # noqa: F401  (register the built-in kinds)
