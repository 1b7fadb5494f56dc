"""The opening book of the `perfect` agent: the exact outcome of every 7x6 position of the first
`BOOK_PLY` discs and a column keeping it, built offline by our own solver (``python -m engine
book``; how: docs/agents.md) and read from `data/c4book.txt`.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

from engine.agents.connect4 import solver as sv
from engine.agents.connect4.lines import centre_order
from engine.games.connect4 import Connect4State

ROWS, COLS, K = 6, 7, 4
BOOK_PLY = 4  # the shipped book's depth (tests and benchmarks check it to that depth)
MAX_PLY = 8  # deepest book `python -m engine book` builds; lookups stop there
#: The shipped book, the one the agent reads. `python -m engine book` builds into the user data
#: folder (or --out) and copies over this file only when told to (--replace-shipped).
BOOK_PATH = Path(__file__).parent.parent / "data" / "c4book.txt"
#: A bigger transposition table for the offline solves (minutes each, not milliseconds).
BUILD_TABLE_SIZE = 16777213


class BookError(ValueError):
    """A book file that does not parse or does not cover what it claims."""


def _keys(state: Connect4State) -> tuple[int, int]:
    """(key, mirror key) of a position."""
    _, _, _, cur, mask = state.mirror_key()
    return state.current + state.mask, cur + mask


def _canonical(state: Connect4State, col: int) -> tuple[int, int]:
    """The book key of a position and `col` seen in that key's orientation."""
    key, mirrored = _keys(state)
    return (mirrored, state.cols - 1 - col) if mirrored < key else (key, col)


def parse(text: str) -> dict[int, tuple[int, int]]:
    """Book lines into {key: (outcome, 0-based column)}; BookError names the bad line."""
    book: dict[int, tuple[int, int]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        try:
            key, outcome, col = int(parts[0]), int(parts[1]), int(parts[2]) - 1
        except (ValueError, IndexError):
            raise BookError(f"book line {n}: expected '<key> <outcome> <column>'") from None
        if len(parts) != 3 or outcome not in (-1, 0, 1) or not 0 <= col < COLS or key < 0:
            raise BookError(f"book line {n}: {line.strip()!r} is out of range")
        book[key] = (outcome, col)
    return book


@functools.cache
def load(path: Path = BOOK_PATH) -> dict[int, tuple[int, int]]:
    """The book as {key: (outcome, column)}; empty when the file is missing."""
    if not path.exists():
        return {}
    return parse(path.read_text())


def lookup(state: Connect4State, path: Path = BOOK_PATH) -> tuple[int, int] | None:
    """(outcome for the side to move, a 0-based column keeping it), or None if not in the book."""
    if (state.rows, state.cols, state.k) != (ROWS, COLS, K) or state.ply > MAX_PLY:
        return None
    return lookup_in(load(path), state)


# --------------------------------------------------------------------------------------------
# building


def positions(ply: int, rows: int = ROWS, cols: int = COLS) -> Iterator[Connect4State]:
    """Every unfinished position with `ply` discs, one per mirror pair, depth first."""
    seen: set[int] = set()
    for state in _sequences(ply, rows, cols):
        key = min(_keys(state))
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
        key = min(_keys(state))
        counts[key] = counts.get(key, 0) + 1
    return counts


def solve_position(moves: str, rows: int = ROWS, cols: int = COLS) -> tuple[str, int, int]:
    """(moves, outcome, 0-based column keeping it) of one position, solved to the end."""
    state = Connect4State.from_moves(moves, rows, cols)
    order = centre_order(state.cols)
    wins = state.winning_moves()
    if wins:
        return moves, 1, min(wins, key=order.index)
    if sv.every_move_loses(state):
        return moves, -1, min(state.legal_moves(), key=order.index)
    safe = sorted(sv.non_losing_moves(state), key=order.index)
    for threshold, outcome in ((0, 1), (-1, 0)):
        found = sv.probe(state, safe, threshold).found
        if found is not None:
            return moves, outcome, found
    return moves, -1, safe[0]


def _init_worker(table_size: int) -> None:
    """A build worker's transposition table: room for solves of minutes, not milliseconds."""
    sv.TABLE_SIZE = table_size


def _derive(
    leaves: dict[int, tuple[int, int]], ply: int, rows: int, cols: int
) -> dict[int, tuple[int, int]]:
    """Outcomes of the positions with fewer than `ply` discs, by negamax over the children
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
                    value = 0 if outcome.winner is None else 1
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
            key, col = _canonical(state, best[1])
            book[key] = (best[0], col)
    return book


def lookup_in(book: dict[int, tuple[int, int]], state: Connect4State) -> tuple[int, int] | None:
    """(outcome, column) of `state` in a book of any board size, or None."""
    key, mirrored = _keys(state)
    if key in book:
        return book[key]
    if mirrored in book:
        outcome, col = book[mirrored]
        return outcome, state.cols - 1 - col
    return None


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
                key, col = _canonical(state, int(parts[2]))
                done[key] = (int(parts[1]), col)
    counts = likelihood(ply, rows, cols)
    todo = {min(_keys(s)): s for s in positions(ply, rows, cols)}
    pending = sorted((k for k in todo if k not in done), key=lambda k: -counts[k])
    if progress:
        progress(len(todo) - len(pending), len(todo))
    t0 = time.monotonic()
    if pending:
        pool = ProcessPoolExecutor(
            workers, get_context("spawn"), initializer=_init_worker, initargs=(table_size,)
        )
        try:
            with work.open("a") as log:
                futures = [
                    pool.submit(solve_position, todo[k].to_notation(), rows, cols) for k in pending
                ]
                timeout = None if stop_after is None else max(0.0, stop_after)
                for fut in as_completed(futures, timeout=timeout):
                    moves, outcome, col = fut.result()
                    key, kcol = _canonical(Connect4State.from_moves(moves, rows, cols), col)
                    done[key] = (outcome, kcol)
                    log.write(f"{moves} {outcome} {col}\n")
                    log.flush()
                    os.fsync(log.fileno())
                    if progress:
                        progress(len(done), len(todo))
        except TimeoutError:
            pass  # out of time: keep what is solved
        finally:
            processes = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in processes:  # a solve in progress may have minutes to go
                proc.terminate()
    leaves = {k: v for k, v in done.items() if k in todo}
    book = _derive(leaves, ply, rows, cols)
    lines = [
        f"# Connect Four {cols}x{rows} opening book: {len(book)} positions of <= {ply} discs "
        f"({len(leaves)} of the {len(todo)} with {ply} discs solved),",
        f"# built by `python -m engine book --ply {ply}` (our own solver), "
        f"{time.strftime('%Y-%m-%d')}; {time.monotonic() - t0:.0f} s in this run.",
    ]
    lines += [f"{key} {v} {c + 1}" for key, (v, c) in sorted(book.items())]
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)
    return len(book), len(leaves), len(todo)
