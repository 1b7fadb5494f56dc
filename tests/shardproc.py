"""One shard's bot process for tests/lobby/test_shards.py: a lobby over shard K of 2 with its own
engine worker and a running clock; with a guild id it starts a match there against a slow agent
that moves first, prints the match id, and lives until killed.

    python -m tests.shardproc TARGET SHARD [GUILD]
"""

from __future__ import annotations

import asyncio
import sys

from db.shards import Shards
from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person
from lobby.pool import EnginePool
from lobby.records import Where

#: Slow enough that a kill lands while it thinks (the first bot move of the match).
SLOW = "mcts:time=2"


async def main(target: str, shard: int, guild: int | None) -> None:
    store = await Store.open(target)
    store.shards = Shards(2, frozenset({shard}))
    pool = EnginePool(workers=1)
    await pool.start()
    lobby = Lobby(store, pool, LobbyConfig(seed=shard, raw_specs=True))
    await lobby.resume()
    clock = asyncio.ensure_future(lobby.run_clock(0.2))
    if guild is not None:
        person = Person("user", 900 + shard, f"p{shard}")
        snap = await lobby.start_pve(person, "connect4", SLOW, "bot", Where(guild, 1, 800 + shard))
        print(f"match {snap.match.id}", flush=True)
    print("ready", flush=True)
    await clock


if __name__ == "__main__":
    guild = int(sys.argv[3]) if len(sys.argv) > 3 else None
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), guild))
