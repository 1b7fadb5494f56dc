"""`bot.py`: configuration and the application commands it would sync."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bot
from boot import settings
from boot.errors import ConfigError
from tests.machine import scaled

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"^[-_\w]{1,32}$")


def test_print_commands_lists_every_command_valid_for_discord() -> None:
    proc = subprocess.run(
        [sys.executable, "bot.py", "--print-commands"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        env={"PATH": "/usr/bin:/bin", "DISCORD_TOKEN": ""},
    )
    assert proc.returncode == 0, proc.stderr
    commands = json.loads(proc.stdout)
    names = {c["name"] for c in commands}
    assert {"play", "challenge", "botmatch", "leaderboard", "stats", "history", "resign"} <= names
    for command in commands:
        assert NAME.match(command["name"]) and command["name"] == command["name"].lower()
        assert 1 <= len(command["description"]) <= 100
        options = command.get("options", [])
        assert len(options) <= 25
        required = [o.get("required", False) for o in options]
        assert required == sorted(required, reverse=True), "required options come first"
        for option in options:
            assert NAME.match(option["name"]) and 1 <= len(option["description"]) <= 100
            assert len(option.get("choices", [])) <= 25
    play = next(c for c in commands if c["name"] == "play")
    opponent = next(o for o in play["options"] if o["name"] == "opponent")
    assert opponent.get("autocomplete") and opponent["max_length"] == 100


def test_config_reads_env_and_dotenv(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("# comment\nDISCORD_TOKEN='abc'\nBOARDBOT_WORKERS=3\n")
    config = settings.Config.from_env({"BOARDBOT_WORKERS": "1", "BOARDBOT_DB": "x.db"}, dotenv)
    assert config.token == "abc" and config.workers == 1
    assert config.db_path == str(settings.PROJECT / "x.db") and config.dotenv == dotenv
    with pytest.raises(SystemExit, match="BOARDBOT_TURN_SECONDS"):
        settings.Config.from_env({"BOARDBOT_TURN_SECONDS": "soon"}, dotenv)
    with pytest.raises(SystemExit, match="BOARDBOT_DEV_GUILD='my-server' is not a Discord id"):
        settings.Config.from_env({"BOARDBOT_DEV_GUILD": "my-server"}, dotenv)


def test_a_database_url_selects_postgresql_and_its_password_stays_out_of_sight(
    tmp_path: Path,
) -> None:
    dotenv = tmp_path / ".env"
    url = "postgresql://bot:s3cret@db.example:5432/boardbot"
    config = settings.Config.from_env({"BOARDBOT_DB": "x.db", "BOARDBOT_DATABASE_URL": url}, dotenv)
    assert config.database == url and "s3cret" not in repr(config)
    assert settings.Config.from_env({"BOARDBOT_DB": "x.db"}, dotenv).database == str(
        settings.PROJECT / "x.db"
    )
    with pytest.raises(SystemExit, match="BOARDBOT_DATABASE_URL='mysql://bot:\\*\\*\\*@h/b'"):
        settings.Config.from_env({"BOARDBOT_DATABASE_URL": "mysql://bot:pw@h/b"}, dotenv)


def test_dotenv_is_read_as_a_shell_would(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "export DISCORD_TOKEN=abc\n"
        'BOARDBOT_WORKERS = "3"  # three workers\n'
        "BOARDBOT_TURN_SECONDS='60' # a minute\n"
        "  # an indented comment\n"
        "\n"
        "BOARDBOT_DEV_GUILD\n"  # a name alone: no value, as if unset
    )
    config = settings.Config.from_env({}, dotenv)
    assert config.token == "abc" and config.workers == 3 and config.turn_seconds == 60
    assert config.dev_guild is None
    dotenv.write_text("BOARDBOT_LOG_LEVEL=debug#x\n")  # a '#' with no space before: the value's
    with pytest.raises(SystemExit, match="BOARDBOT_LOG_LEVEL='DEBUG#X'"):
        settings.Config.from_env({}, dotenv)
    dotenv.write_text('BOARDBOT_WORKERS = "abc"  # comment\n')
    with pytest.raises(SystemExit, match="BOARDBOT_WORKERS='abc': expected a whole number"):
        settings.Config.from_env({}, dotenv)


def test_a_dotenv_line_it_cannot_read_is_one_config_line(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("BOARDBOT_WORKERS=3\nBOARDBOT_SYNC yes please\n")
    with pytest.raises(ConfigError) as caught:
        settings.Config.from_env({}, dotenv)
    assert str(caught.value) == f"config error: {dotenv}, line 2: expected NAME=value"
    dotenv.write_bytes(b"BOARDBOT_WORKERS=\xff\n")
    with pytest.raises(ConfigError, match=f"cannot read {dotenv}"):
        settings.Config.from_env({}, dotenv)


def test_the_start_says_which_dotenv_it_read(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    assert settings.settings_line(settings.Config.from_env({}, dotenv)) == (
        f"settings: no {settings.DOTENV}; the environment only"
    )
    dotenv.write_text("BOARDBOT_WORKERS=3\n")
    assert settings.settings_line(settings.Config.from_env({}, dotenv)) == (
        f"settings: read {dotenv} (the environment overrides it)"
    )


def test_the_database_is_found_from_the_project_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "saves").mkdir(parents=True)
    elsewhere.mkdir()
    monkeypatch.setattr(settings, "PROJECT", project)
    monkeypatch.setattr(settings, "DATA", project / "data")
    monkeypatch.chdir(elsewhere)  # the working directory plays no part
    dotenv = tmp_path / ".env"
    assert settings.Config.from_env({}, dotenv).db_path == str(project / "data" / "boardbot.db")
    for given, path in (
        ("saves/bot.db", project / "saves" / "bot.db"),
        ("data/other.db", project / "data" / "other.db"),  # the data folder is made
        (str(elsewhere / "abs.db"), elsewhere / "abs.db"),
        ("~/bot.db", Path.home() / "bot.db"),
    ):
        assert settings.Config.from_env({"BOARDBOT_DB": given}, dotenv).db_path == str(path)
    assert settings.Config.from_env({"BOARDBOT_DB": ":memory:"}, dotenv).db_path == ":memory:"
    assert not (project / "data").exists()  # nothing made by reading the settings


@pytest.mark.parametrize("given", ["/nonexistent/dir/x.db", "missing/x.db", "saves/x.db/y.db"])
def test_a_database_in_a_folder_that_does_not_exist_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.setattr(settings, "PROJECT", tmp_path)
    monkeypatch.setattr(settings, "DATA", tmp_path / "data")
    (tmp_path / "saves").mkdir()
    (tmp_path / "saves" / "x.db").write_text("a file, not a folder")
    with pytest.raises(ConfigError) as caught:
        settings.Config.from_env({"BOARDBOT_DB": given}, tmp_path / ".env")
    folder = (tmp_path / given).parent
    assert str(caught.value) == (
        f"config error: BOARDBOT_DB={given!r}: there is no folder {folder}"
        f" (create it first; only {tmp_path / 'data'} is made by the bot)"
    )
    assert not folder.is_dir()
    # A PostgreSQL database instead: the SQLite setting is not used, so not checked.
    url = "postgresql://bot@db.example/boardbot"
    config = settings.Config.from_env({"BOARDBOT_DB": given, "BOARDBOT_DATABASE_URL": url}, None)
    assert config.database == url


@pytest.mark.parametrize("var", ["BOARDBOT_SYNC", "BOARDBOT_OWNER_SPECS"])
def test_switches_take_on_or_off_and_refuse_anything_else(tmp_path: Path, var: str) -> None:
    dotenv = tmp_path / ".env"
    field = dict(settings.SWITCHES)[var]
    for word, value in (
        ("1", True), ("TRUE", True), (" yes ", True), ("On", True),
        ("0", False), ("false", False), ("NO", False), ("off", False), ("", False),
    ):  # fmt: skip
        assert getattr(settings.Config.from_env({var: word}, dotenv), field) is value, word
    assert getattr(settings.Config.from_env({}, dotenv), field) is False
    for word in ("maybe", "2", "enabled", "y"):
        with pytest.raises(ConfigError) as caught:
            settings.Config.from_env({var: word}, dotenv)
        assert str(caught.value) == (
            f"config error: {var}={word!r}: expected 1 or 0 (or true/false, yes/no, on/off)"
        )


def test_help_says_what_the_program_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        bot.main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "Composition root" not in out
    description = out.split("\n\n")[1]
    assert description.startswith("Board-game bot: Connect Four and Othello on Discord")
    assert "local console" in description and "DISCORD_TOKEN" in description
    assert "--console" in out and "run the local console even when DISCORD_TOKEN is set" in out
    assert "python bot.py migrate --from sqlite:PATH --to postgresql://" in out
    assert "--print-commands" in out
