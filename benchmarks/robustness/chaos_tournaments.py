"""Tournaments in the chaos run: people create one in a channel (`/tournament create`), join
it, its creator enters one of the bot's players and starts it; its games are boards like any
other, played by the people (and cut by every kill of the run, between rounds too).

The checks at the end: no tournament is left running (a round nobody paired, a game nobody
started: `tournament_stuck`), every game of an ended tournament has its outcome
(`tournament_game_open`), nobody met the same opponent twice in a Swiss or round-robin
tournament (`tournament_repeat`; the fields are small enough that it can always be avoided),
and every match marked as a tournament's game is that game's (`tournament_orphan`: a kill
between a match and its link made a second match).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from benchmarks.robustness.chaos_core import Core

#: The bot's players a tournament's creator enters, per game.
TOURNAMENT_BOTS = {"connect4": ("easy", "random", "trainer"), "othello": ("easy", "random")}
#: What the plan holds, in turn: (game, format).
KINDS = (("connect4", "swiss"), ("othello", "knockout"), ("connect4", "round-robin"))
VIOLATIONS = ("tournament_stuck", "tournament_game_open", "tournament_repeat", "tournament_orphan")


def tournament_starts(count: int) -> list[tuple[str, ...]]:
    return [("tournament", *KINDS[i % len(KINDS)]) for i in range(count)]


class TournamentPlay(Core):
    """People holding tournaments, and the checks of them (the module's docstring)."""

    async def hold_tournament(self, game: str, fmt: str, guild: int, channel: int) -> bool:
        """One attempt to create, fill and start a tournament here; whether it started."""
        rng = self.rng
        people = rng.sample(range(1, self.args.people + 1), rng.randint(3, 4))
        creator, where = people[0], (guild, channel)
        options: dict[str, Any] = {"game": game, "format": fmt}
        if fmt == "swiss":
            options["rounds"] = 2
        created = await self.slash("tournament create", options, creator, where)
        if not any(c["message_id"] and not c["ephemeral"] for c in created.get("calls") or []):
            return False  # this channel has one already, or the server has its limit
        for who in people:
            await self.slash("tournament join", {}, who, where)
        bot = {"bot": rng.choice(TOURNAMENT_BOTS[game])}
        await self.slash("tournament join", bot, creator, where, admin=True)
        await asyncio.sleep(rng.uniform(0, 0.3))
        started = await self.slash("tournament start", {}, creator, where)
        self.faults["tournament_started"] += 1
        return any("Started" in c["content"] for c in started.get("calls") or [])

    def _count_kills(self, games: list[tuple[Any, ...]]) -> None:
        """Kills while a tournament ran, and those between a round's last end and the next
        round's first start (the round was paired, or its games started, after a restart)."""
        spans: dict[int, tuple[float, float]] = {}
        for rnd, _board, _a, _b, mid, _outcome in games:
            if mid is None:
                continue
            [(created, finished)] = self.read(
                "SELECT created_at, finished_at FROM matches WHERE id = ?", (mid,)
            )
            first, last = spans.get(rnd, (created, finished or created))
            spans[rnd] = (min(first, created), max(last, finished or created))
        if not spans:
            return
        downs = [down for down, _ready in self.restarts]
        begin, end = min(s[0] for s in spans.values()), max(s[1] for s in spans.values())
        self.faults["kills_in_tournaments"] += sum(1 for d in downs if begin <= d <= end)
        for rnd, (_first, last) in spans.items():
            after = spans.get(rnd + 1)
            if after is not None:
                between = sum(1 for d in downs if last <= d <= after[0])
                self.faults["kills_between_rounds"] += between

    def tournaments_running(self) -> bool:
        rows = self.read("SELECT id FROM tournaments WHERE status = 'running'")
        return any(r[0] not in self.planted.tournaments for r in rows)

    def check_tournaments(self) -> None:
        v = self.violations
        for name in VIOLATIONS:
            v[name] += 0
        tournaments = [
            t
            for t in self.read("SELECT id, format, status FROM tournaments ORDER BY id")
            if t[0] not in self.planted.tournaments
        ]
        self.faults["tournaments"] = len(tournaments)
        self.faults["tournaments_finished"] = sum(1 for t in tournaments if t[2] == "finished")
        linked: set[int] = set()
        for tid, fmt, status in tournaments:
            games = self.read(
                "SELECT round, board, first_id, second_id, match_id, outcome"
                " FROM tournament_games WHERE tournament_id = ?",
                (tid,),
            )
            linked |= {g[4] for g in games if g[4] is not None}
            if status == "running":
                v["tournament_stuck"] += 1
                self.details.append(f"tournament {tid} still running: {games}")
            if status != "running":
                v["tournament_game_open"] += sum(1 for g in games if g[5] is None)
            if fmt in ("swiss", "round-robin"):
                met = Counter(frozenset((g[2], g[3])) for g in games if g[3] is not None)
                v["tournament_repeat"] += sum(n - 1 for n in met.values())
            self._count_kills(games)
        for mid, options in self.read("SELECT id, options FROM matches"):
            if mid in self.planted.matches:
                continue
            try:
                mark = json.loads(options).get("tournament")
            except (TypeError, ValueError, AttributeError):
                continue
            if mark is not None and mid not in linked:
                v["tournament_orphan"] += 1
                self.details.append(f"match {mid} of tournament game {mark} is not its game's")
