"""Numbered schema migrations, applied in order, each atomically.

Why not ``executescript``: it COMMITs any open transaction before running, so a
failure half-way would leave a half-migrated file.  Instead every migration is
split into single statements that run inside one ``BEGIN IMMEDIATE ... COMMIT``
together with ``PRAGMA user_version = N`` (the version lives in the file header
and is transactional), so after a crash the file is either at N-1 or at N.

To change the schema, append ``(N + 1, sql)``; never edit a migration that has
shipped.  SQLite cannot alter CHECK constraints in place, so values that grow
with features (game names, termination reasons) are validated in Python.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence

import aiosqlite

from .errors import MigrationError, SchemaTooNewError

_V1 = """
CREATE TABLE players (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL CHECK (kind IN ('user', 'agent', 'local')),
    discord_id    INTEGER UNIQUE,
    agent_key     TEXT    UNIQUE,
    local_name    TEXT    UNIQUE,
    display_name  TEXT    NOT NULL,
    created_at    REAL    NOT NULL,
    updated_at    REAL    NOT NULL,
    -- exactly the identity column that matches the kind is set
    CHECK ((kind = 'user')  = (discord_id IS NOT NULL)),
    CHECK ((kind = 'agent') = (agent_key  IS NOT NULL)),
    CHECK ((kind = 'local') = (local_name IS NOT NULL))
);

CREATE TABLE matches (
    id             INTEGER PRIMARY KEY,
    game           TEXT    NOT NULL CHECK (game <> ''),
    variant        TEXT    NOT NULL DEFAULT 'standard',
    kind           TEXT    NOT NULL CHECK (kind IN ('pve', 'pvp', 'eve')),
    player0_id     INTEGER NOT NULL REFERENCES players (id),
    player1_id     INTEGER NOT NULL REFERENCES players (id),
    status         TEXT    NOT NULL DEFAULT 'live'
                           CHECK (status IN ('live', 'finished', 'abandoned')),
    result         TEXT    CHECK (result IN ('0', '1', 'draw')),
    termination    TEXT,
    rated          INTEGER NOT NULL DEFAULT 0 CHECK (rated IN (0, 1)),
    guild_id       INTEGER,
    channel_id     INTEGER,
    message_id     INTEGER,
    created_at     REAL    NOT NULL,
    updated_at     REAL    NOT NULL,
    finished_at    REAL,
    turn_deadline  REAL,
    turn_seconds   REAL    CHECK (turn_seconds IS NULL OR turn_seconds > 0),
    options        TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(options)),
    ply            INTEGER NOT NULL DEFAULT 0 CHECK (ply >= 0),
    CHECK ((status = 'live') = (finished_at IS NULL)),
    CHECK ((status = 'live') = (termination IS NULL)),
    CHECK (status <> 'live' OR result IS NULL),
    CHECK (status <> 'finished' OR result IS NOT NULL)
);

CREATE INDEX matches_live ON matches (created_at) WHERE status = 'live';
CREATE INDEX matches_live_deadline ON matches (turn_deadline) WHERE status = 'live';
CREATE INDEX matches_p0 ON matches (player0_id, status, finished_at);
CREATE INDEX matches_p1 ON matches (player1_id, status, finished_at);
CREATE INDEX matches_guild ON matches (guild_id, game, status);

CREATE TABLE moves (
    match_id    INTEGER NOT NULL REFERENCES matches (id),
    ply         INTEGER NOT NULL CHECK (ply >= 0),
    move        TEXT    NOT NULL CHECK (move <> ''),
    player_id   INTEGER NOT NULL REFERENCES players (id),
    created_at  REAL    NOT NULL,
    think_ms    INTEGER CHECK (think_ms IS NULL OR think_ms >= 0),
    PRIMARY KEY (match_id, ply)
) WITHOUT ROWID;

-- Defence in depth for "matches.ply == number of stored moves": a move can
-- only be appended at the match's current ply, and only while it is live.
CREATE TRIGGER moves_append_only_at_ply
BEFORE INSERT ON moves
BEGIN
    SELECT RAISE(ABORT, 'move must be appended at matches.ply of a live match')
    WHERE NOT EXISTS (
        SELECT 1 FROM matches
        WHERE id = NEW.match_id AND status = 'live' AND ply = NEW.ply
    );
