"""The chaos run's checks (`chaos.py` lists the violations): after each restart,
while the bot runs (frozen boards), and at the end against everything Discord showed."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any

from benchmarks.robustness.chaos_core import Core, parse_board
from engine.games import new_game


class Verdict(Core):
    """The driver's checks."""

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
                if row[7] in self.out_of_reach():
                    continue  # nothing can show it: the bot must end it (checked at the end)
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

    async def watch_frozen_boards(self) -> None:
        """While the bot runs: a live match whose board shows an older ply than the stored one
        for more than 10 s (the agent's move landed, or a person's, but nobody can see it) is a
        frozen board. Time while the bot is down does not count."""
        limit = 10.0 * self.args.time_factor
        while True:
            await asyncio.sleep(0.5)
            down = time.monotonic() < self.db_down_until
            if not self._ready.is_set() or self._died.is_set() or self.away or down:
                self.behind_since.clear()  # a restart shows every board again
                continue
            now = time.monotonic()
            boards = self.boards()
            behind = set()
            gone = self.out_of_reach()
            for mid, row in self.live().items():
                board = boards.get(mid)
                if board is None or row[6] in self.deleted_boards or board.ply >= row[4]:
                    continue
                if row[7] in gone:
                    continue  # Discord refuses its edits: the bot must end it, not show it
                key = (mid, row[4])
                behind.add(key)
                since = self.behind_since.setdefault(key, now)
                if now - since > limit and key not in self.frozen:
                    self.frozen.add(key)
                    self.violations["frozen_board"] += 1
                    self.details.append(f"match {mid}: board at ply {board.ply}, stored {row[4]}")
            for key in set(self.behind_since) - behind:
                del self.behind_since[key]

    async def check_final_boards(self) -> None:
        """Every match's message shows the match as stored: its last ply, ended or not."""
        limit = time.monotonic() + self.args.settle
        while True:
            rows = self.read(
                "SELECT id, status, ply, message_id, termination, channel_id FROM matches"
            )
            problems = []
            gone = self.out_of_reach()
            for mid, status, ply, message_id, termination, channel in rows:
                if (
                    message_id in self.deleted_boards
                    or termination == "unreachable"
                    or mid in self.gone
                    or channel in gone
                    or mid in self.planted.matches
                ):
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
        "guard_lost",
        "unreachable_not_abandoned",
    )

    def final_checks(self) -> None:
        v = self.violations
        for name in self.VIOLATIONS:
            v[name] += 0
        matches = [
            m
            for m in self.read(
                "SELECT id, game, variant, kind, status, result, termination, rated, message_id,"
                " ply, created_at, finished_at, turn_seconds, options, player0_id, player1_id,"
                " channel_id FROM matches ORDER BY id"
            )
            if m[0] not in self.planted.matches
        ]
        messages = [m[8] for m in matches]
        v["duplicate_matches"] = len(messages) - len(set(messages))
        v["invisible_matches"] = sum(
            1 for m in matches if m[8] not in self.messages and m[8] not in self.deleted_boards
        )
        v["deleted_board_still_live"] = sum(
            1 for m in matches if m[8] in self.deleted_boards and m[4] == "live"
        )
        v["live_left"] = sum(1 for m in matches if m[4] == "live")
        aside = [
            r
            for r in self.read("SELECT match_id, reason FROM match_faults")
            if r[0] not in self.planted.matches
        ]
        v["set_aside"] = len(aside)
        self.details += [f"set aside: {r}" for r in aside[:5]]
        learned: Counter[str] = Counter()
        for m in matches:
            if self._check_match(m):
                learned["trainer/default"] += 1
        self._check_ratings(matches)
        self._check_memory(learned)
        if self.pg is None:  # PostgreSQL checks both as it writes
            [(check,)] = self.read("PRAGMA integrity_check")
            v["integrity"] = 0 if check == "ok" else 1
            v["foreign_keys"] = len(self.read("PRAGMA foreign_key_check"))
        outbox = self.read("SELECT id FROM outbox")
        v["outbox_left"] = len([r for r in outbox if r[0] not in self.planted.outbox])

    def _check_match(self, m: tuple[Any, ...]) -> bool:
        """One match against its moves and what Discord showed; whether it was a learning
        match that ended with a result."""
        v = self.violations
        mid, game, variant = m[0], m[1], m[2]
        moves = self.read(
            "SELECT move, created_at FROM moves WHERE match_id = ? ORDER BY ply", (mid,)
        )
        if len(moves) != m[9]:
            v["ply_mismatch"] += 1
        state = new_game(game, variant)
        states: list[tuple[Any, Any]] = [(state, None)]
        try:
            for move, _ in moves:
                parsed = state.parse_move(move)
                state = state.play(parsed)
                states.append((state, parsed))
        except ValueError:
            v["illegal_replay"] += 1
            return False
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
                self.details.append(f"match {mid}: Discord showed ply {ply}, stored {len(moves)}")
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
        self._check_unreachable(m)
        options = json.loads(m[13])
        seats = options.get("seats") or []
        return (
            m[4] == "finished"
            and m[5] is not None
            and any(s and s.get("agent") == "trainer" for s in seats)
        )

    def _check_unreachable(self, m: tuple[Any, ...]) -> None:
        """A match in a channel deleted, of a guild the bot left or refusing its edits: from
        the moment the bot could know, it ends unrated (abandoned), never on time. A click in
        flight may still end it with a result a moment later (its person saw it: `slack`)."""
        since = self.unreachable.get(m[16])
        if since is None or m[11] is None:
            return
        slack = 1.0 * self.args.time_factor
        if m[6] == "time" and m[11] > since + slack:
            self.violations["lost_on_time_by_bot_fault"] += 1
            self.details.append(f"match {m[0]}: lost on time in a channel out of reach")
        elif m[4] != "abandoned" and m[6] != "time" and m[11] > since + 5 * slack:
            self.violations["unreachable_not_abandoned"] += 1
            self.details.append(
                f"match {m[0]}: ended {m[6]} {m[11] - since:.1f} s after its channel went"
            )

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
            if key[0] in self.planted.players:
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
            # the rare kinds first: a load's many late moves must not hide them
            "details": sorted(self.details, key=lambda d: "did not land" in d)[:20],
            "seconds": round(seconds, 1),
        }
