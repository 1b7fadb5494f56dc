"""Names people chose never ping anyone and never show as markdown: the client's default
allowed mentions are none, the challenge ping names exactly the challenged person, and every
name is escaped wherever the bot shows it (boards, listings, replays, analyses, errors)."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cogs.names import ZERO_WIDTH, safe_name
from tests.boardbot import BOB, buttons
from tests.harness import Call, user

#: A member whose nickname tries everything at once.
HOSTILE_NAME = "@everyone <@&555> @here [free nitro](https://evil.example) **b** `c`"
MALLORY = user(666, HOSTILE_NAME)


def message_body(call: Call) -> dict[str, Any] | None:
    """The message a request sends or edits (None for requests that carry no message)."""
    body = call.json
    if not isinstance(body, dict):
        return None
    if call.is_callback:
        body = body.get("data") or {}
    if not isinstance(body, dict) or not ({"content", "embeds"} & body.keys()):
        return None
    return body


def unsafe_mentions(call: Call, challenged: set[str]) -> str | None:
    """Why a request's allowed mentions are unsafe, or None: a message must say what it may
    ping, and that is at most the challenged person."""
    body = message_body(call)
    if body is None or not body.get("content"):  # an embed pings nobody
        return None
    allowed = body.get("allowed_mentions")
    if allowed is None:
        return f"{call.method} {call.route}: no allowed_mentions (Discord would parse all)"
    parse = set(allowed.get("parse") or [])
    if parse & {"everyone", "roles"}:
        return f"{call.method} {call.route}: parses {allowed['parse']}"
    if "users" in parse:  # only an embed-free ping of exactly the challenged person
        content = body.get("content") or ""
        mentioned = set(re.findall(r"<@!?(\d+)>", content))
        if not mentioned <= challenged or re.sub(r"<@!?\d+>", "", content).strip():
            return f"{call.method} {call.route}: may ping users in {content[:80]!r}"
    if allowed.get("roles"):
        return f"{call.method} {call.route}: may ping roles {allowed['roles']}"
    if not set(allowed.get("users") or []) <= challenged:
        return f"{call.method} {call.route}: may ping users {allowed['users']}"
    return None


MASKED_LINK = re.compile(r"(?<!\\)\[free nitro\]\(")


def unescaped(call: Call) -> list[str]:
    """The parts of a hostile name a request shows as markdown or mentions."""
    body = message_body(call)
    if body is None:
        return []
    text = json.dumps(body, ensure_ascii=False)
    found = [m for m in ("@everyone", "@here", "<@&555>", "**b**", "`c`") if m in text]
    if MASKED_LINK.search(text):
        found.append("masked link")
    return found


async def test_a_hostile_name_pings_nobody_and_shows_as_plain_text(env: Any) -> None:
    _bot, h = env
    calls: list[Call] = []
    calls += await h.slash("challenge", {"opponent": BOB, "game": "connect4"}, user=MALLORY)
    invite = h.last_message(ephemeral=False)
    accept = next(b["custom_id"] for b in buttons(invite) if b["custom_id"].startswith("ch:a"))
    calls += await h.click(invite, accept, user=BOB)
    calls += await h.slash("resign", {}, user=BOB)  # the hostile member wins
    calls += await h.slash("replay", {}, user=BOB)
    calls += await h.slash("history", {}, user=BOB)
    calls += await h.slash("stats", {"user": MALLORY}, user=BOB)
    calls += await h.slash("leaderboard", {"game": "connect4"}, user=BOB)
    calls += await h.slash("play", {"game": "connect4", "opponent": "nosuch"}, user=MALLORY)
    calls += await h.slash("play", {"game": "othello", "opponent": "easy"}, user=MALLORY)
    board = h.last_message(ephemeral=False)
    calls += await h.click(board, buttons(board)[-1]["custom_id"], user=MALLORY)  # resign
    with_messages = [c for c in calls if message_body(c) is not None]
    assert len(with_messages) >= 8
    challenged = {str(BOB.id)}
    assert [why for c in calls if (why := unsafe_mentions(c, challenged))] == []
    assert [(message_body(c), bad) for c in calls if (bad := unescaped(c))] == []
    # The challenge still pings the challenged person, and only them.
    ping = next(c for c in calls if (message_body(c) or {}).get("content") == f"<@{BOB.id}>")
    assert message_body(ping)["allowed_mentions"]["parse"] == ["users"]  # type: ignore[index]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=64))
def test_an_escaped_name_has_no_mention_link_or_second_line(name: str) -> None:
    shown = safe_name(name)
    assert "\n" not in shown and "\r" not in shown
    assert all(shown[i + 1 : i + 2] == ZERO_WIDTH for i, c in enumerate(shown) if c == "@")
    assert not MASKED_LINK.search(shown.replace("free nitro", "x"))
    assert not re.search(r"(?<!\\)\[[^\]]*\]\(", shown)  # no masked link of any text
    assert not re.search(r"(?<!\\)<", shown)  # no <t:..>, <#channel>, <:emoji:id>
