"""Discord's documented limits on a message (lengths, counts of embeds, rows and options).

Discord answers a message over a limit with a 400, which in production shows only as "This
interaction failed"; :func:`assert_within_limits` catches it in tests instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.harness.errors import HarnessError
from tests.harness.payloads import JSON, SELECT_TYPES, Call, walk_components


class LimitError(HarnessError):
    """A payload exceeds a documented Discord limit (Discord would answer 400)."""


def _embed_total(embed: JSON) -> int:
    total = len(embed.get("title") or "") + len(embed.get("description") or "")
    total += len((embed.get("footer") or {}).get("text") or "")
    total += len((embed.get("author") or {}).get("name") or "")
    for f in embed.get("fields") or []:
        total += len(f.get("name") or "") + len(f.get("value") or "")
    return total


def assert_within_limits(payload: Mapping[str, Any] | Call) -> None:
    """Raise :class:`LimitError` if a message payload breaks a Discord limit.

    Accepts a :class:`Call` (its message part is checked) or a message/``data`` dict.  Checks
    content <= 2000, embeds <= 10, title <= 256, description <= 4096, <= 25 fields
    (name 256 / value 1024), footer 2048, combined embed text <= 6000, <= 5 action rows,
    <= 5 buttons per row or exactly one select per row, custom_id 1..100, <= 25 select
    options, labels <= 80.
    """
    msg: Mapping[str, Any] = payload.message if isinstance(payload, Call) else payload
    problems: list[str] = []
    content = msg.get("content") or ""
    if len(content) > 2000:
        problems.append(f"content is {len(content)} chars (max 2000)")
    embeds = msg.get("embeds") or []
    if len(embeds) > 10:
        problems.append(f"{len(embeds)} embeds (max 10)")
    total = 0
    for i, e in enumerate(embeds):
        for key, limit in (("title", 256), ("description", 4096)):
            if len(e.get(key) or "") > limit:
                problems.append(f"embed[{i}].{key} is {len(e[key])} chars (max {limit})")
        fields = e.get("fields") or []
        if len(fields) > 25:
            problems.append(f"embed[{i}] has {len(fields)} fields (max 25)")
        for j, f in enumerate(fields):
            if len(f.get("name") or "") > 256:
                problems.append(f"embed[{i}].fields[{j}].name > 256 chars")
            if len(f.get("value") or "") > 1024:
                problems.append(f"embed[{i}].fields[{j}].value > 1024 chars")
        if len((e.get("footer") or {}).get("text") or "") > 2048:
            problems.append(f"embed[{i}].footer.text > 2048 chars")
        total += _embed_total(e)
    if total > 6000:
        problems.append(f"embeds total {total} chars (max 6000)")

    components = msg.get("components") or []
    rows = [c for c in components if c.get("type") == 1]
    if len(rows) > 5:
        problems.append(f"{len(rows)} action rows (max 5)")
    for r, row in enumerate(walk_components(components)):
        if row.get("type") != 1:
            continue
        children = row.get("components") or []
        selects = [c for c in children if c.get("type") in SELECT_TYPES]
        if selects and len(children) != 1:
            problems.append(f"row {r}: a select must be alone in its row ({len(children)} items)")
        if len(children) > 5:
            problems.append(f"row {r}: {len(children)} components (max 5)")
        if not children:
            problems.append(f"row {r}: empty action row")
    for c in walk_components(components):
        cid = c.get("custom_id")
        if cid is not None and not 1 <= len(cid) <= 100:
            problems.append(f"custom_id {cid!r} is {len(cid)} chars (must be 1..100)")
        if len(c.get("label") or "") > 80:
            problems.append(f"label {c['label']!r} > 80 chars")
        if c.get("type") == 2 and c.get("style") != 5 and c.get("style") != 6 and cid is None:
            problems.append("non-link button without custom_id")
        options = c.get("options")
        if options is not None:
            if not 1 <= len(options) <= 25:
                problems.append(f"select {cid!r} has {len(options)} options (must be 1..25)")
            for o in options:
                if len(o.get("label") or "") > 100 or len(o.get("value") or "") > 100:
                    problems.append(f"select {cid!r} option label/value > 100 chars")
                if len(o.get("description") or "") > 100:
                    problems.append(f"select {cid!r} option description > 100 chars")
        if len(c.get("placeholder") or "") > 150:
            problems.append(f"select {cid!r} placeholder > 150 chars")
    if problems:
        raise LimitError("payload exceeds Discord limits:\n  " + "\n  ".join(problems))
