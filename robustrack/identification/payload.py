"""A URDF robot's payload — mass and centre of mass — identified from a logged trajectory (W ch. 10).

A payload rigidly attached to the payload frame adds its spatial inertia to the link carrying
it, and the joint torques are *linear* in its ten inertial parameters in that frame,

    π = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)

(Pinocchio's ``Inertia.toDynamicParameters`` order; I about the frame's origin, I = I_c +
m S(c)ᵀ S(c)), while mass and centre of mass themselves enter nonlinearly (c through m c and
m c cᵀ). :class:`PayloadInertialPlant` is the URDF plant with its payload given by π — a plant
like any other, linear in each component — so the identification of
:mod:`robustrack.identification` (the integral form by default: q, q̇ and the joint torques, no
q̈) estimates π̂; then m̂ = π̂₀ and ĉ = (π̂₁, π̂₂, π̂₃)/m̂, whose standard errors follow from the
covariance of π̂ by the delta method (first order in the error, exact for a linear map).

The rotational inertia is estimated too (a real payload has one; a point payload's is
m (|c|² 1 − c cᵀ)), so the model does not force a point mass on the data.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import ParameterError
from ..plants.base import Plant

__all__ = ["PAYLOAD_PARAMETERS", "PayloadInertialPlant", "PayloadEstimate", "identify_payload"]

#: The payload's inertial parameters in the payload frame (Pinocchio's order), as named in the results.
PAYLOAD_PARAMETERS = ("payload_m", "payload_mx", "payload_my", "payload_mz", "payload_Ixx", "payload_Ixy",
                      "payload_Iyy", "payload_Ixz", "payload_Iyz", "payload_Izz")


class PayloadInertialPlant(Plant):
    """A :class:`~robustrack.plants.URDFPlant` whose payload is given by its ten inertial parameters π.

    Parameters
    ----------
    arm : URDFPlant
        The robot; its ``payload_frame`` carries the payload, and its own point payload
        (``payload_mass``, ``payload_com``) gives the default π.
    **pi : float
        Components of π by name (:data:`PAYLOAD_PARAMETERS`), replacing the arm's.
    """

    def __init__(self, arm, **pi):
        unknown = sorted(set(pi) - set(PAYLOAD_PARAMETERS))
        if unknown:
            raise ParameterError(f"PayloadInertialPlant has no parameter(s) {unknown}; its parameters are "
                                 f"{list(PAYLOAD_PARAMETERS)}.")
        if not hasattr(arm, "robot") or not hasattr(arm.robot, "payload_placement"):
            raise ParameterError(f"`arm` must be a URDFPlant (a robot with a payload frame); got {type(arm).__name__}.")
        import pinocchio as pin

        base = dict(zip(PAYLOAD_PARAMETERS, pin.Inertia(float(arm.params["payload_mass"]),
                                                        np.asarray(arm.params["payload_com"], dtype=float),
                                                        np.zeros((3, 3))).toDynamicParameters()))
        values = {k: float(v) for k, v in {**base, **pi}.items()}
        bare = arm.replace(payload_mass=0.0)
        robot = bare.robot
        joint = robot.payload_joint
        link = robot.model.inertias[joint]
        # π in the payload frame, moved into the joint's frame and added to the link's inertia; the link's
        # mass and centre-of-mass parameters are set to the total's so that URDFPlant keeps that inertia as it is
        payload = robot.payload_placement.act(_inertia(pin, np.array([values[k] for k in PAYLOAD_PARAMETERS])))
        model = pin.Model(robot.model)
        model.inertias[joint] = link + payload
        body = robot.bodies[joint - 1]
        inner = type(arm)._make(dataclasses.replace(robot, model=model),
                                {**bare.params, body: float(model.inertias[joint].mass),
                                 robot.coms[joint - 1]: np.array(model.inertias[joint].lever, dtype=float)})
        object.__setattr__(self, "arm", arm)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "inner", inner)

    @property
    def coordinates(self):
        return self.arm.coordinates

    @property
    def coordinate_kinds(self):
        return self.arm.coordinate_kinds

    @property
    def params(self) -> dict:
        """π by name (:data:`PAYLOAD_PARAMETERS`)."""
        return dict(self.values)

    def replace(self, **pi) -> "PayloadInertialPlant":
        """A copy with some components of π changed."""
        return PayloadInertialPlant(self.arm, **{**self.values, **pi})

    def mass_matrix(self, q, t=0.0) -> np.ndarray:
        """M(q) of the arm with this payload (CRBA), shape (..., n, n)."""
        return self.inner.mass_matrix(q, t)

    def given_force(self, q, qd, t=0.0) -> np.ndarray:
        """Q(q, q̇) of the arm with this payload, shape (..., n)."""
        return self.inner.given_force(q, qd, t)


def _inertia(pin, pi):
    """pinocchio.Inertia of dynamic parameters π (m ≠ 0; I need not be positive: the identification's
    perturbations of π leave the physical set, only the linearity of the dynamics in π is used)."""
    return pin.Inertia.FromDynamicParameters(np.asarray(pi, dtype=float))


@dataclasses.dataclass(frozen=True)
class PayloadEstimate:
    """A payload's mass and centre of mass from a log (module docstring).

    Attributes
    ----------
    mass : float
        m̂, kg.
    mass_std_error : float
    com : ndarray (3,)
        ĉ in the payload frame, m.
    com_std_error : ndarray (3,)
        Delta-method standard errors of ĉ.
    frame : str
        The payload frame.
    identification : Identification
        The estimate of all ten parameters π (``parameters`` = :data:`PAYLOAD_PARAMETERS`).
    """

    mass: float
    mass_std_error: float
    com: np.ndarray
    com_std_error: np.ndarray
    frame: str
    identification: object

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {"mass": self.mass, "mass_std_error": self.mass_std_error, "com": self.com.tolist(),
                "com_std_error": self.com_std_error.tolist(), "frame": self.frame,
                "identification": self.identification.to_dict()}


def identify_payload(run, arm, *, friction=(), **options) -> PayloadEstimate:
    """A URDF robot's payload mass and centre of mass from a run or a log (module docstring).

    Parameters
    ----------
    run : TrackingResult or mapping
        ``t``, ``qc``, ``qcd`` and the joint torques as ``Qc`` + ``Qu`` (a log: put the measured
        torques in ``Qc`` and zeros in ``Qu``).
    arm : URDFPlant or ForcedPlant
        The robot model; its point payload (``payload_mass``, ``payload_com``) is the nominal π. A
        :class:`~robustrack.plants.ForcedPlant` of it adds given forces, its
        :class:`~robustrack.uncertainty.JointFriction` the nominal friction coefficients (and v_s).
    friction : sequence of str
        Joint friction coefficients (``viscous_<joint>``, ``coulomb_<joint>``) estimated with π
        (keyword-only; :mod:`robustrack.identification.friction`): after π in the result's ``identification``.
    **options
        Passed to :func:`robustrack.identification.identify` (``accelerations``, ``window``,
        ``resolution``, ``condition_limit``).

    Returns
    -------
    PayloadEstimate

    Raises
    ------
    ParameterError
        The estimated mass is not positive (the motion does not determine it).
    """
    from ..plants.forced import ForcedPlant
    from .estimate import identify
    from .friction import friction_names

    extra = tuple(p.strip() for p in friction.split(",")) if isinstance(friction, str) else tuple(friction)
    if friction_names(arm, extra)[0]:
        raise ParameterError(f"`friction` names joint friction coefficients (viscous_<joint>, coulomb_<joint> of "
                             f"{list(arm.coordinates)}); got {list(friction_names(arm, extra)[0])}.")

    def inertial(plant):  # the arm with π as its payload, under the same given forces
        if isinstance(plant, ForcedPlant):
            return ForcedPlant(inertial(plant.base), plant.dQ)
        return PayloadInertialPlant(plant)

    ident = identify(run, inertial(arm), PAYLOAD_PARAMETERS + extra, **options)
    pi, cov = ident.estimate, ident.covariance
    if not pi[0] > 0:
        raise ParameterError(f"the estimated payload mass is {pi[0]:.3g} kg (≤ 0): this motion does not determine "
                             "the payload; use a run that moves the wrist.")
    com = pi[1:4] / pi[0]
    # c = h / m: ∂c/∂m = −h/m², ∂c/∂h = 1/m
    jac = np.zeros((3, len(pi)))
    jac[:, 0] = -pi[1:4] / pi[0] ** 2
    jac[:, 1:4] = np.eye(3) / pi[0]
    com_cov = jac @ cov @ jac.T
    return PayloadEstimate(mass=float(pi[0]), mass_std_error=float(ident.std_error[0]), com=com,
                           com_std_error=np.sqrt(np.maximum(np.diag(com_cov), 0)), frame=arm.frame,
                           identification=ident)
