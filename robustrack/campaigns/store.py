"""The campaign store: an SQLite file that keeps every finished sample, so a campaign resumes.

One file per campaign, in WAL mode (``PRAGMA journal_mode=WAL``, ``synchronous=FULL``):
each finished sample — or small batch of them — is one transaction, so a kill (SIGKILL,
Ctrl-C, power loss) loses at most the samples still running; running the same campaign
again skips every stored sample and runs only the rest.

Tables: ``meta`` (format, version, the campaign's ``settings`` as canonical JSON),
``samples`` (one row per sample: index, δ as a JSON list, success, max ‖e‖∞, max ‖ė‖∞,
max ‖Qᵘ‖∞, held, error, wall/CPU time, the session that computed it, max ‖δq‖∞,
max ‖M̃ₐ‖∞, whether the bound's assumptions held, and the ``outcome``: why it ended —
a sample that did not run, :data:`~robustrack.campaigns.loop.NOT_RUN`, is kept with its
outcome and run again, its row replaced, when the campaign resumes) and
``sessions`` (one row per run of the campaign: start, pid, executor, samples run, wall
time, updated in the same transaction as its samples).

Refusals (before any work): a path that is a folder, a file that is not SQLite, an SQLite
file that is not a robustrack campaign, a store that cannot be written (permission bits
without write access, a read-only file system), a store of other settings (the
differences listed), a store another process is running (an exclusive ``flock`` on
the file, released by the kernel when that process dies), and — for writing — a store of
version 1 (written before the samples kept their assumptions and outcome: it is read, with
the assumptions unknown, but not resumed).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import stat
import time
from pathlib import Path

from ..errors import ParameterError
from .loop import SampleRecord

__all__ = ["CampaignStore", "ComparisonStore", "STORE_FORMAT", "STORE_VERSION", "check_store_path",
           "settings_differences"]

STORE_FORMAT = "robustrack-campaign"
STORE_VERSION = 2
#: Versions this robustrack reads (1: before the assumptions, margins and outcome were kept per sample).
READABLE_VERSIONS = (1, 2)
_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS samples (
    idx INTEGER PRIMARY KEY,
    dm TEXT NOT NULL,
    success INTEGER NOT NULL,
    max_abs_e REAL,
    max_abs_edot REAL,
    max_abs_Qu REAL,
    held INTEGER,
    error TEXT,
    wall_s REAL NOT NULL,
    cpu_s REAL NOT NULL,
    session INTEGER NOT NULL,
    max_norm_dq REAL,
    max_norm_Mtilde REAL,
    assumptions_held INTEGER,
    outcome TEXT NOT NULL,
    max_norm_P REAL,
    max_abs_tau TEXT
);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    executor TEXT NOT NULL,
    ran INTEGER NOT NULL DEFAULT 0,
    wall_s REAL NOT NULL DEFAULT 0
);
"""


def _canonical(doc) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)


def settings_differences(old: dict, new: dict, prefix: str = "") -> list[tuple[str, object, object]]:
    """The keys whose values differ between two settings documents, as ``(key.path, old, new)``.

    Parameters
    ----------
    old, new : dict
        Nested JSON-ready documents.
    prefix : str
        Key path of the documents themselves (for recursion).

    Returns
    -------
    list of (str, object, object)
        Dotted key paths in sorted order; a key missing on one side shows None there.
    """
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        path = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += settings_differences(a, b, path + ".")
        elif _canonical(a) != _canonical(b):
            out.append((path, a, b))
    return out


def _writable(path: Path) -> bool:
    mode = path.stat().st_mode
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(path, os.W_OK)


