"""What the fuzz run's members send to `/puzzle` (`fuzz.py` runs them): play, daily and stats
with games from and around the valid ones (what a forging client can send past the choices),
answers given on the puzzles shown (a real column or square, by anyone), and puzzle ids forged
around the templates. A refusal must change no row (the run's fingerprint covers the answers,
the scores and the daily posts)."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.robustness.fuzz_inputs import Inputs
from tests.harness import Call

GAMES = ["connect4", "othello", "chess", "CONNECT4", "", " ", "x" * 200, "c4", "²"]
#: Puzzle keys from and around the templates (the pool's ids, one's own blunders).
KEYS = [
    "c4-000000000000",
    "oth-ffffffffffff",
    "c4-" + "a" * 32,
    "m1.0",
    "m1.9999",
    "m" + "9" * 18 + ".1",
    "m0.0",
]


class PuzzleInputs(Inputs):
    """The /puzzle interactions of the run (in its first channel)."""

    async def gen_puzzle(self) -> list[Call]:
        """/puzzle play, daily or stats, from anyone, in either server."""
        rng = self.rng
        sub = rng.choice(["play", "play", "daily", "stats"])
        who = rng.choice(self.people)
        guild = rng.choice(self.guilds)
        if sub == "stats":
            options: Any = {"user": rng.choice(self.people)} if rng.random() < 0.5 else {}
        else:
            game = rng.choice(GAMES) if rng.random() < 0.3 else rng.choice(GAMES[:2])
            options = [{"name": "game", "type": 3, "value": game}]
        return await self.h.slash(
            f"puzzle {sub}", options, user=who, guild_id=guild, channel_id=self.channels[0],
            expect_response=False,
        )  # fmt: skip

    def puzzles(self) -> list[dict[str, Any]]:
        """The messages showing a puzzle's inputs."""
        return [
            m
            for m in self.h.messages.values()
            if any(
                c.get("custom_id", "")[:3] in ("pz:", "pq:")
                for row in m.get("components") or []
                for c in row.get("components") or []
            )
        ]

    async def gen_answer(self) -> list[Call]:
        """A real input of a puzzle shown, or a forged puzzle id on it, by anyone."""
        rng = self.rng
        shown = self.puzzles()
        if not shown:
            return await self.gen_puzzle()
        msg = json.loads(json.dumps(rng.choice(shown)))
        comps = [c for row in msg["components"] for c in row.get("components") or []]
        comp = rng.choice([c for c in comps if "custom_id" in c])
        values = None
        if comp["type"] == 3:
            values = [rng.choice(comp["options"])["value"]] if comp.get("options") else []
        if rng.random() < 0.3:  # forged: another key, or a column past the board
            key = rng.choice(KEYS)
            select = comp["type"] == 3
            comp["custom_id"] = f"pq:{key}:0" if select else f"pz:{key}:{rng.randrange(12)}"
            comp.pop("disabled", None)
        return await self.h.click(
            msg, comp["custom_id"], user=rng.choice(self.people), values=values, force=True,
            expect_response=False,
        )  # fmt: skip
