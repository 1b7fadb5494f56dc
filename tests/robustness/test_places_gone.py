"""Where the bot's boards go away under live matches: the bot removed from a server, a channel
deleted (told by the gateway, or found missing when the bot connects after being away), with
the store failing meanwhile. Those matches end unrated, never on time, through discord.py's
real dispatch."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from db.errors import TransientError
from tests.boardbot import ALICE, BOB
from tests.clock import Clock
from tests.robustness.test_faults_discord import EDIT, accepted_challenge, all_matches


async def test_the_bot_removed_from_a_server_ends_its_matches_there_unrated(env: Any) -> None:
    bot, h = env
    other_guild, other_channel = 710_000_000_000_000_001, 710_000_000_000_000_002
    await h.gateway("GUILD_CREATE", h.guild_payload())
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await accepted_challenge(h)
    await h.slash(
        "play",
        {"game": "othello", "opponent": "easy"},
        user=BOB,
        guild_id=other_guild,
        channel_id=other_channel,
    )
    calls = await h.gateway("GUILD_DELETE", {"id": str(h.guild_id)})
    assert not [c for c in calls if (c.method, c.route) == EDIT]  # no board there is edited
    ended = [m for m in await all_matches(bot) if m.guild_id == h.guild_id]
    assert len(ended) == 2
    assert all(m.status == "abandoned" and m.termination == "unreachable" for m in ended)
    [live] = await bot.lobby.store.matches.live()
    assert live.guild_id == other_guild  # the bot is still in that one
    assert await bot.lobby.store.matches.unshown_finals() == []  # a restart does not try them


async def test_a_server_left_while_the_store_fails_ends_its_matches_unrated_later(
    env: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The store is down when the bot leaves a server (a database restart): nothing is lost
    on time meanwhile, no error is logged, and the clock ends the matches once it answers."""
    bot, h = env
    await h.gateway("GUILD_CREATE", h.guild_payload())
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await accepted_challenge(h)
    listing = bot.lobby.store.matches.live_ids_in
    failures = [2]

    async def down(**where: Any) -> list[int]:
        if failures[0]:
            failures[0] -= 1
            raise TransientError("connection refused: the server is restarting")
        return list(await listing(**where))

    monkeypatch.setattr(bot.lobby.store.matches, "live_ids_in", down)
    await h.gateway("GUILD_DELETE", {"id": str(h.guild_id)})
    clock.now += 700  # every person's turn is long over
    await bot.lobby.tick()  # the store still fails: postponed, and nobody loses on time
    assert all(m.status == "live" for m in await all_matches(bot))
    await bot.lobby.tick()
    ended = await all_matches(bot)
    assert len(ended) == 2
    assert all(m.status == "abandoned" and m.termination == "unreachable" for m in ended)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


async def test_a_server_left_while_the_bot_was_away_ends_its_matches_at_the_connection(
    env: Any, clock: Clock
) -> None:
    """No GUILD_DELETE reached the bot (it was stopped): READY, which lists every guild the
    bot is in (unavailable ones too), lacks the server; its matches end unrated before a
    clock can run out there, and those of a server that is only unavailable go on."""
    bot, h = env
    other_guild, other_channel = 710_000_000_000_000_005, 710_000_000_000_000_006
    await h.gateway("GUILD_CREATE", h.guild_payload())
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await h.slash(
        "play",
        {"game": "othello", "opponent": "easy"},
        user=BOB,
        guild_id=other_guild,
        channel_id=other_channel,
    )
    bot._connection.guild_ready_timeout = 0.05  # the wait for the guilds READY announces
    ready = {
        "v": 10,
        "user": h.bot_user.user_payload(),
        "guilds": [{"id": str(h.guild_id), "unavailable": True}],  # out, but the bot is in it
        "session_id": "a-new-session",
        "resume_gateway_url": "wss://gateway.example",
        "application": {"id": str(h.application_id), "flags": 0},
    }
    await h.gateway("READY", ready)

    async def settled() -> list[Any]:
        for _ in range(200):
            matches = await all_matches(bot)
            if any(m.status != "live" for m in matches):
                return matches
            await asyncio.sleep(0.05)
        return await all_matches(bot)

    matches = await settled()
    gone = [m for m in matches if m.guild_id == other_guild]
    kept = [m for m in matches if m.guild_id == h.guild_id]
    assert [(m.status, m.termination) for m in gone] == [("abandoned", "unreachable")]
    assert [m.status for m in kept] == ["live"]


async def test_a_channel_deleted_while_the_bot_was_away_ends_its_matches_at_the_connection(
    env: Any, clock: Clock
) -> None:
    """No CHANNEL_DELETE reached the bot (it was stopped): the guild Discord sends when it
    connects lacks the channel, and Discord says it is gone; its matches end unrated before
    a clock can run out, and the others go on."""
    bot, h = env
    other_channel = 710_000_000_000_000_004
    await h.gateway("GUILD_CREATE", h.guild_payload(channel_ids=[h.channel_id, other_channel]))
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await h.slash(
        "play", {"game": "connect4", "opponent": "easy"}, user=BOB, channel_id=other_channel
    )
    h.deleted_channels.add(other_channel)
    await h.gateway("GUILD_DELETE", {"id": str(h.guild_id), "unavailable": True})  # away
    guild = bot.get_guild(h.guild_id)
    guild._remove_channel(guild.get_channel(other_channel))  # a new process never cached it
    await h.gateway("GUILD_CREATE", h.guild_payload(channel_ids=[h.channel_id]))  # back
    clock.now += 700
    await bot.lobby.tick()
    matches = await all_matches(bot)
    gone = [m for m in matches if m.channel_id == other_channel]
    kept = [m for m in matches if m.channel_id == h.channel_id]
    assert [(m.status, m.termination) for m in gone] == [("abandoned", "unreachable")]
    assert [m.termination for m in kept] != ["unreachable"]  # looked up, not gone


async def test_a_guild_back_while_the_store_fails_is_looked_at_without_an_error(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, h = env
    await h.gateway("GUILD_CREATE", h.guild_payload())
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)

    async def down(guild_id: int) -> list[int]:
        raise TransientError("database is locked")

    monkeypatch.setattr(bot.lobby.store.matches, "live_channels_in", down)
    await h.gateway("GUILD_DELETE", {"id": str(h.guild_id), "unavailable": True})
    await h.gateway("GUILD_CREATE", h.guild_payload())  # an error log would fail here
    [m] = await all_matches(bot)
    assert m.status == "live"


async def test_a_deleted_channel_ends_its_matches_unrated(env: Any) -> None:
    bot, h = env
    other_channel = 710_000_000_000_000_003
    await h.gateway("GUILD_CREATE", h.guild_payload(channel_ids=[h.channel_id, other_channel]))
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    await h.slash(
        "play", {"game": "connect4", "opponent": "easy"}, user=BOB, channel_id=other_channel
    )
    deleted = {
        "id": str(h.channel_id),
        "type": 0,
        "guild_id": str(h.guild_id),
        "name": "channel-0",
        "position": 0,
        "permission_overwrites": [],
    }
    calls = await h.gateway("CHANNEL_DELETE", deleted)
    assert not [c for c in calls if (c.method, c.route) == EDIT]
    [gone] = [m for m in await all_matches(bot) if m.channel_id == h.channel_id]
    assert gone.status == "abandoned" and gone.termination == "unreachable"
    [live] = await bot.lobby.store.matches.live()
    assert live.channel_id == other_channel


# ---------------------------------------------------------------------- Discord out of reach
