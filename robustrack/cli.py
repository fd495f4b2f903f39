"""The ``robustrack`` command.

    robustrack list                         the scenario catalog
    robustrack show NAME                    a scenario's full configuration, as a TOML file `run` accepts
    robustrack run NAME [--compensator C] [--f G] [--set K=V ...] [--json PATH] [--save PATH.npz]
    robustrack report NAME [-o DIR] [--overwrite] [--compensator C] [--f G] [--set K=V ...] [--gamma-samples N]
                      [--certificate CERT.json]
    robustrack compare NAME [--compensators A,B] [--f F,G] [--cases w|bounds|draws:N|cases:P] [--seed K] [-o DIR]
                       [--overwrite]
    robustrack gamma NAME [--samples N] [--spread S] [--seed S] [--parameter P] [--json PATH]
    robustrack certify NAME [--spread S] [--parameter P] [--tolerance T] [--level box|closed] [--gamma G]
                       [--budget SECONDS] [--set K=V ...] [--json PATH]
    robustrack certify [NAME] --verify CERT.json [--set K=V ...]
    robustrack montecarlo NAME [--samples N] [--spread S] [--seed K] [--compensator C] [--f G] [--set K=V ...]
                          [--store PATH] [--json PATH] [--workers W | --scheduler tcp://HOST:PORT]
    robustrack montecarlo --store PATH --summary
    robustrack worst-case NAME [--spread S] [--budget N] [--store PATH] [--compensator C] [--json PATH]
                          [--certificate CERT.json]
    robustrack tune NAME --compensator C (--target-e E | --target-edot V) [--spread S] [--samples N]
                    [--gamma G | --certificate CERT.json]
    robustrack identify RUN.npz [--scenario NAME --set K=V ...] [--parameters P1,P2] [--accelerations A] [--log mujoco] [--renominalize] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

from .errors import ParameterError, RobustrackError

__all__ = ["main", "entry"]


def write_json(path, doc) -> None:
    """Write ``doc`` as JSON, atomically (NaN/inf become null so every JSON reader accepts it)."""
    from ._files import write_atomic
    from ._json import to_jsonable

    write_atomic(path, json.dumps(to_jsonable(doc), indent=2, allow_nan=False) + "\n")


def _check_outputs(args) -> None:
    """Refuse outputs that cannot be written before any command spends time (``--json``, ``--store``, ``-o``).

    A file's folder must exist (``--json /tmp/reslts/x.json`` is refused, not made); the output folder of
    ``-o`` is made by design, with its missing parents, and a line says so.
    """
    from ._files import check_apart, check_parent, check_writable

    check_apart(_outputs(args), _inputs(args))  # first: nothing is made or probed for a refused command
    if getattr(args, "json", None):
        check_writable(args.json, "--json")
    if getattr(args, "output", None):  # a file -o writes (tune's design for a sensor)
        check_writable(args.output, "-o")
    if getattr(args, "store", None):
        check_parent(args.store, "--store")
    if getattr(args, "out", None):
        existed = Path(args.out).exists()
        check_writable(args.out, "-o", folder=True)
        if not existed:
            print(f"created the output folder {args.out} (-o makes it, with any missing parent folders)")


#: The files an output folder receives, per command (robustrack.reports.report, robustrack.scenarios.compare).
_FOLDER_FILES = {"report": ("report.html", "report.md", "summary.json", "scenario.toml", "figures/"),
                 "compare": tuple(f"comparison.{ext}" for ext in ("md", "csv", "json", "sqlite"))}


def _outputs(args) -> list:
    """``(option, path, names)`` of every file or folder this command line writes (:func:`robustrack._files.check_apart`)."""
    command = getattr(args, "command", None)
    out = [("--json", getattr(args, "json", None), None), ("--save", getattr(args, "save", None), None)]
    if command in ("montecarlo", "tune") and not getattr(args, "summary", False):
        out.append(("--store", getattr(args, "store", None), None))
    if command in _FOLDER_FILES:
        folder = args.out or (f"report-{Path(args.name).stem}" if command == "report" else None)
        out.append(("-o", folder, _FOLDER_FILES[command]))
    if command == "export":
        from .loop.export import FILES

        out.append(("-o", args.out, FILES))
    if command == "tune":  # the design for a sensor, a scenario file
        out.append(("-o", getattr(args, "output", None), None))
    return [o for o in out if o[1]]


def _inputs(args) -> list:
    """``(label, path)`` of every file this command line reads: the scenario and the files it names, a
    certificate, a store read, a saved run."""
    from .scenarios.scenario import scenario_files

    command = getattr(args, "command", None)
    sets = getattr(args, "set", None) or []
    found = []
    if command == "identify":
        found.append(("`RUN.npz`", args.run))
        if args.scenario:
            found += scenario_files(args.scenario, sets, "--scenario")
    elif getattr(args, "name", None) and command != "compile":
        found += scenario_files(args.name, sets)
    for option in ("certificate", "campaign", "verify"):
        if getattr(args, option, None):
            found.append((f"`--{option}`", getattr(args, option)))
    if getattr(args, "store", None) and (command == "worst-case" or getattr(args, "summary", False)):
        found.append(("`--store`", args.store))
    return found


def _int(name: str, minimum: int = 1):
    """An argparse type: a count ``>= minimum`` (``1000``, ``5e7``) named ``name`` in its message."""
    def parse(text):
        from ._validate import cli_int

        try:
            return cli_int(text, name, minimum=minimum)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _one_of(name: str, allowed):
    """An argparse type: one of ``allowed`` (compared as the scenario loader compares them:
    :func:`~robustrack.scenarios.registry.choice_key`), named ``name`` in its message."""
    def parse(text):
        from .scenarios.registry import choice_key

        if choice_key(text) not in allowed:
            raise argparse.ArgumentTypeError(f"`{name}` must be one of {list(allowed)}; got {text!r}.")
        return text

    return parse


def _number(name: str):
    """An argparse type: a finite number named ``name`` in its message (range checks come later)."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"`{name}` must be a number; got {text!r}.") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"`{name}` must be a finite number; got {text!r}.")
        return value

    return parse


class _UsageError(Exception):
    """An invalid command line (argparse's message, said in one line by :func:`main`)."""


class _Parser(argparse.ArgumentParser):
    """argparse whose errors become one line, ``robustrack: error: ...`` (no usage block), exit status 2."""

    def error(self, message):
        raise _UsageError(f"{message} (`{self.prog} -h` for help)")


#: On a terminal, progress shows once a run has taken this long (s); without one, a line at most every
#: PROGRESS_EVERY_S seconds (logs stay short; a quick run prints nothing).
PROGRESS_AFTER_S = 2.0
PROGRESS_EVERY_S = 5.0


