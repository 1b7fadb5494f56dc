"""The store: players, matches with their moves and ratings, and what is read from them
(leaderboard, stats, history). `Store` also inherits the other rooms: the connection and its
transactions (`db.connection`), challenges (`db.challenges`) and agent memory (`db.memory`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from .analyses import Analyses
from .challenges import Challenges, answer_challenge
from .connection import Connection, Tx, query
from .errors import (
    MatchNotFoundError,
    MatchNotLiveError,
    PlayerNotFoundError,
    StaleMoveError,
    StaleRatingError,
)
from .leases import Leases
from .memory import AgentMemory
from .models import (
    MATCH_KINDS,
    RESULTS,
    TERMINATIONS,
    Finish,
    HistoryEntry,
    LeaderboardEntry,
    Match,
    MatchKind,
    MoveRow,
    NewMove,
    Player,
    PlayerKind,
    PlayerStats,
    Rating,
    RatingPoint,
)
from .rows import (
    MATCH_COLS,
    MOVE_COLS,
    PLAYER_COLS,
    RATING_COLS,
    check_game,
    decodable,
    decodable_matches,
    decode_match,
    decode_move,
    decode_player,
    decode_rating,
    decode_rating_point,
    dump_json_object,
    nonempty,
)

__all__ = ["AUTO", "RatingFn", "Store"]

#: Sentinel for ``turn_deadline``: "now + match.turn_seconds, or None if untimed".
AUTO: Literal["auto"] = "auto"
Deadline: TypeAlias = float | Literal["auto"] | None
#: Computes new ratings inside ``commit_step``'s transaction from the current
#: rows (keyed by player id; ``None`` = player has no rating in this game yet).
RatingFn: TypeAlias = Callable[[Match, Mapping[int, Rating | None]], Sequence[Rating]]

_NOT_SET_ASIDE = "id NOT IN (SELECT match_id FROM match_faults)"
_EXPIRED = (
    "SELECT id FROM matches WHERE status = 'live' AND turn_deadline IS NOT NULL"
    f" AND turn_deadline < ? AND {_NOT_SET_ASIDE}"
)  # and this process's shards (`Connection.shards.where()`)


class Store(Analyses, Challenges, AgentMemory, Leases, Connection):
    """Async persistence for players, matches, moves, ratings, challenges, agent memory.

    Create with ``store = await Store.open(path)`` (close with
    ``await store.close()``) or ``async with Store.open(path) as store:``.

    The rooms are mixins over one :class:`~db.connection.Connection` rather than separate
    objects: every method of every room goes through the same lock and the same
    ``_write`` (one transaction per call), so the one-transaction-per-step guarantees
    read the same in each room, and callers keep calling ``store.memory_put(...)``.
    """

    # ------------------------------------------------------------------ players

    async def get_or_create_user(self, discord_id: int, name: str) -> Player:
        """The player for a Discord user; refreshes ``display_name`` if it changed."""
        return await self._get_or_create("user", "discord_id", int(discord_id), name)

    async def get_or_create_agent(self, agent_key: str, name: str) -> Player:
        """The player for an AI agent (``agent_key`` e.g. ``'connect4:medium'``)."""
        return await self._get_or_create(
            "agent", "agent_key", nonempty("agent_key", agent_key), name
        )

    async def get_or_create_local(self, local_name: str, name: str | None = None) -> Player:
        """A console (non-Discord) human, unique by ``local_name``; kind ``'local'``."""
        local_name = nonempty("local_name", local_name)
        return await self._get_or_create("local", "local_name", local_name, name or local_name)

    async def _get_or_create(
        self, kind: PlayerKind, column: str, ident: int | str, name: str
    ) -> Player:
        name = nonempty("name", name)
        select = f"SELECT {PLAYER_COLS} FROM players WHERE {column} = ?"
        # Fast path without a write transaction (one fsync saved per click).
        rows = await self._fetchall(select, (ident,))
        if rows and decode_player(rows[0]).display_name == name:
            return decode_player(rows[0])
        async with self._write("player") as conn:
            now = self._clock()
            select += conn.dialect.lock
            rows = await query(conn, select, (ident,))
            if not rows:
                # DO NOTHING: on PostgreSQL another process may add the player first (the
                # insert waits for its commit); then it is read like any other.
                rows = await query(
                    conn,
                    f"INSERT INTO players (kind, {column}, display_name, created_at, updated_at)"
                    f" VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING {PLAYER_COLS}",
                    (kind, ident, name, now, now),
                ) or await query(conn, select, (ident,))
            if decode_player(rows[0]).display_name != name:
                rows = await query(
                    conn,
                    "UPDATE players SET display_name = ?, updated_at = ? WHERE id = ?"
                    f" RETURNING {PLAYER_COLS}",
                    (name, now, rows[0]["id"]),
                )
            return decode_player(rows[0])

    async def get_player(self, player_id: int) -> Player | None:
        rows = await self._fetchall(f"SELECT {PLAYER_COLS} FROM players WHERE id = ?", (player_id,))
        return decode_player(rows[0]) if rows else None

    async def get_players(self, player_ids: Iterable[int]) -> dict[int, Player]:
        """Players by id; ids that do not exist are simply absent from the result."""
        async with self._read() as conn:
            return await _players_by_id(conn, player_ids)

    async def find_local(self, local_name: str) -> Player | None:
        rows = await self._fetchall(
            f"SELECT {PLAYER_COLS} FROM players WHERE local_name = ?", (local_name.strip(),)
        )
        return decode_player(rows[0]) if rows else None

    async def find_agents(self, keys: Iterable[str]) -> list[Player]:
        """The agent players with these keys (`game:name`), in key order; absent ones left out."""
        wanted = sorted(set(keys))
        if not wanted:
            return []
        rows = await self._fetchall(
            f"SELECT {PLAYER_COLS} FROM players WHERE kind = 'agent' AND agent_key IN"
            f" ({', '.join('?' * len(wanted))}) ORDER BY agent_key",
            wanted,
        )
        return decodable(rows, decode_player)

    async def find_user(self, discord_id: int) -> Player | None:
        rows = await self._fetchall(
            f"SELECT {PLAYER_COLS} FROM players WHERE discord_id = ?", (int(discord_id),)
        )
        return decode_player(rows[0]) if rows else None

    # ------------------------------------------------------------------ matches

    async def create_match(
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
        async with self._write("create_match") as conn:
            players = await _players_by_id(conn, (player0_id, player1_id))
            for pid in (player0_id, player1_id):
                if pid not in players:
                    raise PlayerNotFoundError(pid)
            agents = sum(players[pid].is_agent for pid in (player0_id, player1_id))
            expected_agents = {"pve": 1, "pvp": 0, "eve": 2}[kind]
            if agents != expected_agents:
                raise ValueError(
                    f"a {kind} match needs {expected_agents} agent seat(s), got {agents}"
                )
            now = self._clock()
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

    async def get_match(self, match_id: int) -> Match | None:
        rows = await self._fetchall(f"SELECT {MATCH_COLS} FROM matches WHERE id = ?", (match_id,))
        return decode_match(rows[0]) if rows else None

    async def live_matches(self, player_id: int | None = None) -> list[Match]:
        """Live matches, oldest first, optionally of one player; set-aside matches and rows
        that do not decode are left out (logged), so one bad row hides nothing else."""
        sql = f"SELECT {MATCH_COLS} FROM matches WHERE status = 'live' AND {_NOT_SET_ASIDE}"
        params: tuple[int, ...] = ()
        if player_id is not None:
            sql += " AND (player0_id = ? OR player1_id = ?)"
            params = (player_id, player_id)
        rows = await self._fetchall(sql + " ORDER BY created_at, id", params)
        return decodable_matches(rows)

    async def live_match_ids(self) -> list[int]:
        """Ids of the live matches not set aside, oldest first (restart recovery reads each
        match on its own, so one that fails cannot stop the others)."""
        rows = await self._fetchall(
            f"SELECT id FROM matches WHERE status = 'live' AND {_NOT_SET_ASIDE}"
            f" AND {self.shards.where()} ORDER BY created_at, id"
        )
        return [int(r[0]) for r in rows]

    async def agent_turn_ids(self) -> list[int]:
        """Live matches (not set aside) where no person's clock runs: an agent is to move
        (a person to move always has a deadline)."""
        rows = await self._fetchall(
            "SELECT id FROM matches WHERE status = 'live' AND kind <> 'pvp'"
            f" AND turn_deadline IS NULL AND {_NOT_SET_ASIDE} AND {self.shards.where()}"
            " ORDER BY id"
        )
        return [int(r[0]) for r in rows]

    async def live_match_ids_in(
        self, *, guild_id: int | None = None, channel_id: int | None = None
    ) -> list[int]:
        """Live matches (not set aside) shown in a guild, or in a channel, oldest first: those
        a removed guild or a deleted channel leaves without a board."""
        if (guild_id is None) == (channel_id is None):
            raise ValueError("give a guild or a channel")
        column, ident = (
            ("guild_id", guild_id) if guild_id is not None else ("channel_id", channel_id)
        )
        rows = await self._fetchall(
            f"SELECT id FROM matches WHERE status = 'live' AND {column} = ?"
            f" AND {_NOT_SET_ASIDE} AND {self.shards.where()} ORDER BY created_at, id",
            (ident,),
        )
        return [int(r[0]) for r in rows]

    async def final_shown(self, match_id: int) -> None:
        """The message of an ended match shows its end (see :meth:`unshown_finals`)."""
        async with self._write("final_shown") as conn:
            await conn.execute(
                "UPDATE matches SET final_shown = 1 WHERE id = ? AND final_shown = 0", (match_id,)
            )

    async def unshown_finals(self) -> list[int]:
        """Ended matches whose message may still show the game as live (a kill came between
        the finish and the board edit), oldest first."""
        rows = await self._fetchall(
            "SELECT id FROM matches WHERE final_shown = 0 AND status <> 'live'"
            f" AND message_id IS NOT NULL AND {_NOT_SET_ASIDE} AND {self.shards.where()}"
            " ORDER BY id"
        )
        return [int(r[0]) for r in rows]

    async def set_aside(self, match_id: int, reason: str) -> None:
        """Mark a match that fails in a way a retry cannot mend: recovery and clocks skip it."""
        async with self._write("set_aside") as conn:
            await conn.execute(
                "INSERT INTO match_faults (match_id, reason, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT (match_id) DO UPDATE SET reason = excluded.reason",
                (match_id, nonempty("reason", reason)[:500], self._clock()),
            )

    async def set_aside_matches(self) -> dict[int, str]:
        """Every set-aside match with its reason."""
        rows = await self._fetchall("SELECT match_id, reason FROM match_faults ORDER BY match_id")
        return {int(r[0]): str(r[1]) for r in rows}

    async def set_message(
        self, match_id: int, guild_id: int | None, channel_id: int | None, message_id: int | None
    ) -> Match:
        """Record where the match board is displayed (known only after sending it)."""
        async with self._write("set_message") as conn:
            rows = await query(
                conn,
                "UPDATE matches SET guild_id = ?, channel_id = ?, message_id = ?, updated_at = ?"
                f" WHERE id = ? RETURNING {MATCH_COLS}",
                (guild_id, channel_id, message_id, self._clock(), match_id),
            )
            if not rows:
                raise MatchNotFoundError(match_id)
            return decode_match(rows[0])

    async def set_turn_deadline(self, match_id: int, turn_deadline: Deadline) -> Match:
        """Move the clock of a live match (e.g. grant grace time after a restart)."""
        async with self._write("set_turn_deadline") as conn:
            m = await _live_match(conn, match_id)
            deadline = _resolve_deadline(turn_deadline, self._clock(), m.turn_seconds)
            rows = await query(
                conn,
                f"UPDATE matches SET turn_deadline = ? WHERE id = ? RETURNING {MATCH_COLS}",
                (deadline, match_id),
            )
            return decode_match(rows[0])

    async def use_hint(self, match_id: int) -> Match:
        """Count a hint given in a live match, which makes it unrated (in one write: a hint
        can never be given to a match that still counts)."""
        async with self._write("use_hint") as conn:
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
        new_moves = [
            NewMove(nonempty("move", mv.move), mv.player_id, mv.think_ms, mv.fallback)
            for mv in moves
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
        outbox_rows = [(nonempty("kind", k), dump_json_object("payload", p)) for k, p in outbox]
        async with self._write(op) as conn:
            m = await _live_match(conn, match_id)
            if expected_ply is not None and m.ply != expected_ply:
                raise StaleMoveError(match_id, expected_ply, m.ply)
            now = self._clock()
            ply = m.ply
            for mv in new_moves:
                if m.seat_of(mv.player_id) is None:
                    raise ValueError(f"player {mv.player_id} is not playing match {match_id}")
                await conn.execute(
                    f"INSERT INTO moves ({MOVE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (match_id, ply, mv.move, mv.player_id, now, mv.think_ms, mv.fallback),
                )
                ply += 1
                # One move at a time: the append-only trigger checks each against matches.ply.
                await conn.execute("UPDATE matches SET ply = ? WHERE id = ?", (ply, match_id))
            if new_moves:
                deadline = _resolve_deadline(turn_deadline, now, m.turn_seconds)
                await conn.execute(
                    "UPDATE matches SET updated_at = ?, turn_deadline = ? WHERE id = ?",
                    (now, deadline, match_id),
                )
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
                await self._write_ratings(conn, stored, finish.ratings, now)
            return stored

    async def _write_ratings(
        self,
        conn: Tx,
        m: Match,
        updates: Sequence[Rating] | RatingFn,
        now: float,
    ) -> None:
        if not m.rated:
            raise ValueError(f"match {m.id} is unrated; it must not change ratings")
        seats = set(m.player_ids)
        # Locks the players (in id order, so two finishes never wait on each other in a
        # circle) before their ratings are read: two processes finishing matches of one
        # player write one rating after the other, never both from the same old row.
        await query(
            conn,
            f"SELECT id FROM players WHERE id IN ({conn.dialect.ids_from_json})"
            f" ORDER BY id{conn.dialect.lock}",
            (json.dumps(sorted(seats)),),
        )
        current = await _ratings_for(conn, seats, m.game)
        if callable(updates):
            new = list(updates(m, dict(current)))
            fresh = True
        else:
            new = list(updates)
            fresh = False
        seen: set[int] = set()
        for r in new:
            if r.player_id not in seats:
                raise ValueError(f"rating for player {r.player_id}, who is not in match {m.id}")
            if r.player_id in seen:
                raise ValueError(f"two ratings for player {r.player_id} in match {m.id}")
            seen.add(r.player_id)
            if r.game != m.game:
                raise ValueError(f"rating is for game {r.game!r}, match {m.id} is {m.game!r}")
            old = current.get(r.player_id)
            old_games = old.games if old is not None else 0
            if not fresh and r.games != old_games + 1:
                raise StaleRatingError(r.player_id, r.game, old_games, r.games)
        # Constraint violations (sigma <= 0, counts that do not add up, ...) raise
        # RefusedError (on both backends) here and roll back the whole finish.
        await conn.executemany(
            f"INSERT INTO ratings ({RATING_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (player_id, game) DO UPDATE SET mu = excluded.mu,"
            " sigma = excluded.sigma, games = excluded.games, wins = excluded.wins,"
            " draws = excluded.draws, losses = excluded.losses, updated_at = excluded.updated_at",
            [
                (r.player_id, r.game, r.mu, r.sigma, r.games, r.wins, r.draws, r.losses, now)
                for r in new
            ],
        )
        # The same transaction: a chart never shows a rating the table does not have.
        await conn.executemany(
            "INSERT INTO rating_history (player_id, game, match_id, mu, sigma, games, at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(r.player_id, r.game, m.id, r.mu, r.sigma, r.games, now) for r in new],
        )

    async def rating_history(self, player_id: int, limit: int = 1000) -> list[RatingPoint]:
        """A player's ratings after each rated game, per game, oldest first (the last `limit`
        of each game)."""
        rows = await self._fetchall(
            "SELECT player_id, game, match_id, mu, sigma, games, at FROM ("
            " SELECT *, ROW_NUMBER() OVER (PARTITION BY game ORDER BY games DESC) AS n"
            " FROM rating_history WHERE player_id = ?) AS h WHERE n <= ? ORDER BY game, games",
            (player_id, limit),
        )
        return decodable(rows, decode_rating_point)

    async def moves(self, match_id: int) -> list[MoveRow]:
        """All moves of a match in ply order (replay them to rebuild the position)."""
        rows = await self._fetchall(
            f"SELECT {MOVE_COLS} FROM moves WHERE match_id = ? ORDER BY ply", (match_id,)
        )
        return [decode_move(r) for r in rows]

    async def expired_turn_ids(self, now: float) -> list[int]:
        """Ids of the matches of :meth:`expired_turns` (each is then read on its own)."""
        rows = await self._fetchall(
            f"{_EXPIRED} AND {self.shards.where()} ORDER BY turn_deadline, id", (now,)
        )
        return [int(r[0]) for r in rows]

    async def count_rated_between(self, a: int, b: int, since: float) -> int:
        """Rated matches between players `a` and `b` created since `since` (anti-farming)."""
        rows = await self._fetchall(
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
            sql += " AND " + self.dialect.json_equals("options", ("starter", "ident"))
            params.append(json.dumps(starter))
        rows = await self._fetchall(sql, params)
        return int(rows[0][0])

    # ------------------------------------------------------------------ ratings & stats

    async def leaderboard(
        self,
        game: str,
        limit: int = 10,
        guild_id: int | None = None,
        *,
        include_agents: bool = True,
        min_games: int = 1,
    ) -> list[LeaderboardEntry]:
        """Top players of ``game`` by ordinal (mu - 3*sigma), best first.

        With ``guild_id``: only players who played a finished ``game`` match in
        that guild (ratings themselves are global).
        """
        sql = (
            "SELECT r.player_id, r.game, r.mu, r.sigma, r.games, r.wins, r.draws, r.losses,"
            " r.updated_at FROM ratings r JOIN players p ON p.id = r.player_id"
            " WHERE r.game = ? AND r.games >= ?"
        )
        params: list[Any] = [game, min_games]
        if not include_agents:
            sql += " AND p.kind <> 'agent'"
        if guild_id is not None:
            sql += (
                " AND r.player_id IN ("
                " SELECT player0_id FROM matches WHERE guild_id = ? AND game = ?"
                " AND status = 'finished'"
                " UNION SELECT player1_id FROM matches WHERE guild_id = ? AND game = ?"
                " AND status = 'finished')"
            )
            params += [guild_id, game, guild_id, game]
        sql += " ORDER BY r.mu - 3 * r.sigma DESC, r.games DESC, r.player_id LIMIT ?"
        params.append(limit)
        async with self._read() as conn:
            ratings = decodable(await query(conn, sql, params), decode_rating)
            players = await _players_by_id(conn, (r.player_id for r in ratings))
        # A rating whose player does not decode is left out with it (reported once).
        shown = [r for r in ratings if r.player_id in players]
        return [
            LeaderboardEntry(rank=i, player=players[r.player_id], rating=r)
            for i, r in enumerate(shown, start=1)
        ]

    async def player_stats(self, player_id: int) -> list[PlayerStats]:
        """Per game: W/D/L over all decided matches (rated or not) and the rating."""
        async with self._read() as conn:
            rows = await query(
                conn,
                "SELECT game, COUNT(*) AS played,"
                " SUM(CASE WHEN (result = '0' AND player0_id = ?)"
                "   OR (result = '1' AND player1_id = ?) THEN 1 ELSE 0 END) AS wins,"
                " SUM(CASE WHEN result = 'draw' THEN 1 ELSE 0 END) AS draws,"
                " SUM(CASE WHEN (result = '1' AND player0_id = ?)"
                "   OR (result = '0' AND player1_id = ?) THEN 1 ELSE 0 END) AS losses"
                " FROM matches WHERE (player0_id = ? OR player1_id = ?)"
                " AND status <> 'live' AND result IS NOT NULL GROUP BY game",
                (player_id,) * 6,
            )
            rating_rows = await query(
                conn, f"SELECT {RATING_COLS} FROM ratings WHERE player_id = ?", (player_id,)
            )
        ratings = {r.game: r for r in decodable(rating_rows, decode_rating)}
        totals = {
            row["game"]: (row["played"], row["wins"], row["draws"], row["losses"]) for row in rows
        }
        out = []
        for game in sorted(set(totals) | set(ratings)):
            played, wins, draws, losses = totals.get(game, (0, 0, 0, 0))
            out.append(PlayerStats(game, played, wins, draws, losses, ratings.get(game)))
        return out

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
        async with self._read() as conn:
            matches = decodable_matches(await query(conn, sql, params))
            opponent_ids = [
                m.player1_id if m.player0_id == player_id else m.player0_id for m in matches
            ]
            players = await _players_by_id(conn, opponent_ids)
        out = []
        for m, opp in zip(matches, opponent_ids, strict=True):
            if opp not in players:  # the opponent's row does not decode (reported once)
                continue
            seat = 0 if m.player0_id == player_id else 1
            out.append(HistoryEntry(m, seat, players[opp], m.outcome_for(player_id)))
        return out


# ---------------------------------------------------------------------- helpers


async def _players_by_id(conn: Tx, ids: Iterable[int]) -> dict[int, Player]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    # One JSON parameter keeps the statement text constant however many ids there are.
    rows = await query(
        conn,
        f"SELECT {PLAYER_COLS} FROM players WHERE id IN ({conn.dialect.ids_from_json})",
        (json.dumps(wanted),),
    )
    return {p.id: p for p in decodable(rows, decode_player)}


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


async def _ratings_for(
    conn: Tx, player_ids: Collection[int], game: str
) -> dict[int, Rating | None]:
    out: dict[int, Rating | None] = dict.fromkeys(player_ids)
    rows = await query(
        conn,
        f"SELECT {RATING_COLS} FROM ratings WHERE game = ?"
        f" AND player_id IN ({conn.dialect.ids_from_json})",
        (game, json.dumps(sorted(player_ids))),
    )
    for r in map(decode_rating, rows):
        out[r.player_id] = r
    return out


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
