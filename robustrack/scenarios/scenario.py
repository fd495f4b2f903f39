"""Scenarios: a named, validated configuration that builds a runnable problem.

A :class:`Scenario` is read from TOML (the built-in catalog ships in
``robustrack/scenarios/catalog/``) or built in Python; its ``kind`` names a
:class:`~robustrack.scenarios.registry.ScenarioKind` in
:data:`~robustrack.scenarios.registry.KINDS` that declares the schema and builds the
plant, constraint, initial state and (where the seed has one) the closed-form
solution. The built-in kinds are registered when :mod:`robustrack.scenarios` is
imported (this module is inside it), so a ``Scenario(...)`` built in Python builds.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import ConstraintError, ControlFunctionError, ParameterError, ScenarioError
from .config import META_KEYS, OLDER_FORM_QUIET, apply_overrides, did_you_mean, read_toml, refuse_unknown, without_keys
from .registry import Problem, get_kind

__all__ = ["Scenario", "load_scenario", "list_scenarios", "catalog_path", "scenario_from_toml", "chosen_overrides",
           "resolve_scenario", "scenario_files"]


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
        Where it came from, for messages (the file's name, or "<python>").
    path : str or None
        The file it was loaded from (absolute; None: built in Python).
    spec : ScenarioKind
        The registered kind ``kind`` names, looked up once per scenario (not pickled: a worker looks it up
        again in its own registry).
    """

    name: str
    kind: str
    title: str
    source: str
    config: dict = field(repr=False)
    origin: str = "<python>"
    path: str | None = field(default=None, repr=False)

    @functools.cached_property
    def spec(self):
        """The :class:`~robustrack.scenarios.registry.ScenarioKind` of ``kind`` (the registry entered once).

        Raises
        ------
        ScenarioError
            ``kind`` is not a registered kind (the message lists the known kinds).
        """
        return get_kind(self.kind)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "spec"}

    def build(self) -> Problem:
        """Build the plant, constraint and initial state.

        An error about a constructor's argument (``L``, ``m1``) is re-raised naming the
        scenario key the user typed (``constraint.L``, ``plant.m1``) where that name is a
        key of exactly one section.

        Raises
        ------
        ScenarioError
            ``kind`` is not a registered kind (the message lists the known kinds); a tracking scenario of a user's
            plant that declares no ``uncertainty.gamma`` (:mod:`robustrack.scenarios.declared_gamma`).
        """
        from .declared_gamma import PLACEHOLDER, gamma_unset, refuse_unset_gamma

        # never another plant's Γ (declared_gamma): built with a placeholder, so that the scenario's own errors come
        # first, then refused
        unset = self.spec.tracking and gamma_unset(self.config)
        try:
            config = ({**self.config, "uncertainty": {**self.config["uncertainty"], "gamma": PLACEHOLDER}} if unset
                      else self.config)
            problem = self.spec.build(config)
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
        if unset:
            refuse_unset_gamma(self.name, self.config, self.path)
        return problem

    def with_overrides(self, overrides) -> "Scenario":
        """A new scenario with ``SECTION.KEY=VALUE`` overrides applied and validated."""
        data = apply_overrides(self.config, overrides)
        cfg = self.spec.validate(data, origin=f"{self.origin} (with --set)", folder=self._folder())
        out = dataclasses.replace(self, config=cfg)
        out.__dict__["spec"] = self.spec  # the same kind: not looked up again
        return out

    def _folder(self):
        return Path(self.path).parent if self.path else None

    def to_toml(self) -> str:
        """The scenario as a TOML file that :func:`load_scenario` reads back to the same configuration."""
        from .toml_writer import scenario_toml

        return scenario_toml(self)

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "title": self.title, "source": self.source,
                "config": self.config}


def chosen_overrides(spec, name: str, compensator=None, f=None) -> list:
    """``--compensator`` and ``--f`` as ``--set`` items (``compensator.type``, ``compensator.f``).

    Parameters
    ----------
    spec : ScenarioKind
        The scenario's kind.
    name : str
        The scenario's name, for the message.
    compensator, f : str, optional
        A compensator / control-function name (None or empty: as configured).

    Returns
    -------
    list of str

    Raises
    ------
    ScenarioError
        Either given for a kind without a compensator.
    """
    if not (compensator or f):
        return []
    if not spec.tracking:
        raise ScenarioError(f"scenario {name!r} is a constrained simulation without a compensator; --compensator "
                            "and --f apply to tracking scenarios.")
    return ([f"compensator.type={compensator!r}"] if compensator else []) + ([f"compensator.f={f!r}"] if f else [])


