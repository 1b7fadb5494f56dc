"""The harness: a bot fed raw interaction payloads through discord.py's own dispatch.

Unit-testing cogs by calling command callbacks directly skips what breaks in production:
option parsing, ``Member`` resolution, checks, ``DynamicItem`` routing after a restart,
``tree.on_error`` and the JSON that goes to Discord.  :class:`Harness` feeds gateway
``INTERACTION_CREATE`` payloads into the bot's ``ConnectionState`` parser, answers its REST
calls from the fake Discord (``http.py``) and waits until every task it spawned is done.
Everything touching private discord.py attributes stays in this package (discord.py 2.7.1).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Self

import discord
from discord import app_commands

from tests.harness.errors import HarnessError, HarnessTimeout
from tests.harness.http import FakeDiscord, InteractionRecord
from tests.harness.payloads import (
    BOT_USER_ID,
    CALLBACK_AUTOCOMPLETE,
    DEFAULT_CHANNEL_ID,
    DEFAULT_GUILD_ID,
    INTERACTION_APP_COMMAND,
    INTERACTION_AUTOCOMPLETE,
    INTERACTION_COMPONENT,
    JSON,
    SELECT_TYPES,
    Call,
    FakeUser,
    command_data,
    custom_ids,
    dm_context,
    guild_context,
    snowflake,
    text_channel,
    walk_components,
)

ERROR_LOGGERS = ("discord",)  # discord.py logs the exceptions it swallows here


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


class Harness(FakeDiscord):
    """Drive a bot with raw interaction payloads and record what it sends to Discord.

    Create with :meth:`create` (not the constructor) and always :meth:`close` it, or use it as
    an async context manager.  All interaction methods return the :class:`Call` list produced
    while handling that interaction, after every task it spawned has finished.
    """

    def __init__(
        self,
        bot: discord.Client,
        *,
        timeout: float,
        raise_errors: bool,
        ignore_task: Callable[[asyncio.Task[Any]], bool] | None,
        validate_spec: bool,
    ) -> None:
        super().__init__(
            bot_user=FakeUser(id=BOT_USER_ID, name="TestBot", bot=True),
            validate_spec=validate_spec,
        )
        self.bot = bot
        self.guild_id = DEFAULT_GUILD_ID
        self.channel_id = DEFAULT_CHANNEL_ID
        self._channel_guilds[self.channel_id] = self.guild_id
        self.timeout = timeout
        self.raise_errors = raise_errors
        #: What Discord says the bot may do where each interaction comes from (its
        #: ``app_permissions``): all by default; a test takes some away.
        self.app_permissions = discord.Permissions.all().value
        self._ignore_task = ignore_task
        self._spawned: set[asyncio.Task[Any]] = set()
        self._baseline: set[asyncio.Task[Any]] = set()
        self._task_errors: list[BaseException] = []
        self._errors = _ErrorCollector()
        self._closed = False

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    async def create(
        cls,
        bot: discord.Client,
        *,
        timeout: float = 5.0,
        raise_errors: bool = True,
        ignore_task: Callable[[asyncio.Task[Any]], bool] | None = None,
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
        (``spec.py``) and fail with ``SpecError`` if Discord would reject it.
        ``messages``: messages Discord already has (e.g. another harness's ``messages``, to
        simulate a restart of the bot: Discord keeps its messages).
        """
        h = cls(
            bot,
            timeout=timeout,
            raise_errors=raise_errors,
            ignore_task=ignore_task,
            validate_spec=validate_spec,
        )
        await bot._async_setup_hook()
        state = bot._connection
        state.user = discord.ClientUser(state=state, data=h.bot_user.user_payload())  # type: ignore[arg-type]
        state.application_id = h.application_id
        h._baseline = set(asyncio.all_tasks())
        for msg in (messages or {}).values():
            h._store(json.loads(json.dumps(msg)))
        h._install_seams(bot)
        for name in ERROR_LOGGERS:
            logging.getLogger(name).addHandler(h._errors)
        try:
            await h._run(bot.setup_hook())
        except BaseException:
            await h.close()
            raise
        bot._ready.set()
        return h

    async def close(self) -> None:
        """Cancel leftover timers (view timeouts), close the bot and restore the seams."""
        if self._closed:
            return
        self._closed = True
        try:
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
            for name in ERROR_LOGGERS:
                logging.getLogger(name).removeHandler(self._errors)
            self._remove_seams(self.bot)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- task tracking

    def _should_wait(self, task: asyncio.Task[Any]) -> bool:
        if _is_ignored_by_default(task):
            return False
        return not (self._ignore_task is not None and self._ignore_task(task))

    async def settle(self, *, baseline: set[Any] | None = None) -> None:
        """Wait until every task spawned since ``baseline`` (default: since :meth:`create`),
        and their children, is done.  The interaction helpers call this for you; call it
        yourself after driving the bot directly (e.g. ``bot.dispatch(...)``).

        discord.py answers interactions in tasks (``CommandTree-invoker``,
        ``discord-ui-view-dispatch-*``, ``discord-ui-dynamic-item-*``, ``discord.py: on_*``),
        which in turn may spawn more; we poll ``asyncio.all_tasks()`` rather than sleeping
        a fixed time.  Raises :class:`HarnessTimeout` naming the stuck tasks.
        """
        limit = self.timeout
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

    async def gateway(self, event: str, data: JSON) -> list[Call]:
        """Feed a raw gateway event (``GUILD_CREATE``, ``GUILD_DELETE``, ``CHANNEL_DELETE``,
        ``RESUMED``...) through the real parser, as if Discord sent it; the calls the bot made
        while handling it. discord.py drops events about guilds it has not cached: send the
        guild's ``GUILD_CREATE`` (:meth:`guild_payload`) first."""
        start = len(self.calls)

        if event == "CHANNEL_DELETE":
            self.deleted_channels.add(int(data["id"]))

        async def feed() -> None:
            self.bot._connection.parsers[event](json.loads(json.dumps(data)))

        await self._run(feed())
        return self.calls[start:]

    def guild_payload(self, guild_id: int | None = None, channel_ids: Sequence[int] = ()) -> JSON:
        """A ``GUILD_CREATE`` for a guild with these text channels (default: the harness's
        guild and channel)."""
        gid = self.guild_id if guild_id is None else guild_id
        cids = list(channel_ids) or ([self.channel_id] if gid == self.guild_id else [])
        for cid in cids:
            self._channel_guilds[cid] = gid
        return {
            "id": str(gid),
            "name": "a guild",
            "owner_id": str(snowflake()),
            "unavailable": False,
            "member_count": 2,
            "roles": [],
            "emojis": [],
            "stickers": [],
            "features": [],
            "members": [],
            "voice_states": [],
            "presences": [],
            "threads": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "channels": [
                text_channel(cid, gid, name=f"channel-{i}", position=i, permission_overwrites=[])
                for i, cid in enumerate(cids)
            ],
        }

    def interaction_payload(
        self,
        type: int,
        data: JSON,
        *,
        user: FakeUser,
        guild_id: int | Literal["default"] | None = "default",
        channel_id: int | None = None,
        message: JSON | None = None,
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
            "locale": "en-US",
            "channel_id": str(cid),
            "app_permissions": str(self.app_permissions),
            "entitlements": [],
            "attachment_size_limit": 10 * 1024 * 1024,
        }
        payload.update(guild_context(gid, cid, user) if gid is not None else dm_context(cid, user))
        if message is not None:
            payload["message"] = message
        self._channel_guilds.setdefault(cid, gid)
        self._interactions[token] = InteractionRecord(
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

    def _command(self, name: str) -> app_commands.Command[Any, ..., Any]:
        tree: app_commands.CommandTree[Any] | None = getattr(self.bot, "tree", None) or getattr(
            self.bot._connection, "_command_tree", None
        )
        if tree is None:
            raise HarnessError("bot has no app_commands.CommandTree")
        group, _, sub = name.partition(" ")  # "group sub": a subcommand of a group
        cmd: Any = tree.get_command(group)
        if sub and isinstance(cmd, app_commands.Group):
            cmd = cmd.get_command(sub)
        if not isinstance(cmd, app_commands.Command):
            known = sorted(c.name for c in tree.get_commands())
            raise HarnessError(f"no slash command {name!r} in the tree (known: {known})")
        return cmd

    def _option(
        self,
        cmd: app_commands.Command[Any, ..., Any],
        key: str,
        value: Any,
        resolved: JSON,
        *,
        focused: bool = False,
    ) -> JSON:
        param = next((p for p in cmd.parameters if key in (p.name, p.display_name)), None)
        if param is None:
            known = [p.display_name for p in cmd.parameters]
            raise HarnessError(f"/{cmd.qualified_name} has no option {key!r} (options: {known})")
        t = param.type.value
        opt: JSON = {"name": param.display_name, "type": t}
        if focused:
            opt["focused"] = True
            opt["value"] = str(value)
            return opt
        if t == 6:  # user
            if not isinstance(value, FakeUser):
                raise HarnessError(f"option {key!r}: pass a FakeUser, not {value!r}")
            resolved.setdefault("users", {})[str(value.id)] = value.user_payload()
            members = resolved.setdefault("members", {})
            members[str(value.id)] = value.member_payload(with_user=False)
            opt["value"] = str(value.id)
        elif t == 4:
            opt["value"] = int(value)
        elif t == 10:
            opt["value"] = float(value)
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
        focused: str | None = None,
    ) -> JSON:
        resolved: JSON = {}
        if options is None:
            opts: list[JSON] = []
        elif isinstance(options, Mapping):
            cmd = self._command(name)
            opts = [
                self._option(cmd, k, v, resolved, focused=(k == focused))
                for k, v in options.items()
            ]
        else:
            self._command(name)
            opts = [dict(o) for o in options]
        data = command_data(name, opts)
        if resolved:
            data["resolved"] = resolved
        return data

    async def slash(
        self,
        name: str,
        options: Mapping[str, Any] | Sequence[JSON] | None = None,
        *,
        user: FakeUser,
        guild_id: int | Literal["default"] | None = "default",
        channel_id: int | None = None,
        expect_response: bool = True,
    ) -> list[Call]:
        """Invoke ``/name`` (``"group sub"``: a subcommand of a group).

        ``options`` maps option names to Python values; their Discord types come from the
        command's own parameters (``FakeUser`` for ``Member``/``User``, ints, floats,
        strings).  A list of raw option dicts is sent verbatim (what a forged client could
        send).  ``guild_id=None`` sends it from a DM.  With ``expect_response`` (default) it
        is a failure if the bot never acknowledged the interaction - Discord would show "This
        application did not respond".
        """
        gid = self.guild_id if guild_id == "default" else guild_id
        payload = self.interaction_payload(
            INTERACTION_APP_COMMAND,
            self._command_data(name, options),
            user=user,
            guild_id=gid,
            channel_id=channel_id,
        )
        calls = await self.dispatch(payload)
        self._check_responded(payload, expect_response)
        return calls

    async def autocomplete(
        self, name: str, options: Mapping[str, Any], *, focused: str, user: FakeUser
    ) -> list[JSON]:
        """Send an autocomplete interaction (type 4) while ``options[focused]`` is being
        typed; return the choices (``[{"name": ..., "value": ...}]``) the bot answered with."""
        data = self._command_data(name, options, focused=focused)
        payload = self.interaction_payload(INTERACTION_AUTOCOMPLETE, data, user=user)
        calls = await self.dispatch(payload)
        answers = [c for c in calls if c.callback_type == CALLBACK_AUTOCOMPLETE]
        if not answers:
            raise HarnessError(f"autocomplete for /{name} {focused!r} got no type 8 callback")
        return list(answers[-1].message.get("choices") or [])

    # ---------------------------------------------------------------- components

    async def click(
        self,
        message: JSON,
        custom_id: str,
        *,
        user: FakeUser,
        values: Sequence[str] | None = None,
        force: bool = False,
        expect_response: bool = True,
    ) -> list[Call]:
        """Press a button / submit a select on a message the bot sent.

        ``message`` is a message dict (e.g. from :attr:`messages`, :meth:`last_message`, or
        captured by *another* harness to simulate a restart).  Discord always sends the
        message's current state including ``components``; DynamicItem routing rebuilds the
        item from exactly that, so we send the latest known version.  The component type is
        taken from the message.  Unless ``force``, clicking a disabled or missing component,
        or picking values not offered by the select, is an error - Discord's client would not
        let a user do that.
        """
        mid = int(message["id"])
        current = self.messages.get(mid)
        if current is None:
            current = self._store(dict(message))
        elif custom_id not in custom_ids(current) and custom_id in custom_ids(message):
            # A client still showing an older version of the message (a stale board): Discord
            # sends the message as that client has it.
            current = dict(message)
        found = walk_components(current.get("components") or [])
        comp = next((c for c in found if c.get("custom_id") == custom_id), None)
        if comp is None:
            raise HarnessError(
                f"message {mid} has no component {custom_id!r} (has {custom_ids(current)})"
            )
        ctype = int(comp["type"])
        data: JSON = {"custom_id": custom_id, "component_type": ctype}
        if "id" in comp:
            data["id"] = comp["id"]
        if ctype in SELECT_TYPES:
            ids = [str(v) for v in values or []]
            if not force:
                lo, hi = int(comp.get("min_values", 1)), int(comp.get("max_values", 1))
                if not lo <= len(ids) <= hi:
                    raise HarnessError(f"select {custom_id!r} needs {lo}..{hi} values, got {ids}")
                offered = {o["value"] for o in comp.get("options") or []}
                if bad := [v for v in ids if v not in offered]:
                    raise HarnessError(f"select {custom_id!r} does not offer {bad}")
            data["values"] = ids
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

    def _check_responded(self, payload: JSON, expect: bool) -> None:
        rec = self._interactions[payload["token"]]
        if expect and not rec.responded:
            what = payload["data"].get("name") or payload["data"].get("custom_id")
            raise HarnessError(
                f"interaction {what!r} was never acknowledged (Discord: 'This interaction "
                "failed'). Pass expect_response=False if that is intended."
            )
