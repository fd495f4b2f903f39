"""The same campaign on a real Dask cluster (a LocalCluster with two worker processes started here)
gives the same samples and results as the local pool."""

import importlib.util

import pytest

from robustrack.campaigns import ParameterUncertainty, monte_carlo, worst_case
from robustrack.scenarios.campaign import ScenarioLoop, resolve_campaign_scenario

if importlib.util.find_spec("distributed") is None:  # found, not imported: collecting this file costs no Dask import
    pytest.skip("Dask's `distributed` is not installed (the `dask` extra)", allow_module_level=True)


@pytest.fixture(scope="module")
def cluster():
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as c:
        yield c


def test_dask_cluster_gives_the_local_pool_results(cluster, tmp_path):
    loop = ScenarioLoop(resolve_campaign_scenario("duffing-tracking", overrides=["simulation.t_end=0.5"]))
    unc = ParameterUncertainty(("m1", "m2"), spread=0.2, seed=11)
    local = monte_carlo(loop, unc, 4, workers=2, chunk=2, progress=None)  # an equality: 4 samples, chunked
    # differently on each side (2+2 here, 3+1 there)
    dask = monte_carlo(loop, unc, 4, scheduler=cluster.scheduler_address, chunk=3, progress=None,
                       store=tmp_path / "dask.sqlite")
    assert "Dask" in dask.executor
    assert [r.results() for r in dask.records] == [r.results() for r in local.records]
    strip = lambda d: {k: v for k, v in d.items() if k not in ("wall_s", "cpu_s")}  # noqa: E731
    assert strip(dask.summary()) == strip(local.summary())
    a = worst_case(loop, unc, budget=10, scheduler=cluster.scheduler_address)
    b = worst_case(loop, unc, budget=10, workers=1)
    assert a.worst.results()[1:] == b.worst.results()[1:]
