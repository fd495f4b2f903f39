"""Scenarios of a user's own system: ``kind = "python"`` names a function that returns a TrackingProblem.

A scenario file of this kind reads::

    [scenario]
    name = "my-arm"
    kind = "python"

    [problem]
    factory = "my_arm.py:problem"     # FILE.py:FUNCTION (beside the TOML) or package.module:function

    [uncertainty]                     # optional
    dm = [0.1, -0.2]                  # actual = nominal with the named parameters + dm ([]: the factory's actual)
    gamma = 20.0                      # Γ the bounds are judged at (default: the factory's; with a type: none, declare it)

    [uncertainty.parameters.m1]       # the plant parameters campaigns draw (and dm shifts), one table each
    percent = 10                      # or range = [lo, hi]; nominal defaults to the plant's value
    [uncertainty.parameters.m2]
    sigma = 0.05                      # normal; with a range: truncated normal; cases = [...]: the listed values

    [compensator]                     # optional: type = "problem" (the default) keeps the factory's
    type = "gss"                      # any other type builds one from its table, as in the catalog

    [compensator.gss]                 # the compensator's parameters, named as its class's fields
    gamma_prime = 20.0

    [actual]                          # optional: forces the model leaves out, added to the actual plant
    viscous = [0.5, 0.2]              # as the urdf kind's (scenarios/actual_forces.py): viscous, coulomb,
    coulomb = 0.3                     # coulomb_width, friction_spread, and [actual.disturbance]; each coefficient
                                      # may be a named uncertain parameter ([uncertainty.parameters.viscous_x])

    [simulation]                      # optional: defaults are the factory's own settings
    t_end = 5.0

``FUNCTION()`` takes no argument and returns a :class:`~robustrack.tracking.problem.TrackingProblem`
(the nominal plant, the constraint, the initial state, and whatever else the user sets). Every
command that takes a tracking scenario then runs it: ``run``, ``report``, ``compare``,
``montecarlo``, ``worst-case``, ``tune``, ``gamma``. The ``[simulation]`` defaults are read from
the factory's problem, so ``robustrack show FILE.toml`` prints the settings the run uses.

A relative ``FILE.py`` is found beside the scenario file and stored with its absolute path (the
configuration is complete on its own: campaign workers and ``show`` see the same file). The
module is imported under a name of its own (``robustrack_user_<stem>_<digest>``), again when the
file changes; its classes pickle by reference in a forked process pool, and a worker that starts
fresh (a Dask worker) imports the file itself when it builds the scenario.

As with ``python FILE.py``, the file's folder is on the import path while the file is imported and while
its factory runs, so ``FILE.py`` can import a module beside it (``from arm_model import mass_matrix``).
Only then: the entry is removed afterwards (the modules imported meanwhile stay imported), so a scenario
file never changes what the rest of the process imports.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

from ..controllers import COMPENSATORS, CONTROL_FUNCTIONS
from ..errors import ParameterError, RobustrackError, ScenarioError
from ..tracking.problem import TrackingProblem
from .actual_forces import FORCES_SCHEMA, check_force_sizes, check_forces, friction_parameters, run_forces
from .config import key_locator, refuse_unknown, resolve_file, validate
from .parameter_shift import check_parameter_shift, parameters_schema, shifted_plant
from .registry import ScenarioKind, choice_key, register_kind
from .compensator_table import COMPENSATOR_SHARED, check_compensator, compensator_schema
from .declared_gamma import UNSET
from .tracking_kinds import AUTOMATIC_GAMMA, SENSOR_SCHEMA, TUNABLE_TYPES, UPGRADE, compensation, sensor_of

__all__ = ["PythonKind", "load_factory", "factory_problem", "FROM_PROBLEM"]

#: ``compensator.type`` that keeps the factory's compensator (its sampling and Γ too).
FROM_PROBLEM = "problem"

_FORM = ("'FILE.py:FUNCTION' (a Python file, relative to the scenario file's folder) or "
         "'package.module:FUNCTION' (an importable module)")


def _user_error(exc: BaseException, what: str) -> str:
    """``what`` failed, with the user's exception and the last line of their code it passed through."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "robustrack" not in Path(f.filename).parts]
    at = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    if isinstance(exc, SystemExit):  # the file ends the process: robustrack cannot tell what it meant
        return (f"{what} failed: it called sys.exit({'' if exc.code is None else repr(exc.code)}){at}; a factory "
                "file must define its function and return a TrackingProblem, not exit — put script code under "
                "`if __name__ == \"__main__\":`")
    return f"{what} failed: {type(exc).__name__}: {exc}{at}"


