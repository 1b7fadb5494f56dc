"""The console says a board in words on `/board text`: whose turn, the last move, the legal
moves and every disc, the same words as the Discord boards' (lobby/boards.py)."""

from __future__ import annotations

import asyncio
import io

from console.run import run_console
from lobby.core import Lobby


async def run(lobby: Lobby, script: str) -> list[str]:
    out = io.StringIO()
    code = await asyncio.wait_for(run_console(lobby, io.StringIO(script), out, user="ann"), 30)
    assert code == 0
    return out.getvalue().splitlines()


async def test_board_text_says_the_board_in_words(lobby: Lobby) -> None:
    lines = await run(
        lobby, "/challenge opponent:bob game:othello\nf5\n/board text\n/board words\n"
    )
    said = lines[lines.index("> /board text") + 1]
    assert said == (
        "#1 Othello, move 2: white (bob) to play. Last move: black f5. Legal moves: d6, f4, f6."
        " Position: black: d5 e4 e5 f5; white: d4."
    )
    assert any(line.startswith("error: /board: unexpected 'words'") for line in lines)


async def test_board_text_without_a_match_is_one_error_line(lobby: Lobby) -> None:
    lines = await run(lobby, "/board text\n")
    assert lines[:2] == [
        "> /board text",
        "error: no match for ann yet: start one with /play or /challenge",
    ]
