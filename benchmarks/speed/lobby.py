"""Many concurrent matches through the real lobby, store and process pool.

Measures what a person feels, Discord's own latency excluded: the round trip from their move to
the bot's reply being stored (lobby.play + lobby.advance), and the event loop's worst stall while
50 matches run with agents thinking in the pool. A watchdog task sleeps 5 ms at a time and
records how late it wakes up.

    python -m benchmarks.speed.lobby [--matches 50] [--level easy] [--think 0.5] [--workers 2]

`--think` is the people's mean thinking time between moves (seconds, exponential); 0 makes every
person reply instantly, a stress test of the pool rather than a realistic load.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.measure import load, percentile
from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person
from lobby.pool import EnginePool
from lobby.records import Where


async def watchdog(stalls: list[float], stop: asyncio.Event, tick: float = 0.005) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t0 = loop.time()
        await asyncio.sleep(tick)
        stalls.append(loop.time() - t0 - tick)


async def person(
    lobby: Lobby,
    n: int,
    game: str,
    level: str,
    think: float,
    trips: list[float],
    seed: int,
    where: Where | None = None,
) -> int:
    """One person's match against `level`: their moves' round trips go to `trips`. With
    `where` (a guild, as scale.py's shards need) a Discord member, else a console name."""
    rng = random.Random(seed)
    if where is None:
        me = Person("local", f"p{n}", f"Player {n}")
        snap = await lobby.start_pve(me, game, level, "me")
    else:
        me = Person("user", 10_000 + n, f"p{n}")
        snap = await lobby.start_pve(me, game, level, "me", where)
    moves = 0
    while snap.live:
        if think:
            await asyncio.sleep(rng.expovariate(1 / think))
        move = rng.choice(snap.state.legal_moves())
        t0 = time.perf_counter()
        snap = await lobby.play(snap.id, me, move)
        snap = await lobby.advance(snap.id)
        trips.append(time.perf_counter() - t0)
        moves += 1
    return moves


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--matches", type=int, default=50)
    parser.add_argument("--game", default="connect4")
    parser.add_argument("--level", default="easy")
    parser.add_argument("--think", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "bench.db")
        pool = EnginePool(workers=args.workers)
        t0 = time.perf_counter()
        await pool.start()
        print(f"pool of {args.workers} started and warmed in {time.perf_counter() - t0:.2f} s")
        lobby = Lobby(store, pool, LobbyConfig(seed=1))
        await lobby.resume()  # as every front end does at start (it warms the rule kernels)
        stalls: list[float] = []
        trips: list[float] = []
        stop = asyncio.Event()
        dog = asyncio.create_task(watchdog(stalls, stop))
        t0 = time.perf_counter()
        counts = await asyncio.gather(
            *(
                person(lobby, n, args.game, args.level, args.think, trips, n)
                for n in range(args.matches)
            )
        )
        elapsed = time.perf_counter() - t0
        stop.set()
        await dog
        await pool.close()
        await store.close()

    print(
        f"{args.matches} concurrent {args.game} matches vs {args.level}, think {args.think} s: "
        f"{sum(counts)} person moves + replies in {elapsed:.1f} s"
    )
    print(
        f"round trip (move stored -> reply stored): p50 {1000 * statistics.median(trips):.1f} ms, "
        f"p95 {1000 * percentile(trips, 0.95):.1f} ms, max {1000 * max(trips):.1f} ms"
    )
    print(
        f"event loop stall: worst {1000 * max(stalls):.1f} ms, "
        f"p99 {1000 * percentile(stalls, 0.99):.1f} ms over {len(stalls)} ticks"
    )
    print(load())


if __name__ == "__main__":
    asyncio.run(main())
