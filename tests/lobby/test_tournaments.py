"""Tournaments in the lobby, on a real SQLite file: a Swiss tournament of people and bots
played to its winner, round robin and knockout; leaving forfeits and never blocks a round;
the limits, the server's settings and who may start or cancel; a restart (or a kill between
a round's start and its games) takes every tournament up where the store has it; a row that
does not decode is set aside with one warning."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import faults
from db.models import Finish
from db.store import Store
from lobby.core import Lobby, LobbyConfig, Person, Where
from lobby.errors import BadRequest, LimitReached
from lobby.pool import EnginePool
from lobby.settings import NotHere
from lobby.tournament_rounds import TournamentNews, TournamentView
from lobby.tournaments import TournamentClosed
from tests.clock import Clock

HERE = Where(guild_id=5, channel_id=50)
ADMIN = Person("user", 1, "admin")
PEOPLE = [Person("user", 10 + i, f"p{i}") for i in range(6)]
BOTS = ["easy", "random", "trainer"]


async def no_sleep(_: float) -> None:
    await asyncio.sleep(0)


async def open_lobby(path: Path, pool: EnginePool, clock: Clock, **config: object) -> Lobby:
    store = await Store.open(path, clock=clock)
    settings = LobbyConfig(seed=3, botmatch_delay=0.0, **config)  # type: ignore[arg-type]
    return Lobby(store, pool, settings, clock=clock, sleep=no_sleep)


async def shut(lobby: Lobby) -> None:
    await lobby.close()
    await lobby.store.close()


@pytest.fixture
async def lobby(tmp_path: Path, pool: EnginePool, clock: Clock) -> AsyncIterator[Lobby]:
    lob = await open_lobby(tmp_path / "t.db", pool, clock)
    yield lob
    await shut(lob)


async def settle() -> None:
    """Let the tasks the lobby started (agent turns, tournament steps) run out."""
    me = asyncio.current_task()
    for _ in range(2000):
        busy = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
        if not busy:
            return
        await asyncio.wait(busy, timeout=0.05)
    raise AssertionError(f"tasks still running: {busy}")


async def play_round(lobby: Lobby, tournament_id: int, rng: random.Random) -> TournamentView:
    """Every live game of the current round ends: bots play theirs out, in the others a
    person (chosen at random) resigns."""
    view = await lobby.tournaments.view(tournament_id)
    for g in view.current():
        if g.match_id is None or g.outcome is not None:
            continue
        snap = await lobby.snapshot(g.match_id)
        if not snap.live:
            continue
        people = [s for s in snap.seats if not s.is_agent]
        if not people:
            await lobby.run_botmatch(snap.id)
            continue
        loser = rng.choice(people).player
        assert loser.discord_id is not None
        await lobby.resign(snap.id, Person("user", loser.discord_id, loser.display_name))
    await settle()
    return await lobby.tournaments.view(tournament_id)


async def enter_everyone(lobby: Lobby, people: list[Person], bots: list[str]) -> None:
    for p in people:
        await lobby.tournaments.join(p, HERE)
    for name in bots:
        await lobby.tournaments.enter(name, HERE, ADMIN, admin=True)


async def test_a_swiss_tournament_of_people_and_bots_is_played_to_its_winner(
    lobby: Lobby,
) -> None:
    news: list[TournamentNews] = []

    async def listen(n: TournamentNews) -> None:
        news.append(n)

    lobby.tournaments.listeners.append(listen)
    created = await lobby.tournaments.create(ADMIN, HERE, "connect4", "swiss", rounds=3)
    assert created.tournament.status == "open"
    await enter_everyone(lobby, PEOPLE[:5], BOTS)
    started = await lobby.tournaments.start(HERE, ADMIN, admin=False)  # the creator
    assert started.tournament.status == "running" and started.tournament.rounds == 3
    first_round = [n for n in news if n.boards]
    assert len(first_round[0].boards) == 4  # 8 players: four games, each a board to show
    for snap in first_round[0].boards:
        assert snap.match.channel_id == 50 and snap.match.options["tournament"][0] == created.id
    rng = random.Random(5)
    for _ in range(3):
        view = await play_round(lobby, created.id, rng)
    assert view.tournament.status == "finished"
    assert view.winner == view.placings[0].name
    games = [g for g in view.games]
    assert len(games) == 12 and all(g.outcome in ("first", "second", "draw") for g in games)
    pairs = [frozenset((g.first_id, g.second_id)) for g in games]
    assert len(set(pairs)) == len(pairs)  # nobody met twice
    assert sum(p.score for p in view.placings) == 12
    # every game was a normal match of the tournament's channel; people's games are rated
    for g in games:
        assert g.match_id is not None
        snap = await lobby.snapshot(g.match_id)
        assert snap.match.status == "finished"
        assert snap.match.rated == (snap.match.kind != "eve")
    assert any(n.view.tournament.status == "finished" for n in news)


async def test_leaving_forfeits_the_game_being_played_and_every_game_after(lobby: Lobby) -> None:
    t = await lobby.tournaments.create(ADMIN, HERE, "connect4", "round-robin")
    await enter_everyone(lobby, PEOPLE[:3], ["random"])
    await lobby.tournaments.start(HERE, ADMIN, admin=True)
    view = await lobby.tournaments.view(t.id)
    leaver = PEOPLE[0]
    me = await lobby.player_for(leaver)
    [mine] = [g for g in view.current() if me.id in (g.first_id, g.second_id)]
    await lobby.tournaments.leave(leaver, HERE)
    await settle()
    view = await lobby.tournaments.view(t.id)
    [mine] = [g for g in view.games if (g.round, g.board) == (mine.round, mine.board)]
    assert mine.outcome == ("second" if mine.first_id == me.id else "first")
    assert mine.match_id is not None
    snap = await lobby.snapshot(mine.match_id)
    assert snap.match.termination == "resign"
    rng = random.Random(1)
    for _ in range(5):
        if view.tournament.status != "running":
            break
        view = await play_round(lobby, t.id, rng)
    assert view.tournament.status == "finished" and view.tournament.round == 3
    theirs = [g for g in view.games if me.id in (g.first_id, g.second_id)]
    assert len(theirs) == 3  # round robin keeps their games: each one lost
    assert all(g.outcome == ("second" if g.first_id == me.id else "first") for g in theirs)
    assert view.winner is not None and view.winner != "p0"
    with pytest.raises(BadRequest, match="no tournament in this channel"):
        await lobby.tournaments.join(PEOPLE[5], HERE)  # over: none here now
    assert [p.left for p in view.placings if p.player_id == me.id] == [True]


async def test_a_knockout_seeds_the_bracket_and_a_draw_sends_the_second_player_through(
    lobby: Lobby,
) -> None:
    t = await lobby.tournaments.create(ADMIN, HERE, "connect4", "knockout")
    await enter_everyone(lobby, PEOPLE[:3], ["easy", "random"])
    view = await lobby.tournaments.start(HERE, ADMIN, admin=True)
    assert view.tournament.rounds == 3
    first = view.current()
    byes = [g for g in first if g.second_id is None]
    assert len(byes) == 3 and all(g.outcome == "bye" for g in byes)  # 5 players, 8 places
    rng = random.Random(2)
    while view.tournament.status == "running":
        view = await play_round(lobby, t.id, rng)
    final = [g for g in view.games if g.round == 3]
    assert len(final) == 1 and view.winner is not None


def players(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as con:
        count: int = con.execute("SELECT COUNT(*) FROM players").fetchone()[0]
        return count


async def test_a_player_who_leaves_before_the_start_is_out_and_the_limits_hold(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    lobby = await open_lobby(
        tmp_path / "l.db", pool, clock, max_tournament_players=3, max_tournaments=2
    )
    try:
        await lobby.tournaments.create(ADMIN, HERE, "connect4", "swiss")
        with pytest.raises(BadRequest, match="one at a time"):
            await lobby.tournaments.create(ADMIN, HERE, "othello", "swiss")
        await lobby.tournaments.create(ADMIN, Where(5, 51), "othello", "knockout")
        with pytest.raises(LimitReached, match="2 tournaments"):
            await lobby.tournaments.create(ADMIN, Where(5, 52), "othello", "knockout")
        for p in PEOPLE[:3]:
            await lobby.tournaments.join(p, HERE)
        before = players(tmp_path / "l.db")
        with pytest.raises(TournamentClosed, match="full"):
            await lobby.tournaments.join(PEOPLE[3], HERE)
        with pytest.raises(TournamentClosed, match="full"):
            await lobby.tournaments.enter("hard", HERE, ADMIN, admin=True)
        assert players(tmp_path / "l.db") == before  # neither newcomer was stored
        with pytest.raises(TournamentClosed, match="already"):
            await lobby.tournaments.join(PEOPLE[0], HERE)
        view = await lobby.tournaments.leave(PEOPLE[0], HERE)
        assert [p.name for p in view.placings] == ["p1", "p2"]
        await lobby.tournaments.join(PEOPLE[3], HERE)
        with pytest.raises(BadRequest, match="creator or a server manager"):
            await lobby.tournaments.start(HERE, PEOPLE[1], admin=False)
        with pytest.raises(BadRequest, match="creator or a server manager"):
            await lobby.tournaments.enter("easy", HERE, PEOPLE[1], admin=False)
        with pytest.raises(BadRequest, match="creator or a server manager"):
            await lobby.tournaments.cancel(HERE, PEOPLE[1], admin=False)
        await lobby.tournaments.start(HERE, PEOPLE[2], admin=True)
        with pytest.raises(TournamentClosed, match="started"):
            await lobby.tournaments.join(PEOPLE[4], HERE)
        for bad in ({"fmt": "ladder"}, {"rounds": 0}, {"rounds": 3, "fmt": "knockout"},
                    {"clock": 5.0}, {"start_minutes": 0.0}, {"game": "chess"}):  # fmt: skip
            args = {"game": "connect4", "fmt": "swiss", **bad}
            with pytest.raises(BadRequest):
                await lobby.tournaments.create(ADMIN, Where(5, 53), **args)  # type: ignore[arg-type]
    finally:
        await settle()
        await shut(lobby)


async def test_the_servers_settings_hold_for_tournaments(lobby: Lobby) -> None:
    await lobby.change_settings(5, ADMIN, {"channels": [51], "levels": ["easy"]})
    with pytest.raises(NotHere):
        await lobby.tournaments.create(ADMIN, HERE, "connect4", "swiss")
    there = Where(5, 51)
    await lobby.tournaments.create(ADMIN, there, "connect4", "swiss")
    with pytest.raises(BadRequest, match="medium level is not offered"):
        await lobby.tournaments.enter("medium", there, ADMIN, admin=True)
    await lobby.tournaments.enter("easy", there, ADMIN, admin=True)


async def test_cancelling_ends_its_live_games_unrated(lobby: Lobby) -> None:
    t = await lobby.tournaments.create(ADMIN, HERE, "connect4", "swiss")
    await enter_everyone(lobby, PEOPLE[:4], [])
    view = await lobby.tournaments.start(HERE, ADMIN, admin=True)
    ids = [g.match_id for g in view.current() if g.match_id is not None]
    assert len(ids) == 2
    view = await lobby.tournaments.cancel(HERE, ADMIN, admin=False)
    await settle()
    assert view.tournament.status == "cancelled" and view.winner is None
    for match_id in ids:
        snap = await lobby.snapshot(match_id)
        assert snap.match.status == "abandoned" and snap.match.termination == "stopped"
    assert (await lobby.tournaments.view(t.id)).tournament.round == 1  # no round after it
    with pytest.raises(BadRequest, match="no tournament in this channel"):
        await lobby.tournaments.standings(HERE)


async def test_a_restart_takes_every_tournament_up_where_the_store_has_it(
    tmp_path: Path, pool: EnginePool, clock: Clock
) -> None:
    path = tmp_path / "r.db"
    lobby = await open_lobby(path, pool, clock)
    t = await lobby.tournaments.create(ADMIN, HERE, "connect4", "swiss", rounds=2)
    await enter_everyone(lobby, PEOPLE[:4], [])
    view = await lobby.tournaments.start(HERE, ADMIN, admin=True)
    # round 1: one game ends while the bot runs, the other while it is down
    a, b = [g.match_id for g in view.current()]
    assert a is not None and b is not None
    snap = await lobby.snapshot(a)
    loser = snap.seats[0].player
    await lobby.resign(a, Person("user", loser.discord_id or 0, loser.display_name))
    await settle()
    await shut(lobby)
    # the other game ends with the bot down (as if the kill came right after its finish)
    store = await Store.open(path, clock=clock)
    match = await store.matches.get(b)
    assert match is not None
    await store.matches.commit_step(
        b, match.ply, (), finish=Finish("finished", "draw", "board_full", None)
    )
    await store.close()

    lobby = await open_lobby(path, pool, clock)
    news: list[TournamentNews] = []

    async def listen(n: TournamentNews) -> None:
        news.append(n)

    lobby.tournaments.listeners.append(listen)
    try:
        await lobby.resume()
        await lobby.tournaments.resume()
        await settle()
        view = await lobby.tournaments.view(t.id)
        assert view.tournament.round == 2  # round 2 paired and started after the restart
        assert [len(n.boards) for n in news] == [2]
        # a kill between a game's match and its link: the match is found, not started twice
        [g, _] = view.current()
        assert g.match_id is not None
        async with lobby.store.connection.write("test") as conn:
            await conn.execute(
                "UPDATE tournament_games SET match_id = NULL WHERE tournament_id = ?"
                " AND round = 2 AND board = ?",
                (t.id, g.board),
            )
    finally:
        await settle()
        await shut(lobby)
    lobby = await open_lobby(path, pool, clock)
    try:
        await lobby.resume()
        await lobby.tournaments.resume()
        view = await lobby.tournaments.view(t.id)
        relinked = next(x for x in view.current() if x.board == g.board)
        assert relinked.match_id == g.match_id
        live = await lobby.store.matches.live_ids()
        assert len(live) == 2
    finally:
        await settle()
        await shut(lobby)


async def test_a_tournament_row_that_does_not_decode_is_set_aside_with_one_warning(
    lobby: Lobby, caplog: pytest.LogCaptureFixture
) -> None:
    t = await lobby.tournaments.create(ADMIN, HERE, "connect4", "swiss")
    await lobby.tournaments.create(ADMIN, Where(5, 51), "connect4", "swiss")
    async with lobby.store.connection.write("test") as conn:
        await conn.execute("UPDATE tournaments SET rounds = 'many' WHERE id = ?", (t.id,))
    with caplog.at_level(logging.WARNING, logger="db.rows"):
        await lobby.tournaments.resume()
        await lobby.tournaments.resume()
        with pytest.raises(BadRequest):
            await lobby.tournaments.standings(HERE)  # set aside: not this channel's any more
        assert (await lobby.tournaments.standings(Where(5, 51))).tournament.status == "open"
    warnings = [r for r in caplog.records if "does not decode" in r.getMessage()]
    assert len(warnings) == 1 and "tournaments" in warnings[0].getMessage()


async def test_a_scheduled_start_comes_with_the_clocks_sweep(lobby: Lobby, clock: Clock) -> None:
    t = await lobby.tournaments.create(ADMIN, HERE, "connect4", "knockout", start_minutes=10)
    lone = await lobby.tournaments.create(ADMIN, Where(5, 51), "othello", "swiss", start_minutes=5)
    await enter_everyone(lobby, PEOPLE[:2], ["random"])
    await lobby.tournaments.sweep()
    assert (await lobby.tournaments.view(t.id)).tournament.status == "open"
    clock.now += 601
    await lobby.tournaments.sweep()
    await settle()
    assert (await lobby.tournaments.view(t.id)).tournament.status == "running"
    assert (await lobby.tournaments.view(lone.id)).tournament.status == "cancelled"  # nobody came


async def test_a_busy_or_lost_write_postpones_a_step_and_the_sweep_takes_it_up(
    lobby: Lobby,
) -> None:
    t = await lobby.tournaments.create(ADMIN, HERE, "connect4", "swiss", rounds=2)
    await enter_everyone(lobby, PEOPLE[:4], [])
    try:
        # the link of the first game is stored but its answer lost; round 2's writes (one
        # after each game's end) find the database busy
        faults.reset(
            "fail:write:link_tournament_game:1:lost,fail:write:tournament_round:2:locked,"
            "fail:write:tournament_round:3:locked"
        )
        await lobby.tournaments.start(HERE, ADMIN, admin=True)
        await lobby.tournaments.sweep()  # the start's step was postponed: taken up
        view = await lobby.tournaments.view(t.id)
        assert [g.match_id is not None for g in view.current()] == [True, True]
        assert len(await lobby.store.matches.live_ids()) == 2  # none started twice
        view = await play_round(lobby, t.id, random.Random(3))
        assert view.tournament.round == 1  # the write of round 2 failed: postponed
        await lobby.tournaments.sweep()
        await settle()
        assert (await lobby.tournaments.view(t.id)).tournament.round == 2
    finally:
        faults.reset("")