def _progress(what: str = "simulating: t", unit: str = "s"):
    """A progress printer for simulations longer than a moment: ``t / t_end`` rewritten in place on a
    terminal, else one line every :data:`PROGRESS_EVERY_S` seconds. Time spent compiling kernels is left out
    (it has its own lines)."""
    from .compiled.notice import compile_seconds

    tty = sys.stderr.isatty()
    state = {"start": time.perf_counter() - compile_seconds(), "last": None, "first": None}

    def show(t, t_end):
        now = time.perf_counter() - compile_seconds()  # compiling is said as compiling, not counted as run time
        done = t >= t_end
        if state["first"] is None:
            state["first"] = (now, t)  # the rate is measured from the first report on (setup excluded)
        if tty:
            if state["last"] is None and (done or now - state["start"] < PROGRESS_AFTER_S):
                return
            state["last"] = now
            print(f"\r  {what} = {t:.2f} / {t_end:g} {unit}", end="\n" if done else "", file=sys.stderr, flush=True)
        elif not done and now - (state["last"] or state["start"]) >= PROGRESS_EVERY_S:
            state["last"] = now
            elapsed = now - state["start"]
            t_first, x_first = state["first"]
            left = (f", about {(now - t_first) * (t_end - t) / (t - x_first):.3g} s left" if t > x_first else "")
            print(f"  {what} = {t:.3g} / {t_end:g} {unit} ({elapsed:.0f} s{left})", file=sys.stderr, flush=True)

    return show


def cmd_compile(args) -> int:
    from .scenarios import list_scenarios, load_scenario
    from .compiled.loop import cache_dir, compile_kernels, fallback_reason

    if args.portable:
        return _compile_portable(args)

    names = [s.name for s in list_scenarios()] if args.all else args.names
    loops = []
    for name in names:
        problem = load_scenario(name).build()
        actual = getattr(problem, "actual", None)
        if actual is not None:  # a tracking scenario: the nominal run and the controlled loop
            nominal, acts = problem.nominal, problem.actuators
            hold = problem.sample_period is not None
            loops += [(nominal, nominal, problem.constraint, acts, False),
                      (nominal, actual, problem.constraint, acts, True, hold)]
            reason = fallback_reason(nominal, actual, problem.constraint, acts)
        elif getattr(problem, "nonideal", None) is None:
            loops.append((problem.plant, problem.plant, problem.constraint, None, False))
            reason = fallback_reason(problem.plant, problem.plant, problem.constraint)
        else:
            reason = "its non-ideal constraint force is a Python callable"
        if reason is not None:
            print(f"  {name}: runs on numpy ({reason}); nothing to compile", file=sys.stderr)
    seconds = compile_kernels(loops)
    what = f"{len(names)} scenario(s)" if names else "the kernels and integrators"
    print(f"{what} ready in {seconds:.1f} s; compiled kernels are in {cache_dir()}")
    return 0


def _compile_portable(args) -> int:
    """``robustrack compile --portable``: the same command in a process whose numba compiles for its generic
    CPU (numba reads ``NUMBA_CPU_NAME`` when it is imported), caching that code beside this CPU's."""
    import signal
    import subprocess

    from .compiled.cache import PORTABLE_CPU

    cpu_name, cpu_features = PORTABLE_CPU
    env = {**os.environ, "NUMBA_CPU_NAME": cpu_name, "NUMBA_CPU_FEATURES": cpu_features}
    argv = ["compile", *args.names] + (["--all"] if args.all else [])
    child = subprocess.Popen([sys.executable, "-m", "robustrack.cli", *argv], env=env)
    # Ctrl-C reaches the child too, which stops cleanly and says so: wait for it, whatever this process gets
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: Ctrl-C is not this thread's to handle
        previous = None
    try:
        code = child.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if code == 0:
        print("portable: compiled for any CPU of this architecture; machines with another CPU load it from this "
              "cache folder (same Python, numba and robustrack, installed at the same path)")
    return 130 if code == -signal.SIGINT else code


def cmd_list(args) -> int:
    from .scenarios import list_scenarios

    scenarios = list_scenarios()
    width = max(len(s.name) for s in scenarios)
    for s in scenarios:
        print(f"{s.name:<{width}}  {s.title}  [{s.source}]")
    return 0


def cmd_show(args) -> int:
    from .scenarios import load_scenario

    s = load_scenario(args.name, args.set)
    print(f"# {s.title}\n# every key with its value (defaults filled in); save it as a .toml file, edit it and "
          f"`robustrack run FILE.toml`")
    print(s.to_toml(), end="")
    return 0


def cmd_run(args) -> int:
    from .scenarios import load_scenario, run_scenario

    # the file, --set, --compensator and --f validated together, once (run_scenario finds them applied)
    scenario = load_scenario(args.name, args.set, compensator=args.compensator, f=args.f)
    summary = run_scenario(scenario, compensator=args.compensator, f=args.f,
                           progress=_progress() if scenario.spec.tracking else None, save=args.save)
    print(f"{scenario.name}: {scenario.title}")
    _print_run(summary)
    s = summary["solver"]
    if summary.get("saved"):
        print(f"  wrote {summary['saved']} (trajectories: np.load)")
    if args.json:
        write_json(args.json, summary)
        print(f"  wrote {args.json}")
    return 0 if s["success"] else 1


def _print_run(summary) -> None:
    """Print :func:`robustrack.reports.text.run_lines` of a ``run`` summary."""
    from .reports.text import run_lines

    print("\n".join(run_lines(summary)))


#: How the studies' messages name their arguments on the command line (their flags).
CLI_LABELS = {"samples": "--samples", "store": "--store", "spread": "--spread", "seed": "--seed",
              "workers": "--workers", "scheduler": "--scheduler", "budget": "--budget", "gamma": "--gamma",
              "gamma_samples": "--gamma-samples", "quantile": "--quantile", "margin": "--margin",
              "certificate": "--certificate"}


def cmd_certify(args) -> int:
    from .scenarios import load_scenario
    from .scenarios.certify import run_certify

    if args.verify:
        return _verify_certificate(args)
    if not args.name:
        raise ParameterError("give a scenario NAME to certify (robustrack list), or `--verify FILE` to check a saved "
                             "certificate.")
    if args.gamma is not None and args.level.strip().lower() != "closed":
        raise ParameterError(f"`--gamma` {args.gamma:g} is the Γ of the promised bound `--level closed` checks; "
                             f"`--level {args.level}` does not use it: add `--level closed`, or leave `--gamma` out.")
    parameter = [p.strip() for p in args.parameter.split(",") if p.strip()] if args.parameter else None
    say = lambda q, u, l, c: print(f"  {q}: {l:.6g} <= sup <= {u:.6g} ({c} open cells)", file=sys.stderr, flush=True)
    sc = load_scenario(args.name, args.set)
    cert = run_certify(sc, args.spread, parameter=parameter, tolerance=args.tolerance,
                       level=args.level.strip().lower(), gamma=args.gamma, budget_s=args.budget, progress=say)
    print(cert.text())
    if args.json:  # `source`: what `certify --verify` rebuilds the problem from (the file, or the catalog name)
        write_json(args.json, {"scenario": args.name, **cert.to_dict(),
                               "source": {"name": sc.path if str(args.name).endswith(".toml") else args.name,
                                          "set": list(args.set)}})
        print(f"wrote {args.json}")
    return 0


def _verify_certificate(args) -> int:
    """``certify --verify FILE``: 0 consistent, 1 not (the first check that failed named); writes nothing."""
    from .scenarios.verify_certificate import verify_certificate

    if args.json:
        raise ParameterError("`--verify` checks a certificate and writes nothing: leave out `--json` (the "
                             "certificate is the file given to `--verify`).")
    result = verify_certificate(args.verify, args.name, args.set or None, name="--verify")
    print(f"certificate {args.verify}:")
    print(result.text())
    return 0 if result.consistent else 1


