"""`make chaos`: py-scheduler under faults on the local control plane (see harness.py, __main__.py)."""
