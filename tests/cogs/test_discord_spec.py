"""tests/harness/spec.py refuses what Discord's published API description refuses.

Every Discord test already runs the check (the harness validates each captured request);
these tests prove it can fail, that its messages name the route and the JSON path of the bad
value, and that what discord.py produces for the real bot passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import pytest
from discord import app_commands
from discord.enums import try_enum
from discord.http import Route

from cogs.client import BoardBot
from db.store import Store
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from tests.clock import Clock
from tests.harness import DEFAULT_CHANNEL_ID, Harness, HarnessError, spec, user
from tests.harness.spec import (
    UNDOCUMENTED_ROUTES,
    VALIDATED,
    SpecError,
    Tolerance,
    find_operation,
    validate_request,
)

ALICE = user(101, "alice")

CALLBACK = "/interactions/{interaction_id}/{interaction_token}/callback"
EDIT = "/channels/{channel_id}/messages/{message_id}"
CALLBACK_PATH = "/interactions/1300000000000000001/hx1.1300000000000000001.token/callback"
EDIT_PATH = "/channels/1300000000000000002/messages/1300000000000000003"


def message(**overrides: Any) -> dict[str, Any]:
    """A valid message body: an embed, a row of buttons and a row with a select."""
    body: dict[str, Any] = {
        "content": "Your move",
        "embeds": [{"title": "Connect Four", "description": "board", "color": 0x3366FF}],
        "components": [
            {
                "type": 1,
                "components": [
                    {"type": 2, "style": 1, "custom_id": f"c4:move:{i}", "label": str(i + 1)}
                    for i in range(5)
                ],
            },
            {
                "type": 1,
                "components": [
                    {
                        "type": 3,
                        "custom_id": "ot:move",
                        "options": [{"label": "d3", "value": "d3"}],
                    }
                ],
            },
        ],
    }
    body.update(overrides)
    return body


def break_style(body: dict[str, Any]) -> None:
    body["components"][0]["components"][0]["style"] = 9


def break_custom_id(body: dict[str, Any]) -> None:
    body["components"][0]["components"][0]["custom_id"] = "x" * 101


def break_title(body: dict[str, Any]) -> None:
    body["embeds"][0]["title"] = "t" * 300


def break_options(body: dict[str, Any]) -> None:
    options = [{"label": f"o{i}", "value": f"o{i}"} for i in range(26)]
    body["components"][1]["components"][0]["options"] = options


# (how to break a valid message, JSON path inside the message, words the message must name)
BROKEN = [
    pytest.param(break_style, "components[0].components[0].style", "ButtonStyleTypes", id="style"),
    pytest.param(
        break_custom_id, "components[0].components[0].custom_id", "maxLength 100", id="custom_id"
    ),
    pytest.param(break_title, "embeds[0].title", "300 characters is too long", id="title"),
    pytest.param(
        break_options, "components[1].components[0].options", "26 items is too long", id="options"
    ),
]


def test_the_valid_bodies_pass() -> None:
    assert validate_request("POST", CALLBACK_PATH, {"type": 4, "data": message()}) is not None
    assert validate_request("PATCH", EDIT_PATH, message()) is not None
    assert validate_request("POST", CALLBACK_PATH, {"type": 7, "data": message()}) is not None


@pytest.mark.parametrize(("breaker", "where", "words"), BROKEN)
def test_an_interaction_callback_is_refused(breaker: Any, where: str, words: str) -> None:
    data = message()
    breaker(data)
    with pytest.raises(SpecError) as info:
        validate_request("POST", CALLBACK_PATH, {"type": 4, "data": data})
    text = str(info.value)
    assert f"POST {CALLBACK}" in text
    assert f"$.data.{where}: " in text and words in text


@pytest.mark.parametrize(("breaker", "where", "words"), BROKEN)
def test_a_message_edit_is_refused(breaker: Any, where: str, words: str) -> None:
    body = message()
    breaker(body)
    with pytest.raises(SpecError) as info:
        validate_request("PATCH", EDIT_PATH, body)
    text = str(info.value)
    assert f"PATCH {EDIT}" in text
    assert f"$.{where}: " in text and words in text


def test_every_problem_is_counted_and_the_enum_is_spelled_out() -> None:
    body = message()
    for breaker in (break_style, break_title, break_options):
        breaker(body)
    with pytest.raises(SpecError) as info:
        validate_request("PATCH", EDIT_PATH, body)
    text = str(info.value)
    assert "and 2 more problem(s)" in text
    assert "9 is not one of the values of ButtonStyleTypes: 1 (PRIMARY)" in text


def test_a_component_of_no_known_type_names_the_candidates() -> None:
    body = message(components=[{"type": 1, "components": [{"type": 99, "custom_id": "x"}]}])
    with pytest.raises(SpecError, match=r"\$\.components\[0\]\.components\[0\]: .*matches none"):
        validate_request("PATCH", EDIT_PATH, body)


def test_path_and_query_parameters_are_checked() -> None:
    with pytest.raises(SpecError, match=r"path parameter channel_id='None'"):
        validate_request("PATCH", "/channels/None/messages/1", message())
    validate_request("POST", CALLBACK_PATH, {"type": 5}, query={"with_response": "1"})
    with pytest.raises(SpecError, match="query parameter wait: not a parameter"):
        validate_request("POST", CALLBACK_PATH, {"type": 5}, query={"wait": 1})
    with pytest.raises(SpecError, match="booleans cannot be sent"):
        validate_request("POST", CALLBACK_PATH, {"type": 5}, query={"with_response": True})


def test_a_missing_body_is_refused_where_the_spec_requires_one() -> None:
    with pytest.raises(SpecError, match="requires a request body"):
        validate_request("POST", CALLBACK_PATH, None)


def test_routes_match_on_concrete_paths_and_prefer_literal_segments() -> None:
    # discord.py calls the callback's parameters {webhook_id}/{webhook_token}; the spec does not.
    op, params = find_operation("POST", CALLBACK_PATH) or (None, {})
    assert op is not None and op.template == CALLBACK
    assert params["interaction_token"] == "hx1.1300000000000000001.token"
    op, _ = find_operation("PATCH", "/webhooks/1/tok/messages/@original") or (None, {})
    assert op is not None and op.template.endswith("/messages/@original")
    op, _ = find_operation("PATCH", "/webhooks/1/tok/messages/2") or (None, {})
    assert op is not None and op.template.endswith("/messages/{message_id}")
    assert find_operation("PATCH", "/channels/1/no-such-thing") is None


def test_an_unknown_route_fails_unless_allow_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError, match="not a route in Discord's API description"):
        validate_request("GET", "/totally/unknown/1", route="/totally/unknown/{thing_id}")
    monkeypatch.setitem(
        UNDOCUMENTED_ROUTES, ("GET", "/totally/unknown/{thing_id}"), "a test-only route"
    )
    before = VALIDATED["GET /totally/unknown/{thing_id} (allow-listed)"]
    assert (
        validate_request("GET", "/totally/unknown/1", route="/totally/unknown/{thing_id}") is None
    )
    assert VALIDATED["GET /totally/unknown/{thing_id} (allow-listed)"] == before + 1


def test_allow_list_and_tolerances_give_reasons() -> None:
    for key, reason in UNDOCUMENTED_ROUTES.items():
        assert reason.strip(), key
    paths = spec.load_spec()["paths"]
    for tolerance in spec.TOLERATED:
        assert tolerance.reason.strip(), tolerance
        for operation in tolerance.operations:
            method, template = operation.split(" ", 1)
            assert method.lower() in paths.get(template, {}), operation


def test_a_tolerance_silences_exactly_its_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    body = message()
    break_style(body)
    tolerance = Tolerance(
        (f"PATCH {EDIT}",), r"\$\.components\[\d+\]\.components\[\d+\]\.style", "enum", "test"
    )
    monkeypatch.setattr(spec, "TOLERATED", [tolerance])
    validate_request("PATCH", EDIT_PATH, body)
    break_title(body)
    with pytest.raises(SpecError, match=r"\$\.embeds\[0\]\.title") as info:
        validate_request("PATCH", EDIT_PATH, body)
    assert "style" not in str(info.value)


def test_integer_attachment_ids_from_discord_py_are_tolerated_and_nothing_else() -> None:
    new = message(attachments=[{"id": 0, "filename": "board.png"}])
    validate_request("POST", "/channels/1/messages", new, multipart=True)
    validate_request("POST", CALLBACK_PATH, {"type": 4, "data": new}, multipart=True)
    kept = message(attachments=[{"id": 1323802873053577216, "filename": "board.png"}])
    validate_request("PATCH", EDIT_PATH, kept)
    for bad in ("board", -1, True):
        body = message(attachments=[{"id": bad, "filename": "board.png"}])
        with pytest.raises(SpecError, match=r"\$\.attachments\[0\]\.id: "):
            validate_request("PATCH", EDIT_PATH, body)


# --------------------------------------------------------------------------------------
# End to end: the harness refuses what a bot sends
# --------------------------------------------------------------------------------------


def broken_view(breaker: Any) -> discord.ui.View:
    """A view whose JSON is ``message()``'s components broken by ``breaker``."""
    view = discord.ui.View(timeout=None)
    for i in range(5):
        view.add_item(discord.ui.Button(label=str(i + 1), custom_id=f"c4:move:{i}", row=0))
    options = [discord.SelectOption(label="d3", value="d3")]
    view.add_item(discord.ui.Select(custom_id="ot:move", options=options, row=1))
    first, select = view.children[0], view.children[5]
    assert isinstance(first, discord.ui.Button) and isinstance(select, discord.ui.Select)
    if breaker is break_style:
        first.style = try_enum(discord.ButtonStyle, 9)
    elif breaker is break_custom_id:
        first.custom_id = "x" * 101
    elif breaker is break_options:
        select.options = [discord.SelectOption(label=f"o{i}") for i in range(26)]
    return view


