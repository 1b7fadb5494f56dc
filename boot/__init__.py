"""What `bot.py` starts with: the settings, the database's claim, the Discord login, and the
`migrate` command. `bot.py` is the composition root; nothing else imports this package."""
