"""Every study takes the named uncertain set (issue 42): ``tune``, ``identify`` and ``compare`` with
``[uncertainty.parameters.NAME]`` tables.

The plant is a user's own symbolic one-link pendulum (conftest's ``PENDULUM``: m = 1.5 kg, L = 1 m, g = 9.81, a
0.3-s run of 31 points), so every study runs in a fraction of a second after its structure is compiled. The
truths are independent of the study under test: the set's own draws (:meth:`UncertainSet.sample` of a set built
here from the numbers of the tables), a Γ Monte Carlo run alone, a certificate made by ``certify``.
"""

import numpy as np
import pytest

from robustrack.errors import ParameterError
from robustrack.uncertainty import UncertainParameter, UncertainSet

#: m uniform ±10 %, L truncated normal on [0.95, 1.1]
NAMED = '''[uncertainty.parameters.m]
percent = 10

[uncertainty.parameters.L]
range = [0.95, 1.1]
sigma = 0.05
'''
SET = UncertainSet([UncertainParameter("m", 1.5, percent=10), UncertainParameter("L", 1.0, range=(0.95, 1.1),
                                                                                   sigma=0.05)])


# --------------------------------------------------------------------------- tune
def test_tune_draws_the_named_set_for_gamma_and_the_verification(pendulum_scenario):
    from robustrack.cli import build_parser
    from robustrack.scenarios.campaign import run_tune
    from robustrack.scenarios.gamma import run_gamma

    path = pendulum_scenario(NAMED)
    # (a target of 5 cm: the tuner's search is shortest there, ~0.5 s against ~1.8 s at 1 cm)
    doc = run_tune(path, target_e=5e-2, compensator="gss", gamma_samples=40, samples=3, seed=4, workers=1,
                   progress=None).to_dict()
    # Γ of the first round is the Γ Monte Carlo of the set, run alone with the same seed and samples
    assert doc["rounds"][0]["gamma"] == run_gamma(path, 40, seed=4).gamma_prime
    assert doc["spread"] is None and [p["name"] for p in doc["parameters"]] == ["m", "L"]
    assert "of m, L from their distributions" in doc["gamma"]["source"]
    # the verification's samples are the set's first draws of that seed (montecarlo's stream)
    v = doc["verification"]
    assert v["kind"] == "named" and v["seed"] == 4
    with pytest.raises(ParameterError, match="`spread` does not apply"):
        run_tune(path, 0.1, target_e=1e-2, compensator="gss", gamma_samples=40, samples=3, workers=1, progress=None)
    # the command line leaves --spread out unless given (its default is not a spread "given")
    assert build_parser().parse_args(["tune", path, "--target-e", "0.01"]).spread is None


def test_a_certificate_given_to_tune_must_cover_the_named_box(pendulum_scenario):
    pytest.importorskip("flint")
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import covering_certificate, run_tune
    from robustrack.scenarios.certify import run_certify

    sc = load_scenario(pendulum_scenario(NAMED))
    cert = run_certify(sc, tolerance=0.2, budget_s=30).to_dict()  # box m ∈ [1.35, 1.65], L ∈ [0.95, 1.1]
    # the same tables: covered (the spread and parameter arguments are the older forms', not used here)
    assert covering_certificate(cert, sc, None, ())["gamma_upper"] == cert["bounds"]["max_norm_dq"]["upper"]
    # a narrower set is covered too (its plants are among the certified ones)
    narrow = load_scenario(pendulum_scenario(NAMED.replace("percent = 10", "percent = 5")))
    assert covering_certificate(cert, narrow, None, ())["box"] == {"m": [1.35, 1.65], "L": [0.95, 1.1]}
    # a wider one is refused before anything runs, naming the parameter and the tables
    wide = pendulum_scenario(NAMED.replace("[0.95, 1.1]", "[0.9, 1.1]"))
    with pytest.raises(ParameterError, match=r"`L` ∈ \[0.95, 1.1\], which does not contain the study's \[0.9, 1.1\] "
                                             r"\(the \[uncertainty.parameters.NAME\] tables\)"):
        run_tune(wide, target_e=1e-2, compensator="gss", certificate=cert, samples=3, workers=1, progress=None)
    # a set with a friction coefficient: this certificate encloses no friction (certify can: a certificate of the
    # friction scenario itself covers it), so it is refused, naming the forces it lacks
    friction = load_scenario(pendulum_scenario(NAMED + "[uncertainty.parameters.viscous_theta]\nrange = [0, 0.1]\n"))
    with pytest.raises(ParameterError, match=r"`forces\.viscous\.lower`: certified none"):
        covering_certificate(cert, friction, None, ())


