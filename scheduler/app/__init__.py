"""The command line and process set-up: the subcommands, `run`'s wiring, configuration reload, logging,
plugin modules, the API writer child and process tuning (GC policy, malloc arenas, thread names)."""
