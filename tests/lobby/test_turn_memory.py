"""A learning agent's memory that cannot be loaded: its turn goes on from what it has. A store
out for a moment (a server restart) is no fault of the bot's and is logged as a warning; any
other failure is logged as an error."""

from __future__ import annotations

import logging

import pytest

from db.errors import TransientError
from engine.agents.base import AgentSpec
from engine.games import new_game
from engine.games.base import GameState
from lobby.turns import Turns


class Failing:
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def rows_for(self, spec: AgentSpec, state: GameState) -> dict[bytes, bytes]:
        raise self.error


@pytest.mark.parametrize(
    ("error", "level"),
    [
        (TransientError("terminating connection due to administrator command"), logging.WARNING),
        (ValueError("a bug"), logging.ERROR),
    ],
)
async def test_a_memory_that_cannot_be_loaded_leaves_the_agent_what_it_has(
    caplog: pytest.LogCaptureFixture, error: Exception, level: int
) -> None:
    turns = object.__new__(Turns)  # only its memory is used here
    turns._memory = Failing(error)  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger="lobby.turns"):
        rows = await turns._memory_for(AgentSpec("trainer"), new_game("connect4"))
    assert rows == {}
    assert [r.levelno for r in caplog.records] == [level]