# --------------------------------------------------------------------------- identify
#: A python-kind scenario of the catalog's triple pendulum (its symbolic NLinkPendulum, W 7.3's requirement) over
#: 0.5 s, so that it takes named tables: the masses, a length and g, the actual plant shifted by `dm` in the masses.
TRIPLE = '''
def problem():
    from robustrack.scenarios import load_scenario

    return load_scenario("triple-pendulum", ["simulation.t_end=0.5", "simulation.n_points=51"]).build()
'''
TABLES = '''[uncertainty]
dm = [0.1, -0.2, 0.3, 0.0, 0.0]

[uncertainty.parameters.m1]
percent = 20
[uncertainty.parameters.m2]
percent = 20
[uncertainty.parameters.m3]
percent = 20
[uncertainty.parameters.L2]
percent = 5
[uncertainty.parameters.g]
range = [9.7, 9.9]
'''


def _triple(folder, tables):
    (folder / "tp.py").write_text(TRIPLE)
    path = folder / f"tp{len(list(folder.glob('*.toml')))}.toml"
    path.write_text('[scenario]\nname = "tp"\nkind = "python"\n\n[problem]\nfactory = "tp.py:problem"\n\n' + tables)
    return str(path)


def test_identify_estimates_the_named_parameters_it_can_and_names_the_others(tmp_path):
    from robustrack.errors import RobustrackNotice
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.identification import format_identification, identify_saved_run
    from robustrack.scenarios.runner import run_scenario

    sc = load_scenario(_triple(tmp_path, TABLES))
    run = tmp_path / "run.npz"
    run_scenario(sc, save=run)
    notice = r"not identified — L2: M q̈ − Q is not linear in `L2`.*g: .*not together with `m1`"
    with pytest.warns(RobustrackNotice, match=notice):
        doc = identify_saved_run(run, sc, accelerations="simulated", compare_actual=True)
    ident = doc["identification"]
    assert ident["parameters"] == ["m1", "m2", "m3"] and list(doc["not_identified"]) == ["L2", "g"]
    assert doc["parameters_from"].startswith("the scenario's named uncertain parameters")
    # the truth: the scenario's actual plant, nominal masses (1, 2, 3) shifted by uncertainty.dm. The simulated
    # accelerations make every equation hold to rounding (RMS residual ~1e-14 N·m), so the estimate is exact up to
    # rounding amplified by the scaled regressor's condition number: a hundred times cond·eps·|θ| bounds it
    want = np.array([1.0, 2.0, 3.0]) + [0.1, -0.2, 0.3]
    assert np.all(np.abs(np.array(ident["estimate"]) - want) <= 100 * ident["condition"] * np.finfo(float).eps * 3.3)
    assert "not identified, held at their nominal values: L2: M q̈ − Q is not linear" in format_identification(doc)
    # --parameters chooses: no notice, and the document says where the list came from
    doc = identify_saved_run(run, sc, ["m2"], accelerations="simulated")
    assert doc["parameters_from"] == "--parameters" and doc["not_identified"] == {}
    # a set of which nothing can be estimated is refused, each named with why
    only_length = load_scenario(_triple(tmp_path, "[uncertainty.parameters.L2]\npercent = 5\n"))
    with pytest.raises(ParameterError, match=r"none of which identify can estimate \(L2: M q̈ − Q is not linear"):
        identify_saved_run(run, only_length)


# --------------------------------------------------------------------------- compare
#: NAMED with g as a "cases" parameter
G_CASES = NAMED + "\n[uncertainty.parameters.g]\ncases = [9.78, 9.81, 9.83]\n"
#: and a friction coefficient (the actual plant's viscous 0.05 N·m·s/rad, ranging over [0, 0.1]; the runs of a
#: plant with friction go through numpy's loop, so only this scenario's plants are built, not run)
WITH_FRICTION = ("[actual]\nviscous = 0.05\n\n" + G_CASES
                 + "\n[uncertainty.parameters.viscous_theta]\nrange = [0.0, 0.1]\n")


def _dm(overrides):
    """The δ list of a case's single override ``uncertainty.dm=[...]`` (floats written with repr: exact)."""
    (item,) = overrides
    assert item.startswith("uncertainty.dm=[")
    return [float(x) for x in item[len("uncertainty.dm=["):-1].split(",")]


