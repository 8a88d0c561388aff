"""The Extender interface (upstream ``k8s.io/kube-scheduler/framework/extender.go``).

An extender is a service outside the scheduler that can filter and score nodes, bind pods and narrow
preemption candidates. The algorithm (``schedule_one``) and preemption call it through this protocol
only, so the core never imports the HTTP client (``scheduler/extender.py``) that implements it.
Calls that fail raise :class:`ExtenderError`; whether that fails the cycle depends on
``is_ignorable`` and on the verb, as upstream decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from scheduler.framework.extenderv1 import HostPriority, Victims
from scheduler.framework.listers import SharedLister
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod

# The pseudo plugin recorded as a rejector when extenders filtered nodes out (upstream ExtenderName).
EXTENDER_NAME = "Extender"


class ExtenderError(Exception):
    """An extender call failed: transport error, timeout, non-200 answer, undecodable or invalid body,
    or the ``Error`` the extender reported."""


@dataclass(slots=True)
class FilterResult:
    """What a filter call returns: the nodes that passed (a subset of the input, input order of the
    answer) and the rejected ones with their reasons; unresolvable rejections cannot be fixed by
    preemption."""

    nodes: list[NodeInfo]
    failed_nodes: dict[str, str]
    failed_and_unresolvable_nodes: dict[str, str]


class Extender(Protocol):
    """What the scheduler asks of an extender; each ``is_*``/``supports_*`` says whether a verb is set."""

    def name(self) -> str:
        """Identifies the extender in logs and score details (upstream: its urlPrefix)."""
        ...

    def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> FilterResult: ...

    def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[HostPriority], int]:
        """Scores in [0, 10] per host and this extender's weight."""
        ...

    def bind(self, pod: Pod, node_name: str) -> None: ...

    def process_preemption(
        self, pod: Pod, node_name_to_victims: Mapping[str, Victims], nodes: SharedLister
    ) -> dict[str, Victims]:
        """The candidates (node -> victims) this extender accepts, possibly with fewer victims."""
        ...

    def is_binder(self) -> bool: ...
    def is_filter(self) -> bool: ...
    def is_prioritizer(self) -> bool: ...
    def supports_preemption(self) -> bool: ...
    def is_ignorable(self) -> bool: ...

    def is_interested(self, pod: Pod) -> bool:
        """False when the extender manages resources and the pod requests none of them."""
        ...
