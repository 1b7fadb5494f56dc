"""Words for a match and for the listings (leaderboard, stats, history), shared by both front
ends: the Discord embeds and the console print the same lines. `**bold**` is Discord's
markdown; the console shows it bold in a terminal and plain elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.agents import registry
from engine.analysis import Analysis, verdict_word
from engine.analysis import summary as analysis_summary
from engine.analysis import table as analysis_table
from engine.games import catalog
from engine.games.catalog import game_info
from engine.games.catalog import title as game_title
from engine.hints import Hint
from lobby.models import HistoryEntry, LeaderboardEntry, PlayerStats
from lobby.overview import AgentOverview
from lobby.records import Snapshot
from lobby.words import RATING_LEGEND, plural

__all__ = ["RATING_LEGEND", "TERMINATION_TEXT", "analysis_table", "game_title", "plural"]

TERMINATION_TEXT = {
    "connect": "four in a row",
    "board_full": "the board is full",
    "no_moves": "no moves left",
    "resign": "resignation",
    "time": "time ran out",
    "abandon": "abandoned before a move",
    "stopped": "stopped",
    "unreachable": "the bot lost its board",
}
OUTCOME_TEXT = {"win": "won", "loss": "lost", "draw": "drew"}

#: How a front end shows a name people chose (Discord escapes its markdown and mentions).
Names = Callable[[str], str]


def plain(name: str) -> str:
    """A name as it is (the console)."""
    return name


def piece(game: str, seat: int) -> str:
    """The emoji of a seat's discs, as the board shows them."""
    return game_info(game).pieces[seat]


def match_title(game: str, variant: str | None) -> str:
    """The title of the offer a match was started from (a variant's own title), else the
    game's."""
    for o in catalog.OFFERS:
        if o.game == game and (o.variant or game_info(game).default_variant) == variant:
            return o.title
    return game_title(game)


def title(snap: Snapshot, *, name: Names = plain) -> str:
    a, b = snap.seats
    game = snap.match.game
    what = match_title(game, snap.match.variant)
    return f"{what}: {name(a.name)} {piece(game, 0)} vs {piece(game, 1)} {name(b.name)}"


def how_it_ended(termination: str | None) -> str:
    return TERMINATION_TEXT.get(termination or "", termination or "")


def status(
    snap: Snapshot, *, discord_time: bool = True, now: float | None = None, name: Names = plain
) -> str:
    """One line: whose turn and their clock, or how the match ended."""
    m, game = snap.match, snap.match.game
    if snap.live:
        seat = snap.state.to_move()
        who = snap.seats[seat]
        line = f"Move {m.ply + 1}: {piece(game, seat)} **{name(who.name)}** to play"
        if who.is_agent:
            return line + " (thinking...)"
        if m.turn_deadline is not None:
            if discord_time:
                line += f", clock ends <t:{int(m.turn_deadline)}:R>"
            elif now is not None:
                line += f", {max(0, int(m.turn_deadline - now))} s left"
        return line
    how = how_it_ended(m.termination)
    if m.status == "abandoned" or m.result is None:
        return f"Match ended ({how}), no result."
    if m.result == "draw":
        return f"Draw ({how})."
    winner = int(m.result)
    return f"{piece(game, winner)} **{name(snap.seats[winner].name)}** wins ({how})."


def hint_line(hint: Hint, snap: Snapshot, max_hints: int) -> str:
    """The answer to a hint, and what it cost."""
    used = int(snap.match.options.get("hints") or 0)
    return (
        f"Hint for match #{snap.id}: play {hint.move} ({hint.outcome}). This game is now "
        f"unrated; hints used: {used} of {max_hints}."
    )


def result_line(snap: Snapshot) -> str:
    """How a match ended, in plain text (no emoji, no markdown): for pictures."""
    m = snap.match
    how = how_it_ended(m.termination)
    if m.status == "live":
        return f"Move {m.ply + 1}: {snap.seat_to_move.name} to play"
    if m.status == "abandoned" or m.result is None:
        return f"Match ended ({how}), no result"
    outcome = snap.state.outcome()  # a game played to its end has a final score (Othello)
    score = "" if outcome is None or outcome.score is None else " {}-{}".format(*outcome.score)
    if m.result == "draw":
        return f"Draw{score} ({how})"
    return f"{snap.seats[int(m.result)].name} wins{score} ({how})"


def score_line(snap: Snapshot) -> str | None:
    """The score under the board (Othello's disc counts); None where a game has none."""
    return game_info(snap.match.game).score(snap.state)


def footer(snap: Snapshot) -> str:
    hints = int(snap.match.options.get("hints") or 0)
    rated = (
        "rated"
        if snap.match.rated
        else f"unrated ({plural(hints, 'hint')})"
        if hints
        else "unrated"
    )
    return f"Match #{snap.id} · {snap.match.variant} · {rated} · ply {snap.match.ply}"


