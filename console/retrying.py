"""/retry in the console: back to the position before each of your worst moves of a finished
match, a move tried there judged by the solvers, the best move only when asked for.

`/retry [match:N]` starts at your worst mistake (default: your last finished match);
`/retry MOVE` tries a move there; `/retry best` shows the best move; `/retry next` goes on to
the next mistake. Each local player has their own retry under way (the match and the ply of
the mistake; the lobby finds the rest again from the stored analysis)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.values import UsageError, match_number
from engine.games.catalog import game_info
from lobby import present
from lobby.retry import RetryStep, attempt_line, best_line, step_lines

if TYPE_CHECKING:
    from console.session import Session

HOW = "Try a move with /retry MOVE; /retry best shows the best move, /retry next the next mistake."


def step_text(step: RetryStep) -> str:
    """The position before the mistake, what was played there and what to find."""
    title = present.game_title(step.game)
    lines = [
        f"Learn from your mistakes: match #{step.match_id} ({title})",
        step.state.render_emoji(last=step.last, show_legal=True),
        *step_lines(step),
    ]
    if game_info(step.game).list_moves:
        legal = [step.state.move_to_str(m) for m in step.state.legal_moves()]
        lines.append("Legal moves: " + ", ".join(legal))
    lines.append(HOW)
    return "\n".join(lines)


async def cmd_retry(console: Session, opts: dict[str, str]) -> None:
    lobby, me = console.lobby, console.person()
    action = opts.get("action")
    if action is None and "move" not in opts:
        match_id = match_number(opts["match"], "/history") if "match" in opts else None
        step = await lobby.retry(match_id, me)
        console.retrying[console.user] = (step.match_id, step.ply)
        console.write(step_text(step))
        return
    if "match" in opts:
        raise UsageError("/retry MOVE tries a move in the retry under way: give no match:")
    current = console.retrying.get(console.user)
    if current is None:
        raise UsageError("no retry under way: /retry (or /retry match:N) starts one")
    match_id, ply = current
    if action == "next":
        found = await lobby.retry_next(match_id, ply, me)
        if found is None:
            console.write("That was your last mistake in this match. Well done.")
            return
        console.retrying[console.user] = (found.match_id, found.ply)
        console.write(step_text(found))
    elif action == "best":
        step, best = await lobby.retry_best(match_id, ply, me)
        console.write(best_line(step.game, best))
    else:
        step, tried = await lobby.retry_move(match_id, ply, opts["move"].lower(), me)
        console.write(attempt_line(step.game, tried))