def _from_data(data: dict, origin: str, text: str | None, path: Path | None = None, overrides=None,
               chosen=(None, None), recorded: bool = False) -> Scenario:
    meta = data.pop("scenario", None)
    if not isinstance(meta, dict):
        raise ScenarioError(f"{origin}: missing [scenario] table with `name` and `kind`.")
    refuse_unknown({"scenario": meta}, {"scenario": META_KEYS}, origin=origin, text=text)
    for key in ("name", "kind"):
        if not isinstance(meta.get(key), str):
            raise ScenarioError(f"{origin}: [scenario] needs a string `{key}`.")
    try:
        kind = get_kind(meta["kind"])
    except ScenarioError as exc:
        raise ScenarioError(f"{origin}: {exc}") from None
    overrides = [*(overrides or ()), *chosen_overrides(kind, meta["name"], *chosen)]
    if overrides:  # the file and the --set items, validated together (once); an overridden key has no line
        data, origin = apply_overrides(data, overrides), f"{origin} (with --set)"
        text = without_keys(text, overrides)
    # the catalog's own files keep the list form of uncertainty.parameters for their documented --spread studies:
    # the notice is for the user's files — not for the text robustrack recorded of one (a saved run's scenario), whose
    # notice, if any, was given when it was loaded to make the run
    quiet = OLDER_FORM_QUIET.set(recorded or (path is not None and path.parent == catalog_path()))
    try:
        cfg = kind.validate(data, origin=origin, text=text, folder=None if path is None else path.parent)
    finally:
        OLDER_FORM_QUIET.reset(quiet)
    scenario = Scenario(name=meta["name"], kind=meta["kind"], title=meta.get("title", ""),
                        source=meta.get("source", ""), config=cfg, origin=origin.removesuffix(" (with --set)"),
                        path=None if path is None else str(path))
    scenario.__dict__["spec"] = kind
    return scenario


def list_scenarios() -> list[Scenario]:
    """The built-in catalog, sorted by name."""
    return sorted((load_scenario(p) for p in catalog_path().glob("*.toml")), key=lambda s: s.name)


def _check_overrides(overrides):
    """``overrides`` as a list of str (one str is one item); a ScenarioError for anything else, before loading."""
    if overrides is None:
        return None
    if isinstance(overrides, str):
        return [overrides]
    if not isinstance(overrides, (list, tuple)) or not all(isinstance(item, str) for item in overrides):
        raise ScenarioError(f"`overrides` must be a list of 'SECTION.KEY=VALUE' strings (as --set takes them), e.g. "
                            f"['simulation.t_end=2']; got {overrides!r}.")
    return list(overrides)


def scenario_from_toml(text: str, origin: str) -> Scenario:
    """A scenario from the complete TOML text :meth:`Scenario.to_toml` wrote (e.g. kept in a saved run).

    Parameters
    ----------
    text : str
        The TOML text; the files it names are absolute paths (as ``to_toml`` writes them).
    origin : str
        Where the text came from, for messages (``"run.npz (its recorded scenario)"``).

    Returns
    -------
    Scenario
        Validated; ``path`` is None.

    Raises
    ------
    ScenarioError
        The text is not TOML or not a valid scenario (the message names ``origin``).
    """
    from .config import tomllib

    try:
        data = tomllib.loads(str(text))
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{origin}: invalid TOML: {exc}") from None
    return _from_data(data, origin, str(text), recorded=True)


