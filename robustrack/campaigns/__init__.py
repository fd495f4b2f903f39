"""Closed-loop robustness campaigns: Monte Carlo, worst-case search, tuning to a target bound.

For every plant of an uncertainty set, does the compensator keep its promise, and which
plant is worst? This package answers it for a :class:`~robustrack.tracking.TrackingProblem`
(nominal plant, constraint, compensator, initial state, horizon, solver settings) and a :class:`ParameterUncertainty`
(which parameters vary, how, from which seed) — no scenario or command-line knowledge,
so scripts use it directly (``robustrack.scenarios.campaign`` builds both from a scenario):

- :func:`monte_carlo` — N sampled actual plants, each run through the full closed loop;
  a local process pool or a Dask cluster; a resumable SQLite store; progress; Ctrl-C safe.
- :func:`worst_case` — ``scipy.optimize.differential_evolution`` over the δ box,
  maximizing max ‖e‖∞ (optionally seeded with a Monte Carlo's worst sample).
- :func:`tune_compensator` — the compensator parameters whose *promised* bound meets a
  target with the gentlest control law.

Example
-------
>>> from robustrack.campaigns import ParameterUncertainty, monte_carlo
>>> from robustrack.tracking import TrackingProblem
>>> # loop = TrackingProblem(nominal, constraint, compensator, q0, qd0, (0, 10))
>>> # result = monte_carlo(loop, ParameterUncertainty("m", spread=0.1, seed=1), 1000, store="c.sqlite")
>>> # result.summary()["held_fraction"]
"""

from .executors import DaskExecutor, ExecutorLost, Job, LocalPool, SerialExecutor, make_executor
from .loop import NOT_RUN, RAN, SampleRecord, evaluate_sample
from .montecarlo import CampaignAborted, CampaignInterrupted, CampaignResult, load_campaign, monte_carlo, summarize
from .sampling import ParameterUncertainty
from .sensed_design import SensedDesign, design_for_sensor
from .store import CampaignStore
from .tuning import TuneResult, control_effort, tune_compensator
from .worstcase import WorstCaseResult, worst_case

__all__ = ["ParameterUncertainty", "SampleRecord", "evaluate_sample", "monte_carlo",
           "CampaignResult", "CampaignInterrupted", "CampaignAborted", "ExecutorLost", "RAN", "NOT_RUN", "summarize", "load_campaign", "CampaignStore", "Job",
           "SerialExecutor", "LocalPool", "DaskExecutor", "make_executor", "worst_case", "WorstCaseResult",
           "tune_compensator", "TuneResult", "control_effort", "design_for_sensor", "SensedDesign"]
