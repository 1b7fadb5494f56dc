"""Tournaments (``store.tournaments``): each tournament's row (its game, format, clock, status
and current round), its entrants (players; an agent entered by name keeps the name it was
entered by) and every game of every round with the match that plays it.

A round is written in one transaction (its games, and the tournament's round number, which
must be the one before: a second start of the same round writes nothing), so a kill leaves a
round either unpaired or paired whole. A game's match is created by the lobby with the
tournament's mark in its options (``{"tournament": [id, round, board]}``) and linked after;
`tagged_match` finds a match a kill left unlinked. Formats, games and outcomes are the
lobby's to check; the store keeps short text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from .connection import Record, Repository, Tx, query
from .errors import CorruptRowError, PlayerNotFoundError, TournamentClosedError
from .rows import Row, decodable

TournamentStatus = Literal["open", "running", "finished", "cancelled"]
STATUSES: tuple[TournamentStatus, ...] = ("open", "running", "finished", "cancelled")
ACTIVE = ("open", "running")
_COLS = (
    "id, guild_id, channel_id, message_id, game, format, rounds, turn_seconds, starts_at,"
    " status, round, creator_id, winner_id, created_at, updated_at, finished_at, announced_at"
)
_ENTRANT_COLS = "tournament_id, player_id, seed, opponent, joined_at, left_at"
_GAME_COLS = "tournament_id, round, board, first_id, second_id, match_id, outcome"


@dataclass(frozen=True, slots=True)
class Tournament:
    id: int
    guild_id: int | None
    channel_id: int | None
    message_id: int | None  # the standings' message
    game: str  # an offer's key (a game or a variant)
    format: str
    rounds: int | None  # asked for (Swiss) until the start, then the rounds it plays
    turn_seconds: float | None
    starts_at: float | None
    status: TournamentStatus
    round: int  # the round being played (0: not started)
    creator_id: int
    winner_id: int | None
    created_at: float
    updated_at: float
    finished_at: float | None
    announced_at: float | None  # when its end was announced

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


@dataclass(frozen=True, slots=True)
class Entrant:
    tournament_id: int
    player_id: int
    seed: int
    opponent: str | None  # an agent's name as entered; None: a person
    joined_at: float
    left_at: float | None


@dataclass(frozen=True, slots=True)
class TournamentGame:
    tournament_id: int
    round: int
    board: int
    first_id: int
    second_id: int | None  # None: a bye
    match_id: int | None
    outcome: str | None


@dataclass(frozen=True, slots=True)
class NewGame:
    """A game of a round to write: `outcome` set at once for a bye or a forfeit."""

    board: int
    first_id: int
    second_id: int | None
    outcome: str | None = None


class Tournaments(Repository):
    """The tournaments, tournament_entrants and tournament_games tables."""

    async def create(
        self,
        *,
        guild_id: int | None,
        channel_id: int | None,
        game: str,
        format: str,
        rounds: int | None,
        turn_seconds: float | None,
        starts_at: float | None,
        creator_id: int,
    ) -> Tournament:
        async with self._db.write("create_tournament") as conn:
            if not await query(conn, "SELECT 1 FROM players WHERE id = ?", (creator_id,)):
                raise PlayerNotFoundError(creator_id)
            now = self._db.now()
            rows = await query(
                conn,
                "INSERT INTO tournaments (guild_id, channel_id, game, format, rounds,"
                " turn_seconds, starts_at, creator_id, created_at, updated_at)"
                f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {_COLS}",
                (guild_id, channel_id, game, format, rounds, turn_seconds, starts_at,
                 creator_id, now, now),
            )  # fmt: skip
            return _decode(rows[0])

    async def get(self, tournament_id: int) -> Tournament | None:
        """One tournament; CorruptRowError if its row does not decode."""
        rows = await self._db.fetchall(
            f"SELECT {_COLS} FROM tournaments WHERE id = ?", (tournament_id,)
        )
        return _decode(rows[0]) if rows else None

    async def active(self, guild_id: int | None = None) -> list[Tournament]:
        """Open and running tournaments (of one server, or all this process owns), oldest
        first; a row that does not decode is set aside with a WARNING."""
        sql = f"SELECT {_COLS} FROM tournaments WHERE status IN ('open', 'running')"
        params: tuple[int, ...] = ()
        if guild_id is not None:
            sql += " AND guild_id = ?"
            params = (guild_id,)
        rows = await self._db.fetchall(sql + " ORDER BY id", params)
        found = decodable(rows, _decode)
        shards = self._db.shards
        return [t for t in found if t.guild_id is None or shards.owns(t.guild_id)]

    async def unannounced(self) -> list[Tournament]:
        """Ended tournaments whose end no front end has announced yet."""
        rows = await self._db.fetchall(
            f"SELECT {_COLS} FROM tournaments WHERE status = 'finished'"
            " AND announced_at IS NULL ORDER BY id"
        )
        return [t for t in decodable(rows, _decode) if t.guild_id is None or
                self._db.shards.owns(t.guild_id)]  # fmt: skip

    async def set_message(self, tournament_id: int, message_id: int) -> None:
        async with self._db.write("set_tournament_message") as conn:
            await conn.execute(
                "UPDATE tournaments SET message_id = ? WHERE id = ?", (message_id, tournament_id)
            )

    async def announced(self, tournament_id: int) -> None:
        async with self._db.write("tournament_announced") as conn:
            await conn.execute(
                "UPDATE tournaments SET announced_at = ? WHERE id = ?",
                (self._db.now(), tournament_id),
            )

    # ------------------------------------------------------------------ entrants

    async def entrants(self, tournament_id: int) -> list[Entrant]:
        """Every entrant, in seed order (the ones who left included)."""
        rows = await self._db.fetchall(
            f"SELECT {_ENTRANT_COLS} FROM tournament_entrants WHERE tournament_id = ?"
            " ORDER BY seed",
            (tournament_id,),
        )
        return decodable(rows, _decode_entrant)

    async def join(
        self, tournament_id: int, player_id: int, opponent: str | None, most: int
    ) -> Entrant:
        """Enter a player while the tournament is open and has fewer than `most` entrants;
        TournamentClosedError naming why not (not open, full, already in)."""
        async with self._db.write("join_tournament") as conn:
            status = await _status(conn, tournament_id)
            if status != "open":
                raise TournamentClosedError(tournament_id, status)
            rows = await query(
                conn,
                "SELECT player_id, seed FROM tournament_entrants WHERE tournament_id = ?",
                (tournament_id,),
            )
            if any(r["player_id"] == player_id for r in rows):
                raise TournamentClosedError(tournament_id, "joined")
            if len(rows) >= most:
                raise TournamentClosedError(tournament_id, "full")
            seed = 1 + max((int(r["seed"]) for r in rows), default=-1)
            now = self._db.now()
            await conn.execute(
                f"INSERT INTO tournament_entrants ({_ENTRANT_COLS}) VALUES (?, ?, ?, ?, ?, NULL)",
                (tournament_id, player_id, seed, opponent, now),
            )
            return Entrant(tournament_id, player_id, seed, opponent, now, None)

    async def leave(self, tournament_id: int, player_id: int) -> bool:
        """Take a player out: before the start their entry goes, after it they are marked
        as left (their games stay). False if they were not in (or had left)."""
        async with self._db.write("leave_tournament") as conn:
            status = await _status(conn, tournament_id)
            if status == "open":
                rows = await query(
                    conn,
                    "DELETE FROM tournament_entrants WHERE tournament_id = ? AND player_id = ?"
                    " RETURNING player_id",
                    (tournament_id, player_id),
                )
            elif status == "running":
                rows = await query(
                    conn,
                    "UPDATE tournament_entrants SET left_at = ? WHERE tournament_id = ?"
                    " AND player_id = ? AND left_at IS NULL RETURNING player_id",
                    (self._db.now(), tournament_id, player_id),
                )
            else:
                raise TournamentClosedError(tournament_id, status)
            return bool(rows)

    # ------------------------------------------------------------------ rounds

    async def start(self, tournament_id: int, rounds: int) -> Tournament:
        """Open -> running, with the rounds it plays; TournamentClosedError if not open."""
        async with self._db.write("start_tournament") as conn:
            status = await _status(conn, tournament_id)
            if status != "open":
                raise TournamentClosedError(tournament_id, status)
            rows = await query(
                conn,
                "UPDATE tournaments SET status = 'running', rounds = ?, updated_at = ?"
                f" WHERE id = ? RETURNING {_COLS}",
                (rounds, self._db.now(), tournament_id),
            )
            return _decode(rows[0])

    async def add_round(self, tournament_id: int, rnd: int, games: Sequence[NewGame]) -> bool:
        """Write round `rnd` whole (its games and the tournament's round), if the tournament
        is running at round `rnd - 1`; False (nothing written) if it is not."""
        async with self._db.write("tournament_round") as conn:
            rows = await query(
                conn,
                "SELECT status, round FROM tournaments WHERE id = ?" + conn.dialect.lock,
                (tournament_id,),
            )
            if not rows or rows[0]["status"] != "running" or rows[0]["round"] != rnd - 1:
                return False
            for g in games:
                await conn.execute(
                    f"INSERT INTO tournament_games ({_GAME_COLS}) VALUES (?, ?, ?, ?, ?, NULL, ?)",
                    (tournament_id, rnd, g.board, g.first_id, g.second_id, g.outcome),
                )
            await conn.execute(
                "UPDATE tournaments SET round = ?, updated_at = ? WHERE id = ?",
                (rnd, self._db.now(), tournament_id),
            )
            return True

    async def games(self, tournament_id: int) -> list[TournamentGame]:
        """Every game so far, by round and board. A game that does not decode is set aside
        with a WARNING (the lobby sets the tournament aside: its rounds cannot be paired)."""
        rows = await self._db.fetchall(
            f"SELECT {_GAME_COLS} FROM tournament_games WHERE tournament_id = ?"
            " ORDER BY round, board",
            (tournament_id,),
        )
        return decodable(rows, _decode_game)

    async def game_of(self, match_id: int) -> TournamentGame | None:
        """The tournament game a match plays, if any."""
        rows = await self._db.fetchall(
            f"SELECT {_GAME_COLS} FROM tournament_games WHERE match_id = ?", (match_id,)
        )
        found = decodable(rows, _decode_game)
        return found[0] if found else None

    async def link(self, tournament_id: int, rnd: int, board: int, match_id: int) -> None:
        """The match that plays a game (kept if the game has one already)."""
        async with self._db.write("link_tournament_game") as conn:
            await conn.execute(
                "UPDATE tournament_games SET match_id = ? WHERE tournament_id = ? AND round = ?"
                " AND board = ? AND match_id IS NULL",
                (match_id, tournament_id, rnd, board),
            )

    async def set_outcome(self, tournament_id: int, rnd: int, board: int, outcome: str) -> bool:
        """A game's outcome, written once; False if it had one already."""
        async with self._db.write("tournament_outcome") as conn:
            rows = await query(
                conn,
                "UPDATE tournament_games SET outcome = ? WHERE tournament_id = ? AND round = ?"
                " AND board = ? AND outcome IS NULL RETURNING board",
                (outcome, tournament_id, rnd, board),
            )
            return bool(rows)

    async def tagged_match(
        self, tournament_id: int, rnd: int, board: int, since: float
    ) -> int | None:
        """A match created since `since` with this game's mark in its options (created, then
        a kill came before `link`)."""
        mark = json.dumps({"tournament": [tournament_id, rnd, board]}, separators=(",", ":"))
        rows = await self._db.fetchall(
            "SELECT id, options FROM matches WHERE created_at >= ? AND options LIKE ? ORDER BY id",
            (since, "%" + mark[1:-1] + "%"),
        )
        for row in rows:
            try:
                options = json.loads(row["options"])
            except (TypeError, ValueError):
                continue
            if isinstance(options, dict) and options.get("tournament") == [
                tournament_id, rnd, board,
            ]:  # fmt: skip
                return int(row["id"])
        return None

    async def end(
        self, tournament_id: int, status: TournamentStatus, winner_id: int | None
    ) -> Tournament | None:
        """Finish or cancel an open or running tournament; None if it had ended already."""
        async with self._db.write("end_tournament") as conn:
            now = self._db.now()
            rows = await query(
                conn,
                "UPDATE tournaments SET status = ?, winner_id = ?, finished_at = ?,"
                " updated_at = ? WHERE id = ? AND status IN ('open', 'running')"
                f" RETURNING {_COLS}",
                (status, winner_id, now, now, tournament_id),
            )
            return _decode(rows[0]) if rows else None


async def _status(conn: Tx, tournament_id: int) -> str:
    rows = await query(
        conn, "SELECT status FROM tournaments WHERE id = ?" + conn.dialect.lock, (tournament_id,)
    )
    if not rows:
        raise TournamentClosedError(tournament_id, "missing")
    return str(rows[0]["status"])


def _decode(row: Record) -> Tournament:
    r = Row("tournaments", row, ("id",))
    rounds = r.opt_int("rounds")
    if rounds is not None and rounds <= 0:
        raise r.corrupt("rounds", f"{rounds} is not positive")
    return Tournament(
        id=r.get_int("id"),
        guild_id=r.opt_int("guild_id"),
        channel_id=r.opt_int("channel_id"),
        message_id=r.opt_int("message_id"),
        game=r.get_str("game"),
        format=r.get_str("format"),
        rounds=rounds,
        turn_seconds=r.opt_float("turn_seconds"),
        starts_at=r.opt_float("starts_at"),
        status=cast(TournamentStatus, r.choice("status", STATUSES)),
        round=r.get_int("round"),
        creator_id=r.get_int("creator_id"),
        winner_id=r.opt_int("winner_id"),
        created_at=r.get_float("created_at"),
        updated_at=r.get_float("updated_at"),
        finished_at=r.opt_float("finished_at"),
        announced_at=r.opt_float("announced_at"),
    )


def _decode_entrant(row: Record) -> Entrant:
    r = Row("tournament_entrants", row, ("tournament_id", "player_id"))
    return Entrant(
        r.get_int("tournament_id"), r.get_int("player_id"), r.get_int("seed"),
        r.opt_str("opponent"), r.get_float("joined_at"), r.opt_float("left_at"),
    )  # fmt: skip


def _decode_game(row: Record) -> TournamentGame:
    r = Row("tournament_games", row, ("tournament_id", "round", "board"))
    game = TournamentGame(
        r.get_int("tournament_id"), r.get_int("round"), r.get_int("board"),
        r.get_int("first_id"), r.opt_int("second_id"), r.opt_int("match_id"),
        r.opt_str("outcome"),
    )  # fmt: skip
    if game.second_id == game.first_id:
        raise CorruptRowError("tournament_games", r.key, "second_id", "the same as first_id")
    return game