@contextlib.contextmanager
def _folder_importable(path: Path | None):
    """The folder of ``path`` first on ``sys.path`` inside the block (as ``python FILE.py`` has it), then gone.

    Only the entry added here is removed (the block may add others); a folder already on the path stays.
    """
    folder = None if path is None else str(Path(path).resolve().parent)
    if folder is None or folder in sys.path:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)


def _import_file(path: Path, where: str):
    """The module of a Python file, imported under a name of its own (again when the file changed)."""
    path = path.resolve()
    stamp = path.stat().st_mtime_ns
    name = f"robustrack_user_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:10]}"
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__robustrack_stamp__", None) == stamp:
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ScenarioError(f"{where}: {path} cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec)
    module.__robustrack_stamp__ = stamp
    sys.modules[name] = module  # before running it: dataclasses and pickling look their module up there
    try:
        with _folder_importable(path):
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # sys.exit() in the file too: an error naming it, never a silent exit
        sys.modules.pop(name, None)
        raise ScenarioError(f"{where}: {_user_error(exc, f'importing {path}')}") from None
    return module


def resolve_factory(spec, base: Path, where: str) -> str:
    """``spec`` with a relative ``FILE.py`` made absolute against ``base`` (module specs unchanged).

    Parameters
    ----------
    spec : str
        ``FILE.py:FUNCTION`` or ``package.module:FUNCTION``.
    base : pathlib.Path
        The folder a relative file is found in (the scenario file's).
    where : str
        How messages name the key (``FILE (line N): `problem.factory```).

    Returns
    -------
    str

    Raises
    ------
    ScenarioError
        Not of either form, or the file does not exist.
    """
    target, sep, func = str(spec).rpartition(":")
    if not sep or not target or not func.isidentifier():
        raise ScenarioError(f"{where} must be {_FORM}; got {spec!r}.")
    if not target.endswith(".py"):
        return f"{target}:{func}"
    return f"{resolve_file(target, base, where, 'Python file', f'; give {_FORM}')}:{func}"


def load_factory(spec: str, where: str = "`problem.factory`"):
    """The function a resolved ``problem.factory`` names.

    Parameters
    ----------
    spec : str
        As :func:`resolve_factory` returns it.
    where : str
        How messages name the key.

    Returns
    -------
    callable

    Raises
    ------
    ScenarioError
        The module cannot be imported, or has no such function.
    """
    target, _, func = spec.rpartition(":")
    if target.endswith(".py"):
        module = _import_file(Path(target), where)
    else:
        try:
            module = importlib.import_module(target)
        except (Exception, SystemExit) as exc:
            raise ScenarioError(f"{where}: {_user_error(exc, f'importing module {target!r}')}; give {_FORM}.") from None
    factory = getattr(module, func, None)
    if not callable(factory):
        found = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise ScenarioError(f"{where}: {target} has no function {func!r}; its functions: {found}.")
    return factory


_PROBLEMS: dict = {}


def factory_problem(spec: str, where: str = "`problem.factory`") -> TrackingProblem:
    """The TrackingProblem the factory returns (called once per process and file version).

    Parameters
    ----------
    spec : str
        A resolved ``problem.factory``.
    where : str
        How messages name the key.

    Returns
    -------
    TrackingProblem

    Raises
    ------
    ScenarioError
        The factory fails or returns something else.
    """
    target = spec.rpartition(":")[0]
    stamp = Path(target).stat().st_mtime_ns if target.endswith(".py") else None
    key = (spec, stamp)
    if key not in _PROBLEMS:
        factory = load_factory(spec, where)
        try:
            with _folder_importable(Path(target) if target.endswith(".py") else None):
                problem = factory()
        except RobustrackError as exc:
            raise ScenarioError(f"{where}: {spec}() refused its own problem: {exc}") from None
        except (Exception, SystemExit) as exc:
            raise ScenarioError(f"{where}: {_user_error(exc, f'calling {spec}()')}") from None
        if not isinstance(problem, TrackingProblem):
            raise ScenarioError(f"{where}: {spec}() must return a robustrack.tracking.TrackingProblem; got "
                                f"{type(problem).__name__}.")
        _PROBLEMS[key] = problem
    return _PROBLEMS[key]


def _simulation_defaults(pb: TrackingProblem) -> dict:
    return {"t_end": float(pb.t_span[1]), "method": pb.method, "rtol": pb.rtol, "atol": pb.atol,
            "n_points": int(len(pb.t_eval)), "uncompensated": pb.uncompensated,
            "transient": -1.0 if pb.transient is None else float(pb.transient)}


def _schema(compensator_type: str, pb: TrackingProblem | None) -> dict:
    own = choice_key(compensator_type) == FROM_PROBLEM
    # Γ of the bounds: the factory's own; with its compensator and none, the compensator's design value; with a
    # compensator built here and none, undeclared: building refuses (declared_gamma), never another plant's Γ
    factory = None if pb is None or pb.gamma is None else float(pb.gamma)
    gamma = (AUTOMATIC_GAMMA if factory is None else factory) if own else (UNSET if factory is None else factory)
    return {"problem": {"factory": ""},
            "uncertainty": {"parameters": parameters_schema(), "dm": [], "gamma": gamma},
            "compensator": {"type": FROM_PROBLEM} if own else compensator_schema(),
            **({} if own else {"sensor": dict(SENSOR_SCHEMA)}),  # a sensor of the table's compensator (its hold)
            "actual": dict(FORCES_SCHEMA),  # friction and a disturbance the model leaves out (actual_forces.py)
            "simulation": _simulation_defaults(pb) if pb is not None else {}}


class PythonKind(ScenarioKind):
    """The ``python`` kind: a user's factory of a TrackingProblem, with the catalog's overrides (module docstring)."""

    def validate(self, data: dict, *, origin: str, text: str | None = None, folder=None) -> dict:
        """The complete configuration: the factory resolved and called, its settings as the defaults.

        Parameters
        ----------
        data : dict
            Sections → keys → values (without ``[scenario]``).
        origin : str
            The scenario file's name, for messages.
        text : str, optional
            The TOML text, for line numbers.
        folder : pathlib.Path, optional
            The scenario file's folder: a relative factory file is found there (None: the working folder).

        Returns
        -------
        dict

        Raises
        ------
        ScenarioError
            No or a bad ``problem.factory``, a factory that fails, keys of the ``[compensator]``
            table while ``compensator.type`` is "problem", or parameters the plant lacks.
        """
        where = key_locator(origin, text)
        refuse_unknown(data, _schema(FROM_PROBLEM, None), origin=origin, text=text, sections=("problem",))
        problem = data.get("problem")
        spec = problem.get("factory") if isinstance(problem, dict) else None
        if not isinstance(spec, str) or not spec:
            raise ScenarioError(f"{origin}: a scenario of kind 'python' needs [problem] with `factory` = {_FORM}, "
                                "naming a function that returns a TrackingProblem.")
        base = Path(folder) if folder is not None else Path.cwd()
        spec = resolve_factory(spec, base.resolve(), where("problem", "factory"))
        pb = factory_problem(spec, where("problem", "factory"))
        comp = data.get("compensator", {})
        ctype = comp.get("type", FROM_PROBLEM) if isinstance(comp, dict) else FROM_PROBLEM
        if isinstance(ctype, str) and choice_key(ctype) == FROM_PROBLEM:
            others = sorted(k for k in comp if k != "type") if isinstance(comp, dict) else []
            if others:
                raise ScenarioError(f"{where('compensator', others[0])} is set, but `compensator.type` is "
                                    f"{FROM_PROBLEM!r} (the factory's compensator, which takes no keys here); set "
                                    f"`compensator.type` (e.g. --compensator gss) to build one from the table.")
            if "sensor" in data:  # a sensor is that of a compensator this file builds (its hold): say what works
                unc = data.get("uncertainty")
                gamma = "" if pb.gamma is not None or (isinstance(unc, dict) and "gamma" in unc) else (
                    ", its Γ, e.g. --set uncertainty.gamma=… (the factory gives none; `robustrack gamma` computes it)")
                raise ScenarioError(f"{origin}: [sensor] is the sensor of a compensator "
                                    f"this file builds, and `compensator.type` is {FROM_PROBLEM!r} (the factory's "
                                    "own, whose sensor is the factory's: TrackingProblem(..., sensor=Sensor(...))); "
                                    "set `compensator.type` (e.g. --set compensator.type=gss, with its "
                                    f"sample_period{gamma}) to measure through [sensor], or leave [sensor] out.")
        with self.upgraded({**data, "problem": {**problem, "factory": spec}}, origin, text) as (data, text):
            cfg = validate(data, _schema(ctype if isinstance(ctype, str) else "", pb), origin=origin, text=text,
                           check=self._check)
        check_force_sizes(cfg, pb.n, pb.nominal.coordinates, where)
        check_parameter_shift(cfg["uncertainty"], pb.nominal, where, friction_parameters(cfg, pb.nominal.coordinates))
        return cfg

    def _check(self, cfg, where):
        own = choice_key(cfg["compensator"]["type"]) == FROM_PROBLEM  # not a registered compensator: no choices
        super()._check({**cfg, "compensator": {}} if own else cfg, where)
        if not own:
            check_compensator(cfg, where)
            sensor_of(cfg, where)
        check_forces(cfg, where)

    def uncertain_parameters(self, cfg: dict) -> tuple:
        """``uncertainty.parameters``; where empty, the parameters the factory's actual plant changes.

        Parameters
        ----------
        cfg : dict
            A validated configuration of this kind.

        Returns
        -------
        tuple of str

        Raises
        ------
        ScenarioError
            Neither names a parameter.
        """
        names = tuple(cfg["uncertainty"]["parameters"])
        if names:
            return names
        pb = factory_problem(cfg["problem"]["factory"])
        changed = pb.nominal.changed_parameters(pb.actual) if pb.actual is not None else ()
        if not changed:
            raise ScenarioError(f"`uncertainty.parameters` is empty and {cfg['problem']['factory']}()'s actual plant "
                                f"is its nominal one: name the parameters to perturb, e.g. --set "
                                f"'uncertainty.parameters=[\"{sorted(pb.nominal.params)[0]}\"]' (the plant's "
                                f"parameters: {sorted(pb.nominal.params)}).")
        return changed


def _build(cfg) -> TrackingProblem:
    """The factory's problem with the scenario's overrides (uncertainty, compensator, simulation)."""
    pb = factory_problem(cfg["problem"]["factory"])
    changes = {}
    coordinates = pb.nominal.coordinates
    actual = shifted_plant(pb.nominal, cfg["uncertainty"], friction_parameters(cfg, coordinates))
    if actual is not None:
        changes["actual"] = actual
    forces = run_forces(cfg, coordinates)
    if forces is not None:  # [actual]'s friction and disturbance, added to the factory's (or the shifted) actual plant
        from ..plants import ForcedPlant

        base = actual if actual is not None else (pb.actual if pb.actual is not None else pb.nominal)
        changes["actual"] = ForcedPlant(base, forces)
    sim = cfg["simulation"]
    if choice_key(cfg["compensator"]["type"]) != FROM_PROBLEM:
        changes.update(compensation(cfg, pb.n, sim["t_end"] - pb.t_span[0]))
    else:  # the factory's compensator, judged at uncertainty.gamma (default: the factory's Γ)
        changes["gamma"] = None if cfg["uncertainty"]["gamma"] < 0 else cfg["uncertainty"]["gamma"]
    own = _simulation_defaults(pb)
    if sim["t_end"] != own["t_end"] or sim["n_points"] != own["n_points"]:
        changes.update(t_span=(pb.t_span[0], sim["t_end"]), t_eval=None, n_points=sim["n_points"])
    changes.update(method=sim["method"], rtol=sim["rtol"], atol=sim["atol"], uncompensated=sim["uncompensated"],
                   transient=None if sim["transient"] < 0 else sim["transient"])
    try:
        return pb.replace(**changes)
    except ParameterError as exc:
        raise ScenarioError(f"{cfg['problem']['factory']}() with this scenario's settings: {exc}") from None


register_kind(PythonKind(
    "python",
    _schema(COMPENSATOR_SHARED["type"], None),
    _build,
    "A user's own system: [problem] factory = 'FILE.py:FUNCTION' returns a TrackingProblem; [uncertainty] "
    "parameters, dm, gamma; [compensator] type = 'problem' keeps the factory's compensator (any other type builds one "
    "from the table); [actual] friction (viscous, coulomb, coulomb_width, friction_spread) and [actual.disturbance] "
    "added to the actual plant; [simulation] defaults are the factory's settings.",
    tracking=True,
    uncertain=(),
    # "problem" (the default) is not a choice: the command line offers only compensators to build
    choices={"compensator.type": ("none", *COMPENSATORS), "compensator.f": tuple(CONTROL_FUNCTIONS)},
    tunable=TUNABLE_TYPES,
    upgrade=UPGRADE,
))
