"""Identify δm from a saved tracking run of a scenario, and re-nominalize (``robustrack identify``).

The scenario level of :mod:`robustrack.identification` (W ch. 10): a run saved by
``robustrack run NAME --save RUN.npz`` holds the controlled actual system's q_c, q̇_c and the
applied force Qᶜ + Qᵘ on its output grid, and the scenario it was made with (overrides
applied), but neither the actual plant nor q̈_c. The scenario gives the nominal plant — the
structure and θ₀. Which data the estimate uses (``accelerations``):

* ``none`` (default): what a robot's log holds — q, q̇ and the force at the log rate, no q̈
  (the integral form, :mod:`robustrack.identification.integral`);
* ``differences``: q̈ by central differences of the stored q̇_c, accuracy limited by the grid;
* ``simulated``: the oracle — the closed-loop right-hand side at the stored states, q̈_c =
  M_a⁻¹(Q_a + Qᶜ + Qᵘ) (W 5.2.17), with the scenario's *actual* plant, exact at every sample
  (:func:`~robustrack.identification.simulated_accelerations`).

The actual plant is read only when asked: ``simulated``, ``compare_actual`` (the estimate's
error against the scenario's actual values) or re-nominalizing (which reruns against it); the
result says whether it was (``actual_plant_read``).

Re-nominalizing reruns the scenario with nominal := identified (:meth:`Identification.plant`)
against the same actual plant, requirement, compensator and solver settings, and compares
max‖e‖∞ and max‖Qᵘ‖∞ with the run on the original nominal plant.
"""

from __future__ import annotations

import dataclasses
import re
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..errors import ParameterError, ScenarioError
from ..identification import (DEFAULT_CONDITION_LIMIT, check_finite_run, differentiated_accelerations, identify,
                               parameter_values, simulated_accelerations)
from ..identification.friction import friction_names, with_friction
from .parameter_shift import has_named_parameters

__all__ = ["identify_saved_run", "recorded_scenario", "renominalize", "track_with_nominal", "default_parameters",
           "named_parameters", "format_identification", "ACCELERATIONS"]

#: Where ``robustrack identify`` takes q̈_c from ("none": the integral form needs no q̈).
ACCELERATIONS = ("none", "differences", "simulated")
#: Which run of a saved file ``robustrack identify`` reads: robustrack's, or the MuJoCo loop's log beside it.
LOGS = ("robustrack", "mujoco")

_MASS = re.compile(r"m[0-9]*")


def default_parameters(plant) -> list[str]:
    """The plant's mass parameters (``m``, ``m1``, ``m2``, …) from its symbolic form, in its order.

    Parameters
    ----------
    plant : Plant

    Returns
    -------
    list of str

    Raises
    ------
    ParameterError
        The plant has no symbolic form or no mass parameter: name them with ``--parameters``.
    """
    from ..identification.symbolic import form_parameter_names, symbolic_form

    form = symbolic_form(plant)
    names = [] if form is None else [p for p in form_parameter_names(form, plant.n) if _MASS.fullmatch(p)]
    if not names:
        raise ParameterError(f"{type(plant).__name__} has no mass parameters m, m1, m2, … in a symbolic form; "
                             "name the parameters to identify with --parameters (e.g. --parameters m1,m2).")
    return names


#: A URDF robot's named parameters its payload identification estimates (with the payload's inertia).
_PAYLOAD_NAMES = ("payload_mass", "payload_com_x", "payload_com_y", "payload_com_z")


