"""The bot under test in a chaos run (`benchmarks/robustness/chaos.py` starts and kills it).

The real bot: `bot.build_lobby` (the database guard, SQLite, the spawn worker pool, the lobby)
and `BoardBot` with its cogs, driven through discord.py's real dispatch by the offline harness
(`tests/harness/`). Discord itself is the harness's fake, whose messages are streamed
to the driver as they change (before the bot sees the response), so the driver always knows
what Discord shows, even after a kill.

The database is the SQLite file `--db` or the PostgreSQL database `--database-url`; with
PostgreSQL the bot keeps its guard as `bot.py` does (`watch`: taken again after a server
restart, or the bot stops with one line).

Discord's guilds and channels (`--layout`, JSON `{"guilds": {guild: [channel, ...]},
"deleted": [...], "removed": [...], "refused": [...]}`) are announced with GUILD_CREATE at the
start; edits in a deleted channel get 404 (Unknown Channel), in a removed guild's or a refused
channel 403 (Missing Access), as Discord answers them.

Protocol: JSON lines. In (stdin), each with an `id`: `slash`, `click`, `delete` (a message is
deleted in Discord), `fail` (the next N requests of a kind fail as Discord would),
`disconnect` / `resumed` (the gateway), `refuse` (every edit in a channel fails with 403 from
now on), `channel_delete` / `guild_delete` (the gateway's CHANNEL_DELETE, GUILD_DELETE),
`layout` (new channels: a GUILD_CREATE again), `quit`. Out (stdout): `ready`, `msg` / `del`
(Discord's messages), `done` (a request's outcome), `fault` (a BOARDBOT_FAULT rule fired, or a
failure injected here), `refused` (the first refused edit in a channel), `gone` (a board the
bot gave up), `guard_lost` (the bot stopped: its database guard was lost), `error`.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import json
import logging
import os
import random
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import discord

import faults
from benchmarks.robustness.stacks import background, dump_tasks_on_sigusr1
from boot.settings import Config
from bot import build_lobby, shut_down
from cogs.client import BoardBot
from tests.harness import DEFAULT_GUILD_ID, Call, Harness, HarnessError, http_error, user
from tests.harness.payloads import resume_snowflakes

CALLBACK = ("POST", "/interactions/{webhook_id}/{webhook_token}/callback")
EDIT = ("PATCH", "/channels/{channel_id}/messages/{message_id}")
ROUTES = {"callback": CALLBACK, "edit": EDIT}
ADMIN_ROLE = 4242  # the bot's admin role in its home server (the harness's default server)


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class Messages(dict[int, Any]):
    """Discord's messages: every change is sent to the driver before the bot sees it."""

    def __setitem__(self, key: int, value: Any) -> None:
        super().__setitem__(key, value)
        emit({"ev": "msg", "msg": value})

    def pop(self, key: int, *default: Any) -> Any:
        found = key in self
        value = super().pop(key, *default)
        if found:
            emit({"ev": "del", "id": key})
        return value


