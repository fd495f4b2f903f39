"""A scenario as the TOML file that loads it again (``robustrack show``, a report's scenario.toml)."""

from __future__ import annotations

import json
import math

import numpy as np

from ..errors import ParameterError
from .registry import choice_key

__all__ = ["toml_value", "scenario_toml"]


def toml_value(v) -> str:
    """One configuration value as TOML.

    Parameters
    ----------
    v : bool, int, float, str, or a list / tuple / array of those
        Non-finite floats become ``inf``, ``-inf``, ``nan`` (TOML has them); floats are
        written with ``repr`` (they read back exactly); strings as basic strings.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        A value TOML cannot hold here (a table, None, another type).
    """
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise ParameterError(f"cannot write a configuration value of type {type(v).__name__} as TOML: {v!r}.")


def scenario_toml(scenario, *, current_form: bool = False) -> str:
    """The complete scenario (``[scenario]`` table + every section) as a loadable TOML file.

    Parameters
    ----------
    scenario : Scenario
        Its ``name``, ``kind``, ``title`` and ``source`` go into the ``[scenario]`` table,
        then one table per section of ``scenario.config`` (defaults filled in), so
        ``load_scenario`` of the text gives the same configuration. A sub-table (``[compensator.gd]``)
        is written when it is the one ``type`` picks or differs from the kind's defaults (the others
        read back as those defaults).
    current_form : bool
        Keyword-only. Write an older list ``uncertainty.parameters = [...]`` in the current form, one table
        ``[uncertainty.parameters.NAME]`` each with ``percent`` of the older form's default spread (the same
        uniform ±10 % draws; docs/guide/uncertainty.md): what a study writes for the user to run again
        (``tune -o``), without the loader's notice on the older form. Default False: the configuration as it is
        (``show``, a report's scenario.toml).

    Returns
    -------
    str
        The TOML text, ending in a newline.

    Raises
    ------
    ParameterError
        A configuration value that TOML cannot hold (not a bool, number, string or list).
    """
    meta = {"name": scenario.name, "kind": scenario.kind, "title": scenario.title, "source": scenario.source}
    lines = ["[scenario]"] + [f"{k} = {toml_value(v)}" for k, v in meta.items()]
    schema = scenario.spec.schema
    for section, table in scenario.config.items():
        if current_form and section == "uncertainty" and isinstance(table.get("parameters"), list):
            table = {**table, "parameters": _named_tables(table["parameters"])}
        tables = {k: v for k, v in table.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
        subs = {k: v for k, v in table.items() if isinstance(v, dict)}
        lines += ["", f"[{section}]"] + [f"{k} = {toml_value(v)}" for k, v in table.items()
                                         if k not in tables and k not in subs and not _undeclared(v)]
        for key, items in tables.items():  # an array of tables: [[section.key]]
            for item in items:
                lines += ["", f"[[{section}.{key}]]"] + [f"{k} = {toml_value(v)}" for k, v in item.items()]
        for key, sub in subs.items():  # a sub-table: [section.key], where it says something
            if sub and all(isinstance(v, dict) for v in sub.values()):  # named sub-tables: [section.key.NAME]
                for name, item in sub.items():
                    lines += ["", f"[{section}.{key}.{name}]"] + [f"{k} = {toml_value(v)}" for k, v in item.items()]
            elif key == choice_key(table.get("type")) or sub != schema.get(section, {}).get(key):
                lines += ["", f"[{section}.{key}]"] + [f"{k} = {toml_value(v)}" for k, v in sub.items()]
    return "\n".join(lines) + "\n"


def _undeclared(value) -> bool:
    """A value the user did not declare and that has no default (NaN,
    :data:`~robustrack.scenarios.declared_gamma.UNSET`): left out, so the file reads back the same."""
    return isinstance(value, float) and value != value


def _named_tables(names) -> dict:
    """The older list of uncertain parameters as the current tables: each uniform ±DEFAULT_SPREAD (``percent``), the
    draws the list gave (docs/guide/uncertainty.md)."""
    from .parameter_shift import DEFAULT_SPREAD

    return {str(name): {"percent": 100.0 * DEFAULT_SPREAD} for name in names}
