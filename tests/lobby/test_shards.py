"""Shard processes on one database: each owns its guilds' matches (resumes, clocks, agent
turns), the guard refuses overlapping processes, and the settings are checked."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boot.errors import ConfigError
from boot.settings import Config
from db.instance import AlreadyRunning, InstanceLock, PgInstanceLock
from db.shards import Shards, parse_shards
from db.store import Store
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from lobby.records import Person, Where
from tests.clock import Clock
from tests.machine import scaled
from tests.pg import PgServer

ROOT = Path(__file__).resolve().parents[2]
SNOWFLAKES = st.integers(min_value=0, max_value=2**63 - 1)


def guild_on(shard: int, count: int, salt: int = 1) -> int:
    """A guild id Discord sends to `shard` of `count`."""
    return ((salt * count + shard) << 22) | 12345


@given(
    st.integers(1, 64).flatmap(
        lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), min_size=1))
    )
)
def test_a_shard_set_reads_back_from_its_label(case: tuple[int, set[int]]) -> None:
    count, owned = case
    shards = Shards(count, frozenset(owned))
    text = "" if count == 1 else shards.label().split(" ")[1]
    assert parse_shards(str(count), text) == shards


@given(st.text(max_size=12), st.text(max_size=20))
def test_any_setting_text_is_a_shard_set_or_one_clear_error(count: str, owned: str) -> None:
    try:
        shards = parse_shards(count, owned)
    except ValueError as exc:
        assert str(exc).startswith("BOARDBOT_SHARD") and "\n" not in str(exc)
    else:
        assert shards.owned <= set(range(shards.count))


def test_bad_shard_settings_stop_the_start_with_one_line(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    for env, words in (
        ({"BOARDBOT_SHARDS": "0-1"}, "needs BOARDBOT_SHARD_COUNT"),
        ({"BOARDBOT_SHARD_COUNT": "four"}, "is not a whole number"),
        ({"BOARDBOT_SHARD_COUNT": "4", "BOARDBOT_SHARDS": "2-4"}, "from 0 to 3"),
        ({"BOARDBOT_SHARD_COUNT": "4", "BOARDBOT_SHARDS": "3-1"}, "from 0 to 3"),
    ):
        with pytest.raises(ConfigError, match=words):
            Config.from_env(env, dotenv)
    config = Config.from_env({"BOARDBOT_SHARD_COUNT": "4", "BOARDBOT_SHARDS": "0,2"}, dotenv)
    assert config.shards == Shards(4, frozenset({0, 2}))
    assert Config.from_env({}, dotenv).shards is None


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.one_of(st.none(), SNOWFLAKES), min_size=1, max_size=12), st.integers(2, 16))
async def test_the_store_finds_exactly_the_guilds_discord_sends_to_a_shard(
    tmp_path_factory: pytest.TempPathFactory, guilds: list[int | None], count: int
) -> None:
    path = tmp_path_factory.mktemp("s") / "s.db"
    async with Store.open(path) as store:
        a = await store.players.get_or_create_user(1, "a")
        b = await store.players.get_or_create_user(2, "b")
        ids = {}
        for g in guilds:
            m = await store.matches.create("connect4", "pvp", a.id, b.id, guild_id=g)
            ids[m.id] = g
        for shard in range(count):
            store.shards = Shards(count, frozenset({shard}))
            # Discord's rule (discord.Guild.shard_id), direct messages on shard 0.
            want = [m for m, g in ids.items() if (0 if g is None else (g >> 22) % count) == shard]
            assert await store.matches.live_ids() == want


def test_the_guard_allows_disjoint_shard_sets_and_refuses_overlaps(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    low = InstanceLock(db, Shards(4, frozenset({0, 1})))
    high = InstanceLock(db, Shards(4, frozenset({2, 3})))
    low.acquire()
    high.acquire()
    for shards, words in (
        (Shards(4, frozenset({1, 2})), "runs shard 1"),
        (None, "already using"),
        (Shards(8, frozenset({7})), "as 4 shards, this one as 8"),
    ):
        with pytest.raises(AlreadyRunning, match=words):
            InstanceLock(db, shards).acquire()
    low.release()
    high.release()
    # All released: one process for everything may start again.
    with InstanceLock(db), pytest.raises(AlreadyRunning, match="runs every guild"):
        InstanceLock(db, Shards(4, frozenset({0}))).acquire()
    with InstanceLock(db, Shards(8, frozenset({7}))):  # a new layout once the old one is gone
        pass


async def _no_sleep(_: float) -> None:
    await asyncio.sleep(0)


async def _until(check: Callable[[], Awaitable[bool]], seconds: float, step: float) -> None:
    """Wait until `check()` holds or `seconds` (on the reference machine: scaled) pass; the
    caller asserts."""
    deadline = time.monotonic() + scaled(seconds)
    while not await check() and time.monotonic() < deadline:
        await asyncio.sleep(step)


@pytest.fixture
async def two_pools() -> AsyncIterator[tuple[EnginePool, EnginePool]]:
    pools = (EnginePool(workers=0), EnginePool(workers=0))
    for p in pools:
        await p.start()
    yield pools
    for p in pools:
        await p.close()


async def _lobby(path: str, shard: int, pool: EnginePool, clock: Clock) -> Lobby:
    store = await Store.open(path, clock=clock)
    store.shards = Shards(2, frozenset({shard}))
    config = LobbyConfig(seed=3, challenge_cooldown=0, turn_seconds=60, resume_grace=30)
    return Lobby(store, pool, config, clock=clock, sleep=_no_sleep)


async def _close(*lobbies: Lobby) -> None:
    for lobby in lobbies:
        await lobby.close()
        await lobby.store.close()


async def test_two_shard_lobbies_on_one_database_touch_only_their_own_matches(
    store_target: str, two_pools: tuple[EnginePool, EnginePool], clock: Clock
) -> None:
    path = store_target  # a SQLite file or a PostgreSQL database
    lobbies = [await _lobby(path, s, two_pools[s], clock) for s in (0, 1)]
    mine: dict[int, list[int]] = {0: [], 1: []}
    people = [Person("user", n, f"p{n}") for n in range(1, 9)]
    for shard in (0, 1):
        lobby = lobbies[shard]
        for k in range(2):
            where = Where(guild_on(shard, 2, salt=k + 1), 77, 1000 + 10 * shard + k)
            snap = await lobby.start_pvp(
                people[4 * shard + 2 * k], people[4 * shard + 2 * k + 1], "connect4", where
            )
            mine[shard].append(snap.match.id)
    dm = await lobbies[0].start_pvp(people[0], people[7], "othello")  # no guild: shard 0's
    mine[0].append(dm.match.id)
    await _close(*lobbies)

    # A restart of both: each takes up only its own matches.
    lobbies = [await _lobby(path, s, two_pools[s], clock) for s in (0, 1)]
    for shard in (0, 1):
        resumed = await lobbies[shard].resume()
        assert sorted(s.match.id for s in resumed) == sorted(mine[shard])

    # Every clock runs out; shard 0's clock ends only shard 0's matches.
    clock.now += 3600
    ended = await lobbies[0].expire_turns()
    assert sorted(s.match.id for s in ended) == sorted(mine[0])
    for match_id in mine[1]:
        assert (await lobbies[1].snapshot(match_id)).live
    ended = await lobbies[1].expire_turns()
    assert sorted(s.match.id for s in ended) == sorted(mine[1])
    await _close(*lobbies)


async def test_an_agent_turn_runs_only_in_the_process_that_owns_its_guild(
    store_target: str, two_pools: tuple[EnginePool, EnginePool], clock: Clock
) -> None:
    path = store_target  # a SQLite file or a PostgreSQL database
    idle = EnginePool(workers=0)  # never started: the bot's first move waits, as if killed
    owner = await _lobby(path, 1, idle, clock)
    where = Where(guild_on(1, 2), 77, 5000)
    snap = await owner.start_pve(Person("user", 9, "p9"), "connect4", "easy", "bot", where)
    match_id = snap.match.id
    await _close(owner)
    await idle.close()

    other = await _lobby(path, 0, two_pools[0], clock)
    assert await other.resume() == []
    await other.tick()
    await asyncio.sleep(0.3)
    assert (await other.snapshot(match_id)).match.ply == 0  # not its guild: untouched
    owner = await _lobby(path, 1, two_pools[1], clock)
    await owner.resume()

    async def played() -> bool:
        return (await owner.snapshot(match_id)).match.ply == 1

    await _until(played, 5, 0.05)
    assert (await owner.snapshot(match_id)).match.ply == 1  # its owner plays the bot's move
    await _close(other, owner)


async def test_a_sharded_bot_answers_through_discord_dispatch(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    from cogs.client import ShardedBoardBot
    from tests.harness import DEFAULT_GUILD_ID, Harness, user

    store = await Store.open(tmp_path / "bot.db", clock=clock)
    shards = Shards(4, frozenset({(DEFAULT_GUILD_ID >> 22) % 4}))
    store.shards = shards
    lobby = Lobby(store, pool, LobbyConfig(seed=7), clock=clock, sleep=_no_sleep)
    sharded = ShardedBoardBot(lobby, run_clock=False, shard_count=4, shard_ids=sorted(shards.owned))
    assert sharded.shard_count == 4 and sharded.shard_ids == sorted(shards.owned)
    sharded.editor.play_interval = sharded.editor.spectate_interval = 0.0
    async with await Harness.create(sharded) as h:
        await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=user(101, "alice"))
        board = h.last_message(ephemeral=False)
        assert any(
            b.get("custom_id", "").startswith("c4:")
            for row in board["components"]
            for b in row["components"]
        )
    await lobby.close()
    await store.close()


async def test_a_lease_has_one_holder_until_it_lapses_or_is_dropped(
    store_target: str, clock: Clock
) -> None:
    async with Store.open(store_target, clock=clock) as store:
        assert await store.leases.take("learning", "a", 30)
        assert not await store.leases.take("learning", "b", 30)
        clock.now += 20
        assert await store.leases.take("learning", "a", 30)  # renewed: 30 s from now
        clock.now += 20
        assert not await store.leases.take("learning", "b", 30)
        assert await store.leases.holder("learning") == "a"
        clock.now += 11  # a stopped renewing (killed): the lease lapses
        assert await store.leases.holder("learning") is None
        assert await store.leases.take("learning", "b", 30)
        await store.leases.drop("learning", "a")  # not a's any more: nothing happens
        assert await store.leases.holder("learning") == "b"
        await store.leases.drop("learning", "b")
        assert await store.leases.take("learning", "a", 30)


@pytest.mark.usefixtures("counting")
async def test_one_shard_process_learns_and_trains_for_all(
    store_target: str, two_pools: tuple[EnginePool, EnginePool], clock: Clock
) -> None:
    from lobby.errors import BadRequest
    from tests.counting import KIND

    path = store_target  # a SQLite file or a PostgreSQL database
    lobbies = []
    for shard in (0, 1):
        store = await Store.open(path, clock=clock)
        store.shards = Shards(2, frozenset({shard}))
        config = LobbyConfig(seed=3, raw_specs=True, learn_any=True)
        lobbies.append(Lobby(store, two_pools[shard], config, clock=clock, sleep=_no_sleep))
    first, second = lobbies
    await first.resume()  # its learning kick takes the lease
    await first.learning.outbox.drain()
    await second.resume()
    await second.learning.outbox.drain()
    for shard, lobby in enumerate(lobbies):
        person = Person("user", 50 + shard, f"p{shard}")
        where = Where(guild_on(shard, 2), 77, 7000 + shard)
        snap = await lobby.start_pve(person, "connect4", KIND, "bot", where)
        while snap.live:
            snap = await lobby.advance(snap.id)
            if snap.live:
                snap = await lobby.play(snap.id, person, snap.state.legal_moves()[-1])
        await lobby.learning.outbox.drain()
    assert (
        first.learning.outbox.learned == 1 and second.learning.outbox.learned == 0
    )  # its row waits
    assert len(await second.store.outbox.pending("learn")) == 1
    with pytest.raises(BadRequest, match="another bot process"):
        second.train("connect4", KIND, 10, seed=1)
    await first.tick()  # the holder's clock applies what the other process left
    await first.learning.outbox.drain()
    assert first.learning.outbox.learned == 2 and second.learning.outbox.learned == 0
    info = await first.store.memory.info(KIND, "default")
    assert (
        info is not None
        and info.games_trained == 2
        and not await first.store.outbox.pending("learn")
    )
    progress = await first.train("connect4", KIND, 10, seed=1).wait()
    assert progress.done == 10 and progress.error is None
    await _close(first)  # gives the lease up: the other process takes over at its next tick
    await second.tick()
    await second.learning.outbox.drain()
    progress = await second.train("connect4", KIND, 10, seed=2).wait()
    assert progress.done == 10 and progress.error is None
    info = await second.store.memory.info(KIND, "default")
    assert info is not None and info.games_trained == 22
    await _close(second)


async def test_the_postgres_guard_allows_disjoint_shard_sets_and_refuses_overlaps(
    pg_server: PgServer,
) -> None:
    url = await pg_server.fresh_database()
    low = PgInstanceLock(url, Shards(4, frozenset({0, 1})))
    high = PgInstanceLock(url, Shards(4, frozenset({2, 3})))
    await low.claim()
    await high.claim()
    for shards, words in (
        (Shards(4, frozenset({1, 2})), "runs shard 1"),
        (None, "already using"),
        (Shards(8, frozenset({7})), "as 4 shards, this one as 8"),
    ):
        with pytest.raises(AlreadyRunning, match=words):
            await PgInstanceLock(url, shards).claim()
    low.release()
    high.release()
    whole = PgInstanceLock(url)
    deadline = time.monotonic() + scaled(2.5)
    while True:  # the server drops a terminated session's locks a moment later
        try:
            await whole.claim()
            break
        except AlreadyRunning:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)
    with pytest.raises(AlreadyRunning, match="runs every guild"):
        await PgInstanceLock(url, Shards(4, frozenset({0}))).claim()
    whole.release()


def _spawn(target: str, shard: int, guild: int | None = None) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "tests.shardproc", target, str(shard)]
    return subprocess.Popen(
        args + ([] if guild is None else [str(guild)]),
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _until_ready(proc: subprocess.Popen[str]) -> int | None:
    """The match id the process started (if it did), once it is ready."""
    match = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("match "):
            match = int(line.split()[1])
        if line.strip() == "ready":
            return match
    raise AssertionError(f"the shard process ended ({proc.wait()})")


async def _ply(target: str, match_id: int) -> int:
    async with Store.open(target) as store:
        match = await store.matches.get(match_id)
        assert match is not None
        return match.ply


@pytest.mark.slow
async def test_a_killed_shard_process_leaves_the_other_alone_and_resumes_its_own(
    store_target: str,
) -> None:
    """Two real bot processes on one database, each owning half the guilds: one is killed (-9)
    while its agent thinks; the other's clock, running meanwhile, touches neither that match nor
    lets its own stall; the killed one's restart plays its pending move."""
    procs = []
    try:
        a = _spawn(store_target, 0, guild_on(0, 2))
        procs.append(a)
        mine = _until_ready(a)
        a.send_signal(signal.SIGKILL)  # while its agent thinks about the first move
        a.wait()
        b = _spawn(store_target, 1, guild_on(1, 2))
        procs.append(b)
        theirs = _until_ready(b)
        assert mine is not None and theirs is not None

        async def theirs_moved() -> bool:
            return await _ply(store_target, theirs) >= 1

        await _until(theirs_moved, 10, 0.1)  # the other process's own match goes on
        assert await _ply(store_target, theirs) >= 1
        await asyncio.sleep(scaled(3))  # its clock has passed over the dead process's match
        assert await _ply(store_target, mine) == 0
        restarted = _spawn(store_target, 0)
        procs.append(restarted)
        _until_ready(restarted)

        async def mine_moved() -> bool:
            return await _ply(store_target, mine) >= 1

        await _until(mine_moved, 15, 0.1)
        assert await _ply(store_target, mine) == 1  # resumed by its owner
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_the_console_refuses_shard_settings_in_one_line(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "DISCORD_TOKEN": "",
        "BOARDBOT_DB": str(tmp_path / "c.db"),
        "BOARDBOT_SHARD_COUNT": "2",
        "BOARDBOT_SHARDS": "1",
    }
    proc = subprocess.run(
        [sys.executable, "bot.py"], cwd=ROOT, env=env, input="", capture_output=True,
        text=True, timeout=scaled(60),
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "config error: BOARDBOT_SHARD_COUNT and BOARDBOT_SHARDS are for the Discord bot "
        "(set DISCORD_TOKEN); the console runs every match itself"
    ]
    assert not (tmp_path / "c.db").exists()  # nothing opened, nothing changed
