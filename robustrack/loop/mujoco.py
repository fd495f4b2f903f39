"""MuJoCo as the actual plant: the designed controller in a fixed-rate loop against a physics engine nobody here wrote.

:func:`mujoco_model` writes the model MuJoCo reads from a :class:`~robustrack.plants.URDFPlant`: its URDF with
the visual and collision elements stripped (MuJoCo would load their meshes), ``<mimic>`` couplings dropped (the
URDFPlant has none: each joint is a coordinate), the payload as a fixed body at its frame, joint damping and position
limits kept as the URDF states them. Its M and given forces (``qfrc_passive − qfrc_bias``) are the URDFPlant's to
rounding (a test holds the UR5 and the Panda to 1e-12). :func:`run_mujoco` runs
the loop a robot runs: at each sample instant t_k = t0 + k h the sensor measures MuJoCo's state
(:meth:`robustrack.loop.Sensor.measure`), the :class:`~robustrack.loop.Controller` computes τ, and τ is held — as a
motor driver holds it — while MuJoCo integrates ``substeps`` steps (RK4 by default) to t_{k+1}; a delay of D
samples applies the τ computed D samples earlier (Qᶜ(t) fed forward undelayed, as the simulation does).

Difference from robustrack's own sampled loop: there u is held and Qᶜ(t) + M(q_c) u evaluated continuously
(docs/theory/nominal-actual.md); here the whole τ is held, as on a robot. At 1 kHz the two differ by ~h² effects
(docs/guide/robot.md, "MuJoCo as the actual plant"). Needs ``pip install 'robustrack[mujoco]'``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from typing import ClassVar

import numpy as np

from ..errors import ControllerError, ParameterError
from ..tracking.problem import TrackingProblem

__all__ = ["mujoco_model", "run_mujoco", "MujocoRun", "mujoco_available", "mujoco_peaks", "MujocoProblem"]


def mujoco_available() -> bool:
    """Whether the ``mujoco`` package imports (the ``robustrack[mujoco]`` extra)."""
    try:
        import mujoco  # noqa: F401
    except ImportError:
        return False
    return True


def _payload_xml(plant) -> str:
    mass = float(np.asarray(plant.params["payload_mass"]))
    if mass == 0.0:
        return ""
    com = [float(v) for v in np.asarray(plant.params["payload_com"], dtype=float).reshape(3)]
    frame = plant.frame
    return (f'<link name="robustrack_payload"><inertial><origin xyz="{com[0]!r} {com[1]!r} {com[2]!r}" rpy="0 0 0"/>'
            f'<mass value="{mass!r}"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>'
            f'<joint name="robustrack_payload_joint" type="fixed"><parent link="{frame}"/>'
            f'<child link="robustrack_payload"/><origin xyz="0 0 0" rpy="0 0 0"/></joint>')


def _welded(text: str, locked) -> str:
    """The URDF with each locked joint made ``fixed`` at its held position: the joint's motion at that position folded
    into its ``<origin>`` (a revolute or continuous joint's rotation about its axis, a prismatic joint's translation
    along it), so MuJoCo's model has the URDFPlant's coordinates and the held bodies where Pinocchio's reduced model
    (``buildReducedModel``) puts them."""
    import xml.etree.ElementTree as ET

    import pinocchio as pin

    held = dict(locked)
    root = ET.fromstring(text)
    for joint in root.iter("joint"):
        name = joint.get("name")
        if name not in held:
            continue
        kind, value = joint.get("type"), held[name]
        origin = joint.find("origin")
        if origin is None:
            origin = ET.SubElement(joint, "origin")
        xyz = np.array([float(v) for v in origin.get("xyz", "0 0 0").split()])
        R = pin.rpy.rpyToMatrix(*[float(v) for v in origin.get("rpy", "0 0 0").split()])
        axis_el = joint.find("axis")
        axis = np.array([float(v) for v in (axis_el.get("xyz", "1 0 0") if axis_el is not None else "1 0 0").split()])
        axis = axis / np.linalg.norm(axis)
        if kind == "prismatic":
            xyz = xyz + R @ (axis * value)
        elif kind in ("revolute", "continuous"):
            R = R @ pin.AngleAxis(value, axis).matrix()
        origin.set("xyz", " ".join(repr(float(v)) for v in xyz))
        origin.set("rpy", " ".join(repr(float(v)) for v in pin.rpy.matrixToRpy(R)))
        joint.set("type", "fixed")
        for child in [c for c in joint if c.tag in ("axis", "limit", "dynamics", "mimic", "safety_controller",
                                                     "calibration")]:
            joint.remove(child)
    return ET.tostring(root, encoding="unicode")


def _scaled_bodies(text: str, plant, scale: dict) -> str:
    """The URDF with each moving body's links scaled as the URDFPlant scales them: ``m_<link>`` multiplies the mass
    and the rotational inertia of every link its joint carries (the links fixed to it merged, Pinocchio's body),
    the centres of mass kept."""
    import xml.etree.ElementTree as ET

    import pinocchio as pin

    model = plant.robot.model
    factor = {j: scale[name] for j, name in enumerate(plant.robot.bodies, start=1) if name in scale}
    joint_of = {f.name: f.parentJoint for f in model.frames if f.type == pin.FrameType.BODY}
    root = ET.fromstring(text)
    for link in root.iter("link"):
        s = factor.get(joint_of.get(link.get("name")))
        inertial = link.find("inertial")
        if s is None or inertial is None:
            continue
        mass, inertia = inertial.find("mass"), inertial.find("inertia")
        if mass is not None:
            mass.set("value", repr(float(mass.get("value", "0")) * s))
        if inertia is not None:
            for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
                inertia.set(k, repr(float(inertia.get(k, "0")) * s))
    return ET.tostring(root, encoding="unicode")


def mujoco_model(plant):
    """The MJCF-compiled MuJoCo model of a URDF robot, as the actual plant (module docstring).

    Parameters
    ----------
    plant : URDFPlant
        Loaded from a URDF file: its payload, and its link masses (``m_<link>`` scales the mass and rotational
        inertia of the links its joint carries, as the plant does).

    Returns
    -------
    (mujoco.MjModel, str)
        The model and the URDF text MuJoCo compiled (meshes stripped, the payload added).

    Raises
    ------
    ParameterError
        Not a URDF robot from a file, or parameters other than link masses and the payload changed (not yet).
        Locked joints are welded (:func:`_welded`).
    """
    import mujoco

    robot = getattr(plant, "robot", None)
    path = getattr(robot, "source", None)
    if robot is None or not isinstance(path, str) or not path.endswith(".urdf"):
        raise ParameterError("MuJoCo as the actual plant takes a URDFPlant loaded from a URDF file; got "
                             f"{type(plant).__name__}.")
    text = open(path, encoding="utf-8").read()
    locked = getattr(robot, "locked", ())
    nominal = type(plant)(path, payload_frame=plant.frame, locked=dict(locked) if locked else None)
    other = [k for k in plant.params if not k.startswith("m_") and k not in ("payload_mass", "payload_com")
             and not np.array_equal(np.asarray(plant.params[k]), np.asarray(nominal.params[k]))]
    if other:
        raise ParameterError(f"MuJoCo as the actual plant: {other} other than the URDF's are not written into its "
                             "model yet; vary the link masses or the payload.")
    scale = {k: float(plant.params[k]) / float(nominal.params[k]) for k in nominal.params
             if k.startswith("m_") and float(nominal.params[k]) > 0 and plant.params[k] != nominal.params[k]}
    if scale:
        text = _scaled_bodies(text, plant, scale)
    if locked:  # welded in MuJoCo's model, as Pinocchio's reduced model holds them
        text = _welded(text, locked)
    text = re.sub(r"<visual\b.*?</visual>", "", text, flags=re.S)
    text = re.sub(r"<collision\b.*?</collision>", "", text, flags=re.S)
    text = re.sub(r"<mimic\b[^>]*/>", "", text)  # robustrack's plant has no coupled joints: neither has MuJoCo's
    compiler = '<mujoco><compiler discardvisual="true" fusestatic="true" balanceinertia="false"/></mujoco>'
    text = re.sub(r"(<robot\b[^>]*>)", lambda m: m.group(1) + compiler + _payload_xml(plant), text, count=1)
    model = mujoco.MjModel.from_xml_string(text)
    names = tuple(model.joint(i).name for i in range(model.njnt))
    if names != tuple(plant.coordinates) or model.nq != plant.n or model.nv != plant.n:
        raise ParameterError(f"MuJoCo's joints {names} are not the plant's {tuple(plant.coordinates)}.")
    return model, text


@dataclass(frozen=True)
class MujocoRun:
    """A fixed-rate loop against MuJoCo (:func:`run_mujoco`).

    Attributes
    ----------
    t : ndarray (K + 1,)
        The sample instants reached.
    q, qd : ndarray (K + 1, n)
        MuJoCo's state there.
    q_nominal, qd_nominal : ndarray (K + 1, n)
        The reference there.
    tau : ndarray (K, n)
        The force held on each interval.
    success : bool
        Reached the end with finite states.
    message : str
    limits_hit : list of (float, str)
        (time, joint) of the first sample at which each joint sat at a position limit.
    demand : ndarray (K, n) or None
        The law's τ on each interval before the motor driver clipped it to the effort limits (``tau``).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    q_nominal: np.ndarray
    qd_nominal: np.ndarray
    tau: np.ndarray
    success: bool
    message: str
    limits_hit: list
    demand: np.ndarray | None = None

    @property
    def e(self) -> np.ndarray:
        """q − q_nominal at the sample instants."""
        return self.q - self.q_nominal

    @property
    def edot(self) -> np.ndarray:
        """q̇ − q̇_nominal at the sample instants."""
        return self.qd - self.qd_nominal

    def max_abs_e(self, after: float = -math.inf) -> float:
        """max ‖e‖∞ at the sample instants from ``after`` on."""
        keep = self.t >= after
        return float(np.abs(self.e[keep]).max()) if keep.any() else math.nan


def run_mujoco(problem, *, controller=None, sensor=None, substeps: int = 10, integrator: str = "RK4",
               actual=None) -> MujocoRun:
    """The designed controller in a fixed-rate loop against MuJoCo as the actual plant (module docstring).

    Parameters
    ----------
    problem : TrackingProblem
        A URDF robot's; its ``sample_period`` is the loop's period (required); its actual plant (else the
        nominal) is what MuJoCo models.
    controller : Controller, optional
        Default ``problem.controller(period=sample_period)``.
    sensor : Sensor, optional
        Default the problem's; None there: the state itself.
    substeps : int
        MuJoCo steps per sample period (keyword-only).
    integrator : {"RK4", "Euler", "implicitfast", "implicit"}
        MuJoCo's integrator.
    actual : URDFPlant, optional
        The plant MuJoCo models (default the problem's actual plant, else its nominal).

    Returns
    -------
    MujocoRun
    """
    import mujoco

    h = problem.sample_period
    if h is None:
        raise ParameterError("MuJoCo as the actual plant runs a fixed-rate loop: set `sample_period` "
                             "(compensator.sample_period), e.g. 1e-3 s.")
    if not isinstance(substeps, int) or substeps < 1:
        raise ParameterError(f"`substeps` must be an integer >= 1; got {substeps!r}.")
    kinds = {"RK4": mujoco.mjtIntegrator.mjINT_RK4, "Euler": mujoco.mjtIntegrator.mjINT_EULER,
             "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST, "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT}
    if integrator not in kinds:
        raise ParameterError(f"`integrator` must be one of {list(kinds)}; got {integrator!r}.")
    plant = actual if actual is not None else (problem.actual if problem.actual is not None else problem.nominal)
    model, _ = mujoco_model(plant)
    model.opt.timestep = h / substeps
    model.opt.integrator = kinds[integrator]
    data = mujoco.MjData(model)
    ctrl = controller or problem.controller(period=h)
    sensor = sensor if sensor is not None else problem.sensor
    n = problem.n
    t0, t1 = problem.t_span
    K = int(math.ceil((t1 - t0) / h - 1e-9))
    data.qpos[:] = problem.q0 if problem.qc0 is None else problem.qc0
    data.qvel[:] = problem.qd0 if problem.qcd0 is None else problem.qcd0
    mujoco.mj_forward(model, data)
    D = 0 if sensor is None else sensor.delay_samples(h)
    nu = None if sensor is None else sensor.draws(n, K + 1)
    v0 = ctrl.reference(t0)[1]
    lo, hi = model.jnt_range[:, 0], model.jnt_range[:, 1]
    limited = model.jnt_limited.astype(bool)
    T, Q, QD, QN, QDN, TAU, DEMAND, ring, hits = [], [], [], [], [], [], [], [], {}
    seen, ok, message = None, True, "reached the end of the horizon"
    for k in range(K + 1):
        t = min(t0 + k * h, t1)
        q, qd = data.qpos.copy(), data.qvel.copy()
        ref = ctrl.run.solution(t)
        T.append(t), Q.append(q), QD.append(qd), QN.append(ref[:n]), QDN.append(ref[n:])
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            ok, message = False, f"MuJoCo's state is not finite at t = {t:.6g} s (the loop diverged)"
            break
        for j in np.flatnonzero(limited & ((q <= lo + 1e-9) | (q >= hi - 1e-9))):
            hits.setdefault(int(j), t)
        if k == K:
            break
        if sensor is None:
            qm, vm = q, qd
        else:
            seen = sensor.measure(k, q, qd, h, seen, nu[0][k], nu[1][k], v0)
            qm, vm = seen
        try:
            ctrl(t, qm, vm)
        except ControllerError as exc:  # the controller's boundary refused (status 2): the loop diverged, said
            ok, message = False, f"the controller refused at t = {t:.6g} s (the loop diverged): {exc}"
            break
        tau = ctrl.demand  # the law's τ; the motor driver clips what reaches the joints (below)
        if D:  # the compensator's part of τ is late; the feed-forward Qᶜ(t) is not
            Qc = ctrl.reference(t)[2]
            ring.append(tau - Qc)
            tau = Qc + (ring[k - D] if k >= D else np.zeros(n))
        DEMAND.append(tau)
        tau = ctrl.saturate(tau)  # the effort limits, clamped before qfrc_applied (MuJoCo does not clamp it)
        if not np.all(np.isfinite(tau)) or np.abs(tau).max() > 1e12:
            ok, message = False, f"the controller's force left every scale at t = {t:.6g} s (the loop diverged)"
            break
        TAU.append(tau)
        data.qfrc_applied[:] = tau
        for _ in range(substeps):
            mujoco.mj_step(model, data)
    limits = sorted((t, plant.coordinates[j]) for j, t in hits.items())
    return MujocoRun(np.array(T), np.array(Q), np.array(QD), np.array(QN), np.array(QDN),
                     np.array(TAU).reshape(-1, n), ok, message, limits, np.array(DEMAND[:len(TAU)]).reshape(-1, n))


def mujoco_peaks(run, actual, *, sensor=None, substeps: int = 10, integrator: str = "RK4", controller=None):
    """A campaign's numbers of one actual plant run against MuJoCo (:func:`run_mujoco`), as
    :func:`~robustrack.tracking.simulate.track_peaks` gives them for robustrack's own actual plant.

    The peaks are taken at the loop's sample instants (where the sensor reads MuJoCo's state); Qᵘ there is the held
    τ − Qᶜ(t). The bounds are the problem's promised ones (widened by its sensor), judged after the same transient;
    ‖δq‖∞ and ‖M̃_a‖∞ are evaluated along MuJoCo's states with the URDFPlant that MuJoCo's model is written from
    (its M and forces agree to 1e-12), so the bound's assumptions are checked as on robustrack's runs. A diverged
    loop is returned (``success`` False, peaks up to where it stopped), never raised.

    Parameters
    ----------
    run : NominalRun
    actual : URDFPlant
    sensor : Sensor, optional
        This sample's sensor (keyword-only); default the problem's.
    substeps, integrator
        As :func:`run_mujoco`.
    controller : Controller, optional
        Reused across samples (default: the problem's, made here).

    Returns
    -------
    TrackingPeaks
    """
    from ..tracking.along import assumption_norms
    from ..tracking.assess import assumptions_held, default_transient, dropped_term, peak_metrics
    from ..tracking.simulate import TrackingPeaks

    pb = run.problem
    controller = controller if controller is not None else pb.controller(run, period=pb.sample_period)
    mj = run_mujoco(pb, controller=controller, sensor=pb.sensor if sensor is None else sensor, substeps=substeps,
                    integrator=integrator, actual=actual)
    t0, t1 = (float(v) for v in pb.t_span)
    reached = float(mj.t[-1]) if mj.t.size else t0
    method = f"MuJoCo {integrator} ×{substeps}"
    if not mj.t.size:
        return TrackingPeaks(False, mj.message, reached, None, None, None, None, None, method)
    n = pb.n
    transient = pb.transient
    if transient is None:
        from ..tracking.simulate import starting_set

        transient = default_transient(mj.e[0], mj.edot[0], t1 - t0, inside=starting_set(pb, mj.e[0], mj.edot[0])[0])
    K = mj.tau.shape[0]
    Qc = np.array([np.asarray(controller.reference(t)[2], dtype=float) for t in mj.t])  # the feed-forward Qᶜ(t)
    Qu = np.abs(mj.tau - Qc[:K]).max(axis=1, initial=0.0) if K else np.zeros(0)
    Qu = np.concatenate([Qu, Qu[-1:] if K else [0.0]])[:mj.t.size]  # the last instant holds no new force
    bounds = pb.promised_bounds(run)
    peaks = peak_metrics(mj.t, np.abs(mj.e).max(axis=1, keepdims=True), np.abs(mj.edot).max(axis=1, keepdims=True),
                         Qu[:, None], bounds, transient=t0 + transient)
    x = np.concatenate([mj.q, mj.qd], axis=1)
    y = np.concatenate([mj.q_nominal, mj.qd_nominal], axis=1)
    dq, mt, P = assumption_norms(pb.nominal, actual, pb.compensator, mj.t, x, y, Qc)  # no K_i: MujocoProblem.of
    P = None if P is None else float(np.max(dropped_term(pb.compensator, dq, P)))
    dq, mt = float(np.max(dq)), float(np.max(mt))
    held = peaks["bounds_held"] if mj.success else None
    note = None if mj.success or not peaks["bounds_held"] else f"stopped at t = {reached:.6g} s: {mj.message}"
    demand = None
    if controller.limits is not None and K:  # the motors clipped τ: as robustrack's runs, not judged from then on
        demand = tuple(np.abs(mj.demand).max(axis=0).tolist())
        over = np.flatnonzero(np.any(np.abs(mj.demand) > controller.limits, axis=1) & (mj.t[:K] >= t0 + transient))
        if over.size:
            held, note = None, (f"not judged from t = {mj.t[over[0]]:.6g} s on: the motors saturate there, and the "
                                "compensator's bound assumes an unsaturated Qᵘ = M u")
    return TrackingPeaks(mj.success, mj.message, reached, peaks["max_abs_e"], peaks["max_abs_edot"],
                         peaks["max_abs_Qu"], held, note, method, dq, mt,
                         assumptions_held(bounds, pb.compensator, dq, mt, P), P, demand)


@dataclass(frozen=True, eq=False)
class MujocoProblem(TrackingProblem):
    """A :class:`~robustrack.tracking.TrackingProblem` whose actual plants are MuJoCo's: what a campaign samples
    with ``[actual] engine = "mujoco"`` (docs/guide/robot.md, "MuJoCo as the actual plant").

    Every sampled actual plant (a URDFPlant: link masses, payload) is written as a MuJoCo model and run in the
    fixed-rate loop of :func:`run_mujoco`; :meth:`peaks` gives the campaign's numbers (:func:`mujoco_peaks`). The
    nominal run, the bounds and everything else are the problem's.

    Parameters
    ----------
    substeps, integrator
        As :func:`run_mujoco` (keyword-only, after the problem's own fields).
    """

    substeps: int = 10
    integrator: str = "RK4"
    _controllers: dict = field(init=False, repr=False, compare=False, default_factory=dict)
    #: Its loop holds the whole τ = Qᶜ(t_k) + M(q̂) u over a sample, as a motor driver does: the bounds count it
    #: (:func:`robustrack.loop.bounds.held_torque_terms`, docs/theory/sensing.md "A loop that holds τ").
    holds_torque: ClassVar[bool] = True

    @classmethod
    def of(cls, problem: TrackingProblem, *, substeps: int = 10, integrator: str = "RK4") -> "MujocoProblem":
        """The same problem, its actual plants MuJoCo's."""
        if problem.sample_period is None:
            raise ParameterError("MuJoCo as the actual plant runs a fixed-rate loop: set `sample_period` "
                                 "(compensator.sample_period), e.g. 1e-3 s.")
        from ..tracking.assess import integral_gain

        if integral_gain(problem.compensator):  # K_i = 0 is GD without the integral
            raise ParameterError("MuJoCo as a campaign's actual plant: GD with an integral gain K_i > 0 is not "
                                 "supported yet (the bound's P needs the integral's trace); take K_i = 0.")
        own = {f.name: getattr(problem, f.name) for f in fields(problem) if f.init}
        if not problem._grid_given:
            own["t_eval"] = None  # made from n_points again, as the problem's own was
        return cls(**own, substeps=substeps, integrator=integrator)

    def peaks(self, run, actual, *, sensor=None):
        """:func:`mujoco_peaks` of one actual plant (the controller made once per process and kept)."""
        key = id(run)
        if key not in self._controllers:
            self._controllers.clear()
            self._controllers[key] = (run, self.controller(run, period=self.sample_period))
        ctrl = self._controllers[key][1]
        ctrl.reset()
        return mujoco_peaks(run, actual, sensor=sensor, substeps=self.substeps, integrator=self.integrator,
                            controller=ctrl)

    def describe(self) -> dict:
        """The problem's description with the engine (a store of MuJoCo samples is not one of robustrack's)."""
        return {**super().describe(), "actual_engine": {"engine": "mujoco", "substeps": self.substeps,
                                                        "integrator": self.integrator}}
