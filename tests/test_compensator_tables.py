"""Scenario tables that say what they mean (issue 31, item 3): one ``[compensator.NAME]`` table per compensator
named as its class's fields, ``uncertainty.gamma`` for the Γ of the bounds, old flat tables read with a notice,
nominal + δ → actual in one place, the configuration validated once per run."""

import contextlib
import dataclasses
import io
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from robustrack import cli
from robustrack.controllers import COMPENSATORS
from robustrack.errors import ParameterError, ScenarioError
from robustrack.plants import NLinkPendulum
from robustrack.plants.examples import CoupledDuffing
from robustrack.scenarios import config, load_scenario, registry
from robustrack.scenarios.compensator_table import (LEGACY_KEYS, RenamedKeyNotice, law_keys, takes_f,
                                                    w_gamma_items)
from robustrack.scenarios.scenario import scenario_from_toml
from robustrack.uncertainty import actual_plant

#: The catalog's triple pendulum as it was written before the per-compensator tables (git history: 710f565),
#: its [compensator] table flat, with a GD-bar run's keys changed so the old names carry values that matter.
OLD_FLAT = """
[scenario]
name = "old-pendulum"
kind = "triple-pendulum-tracking"

[uncertainty]
dm = [0.1, -0.2, 0.3]

[compensator]
type = "gss"
f = "signed-quadratic"
eps = 1e-2
alpha_c = 2.0
p = 2.0
gamma = 150.0
K = 12.0
beta0 = 10.0
alpha0 = 0.5
sigma = 1.0
Ki = 0.0
Kd = 3.0
rho0 = 1.0
alpha_eps = 2.0
k = 10.0
n = 1.0
Kp = 90.0
Kd_ct = 25.0
lqr_q = [50.0, 2.0]
lqr_r = 1e-2
sample_period = 0.0
sign_sample_period = 1e-3

[simulation]
t_end = 0.05
"""

#: The same scenario in the new layout, written by hand from the rename table of the issue (not by the code).
NEW_TABLES = """
[scenario]
name = "old-pendulum"
kind = "triple-pendulum-tracking"

[uncertainty]
dm = [0.1, -0.2, 0.3]
gamma = 150.0

[compensator]
type = "gss"

[compensator.gss]
gamma_prime = 150.0
K = 12.0

[compensator.smc]
gamma_prime = 150.0
K = 12.0

[compensator.gd]
gamma = 150.0

[compensator.leitmann-corless]
gamma = 150.0

[compensator.computed-torque]
Kp = 90.0
Kd = 25.0

[compensator.lqr]
Q = [50.0, 2.0]

[simulation]
t_end = 0.05
"""