# ---------------------------------------------------------------------- listings


@dataclass(frozen=True, slots=True)
class Listing:
    """A leaderboard, stats or history as both front ends show it: a title, the lines (or
    `empty` when there are none) and a legend under them."""

    title: str
    lines: list[str]
    empty: str
    legend: str | None = None


#: Under every leaderboard.
LEADERBOARD_LEGEND = f"{RATING_LEGEND}; W D L: wins, draws and losses in rated games"


def leaderboard(
    game: str,
    entries: Sequence[LeaderboardEntry],
    where: str | None = None,
    *,
    name: Names = plain,
) -> Listing:
    """`where`: "this server", "everyone", or None where there is only one place."""
    return Listing(
        f"{game_title(game)} leaderboard" + (f" ({where})" if where else ""),
        [
            f"**{e.rank}.** {name(e.player.display_name)} · {e.rating.ordinal:.1f} "
            f"({plural(e.rating.games, 'game')}: {e.rating.wins}W {e.rating.draws}D "
            f"{e.rating.losses}L)"
            for e in entries
        ],
        f"No rated {game_title(game)} games yet.",
        LEADERBOARD_LEGEND,
    )


def stats(name: str, rows: Sequence[PlayerStats]) -> Listing:
    lines = []
    for s in rows:
        rating = f"rating {s.rating.ordinal:.1f}" if s.rating is not None else "unrated"
        lines.append(
            f"**{game_title(s.game)}**: {s.played} played, {s.wins}W {s.draws}D {s.losses}L, "
            f"{rating}"
        )
    return Listing(f"Stats of {name}", lines, f"{name} has no finished matches yet.")


def history(name: str, rows: Sequence[HistoryEntry], *, names: Names = plain) -> Listing:
    """`name`: whose history, as shown; `names`: how the opponents' names are shown."""
    lines = []
    for h in rows:
        m = h.match
        result = OUTCOME_TEXT.get(h.outcome or "", "no result")
        rated = "rated" if m.rated and m.result is not None else "unrated"  # no result: no rating
        opponent = names(h.opponent.display_name)
        lines.append(
            f"#{m.id} {match_title(m.game, m.variant)} vs {opponent}: {result} "
            f"({how_it_ended(m.termination)}), {plural(m.ply, 'move')}, {rated}"
        )
    return Listing(f"Recent matches of {name}", lines, f"{name} has no finished matches yet.")


def agents_intro(game: str) -> str:
    """The line above a game's list of agents."""
    return (
        "Levels: " + ", ".join(registry.LEVELS[game]) + ". Ratings are mu - 3 sigma "
        "(openskill). Play one with /play or /botmatch; learning agents train with /train."
    )


def agent_lines(a: AgentOverview, *, bold: bool = True) -> tuple[str, list[str]]:
    """(heading, lines) for one agent, shared by the Discord embed and the console."""
    b = "**" if bold else ""
    heading = a.name
    if a.levels:
        heading += f" (level{'s' if len(a.levels) > 1 else ''} {', '.join(a.levels)})"
    lines = [a.description]
    for what, r in a.ratings:
        lines.append(
            f"{b}Rating{b} {what}: {r.ordinal:.1f} ({plural(r.games, 'game')}: "
            f"{r.wins}W {r.draws}D {r.losses}L)"
        )
    if a.learning:
        if not a.memories:
            how = f" agent:{a.trainable}" if a.trainable else ""
            lines.append(f"{b}Learned{b}: nothing yet (train it with /train{how})")
        for m in a.memories:
            lines.append(
                f"{b}Memory{b} {m.name}: {plural(m.rows, 'row')},"
                f" {plural(m.games_trained, 'game')} learned"
            )
            lines += a.shown.get(m.name, [])
    return heading, lines


def analysis_title(match_id: int, game: str) -> str:
    return f"Analysis of match #{match_id} ({game_title(game)})"


def analysis_lines(a: Analysis, names: tuple[str, str], result: str) -> list[str]:
    """The result, each player's accuracy and mistakes, and the turning point."""
    return [f"{result}.", *analysis_summary(a, names)]


def notable_moves(a: Analysis, names: tuple[str, str], limit: int = 12) -> list[str]:
    """The moves that cost something (blunders, misses, inaccuracies), at most `limit`."""
    costly = [r for r in a.moves if r.verdict in ("blunder", "miss", "inaccuracy")]
    out = []
    for r in costly[:limit]:
        line = f"{r.ply + 1}. {names[r.player]} played {r.move}: {verdict_word(r)}"
        if r.best and r.best != r.move:
            line += f" ({r.best} was better)"
        out.append(line)
    if len(costly) > limit:
        out.append(f"... and {len(costly) - limit} more")
    return out
