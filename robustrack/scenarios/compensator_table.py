"""The ``[compensator]`` table of a tracking scenario: one sub-table per compensator, one meaning per name.

``[compensator]`` holds what every compensator shares: ``type`` (which one runs), the control function
(``f``, ``eps``, ``alpha_c``, ``p``: W's g, the same for every law that takes one) and the hold
(``sample_period``, ``sign_sample_period``). Each compensator's own parameters are in its own table,
named as the fields of its class (:data:`robustrack.controllers.COMPENSATORS`)::

    [compensator]
    type = "gss"
    f = "signed-quadratic"

    [compensator.gss]          # robustrack.controllers.GSS(K=…, gamma_prime=…, …)
    K = 10.0
    gamma_prime = 100.0        # Γ′: the design value in the gain β (W 7.2.15)

    [compensator.gd]           # GD(…, gamma=…): Γ in the gain ρ (W 8.2.26)
    gamma = 100.0

The same names are typed on the command line (``--set compensator.gss.gamma_prime=800``) and printed
in reports (``Γ′ (compensator.gss.gamma_prime)``). Γ, the bound on ‖δq‖∞ the promised bounds are judged at
(:attr:`robustrack.tracking.TrackingProblem.gamma`), belongs to the uncertainty: ``uncertainty.gamma``
(docs/guide/command-line.md, "The compensator's tables").

Files written before (one flat ``[compensator]`` table of every compensator's keys, with ``gamma``,
``Kd_ct``, ``lqr_q``, ``lqr_r``) are read with one :class:`RenamedKeyNotice` naming the new keys
(:func:`upgrade_flat_table`); so are ``--set`` items in the old spelling.
"""

from __future__ import annotations

import dataclasses
import re
import warnings

from ..controllers import COMPENSATORS, control_function, make_compensator
from ..errors import ControlFunctionError, ParameterError, RobustrackNotice, ScenarioError
from .config import Table
from .registry import choice_key

__all__ = ["COMPENSATOR_SHARED", "LEGACY_KEYS", "RenamedKeyNotice", "compensator_schema", "takes_f", "law_keys",
           "w_gamma_items", "check_compensator",
           "upgrade_flat_table", "build_compensator", "in_key_names", "compensator_keys"]

#: The keys of ``[compensator]`` itself (W's settings, 7.3, 8.2.43, 8.3.24): the compensator, the control
#: function the laws that take one share, and the zero-order hold.
COMPENSATOR_SHARED = {
    "type": "gss",
    "f": "signed-quadratic",
    "eps": 1e-2,
    "alpha_c": 2.0,
    "p": 2.0,
    "sample_period": 0.0,
    "sign_sample_period": 1e-3,
}

#: The control function's keys in ``[compensator]`` (:func:`robustrack.controllers.control_function`).
_F_KEYS = ("f", "eps", "alpha_c", "p")

#: The old flat table's keys that moved (read-only: files and ``--set`` items written before the
#: per-compensator tables): old key → the new dotted keys that take its value, in the order the notice
#: names them. ``gamma`` was Γ′ of GSS, Γ of GD and, for every compensator, Γ of the bounds.
LEGACY_KEYS = {
    "gamma": ("compensator.gss.gamma_prime", "compensator.smc.gamma_prime", "compensator.gd.gamma",
              "compensator.leitmann-corless.gamma", "uncertainty.gamma"),
    "K": ("compensator.gss.K", "compensator.smc.K"),
    "beta0": ("compensator.gss.beta0", "compensator.smc.beta0"),
    "alpha0": tuple(f"compensator.{c}.alpha0" for c in ("gss", "gd", "gdbar", "smc", "leitmann-corless",
                                                        "lyapunov-redesign")),
    "sigma": tuple(f"compensator.{c}.sigma" for c in ("gss", "gd", "gdbar", "smc", "leitmann-corless",
                                                      "lyapunov-redesign")),
    "Ki": ("compensator.gd.Ki", "compensator.leitmann-corless.Ki"),
    "Kd": ("compensator.gd.Kd", "compensator.leitmann-corless.Kd"),
    "rho0": ("compensator.gd.rho0", "compensator.leitmann-corless.rho0"),
    "alpha_eps": ("compensator.gd.alpha_eps", "compensator.leitmann-corless.alpha_eps"),
    "k": ("compensator.gdbar.k", "compensator.lyapunov-redesign.k"),
    "n": ("compensator.gdbar.n",),
    "Kp": ("compensator.computed-torque.Kp",),
    "Kd_ct": ("compensator.computed-torque.Kd",),
    "lqr_q": ("compensator.lqr.Q",),
    "lqr_r": ("compensator.lqr.R",),
}


class RenamedKeyNotice(RobustrackNotice):
    """A scenario file or ``--set`` item used a key's old name: said in one line with the new name(s)."""


