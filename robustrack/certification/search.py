"""Branch and bound of a supremum over time cells × parameter boxes (docs/theory/certificate.md, "Search").

Every cell has a rigorous upper bound (an enclosure, :mod:`robustrack.certification.model`); every
evaluated point gives a lower bound (a real plant at a real time). The cell with the largest upper
bound is split in two — in time or in the parameter its enclosure is widest in — and its halves
evaluated, until the largest upper bound U and the best point L satisfy U ≤ (1 + tol) L, or the time
budget is spent (then the result says unfinished and keeps the U it has: never a smaller one). Cells
whose upper bound is below L cannot hold the supremum and are dropped. The union of the cells
always covers [t0, t1] × the box, so U bounds the supremum over all of it.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Cell", "SearchResult", "maximize"]


#: Evaluate no lower-bound point in a cell whose upper bound is already within the tolerance of the best
#: lower bound (U_cell <= (1 + tol) L): it is never split, and its points can only move L inside the gap.
SKIP_SETTLED = True


@dataclass(order=True)
class Cell:
    """One cell: step k, local times [x0, x1], parameter deltas [lo, hi] (per component)."""

    key: float
    k: int = field(compare=False)
    x0: float = field(compare=False)
    x1: float = field(compare=False)
    lo: np.ndarray = field(compare=False)
    hi: np.ndarray = field(compare=False)
    upper: float = field(compare=False, default=math.inf)
    split: int = field(compare=False, default=-1)  # -1: time, j: parameter j


@dataclass(frozen=True)
class SearchResult:
    """What a search found: U ≥ sup ≥ L, the maximizer of L and the work done."""

    upper: float
    lower: float
    argmax: dict
    finished: bool
    cells: int
    evaluations: int
    cpu_s: float
    unenclosed: int


def maximize(cells, evaluate: Callable, point: Callable, *, tol: float, budget_s: float,
             progress: Callable | None = None, min_width: float = 2.0 ** -30, decide: float | None = None) -> SearchResult:
    """Branch and bound: the supremum of a quantity over the union of ``cells``.

    Parameters
    ----------
    cells : iterable of (k, x0, x1, lo, hi)
        The initial cover.
    evaluate : callable
        ``evaluate(k, x0, x1, lo, hi, lower) -> (upper, split)``: a rigorous upper bound over the cell
        (``math.inf``: not enclosed; any bound <= ``lower`` may be returned as soon as one is found: the
        cell is then dropped) and the dimension to split next (-1: time, j: parameter j).
    point : callable
        ``point(k, x0, x1, lo, hi, lower) -> (value, info)``: a lower bound attained in the cell (a value
        at one point, rounded down; -inf when there is none) and ``info()``, what identifies the point
        (time, parameters, ...), called only when the value beats ``lower``.
    tol : float
        Stop when U <= (1 + tol) L.
    budget_s : float
        CPU seconds (process time) after which the search stops unfinished.
    progress : callable, optional
        ``progress(upper, lower, cells)`` about once a second.
    decide : float, optional
        Also stop as soon as U <= decide or L > decide (a condition sup <= decide is then settled; the
        result is ``finished`` only if the gap reached ``tol`` as well).
    min_width : float
        Cells narrower than this (in local time and in relative parameter width) are not split:
        if one of them keeps the gap open the search ends unfinished.

    Returns
    -------
    SearchResult
    """
    start = time.process_time()
    last = start
    heap, counter = [], itertools.count()
    lower, argmax = -math.inf, {}
    evaluations = unenclosed = 0
    widths = None

    def push(k, x0, x1, lo, hi):
        nonlocal evaluations, unenclosed, lower, argmax
        upper, split = evaluate(k, x0, x1, lo, hi, lower)
        evaluations += 1
        if not math.isfinite(upper):
            unenclosed += 1
        if upper <= lower:
            return  # cannot hold the supremum, and no point in it can raise the lower bound
        if math.isfinite(upper) and (not SKIP_SETTLED or upper > (1 + tol) * lower):
            # else: never split, its points cannot open the gap; or not enclosed, split next (its halves get points)
            value, info = point(k, x0, x1, lo, hi, lower)
            if value > lower:
                lower, argmax = value, info()
        heapq.heappush(heap, (-upper, next(counter), Cell(-upper, k, x0, x1, lo, hi, upper, split)))

    for k, x0, x1, lo, hi in cells:
        if widths is None:
            widths = np.where(hi - lo > 0, hi - lo, 1.0)
        push(k, x0, x1, np.asarray(lo, float), np.asarray(hi, float))
    finished = True
    stuck = []
    steps, report, kept = 0, False, 1024
    while heap:
        top = heap[0][2]
        if top.upper <= (1 + tol) * lower or top.upper <= 0:
            break
        if decide is not None and (top.upper <= decide or lower > decide):
            break
        steps += 1
        if steps % 32 == 1:  # the clock is a system call: read at the first step (a budget the start spent), then now and then
            now = time.process_time()
            if now - start > budget_s:
                finished = False
                break
            report = progress is not None and now - last > 1.0
            if report:
                last = now
        heapq.heappop(heap)
        cell = top
        if steps % 32 == 1 and report:
            progress(max(cell.upper, *(c.upper for c in stuck)) if stuck else cell.upper, lower,
                     len(heap) + len(stuck))
        split = cell.split
        rel = (cell.hi - cell.lo) / widths
        if split >= 0 and rel[split] <= min_width:
            split = -1
        if split < 0 and cell.x1 - cell.x0 <= min_width:
            split = int(np.argmax(rel)) if rel.size and rel.max() > min_width else None
        if split is None:
            stuck.append(cell)  # cannot be split further: its bound stays in U
            continue
        if split < 0:
            xm = 0.5 * (cell.x0 + cell.x1)
            halves = [(cell.k, cell.x0, xm, cell.lo, cell.hi), (cell.k, xm, cell.x1, cell.lo, cell.hi)]
        else:
            mid = 0.5 * (cell.lo[split] + cell.hi[split])
            hi1, lo2 = cell.hi.copy(), cell.lo.copy()
            hi1[split], lo2[split] = mid, mid
            halves = [(cell.k, cell.x0, cell.x1, cell.lo, hi1), (cell.k, cell.x0, cell.x1, lo2, cell.hi)]
        for h in halves:
            push(*h)
        # drop what cannot hold the supremum (now and then: the heap is rebuilt)
        if len(heap) > 2 * kept:
            heap = [c for c in heap if c[2].upper > lower]
            heapq.heapify(heap)
            kept = max(1024, len(heap))
    if stuck:
        finished = False
    upper = max([heap[0][2].upper] if heap else [-math.inf], default=-math.inf)
    upper = max([upper] + [c.upper for c in stuck])
    if not heap and not stuck:
        upper = lower
    return SearchResult(upper=float(upper), lower=float(lower), argmax=argmax, finished=finished and upper <=
                        (1 + tol) * lower, cells=len(heap) + len(stuck), evaluations=evaluations,
                        cpu_s=time.process_time() - start, unenclosed=unenclosed)
