"""Puzzles: a position with one move to find, for a player to answer once (`lobby.puzzle` holds
the records, the rules and the words).

- **Which puzzle** (`next`): first the player's own blunders from their analysed matches of
  that game (the newest ten analyses are looked at each time; each blunder is queued once and
  served once, oldest first), then a shipped puzzle they have not answered, at random among
  the five whose rating is nearest theirs.
- **An answer** (`answer`): a shipped puzzle's is right if it is the proven answer; the first
  answer of a player to a puzzle is rated (the player and the puzzle play one openskill game,
  the player winning if they solved it) and moves their streak; later answers are judged and
  shown, not rated. One's own blunder is judged by the solvers as `/retry` judges a move
  (`lobby.retries`), kept, and not rated.
- **The daily puzzle** (`daily`): one per UTC day and game, the same for everyone (a hash of
  the day and the game over the pool). Its first answer by a player also moves their daily
  streak. The first `/puzzle daily` of a game asked in a server on a day also posts it in the
  server's announcement channel, if one is set (once per server, game and day).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence

from db.store import Store
from engine.analysis import VERSION, Analysis
from engine.games.base import Move, NotationError
from engine.puzzles.pool import GAMES, Puzzle, load_pool
from lobby.boundary import boundary
from lobby.errors import BadMove, BadRequest, LobbyError
from lobby.people import People
from lobby.puzzle import (
    OWN_KEY,
    PuzzleShown,
    PuzzleStats,
    PuzzleVerdict,
    daily_of,
    day_of,
    nearest,
    position,
    scorer,
)
from lobby.ratings import DEFAULT_MU
from lobby.records import Person
from lobby.retries import Retries
from lobby.retry import holds, mistakes
from lobby.settings import Settings

log = logging.getLogger(__name__)

#: How many of a player's newest analysed matches are looked at for blunders.
ANALYSES_LOOKED_AT = 10


class Puzzles:
    """Puzzles to play, their answers, the daily puzzle and each player's puzzle stats. Its
    methods are the front ends' (each a `boundary`)."""

    def __init__(
        self,
        store: Store,
        people: People,
        retries: Retries,
        settings: Settings,
        clock: Callable[[], float],
        rng: random.Random,
    ) -> None:
        self._store = store
        self._people = people
        self._retries = retries
        self._settings = settings
        self._clock = clock
        self._rng = rng
        #: The shipped puzzles of a game (tests give their own).
        self.pool: Callable[[str], Sequence[Puzzle]] = load_pool
        self._dailies: dict[tuple[str, str], tuple[Sequence[Puzzle], Puzzle | None]] = {}

    # ------------------------------------------------------------------ finding a puzzle

    async def _game(self, game: str, guild_id: int | None) -> str:
        """A game there are puzzles of, offered in the server asked from (`/settings games`)."""
        game = game.strip().lower()
        if game not in GAMES:
            raise BadRequest(f"there are puzzles of {' and '.join(GAMES)}, not {game!r}")
        found = await self._settings.of(guild_id)
        if not found.offered("games", game):
            raise BadRequest(f"this server offers {', '.join(found.value('games'))} only")
        return game

    def _puzzle(self, key: str) -> Puzzle:
        for game in GAMES:
            for p in self.pool(game):
                if p.id == key:
                    return p
        raise BadRequest("there is no such puzzle")

    def _daily(self, game: str, day: str) -> Puzzle | None:
        """The day's puzzle of `game`, worked out once per pool, game and day."""
        pool = self.pool(game)
        hit = self._dailies.get((game, day))
        if hit is None or hit[0] is not pool:
            if len(self._dailies) >= 16:
                self._dailies.clear()
            hit = self._dailies[(game, day)] = (pool, daily_of(pool, game, day))
        return hit[1]

    async def _shown(self, p: Puzzle) -> PuzzleShown:
        state, last = position(p.game, p.moves)
        held = await self._store.puzzles.rating(p.id)
        day = day_of(self._clock())
        daily = self._daily(p.game, day)
        today = day if daily is not None and daily.id == p.id else None
        rating = p.rating if held is None else held.mu
        return PuzzleShown(p.id, p.game, state, last, p.kind, p.plies, rating, today)

    async def _own(self, key: str, person: Person) -> PuzzleShown:
        """One's own blunder's position (refused if it is not the person's mistake)."""
        m = OWN_KEY.match(key)
        if m is None:
            raise BadRequest("there is no such puzzle")
        step = await self._retries.at(int(m[1]), int(m[2]), person)
        return PuzzleShown(key, step.game, step.state, step.last, "own", step.ply, None,
                           step=step)  # fmt: skip

    @boundary
    async def next(self, game: str, person: Person, guild_id: int | None = None) -> PuzzleShown:
        """The person's next puzzle of `game`: their own blunder waiting, else a shipped one
        near their rating that they have not answered (`guild_id`: the server asked from)."""
        game = await self._game(game, guild_id)
        player = await self._people.known(person)  # asking creates no player
        if player is not None:
            await self._queue_blunders(player.id, game)
            while (item := await self._store.puzzles.take(player.id, game)) is not None:
                try:
                    return await self._own(item.item, person)
                except LobbyError as exc:  # the match or its analysis changed: the next one
                    log.warning("puzzle %s of player %s skipped: %s", item.item, player.id, exc)
        pool = self.pool(game)
        if not pool:
            raise BadRequest(f"there are no {game} puzzles yet")
        answered: set[str] = set()
        mu = DEFAULT_MU
        if player is not None:
            answered = await self._store.puzzles.answered(player.id, game)
            score = await self._store.puzzles.score(player.id, game)
            mu = score.mu if score is not None else DEFAULT_MU
        found = nearest(pool, await self._store.puzzles.ratings(game), answered, mu)
        if not found:
            raise BadRequest(
                f"you have answered all {len(pool)} {game} puzzles: /puzzle daily has one a day"
            )
        return await self._shown(self._rng.choice(found))

    async def _queue_blunders(self, player_id: int, game: str) -> None:
        """Queue the player's blunders in their newest analysed matches of `game`."""
        items: list[tuple[str, int, int]] = []
        for match_id, seat, data in await self._store.puzzles.analysed(
            player_id, game, VERSION, ANALYSES_LOOKED_AT
        ):
            try:
                analysis = Analysis.from_json(data)
            except ValueError as exc:
                log.warning("match %s: stored analysis unreadable (%s)", match_id, exc)
                continue
            for r in mistakes(analysis.moves, seat):
                if r.verdict == "blunder":
                    items.append((f"m{match_id}.{r.ply}", match_id, r.ply))
        await self._store.puzzles.enqueue(player_id, game, items)

    @boundary
    async def show(self, key: str, person: Person) -> PuzzleShown:
        """A puzzle by its key again (one's own only to its player)."""
        if OWN_KEY.match(key):
            return await self._own(key, person)
        return await self._shown(self._puzzle(key))

    @boundary
    async def daily(self, game: str, guild_id: int | None = None) -> tuple[PuzzleShown, int | None]:
        """Today's puzzle of `game` (UTC), the same for everyone; and the announcement channel
        to post it in, if this is the first time it is asked for in that server today."""
        game = await self._game(game, guild_id)
        day = day_of(self._clock())
        p = self._daily(game, day)
        if p is None:
            raise BadRequest(f"there are no {game} puzzles yet")
        shown = await self._shown(p)
        if guild_id is None:
            return shown, None
        channel = (await self._settings.of(guild_id)).value("announcements")
        if not channel or not await self._store.puzzles.claim_post(guild_id, game, day):
            return shown, None
        return shown, int(channel)

    # ------------------------------------------------------------------ answering

    @boundary
    async def answer(self, key: str, move: str | Move, person: Person) -> PuzzleVerdict:
        """The person's answer to a puzzle, judged and kept (see the module's docstring)."""
        if OWN_KEY.match(key):
            return await self._answer_own(key, move, person)
        p = self._puzzle(key)
        shown = await self._shown(p)
        text = _legal(shown, move)
        solved = text == p.answer
        player = await self._people.player_for(person)
        done = await self._store.puzzles.record(
            player.id, p.game, p.id, text, solved, daily=shown.daily,
            score=scorer(p, player.id, solved, shown.daily),
        )  # fmt: skip
        earlier = None if done.first else (done.attempt.move, done.attempt.solved)
        return PuzzleVerdict(
            shown, text, solved, done.first, earlier, p.answer, p.line, p.value,
            done.before, done.after,
        )  # fmt: skip

    async def _answer_own(self, key: str, move: str | Move, person: Person) -> PuzzleVerdict:
        shown = await self._own(key, person)
        step = shown.step
        assert step is not None
        _, tried = await self._retries.attempt(step.match_id, step.ply, move, person)
        solved = holds(tried)
        if solved is None:  # the solver could not tell in time: nothing is kept
            return PuzzleVerdict(shown, tried.move, None, True, None, None, tried=tried)
        _, best = await self._retries.best(step.match_id, step.ply, person)
        player = await self._people.player_for(person)
        done = await self._store.puzzles.record(player.id, step.game, key, tried.move, solved)
        earlier = None if done.first else (done.attempt.move, done.attempt.solved)
        return PuzzleVerdict(
            shown, tried.move, solved, done.first, earlier, best.best, tried=tried, best=best
        )

    # ------------------------------------------------------------------ stats

    @boundary
    async def stats(self, person: Person) -> PuzzleStats:
        """The person's puzzle ratings, answers and streaks per game, and their own blunders
        waiting."""
        today = day_of(self._clock())
        player = await self._people.known(person)
        if player is None:
            return PuzzleStats(person.name, (), {}, today)
        scores = tuple(await self._store.puzzles.scores(player.id))
        waiting = await self._store.puzzles.waiting(player.id)
        own = await self._store.puzzles.unrated(player.id)
        return PuzzleStats(player.display_name, scores, waiting, today, own)


def _legal(shown: PuzzleShown, move: str | Move) -> str:
    """A move in the puzzle's position, in the game's notation; BadMove if it is not legal."""
    state = shown.state
    try:
        parsed = state.parse_move(move.strip().lower()) if isinstance(move, str) else move
    except NotationError as exc:
        raise BadMove(str(exc)) from None
    if parsed not in state.legal_moves():
        raise BadMove("that move is not legal here")
    return state.move_to_str(parsed)
