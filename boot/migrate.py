"""`python bot.py migrate --from sqlite:PATH --to postgresql://...`: a SQLite database copied
into a new PostgreSQL one, every table verified (db/copy.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from db.backend import check_url, redact
from db.copy import BadRowError, copy_sqlite_to_postgres, describe
from db.errors import StoreError


def migrate(argv: list[str]) -> int:
    """`python bot.py migrate --from sqlite:PATH --to postgresql://...`: copy the history,
    ratings and learned memory into a new PostgreSQL database, verified (db/copy.py)."""
    parser = argparse.ArgumentParser(
        prog="bot.py migrate",
        description="Copy a SQLite database (matches, moves, ratings, learned memory, ...) into"
        " a new, empty PostgreSQL database; every table is verified by its count and checksum.",
    )
    parser.add_argument("--from", dest="source", required=True, metavar="sqlite:PATH")
    parser.add_argument("--to", dest="target", required=True, metavar="postgresql://...")
    args = parser.parse_args(argv)
    source: str = args.source
    target: str = args.target
    if not source.startswith("sqlite:") or source == "sqlite:":
        print(f"error: --from {source!r}: expected sqlite:PATH", file=sys.stderr)
        return 2
    problem = check_url(target)
    if problem is not None:
        print(f"error: --to {redact(target)!r}: {problem}", file=sys.stderr)
        return 2
    path = source.removeprefix("sqlite:")
    try:
        copies = asyncio.run(copy_sqlite_to_postgres(path, target, progress=print))
    except BadRowError as exc:  # bad input: the source must be mended first
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (StoreError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(describe(copies, path, target))
    return 0
