"""What the bot survives: the chaos run (kills, faults, corrupt rows) and the fuzz run (hostile
members), and the task stacks a long run prints on SIGUSR1."""
