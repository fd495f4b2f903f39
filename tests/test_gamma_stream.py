"""The Γ Monte Carlo draws its samples block by block (SampleStream): bit-identical to the draws
made at once, memory bounded by the per-sample maxima, announced, interruptible."""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest

from robustrack.plants import triple_pendulum
from robustrack.scenarios import load_scenario
from robustrack.scenarios.gamma import run_gamma
from robustrack.tracking import simulate_constrained
from robustrack.plants import pendulum_energy_constraint
from robustrack.plants.motion import constrained_motion
from robustrack.uncertainty import (SampleStream, check_sample_count, estimate_gamma, sample_parameters,
                                    sample_stream)


@pytest.fixture(scope="module")
def trajectory():
    plant = triple_pendulum()
    con = pendulum_energy_constraint(L1=1.0, g=plant.g, gain=0.02, n=3, m1=1.0)
    res = simulate_constrained(plant, con, [1.0, 0.0, 0.0], [0.001, 0.0, 0.0], (0.0, 0.2), n_points=9)
    return plant, res


@pytest.mark.parametrize("kind, spread", [("uniform", 0.1), ("normal", 0.05)])
@pytest.mark.parametrize("n, size", [(50, 7), (50, 50), (50, 64), (1, 3)])
def test_stream_blocks_equal_the_draws_at_once(kind, spread, n, size):
    at_once = sample_parameters([1.0, 2.0, 3.0], n, spread=spread, kind=kind, seed=11).values
    stream = sample_stream([1.0, 2.0, 3.0], n, spread=spread, kind=kind, seed=11)
    blocks = list(stream.blocks(size))
    assert [b.shape[0] for b in blocks] == [min(size, n - i) for i in range(0, n, size)]
    assert np.array_equal(np.concatenate(blocks), at_once) and np.array_equal(np.asarray(stream), at_once)


@pytest.mark.parametrize("n, chunk", [(50, 7), (40_000, 2**14)])  # several blocks, a short last one
def test_streamed_estimate_is_bit_identical(trajectory, n, chunk):
    plant, res = trajectory
    kw = dict(spread=0.1, kind="uniform", seed=4)
    a = estimate_gamma(plant, res, sample_parameters(plant.m, n, **kw), chunk=chunk)
    b = estimate_gamma(plant, res, sample_stream(plant.m, n, **kw), chunk=chunk)
    for name in ("exact", "first_order", "analytic", "profile"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.gamma_prime == b.gamma_prime and a.summary() == b.summary()
    assert isinstance(b.samples, SampleStream) and np.array_equal(np.asarray(b.samples), a.samples)


def test_run_gamma_equals_the_estimator_on_draws_made_at_once():
    sc = load_scenario("triple-pendulum", ["simulation.t_end=0.2", "simulation.n_points=11"])
    study = run_gamma(sc, 300, 0.1, seed=8)
    estimate, doc = study.estimate, study.to_dict()
    pb = sc.build()
    # the trajectory run_gamma evaluates, rebuilt: the motion the tracking follows (nominal_run), on its grid
    run = pb.nominal_run()
    y = run.solution(run.t_eval)
    motion = constrained_motion(pb.nominal, pb.constraint, y[:, :3], y[:, 3:], run.t_eval)
    res = SimpleNamespace(t=run.t_eval, q=y[:, :3], qd=y[:, 3:], Qc=motion.Qc)
    assert np.array_equal(res.t, estimate.t)
    ref = estimate_gamma(pb.nominal, res, sample_parameters(pb.nominal.m, 300, spread=0.1, seed=8))
    assert np.array_equal(ref.exact, estimate.exact) and ref.gamma_prime == doc["gamma_prime"]


def test_memory_holds_the_maxima_not_the_draws(trajectory):
    """N = 10⁶ samples, 3 masses: the draws at once take 24 MB (plus as much for the uniform
    numbers they come from); streamed, the peak is the 24 MB of maxima plus one block's arrays."""
    plant, res = trajectory
    short = SimpleNamespace(t=res.t[:2], q=res.q[:2], qd=res.qd[:2], Qc=res.Qc[:2])
    n = 10**6
    tracemalloc.start()
    try:
        estimate_gamma(plant, short, sample_stream(plant.m, n, spread=0.1, seed=1))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # maxima 24 B a sample; a block of 2**14 pairs holds ~10 arrays of 2**14 × 3 × 3 doubles (~1.2 MB each)
    assert peak < 24 * n + 16 * 2**20, peak / 2**20


def test_the_announced_memory_is_that_of_the_maxima(recwarn):
    # 24 B a sample streamed: 5·10⁷ × 24 B = 1.12 GiB
    with pytest.warns(UserWarning, match=r"about 1\.1 GiB of per-sample maxima .*block by block"):
        check_sample_count(50_000_000, 3, "--samples", streamed=True)
    # 6·10⁶ samples: 0.13 GiB streamed (below the 0.5 GiB notice), 0.58 GiB with the draws held
    recwarn.clear()
    check_sample_count(6_000_000, 3, "--samples", streamed=True)
    assert not recwarn.list
    with pytest.warns(UserWarning, match="draws and maxima"):
        check_sample_count(6_000_000, 3, "--samples")
