"""Offline test harness that drives discord.py's *real* interaction dispatch.

Why this exists
---------------
Unit-testing cogs by calling command callbacks directly skips everything that breaks in
production: option parsing, ``Member`` resolution, checks, ``DynamicItem`` routing after a
restart, persistent views, ``tree.on_error``, and the exact JSON that goes to Discord.  This
module instead feeds raw gateway ``INTERACTION_CREATE`` payloads into the bot's own
``ConnectionState`` parser and captures the REST calls discord.py makes, answering them with
realistic bodies so the library code keeps running exactly as it would against Discord.

No token, no network, no gateway: the two outgoing seams are replaced for the lifetime of a
:class:`Harness`:

* ``bot.http.request`` - bot-authenticated REST (``channel.send``, ``message.edit``, ...).
* ``AsyncWebhookAdapter.request`` - every interaction callback, follow-up and original
  response edit (discord.py routes those through the webhook adapter, not ``HTTPClient``).

Everything here that touches private discord.py attributes (``bot._connection``,
``_async_setup_hook``, ``_ready``, parsers, the adapter class) is deliberately confined to
this file so a discord.py upgrade only needs fixing in one place.  Written against
discord.py 2.7.1.

Typical use::

    async with await Harness.create(bot) as h:
        alice = user(1, "alice")
        calls = await h.slash("play", {"opponent": bob}, user=alice)
        board = h.last_message()
        await h.click(board, "c4:move:3", user=alice)
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import enum
import itertools
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

import discord
from discord import app_commands
from discord.http import Route
from discord.webhook.async_ import AsyncWebhookAdapter

__all__ = [
    "DEFAULT_CHANNEL_ID",
    "DEFAULT_GUILD_ID",
    "DEFAULT_MEMBER_PERMISSIONS",
    "Call",
    "FakeUser",
    "Harness",
    "HarnessError",
    "HarnessTimeout",
    "LimitError",
    "assert_within_limits",
    "snowflake",
    "user",
]

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

INTERACTION_PING = 1
INTERACTION_APP_COMMAND = 2
INTERACTION_COMPONENT = 3
INTERACTION_AUTOCOMPLETE = 4
INTERACTION_MODAL_SUBMIT = 5

CALLBACK_CHANNEL_MESSAGE = 4
CALLBACK_DEFERRED_CHANNEL_MESSAGE = 5
CALLBACK_DEFERRED_UPDATE = 6
CALLBACK_UPDATE_MESSAGE = 7
CALLBACK_AUTOCOMPLETE = 8
CALLBACK_MODAL = 9

FLAG_EPHEMERAL = 1 << 6
FLAG_LOADING = 1 << 7

_EPOCH_BASE = discord.utils.time_snowflake(datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC))
# Shared by every harness in the process so ids never collide across a simulated restart
# (messages captured from bot #1 are clicked on bot #2).  Step of 1 << 22 == +1 ms, so
# ``discord.utils.snowflake_time`` orders them like real ids.
_SNOWFLAKES = itertools.count(1)


def snowflake() -> int:
    """Return a fresh, process-unique, monotonically increasing snowflake."""
    return _EPOCH_BASE + (next(_SNOWFLAKES) << 22)


def _now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


class HarnessError(AssertionError):
    """The bot did something Discord would reject, or raised/logged an unhandled error.

    Subclasses ``AssertionError`` so pytest reports it as a test failure, not an error.
    """


class HarnessTimeout(HarnessError):
    """Spawned tasks did not finish within the timeout (likely a hang or a forgotten await)."""


# --------------------------------------------------------------------------------------
# Users
# --------------------------------------------------------------------------------------


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
    nick: str | None = None
    global_name: str | None = None
    bot: bool = False

    @property
    def mention(self) -> str:
        """The ``<@id>`` mention string, handy for content assertions."""
        return f"<@{self.id}>"

    def user_payload(self) -> JSON:
        """The ``user`` object as Discord sends it."""
        return {
            "id": str(self.id),
            "username": self.name,
            "global_name": self.global_name,
            "discriminator": "0",
            "avatar": None,
            "bot": self.bot,
            "public_flags": 0,
        }

    def member_payload(self, *, with_user: bool = True) -> JSON:
        """The guild ``member`` object; ``resolved.members`` entries omit ``user``."""
        data: JSON = {
            "roles": [str(r) for r in self.roles],
            "nick": self.nick,
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
    nick: str | None = None,
    bot: bool = False,
) -> FakeUser:
    """Build a :class:`FakeUser`; pass ``permissions=discord.Permissions(manage_guild=True)``
    (or an int) to satisfy permission checks."""
    perms = permissions.value if isinstance(permissions, discord.Permissions) else int(permissions)
    return FakeUser(id=id, name=name, permissions=perms, roles=tuple(roles), nick=nick, bot=bot)


# --------------------------------------------------------------------------------------
# Captured calls
# --------------------------------------------------------------------------------------


def _custom_ids(message: Mapping[str, Any]) -> set[str]:
    return {
        c["custom_id"]
        for c in _walk_components(message.get("components") or [])
        if "custom_id" in c
    }


def _walk_components(components: Sequence[JSON]) -> Iterator[JSON]:
    """Yield every component, depth first, including v2 containers/sections/labels."""
    for comp in components:
        yield comp
        yield from _walk_components(comp.get("components") or [])
        for key in ("accessory", "component"):
            child = comp.get(key)
            if isinstance(child, dict):
                yield from _walk_components([child])


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
        autocomplete, 9 modal) or ``None`` if this is not a callback."""
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
    def flags(self) -> int:
        """Message flags sent with this call (0 if none)."""
        return int(self.message.get("flags") or 0)

    @property
    def ephemeral(self) -> bool:
        """Whether the message was sent with the EPHEMERAL flag (64)."""
        return bool(self.flags & FLAG_EPHEMERAL)

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

    @property
    def choices(self) -> list[JSON]:
        """Autocomplete choices sent (type 8 callbacks)."""
        return list(self.message.get("choices") or [])

    def custom_ids(self) -> list[str]:
        """Every ``custom_id`` in the sent components, in order."""
        return [c["custom_id"] for c in _walk_components(self.components) if "custom_id" in c]

    def __repr__(self) -> str:
        extra = f" type={self.callback_type}" if self.is_callback else ""
        return f"<Call {self.seam} {self.method} {self.route}{extra}>"


