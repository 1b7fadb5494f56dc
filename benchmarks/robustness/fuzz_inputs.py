"""What the fuzz run's hostile members send (`fuzz.py` runs it): slash commands with options from
and around the valid ones, clicks on real components by anyone, forged custom ids, bursts of the
same click, console lines; and the names the members go by."""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import discord

from engine.agents import opponents, registry
from tests.harness import Call, Harness
from tests.harness.mentions import HOSTILE_PARTS

HOSTILE: list[Any] = [
    "nan",
    "inf",
    "-inf",
    "-1",
    "0",
    "1e308",
    str(10**21),
    "x" * 6000,
    "²",
    "١٢",
    "１",
    "",
    " ",
    "None",
    "true",
    "'; DROP TABLE matches; --",
    "\x00",
    "🙂" * 50,
]
GAMES = ("connect4", "othello")
ADMIN = discord.Permissions(manage_guild=True, manage_messages=True, view_channel=True)
Read = Callable[..., list[tuple[Any, ...]]]


def hostile_name(rng: random.Random, i: int) -> str:
    """A member's name built from hostile parts (mentions, a masked link, markdown, code
    fences), now and then 2,000 characters long; it starts with `m<i>` to stay unique."""
    parts = rng.sample(HOSTILE_PARTS, rng.randint(1, 4))
    name = f"m{i} " + " ".join(parts)
    if rng.random() < 0.2:
        name += " " + "x" * (2000 - len(name) - 1)
    return name


def opponent_name(rng: random.Random, game: str) -> str:
    """An opponent name, from and around the valid ones."""
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(opponents.names(game))
    if roll < 0.6:
        return rng.choice(list(registry.AGENTS))
    if roll < 0.85:  # a raw spec with a hostile parameter value
        info = rng.choice(registry.agents_for(game))
        params = [*info.parameters(), "time", "nodes", "depth"]
        return f"{info.name}:{rng.choice(params)}={rng.choice(HOSTILE)}"
    return rng.choice(HOSTILE) or "x"


def console_line(rng: random.Random) -> str:
    """A console line from and around the commands, with hostile values and noise."""
    word = rng.choice(
        ["play", "botmatch", "challenge", "train", "as", "stats", "history", "board", "x"]
    )
    key = rng.choice(["game", "opponent", "first", "second", "delay", "games", "foo", ""])
    value = rng.choice([*HOSTILE, *GAMES, "easy", opponent_name(rng, "connect4")])
    noise = "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(0, 12)))
    return rng.choice(
        [f"/{word} {key}:{value}", f"/{word} {value} {noise}", noise, f"{value}", "/"]
    )


@dataclass(eq=False)
class Inputs:
    """A group of the run's interactions, and what they are sent with: the run's random numbers,
    the harness, the members and the moderator, the two servers and the run's two channels."""

    rng: random.Random
    h: Harness
    people: Sequence[Any]
    mod: Any
    guilds: tuple[int, int]
    channels: tuple[int, int]