END;

CREATE TABLE ratings (
    player_id   INTEGER NOT NULL REFERENCES players (id),
    game        TEXT    NOT NULL,
    mu          REAL    NOT NULL,
    sigma       REAL    NOT NULL CHECK (sigma > 0),
    games       INTEGER NOT NULL DEFAULT 0 CHECK (games >= 0),
    wins        INTEGER NOT NULL DEFAULT 0 CHECK (wins >= 0),
    draws       INTEGER NOT NULL DEFAULT 0 CHECK (draws >= 0),
    losses      INTEGER NOT NULL DEFAULT 0 CHECK (losses >= 0),
    updated_at  REAL    NOT NULL,
    CHECK (games = wins + draws + losses),
    PRIMARY KEY (player_id, game)
) WITHOUT ROWID;

CREATE INDEX ratings_ordinal ON ratings (game, (mu - 3 * sigma) DESC);

CREATE TABLE guild_settings (
    guild_id    INTEGER PRIMARY KEY,
    settings    TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    updated_at  REAL    NOT NULL
);

CREATE TABLE agent_memory_meta (
    kind           TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    games_trained  INTEGER NOT NULL DEFAULT 0 CHECK (games_trained >= 0),
    meta           TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(meta)),
    created_at     REAL    NOT NULL,
    updated_at     REAL    NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;

CREATE TABLE agent_memory (
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    key         BLOB NOT NULL,
    value       BLOB NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (kind, name, key),
    FOREIGN KEY (kind, name) REFERENCES agent_memory_meta (kind, name) ON DELETE CASCADE
) WITHOUT ROWID;
"""

_V2 = """
-- Matches set aside after they failed in a way retrying cannot mend (a corrupt row, a move
-- that does not replay): resume and the clocks skip them instead of failing on every pass.
CREATE TABLE match_faults (
    match_id    INTEGER PRIMARY KEY REFERENCES matches (id),
    reason      TEXT    NOT NULL,
    created_at  REAL    NOT NULL
);

-- Work that must follow a commit (learning from a finished match), written in the same
-- transaction as the commit and deleted in the transaction that applies it: exactly once,
-- even across a kill.
CREATE TABLE outbox (
    id          INTEGER PRIMARY KEY,
    kind        TEXT    NOT NULL CHECK (kind <> ''),
    match_id    INTEGER REFERENCES matches (id),
    payload     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(payload)),
    created_at  REAL    NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error  TEXT
);

CREATE INDEX outbox_kind ON outbox (kind, id);

-- Which agent actually chose an agent's move when its own job failed (NULL: the seat's own).
ALTER TABLE moves ADD COLUMN fallback TEXT;
"""

_V3 = """
-- Whether the message of an ended match shows its end: 0 from the finish until a board edit
-- or a response shows it, so a restart can edit the boards a kill left showing a live game.
ALTER TABLE matches ADD COLUMN final_shown INTEGER NOT NULL DEFAULT 1
    CHECK (final_shown IN (0, 1));

CREATE INDEX matches_unshown ON matches (id) WHERE final_shown = 0;
"""

_V4 = """
-- A challenge lives in the database, so its answer is one atomic transition (twenty Accept
-- clicks make one match) and its expiry survives a restart.
CREATE TABLE challenges (
    id             INTEGER PRIMARY KEY,
    game           TEXT    NOT NULL CHECK (game <> ''),
    challenger_id  INTEGER NOT NULL REFERENCES players (id),
    opponent_id    INTEGER NOT NULL REFERENCES players (id),
    guild_id       INTEGER,
    channel_id     INTEGER,
    message_id     INTEGER,
    status         TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN
                           ('pending', 'accepted', 'declined', 'withdrawn', 'expired')),
    created_at     REAL    NOT NULL,
    expires_at     REAL    NOT NULL,
    answered_at    REAL,
    match_id       INTEGER REFERENCES matches (id),
    CHECK (challenger_id <> opponent_id),
    CHECK ((status = 'accepted') = (match_id IS NOT NULL)),
    CHECK ((status = 'pending') = (answered_at IS NULL))
);

