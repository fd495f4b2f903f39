"""Controllers: control functions f(x) = g(x/ε) and the robust compensators GSS, GD, GD-bar (THEORY §6)."""

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
from .functions import CONTROL_FUNCTIONS, ControlFunction, control_function

__all__ = [
    "CONTROL_FUNCTIONS",
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
]
