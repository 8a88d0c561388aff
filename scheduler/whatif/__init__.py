"""The what-if commands (`simulate`, `explain`, `capacity`): the real scheduler run against an offline
cluster, with in-memory stand-ins for the API edge."""
