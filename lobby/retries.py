"""Retries: a player back in the position before each of their worst moves of an analysed
match, a new move judged there in the engine pool, and the best move when they ask for it
(`lobby.retry` holds the records, the job and the words).

Nothing is stored: a step is found again from the match, the ply of the mistake and the
analysis (stored once by the coach), so only the player of a mistake may act on it and a
retry shown before a restart goes on after it."""

from __future__ import annotations

import logging

from engine.analysis import Review
from engine.games import new_game
from engine.games.base import Move, NotationError
from engine.hints import hint
from lobby.coach import Coach
from lobby.errors import BadMove, BadRequest, NotInMatch
from lobby.joberrors import JobFailed
from lobby.matches import Matches
from lobby.people import People
from lobby.pool import EnginePool
from lobby.records import Person
from lobby.retry import RetryStep, judge, mistakes
from tools.pictures import Replay

log = logging.getLogger(__name__)

#: The most a tried move's judgement may take (less if analyses are given less).
RETRY_SECONDS = 3.0


class Retries:
    """The steps of a player's retries, their tried moves and the best moves."""

    def __init__(self, pool: EnginePool, people: People, matches: Matches, coach: Coach) -> None:
        self._pool = pool
        self._people = people
        self._matches = matches
        self._coach = coach

    async def _mistakes(
        self, match_id: int | None, person: Person
    ) -> tuple[Replay, int, list[Review]]:
        """The match, the person's seat in it and their mistakes, worst first."""
        replay = await self._coach.analysis_target(match_id, person)
        snap = await self._matches.snapshot(replay.match_id)
        player = await self._people.known(person)
        seat = None if player is None else snap.seat_index(player.id)
        if seat is None:
            raise NotInMatch(
                f"you did not play in match #{replay.match_id}: only its players can retry "
                "their moves (/retry takes you to your own)"
            )
        _, analysis, _ = await self._coach.analysis(replay.match_id, person)
        return replay, seat, mistakes(analysis.moves, seat)

    async def start(self, match_id: int | None, person: Person) -> RetryStep:
        """The person's worst mistake in a finished match (`None`: their last one)."""
        replay, _, found = await self._mistakes(match_id, person)
        if not found:
            raise BadRequest(
                f"match #{replay.match_id} has no blunder, miss or inaccuracy of yours to try again"
            )
        return self._step(replay, found, 0)

    async def at(self, match_id: int, ply: int, person: Person) -> RetryStep:
        """The step of the person's mistake at `ply` (refused if it is not one of theirs)."""
        replay, seat, found = await self._mistakes(match_id, person)
        return self._step(replay, found, _index(replay, seat, found, ply))

    async def following(self, match_id: int, ply: int, person: Person) -> RetryStep | None:
        """The mistake after the one at `ply`, worst first; None after the last."""
        replay, seat, found = await self._mistakes(match_id, person)
        k = _index(replay, seat, found, ply) + 1
        return self._step(replay, found, k) if k < len(found) else None

    async def attempt(
        self, match_id: int, ply: int, move: str | Move, person: Person
    ) -> tuple[RetryStep, Review]:
        """A move tried in place of the mistake at `ply`, judged by the solvers."""
        step = await self.at(match_id, ply, person)
        state = step.state
        try:
            parsed = state.parse_move(move) if isinstance(move, str) else move
        except NotationError as exc:
            raise BadMove(str(exc)) from None
        if parsed not in state.legal_moves():
            raise BadMove("that move is not legal here")
        text = state.move_to_str(parsed)
        replay = await self._coach.analysis_target(match_id, person)
        seconds = min(RETRY_SECONDS, self._coach.analysis_seconds(step.game))
        try:
            found: Review = await self._pool.run(
                judge, replay.game, replay.variant, list(replay.moves[:ply]), text, seconds,
                cap=2 * seconds + 10, urgent=True,
            )  # fmt: skip
        except JobFailed as exc:  # a crashed or hung worker: nothing was judged
            log.warning("match %s: a tried move was not judged: %s", match_id, exc)
            raise BadRequest("the move could not be judged this time; try again") from None
        return step, found

    async def best(self, match_id: int, ply: int, person: Person) -> tuple[RetryStep, Review]:
        """The step, with the best move at its position: the analysis's, else the hint's."""
        step = await self.at(match_id, ply, person)
        if step.mistake.best is not None:
            return step, step.mistake
        seconds = min(RETRY_SECONDS, self._coach.analysis_seconds(step.game))
        try:
            found = await self._pool.run(
                hint, step.state, seconds, cap=2 * seconds + 2, urgent=True
            )
        except JobFailed as exc:
            log.warning("match %s: no best move: %s", match_id, exc)
            raise BadRequest("the best move could not be found this time; try again") from None
        r = step.mistake
        return step, Review(
            r.ply, r.move, r.player, r.verdict, found.exact, r.outcome_before, r.outcome_after,
            best=found.move,
        )  # fmt: skip

    @staticmethod
    def _step(replay: Replay, found: list[Review], k: int) -> RetryStep:
        """The k-th mistake's step: the position before it, the move before marked."""
        r = found[k]
        state, last = new_game(replay.game, replay.variant), None
        for text in replay.moves[: r.ply]:
            last = state.parse_move(text)
            state = state.play(last)
        return RetryStep(replay.match_id, replay.game, replay.names, r, state, last, k, len(found))


def _index(replay: Replay, seat: int, found: list[Review], ply: int) -> int:
    """Where the mistake at `ply` stands among the seat's; refused if it is not one of them."""
    for k, r in enumerate(found):
        if r.ply == ply:
            return k
    if 0 <= ply < len(replay.moves) and ply % 2 != seat:
        raise NotInMatch(
            f"move {ply + 1} of match #{replay.match_id} is not yours: /retry takes you to your own"
        )
    raise BadRequest(f"move {ply + 1} of match #{replay.match_id} is not one of your mistakes")
