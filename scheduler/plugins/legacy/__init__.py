"""The seed-era (v1.16-v1.22) predicates and priorities, kept reachable by configuration and Policy."""
