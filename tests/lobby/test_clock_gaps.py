"""Clocks run only while people can move: a gap in the bot's own time (a stopped process, a
machine that slept, a wall clock that jumped ahead) or a lost link to Discord gives every person
to move the resume grace, as a restart does, instead of a loss on time; and matches whose board
is gone (a guild the bot left, a deleted channel) end unrated."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person, Snapshot, Where
from lobby.pool import EnginePool
from tests.clock import Clock

ALICE = Person("local", "alice", "Alice")
BOB = Person("local", "bob", "Bob")
CAROL = Person("local", "carol", "Carol")
TURN, GRACE = 600.0, 120.0


async def no_sleep(_: float) -> None:
    return None


async def open_lobby(target: Path | str, pool: EnginePool, clock: Clock) -> Lobby:
    store = await Store.open(target, clock=clock)
    config = LobbyConfig(seed=3, turn_seconds=TURN, resume_grace=GRACE)
    return Lobby(store, pool, config, clock=clock, sleep=no_sleep)


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    lob = await open_lobby(tmp_path / "gaps.db", pool, clock)
    yield lob
    await lob.close()
    await lob.store.close()


class Monotonic:
    """The bot's own monotonic time, moved by hand (it stops while a machine sleeps)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.reads = 0  # how often the clock looked (once before each part of a pass)

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    async def looked(self, since: int) -> None:
        """Wait until the clock looked again after `since` reads (however busy the host)."""
        while self.reads <= since:
            await asyncio.sleep(0.001)


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Wait for the running clock to get there (a bounded number of its passes)."""
    for _ in range(500):
        if await check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the clock never got there")


async def bob_to_move(lobby: Lobby) -> Snapshot:
    """A game between two people where Bob, who has moved, is to move: a loss on time
    would count."""
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    for who, column in ((ALICE, "4"), (BOB, "4"), (ALICE, "3")):
        snap = await lobby.play(snap.id, who, column)
    return snap


async def running_clock(lobby: Lobby, mono: Monotonic) -> asyncio.Task[None]:
    """The lobby's clock, passing as fast as it can (no pause between passes)."""
    return asyncio.ensure_future(lobby.run_clock(interval=0, monotonic=mono))


@pytest.mark.parametrize(
    ("wall", "mono"),
    [(700.0, 700.0), (700.0, 0.0)],
    ids=["process stopped", "machine slept"],  # a sleeping machine's monotonic clock stops
)
async def test_a_gap_in_the_bots_time_gives_a_grace_not_a_loss(
    lobby: Lobby, clock: Clock, wall: float, mono: float
) -> None:
    snap = await bob_to_move(lobby)
    ticks = Monotonic()
    clock_task = await running_clock(lobby, ticks)
    try:
        await asyncio.sleep(0.05)  # a few ordinary passes
        deadline = clock.now + TURN
        clock.now += wall  # past Bob's clock, in one step: nobody could move meanwhile
        ticks.now += mono

        async def graced() -> bool:
            m = await lobby.store.matches.get(snap.id)
            return m is not None and (m.status != "live" or m.turn_deadline != deadline)

        await until(graced)
        now = await lobby.snapshot(snap.id)
        assert now.live, f"Bob lost on time: {now.match.termination}"
        assert now.match.turn_deadline == clock.now + GRACE
    finally:
        clock_task.cancel()
        await asyncio.gather(clock_task, return_exceptions=True)


async def test_a_stop_of_a_few_seconds_across_a_deadline_gives_a_grace(
    lobby: Lobby, clock: Clock
) -> None:
    """A process stopped for 5 s, far less than a turn, as Bob's last seconds ran out: he
    could not move in them, so he gets the grace, not a loss on time."""
    snap = await bob_to_move(lobby)
    deadline = snap.match.turn_deadline
    assert deadline is not None
    clock.now = deadline - 2  # the clock starts here: no gap before the stop
    ticks = Monotonic()
    clock_task = await running_clock(lobby, ticks)
    try:
        await asyncio.sleep(0.05)  # a few ordinary passes
        clock.now += 5
        ticks.now += 5

        async def graced() -> bool:
            m = await lobby.store.matches.get(snap.id)
            return m is not None and (m.status != "live" or m.turn_deadline != deadline)

        await until(graced)
        now = await lobby.snapshot(snap.id)
        assert now.live, f"Bob lost on time: {now.match.termination}"
        assert now.match.turn_deadline == clock.now + GRACE
    finally:
        clock_task.cancel()
        await asyncio.gather(clock_task, return_exceptions=True)


