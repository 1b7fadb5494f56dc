"""The lobby without Discord: match lifecycle, turns, clocks, ratings, restarts, the pool."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from db.store import Store
from engine.games.connect4 import Connect4State
from lobby.core import Lobby, LobbyConfig, Person, Snapshot
from lobby.errors import BadMove, BadRequest, MatchOver, NotInMatch, NotYourTurn, StaleAction
from lobby.pool import EnginePool
from tests.clock import Clock

ALICE = Person("local", "alice", "Alice")
BOB = Person("local", "bob", "Bob")
CAROL = Person("user", 42, "Carol")


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    store = await Store.open(tmp_path / "lobby.db", clock=clock)
    lob = Lobby(store, pool, LobbyConfig(seed=3), clock=clock)
    yield lob
    await lob.close()
    await store.close()


async def pvp(lobby: Lobby, game: str = "connect4") -> Snapshot:
    return await lobby.start_pvp(ALICE, BOB, game)


async def test_person_vs_person_rules_are_enforced(lobby: Lobby) -> None:
    snap = await pvp(lobby)
    with pytest.raises(NotYourTurn, match="Alice's turn"):
        await lobby.play(snap.id, BOB, "4")
    with pytest.raises(NotInMatch):
        await lobby.play(snap.id, CAROL, "4")
    with pytest.raises(BadMove):
        await lobby.play(snap.id, ALICE, "9")
    with pytest.raises(BadMove):
        await lobby.play(snap.id, ALICE, "x")
    snap = await lobby.play(snap.id, ALICE, "4")
    with pytest.raises(StaleAction):
        await lobby.play(snap.id, BOB, "4", expected_ply=0)
    assert (await lobby.store.matches.get(snap.id)).ply == 1  # type: ignore[union-attr]
    with pytest.raises(BadRequest, match="yourself"):
        await lobby.start_pvp(ALICE, ALICE, "connect4")


async def test_concurrent_clicks_apply_once(lobby: Lobby) -> None:
    snap = await pvp(lobby)
    results = await asyncio.gather(
        *(lobby.play(snap.id, ALICE, str(c % 7 + 1), expected_ply=0) for c in range(20)),
        return_exceptions=True,
    )
    ok = [r for r in results if isinstance(r, Snapshot)]
    assert len(ok) == 1
    assert all(isinstance(r, StaleAction | NotYourTurn) for r in results if r not in ok)
    assert len(await lobby.store.matches.moves(snap.id)) == 1


async def test_full_column_is_refused_and_changes_nothing(lobby: Lobby) -> None:
    snap = await pvp(lobby)
    for i in range(6):
        snap = await lobby.play(snap.id, ALICE if i % 2 == 0 else BOB, "1")
    with pytest.raises(BadMove, match="full"):
        await lobby.play(snap.id, ALICE, "1")
    assert (await lobby.snapshot(snap.id)).match.ply == 6


async def test_a_game_against_the_bot_is_stored_and_rated_per_level(lobby: Lobby) -> None:
    snap = await lobby.start_pve(ALICE, "connect4", "medium", "me")
    while snap.live:
        col = next(c for c in (3, 2, 4, 1, 5, 0, 6) if c in snap.state.legal_moves())
        snap = await lobby.play(snap.id, ALICE, col)
        snap = await lobby.advance(snap.id)
    rows = await lobby.store.matches.moves(snap.id)
    replay = Connect4State.from_moves("".join(r.move for r in rows))
    assert replay.key() == snap.state.key() and replay.is_over()
    board = await lobby.leaderboard("connect4")
    names = {e.player.display_name: e.rating for e in board}
    assert set(names) == {"Alice", "Bot (medium)"}
    assert names["Bot (medium)"].games == 1 and names["Alice"].games == 1
    agent = await lobby.store.players.get(snap.seats[1].player.id)
    assert agent is not None and agent.agent_key == "connect4:medium"


async def test_bot_matches_are_unrated_unless_configured(lobby: Lobby) -> None:
    snap = await lobby.start_eve("othello", "easy", "random", delay=0)
    snap = await lobby.run_botmatch(snap.id)
    assert not snap.live and not snap.match.rated
    assert await lobby.leaderboard("othello") == []
    lobby.config.rate_botmatches = True
    snap = await lobby.start_eve("othello", "easy", "random", delay=0)
    snap = await lobby.run_botmatch(snap.id)
    assert snap.match.rated and len(await lobby.leaderboard("othello")) == 2
    with pytest.raises(BadRequest, match="delay"):
        await lobby.start_eve("othello", "easy", "random", delay=-1)


def _game_with_a_pass() -> list[str]:
    """A seeded random Othello game, up to just after its first pass."""
    import random

    from engine.games.othello import OthelloState

    rng = random.Random(0)
    while True:
        state, words = OthelloState.new(), []
        while not state.is_over():
            move = rng.choice(state.legal_moves())
            words.append(state.move_to_str(move))
            state = state.play(move)
            if words[-1] == "pass" and not state.is_over():
                return [*words, state.move_to_str(state.legal_moves()[0])]


async def test_othello_passes_are_played_automatically(lobby: Lobby) -> None:
    words = _game_with_a_pass()
    snap = await pvp(lobby, "othello")
    for word in words:
        if word == "pass":
            continue  # nobody has to click a pass: the lobby plays it for them
        mover = ALICE if snap.state.to_move() == 0 else BOB
        snap = await lobby.play(snap.id, mover, word)
    assert [r.move for r in await lobby.store.matches.moves(snap.id)] == words
    if snap.live:  # a pass that is not forced is refused
        with pytest.raises(BadMove):
            await lobby.play(snap.id, ALICE if snap.state.to_move() == 0 else BOB, "pass")


async def test_resign_and_finished_matches_refuse_moves(lobby: Lobby) -> None:
    snap = await pvp(lobby)
    with pytest.raises(NotInMatch):
        await lobby.resign(snap.id, CAROL)
    snap = await lobby.resign(snap.id, BOB)
    assert snap.match.result == "0" and snap.match.termination == "resign"
    with pytest.raises(MatchOver):
        await lobby.play(snap.id, ALICE, "4")
    with pytest.raises(MatchOver):
        await lobby.resign(snap.id, ALICE)


async def test_turn_clock_loss_and_abandon(lobby: Lobby, clock: Clock) -> None:
    never = await pvp(lobby)  # alice never moves: abandoned, unrated
    moved = await pvp(lobby)
    moved = await lobby.play(moved.id, ALICE, "4")
    moved = await lobby.play(moved.id, BOB, "4")  # alice to move again, has moved before
    clock.now += 599
    assert await lobby.expire_turns() == []
    clock.now += 2
    ended = {s.id: s for s in await lobby.expire_turns()}
    assert ended[never.id].match.status == "abandoned"
    assert ended[moved.id].match.result == "1" and ended[moved.id].match.termination == "time"
    assert [e.player.display_name for e in await lobby.leaderboard("connect4")] == ["Bob", "Alice"]


async def test_the_clock_is_stored_and_survives_a_restart(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    db = tmp_path / "clock.db"
    store = await Store.open(db, clock=clock)
    lob = Lobby(store, pool, LobbyConfig(turn_seconds=60), clock=clock)
    snap = await lob.start_pvp(ALICE, BOB, "connect4")
    snap = await lob.play(snap.id, ALICE, "4")
    snap = await lob.play(snap.id, BOB, "4")
    await store.close()
    clock.now += 61
    store = await Store.open(db, clock=clock)
    lob = Lobby(store, pool, clock=clock)
    [ended] = await lob.expire_turns()
    assert ended.match.result == "1" and ended.match.termination == "time"
    await store.close()


async def test_resume_finishes_a_game_whose_last_move_was_stored_before_a_crash(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    db = tmp_path / "crash.db"
    store = await Store.open(db, clock=clock)
    lob = Lobby(store, pool, clock=clock)
    snap = await lob.start_pvp(ALICE, BOB, "connect4")
    for i, col in enumerate("1212121"[:6]):
        snap = await lob.play(snap.id, ALICE if i % 2 == 0 else BOB, col)
    alice = snap.seats[0].player.id
    # the winning move reaches the database, then the process dies before finishing the match
    await store.matches.append_move(snap.id, 6, "1", alice, turn_deadline=None)
    await store.close()
    store = await Store.open(db, clock=clock)
    lob = Lobby(store, pool, clock=clock)
    assert await lob.resume() == []
    match = await store.matches.get(snap.id)
    assert match is not None and match.result == "0" and match.termination == "connect"
    await store.close()


async def test_farming_the_same_pair_stops_being_rated(lobby: Lobby) -> None:
    lobby.config.pair_daily_rated_cap = 2
    rated = []
    for _ in range(3):
        snap = await pvp(lobby)
        rated.append(snap.match.rated)
        await lobby.resign(snap.id, BOB)
    assert rated == [True, True, False]


async def test_listeners_see_every_committed_change(lobby: Lobby) -> None:
    seen: list[tuple[int, str]] = []

    async def listener(snap: Snapshot) -> None:
        stored = await lobby.store.matches.get(snap.id)
        assert stored is not None and stored.ply == snap.match.ply  # stored before shown
        seen.append((snap.match.ply, snap.match.status))

    lobby.listeners.append(listener)
    snap = await lobby.start_pve(ALICE, "connect4", "random", "bot")
    snap = await lobby.advance(snap.id)
    snap = await lobby.play(snap.id, ALICE, snap.state.legal_moves()[0])
    snap = await lobby.advance(snap.id)  # the lobby started the agent's reply by itself
    await lobby.resign(snap.id, ALICE)
    assert seen == [(1, "live"), (2, "live"), (3, "live"), (3, "finished")]


async def test_the_bots_reply_is_timed_from_the_persons_request(lobby: Lobby) -> None:
    """A person waits from the moment their game (or move) is stored: the agent's decision is
    asked with that time, so work that holds the event loop before the job is queued (a
    front end drawing the board) is taken from the agent's time, not added to the wait."""
    asked: list[float | None] = []
    choose = lobby.pool.choose

    async def recording(*args: Any, **kw: Any) -> Any:
        asked.append(kw.get("asked"))
        return await choose(*args, **kw)

    lobby.pool.choose = recording  # type: ignore[method-assign]
    before = time.monotonic()
    snap = await lobby.start_pve(ALICE, "connect4", "random", "bot")
    stored = time.monotonic()
    time.sleep(0.3)  # the loop is held (a board drawn) before the bot's turn can run
    snap = await lobby.advance(snap.id)
    snap = await lobby.play(snap.id, ALICE, snap.state.legal_moves()[0])
    await lobby.advance(snap.id)
    first = asked[0]
    assert len(asked) == 2 and first is not None and before <= first <= stored


async def test_unknown_games_levels_and_matches(lobby: Lobby) -> None:
    with pytest.raises(BadRequest, match="unknown game"):
        await lobby.start_pve(ALICE, "chess", "easy")
    with pytest.raises(BadRequest, match="unknown opponent 'godlike'"):
        await lobby.start_pve(ALICE, "connect4", "godlike")
    with pytest.raises(BadRequest):
        await lobby.start_pve(ALICE, "connect4", "easy", first="later")
    from lobby.errors import MatchNotFound

    with pytest.raises(MatchNotFound):
        await lobby.play(999, ALICE, "4")


async def test_a_failing_agent_falls_back_to_a_legal_move(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("agent crashed")

    monkeypatch.setattr(lobby.pool, "choose", broken)
    snap = await lobby.start_pve(ALICE, "connect4", "medium", "bot")
    snap = await lobby.advance(snap.id)
    assert snap.live and snap.match.ply == 1 and snap.seat_to_move.player.display_name == "Alice"
    assert "agent crashed" in caplog.text
