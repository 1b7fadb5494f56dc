"""The chaos run's faults (`chaos.py` lists them): the rules each run of the bot
gets (`BOARDBOT_FAULT`), the corrupt rows planted while it is down, and the faults of Discord
and of the database at moments of a run (outages, a channel refusing edits, a deleted channel,
the bot removed from a guild, a PostgreSQL restart and the guard check after it)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import sqlite3
import time
from collections import Counter
from typing import Any

from benchmarks.robustness.chaos_core import ChildDied, Core, sleep_until
from benchmarks.robustness.chaos_rows import plant
from db.instance import WATCH_SECONDS
from tests.harness.payloads import DEFAULT_GUILD_ID


class Faults(Core):
    """The driver's faults."""

    def fault_rules(self, epoch: int) -> str:
        """The injected rules of one run of the bot (the kill hook on every other run)."""
        rng = self.rng
        rules = []
        if epoch % 2 == 1:
            rules.append(f"after:write:commit_step:{rng.randrange(3, 60)}")
            # and a tournament's steps: a kill right after a round is written (before its
            # games start), after a game's match is linked, or after an outcome (before the
            # next round is paired)
            point = ("tournament_round", "link_tournament_game", "tournament_outcome")
            rules.append(f"after:write:{point[epoch // 2 % 3]}:{rng.randrange(1, 3)}")
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

    async def plant_corrupt_rows(self) -> None:
        """While the bot is down, a corrupt row in each table it reads at a start, a clock
        pass or a listing (`chaos_rows.py`). The bot must start and set each aside,
        never stop."""
        now = time.time()
        base = 9_100_000_000_000 + 10 * len(self.planted.players)
        before = self.planted.rows
        if self.pg is not None:
            pg = self.pg

            def run() -> None:
                pg.transact(lambda execute: plant(execute, True, base, now, self.planted))

            await asyncio.to_thread(run)
        else:
            con = sqlite3.connect(self.db, timeout=30)

            async def execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
                return con.execute(sql, params).fetchall()

            try:
                with con:
                    await plant(execute, False, base, now, self.planted)
            finally:
                con.close()
        self.faults["corrupt_rows_planted"] += self.planted.rows - before

    def outage_length(self) -> float:
        """Log-uniform between the two `--outage-seconds` (as many short ones as long)."""
        lo, hi = self.args.outage_seconds
        return math.exp(self.rng.uniform(math.log(lo), math.log(hi)))

    async def outage(self) -> None:
        """A gateway outage (disconnect, then resume) or a stopped bot process (SIGSTOP, then
        SIGCONT: its clock's next pass comes late), the two in turn, from 5 s to past a turn's
        clock. Nobody can move meanwhile, so nobody may lose on time for it. The epoch's kill
        waits for its end (a SIGKILL comes after the SIGCONT)."""
        gap = self.outage_length()
        stop = self.faults["outage:gateway"] > self.faults["outage:stopped"]
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
        self.faults["outage_longest_seconds"] = max(
            self.faults["outage_longest_seconds"], round(gap)
        )

    def end_outage(self) -> None:
        if self.away:
            self.outages.append((self._away_from, time.time()))
            self.away = False

    def _busiest(self, channels: list[int]) -> int:
        """The channel (of these) with the most live matches."""
        counts = Counter(row[7] for row in self.live().values())
        return max(channels, key=lambda c: (counts[c], -c))

    def _retire(self, channel: int) -> int:
        """People start nothing more in this channel: a new one takes its place; its guild."""
        for gid, channels in self.guilds.items():
            if channel in channels:
                channels[channels.index(channel)] = self.new_channel()
                return gid
        raise ValueError(channel)

    def _candidates(self) -> list[int]:
        """Channels a fault may take away (never the first of the home guild: the listings'
        probes run there)."""
        return [
            c for g, cs in self.guilds.items() for c in cs if c != cs[0] or g != DEFAULT_GUILD_ID
        ]

    async def _tell(self, *requests: dict[str, Any]) -> None:
        """Requests about Discord itself; a bot killed meanwhile learns it at its start (the
        layout)."""
        with contextlib.suppress(ChildDied):
            for req in requests:
                await self.request(req)

    async def refuse_channel(self) -> None:
        """From now on Discord refuses every edit in a channel with live matches (403 Missing
        Access: the bot lost access to it). From the first refusal the bot knows: the matches
        there must end unrated, none on time (checked at the end)."""
        channel = self._busiest(self._candidates())
        self._retire(channel)
        self.refused.add(channel)
        self.faults["channel_refused:403"] += 1
        await self._tell(
            {"op": "refuse", "channel": channel}, {"op": "layout", "layout": self.layout()}
        )

    async def delete_place(self, guild: bool) -> None:
        """CHANNEL_DELETE of a channel with live matches, or (`guild`) the bot removed from the
        other guild (GUILD_DELETE; the bot is added to a new one). Their matches must end
        unrated, none on time; people use neither again."""
        since = time.time()
        if guild:
            gid = next(g for g in self.guilds if g != DEFAULT_GUILD_ID)
            channels = self.guilds.pop(gid)
            self.guilds[gid + 1] = [self.new_channel() for _ in channels]
            self.removed |= set(channels)
            for channel in channels:
                self.unreachable.setdefault(channel, since)
            self.faults["guild_removed"] += 1
            req = {"op": "guild_delete", "guild": gid}
        else:
            channel = self._busiest(self._candidates())
            gid = self._retire(channel)
            self.deleted.add(channel)
            self.unreachable.setdefault(channel, since)
            self.faults["channel_deleted"] += 1
            req = {"op": "channel_delete", "guild": gid, "channel": channel}
        await self._tell(req, {"op": "layout", "layout": self.layout()})

    async def restart_database(self) -> None:
        """Stop and start the PostgreSQL server under the running bot (`fast` and `immediate`
        in turn, down 1 to 4 s). Once the bot's guard has had time to look again, nobody else
        may take the guard's lock: if the driver can, the bot lost it (`guard_lost`)."""
        assert self.pg is not None
        settle = (WATCH_SECONDS + 4.0) * self.args.time_factor
        mode = ("fast", "immediate")[self.faults["database_restart"] % 2]
        self.faults["database_restart"] += 1
        self.db_down_until = math.inf  # until the check: no outage meanwhile (see `_event`)
        work = asyncio.ensure_future(
            asyncio.to_thread(self.pg.restart, self.rng.uniform(1.0, 4.0), mode)
        )
        try:
            try:
                await asyncio.shield(work)
            except asyncio.CancelledError:  # the bot died: the server must be up for its start
                await work
                raise
            proc = self.proc
            await asyncio.sleep(settle)
            if self._died.is_set() or proc is not self.proc:
                self.faults["guard_check_skipped"] += 1  # the bot was killed meanwhile
                return
            free = await asyncio.to_thread(self.pg.guard_free)
            if free and not self._died.is_set():
                self.violations["guard_lost"] += 1
                self.details.append(f"the guard was free {settle:.0f} s after a {mode} restart")
            self.faults["guard_checked"] += 1
        finally:
            self.db_down_until = time.monotonic()

    def epoch_events(self, epoch: int, kill_at: float) -> list[asyncio.Future[None]]:
        """This run's faults of Discord and the database, at moments before its kill (which
        waits for each to end): an outage every third run, a channel refusing edits and a
        channel deleted or the bot removed from a guild (in turn) every fifth, a database
        restart every third (PostgreSQL). One that a death of the bot came before is carried
        to the next run."""
        kinds, self.carried = self.carried, []
        if epoch % 3 == 1:
            kinds.append("outage")
        if epoch % 5 == 2:
            kinds.append("refuse")
        if epoch % 5 == 3:
            kinds.append("delete")
        if self.pg is not None and epoch % 3 == 0 and epoch > 0:
            kinds.append("restart")
        start = time.monotonic()
        return [
            asyncio.ensure_future(
                self._event(kind, start + (kill_at - start) * self.rng.uniform(0.1, 0.5))
            )
            for kind in kinds
        ]

    async def _event(self, kind: str, when: float) -> None:
        """One fault at `when` (a change in a guild once no outage is on: Discord tells the
        bot once it is connected); carried to the next run if the bot died first."""
        try:
            await sleep_until(when)
            # Neither during an outage, nor an outage during a database restart and its guard
            # check (a stopped bot cannot take its guard again).
            while (self.away and kind != "outage") or (
                kind == "outage" and time.monotonic() < self.db_down_until
            ):
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            self.carried.append(kind)
            raise
        if self._died.is_set():
            self.carried.append(kind)
            return
        if kind == "outage":
            await self.outage()
        elif kind == "refuse":
            await self.refuse_channel()
        elif kind == "delete":
            removals = self.faults["guild_removed"] + self.faults["channel_deleted"]
            await self.delete_place(guild=removals % 2 == 1)
        else:
            await self.restart_database()
