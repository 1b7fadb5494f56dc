"""The games people may choose come from one table (`engine.games.catalog.OFFERS`): adding a
variant there offers it in Discord's /play, /challenge and /botmatch and in the console."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.games import catalog
from engine.games.catalog import Offer
from lobby.core import Lobby
from tests.console.test_console import run
from tests.machine import scaled

ROOT = Path(__file__).resolve().parents[2]
SMALL = Offer("connect4_6x5", "Connect Four 6x5", "connect4", "6x5k4")

SHOW_CHOICES = f"""
import json
from engine.games import catalog
small = catalog.Offer{(SMALL.key, SMALL.title, SMALL.game, SMALL.variant)!r}
catalog.OFFERS = (*catalog.OFFERS, small)
from cogs.games import Games
from console.commands import COMMANDS
out = {{}}
for command in (Games.play, Games.challenge, Games.botmatch):
    [param] = [p for p in command.parameters if p.name == "game"]
    out[command.name] = [[c.name, c.value] for c in param.choices]
out["console"] = COMMANDS["play"].usage
print(json.dumps(out))
"""


def test_every_offer_is_a_choice_of_the_slash_commands_and_the_console() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SHOW_CHOICES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    expected = [[o.title, o.key] for o in catalog.OFFERS] + [[SMALL.title, SMALL.key]]
    for command in ("play", "challenge", "botmatch"):
        assert shown[command] == expected
    assert "connect4|othello|connect4_6x5" in shown["console"]


async def test_a_new_offer_is_played_from_the_console(
    lobby: Lobby,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(catalog, "OFFERS", (*catalog.OFFERS, SMALL))
    text = await run(lobby, "/play game:connect4_6x5 opponent:easy\n3\n/history\n")
    assert "#1 Connect Four 6x5: you 🔴 vs 🟡 Bot (easy)" in text
    assert "Match #1 · 6x5k4 · rated" in text
    assert "1️⃣2️⃣3️⃣4️⃣5️⃣6️⃣\n" in text  # six columns
    snap = await lobby.snapshot(1)
    assert (snap.match.game, snap.match.variant, snap.state.cols) == ("connect4", "6x5k4", 6)


async def test_aliases_and_unknown_games(lobby: Lobby) -> None:
    text = await run(lobby, "/play game:C4 opponent:random\n/play game:chess opponent:easy\n")
    assert "#1 Connect Four: you" in text
    assert "error: unknown game 'chess': choose one of connect4, othello" in text


@pytest.mark.parametrize("chosen", catalog.OFFERS, ids=lambda o: o.key)
def test_every_offer_builds_its_game(chosen: Offer) -> None:
    """A variant the engine cannot play (a board too big for its bitboards, say) fails here,
    not in front of a person."""
    assert len(catalog.OFFERS) <= 25  # a slash option's choices
    assert chosen.key == chosen.key.lower() and chosen.key.replace("_", "").isalnum()
    state = catalog.game_info(chosen.game).new(chosen.variant)
    assert state.game == chosen.game and not state.is_over()
    assert catalog.offer(chosen.key) is chosen