class Child:
    def __init__(
        self, bot: BoardBot, harness: Harness, seed: int, edit_failure: float, layout: Any
    ) -> None:
        self.bot = bot
        self.h = harness
        self.rng = random.Random(seed)
        self.edit_failure = edit_failure
        self.fail_next: dict[tuple[str, str], list[tuple[int, int]]] = {}
        self.guilds: dict[int, list[int]] = {}
        #: Channels whose edits Discord refuses: (status, code) by channel.
        self.refused: dict[int, tuple[int, int]] = {}
        self.reported: set[int] = set()  # channels whose first refusal was reported
        self.apply_layout(layout)
        for key in (CALLBACK, EDIT):
            harness.responders[key] = self._responder(key)

    def apply_layout(self, layout: Any) -> None:
        """Where the bot is and what Discord refuses (see the module's docstring)."""
        self.guilds = {int(g): [int(c) for c in cs] for g, cs in layout.get("guilds", {}).items()}
        for cid in layout.get("deleted", ()):
            self.refused[int(cid)] = (404, 10003)  # Unknown Channel
        for cid in (*layout.get("removed", ()), *layout.get("refused", ())):
            self.refused[int(cid)] = (403, 50001)  # Missing Access

    async def announce(self) -> None:
        """GUILD_CREATE for each guild the bot is in, as Discord sends at a connection (and
        again for channels made since: a guild already known is only refreshed)."""
        # A copy: a removal (another request) may change the guilds while the bot handles one.
        for gid, channels in list(self.guilds.items()):
            await self.h.gateway("GUILD_CREATE", self.h.guild_payload(gid, channels))

    def _refusal(self, call: Call) -> tuple[int, int] | None:
        channel = int(call.path_params.get("channel_id") or 0)
        refusal = self.refused.get(channel)
        if refusal is not None and channel not in self.reported:
            self.reported.add(channel)
            emit({"ev": "refused", "channel": channel, "at": time.time()})
        return refusal

    def _responder(self, key: tuple[str, str]) -> Any:
        default = self.h._webhook_response if key == CALLBACK else None

        def respond(call: Call) -> Any:
            refusal = self._refusal(call) if key == EDIT else None
            if refusal is not None:
                raise http_error(*refusal, "injected by the chaos run")
            queue = self.fail_next.get(key)
            if queue:
                status, code = queue.pop(0)
                raise http_error(status, code, "injected by the chaos run")
            if key == EDIT and self.rng.random() < self.edit_failure:
                status = self.rng.choice((500, 429))
                emit({"ev": "fault", "point": "edit", "kind": str(status)})
                raise http_error(status, 0, "injected by the chaos run")
            del self.h.responders[key]  # the harness's own answer
            try:
                if default is not None:
                    rec = self.h._interactions.get(call.path_params.get("webhook_token", ""))
                    return default(call, rec, call.json or {}, call.files)
                return self.h._http_response(call, call.json or {}, call.files)
            finally:
                self.h.responders[key] = respond

        return respond

    def person(self, uid: int, admin: bool = False) -> Any:
        if not admin:
            return user(uid, f"p{uid}")
        perms = discord.Permissions(manage_guild=True, manage_messages=True)
        return user(uid, f"p{uid}", permissions=perms.value | 0x400 | 0x800, roles=[ADMIN_ROLE])

    async def handle(self, req: dict[str, Any]) -> None:
        rid, op = req.get("id"), req["op"]
        out: dict[str, Any] = {"ev": "done", "id": rid}
        try:
            if op == "slash":
                options = dict(req.get("options") or {})
                for key, value in list(options.items()):
                    if isinstance(value, dict) and "user" in value:
                        options[key] = self.person(value["user"])
                gid = int(req.get("guild") or self.h.guild_id)
                data = self.h._command_data(req["name"], options)
                payload = self.h.interaction_payload(
                    2,
                    data,
                    user=self.person(req["user"], req.get("admin", False)),
                    guild_id=gid,
                    channel_id=req.get("channel"),
                )
                calls = await self.h.dispatch(payload)
                mine = int(payload["id"])  # other requests run meanwhile: keep this one's
                out["calls"] = [_summary(c) for c in calls if c.interaction_id == mine]
            elif op == "click":
                calls = await self.h.click(
                    req["message"],
                    req["custom_id"],
                    user=self.person(req["user"], req.get("admin", False)),
                    values=req.get("values"),
                    expect_response=False,
                )
                out["calls"] = [_summary(c) for c in calls]
            elif op == "delete":
                self.h.messages.pop(int(req["message_id"]), None)
            elif op == "disconnect":  # the gateway connection dropped (discord.py's event)
                self.bot.dispatch("disconnect")
            elif op == "resumed":  # and came back
                await self.h.gateway("RESUMED", {})
            elif op == "refuse":  # the bot lost access to a channel: every edit there fails
                self.refused[int(req["channel"])] = (403, 50001)
            elif op == "channel_delete":
                await self.h.gateway("CHANNEL_DELETE", _channel(req["guild"], req["channel"]))
                self.refused[int(req["channel"])] = (404, 10003)
            elif op == "guild_delete":  # the bot was removed from the guild
                gid = int(req["guild"])
                await self.h.gateway("GUILD_DELETE", {"id": str(gid)})
                for cid in self.guilds.pop(gid, []):
                    self.refused[cid] = (403, 50001)
            elif op == "layout":
                self.apply_layout(req["layout"])
                await self.announce()
            elif op == "fail":
                key = ROUTES[req["kind"]]
                self.fail_next.setdefault(key, []).extend(
                    [(int(req["status"]), int(req["code"]))] * int(req.get("times", 1))
                )
        except HarnessError as exc:
            kind = "spec_errors" if type(exc).__name__ == "SpecError" else "unhandled"
            out["error"] = f"{type(exc).__name__}: {exc}"[:500]
            emit({"ev": "error", "kind": kind, "text": out["error"]})
        except Exception as exc:  # report, keep serving
            out["error"] = f"{type(exc).__name__}: {exc}"[:500]
            emit({"ev": "error", "kind": "unhandled", "text": out["error"]})
        emit(out)


def _channel(guild: int, channel: int) -> dict[str, Any]:
    """A text channel as the gateway describes it (CHANNEL_DELETE's payload)."""
    return {
        "id": str(channel),
        "type": 0,
        "guild_id": str(guild),
        "name": "a channel",
        "position": 0,
        "permission_overwrites": [],
    }


class _GoneBoards(logging.Handler):
    """Boards the editor gave up for good (refused, deleted): the driver leaves them out of
    the checks of what boards show (nothing can show those matches any more)."""

    GONE = re.compile(r"the board of match (\d+) is gone")

    def emit(self, record: logging.LogRecord) -> None:
        found = self.GONE.search(record.getMessage())
        if found:
            emit({"ev": "gone", "match": int(found.group(1))})


