"""/puzzle in the console: a position with one move to find, answered by typing the move.

`/puzzle [GAME]` shows your next puzzle (your own blunders from analysed matches first, then
a shipped puzzle near your rating); `/puzzle daily [GAME]` shows the day's puzzle, the same
for everyone; while a puzzle waits for your answer, a bare move answers it (after that, bare
moves go to your match again); `/puzzle stats [user:NAME]` shows puzzle ratings and streaks.
Each local player has their own puzzle waiting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.values import UsageError, game_name
from engine.games.catalog import game_info
from lobby.puzzle import PuzzleShown, prompt_lines, stats_lines, title, verdict_lines

if TYPE_CHECKING:
    from console.session import Session

HOW = "Answer by typing your move; /puzzle gives the next puzzle."
#: The words that make `/puzzle` something else than a game's next puzzle.
ACTIONS = ("daily", "stats")
USAGE = "/puzzle [GAME]  or  /puzzle daily [GAME]  or  /puzzle stats [user:NAME]"


def puzzle_text(shown: PuzzleShown) -> str:
    """The puzzle: its title, the board, what to find, the legal moves where they help."""
    lines = [title(shown), shown.state.render_emoji(last=shown.last, show_legal=True)]
    lines += prompt_lines(shown)
    if game_info(shown.game).list_moves:
        legal = sorted(shown.state.move_to_str(m) for m in shown.state.legal_moves())
        lines.append("Legal moves: " + ", ".join(legal))
    lines += [f"Puzzle {shown.key} · {HOW}"]
    return "\n".join(lines)


async def cmd_puzzle(console: Session, opts: dict[str, str]) -> None:
    """`/puzzle [GAME]`, `/puzzle daily [GAME]`, `/puzzle stats [user:NAME]`."""
    what = opts.get("action") or opts.get("what")
    game = opts.get("game")
    if what is not None and what not in ACTIONS:
        if game is not None:
            raise UsageError(f"/puzzle: {what!r} is not daily or stats; usage: {USAGE}")
        what, game = None, what  # `/puzzle othello`
    lobby, me = console.lobby, console.person()
    if what == "stats":
        name = opts.get("user") or game
        who = me if name is None else console.person(name)
        console.write("\n".join(stats_lines(await lobby.puzzles.stats(who))))
        return
    if opts.get("user"):
        raise UsageError(f"/puzzle: user: is for /puzzle stats; usage: {USAGE}")
    if what == "daily":
        shown, _ = await lobby.puzzles.daily(game_name(game or "connect4"))
    else:
        shown = await lobby.puzzles.next(game_name(game or "connect4"), me)
    console.puzzling[console.user] = shown.key
    console.write(puzzle_text(shown))


async def answer(console: Session, text: str) -> None:
    """A bare move as the answer to the user's puzzle waiting; the puzzle is done once judged
    (a move the solver could not judge in time leaves it waiting)."""
    key = console.puzzling[console.user]
    verdict = await console.lobby.puzzles.answer(key, text, console.person())
    if verdict.solved is not None:
        del console.puzzling[console.user]
    console.write("\n".join(verdict_lines(verdict)))