def test_compare_cases_from_the_named_set(pendulum_scenario, tmp_path):
    from robustrack.scenarios import load_scenario
    from robustrack.scenarios.campaign import run_montecarlo
    from robustrack.scenarios.compare import compare, resolve_cases, set_cases

    path = pendulum_scenario(WITH_FRICTION)
    sc = load_scenario(path)
    cases, values = set_cases(sc, "bounds")
    assert list(cases) == ["low", "nominal", "high"]
    # the low and high cases' actual plants, built from the overrides alone, sit exactly on the ends of the boxes
    # (each end computed here from the tables' numbers; the friction coefficient is the actual plant's force)
    ends = {"m": (1.5 - 0.15, 1.5 + 0.15), "L": (0.95, 1.1), "g": (9.78, 9.83), "viscous_theta": (0.0, 0.1)}
    for case, end in (("low", 0), ("high", 1)):
        actual = load_scenario(path, cases[case]).build().actual
        # (viscous 0: no friction force at all, a plain plant)
        viscous = actual.dQ.viscous[0] if hasattr(actual, "dQ") else 0.0  # friction alone: dQ is the JointFriction
        got = {"m": actual.params["m"], "L": actual.params["L"], "g": actual.params["g"], "viscous_theta": viscous}
        assert got == {k: v[end] for k, v in ends.items()} == values[case]
    # draws: the set's own draws of the seed (a set built here from the tables' numbers), reproducible, and
    # montecarlo's samples of the same seed (one stream): δ bit for bit
    drawn, _ = set_cases(sc, "draws:3", seed=5)
    g = UncertainParameter("g", 9.81, cases=(9.78, 9.81, 9.83))
    want = UncertainSet([*SET, g, UncertainParameter("viscous_theta", 0.05, range=(0.0, 0.1))]).sample(3, 5)
    assert [_dm(drawn[f"draw {i}"]) for i in (1, 2, 3)] == (want - [1.5, 1.0, 9.81, 0.05]).tolist()
    assert set_cases(sc, "draws:2", seed=5)[0] == {k: drawn[k] for k in ("draw 1", "draw 2")}
    # runs: no friction; compare builds GSS from the table, judged at the Γ declared (the factory's Γ′ = 10)
    plain = pendulum_scenario("[uncertainty]\ngamma = 10.0\n\n" + G_CASES)
    mc = run_montecarlo(plain, 2, seed=5, workers=1, progress=None)
    drawn, _ = set_cases(load_scenario(plain), "draws:2", seed=5)
    assert [list(r.dm) for r in sorted(mc.records, key=lambda r: r.index)] == [_dm(drawn["draw 1"]),
                                                                                _dm(drawn["draw 2"])]
    # one case per value of a "cases" parameter, the others nominal
    by_value, values = set_cases(sc, "cases:g")
    assert [v["g"] for v in values.values()] == [9.78, 9.81, 9.83] and all(v["m"] == 1.5 for v in values.values())
    # through compare: the cases' values recorded in the table, the rows resumed from the store
    table = compare(plain, compensators="gss", cases="bounds", out_dir=tmp_path / "c", progress=False)
    assert [r["status"] for r in table.rows] == ["ok"] * 3 and table.settings["case_values"]["low"]["m"] == 1.35
    assert "low: m = 1.35, L = 0.95, g = 9.78" in table.to_markdown()
    notes = []
    compare(plain, compensators="gss", cases="bounds", out_dir=tmp_path / "c", progress=lambda *a: notes.append(a))
    assert len(notes) == 3  # kept from the store (a rerun would take its own seconds; the rows equal)
    # refused with the reason: no tables, a normal parameter's bounds, a NAME that is no "cases" parameter
    with pytest.raises(ParameterError, match="names none; name them in tables"):
        resolve_cases("bounds", load_scenario(pendulum_scenario("")))
    with pytest.raises(ParameterError, match="`m` is normal \\(unbounded\\)"):
        resolve_cases("bounds", load_scenario(pendulum_scenario("[uncertainty.parameters.m]\nsigma = 0.1\n")))
    with pytest.raises(ParameterError, match="`L` is not a named uncertain parameter of distribution 'cases'"):
        resolve_cases("cases:L", sc)
    # a malformed draws case is named as one (not read as a user case called "draws"), and a count that cannot be
    # drawn is refused as montecarlo refuses it — both before the scenario is built (a scenario without tables
    # would otherwise be the message)
    no_tables = load_scenario(pendulum_scenario(""))
    with pytest.raises(ParameterError, match="'draws:abc': write 'bounds', 'draws:N' with N a whole number"):
        resolve_cases("draws:abc", no_tables)
    with pytest.raises(ParameterError, match="`draws:N` must be an integer >= 1"):
        resolve_cases("draws:0", no_tables)
    with pytest.raises(ParameterError, match="`draws:N` = 10000000000 is too many"):
        resolve_cases("draws:10000000000", no_tables)
    # a user case whose name happens to be "draws" keeps its meaning
    assert resolve_cases("draws:simulation.t_end=0.1", no_tables) == {"draws": ["simulation.t_end=0.1"]}
