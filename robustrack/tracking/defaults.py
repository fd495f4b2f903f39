"""Solver defaults of the tracking loop (a module of constants: importing it costs nothing)."""

#: Tolerances of the dissertation's runs (W 7.3).
DEFAULT_RTOL = 1e-8
DEFAULT_ATOL = 1e-12
#: scipy ``solve_ivp`` methods accepted.
METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
#: Integrator of the controlled (stiff) loop under continuous control: scipy's BDF algorithm, which
#: runs inside the compiled kernels (the whole horizon in one call) when they are available.
DEFAULT_TRACKING_METHOD = "BDF"