def resolve_scenario(scenario, overrides=(), *, compensator=None, f=None) -> Scenario:
    """A scenario given as a :class:`Scenario`, a catalog name or a TOML path, with its ``--set`` items and
    ``--compensator``/``--f`` applied and validated once (what every command and study starts from).

    Parameters
    ----------
    scenario : Scenario, str or Path
    overrides : sequence of str
        ``SECTION.KEY=VALUE`` items.
    compensator, f : str, optional
        ``compensator.type`` / ``compensator.f`` (keyword-only; ignored for a given :class:`Scenario` of a kind
        without a compensator, which the caller refuses in its own words).

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        As :func:`load_scenario` and :meth:`Scenario.with_overrides`.
    """
    overrides = list(overrides or ())
    if isinstance(scenario, Scenario):
        spec = scenario.spec
        items = overrides + (chosen_overrides(spec, scenario.name, compensator, f) if spec.tracking else [])
        return scenario.with_overrides(items) if items else scenario
    return load_scenario(str(scenario), overrides or None, compensator=compensator, f=f)


def scenario_files(name_or_path, overrides=(), label: str = "NAME") -> list:
    """The files a scenario reads, without loading it: its TOML file and every file its values name.

    A value names a file when it is the path of one (``plant.urdf = "arm.urdf"``), or its part before ``:``
    is (``problem.factory = "arm.py:build"``), relative to the scenario file's folder or the working folder;
    ``--set`` values count too. The CLI refuses an output that is one of them
    (:func:`robustrack._files.check_apart`). Nothing is imported or validated here: a file that cannot be read
    or parsed contributes itself only (loading it says what is wrong).

    Parameters
    ----------
    name_or_path : str or Path
        A catalog name or a ``.toml`` path, as :func:`load_scenario` takes it.
    overrides : sequence of str
        ``SECTION.KEY=VALUE`` items.
    label : str
        How messages name the argument (``"NAME"``, ``"--scenario"``).

    Returns
    -------
    list of (str, Path)
        ``(label, path)`` pairs: ``("`NAME`", the file)``, ``("`plant.urdf` in `NAME`", the URDF)``, ...
    """
    import tomllib

    path = Path(str(name_or_path))
    if path.suffix != ".toml":
        path = catalog_path() / f"{name_or_path}.toml"
    if not path.is_file():
        return []
    out = [(f"`{label}`", path)]
    folders = [path.resolve().parent, Path.cwd()]

    def named(key, value):
        for text in {value, value.split(":")[0]} if isinstance(value, str) and value.strip() else ():
            for folder in folders:
                candidate = folder / Path(text).expanduser()
                if candidate.is_file():
                    out.append((f"`{key}` in `{label}`", candidate))
                    return

    def walk(prefix, node):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(node, list):
            for v in node:
                walk(prefix, v)
        else:
            named(prefix, node)

    try:
        walk("", tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        pass
    for item in overrides or ():
        key, _, value = str(item).partition("=")
        named(f"--set {key.strip()}", value.strip().strip("'\""))
    return out


def load_scenario(name_or_path, overrides=None, *, compensator=None, f=None) -> Scenario:
    """Load a catalog scenario by name, or a TOML file by path; apply overrides.

    Parameters
    ----------
    name_or_path : str or Path
        A catalog name (``robustrack list``), or the path of a ``.toml`` file (any
        argument ending in ``.toml`` is taken as a path).
    overrides : sequence of str, optional
        ``SECTION.KEY=VALUE`` items (``--set``), applied after loading and validated
        with the file's values, validated once.
    compensator, f : str, optional
        Set ``compensator.type`` / ``compensator.f`` after the overrides (``--compensator``, ``--f``;
        tracking scenarios only; keyword-only).

    Returns
    -------
    Scenario
        Validated, defaults filled in; ``origin`` is the file name, ``path`` the file.

    Raises
    ------
    ScenarioError
        Unknown name (the message lists the catalog), unknown keys (with line),
        wrong types.
    """
    overrides = _check_overrides(overrides)
    path = Path(str(name_or_path))
    if path.suffix == ".toml" and not path.exists():
        raise ScenarioError(f"no scenario file {str(path)!r} (not found); check the path, or give a catalog "
                            "name (robustrack list).")
    if path.suffix != ".toml":
        candidate = catalog_path() / f"{name_or_path}.toml"
        if not candidate.exists():
            names = sorted(p.stem for p in catalog_path().glob("*.toml"))
            raise ScenarioError(f"unknown scenario {str(name_or_path)!r}{did_you_mean(name_or_path, names)}; the "
                                f"catalog has {names} (or give a path to a .toml file).")
        path = candidate
    data, text = read_toml(path)
    return _from_data(data, path.name, text, path.resolve(), overrides, (compensator, f))

