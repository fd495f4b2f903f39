"""Controllers: control functions f(x) = g(x/ε), the robust compensators GSS, GD, GD-bar (docs/theory/compensators.md),
and the baselines engineers compare them with (computed torque, LQR)."""

from .compensators import (
    COMPENSATORS,
    GD,
    GSS,
    Compensator,
    GDBar,
    LeitmannCorless,
    LyapunovRedesign,
    PromisedBounds,
    SlidingMode,
    leitmann_corless,
    lyapunov_redesign,
    make_compensator,
    sliding_mode,
)
from .baselines import LQR, ComputedTorque
from .functions import CONTROL_FUNCTIONS, G_FORMULAS, ControlFunction, control_function

# the baselines live in their own module (they import compensators.py); register them here
COMPENSATORS.update({"computed-torque": ComputedTorque, "lqr": LQR})

__all__ = [
    "CONTROL_FUNCTIONS",
    "G_FORMULAS",
    "ControlFunction",
    "control_function",
    "COMPENSATORS",
    "Compensator",
    "PromisedBounds",
    "GSS",
    "GD",
    "GDBar",
    "SlidingMode",
    "LeitmannCorless",
    "LyapunovRedesign",
    "sliding_mode",
    "leitmann_corless",
    "lyapunov_redesign",
    "make_compensator",
    "ComputedTorque",
    "LQR",
]