async def test_time_that_passes_as_usual_still_ends_a_turn(lobby: Lobby, clock: Clock) -> None:
    snap = await bob_to_move(lobby)
    ticks = Monotonic()
    clock_task = await running_clock(lobby, ticks)
    try:
        for _ in range(int(TURN / 2) + 1):  # two seconds a pass, on both clocks
            seen = ticks.reads
            clock.now += 2
            ticks.now += 2
            await asyncio.wait_for(ticks.looked(seen), 30)  # one step a look, never two

        async def ended() -> bool:
            m = await lobby.store.matches.get(snap.id)
            return m is not None and m.status != "live"

        await until(ended)
        stored = await lobby.store.matches.get(snap.id)
        assert stored is not None and stored.termination == "time" and stored.result == "0"
    finally:
        clock_task.cancel()
        await asyncio.gather(clock_task, return_exceptions=True)


async def test_while_paused_nobody_loses_on_time_and_the_grace_follows(
    lobby: Lobby, clock: Clock
) -> None:
    snap = await bob_to_move(lobby)
    other = await lobby.start_pvp(CAROL, ALICE, "connect4", Where(7, 70))
    lobby.pause_clocks()  # Discord cannot reach the bot
    clock.now += 700
    assert await lobby.expire_turns() == []
    await lobby.resume_clocks()
    for match_id in (snap.id, other.id):
        now = await lobby.snapshot(match_id)
        assert now.live and now.match.turn_deadline == clock.now + GRACE
    lobby.pause_clocks(7)  # one server is out: only its clocks wait
    clock.now += GRACE + 1
    [ended] = await lobby.expire_turns()
    assert ended.id == snap.id and ended.match.termination == "time"
    assert (await lobby.snapshot(other.id)).live
    await lobby.resume_clocks(7)
    assert (await lobby.snapshot(other.id)).match.turn_deadline == clock.now + GRACE
    await lobby.resume_clocks()  # not paused: nothing changes
    assert (await lobby.snapshot(other.id)).match.turn_deadline == clock.now + GRACE


async def test_matches_where_the_board_is_gone_end_unrated(
    store_target: str, pool: EnginePool, clock: Clock
) -> None:
    lobby = await open_lobby(store_target, pool, clock)
    try:
        here = await lobby.start_pvp(ALICE, BOB, "connect4", Where(1, 10, 100))
        same_guild = await lobby.start_pve(CAROL, "connect4", "easy", "me", Where(1, 11, 110))
        elsewhere = await lobby.start_pvp(BOB, CAROL, "othello", Where(2, 20, 200))
        [ended] = await lobby.abandon_in(channel_id=10)
        assert ended.id == here.id
        [ended] = await lobby.abandon_in(guild_id=1)
        assert ended.id == same_guild.id
        for match_id in (here.id, same_guild.id):
            m = await lobby.store.matches.get(match_id)
            assert m is not None and (m.status, m.result, m.termination) == (
                "abandoned",
                None,
                "unreachable",
            )
        assert [m.id for m in await lobby.store.matches.live()] == [elsewhere.id]
        assert await lobby.store.ratings.player_stats((await lobby.player_for(CAROL)).id) == []
        assert await lobby.abandon_in(guild_id=1) == []
    finally:
        await lobby.close()
        await lobby.store.close()


async def test_a_move_stored_after_a_stop_gives_the_next_person_their_whole_turn(
    lobby: Lobby, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stopped between a click and its write (the chaos run stopped it there): the
    next person's clock starts when the move is stored and shown, not when it was clicked (a
    turn that began in the past left them the grace alone after a restart)."""
    snap = await bob_to_move(lobby)
    commit_step = lobby.store.matches.commit_step

    async def stopped_first(*args: Any, **kwargs: Any) -> Any:
        clock.now += 100.0  # the process was stopped here
        return await commit_step(*args, **kwargs)

    monkeypatch.setattr(lobby.store.matches, "commit_step", stopped_first)
    after = await lobby.play(snap.id, BOB, "3")
    assert after.match.turn_deadline == clock.now + TURN


async def test_a_match_stored_after_a_stop_gives_its_first_mover_their_whole_turn(
    lobby: Lobby, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a new match: the first person's clock starts when the match is stored."""
    create = lobby.store.matches.create

    async def stopped_first(*args: Any, **kwargs: Any) -> Any:
        clock.now += 100.0  # the process was stopped here
        return await create(*args, **kwargs)

    monkeypatch.setattr(lobby.store.matches, "create", stopped_first)
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    assert snap.match.turn_deadline == clock.now + TURN
