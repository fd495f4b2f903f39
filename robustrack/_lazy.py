"""Modules imported on first attribute access (start-up time: ``robustrack list`` needs no sympy)."""

from __future__ import annotations

import importlib


class LazyModule:
    """Stands for a module until an attribute is read; then imports it (once) and delegates."""

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


sympy = LazyModule("sympy")
