"""The bot's own failures never cost a person a game: a commit whose answer was lost is shown
as stored (with a grace) instead of freezing the board, and one undecodable row of any table
is set aside (a WARNING once, naming it) while the clock, the start and the listings go on."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import faults
from db.errors import TransientError
from db.instance import AlreadyRunning, PgInstanceLock
from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person, Snapshot
from lobby.errors import LobbyError
from lobby.pool import EnginePool
from tests.clock import Clock

ALICE = Person("local", "alice", "Alice")
BOB = Person("local", "bob", "Bob")
CAROL = Person("user", 303, "Carol")
DAVE = Person("user", 404, "Dave")


@pytest.fixture(autouse=True)
def clean_faults() -> Any:
    faults.reset()
    yield
    faults.reset()


async def no_sleep(_: float) -> None:
    return None


async def open_lobby(target: Path | str, pool: EnginePool, clock: Clock, **config: Any) -> Lobby:
    store = await Store.open(target, clock=clock)
    config.setdefault("turn_seconds", 600)
    config.setdefault("resume_grace", 120)
    return Lobby(store, pool, LobbyConfig(seed=3, **config), clock=clock, sleep=no_sleep)


@pytest.fixture
async def lobby(store_target: str, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    lob = await open_lobby(store_target, pool, clock)
    yield lob
    await lob.close()
    await lob.store.close()


def shown_by(lobby: Lobby) -> list[Snapshot]:
    """What a front end would show: every snapshot the lobby announces, in order."""
    seen: list[Snapshot] = []

    async def listen(snap: Snapshot) -> None:
        seen.append(snap)

    lobby.listeners.append(listen)
    return seen


# ---------------------------------------------------------------------- lost commit answers


async def test_a_lost_answer_to_the_agents_commit_still_shows_its_move(
    lobby: Lobby, clock: Clock
) -> None:
    shown = shown_by(lobby)
    snap = await lobby.start_pve(ALICE, "connect4", "easy")
    faults.reset("fail:write:commit_step:2:lost")  # the agent's move: stored, answer lost
    await lobby.play(snap.id, ALICE, "4")
    await lobby.advance(snap.id)
    stored = await lobby.snapshot(snap.id)
    assert stored.match.ply == 2 and not stored.seat_to_move.is_agent
    assert shown[-1].match.ply == 2, "the board froze on the bot's turn"
    assert not shown[-1].seat_to_move.is_agent
    deadline = shown[-1].match.turn_deadline
    assert deadline is not None and deadline >= clock.now + lobby.config.resume_grace
    clock.now += lobby.config.resume_grace - 1
    await lobby.tick()
    assert (await lobby.snapshot(snap.id)).live  # the person still has their turn


async def test_a_lost_answer_to_a_persons_commit_never_loses_the_other_on_time(
    lobby: Lobby, clock: Clock
) -> None:
    shown = shown_by(lobby)
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    faults.reset("fail:write:commit_step:1:lost")
    with pytest.raises(TransientError):
        await lobby.play(snap.id, ALICE, "4")  # stored; Alice is told to try again
    assert (await lobby.store.matches.get(snap.id)).ply == 1  # type: ignore[union-attr]
    assert all(s.match.ply == 0 for s in shown)  # Bob's board never showed his turn
    clock.now += 700  # longer than Bob's clock, before the clock's next pass
    await lobby.tick()
    now = await lobby.snapshot(snap.id)
    assert now.live, "Bob lost on time a turn his board never showed"
    assert shown[-1].match.ply == 1 and shown[-1].state.to_move() == 1  # shown now
    assert now.match.turn_deadline is not None
    assert now.match.turn_deadline >= clock.now + lobby.config.resume_grace
    clock.now += lobby.config.resume_grace + 1
    [ended] = await lobby.expire_turns()  # then his clock runs as usual
    assert ended.match.termination == "abandon"  # Bob never moved: unrated


async def test_a_lost_answer_to_a_resignation_shows_the_end(lobby: Lobby) -> None:
    shown = shown_by(lobby)
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    faults.reset("fail:write:commit_step:1:lost")
    with pytest.raises(TransientError):
        await lobby.resign(snap.id, ALICE)
    await lobby.tick()
    assert shown and not shown[-1].live and shown[-1].match.termination == "resign"


# ---------------------------------------------------------------------- undecodable rows


def corrupt(db: Path, sql: str, *params: Any) -> None:
    """Write a row the store cannot decode, as a manual edit or a damaged file would."""
    with sqlite3.connect(db) as conn:
        conn.execute(sql, params)


async def test_an_undecodable_challenge_stops_neither_the_clock_nor_agent_restarts(
    tmp_path: Path, pool: EnginePool, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "bad.db"
    lob = await open_lobby(db, pool, clock, challenge_seconds=60, challenge_cooldown=0)
    try:
        bad = await lob.challenge(CAROL, DAVE, "connect4")
        good = await lob.challenge(DAVE, CAROL, "othello")
        corrupt(db, "UPDATE challenges SET created_at = 'yesterday' WHERE id = ?", bad.id)
        game = await lob.start_pve(ALICE, "connect4", "easy", first="bot")
        turn = lob.turns._turns[game.id]
        turn.cancel()  # the agent's turn died (as on a store error)
        with pytest.raises(asyncio.CancelledError):
            await turn
        clock.now += 61
        caplog.set_level(logging.WARNING)
        await lob.tick()
        await lob.tick()
        await lob.advance(game.id)
        assert (await lob.snapshot(game.id)).match.ply == 1  # the agent moved after all
        assert (await lob.get_challenge(good.id)).status == "expired"  # type: ignore[union-attr]
        named = [r for r in caplog.records if f"challenges (id={bad.id})" in r.getMessage()]
        assert len(named) == 1 and named[0].levelname == "WARNING"
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert await lob.expire_challenges() == []  # set aside: never read again there
    finally:
        await lob.close()
        await lob.store.close()


async def test_the_bot_starts_with_an_undecodable_challenge(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    from tests.boardbot import make_bot

    db = tmp_path / "start.db"
    lob = await open_lobby(db, pool, clock)
    bad = await lob.challenge(CAROL, DAVE, "connect4")
    await lob.close()
    await lob.store.close()
    corrupt(db, "UPDATE challenges SET created_at = 'x' WHERE id = ?", bad.id)
    clock.now += lob.config.challenge_seconds + 1  # it expired while the bot was down
    bot, h = await make_bot(db, clock, pool)  # runs setup_hook: resume, expire challenges
    try:
        assert bot.lobby.store is not None
    finally:
        await h.close()
        await bot.lobby.close()
        await bot.lobby.store.close()


async def test_listings_skip_undecodable_ratings_players_and_history(
    tmp_path: Path, pool: EnginePool, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "listings.db"
    lob = await open_lobby(db, pool, clock)
    try:
        for a, b in ((CAROL, DAVE), (DAVE, CAROL)):
            snap = await lob.start_pvp(a, b, "connect4")
            await lob.resign(snap.id, b)
        carol = await lob.player_for(CAROL)
        dave = await lob.player_for(DAVE)
        corrupt(db, "UPDATE ratings SET mu = 'high' WHERE player_id = ?", dave.id)
        corrupt(db, "UPDATE rating_history SET at = 'then' WHERE player_id = ?", carol.id)
        caplog.set_level(logging.WARNING)
        board = await lob.leaderboard("connect4")
        assert [e.player.id for e in board] == [carol.id]
        _, stats = await lob.stats(DAVE)
        assert [s.played for s in stats] == [2]  # the results stay; the rating is set aside
        await lob.rating_chart(carol)  # no traceback
        corrupt(db, "UPDATE players SET created_at = 'long ago' WHERE id = ?", dave.id)
        lob.people._players.clear()
        assert [e.player.id for e in await lob.leaderboard("connect4")] == [carol.id]
        _, history = await lob.history(CAROL)
        assert history == []  # both games were against the undecodable player
        await lob.leaderboard("connect4")
        tables = [r.getMessage() for r in caplog.records if "does not decode" in r.getMessage()]
        assert len([t for t in tables if "ratings (" in t]) == 1  # once, not at every read
        assert any("rating_history (" in t for t in tables)
        assert any("players (id=" in t for t in tables)
    finally:
        await lob.close()
        await lob.store.close()


async def test_a_stored_ply_that_disagrees_with_the_moves_is_set_aside_on_load(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    db = tmp_path / "ply.db"
    lob = await open_lobby(db, pool, clock)
    snap = await lob.start_pvp(ALICE, BOB, "connect4")
    for i, col in enumerate("4433"):
        snap = await lob.play(snap.id, ALICE if i % 2 == 0 else BOB, col)
    other = await lob.start_pvp(BOB, ALICE, "connect4")
    await lob.close()
    await lob.store.close()
    corrupt(db, "UPDATE matches SET ply = 2 WHERE id = ?", snap.id)  # 4 moves are stored
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("UPDATE matches SET player1_id = 9999 WHERE id = ?", (other.id,))
    lob = await open_lobby(db, pool, clock)
    try:
        assert await lob.resume() == []
        reasons = await lob.store.matches.set_aside_reasons()
        assert "ply" in reasons[snap.id] and "says 2 but 4 moves" in reasons[snap.id]
        assert "player 9999 is missing" in reasons[other.id]
        assert "malformed seats" not in reasons[other.id]
    finally:
        await lob.close()
        await lob.store.close()


async def test_a_step_stored_between_a_snapshots_two_reads_is_no_corrupt_row(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot reads the match, then its moves: a step committed in between (the other
    person's click, an agent's move; PostgreSQL reads each statement as of its own start)
    shows one more move than the match said. That is no corrupt row: the match is read
    again, and the click goes on."""
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    await lobby.play(snap.id, ALICE, "4")
    before = await lobby.store.matches.get(snap.id)
    await lobby.play(snap.id, BOB, "4")
    real_get = lobby.store.matches.get
    stale = [before]

    async def read_before_the_step(match_id: int) -> Any:
        return stale.pop() if stale else await real_get(match_id)

    monkeypatch.setattr(lobby.store.matches, "get", read_before_the_step)
    now = await lobby.snapshot(snap.id)
    assert now.match.ply == 2 and now.state.ply == 2


