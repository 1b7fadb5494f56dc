"""Chaos run: the real bot killed, failed and starved at seeded points; nothing freezes or is lost.

    python -m benchmarks.chaos [--matches 200] [--kills 50] [--seed S] [--json FILE]

The bot under test runs in a subprocess (`benchmarks/chaos_child.py`: `bot.build_lobby`, the
real spawn worker pool, SQLite, `BoardBot` driven through discord.py's real dispatch by the
offline harness). This driver plays the people: it starts matches (challenges accepted or
declined, games against the bot, bot matches, one training job), clicks the boards Discord
shows (sometimes on an old copy, twice at once, or as a stranger), resigns, and lets some
clocks run out. Meanwhile it injects faults:

* kill -9 of the bot: by `BOARDBOT_FAULT=after:write:commit_step:<n>` (it dies right after a
  commit, before answering) or by SIGKILL at a random moment; then a restart on the same file;
* interaction responses failing with 404/10062, 500 and 429; board edits failing with 500/429,
  and boards of bot matches deleted (the next edit gets 404);
* a worker crash, a worker hang (a job sleeping 10x its cap), `database is locked` and
  `database or disk is full` on the k-th write, a commit whose answer is lost (stored, but the
  bot hears an error) and a write that takes 3.5 s;
* while the bot is down, undecodable rows planted beside the matches (a player, a rating, a
  point of rating history, a pending challenge already due): it must start, set them aside and
  still answer the leaderboard, stats and history (probed after each restart).

While the bot runs, a board that shows an older ply than the stored one for more than 10 s is
a `frozen_board`; a person who lost on time at a ply their board never showed is a
`lost_on_time_by_bot_fault`; a start that fails is a `startup_failed`.

After each restart it checks, within the agents' budget + 5 s, that every live match either
had its agent's move land or has a person to move with a clock and a board showing the
current ply with its inputs enabled. At the end (everything played out, a last clean restart)
it checks the database against everything Discord ever showed, and prints JSON:
`{"matches", "kills", "faults": {...}, "violations": {...}, ...}`. Every violation count is
0 on a correct bot.
"""

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
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.stacks import dump_tasks_on_sigusr1  # noqa: E402
from engine.games import new_game  # noqa: E402

FOOTER = re.compile(r"^Match #(\d+) · \S+ · \w+ · ply (\d+)$")
TO_PLAY = re.compile(r"\*\*(p\d+)\*\* to play(?!.*thinking)")
PVE_LEVELS = ("easy", "medium", "hard", "expert")
EVE_AGENTS = {
    "connect4": ("easy", "medium", "hard", "trainer", "onestep", "random"),
    "othello": ("easy", "medium", "hard", "random", "greedy-edge"),
}
FAILURES = ((404, 10062), (500, 0), (429, 0))


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
    )


@dataclass
class Plan:
    """What the driver does: the starts, in order, and when to kill."""

    starts: list[tuple[str, ...]]
    epochs: int


