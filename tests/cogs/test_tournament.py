"""`/tournament` through discord.py's real dispatch (tests/harness): an 8-player Swiss
tournament of people and bots played to its end (people click their boards' columns, the
bots play theirs), its standings message edited as it goes, the winner announced in the
server's announcement channel; names escaped, nobody mentioned, every request within
Discord's limits; who may start or cancel, and leaving."""

from __future__ import annotations

import contextlib
import random
import sqlite3
from typing import Any

import discord

from tests.boardbot import ALICE, BOB, CAROL, column_ids
from tests.harness import DEFAULT_CHANNEL_ID, Call, assert_within_limits, http_error, user
from tests.harness.mentions import unescaped, unsafe_mentions

ADMIN = user(105, "admin", permissions=discord.Permissions(manage_guild=True, view_channel=True))
DAN = user(106, "dan")
HOSTILE = user(107, "**bold** @everyone <@&555>")
PEOPLE = [ALICE, BOB, CAROL, DAN, HOSTILE]
BOTS = ["easy", "random", "trainer"]
NEWS_ROOM = DEFAULT_CHANNEL_ID + 1


async def nobody(_: object) -> bool:
    return False  # the harness's Discord has no application owner


def reply(h: Any) -> str:
    content: str = h.last_message(ephemeral=True)["content"]
    return content


async def play_out(h: Any, bot: Any, match_id: int, rng: random.Random) -> list[Call]:
    """The people of a match click random columns of its board until it ends (the bot's
    moves come in between)."""
    by_id = {u.id: u for u in PEOPLE}
    calls: list[Call] = []
    for _ in range(200):
        snap = await bot.lobby.snapshot(match_id)
        if not snap.live:
            return calls
        seat = snap.seat_to_move
        assert not seat.is_agent, "the bot's turn ran out before the click was answered"
        message = h.messages[snap.match.message_id]
        columns = column_ids(message)
        calls += await h.click(message, rng.choice(columns), user=by_id[seat.player.discord_id])
    raise AssertionError(f"match {match_id} did not end")


async def test_an_eight_player_swiss_tournament_of_people_and_bots_is_played_to_its_end(
    env: Any,
) -> None:
    bot, h = env
    bot.owner_check = nobody
    await h.gateway("GUILD_CREATE", h.guild_payload(channel_ids=[DEFAULT_CHANNEL_ID, NEWS_ROOM]))
    calls: list[Call] = await h.slash("settings", {"announcements": f"<#{NEWS_ROOM}>"}, user=ADMIN)
    calls += await h.slash(
        "tournament create", {"game": "connect4", "format": "swiss", "rounds": 3}, user=ADMIN
    )
    standings = h.last_message(ephemeral=False)
    assert standings["embeds"][0]["title"] == "Tournament #1: Connect Four, Swiss"
    for person in PEOPLE:
        calls += await h.slash("tournament join", {}, user=person)
        assert reply(h).startswith("You are in")
    calls += await h.slash("tournament join", {}, user=ALICE)
    assert "already in that tournament" in reply(h)
    calls += await h.slash("tournament join", {"bot": "easy"}, user=ALICE)
    assert "creator or a server manager" in reply(h)
    for name in BOTS:
        calls += await h.slash("tournament join", {"bot": name}, user=ADMIN)
    calls += await h.slash("tournament start", {}, user=BOB)
    assert "creator or a server manager" in reply(h)
    calls += await h.slash("tournament start", {}, user=ADMIN)
    assert reply(h) == "Started: 8 players, 3 rounds."
    [tournament] = await bot.lobby.store.tournaments.active()
    rng = random.Random(11)
    for rnd in range(1, 4):
        view = await bot.lobby.tournaments.view(tournament.id)
        assert view.tournament.round == rnd
        games = view.current()
        assert len(games) == 4
        for g in games:
            snap = await bot.lobby.snapshot(g.match_id)
            assert snap.match.message_id in h.messages  # its board is in the channel
            assert h.messages[snap.match.message_id]["channel_id"] == str(DEFAULT_CHANNEL_ID)
            calls += await play_out(h, bot, g.match_id, rng)
        shown = h.messages[int(standings["id"])]["embeds"][0]
        if rnd < 3:  # edited live: the next round is on the standings message
            assert shown["description"].startswith(f"Round {rnd + 1} of 3.")
    view = await bot.lobby.tournaments.view(tournament.id)
    assert view.tournament.status == "finished" and view.winner is not None
    pairs = [frozenset((g.first_id, g.second_id)) for g in view.games]
    assert len(pairs) == 12 and len(set(pairs)) == 12
    shown = h.messages[int(standings["id"])]["embeds"][0]
    assert shown["description"].startswith("Finished. Winner: **")
    assert "\\*\\*bold\\*\\*" in shown["description"]  # the hostile name, escaped
    news = h.last_message(NEWS_ROOM)
    assert news["content"].startswith("🏆 **") and "tournament #1" in news["content"]
    assert (await bot.lobby.store.tournaments.get(tournament.id)).announced_at is not None
    calls += await h.slash("tournament standings", {}, user=CAROL)
    assert "no tournament in this channel" in reply(h)
    everything = h.calls
    for call in everything:
        if call.json:
            assert_within_limits(call)
        assert unsafe_mentions(call, set()) is None
    assert [bad for c in everything if (bad := unescaped(c, ("@everyone", "<@&555>")))] == []


