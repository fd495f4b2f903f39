"""Solver defaults of the tracking loop (a module of constants: importing it costs nothing)."""

#: Tolerances of the dissertation's runs (W 7.3).
DEFAULT_RTOL = 1e-8
DEFAULT_ATOL = 1e-12
#: scipy ``solve_ivp`` methods accepted.
METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
#: Integrator of the controlled (stiff) loop under continuous control: scipy's BDF algorithm, which
#: runs inside the compiled kernels (the whole horizon in one call, with a looser Newton tolerance:
#: :mod:`robustrack.compiled.bdf`) when they are available.
DEFAULT_TRACKING_METHOD = "BDF"

#: The smallest absolute tolerance accepted. The error estimate of a step is a sum of stage derivatives
#: times h, rounded to about ε·h·|ẏ|; at the shortest steps a horizon of seconds can afford (~1e-6 s, a
#: million steps) and |ẏ| ~ 1 that noise is ~2e-22, so an atol below 1e-20 asks for an error the step
#: control cannot see: the run crawls at the smallest step (atol = 1e-30: 250 million evaluations, 6.5 minutes for a
#: 1-s triple-pendulum horizon) or divides by an error norm of 0 (1e-200). Refused, with the range.
MIN_ATOL = 1e-20

#: The most right-hand-side evaluations one integration may use: ~400 × the largest of the reference runs
#: (46 000 for the triple pendulum's 10-s BDF loop), about 30 s of compiled triple pendulum. A run that
#: needs more is diverging or asks for what double precision cannot give; it ends with a named failure and
#: keeps what it reached.
MAX_EVALUATIONS = 20_000_000
#: A state component larger than this times max(1, max |x0|) ends the run: near 1e15 the spacing of doubles
#: is ~0.1 of the state's initial scale, so the motion is no longer resolved (an angle of 1e16 rad is noise).
STATE_LIMIT = 1e15
#: A step-size collapse: after each window of STALL_STEPS accepted steps, the run projects what it would need at
#: that window's pace (right-hand sides per unit of time) to reach the end of the horizon; when STALL_WINDOWS windows
#: in a row project beyond the evaluation limit, the run ends there with a named failure (status 5) instead of
#: crawling on for hours to MAX_EVALUATIONS. A run that keeps its pace could not finish within the limit anyway;
#: two windows keep a short slow stretch (a sharp transient) from ending a run. The usual cause is a constraint at a
#: rank boundary (a singular configuration, where q̈ is not smooth): the UR5 held in full pose on its wrist
#: singularity (issue 28) crawls at ~1e-7 s per step, ~1e8 evaluations per second of motion.
STALL_STEPS = 250
STALL_WINDOWS = 2

#: ``backend`` values: "auto" compiles where it can (else numpy with a notice), "numpy" is the reference.
BACKENDS = ("auto", "numpy")

#: A sampled (zero-order-hold) run stops as diverging when a stretch of its horizon needs more right-hand sides
#: than RK45 steps this many times shorter than the nominal run's mean step would take (plus a floor):
#: :func:`robustrack.tracking.integrate.hold_budget`. RK45 at the nominal's tolerances takes ~4–10 times
#: the steps of the nominal's DOP853 (orders 5 and 8), so a loop that tracks has a margin of ~100.
HOLD_STEP_RATIO = 1000
#: The floor of that budget, in right-hand sides: per stretch, and per hold interval in it (each restarts its
#: step size at the interval's length and may reject its way down).
HOLD_MIN_EVALUATIONS = (60_000, 600)
