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
* /settings and /prefs (`fuzz_settings.py`), /puzzle and the puzzles' answers with forged
  puzzle ids (`fuzz_puzzles.py`), /tournament with hostile options and names
  (`fuzz_tournaments.py`; tournaments with a start time are started by the clock's sweep
  between interactions).

It prints JSON. `unhandled` (an exception that escaped to discord.py or the harness),
`error_logs` (an ERROR logged), `refused_changed_rows` (an interaction answered with a
refusal that nevertheless changed what people own: players, matches, challenges, their moves,
settings, puzzle answers, tournaments and their entrants), `unclear_refusals` (a refusal in
more than one answer or more than one line) and the broken rules of `tournaments` (what the
store holds at the end) must be 0; `bot_moves` gives how long agents took to move (their
budget + 1 s at most).

    python -m benchmarks.robustness.fuzz --weight tournament=10   (mostly /tournament)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.measure import write_result
from benchmarks.robustness.fuzz_figures import FINGERPRINT, bot_moves, changed, engine_jobs
from benchmarks.robustness.fuzz_inputs import ADMIN, Interactions, hostile_name
from benchmarks.robustness.fuzz_probes import check_limits, fuzz_console, fuzz_protocol
from benchmarks.robustness.fuzz_puzzles import PuzzleInputs
from benchmarks.robustness.fuzz_settings import SettingsInputs
from benchmarks.robustness.fuzz_tournaments import (
    TOURNAMENT_RULES,
    TournamentInputs,
    check_tournament_limits,
    tournament_rules,
)
from benchmarks.robustness.stacks import background
from cogs.client import BoardBot
from db.store import Store
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from tests.harness import Call, Harness, HarnessError, user
from tests.harness.mentions import unescaped, unsafe_mentions


class ErrorLogs(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage()[:300])