def cmd_gamma(args) -> int:
    from .scenarios import load_scenario
    from .reports.text import format_gamma
    from .scenarios.gamma import run_gamma

    parameter = [p.strip() for p in args.parameter.split(",") if p.strip()] if args.parameter else None
    show = _progress("Γ Monte Carlo: done", "%")
    doc = run_gamma(load_scenario(args.name, args.set), args.samples, args.spread, seed=args.seed,
                    parameter=parameter, quantile=args.quantile, margin=args.margin,
                    progress=lambda fraction: show(100.0 * fraction, 100.0), labels=CLI_LABELS).to_dict()
    print(format_gamma(doc, units=_units(args.name, args.set)))
    if args.json:
        write_json(args.json, doc)
        print(f"wrote {args.json}")
    return 0


def cmd_margins(args) -> int:
    from ._format import format_value
    from .loop.margins import margins
    from .scenarios import load_scenario

    scenario = load_scenario(args.name, args.set)
    if not scenario.spec.tracking:
        raise ParameterError(f"margins: {scenario.name!r} is not a tracking scenario (it has no compensator).")
    problem = scenario.build()
    if problem.sample_period is None:
        problem = problem.replace(sample_period=args.sample_period)
    found = margins(problem, progress=lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    print(f"{scenario.name}: margins of the design at {format_value(1.0 / problem.sample_period, 'Hz')} "
          f"(each sweep changes one field of the sensor; the others as the scenario's [sensor])")
    for m in found:
        value = "none" if m.value is None else format_value(m.value, m.unit)
        refused = "" if m.refused is None else f", refused at {format_value(m.refused, m.unit)}"
        runs = f", {m.runs} runs" if m.runs else ""
        own = ("" if m.declared is None else f"; declared {format_value(m.declared, m.unit)} "
               f"{'passes' if m.passes else 'does NOT pass'}")
        print(f"  {m.what:<13} {m.how:<11} {value:>14}{refused}{runs}{own} — {m.note}")
    if args.json:
        write_json(args.json, {"scenario": scenario.name, "sample_period": problem.sample_period,
                               "margins": [m.to_dict() for m in found]})
        print(f"wrote {args.json}")
    return 0


def cmd_report(args) -> int:
    from .reports import report_scenario

    out = args.out or f"report-{Path(args.name).stem}"
    paths = report_scenario(args.name, out, overrides=args.set, compensator=args.compensator, f=args.f,
                            gamma_samples=args.gamma_samples, gamma_spread=args.gamma_spread, seed=args.seed,
                            progress=_progress(), overwrite=args.overwrite, campaign=args.campaign,
                            montecarlo=args.montecarlo, montecarlo_spread=args.montecarlo_spread,
                            certificate=args.certificate, labels=CLI_LABELS)
    print(f"wrote {paths.html}\n      {paths.markdown} (+ figures/)\n      {paths.summary}")
    _print_verdict(json.loads(paths.summary.read_text(encoding="utf-8")))
    return 0


def _print_verdict(summary) -> None:
    """The report's last line: its promised bounds held or not, with the numbers (from its summary.json)."""
    from .tracking.assess import bounds_verdict

    print("verdict: " + bounds_verdict(summary["metrics"], summary.get("bounds"), units=summary.get("units"),
                                       note=summary.get("bounds_note")))


def run_compare_cli(scenario, compensators: str = "gss,gd,gdbar,none", fs: str = "signed-quadratic",
                    cases: list[str] | None = None, out_dir=None, sets=(), jobs: int = 1,
                    overwrite: bool = False, seed: int = 0) -> int:
    """``robustrack compare``: run :func:`~robustrack.scenarios.compare.compare`, print the Markdown table and where files went.

    ``compensators`` and ``fs`` are comma-separated lists; ``cases`` are
    ``--cases`` items (``w``, ``bounds``, ``draws:N``, ``cases:NAME`` or ``NAME:SECTION.KEY=VALUE;...``; None: as
    configured); ``sets`` are ``--set`` items applied to every row; ``overwrite``
    (``--overwrite``) reruns every row and replaces the comparison files in ``out_dir``.

    Returns 0 when every row succeeded, 1 when some failed (they are in the table).

    Parameters
    ----------
    scenario : str, path or Scenario
        A catalog name, a TOML path, or a :class:`~robustrack.scenarios.Scenario` (a tracking scenario).
    compensators : str, default "gss,gd,gdbar,none"
        Comma-separated compensator names (``--compensators``).
    fs : str, default "signed-quadratic"
        Comma-separated control function names (``--f``).
    cases : list of str, optional
        ``--cases`` items; None or empty: the scenario as configured.
    out_dir : path, optional
        Where comparison.md/.csv/.json are written (and resumed from unless ``overwrite``).
    sets : sequence of str
        ``--set`` items ``SECTION.KEY=VALUE`` applied to every row.
    jobs : int, default 1
        Rows run in parallel processes when > 1 (``--jobs``).
    overwrite : bool, default False
        Rerun every row (no resume) and replace the comparison files in ``out_dir``.
    seed : int, default 0
        The seed of ``draws:N`` cases (``--seed``).

    Returns
    -------
    int
        The exit status: 0 or 1 as above.
    """
    from .scenarios.compare import FILE_STEM, compare

    table = compare(scenario, compensators=compensators, fs=fs, cases=cases or None, overrides=list(sets),
                    out_dir=out_dir, jobs=jobs, resume=not overwrite, overwrite=overwrite, seed=seed)
    print(table.to_markdown())
    if out_dir is not None:
        for path in (Path(out_dir) / f"{FILE_STEM}.{ext}" for ext in ("md", "csv", "json")):
            print(f"wrote {path}")
    return 1 if table.failed else 0


def cmd_compare(args) -> int:
    return run_compare_cli(args.name, compensators=args.compensators, fs=args.f, cases=args.cases,
                           out_dir=args.out, sets=args.set, jobs=args.jobs, overwrite=args.overwrite, seed=args.seed)


def _units(name, sets=()):
    """The units of a tracking scenario's numbers (None when it cannot be loaded: then numbers print bare)."""
    from .scenarios import load_scenario
    from .scenarios.units import scenario_units

    try:
        return scenario_units(load_scenario(name, list(sets)))
    except RobustrackError:
        return None


def _campaign_interrupted(exc) -> int:
    print(f"robustrack: {exc}", file=sys.stderr)
    return 130


def _with_certificate(doc: dict, args, cert=None) -> dict:
    """The summary with ``certified`` (a certificate's interval of sup ‖δq‖∞) when ``--certificate`` is given.

    ``cert``: the certificate already read and checked against the campaign (:func:`_campaign_certificate`);
    else (``--summary`` of a store) the campaign is rebuilt from what the store recorded (its scenario as given,
    the overrides and flags, the spread and parameters) and the certificate checked against it as a running
    campaign's is: fingerprint and box.
    """
    if cert is None and getattr(args, "certificate", None):
        cert = _stored_campaign_certificate(args, doc)
    if cert is not None:
        doc["certified"] = cert
    return doc


def _stored_campaign_certificate(args, doc: dict):
    """``--certificate`` checked against the campaign a store holds, rebuilt from its record (or refused)."""
    from .campaigns.store import CampaignStore
    from .errors import ParameterError, RobustrackError
    from .scenarios import get_kind
    from .scenarios.campaign import covering_certificate, resolve_campaign_scenario

    with CampaignStore.read(args.store, name="--store") as store:
        info = store.get_meta("info") or {}
    if "overrides" not in info:
        raise ParameterError(f"`--certificate`: the store {args.store!r} does not record the campaign's overrides "
                             "(written by an older robustrack), so the certificate cannot be checked against it; run "
                             "the campaign again with `--certificate`.")
    source = info.get("scenario_arg") or doc.get("scenario")
    try:
        sc = resolve_campaign_scenario(source, compensator=info.get("compensator_flag"), f=info.get("f_flag"),
                                       overrides=info.get("overrides") or ())
    except RobustrackError as exc:
        raise ParameterError(f"`--certificate`: the campaign's scenario {source!r} cannot be rebuilt to check the "
                             f"certificate against ({exc}); give the certificate where the scenario is found.") \
            from None
    # the campaign's spread and parameters as its summary records them (top-level `spread`, `parameter`); the
    # older default 0.1 only where it records none
    spread = doc["spread"] if doc.get("spread") is not None else 0.1
    parameter = doc.get("parameter") or get_kind(sc.kind).uncertain_parameters(sc.config)
    return covering_certificate(args.certificate, sc, spread, parameter, CLI_LABELS)


def _campaign_certificate(args):
    """``--certificate`` read and checked to cover the campaign's plants and run before anything runs (or None)."""
    if not getattr(args, "certificate", None):
        return None
    from .scenarios import get_kind
    from .scenarios.campaign import covering_certificate, resolve_campaign_scenario

    sc = resolve_campaign_scenario(args.name, compensator=args.compensator, f=args.f, overrides=args.set)
    spread = 0.1 if args.spread is None else args.spread  # the older forms' default (campaign.DEFAULT_SPREAD)
    return covering_certificate(args.certificate, sc, spread, get_kind(sc.kind).uncertain_parameters(sc.config),
                                CLI_LABELS)


def cmd_montecarlo(args) -> int:
    from .campaigns import CampaignInterrupted
    from .errors import ParameterError
    from .reports.text import format_montecarlo
    from .scenarios.campaign import run_montecarlo

    if args.summary:
        from .campaigns import load_campaign

        if not args.store:
            raise ParameterError("`--summary` reads a store: give `--store PATH`.")
        result = load_campaign(args.store, name="--store")
        doc = _with_certificate(result.summary(), args)
        if args.name and args.name != doc["scenario"]:
            raise ParameterError(f"`--store` {args.store!r} holds a campaign of scenario {doc['scenario']!r}, "
                                 f"not {args.name!r}.")
        print(format_montecarlo(doc, units=_units(args.name or doc["scenario"])))
        if not result.complete:
            print(f"  incomplete: {doc['completed']} of {doc['samples']} samples stored; run the campaign again "
                  "with the same settings to finish it.")
        if args.json:
            write_json(args.json, doc)
            print(f"wrote {args.json}")
        return 0
    if not args.name:
        raise ParameterError("give a scenario NAME (robustrack list), or `--store PATH --summary` to read a store.")
    cert = _campaign_certificate(args)
    try:
        result = run_montecarlo(args.name, args.samples, args.spread, args.seed, compensator=args.compensator, f=args.f,
                                overrides=args.set, store=args.store, workers=args.workers, scheduler=args.scheduler,
                                chunk=args.chunk, labels=CLI_LABELS)
    except CampaignInterrupted as exc:
        return _campaign_interrupted(exc)
    doc = _with_certificate(result.summary(), args, cert)
    print(format_montecarlo(doc, result, units=_units(args.name, args.set)))
    if args.json:
        write_json(args.json, doc)
        print(f"wrote {args.json}")
    if args.store:
        print(f"store: {args.store} (robustrack montecarlo --store {args.store} --summary)")
    return 1 if doc["failed"] else 0


def cmd_worst_case(args) -> int:
    from .reports.text import format_worst_case
    from .scenarios.campaign import run_worst_case

    def progress(done, total, best):
        print(f"worst-case: {done}/{total} evaluations, largest max ‖e‖∞ so far {best:.6g}"
              if best is not None else f"worst-case: {done}/{total} evaluations", file=sys.stderr, flush=True)

    doc = run_worst_case(args.name, args.spread, budget=args.budget, seed=args.seed, compensator=args.compensator,
                         f=args.f, overrides=args.set, store=args.store, workers=args.workers,
                         scheduler=args.scheduler, progress=progress, labels=CLI_LABELS,
                         certificate=args.certificate).to_dict()
    print(format_worst_case(doc, units=_units(args.name, args.set)))
    if args.json:
        write_json(args.json, doc)
        print(f"wrote {args.json}")
    return 0


def cmd_tune(args) -> int:
    from .campaigns import CampaignInterrupted
    from .errors import ParameterError
    from .reports.text import format_tune
    from .scenarios.campaign import run_tune

    if args.target_e is None and args.target_edot is None:
        from .scenarios import load_scenario

        scenario = load_scenario(args.name, args.set)
        built = scenario.build() if scenario.spec.tracking else None
        if built is not None and scenario.config.get("sensor") and built.sensor is not None:
            return _tune_for_sensor(args, scenario)
        if built is None or getattr(built, "compensator", None) is None:
            raise ParameterError(f"`tune` designs a compensator's gains, and scenario {scenario.name!r} has none: "
                                 "choose one (--compensator gss) and give `--target-e` (promised bound on ‖e‖∞) "
                                 "and/or `--target-edot` (on ‖ė‖∞).")
        sampled = "" if built.sample_period else " --set compensator.sample_period=1e-3"
        raise ParameterError("give `--target-e` (promised bound on ‖e‖∞) and/or `--target-edot` (on ‖ė‖∞), or a "
                             f"[sensor] table ({sampled.strip()} --set sensor.q_noise=...) to design for the sensor."
                             .replace("( ", "("))
    if args.output:
        raise ParameterError("`-o/--output` writes the design for a sensor (tune a scenario with a [sensor] table "
                             "and no --target-e / --target-edot).")
    try:
        doc = run_tune(args.name, args.spread, target_e=args.target_e, target_edot=args.target_edot,
                       compensator=args.compensator, f=args.f, overrides=args.set, gamma=args.gamma,
                       gamma_samples=args.gamma_samples, samples=args.samples, seed=args.seed, store=args.store,
                       workers=args.workers, scheduler=args.scheduler,
                       labels={**CLI_LABELS, "corners": "--verify-corners"}, certificate=args.certificate,
                       corners=args.verify_corners).to_dict()
    except CampaignInterrupted as exc:
        return _campaign_interrupted(exc)
    print(format_tune(doc, units=_units(args.name, args.set)))
    if args.json:
        write_json(args.json, doc)
        print(f"wrote {args.json}")
    return 0


def _tune_for_sensor(args, scenario) -> int:
    """``tune`` of a scenario with a sensor: the tightest bound a run through the sensor holds
    (:func:`robustrack.campaigns.sensed_design.design_for_sensor`), written as a scenario ``-o`` names."""
    from ._format import format_value
    from .scenarios.campaign import design_for_scenario_sensor
    from .tracking.assess import sensor_text

    out = Path(args.output) if args.output else None  # checked writable before anything ran (_check_outputs)
    problem = scenario.build()
    print(f"{scenario.name}: designing for the sensor ({sensor_text(problem.sensor.to_dict(), problem.sample_period)})")
    design = design_for_scenario_sensor(scenario, spread=args.spread, seed=args.seed, corners=args.verify_corners,
                                        samples=args.verify_samples,
                                        labels={**CLI_LABELS, "corners": "--verify-corners",
                                                "samples": "--verify-samples"},
                                        progress=lambda text: print(f"  {text}", flush=True))
    b = design.bounds
    gains = "".join(f", {k} = {format_value(v) if not isinstance(v, tuple) else [format_value(x) for x in v]}"
                    for k, v in design.gains.items())
    print(f"design: g = {design.f}, ε = {format_value(design.eps)}{gains}, velocity {design.velocity}"
          + (f" ({format_value(design.velocity_cutoff, 'Hz')})" if design.velocity == "filtered" else "")
          + f" — bound in the sampled loop ‖e‖∞ ≤ {format_value(b.e)}, ‖ė‖∞ ≤ {format_value(b.edot)} ({b.coverage}); "
          f"{design.candidates} candidates with a bound ({design.guaranteed} guaranteed), {len(design.runs)} verified")
    print(f"  held on every verified plant of the declared uncertainty ({len(design.verified)}): "
          + "; ".join(p.plant_text() for p in design.verified)
          + (f" — {design.verification_note}" if design.verification_note else ""))
    if design.no_guarantee:
        print(f"  not guaranteed over the declared box: {design.no_guarantee}. Verified by observation: the runs held "
              "the bound they report and every joint stayed inside its effort limit; `robustrack montecarlo` of the "
              "written scenario samples more")
    else:
        print("  (a test over these plants: their runs held the bound, with ‖M̃ₐ‖∞ ≤ 1 − α0/σ and ‖δq‖∞ ≤ Γ along "
              "them and every joint inside its effort limit; `robustrack montecarlo` of the written scenario samples "
              "more)")
    if out is not None:
        from .scenarios.toml_writer import scenario_toml

        tuned = scenario.with_overrides(design.overrides(scenario.config["compensator"]["type"]))
        out.write_text(scenario_toml(tuned, current_form=True), encoding="utf-8")  # the tables, not the older list
        print(f"wrote {out} (robustrack run {out})")
    if args.json:
        write_json(args.json, {"scenario": scenario.name, **design.to_dict()})
        print(f"wrote {args.json}")
    return 0


def build_command(out) -> str:
    """The shell command that builds and runs an export's example in ``out``, each path quoted (a folder with a
    space stays one argument)."""
    import shlex

    folder, build = shlex.quote(str(out)), shlex.quote(str(Path(out) / "build"))
    return f"cmake -S {folder} -B {build} && cmake --build {build} && {shlex.quote(str(Path(out) / 'build' / 'rt_example'))}"


def cmd_export(args) -> int:
    from .loop.export import FILES
    from .scenarios import load_scenario

    scenario = load_scenario(args.name, args.set, compensator=args.compensator, f=args.f)
    if not scenario.spec.tracking:
        raise ParameterError(f"export: {scenario.name!r} is not a tracking scenario (it has no compensator).")
    done = scenario.build().controller(beyond=args.beyond).export(args.out)
    t0, t1 = done.horizon
    print(f"{scenario.name}: the controller as C (n = {done.n}, m = {done.m}, n_z = {done.nz}; horizon [{t0:g}, "
          f"{t1:g}] s; the reference from the nominal run's {done.steps} steps)")
    print("  past the horizon: " + ("holds the reference of its end (status RT_HOLDING)" if done.beyond == "hold"
                                    else "refused (returns 1; --beyond hold keeps it running)"))
    if done.limits is not None:
        print("  tau clipped to the effort limits (status RT_SATURATED): "
              + ", ".join(f"{v:.4g}" for v in done.limits))
    for name in FILES:
        print(f"  wrote {Path(args.out) / name}")
    print(f"  build and run the example: {build_command(args.out)}")
    return 0


def _add_where(sp) -> None:
    where = sp.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_int("--workers"), help="local worker processes (default: the machine's cores; 1 runs "
                       "in this process)")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on an existing Dask cluster "
                       "(`dask scheduler` + `dask worker`) instead of a local pool")


