"""`python -m tools book` and `othello-eval`: building the shipped data (the Connect Four
opening book, the Othello pattern weights) into the user data folder or `--out`, and copying a
finished build over the shipped file only when told to (`--replace-shipped`)."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import platformdirs

from engine.agents.connect4 import book as c4book
from tools import c4book as book_builder
from tools.progress import Progress

BOOK_FILE = "c4book.txt"
PATTERNS_FILE = "othello_patterns.npz"


def user_data_dir() -> Path:
    """Where the tools write what they build unless told otherwise (the platform's user data
    folder, e.g. ~/.local/share/boardbot on Linux): never the installed package."""
    return Path(platformdirs.user_data_dir("boardbot"))


def _out_path(args: argparse.Namespace, name: str, shipped: Path, what: str) -> Path:
    """The file a build writes: --out, else `name` in the user data folder; never the shipped
    file itself (--replace-shipped copies a finished build over it instead)."""
    out = Path(args.out) if args.out else user_data_dir() / name
    if out.resolve() == shipped.resolve():
        raise ValueError(
            f"--out {args.out} is the shipped {what}: build elsewhere (the default is the user "
            "data folder) and add --replace-shipped to copy the result over it"
        )
    return out


def _describe(path: Path) -> str:
    """Size of a data file, for the line saying what was replaced."""
    if not path.exists():
        return "no file"
    size = path.stat().st_size
    if path.suffix == ".txt":
        return f"{len(path.read_text().splitlines())} lines, {size} bytes"
    try:  # the Othello weights say how many games they were fitted on
        import numpy as np

        with np.load(path) as data:
            return f"fitted on {int(data['games'])} games, {size} bytes"
    except (OSError, KeyError, ValueError):
        return f"{size} bytes"


def _replace_shipped(built: Path, shipped: Path, what: str) -> None:
    """Copy `built` over the shipped file and say what was replaced."""
    before = _describe(shipped)
    tmp = shipped.with_name(shipped.name + ".new")
    shutil.copyfile(built, tmp)
    tmp.replace(shipped)  # in one step: a reader never sees half a file
    print(f"replaced the shipped {what} {shipped}: was {before}, now {_describe(shipped)}")


def cmd_book(args: argparse.Namespace) -> int:
    if (
        not 1 <= args.ply <= 8
        or args.workers < 1
        or (args.minutes is not None and args.minutes <= 0)
    ):
        print(
            "error: --ply takes 1..8, --workers at least 1, --minutes more than 0", file=sys.stderr
        )
        return 2
    out = _out_path(args, BOOK_FILE, c4book.BOOK_PATH, "book")
    progress: Progress | None = None

    def on_progress(done: int, total: int) -> None:
        nonlocal progress
        if progress is None:
            progress = Progress(total, f"book ply {args.ply}")
            progress.update(done, "resumed" if done else "")
        elif done > progress.done:
            progress.update(done - progress.done, "")

    size, solved, total = book_builder.build(
        out,
        ply=args.ply,
        workers=args.workers,
        stop_after=None if args.minutes is None else args.minutes * 60,
        progress=on_progress,
    )
    print(f"wrote {size} positions to {out} ({solved} of {total} with {args.ply} discs)")
    if solved < total:
        kept = " (the shipped book is not replaced)" if args.replace_shipped else ""
        print(f"unfinished{kept}: run the same command again to go on", file=sys.stderr)
    elif args.replace_shipped:
        _replace_shipped(out, c4book.BOOK_PATH, "book")
    return 0


def cmd_othello_eval(args: argparse.Namespace) -> int:
    from engine.agents.othello import patterns as pt
    from tools import patternfit

    if args.games < patternfit.MIN_GAMES:
        raise ValueError(
            f"--games must be at least {patternfit.MIN_GAMES}: one game in "
            f"{patternfit.HOLD_OUT} is held out to measure the fit"
        )
    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    out = _out_path(args, PATTERNS_FILE, pt.DATA, "Othello weights")
    errors = patternfit.build(out, args.games, args.workers)
    shown = " ".join("n/a" if math.isnan(e) else f"{e:.1f}" for e in errors)
    print(f"wrote the weights to {out}: {len(errors)} phases, held-out errors (discs) {shown}")
    if args.replace_shipped:
        _replace_shipped(out, pt.DATA, "Othello weights")
    return 0


def add_book_parser(sub: Any) -> None:
    p = sub.add_parser(
        "book",
        help="solve the Connect Four opening book the expert level plays from (hours of CPU)",
    )
    p.add_argument("--ply", type=int, default=4, help="solve every position of this many discs")
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes (default: every core)"
    )
    p.add_argument(
        "--out",
        default=None,
        help=f"the book file to write (default: {user_data_dir() / BOOK_FILE}; its work file, "
        "which makes the build resumable, goes beside it)",
    )
    p.add_argument("--minutes", type=float, default=None, help="stop after this long (resumable)")
    p.add_argument(
        "--replace-shipped",
        action="store_true",
        help="once the book is finished, copy it over the shipped book the expert level reads",
    )
    p.set_defaults(func=cmd_book)


def add_othello_eval_parser(sub: Any) -> None:
    p = sub.add_parser(
        "othello-eval",
        help="fit the Othello pattern evaluation from self-play games labelled by the solver",
    )
    p.add_argument("--games", type=int, default=20000, help="games to play (resumable)")
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes (default: every core)"
    )
    p.add_argument(
        "--out",
        default=None,
        help=f"the weights file to write (default: {user_data_dir() / PATTERNS_FILE}; the "
        "games are kept beside it, in OUT.parts, so a rerun goes on)",
    )
    p.add_argument(
        "--replace-shipped",
        action="store_true",
        help="then copy the weights over the shipped ones the Othello levels read",
    )
    p.set_defaults(func=cmd_othello_eval)
