"""Files the toolbox writes: checked before work starts, replaced atomically.

:func:`check_writable` is called at the boundary (the CLI, ``compare(out_dir=...)``)
before a run spends time, so an output that cannot be written is refused up front;
:func:`write_atomic` writes a sibling temporary file and renames it into place, so a
reader (or an interrupted run) never sees a half-written file and the previous
version stays whole until the new one is complete. :func:`check_apart` refuses, before anything runs,
an output that is one of the same invocation's inputs (docs/guide/command-line.md, "Outputs never replace
inputs").
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import ParameterError

__all__ = ["write_atomic", "check_writable", "check_parent", "check_apart", "same_file", "missing_folders",
           "no_empty_folder_left"]


def write_atomic(path, data) -> Path:
    """Write ``data`` (str as UTF-8, or bytes) to ``path`` through a temporary file and a rename.

    Parameters
    ----------
    path : str or Path
        The destination; its folder is created if missing.
    data : str or bytes
        The whole content (text is written as given, no newline translation).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # the permissions a plain open() would give (mkstemp makes the file private)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _unlink_quietly(path) -> None:
    """Remove ``path`` if it is there (cleanup after a failed write)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def check_parent(path, name: str) -> Path:
    """Refuse an output file whose folder does not exist: an option naming a file never creates folders.

    A mistyped folder (``--json /tmp/reslts/x.json``) would otherwise be created, silently, with all its
    missing parents. Options that name an output *folder* (``-o DIR``) make it by design, and say so.

    Parameters
    ----------
    path : str or Path
        The output file.
    name : str
        The option as the user typed it, for the message.

    Returns
    -------
    Path

    Raises
    ------
    ParameterError
        The folder does not exist, or is a file.
    """
    p = Path(path)
    parent = p.parent
    if not parent.is_dir():
        what = "is a file" if parent.exists() else "does not exist"
        raise ParameterError(f"`{name}` {str(p)!r}: its folder {str(parent)!r} {what}; create the folder first (an "
                             "option naming a file does not create folders). Nothing was run.")
    return p


def check_writable(path, name: str, *, folder: bool = False) -> Path:
    """Refuse an output that cannot be written, before any work: check its folder (create an output folder) and
    probe it.

    Parameters
    ----------
    path : str or Path
        An output file (``folder=False``) or an output folder.
    name : str
        The option as the user typed it (``"--json"``, ``"-o"``) for the message.
    folder : bool
        ``path`` is a folder the outputs go into (keyword-only).

    Returns
    -------
    Path
        ``path``; an output folder (``folder=True``) now exists, made with its missing parents.

    Raises
    ------
    ParameterError
        ``path`` is a folder where a file is expected (or a file where a folder is), a file's folder
        does not exist (:func:`check_parent`), or the folder cannot be created or written.
    """
    p = Path(path)
    if not str(path).strip():
        raise ParameterError(f"`{name}` must be a path; got an empty string.")
    if folder and p.exists() and not p.is_dir():
        raise ParameterError(f"`{name}` {str(p)!r} is a file, not a folder; nothing was run.")
    if not folder and p.is_dir():
        raise ParameterError(f"`{name}` {str(p)!r} is a folder; give a file name (e.g. {str(p / 'out.json')!r}). "
                             "Nothing was run.")
    if not folder:
        check_parent(p, name)
    where = p if folder else p.parent
    missing = missing_folders(where)  # the nearest existing ancestor: the missing folders are made below it
    ancestor = missing[-1].parent if missing else where.resolve()
    if not ancestor.is_dir():
        raise ParameterError(f"`{name}` {str(p)!r}: its folder cannot be made, {str(ancestor)!r} is a file. "
                             "Nothing was run.")
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, prefix=".robustrack-probe-"):
            pass
        if not folder and p.exists() and not os.access(p, os.W_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise ParameterError(f"`{name}` {str(p)!r} cannot be written ({exc.strerror or exc}). Nothing was run: "
                             "give a path in a writable folder.") from None
    return p


def same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` name one file: the same real path (symbolic links and ``..`` resolved),
    or, both existing, the same file on disk (:func:`os.path.samefile`: hard links too).

    Parameters
    ----------
    a, b : str or Path

    Returns
    -------
    bool
    """
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def _written(output) -> list:
    """The files an output writes: ``(label, path, names)`` → its path (a file, ``names`` None), or the paths
    ``names`` take in the folder (a name ending in ``/`` stands for everything under that subfolder)."""
    label, path, names = output
    if names is None:
        return [(label, Path(path), False)]
    return [(label, Path(path) / name.rstrip("/"), name.endswith("/")) for name in names]


def _inside(path, folder) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def check_apart(outputs, inputs) -> None:
    """Refuse, before anything runs, an output that would replace an input of the same invocation (or another
    output).

    ``--certificate c.json --json c.json`` would replace the certificate with the study's summary;
    ``montecarlo --store s.sqlite --json s.sqlite`` would destroy the store; ``identify run.npz --json run.npz``
    the saved run. Paths are compared resolved (:func:`same_file`: symbolic links, ``..``, hard links); an
    output folder conflicts with an input it holds under a name it writes.

    Parameters
    ----------
    outputs : iterable of (str, path, tuple of str or None)
        ``(label, path, names)``: the option as typed (``"--json"``), the path, and None for a file or the
        names written into the folder (``("report.html", "figures/")``) for an output folder.
    inputs : iterable of (str, path)
        ``(label, path)`` of every file the invocation reads (missing ones are left out); the label names the
        option or argument as typed, in backticks (``"`--certificate`"``, ``"`RUN.npz`"``).

    Raises
    ------
    ParameterError
        An output is an input (or two outputs are one file): naming both options and the path.
    """
    inputs = [(label, Path(path)) for label, path in inputs if path is not None and Path(path).is_file()]
    written = [w for out in outputs if out[1] is not None for w in _written(out)]
    for label, path, tree in written:
        for in_label, source in inputs:
            if same_file(path, source) or (tree and _inside(source, path)):
                raise ParameterError(
                    f"`{label}` would write {str(path)!r}, an input of this command ({in_label}: "
                    f"{os.path.realpath(source)}): the output would replace it. Give `{label}` another "
                    "path. Nothing was run or written.")
    for i, (label, path, _) in enumerate(written):
        for other, opath, _ in written[i + 1:]:
            if label != other and same_file(path, opath):
                raise ParameterError(f"`{label}` and `{other}` both name {os.path.realpath(path)}: one would "
                                     "replace the other; give each its own path. Nothing was run or written.")
def missing_folders(path) -> list:
    """The folders from ``path`` up to its nearest existing ancestor that do not exist yet, innermost first.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    list of Path
        Resolved; empty when ``path`` exists.
    """
    missing, p = [], Path(path).resolve()
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    return missing


@contextlib.contextmanager
def no_empty_folder_left(path):
    """``with no_empty_folder_left(out):`` — a block that makes the output folder ``out`` and fills it: when the
    block ends in an exception (Ctrl-C included), the folders it made that are still empty are removed again,
    innermost first. A folder that existed before, or holds anything (a user's file, a finished output), is
    never removed (``os.rmdir`` removes empty folders only).

    Parameters
    ----------
    path : str or Path
        The output folder (it and its missing parents are what the block may make).
    """
    made = missing_folders(path)
    try:
        yield
    except BaseException:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone): keep it and everything above it
                break
        raise
