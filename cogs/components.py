"""Persistent buttons and selects (DynamicItem): their state lives in the custom id.

Custom ids (all well under Discord's 100 characters):
  c4:<match>:<ply>:<col>      a Connect Four column (0-based)
  ot:<match>:<ply>:<part>     an Othello move select (part = which slice of the legal moves)
  rs:<match>                  resign
  hn:<match>                  a hint (games against the bot)
  rm:<match>                  rematch
  st:<match>                  stop a bot match
  ch:<a|d>:<challenge>        accept/decline (or withdraw) a stored challenge
  ch:<a|d>:<a>:<b>:<g>:<exp>  the same from an older version (told to challenge again)

The ply makes a click on an old board harmless: the lobby refuses it as stale. Ids are parsed
by strict patterns of ASCII digits, at most 18 of them (always within SQLite's integer range);
anything else never reaches a callback, and a well-formed but forged id (no such match, not
your match, not this message) is refused by the lobby.

Callbacks call into the Games cog (`Handlers`), through the one error pipeline; this module
imports nothing that renders boards, so there is no import cycle.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import discord

from cogs.errors import guarded


class Handlers(Protocol):
    """What the components ask of the Games cog."""

    async def play_move(
        self, interaction: discord.Interaction, match_id: int, ply: int, move: int
    ) -> None: ...
    async def resign_button(self, interaction: discord.Interaction, match_id: int) -> None: ...
    async def rematch(self, interaction: discord.Interaction, match_id: int) -> None: ...
    async def hint_button(self, interaction: discord.Interaction, match_id: int) -> None: ...
    async def analyse_button(self, interaction: discord.Interaction, match_id: int) -> None: ...
    async def stop_botmatch(self, interaction: discord.Interaction, match_id: int) -> None: ...
    async def answer_challenge(
        self, interaction: discord.Interaction, challenge_id: int, accept: bool
    ) -> None: ...
    async def old_challenge(self, interaction: discord.Interaction) -> None: ...


async def _handle(
    interaction: discord.Interaction, action: Callable[[Handlers], Awaitable[None]]
) -> None:
    async def run() -> None:
        cog: Any = interaction.client.get_cog("Games")  # type: ignore[attr-defined]
        if cog is None:
            raise RuntimeError("the Games cog is not loaded")
        await action(cog)

    await guarded(interaction, run)


class ColumnButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"c4:(?P<match>[0-9]{1,18}):(?P<ply>[0-9]{1,4}):(?P<col>[0-9]{1,2})",
):
    def __init__(
        self, match_id: int, ply: int, col: int, *, disabled: bool = False, row: int | None = None
    ) -> None:
        super().__init__(
            discord.ui.Button(
                label=str(col + 1),
                style=discord.ButtonStyle.primary,
                custom_id=f"c4:{match_id}:{ply}:{col}",
                disabled=disabled,
                row=row,
            )
        )
        self.match_id, self.ply, self.col = match_id, ply, col

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> ColumnButton:
        return cls(int(match["match"]), int(match["ply"]), int(match["col"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        await _handle(
            interaction, lambda h: h.play_move(interaction, self.match_id, self.ply, self.col)
        )


class MoveSelect(
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
        super().__init__(
            discord.ui.Select(
                custom_id=f"ot:{match_id}:{ply}:{part}",
                options=options or [],
                placeholder=placeholder,
                min_values=1,
                max_values=1,
                disabled=disabled,
                row=row,
            )
        )
        self.match_id, self.ply = match_id, ply

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> MoveSelect:
        options = item.options if isinstance(item, discord.ui.Select) else []
        return cls(int(match["match"]), int(match["ply"]), int(match["part"]), options)

    async def callback(self, interaction: discord.Interaction) -> None:
        values = self.item.values
        raw = values[0] if values else ""
        move = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 2 else -1
        await _handle(
            interaction, lambda h: h.play_move(interaction, self.match_id, self.ply, move)
        )


class _MatchButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=r"__base__"):
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
    ) -> _MatchButton:
        return cls(int(match["match"]))


class ResignButton(_MatchButton, template=r"rs:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "rs", "Resign", discord.ButtonStyle.danger

    async def callback(self, interaction: discord.Interaction) -> None:
        await _handle(interaction, lambda h: h.resign_button(interaction, self.match_id))


class HintButton(_MatchButton, template=r"hn:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "hn", "Hint", discord.ButtonStyle.secondary

    async def callback(self, interaction: discord.Interaction) -> None:
        await _handle(interaction, lambda h: h.hint_button(interaction, self.match_id))


class AnalyseButton(_MatchButton, template=r"an:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "an", "Analyse", discord.ButtonStyle.secondary

    async def callback(self, interaction: discord.Interaction) -> None:
        await _handle(interaction, lambda h: h.analyse_button(interaction, self.match_id))


class RematchButton(_MatchButton, template=r"rm:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "rm", "Rematch", discord.ButtonStyle.success

    async def callback(self, interaction: discord.Interaction) -> None:
        await _handle(interaction, lambda h: h.rematch(interaction, self.match_id))


class StopButton(_MatchButton, template=r"st:(?P<match>[0-9]{1,18})"):
    prefix, label, style = "st", "Stop", discord.ButtonStyle.danger

    async def callback(self, interaction: discord.Interaction) -> None:
        await _handle(interaction, lambda h: h.stop_botmatch(interaction, self.match_id))


class ChallengeButton(
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

    async def callback(self, interaction: discord.Interaction) -> None:
        await _handle(
            interaction, lambda h: h.answer_challenge(interaction, self.challenge_id, self.accept)
        )


class OldChallengeButton(
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

    async def callback(self, interaction: discord.Interaction) -> None:
        await _handle(interaction, lambda h: h.old_challenge(interaction))


DYNAMIC_ITEMS: tuple[type[discord.ui.DynamicItem[Any]], ...] = (
    ColumnButton,
    MoveSelect,
    ResignButton,
    HintButton,
    AnalyseButton,
    RematchButton,
    StopButton,
    ChallengeButton,
    OldChallengeButton,
)
