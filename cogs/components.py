"""Persistent buttons and selects (DynamicItem): their state lives in the custom id.

Custom ids (all well under Discord's 100 characters):
  c4:<match>:<ply>:<col>      a Connect Four column (0-based)
  ot:<match>:<ply>:<part>     an Othello move select (part = which slice of the legal moves)
  rs:<match>                  resign
  hn:<match>                  a hint (games against the bot)
  an:<match>                  the analysis of a finished match
  rm:<match>                  rematch
  st:<match>                  stop a bot match
  ch:<a|d>:<challenge>        accept/decline (or withdraw) a stored challenge
  ch:<a|d>:<a>:<b>:<g>:<exp>  the same from an older version (told to challenge again)
  ra:<match>                  retry your mistakes in a finished match (under its analysis)
  rt:<match>:<ply>:<col>      a Connect Four column tried at the mistake of that ply
  ry:<match>:<ply>:<part>     an Othello move tried there (a select, as `ot:`)
  rb:<match>:<ply>            show the best move at that mistake
  rn:<match>:<ply>            the next mistake after it

The ply makes a click on an old board harmless: the lobby refuses it as stale. Ids are parsed
by strict patterns of ASCII digits, at most 18 of them (always within SQLite's integer range);
anything else never reaches a callback, and a well-formed but forged id (no such match, not
your match, not this message) is refused by the lobby.

A component knows its look and its id, not what a click does: each class is handed its
handler when the Games extension registers it (`handled_by`, in `cogs/games.py`). The work
shows new boards made of these components, so it imports this module and this module
imports none of it (no import cycle).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Self

import discord

from cogs.errors import guarded


class Handled:
    """Mixed into a component class (first among its bases): a click runs the handler the class
    was handed at setup, through the one error pipeline."""

    _on_click: ClassVar[Callable[[discord.Interaction, Self], Awaitable[None]] | None] = None

    @classmethod
    def handled_by(
        cls, handler: Callable[[discord.Interaction, Self], Awaitable[None]]
    ) -> type[Self]:
        """Hand the class what a click on one of its components does; the class, to register."""
        cls._on_click = handler
        return cls

    async def callback(self, interaction: discord.Interaction) -> None:
        handler = type(self)._on_click

        async def run() -> None:
            if handler is None:
                raise RuntimeError(f"{type(self).__name__} was registered without a handler")
            await handler(interaction, self)

        await guarded(interaction, run)


def column_button(
    custom_id: str, col: int, *, disabled: bool = False, row: int | None = None
) -> discord.ui.Button[Any]:
    """A Connect Four column's button (`col` 0-based, shown from 1)."""
    return discord.ui.Button(
        label=str(col + 1),
        style=discord.ButtonStyle.primary,
        custom_id=custom_id,
        disabled=disabled,
        row=row,
    )


def move_select(
    custom_id: str,
    options: list[discord.SelectOption] | None,
    placeholder: str | None,
    *,
    disabled: bool = False,
    row: int | None = None,
) -> discord.ui.Select[Any]:
    """A select of Othello moves, one to choose."""
    return discord.ui.Select(
        custom_id=custom_id,
        options=options or [],
        placeholder=placeholder,
        min_values=1,
        max_values=1,
        disabled=disabled,
        row=row,
    )


def chosen_move(select: discord.ui.Select[Any]) -> int:
    """The move a click on a move select chose; -1 if what came is not one (the lobby refuses
    it)."""
    values = select.values
    raw = values[0] if values else ""
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 2 else -1


class ColumnButton(
    Handled,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"c4:(?P<match>[0-9]{1,18}):(?P<ply>[0-9]{1,4}):(?P<col>[0-9]{1,2})",
):
    def __init__(
        self, match_id: int, ply: int, col: int, *, disabled: bool = False, row: int | None = None
    ) -> None:
        super().__init__(
            column_button(f"c4:{match_id}:{ply}:{col}", col, disabled=disabled, row=row)
        )
        self.match_id, self.ply, self.col = match_id, ply, col

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> ColumnButton:
        return cls(int(match["match"]), int(match["ply"]), int(match["col"]))


class MoveSelect(
    Handled,
    discord.ui.DynamicItem[discord.ui.Select[Any]],
    template=r"ot:(?P<match>[0-9]{1,18}):(?P<ply>[0-9]{1,4}):(?P<part>[0-9])",
):
    def __init__(
        self,
        match_id: int,
        ply: int,
        part: int,
        options: list[discord.SelectOption] | None = None,
        placeholder: str | None = None,
        *,
        disabled: bool = False,
        row: int | None = None,
    ) -> None:
        custom_id = f"ot:{match_id}:{ply}:{part}"
        super().__init__(move_select(custom_id, options, placeholder, disabled=disabled, row=row))
        self.match_id, self.ply = match_id, ply

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> MoveSelect:
        options = item.options if isinstance(item, discord.ui.Select) else []
        return cls(int(match["match"]), int(match["ply"]), int(match["part"]), options)

    @property
    def move(self) -> int:
        """The move chosen (a click's values); -1 if what came is not one (the lobby refuses
        it)."""
        return chosen_move(self.item)


