"""Scenario configuration: TOML in, validated nested dict out.

A scenario file has a ``[scenario]`` table (``name``, ``kind``, ``title``,
``source``) and one table per part (``[plant]``, ``[constraint]``, ``[initial]``,
``[simulation]``, ...). Each scenario *kind* declares the schema: every section
and key it understands, with a default that also fixes the type (a :class:`Rows`
default: a matrix given as a list of rows). A key the kind does not know is an error
that names the key, the file and the line; a value of the wrong type or length is an
error that names the expected type. A kind may add value rules (its ``check``), applied
at load too.
"""

from __future__ import annotations

import contextvars
import copy
import difflib
import math
import re
import sys
from pathlib import Path

from ..errors import ScenarioError
from ..tracking.defaults import MIN_ATOL  # the smallest absolute tolerance, and why

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["read_toml", "validate", "refuse_unknown", "key_locator", "apply_overrides", "parse_override", "without_keys",
           "did_you_mean",
           "resolve_file", "Rows",
           "Limits", "Names", "Numbers", "Tables", "Table", "PerJoint", "NamedTables"]

META_KEYS = {"name": str, "kind": str, "title": str, "source": str}


class Rows(list):
    """A schema default for a matrix: a list of rows, each a list of numbers of one length ([] for none)."""


class Limits(list):
    """A schema default for a list of limits: numbers where ``inf`` means unlimited (NaN and −inf are refused)."""


class Numbers(list):
    """A schema default for a list of finite numbers whose length the kind checks (the default is not a length:
    ``uncertainty.dm`` has one number per uncertain value, whichever parameters are named)."""


class PerJoint(float):
    """A schema default for a value per joint: one number for every joint, or a list of numbers (one per joint)."""


class Names(list):
    """A schema default for a list of names: strings, each a Python identifier (e.g. plant parameters)."""


class Tables(list):
    """A schema default for an array of tables (``[[section.key]]`` in TOML): each table's keys and their defaults.

    Parameters
    ----------
    schema : dict
        Key → default (the default fixes the type, as in a section's schema); every table gets the defaults of
        the keys it does not set, and a key not in ``schema`` is an error naming the table (``key[2].what``).
    """

    def __init__(self, schema: dict):
        super().__init__()
        self.schema = schema


class Table(dict):
    """A schema default for a sub-table (``[section.key]`` in TOML): its keys and their defaults.

    A key not in it is an error naming the dotted key the user typed (``compensator.gss.gama``) and the
    keys it accepts; the keys it does not set take their defaults. The validated configuration holds a
    plain dict.
    """


class NamedTables(Names):
    """A schema default for named sub-tables (``[section.key.NAME]`` in TOML), or the older list of names.

    A table of tables is read into ``{NAME: {key: value}}`` (only the keys given; each checked against
    ``schema``, key → ``"number"``, ``"string"``, ``"pair"`` (two numbers) or ``"numbers"``); a list of names
    (the older form) is kept as the list, with ``older`` as a one-line notice naming the newer form.

    Parameters
    ----------
    schema : dict
        Key → the kind of value it takes.
    older : str or None
        The notice for the list form; None: a kind without it (a list of names is refused, [] is "none named").
    names : list of str, optional
        The default (a list of names, as :class:`Names`).
    """

    def __init__(self, schema: dict, older: str, names=()):
        super().__init__(names)
        self.schema = schema
        self.older = older


_VALUE_KINDS = {
    "number": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v), "a finite number"),
    "string": (lambda v: isinstance(v, str), "a string"),
    "pair": (lambda v: isinstance(v, list) and len(v) == 2 and all(_VALUE_KINDS["number"][0](x) for x in v),
             "two finite numbers [lo, hi]"),
    "numbers": (lambda v: isinstance(v, list) and v and all(_VALUE_KINDS["number"][0](x) for x in v),
                "a non-empty list of finite numbers"),
}


