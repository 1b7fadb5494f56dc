"""Matches and their moves: a match from its start to its end, every step of it (moves, the
finish with its ratings, the outbox rows of what follows) in one transaction, and the queries
that find work for the clock and for a restart."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from .challenges import answer_challenge
from .connection import Repository, Tx, query
from .errors import MatchNotFoundError, MatchNotLiveError, PlayerNotFoundError, StaleMoveError
from .models import (
    MATCH_KINDS,
    RESULTS,
    TERMINATIONS,
    Finish,
    HistoryEntry,
    Match,
    MatchKind,
    MoveRow,
    NewMove,
)
from .players import players_by_id
from .ratings import write_ratings
from .rows import (
    MATCH_COLS,
    MOVE_COLS,
    check_game,
    decodable_matches,
    decode_match,
    decode_move,
    dump_json_object,
    nonempty,
)

__all__ = ["AUTO", "Deadline", "Matches"]

#: Sentinel for ``turn_deadline``: "now + match.turn_seconds, or None if untimed".
AUTO: Literal["auto"] = "auto"
Deadline: TypeAlias = float | Literal["auto"] | None

_NOT_SET_ASIDE = "id NOT IN (SELECT match_id FROM match_faults)"
_EXPIRED = (
    "SELECT id FROM matches WHERE status = 'live' AND turn_deadline IS NOT NULL"
    f" AND turn_deadline < ? AND {_NOT_SET_ASIDE}"
)  # and this process's shards (`Connection.shards.where()`)


class Matches(Repository):
    """Matches and their moves (``store.matches``)."""

    async def create(
        self,
        game: str,
        kind: MatchKind,
        player0_id: int,
        player1_id: int,
        *,
        variant: str = "standard",
        rated: bool = False,
        guild_id: int | None = None,
        channel_id: int | None = None,
        message_id: int | None = None,
        turn_seconds: float | None = None,
        turn_deadline: Deadline = AUTO,
        options: Mapping[str, Any] | None = None,
        accepts: int | None = None,
    ) -> Match:
        """Start a live match at ply 0.  ``player0_id`` moves first.

        ``kind`` must agree with the players (pve: one agent; pvp: none;
        eve: two), which catches seat mix-ups early.  ``turn_deadline=AUTO``
        means now + ``turn_seconds`` (or no deadline if untimed); pass ``None``
        explicitly when an agent moves first.  ``accepts``: the id of the challenge this
        match answers; in the same transaction it must still be pending and unexpired
        (else :class:`ChallengeClosedError`, and no match is made) and becomes accepted.
        """
        check_game(game)
        if kind not in MATCH_KINDS:
            raise ValueError(f"kind must be one of {sorted(MATCH_KINDS)}, got {kind!r}")
        if turn_seconds is not None and not (math.isfinite(turn_seconds) and turn_seconds > 0):
            raise ValueError(f"turn_seconds must be a positive number, got {turn_seconds!r}")
        if rated and player0_id == player1_id:
            raise ValueError("a player cannot play a rated match against themselves")
        options_json = dump_json_object("options", options or {})
        async with self._db.write("create_match") as conn:
            players = await players_by_id(conn, (player0_id, player1_id))
            for pid in (player0_id, player1_id):
                if pid not in players:
                    raise PlayerNotFoundError(pid)
            agents = sum(players[pid].is_agent for pid in (player0_id, player1_id))
            expected_agents = {"pve": 1, "pvp": 0, "eve": 2}[kind]
            if agents != expected_agents:
                raise ValueError(
                    f"a {kind} match needs {expected_agents} agent seat(s), got {agents}"
                )
            now = self._db.now()
            deadline = _resolve_deadline(turn_deadline, now, turn_seconds)
            rows = await query(
                conn,
                "INSERT INTO matches (game, variant, kind, player0_id, player1_id, rated,"
                " guild_id, channel_id, message_id, created_at, updated_at, turn_deadline,"
                " turn_seconds, options)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                f" RETURNING {MATCH_COLS}",
                (
                    game,
                    nonempty("variant", variant),
                    kind,
                    player0_id,
                    player1_id,
                    int(bool(rated)),
                    guild_id,
                    channel_id,
                    message_id,
                    now,
                    now,
                    deadline,
                    turn_seconds,
                    options_json,
                ),
            )
            match = decode_match(rows[0])
            if accepts is not None:
                await answer_challenge(conn, accepts, "accepted", now, match.id)
            return match

    async def get(self, match_id: int) -> Match | None:
        rows = await self._db.fetchall(
            f"SELECT {MATCH_COLS} FROM matches WHERE id = ?", (match_id,)
        )
        return decode_match(rows[0]) if rows else None

    async def live(self, player_id: int | None = None) -> list[Match]:
        """Live matches, oldest first, optionally of one player; set-aside matches and rows
        that do not decode are left out (logged), so one bad row hides nothing else."""
        sql = f"SELECT {MATCH_COLS} FROM matches WHERE status = 'live' AND {_NOT_SET_ASIDE}"
        params: tuple[int, ...] = ()
        if player_id is not None:
            sql += " AND (player0_id = ? OR player1_id = ?)"
            params = (player_id, player_id)
        rows = await self._db.fetchall(sql + " ORDER BY created_at, id", params)
        return decodable_matches(rows)

    async def live_ids(self) -> list[int]:
        """Ids of the live matches not set aside, oldest first (restart recovery reads each
        match on its own, so one that fails cannot stop the others)."""
        rows = await self._db.fetchall(
            f"SELECT id FROM matches WHERE status = 'live' AND {_NOT_SET_ASIDE}"
            f" AND {self._db.shards.where()} ORDER BY created_at, id"
        )
        return [int(r[0]) for r in rows]

    async def agent_turn_ids(self) -> list[int]:
        """Live matches (not set aside) where no person's clock runs: an agent is to move
        (a person to move always has a deadline)."""
        rows = await self._db.fetchall(
            "SELECT id FROM matches WHERE status = 'live' AND kind <> 'pvp'"
            f" AND turn_deadline IS NULL AND {_NOT_SET_ASIDE} AND {self._db.shards.where()}"
            " ORDER BY id"
        )
        return [int(r[0]) for r in rows]

    async def live_ids_in(
        self, *, guild_id: int | None = None, channel_id: int | None = None
    ) -> list[int]:
        """Live matches (not set aside) shown in a guild, or in a channel, oldest first: those
        a removed guild or a deleted channel leaves without a board."""
        if (guild_id is None) == (channel_id is None):
            raise ValueError("give a guild or a channel")
        column, ident = (
            ("guild_id", guild_id) if guild_id is not None else ("channel_id", channel_id)
        )
        rows = await self._db.fetchall(
            f"SELECT id FROM matches WHERE status = 'live' AND {column} = ?"
            f" AND {_NOT_SET_ASIDE} AND {self._db.shards.where()} ORDER BY created_at, id",
            (ident,),
        )
        return [int(r[0]) for r in rows]

    async def live_channels_in(self, guild_id: int) -> list[int]:
        """The channels of a guild where live matches (not set aside) are shown."""
        rows = await self._db.fetchall(
            "SELECT DISTINCT channel_id FROM matches WHERE status = 'live' AND guild_id = ?"
            f" AND channel_id IS NOT NULL AND {_NOT_SET_ASIDE} AND {self._db.shards.where()}"
            " ORDER BY channel_id",
            (guild_id,),
        )
        return [int(r[0]) for r in rows]

    async def live_guilds(self) -> list[int]:
        """The guilds where live matches (not set aside) are shown."""
        rows = await self._db.fetchall(
            "SELECT DISTINCT guild_id FROM matches WHERE status = 'live' AND guild_id IS NOT NULL"
            f" AND {_NOT_SET_ASIDE} AND {self._db.shards.where()} ORDER BY guild_id"
        )
        return [int(r[0]) for r in rows]

    async def final_shown(self, match_id: int) -> None:
        """The message of an ended match shows its end (see :meth:`unshown_finals`)."""
        async with self._db.write("final_shown") as conn:
            await conn.execute(
                "UPDATE matches SET final_shown = 1 WHERE id = ? AND final_shown = 0", (match_id,)
            )

    async def unshown_finals(self) -> list[int]:
        """Ended matches whose message may still show the game as live (a kill came between
        the finish and the board edit), oldest first."""
        rows = await self._db.fetchall(
            "SELECT id FROM matches WHERE final_shown = 0 AND status <> 'live'"
            f" AND message_id IS NOT NULL AND {_NOT_SET_ASIDE} AND {self._db.shards.where()}"
            " ORDER BY id"
        )
        return [int(r[0]) for r in rows]

    async def set_aside(self, match_id: int, reason: str) -> None:
        """Mark a match that fails in a way a retry cannot mend: recovery and clocks skip it."""
        async with self._db.write("set_aside") as conn:
            await conn.execute(
                "INSERT INTO match_faults (match_id, reason, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT (match_id) DO UPDATE SET reason = excluded.reason",
                (match_id, nonempty("reason", reason)[:500], self._db.now()),
            )

    async def set_aside_reasons(self) -> dict[int, str]:
        """Every set-aside match with its reason."""
        rows = await self._db.fetchall(
            "SELECT match_id, reason FROM match_faults ORDER BY match_id"
        )
        return {int(r[0]): str(r[1]) for r in rows}

    async def set_message(
        self, match_id: int, guild_id: int | None, channel_id: int | None, message_id: int | None
    ) -> Match:
        """Record where the match board is displayed (known only after sending it)."""
        async with self._db.write("set_message") as conn:
            rows = await query(
                conn,
                "UPDATE matches SET guild_id = ?, channel_id = ?, message_id = ?, updated_at = ?"
                f" WHERE id = ? RETURNING {MATCH_COLS}",
                (guild_id, channel_id, message_id, self._db.now(), match_id),
            )
            if not rows:
                raise MatchNotFoundError(match_id)
            return decode_match(rows[0])

    async def set_turn_deadline(self, match_id: int, turn_deadline: Deadline) -> Match:
        """Move the clock of a live match (e.g. grant grace time after a restart)."""
        async with self._db.write("set_turn_deadline") as conn:
            m = await _live_match(conn, match_id)
            deadline = _resolve_deadline(turn_deadline, self._db.now(), m.turn_seconds)
            rows = await query(
                conn,
                f"UPDATE matches SET turn_deadline = ? WHERE id = ? RETURNING {MATCH_COLS}",
                (deadline, match_id),
            )
            return decode_match(rows[0])

    async def use_hint(self, match_id: int) -> Match:
        """Count a hint given in a live match, which makes it unrated (in one write: a hint
        can never be given to a match that still counts)."""
        async with self._db.write("use_hint") as conn:
            await _live_match(conn, match_id)
            add = conn.dialect.json_add.format(col="options")
            rows = await query(
                conn,
                f"UPDATE matches SET rated = 0, options = {add} WHERE id = ?"
                f" RETURNING {MATCH_COLS}",
                ("hints", "hints", 1, match_id),
            )
            return decode_match(rows[0])

    async def append_move(
        self,
        match_id: int,
        expected_ply: int,
        move: str,
        player_id: int,
        *,
        think_ms: int | None = None,
        turn_deadline: Deadline = AUTO,
    ) -> int:
        """Store one move atomically; return the new ply count (next expected_ply).

        Checks, inside one transaction, that the match is live
        (else :class:`MatchNotLiveError`) and at ``expected_ply`` (else
        :class:`StaleMoveError`), then inserts the move and bumps ``ply``,
        ``updated_at`` and ``turn_deadline``.  Of N concurrent calls with the
        same ``expected_ply`` exactly one succeeds.

        ``turn_deadline``: deadline of the player now to move.  ``AUTO`` = now
        + ``turn_seconds`` (None if untimed); pass ``None`` when an agent moves next.
        The store does not know whose turn it is (passes are game logic).
        """
        m = await self.commit_step(
            match_id,
            expected_ply,
            [NewMove(move, player_id, think_ms)],
            turn_deadline=turn_deadline,
            op="append_move",
        )
        return m.ply

    async def commit_step(
        self,
        match_id: int,
        expected_ply: int | None,
        moves: Sequence[NewMove],
        *,
        turn_deadline: Deadline = AUTO,
        finish: Finish | None = None,
        outbox: Sequence[tuple[str, Mapping[str, Any]]] = (),
        op: str = "commit_step",
    ) -> Match:
        """One step of a match in ONE transaction: its moves (a move and the forced passes
        after it), the finish with its ratings if it ended, and the outbox rows of what must
        follow; returns the match as stored.

        The match must be live (else :class:`MatchNotLiveError`) and at ``expected_ply``
        (else :class:`StaleMoveError`; None: any ply, only with no moves), which is how of N
        concurrent clicks on one position exactly one applies, and how a time forfeit racing
        a last-second move is refused. ``turn_deadline`` is the clock of the player to move
        after the moves (see :meth:`append_move`); a finish clears it. A kill at any moment
        leaves the match either before the step or after all of it: never a finished match
        without its rating change, nor a rating change without its finished match.

        ``finish``: ``status`` ``'finished'`` (``result`` required) or ``'abandoned'``
        (``result`` optional; ``None`` voids the match). Its ``ratings`` (only for a
        ``rated`` match) are new :class:`Rating` rows for the seats, either as a sequence --
        each row's ``games`` must be the stored ``games + 1`` (else :class:`StaleRatingError`:
        the rows were computed from stale ratings) -- or as a :data:`RatingFn` that runs
        inside the transaction, so it always sees fresh rows.  Keep it fast and pure: the
        store is locked while it runs.
        """
        new_moves = _checked_step(moves, expected_ply, finish, outbox)
        outbox_rows = [(nonempty("kind", k), dump_json_object("payload", p)) for k, p in outbox]
        async with self._db.write(op) as conn:
            m = await _live_match(conn, match_id)
            if expected_ply is not None and m.ply != expected_ply:
                raise StaleMoveError(match_id, expected_ply, m.ply)
            now = self._db.now()
            if new_moves:
                await _append_moves(conn, m, new_moves, now, turn_deadline)
            if finish is not None:
                await conn.execute(
                    "UPDATE matches SET status = ?, result = ?, termination = ?,"
                    " finished_at = ?, updated_at = ?, turn_deadline = NULL,"
                    " final_shown = CASE WHEN message_id IS NULL THEN 1 ELSE 0 END"
                    " WHERE id = ?",
                    (finish.status, finish.result, finish.termination, now, now, match_id),
                )
            for kind, payload in outbox_rows:
                await conn.execute(
                    "INSERT INTO outbox (kind, match_id, payload, created_at) VALUES (?, ?, ?, ?)",
                    (kind, match_id, payload, now),
                )
            stored = await _get_match(conn, match_id)
            if finish is not None and finish.ratings is not None:
                await write_ratings(conn, stored, finish.ratings, now)
            return stored

    async def moves(self, match_id: int) -> list[MoveRow]:
        """All moves of a match in ply order (replay them to rebuild the position)."""
        rows = await self._db.fetchall(
            f"SELECT {MOVE_COLS} FROM moves WHERE match_id = ? ORDER BY ply", (match_id,)
        )
        return [decode_move(r) for r in rows]

    async def ended_ids(self, game: str) -> list[tuple[int, str]]:
        """(id, variant) of the ended matches (finished or abandoned) of a game, oldest first
        (the puzzle generator reads their moves)."""
        rows = await self._db.fetchall(
            "SELECT id, variant FROM matches WHERE status <> 'live' AND game = ? ORDER BY id",
            (game,),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def expired_turn_ids(self, now: float) -> list[int]:
        """Ids of the matches of :meth:`expired_turns` (each is then read on its own)."""
        rows = await self._db.fetchall(
            f"{_EXPIRED} AND {self._db.shards.where()} ORDER BY turn_deadline, id", (now,)
        )
        return [int(r[0]) for r in rows]

    async def count_rated_between(self, a: int, b: int, since: float) -> int:
        """Rated matches between players `a` and `b` created since `since` (anti-farming)."""
        rows = await self._db.fetchall(
            "SELECT COUNT(*) FROM matches WHERE rated = 1 AND created_at >= ?"
            " AND ((player0_id = ? AND player1_id = ?) OR (player0_id = ? AND player1_id = ?))",
            (since, a, b, b, a),
        )
        return int(rows[0][0])

    async def count_live(
        self,
        kind: MatchKind,
        *,
        player_id: int | None = None,
        guild_id: int | None = None,
        starter: int | str | None = None,
    ) -> int:
        """Live matches of a kind, of a player, in a guild, or started by someone (limits)."""
        sql = "SELECT COUNT(*) FROM matches WHERE status = 'live' AND kind = ?"
        params: list[Any] = [kind]
        if player_id is not None:
            sql += " AND (player0_id = ? OR player1_id = ?)"
            params += [player_id, player_id]
        if guild_id is not None:
            sql += " AND guild_id = ?"
            params.append(guild_id)
        if starter is not None:
            sql += " AND " + self._db.dialect.json_equals("options", ("starter", "ident"))
            params.append(json.dumps(starter))
        rows = await self._db.fetchall(sql, params)
        return int(rows[0][0])

    async def history(
        self, player_id: int, limit: int = 10, *, game: str | None = None
    ) -> list[HistoryEntry]:
        """The player's most recent ended matches (finished or abandoned), newest first."""
        sql = (
            f"SELECT {MATCH_COLS} FROM matches WHERE (player0_id = ? OR player1_id = ?)"
            " AND status <> 'live'"
        )
        params: list[Any] = [player_id, player_id]
        if game is not None:
            sql += " AND game = ?"
            params.append(game)
        sql += " ORDER BY finished_at DESC, id DESC LIMIT ?"
        params.append(limit)
        async with self._db.read() as conn:
            matches = decodable_matches(await query(conn, sql, params))
            opponent_ids = [
                m.player1_id if m.player0_id == player_id else m.player0_id for m in matches
            ]
            players = await players_by_id(conn, opponent_ids)
        out = []
        for m, opp in zip(matches, opponent_ids, strict=True):
            if opp not in players:  # the opponent's row does not decode (reported once)
                continue
            seat = 0 if m.player0_id == player_id else 1
            out.append(HistoryEntry(m, seat, players[opp], m.outcome_for(player_id)))
        return out