def _tables(db) -> set:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _columns(db, table: str) -> set:
    """The columns of a table (a store written by an earlier robustrack may lack the newer ones)."""
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def check_store_path(path, name: str = "store", *, write: bool = True) -> Path:
    """Refuse a store path that cannot hold a campaign, before anything runs.

    Parameters
    ----------
    path : str or Path
    name : str
        The argument's name for messages (e.g. ``"--store"``).
    write : bool
        The store will be written (False: only read, e.g. for a summary).

    Returns
    -------
    Path

    Raises
    ------
    ParameterError
        A folder; an existing file that is not SQLite; a missing file when only reading;
        a file or folder without write permission when writing.
    """
    p = Path(path)
    if p.is_dir():
        raise ParameterError(f"`{name}` {str(p)!r} is a folder; give a file name, e.g. campaign.sqlite.")
    if p.exists():
        with open(p, "rb") as fh:
            head = fh.read(len(_MAGIC))
        if head and head != _MAGIC:
            raise ParameterError(f"`{name}` {str(p)!r} is not an SQLite file (it starts with {head[:8]!r}); "
                                 "nothing was run. Give a new file name or a campaign store.")
        if write and not _writable(p):
            raise ParameterError(f"`{name}` {str(p)!r} is read-only; nothing was run. Make it writable "
                                 "(chmod u+w), or give another file (read its summary with --summary).")
    elif not write:
        raise ParameterError(f"`{name}` {str(p)!r} does not exist; give the store a campaign wrote.")
    folder = p.resolve().parent
    if write and folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(f"`{name}` {str(p)!r}: its folder {str(folder)!r} is not writable (an SQLite store "
                             "in WAL mode writes -wal and -shm files beside it); nothing was run.")
    return p