#: True while the catalog's own files are read: their older list forms are not the user's to change (no notice).
OLDER_FORM_QUIET = contextvars.ContextVar("robustrack_older_form_quiet", default=False)


def _named_tables(value, default: NamedTables, dotted: str, locate, origin: str):
    """``[dotted.NAME]`` tables checked key by key (or the older list of names, with its notice)."""
    if isinstance(value, list) and all(isinstance(v, str) and v.isidentifier() for v in value):
        if value and default.older is None:
            raise ScenarioError(f"{locate(*dotted.rsplit('.', 1))} must be tables [{dotted}.NAME], one per name, "
                                "each with its range (or percent) and distribution (docs/guide/uncertainty.md); this "
                                f"kind has no list form (without tables it perturbs its masses); got {value!r}.")
        if value and not OLDER_FORM_QUIET.get():
            import warnings

            from ..errors import RobustrackNotice

            warnings.warn(f"{origin}: `{dotted} = [...]` is the older form; {default.older}", RobustrackNotice,
                          stacklevel=2)
        return list(value)
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ScenarioError(f"{locate(*dotted.rsplit('.', 1))} must be a list of names (the older form) or tables "
                            f"[{dotted}.NAME], one per name; got {value!r}.")
    out = {}
    for name, table in value.items():
        here = f"{dotted}.{name}"
        if not name.isidentifier():
            raise ScenarioError(f"{locate(dotted, name).rpartition(': ')[0]}: [{here}] must be named by an identifier "
                                "(a plant parameter's name such as m1).")
        out[name] = {}
        for key, item in table.items():
            if key not in default.schema:
                raise ScenarioError(f"{locate(here, key).rpartition(': ')[0]}: unknown key `{here}.{key}`"
                                    f"{did_you_mean(key, default.schema, f'{here}.')}; [{here}] accepts "
                                    f"{sorted(default.schema)}.")
            test, rule = _VALUE_KINDS[default.schema[key]]
            if not test(item):
                raise ScenarioError(f"{locate(here, key)} must be {rule}; got {item!r}.")
            out[name][key] = [float(x) for x in item] if isinstance(item, list) else (
                float(item) if default.schema[key] == "number" else item)
    return out


def read_toml(path: Path) -> tuple[dict, str]:
    """Read a TOML file; return (data, text). Syntax errors become ScenarioError.

    Parameters
    ----------
    path : str or Path
        The file, read as UTF-8.

    Returns
    -------
    data : dict
        The parsed TOML (tables → keys → values).
    text : str
        The file's text (for line numbers in later messages).

    Raises
    ------
    ScenarioError
        The path is a folder or unreadable, the bytes are not UTF-8, or the text is not
        valid TOML (the message names the file).
    """
    path = Path(path)
    if path.is_dir():
        raise ScenarioError(f"{path}: is a folder, not a scenario file; give the path of a .toml file "
                            "(or a catalog name: robustrack list).")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ScenarioError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} on line {line}); "
                            "a scenario file is TOML, saved as UTF-8.") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: invalid TOML: {exc}") from None


def resolve_file(value, folder, where: str, what: str, hint: str = "") -> Path:
    """The absolute path of a file a scenario names, a relative one found in the scenario file's folder.

    Kinds that read a user's file (the ``python`` kind's factory, the ``urdf`` kind's robot) store the
    absolute path in the configuration, so it is complete on its own (``show`` writes it back,
    campaign workers read the same file).

    Parameters
    ----------
    value : str
        The path as typed.
    folder : pathlib.Path or None
        The scenario file's folder (None: not from a file, the working folder).
    where : str
        How messages name the key (``FILE (line N): `plant.urdf```).
    what : str
        What the file is, for messages (``"Python file"``, ``"URDF file"``).
    hint : str, optional
        Appended to the message when there is no such file (what to give instead).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ScenarioError
        No such file.
    """
    base = (Path(folder) if folder is not None else Path.cwd()).resolve()
    path = Path(str(value)).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise ScenarioError(f"{where}: no {what} {path} (a relative path is read from {base}){hint}.")
    return path.resolve()