@dataclass
class Driver:
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
    #: Players planted with undecodable rows while the bot was down (left out of the checks).
    planted: set[int] = field(default_factory=set)
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
    deleted: set[int] = field(default_factory=set)  # messages the driver deleted
    _t0: float = 0.0
    planned: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.db = self.workdir / "chaos.db"

    # ------------------------------------------------------------------ the child

    async def start_child(self, fault: str = "") -> None:
        state = self.workdir / "discord.json"
        state.write_text(json.dumps({str(k): v for k, v in self.messages.items()}))
        env = {**os.environ, "BOARDBOT_FAULT": fault, "PYTHONUNBUFFERED": "1"}
        self._ready.clear()
        self._died.clear()
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "benchmarks" / "chaos_child.py"),
            "--db",
            str(self.db),
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
            elif kind == "error":
                self.violations[ev["kind"]] += 1
                self.details.append(f"{ev['kind']}: {ev['text']}")
        await proc.wait()
        self._down_at = time.time()
        for fut in self._futures.values():
            if not fut.done():
                fut.set_exception(ChildDied())
        self._futures.clear()
        self._died.set()

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

    # ------------------------------------------------------------------ the database

    def read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def live(self) -> dict[int, tuple[Any, ...]]:
        rows = self.read(
            "SELECT id, game, variant, kind, ply, turn_deadline, message_id FROM matches"
            " WHERE status = 'live' AND id NOT IN (SELECT match_id FROM match_faults)"
        )
        return {r[0]: r for r in rows}

    # ------------------------------------------------------------------ people

    def boards(self) -> dict[int, Board]:
        out: dict[int, Board] = {}
        for msg in list(self.messages.values()):
            board = parse_board(msg)
            if board is not None:
                out[board.match_id] = board
        return out

    async def act(self, board: Board) -> None:
        """One person's click on a board Discord shows (sometimes a mischievous one)."""
        rng = self.rng
        if board.to_play is None or not board.inputs:
            return
        idle = self.idle.get(board.match_id)
        if idle is not None and idle[0] == board.to_play and board.ply >= idle[1]:
            return  # this person has left: their clock will run out
        self.actions += 1
        who = board.to_play
        message = board.message
        roll = rng.random()
        if roll < 0.05:
            status, code = rng.choice(FAILURES)
            self.faults[f"response:{status}"] += 1
            await self.request({"op": "fail", "kind": "callback", "status": status, "code": code})
        elif roll < 0.08 and self.history.get(int(message["id"])):
            message = rng.choice(self.history[int(message["id"])])  # an old copy of the board
        elif roll < 0.10:
            who = rng.randrange(1, self.args.people + 1)  # a stranger, perhaps
        elif roll < 0.11 and board.resign is not None:
            await self._click(message, board.resign, who)
            return
        elif roll < 0.115:  # the bot loses access to a channel: its next board edit is refused
            self.faults["edit:403"] += 1
            await self.request({"op": "fail", "kind": "edit", "status": 403, "code": 50001})
        cid, values = rng.choice(board.inputs)
        value = [rng.choice(values)] if values else None
        if roll > 0.97:  # a double click
            await asyncio.gather(
                self._click(message, cid, who, value), self._click(message, cid, who, value)
            )
            return
        await self._click(message, cid, who, value)

    async def _click(
        self,
        message: dict[str, Any],
        cid: str,
        who: int,
        values: list[str] | None = None,
        *,
        admin: bool = False,
    ) -> None:
        ids = {
            c.get("custom_id")
            for row in message.get("components") or []
            for c in row.get("components") or []
        }
        if cid not in ids:
            return
        result = await self.request(
            {
                "op": "click",
                "message": message,
                "custom_id": cid,
                "user": who,
                "values": values,
                "admin": admin,
            }
        )
        if any(c.get("ephemeral") for c in result.get("calls") or []):
            self.refusals += 1

    async def start(self, what: tuple[str, ...], channel: int, retry: list[Any]) -> None:
        """Start one thing of the plan. A person whose request failed tries again (up to
        three times); one whose request a kill interrupted tries after the restart."""
        try:
            for _ in range(3):
                if await self._start(what, channel):
                    return
                self.faults["start_retried"] += 1
        except (ChildDied, asyncio.CancelledError):  # the kill came first
            retry.append(what)
            raise

    async def _start(self, what: tuple[str, ...], channel: int) -> bool:
        """One attempt; whether it got where it meant to (a board, or a declined invite)."""
        rng = self.rng
        self.started_requests += 1
        kind = what[0]
        a, b = rng.sample(range(1, self.args.people + 1), 2)
        if kind == "pvp":
            game = what[1]
            result = await self.slash(
                "challenge", {"opponent": {"user": b}, "game": game}, a, channel
            )
            invite = self._message_of(result)
            msg = self.messages.get(invite) if invite is not None else None
            if msg is None or not msg.get("components"):
                return False
            await asyncio.sleep(rng.uniform(0, 0.3))
            answer = what[2] if len(what) > 2 else "accept"
            if answer == "expire":
                return True  # nobody answers: the challenge expires
            prefix = "ch:a" if answer == "accept" else "ch:d"
            ids = [
                c["custom_id"]
                for row in msg.get("components") or []
                for c in row.get("components") or []
                if c.get("custom_id", "").startswith(prefix)
            ]
            if not ids:
                self.details.append(f"driver: invite without buttons: {msg.get('components')}")
                return False
            await self._click(msg, ids[0], b)
            after = self.messages.get(int(msg["id"])) or {}
            if answer != "accept":
                return not after.get("components")
            board = parse_board(after)
            if board is not None and rng.random() < self.args.idle:
                self.idle[board.match_id] = (rng.choice((a, b)), rng.randrange(2, 20))
            return board is not None
        if kind == "pve":
            game, level = what[1], what[2]
            options = {"game": game, "opponent": level, "first": "random"}
            return self._message_of(await self.slash("play", options, a, channel)) is not None
        if kind == "eve":
            game, first, second = what[1], what[2], what[3]
            options = {"game": game, "first": first, "second": second, "delay": 1.0}
            board_id = self._message_of(await self.slash("botmatch", options, a, channel))
            if board_id is not None and rng.random() < 0.15:
                self._side.add(asyncio.ensure_future(self._delete_later(board_id)))
            return board_id is not None
        options = {"game": "connect4", "agent": "trainer", "games": 3000}
        result = await self.slash("train", options, a, channel, admin=True)
        return self._message_of(result) is not None

    async def slash(
        self, name: str, options: dict[str, Any], who: int, channel: int, admin: bool = False
    ) -> dict[str, Any]:
        return await self.request(
            {
                "op": "slash",
                "name": name,
                "options": options,
                "user": who,
                "admin": admin,
                "channel": channel,
            }
        )

    async def _delete_later(self, message_id: int) -> None:
        await asyncio.sleep(self.rng.uniform(2, 6))
        try:
            self.deleted.add(message_id)
            await self.request({"op": "delete", "message_id": message_id})
            self.faults["board_deleted"] += 1
        except ChildDied:
            pass

    @staticmethod
    def _message_of(result: dict[str, Any]) -> int | None:
        for call in result.get("calls") or []:
            mid = call.get("message_id")
            if mid:
                return int(mid)
        return None

    # ------------------------------------------------------------------ after a restart

    async def check_restart(self) -> None:
        """Within budget + 5 s every live match has its agent's move landing, or a person to
        move with a clock and a board showing the current ply with its inputs enabled."""
        limit = time.monotonic() + self.args.settle
        at_start = self.live()
        while True:
            if self._died.is_set():
                # The kill hook fired inside the check (an early `after:write:...`): this start
                # is over; the next one is checked in its place.
                self.faults["killed_during_check"] += 1
                return
            problems = []
            live = self.live()
            boards = self.boards()
            for mid, row in live.items():
                ply, deadline = row[4], row[5]
                board = boards.get(mid)
                if deadline is None:  # an agent is to move
                    if ply == at_start.get(mid, row)[4]:
                        problems.append(f"match {mid}: the agent's move did not land")
                    continue
                if board is None or board.ply != ply or not board.live or not board.inputs:
                    shown = None if board is None else (board.ply, board.live, len(board.inputs))
                    problems.append(f"match {mid}: board shows {shown}, stored ply {ply}")
            if not problems:
                return
            if time.monotonic() > limit:
                self.violations["restart_not_converged"] += len(problems)
                self._dump_child()
                late = await self._converged_after(at_start, limit + 30)
                self.details += [f"{p} ({late})" for p in problems[:5]]
                return
            await asyncio.sleep(0.2)

    def plant_corrupt_rows(self) -> None:
        """While the bot is down, an undecodable row in each table a start, a clock pass or a
        listing reads beside the matches: a player, a rating, a point of rating history and a
        pending challenge already due (expired at the start). The bot must start and set each
        aside (a WARNING), never stop."""
        now = time.time()
        base = 9_100_000_000_000 + 10 * len(self.planted)
        con = sqlite3.connect(self.db, timeout=30)
        try:
            with con:
                insert = (
                    "INSERT INTO players (kind, discord_id, display_name, created_at,"
                    " updated_at) VALUES ('user', ?, 'planted', ?, ?) RETURNING id"
                )
                good = con.execute(insert, (base, now, now)).fetchone()[0]
                bad = con.execute(insert, (base + 1, "long ago", now)).fetchone()[0]
                rating = (
                    "INSERT INTO ratings (player_id, game, mu, sigma, games, wins, updated_at)"
                    " VALUES (?, 'connect4', ?, 1, 1, 1, ?)"
                )
                con.execute(rating, (good, "high", now))  # the rating does not decode
                con.execute(rating, (bad, 30.0, now))  # its player does not
                [(match,)] = con.execute("SELECT MIN(id) FROM matches").fetchall()
                if match is not None:
                    con.execute(
                        "INSERT INTO rating_history (player_id, game, match_id, mu, sigma,"
                        " games, at) VALUES (?, 'connect4', ?, 25, 8, 1, 'then')",
                        (good, match),
                    )
                con.execute(
                    "INSERT INTO challenges (game, challenger_id, opponent_id, created_at,"
                    " expires_at) VALUES ('connect4', ?, ?, 'yesterday', ?)",
                    (good, bad, now - 1),
                )
        finally:
            con.close()
        self.planted |= {good, bad}
        self.faults["corrupt_rows_planted"] += 4

    async def outage(self, epoch: int, kill_at: float) -> None:
        """A gateway outage (disconnect, then resume) or a stopped bot process (SIGSTOP, then
        SIGCONT: its clock's next pass comes late), longer than a turn's clock. Nobody can move
        meanwhile, so nobody may lose on time for it."""
        await asyncio.sleep(max(0.0, (kill_at - time.monotonic()) * self.rng.uniform(0.1, 0.4)))
        gap = self.args.turn_seconds * self.rng.uniform(1.2, 2.5)
        stop = (epoch // 3) % 2 == 1
        self.away, self._away_from = True, time.time()
        try:
            if stop and self.proc is not None and self.proc.returncode is None:
                self.faults["outage:stopped"] += 1
                os.kill(self.proc.pid, signal.SIGSTOP)
                try:
                    await asyncio.sleep(gap)
                finally:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.proc.pid, signal.SIGCONT)
            else:
                self.faults["outage:gateway"] += 1
                await self.request({"op": "disconnect"})
                await asyncio.sleep(gap)
                await self.request({"op": "resumed"})
        except ChildDied:
            pass
        finally:
            self.end_outage()

    def end_outage(self) -> None:
        if self.away:
            self.outages.append((self._away_from, time.time()))
            self.away = False

    async def probe_listings(self, channel: int) -> None:
        """The leaderboard and a member's stats answer, whatever rows were planted (an
        undecodable row is left out of a listing, never a reason to fail it)."""
        who = self.rng.randrange(1, self.args.people + 1)
        for name, options in (
            ("leaderboard", {"game": "connect4", "scope": "global"}),
            ("stats", {}),
            ("history", {}),
        ):
            try:
                result = await self.slash(name, options, who, channel)
            except ChildDied:
                return
            calls = result.get("calls") or []
            refused = [c for c in calls if c["ephemeral"] and c["content"].startswith("⚠️")]
            if result.get("error") or refused or not calls:
                self.violations["listing_failed"] += 1
                self.details.append(f"/{name}: {result.get('error') or refused[:1]}")

    async def watch_frozen_boards(self) -> None:
        """While the bot runs: a live match whose board shows an older ply than the stored one
        for more than 10 s (the agent's move landed, or a person's, but nobody can see it) is a
        frozen board. Time while the bot is down does not count."""
        limit = 10.0 * self.args.time_factor
        while True:
            await asyncio.sleep(0.5)
            if not self._ready.is_set() or self._died.is_set() or self.away:
                self.behind_since.clear()  # a restart shows every board again
                continue
            now = time.monotonic()
            boards = self.boards()
            behind = set()
            for mid, row in self.live().items():
                board = boards.get(mid)
                if board is None or row[6] in self.deleted or board.ply >= row[4]:
                    continue
                key = (mid, row[4])
                behind.add(key)
                since = self.behind_since.setdefault(key, now)
                if now - since > limit and key not in self.frozen:
                    self.frozen.add(key)
                    self.violations["frozen_board"] += 1
                    self.details.append(f"match {mid}: board at ply {board.ply}, stored {row[4]}")
            for key in set(self.behind_since) - behind:
                del self.behind_since[key]

    def _dump_child(self) -> None:
        """Ask the bot for its tasks' and threads' stacks (into its log, for the report)."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGUSR2)
                os.kill(self.proc.pid, signal.SIGUSR1)

    async def _converged_after(self, at_start: dict[int, Any], until: float) -> str:
        """For the report: how long after the settle limit the agents' moves did land."""
        t0 = time.monotonic()
        while time.monotonic() < until:
            stuck = [
                m
                for m, row in self.live().items()
                if row[5] is None and row[4] == at_start.get(m, row)[4]
            ]
            if not stuck:
                return f"landed {time.monotonic() - t0:.1f} s after the limit"
            await asyncio.sleep(0.2)
        return "still not landed 30 s after the limit"

    async def check_final_boards(self) -> None:
        """Every match's message shows the match as stored: its last ply, ended or not."""
        limit = time.monotonic() + self.args.settle
        while True:
            rows = self.read("SELECT id, status, ply, message_id, termination FROM matches")
            problems = []
            for mid, status, ply, message_id, termination in rows:
                if message_id in self.deleted or termination == "unreachable" or mid in self.gone:
                    continue  # its message was deleted, or refused the bot: it cannot show it
                board = parse_board(self.messages.get(message_id) or {})
                if board is None or board.ply != ply or board.live != (status == "live"):
                    shown = None if board is None else (board.ply, board.live)
                    problems.append(f"match {mid} ({status}, ply {ply}): board shows {shown}")
            if not problems:
                return
            if time.monotonic() > limit:
                self.violations["board_not_converged"] += len(problems)
                self.details += problems[:5]
                return
            await asyncio.sleep(0.2)

    # ------------------------------------------------------------------ the run

    def plan(self) -> Plan:
        n = self.args.matches
        share = {"pvp_c4": 0.4, "pvp_oth": 0.2, "pve": 0.2}
        counts = {k: max(1, round(v * n)) for k, v in share.items()}
        counts["eve"] = max(1, n - sum(counts.values()))
        self.planned = {
            "pvp": counts["pvp_c4"] + counts["pvp_oth"],
            "pve": counts["pve"],
            "eve": counts["eve"],
        }
        starts = self.starts_of(counts)
        extra = max(2, n // 10)
        starts += [("pvp", "connect4", "decline")] * (extra // 2)
        starts += [("pvp", "othello", "expire")] * (extra - extra // 2)
        self.rng.shuffle(starts)
        starts.insert(self.rng.randrange(len(starts) // 2 + 1), ("train",))
        return Plan(starts, self.args.kills + 1)

    def starts_of(self, counts: dict[str, int]) -> list[tuple[str, ...]]:
        starts: list[tuple[str, ...]] = []
        starts += [("pvp", "connect4")] * counts.get("pvp_c4", 0)
        starts += [("pvp", "othello")] * counts.get("pvp_oth", 0)
        for i in range(counts.get("pve", 0)):
            game = ("connect4", "othello")[i % 2]
            starts.append(("pve", game, PVE_LEVELS[i % len(PVE_LEVELS)]))
        for i in range(counts.get("eve", 0)):
            game = ("connect4", "othello")[i % 2]
            first, second = self.rng.sample(EVE_AGENTS[game], 2)
            if game == "connect4" and i % 4 == 0:
                first = "trainer"  # learning matches
            starts.append(("eve", game, first, second))
        return starts

    def top_up(self) -> list[tuple[str, ...]]:
        """Starts for the matches the plan still lacks (requests failed or cut by kills)."""
        have = dict(self.read("SELECT kind, COUNT(*) FROM matches GROUP BY kind"))
        missing = {k: max(0, v - have.get(k, 0)) for k, v in self.planned.items()}
        return self.starts_of(
            {"pvp_c4": missing["pvp"], "pve": missing["pve"], "eve": missing["eve"]}
        )

    def fault_rules(self, epoch: int) -> str:
        """The injected rules of one run of the bot (the kill hook on every other run)."""
        rng = self.rng
        rules = []
        if epoch % 2 == 1:
            rules.append(f"after:write:commit_step:{rng.randrange(3, 60)}")
        # Six faults in turn, each meeting both kinds of kill over twelve runs of the bot.
        pick = (epoch + epoch // 6) % 6
        # Each run of the bot meets its fault before its kill: early in short runs; in long
        # ones past the first jobs, so that it does not land inside the restart's own check
        # (that check is about the restart; a worker fault has its own recovery to show).
        jobs, writes = ((1, 8), (2, 25)) if self.args.epoch_seconds[1] < 8 else ((10, 40), (10, 60))
        if pick == 0:
            rules.append(f"crash:job:{rng.randrange(*jobs)}")
        elif pick == 1:
            rules.append(f"hang:job:{rng.randrange(*jobs)}")
        elif pick == 2:  # a commit stored, its answer lost: shown as stored, never frozen
            rules.append(f"fail:write:commit_step:{rng.randrange(*writes)}:lost")
        elif pick == 3:  # a write slower than Discord's 3 s to answer
            rules.append(f"fail:write:{rng.randrange(*writes)}:slow")
        elif pick == 4:
            rules.append(f"fail:write:{rng.randrange(*writes)}:locked")
        else:
            rules.append(f"fail:write:{rng.randrange(*writes)}:full")
        return ",".join(rules)

    async def run(self) -> dict[str, Any]:
        t0 = self._t0 = time.monotonic()
        plan = self.plan()
        per_epoch = -(-len(plan.starts) // plan.epochs)
        queue = list(plan.starts)
        channels = [700_000_000_000_100_000 + i for i in range(self.args.channels)]
        # numba's on-disk cache is built once per install (the first run compiles, tens of
        # seconds); the run measures restarts, so it starts from a built cache.
        self.note("building the engine's compiled cache")
        warm = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "from engine.warm import warm_up; warm_up()", cwd=ROOT
        )
        await warm.wait()
        watcher = asyncio.ensure_future(self.watch_frozen_boards())
        for epoch in range(plan.epochs):
            last = epoch == plan.epochs - 1
            if epoch % 2 == 1:
                self.plant_corrupt_rows()
            self.note(f"epoch {epoch}: starting the bot")
            await self.start_child("" if last else self.fault_rules(epoch))
            self.note("ready")
            if epoch:
                await self.check_restart()
                self.note("restart checked")
                await self.probe_listings(channels[0])
            todo, queue = self.retry + queue[:per_epoch], queue[per_epoch:]
            self.retry = []
            if last:
                todo += queue
            budget = self.rng.randrange(self.args.actions // 2, self.args.actions + 1)
            lo, hi = self.args.epoch_seconds
            kill_at = None if last else time.monotonic() + self.rng.uniform(lo, hi)
            outage = None
            if kill_at is not None and epoch % 3 == 2:  # every third run of the bot
                outage = asyncio.ensure_future(self.outage(epoch, kill_at))
            await self.epoch(todo, channels, budget, kill_at, drain=last)
            if outage is not None:
                outage.cancel()
                await asyncio.gather(outage, return_exceptions=True)
                self.end_outage()
            self.note("epoch played")
            if not last:
                await self.kill()
        await self.quit()
        await self.start_child()  # a last restart: every board shows how its match ended
        await self.check_restart()
        await self.check_final_boards()
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        await self.quit()
        seconds = time.monotonic() - t0
        self.final_checks()
        return self.report(seconds)

    async def epoch(
        self,
        starts: list[tuple[str, ...]],
        channels: list[int],
        budget: int,
        kill_at: float | None,
        drain: bool,
    ) -> None:
        """Start this epoch's matches and play, until the kill (or, last, until all ended)."""
        pending: set[asyncio.Task[Any]] = set()
        acting: set[int] = set()  # matches with a click in flight
        stopped: set[int] = set()
        topped = 0  # top-up rounds in the last run
        next_note = 0.0
        done_actions = 0
        deadline = time.monotonic() + self.args.drain_seconds
        give_up = None if kill_at is None else kill_at + 30
        while not self._died.is_set():
            now = time.monotonic()
            if starts and len(pending) < self.args.concurrency:
                what = starts.pop(0)
                start = self.start(what, self.rng.choice(channels), self.retry)
                pending.add(asyncio.ensure_future(start))
            boards = [
                b
                for b in self.boards().values()
                if b.live and b.to_play is not None and b.match_id not in acting
            ]
            if self.away:
                boards = []  # Discord is gone for the bot (or the bot is stopped)
            self.rng.shuffle(boards)
            for board in boards[: max(0, self.args.concurrency - len(pending))]:
                task = asyncio.ensure_future(self.act(board))
                task.add_done_callback(lambda _t, m=board.match_id: acting.discard(m))
                acting.add(board.match_id)
                pending.add(task)
                done_actions += 1
            finished = {t for t in pending if t.done()}
            for t in finished:  # a kill interrupts requests: that is the point
                exc = None if t.cancelled() else t.exception()
                if exc is not None and not isinstance(exc, ChildDied):
                    self.details.append(f"driver: {exc!r}")
            pending -= finished
            idle = not starts and not pending and not boards
            if drain and now > next_note:
                next_note = now + 5
                live = self.live()
                self.note(f"drain: {len(live)} live {sorted(r[3] for r in live.values())}")
            if drain and self.args.stop_botmatches and not starts:
                for board in self.boards().values():  # a moderator stops the bot matches
                    if board.live and board.stop is not None and board.match_id not in stopped:
                        stopped.add(board.match_id)
                        stop = self._click(board.message, board.stop, 1, admin=True)
                        pending.add(asyncio.ensure_future(stop))
            if drain and not starts and not pending and topped < 5:
                starts += self.top_up()
                topped += 1
                if starts:
                    self.faults["top_up_starts"] += len(starts)
                    continue
            if drain:
                if (idle and not self.live()) or now > deadline:
                    break
            else:
                assert kill_at is not None and give_up is not None
                if now > give_up or (now >= kill_at and (done_actions >= budget or idle)):
                    break
            await asyncio.sleep(0.02)
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def note(self, what: str) -> None:
        if self.args.verbose:
            print(f"{time.monotonic() - self._t0:7.1f} s  {what}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ the verdict

    VIOLATIONS = (
        "duplicate_matches",
        "invisible_matches",
        "live_left",
        "deleted_board_still_live",
        "set_aside",
        "ply_mismatch",
        "illegal_replay",
        "result_mismatch",
        "lost_acknowledged_moves",
        "shown_state_mismatch",
        "restart_not_converged",
        "board_not_converged",
        "rating_mismatch",
        "games_trained_mismatch",
        "early_forfeit",
        "forfeit_during_downtime",
        "integrity",
        "foreign_keys",
        "outbox_left",
        "spec_errors",
        "unhandled",
        "error_logs",
        "unclean_shutdown",
        "frozen_board",
        "listing_failed",
        "lost_on_time_by_bot_fault",
        "startup_failed",
    )

    def final_checks(self) -> None:
        v = self.violations
        for name in self.VIOLATIONS:
            v[name] += 0
        matches = self.read(
            "SELECT id, game, variant, kind, status, result, termination, rated, message_id,"
            " ply, created_at, finished_at, turn_seconds, options, player0_id, player1_id"
            " FROM matches ORDER BY id"
        )
        messages = [m[8] for m in matches]
        v["duplicate_matches"] = len(messages) - len(set(messages))
        v["invisible_matches"] = sum(
            1 for m in matches if m[8] not in self.messages and m[8] not in self.deleted
        )
        v["deleted_board_still_live"] = sum(
            1 for m in matches if m[8] in self.deleted and m[4] == "live"
        )
        v["live_left"] = sum(1 for m in matches if m[4] == "live")
        aside = self.read("SELECT match_id, reason FROM match_faults")
        v["set_aside"] = len(aside)
        self.details += [f"set aside: {r}" for r in aside[:5]]
        learned: Counter[str] = Counter()
        for m in matches:
            mid, game, variant = m[0], m[1], m[2]
            moves = self.read(
                "SELECT move, created_at FROM moves WHERE match_id = ? ORDER BY ply", (mid,)
            )
            if len(moves) != m[9]:
                v["ply_mismatch"] += 1
            state = new_game(game, variant)
            states = [(state, None)]
            try:
                for move, _ in moves:
                    parsed = state.parse_move(move)
                    state = state.play(parsed)
                    states.append((state, parsed))
            except ValueError:
                v["illegal_replay"] += 1
                continue
            outcome = state.outcome()
            if m[6] in ("connect", "board_full", "no_moves"):
                want = None if outcome is None else outcome.winner
                if outcome is None or m[5] != ("draw" if want is None else str(want)):
                    v["result_mismatch"] += 1
            elif m[4] == "finished" and outcome is not None and m[6] in ("resign", "time"):
                v["result_mismatch"] += 1  # an ended game cannot be resigned or timed out
            for ply, text in self.shown.get(mid, {}).items():
                if ply > len(moves):
                    v["lost_acknowledged_moves"] += 1
                    self.details.append(
                        f"match {mid}: Discord showed ply {ply}, stored {len(moves)}"
                    )
                    continue
                shown_state, last = states[ply]
                if shown_state.render_emoji(last=last) != text:
                    v["shown_state_mismatch"] += 1
            if m[6] in ("time", "abandon"):
                last_at = moves[-1][1] if moves else m[10]
                self._check_forfeit(mid, last_at, m[11], m[12])
            late = 2.0 * self.args.time_factor  # how much later than the bot the driver sees it
            for began, ended in self.outages:
                if m[6] == "time" and began <= m[11] < ended + self.args.grace - late:
                    self.violations["lost_on_time_by_bot_fault"] += 1
                    self.details.append(f"match {mid}: lost on time during an outage")
            if m[6] == "time" and m[5] is not None and len(moves) not in self.shown.get(mid, {}):
                # A person lost on time a turn their board never showed (the bot's fault).
                self.violations["lost_on_time_by_bot_fault"] += 1
                self.details.append(f"match {mid}: lost on time at ply {len(moves)}, never shown")
            options = json.loads(m[13])
            seats = options.get("seats") or []
            if (
                m[4] == "finished"
                and m[5] is not None
                and any(s and s.get("agent") == "trainer" for s in seats)
            ):
                learned["trainer/default"] += 1
        self._check_ratings(matches)
        self._check_memory(learned)
        [(check,)] = self.read("PRAGMA integrity_check")
        v["integrity"] = 0 if check == "ok" else 1
        v["foreign_keys"] = len(self.read("PRAGMA foreign_key_check"))
        v["outbox_left"] = len(self.read("SELECT id FROM outbox"))

    def _check_forfeit(
        self, mid: int, last_at: float, finished_at: float, turn_seconds: float
    ) -> None:
        slack = 2.0
        late = 2.0 * self.args.time_factor  # how much later than the bot the driver sees it ready
        if finished_at < last_at + turn_seconds - slack:
            self.violations["early_forfeit"] += 1
        for _down, ready in self.restarts:
            if (
                last_at < ready <= finished_at + slack
                and finished_at < ready + self.args.grace - late
            ):
                self.violations["forfeit_during_downtime"] += 1
                self.details.append(
                    f"match {mid}: forfeit at {finished_at:.1f}, restart {ready:.1f}"
                )

    def _check_ratings(self, matches: list[tuple[Any, ...]]) -> None:
        want: dict[tuple[int, str], Counter[str]] = {}
        for m in matches:
            if not m[7] or m[4] != "finished" or m[5] is None:
                continue
            for seat, pid in enumerate((m[14], m[15])):
                c = want.setdefault((pid, m[1]), Counter())
                c["games"] += 1
                if m[5] == "draw":
                    c["draws"] += 1
                elif m[5] == str(seat):
                    c["wins"] += 1
                else:
                    c["losses"] += 1
        rows = self.read("SELECT player_id, game, games, wins, draws, losses FROM ratings")
        have = {(r[0], r[1]): Counter(games=r[2], wins=r[3], draws=r[4], losses=r[5]) for r in rows}
        for key in set(want) | set(have):
            if key[0] in self.planted:
                continue  # planted undecodable, on purpose
            a, b = want.get(key, Counter()), have.get(key, Counter())
            if any(a[k] != b[k] for k in ("games", "wins", "draws", "losses")):
                self.violations["rating_mismatch"] += 1
                self.details.append(f"ratings of {key}: stored {dict(b)}, matches say {dict(a)}")

    def _check_memory(self, learned: Counter[str]) -> None:
        rows = self.read("SELECT kind, name, games_trained, meta FROM agent_memory_meta")
        seen = set()
        for kind, name, games, meta_text in rows:
            meta = json.loads(meta_text)
            key = f"{kind}/{name}"
            seen.add(key)
            matches, trained = meta.get("matches", 0), meta.get("trained", 0)
            if games != matches + trained or matches != learned[key]:
                self.violations["games_trained_mismatch"] += 1
                self.details.append(
                    f"memory {key}: games_trained {games}, meta {meta}, learning matches "
                    f"{learned[key]}"
                )
            self.faults_info = {"trained_games": trained, "learned_matches": matches}
        for key in set(learned) - seen:
            self.violations["games_trained_mismatch"] += 1
            self.details.append(f"memory {key}: {learned[key]} learning matches, no memory")

    def report(self, seconds: float) -> dict[str, Any]:
        [(matches,)] = self.read("SELECT COUNT(*) FROM matches")
        kinds = dict(self.read("SELECT kind, COUNT(*) FROM matches GROUP BY kind"))
        forfeits = dict(self.read("SELECT termination, COUNT(*) FROM matches GROUP BY termination"))
        faults = dict(sorted(self.faults.items()))
        faults["kills"] = self.kills
        return {
            "matches": matches,
            "matches_by_kind": kinds,
            "endings": forfeits,
            "kills": self.kills,
            "restarts": len(self.restarts),
            "actions": self.actions,
            "refused_clicks": self.refusals,
            "faults": faults,
            "learning": getattr(self, "faults_info", {}),
            "violations": dict(self.violations),
            "details": self.details[:20],
            "seconds": round(seconds, 1),
        }


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    dump_tasks_on_sigusr1()
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        driver = Driver(args, Path(args.workdir or tmp), random.Random(args.seed))
        if args.workdir:
            Path(args.workdir).mkdir(parents=True, exist_ok=True)
        return await driver.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the result to this file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--people", type=int, default=40)
    parser.add_argument("--channels", type=int, default=12)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--actions", type=int, default=60, help="clicks per run of the bot (at most)"
    )
    parser.add_argument("--turn-seconds", type=float, default=15.0)
    parser.add_argument("--grace", type=float, default=6.0)
    parser.add_argument("--idle", type=float, default=0.1, help="share of matches a person leaves")
    parser.add_argument("--settle", type=float, default=7.0, help="agents' budget + 5 s")
    parser.add_argument("--drain-seconds", type=float, default=240.0)
    parser.add_argument(
        "--epoch-seconds",
        type=float,
        nargs=2,
        default=(3.0, 12.0),
        help="a kill comes this long after a start (at random between the two)",
    )
    parser.add_argument("--workdir", help="keep the database and logs here")
    parser.add_argument("--verbose", action="store_true", help="a timeline on stderr")
    parser.add_argument(
        "--time-factor",
        type=float,
        default=1.0,
        help="how slow this machine is (tests/machine.py): every time above, the checks' limits"
        " and the bot's job ceiling are this many times longer (the kill moments are not)",
    )
    parser.add_argument(
        "--stop-botmatches",
        action="store_true",
        help="at the end a moderator stops the bot matches instead of watching them finish",
    )
    args = parser.parse_args(argv)
    for name in ("turn_seconds", "grace", "settle", "drain_seconds"):
        setattr(args, name, getattr(args, name) * args.time_factor)
    result = asyncio.run(amain(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0 if not any(result["violations"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
