"""The puzzles' persistent buttons and selects (DynamicItem, as `cogs/components.py`'s): their
state lives in the custom id, so a puzzle shown before a restart is answered after it.

Custom ids (well under Discord's 100 characters):
  pz:<key>:<col>    a Connect Four column (0-based) given as the answer to puzzle <key>
  pq:<key>:<part>   an Othello move select (part = which slice of the legal moves)
  pn:<game>         the next puzzle of a game

A key is a shipped puzzle's id (`c4-` or `oth-` and hex digits) or one's own blunder
(`m<match>.<ply>`). Ids are parsed by strict patterns; anything else never reaches a callback,
and a well-formed but forged id (no such puzzle, not your blunder, an illegal move) is refused
by the lobby in one line. The handlers are handed over in `cogs/puzzle.py`'s `setup`."""

from __future__ import annotations

import re
from typing import Any, Self

import discord

from cogs.components import Handled, chosen_move, column_button, move_select

_KEY = r"(?P<key>(?:c4|oth)-[0-9a-f]{1,32}|m[0-9]{1,18}\.[0-9]{1,4})"


class PuzzleColumn(
    Handled,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"pz:{_KEY}:(?P<col>[0-9]{{1,2}})",
):
    def __init__(
        self, key: str, col: int, *, disabled: bool = False, row: int | None = None
    ) -> None:
        super().__init__(column_button(f"pz:{key}:{col}", col, disabled=disabled, row=row))
        self.key, self.col = key, col

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        return cls(match["key"], int(match["col"]))


class PuzzleSelect(
    Handled,
    discord.ui.DynamicItem[discord.ui.Select[Any]],
    template=rf"pq:{_KEY}:(?P<part>[0-9])",
):
    def __init__(
        self,
        key: str,
        part: int,
        options: list[discord.SelectOption] | None = None,
        placeholder: str | None = None,
        *,
        row: int | None = None,
    ) -> None:
        super().__init__(move_select(f"pq:{key}:{part}", options, placeholder, row=row))
        self.key = key

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        options = item.options if isinstance(item, discord.ui.Select) else []
        return cls(match["key"], int(match["part"]), options)

    @property
    def move(self) -> int:
        """The move chosen; -1 if what came is not one (the lobby refuses it)."""
        return chosen_move(self.item)


class NextPuzzleButton(
    Handled,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"pn:(?P<game>connect4|othello)",
):
    def __init__(self, game: str, *, row: int | None = None) -> None:
        super().__init__(
            discord.ui.Button(
                label="Next puzzle",
                style=discord.ButtonStyle.success,
                custom_id=f"pn:{game}",
                row=row,
            )
        )
        self.game = game

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        return cls(match["game"])
