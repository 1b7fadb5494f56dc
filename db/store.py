"""The bot's only gateway to SQLite.

Concurrency model (why it looks like this):

* ONE aiosqlite connection in autocommit mode (``isolation_level=None``).
  Python's implicit transactions are off, so we decide exactly where every
  transaction starts and ends.
* Every operation takes ``self._lock``.  Two coroutines sharing a connection
  share its transaction: without the lock, coroutine B's statements would run
  inside A's half-done transaction and be committed (or rolled back) by A.
  Reads take the lock too, so they never observe another coroutine's
  uncommitted writes.
* Every write runs in ``BEGIN IMMEDIATE ... COMMIT`` (ROLLBACK and re-raise on
  any error).  Under WAL a deferred transaction that reads and then writes
  fails immediately with "database is locked" if another process wrote in
  between, ignoring the busy timeout; IMMEDIATE takes the write lock up front
  and waits properly.  It also makes "read, check, write" atomic, which is
  what makes ``append_move`` apply a contested click exactly once.
* ``synchronous=FULL``: a move acknowledged to a player must survive a power
  cut.  The cost (~one fsync per transaction) is why batches (agent memory)
  are written in a single transaction.

Timestamps are ``time.time()`` floats (UTC epoch seconds) everywhere.
The store never imports the engine: moves are opaque text, blobs opaque bytes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import re
import sqlite3
import time
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Generator,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeAlias, cast

import aiosqlite

import faults

from .errors import (
    ChallengeClosedError,
    CorruptRowError,
    MatchNotFoundError,
    MatchNotLiveError,
    PlayerNotFoundError,
    StaleMoveError,
    StaleRatingError,
    StoreClosedError,
)
from .migrations import LATEST_VERSION, apply_migrations, rollback_quietly, user_version
from .models import (
    CHALLENGE_STATUSES,
    MATCH_KINDS,
    MATCH_STATUSES,
    PLAYER_KINDS,
    RESULTS,
    TERMINATIONS,
    Challenge,
    ChallengeStatus,
    Finish,
    HistoryEntry,
    LeaderboardEntry,
    Match,
    MatchKind,
    MatchStatus,
    MemoryInfo,
    MemoryWrite,
    MoveRow,
    NewMove,
    OutboxItem,
    Player,
    PlayerKind,
    PlayerStats,
    Rating,
    Result,
)

__all__ = ["AUTO", "RatingFn", "Store"]

log = logging.getLogger(__name__)

#: Sentinel for ``turn_deadline``: "now + match.turn_seconds, or None if untimed".
AUTO: Literal["auto"] = "auto"
Deadline: TypeAlias = float | Literal["auto"] | None
#: Computes new ratings inside ``finish_match``'s transaction from the current
#: rows (keyed by player id; ``None`` = player has no rating in this game yet).
RatingFn: TypeAlias = Callable[[Match, Mapping[int, Rating | None]], Sequence[Rating]]
Params: TypeAlias = Sequence[Any] | Mapping[str, Any]

_GAME_RE = re.compile(r"^[a-z0-9_]+$")
_COUNTER_RE = re.compile(r"^[a-z_]{1,32}$")

_PLAYER_COLS = "id, kind, display_name, discord_id, agent_key, local_name, created_at, updated_at"
_MATCH_COLS = (
    "id, game, variant, kind, player0_id, player1_id, status, result, termination, rated, "
    "guild_id, channel_id, message_id, created_at, updated_at, finished_at, turn_deadline, "
    "turn_seconds, options, ply"
)
#: Outbox rows failing this many times are no longer retried.
OUTBOX_GIVE_UP = 20
_CHALLENGE_COLS = (
    "id, game, challenger_id, opponent_id, guild_id, channel_id, message_id, status,"
    " created_at, expires_at, answered_at, match_id"
)
_OUTBOX_COLS = "id, kind, match_id, payload, created_at, attempts, last_error"
_NOT_SET_ASIDE = "id NOT IN (SELECT match_id FROM match_faults)"
_EXPIRED = (
    "SELECT id FROM matches WHERE status = 'live' AND turn_deadline IS NOT NULL"
    f" AND turn_deadline < ? AND {_NOT_SET_ASIDE}"
)
_MOVE_COLS = "match_id, ply, move, player_id, created_at, think_ms, fallback"
_RATING_COLS = "player_id, game, mu, sigma, games, wins, draws, losses, updated_at"


class _Opener:
    """What :meth:`Store.open` returns: await it, or use it with ``async with``."""

    def __init__(self, path: str | os.PathLike[str], clock: Callable[[], float]) -> None:
        self._path = path
        self._clock = clock
        self._store: Store | None = None

    def __await__(self) -> Generator[Any, None, Store]:
        return Store._open(self._path, self._clock).__await__()

    async def __aenter__(self) -> Store:
        self._store = await Store._open(self._path, self._clock)
        return self._store

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._store is not None:
            await self._store.close()


class Store:
    """Async persistence for players, matches, moves, ratings, settings, agent memory.

    Create with ``store = await Store.open(path)`` (close with
    ``await store.close()``) or ``async with Store.open(path) as store:``.
    """

    def __init__(self, conn: aiosqlite.Connection, path: str, clock: Callable[[], float]) -> None:
        """Private: use :meth:`open`, which configures the connection and migrates."""
        self._conn: aiosqlite.Connection | None = conn
        self._path = path
        self._clock = clock
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
    ) -> _Opener:
        """Open (creating parent directories and the file if needed) and migrate.

        ``clock`` supplies timestamps; tests may inject a fake one.
        """
        return _Opener(path, clock)

    @classmethod
    async def _open(cls, path: str | os.PathLike[str], clock: Callable[[], float]) -> Store:
        spath = os.fspath(path)
        memory = spath == ":memory:" or spath.startswith("file::memory:")
        if not memory:
            Path(spath).parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(spath, isolation_level=None)
        try:
            conn.row_factory = sqlite3.Row
            # Pragmas first, outside any transaction (journal_mode and
            # foreign_keys are silently ignored inside one).
            await conn.execute("PRAGMA busy_timeout = 5000")
            rows = list(await conn.execute_fetchall("PRAGMA journal_mode = WAL"))
            mode = str(rows[0][0]).lower()
            if mode != "wal" and not memory:
                log.warning("SQLite refused WAL for %s (journal_mode=%s)", spath, mode)
            await conn.execute("PRAGMA synchronous = FULL")
            await conn.execute("PRAGMA foreign_keys = ON")
            rows = list(await conn.execute_fetchall("PRAGMA foreign_keys"))
            if int(rows[0][0]) != 1:
                raise RuntimeError("this SQLite build cannot enforce foreign keys")
            await apply_migrations(conn, spath)
        except BaseException:
            await conn.close()
            raise
        return cls(conn, spath, clock)

    async def close(self) -> None:
        """Wait for in-flight operations, then close.  Idempotent."""
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            try:
                await conn.execute("PRAGMA optimize")
            except sqlite3.Error:  # pragma: no cover - best effort only
                log.debug("PRAGMA optimize failed", exc_info=True)
            finally:
                await conn.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def path(self) -> str:
        return self._path

    @property
    def closed(self) -> bool:
        return self._conn is None

    async def diagnostics(self) -> dict[str, Any]:
        """Effective connection settings, for an admin/status command and tests."""
        out: dict[str, Any] = {"path": self._path, "schema_known": LATEST_VERSION}
        async with self._read() as conn:
            for pragma in ("journal_mode", "foreign_keys", "synchronous", "busy_timeout"):
                rows = await _q(conn, f"PRAGMA {pragma}")
                out[pragma] = rows[0][0]
            out["user_version"] = await user_version(conn)
        return out

    # ------------------------------------------------------------------ plumbing

    def _require_open(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreClosedError(f"store {self._path!r} is closed")
        return self._conn

    @asynccontextmanager
    async def _write(self, op: str) -> AsyncIterator[aiosqlite.Connection]:
        """The one way to write: lock + BEGIN IMMEDIATE ... COMMIT, ROLLBACK on error.

        ``op`` names the operation for fault injection (``faults.py``: the points ``write``
        and ``write:<op>``).
        """
        async with self._lock:
            conn = self._require_open()
            fault = _injected(op)
            try:
                # BEGIN is inside the try: a task cancelled while BEGIN waits for another
                # process's lock would otherwise leave the transaction open once BEGIN
                # completes on the connection's thread, and every later write would fail.
                # ROLLBACK is queued on that thread after BEGIN, before the lock is released.
                if fault == _FAULTS["locked"]:
                    raise sqlite3.OperationalError(fault)  # SQLite's busy timeout ran out
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
                if fault is not None:  # a full disk or an I/O error shows when pages are written
                    raise sqlite3.OperationalError(fault)
                await conn.execute("COMMIT")
            except BaseException:
                await rollback_quietly(conn)
                raise
        faults.after("write")
        faults.after(f"write:{op}")

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            yield self._require_open()

    async def _fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        async with self._read() as conn:
            return await _q(conn, sql, params)

    # ------------------------------------------------------------------ players

    async def get_or_create_user(self, discord_id: int, name: str) -> Player:
        """The player for a Discord user; refreshes ``display_name`` if it changed."""
        return await self._get_or_create("user", "discord_id", int(discord_id), name)

    async def get_or_create_agent(self, agent_key: str, name: str) -> Player:
        """The player for an AI agent (``agent_key`` e.g. ``'connect4:medium'``)."""
        return await self._get_or_create(
            "agent", "agent_key", _nonempty("agent_key", agent_key), name
        )

    async def get_or_create_local(self, local_name: str, name: str | None = None) -> Player:
        """A console (non-Discord) human, unique by ``local_name``; kind ``'local'``."""
        local_name = _nonempty("local_name", local_name)
        return await self._get_or_create("local", "local_name", local_name, name or local_name)

    async def _get_or_create(
        self, kind: PlayerKind, column: str, ident: int | str, name: str
    ) -> Player:
        name = _nonempty("name", name)
        select = f"SELECT {_PLAYER_COLS} FROM players WHERE {column} = ?"
        # Fast path without a write transaction (one fsync saved per click).
        rows = await self._fetchall(select, (ident,))
        if rows and _player(rows[0]).display_name == name:
            return _player(rows[0])
        async with self._write("player") as conn:
            now = self._clock()
            rows = await _q(conn, select, (ident,))
            if not rows:
                rows = await _q(
                    conn,
                    f"INSERT INTO players (kind, {column}, display_name, created_at, updated_at)"
                    f" VALUES (?, ?, ?, ?, ?) RETURNING {_PLAYER_COLS}",
                    (kind, ident, name, now, now),
                )
            elif _player(rows[0]).display_name != name:
                rows = await _q(
                    conn,
                    "UPDATE players SET display_name = ?, updated_at = ? WHERE id = ?"
                    f" RETURNING {_PLAYER_COLS}",
                    (name, now, rows[0]["id"]),
                )
            return _player(rows[0])

    async def get_player(self, player_id: int) -> Player | None:
        rows = await self._fetchall(
            f"SELECT {_PLAYER_COLS} FROM players WHERE id = ?", (player_id,)
        )
        return _player(rows[0]) if rows else None

    async def get_players(self, player_ids: Iterable[int]) -> dict[int, Player]:
        """Players by id; ids that do not exist are simply absent from the result."""
        async with self._read() as conn:
            return await _players_by_id(conn, player_ids)

    async def find_local(self, local_name: str) -> Player | None:
        rows = await self._fetchall(
            f"SELECT {_PLAYER_COLS} FROM players WHERE local_name = ?", (local_name.strip(),)
        )
        return _player(rows[0]) if rows else None

    async def find_user(self, discord_id: int) -> Player | None:
        rows = await self._fetchall(
            f"SELECT {_PLAYER_COLS} FROM players WHERE discord_id = ?", (int(discord_id),)
        )
        return _player(rows[0]) if rows else None

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
        _check_game(game)
        if kind not in MATCH_KINDS:
            raise ValueError(f"kind must be one of {sorted(MATCH_KINDS)}, got {kind!r}")
        if turn_seconds is not None and not (math.isfinite(turn_seconds) and turn_seconds > 0):
            raise ValueError(f"turn_seconds must be a positive number, got {turn_seconds!r}")
        if rated and player0_id == player1_id:
            raise ValueError("a player cannot play a rated match against themselves")
        options_json = _dump_json_object("options", options or {})
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
            rows = await _q(
                conn,
                "INSERT INTO matches (game, variant, kind, player0_id, player1_id, rated,"
                " guild_id, channel_id, message_id, created_at, updated_at, turn_deadline,"
                " turn_seconds, options)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                f" RETURNING {_MATCH_COLS}",
                (
                    game,
                    _nonempty("variant", variant),
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
            match = _match(rows[0])
            if accepts is not None:
                await _close_challenge(conn, accepts, "accepted", now, match.id)
            return match

    async def get_match(self, match_id: int) -> Match | None:
        rows = await self._fetchall(f"SELECT {_MATCH_COLS} FROM matches WHERE id = ?", (match_id,))
        return _match(rows[0]) if rows else None

    async def live_matches(self, player_id: int | None = None) -> list[Match]:
        """Live matches, oldest first, optionally of one player; set-aside matches and rows
        that do not decode are left out (logged), so one bad row hides nothing else."""
        sql = f"SELECT {_MATCH_COLS} FROM matches WHERE status = 'live' AND {_NOT_SET_ASIDE}"
        params: tuple[int, ...] = ()
        if player_id is not None:
            sql += " AND (player0_id = ? OR player1_id = ?)"
            params = (player_id, player_id)
        rows = await self._fetchall(sql + " ORDER BY created_at, id", params)
        return _decodable_matches(rows)

    async def live_match_ids(self) -> list[int]:
        """Ids of the live matches not set aside, oldest first (restart recovery reads each
        match on its own, so one that fails cannot stop the others)."""
        rows = await self._fetchall(
            f"SELECT id FROM matches WHERE status = 'live' AND {_NOT_SET_ASIDE}"
            " ORDER BY created_at, id"
        )
        return [int(r[0]) for r in rows]

    async def agent_turn_ids(self) -> list[int]:
        """Live matches (not set aside) where no person's clock runs: an agent is to move
        (a person to move always has a deadline)."""
        rows = await self._fetchall(
            "SELECT id FROM matches WHERE status = 'live' AND kind <> 'pvp'"
            f" AND turn_deadline IS NULL AND {_NOT_SET_ASIDE} ORDER BY id"
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
            f" AND message_id IS NOT NULL AND {_NOT_SET_ASIDE} ORDER BY id"
        )
        return [int(r[0]) for r in rows]

    async def set_aside(self, match_id: int, reason: str) -> None:
        """Mark a match that fails in a way a retry cannot mend: recovery and clocks skip it."""
        async with self._write("set_aside") as conn:
            await conn.execute(
                "INSERT INTO match_faults (match_id, reason, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT (match_id) DO UPDATE SET reason = excluded.reason",
                (match_id, _nonempty("reason", reason)[:500], self._clock()),
            )

    async def set_aside_matches(self) -> dict[int, str]:
        """Every set-aside match with its reason."""
        rows = await self._fetchall("SELECT match_id, reason FROM match_faults ORDER BY match_id")
        return {int(r[0]): str(r[1]) for r in rows}

    async def live_match_for_player(self, player_id: int) -> Match | None:
        """The player's most recently created live match, if any."""
        rows = await self._fetchall(
            f"SELECT {_MATCH_COLS} FROM matches WHERE status = 'live' AND {_NOT_SET_ASIDE}"
            " AND (player0_id = ? OR player1_id = ?) ORDER BY created_at DESC, id DESC LIMIT 1",
            (player_id, player_id),
        )
        return _match(rows[0]) if rows else None

    async def set_message(
        self, match_id: int, guild_id: int | None, channel_id: int | None, message_id: int | None
    ) -> Match:
        """Record where the match board is displayed (known only after sending it)."""
        async with self._write("set_message") as conn:
            rows = await _q(
                conn,
                "UPDATE matches SET guild_id = ?, channel_id = ?, message_id = ?, updated_at = ?"
                f" WHERE id = ? RETURNING {_MATCH_COLS}",
                (guild_id, channel_id, message_id, self._clock(), match_id),
            )
            if not rows:
                raise MatchNotFoundError(match_id)
            return _match(rows[0])

    async def set_turn_deadline(self, match_id: int, turn_deadline: Deadline) -> Match:
        """Move the clock of a live match (e.g. grant grace time after a restart)."""
        async with self._write("set_turn_deadline") as conn:
            m = await _live_match(conn, match_id)
            deadline = _resolve_deadline(turn_deadline, self._clock(), m.turn_seconds)
            rows = await _q(
                conn,
                f"UPDATE matches SET turn_deadline = ? WHERE id = ? RETURNING {_MATCH_COLS}",
                (deadline, match_id),
            )
            return _match(rows[0])

    async def update_match_options(self, match_id: int, changes: Mapping[str, Any]) -> Match:
        """Shallow-merge ``changes`` into ``options`` (a key mapped to None is removed)."""
        async with self._write("update_match_options") as conn:
            m = await _get_match(conn, match_id)
            merged = _merge(m.options, changes)
            rows = await _q(
                conn,
                "UPDATE matches SET options = ?, updated_at = ? WHERE id = ?"
                f" RETURNING {_MATCH_COLS}",
                (_dump_json_object("options", merged), self._clock(), match_id),
            )
            return _match(rows[0])

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

        Checks, inside one BEGIN IMMEDIATE transaction, that the match is live
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

    async def finish_match(
        self,
        match_id: int,
        status: MatchStatus,
        result: Result | None,
        termination: str,
        rating_updates: Sequence[Rating] | RatingFn | None = None,
        *,
        expected_ply: int | None = None,
        outbox: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> Match:
        """End a live match and write its rating changes in ONE transaction.

        A crash can therefore never leave a finished match without its rating
        change, or a rating change without its finished match.

        * ``status``: ``'finished'`` (``result`` required) or ``'abandoned'``
          (``result`` optional; ``None`` voids the match).
        * ``rating_updates``: new :class:`Rating` rows for the seats (only for
          a ``rated`` match), either as a sequence -- each row's ``games`` must
          be the stored ``games + 1`` (else :class:`StaleRatingError`: the
          rows were computed from stale ratings) -- or as a callable
          ``fn(match, current_ratings_by_player_id) -> ratings`` that runs
          inside the transaction, so it always sees fresh rows.  Keep it fast
          and pure: the store is locked while it runs.
        * ``expected_ply``: refuse (:class:`StaleMoveError`) if a move landed
          since the caller looked -- e.g. a time-forfeit racing a last-second move.
        * ``outbox``: ``(kind, payload)`` rows of work to do after the finish (learning),
          written in the same transaction.

        Raises :class:`MatchNotLiveError` if the match is already over.
        """
        return await self.commit_step(
            match_id,
            expected_ply,
            (),
            finish=Finish(status, result, termination, rating_updates),
            outbox=outbox,
            op="finish_match",
        )

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

        The match must be live and at ``expected_ply`` (None: any ply; only with no moves).
        ``turn_deadline`` is the clock of the player to move after the moves (see
        :meth:`append_move`); a finish clears it. A kill at any moment leaves the match either
        before the step or after all of it.
        """
        new_moves = [
            NewMove(_nonempty("move", mv.move), mv.player_id, mv.think_ms, mv.fallback)
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
        outbox_rows = [(_nonempty("kind", k), _dump_json_object("payload", p)) for k, p in outbox]
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
                    f"INSERT INTO moves ({_MOVE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
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
                    " final_shown = (message_id IS NULL) WHERE id = ?",
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
        conn: aiosqlite.Connection,
        m: Match,
        updates: Sequence[Rating] | RatingFn,
        now: float,
    ) -> None:
        if not m.rated:
            raise ValueError(f"match {m.id} is unrated; it must not change ratings")
        seats = set(m.player_ids)
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
        # sqlite3.IntegrityError here and roll back the whole finish.
        await conn.executemany(
            f"INSERT INTO ratings ({_RATING_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (player_id, game) DO UPDATE SET mu = excluded.mu,"
            " sigma = excluded.sigma, games = excluded.games, wins = excluded.wins,"
            " draws = excluded.draws, losses = excluded.losses, updated_at = excluded.updated_at",
            [
                (r.player_id, r.game, r.mu, r.sigma, r.games, r.wins, r.draws, r.losses, now)
                for r in new
            ],
        )

    async def moves(self, match_id: int) -> list[MoveRow]:
        """All moves of a match in ply order (replay them to rebuild the position)."""
        rows = await self._fetchall(
            f"SELECT {_MOVE_COLS} FROM moves WHERE match_id = ? ORDER BY ply", (match_id,)
        )
        return [_move(r) for r in rows]

    async def expired_turns(self, now: float) -> list[Match]:
        """Live matches whose player to move has run out of time, earliest first."""
        sql = f"SELECT {_MATCH_COLS} FROM matches WHERE id IN ({_EXPIRED})"
        rows = await self._fetchall(sql + " ORDER BY turn_deadline, id", (now,))
        return _decodable_matches(rows)

    async def expired_turn_ids(self, now: float) -> list[int]:
        """Ids of the matches of :meth:`expired_turns` (each is then read on its own)."""
        rows = await self._fetchall(_EXPIRED + " ORDER BY turn_deadline, id", (now,))
        return [int(r[0]) for r in rows]

    async def count_rated_between(self, a: int, b: int, since: float) -> int:
        """Rated matches between players `a` and `b` created since `since` (anti-farming)."""
        rows = await self._fetchall(
            "SELECT COUNT(*) FROM matches WHERE rated = 1 AND created_at >= ?"
            " AND ((player0_id = ? AND player1_id = ?) OR (player0_id = ? AND player1_id = ?))",
            (since, a, b, b, a),
        )
        return int(rows[0][0])

    # ------------------------------------------------------------------ challenges

    async def create_challenge(
        self,
        game: str,
        challenger_id: int,
        opponent_id: int,
        expires_at: float,
        *,
        guild_id: int | None = None,
        channel_id: int | None = None,
    ) -> Challenge:
        _check_game(game)
        if challenger_id == opponent_id:
            raise ValueError("a player cannot challenge themselves")
        async with self._write("create_challenge") as conn:
            rows = await _q(
                conn,
                "INSERT INTO challenges (game, challenger_id, opponent_id, guild_id, channel_id,"
                " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                f" RETURNING {_CHALLENGE_COLS}",
                (game, challenger_id, opponent_id, guild_id, channel_id, self._clock(), expires_at),
            )
            return _challenge(rows[0])

    async def get_challenge(self, challenge_id: int) -> Challenge | None:
        rows = await self._fetchall(
            f"SELECT {_CHALLENGE_COLS} FROM challenges WHERE id = ?", (challenge_id,)
        )
        return _challenge(rows[0]) if rows else None

    async def set_challenge_message(self, challenge_id: int, message_id: int) -> None:
        async with self._write("set_challenge_message") as conn:
            await conn.execute(
                "UPDATE challenges SET message_id = ? WHERE id = ?", (message_id, challenge_id)
            )

    async def close_challenge(
        self, challenge_id: int, status: Literal["declined", "withdrawn"]
    ) -> Challenge:
        """Decline or withdraw a pending challenge (ChallengeClosedError if it is not)."""
        async with self._write("close_challenge") as conn:
            await _close_challenge(conn, challenge_id, status, self._clock(), None)
            rows = await _q(
                conn, f"SELECT {_CHALLENGE_COLS} FROM challenges WHERE id = ?", (challenge_id,)
            )
            return _challenge(rows[0])

    async def expire_challenges(self, now: float) -> list[Challenge]:
        """Mark every pending challenge whose time is up as expired; those challenges."""
        due = await self._fetchall(
            "SELECT 1 FROM challenges WHERE status = 'pending' AND expires_at <= ? LIMIT 1",
            (now,),
        )
        if not due:  # the clock asks every second: no write (and no fsync) for nothing
            return []
        async with self._write("expire_challenges") as conn:
            rows = await _q(
                conn,
                "UPDATE challenges SET status = 'expired', answered_at = ?"
                f" WHERE status = 'pending' AND expires_at <= ? RETURNING {_CHALLENGE_COLS}",
                (now, now),
            )
            return [_challenge(r) for r in rows]

    async def pending_challenges(
        self, challenger_id: int | None = None, opponent_id: int | None = None
    ) -> list[Challenge]:
        sql = f"SELECT {_CHALLENGE_COLS} FROM challenges WHERE status = 'pending'"
        params: list[Any] = []
        if challenger_id is not None:
            sql += " AND challenger_id = ?"
            params.append(challenger_id)
        if opponent_id is not None:
            sql += " AND opponent_id = ?"
            params.append(opponent_id)
        rows = await self._fetchall(sql + " ORDER BY id", params)
        return [_challenge(r) for r in rows]

    async def last_challenge_between(self, a: int, b: int) -> Challenge | None:
        """The newest challenge between two players, either way round."""
        rows = await self._fetchall(
            f"SELECT {_CHALLENGE_COLS} FROM challenges WHERE (challenger_id = ? AND"
            " opponent_id = ?) OR (challenger_id = ? AND opponent_id = ?)"
            " ORDER BY created_at DESC, id DESC LIMIT 1",
            (a, b, b, a),
        )
        return _challenge(rows[0]) if rows else None

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
            sql += " AND json_extract(options, '$.starter.ident') = ?"
            params.append(starter)
        rows = await self._fetchall(sql, params)
        return int(rows[0][0])

    # ------------------------------------------------------------------ ratings & stats

    async def get_rating(self, player_id: int, game: str) -> Rating | None:
        rows = await self._fetchall(
            f"SELECT {_RATING_COLS} FROM ratings WHERE player_id = ? AND game = ?",
            (player_id, game),
        )
        return _rating(rows[0]) if rows else None

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
            ratings = [_rating(row) for row in await _q(conn, sql, params)]
            players = await _players_by_id(conn, (r.player_id for r in ratings))
        return [
            LeaderboardEntry(rank=i, player=players[r.player_id], rating=r)
            for i, r in enumerate(ratings, start=1)
        ]

    async def player_stats(self, player_id: int) -> list[PlayerStats]:
        """Per game: W/D/L over all decided matches (rated or not) and the rating."""
        async with self._read() as conn:
            rows = await _q(
                conn,
                "SELECT game, COUNT(*) AS played,"
                " SUM(CASE WHEN (result = '0' AND player0_id = :p)"
                "   OR (result = '1' AND player1_id = :p) THEN 1 ELSE 0 END) AS wins,"
                " SUM(CASE WHEN result = 'draw' THEN 1 ELSE 0 END) AS draws,"
                " SUM(CASE WHEN (result = '1' AND player0_id = :p)"
                "   OR (result = '0' AND player1_id = :p) THEN 1 ELSE 0 END) AS losses"
                " FROM matches WHERE (player0_id = :p OR player1_id = :p)"
                " AND status <> 'live' AND result IS NOT NULL GROUP BY game",
                {"p": player_id},
            )
            rating_rows = await _q(
                conn, f"SELECT {_RATING_COLS} FROM ratings WHERE player_id = ?", (player_id,)
            )
        ratings = {r.game: r for r in map(_rating, rating_rows)}
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
            f"SELECT {_MATCH_COLS} FROM matches WHERE (player0_id = ? OR player1_id = ?)"
            " AND status <> 'live'"
        )
        params: list[Any] = [player_id, player_id]
        if game is not None:
            sql += " AND game = ?"
            params.append(game)
        sql += " ORDER BY finished_at DESC, id DESC LIMIT ?"
        params.append(limit)
        async with self._read() as conn:
            matches = [_match(r) for r in await _q(conn, sql, params)]
            opponent_ids = [
                m.player1_id if m.player0_id == player_id else m.player0_id for m in matches
            ]
            players = await _players_by_id(conn, opponent_ids)
        out = []
        for m, opp in zip(matches, opponent_ids, strict=True):
            seat = 0 if m.player0_id == player_id else 1
            out.append(HistoryEntry(m, seat, players[opp], m.outcome_for(player_id)))
        return out

    # ------------------------------------------------------------------ guild settings

    async def get_guild_settings(self, guild_id: int) -> dict[str, Any]:
        """The guild's settings object; ``{}`` if never set."""
        rows = await self._fetchall(
            "SELECT guild_id, settings FROM guild_settings WHERE guild_id = ?", (guild_id,)
        )
        if not rows:
            return {}
        return _Row("guild_settings", rows[0], ("guild_id",)).json_object("settings")

    async def set_guild_settings(self, guild_id: int, settings: Mapping[str, Any]) -> None:
        """Replace the guild's settings object wholesale."""
        payload = _dump_json_object("settings", settings)
        async with self._write("guild_settings") as conn:
            await _upsert_guild_settings(conn, guild_id, payload, self._clock())

    async def update_guild_settings(
        self, guild_id: int, changes: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Atomically shallow-merge ``changes`` (None removes a key); return the result."""
        async with self._write("guild_settings") as conn:
            rows = await _q(
                conn,
                "SELECT guild_id, settings FROM guild_settings WHERE guild_id = ?",
                (guild_id,),
            )
            current = (
                _Row("guild_settings", rows[0], ("guild_id",)).json_object("settings")
                if rows
                else {}
            )
            merged = _merge(current, changes)
            payload = _dump_json_object("settings", merged)
            await _upsert_guild_settings(conn, guild_id, payload, self._clock())
            return merged

    # ------------------------------------------------------------------ agent memory

    async def memory_put(
        self,
        kind: str,
        name: str,
        items: Iterable[tuple[bytes | str, bytes]],
        *,
        replace: bool = False,
        games_trained_delta: int = 0,
        meta: Mapping[str, Any] | None = None,
    ) -> int:
        """Upsert many (key, value) rows of memory ``(kind, name)`` in ONE transaction.

        One transaction (one fsync) instead of one per row is the difference
        between milliseconds and seconds for a few thousand rows.  ``str`` keys
        are stored as their UTF-8 bytes (so ``'a'`` and ``b'a'`` are the same
        key); keys always come back as ``bytes``.  ``replace=True`` deletes the
        memory's other rows first (a full snapshot).  ``games_trained_delta``
        and ``meta`` (replaces the meta object) are updated in the same
        transaction, so a checkpoint is all-or-nothing.  Returns the number of
        rows written.
        """
        kind = _nonempty("kind", kind)
        name = _nonempty("name", name)
        if games_trained_delta < 0:
            raise ValueError("games_trained_delta must be >= 0")
        meta_json = _dump_json_object("meta", meta) if meta is not None else None
        now = self._clock()
        rows = [(kind, name, _key_bytes(k), _value_bytes(v), now) for k, v in items]
        async with self._write("memory_put") as conn:
            await _ensure_memory_meta(conn, kind, name, now)
            await conn.execute(
                "UPDATE agent_memory_meta SET games_trained = games_trained + ?,"
                " meta = coalesce(?, meta), updated_at = ? WHERE kind = ? AND name = ?",
                (games_trained_delta, meta_json, now, kind, name),
            )
            if replace:
                await conn.execute(
                    "DELETE FROM agent_memory WHERE kind = ? AND name = ?", (kind, name)
                )
            await conn.executemany(
                "INSERT INTO agent_memory (kind, name, key, value, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, name, key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                rows,
            )
        return len(rows)

    async def memory_apply(
        self, writes: Sequence[MemoryWrite], *, outbox_id: int | None = None
    ) -> bool:
        """Write several memories (rows upserted, games_trained increased) in ONE transaction.

        With ``outbox_id``, that outbox row is deleted in the same transaction, and nothing is
        written if it is already gone (returns False): work taken from the outbox is applied
        exactly once, even if it is retried after a kill.
        """
        prepared = []
        for w in writes:
            kind, name = _nonempty("kind", w.kind), _nonempty("name", w.name)
            if w.games < 0:
                raise ValueError("games must be >= 0")
            if w.counter is not None and not _COUNTER_RE.match(w.counter):
                raise ValueError(f"counter must match {_COUNTER_RE.pattern}, got {w.counter!r}")
            rows = [(_key_bytes(k), _value_bytes(v)) for k, v in w.rows.items()]
            prepared.append((kind, name, rows, w.games, w.counter))
        async with self._write("memory_apply") as conn:
            if outbox_id is not None:
                cursor = await conn.execute("DELETE FROM outbox WHERE id = ?", (outbox_id,))
                if cursor.rowcount == 0:
                    return False
            now = self._clock()
            for kind, name, rows, games, counter in prepared:
                await _ensure_memory_meta(conn, kind, name, now)
                await conn.execute(
                    "UPDATE agent_memory_meta SET games_trained = games_trained + ?,"
                    " updated_at = ? WHERE kind = ? AND name = ?",
                    (games, now, kind, name),
                )
                if counter is not None:
                    path = f"$.{counter}"
                    await conn.execute(
                        "UPDATE agent_memory_meta SET meta = json_set(meta, ?,"
                        " coalesce(json_extract(meta, ?), 0) + ?) WHERE kind = ? AND name = ?",
                        (path, path, games, kind, name),
                    )
                await conn.executemany(
                    "INSERT INTO agent_memory (kind, name, key, value, updated_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, name, key)"
                    " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    [(kind, name, key, value, now) for key, value in rows],
                )
        return True

    # ------------------------------------------------------------------ outbox

    async def outbox_pending(
        self, kind: str | None = None, *, max_attempts: int = OUTBOX_GIVE_UP, limit: int = 100
    ) -> list[OutboxItem]:
        """Outbox rows still to apply, oldest first (rows that failed `max_attempts` times
        are kept for inspection but no longer returned)."""
        sql = f"SELECT {_OUTBOX_COLS} FROM outbox WHERE attempts < ?"
        params: list[Any] = [max_attempts]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        rows = await self._fetchall(sql + " ORDER BY id LIMIT ?", [*params, limit])
        return [_outbox(r) for r in rows]

    async def outbox_done(self, outbox_id: int) -> bool:
        """Delete an outbox row that needed no write; False if it was already gone."""
        async with self._write("outbox_done") as conn:
            cursor = await conn.execute("DELETE FROM outbox WHERE id = ?", (outbox_id,))
            return cursor.rowcount > 0

    async def outbox_failed(self, outbox_id: int, error: str, *, final: bool = False) -> None:
        """Count a failed attempt (a row failing every time stops being retried); `final`:
        no retry can mend it, so it is never returned again (kept for inspection)."""
        async with self._write("outbox_failed") as conn:
            await conn.execute(
                "UPDATE outbox SET attempts = CASE WHEN ? THEN max(attempts + 1, ?)"
                " ELSE attempts + 1 END, last_error = ? WHERE id = ?",
                (final, OUTBOX_GIVE_UP, error[:500], outbox_id),
            )

    async def memory_get(self, kind: str, name: str) -> dict[bytes, bytes]:
        """Every (key, value) row of one memory ({} if it does not exist)."""
        rows = await self._fetchall(
            "SELECT key, value FROM agent_memory WHERE kind = ? AND name = ?", (kind, name)
        )
        out: dict[bytes, bytes] = {}
        for row in rows:
            key, value = row[0], row[1]
            if type(key) is not bytes or type(value) is not bytes:
                r = _Row("agent_memory", row, ())
                r.key = f"kind={kind!r}, name={name!r}, key={key!r}"
                r.blob("key")
                r.blob("value")
            out[key] = value
        return out

    async def memory_get_one(self, kind: str, name: str, key: bytes | str) -> bytes | None:
        rows = await self._fetchall(
            "SELECT key, value FROM agent_memory WHERE kind = ? AND name = ? AND key = ?",
            (kind, name, _key_bytes(key)),
        )
        if not rows:
            return None
        r = _Row("agent_memory", rows[0], ())
        r.key = f"kind={kind!r}, name={name!r}, key={rows[0][0]!r}"
        return r.blob("value")

    async def memory_count(self, kind: str, name: str) -> int:
        rows = await self._fetchall(
            "SELECT COUNT(*) FROM agent_memory WHERE kind = ? AND name = ?", (kind, name)
        )
        return int(rows[0][0])

    async def memory_delete(self, kind: str, name: str) -> int:
        """Delete a memory (rows and meta); return how many rows it had."""
        async with self._write("memory_delete") as conn:
            rows = await _q(
                conn,
                "SELECT COUNT(*) FROM agent_memory WHERE kind = ? AND name = ?",
                (kind, name),
            )
            # ON DELETE CASCADE removes the rows with their meta.
            await conn.execute(
                "DELETE FROM agent_memory_meta WHERE kind = ? AND name = ?", (kind, name)
            )
            return int(rows[0][0])

    async def memory_info(self, kind: str, name: str) -> MemoryInfo | None:
        infos = await self._memory_infos("WHERE m.kind = ? AND m.name = ?", (kind, name))
        return infos[0] if infos else None

    async def memory_list(self, kind: str | None = None) -> list[MemoryInfo]:
        """All stored memories (optionally of one agent kind), sorted by (kind, name)."""
        if kind is None:
            return await self._memory_infos("", ())
        return await self._memory_infos("WHERE m.kind = ?", (kind,))

    async def memory_set_meta(
        self,
        kind: str,
        name: str,
        *,
        games_trained: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> MemoryInfo:
        """Set games_trained and/or replace meta (creating the memory if needed)."""
        kind = _nonempty("kind", kind)
        name = _nonempty("name", name)
        if games_trained is not None and games_trained < 0:
            raise ValueError("games_trained must be >= 0")
        meta_json = _dump_json_object("meta", meta) if meta is not None else None
        async with self._write("memory_set_meta") as conn:
            now = self._clock()
            await _ensure_memory_meta(conn, kind, name, now)
            await conn.execute(
                "UPDATE agent_memory_meta SET games_trained = coalesce(?, games_trained),"
                " meta = coalesce(?, meta), updated_at = ? WHERE kind = ? AND name = ?",
                (games_trained, meta_json, now, kind, name),
            )
        info = await self.memory_info(kind, name)
        assert info is not None
        return info

    async def _memory_infos(self, where: str, params: Params) -> list[MemoryInfo]:
        rows = await self._fetchall(
            "SELECT m.kind, m.name, m.games_trained, m.meta, m.created_at, m.updated_at,"
            " (SELECT COUNT(*) FROM agent_memory a WHERE a.kind = m.kind AND a.name = m.name)"
            f" AS n_rows FROM agent_memory_meta m {where} ORDER BY m.kind, m.name",
            params,
        )
        out = []
        for row in rows:
            r = _Row("agent_memory_meta", row, ("kind", "name"))
            out.append(
                MemoryInfo(
                    kind=r.get_str("kind"),
                    name=r.get_str("name"),
                    rows=r.get_int("n_rows"),
                    games_trained=r.get_int("games_trained"),
                    meta=r.json_object("meta"),
                    created_at=r.get_float("created_at"),
                    updated_at=r.get_float("updated_at"),
                )
            )
        return out


# ---------------------------------------------------------------------- helpers


async def _q(conn: aiosqlite.Connection, sql: str, params: Params = ()) -> list[sqlite3.Row]:
    return list(await conn.execute_fetchall(sql, params))


async def _players_by_id(conn: aiosqlite.Connection, ids: Iterable[int]) -> dict[int, Player]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    # json_each keeps the statement text constant however many ids there are.
    rows = await _q(
        conn,
        f"SELECT {_PLAYER_COLS} FROM players WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),),
    )
    return {p.id: p for p in map(_player, rows)}


async def _get_match(conn: aiosqlite.Connection, match_id: int) -> Match:
    rows = await _q(conn, f"SELECT {_MATCH_COLS} FROM matches WHERE id = ?", (match_id,))
    if not rows:
        raise MatchNotFoundError(match_id)
    return _match(rows[0])


async def _live_match(conn: aiosqlite.Connection, match_id: int) -> Match:
    m = await _get_match(conn, match_id)
    if m.status != "live":
        raise MatchNotLiveError(match_id, m.status)
    return m


async def _ratings_for(
    conn: aiosqlite.Connection, player_ids: Collection[int], game: str
) -> dict[int, Rating | None]:
    out: dict[int, Rating | None] = dict.fromkeys(player_ids)
    rows = await _q(
        conn,
        f"SELECT {_RATING_COLS} FROM ratings WHERE game = ?"
        " AND player_id IN (SELECT value FROM json_each(?))",
        (game, json.dumps(sorted(player_ids))),
    )
    for r in map(_rating, rows):
        out[r.player_id] = r
    return out


async def _upsert_guild_settings(
    conn: aiosqlite.Connection, guild_id: int, payload: str, now: float
) -> None:
    await conn.execute(
        "INSERT INTO guild_settings (guild_id, settings, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (guild_id) DO UPDATE SET settings = excluded.settings,"
        " updated_at = excluded.updated_at",
        (guild_id, payload, now),
    )


async def _ensure_memory_meta(conn: aiosqlite.Connection, kind: str, name: str, now: float) -> None:
    await conn.execute(
        "INSERT INTO agent_memory_meta (kind, name, created_at, updated_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (kind, name) DO NOTHING",
        (kind, name, now, now),
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


def _nonempty(what: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()


def _check_game(game: str) -> None:
    if not isinstance(game, str) or not _GAME_RE.match(game):
        raise ValueError(f"game must match {_GAME_RE.pattern}, got {game!r}")


def _dump_json_object(what: str, value: Mapping[str, Any]) -> str:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a mapping, got {type(value).__name__}")
    # allow_nan=False: NaN/Infinity are not JSON and SQLite's json_valid rejects them.
    return json.dumps(dict(value), allow_nan=False, separators=(",", ":"))


def _merge(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(current)
    for k, v in changes.items():
        if v is None:
            merged.pop(k, None)
        else:
            merged[k] = v
    return merged


def _key_bytes(key: bytes | str) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, bytes | bytearray | memoryview):
        return bytes(key)
    raise TypeError(f"memory keys must be bytes or str, got {type(key).__name__}")


def _value_bytes(value: bytes) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(
        f"memory values must be bytes (serialise first, e.g. np.save), got {type(value).__name__}"
    )


# ---------------------------------------------------------------------- row decoding


class _Row:
    """Strict column access: wrong types raise CorruptRowError naming the row.

    SQLite's type affinity lets e.g. text end up in a REAL column (via a
    manual edit or a bug elsewhere); we would rather fail loudly on read than
    hand the lobby a float that is really a string.
    """

    __slots__ = ("key", "row", "table")

    def __init__(self, table: str, row: sqlite3.Row, key_cols: Sequence[str]) -> None:
        self.table = table
        self.row = row
        self.key = ", ".join(f"{c}={row[c]!r}" for c in key_cols)

    def corrupt(self, column: str, detail: str) -> CorruptRowError:
        return CorruptRowError(self.table, self.key, column, detail)

    def opt_int(self, col: str) -> int | None:
        v = self.row[col]
        if v is None:
            return None
        if type(v) is not int:
            raise self.corrupt(col, f"expected an integer, found {v!r}")
        return v

    def get_int(self, col: str) -> int:
        v = self.opt_int(col)
        if v is None:
            raise self.corrupt(col, "unexpected NULL")
        return v

    def opt_float(self, col: str) -> float | None:
        v = self.row[col]
        if v is None:
            return None
        if type(v) not in (int, float):
            raise self.corrupt(col, f"expected a number, found {v!r}")
        return float(v)

    def get_float(self, col: str) -> float:
        v = self.opt_float(col)
        if v is None:
            raise self.corrupt(col, "unexpected NULL")
        return v

    def opt_str(self, col: str) -> str | None:
        v = self.row[col]
        if v is None:
            return None
        if type(v) is not str:
            raise self.corrupt(col, f"expected text, found {v!r}")
        return v

    def get_str(self, col: str) -> str:
        v = self.opt_str(col)
        if v is None:
            raise self.corrupt(col, "unexpected NULL")
        return v

    def choice(self, col: str, allowed: Collection[str]) -> str:
        v = self.get_str(col)
        if v not in allowed:
            raise self.corrupt(col, f"{v!r} is not one of {sorted(allowed)}")
        return v

    def get_bool(self, col: str) -> bool:
        v = self.get_int(col)
        if v not in (0, 1):
            raise self.corrupt(col, f"expected 0 or 1, found {v!r}")
        return bool(v)

    def blob(self, col: str) -> bytes:
        v = self.row[col]
        if type(v) is not bytes:
            raise self.corrupt(col, f"expected a blob, found {type(v).__name__} {v!r:.60}")
        return v

    def json_object(self, col: str) -> dict[str, Any]:
        text = self.get_str(col)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self.corrupt(col, f"not valid JSON ({exc}): {text!r:.80}") from None
        if not isinstance(value, dict):
            raise self.corrupt(col, f"expected a JSON object, found {type(value).__name__}")
        return value


def _player(row: sqlite3.Row) -> Player:
    r = _Row("players", row, ("id",))
    return Player(
        id=r.get_int("id"),
        kind=cast(PlayerKind, r.choice("kind", PLAYER_KINDS)),
        display_name=r.get_str("display_name"),
        discord_id=r.opt_int("discord_id"),
        agent_key=r.opt_str("agent_key"),
        local_name=r.opt_str("local_name"),
        created_at=r.get_float("created_at"),
        updated_at=r.get_float("updated_at"),
    )


def _match(row: sqlite3.Row) -> Match:
    r = _Row("matches", row, ("id",))
    result = r.opt_str("result")
    if result is not None and result not in RESULTS:
        raise r.corrupt("result", f"{result!r} is not one of {sorted(RESULTS)}")
    return Match(
        id=r.get_int("id"),
        game=r.get_str("game"),
        variant=r.get_str("variant"),
        kind=cast(MatchKind, r.choice("kind", MATCH_KINDS)),
        player0_id=r.get_int("player0_id"),
        player1_id=r.get_int("player1_id"),
        status=cast(MatchStatus, r.choice("status", MATCH_STATUSES)),
        result=cast(Result | None, result),
        termination=r.opt_str("termination"),
        rated=r.get_bool("rated"),
        guild_id=r.opt_int("guild_id"),
        channel_id=r.opt_int("channel_id"),
        message_id=r.opt_int("message_id"),
        created_at=r.get_float("created_at"),
        updated_at=r.get_float("updated_at"),
        finished_at=r.opt_float("finished_at"),
        turn_deadline=r.opt_float("turn_deadline"),
        turn_seconds=r.opt_float("turn_seconds"),
        options=r.json_object("options"),
        ply=r.get_int("ply"),
    )


def _decodable_matches(rows: Iterable[sqlite3.Row]) -> list[Match]:
    out = []
    for row in rows:
        try:
            out.append(_match(row))
        except CorruptRowError as exc:
            log.warning("skipping a match that does not decode: %s", exc)
    return out


async def _close_challenge(
    conn: aiosqlite.Connection, challenge_id: int, status: str, now: float, match_id: int | None
) -> None:
    """Answer a pending, unexpired challenge (in the caller's transaction)."""
    rows = await _q(conn, "SELECT status, expires_at FROM challenges WHERE id = ?", (challenge_id,))
    if not rows:
        raise ChallengeClosedError(challenge_id, "unknown")
    current, expires_at = rows[0][0], rows[0][1]
    if current != "pending":
        raise ChallengeClosedError(challenge_id, str(current))
    if status == "accepted" and expires_at <= now:
        await conn.execute(
            "UPDATE challenges SET status = 'expired', answered_at = ? WHERE id = ?",
            (now, challenge_id),
        )
        raise ChallengeClosedError(challenge_id, "expired")
    await conn.execute(
        "UPDATE challenges SET status = ?, answered_at = ?, match_id = ? WHERE id = ?",
        (status, now, match_id, challenge_id),
    )


def _challenge(row: sqlite3.Row) -> Challenge:
    r = _Row("challenges", row, ("id",))
    return Challenge(
        id=r.get_int("id"),
        game=r.get_str("game"),
        challenger_id=r.get_int("challenger_id"),
        opponent_id=r.get_int("opponent_id"),
        guild_id=r.opt_int("guild_id"),
        channel_id=r.opt_int("channel_id"),
        message_id=r.opt_int("message_id"),
        status=cast(ChallengeStatus, r.choice("status", CHALLENGE_STATUSES)),
        created_at=r.get_float("created_at"),
        expires_at=r.get_float("expires_at"),
        answered_at=r.opt_float("answered_at"),
        match_id=r.opt_int("match_id"),
    )


def _outbox(row: sqlite3.Row) -> OutboxItem:
    r = _Row("outbox", row, ("id",))
    return OutboxItem(
        id=r.get_int("id"),
        kind=r.get_str("kind"),
        match_id=r.opt_int("match_id"),
        payload=r.json_object("payload"),
        created_at=r.get_float("created_at"),
        attempts=r.get_int("attempts"),
        last_error=r.opt_str("last_error"),
    )


def _move(row: sqlite3.Row) -> MoveRow:
    r = _Row("moves", row, ("match_id", "ply"))
    return MoveRow(
        match_id=r.get_int("match_id"),
        ply=r.get_int("ply"),
        move=r.get_str("move"),
        player_id=r.get_int("player_id"),
        created_at=r.get_float("created_at"),
        think_ms=r.opt_int("think_ms"),
        fallback=r.opt_str("fallback"),
    )


def _rating(row: sqlite3.Row) -> Rating:
    r = _Row("ratings", row, ("player_id", "game"))
    return Rating(
        player_id=r.get_int("player_id"),
        game=r.get_str("game"),
        mu=r.get_float("mu"),
        sigma=r.get_float("sigma"),
        games=r.get_int("games"),
        wins=r.get_int("wins"),
        draws=r.get_int("draws"),
        losses=r.get_int("losses"),
        updated_at=r.get_float("updated_at"),
    )


#: What an injected store fault looks like: the errors SQLite itself raises.
_FAULTS = {
    "locked": "database is locked",
    "full": "database or disk is full",
    "error": "disk I/O error",
}


def _injected(op: str) -> str | None:
    """The SQLite error text a `BOARDBOT_FAULT` rule asks this write to fail with, if any."""
    kinds = [faults.fire("write"), faults.fire(f"write:{op}")]  # count both, always
    kind = next((k for k in kinds if k is not None), None)
    return None if kind is None else _FAULTS.get(kind, _FAULTS["error"])
