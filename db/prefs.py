"""What each person prefers (``store.prefs``): how boards are shown to them, the emoji grid
(``emoji``, the default) or a picture with its words as alt text (``image``). One row per
player; a player without a row has the defaults."""

from __future__ import annotations

import json
from collections.abc import Iterable

from .connection import Record, Repository, query
from .errors import BadValueError, PlayerNotFoundError
from .rows import Row, decodable

#: How a board may be shown; the first is the default.
BOARD_STYLES = ("emoji", "image")


class Prefs(Repository):
    """The member_prefs table."""

    async def board_styles(self, player_ids: Iterable[int]) -> dict[int, str]:
        """The board style of each of these players that chose one (the others are absent;
        a row that does not decode is set aside and logged, as if there were none)."""
        wanted = sorted(set(player_ids))
        if not wanted:
            return {}
        async with self._db.read() as conn:
            rows = await query(
                conn,
                "SELECT player_id, board FROM member_prefs"
                f" WHERE player_id IN ({conn.dialect.ids_from_json})",
                (json.dumps(wanted),),
            )
        return dict(decodable(rows, _decode))

    async def set_board(self, player_id: int, board: str) -> None:
        """Keep a player's board style. BadValueError for a style not in BOARD_STYLES,
        PlayerNotFoundError for a player that does not exist; nothing is written then."""
        if board not in BOARD_STYLES:
            raise BadValueError("board", board, f"one of {', '.join(BOARD_STYLES)}")
        async with self._db.write("set_board_style") as conn:
            if not await query(conn, "SELECT 1 FROM players WHERE id = ?", (player_id,)):
                raise PlayerNotFoundError(player_id)
            await conn.execute(
                "INSERT INTO member_prefs (player_id, board, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (player_id) DO UPDATE SET board = excluded.board,"
                " updated_at = excluded.updated_at",
                (player_id, board, self._db.now()),
            )


def _decode(row: Record) -> tuple[int, str]:
    r = Row("member_prefs", row, ("player_id",))
    return r.get_int("player_id"), r.choice("board", BOARD_STYLES)
