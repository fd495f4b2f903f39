"""Reports: the figures W shows for each tracking run, the tracking report (HTML, Markdown, JSON), and the text
the commands print (:mod:`robustrack.reports.text`).

The names below are imported on first use (PEP 562), so the text of a command needs no matplotlib.
"""

import importlib

_WHERE = {
    "ReportPaths": ".report", "write_report": ".report", "report_scenario": ".scenario_report",
    "trajectory_figure": "..tracking.figures", "coordinates_figure": "..tracking.figures",
    "errors_figure": "..tracking.figures", "forces_figure": "..tracking.figures",
    "residual_figure": "..tracking.figures", "gamma_density_figure": "..campaigns.figures",
    "campaign_histogram_figure": "..campaigns.figures",
}

__all__ = ["ReportPaths", "write_report", "report_scenario", "trajectory_figure", "coordinates_figure", "errors_figure",
           "forces_figure", "residual_figure", "gamma_density_figure", "campaign_histogram_figure"]


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value
