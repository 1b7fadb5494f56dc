"""The lobby under faults: one transaction per step, restarts, clocks, failing agents and
store errors, learning that must happen exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import faults
from db.errors import CorruptRowError, FullError, TransientError
from db.store import Store
from engine.agents.base import AgentSpec
from lobby.core import Lobby, LobbyConfig, Person, Snapshot
from lobby.errors import LobbyError, MatchNotFound, StoreFailed
from lobby.joberrors import JobTimeout, WorkerCrashed
from lobby.pool import EnginePool
from tests.clock import Clock
from tests.counting import KIND, register_counting
from tests.lobby.test_lobby import _game_with_a_pass

ALICE = Person("local", "alice", "Alice")
BOB = Person("local", "bob", "Bob")


@pytest.fixture(autouse=True)
def clean_faults() -> Any:
    faults.reset()
    yield
    faults.reset()


async def open_lobby(db: Path | str, pool: EnginePool, clock: Clock, **config: Any) -> Lobby:
    store = await Store.open(db, clock=clock)
    config.setdefault("learn_any", True)
    config.setdefault("raw_specs", True)
    return Lobby(store, pool, LobbyConfig(seed=5, **config), clock=clock)


async def shut(lobby: Lobby) -> None:
    await lobby.close()
    await lobby.store.close()


@pytest.fixture
async def lobby(store_target: str, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    """A lobby on each backend: the store's faults (BOARDBOT_FAULT's failing writes) and
    their handling are the same on SQLite and PostgreSQL."""
    lob = await open_lobby(store_target, pool, clock)
    yield lob
    await shut(lob)


async def _up_to_the_pass(lobby: Lobby) -> tuple[Snapshot, str]:
    """A person-vs-person Othello match one move before a forced pass; that move."""
    words = _game_with_a_pass()
    at = words.index("pass")
    snap = await lobby.start_pvp(ALICE, BOB, "othello")
    for word in words[: at - 1]:
        if word != "pass":
            mover = ALICE if snap.state.to_move() == 0 else BOB
            snap = await lobby.play(snap.id, mover, word)
    return snap, words[at - 1]


async def test_a_move_and_its_forced_pass_commit_together_or_not_at_all(lobby: Lobby) -> None:
    snap, word = await _up_to_the_pass(lobby)
    mover = ALICE if snap.state.to_move() == 0 else BOB
    before = snap.match.ply
    faults.reset("fail:write:commit_step:1:full")  # the disk is full at that commit
    with pytest.raises(FullError):
        await lobby.play(snap.id, mover, word)
    stored = await lobby.store.matches.get(snap.id)
    assert stored is not None and stored.ply == before  # neither the move nor the pass
    snap = await lobby.play(snap.id, mover, word)  # the retry stores both, in one commit
    rows = await lobby.store.matches.moves(snap.id)
    assert [r.move for r in rows[before:]] == [word, "pass"]
    assert rows[before].created_at == rows[before + 1].created_at
    assert snap.match.turn_deadline is not None  # the player after the pass has a clock


async def test_the_last_move_and_the_finish_with_ratings_are_one_commit(lobby: Lobby) -> None:
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    for i, col in enumerate("121212"):
        snap = await lobby.play(snap.id, ALICE if i % 2 == 0 else BOB, col)
    faults.reset("fail:write:commit_step:1:error")
    with pytest.raises(TransientError):
        await lobby.play(snap.id, ALICE, "1")
    stored = await lobby.store.matches.get(snap.id)
    assert stored is not None and stored.status == "live" and stored.ply == 6
    assert await lobby.leaderboard("connect4") == []
    snap = await lobby.play(snap.id, ALICE, "1")
    assert snap.match.result == "0" and len(await lobby.leaderboard("connect4")) == 2


async def test_resume_mends_a_match_left_before_its_forced_pass(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    db = tmp_path / "pass.db"
    lob = await open_lobby(db, pool, clock)
    snap, word = await _up_to_the_pass(lob)
    mover = snap.seats[snap.state.to_move()].player.id
    # An older version stored the move and died before the pass: only `pass` is legal now.
    await lob.store.matches.append_move(snap.id, snap.match.ply, word, mover, turn_deadline=None)
    await shut(lob)
    lob = await open_lobby(db, pool, clock)
    try:
        [live] = await lob.resume()
        assert [r.move for r in await lob.store.matches.moves(live.id)][-1] == "pass"
        assert live.live and live.match.turn_deadline is not None
        assert not live.seat_to_move.is_agent and live.state.legal_moves() != []
    finally:
        await shut(lob)


async def test_downtime_does_not_count_against_the_clock(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    db = tmp_path / "grace.db"
    lob = await open_lobby(db, pool, clock, turn_seconds=60, resume_grace=30)
    snap = await lob.start_pvp(ALICE, BOB, "connect4")
    for i, col in enumerate("443"):
        snap = await lob.play(snap.id, ALICE if i % 2 == 0 else BOB, col)
    await shut(lob)
    clock.now += 3600  # the bot was down for an hour; bob's deadline passed meanwhile
    lob = await open_lobby(db, pool, clock, turn_seconds=60, resume_grace=30)
    try:
        [live] = await lob.resume()
        assert live.match.turn_deadline == clock.now + 30
        assert await lob.expire_turns() == []
        clock.now += 31
        [ended] = await lob.expire_turns()
        assert ended.match.termination == "time" and ended.match.result == "0"
    finally:
        await shut(lob)


async def test_a_deadline_beyond_the_grace_is_kept(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    db = tmp_path / "kept.db"
    lob = await open_lobby(db, pool, clock, turn_seconds=600, resume_grace=30)
    snap = await lob.start_pvp(ALICE, BOB, "connect4")
    snap = await lob.play(snap.id, ALICE, "4")
    deadline = snap.match.turn_deadline
    await shut(lob)
    clock.now += 10
    lob = await open_lobby(db, pool, clock, turn_seconds=600, resume_grace=30)
    try:
        [live] = await lob.resume()
        assert live.match.turn_deadline == deadline
    finally:
        await shut(lob)


async def _corrupt_one(lobby: Lobby) -> tuple[int, int]:
    """Two live matches whose clocks ran out; the first has a stored move that does not
    replay (a corrupt row). Returns (bad id, good id)."""
    bad = await lobby.start_pvp(ALICE, BOB, "connect4")
    good = await lobby.start_pvp(ALICE, BOB, "connect4")
    good = await lobby.play(good.id, ALICE, "4")
    alice = bad.seats[0].player.id
    await lobby.store.matches.append_move(bad.id, 0, "9", alice)  # no column 9 on this board
    return bad.id, good.id


async def test_one_bad_match_cannot_stop_the_others_at_resume_or_in_the_clock(
    tmp_path: Path, pool: EnginePool, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "bad.db"
    lob = await open_lobby(db, pool, clock, turn_seconds=60, resume_grace=5)
    bad, good = await _corrupt_one(lob)
    await shut(lob)
    lob = await open_lobby(db, pool, clock, turn_seconds=60, resume_grace=5)
    try:
        live = await lob.resume()
        assert [s.id for s in live] == [good]
        assert bad in await lob.store.matches.set_aside_reasons()
        assert f"match {bad} set aside" in caplog.text
        clock.now += 120
        ended = await lob.expire_turns()
        assert [s.id for s in ended] == [good]  # the good match's clock still runs
        assert await lob.store.matches.expired_turn_ids(clock.now) == []  # the bad one is set aside
    finally:
        await shut(lob)


async def test_a_corrupt_match_in_the_clock_tick_is_set_aside_and_the_tick_goes_on(
    lobby: Lobby, clock: Clock
) -> None:
    bad, good = await _corrupt_one(lobby)
    lobby.matches._states.clear()  # as after a restart: the bad match must be replayed
    clock.now += 601
    ended = await lobby.expire_turns()
    assert [s.id for s in ended] == [good]
    assert bad in await lobby.store.matches.set_aside_reasons()


async def test_a_hung_or_crashed_agent_is_replaced_by_the_level_below(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    choose = lobby.pool.choose
    asked: list[str] = []

    async def failing(state: Any, spec: AgentSpec, budget: Any, *a: Any, **k: Any) -> Any:
        asked.append(spec.label())
        if spec.name == "perfect":
            raise JobTimeout("hung past its cap")
        return await choose(state, spec, budget, *a, **k)

    monkeypatch.setattr(lobby.pool, "choose", failing)
    snap = await lobby.start_pve(ALICE, "connect4", "expert", "bot")
    snap = await lobby.advance(snap.id)
    assert snap.match.ply == 1 and snap.match.rated
    [row] = await lobby.store.matches.moves(snap.id)
    assert row.fallback == "hard"  # recorded with the move
    assert asked[0] == "perfect" and len(asked) == 2


async def test_when_every_job_fails_the_bot_computes_an_easy_move_itself(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def crashing(*args: Any, **kwargs: Any) -> Any:
        raise WorkerCrashed("the worker died")

    monkeypatch.setattr(lobby.pool, "choose", crashing)
    snap = await lobby.start_pve(ALICE, "othello", "hard", "bot")
    snap = await lobby.advance(snap.id)
    [row] = await lobby.store.matches.moves(snap.id)
    assert row.fallback is not None and row.fallback.startswith("easy")
    # not a random move: the easy level maximises discs flipped
    assert snap.live and not snap.seat_to_move.is_agent


async def test_an_agent_move_survives_a_busy_database(lobby: Lobby) -> None:
    lobby.config.store_retry_seconds = 0.01
    snap = await lobby.start_pve(ALICE, "connect4", "easy", "me")
    faults.reset("fail:write:commit_step:2:locked")  # alice's move commits, the agent's not
    snap = await lobby.play(snap.id, ALICE, "4")
    snap = await lobby.advance(snap.id)
    assert snap.match.ply == 2 and not snap.seat_to_move.is_agent


async def test_the_clock_tick_restarts_an_agent_turn_that_died(lobby: Lobby) -> None:
    lobby.config.store_retries = 0
    faults.reset("fail:write:commit_step:1:full")
    snap = await lobby.start_pve(ALICE, "connect4", "easy", "bot")
    await asyncio.sleep(0.3)
    assert not lobby.turn_running(snap.id)  # the turn died on the full disk
    stored = await lobby.store.matches.get(snap.id)
    assert stored is not None and stored.ply == 0
    await lobby.tick()
    snap = await lobby.advance(snap.id)
    assert snap.match.ply == 1


async def test_learning_survives_a_kill_and_happens_once(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    register_counting()
    db = tmp_path / "learn.db"
    lob = await open_lobby(db, pool, clock)
    lob.learning.outbox._closing = True  # the process dies before any learning is applied
    snap = await lob.start_pve(ALICE, "connect4", KIND, "me")
    await lob.resign(snap.id, ALICE)
    assert len(await lob.store.outbox.pending()) == 1  # written with the finish
    await lob.store.close()
    lob = await open_lobby(db, pool, clock)
    try:
        await lob.resume()
        await lob.learning.outbox.drain()
        info = await lob.store.memory.info(KIND, "default")
        assert info is not None and info.games_trained == 1
        assert await lob.store.outbox.pending() == []
        # applying the same outbox row again writes nothing (exactly once)
        assert not await lob.learning.outbox.learn_match(
            "connect4", "7x6k4", snap.id, [(1, AgentSpec(KIND))], "1", outbox_id=1
        )
        info = await lob.store.memory.info(KIND, "default")
        assert info is not None and info.games_trained == 1
    finally:
        await shut(lob)


async def test_training_and_match_learning_never_overwrite_each_other(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_counting()
    lobby.learning.training.batch_seconds = 0.01
    run = lobby.pool.run
    finished = asyncio.Event()

    async def slow_batch(fn: Any, *args: Any, **kwargs: Any) -> Any:
        result = await run(fn, *args, **kwargs)
        if not finished.is_set():  # a match ends while the first batch is in the worker
            snap = await lobby.start_pve(ALICE, "connect4", KIND, "me")
            await lobby.resign(snap.id, ALICE)
            finished.set()
            await asyncio.sleep(0.05)
        return result

    monkeypatch.setattr(lobby.pool, "run", slow_batch)
    progress = await lobby.train("connect4", KIND, 30, seed=1).wait()
    await lobby.learning.outbox.drain()
    assert progress.error is None and finished.is_set()
    info = await lobby.store.memory.info(KIND, "default")
    games = await lobby.store.memory.get_one(KIND, "default", b"games")
    assert info is not None and info.games_trained == 31  # 30 trained + 1 match
    # 2 per self-play game (both seats learn) + 1 for the match: no write overwrote another's
    assert games is not None and int(games) == 61


async def test_a_busy_database_in_the_clock_postpones_only_that_part(
    lobby: Lobby, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    challenge = await lobby.challenge(ALICE, BOB, "connect4")
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    for i, col in enumerate("44"):
        snap = await lobby.play(snap.id, ALICE if i % 2 == 0 else BOB, col)
    clock.now += 700  # both the challenge and alice's clock are due
    faults.reset("fail:write:expire_challenges:1:locked")
    await lobby.tick()
    stored = await lobby.store.matches.get(snap.id)
    assert stored is not None and stored.termination == "time"  # the rest of the tick ran
    assert (await lobby.store.challenges.get(challenge.id)).status == "pending"  # type: ignore[union-attr]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    await lobby.tick()  # the next pass does it
    assert (await lobby.store.challenges.get(challenge.id)).status == "expired"  # type: ignore[union-attr]


async def test_a_busy_database_at_a_restart_is_retried_not_blamed_on_the_match(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    db = tmp_path / "busy.db"
    lob = await open_lobby(db, pool, clock, turn_seconds=60, resume_grace=30)
    snap = await lob.start_pvp(ALICE, BOB, "connect4")
    snap = await lob.play(snap.id, ALICE, "4")
    await shut(lob)
    clock.now += 3600
    lob = await open_lobby(db, pool, clock, turn_seconds=60, resume_grace=30)
    lob.config.store_retry_seconds = 0.01
    try:
        faults.reset("fail:write:set_turn_deadline:1:locked,fail:write:set_turn_deadline:2:full")
        [live] = await lob.resume()
        assert live.match.turn_deadline == clock.now + 30  # the grace, on the third try
        assert await lob.store.matches.set_aside_reasons() == {}
    finally:
        await shut(lob)


async def test_a_busy_database_when_noting_a_shown_end_is_only_a_warning(
    lobby: Lobby, caplog: pytest.LogCaptureFixture
) -> None:
    snap = await lobby.start_pvp(ALICE, BOB, "connect4")
    await lobby.resign(snap.id, ALICE)
    faults.reset("fail:write:final_shown:1:locked")
    await lobby.final_shown(snap.id)  # the editor's note, in a task of its own
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert "cannot note that its end is shown" in caplog.text  # a restart shows it again


async def test_a_request_on_a_corrupt_match_gets_the_lobbys_error_not_the_stores(
    lobby: Lobby, tmp_path: Path, pool: EnginePool, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """Front ends know one family of errors: the store's are translated where a request
    leaves the lobby (and a corrupt row is logged with its details)."""
    bad, _good = await _corrupt_one(lobby)
    lobby.matches._states.clear()
    with pytest.raises(StoreFailed) as caught:
        await lobby.snapshot(bad)
    assert isinstance(caught.value, LobbyError)
    assert isinstance(caught.value.__cause__, CorruptRowError)
    assert "could not be read" in str(caught.value)
    assert f"corrupt row in moves (match {bad} ply 0)" in caplog.text
    with pytest.raises(MatchNotFound):
        await lobby.snapshot(10**12)
    closed = await open_lobby(tmp_path / "closed.db", pool, clock)
    await shut(closed)
    with pytest.raises(StoreFailed, match="shutting down"):
        await closed.stats(ALICE)


async def test_a_listener_asking_the_lobby_gets_the_lobbys_errors_too(lobby: Lobby) -> None:
    """Listeners are front-end code: what they ask of the lobby is a request of its own, with
    the store's errors translated, even though the lobby called them inside a request."""
    bad, good = await _corrupt_one(lobby)
    lobby.matches._states.clear()
    seen: list[type[BaseException]] = []

    async def listener(snap: Snapshot) -> None:
        try:
            await lobby.snapshot(bad)
        except Exception as exc:
            seen.append(type(exc))

    lobby.listeners.append(listener)
    await lobby.play(good, BOB, "3")
    assert seen == [StoreFailed]
