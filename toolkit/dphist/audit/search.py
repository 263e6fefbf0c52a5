"""The search for witness pairs: random restarts and local moves on an estimated loss.

The fixed families (:mod:`.pairs`) are what someone thought of; the search
looks for pairs nobody wrote down.  Its unit of work is one *evaluation*: a
small batch of runs on both sides of a candidate pair, scored by the best
event the selection rule of :mod:`.events` finds on it (the loss that event's
frequencies would certify at a loose level, an optimistic in-sample estimate
used only to rank pairs).  Anchors (read, not copied): StatDP (Ding et al.,
CCS 2018) searches inputs and events with small sample sizes, then re-tests
with fresh ones; DP-Sniper (Bichsel et al., S&P 2021) and Delta-Siege (Lokna
et al., CCS 2023) fit the event on one batch and estimate on another;
DP-Auditorium (Kong et al., 2024) combines dataset finders (random and
evolutionary) with property testers.

The loop (:func:`hill_climb`): evaluate ``restarts`` random pairs
(:func:`random_pair`: flat, zeros, spikes, steps, power law, random small
counts, ties; 1-256 bins) and the starting pairs, then repeatedly move from
one of the best pairs so far (:func:`mutate`: change another bin, add or remove,
make or break a tie with a neighbour, a spike, a zero, scale the counts, mirror,
double or halve the domain, put the changed bin across a round number such as
100 or 5,000, where thresholds in code tend to sit, as StatDP seeds its inputs
with special values) and keep every evaluated pair.  The ``keep`` best
distinct pairs go on to the audit proper, whose selection and estimation
batches are drawn fresh: nothing the search saw is reused, so the bound on
those pairs is as valid as on the fixed ones (and their ``keep`` slots are
counted in the number of tests before any run).

Grids.  For a pipeline that runs on 2-D histograms only, the search moves over
grid pairs (:func:`random_grid_pair`, :func:`mutate_grid`; :func:`mutate`
dispatches on the pair's ``shape``): shapes of 1 to 16 cells a side, square or
not (at most ``MAX_CELLS`` cells), flat, sparse spikes, blocks, a power law
along one axis, small random counts, spikes at the four corners, a near-tie,
stripes; local moves in two dimensions (the changed cell to one of its eight
neighbours, a tie with a neighbour along either axis, a row or column copied
onto its neighbour, a flip along an axis, the transpose, an axis doubled or
halved around the changed cell, the round-number edges).  The grid's shape is
a public parameter of the pair, moved like the counts.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from .pairs import Pair

MAX_BINS = 256
SIZES = (1, 2, 3, 4, 5, 8, 16, 32, 64, 128, 256)
#: grid pairs of the search: sides and the most cells
SIDES = (1, 2, 3, 4, 5, 8, 16)
MAX_CELLS = 256


def _pair(name: str, x: np.ndarray, j: int, change: int) -> Pair:
    x = np.maximum(np.asarray(x, dtype=np.int64), 0)
    j = int(j) % x.size
    if change < 0 and x[j] == 0:
        change = +1
    return Pair(name, tuple(int(v) for v in x), j, int(change))


def random_pair(rng: np.random.Generator, name: str = "search") -> Pair:
    """A random pair from a random shape (public randomness from the audit's seed)."""
    n = int(rng.choice(SIZES))
    shape = rng.integers(7)
    level = int(rng.choice((0, 1, 5, 20, 100, 1000)))
    if shape == 0:
        x = np.full(n, level)
    elif shape == 1:
        x = np.zeros(n, dtype=np.int64)
        x[rng.choice(n, size=max(1, n // 8), replace=False)] = level + 10
    elif shape == 2:
        k = int(rng.integers(1, 5))
        x = np.repeat(rng.integers(0, level + 10, size=k), -(-n // k))[:n]
    elif shape == 3:
        x = np.floor((level + 10) / np.arange(1, n + 1) ** 1.1)
    elif shape == 4:
        x = rng.integers(0, 6, size=n)
    elif shape == 5:
        x = np.zeros(n, dtype=np.int64)
        x[0] = x[-1] = level + 10
    else:
        x = np.full(n, level + 3)
        x[rng.integers(n)] += 1
    return _pair(name, x, int(rng.integers(n)), int(rng.choice((-1, 1))))


def _grid_pair(name: str, g: np.ndarray, cell, change: int) -> Pair:
    g = np.maximum(np.asarray(g, dtype=np.int64), 0)
    i, j = int(cell[0]) % g.shape[0], int(cell[1]) % g.shape[1]
    if change < 0 and g[i, j] == 0:
        change = +1
    return Pair(name, tuple(int(v) for v in g.reshape(-1)), i * g.shape[1] + j, int(change), 1,
                tuple(int(v) for v in g.shape))


def random_grid_pair(rng: np.random.Generator, name: str = "search") -> Pair:
    """A random pair on a random 2-D grid (public randomness from the audit's seed)."""
    n1, n2 = (int(v) for v in rng.choice(SIDES, size=2))
    kind = rng.integers(8)
    level = int(rng.choice((0, 1, 5, 20, 100, 1000)))
    if kind == 0:                                   # flat
        g = np.full((n1, n2), level)
    elif kind == 1:                                 # sparse spikes
        g = np.zeros(n1 * n2, dtype=np.int64)
        g[rng.choice(n1 * n2, size=max(1, n1 * n2 // 8), replace=False)] = level + 10
        g = g.reshape(n1, n2)
    elif kind == 2:                                 # blocks of a few levels
        k1, k2 = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        blocks = rng.integers(0, level + 10, size=(k1, k2))
        g = np.repeat(np.repeat(blocks, -(-n1 // k1), axis=0), -(-n2 // k2), axis=1)[:n1, :n2]
    elif kind == 3:                                 # a power law along one axis
        axis = int(rng.integers(2))
        ramp = np.floor((level + 10) / np.arange(1, (n1, n2)[axis] + 1) ** 1.1)
        g = np.broadcast_to(ramp[:, None] if axis == 0 else ramp[None, :], (n1, n2)).copy()
    elif kind == 4:                                 # random small counts
        g = rng.integers(0, 6, size=(n1, n2))
    elif kind == 5:                                 # spikes at the four corners
        g = np.zeros((n1, n2), dtype=np.int64)
        g[0, 0] = g[0, -1] = g[-1, 0] = g[-1, -1] = level + 10
    elif kind == 6:                                 # a near-tie: flat, one cell one above
        g = np.full((n1, n2), level + 3)
        g[rng.integers(n1), rng.integers(n2)] += 1
    else:                                           # stripes along one axis
        g = np.zeros((n1, n2), dtype=np.int64)
        if rng.random() < 0.5:
            g[::2, :] = level + 10
        else:
            g[:, ::2] = level + 10
    return _grid_pair(name, g, (rng.integers(n1), rng.integers(n2)), int(rng.choice((-1, 1))))


def mutate_grid(pair: Pair, rng: np.random.Generator, name: str = "search") -> Pair:
    """One local move in two dimensions from a grid pair (see the module docstring)."""
    g = pair.counts.copy()
    n1, n2 = g.shape
    i, j = divmod(pair.bin, n2)
    c = pair.change
    move = min(int(rng.integers(13)), 11)       # 11 and 12: the round-number move (twice as likely)
    if move == 0:                                       # another cell, often one of the eight neighbours
        if rng.random() < 0.6:
            di, dj = (0, 0)
            while (di, dj) == (0, 0):
                di, dj = int(rng.integers(-1, 2)), int(rng.integers(-1, 2))
            i, j = min(max(i + di, 0), n1 - 1), min(max(j + dj, 0), n2 - 1)
        else:
            i, j = int(rng.integers(n1)), int(rng.integers(n2))
    elif move == 1:                                     # remove instead of add, or back
        c = -c
    elif move == 2:                                     # make (or just miss) a tie along either axis
        k = (min(max(i + int(rng.choice((-1, 1))), 0), n1 - 1), j) if rng.random() < 0.5 else \
            (i, min(max(j + int(rng.choice((-1, 1))), 0), n2 - 1))
        g[i, j] = g[k] + int(rng.integers(-1, 2))
    elif move == 3:                                     # a spike somewhere
        g[rng.integers(n1), rng.integers(n2)] = int(g.max()) * 2 + 10
    elif move == 4:                                     # a zero somewhere
        g[rng.integers(n1), rng.integers(n2)] = 0
    elif move == 5:                                     # scale every count
        g = np.floor(g * float(rng.choice((0.5, 2.0, 10.0))))
    elif move == 6:                                     # flip along an axis, or transpose
        r = rng.random()
        if r < 1 / 3:
            g, i = g[::-1, :], n1 - 1 - i
        elif r < 2 / 3:
            g, j = g[:, ::-1], n2 - 1 - j
        else:
            g, i, j = g.T, j, i
    elif move == 7 and 2 * n1 * n2 <= MAX_CELLS:        # one axis doubled (repeated or padded with zeros)
        axis = int(rng.integers(2))
        other = g if rng.random() < 0.5 else np.zeros_like(g)
        g = np.concatenate((g, other), axis=axis)
    elif move == 8 and max(n1, n2) > 1:                 # one axis halved around the changed cell
        axis = 0 if n2 == 1 or (n1 > 1 and rng.random() < 0.5) else 1
        n, at = (n1, i) if axis == 0 else (n2, j)
        start = min(max(at - n // 4, 0), n - n // 2)
        if axis == 0:
            g, i = g[start:start + n // 2, :], i - start
        else:
            g, j = g[:, start:start + n // 2], j - start
    elif move == 9 and max(n1, n2) > 1:                 # a row or a column copied onto its neighbour
        if n2 == 1 or (n1 > 1 and rng.random() < 0.5):
            k = min(max(i + int(rng.choice((-1, 1))), 0), n1 - 1)
            g[k, :] = g[i, :]
        else:
            k = min(max(j + int(rng.choice((-1, 1))), 0), n2 - 1)
            g[:, k] = g[:, j]
    elif move == 11:                                    # the changed cell at a round number's edge
        edge = int(rng.choice((1, 5))) * 10 ** int(rng.integers(1, 5))
        g[i, j], c = (edge - 1, +1) if rng.random() < 0.5 else (edge, -1)
    else:                                               # one cell up or down by a little
        a, b = int(rng.integers(g.shape[0])), int(rng.integers(g.shape[1]))
        g[a, b] = max(g[a, b] + int(rng.integers(-3, 4)), 0)
    return _grid_pair(name, g, (i, j), c)


def mutate(pair: Pair, rng: np.random.Generator, name: str = "search") -> Pair:
    """One local move from ``pair`` (see the module docstring); a grid pair moves on its grid."""
    if pair.shape is not None:
        return mutate_grid(pair, rng, name)
    x, j, c = pair.counts, pair.bin, pair.change
    n = x.size
    move = min(int(rng.integers(12)), 10)       # 10 and 11: the round-number move (twice as likely)
    if move == 0:                                       # another bin, often a neighbour
        j = j + int(rng.choice((-1, 1))) if rng.random() < 0.5 else int(rng.integers(n))
    elif move == 1:                                     # remove instead of add, or back
        c = -c
    elif move == 2 and n > 1:                           # make (or just miss) a tie with a neighbour
        k = min(max(j + int(rng.choice((-1, 1))), 0), n - 1)
        x[j] = x[k] + int(rng.integers(-1, 2))
    elif move == 3:                                     # a spike somewhere
        x[int(rng.integers(n))] = int(x.max()) * 2 + 10
    elif move == 4:                                     # a zero somewhere
        x[int(rng.integers(n))] = 0
    elif move == 5:                                     # scale every count
        x = np.floor(x * float(rng.choice((0.5, 2.0, 10.0))))
    elif move == 6:                                     # mirror
        x, j = x[::-1], n - 1 - j
    elif move == 7 and 2 * n <= MAX_BINS:              # twice the domain (repeat or pad with zeros)
        x = np.concatenate((x, x if rng.random() < 0.5 else np.zeros(n, dtype=np.int64)))
    elif move == 8 and n > 1:                           # half the domain around the changed bin
        start = min(max(j - n // 4, 0), n - n // 2)
        x, j = x[start:start + n // 2], j - start
    elif move == 10:                                    # the changed bin at a round number's edge
        edge = int(rng.choice((1, 5))) * 10 ** int(rng.integers(1, 5))
        x[j], c = (edge - 1, +1) if rng.random() < 0.5 else (edge, -1)
    else:                                               # one bin up or down by a little
        k = int(rng.integers(n))
        x[k] = max(x[k] + int(rng.integers(-3, 4)), 0)
    return _pair(name, x, j, c)


def hill_climb(evaluate: Callable[[Sequence[Pair], int], list[float]], starts: Sequence[Pair],
               rng: np.random.Generator, evaluations: int, keep: int, restarts: int, width: int = 2,
               deadline: float = np.inf, propose: Callable = random_pair) -> list[tuple[Pair, float]]:
    """The ``keep`` best distinct pairs (with their scores) after at most ``evaluations`` evaluations.

    ``evaluate(pairs, first)`` scores a generation of pairs (``first``: the index of the first
    evaluation, from which the caller derives each evaluation's seed); ``width`` pairs per
    generation (one per worker); no new generation starts after ``deadline`` (perf_counter).
    ``propose(rng, name)`` draws a random restart (:func:`random_grid_pair` for grids).
    """
    seen: dict[tuple, tuple[Pair, float]] = {}
    done = 0

    def run(batch):
        nonlocal done
        fresh = []
        for p in batch:
            key = (p.x, p.bin, p.change, p.shape)
            if key not in seen and key not in {(q.x, q.bin, q.change, q.shape) for q in fresh}:
                fresh.append(p)
        if not fresh:
            return
        scores = evaluate(fresh, done)
        done += len(fresh)
        for p, s in zip(fresh, scores):
            seen[(p.x, p.bin, p.change, p.shape)] = (p, float(s))

    first = [*starts, *(propose(rng, f"search-restart-{i}") for i in range(restarts))]
    for i in range(0, len(first), width):
        if done >= evaluations or time.perf_counter() > deadline:
            break
        run(first[i:i + width][:evaluations - done])
    step = 0
    while done < evaluations and time.perf_counter() <= deadline and seen:
        ranked = sorted(seen.values(), key=lambda t: -t[1])
        top = ranked[:max(1, min(3, len(ranked)))]
        batch = []
        for _ in range(min(width, evaluations - done)):
            parent = top[0][0] if rng.random() < 0.6 else top[int(rng.integers(len(top)))][0]
            step += 1
            batch.append(mutate(parent, rng, f"search-{step}"))
        before = done
        run(batch)
        if done == before:          # every move landed on a pair already seen
            step += 1
            run([propose(rng, f"search-restart-{step}")])
            if done == before:
                break
    ranked = sorted(seen.values(), key=lambda t: -t[1])
    return ranked[:keep]
