"""Building the Connect Four opening book (`python -m tools book`): every position of `ply`
discs solved exactly on worker processes (the most often reached first; the solver reads the
12-disc database, not the book being built), the earlier ones derived by negamax, written as
the book `engine.agents.connect4.book` reads. Resumable: each solve is appended to a work file
as it comes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from engine.agents.connect4 import solver as sv
from engine.agents.connect4.book import BOOK_PLY, COLS, ROWS, K, canonical, keys, lookup_in
from engine.agents.connect4.lines import centre_order
from engine.games.connect4 import Connect4State
from tools.pool import as_done, pool, stop

#: A bigger transposition table for the offline solves (minutes each, not milliseconds).
BUILD_TABLE_SIZE = 16777213


def positions(ply: int, rows: int = ROWS, cols: int = COLS) -> Iterator[Connect4State]:
    """Every unfinished position with `ply` discs, one per mirror pair, depth first."""
    seen: set[int] = set()
    for state in _sequences(ply, rows, cols):
        key = min(keys(state))
        if key not in seen:
            seen.add(key)
            yield state


def _sequences(ply: int, rows: int, cols: int) -> Iterator[Connect4State]:
    """The position after every move sequence of `ply` moves that does not end the game."""

    def walk(state: Connect4State) -> Iterator[Connect4State]:
        if state.ply == ply:
            yield state
            return
        for col in state.legal_moves():
            child = state.play(col)
            if not child.is_over():
                yield from walk(child)

    yield from walk(Connect4State.new(rows, cols, K))


def likelihood(ply: int, rows: int = ROWS, cols: int = COLS) -> dict[int, int]:
    """{book key: how many move sequences reach the position or its mirror}: the build solves
    the most often reached positions first, so an interrupted build is as useful as it can be."""
    counts: dict[int, int] = {}
    for state in _sequences(ply, rows, cols):
        key = min(keys(state))
        counts[key] = counts.get(key, 0) + 1
    return counts


def solve_position(moves: str, rows: int = ROWS, cols: int = COLS) -> tuple[str, int, int]:
    """(moves, Pons' score, 0-based column reaching it) of one position, solved exactly."""
    state = Connect4State.from_moves(moves, rows, cols)
    order = centre_order(state.cols)
    cells = rows * cols
    wins = state.winning_moves()
    if wins:
        return moves, (cells + 1 - state.ply) // 2, min(wins, key=order.index)
    if sv.every_move_loses(state):
        return moves, -((cells - state.ply) // 2), min(state.legal_moves(), key=order.index)
    score, best = sv.best_moves(state)
    return moves, score, min(best, key=order.index)


def _init_worker(table_size: int) -> None:
    """A build worker's transposition table (room for long solves), and the 12-disc database
    but not the shipped book in its solver."""
    sv.TABLE_SIZE = table_size
    sv.use_books(opening=False, edge=True)


def _derive(
    leaves: dict[int, tuple[int, int]], ply: int, rows: int, cols: int
) -> dict[int, tuple[int, int]]:
    """Scores of the positions with fewer than `ply` discs, by negamax over the children
    (those with a child missing from an unfinished build are left out)."""
    book = dict(leaves)
    for p in range(ply - 1, -1, -1):
        for state in positions(p, rows, cols):
            order = centre_order(state.cols)
            best: tuple[int, int] | None = None
            for col in sorted(state.legal_moves(), key=order.index):
                child = state.play(col)
                outcome = child.outcome()
                if outcome is not None:
                    value = 0 if outcome.winner is None else (rows * cols + 1 - p) // 2
                else:
                    found = lookup_in(book, child)
                    if found is None:  # an unfinished build: this position stays out
                        best = None
                        break
                    value = -found[0]
                if best is None or value > best[0]:
                    best = (value, col)
            if best is None:
                continue
            key, col = canonical(state, best[1])
            book[key] = (best[0], col)
    return book


def build(
    out: Path,
    *,
    ply: int = BOOK_PLY,
    rows: int = ROWS,
    cols: int = COLS,
    workers: int = 2,
    table_size: int = BUILD_TABLE_SIZE,
    work: Path | None = None,
    stop_after: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[int, int, int]:
    """Solve the positions with `ply` discs, derive the earlier ones, write the book.

    Returns (book entries, positions of `ply` discs solved, positions of `ply` discs). Results
    go to the work file (``out`` + ``.ply<N>.work``) as they come, so a rerun resumes; after
    `stop_after` seconds the workers are stopped and the book holds what is solved so far.
    """
    work = work or out.with_suffix(f"{out.suffix}.ply{ply}.work")
    for folder in {out.parent, work.parent}:  # the work file is written from the first solve
        folder.mkdir(parents=True, exist_ok=True)
    done: dict[int, tuple[int, int]] = {}  # book key -> (outcome, column in the key's view)
    if work.exists():
        for line in work.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                state = Connect4State.from_moves(parts[0], rows, cols)
                key, col = canonical(state, int(parts[2]))
                done[key] = (int(parts[1]), col)
    counts = likelihood(ply, rows, cols)
    todo = {min(keys(s)): s for s in positions(ply, rows, cols)}
    pending = sorted((k for k in todo if k not in done), key=lambda k: -counts[k])
    if progress:
        progress(len(todo) - len(pending), len(todo))
    t0 = time.monotonic()
    if pending:
        executor = pool(workers, _init_worker, (table_size,))
        jobs = [(todo[k].to_notation(), rows, cols) for k in pending]
        timeout = None if stop_after is None else max(0.0, stop_after)
        try:
            with work.open("a") as log:
                for moves, outcome, col in as_done(executor, solve_position, jobs, timeout):
                    key, kcol = canonical(Connect4State.from_moves(moves, rows, cols), col)
                    done[key] = (outcome, kcol)
                    log.write(f"{moves} {outcome} {col}\n")
                    log.flush()
                    os.fsync(log.fileno())
                    if progress:
                        progress(len(done), len(todo))
        except TimeoutError:
            pass  # out of time: keep what is solved
        finally:
            stop(executor)  # a solve in progress may have minutes to go
    leaves = {k: v for k, v in done.items() if k in todo}
    book = _derive(leaves, ply, rows, cols)
    lines = [
        f"# Connect Four {cols}x{rows} opening book, exact scores: {len(book)} positions of "
        f"<= {ply} discs "
        f"({len(leaves)} of the {len(todo)} with {ply} discs solved),",
        f"# built by `python -m tools book --ply {ply}` (our own solver over the 12-disc "
        f"database of bitbully-databases), "
        f"{time.strftime('%Y-%m-%d')}; {time.monotonic() - t0:.0f} s in this run.",
    ]
    lines += [f"{key} {v} {c + 1}" for key, (v, c) in sorted(book.items())]
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)
    return len(book), len(leaves), len(todo)
