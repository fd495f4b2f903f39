"""The registry of scenario kinds: what a kind declares, and the lookup.

A :class:`ScenarioKind` declares a family of scenarios: its schema (sections → keys →
defaults), its builder (configuration → :class:`Problem`), its value rules, and the
values its enumerated keys accept (``choices``: e.g. the compensators and control
functions of a tracking kind). The command line takes its choices from here
(:func:`accepted`, :func:`tunable`), and loading a scenario refuses any other value,
so the two cannot disagree.

The built-in kinds (:mod:`~robustrack.scenarios.kinds`,
:mod:`~robustrack.scenarios.model_kinds`, :mod:`~robustrack.scenarios.tracking_kinds`)
import only this module and :mod:`~robustrack.scenarios.config`; importing
:mod:`robustrack.scenarios` registers them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import ScenarioError
from .config import validate, without_keys

__all__ = ["Problem", "ScenarioKind", "KINDS", "SIMULATION_DEFAULTS", "register_kind", "get_kind", "accepted",
           "tunable", "choice_key", "typed_keys"]


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


def typed_keys(message: str, renamed: dict) -> str:
    """A message about keys of the current format, naming the old keys the user typed: "`compensator.gamma`
    (read as `compensator.gss.gamma_prime`)".

    Parameters
    ----------
    message : str
    renamed : dict
        New dotted key → old dotted key (a kind's :attr:`ScenarioKind.upgrade`).

    Returns
    -------
    str
    """
    for new, old in renamed.items():
        message = message.replace(f"`{new}`", f"`{old}` (read as `{new}`)")
    return message


def choice_key(value) -> str:
    """The spelling an enumerated value is compared in: stripped, lower case, ``_`` as ``-``.

    Parameters
    ----------
    value : object
        A value of a key with ``choices`` (``compensator.type``, ``compensator.f``).

    Returns
    -------
    str
        ``"GSS "`` → ``"gss"``, ``"signed_quadratic"`` → ``"signed-quadratic"``.
    """
    return str(value).strip().lower().replace("_", "-")


@dataclass(frozen=True)
class ScenarioKind:
    """A family of scenarios: the schema (sections → keys → defaults) and a builder.

    ``uncertain`` names the plant parameter(s) the Γ Monte Carlo perturbs by default
    (:func:`robustrack.scenarios.gamma.run_gamma`): the masses. ``check(cfg, where)``,
    optional, refuses values no run can use when the scenario is loaded (before any
    time is spent; :func:`~robustrack.scenarios.config.validate`). ``choices`` maps
    ``"section.key"`` to the values that key accepts (compared by :func:`choice_key`),
    refused otherwise when the scenario is loaded; the command line offers the same
    values (``--compensator`` the choices of ``compensator.type``). ``tunable`` lists
    the ``compensator.type`` values ``robustrack tune`` can tune. ``upgrade(data, origin) -> (data, renamed)``,
    optional, rewrites keys of an older file format (raw data, before validation) and says so with a
    notice; ``renamed`` maps each new dotted key to the old one typed, and messages about it name both
    (:meth:`upgraded`).
    """

    name: str
    schema: dict
    build: Callable[[dict], Problem]
    description: str = ""
    tracking: bool = False
    uncertain: tuple = ("m",)
    check: Callable | None = None
    choices: dict = field(default_factory=dict)
    tunable: tuple = ()
    upgrade: Callable | None = None

    def validate(self, data: dict, *, origin: str, text: str | None = None, folder=None) -> dict:
        """The complete, validated configuration of ``data`` (schema, value rules, ``choices``, ``check``).

        Parameters
        ----------
        data : dict
            Sections → keys → values (without the ``[scenario]`` table).
        origin : str
            Where the data came from, for messages (keyword-only).
        text : str, optional
            The TOML text, for line numbers in messages.
        folder : pathlib.Path, optional
            The scenario file's folder, where a kind finds the files the scenario names
            (the ``python`` kind's factory); None: not from a file (the working folder).

        Returns
        -------
        dict
            As :func:`~robustrack.scenarios.config.validate`.

        Raises
        ------
        ScenarioError
            A key, type or value the kind refuses (named with its line).
        """
        with self.upgraded(data, origin, text) as (data, text):
            return validate(data, self.schema, origin=origin, text=text, check=self._check)

    @contextlib.contextmanager
    def upgraded(self, data: dict, origin: str, text: str | None = None):
        """``with kind.upgraded(data, origin, text) as (data, text):`` the data in the current format
        (:attr:`upgrade`); a :class:`~robustrack.errors.ScenarioError` raised inside names an old key as typed
        ("`old` (read as `new`)").

        Parameters
        ----------
        data : dict
            Raw scenario data (sections → keys → values).
        origin : str
            Where it came from, for the notice.
        text : str, optional
            The TOML text; the lines of keys an old key overrode are blanked (messages give no line of the
            file for them: their value came from the old key).

        Yields
        ------
        (dict, str or None)
        """
        renamed = {}
        if self.upgrade is not None:
            data, renamed = self.upgrade(data, origin)
            text = without_keys(text, [f"{new}=0" for new in renamed]) if renamed else text
        try:
            yield data, text
        except ScenarioError as exc:
            if not renamed:
                raise
            raise ScenarioError(typed_keys(str(exc), renamed)) from None

    def uncertain_parameters(self, cfg: dict) -> tuple:
        """The plant parameters campaigns and the Γ Monte Carlo perturb in a scenario of this kind.

        Parameters
        ----------
        cfg : dict
            The scenario's validated configuration (a kind whose parameters depend on it reads them there).

        Returns
        -------
        tuple of str
            :attr:`uncertain` for the built-in kinds.
        """
        return tuple(self.uncertain)

    def _check(self, cfg, where):
        for dotted, allowed in self.choices.items():
            section, key = dotted.split(".")
            if key not in cfg.get(section, {}):  # a kind whose table leaves the key out (python: type "problem")
                continue
            value = cfg[section][key]
            if choice_key(value) not in allowed:
                raise ScenarioError(f"{where(section, key)} must be one of {list(allowed)}; got {value!r}.")
        if self.check is not None:
            self.check(cfg, where)


KINDS: dict[str, ScenarioKind] = {}

#: Sections every constrained-simulation kind has.
SIMULATION_DEFAULTS = {"t_end": 10.0, "method": "DOP853", "rtol": 1e-8, "atol": 1e-12, "n_points": 1001}


def register_kind(kind: ScenarioKind) -> ScenarioKind:
    """Add a kind to :data:`KINDS` (name must be new).

    Parameters
    ----------
    kind : ScenarioKind
        The kind to register under ``kind.name``; each key of its ``choices`` must be a
        key of its schema, and each value its spelling under :func:`choice_key`.

    Returns
    -------
    ScenarioKind
        ``kind`` itself.

    Raises
    ------
    ScenarioError
        A kind of that name is already registered, or its ``choices`` name a key its
        schema lacks or a value not spelled as :func:`choice_key` compares it.
    """
    if kind.name in KINDS:
        raise ScenarioError(f"scenario kind {kind.name!r} is already registered.")
    for dotted, allowed in kind.choices.items():
        section, _, key = dotted.partition(".")
        if key not in kind.schema.get(section, {}):
            raise ScenarioError(f"scenario kind {kind.name!r}: `choices` names {dotted!r}, not a key of its schema.")
        if any(choice_key(v) != v for v in allowed):
            raise ScenarioError(f"scenario kind {kind.name!r}: the choices of {dotted!r} must be spelled as "
                                f"choice_key gives them (lower case, '-'); got {list(allowed)}.")
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> ScenarioKind:
    """The registered kind of that name.

    Parameters
    ----------
    name : str
        A key of :data:`KINDS` (a scenario's ``kind``).

    Returns
    -------
    ScenarioKind

    Raises
    ------
    ScenarioError
        No kind of that name; the message lists the known kinds.
    """
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise ScenarioError(f"unknown scenario kind {name!r}; known kinds: {sorted(KINDS)}.") from None


def _union(values_of) -> tuple:
    out = []
    for kind in KINDS.values():
        out += [v for v in values_of(kind) if v not in out]
    return tuple(out)


def accepted(key: str) -> tuple:
    """The values some registered kind accepts for a key (the command line's choices).

    Parameters
    ----------
    key : str
        ``"section.key"``, e.g. ``"compensator.type"`` (``--compensator``) or
        ``"compensator.f"`` (``--f``).

    Returns
    -------
    tuple of str
        In registration order, without repeats; empty when no kind declares the key.
    """
    return _union(lambda kind: kind.choices.get(key, ()))


def tunable() -> tuple:
    """The compensators ``robustrack tune`` can tune in some registered kind (``tune --compensator``).

    Returns
    -------
    tuple of str
        The union of the kinds' ``tunable``, in registration order.
    """
    return _union(lambda kind: kind.tunable)
