"""`bot.py`: configuration and the application commands it would sync."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bot

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"^[-_\w]{1,32}$")


def test_print_commands_lists_every_command_valid_for_discord() -> None:
    proc = subprocess.run(
        [sys.executable, "bot.py", "--print-commands"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
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
    config = bot.Config.from_env({"BOARDBOT_WORKERS": "1", "BOARDBOT_DB": "x.db"}, dotenv)
    assert config.token == "abc" and config.workers == 1 and config.db_path == "x.db"
    with pytest.raises(SystemExit, match="BOARDBOT_TURN_SECONDS"):
        bot.Config.from_env({"BOARDBOT_TURN_SECONDS": "soon"}, dotenv)
    with pytest.raises(SystemExit, match="BOARDBOT_DEV_GUILD='my-server' is not a Discord id"):
        bot.Config.from_env({"BOARDBOT_DEV_GUILD": "my-server"}, dotenv)


def test_a_database_url_selects_postgresql_and_its_password_stays_out_of_sight(
    tmp_path: Path,
) -> None:
    dotenv = tmp_path / ".env"
    url = "postgresql://bot:s3cret@db.example:5432/boardbot"
    config = bot.Config.from_env({"BOARDBOT_DB": "x.db", "BOARDBOT_DATABASE_URL": url}, dotenv)
    assert config.database == url and "s3cret" not in repr(config)
    assert bot.Config.from_env({"BOARDBOT_DB": "x.db"}, dotenv).database == "x.db"
    with pytest.raises(SystemExit, match="BOARDBOT_DATABASE_URL='mysql://bot:\\*\\*\\*@h/b'"):
        bot.Config.from_env({"BOARDBOT_DATABASE_URL": "mysql://bot:pw@h/b"}, dotenv)