def w_gamma_items(value) -> list:
    """The ``--set`` items of W's runs' setting Γ′ = Γ = ``value`` (W 7.3, 8.2.43): the design value of every
    law that takes one (GSS's and SMC's Γ′, GD's and Leitmann–Corless's Γ) and ``uncertainty.gamma``.

    Parameters
    ----------
    value : float

    Returns
    -------
    list of str
        E.g. ``["compensator.gss.gamma_prime=800.0", …, "uncertainty.gamma=800.0"]``.
    """
    return [f"{key}={float(value)!r}" for key in LEGACY_KEYS["gamma"]]


def takes_f(name: str) -> bool:
    """Whether the compensator registered as ``name`` takes a control function f.

    Parameters
    ----------
    name : str
        A registry name (:data:`robustrack.controllers.COMPENSATORS` key, exact). A name not in the
        registry (``"none"``) gives False, and so does a compensator whose control function is fixed (the
        sign presets) or absent (the baselines).

    Returns
    -------
    bool
        True when the compensator's class has an ``f`` init parameter.
    """
    cls = COMPENSATORS.get(name)
    return cls is not None and any(fld.name == "f" and fld.init for fld in dataclasses.fields(cls))


def law_keys(name: str) -> dict:
    """The keys of ``[compensator.NAME]``: the scalar or vector fields of the class, with its defaults.

    Parameters
    ----------
    name : str
        A key of :data:`robustrack.controllers.COMPENSATORS`.

    Returns
    -------
    dict
        Field name → default, for the fields a TOML value can give (numbers, lists of numbers): not the
        control function ``f`` (in ``[compensator]``) nor a model the law is designed on (LQR's A, B).
    """
    out = {}
    for fld in dataclasses.fields(COMPENSATORS[name]):
        value = fld.default
        if not fld.init or fld.name == "f" or value is dataclasses.MISSING:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[fld.name] = float(value)
        elif isinstance(value, tuple) and all(isinstance(v, (int, float)) for v in value):
            out[fld.name] = [float(v) for v in value]
    return out


def compensator_schema(design_gamma: float | None = None) -> dict:
    """The ``[compensator]`` section of a tracking kind's schema: :data:`COMPENSATOR_SHARED` and one sub-table
    per registered compensator.

    Parameters
    ----------
    design_gamma : float, optional
        The kind's default design value of Γ′ (``gamma_prime``) and Γ (``gamma``) where a law takes one
        (None: the classes' own defaults).

    Returns
    -------
    dict
        A fresh schema section (:class:`~robustrack.scenarios.config.Table` per compensator).
    """
    section = dict(COMPENSATOR_SHARED)
    for name in COMPENSATORS:
        keys = law_keys(name)
        if design_gamma is not None:
            keys.update({k: float(design_gamma) for k in ("gamma_prime", "gamma") if k in keys})
        section[name] = Table(keys)
    return section


def upgrade_flat_table(data: dict, origin: str, default_type: str = "gss") -> tuple[dict, dict]:
    """Raw scenario data with an old flat ``[compensator]`` table's keys moved to their tables (one notice).

    Parameters
    ----------
    data : dict
        Parsed TOML or a configuration with ``--set`` items applied (not modified).
    origin : str
        Where it came from, for the notice (the file's name).
    default_type : str
        The kind's ``compensator.type`` default: the notice names the new keys of the compensator that
        runs, the others by count.

    Returns
    -------
    data : dict
        ``data`` itself when no old key is in it; else a copy with each key of :data:`LEGACY_KEYS` replaced
        by the new keys it names (the old key's value wins over a value already in the new table).
    renamed : dict
        New dotted key → the old one the user typed (for messages, :func:`~robustrack.scenarios.registry.typed_keys`).
    """
    table = data.get("compensator")
    old = [key for key in (table if isinstance(table, dict) else ()) if key in LEGACY_KEYS]
    if not old:
        return data, {}
    out = {section: dict(value) if isinstance(value, dict) else value for section, value in data.items()}
    comp = out["compensator"]
    running = choice_key(comp.get("type", default_type))
    said, others, renamed = [], 0, {}
    for key in old:
        value = comp.pop(key)
        for dotted in LEGACY_KEYS[key]:
            renamed[dotted] = f"compensator.{key}"
            section, *path = dotted.split(".")
            target = out.setdefault(section, {})
            if len(path) == 2:
                sub = target.get(path[0])
                target[path[0]] = sub = dict(sub) if isinstance(sub, dict) else {}
                sub[path[1]] = value
            else:
                target[path[0]] = value
        mine = [d for d in LEGACY_KEYS[key] if d.startswith(f"compensator.{running}.") or d.startswith("uncertainty.")]
        rest = len(LEGACY_KEYS[key]) - len(mine)
        if mine:
            said.append(f"`compensator.{key}` as {' and '.join(f'`{d}`' for d in mine)}"
                        + (f" (and in {rest} other table{'s' if rest > 1 else ''})" if rest else ""))
        else:
            others += 1
    text = "; ".join(said) if said else f"{len(old)} key(s) of compensators other than {running!r}"
    if said and others:
        text += f"; {others} key(s) of the other compensators in their own tables"
    warnings.warn(f"{origin}: old key(s) of the flat [compensator] table: read {text} — each compensator's "
                  f"parameters are now in its own table, [compensator.NAME] (`robustrack show` prints the new form).",
                  RenamedKeyNotice, stacklevel=2)
    return out, renamed


