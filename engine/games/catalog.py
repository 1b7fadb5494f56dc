"""Every fact about a game in one place: its name, title, aliases, pieces, the variants people
may choose, how to build and read its positions. Front ends, the lobby and the tools read these
tables; adding a variant people can choose is one line in `OFFERS`, a third game one `GameInfo`.

Light on purpose: the game modules (and their compiled kernels) are imported only when a
position is built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.games.base import GameState, NotationError


@dataclass(frozen=True, slots=True)
class GameInfo:
    name: str  # as stored and typed: "connect4"
    title: str  # as shown: "Connect Four"
    aliases: tuple[str, ...]  # other names the console accepts
    pieces: tuple[str, str]  # the emoji of the first and the second player's discs
    default_variant: str
    #: Random plies before each game of an evaluation or arena series, so that deterministic
    #: agents do not replay one game; Othello's four plies give 244 distinct openings.
    opening_plies: int
    #: Builds the start position of a variant (None: the default one).
    new: Callable[[str | None], GameState]
    #: Reads a position of the engine protocol's notation (docs/architecture.md).
    parse: Callable[[str, str | None], GameState]
    #: A line under the board with the score so far (Othello's disc counts), or None.
    score: Callable[[GameState], str | None]
    #: Whether a text board lists the legal moves under it: squares are hard to spot, the
    #: columns of Connect Four are not.
    list_moves: bool


@dataclass(frozen=True, slots=True)
class Offer:
    """A game as people choose it in /play, /challenge, /botmatch and the console: a game and
    one of its variants."""

    key: str  # the value of the slash option and of the console's `game:`
    title: str
    game: str
    variant: str | None = None  # None: the game's default


def parse_c4_variant(text: str) -> tuple[int, int, int]:
    """'7x6k4' -> (cols, rows, k); '7x6' means k=4."""
    body, _, k_text = text.lower().partition("k")
    cols_text, sep, rows_text = body.partition("x")
    try:
        if not sep:
            raise ValueError
        return int(cols_text), int(rows_text), int(k_text) if k_text else 4
    except ValueError:
        raise NotationError(
            f"bad Connect Four variant {text!r}: write COLSxROWS or COLSxROWSkK, e.g. 7x6k4"
        ) from None


def _c4_new(variant: str | None) -> GameState:
    from engine.games.connect4 import Connect4State

    cols, rows, k = parse_c4_variant(variant or "7x6k4")
    return Connect4State.new(rows=rows, cols=cols, k=k)


def _c4_parse(text: str, variant: str | None) -> GameState:
    from engine.games.connect4 import Connect4State

    cols, rows, k = parse_c4_variant(variant or "7x6k4")
    return Connect4State.from_moves(text.strip(), rows=rows, cols=cols, k=k)


def _othello_new(variant: str | None) -> GameState:
    from engine.games.othello import OthelloState

    if variant not in (None, "8x8"):
        raise ValueError(f"unknown othello variant {variant!r}: only 8x8")
    return OthelloState.new()


def _othello_parse(text: str, variant: str | None) -> GameState:
    from engine.games.othello import OthelloState

    return OthelloState.from_notation(text)


def _no_score(state: GameState) -> str | None:
    return None


def _othello_score(state: GameState) -> str | None:
    from engine.games.othello import OthelloState

    if not isinstance(state, OthelloState):
        return None
    outcome = state.outcome()
    if outcome is not None and outcome.score is not None:
        black, white = outcome.score
        empties = 64 - sum(state.disc_counts())
        rule = " (empty squares go to the winner)" if empties else ""
        return f"Final score ⚫ {black} - {white} ⚪{rule}"
    black, white = state.disc_counts()
    return f"⚫ {black} - {white} ⚪"


CONNECT4 = GameInfo(
    name="connect4",
    title="Connect Four",
    aliases=("c4", "connect-four", "connectfour", "connect_four"),
    pieces=("🔴", "🟡"),
    default_variant="7x6k4",
    opening_plies=2,
    new=_c4_new,
    parse=_c4_parse,
    score=_no_score,
    list_moves=False,
)
OTHELLO = GameInfo(
    name="othello",
    title="Othello",
    aliases=("reversi",),
    pieces=("⚫", "⚪"),
    default_variant="8x8",
    opening_plies=4,
    new=_othello_new,
    parse=_othello_parse,
    score=_othello_score,
    list_moves=True,
)

INFO: dict[str, GameInfo] = {info.name: info for info in (CONNECT4, OTHELLO)}
GAMES: tuple[str, ...] = tuple(INFO)

#: What people may choose, in the order the choices are shown (at most 25: a slash option's
#: limit). The first offer of a game plays its default variant. A key is lower-case letters,
#: digits and `_` (it is stored with a challenge), e.g. `Offer("connect4_8x7", "Connect Four
#: 8x7", "connect4", "8x7k4")`.
OFFERS: tuple[Offer, ...] = (
    Offer("connect4", "Connect Four", "connect4"),
    Offer("othello", "Othello", "othello"),
)


def game_info(game: str) -> GameInfo:
    try:
        return INFO[game]
    except KeyError:
        raise ValueError(f"unknown game {game!r}: choose one of {', '.join(GAMES)}") from None


def offer(text: str) -> Offer:
    """The offer a person named: its key, a game's name or one of its aliases (any case)."""
    key = text.strip().lower()
    for o in OFFERS:
        if o.key == key:
            return o
    for info in INFO.values():
        if key in info.aliases:
            return next(o for o in OFFERS if o.game == info.name)
    keys = ", ".join(o.key for o in OFFERS)
    raise ValueError(f"unknown game {text!r}: choose one of {keys}")


def offer_of(game: str, variant: str | None) -> Offer:
    """The offer a match of `game` and `variant` was started from (for a rematch)."""
    default = game_info(game).default_variant
    mine = [o for o in OFFERS if o.game == game]
    for o in mine:
        if (o.variant or default) == (variant or default):
            return o
    return mine[0]


def title(game: str) -> str:
    """The game's title; an unknown name (an old row, say) as it is."""
    info = INFO.get(game)
    return info.title if info is not None else game
