"""Uncertainty: the actual plant, its parameters, their samples and Γ (W ch. 5, 7.3; docs/guide/uncertainty.md).

One room per idea:

- :mod:`~robustrack.uncertainty.forces` — the actual plant's forces: disturbances, joint friction,
  :class:`ActualForces`, :func:`actual_plant` (W 5.2.12–5.2.16);
- :mod:`~robustrack.uncertainty.parameters` — named uncertain parameters (:class:`UncertainParameter`,
  :class:`UncertainSet`) and the plant parameters a study varies (:func:`parameter_values`);
- :mod:`~robustrack.uncertainty.sampling` — samples of them for a Monte Carlo (:func:`sample_parameters`,
  :func:`sample_stream`);
- :mod:`~robustrack.uncertainty.gamma` — δq along the nominal motion and Γ by Monte Carlo (:func:`estimate_gamma`,
  W 5.3.5–5.3.11, docs/theory/nominal-actual.md).

Every public name is importable from here.
"""

from __future__ import annotations

from .forces import (Disturbance, SumDisturbance, StepDisturbance, SinusoidalDisturbance, BandLimitedDisturbance,
                     FunctionDisturbance, JointFriction, friction_coefficient, ActualForces, actual_plant,
                     ForcedPlant)
from .parameters import (UncertainParameter, UncertainSet, DISTRIBUTIONS, uncertain_set, parameter_values,
                         parameter_replacements, parameter_label)
from .sampling import (ParameterSamples, sample_parameters, SampleStream, sample_stream, check_sample_count,
                       check_gamma_settings, LargeMonteCarlo, SAMPLING_KINDS)
from .gamma import uncertainty_acceleration, uncertainty_bound, GammaEstimate, estimate_gamma, DEFAULT_CHUNK

__all__ = [
    "Disturbance",
    "SumDisturbance",
    "StepDisturbance",
    "SinusoidalDisturbance",
    "BandLimitedDisturbance",
    "FunctionDisturbance",
    "JointFriction",
    "friction_coefficient",
    "ActualForces",
    "ForcedPlant",
    "actual_plant",
    "ParameterSamples",
    "sample_parameters",
    "SampleStream",
    "sample_stream",
    "check_sample_count",
    "check_gamma_settings",
    "LargeMonteCarlo",
    "parameter_values",
    "parameter_replacements",
    "parameter_label",
    "SAMPLING_KINDS",
    "uncertainty_acceleration",
    "uncertainty_bound",
    "GammaEstimate",
    "estimate_gamma",
    "DEFAULT_CHUNK",
    "UncertainParameter",
    "UncertainSet",
    "DISTRIBUTIONS",
    "uncertain_set",
]
