"""Fuzz run: hostile members against the real bot, through discord.py's real dispatch.

    python -m benchmarks.robustness.fuzz [--interactions 10000] [--seed S] [--json FILE]

The real bot (SQLite, the spawn worker pool, `BoardBot` and its cogs) is driven by the offline
harness (`tests/harness/`) with generated interactions:

* slash commands with options from and around the valid ones: every opponent and agent name,
  raw specs with every parameter set to nan, inf, -1, 0, 1e308, 10**21, 6000-character
  strings or Unicode digits, values of the wrong type, unknown choices;
* component clicks with custom ids from and around the templates: real buttons of other
  matches, other users and other messages, 19-20 digit numbers, Unicode digits, forged
  challenge ids; the same click many times at once;
* every limit (bot games, bot matches per member and per server, pending challenges, the pause
  between challenges of a pair) probed at exactly N and N+1.

It prints JSON. `unhandled` (an exception that escaped to discord.py or the harness),
`error_logs` (an ERROR logged) and `refused_changed_rows` (an interaction answered with a
refusal that nevertheless changed what people own: players, matches, challenges, their moves)
must be 0; `bot_moves` gives how long agents took to move (their budget + 1 s at most).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import discord

from cogs.client import BoardBot
from db.store import Store
from engine.agents import opponents, registry
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from tests.harness import Call, Harness, HarnessError, user
from tests.harness.mentions import HOSTILE_PARTS, unescaped, unsafe_mentions

ROOT = Path(__file__).resolve().parents[2]
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


def _ours(task: asyncio.Task[Any]) -> bool:
    code = getattr(task.get_coro(), "cr_code", None)
    path = getattr(code, "co_filename", "")
    return any(part in path for part in ("/lobby/", "/cogs/editor.py", "/cogs/training.py"))


class ErrorLogs(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage()[:300])


class Fuzzer:
    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.db = workdir / "fuzz.db"
        self.stats: Counter[str] = Counter()
        self.details: list[str] = []
        self.errors = ErrorLogs()
        self.people = [user(9000 + i, self.hostile_name(i)) for i in range(args.people)]
        self.mod = user(8999, "moderator", permissions=ADMIN)
        self.guilds = (700_000_000_000_000_001, 700_000_000_000_000_077)
        self.console_result: dict[str, int] = {}
        self.protocol_result: dict[str, int] = {}
        self.channels = (700_000_000_000_000_002, 700_000_000_000_000_003)

    def hostile_name(self, i: int) -> str:
        """A member's name built from hostile parts (mentions, a masked link, markdown, code
        fences), now and then 2,000 characters long; it starts with `m<i>` to stay unique."""
        parts = self.rng.sample(HOSTILE_PARTS, self.rng.randint(1, 4))
        name = f"m{i} " + " ".join(parts)
        if self.rng.random() < 0.2:
            name += " " + "x" * (2000 - len(name) - 1)
        return name

    # ------------------------------------------------------------------ set-up

    async def start(self) -> None:
        self.store = await Store.open(self.db)
        self.pool = EnginePool(workers=self.args.workers)
        await self.pool.start()
        self.lobby = Lobby(self.store, self.pool, LobbyConfig(seed=self.args.seed))
        # The clock's passes run between interactions, never during one: a refusal's check
        # then sees only what the interaction itself changed (not a challenge expiring).
        self.bot = BoardBot(self.lobby, run_clock=False)

        async def nobody_owns(_: Any) -> bool:
            return False

        self.bot.owner_check = nobody_owns  # a public server: nobody here owns the bot
        wait = 30 * self.args.time_factor  # how long one interaction's tasks may take
        self.h = await Harness.create(self.bot, raise_errors=False, ignore_task=_ours, timeout=wait)
        logging.getLogger().addHandler(self.errors)

    async def stop(self) -> None:
        logging.getLogger().removeHandler(self.errors)
        await self.h.close()
        await self.lobby.close()
        await self.pool.close()
        await self.store.close()

    # ------------------------------------------------------------------ one interaction

    async def run_one(self, what: str, act: Callable[[], Awaitable[list[Call]]]) -> None:
        """Run one interaction; classify it; check a refusal changed nothing people own."""
        before = self.fingerprint()
        errors_before = len(self.errors.records)
        try:
            calls = await act()
        except HarnessError as exc:
            self.stats["unhandled"] += 1
            self.details.append(f"{what}: {exc}"[:300])
            calls = []
        self.stats["interactions"] += 1
        self.stats[f"kind:{what}"] += 1
        members = {str(p.id) for p in self.people}  # a challenge may ping its one member
        for call in calls:
            why = unsafe_mentions(call, members)
            if why is not None:
                self.stats["unsafe_mentions"] += 1
                self.details.append(f"{what}: {why}")
            shown = unescaped(call)
            if shown:
                self.stats["unescaped_names"] += 1
                self.details.append(f"{what}: shows {shown} unescaped")
        if len(self.errors.records) > errors_before:
            self.stats["error_logs"] += len(self.errors.records) - errors_before
            self.details += [f"{what}: {r}" for r in self.errors.records[errors_before:]][:3]
        answers = [c for c in calls if c.is_callback or c.is_followup]
        if not answers:
            self.stats["unanswered"] += 1  # discord.py found no handler (a forged id)
            return
        refused = any(c.ephemeral and (c.content or "").startswith("⚠️") for c in answers)
        shown = any(not c.ephemeral and c.callback_type in (4, 5, 7) for c in answers)
        if refused and not shown:
            self.stats["refused"] += 1
            await self.quiet()
            after = self.fingerprint()
            if after != before:
                self.stats["refused_changed_rows"] += 1
                self.details.append(f"{what}: refused but {_diff(before, after)}")
        else:
            self.stats["accepted"] += 1
        await self.lobby.tick()  # the clock's pass, after the check

    async def quiet(self) -> None:
        """Wait for agents answering people (not bot matches: those run on)."""
        for _ in range(100):
            busy = [
                t
                for mid, t in list(self.lobby.turns._turns.items())  # a benchmark may look inside
                if not t.done() and self._kind(mid) != "eve"
            ]
            if not busy:
                return
            await asyncio.wait(busy, timeout=0.2)

    def _kind(self, match_id: int) -> str:
        rows = self.read("SELECT kind FROM matches WHERE id = ?", (match_id,))
        return rows[0][0] if rows else "?"

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def fingerprint(self) -> tuple[Any, ...]:
        """What people own or did: a refused request must not change any of it."""
        return tuple(
            self.read(sql)[0]
            for sql in (
                "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM players",
                "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM matches",
                "SELECT COUNT(*) FROM matches WHERE termination IN ('resign', 'stopped')",
                "SELECT COUNT(*), COALESCE(GROUP_CONCAT(id || status), '') FROM challenges",
                "SELECT COUNT(*) FROM moves m JOIN players p ON p.id = m.player_id"
                " WHERE p.kind <> 'agent'",
                # a memory other than the bot's own (learning in the background from a bot
                # match that ended meanwhile creates those, whatever was refused)
                "SELECT COUNT(*) FROM agent_memory_meta WHERE name <> 'default'",
            )
        )

    # ------------------------------------------------------------------ generators

    def person(self) -> Any:
        return self.rng.choice(self.people)

    def where(self) -> tuple[int, int]:
        return self.guilds[0], self.rng.choice(self.channels)

    def name(self, game: str) -> str:
        """An opponent name, from and around the valid ones."""
        rng = self.rng
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

    # ------------------------------------------------------------------ limits

    async def check_limits(self) -> None:
        """Each limit at exactly N (allowed) and N+1 (refused, saying which limit)."""
        cfg = self.lobby.config
        member = user(9999, "limit-tester")
        for _ in range(2):
            await self.slash("resign", {}, who=member)  # nothing live before
        probes = [
            ("bot games", cfg.max_bot_games, "play", lambda i: {"game": "connect4"}),
            (
                "bot matches",
                cfg.max_botmatches,
                "botmatch",
                lambda i: {"game": "connect4", "first": "random", "second": "random", "delay": 30},
            ),
        ]
        for label, cap, command, options in probes:
            if cap is None:
                continue
            for i in range(cap + 1):
                calls = await self.slash(command, options(i), who=member)
                refused = [c for c in calls if c.ephemeral and "limit" in (c.content or "")]
                ok = not refused if i < cap else bool(refused)
                self.stats["limits_checked"] += 1
                if not ok:
                    self.stats["limit_failures"] += 1
                    self.details.append(f"limit {label} at {i + 1}: {[c.content for c in calls]}")
        # a challenge pair: the second challenge within the pause is refused
        a, b = user(9997, "pair-a"), user(9998, "pair-b")
        first = await self.slash("challenge", {"opponent": b, "game": "connect4"}, who=a)
        again = await self.slash("challenge", {"opponent": b, "game": "connect4"}, who=a)
        self.stats["limits_checked"] += 2
        if any(c.ephemeral for c in first) or not any(
            c.ephemeral and "again in" in (c.content or "") for c in again
        ):
            self.stats["limit_failures"] += 1
            self.details.append("limit: the pause between challenges of a pair")

    # ------------------------------------------------------------------ console and protocol

    def console_line(self) -> str:
        rng = self.rng
        word = rng.choice(
            ["play", "botmatch", "challenge", "train", "as", "stats", "history", "board", "x"]
        )
        key = rng.choice(["game", "opponent", "first", "second", "delay", "games", "foo", ""])
        value = rng.choice([*HOSTILE, *GAMES, "easy", self.name("connect4")])
        noise = "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(0, 12)))
        return rng.choice(
            [f"/{word} {key}:{value}", f"/{word} {value} {noise}", noise, f"{value}", "/"]
        )

    async def fuzz_console(self, lines: int) -> dict[str, int]:
        """Console lines: each bad one prints exactly one `error:` line and changes nothing."""
        import io

        from console.dispatch import Console

        out = io.StringIO()
        console = Console(self.lobby, out, "fuzzer", False)
        counts = Counter[str]()
        for _ in range(lines):
            line = self.console_line()[:6000]
            out.seek(0)
            out.truncate()
            before = self.fingerprint()
            await console.handle(line)
            await self.quiet()
            text = out.getvalue()
            errors = sum(1 for x in text.splitlines() if x.startswith("error:"))
            counts["lines"] += 1
            counts["errors"] += errors > 0
            if errors > 1 or "Traceback" in text:
                counts["bad_replies"] += 1
                self.details.append(f"console {line[:60]!r}: {text[:200]!r}")
            if errors and self.fingerprint() != before:
                counts["refused_changed_rows"] += 1
                self.details.append(f"console {line[:60]!r} changed rows")
        await console.close(finish=False)
        return dict(counts)

    def fuzz_protocol(self, lines: int) -> dict[str, int]:
        """Engine protocol lines: exactly one reply each, `error: ...` for the bad ones."""
        from engine.agents.base import Budget
        from tools.serve import answer

        counts = Counter[str]()
        agents = {g: registry.build(registry.resolve("random", g)[0], g) for g in GAMES}
        for _ in range(lines):
            game = self.rng.choice(GAMES)
            pick = self.rng.random()
            if pick < 0.3:
                line = "".join(
                    self.rng.choice("1234567890 ") for _ in range(self.rng.randrange(50))
                )
            elif pick < 0.6:
                line = "".join(self.rng.choice("XO-xo. ") for _ in range(self.rng.randrange(70)))
            else:
                line = self.console_line()
            reply = answer(line, game, agents[game], Budget(), self.rng)
            counts["lines"] += 1
            counts["errors"] += reply.startswith("error:")
            if "\n" in reply or not reply.strip():
                counts["bad_replies"] += 1
        return dict(counts)

    # ------------------------------------------------------------------ the run

    async def run(self) -> dict[str, Any]:
        t0 = time.monotonic()
        await self.start()
        try:
            await self.check_limits()
            generators: list[tuple[str, Callable[[], Awaitable[list[Call]]], float]] = [
                ("play", self.gen_play, 3),
                ("botmatch", self.gen_botmatch, 1),
                ("challenge", self.gen_challenge, 2),
                ("train", self.gen_train, 0.5),
                ("misc", self.gen_misc, 1),
                ("click", self.gen_click, 8),
                ("forged", self.gen_forged, 3),
                ("burst", self.gen_burst, 0.3),
            ]
            weights = [w for _, _, w in generators]
            for i in range(self.args.interactions):
                what, gen, _ = self.rng.choices(generators, weights)[0]
                await self.run_one(what, gen)
                if i % 500 == 499:
                    print(f"{i + 1} interactions, {time.monotonic() - t0:.0f} s", file=sys.stderr)
            await self.quiet()
            self.console_result = await self.fuzz_console(self.args.console_lines)
            self.protocol_result = self.fuzz_protocol(self.args.protocol_lines)
        finally:
            await self.stop()
        return self.report(time.monotonic() - t0)

    def bot_moves(self) -> dict[str, Any]:
        """How long each agent took to move after its turn began (less a bot match's delay),
        against its budget's time (1 s for budgets without one) + 1 s."""
        rows = self.read(
            "SELECT m.id, m.kind, m.options, mv.ply, mv.created_at, p.kind, m.created_at"
            " FROM moves mv JOIN matches m ON m.id = mv.match_id"
            " JOIN players p ON p.id = mv.player_id ORDER BY m.id, mv.ply"
        )
        prev: dict[int, float] = {}
        waits: list[float] = []
        late = 0
        for mid, kind, options, ply, at, pkind, created in rows:
            began = prev.get(mid, created)
            prev[mid] = at
            if pkind != "agent" or (ply == 0 and kind == "eve"):
                continue
            opts = json.loads(options)
            seat = (opts.get("seats") or [None, None])[ply % 2] or {}
            budget = (seat.get("budget") or {}).get("time") or 1.0
            wait = at - began - (float(opts.get("delay", 0)) if kind == "eve" else 0.0)
            waits.append(max(0.0, wait))
            late += wait > budget + 1.0
        if not waits:
            return {"moves": 0}
        waits.sort()
        return {
            "moves": len(waits),
            "p50": round(statistics.median(waits), 3),
            "p95": round(waits[math.ceil(0.95 * len(waits)) - 1], 3),
            "max": round(waits[-1], 3),
            "over_budget_plus_1s": late,
        }

    def engine_jobs(self) -> dict[str, Any]:
        """The engine's jobs apart: how long they waited in the queue, their worker loaded the
        agent, and they ran, for jobs a person waited for (urgent) and the others (bot matches,
        training, analyses)."""
        out: dict[str, Any] = {}
        for name, urgent in (("people", True), ("background", False)):
            jobs = [t for t in self.pool.timings if t.urgent == urgent]
            out[name] = {"jobs": len(jobs)}
            for part in ("wait", "load", "run"):
                values = sorted(getattr(t, part) for t in jobs)
                if values:
                    out[name][part] = {
                        "p50": round(statistics.median(values), 3),
                        "p95": round(values[math.ceil(0.95 * len(values)) - 1], 3),
                        "max": round(values[-1], 3),
                    }
        return out

    def report(self, seconds: float) -> dict[str, Any]:
        s = self.stats
        return {
            "interactions": s["interactions"],
            "unhandled": s["unhandled"],
            "error_logs": s["error_logs"],
            "refused_changed_rows": s["refused_changed_rows"],
            "duplicate_matches": s["duplicate_matches"],
            "unsafe_mentions": s["unsafe_mentions"],
            "unescaped_names": s["unescaped_names"],
            # learned memories at the end: only the bot's own players' ("default") may exist
            "memories": [
                f"{kind}/{name}"
                for kind, name in self.read("SELECT kind, name FROM agent_memory_meta ORDER BY 1")
            ],
            "limits_checked": s["limits_checked"],
            "limit_failures": s["limit_failures"],
            "refused": s["refused"],
            "accepted": s["accepted"],
            "unanswered": s["unanswered"],
            "by_kind": {k[5:]: v for k, v in sorted(s.items()) if k.startswith("kind:")},
            "bot_moves": self.bot_moves(),
            "engine_jobs": self.engine_jobs(),
            "console": self.console_result,
            "protocol": self.protocol_result,
            "matches": self.read("SELECT COUNT(*) FROM matches")[0][0],
            "details": self.details[:20],
            "seconds": round(seconds, 1),
        }


def _diff(before: tuple[Any, ...], after: tuple[Any, ...]) -> str:
    names = ("players", "matches", "resigned/stopped", "challenges", "people's moves", "memories")
    return ", ".join(  # whole: a cut diff hides what changed
        f"{n} {a} -> {b}" for n, a, b in zip(names, before, after, strict=True) if a != b
    )


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        return await Fuzzer(args, Path(tmp)).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--interactions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the result to this file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--people", type=int, default=12)
    parser.add_argument("--console-lines", type=int, default=1000)
    parser.add_argument("--protocol-lines", type=int, default=2000)
    parser.add_argument(
        "--time-factor", type=float, default=1.0, help="how slow this machine is (tests/machine.py)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)
    result = asyncio.run(amain(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    bad = result["unhandled"] + result["error_logs"] + result["refused_changed_rows"]
    bad += result["unsafe_mentions"] + result["unescaped_names"]
    for part in ("console", "protocol"):
        bad += result[part].get("bad_replies", 0) + result[part].get("refused_changed_rows", 0)
    bad += sum(not m.endswith("/default") for m in result["memories"])
    return 0 if bad + result["limit_failures"] + result["duplicate_matches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
