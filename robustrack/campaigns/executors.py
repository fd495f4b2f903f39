"""Where a campaign's samples run: in this process, on a local process pool, or on a Dask cluster.

Every executor runs the same function on the same inputs: :func:`run_items` takes a
*job* (the closed loop — or a picklable factory that builds it — and the uncertainty),
pickled once, and a list of ``(index, δ)`` items, and returns one
:class:`~robustrack.campaigns.loop.SampleRecord` per item. That pair of functions — run a
chunk, and say what a chunk lost with a dead worker gives — is a :class:`Task`
(:data:`SAMPLES`); another study passes its own (a comparison's rows), and runs on the
same executors. Each process prepares a job
once (builds the loop, integrates the nominal run) and keeps it for every later item,
so the per-sample cost is one controlled solve. Results therefore do not depend on the
executor, the number of workers or the order in which items finish.

- :class:`SerialExecutor` — this process (``workers=1``).
- :class:`LocalPool` — a process pool on this machine (``fork`` where available, so the
  workers inherit the loaded kernels and the prepared job). Workers ignore SIGINT (the
  campaign stops them on Ctrl-C) and die with the campaign's process (Linux
  ``PR_SET_PDEATHSIG``). A worker that dies (a crash in a solver) does not stop the
  campaign: the items it may have been running are retried one at a time, and the one
  that kills a worker again is recorded as failed.
- :class:`DaskExecutor` — an existing Dask cluster (``tcp://HOST:PORT``); the job is
  broadcast to the workers once. ``dask[distributed]`` is imported only here. Every request
  to the scheduler honours the timeout (a port that accepts and never answers is refused
  within it). Samples whose tasks were cancelled or whose workers were lost come back as
  not run (run again on resume); a scheduler that closes or stops answering raises
  :class:`ExecutorLost` after the finished chunks were yielded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import signal
import sys
import threading
from collections import deque
from dataclasses import dataclass

from .._validate import positive, positive_int
from ..errors import ParameterError, RobustrackError
from ..tracking.problem import TrackingProblem
from .loop import NOT_RUN_ERRORS, SampleRecord, evaluate_sample, not_run_records

__all__ = ["Job", "Task", "SAMPLES", "SerialExecutor", "LocalPool", "DaskExecutor", "make_executor", "run_items",
           "pack_job", "check_workers", "check_scheduler", "ExecutorLost"]

#: Seconds to wait for a Dask scheduler before calling it unreachable (connecting, and every
#: later request to it: a scheduler that stops answering for this long is lost), unless
#: ``ROBUSTRACK_SCHEDULER_TIMEOUT`` says otherwise (:func:`scheduler_timeout`).
SCHEDULER_TIMEOUT_S = 5.0

#: The environment variable that sets :func:`scheduler_timeout`.
SCHEDULER_TIMEOUT_VARIABLE = "ROBUSTRACK_SCHEDULER_TIMEOUT"


def scheduler_timeout() -> float:
    """Seconds to wait for a Dask scheduler: ``$ROBUSTRACK_SCHEDULER_TIMEOUT`` when set (a far or busy scheduler
    may need more), else :data:`SCHEDULER_TIMEOUT_S`.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        The variable is set to something that is not a positive, finite number of seconds.
    """
    text = os.environ.get(SCHEDULER_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return SCHEDULER_TIMEOUT_S
    try:
        return float(positive(float(text), SCHEDULER_TIMEOUT_VARIABLE))
    except (ValueError, ParameterError):  # not a number, or not a finite one > 0
        raise ParameterError(f"`{SCHEDULER_TIMEOUT_VARIABLE}` must be a positive number of seconds (how long to wait "
                             f"for a Dask scheduler); got {text!r}. Unset it for the default "
                             f"{SCHEDULER_TIMEOUT_S:g} s.") from None


class ExecutorLost(RobustrackError):
    """Where the samples run is gone (a Dask scheduler that closed or stopped answering): the run cannot go on.

    :func:`~robustrack.campaigns.monte_carlo` keeps the finished samples and ends with one line.
    """


@dataclass(frozen=True, eq=False)
class Job:
    """What every worker needs: the closed loop (or a factory of it) and the uncertainty.

    Attributes
    ----------
    loop : TrackingProblem or callable
        The loop, or a picklable zero-argument callable returning it (for loops whose
        constraint or plant does not pickle: each process builds its own).
    uncertainty : ParameterUncertainty
    """

    loop: object
    uncertainty: object

    def build(self) -> TrackingProblem:
        """The closed loop (calling the factory if the job holds one).

        Returns
        -------
        TrackingProblem
        """
        loop = self.loop if isinstance(self.loop, TrackingProblem) else self.loop()
        if not isinstance(loop, TrackingProblem):
            raise ParameterError(f"the loop factory must return a TrackingProblem; got {type(loop).__name__}.")
        return loop


def pack_job(job: Job) -> tuple[str, bytes]:
    """Pickle a job once for every worker: ``(key, payload)``.

    Parameters
    ----------
    job : Job

    Returns
    -------
    key : str
        A digest of the payload (a worker prepares each key once).
    payload : bytes

    Raises
    ------
    ParameterError
        The job cannot be pickled (with pickle, or cloudpickle when installed).
    """
    try:
        payload = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as first:
        try:
            import cloudpickle
        except ImportError:
            cloudpickle = None
        try:
            if cloudpickle is None:
                raise first
            payload = b"C" + cloudpickle.dumps(job)
        except Exception as exc:
            raise ParameterError(
                f"the campaign's loop cannot be sent to worker processes ({type(exc).__name__}: {exc}); pass a "
                "picklable factory instead: a module-level function (or functools.partial) returning the "
                "TrackingProblem, which each worker calls once."
            ) from None
    return hashlib.sha256(payload).hexdigest()[:20], payload


def _unpack(payload: bytes) -> Job:
    if payload[:1] == b"C":
        import cloudpickle

        return cloudpickle.loads(payload[1:])
    return pickle.loads(payload)


# ---------------------------------------------------------------------- worker side
_PREPARED: dict = {}
_PREPARE_LOCK = threading.Lock()
_SOLVE_LOCK = threading.Lock()  # a Dask worker may run tasks in threads; one solve at a time per process


def register_prepared(key: str, loop: TrackingProblem, run, uncertainty) -> None:
    """Make this process reuse an already prepared job (the campaign's own loop and nominal run).

    Parameters
    ----------
    key : str
    loop : TrackingProblem
    run : NominalRun
    uncertainty : ParameterUncertainty

    Returns
    -------
    None
    """
    with _PREPARE_LOCK:
        _PREPARED[key] = (loop, run, uncertainty)


def _prepared(key: str, payload: bytes):
    with _PREPARE_LOCK:
        entry = _PREPARED.get(key)
        if entry is None:
            import warnings

            job = _unpack(payload)
            loop = job.build()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the campaign's process already said it once
                run = loop.nominal_run()
            entry = _PREPARED[key] = (loop, run, job.uncertainty)
        return entry


def run_items(key: str, payload: bytes, items) -> list[SampleRecord]:
    """Evaluate ``(index, δ)`` items of a job (the function every executor runs).

    Parameters
    ----------
    key : str
        The job's key (:func:`pack_job`).
    payload : bytes
        The pickled job (unpickled once per process).
    items : sequence of (int, sequence of float)

    Returns
    -------
    list of SampleRecord
        One per item, in order.
    """
    import warnings

    loop, run, uncertainty = _prepared(key, payload)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, dm in items:
            try:
                actual = uncertainty.actual(loop.nominal, dm, index)
            except Exception as exc:  # recorded as this sample's failure
                actual = exc
            with _SOLVE_LOCK:
                out.append(evaluate_sample(loop, run, actual, index, dm))
    return out


def _worker_init() -> None:
    """Pool workers: leave Ctrl-C to the campaign, and die with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() == 1:  # the campaign died before prctl took effect
                os._exit(1)


def _failed(items, message) -> list[SampleRecord]:
    return [SampleRecord(int(i), tuple(float(x) for x in dm), False, None, None, None, None, message,
                         outcome="failed") for i, dm in items]


@dataclass(frozen=True)
class Task:
    """What an executor runs on each chunk of items: the campaign's samples, or another study's.

    Attributes
    ----------
    run : callable
        ``run(key, payload, items) -> list``: one result per item, in order. A
        module-level function (worker processes import it by name).
    failed : callable
        ``failed(items, message) -> list``: the results of items whose worker died
        (a crash in a solver, out of memory), recorded as failed with ``message``.
    """

    run: object
    failed: object


#: The campaigns' task: closed-loop samples, one :class:`SampleRecord` per ``(index, δ)``.
SAMPLES = Task(run_items, _failed)


def _not_run(task: Task, items, outcome: str, message: str) -> list:
    """The results of items that did not run (a lost worker, a cancelled task): samples are stored as not run
    (run again on resume); another study's items as its failures."""
    return not_run_records(items, outcome, message) if task is SAMPLES else task.failed(items, message)


# ---------------------------------------------------------------------- validation
def check_workers(workers, name: str = "workers") -> int:
    """Validate a number of worker processes: an integer >= 1.

    Parameters
    ----------
    workers : int
    name : str
        The argument's name for messages (e.g. ``"--workers"``).

    Returns
    -------
    int

    Raises
    ------
    ParameterError
    """
    return positive_int(workers, name, what="worker processes")


def check_scheduler(address, name: str = "scheduler") -> str:
    """Validate the form of a Dask scheduler address (``tcp://HOST:PORT``, or ``tls://``, ``inproc://``).

    Parameters
    ----------
    address : str
    name : str
        The argument's name for messages.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
    """
    text = str(address).strip()
    scheme, sep, rest = text.partition("://")
    ok = sep and scheme in ("tcp", "tls", "inproc", "ucx", "ws", "wss") and rest
    if ok and scheme != "inproc":
        host, colon, port = rest.rpartition(":")
        ok = bool(colon and host and port.isdigit() and 0 < int(port) < 65536)
    if not ok:
        raise ParameterError(f"`{name}` must be a Dask scheduler address like tcp://HOST:PORT; got {address!r}.")
    return text


# ---------------------------------------------------------------------- executors
class SerialExecutor:
    """Run every item in this process, in order.

    Attributes
    ----------
    workers : int
        1.
    description : str
    """

    workers = 1
    description = "this process"

    def run(self, key: str, payload: bytes, chunks, task: Task = SAMPLES):
        """Yield ``(chunk number, records)`` for each chunk of items, in order.

        Parameters
        ----------
        key : str
        payload : bytes
        chunks : sequence of sequences of (index, δ)
        task : Task
            What runs each chunk (default: closed-loop samples).

        Yields
        ------
        (int, list of SampleRecord)
        """
        for k, items in enumerate(chunks):
            yield k, task.run(key, payload, items)

    def abort(self) -> None:
        """Nothing runs in the background."""

    def close(self) -> None:
        """Nothing to release."""


class LocalPool:
    """A pool of worker processes on this machine (module docstring).

    Parameters
    ----------
    workers : int
        Number of processes (>= 1).
    start_method : str, optional
        ``multiprocessing`` start method; default ``fork`` where available and this
        process runs no other thread, else ``spawn``.
    """

    def __init__(self, workers: int, start_method: str | None = None):
        self.workers = check_workers(workers)
        self.start_method = start_method
        self.description = f"local pool, {self.workers} worker process{'es' if self.workers > 1 else ''}"
        self._pool = None
        self._key = None

    def _context(self):
        import multiprocessing as mp

        method = self.start_method
        if method is None:
            method = "fork" if "fork" in mp.get_all_start_methods() and threading.active_count() == 1 else "spawn"
        return mp.get_context(method)

    def _ensure(self, key):
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is None or self._key != key:
            self.abort()
            self._pool = ProcessPoolExecutor(self.workers, mp_context=self._context(), initializer=_worker_init)
            self._key = key
        return self._pool

    def run(self, key: str, payload: bytes, chunks, task: Task = SAMPLES):
        """Yield ``(chunk number, records)`` as chunks finish (any order).

        Parameters
        ----------
        key : str
        payload : bytes
        chunks : sequence of sequences of (index, δ)
        task : Task
            What runs each chunk (default: closed-loop samples).

        Yields
        ------
        (int, list of SampleRecord)
            A chunk whose worker died twice (or, alone, once more) comes back as failed records.
        """
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        chunks = [list(c) for c in chunks]
        queue = deque(range(len(chunks)))  # chunk numbers not yet submitted
        suspects = deque()                   # (chunk number, items): run alone after a worker died
        partial: dict[int, list] = {}        # chunk number -> records of its items run alone so far
        pending: dict = {}
        limit = 2 * self.workers + 2         # futures in flight (keeps Ctrl-C and crashes cheap)
        while queue or suspects or pending:
            pool = self._ensure(key)
            try:
                if suspects:
                    if not pending:
                        k, item = suspects[0]
                        pending[pool.submit(task.run, key, payload, [item])] = ("suspect", k, item)
                else:
                    while queue and len(pending) < limit:
                        k = queue.popleft()
                        pending[pool.submit(task.run, key, payload, chunks[k])] = ("chunk", k, None)
            except BrokenProcessPool:
                self._pool = None
                continue
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            broken = []
            for fut in done:
                what, k, item = pending.pop(fut)
                try:
                    records = fut.result()
                except BrokenProcessPool:
                    broken.append((what, k, item))
                    continue
                if what == "chunk":
                    yield k, records
                else:
                    suspects.popleft()
                    partial.setdefault(k, []).extend(records)
                    if len(partial[k]) == len(chunks[k]):
                        yield k, partial.pop(k)
            if broken or any(f.done() and isinstance(f.exception(), BrokenProcessPool) for f in pending):
                # the pool is gone: every running chunk's items are retried one at a time
                for fut, (what, k, item) in list(pending.items()):
                    broken.append((what, k, item))
                pending.clear()
                self.abort()
                for what, k, item in broken:
                    if what == "chunk":
                        suspects.extend((k, it) for it in chunks[k])
                    else:  # it killed its worker alone: that sample is the culprit
                        suspects.popleft()
                        partial.setdefault(k, []).extend(task.failed(
                            [item], "WorkerDied: the worker process died while running this sample "
                                    "(a crash in the solver or out of memory)"))
                        if len(partial[k]) == len(chunks[k]):
                            yield k, partial.pop(k)

    def abort(self) -> None:
        """Stop the workers now (running items are lost; finished ones were already yielded)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for proc in list(getattr(pool, "_processes", {}).values()):
            with contextlib.suppress(Exception):
                proc.kill()
        with contextlib.suppress(Exception):
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Shut the pool down (waits for the workers to exit)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _dask_run_items(task, key, payload, items):
    return task.run(key, payload, items)


class DaskExecutor:
    """Run on an existing Dask cluster (``dask scheduler`` + ``dask worker``, or a ``LocalCluster``).

    Parameters
    ----------
    address : str
        The scheduler, e.g. ``tcp://127.0.0.1:8786``.
    timeout : float, optional
        Seconds to wait for it before calling it unreachable (default :func:`scheduler_timeout`).

    Raises
    ------
    ParameterError
        Dask is not installed, the address is malformed, the scheduler does not answer
        within ``timeout``, or it has no workers.
    """

    def __init__(self, address: str, timeout: float | None = None, *, name: str = "scheduler"):
        self.address = check_scheduler(address, name)
        timeout = scheduler_timeout() if timeout is None else float(timeout)
        self.timeout = timeout
        scheme, _, rest = self.address.partition("://")
        if scheme == "tcp":  # a refused connection is known at once; Dask would retry until its timeout
            import socket

            host, _, port = rest.rpartition(":")
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
            except OSError as exc:
                raise ParameterError(f"`{name}` {self.address}: no Dask scheduler there ({exc}); nothing was run. "
                                     "Start one (`dask scheduler` and `dask worker ADDRESS`) or check the "
                                     "address.") from None
        try:
            from distributed import Client
        except ImportError:
            raise ParameterError("running on a Dask cluster needs dask.distributed: "
                                 "python -m pip install 'robustrack[dask]'.") from None
        unanswered = (f"`{name}` {self.address}: no Dask scheduler answered within {timeout:g} s"
                      "{why}; nothing was run. Start one (`dask scheduler` and `dask worker ADDRESS`) or check the "
                      "address.")
        # a port that accepts but never answers would hang Client() past its timeout (its handshake
        # waits unbounded): ask the scheduler who it is first, under a hard timeout
        problem = _probe_scheduler(self.address, timeout)
        if problem is not None:
            raise ParameterError(unanswered.format(why=f" ({problem})"))
        with _quiet_distributed():
            try:
                self.client = Client(self.address, timeout=f"{timeout}s", set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise ParameterError(unanswered.format(why=f" ({type(exc).__name__}: {exc})")) from None
        workers = self.client.scheduler_info().get("workers", {})
        if not workers:
            with contextlib.suppress(Exception):
                self.client.wait_for_workers(1, timeout=timeout)
            workers = self.client.scheduler_info().get("workers", {})
        if not workers:
            self.client.close()
            raise ParameterError(f"`{name}` {self.address} has no workers; start some with "
                                 f"`dask worker {self.address}`.")
        self.workers = sum(int(w.get("nthreads", 1)) for w in workers.values())
        self.description = f"Dask scheduler {self.address}, {len(workers)} workers"
        self._payloads: dict = {}
        self._futures: list = []

    def _lost(self, what: str) -> ExecutorLost:
        return ExecutorLost(f"the Dask scheduler {self.address} {what}")

    def _workers_now(self) -> int:
        """Workers the scheduler has now (asked with the timeout; ExecutorLost when it does not answer)."""
        if self.client.status not in ("running", "connecting"):
            raise self._lost(f"was lost (the client's connection is {self.client.status})")
        try:
            info = self.client.sync(self.client.scheduler.identity, callback_timeout=self.timeout)
        except Exception as exc:  # closed, refused or timed out: the scheduler is gone
            raise self._lost(f"was lost ({type(exc).__name__}: {exc or 'no answer within the timeout'})") from None
        return len(info.get("workers", {}))

    def run(self, key: str, payload: bytes, chunks, task: Task = SAMPLES):
        """Yield ``(chunk number, records)`` as chunks finish on the cluster.

        A task whose workers died (Dask retries it on other workers first, then gives up with
        ``KilledWorker``) or that was cancelled comes back as records that did not run
        (``worker lost`` / ``cancelled``: run again on resume); when the cluster has had no
        worker for ``timeout`` seconds, every chunk left comes back as ``worker lost``.

        Parameters
        ----------
        key : str
        payload : bytes
        chunks : sequence of sequences of (index, δ)
        task : Task
            What runs each chunk (default: closed-loop samples).

        Yields
        ------
        (int, list of SampleRecord)

        Raises
        ------
        ExecutorLost
            The scheduler closed or did not answer within ``timeout`` (the finished chunks were
            already yielded).
        """
        import time

        chunks = [list(c) for c in chunks]
        with _quiet_distributed():
            try:
                if key not in self._payloads:
                    self._payloads[key] = self.client.scatter(payload, broadcast=True, hash=False,
                                                              timeout=self.timeout)
                data = self._payloads[key]
                futures = {}
                for k, items in enumerate(chunks):
                    fut = self.client.submit(_dask_run_items, task, key, data, items, pure=False,
                                             key=f"robustrack-{key}-{k}-{os.getpid()}-{id(chunks)}")
                    futures[fut] = k
            except ExecutorLost:
                raise
            except Exception as exc:
                self._workers_now()  # raises ExecutorLost when the scheduler is gone
                raise self._lost(f"refused the campaign's tasks ({type(exc).__name__}: {exc})") from None
            self._futures = list(futures)
            poll = min(1.0, self.timeout)
            no_workers_since = None
            checked = time.monotonic()
            while futures:
                done = [f for f in futures if f.done()]
                if not done:
                    time.sleep(0.02)
                    if time.monotonic() - checked < poll:
                        continue
                    checked = time.monotonic()
                    if self._workers_now():
                        no_workers_since = None
                    elif no_workers_since is None:
                        no_workers_since = time.monotonic()
                    elif time.monotonic() - no_workers_since > self.timeout:
                        for fut, k in list(futures.items()):  # nobody left to run them: report, keep for resume
                            yield k, _not_run(task, chunks[k], "worker lost", (
                                f"KilledWorker: the Dask cluster {self.address} had no worker for "
                                f"{self.timeout:g} s"))
                        self.abort()
                        return
                    continue
                for fut in done:
                    k = futures.pop(fut)
                    if fut.status == "finished":
                        try:
                            records = fut.result(timeout=self.timeout)
                        except Exception as exc:  # its result could not be fetched: who is gone?
                            self._workers_now()  # the scheduler: ExecutorLost (one line, finished chunks kept)
                            records = _not_run(task, chunks[k], "worker lost", f"{type(exc).__name__}: {exc}")
                        yield k, records
                        continue
                    try:
                        exc = fut.exception(timeout=self.timeout) if fut.status == "error" else None
                    except Exception:  # the error could not be fetched either: the scheduler may be gone
                        self._workers_now()
                        exc = None
                    kind = type(exc).__name__ if exc is not None else "CancelledError"
                    if self.client.status not in ("running", "connecting"):
                        raise self._lost(f"was lost (the client's connection is {self.client.status})")
                    outcome = NOT_RUN_ERRORS.get(kind)
                    if outcome is None and fut.status == "cancelled":
                        outcome = "cancelled"
                    if outcome is None:  # an error in our own code on the worker: recorded as the samples' failure
                        yield k, task.failed(chunks[k], f"{kind}: {exc}")
                    else:
                        if kind == "CancelledError":
                            self._workers_now()  # a scheduler that went away cancels every task: say that instead
                        yield k, _not_run(task, chunks[k], outcome, f"{kind}: {exc or 'the task was cancelled'}")
            self._futures = []

    def abort(self) -> None:
        """Cancel the tasks still queued or running."""
        futures, self._futures = self._futures, []
        if futures:
            with contextlib.suppress(Exception), _quiet_distributed():
                self.client.cancel(futures, force=True)

    def close(self) -> None:
        """Cancel what is left and disconnect (the cluster keeps running)."""
        self.abort()
        with contextlib.suppress(Exception), _quiet_distributed():
            self.client.close(timeout=self.timeout)


@contextlib.contextmanager
def _quiet_distributed():
    """distributed's own log lines and tracebacks (e.g. on a lost scheduler) stay off the console: we say it once."""
    import logging

    loggers = [logging.getLogger(n) for n in ("distributed", "distributed.client", "distributed.comm",
                                              "distributed.core", "distributed.batched", "tornado")]
    before = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, before):
            lg.setLevel(level)


