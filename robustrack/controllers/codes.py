"""The kind numbers by which compiled kernels know a control law and a control function.

Written once, here: the classes give their own number with their parameters
(:meth:`~robustrack.controllers.Compensator.kernel_law`,
:meth:`~robustrack.controllers.ControlFunction.kernel_code`), and the kernels of
:mod:`robustrack.compiled.laws` branch on them. No numba here, so the classes import it freely.
"""

from collections import namedtuple

#: Compensator kinds: no compensation, GSS (W 7.2.15), GD (W 8.2.26), GD-bar (W 8.3.20), linear u = −K [e; ė].
LAW_NONE, LAW_GSS, LAW_GD, LAW_GDBAR, LAW_LINEAR = 0, 1, 2, 3, 4
#: Control-function kinds g (W 7.3.1, 7.3.4): sign, saturation, tanh, α_c sign(x)|x|^p.
G_SIGN, G_SATURATION, G_TANH, G_POWER = 0, 1, 2, 3

#: A control law for the kernels: ``kind`` (LAW_*), ``g`` (G_*, the control function's kind) and ``params``:
#: GSS [σβ, ε, α_c, p, K_1..K_n]; GD [σρ, ε, α_c, p, K_i, K_d]; GD-bar [σ, ε, α_c, p, k, 4n−4];
#: linear [K (n × 2n) row-major] (computed torque, LQR).
Law = namedtuple("Law", ["kind", "g", "params"])