CREATE INDEX challenges_pending ON challenges (expires_at) WHERE status = 'pending';
CREATE INDEX challenges_by ON challenges (challenger_id, status, created_at);
"""

#: Analyses of finished matches (the coach), one per match, by analyser version.
_V_ANALYSES = """
CREATE TABLE analyses (
    match_id    INTEGER PRIMARY KEY REFERENCES matches (id),
    version     INTEGER NOT NULL,
    data        TEXT    NOT NULL CHECK (json_valid(data)),
    created_at  REAL    NOT NULL
);
"""

#: Every rating a rated finish wrote, for charts over time. Ratings written before this
#: migration have no history: a player's chart starts at their next rated game.
_V_RATING_HISTORY = """
CREATE TABLE rating_history (
    player_id  INTEGER NOT NULL REFERENCES players (id),
    game       TEXT    NOT NULL,
    match_id   INTEGER NOT NULL REFERENCES matches (id),
    mu         REAL    NOT NULL,
    sigma      REAL    NOT NULL CHECK (sigma > 0),
    games      INTEGER NOT NULL,
    at         REAL    NOT NULL,
    PRIMARY KEY (player_id, game, match_id)
);
"""

#: Leases on work that only one of several bot processes may do at a time (learning from
#: matches and training: `db/leases.py`). Runtime state: a migration copy leaves them out.
_V_LEASES = """
CREATE TABLE leases (
    name        TEXT    PRIMARY KEY,
    holder      TEXT    NOT NULL,
    expires_at  REAL    NOT NULL
);
"""

#: What each person prefers (today: how a board is shown to them, `emoji` or `image`), one row
#: per player; a player without one has the defaults. The values are checked in Python.
_V_MEMBER_PREFS = """
CREATE TABLE member_prefs (
    player_id   INTEGER PRIMARY KEY REFERENCES players (id),
    board       TEXT    NOT NULL CHECK (board <> ''),
    updated_at  REAL    NOT NULL
);
"""

#: Each server's settings live in `guild_settings` (one JSON object, the keys set; version 1);
#: who changed them last, and every change with who made it. The keys and their values are
#: checked in Python.
_V_SETTINGS_LOG = """
ALTER TABLE guild_settings ADD COLUMN updated_by INTEGER REFERENCES players (id);

CREATE TABLE settings_log (
    id          INTEGER PRIMARY KEY,
    guild_id    INTEGER NOT NULL,
    player_id   INTEGER NOT NULL REFERENCES players (id),
    changes     TEXT    NOT NULL CHECK (json_valid(changes)),
    created_at  REAL    NOT NULL
);

CREATE INDEX settings_log_guild ON settings_log (guild_id, id);
"""

#: Puzzles: each player's first answer to each puzzle (later ones are not kept), their puzzle
#: rating and streaks per game, each puzzle's own rating, the queue of positions from their
#: own analysed matches, and the days each server's announcement channel showed a daily
#: puzzle. Puzzle ids are text (the shipped pool's, or a position of a match).
_V_PUZZLES = """
CREATE TABLE puzzle_attempts (
    player_id   INTEGER NOT NULL REFERENCES players (id),
    puzzle_id   TEXT    NOT NULL CHECK (puzzle_id <> ''),
    game        TEXT    NOT NULL CHECK (game <> ''),
    move        TEXT    NOT NULL CHECK (move <> ''),
    solved      INTEGER NOT NULL CHECK (solved IN (0, 1)),
    rated       INTEGER NOT NULL CHECK (rated IN (0, 1)),
    daily       TEXT,
    created_at  REAL    NOT NULL,
    PRIMARY KEY (player_id, puzzle_id)
);

CREATE INDEX puzzle_attempts_game ON puzzle_attempts (player_id, game);