def _probe_scheduler(address: str, timeout: float) -> str | None:
    """Ask a Dask scheduler for its identity within ``timeout`` seconds (None: it answered; else why not)."""
    import asyncio

    async def probe():
        from distributed.comm import connect

        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
        try:
            await asyncio.wait_for(comm.write({"op": "identity"}), timeout)
            await asyncio.wait_for(comm.read(), timeout)
        finally:
            comm.abort()

    box: list = []

    def target():  # its own thread and event loop: works when the caller runs one (a notebook)
        try:
            with _quiet_distributed():
                asyncio.run(probe())
            box.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported as the reason
            box.append(f"{type(exc).__name__}: {exc}" if str(exc) else
                       ("it accepted the connection but did not answer" if isinstance(exc, TimeoutError)
                        else type(exc).__name__))

    thread = threading.Thread(target=target, daemon=True, name="robustrack-dask-probe")
    thread.start()
    thread.join(timeout + 1.0)
    if thread.is_alive() or not box:
        return "it accepted the connection but did not answer"
    return box[0]


def make_executor(workers: int | None = None, scheduler: str | None = None, *, names: dict | None = None):
    """The executor for ``workers`` local processes or a Dask ``scheduler`` (not both).

    Parameters
    ----------
    workers : int, optional
        Local worker processes; 1 runs in this process; default: the machine's cores.
    scheduler : str, optional
        A Dask scheduler address (``tcp://HOST:PORT``); connects now (an unreachable one
        is refused within :func:`scheduler_timeout` seconds).
    names : dict, optional
        How messages name ``workers`` and ``scheduler`` (e.g. ``{"scheduler": "--scheduler"}``).

    Returns
    -------
    SerialExecutor, LocalPool or DaskExecutor

    Raises
    ------
    ParameterError
        Both given, bad values, or an unreachable scheduler.
    """
    names = {"workers": "workers", "scheduler": "scheduler", **(names or {})}
    if scheduler is not None and workers is not None:
        raise ParameterError(f"give `{names['workers']}` (a local pool) or `{names['scheduler']}` (a Dask cluster), "
                             "not both.")
    if scheduler is not None:
        return DaskExecutor(scheduler, name=names["scheduler"])
    workers = check_workers(os.cpu_count() or 1 if workers is None else workers, names["workers"])
    return SerialExecutor() if workers == 1 else LocalPool(workers)