# --------------------------------------------------------------------------------------
# Discord limits
# --------------------------------------------------------------------------------------


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
    options, labels <= 80.  Discord rejects such payloads with a 400, which in production
    shows up only as "This interaction failed" - so catch it in tests instead.
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
    is_v2 = bool(int(msg.get("flags") or 0) & (1 << 15))
    if not is_v2 and len(rows) > 5:
        problems.append(f"{len(rows)} action rows (max 5)")
    for r, row in enumerate(_walk_components(components)):
        if row.get("type") != 1:
            continue
        children = row.get("components") or []
        selects = [c for c in children if c.get("type") in (3, 5, 6, 7, 8)]
        if selects and len(children) != 1:
            problems.append(f"row {r}: a select must be alone in its row ({len(children)} items)")
        if len(children) > 5:
            problems.append(f"row {r}: {len(children)} components (max 5)")
        if not children:
            problems.append(f"row {r}: empty action row")
    for c in _walk_components(components):
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


# --------------------------------------------------------------------------------------
# Fake transport helpers
# --------------------------------------------------------------------------------------


class _FakeResponse:
    """Just enough of ``aiohttp.ClientResponse`` for ``discord.HTTPException.__init__``."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        self.headers: dict[str, str] = {}


def _http_error(status: int, code: int, message: str) -> discord.HTTPException:
    cls: type[discord.HTTPException] = {403: discord.Forbidden, 404: discord.NotFound}.get(
        status, discord.HTTPException
    )
    reason = {400: "Bad Request", 403: "Forbidden", 404: "Not Found"}.get(status, "Error")
    return cls(_FakeResponse(status, reason), {"code": code, "message": message})  # type: ignore[arg-type]


def _template_params(template: str, path: str) -> dict[str, str]:
    """Recover ``{name}`` values from a concrete path given discord.py's route template."""
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
    m = re.fullmatch(pattern, path)
    return dict(m.groupdict()) if m else {}


def _parse_body(
    payload: Any, multipart: Iterable[Mapping[str, Any]] | None, files: Sequence[discord.File]
) -> tuple[Any, dict[str, bytes]]:
    """Return (json body, {filename: bytes}) from either seam's argument style."""
    body = payload
    for part in multipart or ():
        if part.get("name") == "payload_json":
            body = json.loads(part["value"])
    blobs: dict[str, bytes] = {}
    for f in files or ():
        with contextlib.suppress(Exception):
            f.reset(seek=True)
            blobs[f.filename or "file"] = f.fp.read()
            f.reset(seek=True)
    return body, blobs


def _is_ignored_by_default(task: asyncio.Task[Any]) -> bool:
    """Tasks that legitimately outlive an interaction and must not block ``settle``:
    view timeout timers (sleep 180 s), ``delete_after=`` timers and ``discord.ext.tasks``
    loops."""
    coro = task.get_coro()
    qual = getattr(coro, "__qualname__", "")
    module = getattr(getattr(coro, "cr_code", None), "co_filename", "")
    from_discord = "/discord/" in module.replace("\\", "/")
    return from_discord and (
        qual.endswith("__timeout_task_impl")
        or qual.endswith("<locals>.inner_call")
        or qual == "Loop._loop"
    )


def _await_chain(task: asyncio.Task[Any], depth: int = 4) -> list[str]:
    """The innermost coroutines a task is suspended in (``Task.get_stack`` only shows the
    outermost frame, which for discord.py tasks is always library code, not your bug)."""
    out: list[str] = []
    coro: Any = task.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            name = getattr(coro, "__qualname__", type(coro).__name__)
            out.append(f"{name} ({frame.f_code.co_filename}:{frame.f_lineno})")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return out[-depth:] or [repr(task.get_coro())]