class Fuzzer:
    """The run: the real bot on a scratch database, the generated interactions one at a time,
    each classified and checked, then the probes, the figures and the result."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.db = workdir / "fuzz.db"
        self.stats: Counter[str] = Counter()
        self.details: list[str] = []
        self.errors = ErrorLogs()
        self.people = [user(9000 + i, hostile_name(self.rng, i)) for i in range(args.people)]
        self.mod = user(8999, "moderator", permissions=ADMIN)
        self.guilds = (700_000_000_000_000_001, 700_000_000_000_000_077)
        self.console_result: dict[str, int] = {}
        self.protocol_result: dict[str, int] = {}
        self.channels = (700_000_000_000_000_002, 700_000_000_000_000_003)
        self.limits_guild = 700_000_000_000_000_200  # the tournament limits' own server

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
        self.h = await Harness.create(
            self.bot, raise_errors=False, ignore_task=background, timeout=wait
        )
        logging.getLogger().addHandler(self.errors)
        crowd = (self.rng, self.h, self.people, self.mod, self.guilds, self.channels)
        self.settings = SettingsInputs(*crowd)
        self.puzzles = PuzzleInputs(*crowd)
        self.tournaments = TournamentInputs(*crowd)
        self.inputs = Interactions(*crowd, self.stats, self.details, self.read)

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
        warnings = [c.content or "" for c in answers if (c.content or "").startswith("⚠️")]
        refused = any(c.ephemeral and (c.content or "").startswith("⚠️") for c in answers)
        public = any(not c.ephemeral and c.callback_type in (4, 5, 7) for c in answers)
        if what != "burst" and (len(warnings) > 1 or any("\n" in w for w in warnings)):
            self.stats["unclear_refusals"] += 1
            self.details.append(f"{what}: refused in {warnings}"[:300])
        if refused and not public:
            self.stats["refused"] += 1
            await self.quiet()
            after = self.fingerprint()
            if after != before:
                self.stats["refused_changed_rows"] += 1
                self.details.append(f"{what}: refused but {changed(before, after)}")
        else:
            self.stats["accepted"] += 1
        await self.lobby.tick()  # the clock's pass, after the check
        await self.lobby.tournaments.sweep()  # and the tournaments' (their start times)

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
        return tuple(self.read(sql)[0] for _name, sql in FINGERPRINT)

    # ------------------------------------------------------------------ the run

    async def run(self) -> dict[str, Any]:
        t0 = time.monotonic()
        await self.start()
        try:
            await check_limits(self.inputs, self.lobby.config)
            await check_tournament_limits(self.inputs, self.lobby.config, self.limits_guild)
            generators: list[tuple[str, Callable[[], Awaitable[list[Call]]], float]] = [
                ("play", self.inputs.gen_play, 3),
                ("botmatch", self.inputs.gen_botmatch, 1),
                ("challenge", self.inputs.gen_challenge, 2),
                ("train", self.inputs.gen_train, 0.5),
                ("misc", self.inputs.gen_misc, 1),
                ("click", self.inputs.gen_click, 8),
                ("forged", self.inputs.gen_forged, 3),
                ("burst", self.inputs.gen_burst, 0.3),
                ("settings", self.settings.gen_settings, 0.5),
                ("prefs", self.settings.gen_prefs, 0.3),
                ("puzzle", self.puzzles.gen_puzzle, 0.5),
                ("answer", self.puzzles.gen_answer, 0.5),
                ("tournament", self.tournaments.gen_tournament, 1.5),
            ]
            weights = [self.args.weight.get(what, w) for what, _, w in generators]
            for i in range(self.args.interactions):
                what, gen, _ = self.rng.choices(generators, weights)[0]
                await self.run_one(what, gen)
                if i % 500 == 499:
                    print(f"{i + 1} interactions, {time.monotonic() - t0:.0f} s", file=sys.stderr)
            await self.quiet()
            self.console_result = await fuzz_console(
                self.lobby,
                self.rng,
                self.args.console_lines,
                self.fingerprint,
                self.quiet,
                self.details,
            )
            self.protocol_result = fuzz_protocol(self.rng, self.args.protocol_lines)
        finally:
            await self.stop()
        return self.report(time.monotonic() - t0)

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
            "unclear_refusals": s["unclear_refusals"],
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
            "bot_moves": bot_moves(self.read),
            "engine_jobs": engine_jobs(self.pool.timings),
            "console": self.console_result,
            "protocol": self.protocol_result,
            "tournaments": tournament_rules(self.read, self.lobby.config, self.details),
            "matches": self.read("SELECT COUNT(*) FROM matches")[0][0],
            "details": self.details[:20],
            "seconds": round(seconds, 1),
        }


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        return await Fuzzer(args, Path(tmp)).run()


def weight(text: str) -> tuple[str, float]:
    """`--weight KIND=W`."""
    kind, _, value = text.partition("=")
    try:
        return kind, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KIND=W, got {text!r}") from None


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
    parser.add_argument(
        "--weight",
        type=weight,
        action="append",
        default=[],
        metavar="KIND=W",
        help="how often a kind of interaction comes, against the others (by_kind names them)",
    )
    args = parser.parse_args(argv)
    args.weight = dict(args.weight)
    # Every ERROR reaches the run's count (`ErrorLogs`, on the root logger); none the screen.
    logging.basicConfig(level=logging.ERROR, handlers=[logging.NullHandler()])
    result = asyncio.run(amain(args))
    write_result(result, args.json)
    bad = result["unhandled"] + result["error_logs"] + result["refused_changed_rows"]
    bad += result["unsafe_mentions"] + result["unescaped_names"] + result["unclear_refusals"]
    bad += sum(result["tournaments"].get(k, 0) for k in TOURNAMENT_RULES)
    for part in ("console", "protocol"):
        bad += result[part].get("bad_replies", 0) + result[part].get("refused_changed_rows", 0)
    bad += sum(not m.endswith("/default") for m in result["memories"])
    return 0 if bad + result["limit_failures"] + result["duplicate_matches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