def _key_lines(text: str):
    """``(line number, section, key)`` of each table header (key None) and each ``key =`` line of a TOML text."""
    current = None
    for i, line in enumerate(text.splitlines(), start=1):
        head = re.match(r"\s*\[([^\]]+)\]", line)
        if head:
            current = head.group(1).strip()
            yield i, current, None
            continue
        name = re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line)
        if name:
            yield i, current, name.group(1)


def _line_of(text: str | None, section: str, key: str | None = None) -> str:
    """' (line N)' where ``key`` is set inside ``[section]`` of the TOML text (``key`` None: the section's
    header), if found."""
    for i, current, name in _key_lines(text or ""):
        if current == section and name == key:
            return f" (line {i})"
    return ""


def without_keys(text: str | None, overrides) -> str | None:
    """The TOML text with the lines of the keys ``--set`` items override blanked (a message then names no line
    of the file for them: their value came from the command line).

    Parameters
    ----------
    text : str or None
    overrides : iterable of str
        ``SECTION.KEY=VALUE`` / ``SECTION.TABLE.KEY=VALUE`` items.

    Returns
    -------
    str or None
    """
    if not text:
        return text
    wanted = set()
    for item in overrides:
        section, key, _ = parse_override(item)
        table, _, name = f"{section}.{key}".rpartition(".")
        wanted.add((table, name))
    lines = text.splitlines()
    for i, current, name in _key_lines(text):
        if (current, name) in wanted:
            lines[i - 1] = ""
    return "\n".join(lines)


def did_you_mean(word: str, known, prefix: str = "") -> str:
    """' (did you mean `X`?)' for the nearest of ``known`` (difflib's ratio ≥ 0.6), else ''.

    The one suggestion for a mistyped name: a scenario file's keys and sections, and a scenario's name
    (:func:`robustrack.scenarios.load_scenario`).

    Parameters
    ----------
    word : str
        What was typed.
    known : iterable
        The names there are.
    prefix : str
        Put before the suggestion (``"compensator."``).

    Returns
    -------
    str
    """
    near = difflib.get_close_matches(str(word), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean `{prefix}{near[0]}`?)" if near else ""


def refuse_unknown(data: dict, schema: dict, *, origin: str, text: str | None = None, sections=None) -> None:
    """Refuse a section or key that ``schema`` does not know: its name, file and line, and the nearest known one.

    The one place that says "unknown" for a scenario file: :func:`validate` calls it on every section, the
    ``[scenario]`` table and the kinds that must read a section before validating (the ``python`` kind's
    ``[problem]``) call it on theirs.

    Parameters
    ----------
    data : dict
        Parsed TOML (sections → keys → values).
    schema : dict
        Sections → keys (→ defaults): what is known.
    origin : str
        File name for messages.
    text : str, optional
        The TOML text, to give line numbers.
    sections : iterable of str, optional
        Check only these sections of ``data`` (default: all).

    Raises
    ------
    ScenarioError
        ``FILE (line N): unknown key `section.key` (did you mean `section.other`?); [section] accepts [...]``,
        the same for a section, or a section that is not a table.
    """
    for section, table in data.items():
        if sections is not None and section not in sections:
            continue
        if section not in schema:
            raise ScenarioError(
                f"{origin}{_line_of(text, section)}: unknown section [{section}]{did_you_mean(section, schema)}; "
                f"this scenario kind has sections {sorted(schema)}."
            )
        if not isinstance(table, dict):
            raise ScenarioError(f"{origin}: [{section}] must be a table of key = value lines.")
        for key in table:
            if key not in schema[section]:
                raise ScenarioError(
                    f"{origin}{_line_of(text, section, key)}: unknown key `{section}.{key}`"
                    f"{did_you_mean(key, schema[section], f'{section}.')}; [{section}] accepts "
                    f"{sorted(schema[section])}."
                )