# ---------------------------------------------------------------------- helpers


async def _get_match(conn: Tx, match_id: int) -> Match:
    """The match, locked until the transaction ends (it is read to be changed)."""
    rows = await query(
        conn, f"SELECT {MATCH_COLS} FROM matches WHERE id = ?{conn.dialect.lock}", (match_id,)
    )
    if not rows:
        raise MatchNotFoundError(match_id)
    return decode_match(rows[0])


async def _live_match(conn: Tx, match_id: int) -> Match:
    m = await _get_match(conn, match_id)
    if m.status != "live":
        raise MatchNotLiveError(match_id, m.status)
    return m


def _checked_step(
    moves: Sequence[NewMove],
    expected_ply: int | None,
    finish: Finish | None,
    outbox: Sequence[tuple[str, Mapping[str, Any]]],
) -> list[NewMove]:
    """The step's moves, checked before its transaction (with its finish and outbox)."""
    new_moves = [
        NewMove(nonempty("move", mv.move), mv.player_id, mv.think_ms, mv.fallback) for mv in moves
    ]
    for mv in new_moves:
        if mv.think_ms is not None and mv.think_ms < 0:
            raise ValueError(f"think_ms must be >= 0, got {mv.think_ms}")
    if new_moves and expected_ply is None:
        raise ValueError("moves need the expected ply")
    if finish is not None:
        _check_finish(finish)
    if not new_moves and finish is None and not outbox:
        raise ValueError("a step needs moves, a finish or outbox rows")
    return new_moves