CREATE TABLE puzzle_scores (
    player_id     INTEGER NOT NULL REFERENCES players (id),
    game          TEXT    NOT NULL CHECK (game <> ''),
    mu            REAL    NOT NULL,
    sigma         REAL    NOT NULL CHECK (sigma > 0),
    attempts      INTEGER NOT NULL CHECK (attempts >= 0),
    solved        INTEGER NOT NULL CHECK (solved >= 0),
    streak        INTEGER NOT NULL CHECK (streak >= 0),
    best_streak   INTEGER NOT NULL CHECK (best_streak >= 0),
    daily_streak  INTEGER NOT NULL CHECK (daily_streak >= 0),
    best_daily    INTEGER NOT NULL CHECK (best_daily >= 0),
    last_daily    TEXT,
    updated_at    REAL    NOT NULL,
    PRIMARY KEY (player_id, game)
);

CREATE TABLE puzzle_ratings (
    puzzle_id   TEXT    PRIMARY KEY CHECK (puzzle_id <> ''),
    game        TEXT    NOT NULL CHECK (game <> ''),
    mu          REAL    NOT NULL,
    sigma       REAL    NOT NULL CHECK (sigma > 0),
    attempts    INTEGER NOT NULL CHECK (attempts >= 0),
    solved      INTEGER NOT NULL CHECK (solved >= 0),
    updated_at  REAL    NOT NULL
);

CREATE TABLE puzzle_queue (
    player_id   INTEGER NOT NULL REFERENCES players (id),
    item        TEXT    NOT NULL CHECK (item <> ''),
    game        TEXT    NOT NULL CHECK (game <> ''),
    match_id    INTEGER NOT NULL REFERENCES matches (id),
    ply         INTEGER NOT NULL CHECK (ply >= 0),
    added_at    REAL    NOT NULL,
    served_at   REAL,
    PRIMARY KEY (player_id, item)
);

CREATE INDEX puzzle_queue_waiting ON puzzle_queue (player_id, game, added_at)
    WHERE served_at IS NULL;

CREATE TABLE puzzle_posts (
    guild_id   INTEGER NOT NULL,
    game       TEXT    NOT NULL CHECK (game <> ''),
    day        TEXT    NOT NULL CHECK (day <> ''),
    posted_at  REAL    NOT NULL,
    PRIMARY KEY (guild_id, game, day)
);
"""

#: Tournaments (`/tournament`): each one's game, format, clock and round; its entrants (people,
#: and agents entered by name), the order they joined (their seed) and when one left; and
#: every game of every round, with the match that plays it (None until it starts, and for a
#: bye or a game forfeited by one who left) and its outcome for the tournament. Formats,
#: games and outcomes are checked in Python.
_V_TOURNAMENTS = """
CREATE TABLE tournaments (
    id            INTEGER PRIMARY KEY,
    guild_id      INTEGER,
    channel_id    INTEGER,
    message_id    INTEGER,
    game          TEXT    NOT NULL CHECK (game <> ''),
    format        TEXT    NOT NULL CHECK (format <> ''),
    rounds        INTEGER CHECK (rounds IS NULL OR rounds > 0),
    turn_seconds  REAL    CHECK (turn_seconds IS NULL OR turn_seconds > 0),
    starts_at     REAL,
    status        TEXT    NOT NULL DEFAULT 'open'
                          CHECK (status IN ('open', 'running', 'finished', 'cancelled')),
    round         INTEGER NOT NULL DEFAULT 0 CHECK (round >= 0),
    creator_id    INTEGER NOT NULL REFERENCES players (id),
    winner_id     INTEGER REFERENCES players (id),
    created_at    REAL    NOT NULL,
    updated_at    REAL    NOT NULL,
    finished_at   REAL,
    announced_at  REAL,
    CHECK ((status IN ('open', 'running')) = (finished_at IS NULL))
);

CREATE INDEX tournaments_active ON tournaments (guild_id, status);

CREATE TABLE tournament_entrants (
    tournament_id  INTEGER NOT NULL REFERENCES tournaments (id),
    player_id      INTEGER NOT NULL REFERENCES players (id),
    seed           INTEGER NOT NULL CHECK (seed >= 0),
    opponent       TEXT    CHECK (opponent IS NULL OR opponent <> ''),
    joined_at      REAL    NOT NULL,
    left_at        REAL,
    PRIMARY KEY (tournament_id, player_id),
    UNIQUE (tournament_id, seed)
);