def make_toy_bot(breaker: Any) -> discord.Client:
    """A bot whose /send replies with a broken message and /edit edits one in the channel."""
    bot = discord.Client(intents=discord.Intents.none())
    tree = app_commands.CommandTree(bot)
    title = "t" * 300 if breaker is break_title else "Connect Four"

    @tree.command(description="Replies with the message")
    async def send(interaction: discord.Interaction) -> None:
        embed = discord.Embed(title=title)
        await interaction.response.send_message("hi", embed=embed, view=broken_view(breaker))

    @tree.command(description="Edits a channel message")
    async def edit(interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True)
        channel = interaction.client.get_partial_messageable(DEFAULT_CHANNEL_ID)
        sent = await channel.send("board")
        embed = discord.Embed(title=title)
        await sent.edit(embed=embed, view=broken_view(breaker))

    @tree.command(description="Uploads, keeps and removes files")
    async def files(interaction: discord.Interaction) -> None:
        png = discord.File(io.BytesIO(b"png"), "board.png", description="the board")
        await interaction.response.send_message("a", file=png)
        msg = await interaction.original_response()
        more = discord.File(io.BytesIO(b"2"), "b2.png")
        await interaction.edit_original_response(attachments=[*msg.attachments, more])
        await interaction.followup.send("f", file=discord.File(io.BytesIO(b"3"), "f.png"))
        channel = interaction.client.get_partial_messageable(DEFAULT_CHANNEL_ID)
        sent = await channel.send("c", file=discord.File(io.BytesIO(b"4"), "c.png"))
        await sent.edit(attachments=[])

    @tree.error
    async def swallow(interaction: discord.Interaction, error: Exception) -> None:
        """Like many bots: catch everything.  The harness must still fail the test."""

    return bot


