"""The chaos run's driver, its core (`chaos.py` says what the run does): the bot's
process (started, read, killed), Discord's messages and places as the driver knows them, and
reads of the bot's database (SQLite, or PostgreSQL through `chaos_pg.py`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import sqlite3
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.robustness.chaos_rows import Planted
from tests.harness.payloads import DEFAULT_GUILD_ID

if TYPE_CHECKING:
    from benchmarks.robustness.chaos_pg import PgChaos

ROOT = Path(__file__).resolve().parents[2]
FOOTER = re.compile(r"^Match #(\d+) · \S+ · \w+ · ply (\d+)$")
SET_ASIDE = re.compile(r"match (\d+) set aside")
TO_PLAY = re.compile(r"\*\*(p\d+)\*\* to play(?!.*thinking)")
#: Guilds the bot is removed from get ids from here on (the home guild stays).
OTHER_GUILDS = 720_000_000_000_000_000
CHANNELS = 700_000_000_000_100_000


class ChildDied(Exception):
    pass


@dataclass
class Board:
    """A match as Discord shows it (parsed from its message)."""

    match_id: int
    ply: int
    message: dict[str, Any]
    live: bool
    to_play: int | None  # the person whose turn it is (user id), None if an agent's or over
    inputs: list[tuple[str, list[str] | None]]  # enabled (custom id, select values)
    resign: str | None
    stop: str | None = None  # a bot match's Stop button
    channel: int = 0


async def sleep_until(when: float) -> None:
    await asyncio.sleep(max(0.0, when - time.monotonic()))


def parse_board(msg: dict[str, Any]) -> Board | None:
    embeds = msg.get("embeds") or []
    if not embeds:
        return None
    footer = FOOTER.match(((embeds[0].get("footer") or {}).get("text")) or "")
    if footer is None:
        return None
    text = embeds[0].get("description") or ""
    who = TO_PLAY.search(text)
    inputs: list[tuple[str, list[str] | None]] = []
    resign = stop = None
    for row in msg.get("components") or []:
        for c in row.get("components") or []:
            cid = c.get("custom_id", "")
            if c.get("disabled"):
                continue
            if cid.startswith("c4:"):
                inputs.append((cid, None))
            elif cid.startswith("ot:"):
                inputs.append((cid, [o["value"] for o in c.get("options") or []]))
            elif cid.startswith("rs:"):
                resign = cid
            elif cid.startswith("st:"):
                stop = cid
    live = "to play" in text
    return Board(
        int(footer[1]),
        int(footer[2]),
        msg,
        live,
        int(who[1][1:]) if who else None,
        inputs,
        resign,
        stop,
        int(msg.get("channel_id") or 0),
    )


@dataclass
class Core:
    """What the driver knows and its link to the bot's process."""

    args: argparse.Namespace
    workdir: Path
    rng: random.Random
    db: Path = field(init=False)
    messages: dict[int, dict[str, Any]] = field(default_factory=dict)
    history: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # old board copies
    shown: dict[int, dict[int, str]] = field(default_factory=dict)  # match -> ply -> board
    idle: dict[int, tuple[int, int]] = field(default_factory=dict)  # match -> (user, from ply)
    faults: Counter[str] = field(default_factory=Counter)
    violations: Counter[str] = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)
    restarts: list[tuple[float, float]] = field(default_factory=list)  # (down at, ready at)
    #: Rows planted undecodable while the bot was down (left out of the checks).
    planted: Planted = field(default_factory=Planted)
    pg: PgChaos | None = None  # the PostgreSQL server (`--database postgresql`)
    #: Discord's guilds (guild -> its channels the driver still uses); the home guild first.
    guilds: dict[int, list[int]] = field(default_factory=dict)
    deleted: set[int] = field(default_factory=set)  # channels deleted
    removed: set[int] = field(default_factory=set)  # channels of guilds the bot left
    refused: set[int] = field(default_factory=set)  # channels whose every edit is refused
    #: Channel -> since when the bot could know it cannot show anything there (the delete,
    #: the removal, the first refused edit).
    unreachable: dict[int, float] = field(default_factory=dict)
    _next_channel: int = 0
    #: Until when the database is restarting (and settling): boards may lag meanwhile.
    db_down_until: float = 0.0
    carried: list[str] = field(default_factory=list)  # faults a death of the bot came before
    #: (match, stored ply) -> since when the board showed an older ply, while the bot ran.
    behind_since: dict[tuple[int, int], float] = field(default_factory=dict)
    frozen: set[tuple[int, int]] = field(default_factory=set)
    #: (from, to) wall-clock spans while nobody could move: a gateway outage, a stopped bot.
    outages: list[tuple[float, float]] = field(default_factory=list)
    away: bool = False  # an outage now: people cannot click
    _away_from: float = 0.0
    gone: set[int] = field(default_factory=set)  # matches whose board the bot gave up
    kills: int = 0
    actions: int = 0
    refusals: int = 0
    started_requests: int = 0
    proc: asyncio.subprocess.Process | None = None
    _futures: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _ids: int = 0
    _reader: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _died: asyncio.Event = field(default_factory=asyncio.Event)
    _down_at: float | None = None
    _side: set[asyncio.Task[None]] = field(default_factory=set)
    retry: list[tuple[str, ...]] = field(default_factory=list)  # starts a kill interrupted
    deleted_boards: set[int] = field(default_factory=set)  # messages the driver deleted
    _t0: float = 0.0
    planned: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.db = self.workdir / "chaos.db"
        home = [self.new_channel() for _ in range(max(2, self.args.channels * 2 // 3))]
        other = [self.new_channel() for _ in range(max(1, self.args.channels - len(home)))]
        self.guilds = {DEFAULT_GUILD_ID: home, OTHER_GUILDS: other}

    def new_channel(self) -> int:
        self._next_channel += 1
        return CHANNELS + self._next_channel

    def layout(self) -> dict[str, Any]:
        """Discord's guilds and channels as the bot's process is told them."""
        return {
            "guilds": {str(g): cs for g, cs in self.guilds.items()},
            "deleted": sorted(self.deleted),
            "removed": sorted(self.removed),
            "refused": sorted(self.refused),
        }

    def places(self) -> list[tuple[int, int]]:
        """Where people start matches: (guild, channel)."""
        return [(g, c) for g, cs in self.guilds.items() for c in cs]

    async def start_child(self, fault: str = "") -> None:
        state = self.workdir / "discord.json"
        state.write_text(json.dumps({str(k): v for k, v in self.messages.items()}))
        env = {**os.environ, "BOARDBOT_FAULT": fault, "PYTHONUNBUFFERED": "1"}
        self._ready.clear()
        self._died.clear()
        database = ("--database-url", self.pg.url) if self.pg else ("--db", str(self.db))
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.robustness.chaos_child",
            *database,
            "--layout",
            json.dumps(self.layout()),
            "--discord",
            str(state),
            "--seed",
            str(self.rng.randrange(2**31)),
            "--workers",
            str(self.args.workers),
            "--turn-seconds",
            str(self.args.turn_seconds),
            "--grace",
            str(self.args.grace),
            "--time-factor",
            str(self.args.time_factor),
            env=env,
            cwd=ROOT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=open(self.workdir / "child.log", "ab"),  # noqa: SIM115 (kept for the run)
            limit=2**24,
        )
        self._reader = asyncio.ensure_future(self._read(self.proc))
        ready = asyncio.ensure_future(self._ready.wait())
        died = asyncio.ensure_future(self._died.wait())
        wait = 120 * self.args.time_factor
        await asyncio.wait({ready, died}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        died.cancel()
        if not self._ready.is_set():
            if not self._died.is_set():
                raise RuntimeError(f"the bot did not start in {wait:.0f} s; see child.log")
            await self.wait_down()
            if self.proc is not None and self.proc.returncode not in (137, -9):
                self.violations["startup_failed"] += 1
                self.details.append(f"the bot exited with {self.proc.returncode} while starting")
                raise RuntimeError(f"the bot exited with {self.proc.returncode}; see child.log")
            # killed while starting (the hook fired during resume)
            self.note("the bot died while starting; starting it again")
            return await self.start_child()
        ready_at = time.time()
        if self._down_at is not None:
            self.restarts.append((self._down_at, ready_at))
            self._down_at = None

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while True:
            line = await proc.stdout.readline()
            if not line:
                break
            ev = json.loads(line)
            kind = ev["ev"]
            if kind == "msg":
                self._on_message(ev["msg"])
            elif kind == "del":
                self.messages.pop(int(ev["id"]), None)
            elif kind == "done":
                fut = self._futures.pop(ev["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(ev)
            elif kind == "fault":
                self.faults[f"{ev['point']}:{ev['kind']}"] += 1
            elif kind == "ready":
                self._ready.set()
            elif kind == "gone":
                self.gone.add(int(ev["match"]))
            elif kind == "refused":  # the bot met the first refused edit in that channel
                self.unreachable.setdefault(int(ev["channel"]), float(ev["at"]))
            elif kind == "guard_lost":  # nobody else holds it in this run: it must re-take
                self.violations["guard_lost"] += 1
                self.details.append(f"the bot stopped: {ev['text']}")
            elif kind == "error":
                self._on_error(ev["kind"], ev["text"])
        await proc.wait()
        self._down_at = time.time()
        for fut in self._futures.values():
            if not fut.done():
                fut.set_exception(ChildDied())
        self._futures.clear()
        self._died.set()

    def _on_error(self, kind: str, text: str) -> None:
        aside = SET_ASIDE.match(text)
        if kind == "error_logs" and aside and int(aside[1]) in self.planted.matches:
            self.faults["planted_match_set_aside"] += 1  # the ERROR that names it: expected
            return
        self.violations[kind] += 1
        self.details.append(f"{kind}: {text}")

    def _on_message(self, msg: dict[str, Any]) -> None:
        mid = int(msg["id"])
        old = self.messages.get(mid)
        if old is not None and old.get("components"):
            self.history.setdefault(mid, []).append(old)
            del self.history[mid][:-3]
        self.messages[mid] = msg
        board = parse_board(msg)
        if board is not None:
            text = (msg["embeds"][0].get("description") or "").split("\n\n")[0]
            self.shown.setdefault(board.match_id, {})[board.ply] = text

    async def slash(
        self,
        name: str,
        options: dict[str, Any],
        who: int,
        where: tuple[int, int],
        admin: bool = False,
    ) -> dict[str, Any]:
        """`/name` (`"group sub"`: a subcommand) with `options`, by person `who` (one of the
        bot's admins if `admin`) in `where` (guild, channel): what the child answers."""
        return await self.request(
            {
                "op": "slash",
                "name": name,
                "options": options,
                "user": who,
                "admin": admin,
                "guild": where[0],
                "channel": where[1],
            }
        )

    async def request(self, req: dict[str, Any]) -> dict[str, Any]:
        if self.proc is None or self.proc.returncode is not None or self._died.is_set():
            raise ChildDied()
        self._ids += 1
        req["id"] = self._ids
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._futures[self._ids] = fut
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            self._futures.pop(req["id"], None)  # nobody will wait for its answer
            raise ChildDied() from None
        return await fut

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
        await self.wait_down()

    async def wait_down(self) -> None:
        if self.proc is not None:
            await self.proc.wait()
        if self._reader is not None:
            await self._reader
        if self.proc is not None and self.proc.returncode in (137, -9):
            self.kills += 1

    async def quit(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b'{"op": "quit"}\n')
            await self.proc.stdin.drain()
            await asyncio.wait_for(self.proc.wait(), 60 * self.args.time_factor)
        except (ChildDied, TimeoutError):
            self.violations["unclean_shutdown"] += 1
            await self.kill()
            return
        await self.wait_down()
        if self.proc.returncode != 0:
            self.violations["unclean_shutdown"] += 1

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of a query on the bot's database (`?` placeholders, either database)."""
        if self.pg is not None:
            return self.pg.read(sql, params)
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def live(self) -> dict[int, tuple[Any, ...]]:
        rows = self.read(
            "SELECT id, game, variant, kind, ply, turn_deadline, message_id, channel_id"
            " FROM matches WHERE status = 'live'"
            " AND id NOT IN (SELECT match_id FROM match_faults)"
        )
        return {r[0]: r for r in rows if r[0] not in self.planted.matches}

    def boards(self) -> dict[int, Board]:
        out: dict[int, Board] = {}
        for msg in list(self.messages.values()):
            board = parse_board(msg)
            if board is not None:
                out[board.match_id] = board
        return out

    def out_of_reach(self) -> set[int]:
        """Channels where nothing can be shown any more (deleted, left, refusing edits)."""
        return self.deleted | self.removed | self.refused

    def note(self, what: str) -> None:
        if self.args.verbose:
            print(f"{time.monotonic() - self._t0:7.1f} s  {what}", file=sys.stderr, flush=True)

    def _dump_child(self) -> None:
        """Ask the bot for its tasks' and threads' stacks (into its log, for the report)."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGUSR2)
                os.kill(self.proc.pid, signal.SIGUSR1)
