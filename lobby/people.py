"""Who plays: people and agents as stored players (a small cache of them), an opponent chosen
by name, and the seats of a stored match with the agents that learn from it."""

from __future__ import annotations

from db import errors as dberr
from db.models import Match, Player
from db.store import Store
from engine.agents import opponents, registry
from engine.agents.base import AgentSpec, Budget
from lobby.boundary import boundary
from lobby.errors import BadRequest
from lobby.memory import LearningMemory
from lobby.records import AgentChoice, LobbyConfig, Person, Seat

#: The cache of players is emptied past this size (players come and go).
MAX_CACHED_PLAYERS = 10_000


class People:
    """The players of the lobby: found or created in the store, cached by id."""

    def __init__(self, store: Store, config: LobbyConfig, memory: LearningMemory) -> None:
        self._store = store
        self._config = config
        self._memory = memory  # which agents learn (its cache of learning agents)
        self._players: dict[int, Player] = {}

    @boundary
    async def player_for(self, person: Person) -> Player:
        if person.kind == "user":
            player = await self._store.players.get_or_create_user(int(person.ident), person.name)
        else:
            player = await self._store.players.get_or_create_local(str(person.ident), person.name)
        self._remember(player)
        return player

    async def known(self, person: Person) -> Player | None:
        """The stored player of a person, without creating one (a refused request by someone
        new must leave no row behind)."""
        if person.kind == "user":
            player = await self._store.players.find_user(int(person.ident))
        else:
            player = await self._store.players.find_local(str(person.ident))
        if player is not None:
            self._remember(player)
        return player

    def _remember(self, player: Player) -> None:
        if len(self._players) >= MAX_CACHED_PLAYERS:  # bounded: players come and go
            self._players.clear()
        self._players[player.id] = player

    @boundary
    async def known_user(self, discord_id: int) -> Person:
        """A Discord user as last seen (their stored name), for ids taken from a custom id."""
        player = await self._store.players.find_user(discord_id)
        name = player.display_name if player is not None else f"Player {discord_id}"
        return Person("user", discord_id, name)

    def agent_choice(self, game: str, text: str, raw_ok: bool) -> AgentChoice:
        """An opponent by name from the curated list; a raw agent spec only if `raw_ok` (the
        bot's owner, or the local console), and even then every value is checked and every
        budget bounded by the registry."""
        raw_ok = raw_ok or self._config.raw_specs
        try:
            opp = opponents.opponent(game, text)
        except ValueError as exc:
            if not raw_ok:
                raise BadRequest(str(exc)) from None
        else:
            key = f"{game}:{opp.name}"
            return AgentChoice(opp.spec, opp.budget, opp.level, key, f"Bot ({opp.name})")
        try:
            spec, budget = registry.resolve(text, game)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        label = spec.label()
        return AgentChoice(spec, budget, None, f"{game}:{label}", f"Bot ({label[:57]})")

    def training_pair(
        self, game: str, agent: str, opponent: str | None, raw_ok: bool
    ) -> tuple[AgentChoice, tuple[AgentSpec, Budget] | None]:
        """The learning agent `/train` trains and its opponent (None: itself); BadRequest if
        the agent does not learn (a raw spec is the owner's to choose)."""
        raw_ok = raw_ok or self._config.raw_specs
        learner = self.agent_choice(game, agent, raw_ok)
        if not raw_ok and not opponents.may_learn(game, learner.spec):
            learning = [o.name for o in opponents.opponents(game) if o.learns]
            raise BadRequest(f"{agent.strip()} does not learn: train {' or '.join(learning)}")
        if not opponent:
            return learner, None
        choice = self.agent_choice(game, opponent, raw_ok)
        return learner, (choice.spec, choice.budget)

    async def agent_seat(self, choice: AgentChoice) -> Seat:
        player = await self._store.players.get_or_create_agent(choice.key, choice.name)
        self._remember(player)
        return Seat(player, choice.spec, choice.budget, choice.level)

    async def seats(self, match: Match) -> tuple[Seat, Seat]:
        """The two seats of a stored match (a player or option row that does not decode is a
        corrupt row)."""
        missing = [pid for pid in match.player_ids if pid not in self._players]
        if missing:
            self._players.update(await self._store.players.get_many(missing))
        for i, pid in enumerate(match.player_ids):
            if pid not in self._players:
                raise dberr.CorruptRowError(
                    "matches",
                    f"id={match.id}",
                    f"player{i}_id",
                    f"player {pid} is missing or does not decode",
                )
        raw = match.options.get("seats") or [None, None]
        seats = []
        try:
            for pid, opts in zip(match.player_ids, raw, strict=True):
                player = self._players[pid]
                if opts is None:
                    seats.append(Seat(player))
                    continue
                spec = AgentSpec(str(opts["agent"]), dict(opts.get("params") or {}))
                budget = Budget(**(opts.get("budget") or {}))
                seats.append(Seat(player, spec, budget, opts.get("level")))
        except (KeyError, TypeError, ValueError) as exc:
            raise dberr.CorruptRowError(
                "matches", f"id={match.id}", "options", f"malformed seats {raw!r:.200}"
            ) from exc
        return seats[0], seats[1]

    async def learning_seats(self, match: Match) -> list[tuple[int, AgentSpec]]:
        """The (seat, spec) of the agent seats that may learn from a match (the learning
        asks): the bot's own learning opponents, never settings a member chose."""
        seats = await self.seats(match)
        return [
            (i, s.spec)
            for i, s in enumerate(seats)
            if s.spec is not None and self.may_learn(match.game, s.spec)
        ]

    def may_learn(self, game: str, spec: AgentSpec | None) -> bool:
        if spec is None:
            return False
        if self._config.learn_any:
            return self._memory.learns([spec], game)
        return opponents.may_learn(game, spec)