def named_parameters(scenario, pb, run) -> tuple:
    """What ``identify`` estimates of a scenario's named uncertain parameters, and why it leaves the others.

    The regression writes the plant's equations M q̈ − Q linearly in the parameters (W ch. 10,
    :mod:`robustrack.identification.regression`), so it estimates those they are jointly linear in
    (:func:`~robustrack.identification.linear_parameters`: masses, inertias, a pendulum's g alone; not a length
    or a link's centre of mass). A friction coefficient (``viscous_<joint>``, ``coulomb_<joint>``) of the actual
    plant's ``[actual]`` friction is estimated too: the friction force is linear in it
    (:mod:`robustrack.identification.friction`; its nominal value is ``[actual]``'s). A URDF robot's
    payload mass and centre of mass are estimated together through the payload's ten inertial parameters
    (:func:`~robustrack.identification.payload.identify_payload`), with its joints' friction coefficients; its
    links' parameters are left out. The left
    out ones are named in a notice — not refused: the others are still estimated — and held at their nominal
    values in the regression, so where the actual plant differs in them the estimate absorbs the difference.

    Parameters
    ----------
    scenario : Scenario
        With ``[uncertainty.parameters.NAME]`` tables.
    pb : TrackingProblem
        Its built problem.
    run : dict
        The saved run (its states serve the linearity check of a plant without a symbolic form).

    Returns
    -------
    (list of str, dict of str to str)
        What to identify (``"payload"`` for a URDF robot's payload), and the named parameters left out with why.

    Raises
    ------
    ParameterError
        None of the named parameters can be estimated (each named with why; ``--parameters`` names others).
    """
    import warnings

    from ..errors import RobustrackNotice
    from ..identification import linear_parameters
    from .actual_forces import friction_parameters
    from .parameter_shift import scenario_uncertain_set

    names = scenario_uncertain_set(scenario, nominal=pb.nominal).names
    friction = [n for n in names if n in friction_parameters(scenario.config, pb.nominal.coordinates)]
    left = {}
    candidates = list(names)
    if hasattr(pb.nominal, "frame"):
        payload = bool(set(candidates) & set(_PAYLOAD_NAMES))
        chosen = ["payload", *friction] if payload else friction
        left.update({n: "a parameter of the robot's links: identify estimates a URDF robot's payload (its mass and "
                        "centre of mass) and its joints' friction, not its links" for n in candidates
                     if n not in _PAYLOAD_NAMES and n not in friction})
    elif candidates:
        step = max(1, run["t"].size // 64)  # a few dozen samples decide a plant's linearity in a parameter
        t, qd = run["t"], run["qcd"]
        qdd = differentiated_accelerations(t, qd)
        chosen, dropped = linear_parameters(pb.nominal, candidates, run["qc"][::step], qd[::step], qdd[::step],
                                            t[::step])
        chosen = list(chosen)
        left.update(dropped)
    else:
        chosen = []
    left = {n: left[n] for n in names if n in left}  # in the tables' order
    if not chosen:
        raise ParameterError(f"scenario {scenario.name!r} names uncertain parameters none of which identify can "
                             f"estimate ({_reasons(left)}); name what to identify with --parameters (e.g. the "
                             "plant's masses).")
    if left:
        warnings.warn(f"identify: of the scenario's uncertain parameters, not identified — {_reasons(left)}. "
                      "They are held at their "
                      "nominal values in the regression: where the actual plant differs in them, the estimate of the "
                      "others absorbs the difference.", RobustrackNotice, stacklevel=3)
    return chosen, left


#: The arrays of a saved run's MuJoCo log (:func:`robustrack.scenarios.runner` writes them).
MUJOCO_LOG = ("mujoco_t", "mujoco_q", "mujoco_qd", "mujoco_tau")


def _mujoco_log(run: dict, pb, path) -> dict:
    """The MuJoCo loop's log of a saved run as a run of the controlled system: q, q̇ at its samples, and the torque
    held on each interval as ``Qu`` (all of it held: the loop holds the whole τ; ``Qc`` zero), the last sample's
    given its interval's (no interval starts there)."""
    if "mujoco_t" not in run:
        raise ParameterError(f"{path} holds no MuJoCo log: save the run with it, `robustrack run NAME --set "
                             "actual.engine=mujoco --set compensator.sample_period=1e-3 --save RUN.npz`.")
    missing = [k for k in MUJOCO_LOG if k not in run]
    if missing:
        raise ParameterError(f"{path}: its MuJoCo log misses {', '.join(f'`{k}`' for k in missing)} (it holds "
                             f"{', '.join(f'`{k}`' for k in MUJOCO_LOG if k in run)}): a damaged or edited run; save "
                             "it again with `robustrack run NAME --set actual.engine=mujoco --save RUN.npz`.")
    t, tau = run["mujoco_t"], run["mujoco_tau"]
    lengths = {k: int(np.shape(run[k])[0]) if np.ndim(run[k]) else 0 for k in MUJOCO_LOG}
    if lengths["mujoco_q"] != lengths["mujoco_t"] or lengths["mujoco_qd"] != lengths["mujoco_t"] or \
            lengths["mujoco_tau"] != lengths["mujoco_t"] - 1 or lengths["mujoco_t"] < 2:
        raise ParameterError(f"{path}: its MuJoCo log's arrays must hold one row per sample of `mujoco_t` (and "
                             f"`mujoco_tau` one per interval); their lengths are {lengths}: a damaged or edited run.")
    if t[-1] < pb.t_span[1] - 1e-9 * max(1.0, abs(pb.t_span[1])):
        raise ParameterError(f"{path}: MuJoCo's run ended at t = {t[-1]:.6g} s, before the horizon "
                             f"{pb.t_span[1]:g} s (it failed): its log is not identified.")
    held = np.vstack([tau, tau[-1:]])
    out = {"t": t, "qc": run["mujoco_q"], "qcd": run["mujoco_qd"], "Qc": np.zeros_like(held), "Qu": held}
    check_finite_run(out, f"{path} (MuJoCo's log)")
    return out


def _never_saturated(actuators, run: dict) -> bool:
    """Whether a run's motors (one per joint, B = I: a robot's effort limits) never reached their limits: its applied
    Qᶜ + Qᵘ then is the law's, and its held part Qᵘ alone."""
    if not actuators.per_joint or "Qc" not in run or "Qu" not in run:
        return False
    return bool(np.all(np.abs(np.asarray(run["Qc"]) + np.asarray(run["Qu"])) < actuators.tau_max))


def _held_force(pb, run: dict, path) -> bool:
    """Whether the run's Qᵘ is a sampled compensator's force held from sample to sample on its log (the integral
    form then integrates it as the staircase it is, :mod:`robustrack.identification.integral`).

    True when the compensator is sampled and every hold edge is a log sample (the log at the control rate or a
    whole multiple of it); a sampled run logged coarser than its control rate holds a staircase the samples do not
    resolve, and an actuated one a force B sat(τ) whose held part is not Qᵘ alone: the integral form is refused for
    those, naming what works.
    """
    h = pb.sample_period
    if not h:
        return False
    t = run["t"]
    steps = h / np.diff(t)
    if pb.actuators is not None and not _never_saturated(pb.actuators, run):
        raise ParameterError(f"{path}: the compensator is sampled every {h:g} s and the plant actuated: the held part "
                             "of the applied force (B sat(τ)) is not Qᵘ alone, which the integral form cannot take "
                             "apart; identify with --accelerations differences (or simulated).")
    if not (np.all(np.abs(steps - np.round(steps)) <= 1e-6 * steps) and np.all(np.round(steps) >= 1)):
        need = int(round((t[-1] - t[0]) / h)) + 1
        raise ParameterError(f"{path}: the compensator is sampled every {h:g} s (its force held between samples) and "
                             f"the run was saved every {np.median(np.diff(t)):.3g} s: the integral form cannot "
                             f"integrate the held force from these samples. Save the run at the control rate "
                             f"(--set simulation.n_points={need}) and identify it again, or identify this one with "
                             "--accelerations differences.")
    return True


def _names(parameters) -> list:
    """``--parameters`` as a list of names (``"m1,m2"`` or a sequence)."""
    if isinstance(parameters, str):
        return [p.strip() for p in parameters.split(",") if p.strip()]
    return [str(p) for p in parameters]


def _payload_truth(actual):
    """The actual plant's payload as ten inertial parameters, with the friction it adds (the truth of a payload
    identification): :class:`~robustrack.identification.payload.PayloadInertialPlant` of its URDF robot, forced by
    the same given forces."""
    from ..identification.payload import PayloadInertialPlant
    from ..plants.forced import ForcedPlant

    if isinstance(actual, ForcedPlant):
        return ForcedPlant(_payload_truth(actual.base), actual.dQ)
    return PayloadInertialPlant(actual)


def _friction_plant(scenario, plant, names):
    """``plant`` with the scenario's joint friction (``[actual]``'s coefficients and ``coulomb_width``) where ``names``
    holds friction coefficients to identify: their nominal values θ₀ and v_s
    (:mod:`robustrack.identification.friction`).

    Parameters
    ----------
    scenario : Scenario
    plant : Plant
        The nominal plant (or the identified one, to which the estimated friction is then set).
    names : sequence of str
        What is identified.

    Returns
    -------
    Plant
        ``plant`` itself when no name is a friction coefficient, else ``ForcedPlant(plant, JointFriction(...))``.

    Raises
    ------
    ScenarioError
        A friction coefficient named for a kind whose ``[actual]`` has no friction.
    """
    from ..plants.forced import ForcedPlant
    from .actual_forces import scenario_friction

    _, friction = friction_names(plant, names)
    if not friction:
        return plant
    joint_friction = scenario_friction(scenario.config, plant.coordinates)
    if joint_friction is None:
        raise ScenarioError(f"--parameters {friction[0]}: scenario {scenario.name!r} (kind {scenario.kind!r}) has no "
                            "joint friction in [actual] (viscous, coulomb): there is no friction coefficient to "
                            "identify.")
    return ForcedPlant(plant, joint_friction)


def _relative(value) -> str:
    """A relative error of δ for the table: ``—`` where the actual δ is 0 (no relative error exists)."""
    return f"{value:.3g}" if value is not None and np.isfinite(value) else "—"


def _reasons(left: dict) -> str:
    """``name, name: why; name: why`` — the names left out, those with one reason together."""
    groups: dict = {}
    for name, why in left.items():
        groups.setdefault(why, []).append(name)
    return "; ".join(f"{', '.join(names)}: {why}" for why, names in groups.items())


def _load_run(path) -> dict:
    p = Path(path)
    if p.suffix != ".npz":
        raise ParameterError(f"RUN must be a .npz file written by `robustrack run NAME --save RUN.npz`; got {str(p)!r}.")
    try:
        with np.load(p, allow_pickle=False) as data:
            run = {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise ParameterError(f"no saved run at {str(p)!r}; write one with `robustrack run NAME --save {p}`.") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise ParameterError(f"{str(p)!r} is not a robustrack run file ({type(exc).__name__}: {exc}): a truncated or "
                             "damaged .npz; save it again with `robustrack run NAME --save RUN.npz`.") from None
    missing = sorted({"t", "qc", "qcd", "Qc", "Qu"} - set(run))
    if missing:
        raise ParameterError(f"{str(p)!r} holds no tracking run (missing {missing}): identification needs the "
                             "controlled actual system and its force, saved by `robustrack run` of a tracking "
                             "scenario with --save.")
    lengths = {k: int(np.shape(run[k])[0]) if np.ndim(run[k]) else 0 for k in ("t", "qc", "qcd", "Qc", "Qu")}
    other = [k for k, n in lengths.items() if n != lengths["t"]]
    if other or np.ndim(run["t"]) != 1:
        raise ParameterError(f"{str(p)!r}: its arrays must have one row per time of `t` ({lengths['t']}); "
                             + ", ".join(f"`{k}` has {lengths[k]}" for k in other or ["t"])
                             + ": a damaged or edited run; save it again with `robustrack run NAME --save RUN.npz`.")
    check_finite_run({k: run[k] for k in ("t", "qc", "qcd", "Qc", "Qu")}, repr(str(p)))
    return run


def _check_matches(run: dict, scenario, pb, path) -> None:
    """The saved run must come from this scenario: same coordinates, start and horizon."""
    names = [str(c) for c in run.get("names", [])]
    t = run["t"]
    problems = []
    if names and names != list(pb.nominal.coordinates):
        problems.append(f"coordinates {names} ≠ {list(pb.nominal.coordinates)}")
    if run["qc"].ndim != 2 or run["qc"].shape[-1] != pb.nominal.n or t.shape[0] != run["qc"].shape[0]:
        problems.append(f"qc of shape {run['qc'].shape} for t of shape {t.shape}")
    elif not np.allclose(run["qc"][0], pb.q0, rtol=0, atol=1e-12) or not np.isclose(t[-1], pb.t_span[1]):
        problems.append(f"start q_c(0) = {run['qc'][0].tolist()}, end t = {t[-1]:g} ≠ the scenario's "
                        f"{np.asarray(pb.q0).tolist()}, {pb.t_span[1]:g}")
    if problems:
        raise ScenarioError(f"{path} was not made by scenario {scenario.name!r} with these --set values "
                            f"({'; '.join(problems)}): give the --scenario and --set the run was made with.")


def _made_with(scenario, pb) -> dict:
    """What a run was made with, flat: :func:`~robustrack.certification.fingerprint.problem_fingerprint` (plant and
    constraint parameters, start, horizon, tolerances), then the actual plant's friction and disturbance as
    ``[actual]`` gives them (``actual.viscous``, ``actual.disturbance.kind`` …), the sample period and the sensor
    (``sensor.q_noise`` …): everything that makes the log what it is."""
    from .._json import describe_value
    from ..certification.fingerprint import problem_fingerprint
    from .actual_forces import FORCES_SCHEMA

    out = problem_fingerprint(pb, scenario.name)
    actual = scenario.config.get("actual") or {}
    for key in FORCES_SCHEMA:
        value = actual.get(key)
        if isinstance(value, dict):
            out.update({f"actual.{key}.{k}": describe_value(v) for k, v in value.items()})
        else:
            out[f"actual.{key}"] = describe_value(value)
    out["sample_period"] = pb.sample_period
    sensor = getattr(pb, "sensor", None)
    out.update({f"sensor.{k}": describe_value(v) for k, v in (sensor.to_dict() if sensor is not None else {}).items()})
    return out


def _check_recorded(run: dict, scenario, pb, path) -> None:
    """A run that records its scenario (``scenario_toml``) is identified only with that scenario's problem: the name
    and every field it was made with (:func:`_made_with`: the fingerprint, the friction and disturbance, the
    sensor) compared, the first difference named."""
    if "scenario_toml" not in run or scenario.to_toml() == str(run["scenario_toml"]):
        return  # nothing recorded, or the recorded scenario itself (its text round-trips): nothing to compare
    from ..certification.fingerprint import fingerprint_difference
    from .scenario import scenario_from_toml

    recorded = scenario_from_toml(str(run["scenario_toml"]), f"{Path(path).name} (its recorded scenario)")
    differs = fingerprint_difference(_made_with(recorded, recorded.build()), _made_with(scenario, pb))
    if recorded.name != scenario.name:
        differs = f"`scenario`: recorded {recorded.name!r}, given {scenario.name!r}"
    if differs is not None:
        differs = differs.replace("certified", "recorded").replace("this study", "given")
        raise ScenarioError(f"`--scenario`: {path} records the scenario it was made with, and it is not this one — "
                            f"{differs}: leave out --scenario (the recorded one is used), or give the scenario and "
                            "--set the run was made with.")


def recorded_scenario(path):
    """The scenario a saved run was made with (``scenario_toml``, written by ``robustrack run --save``).

    Parameters
    ----------
    path : str or Path
        The saved run (``.npz``).

    Returns
    -------
    Scenario

    Raises
    ------
    ParameterError
        The file records no scenario (saved by an older version, or by ``save_trajectories`` without one).
    """
    from .scenario import scenario_from_toml

    run = _load_run(path)
    if "scenario_toml" not in run:
        raise ParameterError(f"{str(path)!r} records no scenario (saved without one, or by an older robustrack): "
                             "give the scenario it was made with, --scenario NAME and the same --set.")
    return scenario_from_toml(str(run["scenario_toml"]), f"{Path(path).name} (its recorded scenario)")


def identify_saved_run(path, scenario=None, parameters=None, *, accelerations: str = "none",
                       condition_limit: float = DEFAULT_CONDITION_LIMIT, renominalize_run: bool = False,
                       compare_actual: bool = False, window: int | None = None,
                       resolution: float | None = None, log: str = "robustrack") -> dict:
    """Identify the actual plant's parameters from ``robustrack run NAME --save RUN.npz`` (module docstring).

    Parameters
    ----------
    path : str or Path
        The saved run (``.npz``).
    scenario : Scenario, optional
        The tracking scenario it was made with (same overrides): the nominal plant and θ₀.
        Default: the one the run records (:func:`recorded_scenario`).
    parameters : sequence of str or str, optional
        Default: the scenario's named uncertain parameters that the regression can estimate
        (:func:`named_parameters`, the others named in a notice), else the plant's masses
        (:func:`default_parameters`); for a URDF robot ``"payload"``: its payload's mass and centre of mass
        (:func:`~robustrack.identification.payload.identify_payload`).
    accelerations : {"none", "differences", "simulated"}
        Which data (keyword-only; module docstring).
    condition_limit : float
        As :func:`~robustrack.identification.identify_motion` (keyword-only).
    renominalize_run : bool
        Also rerun with nominal := identified and compare (keyword-only; :func:`renominalize`).
    compare_actual : bool
        Compare the estimate with the scenario's actual plant (keyword-only; reads it).
    window, resolution : optional
        The integral form's (keyword-only; :func:`robustrack.identification.identify`).
    log : {"robustrack", "mujoco"}
        Which run of the file (keyword-only): robustrack's, or the MuJoCo loop's log saved beside it by ``run
        --save`` with ``actual.engine = "mujoco"`` — q, q̇ at its samples and the torque held on each interval (the
        integral form takes it as held, exactly), as a robot's log would hold them.

    Returns
    -------
    dict
        JSON-ready: ``scenario``, ``run``, ``samples``, ``parameters_from`` (where the list came from),
        ``not_identified`` (named uncertain parameters left out, with why), ``identification``
        (:meth:`Identification.to_dict`, whose ``data`` says which data were used),
        ``actual_plant_read``; ``payload`` (mass, centre of mass, their standard errors, and the
        actual ones when read) for a payload; ``truth`` (the scenario's actual values of the parameters and the
        estimate's error against them) when the actual plant was read; with
        ``renominalize_run`` ``renominalized`` (:func:`renominalize`, or ``{"not_run": why}`` where the estimate
        makes no plant, e.g. a friction coefficient below 0).
    """
    from .registry import get_kind

    if accelerations not in ACCELERATIONS:
        raise ParameterError(f"--accelerations must be one of {list(ACCELERATIONS)}; got {accelerations!r}.")
    scenario = recorded_scenario(path) if scenario is None else scenario
    if not get_kind(scenario.kind).tracking:
        raise ScenarioError(f"scenario {scenario.name!r} is not a tracking scenario: there is no controlled actual "
                            "system to identify.")
    if log not in LOGS:
        raise ParameterError(f"--log must be one of {list(LOGS)}; got {log!r}.")
    run = _load_run(path)
    pb = scenario.build()
    if log == "mujoco":
        run = _mujoco_log(run, pb, path)
    _check_recorded(run, scenario, pb, path)
    _check_matches(run, scenario, pb, path)
    source, not_identified = "--parameters", {}
    if parameters is None and has_named_parameters(scenario):
        parameters, not_identified = named_parameters(scenario, pb, run)
        source = "the scenario's named uncertain parameters ([uncertainty.parameters.NAME])"
    elif parameters is None:
        source = ("the URDF robot's payload (default)" if hasattr(pb.nominal, "frame") else
                  "the plant's masses (default: the scenario names no uncertain parameters)")
    names = None if parameters is None else _names(parameters)
    payload = "payload" in names if names is not None else hasattr(pb.nominal, "frame")
    if payload:
        names = [n for n in names or () if n != "payload"]
        other = [n for n in names if n not in friction_names(pb.nominal, names)[1]]
        if other:
            raise ParameterError(f"--parameters: with `payload` identify takes the joints' friction coefficients "
                                 f"(viscous_<joint>, coulomb_<joint>) and nothing else; got {other}.")
    elif names is None:
        names = default_parameters(pb.nominal)
    plant = _friction_plant(scenario, pb.nominal, names)
    options = {"window": window, "resolution": resolution} if accelerations == "none" else {}
    if accelerations == "none" and _held_force(pb, run, path):
        options["held"] = True
    qdd = {"none": None, "differences": "differences"}.get(accelerations)
    if accelerations == "simulated":
        qdd = simulated_accelerations(run, pb.actual)
    options.update(accelerations=qdd, condition_limit=condition_limit)
    estimate = None
    if payload:
        from ..identification.payload import PAYLOAD_PARAMETERS, identify_payload

        if not hasattr(pb.nominal, "frame"):
            raise ParameterError(f"--parameters payload needs a URDF robot (a payload frame); the plant is "
                                 f"{type(pb.nominal).__name__}.")
        estimate = identify_payload(run, plant, friction=names, **options)
        ident = estimate.identification

        def identified():
            nominal = pb.nominal.replace(payload_mass=estimate.mass, payload_com=estimate.com)
            return with_friction(_friction_plant(scenario, nominal, names),
                                 dict(zip(names, ident.estimate[len(PAYLOAD_PARAMETERS):])))
        # the actual payload is the base plant's (a ForcedPlant adds friction and disturbance forces to it)
        truth_plant = None if pb.actual is None else _payload_truth(pb.actual)
    else:
        ident = identify(run, plant, names, **options)

        def identified():
            return ident.plant(plant)
        truth_plant = pb.actual
    if accelerations == "simulated":
        ident = dataclasses.replace(ident, accelerations="simulated: the closed-loop right-hand side (W 5.2.17) "
                                                         "of the actual plant at the stored states")
    read = accelerations == "simulated" or compare_actual or renominalize_run
    doc = {"scenario": scenario.name, "title": scenario.title, "run": str(path), "log": log,
           "samples": int(run["t"].size),
           "identification": ident.to_dict(), "actual_plant_read": bool(read), "parameters_from": source,
           "not_identified": not_identified}
    if estimate is not None:
        doc["payload"] = {k: v for k, v in estimate.to_dict().items() if k != "identification"}
        if read:
            doc["payload"]["actual"] = {"mass": float(pb.actual.params["payload_mass"]),
                                        "com": np.asarray(pb.actual.params["payload_com"], dtype=float).tolist()}
    if read:
        true_values = parameter_values(truth_plant, ident.parameters)
        true_delta = true_values - ident.nominal
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.abs(ident.delta - true_delta) / np.abs(true_delta)
        doc["truth"] = {"values": true_values.tolist(), "delta": true_delta.tolist(),
                        "error": (ident.estimate - true_values).tolist(),
                        "relative_error_of_delta": relative.tolist(),
                        "error_in_std_errors": ((ident.estimate - true_values) / ident.std_error).tolist()}
    if renominalize_run:
        try:
            nominal = identified()
        except ParameterError as exc:  # e.g. a friction estimate below 0: no plant to rerun with; the estimate stands
            doc["renominalized"] = {"not_run": str(exc)}
        else:
            doc["renominalized"] = renominalize(scenario, ident, nominal)
    return doc


def renominalize(scenario, ident, identified=None) -> dict:
    """Rerun a tracking scenario with nominal := identified and compare (W ch. 10).

    Both runs — the scenario's own nominal plant and the identified one — follow the same
    requirement with the same compensator against the same actual plant, with the scenario's
    solver settings (no uncompensated copy).

    Parameters
    ----------
    scenario : Scenario
        A tracking scenario.
    ident : Identification
        Parameters of the scenario's nominal plant.
    identified : Plant, optional
        The identified plant (default :meth:`Identification.plant` of the nominal; a URDF payload's
        is the nominal with the estimated payload mass and centre of mass).

    Returns
    -------
    dict
        ``before`` and ``after``: ``max_abs_e``, ``max_abs_Qu`` (and ``max_abs_edot``,
        ``max_abs_Qc``, ``bounds_held``); ``drop_e`` and ``drop_Qu``, before / after; ``nominal``
        (the identified parameter values used).
    """
    nominal = scenario.build().nominal
    before = track_with_nominal(scenario, nominal)
    after = track_with_nominal(scenario, ident.plant(nominal) if identified is None else identified)
    keep = ("max_abs_e", "max_abs_edot", "max_abs_Qu", "max_abs_Qc", "bounds_held")
    b = {k: before.metrics[k] for k in keep}
    a = {k: after.metrics[k] for k in keep}
    return {"before": b, "after": a, "nominal": dict(zip(ident.parameters, ident.estimate.tolist())),
            "drop_e": _ratio(b["max_abs_e"], a["max_abs_e"]), "drop_Qu": _ratio(b["max_abs_Qu"], a["max_abs_Qu"])}


def _ratio(x, y) -> float:
    return float(x / y) if y > 0 else float("inf")


def track_with_nominal(scenario, nominal):
    """A tracking scenario run with another nominal plant (same actual plant, requirement, compensator, solver).

    Parameters
    ----------
    scenario : Scenario
        A tracking scenario.
    nominal : Plant
        The nominal plant to use (e.g. :meth:`Identification.plant`); the scenario's own for the original run.

    Returns
    -------
    TrackingResult
        Without the uncompensated copy.
    """
    from ..tracking import simulate_tracking

    pb = scenario.build()
    sim = scenario.config["simulation"]
    return simulate_tracking(nominal, pb.constraint, pb.compensator, pb.q0, pb.qd0, pb.t_span, actual=pb.actual,
                             uncompensated=False, sample_period=pb.sample_period, gamma=pb.gamma,
                             transient=pb.transient, n_points=sim["n_points"], method=sim["method"],
                             rtol=sim["rtol"], atol=sim["atol"], actuators=pb.actuators)


def format_identification(doc: dict, units: dict | None = None) -> str:
    """The text ``robustrack identify`` prints: each parameter's θ₀, θ̂ ± SE, δθ̂, the truth; conditioning.

    Parameters
    ----------
    doc : dict
        :func:`identify_saved_run`'s document.
    units : dict, optional
        ``{"Qu": unit}`` for the force columns (default ``[Q]``).
    """
    from .._format import format_value

    ident, truth = doc["identification"], doc.get("truth")
    force = (units or {}).get("Qu", "[Q]")
    actual = ("the actual plant: read (the comparison below)" if doc.get("actual_plant_read")
              else "the actual plant: not read")
    source = f"{doc['run']}, MuJoCo's log" if doc.get("log") == "mujoco" else doc["run"]
    lines = [f"{doc['scenario']}: identified from {source} (regressor: {ident['method']})",
             f"  data used: {ident['data']}; {actual}"]
    if doc.get("parameters_from"):
        lines.append(f"  parameters: {doc['parameters_from']}")
    if doc.get("not_identified"):
        lines.append(f"  not identified, held at their nominal values: {_reasons(doc['not_identified'])}")
    width = max(10, *(len(p) for p in ident["parameters"]))
    lines.append(f"  {'parameter':<{width}} {'nominal':>10} {'estimate':>14} {'std error':>10} {'δ estimate':>12}"
                 + (f" {'δ actual':>10} {'rel. error of δ':>16}" if truth else ""))
    for i, p in enumerate(ident["parameters"]):
        lines.append(f"  {p:<{width}} {ident['nominal'][i]:>10.6g} {ident['estimate'][i]:>14.10g} "
                     f"{ident['std_error'][i]:>10.3g} {ident['delta'][i]:>12.8g}"
                     + (f" {truth['delta'][i]:>10.6g} {_relative(truth['relative_error_of_delta'][i]):>16}" if truth
                        else ""))
    pay = doc.get("payload")
    if pay:
        actual = pay.get("actual")
        lines.append(f"  payload in {pay['frame']}: mass {format_value(pay['mass'], 'kg')} ± "
                     f"{format_value(pay['mass_std_error'], 'kg')}, centre of mass {format_value(pay['com'], 'm')} ± "
                     f"{format_value(pay['com_std_error'], 'm')}"
                     + (f" (actual {format_value(actual['mass'], 'kg')} at {format_value(actual['com'], 'm')})"
                        if actual else ""))
    lines.append(f"  condition number (regressor scaled by the nominal values) {format_value(ident['condition'])}; "
                 f"RMS equation residual {format_value(ident['rms_residual'], force if ident['form'] != 'integral' else force + '·s')}"
                 + (f"; poorly excited: {', '.join(ident['poorly_excited'])}" if ident["poorly_excited"] else ""))
    ren = doc.get("renominalized")
    if ren and "not_run" in ren:
        lines.append(f"  re-nominalized: not run — {ren['not_run']}")
    elif ren:
        eu = (units or {}).get("e", "[q]")
        lines.append("  re-nominalized (nominal := identified), same actual plant, requirement and compensator:")
        for key, unit, drop in (("max_abs_e", eu, "drop_e"), ("max_abs_Qu", force, "drop_Qu")):
            lines.append(f"    {key:<12} {format_value(ren['before'][key], unit)} → "
                         f"{format_value(ren['after'][key], unit)}  (before / after = {ren[drop]:.3g})")
    return "\n".join(lines)
