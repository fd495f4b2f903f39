"""Progress of a long campaign: a tqdm bar on a terminal, a line every few seconds otherwise.

:func:`make_progress` turns a campaign's ``progress`` argument into a reporter with
``update(done, failed)`` and ``close()``: ``"auto"`` shows a bar when the stream is a
terminal (samples done, rate, ETA, failures so far) and otherwise prints one line every
``interval`` seconds (and a last one at the end); ``"bar"`` and ``"lines"`` force one;
``None`` or ``False`` is silent; a callable is called as ``progress(done, total, failed)``.
"""

from __future__ import annotations

import sys
import time

from ..errors import ParameterError

__all__ = ["make_progress", "LineProgress", "BarProgress", "format_duration"]

#: Seconds between two progress lines when not on a terminal.
LINE_INTERVAL_S = 5.0


def format_duration(seconds: float) -> str:
    """``75`` → ``"1m15s"``, ``3700`` → ``"1h01m"``.

    Parameters
    ----------
    seconds : float

    Returns
    -------
    str
    """
    if seconds != seconds or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class LineProgress:
    """One line every ``interval`` seconds: done/total, percent, rate, ETA, failures.

    Parameters
    ----------
    total : int
    done : int
        Samples already finished (kept from a previous run).
    desc : str
    stream : file
    interval : float
    """

    def __init__(self, total, done=0, *, desc="campaign", stream=None, interval=LINE_INTERVAL_S):
        self.total, self.start_done, self.desc = total, done, desc
        self.stream = stream or sys.stderr
        self.interval = interval
        self.t0 = self.last = time.monotonic()
        self.done, self.failed = done, 0

    def _line(self) -> str:
        elapsed = time.monotonic() - self.t0
        ran = self.done - self.start_done
        rate = ran / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return (f"{self.desc}: {self.done}/{self.total} samples ({pct:.0f} %), {rate:.3g}/s, "
                f"ETA {format_duration(eta)}, {self.failed} failed")

    def update(self, done: int, failed: int) -> None:
        """Record progress; print when ``interval`` seconds have passed since the last line.

        Parameters
        ----------
        done : int
            Samples finished (including those kept from before).
        failed : int
            Failed samples among them.

        Returns
        -------
        None
        """
        self.done, self.failed = done, failed
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            print(self._line(), file=self.stream, flush=True)

    def close(self) -> None:
        """Print the last line."""
        print(self._line(), file=self.stream, flush=True)


class BarProgress:
    """A tqdm progress bar (samples, rate, ETA; failures in the postfix).

    Parameters
    ----------
    total : int
    done : int
    desc : str
    stream : file
    """

    def __init__(self, total, done=0, *, desc="campaign", stream=None):
        from tqdm import tqdm

        tqdm.monitor_interval = 0  # no monitor thread: worker processes are forked
        self.bar = tqdm(total=total, initial=done, desc=desc, unit="sample", file=stream or sys.stderr,
                        dynamic_ncols=True, smoothing=0.05)
        self.bar.set_postfix(failed=0, refresh=False)
        self.done, self.failed = done, 0

    def update(self, done: int, failed: int) -> None:
        """Advance the bar to ``done``; show ``failed``.

        Parameters
        ----------
        done : int
        failed : int

        Returns
        -------
        None
        """
        if failed != self.failed:
            self.bar.set_postfix(failed=failed, refresh=False)
        self.bar.update(done - self.done)
        self.done, self.failed = done, failed

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


class _Callback:
    def __init__(self, fn, total):
        self.fn, self.total = fn, total

    def update(self, done, failed):
        self.fn(done, self.total, failed)

    def close(self):
        pass


class _Silent:
    def update(self, done, failed):
        pass

    def close(self):
        pass


def make_progress(progress, total: int, done: int = 0, *, desc: str = "campaign", stream=None):
    """A reporter for a campaign's ``progress`` argument (module docstring).

    Parameters
    ----------
    progress : "auto", "bar", "lines", None, False or callable
    total : int
        Samples in the campaign.
    done : int
        Samples already finished.
    desc : str
        Label of the bar or lines.
    stream : file, optional
        Where to write (default stderr).

    Returns
    -------
    object
        With ``update(done, failed)`` and ``close()``.

    Raises
    ------
    ParameterError
        An unknown ``progress`` value.
    """
    stream = stream or sys.stderr
    if progress is None or progress is False:
        return _Silent()
    if callable(progress):
        return _Callback(progress, total)
    if progress == "auto":
        progress = "bar" if getattr(stream, "isatty", lambda: False)() else "lines"
    if progress == "bar":
        return BarProgress(total, done, desc=desc, stream=stream)
    if progress == "lines":
        return LineProgress(total, done, desc=desc, stream=stream)
    raise ParameterError(f"`progress` must be 'auto', 'bar', 'lines', None or a callable; got {progress!r}.")
