"""What goes over the wire: ids, users, the interaction payloads' pieces, captured calls.

Plain data, no discord.py internals: the shapes Discord sends (users, members) and what the
harness records of each request the bot makes (:class:`Call`).
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import discord

JSON = dict[str, Any]

DEFAULT_GUILD_ID = 700_000_000_000_000_001
DEFAULT_CHANNEL_ID = 700_000_000_000_000_002
BOT_USER_ID = 700_000_000_000_000_003

#: Permissions an ordinary member has in a normal text channel (no moderation powers), so
#: that ``manage_guild``-style checks fail unless a test opts in.
DEFAULT_MEMBER_PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    send_messages_in_threads=True,
    embed_links=True,
    attach_files=True,
    add_reactions=True,
    read_message_history=True,
    use_application_commands=True,
    use_external_emojis=True,
)

INTERACTION_APP_COMMAND = 2
INTERACTION_COMPONENT = 3
INTERACTION_AUTOCOMPLETE = 4

CALLBACK_CHANNEL_MESSAGE = 4
CALLBACK_DEFERRED_CHANNEL_MESSAGE = 5
CALLBACK_DEFERRED_UPDATE = 6
CALLBACK_UPDATE_MESSAGE = 7
CALLBACK_AUTOCOMPLETE = 8

FLAG_EPHEMERAL = 1 << 6
FLAG_LOADING = 1 << 7

SELECT_TYPES = (3, 5, 6, 7, 8)  # string, user, role, mentionable and channel selects

_EPOCH_BASE = discord.utils.time_snowflake(datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC))
# Shared by every harness in the process so ids never collide across a simulated restart
# (messages captured from bot #1 are clicked on bot #2).  Step of 1 << 22 == +1 ms, so
# ``discord.utils.snowflake_time`` orders them like real ids.
_SNOWFLAKES = itertools.count(1)


def snowflake() -> int:
    """Return a fresh, process-unique, monotonically increasing snowflake."""
    return _EPOCH_BASE + (next(_SNOWFLAKES) << 22)


def resume_snowflakes(after: int | None) -> None:
    """Make every later :func:`snowflake` larger than ``after`` (ids a previous process made:
    Discord's ids never repeat across a restart)."""
    global _SNOWFLAKES
    latest = _EPOCH_BASE if after is None else after
    _SNOWFLAKES = itertools.count(((latest - _EPOCH_BASE) >> 22) + 1000)


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


@dataclass(frozen=True)
class FakeUser:
    """A Discord user (and their guild membership) that can invoke interactions.

    ``permissions`` is what Discord puts in ``member.permissions`` - the *resolved* channel
    permissions that ``interaction.permissions`` and ``app_commands.checks.has_permissions``
    read.
    """

    id: int
    name: str
    permissions: int = DEFAULT_MEMBER_PERMISSIONS.value
    roles: tuple[int, ...] = ()
    bot: bool = False

    def user_payload(self) -> JSON:
        """The ``user`` object as Discord sends it."""
        return {
            "id": str(self.id),
            "username": self.name,
            "global_name": None,
            "discriminator": "0",
            "avatar": None,
            "bot": self.bot,
            "public_flags": 0,
        }

    def member_payload(self, *, with_user: bool = True) -> JSON:
        """The guild ``member`` object; ``resolved.members`` entries omit ``user``."""
        data: JSON = {
            "roles": [str(r) for r in self.roles],
            "nick": None,
            "avatar": None,
            "joined_at": "2024-01-01T00:00:00+00:00",
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "pending": False,
            "flags": 0,  # Member.__init__ indexes data['flags'] unconditionally
            "communication_disabled_until": None,
            "permissions": str(self.permissions),
        }
        if with_user:
            data["user"] = self.user_payload()
        return data


def user(
    id: int,
    name: str,
    *,
    permissions: int | discord.Permissions = DEFAULT_MEMBER_PERMISSIONS,
    roles: Sequence[int] = (),
) -> FakeUser:
    """Build a :class:`FakeUser`; pass ``permissions=discord.Permissions(manage_guild=True)``
    (or an int) to satisfy permission checks."""
    perms = permissions.value if isinstance(permissions, discord.Permissions) else int(permissions)
    return FakeUser(id=id, name=name, permissions=perms, roles=tuple(roles))


def command_data(name: str, options: list[JSON]) -> JSON:
    """An application command's data; `name` "group sub" is a subcommand of a group (Discord
    nests its options under it)."""
    group, _, sub = name.partition(" ")
    if sub:
        options = [{"name": sub, "type": 1, "options": options}]
    return {"id": str(snowflake()), "name": group, "type": 1, "options": options}


def walk_components(components: Sequence[JSON]) -> Iterator[JSON]:
    """Yield every component, depth first (action rows, then what is in them)."""
    for comp in components:
        yield comp
        yield from walk_components(comp.get("components") or [])


def custom_ids(message: Mapping[str, Any]) -> list[str]:
    """Every ``custom_id`` in a message's components, in order."""
    return [
        c["custom_id"] for c in walk_components(message.get("components") or []) if "custom_id" in c
    ]


@dataclass
class Call:
    """One captured outgoing REST request and the fake response it received.

    ``route`` is discord.py's path template (``/channels/{channel_id}/messages``) so tests
    can match on it without caring about ids; ``path`` is the concrete path and
    ``path_params`` the ids parsed out of it.
    """

    seam: Literal["http", "webhook"]
    method: str
    route: str
    path: str
    path_params: dict[str, str]
    json: Any = None
    query: dict[str, Any] | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    response: Any = None
    interaction_id: int | None = None

    @property
    def is_callback(self) -> bool:
        """True for ``POST /interactions/{id}/{token}/callback``."""
        return self.route.endswith("/callback")

    @property
    def is_followup(self) -> bool:
        """True for follow-up messages (``POST /webhooks/{app}/{token}``)."""
        return self.seam == "webhook" and self.method == "POST" and not self.is_callback

    @property
    def callback_type(self) -> int | None:
        """Interaction callback type (4 message, 5 defer, 6 deferred update, 7 update, 8
        autocomplete) or ``None`` if this is not a callback."""
        if self.is_callback and isinstance(self.json, dict):
            return int(self.json["type"])
        return None

    @property
    def message(self) -> JSON:
        """The message-shaped part of the payload (``data`` for callbacks, else the body)."""
        if not isinstance(self.json, dict):
            return {}
        if self.is_callback:
            return self.json.get("data") or {}
        return self.json

    @property
    def ephemeral(self) -> bool:
        """Whether the message was sent with the EPHEMERAL flag (64)."""
        return bool(int(self.message.get("flags") or 0) & FLAG_EPHEMERAL)

    @property
    def content(self) -> str | None:
        """Message content sent (``None`` if the key was absent)."""
        return self.message.get("content")

    @property
    def embeds(self) -> list[JSON]:
        """Embeds sent (empty if none)."""
        return list(self.message.get("embeds") or [])

    @property
    def components(self) -> list[JSON]:
        """Top-level components sent (empty if none)."""
        return list(self.message.get("components") or [])

    def custom_ids(self) -> list[str]:
        """Every ``custom_id`` in the sent components, in order."""
        return custom_ids(self.message)

    def __repr__(self) -> str:
        extra = f" type={self.callback_type}" if self.is_callback else ""
        return f"<Call {self.seam} {self.method} {self.route}{extra}>"


def text_channel(cid: int, gid: int, **fields: Any) -> JSON:
    """A guild text channel as Discord describes it (`fields` add to or replace the usual)."""
    return {
        "id": str(cid),
        "type": 0,
        "guild_id": str(gid),
        "name": "general",
        "position": 0,
        "parent_id": None,
        "nsfw": False,
        "topic": None,
        "rate_limit_per_user": 0,
        "last_message_id": None,
        "flags": 0,
        **fields,
    }


def guild_context(gid: int, cid: int, user: FakeUser) -> JSON:
    """An interaction's fields about where it happens: a guild's text channel, as a member."""
    return {
        "guild_id": str(gid),
        "guild": {"id": str(gid), "locale": "en-US", "features": []},
        "guild_locale": "en-US",
        "member": user.member_payload(),
        "context": 0,
        "authorizing_integration_owners": {"0": str(gid)},
        "channel": text_channel(cid, gid, permissions=str(user.permissions)),
    }


def dm_context(cid: int, user: FakeUser) -> JSON:
    """An interaction's fields about where it happens: a DM with the bot."""
    return {
        "user": user.user_payload(),
        "context": 1,
        "authorizing_integration_owners": {"0": "0"},
        "channel": {
            "id": str(cid),
            "type": 1,
            "flags": 0,
            "last_message_id": None,
            "recipients": [user.user_payload()],
        },
    }
