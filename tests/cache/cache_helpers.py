"""The cache tests' pod affinity terms (pods and nodes come from scheduler.testing)."""

from __future__ import annotations

TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