def check_compensator(cfg: dict, where=None) -> None:
    """Build the ``[compensator]`` table's compensator once at load, so a value it refuses is said before any run.

    Parameters
    ----------
    cfg : dict
        A validated tracking configuration.
    where : callable, optional
        ``where(section, key)`` → ``"FILE (line N): `section.key`"`` (a kind's ``check``): the message then
        starts with the file and line of the first key it names.

    Raises
    ------
    ScenarioError
        As :func:`build_compensator`.
    """
    try:
        build_compensator(cfg["compensator"])
    except ScenarioError as exc:
        named = re.search(r"`(compensator(?:\.[A-Za-z0-9_-]+)+)`", str(exc))
        if where is None or named is None:
            raise
        section, _, key = named.group(1).rpartition(".")
        raise ScenarioError(f"{where(section, key).rpartition(': `')[0]}: {exc}") from None


def build_compensator(c: dict):
    """The compensator of a validated ``[compensator]`` table (None for type "none").

    Parameters
    ----------
    c : dict
        A complete ``[compensator]`` table (:func:`compensator_schema`). ``type`` (case-insensitive)
        picks the compensator, built from its own table ``c[type]`` (the class's field names); for the
        compensators that take a control function, ``f``, ``eps``, ``alpha_c`` and (signed-power) ``p``
        build it.

    Returns
    -------
    Compensator or None
        Built by :func:`robustrack.controllers.make_compensator`; None for ``"none"``.

    Raises
    ------
    ScenarioError
        A ``type`` not registered (the valid ones listed), or a value the compensator refuses (named by
        its ``compensator.NAME.KEY``).
    """
    kind = choice_key(c["type"])
    if kind == "none":
        return None
    if kind not in COMPENSATORS or kind not in c:
        raise ScenarioError(f"`compensator.type` must be one of {['none', *COMPENSATORS]}; got {c['type']!r}.")
    params = dict(c[kind])
    try:
        if takes_f(kind):
            shape = {"signed-quadratic": {"alpha_c": c["alpha_c"]}, "cubic": {"alpha_c": c["alpha_c"]},
                     "signed-power": {"alpha_c": c["alpha_c"], "p": c["p"]}}.get(choice_key(c["f"]), {})
            params["f"] = control_function(c["f"], eps=c["eps"], **shape)
        return make_compensator(kind, **params)
    except (ParameterError, ControlFunctionError) as exc:
        raise ScenarioError(in_key_names(exc, kind)) from None


def in_key_names(exc, kind: str) -> str:
    """An error message about a compensator's arguments, in the keys of the scenario file.

    Parameters
    ----------
    exc : Exception
        The error raised by a compensator or control-function constructor (or the force check).
    kind : str
        The compensator's registry name (its ``compensator.type``).

    Returns
    -------
    str
        The message with each backticked argument name (``gamma_prime``) replaced by its key
        (``compensator.gss.gamma_prime``).
    """
    message = str(exc)
    for arg, key in _key_names(kind).items():
        message = message.replace(f"`{arg}`", f"`compensator.{key}`")
    return message


def compensator_keys(compensator) -> dict:
    """The key, after ``compensator.``, of each parameter of a compensator built from a scenario.

    Parameters
    ----------
    compensator : Compensator
        Built by :func:`build_compensator` (its registry ``name`` is used).

    Returns
    -------
    dict
        Field name (e.g. ``gamma_prime``) → key (``gss.gamma_prime``), plus ``eps``, ``alpha_c``, ``p``
        for the laws that take a control function; empty for a compensator no scenario builds.
    """
    return _key_names(getattr(compensator, "name", ""))


def _key_names(kind: str) -> dict:
    """Field name → key after ``compensator.`` of a compensator kind (with ε, α_c, p where it takes f)."""
    if kind not in COMPENSATORS:
        return {}
    keys = {arg: f"{kind}.{arg}" for arg in law_keys(kind)}
    if takes_f(kind):
        keys.update({k: k for k in _F_KEYS[1:]})
    return keys

