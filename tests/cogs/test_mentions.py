"""Names people chose never ping anyone and never show as markdown: the client's default
allowed mentions are none, the challenge ping names exactly the challenged person, and every
name is escaped wherever the bot shows it (boards, listings, replays, analyses, errors)."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cogs.names import ZERO_WIDTH, safe_line, safe_name
from tests.boardbot import BOB, buttons
from tests.harness import Call, user
from tests.harness.mentions import HOSTILE_PARTS, message_body, unescaped, unsafe_mentions

#: A member whose nickname tries everything at once.
HOSTILE_NAME = " ".join(HOSTILE_PARTS)
MALLORY = user(666, HOSTILE_NAME)


async def test_a_hostile_name_pings_nobody_and_shows_as_plain_text(env: Any) -> None:
    _bot, h = env
    calls: list[Call] = []
    calls += await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=MALLORY)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    board = h.last_message(ephemeral=False)
    calls += await h.click(invite, accept, user=BOB)
    board = h.last_message(ephemeral=False)
    calls += await h.click(board, buttons(board)[0]["custom_id"], user=BOB)  # not his turn
    calls += await h.slash("resign", {}, user=BOB)  # the hostile member wins
    calls += await h.slash("replay", {}, user=BOB)
    calls += await h.slash("analyse", {}, user=BOB)
    calls += await h.slash("history", {}, user=BOB)
    calls += await h.slash("stats", {"user": MALLORY}, user=BOB)
    calls += await h.slash("leaderboard", {"game": "connect4"}, user=BOB)
    calls += await h.slash("play", {"game": "connect4", "opponent": "nosuch"}, user=MALLORY)
    calls += await h.slash("play", {"game": "othello", "opponent": "easy"}, user=MALLORY)
    board = h.last_message(ephemeral=False)
    calls += await h.click(board, buttons(board)[-1]["custom_id"], user=MALLORY)  # resign
    with_messages = [c for c in calls if message_body(c) is not None]
    assert len(with_messages) >= 10
    challenged = {str(BOB.id)}
    assert [why for c in calls if (why := unsafe_mentions(c, challenged))] == []
    assert [(message_body(c), bad) for c in calls if (bad := unescaped(c))] == []
    # The challenge still pings the challenged person, and only them.
    ping = next(c for c in calls if (message_body(c) or {}).get("content") == f"<@{BOB.id}>")
    assert message_body(ping)["allowed_mentions"]["parse"] == ["users"]  # type: ignore[index]


MASKED_LINK = re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\(")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=64))
def test_an_escaped_name_has_no_mention_link_markdown_or_second_line(name: str) -> None:
    for shown in (safe_name(name), safe_line(name)):
        assert "\n" not in shown and "\r" not in shown
        assert all(shown[i + 1 : i + 2] == ZERO_WIDTH for i, c in enumerate(shown) if c == "@")
        assert not MASKED_LINK.search(shown)
        assert not re.search(r"(?<!\\)<", shown)  # no <t:..>, <#channel>, <:emoji:id>
        # every markdown sign is escaped (a backslash before it, itself not escaped)
        unescaped_sign = re.compile(r"(?<!\\)(?:\\\\)*[*_~|`]")
        assert not unescaped_sign.search(shown)


async def test_an_analysis_and_its_graphs_words_show_a_hostile_name_escaped(env: Any) -> None:
    """The analysis of a match with a move in it: its embed and the win-chance graph's alt
    text (an attachment's description) name the players escaped."""
    _bot, h = env
    calls: list[Call] = []
    calls += await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=MALLORY)
    board = h.last_message(ephemeral=False)
    calls += await h.click(board, buttons(board)[3]["custom_id"], user=MALLORY)
    calls += await h.slash("resign", {}, user=MALLORY)
    calls += await h.slash("analyse", {}, user=MALLORY)
    graphs = [
        a
        for c in calls
        for a in (message_body(c) or {}).get("attachments", [])
        if str(a.get("filename", "")).startswith("win-chance")
    ]
    assert graphs and all(a.get("description") for a in graphs)
    assert [(message_body(c), bad) for c in calls if (bad := unescaped(c))] == []