async def test_a_transient_store_error_in_a_background_task_is_one_warning(
    lobby: Lobby, caplog: pytest.LogCaptureFixture
) -> None:
    async def fails() -> None:
        raise TransientError("connection lost after the commit")

    caplog.set_level(logging.WARNING)
    task = lobby.spawn(fails())
    with pytest.raises(TransientError):
        await task
    await asyncio.sleep(0)  # the done callback runs
    [record] = [r for r in caplog.records if "store failed" in r.getMessage()]
    assert record.levelname == "WARNING" and record.exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def _kill_sessions(url: str, application_prefix: str) -> None:
    """End the guard's session from outside, as a server restart or a cut connection would
    (its advisory locks die with it)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name"
            " LIKE $1 AND pid <> pg_backend_pid()",
            application_prefix + "%",
        )
    finally:
        await conn.close()


async def _eventually_claims(guard: Any) -> None:
    for _ in range(200):  # the server drops a terminated session's locks a moment later
        try:
            await guard.claim()
            return
        except AlreadyRunning:
            await asyncio.sleep(0.05)
    await guard.claim()


async def test_the_postgres_guard_is_taken_again_when_its_session_dies(
    pg_server: Any,
) -> None:
    url = await pg_server.fresh_database()
    guard = PgInstanceLock(url)
    await guard.claim()
    lost: list[str] = []
    watch = asyncio.ensure_future(guard.watch(lost.append, interval=0.05))
    old = guard._conn
    try:
        await _kill_sessions(url, "boardbot pid")
        for _ in range(400):
            await asyncio.sleep(0.05)
            if guard._conn is not None and guard._conn is not old:
                break
        with pytest.raises(AlreadyRunning):  # held again: a second bot is refused
            await PgInstanceLock(url).claim()
        assert lost == [] and not watch.done()
    finally:
        watch.cancel()
        guard.release()


async def test_a_bot_whose_postgres_guard_was_taken_by_another_stops_with_one_line(
    pg_server: Any,
) -> None:
    url = await pg_server.fresh_database()
    guard = PgInstanceLock(url)
    await guard.claim()
    lost: list[str] = []
    watch = asyncio.ensure_future(guard.watch(lost.append, interval=0.5))
    other = PgInstanceLock(url)
    try:
        await _kill_sessions(url, "boardbot pid")
        await _eventually_claims(other)  # another process starts in the gap
        await asyncio.wait_for(watch, 30)
        [line] = lost
        assert "another process holds it" in line and "\n" not in line
    finally:
        watch.cancel()
        other.release()
        guard.release()


async def test_the_slow_and_lost_write_faults_do_what_they_say(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    import db.connection

    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(seconds: float) -> None:
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(db.connection.asyncio, "sleep", recorded)
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    faults.reset("fail:write:commit_step:1:slow,fail:write:commit_step:2:lost")
    snap = await lobby.play(snap.id, ALICE, "4")  # slow, then stored
    assert slept == [db.connection.SLOW_WRITE_SECONDS] and snap.match.ply == 1
    with pytest.raises(TransientError):
        await lobby.play(snap.id, BOB, "4")
    assert (await lobby.store.matches.get(snap.id)).ply == 2  # type: ignore[union-attr]


async def test_a_challenge_never_shown_and_withdrawn_costs_no_cooldown(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    lob = await open_lobby(tmp_path / "cool.db", pool, clock, challenge_cooldown=30)
    try:
        first = await lob.challenge(CAROL, DAVE, "connect4")
        await lob.answer_challenge(first.id, CAROL, accept=False)  # its message failed
        again = await lob.challenge(CAROL, DAVE, "connect4")  # at once: nobody saw the first
        await lob.challenge_shown(again.id, 777)
        await lob.answer_challenge(again.id, CAROL, accept=False)
        with pytest.raises(LobbyError, match="a moment ago"):
            await lob.challenge(CAROL, DAVE, "connect4")  # a shown one keeps its pause
    finally:
        await lob.close()
        await lob.store.close()
