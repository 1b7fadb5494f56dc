"""The local console front end: the Discord commands typed in a terminal, on the same lobby.

`python bot.py` without a DISCORD_TOKEN runs this (`console.run.run_console`). It reads one
command (or one bare move) per line and prints the same emoji boards and status words as the
Discord embeds. Agent moves, bot matches and the turn clock keep running while it waits for
input.

In a terminal, lines are read with prompt_toolkit: the arrow keys edit the line and recall
earlier ones, Tab completes commands, options and agent names, and output printed while a line
is being typed goes above it (the typed text stays). Anything else (`python bot.py <
script.txt`) is read line by line: every line is echoed as `> line`, comment lines (`# ...`) are
skipped, and at the end of the input it waits for running bot matches before it exits.

Nobody's clock runs while the console is closed: at the start every person to move gets a full
turn again. Leaving says in one line which matches stay live for the next start.

Every bad input gets one line starting with `error:` and changes nothing.

Modules: `run` (the start, the input loop, leaving), `session` (a session's players, matches
and output), `dispatch` (the `Console`: a line to its command or move), `commands` (the
command table, parsing, help), `handlers` (which function runs each command), `playing`,
`listings`, `retrying`, `puzzling`, `training`, `tournaments` (the commands; `/tournament`
also follows its tournament, said with `tournament_text`), `values` (names, games and ids
read from a line), `render` (matches as text), `lines` and `terminal` (input, and
prompt_toolkit's prompt), `completion` (Tab), `warmup` (the engine's start, said).
"""