def build_parser() -> argparse.ArgumentParser:
    from .scenarios.registry import accepted, tunable  # importing robustrack.scenarios registers the kinds

    # the values the scenario kinds accept, so the command line and TOML loading never disagree
    compensators, fs, tunable_compensators = accepted("compensator.type"), accepted("compensator.f"), tunable()
    f_names = _one_of("--f", fs)
    f_help = f"the control function g ({', '.join(fs)})"
    p = _Parser(
        prog="robustrack",
        description="Robust tracking control of constrained mechanical systems: run the catalog's scenarios, "
                    "write tracking reports, compare compensators, estimate the uncertainty bound Γ.",
        epilog="Start with `robustrack list`, then `robustrack report triple-pendulum`. "
               "`robustrack COMMAND -h` explains each command.")
    p.add_argument("--debug", action="store_true", help="show the Python traceback of an error or Ctrl-C "
                   "(for bug reports)")
    sub = p.add_subparsers(dest="command", required=True)

    sp = sub.add_parser("compile", help="compile the kernels now (once per machine) and the plant structures of "
                        "the scenarios named (once per structure), e.g. to prepare a machine or a cluster image")
    sp.add_argument("names", nargs="*", metavar="name", help="catalog names or .toml files (none: the kernels only)")
    sp.add_argument("--all", action="store_true", help="every scenario of the catalog")
    sp.add_argument("--portable", action="store_true", help="machine code for any CPU of this architecture "
                    "(numba's generic CPU), for a cluster image or a cache folder shared by machines with other "
                    "CPUs: they load it where their own is not compiled (without it, another CPU compiles again)")
    sp.set_defaults(func=cmd_compile)
    sp = sub.add_parser("list", help="list the scenario catalog")
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("show", help="print a scenario's full configuration as a TOML file that `robustrack run` "
                        "accepts (save it, edit it, run it)")
    sp.add_argument("name", help="catalog name or path to a .toml file")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    sp.set_defaults(func=cmd_show)

    sp = sub.add_parser("run", help="run a scenario and print its metrics")
    sp.add_argument("name", help="catalog name or path to a .toml file")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="override any TOML key, e.g. --set simulation.t_end=2 (repeatable)")
    sp.add_argument("--compensator", choices=compensators,
                    help="tracking scenarios: the compensator (overrides compensator.type)")
    sp.add_argument("--f", metavar="NAME", type=f_names, help=f"tracking scenarios: {f_help} (overrides compensator.f)")
    sp.add_argument("--json", metavar="PATH", help="also write the summary as JSON")
    sp.add_argument("--save", metavar="PATH.npz", help="also write the trajectories (t, q, qd, names; tracking: "
                    "e, edot, Qc, Qu, ...) for your own plots, and the scenario as run (scenario_toml); checked "
                    "before the run")
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("report", help="run a tracking scenario and write its report (HTML, Markdown + PNGs, JSON)")
    sp.add_argument("name", help="catalog name or path to a .toml file (a tracking scenario)")
    sp.add_argument("-o", "--out", metavar="DIR", help="output folder (default: report-NAME); an existing, "
                    "non-empty one is refused unless --overwrite")
    sp.add_argument("--overwrite", action="store_true",
                    help="replace the report files in an existing output folder (other files are kept)")
    sp.add_argument("--compensator", choices=compensators, help="overrides compensator.type")
    sp.add_argument("--f", metavar="NAME", type=f_names, help=f"{f_help}; overrides compensator.f")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    sp.add_argument("--gamma-samples", type=_int("--gamma-samples", 0), default=0,
                    help="also run the Γ Monte Carlo with this many samples and plot its density")
    sp.add_argument("--gamma-spread", type=_number("--gamma-spread"), default=None,
                    help="uniform ±spread on each mass for Γ (default 0.1; none with named uncertain parameters)")
    sp.add_argument("--seed", type=_int("--seed", 0), default=0, help="seed of the Γ and closed-loop Monte Carlos")
    sp.add_argument("--campaign", metavar="STORE", help="add a robustness section from a montecarlo store of this "
                    "scenario (histogram of max |e| with the promised bound, held fraction, worst sample)")
    sp.add_argument("--montecarlo", type=_int("--montecarlo", 0), default=0, metavar="N",
                    help="run a closed-loop Monte Carlo of N samples for that section instead")
    sp.add_argument("--montecarlo-spread", type=_number("--montecarlo-spread"), default=None,
                    help="its uniform ±spread on each mass (default 0.1; none with named uncertain parameters)")
    sp.add_argument("--certificate", metavar="PATH", help="a certificate of the scenario (robustrack certify --json): "
                    "the certified Γ beside the run's and the campaign's, and the promise at it")
    sp.set_defaults(func=cmd_report)

    sp = sub.add_parser("compare", help="run every compensator × f × uncertainty case and tabulate the metrics")
    sp.add_argument("name", help="catalog name or path to a .toml file (a tracking scenario)")
    sp.add_argument("--compensators", default="gss,gd,gdbar,none", help=f"comma list ({', '.join(compensators)})")
    sp.add_argument("--f", default="signed-quadratic", help=f"comma list of control functions g ({', '.join(fs)})")
    sp.add_argument("--cases", action="append", default=None, metavar="CASE",
                    help="'w' (W's three δm cases), NAME:SECTION.KEY=VALUE[;SECTION.KEY=VALUE], or from the named "
                    "[uncertainty.parameters.NAME]: 'bounds' (low, nominal, high), 'draws:N' (N seeded draws, "
                    "montecarlo's first N samples), 'cases:NAME' (one per value of a cases parameter) (repeatable)")
    sp.add_argument("--seed", type=_int("--seed", 0), default=0, help="seed of 'draws:N' cases (montecarlo's "
                    "--seed: draw i is its sample i − 1)")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="override applied to every row, e.g. simulation.t_end=2")
    sp.add_argument("-o", "--out", metavar="DIR", help="write comparison.md/.csv/.json here (rewritten after each "
                    "row; finished rows are stored in comparison.sqlite, so rerunning the same comparison resumes; a "
                    "folder holding another comparison is refused)")
    sp.add_argument("--overwrite", action="store_true",
                    help="rerun every row and replace the comparison files in DIR")
    sp.add_argument("--jobs", type=_int("--jobs"), default=1, help="rows run in parallel processes")
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser("gamma", help="Monte Carlo estimate of the uncertainty bound Γ (W 5.3.5, 5.3.10)")
    sp.add_argument("name", help="catalog name or path to a .toml file")
    sp.add_argument("--samples", type=_int("--samples"), default=1014, help="number of sampled actual plants (W: 1014, 10028)")
    sp.add_argument("--spread", type=_number("--spread"), default=None, help="uniform ±spread on each mass (default 0.1 = "
                    "±10 %%; not with named [uncertainty.parameters.NAME], drawn from their distributions)")
    sp.add_argument("--seed", type=_int("--seed", 0), default=0, help="random seed (recorded in the output)")
    sp.add_argument("--parameter", metavar="NAME[,NAME]", help="plant parameter(s) to perturb (default: the "
                    "masses, e.g. m for the pendulum, m1,m2 for the Duffing oscillator)")
    sp.add_argument("--quantile", type=_number("--quantile"), default=0.99, help="quantile of the exact distribution for Γ′")
    sp.add_argument("--margin", type=_number("--margin"), default=1.2, help="Γ′ = margin × quantile")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    sp.add_argument("--json", metavar="PATH", help="also write the summary as JSON")
    sp.set_defaults(func=cmd_gamma)

    sp = sub.add_parser("margins", help="the largest position noise, encoder resolution, delay and sample period the "
                        "design tolerates (theory and simulation, each labelled; whether the declared loop passes)")
    sp.add_argument("name", help="catalog name or path to a .toml file (a tracking scenario)")
    sp.add_argument("--sample-period", type=_number("--sample-period"), default=1e-3,
                    help="the loop's period where the scenario's compensator.sample_period is 0 (default 1e-3 s)")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    sp.add_argument("--json", metavar="PATH", help="also write the margins as JSON")
    sp.set_defaults(func=cmd_margins)

    sp = sub.add_parser("export", help="write the designed controller as standalone C (a source and header, "
                        "CMakeLists.txt, an example main.c): symbolic plants, URDF robots (frame constraints too) and plants from "
                        "functions, the built-in compensators")
    sp.add_argument("name", help="catalog name or path to a .toml file (a tracking scenario)")
    sp.add_argument("-o", "--out", metavar="DIR", required=True, help="output folder (made if missing; the four "
                    "files are replaced there, other files kept)")
    sp.add_argument("--compensator", choices=compensators, help="overrides compensator.type")
    sp.add_argument("--f", metavar="NAME", type=f_names, help=f"{f_help}; overrides compensator.f")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    sp.add_argument("--beyond", choices=("refuse", "hold"), default="refuse", help="past the horizon: refuse "
                    "(rt_torque returns 1; default) or hold the reference of its end, said in the status (a loop "
                    "that keeps running)")
    sp.set_defaults(func=cmd_export)

    sp = sub.add_parser("certify", help="certified sup ‖δq‖∞ (Γ) and sup ‖M̃ₐ‖∞ over a box of plants and the whole "
                        "run, in ball arithmetic; --level closed: the promised bound for every plant in the box")
    sp.add_argument("name", nargs="?", help="catalog name or path to a .toml file (a tracking scenario with a symbolic "
                    "form; its [actual] friction is enclosed over its box, its disturbance by its bound D); with "
                    "--verify, the scenario to check the certificate against (default: the one it records)")
    sp.add_argument("--verify", metavar="FILE", help="check a saved certificate instead: read whole, its fingerprint "
                    "against the scenario, its witnesses and sampled plants re-evaluated (exit 0 consistent, 1 not)")
    sp.add_argument("--spread", type=_number("--spread"), default=None, help="box ±spread on each uncertain "
                    "parameter (default 0.1; not with named [uncertainty.parameters.NAME], whose box is certified)")
    sp.add_argument("--parameter", metavar="NAME[,NAME]", help="plant parameter(s) of the box (default: the masses)")
    sp.add_argument("--tolerance", type=_number("--tolerance"), default=0.05, help="relative gap (U − L)/U to reach")
    sp.add_argument("--level", type=_one_of("--level", ("box", "closed")), default="box",
                    help="box: along the nominal motion; closed: over the tube of the promised bound, with the "
                    "first-exit argument's conditions")
    sp.add_argument("--gamma", type=_number("--gamma"), help="Γ of the promised bound at --level closed")
    sp.add_argument("--budget", type=_number("--budget"), default=600.0, help="CPU seconds per certified quantity")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    sp.add_argument("--json", metavar="PATH", help="also write the certificate as JSON")
    sp.set_defaults(func=cmd_certify)

    sp = sub.add_parser("montecarlo", help="closed-loop Monte Carlo: every sampled plant through the full loop; "
                        "held fraction, error quantiles, worst sample (resumable with --store)")
    sp.add_argument("name", nargs="?", help="catalog name or path to a .toml file (a tracking scenario); may be "
                    "left out with --store PATH --summary")
    sp.add_argument("--samples", type=_int("--samples"), default=1000, help="number of sampled actual plants (default 1000)")
    sp.add_argument("--spread", type=_number("--spread"), default=None, help="uniform ±spread (relative) on each mass, in [0, 1) "
                    "(default 0.1 = ±10 %%; not with named [uncertainty.parameters.NAME], drawn from their distributions)")
    sp.add_argument("--seed", type=_int("--seed", 0), default=0, help="seed of the draws: sample i's δm depends on it and i only")
    sp.add_argument("--compensator", choices=compensators, help="overrides compensator.type")
    sp.add_argument("--f", metavar="NAME", type=f_names, help=f"{f_help}; overrides compensator.f")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="override any TOML key, e.g. --set simulation.t_end=2 (repeatable)")
    sp.add_argument("--store", metavar="PATH", help="SQLite file: each finished sample is written as it completes; "
                    "the same command again resumes (a store of other settings is refused)")
    sp.add_argument("--summary", action="store_true", help="with --store: print the stored campaign's summary "
                    "without running anything")
    sp.add_argument("--json", metavar="PATH", help="also write the summary as JSON")
    sp.add_argument("--chunk", type=_int("--chunk"), help="samples per task and store transaction (default: 1-8 by size)")
    _add_where(sp)
    sp.add_argument("--certificate", metavar="PATH", help="a certificate of the scenario (robustrack certify --json), "
                    "shown beside the sampled fractions")
    sp.set_defaults(func=cmd_montecarlo)

    sp = sub.add_parser("worst-case", help="search the δm box for the plant with the largest tracking error "
                        "(differential evolution)")
    sp.add_argument("name", help="catalog name or path to a .toml file (a tracking scenario)")
    sp.add_argument("--spread", type=_number("--spread"), default=None, help="the box: ±spread (relative) on each mass, in [0, 1) "
                    "(default 0.1; not with named [uncertainty.parameters.NAME], whose box is searched)")
    sp.add_argument("--budget", type=_int("--budget", 5), help="closed-loop evaluations (default: the store's samples, else 200)")
    sp.add_argument("--seed", type=_int("--seed", 0), default=0, help="seed of the search")
    sp.add_argument("--store", metavar="PATH", help="a montecarlo store of the same campaign: its worst sample "
                    "starts the search")
    sp.add_argument("--compensator", choices=compensators, help="overrides compensator.type")
    sp.add_argument("--f", metavar="NAME", type=f_names, help=f"{f_help}; overrides compensator.f")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    sp.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    _add_where(sp)
    sp.add_argument("--certificate", metavar="PATH", help="a certificate of the scenario (robustrack certify --json): "
                    "its lower-bound plant seeds the search")
    sp.set_defaults(func=cmd_worst_case)

    sp = sub.add_parser("tune", help="choose the compensator's gain, ε and Γ′ so its promised bound meets a target "
                        "with the gentlest law; verify with a Monte Carlo")
    sp.add_argument("name", help="catalog name or path to a .toml file (a tracking scenario)")
    sp.add_argument("--compensator", choices=tunable_compensators, help="overrides compensator.type")
    sp.add_argument("--f", metavar="NAME", type=f_names, help=f"{f_help}; overrides compensator.f")
    sp.add_argument("--target-e", type=_number("--target-e"), help="target on the promised bound of ‖e‖∞")
    sp.add_argument("--target-edot", type=_number("--target-edot"), help="target on the promised bound of ‖ė‖∞")
    sp.add_argument("--spread", type=_number("--spread"), default=None, help="uniform ±spread on each mass, Γ and the "
                    "verification (default 0.1; not with named [uncertainty.parameters.NAME], drawn from their "
                    "distributions)")
    sp.add_argument("--gamma", type=_number("--gamma"), help="Γ, the bound on ‖δq‖∞ (default: the certificate's, else "
                    "a Γ Monte Carlo's Γ′)")
    sp.add_argument("--certificate", metavar="PATH", help="a certificate of the scenario covering --spread, or the "
                    "box of its named uncertain parameters (robustrack certify --json): Γ is its certified upper bound "
                    "of sup ‖δq‖∞")
    sp.add_argument("--gamma-samples", type=_int("--gamma-samples"), default=1014, help="samples of that Γ Monte Carlo")
    sp.add_argument("--samples", type=_int("--samples"), default=100, help="samples of the verifying closed-loop Monte Carlo")
    sp.add_argument("--seed", type=_int("--seed", 0), default=0, help="seed of both Monte Carlos")
    sp.add_argument("--store", metavar="PATH", help="store of the verifying Monte Carlo")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    sp.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    sp.add_argument("-o", "--output", metavar="PATH", help="with a [sensor] table and no target: write the design for "
                    "the sensor as a scenario file `robustrack run` accepts")
    sp.add_argument("--verify-corners", type=_int("--verify-corners", 0), default=None, help="corners of the declared "
                    "uncertainty box the design is run on (default 8: all, up to three uncertain parameters; with a "
                    "[sensor] table, each candidate's)")
    sp.add_argument("--verify-samples", type=_int("--verify-samples", 0), default=None, help="with a [sensor] table: "
                    "plants drawn from the declared uncertainty (each with its own sensor noise) each candidate is "
                    "run on after the corners (default 3)")
    _add_where(sp)
    sp.set_defaults(func=cmd_tune)

    sp = sub.add_parser("identify", help="estimate the actual plant's masses from a saved tracking run (least squares "
                        "on the equations of motion, W ch. 10); --renominalize reruns with nominal := identified")
    sp.add_argument("run", metavar="RUN.npz", help="a run saved by `robustrack run NAME --save RUN.npz`")
    sp.add_argument("--scenario", metavar="NAME",
                    help="the tracking scenario (catalog name or .toml) the run was made with (default: the one the "
                    "run records)")
    sp.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="with --scenario: the overrides the run was made with (repeatable)")
    sp.add_argument("--compensator", choices=compensators, help="the run's --compensator (for --renominalize)")
    sp.add_argument("--f", metavar="NAME", type=f_names, help=f"the run's --f, {f_help} (for --renominalize)")
    sp.add_argument("--parameters", metavar="P1,P2", help="what to identify (default: the scenario's named "
                    "[uncertainty.parameters.NAME] the regression can estimate, the others named in a notice; "
                    "without tables the plant's masses m1, m2, …; a URDF robot: payload, its mass and centre of mass); "
                    "joint friction of [actual] as viscous_<joint>, coulomb_<joint> (e.g. m2,viscous_theta1)")
    sp.add_argument("--accelerations", choices=("none", "differences", "simulated"), default="none",
                    help="q̈ of the controlled system: none (default: what a log holds, q, q̇ and the force — the "
                    "integral form), central differences of the stored q̇ (differences), or the oracle: the "
                    "actual plant's closed-loop right-hand side at the stored states (simulated)")
    sp.add_argument("--log", choices=("robustrack", "mujoco"), default="robustrack",
                    help="which run of the file: robustrack's (default), or the MuJoCo loop's log saved beside it "
                    "(run with --set actual.engine=mujoco --save): q, q̇ and the held torque, as a robot logs them")
    sp.add_argument("--window", type=_int("--window", 1), help="integral form: panels of two log intervals per "
                    "window (default 5)")
    sp.add_argument("--resolution", type=_number("--resolution"), help="integral form: use the equations whose "
                    "quadratic and trapezoidal integrals agree to this fraction of the parameters' force "
                    "(default 1e-3)")
    sp.add_argument("--compare-actual", action="store_true",
                    help="compare the estimate with the scenario's actual plant (reads it; a simulated run only)")
    sp.add_argument("--condition-limit", type=_number("--condition-limit"), default=1e6,
                    help="warn above this condition number of the regressor (a parameter the motion does not excite)")
    sp.add_argument("--renominalize", action="store_true",
                    help="also rerun the scenario with nominal := identified and compare max‖e‖∞, max‖Qᵘ‖∞")
    sp.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    sp.set_defaults(func=cmd_identify)
    return p


