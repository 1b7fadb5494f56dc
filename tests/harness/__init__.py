"""An offline Discord for the bot's tests: real discord.py dispatch, a fake REST API.

``payloads`` holds ids, users and the captured :class:`Call`; ``http`` the fake Discord that
answers the bot's requests; ``spec`` checks each request against Discord's OpenAPI
description and ``limits`` against Discord's documented limits; ``harness`` drives the bot.
No token, no network, no gateway.  Typical use (``lobby`` as in ``tests/boardbot.py``)::

    bot = BoardBot(lobby, run_clock=False)
    async with await Harness.create(bot) as h:
        alice = user(101, "alice")
        await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=alice)
        board = h.last_message(ephemeral=False)
        column = board["components"][0]["components"][3]["custom_id"]
        calls = await h.click(board, column, user=alice)
        assert [c.callback_type for c in calls if c.is_callback] == [7]  # board updated
"""

from tests.harness.errors import HarnessError, HarnessTimeout, http_error
from tests.harness.harness import Harness
from tests.harness.limits import LimitError, assert_within_limits
from tests.harness.payloads import (
    DEFAULT_CHANNEL_ID,
    DEFAULT_GUILD_ID,
    Call,
    FakeUser,
    user,
)

__all__ = [
    "DEFAULT_CHANNEL_ID",
    "DEFAULT_GUILD_ID",
    "Call",
    "FakeUser",
    "Harness",
    "HarnessError",
    "HarnessTimeout",
    "LimitError",
    "assert_within_limits",
    "http_error",
    "user",
]
