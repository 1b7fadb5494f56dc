"""The fake Discord behind the bot's two REST seams: it records each request and answers it.

discord.py sends bot-authenticated REST through ``bot.http.request`` and every interaction
callback, follow-up and original-response edit through ``AsyncWebhookAdapter.request``; both
are replaced while a harness is open.  The answers are realistic bodies built from a message
store (what Discord shows), so the library code keeps running exactly as against Discord.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import discord
from discord.http import Route
from discord.webhook.async_ import AsyncWebhookAdapter

from tests.harness.errors import HarnessError, http_error
from tests.harness.payloads import (
    CALLBACK_AUTOCOMPLETE,
    CALLBACK_CHANNEL_MESSAGE,
    CALLBACK_DEFERRED_CHANNEL_MESSAGE,
    CALLBACK_DEFERRED_UPDATE,
    CALLBACK_UPDATE_MESSAGE,
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    INTERACTION_APP_COMMAND,
    JSON,
    Call,
    FakeUser,
    now_iso,
    snowflake,
    walk_components,
)
from tests.harness.spec import SpecError, validate_call


@dataclass
class InteractionRecord:
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


# The adapter is a module-level singleton inside discord.py, so it is patched on the class
# once (reference counted) and each call is routed to the fake owning the token.
_ACTIVE: dict[str, FakeDiscord] = {}
_ORIGINAL_ADAPTER_REQUEST: Any = None
_SERIAL = itertools.count(1)


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


class FakeDiscord:
    """Discord's side: the messages it shows, the interactions it sent, and its answers."""

    def __init__(self, *, bot_user: FakeUser, validate_spec: bool) -> None:
        self.bot_user = bot_user
        self.application_id = bot_user.id
        self._key = f"hx{next(_SERIAL)}"  # the prefix of this fake's interaction tokens
        #: Every captured REST call, in order.
        self.calls: list[Call] = []
        #: Current state of every message the bot posted or edited, by message id.
        self.messages: dict[int, JSON] = {}
        #: Extra fake endpoints: ``{("PATCH", "/channels/{channel_id}/messages/{message_id}"):
        #: lambda call: ...}``.  Consulted before the built-in handlers; the return value is
        #: the response body, an exception (see ``http_error``) fails the request.
        self.responders: dict[tuple[str, str], Callable[[Call], Any]] = {}
        #: Check every captured request against Discord's OpenAPI description.
        self.validate_spec = validate_spec
        self._touched: list[int] = []  # message ids in order of last create/edit
        self._interactions: dict[str, InteractionRecord] = {}
        self._channel_guilds: dict[int, int | None] = {}
        #: Channels deleted in Discord (CHANNEL_DELETE, or `deleted_channels.add` for one
        #: deleted while the bot was away): looking one up is 404 Unknown Channel.
        self.deleted_channels: set[int] = set()
        self._spec_errors: list[HarnessError] = []

    # ---------------------------------------------------------------- the seams

    def _install_seams(self, bot: discord.Client) -> None:
        global _ORIGINAL_ADAPTER_REQUEST
        bot.http.request = self._http_request  # type: ignore[method-assign]
        if not _ACTIVE:
            _ORIGINAL_ADAPTER_REQUEST = AsyncWebhookAdapter.request
            AsyncWebhookAdapter.request = _adapter_request  # type: ignore[method-assign]
        _ACTIVE[self._key] = self

    def _remove_seams(self, bot: discord.Client) -> None:
        _ACTIVE.pop(self._key, None)
        if not _ACTIVE and _ORIGINAL_ADAPTER_REQUEST is not None:
            AsyncWebhookAdapter.request = _ORIGINAL_ADAPTER_REQUEST  # type: ignore[method-assign]
        with contextlib.suppress(AttributeError):
            del bot.http.request

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
        interaction: InteractionRecord | None = None,
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
            "timestamp": now_iso(),
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
            for c in walk_components(comps):  # Discord assigns numeric component ids
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
            msg["edited_timestamp"] = now_iso()
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

    def _channel(self, channel_id: int) -> JSON:
        """GET /channels/{id}: a guild text channel the harness knows, else Unknown Channel."""
        if channel_id not in self._channel_guilds or channel_id in self.deleted_channels:
            raise http_error(404, 10003, "Unknown Channel")
        gid = self._channel_guilds[channel_id]
        return {
            "id": str(channel_id),
            "type": 0,
            **({"guild_id": str(gid)} if gid is not None else {}),
            "name": "a channel",
            "position": 0,
            "permission_overwrites": [],
            "parent_id": None,
            "nsfw": False,
        }

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
            stored = self.messages.get(mid)
            if stored is None:
                raise http_error(404, 10008, "Unknown Message")
            if call.method == "PATCH":
                self._apply(stored, body, blobs, edit=True)
                self._store(stored)
            return stored
        if key == ("GET", "/channels/{channel_id}"):  # a channel the bot's guilds hold
            return self._channel(int(p["channel_id"]))
        if key == ("PUT", "/applications/{application_id}/commands"):  # tree.sync()
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
        self, call: Call, rec: InteractionRecord | None, body: Any, blobs: dict[str, bytes]
    ) -> Any:
        responder = self.responders.get((call.method, call.route))
        if responder is not None:
            return responder(call)
        if rec is None:
            raise http_error(404, 10015, "Unknown Webhook")
        if call.is_callback:
            return self._callback(rec, body, blobs)
        if not rec.responded:
            # Follow-ups/edits before the initial callback are rejected by Discord.
            raise http_error(404, 10015, "Unknown Webhook")
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
                raise http_error(404, 10008, "Unknown Message")
            if call.method == "DELETE":
                self.messages.pop(int(stored["id"]), None)
                return None
            if call.method == "PATCH":
                self._apply(stored, body, blobs, edit=True)
                self._store(stored)
            return stored
        return None

    def _callback(self, rec: InteractionRecord, body: JSON, blobs: dict[str, bytes]) -> Any:
        """Answer ``POST /interactions/{id}/{token}/callback?with_response=1``.

        discord.py 2.7 parses the body into ``InteractionCallbackResponse``: it *requires*
        ``interaction.id`` and reads ``response_message_id``/``_loading``/``_ephemeral``;
        ``resource.message`` becomes the ``InteractionMessage`` whose id views get stored
        under (so it must be present for types 4 and 7).
        """
        if rec.responded:
            raise http_error(400, 40060, "Interaction has already been acknowledged.")
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
                raise http_error(400, 50035, "Invalid Form Body: not a component interaction")
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
