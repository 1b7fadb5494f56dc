"""`/play` while the engine compiles: the new board says so when its opponent is still to
compile on this machine, and about how long that takes; once that opponent is compiled it says
nothing, whatever else is still compiling (tests/harness: discord.py's real dispatch)."""

from __future__ import annotations

from typing import Any

from engine import warm
from tests.boardbot import ALICE, BOB


def _first_start(bot: Any) -> list[warm.WarmStep]:
    """The engine pool's warm-up as on a first start: nothing compiled yet, on a machine as
    fast as the reference."""
    plan = warm.warm_plan()
    costs = {s.key: max(warm.LOAD_COST, warm.COSTS.get(s.key, warm.DEFAULT_COST)) for s in plan}
    bot.lobby.pool.warmup.use_plan((plan, costs, set()), 1.0)
    return plan


async def test_play_says_its_opponent_is_still_compiling_and_for_how_long(env: Any) -> None:
    bot, h = env
    plan = _first_start(bot)
    [expert] = [s for s in plan if s.key == "connect4-expert"]
    await h.slash("play", {"game": "connect4", "opponent": "expert"}, user=ALICE)
    content = h.last_message(ephemeral=False)["content"] or ""
    seconds = round(warm.COSTS[expert.key])  # the first of its family: its cost in the plan
    assert "Connect Four expert is still being compiled on this machine" in content
    assert f"for about {seconds} s more" in content
    bot.lobby.pool.warmup.warmed(expert, 3.0, failed=False)  # a worker compiled it
    await h.slash("play", {"game": "connect4", "opponent": "expert"}, user=BOB)
    assert not h.last_message(ephemeral=False)["content"]  # (others still compile)
    assert not bot.lobby.pool.status().warm
