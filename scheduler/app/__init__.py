"""The command line and what only it needs: run wiring, health server, logging set-up, simulate."""