def cmd_identify(args) -> int:
    from .scenarios.identification import format_identification, identify_saved_run, recorded_scenario
    from .scenarios import load_scenario
    from .scenarios.units import tracking_units

    chosen = [f"compensator.{key}={value!r}" for key, value in (("type", args.compensator), ("f", args.f)) if value]
    if args.scenario is None:
        if args.set:
            raise ParameterError("--set needs --scenario (without it the run's recorded scenario is used as it ran).")
        scenario = recorded_scenario(args.run)
        scenario = scenario.with_overrides(chosen) if chosen else scenario
    else:
        scenario = load_scenario(args.scenario, [*args.set, *chosen])
    doc = identify_saved_run(args.run, scenario, args.parameters, accelerations=args.accelerations,
                             condition_limit=args.condition_limit, renominalize_run=args.renominalize,
                             compare_actual=args.compare_actual, window=args.window, resolution=args.resolution,
                             log=args.log)
    units = tracking_units(scenario.build().nominal)
    print(format_identification(doc, {"Qu": units["Q"], "e": units["q"]}))
    if args.json:
        write_json(args.json, doc)
        print(f"  wrote {args.json}")
    return 1 if "not_run" in doc.get("renominalized", {}) else 0  # asked for, not done: said above


def _notice(message, category, filename, lineno, file=None, line=None):
    """Warnings (e.g. the tracking loop falling back to numpy) as one line on stderr."""
    print(f"robustrack: notice: {_one_line(message)}", file=sys.stderr)


