"""py-scheduler: a Kubernetes scheduler in Python that decides as kube-scheduler v1.37 does."""

from __future__ import annotations

from importlib import metadata

# The kube-scheduler release whose decisions, messages and configuration this package follows.
KUBE_SCHEDULER_TARGET = "v1.37.2"


def version() -> str:
    """The installed distribution's version (the source tree's, when run without installing)."""
    try:
        return metadata.version("py-scheduler")
    except metadata.PackageNotFoundError:
        return "0+unknown"