def _kind_name(default) -> str:
    if isinstance(default, Table):
        return "a table of key = value lines"
    if isinstance(default, Tables):
        return "an array of tables ([[section.key]] in TOML)"
    if isinstance(default, Rows):
        return "a list of rows of numbers, all of one length (a matrix; [] for none)"
    if isinstance(default, Names):
        return "a list of names (strings such as \"m1\"; [] for none)"
    if isinstance(default, bool):
        return "a boolean"
    if isinstance(default, PerJoint):
        return "a number, or a list of numbers (one per joint)"
    if isinstance(default, (int, float)) or default is None:
        return "a number"
    if isinstance(default, str):
        return "a string"
    if isinstance(default, list):
        return f"a list of {len(default)} numbers" if default else "a list of numbers"
    return type(default).__name__


def _coerce(value, default, where: str):
    """Check ``value`` against the type of ``default``; return the coerced value."""
    if default is None:  # optional number or string
        if isinstance(value, float) and not math.isfinite(value):
            raise ScenarioError(f"{where} must be a finite number or a string; got {value!r}.")
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            return float(value) if isinstance(value, int) else value
        raise ScenarioError(f"{where} must be a number or a string; got {value!r}.")
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, PerJoint):
        items = value if isinstance(value, list) else [value]
        if items and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
            if not all(math.isfinite(v) for v in items):
                raise ScenarioError(f"{where} must be finite; got {value!r}.")
            return [float(v) for v in items] if isinstance(value, list) else float(value)
    elif isinstance(default, (int, float)):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ScenarioError(f"{where} must be a finite number; got {value!r}.")
            return type(default)(value) if isinstance(default, float) or float(value).is_integer() else value
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    elif isinstance(default, Tables):
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            out = []
            for i, table in enumerate(value, start=1):
                here = f"{where[:-1]}[{i}]" if where.endswith("`") else f"{where}[{i}]"
                unknown = sorted(set(table) - set(default.schema))
                if unknown:
                    raise ScenarioError(f"{here}`: unknown key(s) {unknown}; it accepts {sorted(default.schema)}.")
                merged = copy.deepcopy(default.schema)
                for key, item in table.items():
                    merged[key] = _coerce(item, default.schema[key], f"{here}.{key}`")
                out.append(merged)
            return out
    elif isinstance(default, Names):
        if isinstance(value, list) and all(isinstance(v, str) and v.isidentifier() for v in value):
            return list(value)
    elif isinstance(default, Rows):
        rows_ok = isinstance(value, list) and all(
            isinstance(r, list) and r and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in r)
            for r in value)
        if rows_ok and len({len(r) for r in value}) <= 1:
            return [[float(v) for v in r] for r in value]
    elif isinstance(default, list):
        if isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            if isinstance(default, Limits) and not any(math.isnan(v) or v == -math.inf for v in value):
                return [float(v) for v in value]
            if not all(math.isfinite(v) for v in value):
                raise ScenarioError(f"{where} must be a list of finite numbers; got {value!r}.")
            if default and len(value) != len(default) and not isinstance(default, Numbers):
                raise ScenarioError(f"{where} must be a list of {len(default)} numbers; got {len(value)}: {value!r}.")
            return [float(v) for v in value]
    raise ScenarioError(f"{where} must be {_kind_name(default)}; got {value!r}.")


