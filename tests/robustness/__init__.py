"""The bot under faults, chaos, fuzzing and restarts."""
