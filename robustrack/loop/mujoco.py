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
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["mujoco_model", "run_mujoco", "MujocoRun", "mujoco_available"]


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


def mujoco_model(plant):
    """The MJCF-compiled MuJoCo model of a URDF robot, as the actual plant (module docstring).

    Parameters
    ----------
    plant : URDFPlant
        Loaded from a URDF file (its payload included; link masses as the URDF states them).

    Returns
    -------
    (mujoco.MjModel, str)
        The model and the URDF text MuJoCo compiled (meshes stripped, the payload added).

    Raises
    ------
    ParameterError
        Not a URDF robot from a file, link masses other than the URDF's, or locked joints (not yet).
    """
    import mujoco

    robot = getattr(plant, "robot", None)
    path = getattr(robot, "source", None)
    if robot is None or not isinstance(path, str) or not path.endswith(".urdf"):
        raise ParameterError("MuJoCo as the actual plant takes a URDFPlant loaded from a URDF file; got "
                             f"{type(plant).__name__}.")
    text = open(path, encoding="utf-8").read()
    nominal = type(plant)(path, payload_frame=plant.frame)
    changed = [k for k in plant.params if k.startswith(("m_", "com_"))
               and not np.allclose(plant.params[k], nominal.params[k], rtol=1e-15, atol=0)]
    if changed:
        raise ParameterError(f"MuJoCo as the actual plant: link masses or centres of mass other than the URDF's "
                             f"({changed}) are not written into its model yet; change the payload instead.")
    if plant.n != nominal.n:
        raise ParameterError("MuJoCo as the actual plant: a robot with locked joints is not supported yet.")
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
    T, Q, QD, QN, QDN, TAU, ring, hits = [], [], [], [], [], [], [], {}
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
        tau_now = ctrl(t, qm, vm)
        if D:  # the compensator's part of τ is late; the feed-forward Qᶜ(t) is not
            Qc = ctrl.reference(t)[2]
            ring.append(tau_now - Qc)
            tau = Qc + (ring[k - D] if k >= D else np.zeros(n))
        else:
            tau = tau_now
        if not np.all(np.isfinite(tau)) or np.abs(tau).max() > 1e12:
            ok, message = False, f"the controller's force left every scale at t = {t:.6g} s (the loop diverged)"
            break
        TAU.append(tau)
        data.qfrc_applied[:] = tau
        for _ in range(substeps):
            mujoco.mj_step(model, data)
    limits = sorted((t, plant.coordinates[j]) for j, t in hits.items())
    return MujocoRun(np.array(T), np.array(Q), np.array(QD), np.array(QN), np.array(QDN),
                     np.array(TAU).reshape(-1, n), ok, message, limits)