def _sub_table(value, default: Table, dotted: str, locate) -> dict:
    """A ``[section.key]`` sub-table merged over its defaults (``dotted``: "section.key"; ``locate(section, key)``
    names a key the user typed, with its line)."""
    if not isinstance(value, dict):
        raise ScenarioError(f"{locate(*dotted.rsplit('.', 1))} must be {_kind_name(default)} ([{dotted}] in TOML); "
                            f"got {value!r}.")
    for key in value:
        if key not in default:
            raise ScenarioError(f"{locate(dotted, key).rpartition(': ')[0]}: unknown key `{dotted}.{key}`"
                                f"{did_you_mean(key, default, f'{dotted}.')}; [{dotted}] accepts {sorted(default)}.")
    out = copy.deepcopy(dict(default))
    for key, item in value.items():
        out[key] = _coerce(item, default[key], locate(dotted, key))
    return out


def key_locator(origin: str, text: str | None = None):
    """``where(section, key)`` → ``"FILE (line N): `section.key`"``: how messages name a key the user typed.

    Parameters
    ----------
    origin : str
        The scenario file's name.
    text : str, optional
        The TOML text (for the line number).

    Returns
    -------
    callable
    """
    return lambda section, key: f"{origin}{_line_of(text, section, key)}: `{section}.{key}`"


def validate(data: dict, schema: dict, *, origin: str = "<scenario>", text: str | None = None, check=None) -> dict:
    """Merge ``data`` over ``schema`` defaults, refusing unknown sections and keys.

    Parameters
    ----------
    data : dict
        Parsed TOML (sections → keys → values), without the ``[scenario]`` table.
    schema : dict
        Sections → keys → default values (the default fixes the type).
    origin : str
        File name for messages.
    text : str, optional
        The TOML text, to give line numbers.
    check : callable, optional
        A kind's value rules, ``check(cfg, where)``, called on the merged table;
        ``where(section, key)`` gives "FILE (line N): `section.key`" for its messages.

    Returns
    -------
    dict
        A copy of ``schema`` with the values of ``data`` coerced to the defaults' types
        (ints to floats where the default is a float, list entries to floats).

    Raises
    ------
    ScenarioError
        An unknown section or key, a value of the wrong type or length, or one that
        breaks a rule of the kind.
    """
    cfg = copy.deepcopy(schema)
    locate = key_locator(origin, text)
    refuse_unknown(data, schema, origin=origin, text=text)
    for section, table in data.items():
        for key, value in table.items():
            default = schema[section][key]
            if isinstance(default, Table):
                cfg[section][key] = _sub_table(value, default, f"{section}.{key}", locate)
            elif isinstance(default, NamedTables):
                cfg[section][key] = _named_tables(value, default, f"{section}.{key}", locate, origin)
            else:
                cfg[section][key] = _coerce(value, default, locate(section, key))
    for section, table in cfg.items():  # sub-tables not given: their defaults, as plain dicts (lists)
        for key, value in table.items():
            if isinstance(value, Table):
                table[key] = dict(value)
            elif isinstance(value, NamedTables):
                table[key] = list(value)
    _check_values(cfg, origin, text)
    if check is not None:
        check(cfg, locate)
    return cfg


#: The smallest relative tolerance: scipy's solve_ivp silently raises any smaller rtol to
#: 100 × machine epsilon, so a run asked for less would record a tolerance it did not use
#: (and the compiled kernels, which do not raise it, would differ from scipy's). Refused instead.
MIN_RTOL = 100 * 2.220446049250313e-16

#: The most output times of one run (each holds every state, force and residual; the
#: metrics are taken on every solver step anyway, the grid only sets what is stored and drawn).
MAX_N_POINTS = 1_000_000

