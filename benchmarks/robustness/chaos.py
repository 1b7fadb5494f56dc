"""Chaos run: the real bot killed, failed and starved at seeded points; nothing freezes or is lost.

    python -m benchmarks.robustness.chaos [--matches 200] [--kills 50] [--seed S] [--json FILE]
                               [--database sqlite|postgresql] [--outage-seconds LO HI]

The bot under test runs in a subprocess (`chaos_child.py`: `bot.build_lobby`, the
real spawn worker pool, `BoardBot` driven through discord.py's real dispatch by the offline
harness) on a SQLite file, or with `--database postgresql` on an embedded PostgreSQL server
this run starts (`chaos_pg.py`; offline). This driver plays the people: it starts
matches in the channels of two guilds (challenges accepted or declined, games against the
bot, bot matches, one training job, `--tournaments` tournaments of people and the bot's players:
`chaos_tournaments.py`), clicks the boards Discord shows (sometimes on an old
copy, twice at once, or as a stranger), resigns, and lets some clocks run out. Meanwhile it
injects faults:

* kill -9 of the bot: by `BOARDBOT_FAULT=after:write:commit_step:<n>` (it dies right after a
  commit, before answering) or by SIGKILL at a random moment; then a restart on the same
  database;
* interaction responses failing with 404/10062, 500 and 429; board edits failing with 500/429,
  and boards of bot matches deleted (the next edit gets 404);
* a worker crash, a worker hang (a job sleeping 10x its cap), `database is locked` and
  `database or disk is full` on the k-th write, a commit whose answer is lost (stored, but the
  bot hears an error) and a write that takes 3.5 s (each run of the bot meets one of the six;
  `write:commit_step:lost` and `write:slow` in the fault counts);
* every third run of the bot, an outage: the gateway disconnects (then resumes) or the bot's
  process is stopped (SIGSTOP, then SIGCONT: its clock's next pass comes late, a tick gap),
  the two in turn, for a length drawn log-uniform from `--outage-seconds` (default 5 s to 3
  turn clocks: the production 700 s clock is `--turn-seconds 700 --outage-seconds 5 700`, the
  production-scale run); the run's kill waits for the outage's end;
* every fifth run, from some moment every board edit in one channel is refused with 403
  (Missing Access: the bot lost access to it); and every fifth a channel with live matches is
  deleted (CHANNEL_DELETE), or the bot is removed from the second guild (GUILD_DELETE; a new
  guild takes its place), the two in turn; people use neither again;
* with PostgreSQL, every third run the server restarts (a `fast` or an `immediate` stop, down
  1-4 s) under the running bot (a fault of Discord or the database that a death of the bot
  came before is carried to the next run);
* while the bot is down, corrupt rows planted in each table it reads (`benchmarks/robustness/
  chaos_rows.py`): it must start, set them aside and still answer the leaderboard, stats and
  history (probed after each restart).

Violations: while the bot runs, a board that shows an older ply than the stored one for more
than 10 s is a `frozen_board`. A person's loss by time while the bot was at fault is a
`lost_on_time_by_bot_fault`: during an outage (or within the grace after it), at a ply their
board never showed, or in a channel out of reach (deleted, of a guild the bot left, or
refusing edits) after the bot could know it (the delete, the removal, its first refused
edit); a match there that ends otherwise than abandoned
is `unreachable_not_abandoned`. A start that fails is a `startup_failed`. With PostgreSQL,
some seconds after each server restart the driver tries to take the bot's guard lock itself
(`db/instance.py`, a short session, released at once): if it can while the bot runs, or the
bot stopped itself for a lost guard (nobody else holds it in this run), that is `guard_lost`.

After each restart it checks, within the agents' budget + 5 s, that every live match either
had its agent's move land or has a person to move with a clock and a board showing the
current ply with its inputs enabled. At the end (everything played out, a last clean restart)
it checks the database against everything Discord ever showed, and prints JSON:
`{"matches", "kills", "faults": {...}, "violations": {...}, ...}`. Every violation count is
0 on a correct bot.

The driver's parts: this module (the people and the run), `chaos_core.py` (the bot's process,
what Discord shows, reads of the database), `chaos_faults.py` (the faults), `chaos_rows.py`
(the corrupt rows), `chaos_pg.py` (the PostgreSQL server), `chaos_verdict.py` (the checks) and
`chaos_tournaments.py` (the tournaments and their checks: none left running, none with a game
without its outcome or a repeated pairing, no tournament match that is not its game's).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.measure import write_result
from benchmarks.robustness.chaos_core import Board, ChildDied, parse_board
from benchmarks.robustness.chaos_faults import Faults
from benchmarks.robustness.chaos_tournaments import TournamentPlay, tournament_starts
from benchmarks.robustness.chaos_verdict import Verdict
from benchmarks.robustness.stacks import dump_tasks_on_sigusr1
from tests.harness.payloads import DEFAULT_GUILD_ID

ROOT = Path(__file__).resolve().parents[2]
PVE_LEVELS = ("easy", "medium", "hard", "expert")
EVE_AGENTS = {
    "connect4": ("easy", "medium", "hard", "trainer", "onestep", "random"),
    "othello": ("easy", "medium", "hard", "random", "greedy-edge"),
}
FAILURES = ((404, 10062), (500, 0), (429, 0))


def _done(acting: set[int], match_id: int, _: object) -> None:
    acting.discard(match_id)


@dataclass
class Plan:
    """What the driver does: the starts, in order, and when to kill."""

    starts: list[tuple[str, ...]]
    epochs: int


@dataclass
class Driver(Faults, Verdict, TournamentPlay):
    """The people of the run, and the run itself (faults: `Faults`, checks: `Verdict`,
    tournaments: `TournamentPlay`)."""

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

    async def start(self, what: tuple[str, ...], retry: list[Any]) -> None:
        """Start one thing of the plan somewhere (training in the home guild, where the
        admins are). A person whose request failed tries again (up to three times); one whose
        request a kill interrupted tries after the restart."""
        try:
            for _ in range(3):
                places = self.places()
                if what[0] == "train":
                    places = [(DEFAULT_GUILD_ID, c) for c in self.guilds[DEFAULT_GUILD_ID]]
                if await self._start(what, *self.rng.choice(places)):
                    return
                self.faults["start_retried"] += 1
        except (ChildDied, asyncio.CancelledError):  # the kill came first
            retry.append(what)
            raise

    async def _start(self, what: tuple[str, ...], guild: int, channel: int) -> bool:
        """One attempt; whether it got where it meant to (a board, or a declined invite)."""
        rng = self.rng
        self.started_requests += 1
        kind = what[0]
        if kind == "tournament":
            return await self.hold_tournament(what[1], what[2], guild, channel)
        a, b = rng.sample(range(1, self.args.people + 1), 2)
        if kind == "pvp":
            game = what[1]
            result = await self.slash(
                "challenge", {"opponent": {"user": b}, "game": game}, a, (guild, channel)
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
            return (
                self._message_of(await self.slash("play", options, a, (guild, channel))) is not None
            )
        if kind == "eve":
            game, first, second = what[1], what[2], what[3]
            botmatch: dict[str, Any] = {
                "game": game,
                "first": first,
                "second": second,
                "delay": 1.0,
            }
            board_id = self._message_of(await self.slash("botmatch", botmatch, a, (guild, channel)))
            if board_id is not None and rng.random() < 0.15:
                self._side.add(asyncio.ensure_future(self._delete_later(board_id)))
            return board_id is not None
        training: dict[str, Any] = {"game": "connect4", "agent": "trainer", "games": 3000}
        result = await self.slash("train", training, a, (guild, channel), admin=True)
        return self._message_of(result) is not None

    async def probe_listings(self) -> None:
        """The leaderboard and a member's stats answer, whatever rows were planted (an
        undecodable row is left out of a listing, never a reason to fail it)."""
        who = self.rng.randrange(1, self.args.people + 1)
        for name, options in (
            ("leaderboard", {"game": "connect4", "scope": "global"}),
            ("stats", {}),
            ("history", {}),
        ):
            try:
                where = (DEFAULT_GUILD_ID, self.guilds[DEFAULT_GUILD_ID][0])
                result = await self.slash(name, options, who, where)
            except ChildDied:
                return
            calls = result.get("calls") or []
            refused = [c for c in calls if c["ephemeral"] and c["content"].startswith("⚠️")]
            if result.get("error") or refused or not calls:
                self.violations["listing_failed"] += 1
                self.details.append(f"/{name}: {result.get('error') or refused[:1]}")

    async def _delete_later(self, message_id: int) -> None:
        await asyncio.sleep(self.rng.uniform(2, 6))
        try:
            self.deleted_boards.add(message_id)
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
        # the tournaments first: in flight through the runs whose kills hit their steps
        starts[:0] = tournament_starts(self.args.tournaments)
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

    async def run(self) -> dict[str, Any]:
        t0 = self._t0 = time.monotonic()
        plan = self.plan()
        per_epoch = -(-len(plan.starts) // plan.epochs)
        queue = list(plan.starts)
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
                await self.plant_corrupt_rows()
            self.note(f"epoch {epoch}: starting the bot")
            await self.start_child("" if last else self.fault_rules(epoch))
            self.note("ready")
            if epoch:
                await self.check_restart()
                self.note("restart checked")
                await self.probe_listings()
            todo, queue = self.retry + queue[:per_epoch], queue[per_epoch:]
            self.retry = []
            if last:
                todo += queue
            budget = self.rng.randrange(self.args.actions // 2, self.args.actions + 1)
            lo, hi = self.args.epoch_seconds
            kill_at = None if last else time.monotonic() + self.rng.uniform(lo, hi)
            events = [] if kill_at is None else self.epoch_events(epoch, kill_at)
            await self.epoch(todo, budget, kill_at, drain=last, hold=events)
            for event in events:  # ended (the kill waited), or cut by a bot that died
                event.cancel()
            for result in await asyncio.gather(*events, return_exceptions=True):
                if isinstance(result, Exception) and not isinstance(result, ChildDied):
                    self.details.append(f"driver: {result!r}")
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
        self.check_tournaments()
        return self.report(seconds)

    async def epoch(
        self,
        starts: list[tuple[str, ...]],
        budget: int,
        kill_at: float | None,
        drain: bool,
        hold: list[asyncio.Future[None]],
    ) -> None:
        """Start this epoch's matches and play, until the kill (or, last, until all ended);
        the kill waits for the faults in `hold` to end."""
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
                start = self.start(what, self.retry)
                pending.add(asyncio.ensure_future(start))
            unseen = self.deleted | self.removed  # Discord shows nothing there any more
            if drain:  # boards the bot cannot edit look live for ever: people give up on them
                unseen |= self.refused
            boards = [
                b
                for b in self.boards().values()
                if b.live
                and b.to_play is not None
                and b.match_id not in acting
                and b.channel not in unseen
            ]
            if self.away:
                boards = []  # Discord is gone for the bot (or the bot is stopped)
            self.rng.shuffle(boards)
            for board in boards[: max(0, self.args.concurrency - len(pending))]:
                task = asyncio.ensure_future(self.act(board))
                task.add_done_callback(functools.partial(_done, acting, board.match_id))
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
                if (idle and not self.live() and not self.tournaments_running()) or now > deadline:
                    break
            else:
                assert kill_at is not None and give_up is not None
                if not all(h.done() for h in hold):
                    give_up = max(give_up, now + 30)
                elif now > give_up or (now >= kill_at and (done_actions >= budget or idle)):
                    break
            await asyncio.sleep(0.02)
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    dump_tasks_on_sigusr1()
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        driver = Driver(args, Path(args.workdir or tmp), random.Random(args.seed))
        if args.workdir:
            Path(args.workdir).mkdir(parents=True, exist_ok=True)
        if args.database == "postgresql":
            from benchmarks.robustness.chaos_pg import PgChaos

            driver.pg = await asyncio.to_thread(PgChaos)
        try:
            result = await driver.run()
        finally:
            if driver.pg is not None:
                await asyncio.to_thread(driver.pg.close)
        result["database"] = args.database
        return result


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
    parser.add_argument("--tournaments", type=int, default=2, help="tournaments held in the run")
    parser.add_argument("--channels", type=int, default=12)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--actions", type=int, default=60, help="clicks per run of the bot (at most)"
    )
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="postgresql: an embedded server is started (and restarted under the bot)",
    )
    parser.add_argument("--turn-seconds", type=float, default=15.0)
    parser.add_argument(
        "--outage-seconds",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        help="an outage's length, log-uniform between the two (default: 5 s to 3 turns)",
    )
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
    lo, hi = args.outage_seconds or (5.0, 3 * args.turn_seconds / args.time_factor)
    if not 0 < lo <= hi:
        parser.error("--outage-seconds: 0 < LO <= HI")
    args.outage_seconds = (lo * args.time_factor, hi * args.time_factor)
    result = asyncio.run(amain(args))
    write_result(result, args.json)
    return 0 if not any(result["violations"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
