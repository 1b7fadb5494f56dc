"""Proves tests/harness/ against a toy bot that exercises every seam we rely on.

The toy bot lives here (not in the project) so harness regressions are told apart from bot
regressions: if these fail after a discord.py upgrade, fix the harness first.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import pytest
from discord import app_commands
from discord.ext import commands, tasks

import tests.harness
from cogs.client import BoardBot
from db.store import Store
from lobby.core import Lobby, LobbyConfig
from lobby.pool import EnginePool
from tests.boardbot import no_sleep
from tests.clock import Clock
from tests.harness import (
    DEFAULT_CHANNEL_ID,
    Call,
    Harness,
    HarnessError,
    HarnessTimeout,
    LimitError,
    assert_within_limits,
    user,
)

ALICE = user(101, "alice")
BOB = user(102, "bob")
ADMIN = user(103, "admin", permissions=discord.Permissions(manage_guild=True))

FRUITS = ["apple", "apricot", "banana", "blueberry", "cherry"]


class CounterButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=r"toy:(?P<n>\d+)"
):
    """Stateless button: its state lives in the custom_id, so it survives restarts."""

    def __init__(self, n: int) -> None:
        super().__init__(
            discord.ui.Button(
                label=f"+1 ({n})", style=discord.ButtonStyle.primary, custom_id=f"toy:{n}"
            )
        )
        self.n = n

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[discord.Client],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> CounterButton:
        return cls(int(match["n"]))

    async def callback(self, interaction: discord.Interaction[discord.Client]) -> None:
        view = discord.ui.View(timeout=None)
        view.add_item(CounterButton(self.n + 1))
        await interaction.response.edit_message(content=f"count={self.n + 1}", view=view)


class ColorView(discord.ui.View):
    """Persistent view (timeout=None, fixed custom_ids) registered with bot.add_view."""

    def __init__(self) -> None:
        super().__init__(timeout=None)

    @discord.ui.select(
        custom_id="toy:color",
        max_values=2,
        options=[discord.SelectOption(label=c.title(), value=c) for c in ("red", "green", "blue")],
    )
    async def pick(
        self, interaction: discord.Interaction[discord.Client], select: discord.ui.Select[ColorView]
    ) -> None:
        await interaction.response.send_message(f"picked {','.join(select.values)}", ephemeral=True)


class HangView(discord.ui.View):
    """A view whose callback never finishes: settle() must time out loudly."""

    @discord.ui.button(label="hang", custom_id="toy:hang")
    async def hang(
        self, interaction: discord.Interaction[discord.Client], button: discord.ui.Button[HangView]
    ) -> None:
        await interaction.response.defer()
        await discord.utils.sleep_until(discord.utils.utcnow().replace(year=2100))


class BrokenView(discord.ui.View):
    """Its callback raises; discord.py only *logs* that, the harness must surface it."""

    @discord.ui.button(label="broken", custom_id="toy:broken")
    async def broken(
        self,
        interaction: discord.Interaction[discord.Client],
        button: discord.ui.Button[BrokenView],
    ) -> None:
        raise ValueError("bad move")


class ToyBot(commands.Bot):
    ticks = 0

    async def setup_hook(self) -> None:
        """Register restart-surviving components, exactly as a production bot would, and
        start a background loop (which the harness must not wait for)."""
        self.add_dynamic_items(CounterButton)
        self.add_view(ColorView())
        self.ticker.start()

    @tasks.loop(minutes=5)
    async def ticker(self) -> None:
        self.ticks += 1


def make_bot() -> ToyBot:
    """A fresh bot per call, so a second instance models a process restart."""
    bot = ToyBot(command_prefix="!", intents=discord.Intents.none())
    tree = bot.tree

    @tree.command(description="Replies pong")
    async def ping(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("pong", ephemeral=True)

    @tree.command(description="Greets a member")
    async def greet(
        interaction: discord.Interaction, member: discord.Member, times: int = 1
    ) -> None:
        embed = discord.Embed(title=f"Hello {member.display_name}", description="hi " * times)
        view = discord.ui.View(timeout=None)
        view.add_item(CounterButton(0))
        await interaction.response.send_message(embed=embed, view=view)

    @tree.command(description="Deferred work")
    async def slow(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.edit_original_response(content="done")
        original = await interaction.original_response()
        await interaction.followup.send(f"original said {original.content}", ephemeral=True)

    @tree.command(description="Pick colours")
    async def colors(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("choose", view=ColorView())

    @tree.command(description="Pick a fruit")
    async def fruit(interaction: discord.Interaction, name: str) -> None:
        await interaction.response.send_message(f"you chose {name}")

    @fruit.autocomplete("name")
    async def fruit_autocomplete(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name=f, value=f) for f in FRUITS if f.startswith(current)]

    @tree.command(description="Always fails")
    async def boom(interaction: discord.Interaction) -> None:
        raise RuntimeError("kaboom")

    @tree.command(description="Admins only")
    @app_commands.checks.has_permissions(manage_guild=True)
    async def admin(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("welcome, admin")

    @tree.command(description="Never answers")
    async def silent(interaction: discord.Interaction) -> None:
        return None

    @tree.command(description="Button whose callback raises")
    async def broken(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("try me", view=BrokenView())

    @tree.command(description="Hangs on click")
    async def hang(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("careful", view=HangView())

    @tree.error
    async def on_app_command_error(
        interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        if isinstance(error, app_commands.MissingPermissions):
            text = "you lack permissions"
        else:
            text = f"oops: {type(getattr(error, 'original', error)).__name__}"
        await interaction.response.send_message(text, ephemeral=True)

    return bot


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    harness = await Harness.create(make_bot())
    try:
        yield harness
    finally:
        await harness.close()


def only_callback(calls: list[Call]) -> Call:
    callbacks = [c for c in calls if c.is_callback]
    assert len(callbacks) == 1, calls
    return callbacks[0]


async def test_ping_is_ephemeral_type4(h: Harness) -> None:
    calls = await h.slash("ping", user=ALICE)
    cb = only_callback(calls)
    assert cb.seam == "webhook"
    assert cb.route == "/interactions/{webhook_id}/{webhook_token}/callback"
    assert cb.callback_type == 4
    assert cb.ephemeral
    assert cb.content == "pong"
    assert h.last_message()["content"] == "pong"


async def test_greet_resolves_member_and_dynamic_button_edits(h: Harness) -> None:
    cb = only_callback(await h.slash("greet", {"member": BOB, "times": 2}, user=ALICE))
    assert cb.callback_type == 4 and not cb.ephemeral
    assert cb.embeds[0]["title"] == "Hello bob"  # a Member resolved, not a bare Object
    assert cb.embeds[0]["description"] == "hi hi "
    assert cb.custom_ids() == ["toy:0"]
    assert_within_limits(cb)

    board = h.last_message()
    click = only_callback(await h.click(board, "toy:0", user=BOB))
    assert click.callback_type == 7
    assert click.custom_ids() == ["toy:1"]
    assert h.messages[int(board["id"])]["content"] == "count=1"
    # The stored message was edited in place; clicking its new button keeps counting.
    await h.click(h.messages[int(board["id"])], "toy:1", user=BOB)
    assert h.last_message()["content"] == "count=2"


async def test_dynamic_button_survives_restart() -> None:
    first = await Harness.create(make_bot())
    try:
        await first.slash("greet", {"member": BOB}, user=ALICE)
        board = first.last_message()
    finally:
        await first.close()

    second = await Harness.create(make_bot())  # fresh bot: no views stored for this message
    try:
        cb = only_callback(await second.click(board, "toy:0", user=ALICE))
        assert cb.callback_type == 7
        assert second.last_message()["content"] == "count=1"
    finally:
        await second.close()


async def test_persistent_select_with_values(h: Harness) -> None:
    await h.slash("colors", user=ALICE)
    menu = h.last_message()
    cb = only_callback(await h.click(menu, "toy:color", user=BOB, values=["red", "blue"]))
    assert cb.callback_type == 4 and cb.ephemeral
    assert cb.content == "picked red,blue"
    with pytest.raises(HarnessError, match="does not offer"):
        await h.click(menu, "toy:color", user=BOB, values=["purple"])


async def test_defer_edit_original_and_followup(h: Harness) -> None:
    calls = await h.slash("slow", user=ALICE)
    assert [(c.method, c.route) for c in calls] == [
        ("POST", "/interactions/{webhook_id}/{webhook_token}/callback"),
        ("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/@original"),
        ("GET", "/webhooks/{webhook_id}/{webhook_token}/messages/@original"),
        ("POST", "/webhooks/{webhook_id}/{webhook_token}"),
    ]
    assert calls[0].callback_type == 5
    assert calls[1].content == "done"
    assert calls[2].response["id"] == calls[1].response["id"]  # GET served the stored message
    assert calls[3].is_followup and calls[3].ephemeral
    assert calls[3].content == "original said done"
    original = h.messages[int(calls[1].response["id"])]
    assert original["content"] == "done" and not original["flags"] & 128  # no longer loading


async def test_autocomplete_returns_choices(h: Harness) -> None:
    choices = await h.autocomplete("fruit", {"name": "ap"}, focused="name", user=ALICE)
    assert choices == [{"name": "apple", "value": "apple"}, {"name": "apricot", "value": "apricot"}]


async def test_tree_error_handler_replies_ephemerally(h: Harness) -> None:
    cb = only_callback(await h.slash("boom", user=ALICE))
    assert cb.ephemeral and cb.content == "oops: RuntimeError"


async def test_permission_check_uses_member_permissions(h: Harness) -> None:
    denied = only_callback(await h.slash("admin", user=ALICE))
    assert denied.ephemeral and denied.content == "you lack permissions"
    allowed = only_callback(await h.slash("admin", user=ADMIN))
    assert allowed.content == "welcome, admin"


async def test_unanswered_interaction_fails_loudly(h: Harness) -> None:
    with pytest.raises(HarnessError, match="never acknowledged"):
        await h.slash("silent", user=ALICE)
    assert await h.slash("silent", user=ALICE, expect_response=False) == []


async def test_hanging_callback_times_out_listing_tasks(h: Harness) -> None:
    await h.slash("hang", user=ALICE)
    h.timeout = 0.2
    with pytest.raises(HarnessTimeout, match="discord-ui-view-dispatch"):
        await h.click(h.last_message(), "toy:hang", user=ALICE)


async def test_channel_send_and_partial_edit_use_http_seam(h: Harness) -> None:
    channel = h.bot.get_partial_messageable(DEFAULT_CHANNEL_ID)
    sent = await channel.send("board v1", embed=discord.Embed(title="Board"))
    assert isinstance(sent, discord.Message) and sent.content == "board v1"
    edited = await channel.get_partial_message(sent.id).edit(content="board v2")
    assert edited.content == "board v2"

    post, patch = h.calls[-2:]
    assert (post.seam, post.method, post.route) == (
        "http",
        "POST",
        "/channels/{channel_id}/messages",
    )
    assert post.path == f"/channels/{DEFAULT_CHANNEL_ID}/messages"
    assert (patch.method, patch.path_params["message_id"]) == ("PATCH", str(sent.id))
    current = h.last_message(DEFAULT_CHANNEL_ID)
    assert current["content"] == "board v2"
    assert current["embeds"][0]["title"] == "Board"  # untouched fields survive the PATCH
    assert current["edited_timestamp"] is not None


def test_assert_within_limits_catches_long_embed() -> None:
    ok = discord.Embed(description="x" * 4096).to_dict()
    assert_within_limits({"content": "hi", "embeds": [ok]})
    with pytest.raises(LimitError, match="description"):
        assert_within_limits({"embeds": [discord.Embed(description="x" * 4097).to_dict()]})
    with pytest.raises(LimitError, match="6000"):
        many = [discord.Embed(description="y" * 4000).to_dict() for _ in range(2)]
        assert_within_limits({"embeds": many})
    rows = [
        {"type": 1, "components": [{"type": 2, "style": 1, "custom_id": f"b{i}"}]} for i in range(6)
    ]
    with pytest.raises(LimitError, match="action rows"):
        assert_within_limits({"components": rows})
    with pytest.raises(LimitError, match="custom_id"):
        assert_within_limits(
            {
                "components": [
                    {"type": 1, "components": [{"type": 2, "style": 1, "custom_id": "z" * 101}]}
                ]
            }
        )


async def test_swallowed_view_error_is_raised(h: Harness) -> None:
    await h.slash("broken", user=ALICE)
    with pytest.raises(HarnessError, match="Ignoring exception in view") as info:
        await h.click(h.last_message(), "toy:broken", user=ALICE)
    assert isinstance(info.value.__cause__, ValueError)


async def test_a_command_from_a_dm(h: Harness) -> None:
    dm = only_callback(await h.slash("ping", user=ALICE, guild_id=None))
    assert dm.content == "pong"
    assert "guild_id" not in h.last_message()


async def test_disabled_and_unknown_components_are_rejected(h: Harness) -> None:
    await h.slash("greet", {"member": BOB}, user=ALICE)
    board = h.last_message()
    with pytest.raises(HarnessError, match="no component"):
        await h.click(board, "toy:99", user=ALICE)
    board["components"][0]["components"][0]["disabled"] = True
    with pytest.raises(HarnessError, match="disabled"):
        await h.click(board, "toy:0", user=ALICE)


async def test_a_background_loop_is_not_waited_for(h: Harness) -> None:
    assert isinstance(h.bot, ToyBot) and h.bot.ticks == 1  # loop ran once, settle returned


async def test_the_package_docstring_example_runs_as_written(
    tmp_path: Path, clock: Clock, pool: EnginePool
) -> None:
    """The usage example in tests/harness/__init__.py, run against the real bot."""
    doc = tests.harness.__doc__ or ""
    code = textwrap.dedent(doc.split("::\n", 1)[1])
    namespace: dict[str, Any] = {"BoardBot": BoardBot, "Harness": Harness, "user": user}
    exec("async def example(lobby):\n" + textwrap.indent(code, "    "), namespace)
    store = await Store.open(tmp_path / "example.db", clock=clock)
    lobby = Lobby(store, pool, LobbyConfig(seed=7), clock=clock, sleep=no_sleep)
    try:
        await namespace["example"](lobby)
    finally:
        await lobby.close()
        await store.close()