class _ErrorLogs(logging.Handler):
    """Every ERROR the bot logs is reported (a correct bot logs none in a chaos run)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            tb = exc.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            where = f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb else ""
            text += f": {type(exc).__name__}: {exc}{where}"
        emit({"ev": "error", "kind": "error_logs", "text": text[:500]})


def _summary(call: Call) -> dict[str, Any]:
    return {
        "route": call.route,
        "method": call.method,
        "type": call.callback_type,
        "ephemeral": call.ephemeral,
        "content": (call.content or "")[:200],
        "message_id": _message_id(call.response),
    }


def _message_id(response: Any) -> str | None:
    """The message a request made or changed, from the fake Discord's answer."""
    if not isinstance(response, dict):
        return None
    if "resource" in response:  # an interaction callback
        message = response["resource"].get("message") or {}
        found = message.get("id") or response["interaction"].get("response_message_id")
    else:
        found = response.get("id")
    return None if found is None else str(found)


async def run(args: argparse.Namespace) -> int:
    _dump_stacks_on_signals()
    faults.observers.append(lambda point, kind: emit({"ev": "fault", "point": point, "kind": kind}))
    config = Config(
        db_path=args.db or ":memory:",
        database_url=args.database_url or None,
        workers=args.workers,
        turn_seconds=args.turn_seconds,
        resume_grace=args.grace,
        job_seconds=args.job_seconds * args.time_factor,
        challenge_seconds=args.challenge_seconds,
        # The limits on what one member may start are the fuzz run's subject, not this one's.
        max_bot_games=0,
        max_botmatches=0,
        max_guild_botmatches=0,
        max_pending_challenges=0,
        challenge_cooldown=0,
    )
    lobby, guard = await build_lobby(config)
    bot = BoardBot(lobby, run_clock=True, home_guild=DEFAULT_GUILD_ID, admin_role=ADMIN_ROLE)

    async def nobody_owns(_: Any) -> bool:
        return False

    bot.owner_check = nobody_owns  # the harness's Discord has no application owner
    known = json.loads(Path(args.discord).read_text()) if args.discord else {}
    messages = {int(k): v for k, v in known.items()}
    # Discord's ids never repeat: this process's fake Discord counts on from the last one.
    resume_snowflakes(max(messages, default=None))

    class StreamingHarness(Harness):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            self.messages = Messages()

    h = await StreamingHarness.create(
        bot,
        messages=messages,
        timeout=60.0 * args.time_factor,
        raise_errors=False,
        ignore_task=background,
    )
    child = Child(bot, h, args.seed, args.edit_failure, json.loads(args.layout or "{}"))
    await child.announce()
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    pending: set[asyncio.Task[None]] = set()
    lost = asyncio.Event()

    def guard_lost(why: str) -> None:  # as bot.py: two bots would run the same clocks
        emit({"ev": "guard_lost", "text": why})
        lost.set()

    async def serve() -> None:
        while True:
            line = await reader.readline()
            if not line:
                return
            req = json.loads(line)
            if req["op"] == "quit":
                return
            task = asyncio.ensure_future(child.handle(req))
            pending.add(task)
            task.add_done_callback(pending.discard)

    # Both made before any request: a request's settle waits for every task made after it
    # began (a read of its own per line would hold it until the next line came).
    watching = asyncio.ensure_future(guard.watch(guard_lost))
    serving, stopping = asyncio.ensure_future(serve()), asyncio.ensure_future(lost.wait())
    emit({"ev": "ready", "pid": os.getpid()})
    await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    serving.cancel()
    stopping.cancel()
    watching.cancel()
    await asyncio.gather(*pending, watching, return_exceptions=True)
    await h.close()
    await shut_down(lobby, guard)
    emit({"ev": "bye"})
    return 3 if lost.is_set() else 0


def _dump_stacks_on_signals() -> None:
    """SIGUSR1: every task's stack; SIGUSR2: every thread's, even when the loop is stuck."""
    dump_tasks_on_sigusr1()
    faulthandler.register(signal.SIGUSR2, file=sys.stderr, all_threads=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default="", help="the SQLite file")
    parser.add_argument("--database-url", default="", help="or a PostgreSQL database")
    parser.add_argument("--layout", default="", help="Discord's guilds and channels (JSON)")
    parser.add_argument("--discord", default="")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--turn-seconds", type=float, default=20.0)
    parser.add_argument("--grace", type=float, default=8.0)
    parser.add_argument("--job-seconds", type=float, default=10.0)
    parser.add_argument("--challenge-seconds", type=float, default=20.0)
    parser.add_argument("--edit-failure", type=float, default=0.03)
    parser.add_argument(
        "--time-factor", type=float, default=1.0, help="the job ceiling and request wait times"
    )
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(process)d %(levelname)s:%(name)s:%(message)s",
    )
    logging.getLogger("lobby.pool").setLevel(logging.INFO)  # worker starts, for the timeline
    logging.getLogger().addHandler(_ErrorLogs())
    logging.getLogger("cogs.editor").addHandler(_GoneBoards(logging.WARNING))
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
