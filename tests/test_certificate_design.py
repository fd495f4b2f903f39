"""Design to a certificate (issue 29 item 3): tune, reports and campaigns take a saved certificate's Γ.

The truths: the Certificate object itself (its certified upper bound is the Γ tune and reports use), the
compensator's own bound formula at that Γ (the promise they print), and the box arithmetic of the
study (a certificate whose box does not contain the study's, of another horizon or initial state, is
refused — its Γ would be about other plants). A short Duffing horizon keeps each test to seconds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("flint")

from robustrack._json import to_jsonable  # noqa: E402
from robustrack.certification import ParameterBox, certificate_summary, check_covers  # noqa: E402
from robustrack.certification.saved import gamma_verdict  # noqa: E402
from robustrack.errors import ParameterError  # noqa: E402
from robustrack.scenarios import load_scenario  # noqa: E402

OVERRIDES = ["simulation.t_end=0.3", "simulation.n_points=31"]


@pytest.fixture(scope="module")
def cert():
    from robustrack.scenarios.certify import run_certify

    return run_certify(load_scenario("duffing-tracking", OVERRIDES), 0.1, tolerance=0.2, budget_s=60)


@pytest.fixture(scope="module")
def cert_file(cert, tmp_path_factory):
    """What `robustrack certify duffing-tracking --json FILE` writes."""
    path = tmp_path_factory.mktemp("cert") / "cert.json"
    path.write_text(json.dumps(to_jsonable(cert.to_dict()), allow_nan=False))
    return path


def test_the_saved_certificate_reads_back_as_the_object_says(cert, cert_file):
    s = certificate_summary(cert_file)
    dq = cert.bounds["max_norm_dq"]
    assert s["gamma_upper"] == cert.gamma_certified == dq.upper and s["gamma_lower"] == dq.lower
    assert np.array_equal(s["delta"], dq.witness["delta"]) and s["scenario"] == "duffing-tracking"
    assert s["box"] == cert.box.to_dict() and s["t_span"] == [0.0, 0.3] and s["level"] == "box"
    assert certificate_summary(cert)["gamma_upper"] == s["gamma_upper"]  # the object, the file: one summary
    assert certificate_summary(s) == s  # a summary passed on is kept
    with pytest.raises(ParameterError, match="`--certificate`.*not a certificate"):
        certificate_summary({"level": "box"}, "--certificate")


def test_a_certificate_covers_a_smaller_box_and_refuses_other_plants_or_runs(cert):
    s = certificate_summary(cert)
    sc = load_scenario("duffing-tracking", OVERRIDES)
    problem = sc.build()
    names = tuple(s["box"])
    check_covers(s, problem, ParameterBox.around(problem.nominal, 0.1, names), scenario=sc.name)
    check_covers(s, problem, ParameterBox.around(problem.nominal, 0.05, names))  # inside: still covered
    with pytest.raises(ParameterError, match=r"`m1` ∈ \[.*does not contain.*\(spread\)"):
        check_covers(s, problem, ParameterBox.around(problem.nominal, 0.11, names))
    with pytest.raises(ParameterError, match="certifies scenario 'duffing-tracking', not 'other'"):
        check_covers(s, problem, None, scenario="other")
    longer = load_scenario("duffing-tracking", ["simulation.t_end=0.4"]).build()
    with pytest.raises(ParameterError, match=r"`t_span`: certified \[0, 0.3\], this study \[0, 0.4\]"):
        check_covers(s, longer, None)
    moved = load_scenario("duffing-tracking", OVERRIDES + ["initial.q=[1.0, 1.1]"]).build()
    assert not np.array_equal(moved.q0, problem.q0)
    with pytest.raises(ParameterError, match=r"`reference.q0`: certified \[1, 1\], this study \[1, 1.1\]"):
        check_covers(s, moved, None)


def test_gamma_verdict_settles_only_outside_the_certified_interval():
    s = {"gamma_lower": 2.0, "gamma_upper": 3.0}
    assert gamma_verdict(s, 3.0).endswith("holds for every plant in the box")
    assert "exceeded by a plant in the box (certified ≥ 2)" in gamma_verdict(s, 1.9)
    assert "not settled" in gamma_verdict(s, 2.5)  # L <= Γ < U: neither proved nor disproved
    assert gamma_verdict(s, None) == ""


def test_tune_designs_to_the_certified_gamma(cert, cert_file):
    from robustrack.reports.text import format_tune
    from robustrack.scenarios.campaign import run_tune

    doc = run_tune("duffing-tracking", 0.1, target_e=1e-2, compensator="gss", overrides=OVERRIDES,
                   certificate=cert_file, samples=3, workers=1, progress=None).to_dict()
    U = cert.gamma_certified
    assert doc["gamma"]["value"] == U and doc["gamma"]["source"].startswith("certificate: sup ‖δq‖∞ ∈")
    assert doc["rounds"][0]["gamma"] == U
    # the promise printed is the tuned compensator's own bound formula at the final Γ (>= U)
    tuned = load_scenario("duffing-tracking", OVERRIDES + doc["tuned"]["set"]).build().compensator
    p = doc["certified"]
    assert p["gamma"] >= U and p["gamma_upper"] == U and p["level"] == "box"
    promised = tuned.bounds(p["gamma"])
    assert (p["e"], p["edot"]) == (float(promised.e), float(promised.edot))
    text = format_tune(doc)
    assert "the promised bound is ‖e‖∞ ≤" in text and "Γ certified for every plant in ±10 % along the nominal" in text
    assert "certified over the box (box level): sup ‖δq‖∞ ∈" in text  # beside the verification's fractions
    json.dumps(to_jsonable(doc), allow_nan=False)
    with pytest.raises(ParameterError, match="give `gamma` or `certificate`, not both"):
        run_tune("duffing-tracking", 0.1, target_e=1e-2, compensator="gss", overrides=OVERRIDES, gamma=3.0,
                 certificate=cert_file, samples=3, workers=1, progress=None)
    with pytest.raises(ParameterError, match=r"does not contain the study's .*\(spread\)"):
        run_tune("duffing-tracking", 0.2, target_e=1e-2, compensator="gss", overrides=OVERRIDES,
                 certificate=cert_file, samples=3, workers=1, progress=None)


def test_report_shows_the_certificate_beside_the_run_and_the_campaign(cert, cert_file, tmp_path):
    from robustrack.reports import report_scenario

    paths = report_scenario("duffing-tracking", tmp_path / "r", overrides=OVERRIDES, montecarlo=2,
                            certificate=cert_file)
    doc = json.loads(paths.summary.read_text(encoding="utf-8"))
    c = doc["certificate"]
    assert c["gamma_upper"] == cert.gamma_certified and c["gamma_lower"] == cert.bounds["max_norm_dq"].lower
    comp = load_scenario("duffing-tracking", OVERRIDES).build().compensator
    promised = comp.bounds(cert.gamma_certified)
    assert c["promise"] == {"gamma": cert.gamma_certified, "e": float(promised.e), "edot": float(promised.edot)}
    md = paths.markdown.read_text(encoding="utf-8")
    # in the results table and in the campaign's table, beside the guaranteed fraction
    assert md.count("| certified sup ‖δq‖∞ (Γ) over the box |") == 2
    run_gamma = doc["bounds"]["gamma"]
    assert (f"Γ = {run_gamma:g}" in md) and ("holds for every plant in the box" in md) == (cert.gamma_certified
                                                                                           <= run_gamma)
    with pytest.raises(ParameterError, match="`t_span`: certified"):  # refused before anything runs
        report_scenario("duffing-tracking", tmp_path / "r2", overrides=["simulation.t_end=0.4"],
                        certificate=cert_file)
    assert not (tmp_path / "r2" / "summary.json").exists()


def test_cli_montecarlo_refuses_a_certificate_of_another_box_before_running(cert_file, capsys):
    from robustrack.cli import main

    sets = [a for o in OVERRIDES for a in ("--set", o)]
    assert main(["montecarlo", "duffing-tracking", "--samples", "2", "--workers", "1", "--spread", "0.15", *sets,
                 "--certificate", str(cert_file)]) == 2
    err = capsys.readouterr().err
    assert "`--certificate` certifies `m1`" in err and "(--spread)" in err and "montecarlo:" not in err


def test_cli_tune_and_report_take_the_certificate(cert, cert_file, tmp_path, capsys):
    """`robustrack tune … --certificate FILE` designs to the certified Γ; `robustrack report … --certificate FILE`
    writes it into summary.json; both refuse `--gamma` / another horizon by the flag's name."""
    from robustrack.cli import main

    sets = [a for o in OVERRIDES for a in ("--set", o)]
    assert main(["tune", "duffing-tracking", "--compensator", "gss", "--target-e", "0.01", "--samples", "3",
                 "--workers", "1", *sets, "--certificate", str(cert_file)]) == 0
    out = capsys.readouterr().out
    assert f"Γ = {cert.gamma_certified:.4g}" in out and "Γ certified for every plant in ±10 %" in out
    assert main(["tune", "duffing-tracking", "--compensator", "gss", "--target-e", "0.01", "--gamma", "3", *sets,
                 "--certificate", str(cert_file)]) == 2
    assert "give `--gamma` or `--certificate`, not both" in capsys.readouterr().err
    assert main(["report", "duffing-tracking", "-o", str(tmp_path / "r"), *sets, "--certificate", str(cert_file)]) == 0
    doc = json.loads((tmp_path / "r" / "summary.json").read_text(encoding="utf-8"))
    assert doc["certificate"]["gamma_upper"] == cert.gamma_certified


@pytest.mark.parametrize("command", [["report", "duffing-tracking"], ["montecarlo", "duffing-tracking", "--samples", "4"]])
def test_cli_names_the_certificate_option_as_typed_when_it_is_not_one(command, tmp_path, capsys):
    """A file that is not a certificate is refused before anything runs, naming ``--certificate`` (the option the
    user typed), by ``report`` as by the campaigns."""
    from robustrack.cli import main

    bad = tmp_path / "not-a-certificate.json"
    bad.write_text("[1, 2]")
    code = main([*command, "-o" if command[0] == "report" else "--json", str(tmp_path / "out"),
                 "--certificate", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "`--certificate`" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