@pytest.mark.parametrize(("breaker", "where", "words"), BROKEN)
async def test_the_harness_refuses_a_broken_reply(breaker: Any, where: str, words: str) -> None:
    async with await Harness.create(make_toy_bot(breaker)) as h:
        with pytest.raises(SpecError) as info:
            await h.slash("send", user=ALICE)
    text = str(info.value)
    assert f"POST {CALLBACK}" in text
    assert "discord.py route /interactions/{webhook_id}/{webhook_token}/callback" in text
    assert f"$.data.{where}: " in text and words in text


@pytest.mark.parametrize(("breaker", "where", "words"), BROKEN)
async def test_the_harness_refuses_a_broken_edit(breaker: Any, where: str, words: str) -> None:
    async with await Harness.create(make_toy_bot(breaker)) as h:
        with pytest.raises(HarnessError) as info:
            await h.slash("edit", user=ALICE)
    assert isinstance(info.value, SpecError)
    text = str(info.value)
    assert f"PATCH {EDIT}" in text and f"$.{where}: " in text and words in text
    # The invalid request was still captured, like the ones before it.
    assert [c.method for c in h.calls[-3:]] == ["POST", "POST", "PATCH"]


async def test_a_request_swallowed_in_the_background_fails_the_next_interaction() -> None:
    async with await Harness.create(make_toy_bot(None)) as h:
        channel = h.bot.get_partial_messageable(DEFAULT_CHANNEL_ID)
        with contextlib.suppress(Exception):  # a background job that logs and carries on
            await channel.send(embed=discord.Embed(title="t" * 300))
        with pytest.raises(SpecError, match=r"POST /channels/\{channel_id\}/messages .*title"):
            await h.slash("send", user=ALICE)
        await h.slash("send", user=ALICE)  # reported once, then the harness carries on


async def test_validation_can_be_turned_off_per_harness() -> None:
    async with await Harness.create(make_toy_bot(break_style), validate_spec=False) as h:
        calls = await h.slash("send", user=ALICE)
    assert calls[0].components[0]["components"][0]["style"] == 9