#: Value rules that no run can use, by section: key -> (test, rule text). Numbers are finite
#: already (:func:`_coerce`); `simulation.transient` is checked against `t_end` below.
_RULES = {
    "simulation": {
        "t_end": (lambda v: v > 0, "> 0 (seconds)"),
        "rtol": (lambda v: MIN_RTOL <= v < 1, f"in [{MIN_RTOL:.3g}, 1) (scipy raises anything smaller to "
                 "100 × machine epsilon)"),
        "atol": (lambda v: v >= MIN_ATOL, f"in [{MIN_ATOL:.0e}, ∞) (below it the error of a step is rounding noise "
                 "the step control cannot see: the run would crawl or fail)"),
        "n_points": (lambda v: isinstance(v, int) and 2 <= v <= MAX_N_POINTS,
                     f"an integer in [2, {MAX_N_POINTS:,}] (the output times)"),
    },
    "compensator": {
        "sample_period": (lambda v: v >= 0, ">= 0 (seconds; 0 = continuous control)"),
        "sign_sample_period": (lambda v: v > 0, "> 0 (seconds; the hold period of a discontinuous f)"),
        "eps": (lambda v: v > 0, "> 0 (the boundary-layer width ε)"),
    },
}


def _check_values(cfg: dict, origin: str, text: str | None) -> None:
    """The values that no run can use are refused here, with their key, rule and line."""
    for section, rules in _RULES.items():
        table = cfg.get(section, {})
        for key, (test, rule) in rules.items():
            if key in table and not test(table[key]):
                raise ScenarioError(
                    f"{origin}{_line_of(text, section, key)}: `{section}.{key}` must be {rule}; got {table[key]!r}."
                )
    sim = cfg.get("simulation", {})
    if "transient" in sim and sim["transient"] >= sim.get("t_end", math.inf):
        raise ScenarioError(
            f"{origin}{_line_of(text, 'simulation', 'transient')}: `simulation.transient` must be < "
            f"`simulation.t_end` = {sim['t_end']:g} s (the bounds are judged after it; < 0: automatic); got "
            f"{sim['transient']!r}.")


def parse_override(item: str) -> tuple[str, str, object]:
    """Parse ``SECTION.KEY=VALUE`` or ``SECTION.TABLE.KEY=VALUE`` (VALUE in TOML syntax; bare words are strings).

    Parameters
    ----------
    item : str
        One ``--set`` item; the text after the first ``=`` is the value, read as a TOML
        value (``3``, ``1.5``, ``[0, 0.1]``, ``true``, ``"x"``), else kept as the
        stripped string.

    Returns
    -------
    (section, key, value) : (str, str, object)
        ``key`` is ``TABLE.KEY`` for a key of a sub-table (``compensator.gss.K`` → ``("compensator", "gss.K", …)``).

    Raises
    ------
    ScenarioError
        No ``=``, or a key that is not ``SECTION.KEY`` or ``SECTION.TABLE.KEY``.
    """
    if "=" not in item:
        raise ScenarioError(f"--set expects SECTION.KEY=VALUE; got {item!r}.")
    path, raw = item.split("=", 1)
    parts = path.strip().split(".")
    if len(parts) not in (2, 3) or not all(parts):
        raise ScenarioError(f"--set key must be SECTION.KEY or SECTION.TABLE.KEY (e.g. simulation.t_end, "
                            f"compensator.gss.K); got {path.strip()!r}.")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return parts[0], ".".join(parts[1:]), value


def apply_overrides(data: dict, overrides) -> dict:
    """Return a copy of raw ``data`` with ``--set`` style overrides applied (validated later).

    Parameters
    ----------
    data : dict
        Raw parsed TOML (sections → keys → values); not modified.
    overrides : iterable, optional
        ``SECTION.KEY=VALUE`` strings (:func:`parse_override`) or already parsed
        ``(section, key, value)`` triples, applied in order (a later one wins);
        a missing section (or sub-table, ``SECTION.TABLE.KEY``) is created. None: no overrides.

    Returns
    -------
    dict
        A deep copy of ``data`` with the overrides set.
    """
    out = copy.deepcopy(data)
    for item in overrides or ():
        section, key, value = parse_override(item) if isinstance(item, str) else item
        table = out.setdefault(section, {})
        if "." in key:  # a key of a sub-table: [section.TABLE]
            name, key = key.split(".", 1)
            if not isinstance(table.get(name), dict):
                table[name] = {}
            table = table[name]
        table[key] = value
    return out