CREATE TABLE tournament_games (
    tournament_id  INTEGER NOT NULL REFERENCES tournaments (id),
    round          INTEGER NOT NULL CHECK (round > 0),
    board          INTEGER NOT NULL CHECK (board >= 0),
    first_id       INTEGER NOT NULL REFERENCES players (id),
    second_id      INTEGER REFERENCES players (id),
    match_id       INTEGER UNIQUE REFERENCES matches (id),
    outcome        TEXT    CHECK (outcome IS NULL OR outcome <> ''),
    PRIMARY KEY (tournament_id, round, board)
);
"""

#: (version, sql) in ascending order, starting at 1, without gaps.
MIGRATIONS: list[tuple[int, str]] = [
    (1, _V1),
    (2, _V2),
    (3, _V3),
    (4, _V4),
    (5, _V_ANALYSES),
    (6, _V_RATING_HISTORY),
    (7, _V_LEASES),
    (8, _V_MEMBER_PREFS),
    (9, _V_SETTINGS_LOG),
    (10, _V_TOURNAMENTS),
    (11, _V_PUZZLES),
]

LATEST_VERSION: int = MIGRATIONS[-1][0]


def split_statements(script: str) -> list[str]:
    """Split a SQL script into single statements.

    Uses ``sqlite3.complete_statement`` so semicolons inside string literals
    and ``CREATE TRIGGER ... BEGIN ...; END`` bodies are handled correctly.
    """
    statements: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            stmt = buf.strip()
            if _strip_comments(stmt) != ";":
                statements.append(stmt)
            buf = ""
    rest = _strip_comments(buf[:-1])  # drop the ';' appended after the last piece
    if rest:
        raise ValueError(f"incomplete SQL statement at end of script: {rest[:80]!r}")
    return statements


def _strip_comments(sql: str) -> str:
    lines = (line.split("--", 1)[0] for line in sql.splitlines())
    return "\n".join(line for line in lines if line.strip()).strip()


def check_sequence(migrations: Sequence[tuple[int, str]]) -> None:
    versions = [v for v, _ in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migrations must be numbered 1..N without gaps, got {versions}")


check_sequence(MIGRATIONS)


async def user_version(conn: aiosqlite.Connection) -> int:
    rows = list(await conn.execute_fetchall("PRAGMA user_version"))
    return int(rows[0][0])


async def apply_migrations(
    conn: aiosqlite.Connection,
    path: str,
    migrations: Sequence[tuple[int, str]] = MIGRATIONS,
) -> int:
    """Bring the database to the latest version; return that version.

    ``conn`` must be in autocommit mode (``isolation_level=None``).  Each
    migration re-reads ``user_version`` inside its own ``BEGIN IMMEDIATE``, so
    two processes opening the same fresh file cannot both apply it.
    """
    check_sequence(migrations)
    known = migrations[-1][0] if migrations else 0
    current = await user_version(conn)
    if current > known:
        raise SchemaTooNewError(path, current, known)
    for version, sql in migrations:
        if version <= current:
            continue
        try:
            await conn.execute("BEGIN IMMEDIATE")  # inside the try: see Connection._write
            current = await user_version(conn)
            if current > known:
                raise SchemaTooNewError(path, current, known)
            if version <= current:  # another process got there first
                await conn.execute("COMMIT")
                continue
            for stmt in split_statements(sql):
                await conn.execute(stmt)
            # PRAGMA does not take parameters; version is an int from our own list.
            await conn.execute(f"PRAGMA user_version = {int(version)}")
            await conn.execute("COMMIT")
        except BaseException as exc:
            await rollback_quietly(conn)
            if isinstance(exc, sqlite3.Error):
                raise MigrationError(
                    f"migration {version} of {path!r} failed and was rolled back: {exc}"
                ) from exc
            raise
        current = version
    return current


async def rollback_quietly(conn: aiosqlite.Connection) -> None:
    """ROLLBACK, tolerating "no transaction is active".

    SQLite may already have rolled back by itself (e.g. on SQLITE_FULL), or a
    COMMIT that was interrupted by cancellation may have completed.
    """
    with contextlib.suppress(sqlite3.OperationalError):
        await conn.execute("ROLLBACK")
