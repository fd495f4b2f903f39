"""Reports: the figures W shows for each tracking run, and the tracking report (HTML, Markdown, JSON)."""

from ..tracking.figures import coordinates_figure, errors_figure, forces_figure, residual_figure, trajectory_figure
from ..campaigns.figures import campaign_histogram_figure, gamma_density_figure
from .report import ReportPaths, write_report
from .scenario_report import report_scenario

__all__ = ["ReportPaths", "write_report", "report_scenario", "trajectory_figure", "coordinates_figure", "errors_figure",
           "forces_figure", "residual_figure", "gamma_density_figure", "campaign_histogram_figure"]
