"""Headless Chromium for the tests that open HTML in a real browser (the report, the documentation site).

Those tests are in the slow tier (``tests/tiers.py``: ``python -m pytest -m slow``), which CI leaves out; they use
Debian's ``chromium`` where it is installed, or the build ``CHROMIUM`` names. Without one they are skipped with the
reason.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["chromium", "headless"]


def chromium():
    """The browser's path, or None."""
    for cand in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if cand and Path(cand).exists():
            return cand
    return None


def headless(browser, profile, *args):
    """The command line of a headless run with a fresh profile folder and no network of its own."""
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}", *args]