class _ErrorCollector(logging.Handler):
    """Collect ERROR records (discord.py logs swallowed exceptions instead of raising)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class _InteractionRecord:
    """What the fake Discord remembers about one interaction token."""

    id: int
    type: int
    channel_id: int
    guild_id: int | None
    user: FakeUser
    command_name: str | None = None
    message_id: int | None = None  # the component's message for type 3
    original_id: int | None = None
    responded: bool = False


# The adapter is a module-level singleton inside discord.py, so it is patched on the class
# once (reference counted) and each call is routed to the harness owning the token.
_ACTIVE: dict[str, Harness] = {}
_ORIGINAL_ADAPTER_REQUEST: Any = None
_HARNESS_SERIAL = itertools.count(1)


async def _adapter_request(
    self: AsyncWebhookAdapter, route: Route, session: Any = None, **kwargs: Any
) -> Any:
    token = str(route.webhook_token or "")
    owner = _ACTIVE.get(token.split(".", 1)[0])
    if owner is None:
        if not _ACTIVE:
            raise RuntimeError("webhook request outside an active Harness")
        owner = list(_ACTIVE.values())[-1]
    return await owner._webhook_request(route, **kwargs)


# --------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------


class Harness:
    """Drive a bot with raw interaction payloads and record what it sends to Discord.

    Create with :meth:`create` (not the constructor) and always :meth:`close` it, or use it as
    an async context manager.  All interaction methods return the :class:`Call` list produced
    while handling that interaction, after every task it spawned has finished.
    """

    def __init__(
        self,
        bot: discord.Client,
        *,
        bot_user: FakeUser,
        application_id: int,
        guild_id: int,
        channel_id: int,
        timeout: float,
        raise_errors: bool,
        ignore_task: Callable[[asyncio.Task[Any]], bool] | None,
        error_loggers: Sequence[str],
        validate_spec: bool = True,
    ) -> None:
        self.bot = bot
        self.bot_user = bot_user
        self.application_id = application_id
        self.guild_id = guild_id
        self.channel_id = channel_id
        self.timeout = timeout
        self.raise_errors = raise_errors
        self._ignore_task = ignore_task
        self._key = f"hx{next(_HARNESS_SERIAL)}"
        #: Every captured REST call, in order.
        self.calls: list[Call] = []
        #: Current state of every message the bot posted or edited, by message id.
        self.messages: dict[int, JSON] = {}
        #: Extra fake endpoints: ``{("GET", "/guilds/{guild_id}"): lambda call: {...}}``.
        #: Consulted before the built-in handlers; the return value is the response body.
        self.responders: dict[tuple[str, str], Callable[[Call], Any]] = {}
        self._touched: list[int] = []  # message ids in order of last create/edit
        self._interactions: dict[str, _InteractionRecord] = {}
        self._channel_guilds: dict[int, int | None] = {channel_id: guild_id}
        self._users: dict[int, FakeUser] = {}
        self._spawned: set[asyncio.Task[Any]] = set()
        self._baseline: set[asyncio.Task[Any]] = set()
        self._task_errors: list[BaseException] = []
        self._errors = _ErrorCollector()
        self._error_loggers = list(error_loggers)
        self._closed = False
        #: Check every captured request against Discord's OpenAPI description.
        self.validate_spec = validate_spec
        self._spec_errors: list[HarnessError] = []

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    async def create(
        cls,
        bot: discord.Client,
        *,
        bot_user: FakeUser | None = None,
        application_id: int | None = None,
        guild_id: int = DEFAULT_GUILD_ID,
        channel_id: int = DEFAULT_CHANNEL_ID,
        run_setup_hook: bool = True,
        timeout: float = 5.0,
        raise_errors: bool = True,
        ignore_task: Callable[[asyncio.Task[Any]], bool] | None = None,
        error_loggers: Sequence[str] = ("discord",),
        validate_spec: bool = True,
        messages: Mapping[int, JSON] | None = None,
    ) -> Self:
        """Prepare ``bot`` for offline dispatch and install the fake transport.

        Mirrors what ``Client.login`` does minus the network: ``_async_setup_hook`` (binds
        the loop, which ``CommandTree`` needs to spawn invoker tasks), a ``ClientUser`` and
        ``application_id`` on the connection state, then ``setup_hook`` (so cogs, persistent
        views and dynamic items register as in production; any REST it does is captured),
        and finally marks the client ready so ``wait_until_ready`` does not hang.

        ``raise_errors``: fail the interaction call if discord.py logged an ERROR (it
        swallows exceptions from views/commands/listeners) or a spawned task died.
        ``ignore_task``: predicate for long-lived tasks your bot spawns on purpose (game
        clocks, background loops) that ``settle`` must not wait for.
        ``validate_spec``: check every request against Discord's published API description
        (``tests/discord_spec.py``) and fail with ``SpecError`` if Discord would reject it.
        ``messages``: messages Discord already has (e.g. another harness's ``messages``, to
        simulate a restart of the bot: Discord keeps its messages).
        """
        bot_user = bot_user or FakeUser(id=BOT_USER_ID, name="TestBot", bot=True)
        h = cls(
            bot,
            bot_user=bot_user,
            application_id=application_id or bot_user.id,
            guild_id=guild_id,
            channel_id=channel_id,
            timeout=timeout,
            raise_errors=raise_errors,
            ignore_task=ignore_task,
            error_loggers=error_loggers,
            validate_spec=validate_spec,
        )
        await bot._async_setup_hook()
        state = bot._connection
        state.user = discord.ClientUser(state=state, data=bot_user.user_payload())  # type: ignore[arg-type]
        state.application_id = h.application_id
        h._baseline = set(asyncio.all_tasks())
        for msg in (messages or {}).values():
            h._store(json.loads(json.dumps(msg)))
        h._install()
        try:
            if run_setup_hook:
                await h._run(bot.setup_hook())
        except BaseException:
            await h.close()
            raise
        bot._ready.set()
        return h

    def _install(self) -> None:
        global _ORIGINAL_ADAPTER_REQUEST
        self.bot.http.request = self._http_request  # type: ignore[method-assign]
        if not _ACTIVE:
            _ORIGINAL_ADAPTER_REQUEST = AsyncWebhookAdapter.request
            AsyncWebhookAdapter.request = _adapter_request  # type: ignore[method-assign]
        _ACTIVE[self._key] = self
        for name in self._error_loggers:
            logging.getLogger(name).addHandler(self._errors)

    async def close(self, *, close_bot: bool = True) -> None:
        """Cancel leftover timers (view timeouts), close the bot and restore the seams."""
        if self._closed:
            return
        self._closed = True
        try:
            if close_bot:
                await self.bot.close()
        finally:
            # Timers discord.py started (view timeouts etc.) would otherwise outlive the
            # test's event loop and warn "Task was destroyed but it is pending".
            leftovers = [t for t in self._spawned if not t.done()]
            leftovers += [
                t
                for t in asyncio.all_tasks()
                if t not in self._baseline and not t.done() and _is_ignored_by_default(t)
            ]
            for t in leftovers:
                t.cancel()
            await asyncio.gather(*leftovers, return_exceptions=True)
            for name in self._error_loggers:
                logging.getLogger(name).removeHandler(self._errors)
            _ACTIVE.pop(self._key, None)
            if not _ACTIVE and _ORIGINAL_ADAPTER_REQUEST is not None:
                AsyncWebhookAdapter.request = _ORIGINAL_ADAPTER_REQUEST  # type: ignore[method-assign]
            with contextlib.suppress(AttributeError):
                del self.bot.http.request

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- task tracking

    def _should_wait(self, task: asyncio.Task[Any]) -> bool:
        if _is_ignored_by_default(task):
            return False
        return not (self._ignore_task is not None and self._ignore_task(task))

    async def settle(
        self, *, timeout: float | None = None, baseline: set[Any] | None = None
    ) -> None:
        """Wait until every task spawned since ``baseline`` (default: since :meth:`create`),
        and their children, is done.  The interaction helpers call this for you; call it
        yourself after driving the bot directly (e.g. ``bot.dispatch(...)``).

        discord.py answers interactions in tasks (``CommandTree-invoker``,
        ``discord-ui-view-dispatch-*``, ``discord-ui-dynamic-item-*``, ``discord.py: on_*``),
        which in turn may spawn more; we poll ``asyncio.all_tasks()`` rather than sleeping
        a fixed time.  Raises :class:`HarnessTimeout` naming the stuck tasks.
        """
        limit = self.timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        current = asyncio.current_task()
        if baseline is None:
            baseline = self._baseline
        idle_rounds = 0
        while True:
            new = {t for t in asyncio.all_tasks() if t is not current and t not in baseline}
            self._spawned |= new
            pending = {t for t in new if not t.done() and self._should_wait(t)}
            if not pending:
                # Give call_soon callbacks / freshly scheduled tasks a chance to appear.
                idle_rounds += 1
                if idle_rounds >= 3:
                    break
                await asyncio.sleep(0)
                continue
            idle_rounds = 0
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise HarnessTimeout(self._describe_pending(pending, limit))
            await asyncio.wait(pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        self._collect_task_errors()

    def _collect_task_errors(self) -> None:
        for t in list(self._spawned):
            if t.done():
                self._spawned.discard(t)
                if not t.cancelled() and t.exception() is not None:
                    self._task_errors.append(t.exception())  # type: ignore[arg-type]

    @staticmethod
    def _describe_pending(pending: set[asyncio.Task[Any]], limit: float) -> str:
        lines = [f"{len(pending)} task(s) still pending after {limit:.1f}s:"]
        for t in pending:
            lines.append(f"  - {t.get_name()}, awaiting: {' -> '.join(_await_chain(t))}")
        lines.append("Pass ignore_task=... to Harness.create for tasks meant to outlive a click.")
        return "\n".join(lines)

    async def _run(self, coro: Any) -> Any:
        """Await ``coro`` then settle whatever it spawned; surface swallowed errors."""
        baseline = set(asyncio.all_tasks())
        errors_before = len(self._errors.records)
        self._task_errors.clear()
        result = await coro
        await self.settle(baseline=baseline)
        if self._spec_errors:  # even if the bot caught it: the request was still invalid
            first, self._spec_errors[:] = self._spec_errors[0], []
            raise first
        self._raise_if_errors(errors_before)
        return result

    def _raise_if_errors(self, errors_before: int) -> None:
        if not self.raise_errors:
            return
        records = self._errors.records[errors_before:]
        if records:
            rec = records[0]
            exc = rec.exc_info[1] if rec.exc_info else None
            msg = "; ".join(r.getMessage() for r in records)
            raise HarnessError(f"discord.py logged an error while handling: {msg}") from exc
        if self._task_errors:
            exc0 = self._task_errors[0]
            raise HarnessError(f"a spawned task failed: {exc0!r}") from exc0

    # ---------------------------------------------------------------- dispatch

    async def dispatch(self, payload: JSON) -> list[Call]:
        """Feed a raw ``INTERACTION_CREATE`` payload through the real parser.

        Returns the calls made while handling it.  Use the typed helpers below unless you
        need an exotic interaction; build the skeleton with :meth:`interaction_payload`.
        """
        start = len(self.calls)

        async def feed() -> None:
            self.bot._connection.parsers["INTERACTION_CREATE"](payload)

        await self._run(feed())
        return self.calls[start:]

    def interaction_payload(
        self,
        type: int,
        data: JSON,
        *,
        user: FakeUser,
        guild_id: int | Literal["default"] | None = "default",
        channel_id: int | None = None,
        message: JSON | None = None,
        locale: str = "en-US",
    ) -> JSON:
        """Build a complete ``INTERACTION_CREATE`` payload as discord.py 2.7 parses it.

        Required by ``Interaction._from_data``: ``id``, ``type``, ``token``, ``version``,
        ``application_id``, ``attachment_size_limit``.  ``channel`` must carry ``type`` (and
        ``name``/``position`` for guild text channels) or ``interaction.channel`` is None and
        ``original_response()`` fails.  ``member.flags``/``member.roles`` are indexed
        unconditionally by ``Member``; ``member.permissions`` drives permission checks.
        """
        gid = self.guild_id if guild_id == "default" else guild_id
        cid = channel_id if channel_id is not None else self.channel_id
        if gid is None and channel_id is None:
            cid = snowflake()  # a DM channel with this user
        iid = snowflake()
        token = f"{self._key}.{iid}.token"
        payload: JSON = {
            "id": str(iid),
            "application_id": str(self.application_id),
            "type": type,
            "data": data,
            "token": token,
            "version": 1,
            "locale": locale,
            "channel_id": str(cid),
            "app_permissions": str(discord.Permissions.all().value),
            "entitlements": [],
            "attachment_size_limit": 10 * 1024 * 1024,
        }
        if gid is not None:
            payload.update(
                guild_id=str(gid),
                guild={"id": str(gid), "locale": "en-US", "features": []},
                guild_locale="en-US",
                member=user.member_payload(),
                context=0,
                authorizing_integration_owners={"0": str(gid)},
                channel={
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
                    "permissions": str(user.permissions),
                },
            )
        else:
            payload.update(
                user=user.user_payload(),
                context=1,
                authorizing_integration_owners={"0": "0"},
                channel={
                    "id": str(cid),
                    "type": 1,
                    "flags": 0,
                    "last_message_id": None,
                    "recipients": [user.user_payload()],
                },
            )
        if message is not None:
            payload["message"] = message
        self._channel_guilds.setdefault(cid, gid)
        self._users[user.id] = user
        self._interactions[token] = _InteractionRecord(
            id=iid,
            type=type,
            channel_id=cid,
            guild_id=gid,
            user=user,
            command_name=data.get("name"),
            message_id=int(message["id"]) if message else None,
        )
        return payload

    # ---------------------------------------------------------------- app commands

    def _find_command(
        self, name: str, guild_id: int | None
    ) -> tuple[list[str], app_commands.Command[Any, ..., Any] | None, bool]:
        parts = name.split()
        tree: app_commands.CommandTree[Any] | None = getattr(self.bot, "tree", None) or getattr(
            self.bot._connection, "_command_tree", None
        )
        if tree is None:
            raise HarnessError("bot has no app_commands.CommandTree")
        root: Any = None
        guild_scoped = False
        if guild_id is not None:
            root = tree.get_command(parts[0], guild=discord.Object(guild_id))
            guild_scoped = root is not None
        if root is None:
            root = tree.get_command(parts[0])
        if root is None:
            known = sorted(c.name for c in tree.get_commands())
            raise HarnessError(f"no app command {parts[0]!r} in the tree (known: {known})")
        cmd = root
        for p in parts[1:]:
            if not isinstance(cmd, app_commands.Group):
                raise HarnessError(f"{cmd.qualified_name!r} has no subcommand {p!r}")
            sub = cmd.get_command(p)
            if sub is None:
                known = sorted(c.name for c in cmd.commands)
                raise HarnessError(f"{cmd.qualified_name!r} has no subcommand {p!r} ({known})")
            cmd = sub
        if isinstance(cmd, app_commands.Group):
            raise HarnessError(f"{name!r} is a group; name a subcommand")
        return parts, cmd, guild_scoped

    def _option(
        self,
        cmd: app_commands.Command[Any, ..., Any],
        key: str,
        value: Any,
        resolved: JSON,
        *,
        focused: bool = False,
    ) -> JSON:
        param = next(
            (p for p in cmd.parameters if key in (p.name, p.display_name)),
            None,
        )
        if param is None:
            known = [p.display_name for p in cmd.parameters]
            raise HarnessError(f"/{cmd.qualified_name} has no option {key!r} (options: {known})")
        t = param.type.value
        if isinstance(value, app_commands.Choice | enum.Enum):
            value = value.value
        opt: JSON = {"name": param.display_name, "type": t}
        if focused:
            opt["focused"] = True
            opt["value"] = str(value)
            return opt
        if t in (6, 9):  # user / mentionable
            u = value if isinstance(value, FakeUser) else self._users.get(int(value))
            if u is None:
                raise HarnessError(f"option {key!r}: pass a FakeUser (unknown id {value!r})")
            self._users[u.id] = u
            resolved.setdefault("users", {})[str(u.id)] = u.user_payload()
            resolved.setdefault("members", {})[str(u.id)] = u.member_payload(with_user=False)
            opt["value"] = str(u.id)
        elif t == 7:  # channel
            cid = int(getattr(value, "id", value))
            resolved.setdefault("channels", {})[str(cid)] = {
                "id": str(cid),
                "type": 0,
                "name": f"channel-{cid}",
                "permissions": str(DEFAULT_MEMBER_PERMISSIONS.value),
                "parent_id": None,
            }
            opt["value"] = str(cid)
        elif t == 8:  # role
            rid = int(getattr(value, "id", value))
            resolved.setdefault("roles", {})[str(rid)] = {
                "id": str(rid),
                "name": f"role-{rid}",
                "color": 0,
                "hoist": False,
                "position": 1,
                "permissions": "0",
                "managed": False,
                "mentionable": True,
                "flags": 0,
            }
            opt["value"] = str(rid)
        elif t == 4:
            opt["value"] = int(value)
        elif t == 10:
            opt["value"] = float(value)
        elif t == 5:
            opt["value"] = bool(value)
        elif t == 3:
            opt["value"] = str(value)
        else:
            raise HarnessError(f"option type {t} ({key!r}) not supported by the harness")
        return opt

    def _command_data(
        self,
        name: str,
        options: Mapping[str, Any] | Sequence[JSON] | None,
        *,
        subcommand: str | None,
        guild_id: int | None,
        focused: str | None = None,
    ) -> JSON:
        full = f"{name} {subcommand}" if subcommand else name
        parts, cmd, guild_scoped = self._find_command(full, guild_id)
        resolved: JSON = {}
        if options is None:
            opts: list[JSON] = []
        elif isinstance(options, Mapping):
            assert cmd is not None
            opts = [
                self._option(cmd, k, v, resolved, focused=(k == focused))
                for k, v in options.items()
            ]
            if focused is not None and focused not in options:
                opts.append(self._option(cmd, focused, "", resolved, focused=True))
        else:
            opts = [dict(o) for o in options]
        # Wrap in subcommand-group / subcommand layers, innermost first.
        for depth in range(len(parts) - 1, 0, -1):
            opt_type = 1 if depth == len(parts) - 1 else 2
            opts = [{"name": parts[depth], "type": opt_type, "options": opts}]
        data: JSON = {"id": str(snowflake()), "name": parts[0], "type": 1, "options": opts}
        if resolved:
            data["resolved"] = resolved
        if guild_scoped:
            data["guild_id"] = str(guild_id)
        return data

    async def slash(
        self,
        name: str,
        options: Mapping[str, Any] | Sequence[JSON] | None = None,
        *,
        user: FakeUser,
        guild_id: int | Literal["default"] | None = "default",
        channel_id: int | None = None,
        subcommand: str | None = None,
        locale: str = "en-US",
        expect_response: bool = True,
    ) -> list[Call]:
        """Invoke ``/name`` (or ``/name sub`` via ``"name sub"`` or ``subcommand="sub"``).

        ``options`` maps option names to Python values; their Discord types come from the
        command's own parameters (``FakeUser`` for ``Member``/``User``, ints, floats, bools,
        strings, ``Choice``/``Enum`` values).  A list of raw option dicts is sent verbatim.
        ``guild_id=None`` sends it from a DM.  With ``expect_response`` (default) it is a
        failure if the bot never acknowledged the interaction - Discord would show "This
        application did not respond".
        """
        gid = self.guild_id if guild_id == "default" else guild_id
        data = self._command_data(name, options, subcommand=subcommand, guild_id=gid)
        payload = self.interaction_payload(
            INTERACTION_APP_COMMAND,
            data,
            user=user,
            guild_id=gid,
            channel_id=channel_id,
            locale=locale,
        )
        calls = await self.dispatch(payload)
        self._check_responded(payload, expect_response)
        return calls

    async def autocomplete(
        self,
        name: str,
        options: Mapping[str, Any] | None,
        *,
        focused: str,
        user: FakeUser,
        guild_id: int | Literal["default"] | None = "default",
        subcommand: str | None = None,
    ) -> list[JSON]:
        """Send an autocomplete interaction (type 4) with ``focused`` being typed; return the
        choices (``[{"name": ..., "value": ...}]``) the bot answered with."""
        gid = self.guild_id if guild_id == "default" else guild_id
        data = self._command_data(
            name, options or {}, subcommand=subcommand, guild_id=gid, focused=focused
        )
        payload = self.interaction_payload(INTERACTION_AUTOCOMPLETE, data, user=user, guild_id=gid)
        calls = await self.dispatch(payload)
        answers = [c for c in calls if c.callback_type == CALLBACK_AUTOCOMPLETE]
        if not answers:
            raise HarnessError(f"autocomplete for /{name} {focused!r} got no type 8 callback")
        return answers[-1].choices

    async def context_menu(
        self,
        name: str,
        target: FakeUser | JSON,
        *,
        user: FakeUser,
        guild_id: int | Literal["default"] | None = "default",
    ) -> list[Call]:
        """Invoke a user (target is a FakeUser) or message (target is a message dict) context
        menu command."""
        gid = self.guild_id if guild_id == "default" else guild_id
        if isinstance(target, FakeUser):
            data: JSON = {
                "id": str(snowflake()),
                "name": name,
                "type": 2,
                "target_id": str(target.id),
                "resolved": {
                    "users": {str(target.id): target.user_payload()},
                    "members": {str(target.id): target.member_payload(with_user=False)},
                },
            }
        else:
            data = {
                "id": str(snowflake()),
                "name": name,
                "type": 3,
                "target_id": str(target["id"]),
                "resolved": {"messages": {str(target["id"]): target}},
            }
        payload = self.interaction_payload(INTERACTION_APP_COMMAND, data, user=user, guild_id=gid)
        calls = await self.dispatch(payload)
        self._check_responded(payload, True)
        return calls

    # ---------------------------------------------------------------- components

    async def click(
        self,
        message: JSON | int,
        custom_id: str,
        *,
        user: FakeUser,
        values: Sequence[str | FakeUser] | None = None,
        force: bool = False,
        expect_response: bool = True,
    ) -> list[Call]:
        """Press a button / submit a select on a message the bot sent.

        ``message`` is a message dict (e.g. from :attr:`messages`, :meth:`last_message`, or
        captured by *another* harness to simulate a restart) or a message id.  Discord always
        sends the message's current state including ``components``; DynamicItem routing
        rebuilds the item from exactly that, so we send the latest known version.  The
        component type is taken from the message.  Unless ``force``, clicking a disabled or
        missing component, or picking values not offered by the select, is an error -
        Discord's client would not let a user do that.
        """
        if isinstance(message, int):
            message = self.messages[message]
        mid = int(message["id"])
        current = self.messages.get(mid)
        if current is None:
            current = self._store(dict(message))
        elif custom_id not in _custom_ids(current) and custom_id in _custom_ids(message):
            # A client still showing an older version of the message (a stale board): Discord
            # sends the message as that client has it.
            current = dict(message)
        comp = next(
            (
                c
                for c in _walk_components(current.get("components") or [])
                if c.get("custom_id") == custom_id
            ),
            None,
        )
        if comp is None:
            available = [
                c["custom_id"]
                for c in _walk_components(current.get("components") or [])
                if "custom_id" in c
            ]
            raise HarnessError(f"message {mid} has no component {custom_id!r} (has {available})")
        ctype = int(comp["type"])
        data: JSON = {"custom_id": custom_id, "component_type": ctype}
        if "id" in comp:
            data["id"] = comp["id"]
        if ctype in (3, 5, 6, 7, 8):
            picked = list(values or [])
            ids = [str(v.id) if isinstance(v, FakeUser) else str(v) for v in picked]
            if not force:
                lo, hi = int(comp.get("min_values", 1)), int(comp.get("max_values", 1))
                if not lo <= len(ids) <= hi:
                    raise HarnessError(f"select {custom_id!r} needs {lo}..{hi} values, got {ids}")
                if ctype == 3:
                    offered = {o["value"] for o in comp.get("options") or []}
                    if bad := [v for v in ids if v not in offered]:
                        raise HarnessError(f"select {custom_id!r} does not offer {bad}")
            data["values"] = ids
            users = [v for v in picked if isinstance(v, FakeUser)]
            if users:
                data["resolved"] = {
                    "users": {str(u.id): u.user_payload() for u in users},
                    "members": {str(u.id): u.member_payload(with_user=False) for u in users},
                }
        elif values is not None:
            raise HarnessError(f"{custom_id!r} is not a select; values not allowed")
        if comp.get("disabled") and not force:
            raise HarnessError(f"component {custom_id!r} is disabled")
        gid = current.get("guild_id")
        payload = self.interaction_payload(
            INTERACTION_COMPONENT,
            data,
            user=user,
            guild_id=int(gid) if gid else None,
            channel_id=int(current["channel_id"]),
            message=json.loads(json.dumps(current)),
        )
        calls = await self.dispatch(payload)
        self._check_responded(payload, expect_response)
        return calls

    async def submit_modal(
        self,
        custom_id: str,
        fields: Mapping[str, str],
        *,
        user: FakeUser,
        message: JSON | None = None,
        guild_id: int | Literal["default"] | None = "default",
        expect_response: bool = True,
    ) -> list[Call]:
        """Submit a modal the bot opened (callback type 9): ``fields`` maps each text input's
        ``custom_id`` to the typed value."""
        data: JSON = {
            "custom_id": custom_id,
            "components": [
                {"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]}
                for k, v in fields.items()
            ],
        }
        payload = self.interaction_payload(
            INTERACTION_MODAL_SUBMIT, data, user=user, guild_id=guild_id, message=message
        )
        calls = await self.dispatch(payload)
        self._check_responded(payload, expect_response)
        return calls

    def _check_responded(self, payload: JSON, expect: bool) -> None:
        rec = self._interactions[payload["token"]]
        if expect and not rec.responded:
            what = payload["data"].get("name") or payload["data"].get("custom_id")
            raise HarnessError(
                f"interaction {what!r} was never acknowledged (Discord: 'This interaction "
                "failed'). Pass expect_response=False if that is intended."
            )

    # ---------------------------------------------------------------- message store

    def _store(self, msg: JSON) -> JSON:
        mid = int(msg["id"])
        self.messages[mid] = msg
        with contextlib.suppress(ValueError):
            self._touched.remove(mid)
        self._touched.append(mid)
        return msg

    def last_message(self, channel_id: int | None = None, *, ephemeral: bool | None = None) -> JSON:
        """The most recently created *or edited* message (current state), optionally only in
        ``channel_id`` and/or only (non-)ephemeral ones.  After a click that edits the board,
        this is the board."""
        for mid in reversed(self._touched):
            msg = self.messages.get(mid)
            if msg is None:
                continue
            if channel_id is not None and int(msg["channel_id"]) != channel_id:
                continue
            if (
                ephemeral is not None
                and bool(int(msg.get("flags") or 0) & FLAG_EPHEMERAL) != ephemeral
            ):
                continue
            return msg
        raise HarnessError("no matching message has been sent")

    def _new_message(
        self,
        body: JSON,
        *,
        channel_id: int,
        blobs: Mapping[str, bytes],
        interaction: _InteractionRecord | None = None,
        msg_type: int = 0,
    ) -> JSON:
        gid = self._channel_guilds.get(channel_id)
        mid = snowflake()
        msg: JSON = {
            "id": str(mid),
            "channel_id": str(channel_id),
            "type": msg_type,
            "author": self.bot_user.user_payload(),
            "content": body.get("content") or "",
            "embeds": [],
            "components": [],
            "attachments": [],
            "mentions": [],
            "mention_roles": [],
            "mention_everyone": False,
            "pinned": False,
            "tts": bool(body.get("tts", False)),
            "timestamp": _now_iso(),
            "edited_timestamp": None,
            "flags": int(body.get("flags") or 0),
        }
        if gid is not None:
            msg["guild_id"] = str(gid)
        if interaction is not None:
            msg["webhook_id"] = str(self.application_id)
            msg["application_id"] = str(self.application_id)
            msg["interaction_metadata"] = {
                "id": str(interaction.id),
                "type": interaction.type,
                "user": interaction.user.user_payload(),
                "authorizing_integration_owners": {"0": str(interaction.guild_id or 0)},
                **({"name": interaction.command_name} if interaction.command_name else {}),
            }
        self._apply(msg, body, blobs, edit=False)
        return msg

    def _apply(self, msg: JSON, body: JSON, blobs: Mapping[str, bytes], *, edit: bool) -> None:
        """Merge a create/edit body into a stored message the way Discord would echo it."""
        if "content" in body:
            msg["content"] = body["content"] or ""
        if "embeds" in body:
            msg["embeds"] = [{"type": "rich", **e} for e in body["embeds"] or []]
        if "components" in body:
            comps = json.loads(json.dumps(body["components"] or []))
            counter = itertools.count(1)
            for c in _walk_components(comps):  # Discord assigns numeric component ids
                c.setdefault("id", next(counter))
            msg["components"] = comps
        if "flags" in body and edit:
            # Ephemeral/loading bits cannot be changed by an edit.
            keep = int(msg.get("flags") or 0) & FLAG_EPHEMERAL
            msg["flags"] = (int(body["flags"] or 0) & ~FLAG_LOADING) | keep
        if "attachments" in body or blobs:
            old = {a["id"]: a for a in msg.get("attachments") or []}
            new: list[JSON] = []
            for a in body.get("attachments") or []:
                if str(a.get("id")) in old:
                    new.append(old[str(a["id"])])
                    continue
                fname = a.get("filename") or "file"
                aid = snowflake()
                new.append(
                    {
                        "id": str(aid),
                        "filename": fname,
                        "size": len(blobs.get(fname, b"")),
                        "url": f"https://cdn.discordapp.com/attachments/{msg['channel_id']}/{aid}/{fname}",
                        "proxy_url": f"https://media.discordapp.net/attachments/{msg['channel_id']}/{aid}/{fname}",
                        **({"description": a["description"]} if a.get("description") else {}),
                    }
                )
            msg["attachments"] = new
        if edit:
            msg["edited_timestamp"] = _now_iso()
            msg["flags"] = int(msg.get("flags") or 0) & ~FLAG_LOADING

    # ---------------------------------------------------------------- fake REST: bot http

    def _record(
        self,
        seam: Literal["http", "webhook"],
        route: Route,
        body: Any,
        blobs: dict[str, bytes],
        query: dict[str, Any] | None,
    ) -> Call:
        path = route.url[len(Route.BASE) :] if route.url.startswith(Route.BASE) else route.url
        call = Call(
            seam=seam,
            method=route.method,
            route=route.path,
            path=path,
            path_params=_template_params(route.path, path),
            json=body,
            query=query,
            files=blobs,
        )
        self.calls.append(call)
        if self.validate_spec:
            self._check_spec(call)
        return call

    def _check_spec(self, call: Call) -> None:
        """Validate ``call`` against Discord's OpenAPI description.  The ``SpecError`` is
        raised into the bot (as Discord's 400 would be) and kept for the next interaction
        helper to re-raise, in case the bot's error handling (or a background task) swallows
        it."""
        from tests.discord_spec import SpecError, validate_call  # lazy: it imports this module

        try:
            validate_call(call)
        except SpecError as exc:
            self._spec_errors.append(exc)
            raise

    async def _http_request(
        self,
        route: Route,
        *,
        files: Sequence[discord.File] | None = None,
        form: Iterable[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        body, blobs = _parse_body(kwargs.get("json"), form, files or ())
        call = self._record("http", route, body, blobs, kwargs.get("params"))
        await asyncio.sleep(0)  # a real request always yields to the loop
        call.response = self._http_response(call, body or {}, blobs)
        return call.response

    def _http_response(self, call: Call, body: Any, blobs: dict[str, bytes]) -> Any:
        responder = self.responders.get((call.method, call.route))
        if responder is not None:
            return responder(call)
        p = call.path_params
        key = (call.method, call.route)
        if key == ("POST", "/channels/{channel_id}/messages"):
            msg = self._new_message(body, channel_id=int(p["channel_id"]), blobs=blobs)
            return self._store(msg)
        if call.route == "/channels/{channel_id}/messages/{message_id}":
            mid = int(p["message_id"])
            if call.method == "DELETE":
                if self.messages.pop(mid, None) is None:
                    raise _http_error(404, 10008, "Unknown Message")
                return None
            stored = self.messages.get(mid)
            if stored is None:
                raise _http_error(404, 10008, "Unknown Message")
            if call.method == "PATCH":
                self._apply(stored, body, blobs, edit=True)
                self._store(stored)
            return stored
        if key == ("POST", "/users/@me/channels"):
            rid = int(body["recipient_id"])
            recipient = self._users.get(rid) or FakeUser(id=rid, name=f"user{rid}")
            cid = snowflake()
            self._channel_guilds[cid] = None
            return {
                "id": str(cid),
                "type": 1,
                "last_message_id": None,
                "flags": 0,
                "recipients": [recipient.user_payload()],
            }
        if key == ("PUT", "/applications/{application_id}/commands") or key == (
            "PUT",
            "/applications/{application_id}/guilds/{guild_id}/commands",
        ):
            return [
                {
                    "id": str(snowflake()),
                    "application_id": str(self.application_id),
                    "version": str(snowflake()),
                    "default_member_permissions": None,
                    **c,
                }
                for c in body or []
            ]
        return None

    # ---------------------------------------------------------------- fake REST: webhooks

    async def _webhook_request(
        self,
        route: Route,
        *,
        payload: Any = None,
        multipart: Sequence[Mapping[str, Any]] | None = None,
        files: Sequence[discord.File] | None = None,
        params: dict[str, Any] | None = None,
        **_: Any,
    ) -> Any:
        body, blobs = _parse_body(payload, multipart, files or ())
        call = self._record("webhook", route, body, blobs, params)
        rec = self._interactions.get(str(route.webhook_token))
        if rec is not None:
            call.interaction_id = rec.id
        await asyncio.sleep(0)
        call.response = self._webhook_response(call, rec, body or {}, blobs)
        return call.response

    def _webhook_response(
        self, call: Call, rec: _InteractionRecord | None, body: Any, blobs: dict[str, bytes]
    ) -> Any:
        responder = self.responders.get((call.method, call.route))
        if responder is not None:
            return responder(call)
        if rec is None:
            raise _http_error(404, 10015, "Unknown Webhook")
        if call.is_callback:
            return self._callback(rec, body, blobs)
        if not rec.responded:
            # Follow-ups/edits before the initial callback are rejected by Discord.
            raise _http_error(404, 10015, "Unknown Webhook")
        tmpl = call.route
        if tmpl == "/webhooks/{webhook_id}/{webhook_token}" and call.method == "POST":
            msg = self._new_message(
                body, channel_id=rec.channel_id, blobs=blobs, interaction=rec, msg_type=0
            )
            self._store(msg)
            if rec.original_id is None:
                rec.original_id = int(msg["id"])
            return msg if (call.query or {}).get("wait") else None
        if "/messages/" in tmpl:
            raw = call.path_params.get("message_id") or call.path.rsplit("/", 1)[-1]
            mid = rec.original_id if raw == "@original" else int(raw)
            stored = self.messages.get(mid) if mid is not None else None
            if stored is None:
                raise _http_error(404, 10008, "Unknown Message")
            if call.method == "DELETE":
                self.messages.pop(int(stored["id"]), None)
                return None
            if call.method == "PATCH":
                self._apply(stored, body, blobs, edit=True)
                self._store(stored)
            return stored
        return None

    def _callback(self, rec: _InteractionRecord, body: JSON, blobs: dict[str, bytes]) -> Any:
        """Answer ``POST /interactions/{id}/{token}/callback?with_response=1``.

        discord.py 2.7 parses the body into ``InteractionCallbackResponse``: it *requires*
        ``interaction.id`` and reads ``response_message_id``/``_loading``/``_ephemeral``;
        ``resource.message`` becomes the ``InteractionMessage`` whose id views get stored
        under (so it must be present for types 4 and 7).
        """
        if rec.responded:
            raise _http_error(400, 40060, "Interaction has already been acknowledged.")
        rec.responded = True
        ctype = int(body["type"])
        data: JSON = body.get("data") or {}
        interaction: JSON = {
            "id": str(rec.id),
            "type": rec.type,
            "response_message_loading": False,
            "response_message_ephemeral": bool(int(data.get("flags") or 0) & FLAG_EPHEMERAL),
        }
        resource: JSON = {"type": ctype}
        if ctype == CALLBACK_CHANNEL_MESSAGE:
            msg_type = 20 if rec.type == INTERACTION_APP_COMMAND else 0
            msg = self._new_message(
                data, channel_id=rec.channel_id, blobs=blobs, interaction=rec, msg_type=msg_type
            )
            self._store(msg)
            rec.original_id = int(msg["id"])
            resource["message"] = msg
        elif ctype == CALLBACK_DEFERRED_CHANNEL_MESSAGE:
            # The "Bot is thinking..." placeholder, later filled by edit_original_response.
            flags = FLAG_LOADING | (int(data.get("flags") or 0) & FLAG_EPHEMERAL)
            msg_type = 20 if rec.type == INTERACTION_APP_COMMAND else 0
            msg = self._new_message(
                {"flags": flags},
                channel_id=rec.channel_id,
                blobs={},
                interaction=rec,
                msg_type=msg_type,
            )
            self._store(msg)
            rec.original_id = int(msg["id"])
            interaction["response_message_loading"] = True
        elif ctype in (CALLBACK_DEFERRED_UPDATE, CALLBACK_UPDATE_MESSAGE):
            if rec.message_id is None:
                raise _http_error(400, 50035, "Invalid Form Body: not a component interaction")
            rec.original_id = rec.message_id
            msg = self.messages[rec.message_id]
            if ctype == CALLBACK_UPDATE_MESSAGE:
                self._apply(msg, data, blobs, edit=True)
                self._store(msg)
                resource["message"] = msg
            interaction["response_message_ephemeral"] = bool(
                int(msg.get("flags") or 0) & FLAG_EPHEMERAL
            )
        elif ctype == CALLBACK_AUTOCOMPLETE:
            return None
        if rec.original_id is not None:
            interaction["response_message_id"] = str(rec.original_id)
        return {"interaction": interaction, "resource": resource}