def _compiling(what: str, where: str) -> None:
    print(f"robustrack: compiling {what}; cached in {where} ...", file=sys.stderr, flush=True)


def _compiled(what: str, seconds: float) -> None:
    print(f"robustrack: compiled in {seconds:.1f} s (later runs load it)", file=sys.stderr, flush=True)


def _one_line(message) -> str:
    return " ".join(str(message).split())


def _fail(text: str, status: int) -> int:
    print(f"robustrack: {text}", file=sys.stderr)
    return status


def main(argv=None) -> int:
    """Run the ``robustrack`` command (the console script's entry point; module docstring).

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name, e.g. ``["run", "triple-pendulum"]``;
        default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success; 1 when ``run`` reports a failed run (a solver
        failure, or metrics that are not finite) or ``compare`` has failed rows or
        ``montecarlo`` failed samples; 2 after a :class:`~robustrack.errors.RobustrackError`
        or a file that cannot be read or written (one line on stderr,
        ``robustrack: error: ...``); 3 after an unexpected internal error (one line;
        ``--debug`` shows the traceback); 130 after Ctrl-C (one line; finished work —
        a campaign's stored samples, a comparison's written rows — is kept). A closed
        output pipe (``robustrack show NAME | head``) counts as success.

    Raises
    ------
    SystemExit
        From argparse, for ``-h`` / ``--help`` (status 0). Invalid arguments return 2
        with one line on stderr, like every other error.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = argparse.Namespace(debug="--debug" in argv)
    try:  # parsing too: Ctrl-C while the parser's number types import numpy is one line as well
        args = build_parser().parse_args(argv)
        from .compiled.notice import compile_reporter

        with warnings.catch_warnings(), compile_reporter(_compiling, _compiled):
            warnings.showwarning = _notice
            _check_outputs(args)
            return args.func(args)
    except KeyboardInterrupt:  # Ctrl-C outside a campaign's own handling: no traceback
        if args.debug:
            raise
        return _fail("interrupted (Ctrl-C); files already written are complete and kept.", 130)
    except _UsageError as exc:
        return _fail(f"error: {exc}", 2)
    except BrokenPipeError:  # e.g. `robustrack show NAME | head`
        sys.stdout = open(os.devnull, "w")
        return 0
    except Exception as exc:
        if args.debug:
            raise
        if isinstance(exc, RobustrackError):
            return _fail(f"error: {_one_line(exc)}", 2)
        if isinstance(exc, MemoryError):
            return _fail("error: out of memory; run a smaller problem (fewer --samples, a shorter horizon or "
                         "fewer output points: simulation.n_points).", 2)
        if isinstance(exc, OSError):
            where = f" {exc.filename!r}:" if exc.filename else ""
            return _fail(f"error:{where} {exc.strerror or exc}.", 2)
        return _fail(f"internal error: {type(exc).__name__}: {_one_line(exc)} (a bug; rerun with --debug for the "
                     "traceback and report it).", 3)


def entry() -> None:
    """The ``robustrack`` console script and ``python -m robustrack.cli``: :func:`main`, then exit with its status.

    After Ctrl-C the process exits with status 130, always (:func:`_settle_interrupt`).

    Raises
    ------
    SystemExit
        With :func:`main`'s status.
    """
    status = main()
    if status == 130:
        _settle_interrupt()
        _leave_now(status)
    sys.exit(status)


def _settle_interrupt() -> None:
    """Make the exit after a handled Ctrl-C end with status 130, not by the signal (−2 to the parent).

    Two things could turn it into a death by SIGINT after the one-line message was printed:

    - CPython's record of an *unhandled* KeyboardInterrupt (bpo-1054041: the interpreter then kills itself
      with SIGINT after finalizing, whatever the exit status). The record is set whenever a
      KeyboardInterrupt leaves an ``exec`` of a source string, even one that a caller handles later — and
      numba, sympy and dataclasses generate code through such ``exec`` calls, so a Ctrl-C that lands while
      one runs (a cold compile is full of them) sets it. Every ``exec`` of a source string clears the
      record before it runs, so one that completes clears it.
    - A second SIGINT while the interpreter tears down (its handler is back to the default then): ignored
      from here on; the handled interrupt has already stopped the work, and finished files are kept.
    """
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    exec("pass")  # clears CPython's unhandled-KeyboardInterrupt record (see above)


def _leave_now(status: int) -> None:
    """End the process after a handled Ctrl-C without the interpreter's teardown: the exit handlers run and
    the output is flushed, then ``os._exit``.

    A Ctrl-C can cut a cold compile in the middle, leaving numba's and llvmlite's objects half made; the
    teardown then finalizes them, and on a loaded machine that was seen to print llvmlite's
    ``AttributeError: 'ValueRef' object has no attribute '_as_parameter_'`` after the one-line message, and
    once to end by SIGSEGV. Nothing is lost by skipping it: the interrupted work has stopped and what it
    finished is already written (files are written whole, campaign stores commit each sample).
    """
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said
            pass
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    entry()
