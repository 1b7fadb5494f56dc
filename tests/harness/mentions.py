"""Checks of what the bot sends that names people chose must never break: no request lets
Discord ping beyond the one challenged person, and no name's markdown reaches a message as
markdown (the fuzz run and tests/cogs/test_mentions.py use them)."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from typing import Any

from tests.harness.payloads import Call

#: Pieces of hostile names: mentions, a masked link, markdown, a code fence.
HOSTILE_PARTS = (
    "@everyone",
    "@here",
    "<@&555>",
    "<@123456789012345678>",
    "[free nitro](https://evil.example)",
    "**bold**",
    "`tick`",
    "```fence```",
    "__under__",
    "~~gone~~",
    "||spoiler||",
)
_MENTION = re.compile(r"<@!?(\d+)>")


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


def unsafe_mentions(call: Call, challenged: Collection[str]) -> str | None:
    """Why a request's allowed mentions are unsafe, or None: a message with content must say
    what it may ping, and that is at most the challenged person, alone in the content (an
    embed pings nobody)."""
    body = message_body(call)
    if body is None or not body.get("content"):
        return None
    allowed = body.get("allowed_mentions")
    where = f"{call.method} {call.route}"
    if allowed is None:
        return f"{where}: no allowed_mentions (Discord would parse every mention)"
    parse = set(allowed.get("parse") or [])
    if parse & {"everyone", "roles"} or allowed.get("roles"):
        return f"{where}: may ping everyone or roles: {allowed}"
    users = set(map(str, allowed.get("users") or []))
    if "users" in parse:
        content = str(body.get("content") or "")
        mentioned = set(_MENTION.findall(content))
        if not mentioned <= set(challenged) or _MENTION.sub("", content).strip():
            return f"{where}: may ping users in {content[:80]!r}"
    elif not users <= set(challenged):
        return f"{where}: may ping users {sorted(users)}"
    return None


def unescaped(call: Call, parts: Iterable[str] = HOSTILE_PARTS) -> list[str]:
    """The hostile name parts a request shows as they are (as markdown or mentions)."""
    body = message_body(call)
    if body is None:
        return []
    text = json.dumps(body, ensure_ascii=False)
    return [part for part in parts if json.dumps(part, ensure_ascii=False)[1:-1] in text]