async def _append_moves(
    conn: Tx, m: Match, new_moves: Sequence[NewMove], now: float, turn_deadline: Deadline
) -> None:
    """Store the moves at the match's ply, then the clock of the player to move next."""
    ply = m.ply
    for mv in new_moves:
        if m.seat_of(mv.player_id) is None:
            raise ValueError(f"player {mv.player_id} is not playing match {m.id}")
        await conn.execute(
            f"INSERT INTO moves ({MOVE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (m.id, ply, mv.move, mv.player_id, now, mv.think_ms, mv.fallback),
        )
        ply += 1
        # One move at a time: the append-only trigger checks each against matches.ply.
        await conn.execute("UPDATE matches SET ply = ? WHERE id = ?", (ply, m.id))
    deadline = _resolve_deadline(turn_deadline, now, m.turn_seconds)
    await conn.execute(
        "UPDATE matches SET updated_at = ?, turn_deadline = ? WHERE id = ?",
        (now, deadline, m.id),
    )


def _check_finish(finish: Finish) -> None:
    if finish.status not in ("finished", "abandoned"):
        raise ValueError(f"status must be 'finished' or 'abandoned', got {finish.status!r}")
    if finish.result is not None and finish.result not in RESULTS:
        raise ValueError(f"result must be one of {sorted(RESULTS)} or None, got {finish.result!r}")
    if finish.status == "finished" and finish.result is None:
        raise ValueError("a finished match needs a result")
    if finish.termination not in TERMINATIONS:
        raise ValueError(
            f"termination must be one of {sorted(TERMINATIONS)}, got {finish.termination!r}"
        )


def _resolve_deadline(deadline: Deadline, now: float, turn_seconds: float | None) -> float | None:
    if deadline == AUTO:
        return None if turn_seconds is None else now + turn_seconds
    if deadline is None:
        return None
    value = float(deadline)
    if not math.isfinite(value):
        raise ValueError(f"turn_deadline must be finite, got {deadline!r}")
    return value