def _write(tmp_path, name, text) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_old_flat_table_reads_as_the_new_tables_with_one_notice(tmp_path):
    old_path, new_path = _write(tmp_path, "old.toml", OLD_FLAT), _write(tmp_path, "new.toml", NEW_TABLES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = load_scenario(str(new_path))
    assert not caught  # the new layout says nothing
    with pytest.warns(RenamedKeyNotice) as notes:
        old = load_scenario(str(old_path))
    assert len(notes) == 1
    text = str(notes[0].message)
    assert text.startswith("old.toml: old key(s) of the flat [compensator] table: read `compensator.gamma` as "
                           "`compensator.gss.gamma_prime` and `uncertainty.gamma` (and in 3 other tables); "
                           "`compensator.K` as `compensator.gss.K` (and in 1 other table);")
    assert "[compensator.NAME]" in text and "\n" not in text
    assert old.config == new.config
    # every compensator builds the same object from both (the values the old names carried reach it)
    for name in ("none", *COMPENSATORS):
        a = old.with_overrides([f"compensator.type={name!r}"]).build()
        b = new.with_overrides([f"compensator.type={name!r}"]).build()
        assert a.gamma == b.gamma == 150.0 and a.sample_period == b.sample_period
        assert (a.compensator is None) == (b.compensator is None)
        if a.compensator is not None:
            assert repr(a.compensator.params) == repr(b.compensator.params)
    ct = new.with_overrides(["compensator.type='computed-torque'"]).build().compensator
    assert (ct.Kp, ct.Kd) == (90.0, 25.0)  # Kd_ct → computed-torque.Kd, not GD's Kd = 3


def test_an_old_flat_file_runs_bit_identical_to_the_new_one(tmp_path):
    old_path, new_path = _write(tmp_path, "old.toml", OLD_FLAT), _write(tmp_path, "new.toml", NEW_TABLES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenamedKeyNotice)
        old = load_scenario(str(old_path)).build().simulate()
    new = load_scenario(str(new_path)).build().simulate()
    for name in ("t", "qc", "qcd", "Qu", "qa"):
        assert np.array_equal(getattr(old, name), getattr(new, name)), name


def test_a_wrong_key_in_a_compensator_table_names_it_with_its_line(tmp_path):
    path = _write(tmp_path, "bad.toml", NEW_TABLES.replace("[compensator.gd]\ngamma = 150.0",
                                                           "[compensator.gd]\ngamma = 150.0\nKdd = 2.0"))
    line = path.read_text().splitlines().index("Kdd = 2.0") + 1
    with pytest.raises(ScenarioError) as exc:
        load_scenario(str(path))
    assert str(exc.value).startswith(f"bad.toml (line {line}): unknown key `compensator.gd.Kdd` (did you mean "
                                     "`compensator.gd.Kd`?); [compensator.gd] accepts ['Kd', 'Ki', 'alpha0', ")
    with pytest.raises(ScenarioError, match=r"unknown key `compensator\.nope`.*accepts \[.*'gss'"):
        load_scenario(str(_write(tmp_path, "nope.toml", NEW_TABLES + "\n[compensator.nope]\nK = 1.0\n")))
    with pytest.raises(ScenarioError, match=r"`compensator\.gss\.K` must be a number; got 'ten'"):
        load_scenario(str(_write(tmp_path, "ok.toml", NEW_TABLES)), ["compensator.gss.K='ten'"])


def _show(capsys, *argv) -> tuple[str, str]:
    assert cli.main(["show", "triple-pendulum", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_set_takes_the_new_and_the_old_spelling(capsys):
    new_out, new_err = _show(capsys, *[a for item in w_gamma_items(800) for a in ("--set", item)])
    old_out, old_err = _show(capsys, "--set", "compensator.gamma=800")
    assert new_out == old_out and "gamma_prime = 800.0" in new_out and "gamma = 800.0" in new_out
    assert new_err == ""
    assert old_err.strip() == (
        "robustrack: notice: triple-pendulum.toml (with --set): old key(s) of the flat [compensator] table: read "
        "`compensator.gamma` as `compensator.gss.gamma_prime` and `uncertainty.gamma` (and in 3 other "
        "tables) — each compensator's parameters are now in its own table, [compensator.NAME] "
        "(`robustrack show` prints the new form).")
    # one meaning per name: Γ′ alone leaves the Γ the bounds are judged at, and GD's Γ, where they were
    sc = load_scenario("triple-pendulum", ["compensator.gss.gamma_prime=800"])
    pb = sc.build()
    assert pb.compensator.gamma_prime == 800.0 and pb.gamma == 100.0 and sc.config["compensator"]["gd"]["gamma"] == 100
    # the kept spelling of the reference run's hold
    assert load_scenario("triple-pendulum", ["compensator.sample_period=0.001"]).build().sample_period == 0.001


def test_the_notice_names_the_running_compensators_keys():
    with pytest.warns(RenamedKeyNotice, match=r"`compensator\.Kd_ct` as `compensator\.computed-torque\.Kd`"):
        sc = load_scenario("triple-pendulum", ["compensator.type='computed-torque'", "compensator.Kd_ct=30"])
    assert sc.build().compensator.Kd == 30.0


def test_the_saved_scenario_toml_round_trips(tmp_path, capsys):
    out = tmp_path / "run.npz"
    argv = ["run", "duffing-tracking", "--compensator", "gd", "--set", "simulation.t_end=0.05",
            "--set", "compensator.gd.Kd=4.5", "--set", "compensator.lqr.R=0.5", "--save", str(out)]
    assert cli.main(argv) == 0
    with np.load(out, allow_pickle=False) as d:
        text = str(d["scenario_toml"])
    expected = load_scenario("duffing-tracking", ["simulation.t_end=0.05", "compensator.gd.Kd=4.5",
                                                  "compensator.lqr.R=0.5"], compensator="gd")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RenamedKeyNotice)  # written in the new layout
        recorded = scenario_from_toml(text, "run.npz")
    assert recorded.config == expected.config
    # the running table and the changed one are written; the others read back as their defaults
    heads = re.findall(r"^\[compensator\.([^\]]+)\]$", text, re.M)
    assert heads == ["gd", "lqr"]
    assert recorded.build().compensator.Kd == 4.5


def test_every_compensator_table_is_its_class_fields():
    for name, cls in COMPENSATORS.items():
        fields = {f.name: f.default for f in dataclasses.fields(cls) if f.init and f.name != "f"}
        keys = law_keys(name)
        assert set(keys) <= set(fields)
        for key, value in fields.items():  # the fields left out are the ones TOML cannot hold (LQR's model)
            assert (key in keys) == (value is not None), (name, key)
        assert takes_f(name) == ("f" in {f.name for f in dataclasses.fields(cls) if f.init})
    # the legacy table only names keys that exist
    schema = registry.KINDS["triple-pendulum-tracking"].schema
    for old, targets in LEGACY_KEYS.items():
        for dotted in targets:
            section, *path = dotted.split(".")
            table = schema[section]
            for part in path:
                table = table[part]


def test_nominal_plus_delta_is_one_function():
    """uncertainty.actual_plant against nominal.replace(p = p + δ) written out, for each shape it takes, and
    the kinds, the campaign samples and [uncertainty] parameters/dm all equal to it."""
    tp = NLinkPendulum(m=(1.0, 2.0, 3.0), L=(1.0, 1.5, 2.0), g=9.81)
    dm = np.array([0.1, -0.2, 0.3])
    assert actual_plant(tp, dm=dm).m.tolist() == (np.array([1.0, 2.0, 3.0]) + dm).tolist()
    du = CoupledDuffing()
    a = actual_plant(du, dm=[0.2, -0.1], parameter=("m1", "m2"))
    assert (a.params["m1"], a.params["m2"]) == (du.params["m1"] + 0.2, du.params["m2"] - 0.1)
    assert actual_plant(du, dm=[0.25], parameter="m1").params["m1"] == du.params["m1"] + 0.25
    with pytest.raises(ParameterError, match=r"`dm` must have 2 value\(s\)"):
        actual_plant(du, dm=[0.1, 0.2, 0.3], parameter=("m1", "m2"))
    with pytest.raises(ParameterError, match=r"has no `m`"):
        actual_plant(du, dm=[0.1])
    # the scenario kinds
    pb = load_scenario("duffing-tracking").build()
    assert pb.actual.params == actual_plant(pb.nominal, dm=[0.2, -0.1], parameter=("m1", "m2")).params
    pb = load_scenario("triple-pendulum").build()
    assert np.array_equal(pb.actual.m, actual_plant(pb.nominal, dm=[0.1, -0.2, 0.3]).m)
    with pytest.raises(ScenarioError, match=r"`uncertainty\.dm` makes an actual mass ≤ 0: \(m1, m2\) \+ δm"):
        load_scenario("duffing-tracking", ["uncertainty.dm=[-5.0, 0.0]"]).build()
    # a campaign's sample
    from robustrack.campaigns.sampling import ParameterUncertainty

    sample = ParameterUncertainty(parameter=("m1", "m2")).actual(du, [0.2, -0.1])
    assert sample.params == a.params


def _count(argv) -> dict:
    """Validations (one ``config._check_values`` per validation) and registry lookups of one CLI command."""
    counts = {"validate": 0, "registry": 0}
    original, kinds = config._check_values, registry.KINDS

    def counting(*a, **k):
        counts["validate"] += 1
        return original(*a, **k)

    class CountingKinds(dict):
        def __getitem__(self, key):
            counts["registry"] += 1
            return super().__getitem__(key)

    config._check_values, registry.KINDS = counting, CountingKinds(kinds)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main(argv) == 0
    finally:
        config._check_values, registry.KINDS = original, kinds
    return counts


@pytest.mark.parametrize("argv", [
    ["run", "duffing-tracking", "--compensator", "gd", "--f", "cubic", "--set", "simulation.t_end=0.05"],
    ["run", "triple-pendulum", "--set", "simulation.t_end=0.05"],
])
def test_one_run_validates_its_configuration_once(argv):
    # before: 3 validations and 6 registry lookups with --compensator (2 and 5 without)
    assert _count(argv) == {"validate": 1, "registry": 1}
