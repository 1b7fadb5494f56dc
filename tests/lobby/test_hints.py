"""Hints: the best move and what it leads to, proven where a solver can; only in games against
the bot, a few per game, and the game becomes unrated."""

from __future__ import annotations

from typing import Any

import pytest

from engine.agents.connect4.score import from_score, in_moves
from engine.games import new_game
from engine.games.connect4 import Connect4State
from engine.hints import hint
from lobby.core import Lobby, LobbyConfig, Person
from lobby.errors import BadRequest, LimitReached, NotInMatch, NotYourTurn
from lobby.joberrors import WorkerCrashed
from tests.boardbot import ALICE, BOB, buttons, callbacks
from tests.console.test_console import run

ANN = Person("local", "ann", "ann")


def test_pons_scores_in_moves_from_now() -> None:
    assert from_score(18, 6, 42) == ("win", 1)  # the winning disc is the 7th of the game
    assert from_score(18, 7, 42) == ("win", 1)
    assert from_score(17, 6, 42) == ("win", 2)
    assert from_score(-18, 5, 42) == ("loss", 1)  # the opponent wins with its next move
    assert from_score(0, 10, 42) == ("draw", 0)
    assert [in_moves(n) for n in (1, 2, 3, 4, 11, 21)] == [
        "your next move",
        "your 2nd move from now",
        "your 3rd move from now",
        "your 4th move from now",
        "your 11th move from now",
        "your 21st move from now",
    ]


def test_a_connect_four_hint_is_proven_late_in_a_game() -> None:
    won = hint(Connect4State.from_moves("121212"))
    assert (won.move, won.outcome, won.exact) == ("1", "you win with your next move", True)
    lost = hint(Connect4State.from_moves("41513"))  # three in a row, both ends open
    assert lost.exact and lost.outcome.startswith("you lose against perfect play")
    # The opening book: the centre wins, with the first player's last disc.
    first = hint(Connect4State.new())
    assert (first.move, first.outcome, first.exact) == (
        "4",
        "you win with your 21st move from now",
        True,
    )


def test_an_othello_hint_is_exact_near_the_end() -> None:
    """Exact from 14 empties whatever the time budget: the first hint in a process pays the
    kernels' compile inside its budget, and a busy host must not turn a proof into a guess."""
    import random

    for seed in range(4):
        state, rng = new_game("othello"), random.Random(seed)
        while 64 - (state.black | state.white).bit_count() > 14:
            state = state.play(rng.choice(state.legal_moves()))
        found = hint(state, seconds=0.01)
        assert found.exact, (seed, found)
        assert "disc" in found.outcome or "draw" in found.outcome
        assert state.parse_move(found.move) in state.legal_moves()


@pytest.fixture
def lobby_config() -> LobbyConfig:
    return LobbyConfig(seed=7, max_hints=2)


async def test_hints_make_the_game_unrated_and_run_out(lobby: Lobby) -> None:
    snap = await lobby.start_pve(ANN, "connect4", "easy", "me")
    assert snap.match.rated
    found, after = await lobby.hint(snap.id, ANN)
    assert not after.match.rated and after.match.options["hints"] == 1
    assert after.state.parse_move(found.move) in after.state.legal_moves()
    snap = await lobby.play(snap.id, ANN, found.move)
    snap = await lobby.advance(snap.id)
    await lobby.hint(snap.id, ANN)
    snap = await lobby.play(snap.id, ANN, snap.state.legal_moves()[0])
    snap = await lobby.advance(snap.id)
    with pytest.raises(LimitReached, match="used the 2 hints"):
        await lobby.hint(snap.id, ANN)
    assert "unrated (2 hints)" in __import__("lobby.present").present.footer(snap)
    pvp = await lobby.start_pvp(ANN, Person("local", "ben", "ben"), "connect4")
    with pytest.raises(BadRequest, match="only for games against the bot"):
        await lobby.hint(pvp.id, ANN)
    with pytest.raises(NotInMatch):
        await lobby.hint(snap.id, Person("local", "ben", "ben"))


async def test_no_hint_while_the_bot_is_to_move(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lobby.turns, "schedule", lambda snap: None)  # the bot never moves here
    bot_first = await lobby.start_pve(ANN, "connect4", "easy", "bot")
    with pytest.raises(NotYourTurn):
        await lobby.hint(bot_first.id, ANN)


async def test_the_console_hint(lobby: Lobby) -> None:
    text = await run(lobby, "/play game:connect4 opponent:easy\n/hint\n", "ann")
    hint_line = "Hint for match #1: play 4 (you win with your 21st move from now)."
    assert f"{hint_line} This game is now unrated;" in text
    assert "hints used: 1 of 2." in text


async def test_discord_hint_is_for_the_player_only(env: Any) -> None:
    _bot, h = env
    [cb] = callbacks(await h.slash("hint", {}, user=ALICE))
    assert cb.ephemeral and "no game against the bot in this channel" in cb.message["content"]
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    calls = await h.slash("hint", {}, user=ALICE)
    [followup] = [c for c in calls if c.is_followup]
    assert followup.ephemeral and "Hint for match #1: play 4" in followup.message["content"]
    [cb] = callbacks(await h.slash("hint", {}, user=BOB))
    assert cb.ephemeral and "no game against the bot" in cb.message["content"]


async def test_the_hint_button_answers_the_player_and_marks_the_board_unrated(env: Any) -> None:
    _bot, h = env
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    [hint_id] = [b["custom_id"] for b in buttons(board) if b["custom_id"].startswith("hn:")]
    calls = await h.click(board, hint_id, user=BOB)  # not Bob's game: refused, ephemeral
    assert all(c.ephemeral for c in calls if c.is_followup or c.is_callback)
    calls = await h.click(board, hint_id, user=ALICE)
    [followup] = [c for c in calls if c.is_followup]
    assert (
        followup.ephemeral
        and "play 4 (you win with your 21st move from now)" in followup.message["content"]
    )
    await h.settle()
    assert "unrated (1 hint)" in h.last_message(ephemeral=False)["embeds"][0]["footer"]["text"]


async def test_a_failed_hint_job_counts_nothing(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = await lobby.start_pve(ANN, "connect4", "easy", "me")

    async def crash(*args: Any, **kwargs: Any) -> Any:
        raise WorkerCrashed("the worker died")

    monkeypatch.setattr(lobby.pool, "run", crash)
    with pytest.raises(BadRequest, match="no hint could be found"):
        await lobby.hint(snap.id, ANN)
    after = await lobby.snapshot(snap.id)
    assert after.match.rated and "hints" not in after.match.options