async def test_leaving_forfeits_and_cancelling_ends_the_games(env: Any) -> None:
    bot, h = env
    bot.owner_check = nobody
    await h.slash("tournament create", {"game": "connect4", "format": "round-robin"}, user=ALICE)
    for person in (ALICE, BOB, CAROL):
        await h.slash("tournament join", {}, user=person)
    await h.slash("tournament join", {"bot": "random"}, user=ALICE)  # the creator may
    await h.slash("tournament start", {}, user=ALICE)
    assert reply(h) == "Started: 4 players, 3 rounds."
    await h.slash("tournament leave", {}, user=BOB)
    assert reply(h) == "You left: your remaining games are forfeited."
    [t] = await bot.lobby.store.tournaments.active()
    view = await bot.lobby.tournaments.view(t.id)
    bob = await bot.lobby.store.players.find_user(BOB.id)
    [theirs] = [g for g in view.current() if bob.id in (g.first_id, g.second_id)]
    assert theirs.outcome == ("second" if theirs.first_id == bob.id else "first")
    await h.slash("tournament cancel", {}, user=CAROL)
    assert "creator or a server manager" in reply(h)
    await h.slash("tournament cancel", {}, user=ADMIN)
    assert reply(h) == "Cancelled: its games end unrated."
    for g in view.current():
        snap = await bot.lobby.snapshot(g.match_id)
        assert not snap.live
    standings = h.messages[(await bot.lobby.store.tournaments.get(t.id)).message_id]
    assert standings["embeds"][0]["description"].startswith("Cancelled.")


POST = ("POST", "/channels/{channel_id}/messages")


async def start_a_tournament_of_two(h: Any) -> None:
    await h.slash("tournament create", {"game": "connect4", "format": "swiss"}, user=ADMIN)
    for person in (ALICE, BOB):
        await h.slash("tournament join", {}, user=person)
    await h.slash("tournament start", {}, user=ADMIN)


async def test_a_board_discord_failed_to_post_is_posted_again(env: Any) -> None:
    bot, h = env
    bot.owner_check = nobody
    failed: list[int] = []

    def fail_once(call: Call) -> Any:
        if not failed:
            failed.append(1)
            raise http_error(500, 0, "Discord failed")
        del h.responders[POST]  # Discord's own answer from here on
        return h._http_response(call, call.json or {}, call.files)

    h.responders[POST] = fail_once
    await start_a_tournament_of_two(h)
    [t] = await bot.lobby.store.tournaments.active()
    [game] = (await bot.lobby.tournaments.view(t.id)).current()
    snap = await bot.lobby.snapshot(game.match_id)
    assert failed and snap.live and snap.match.message_id in h.messages


async def test_a_board_that_cannot_be_posted_ends_its_game_unrated(env: Any) -> None:
    bot, h = env
    bot.owner_check = nobody

    def refuse(call: Call) -> Any:
        raise http_error(403, 50001, "Missing Access")

    h.responders[POST] = refuse
    await start_a_tournament_of_two(h)
    view = await bot.lobby.tournaments.view(1)  # over at once: its only game never started
    [game] = view.games
    snap = await bot.lobby.snapshot(game.match_id)
    assert snap.match.status == "abandoned" and snap.match.termination == "unreachable"
    assert game.outcome == "draw" and view.tournament.status == "finished"


async def test_forged_create_options_are_refused_in_one_line_or_stored_as_offered(
    env: Any,
) -> None:
    """What no client sends (the fuzz run's /tournament probes): a whole number of another
    type or a fraction, a DM, a game by one of its aliases. One plain refusal and nothing
    stored, or the game stored by its own key."""
    bot, h = env
    bot.owner_check = nobody
    game = {"name": "game", "type": 3, "value": "connect4"}
    swiss = [game, {"name": "format", "type": 3, "value": "swiss"}]
    for name, kind, value, words in (
        ("rounds", 3, "3", "rounds: 1 to 12"),
        ("rounds", 10, 2.5, "rounds: 1 to 12"),
        ("clock", 3, "x", "clock: 30 to 86400 seconds"),
        ("clock", 3, "60", "clock: 30 to 86400 seconds"),
        ("start", 3, "", "start: 1 to 10080 minutes"),
        ("start", 10, 1.5e308, "start: 1 to 10080 minutes"),
    ):
        option = {"name": name, "type": kind, "value": value}
        await h.slash("tournament create", [*swiss, option], user=ADMIN)
        assert reply(h).startswith(f"⚠️ {words}"), (option, reply(h))
    calls = await h.slash("tournament create", swiss, user=ADMIN, guild_id=None)
    assert [c.content for c in calls if c.is_callback] == [
        "⚠️ tournaments are held in a server's channels"
    ]
    assert await bot.lobby.store.tournaments.active() == []
    game["value"] = "Connect-Four"
    await h.slash("tournament create", swiss, user=ADMIN)
    [t] = await bot.lobby.store.tournaments.active()
    assert t.game == "connect4"


async def test_joining_a_started_tournament_is_refused_before_anyone_is_stored(env: Any) -> None:
    """A person or a bot's player joining after the start: refused, and neither is stored (a
    refusal changes nothing)."""
    bot, h = env
    bot.owner_check = nobody
    await start_a_tournament_of_two(h)
    assert reply(h) == "Started: 2 players, 1 round."

    def players() -> int:
        with contextlib.closing(sqlite3.connect(bot.lobby.store.path)) as con:
            count: int = con.execute("SELECT COUNT(*) FROM players").fetchone()[0]
            return count

    before = players()
    await h.slash("tournament join", {}, user=DAN)
    assert "has started" in reply(h)
    await h.slash("tournament join", {"bot": "hard"}, user=ADMIN)
    assert "has started" in reply(h)
    assert players() == before