async def test_file_uploads_made_by_discord_py_pass() -> None:
    async with await Harness.create(make_toy_bot(None)) as h:
        calls = await h.slash("files", user=ALICE)
    assert sum(bool(c.files) for c in calls) == 4  # multipart: payload_json is validated
    assert calls[0].json["data"]["attachments"] == [
        {"id": 0, "filename": "board.png", "description": "the board"}
    ]


async def test_an_unknown_route_fails_through_the_harness() -> None:
    async with await Harness.create(make_toy_bot(None)) as h:
        with pytest.raises(SpecError, match=r"GET /no/such/route/7 .*not a route"):
            await h.bot.http.request(Route("GET", "/no/such/route/{n}", n=7))


# --------------------------------------------------------------------------------------
# What discord.py produces for the real bot passes
# --------------------------------------------------------------------------------------


async def _no_sleep(_: float) -> None:
    await asyncio.sleep(0)


@pytest.fixture
async def real_bot(tmp_path: Path, clock: Clock, pool: EnginePool) -> AsyncIterator[Harness]:
    store = await Store.open(tmp_path / "bot.db", clock=clock)
    lobby = Lobby(store, pool, LobbyConfig(seed=7), clock=clock, sleep=_no_sleep)
    # sync_commands: setup_hook PUTs every application command, so that body is checked too.
    bot = BoardBot(lobby, run_clock=False, sync_commands=True)
    try:
        h = await Harness.create(bot)
        try:
            yield h
        finally:
            await h.close()
    finally:
        await lobby.close()
        await store.close()


async def test_the_real_bot_commands_and_board_pass(real_bot: Harness) -> None:
    h = real_bot
    sync = [c for c in h.calls if c.route == "/applications/{application_id}/commands"]
    assert [c.method for c in sync] == ["PUT"] and len(sync[0].json) >= 1
    before = sum(VALIDATED.values())
    calls = await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    assert sum(VALIDATED.values()) >= before + len(calls)
    # The board comes in the callback or in an edit of the deferred response.
    board = next(c for c in calls if c.components)
    assert board.custom_ids()  # the board's buttons were part of what passed
    assert spec.validate_call(board) is not None


def test_an_alt_text_longer_than_discord_takes_is_refused() -> None:
    picture = {"id": "1", "filename": "board-1-0.png", "description": "black: d5 e4"}
    assert validate_request("PATCH", EDIT_PATH, message(attachments=[picture])) is not None
    with pytest.raises(SpecError, match=r"\$\.attachments\[0\]\.description: .*too long"):
        validate_request(
            "PATCH", EDIT_PATH, message(attachments=[{**picture, "description": "x" * 1025}])
        )


async def test_the_real_bot_picture_boards_with_alt_text_pass(real_bot: Harness) -> None:
    h = real_bot
    await h.slash("prefs", {"board": "image"}, user=ALICE)
    calls = await h.slash("play", {"game": "othello", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    select = next(c for row in board["components"] for c in row["components"] if c["type"] == 3)
    value = select["options"][0]["value"]
    calls += await h.click(board, select["custom_id"], user=ALICE, values=[value])
    uploads = [c for c in calls if c.files]
    assert len(uploads) >= 2  # the new board and its move, each a picture
    for call in uploads:
        attachments = call.message["attachments"]
        assert [a["description"][:8] for a in attachments] == ["Othello,"]
        assert spec.validate_call(call) is not None  # multipart: payload_json is checked


async def test_the_real_bot_analysis_graph_has_alt_text_and_passes(real_bot: Harness) -> None:
    h = real_bot
    assert isinstance(h.bot, BoardBot)
    h.bot.lobby.config.analysis_seconds = 0.5
    await h.slash("play", {"game": "connect4", "opponent": "easy"}, user=ALICE)
    board = h.last_message(ephemeral=False)
    column = next(b["custom_id"] for row in board["components"] for b in row["components"])
    await h.click(board, column, user=ALICE)
    await h.settle()
    await h.slash("resign", {}, user=ALICE)
    calls = await h.slash("analyse", {}, user=ALICE)
    [upload] = [c for c in calls if c.files]
    graph = next(a for a in upload.message["attachments"] if a["filename"] == "win-chance-1.png")
    assert graph["description"].startswith("Graph of the win chance over the 2 moves of match #1")
    assert len(graph["description"]) <= 1024
    assert upload.files["win-chance-1.png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert spec.validate_call(upload) is not None  # multipart: payload_json is checked
    too_long = {**upload.message, "attachments": [{**graph, "description": "x" * 1025}]}
    with pytest.raises(SpecError, match=r"\$\.attachments\[0\]\.description: .*too long"):
        validate_request("PATCH", EDIT_PATH, too_long)