class CampaignStore:
    """An open campaign store (module docstring). Build with :meth:`open` or :meth:`read`.

    Parameters
    ----------
    path : Path
    connection : sqlite3.Connection
    settings : dict
    lock : file object or None
        The open file holding the exclusive lock (writers only).
    """

    #: What the store holds (in messages), its ``format`` in ``meta``, and the tables it creates.
    KIND = "campaign"
    FORMAT = STORE_FORMAT
    SCHEMA = _SCHEMA

    def __init__(self, path: Path, connection: sqlite3.Connection, settings: dict, lock=None):
        self.path = Path(path)
        self._db = connection
        self.settings = settings
        self._lock = lock
        self.session: int | None = None
        self.version = STORE_VERSION

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path, settings: dict, *, name: str = "store") -> "CampaignStore":
        """Open (or create) the store of a campaign with these ``settings``, for writing.

        Parameters
        ----------
        path : str or Path
        settings : dict
            JSON-ready description of the campaign; an existing store must hold the same.
        name : str
            The argument's name for messages.

        Returns
        -------
        CampaignStore

        Raises
        ------
        ParameterError
            See :func:`check_store_path`; an SQLite file that is not a campaign store; a
            store of other settings (the differing keys listed); a store in use by another
            running campaign.
        """
        p = check_store_path(path, name, write=True)
        p.parent.mkdir(parents=True, exist_ok=True)
        lock = open(p, "ab")  # creates the file; the flock below is the campaign's, not SQLite's
        try:
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise ParameterError(f"`{name}` {str(p)!r} is in use by another running {cls.KIND}; wait for it to "
                                 "finish (or stop it), then run this again to resume.") from None
        except ImportError:  # pragma: no cover - no flock (Windows): no protection against two writers
            pass
        try:
            db = cls._connect(p, name)
            try:
                stored = cls._meta(db)
                if stored:
                    cls._check_ours(stored, p, name, write=True)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
                if not stored:
                    with db:
                        db.executescript(cls.SCHEMA)
                    with db:
                        db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                                       [("format", cls.FORMAT), ("version", str(STORE_VERSION)),
                                        ("settings", _canonical(settings)), ("created", repr(time.time()))])
                else:
                    old = json.loads(stored["settings"])
                    if _canonical(old) != _canonical(settings):
                        raise ParameterError(cls._mismatch(p, name, old, settings))
                    if "samples" in _tables(db) and "max_abs_tau" not in _columns(db, "samples"):
                        with db:  # a store written before the samples kept their peak τ per joint
                            db.execute("ALTER TABLE samples ADD COLUMN max_abs_tau TEXT")
            except sqlite3.DatabaseError as exc:
                db.close()
                raise cls._db_error(p, name, exc) from None
            except BaseException:
                db.close()
                raise
        except BaseException:
            lock.close()
            raise
        return cls(p, db, json.loads(_canonical(settings)), lock)

    @classmethod
    def read(cls, path, *, name: str = "store") -> "CampaignStore":
        """Open an existing store for reading only (its settings and samples; no lock taken).

        Parameters
        ----------
        path : str or Path
        name : str
            The argument's name for messages.

        Returns
        -------
        CampaignStore

        Raises
        ------
        ParameterError
            Missing, not SQLite, or not a campaign store.
        """
        p = check_store_path(path, name, write=False)
        uri = f"file:{p.resolve()}?mode=ro"
        if not _writable(p) or not os.access(p.resolve().parent, os.W_OK):
            uri += "&immutable=1"  # nobody can be writing it; reading needs no -shm file then
        try:
            db = sqlite3.connect(uri, uri=True)
            stored = cls._meta(db)
        except sqlite3.DatabaseError as exc:
            raise cls._db_error(p, name, exc) from None
        if not stored:
            db.close()
            raise ParameterError(f"`{name}` {str(p)!r} is an SQLite file but not a robustrack {cls.KIND} store.")
        cls._check_ours(stored, p, name)
        store = cls(p, db, json.loads(stored["settings"]))
        store.version = int(stored["version"])
        return store

    @staticmethod
    def _connect(p: Path, name: str) -> sqlite3.Connection:
        db = sqlite3.connect(str(p), timeout=10.0, isolation_level="DEFERRED")
        db.execute("PRAGMA busy_timeout=10000")
        return db

    @staticmethod
    def _meta(db) -> dict:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            if tables:
                return {"format": f"an SQLite file with tables {sorted(tables)}"}
            return {}
        return dict(db.execute("SELECT key, value FROM meta"))

    @classmethod
    def _check_ours(cls, stored: dict, p: Path, name: str, *, write: bool = False) -> None:
        if stored.get("format") != cls.FORMAT or "settings" not in stored:
            raise ParameterError(f"`{name}` {str(p)!r} is an SQLite file but not a robustrack {cls.KIND} store "
                                 f"({stored.get('format', 'no format')}); nothing was run. Give another file.")
        version = stored.get("version")
        if write and version == "1" and cls.KIND == "campaign":
            raise ParameterError(
                f"`{name}` {str(p)!r} was written by an earlier robustrack (store version 1), which kept only "
                "whether each bound held — not whether its assumptions (‖δq‖∞ ≤ Γ, ‖M̃ₐ‖∞ ≤ 1 − α0/σ) held, nor "
                "whether a sample ran at all; nothing was run and the file is unchanged. Read it with "
                "`robustrack montecarlo --store PATH --summary` (assumptions shown as unknown), and give a new "
                "store (another file name) to run the campaign with guaranteed and observed fractions.")
        if version not in {str(v) for v in READABLE_VERSIONS}:
            raise ParameterError(f"`{name}` {str(p)!r} is a {cls.KIND} store of version {version}; this robustrack "
                                 f"reads versions {', '.join(map(str, READABLE_VERSIONS))} and writes version "
                                 f"{STORE_VERSION}. Give another file (or use the robustrack that wrote it).")

    @classmethod
    def _mismatch(cls, p: Path, name: str, old: dict, new: dict) -> str:
        diffs = settings_differences(old, new)
        shown = "; ".join(f"{k}: {json.dumps(a)} there, {json.dumps(b)} here" for k, a, b in diffs[:5])
        more = f" (and {len(diffs) - 5} more)" if len(diffs) > 5 else ""
        return (f"`{name}` {str(p)!r} holds a {cls.KIND} with other settings — {shown}{more}; nothing was run "
                "and nothing mixed. Use another store, or delete that file to start over.")

    @staticmethod
    def _db_error(p: Path, name: str, exc: Exception) -> ParameterError:
        text = str(exc)
        if "readonly" in text or "read-only" in text:
            return ParameterError(f"`{name}` {str(p)!r} cannot be written ({text}); nothing was run.")
        if "not a database" in text or "malformed" in text:
            return ParameterError(f"`{name}` {str(p)!r} is not a valid SQLite file ({text}); nothing was run.")
        return ParameterError(f"`{name}` {str(p)!r}: SQLite error: {text}.")

    # ------------------------------------------------------------------ writing
    def start_session(self, executor: str) -> int:
        """Record a new run of the campaign (its samples carry its id).

        Parameters
        ----------
        executor : str
            Where it runs (e.g. ``"local pool, 2 workers"``).

        Returns
        -------
        int
            The session id.
        """
        try:
            with self._db:
                cur = self._db.execute("INSERT INTO sessions(started, pid, host, executor) VALUES (?, ?, ?, ?)",
                                       (time.time(), os.getpid(), socket.gethostname(), executor))
        except sqlite3.DatabaseError as exc:
            raise self._db_error(self.path, "store", exc) from None
        self.session = int(cur.lastrowid)
        return self.session

    def add(self, records, wall_s: float | None = None) -> None:
        """Write finished samples in one transaction (and the session's wall time so far).

        Parameters
        ----------
        records : sequence of SampleRecord
        wall_s : float, optional
            The current session's wall time so far.

        Returns
        -------
        None
        """
        rows = [(r.index, json.dumps(list(r.dm)), int(r.success), r.max_abs_e, r.max_abs_edot, r.max_abs_Qu,
                 None if r.held is None else int(r.held), r.error, r.wall_s, r.cpu_s, self.session or 0,
                 r.max_norm_dq, r.max_norm_Mtilde, None if r.assumptions_held is None else int(r.assumptions_held),
                 r.outcome, r.max_norm_P, None if r.max_abs_tau is None else json.dumps(list(r.max_abs_tau)))
                for r in records]
        with self._db:
            # a sample stored as not run (NOT_RUN) is replaced when it runs; a sample that ran never is
            self._db.executemany(
                "INSERT OR REPLACE INTO samples(idx, dm, success, max_abs_e, max_abs_edot, max_abs_Qu, held, error, "
                "wall_s, cpu_s, session, max_norm_dq, max_norm_Mtilde, assumptions_held, outcome, max_norm_P, "
                "max_abs_tau) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            if self.session is not None:
                self._db.execute("UPDATE sessions SET ran = ran + ?, wall_s = COALESCE(?, wall_s) WHERE id = ?",
                                 (sum(1 for r in records if r.ran), wall_s, self.session))

    def end_session(self, wall_s: float) -> None:
        """Record the session's final wall time.

        Parameters
        ----------
        wall_s : float

        Returns
        -------
        None
        """
        if self.session is not None:
            with self._db:
                self._db.execute("UPDATE sessions SET wall_s = ? WHERE id = ?", (wall_s, self.session))

    def set_meta(self, key: str, value) -> None:
        """Store a JSON-ready value under ``key`` (not part of the compared settings).

        Parameters
        ----------
        key : str
            Not "format", "version", "settings" or "created".
        value : object
            JSON-ready.

        Returns
        -------
        None
        """
        if key in ("format", "version", "settings", "created"):
            raise ParameterError(f"`key` {key!r} is reserved.")
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value)))

    # ------------------------------------------------------------------ reading
    def get_meta(self, key: str, default=None):
        """A value stored with :meth:`set_meta` (``default`` when absent).

        Parameters
        ----------
        key : str
        default : object

        Returns
        -------
        object
        """
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def finished(self) -> set[int]:
        """Indices of the stored samples that ran (those stored as not run are run again).

        Returns
        -------
        set of int
        """
        return {r.index for r in self.records() if r.ran}

    def records(self) -> list[SampleRecord]:
        """Every stored sample, by index (those that did not run included, with their outcome).

        A version-1 store's samples have no assumptions (None) and an outcome read from their
        success, ``held`` and error (a cancelled or lost task's error marks it not run).

        Returns
        -------
        list of SampleRecord
        """
        out = []
        extra = ", max_norm_dq, max_norm_Mtilde, assumptions_held, outcome, max_norm_P" if self.version >= 2 else ""
        tau = ", max_abs_tau" if "max_abs_tau" in _columns(self._db, "samples") else ""
        for row in self._db.execute("SELECT idx, dm, success, max_abs_e, max_abs_edot, max_abs_Qu, held, error, "
                                    f"wall_s, cpu_s{extra}{tau} FROM samples ORDER BY idx"):
            idx, dm, success, e, ed, qu, held, error, wall, cpu = row[:10]
            dq, mt, ah, outcome, P = row[10:15] if extra else (None, None, None, None, None)
            peak = row[-1] if tau else None
            out.append(SampleRecord(int(idx), tuple(json.loads(dm)), bool(success), e, ed, qu,
                                    None if held is None else bool(held), error, float(wall), float(cpu),
                                    dq, mt, None if ah is None else bool(ah), outcome, P,
                                    None if peak is None else tuple(json.loads(peak))))
        return out

    def sessions(self) -> list[dict]:
        """The runs of this campaign: id, started, pid, host, executor, ran, wall_s.

        Returns
        -------
        list of dict
        """
        cols = ("id", "started", "pid", "host", "executor", "ran", "wall_s")
        return [dict(zip(cols, row)) for row in self._db.execute(f"SELECT {', '.join(cols)} FROM sessions "
                                                                 "ORDER BY id")]

    def session_of(self) -> dict[int, int]:
        """Which session computed each stored sample (index → session id).

        Returns
        -------
        dict of int to int
        """
        return dict(self._db.execute("SELECT idx, session FROM samples"))

    def close(self) -> None:
        """Close the database (checkpointing the WAL) and release the lock.

        Returns
        -------
        None
        """
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.close()
            self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_ROWS_SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (
    key TEXT PRIMARY KEY,
    row TEXT NOT NULL,
    ok INTEGER NOT NULL,
    session INTEGER NOT NULL
);
"""


class ComparisonStore(CampaignStore):
    """A comparison's finished rows, kept one transaction each as they finish, so a comparison resumes.

    Opened, locked (``flock``), checked (format, version, settings) and journaled (WAL)
    exactly as a :class:`CampaignStore`, whose ``meta`` and ``sessions`` tables it shares;
    its ``samples`` table stays empty. Its own table ``rows`` holds one row per finished
    comparison row: ``key`` (what identifies the row: text chosen by the caller),
    ``row`` (the row as JSON, non-finite numbers as ``"inf"``/``"nan"``), ``ok`` and the
    session that computed it. Build with :meth:`open` or :meth:`read`.

    Parameters
    ----------
    path : Path
    connection : sqlite3.Connection
    settings : dict
    lock : file object or None
        The open file holding the exclusive lock (writers only).
    """

    KIND = "comparison"
    FORMAT = "robustrack-comparison"
    SCHEMA = _SCHEMA + _ROWS_SCHEMA

    def add_row(self, key: str, row: dict, ok: bool, wall_s: float | None = None) -> None:
        """Store one finished row (replacing a row of the same key) in one transaction.

        Parameters
        ----------
        key : str
            What identifies the row.
        row : dict
            JSON-ready apart from non-finite floats (kept exactly).
        ok : bool
            Whether the row succeeded (a failed row is run again on resume).
        wall_s : float, optional
            The current session's wall time so far.

        Returns
        -------
        None
        """
        from .._json import to_jsonable

        text = json.dumps(to_jsonable(row, nonfinite="string"), ensure_ascii=False)
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO rows(key, row, ok, session) VALUES (?, ?, ?, ?)",
                             (key, text, int(bool(ok)), self.session or 0))
            if self.session is not None:
                self._db.execute("UPDATE sessions SET ran = ran + 1, wall_s = COALESCE(?, wall_s) WHERE id = ?",
                                 (wall_s, self.session))

    def rows(self) -> dict[str, dict]:
        """Every stored row by key, in the order they were first stored.

        Returns
        -------
        dict of str to dict
        """
        from .._json import from_jsonable

        return {key: from_jsonable(json.loads(text))
                for key, text in self._db.execute("SELECT key, row FROM rows ORDER BY rowid")}

    def row_sessions(self) -> dict[str, int]:
        """Which session computed each stored row (key → session id).

        Returns
        -------
        dict of str to int
        """
        return dict(self._db.execute("SELECT key, session FROM rows"))

    def keep_rows(self, keys) -> int:
        """Delete every stored row whose key is not in ``keys``, in one transaction.

        Parameters
        ----------
        keys : iterable of str

        Returns
        -------
        int
            The number of rows deleted.
        """
        keep = set(keys)
        drop = [(k,) for k in self.rows() if k not in keep]
        with self._db:
            self._db.executemany("DELETE FROM rows WHERE key = ?", drop)
        return len(drop)