@dataclass(eq=False)
class Interactions(Inputs):
    """The generated interactions, each sent through the harness as a member would; what goes
    wrong while sending (an exception, duplicate matches of a burst) is counted in `stats`."""

    stats: Counter[str]
    details: list[str]
    read: Read

    def name(self, game: str) -> str:
        """An opponent name, from and around the valid ones."""
        return opponent_name(self.rng, game)

    def person(self) -> Any:
        return self.rng.choice(self.people)

    def where(self) -> tuple[int, int]:
        return self.guilds[0], self.rng.choice(self.channels)

    async def slash(self, name: str, options: Any, who: Any | None = None) -> list[Call]:
        guild, channel = self.where()
        return await self.h.slash(
            name,
            options,
            user=who or self.person(),
            guild_id=guild,
            channel_id=channel,
            expect_response=False,
        )

    async def gen_play(self) -> list[Call]:
        game = self.rng.choice(GAMES)
        opts = {"game": game, "opponent": self.name(game)[:100] or "x"}
        if self.rng.random() < 0.3:
            opts["first"] = self.rng.choice(("me", "bot", "random"))
        if self.rng.random() < 0.1:  # a forged option the client would never send
            raw = [
                {"name": "game", "type": 3, "value": self.rng.choice([*GAMES, "chess", "²"])},
                {"name": "opponent", "type": 3, "value": self.rng.choice(HOSTILE) or "x"},
            ]
            return await self.slash("play", raw)
        return await self.slash("play", opts)

    async def gen_botmatch(self) -> list[Call]:
        game = self.rng.choice(GAMES)
        opts: dict[str, Any] = {
            "game": game,
            "first": self.name(game)[:100] or "x",
            "second": self.name(game)[:100] or "x",
        }
        if self.rng.random() < 0.3:
            delay = self.rng.choice((1.0, 30.0, 0.5, 31.0, math.nan, math.inf, -1.0, 1e308))
            raw = [{"name": k, "type": 3, "value": v} for k, v in opts.items()]
            raw.append({"name": "delay", "type": 10, "value": delay})
            return await self.slash("botmatch", raw)
        return await self.slash("botmatch", opts)

    async def gen_challenge(self) -> list[Call]:
        a, b = self.rng.sample(self.people, 2)
        if self.rng.random() < 0.1:
            b = a  # themselves
        return await self.slash("challenge", {"opponent": b, "game": self.rng.choice(GAMES)}, who=a)

    async def gen_train(self) -> list[Call]:
        game = self.rng.choice(GAMES)
        games = self.rng.choice((1, 10, 100_000, 0, -5, 10**9))
        raw = [
            {"name": "game", "type": 3, "value": game},
            {"name": "agent", "type": 3, "value": self.name(game)[:100] or "x"},
            {"name": "games", "type": 4, "value": games},
        ]
        who = self.mod if self.rng.random() < 0.5 else self.person()
        return await self.slash("train", raw, who=who)

    async def gen_misc(self) -> list[Call]:
        pick = self.rng.randrange(5)
        if pick == 0:
            scope = self.rng.choice(("server", "global", "galaxy"))
            raw = [
                {"name": "game", "type": 3, "value": self.rng.choice([*GAMES, "go"])},
                {"name": "scope", "type": 3, "value": scope},
            ]
            return await self.slash("leaderboard", raw)
        if pick == 1:
            return await self.slash("stats", {"user": self.person()})
        if pick == 2:
            return await self.slash("history", {})
        if pick == 3:
            return await self.slash("resign", {})
        return await self.slash("agents", {"game": self.rng.choice(GAMES)})

    def boards(self) -> list[dict[str, Any]]:
        return [m for m in self.h.messages.values() if m.get("components") and m.get("embeds")]

    async def gen_click(self) -> list[Call]:
        """A real component of a real message, pressed by anyone (a player or a stranger)."""
        boards = self.boards()
        if not boards:
            return await self.gen_play()
        msg = self.rng.choice(boards)
        comps = [
            c
            for row in msg["components"]
            for c in row.get("components") or []
            if "custom_id" in c and not c.get("disabled")
        ]
        if not comps:
            return []
        comp = self.rng.choice(comps)
        values = None
        if comp["type"] == 3:
            values = [self.rng.choice(comp["options"])["value"]] if comp.get("options") else []
        who = self.players_of(msg) or [self.person()]
        clicker = self.rng.choice(who) if self.rng.random() < 0.7 else self.person()
        if self.rng.random() < 0.05:
            clicker = self.mod
        return await self.h.click(
            msg, comp["custom_id"], user=clicker, values=values, force=True, expect_response=False
        )

    def players_of(self, msg: dict[str, Any]) -> list[Any]:
        text = json.dumps(msg.get("embeds"))
        return [p for p in self.people if f"**{p.name}**" in text or f" {p.name} " in text]

    async def gen_forged(self) -> list[Call]:
        """A custom id from and around the templates, on some message."""
        rng = self.rng
        boards = self.boards()
        real = [
            c["custom_id"]
            for m in boards
            for row in m["components"]
            for c in row.get("components") or []
            if "custom_id" in c
        ]
        big = rng.choice(("9" * 19, "1" * 20, "0", "²", "٣", "１２", "-1", str(2**63)))
        templates = (
            f"c4:{big}:0:3",
            f"c4:1:{big}:3",
            f"c4:1:0:{big}",
            f"ot:{big}:0:0",
            f"rs:{big}",
            f"rm:{big}",
            f"st:{big}",
            f"ch:a:{big}",
            f"ch:d:{big}",
            f"ch:a:{big}:{big}:c:{big}",
            "c4:1:0:3:extra",
            "x" * 100,
        )
        cid = rng.choice(templates) if not real or rng.random() < 0.5 else rng.choice(real)
        if real and rng.random() < 0.3:  # a real id of one match relayed from another message
            cid = rng.choice(real)
        if not boards:
            return await self.gen_play()
        # Discord relays only ids that are on the message: a forger edits its copy of it.
        msg = json.loads(json.dumps(rng.choice(boards)))
        buttons = [
            c for row in msg["components"] for c in row.get("components") or [] if c["type"] == 2
        ]
        if not buttons:
            return []
        buttons[0]["custom_id"] = cid[:100]
        buttons[0].pop("disabled", None)
        clicker = self.mod if rng.random() < 0.1 else self.person()
        return await self.h.click(msg, cid[:100], user=clicker, force=True, expect_response=False)

    async def gen_burst(self) -> list[Call]:
        """The same click twenty times at once (Accept, a column, Resign)."""
        boards = self.boards()
        if not boards:
            return await self.gen_challenge()
        msg = self.rng.choice(boards)
        comps = [
            c
            for row in msg["components"]
            for c in row.get("components") or []
            if c.get("type") == 2 and "custom_id" in c and not c.get("disabled")
        ]
        if not comps:
            return []
        comp = self.rng.choice(comps)
        who = self.players_of(msg) or [self.person()]
        clicker = self.rng.choice(who)
        results = await asyncio.gather(
            *(
                self.h.click(
                    msg, comp["custom_id"], user=clicker, force=True, expect_response=False
                )
                for _ in range(20)
            ),
            return_exceptions=True,
        )
        calls: list[Call] = []
        for r in results:
            if isinstance(r, BaseException):
                self.stats["unhandled"] += 1
                self.details.append(f"burst: {r!r}"[:300])
            else:
                calls += r
        if comp["custom_id"].startswith("ch:a:"):
            cid = int(comp["custom_id"].split(":")[2])
            made = self.read(
                "SELECT COUNT(*) FROM matches m JOIN challenges c ON c.match_id ="
                " m.id WHERE c.id = ?",
                (cid,),
            )[0][0]
            if made > 1:
                self.stats["duplicate_matches"] += 1
        self.stats["bursts"] += 1
        return calls