class MatchButton(Handled, discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"__base__"):
    """A button that carries only a match id (subclasses set the prefix and look)."""

    prefix = ""
    label = ""
    style = discord.ButtonStyle.secondary

    def __init__(self, match_id: int, *, row: int | None = None) -> None:
        super().__init__(
            discord.ui.Button(
                label=self.label, style=self.style, custom_id=f"{self.prefix}:{match_id}", row=row
            )
        )
        self.match_id = match_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        return cls(int(match["match"]))


class ResignButton(MatchButton, template=r"rs:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "rs", "Resign", discord.ButtonStyle.danger


class HintButton(MatchButton, template=r"hn:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "hn", "Hint", discord.ButtonStyle.secondary


class AnalyseButton(MatchButton, template=r"an:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "an", "Analyse", discord.ButtonStyle.secondary


class RematchButton(MatchButton, template=r"rm:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "rm", "Rematch", discord.ButtonStyle.success


class StopButton(MatchButton, template=r"st:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "st", "Stop", discord.ButtonStyle.danger


class ChallengeButton(
    Handled,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"ch:(?P<act>[ad]):(?P<id>[0-9]{1,18})",
):
    def __init__(self, accept: bool, challenge_id: int) -> None:
        super().__init__(
            discord.ui.Button(
                label="Accept" if accept else "Decline",
                style=discord.ButtonStyle.success if accept else discord.ButtonStyle.secondary,
                custom_id=f"ch:{'a' if accept else 'd'}:{challenge_id}",
            )
        )
        self.accept, self.challenge_id = accept, challenge_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> ChallengeButton:
        return cls(match["act"] == "a", int(match["id"]))


class OldChallengeButton(
    Handled,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"ch:[ad]:[0-9]{1,20}:[0-9]{1,20}:[co]:[0-9]{1,12}",
):
    """A challenge button from before challenges were stored: it cannot be answered safely
    (nothing records whether it was), so it is greyed out with a note."""

    def __init__(self) -> None:
        super().__init__(discord.ui.Button(label="Accept", custom_id="ch:a:0:0:c:0"))

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> OldChallengeButton:
        return cls()


# ---------------------------------------------------------------------------- retries

_PLY = r"(?P<match>[0-9]{1,18}):(?P<ply>[0-9]{1,4})"


class RetryButton(MatchButton, template=r"ra:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "ra", "Retry your mistakes", discord.ButtonStyle.primary


class RetryColumn(
    Handled,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"rt:{_PLY}:(?P<col>[0-9]{{1,2}})",
):
    def __init__(self, match_id: int, ply: int, col: int, *, row: int | None = None) -> None:
        super().__init__(column_button(f"rt:{match_id}:{ply}:{col}", col, row=row))
        self.match_id, self.ply, self.col = match_id, ply, col

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        return cls(int(match["match"]), int(match["ply"]), int(match["col"]))


class RetrySelect(
    Handled,
    discord.ui.DynamicItem[discord.ui.Select[Any]],
    template=rf"ry:{_PLY}:(?P<part>[0-9])",
):
    def __init__(
        self,
        match_id: int,
        ply: int,
        part: int,
        options: list[discord.SelectOption] | None = None,
        placeholder: str | None = None,
        *,
        row: int | None = None,
    ) -> None:
        super().__init__(move_select(f"ry:{match_id}:{ply}:{part}", options, placeholder, row=row))
        self.match_id, self.ply = match_id, ply

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        options = item.options if isinstance(item, discord.ui.Select) else []
        return cls(int(match["match"]), int(match["ply"]), int(match["part"]), options)

    @property
    def move(self) -> int:
        """The move chosen; -1 if what came is not one (the lobby refuses it)."""
        return chosen_move(self.item)


class PlyButton(Handled, discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"__ply__"):
    """A button that carries a match id and the ply of a mistake (subclasses set the look)."""

    prefix = ""
    label = ""
    style = discord.ButtonStyle.secondary

    def __init__(self, match_id: int, ply: int, *, row: int | None = None) -> None:
        super().__init__(
            discord.ui.Button(
                label=self.label,
                style=self.style,
                custom_id=f"{self.prefix}:{match_id}:{ply}",
                row=row,
            )
        )
        self.match_id, self.ply = match_id, ply

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> Self:
        return cls(int(match["match"]), int(match["ply"]))


class BestButton(PlyButton, template=rf"rb:{_PLY}"):
    prefix, label = "rb", "Show the best move"


class NextButton(PlyButton, template=rf"rn:{_PLY}"):
    prefix, label = "rn", "Next mistake"
