"""Certified uncertainty bounds: Γ and the bounds' assumptions proved over a box of plants (issue 29).

:func:`certify` encloses sup ‖δq‖∞ (Γ, W 5.3.5) and sup ‖M̃ₐ‖∞ (W 5.3.4) over every plant in a
:class:`ParameterBox` and the whole run, in arb ball arithmetic (python-flint) on the problem's
symbolic forms, along the DOP853 dense output the tracking follows; at the closed level, over the
tube of the compensator's promised bound, with the first-exit argument's conditions
(docs/theory/certificate.md). :func:`certificate_summary` and :func:`check_covers` read a saved
certificate back for the studies that design to it (tune, reports, montecarlo, worst-case). Needs ``pip install 'robustrack[certify]'``.
"""

from .box import ParameterBox
from .certificate import LEVELS, NOT_ENCLOSED, QUANTITIES, Certificate, CertifiedBound, Condition, certify
from .saved import certificate_summary, check_covers

__all__ = ["certify", "Certificate", "CertifiedBound", "Condition", "ParameterBox", "LEVELS", "QUANTITIES",
           "NOT_ENCLOSED", "certificate_summary", "check_covers"]
