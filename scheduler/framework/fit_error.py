"""Why a pod did not fit: Diagnosis, FitError and the FailedScheduling message built from them.

The message format is user-visible (events, the PodScheduled condition, `simulate` output), so it
follows upstream's ``FitError.Error`` byte for byte: reasons are counted across nodes and the
"<count> <reason>" strings are sorted as whole strings, so "10 ..." sorts before "2 ...".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import CODE_PENDING, CODE_UNRESOLVABLE, Status
from scheduler.model.pod import Pod

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
# Event notes are limited to this many bytes (k8s validation.NoteLengthLimit).
NOTE_LENGTH_LIMIT = 1024


_new = object.__new__


def new_default_node_to_status() -> NodeToStatus:
    """Absent nodes default to a reasonless UnschedulableAndUnresolvable (NewDefaultNodeToStatus). Filled slot
    by slot, as ``new_diagnosis``: every scheduling cycle builds one."""
    absent = _new(Status)
    absent.code, absent.reasons, absent.plugin, absent.error = CODE_UNRESOLVABLE, [], "", None
    statuses = _new(NodeToStatus)
    statuses.statuses, statuses.absent = {}, absent
    return statuses


@dataclass(slots=True)
class Diagnosis:
    """Per-node verdicts and the plugins that rejected, kept for the message, the queue and `explain`."""

    node_to_status: NodeToStatus = field(default_factory=new_default_node_to_status)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    # Rejected nodes of a walk that found the pod a node, counted but not put in node_to_status (nothing reads
    # their statuses then; SchedulingAlgorithm.list_rejections_on_success).
    unlisted_rejections: int = 0

    def add_plugin_status(self, status: Status) -> None:
        """Remember the status' plugin as a rejector (requeue hints) or as pending (no backoff)."""
        if not status.plugin:
            return
        if status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)
        if status.code == CODE_PENDING:
            self.pending_plugins.add(status.plugin)


def new_diagnosis() -> Diagnosis:
    """``Diagnosis()`` filled slot by slot: every scheduling cycle starts one, and the dataclass __init__ with its
    default factories cost twice as much (tests/framework/test_fit_error.py checks that every field is set)."""
    d = _new(Diagnosis)
    d.node_to_status = new_default_node_to_status()
    d.unschedulable_plugins, d.pending_plugins = set(), set()
    d.pre_filter_msg = d.post_filter_msg = ""
    d.unlisted_rejections = 0
    return d


class FitError(Exception):
    """No node fits the pod. ``str()`` is the FailedScheduling message, recomputed on each call so a
    PostFilter message set after construction is included."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        return self.message()

    def message(self) -> str:
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        d = self.diagnosis
        if d.pre_filter_msg:
            # PreFilter rejected: every node carries the same status, so listing them would repeat it.
            msg += f" {d.pre_filter_msg}."
        else:
            histogram = reason_histogram(d.node_to_status, self.num_all_nodes)
            if histogram:
                msg += " " + ", ".join(histogram) + "."
        if d.post_filter_msg:
            msg += f" {d.post_filter_msg}"
        return msg


def reason_histogram(statuses: NodeToStatus, num_all_nodes: int) -> list[str]:
    """Sorted "<count> <reason>" strings over explicit nodes plus the absent nodes' default status."""
    counts: dict[str, int] = {}
    for status in statuses.statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent_count = num_all_nodes - len(statuses.statuses)
    if absent_count > 0 and statuses.absent is not None:
        for reason in statuses.absent.reasons:
            counts[reason] = counts.get(reason, 0) + absent_count
    return sorted(f"{n} {reason}" for reason, n in counts.items())


class NoNodesAvailableError(Exception):
    """The snapshot has no nodes (upstream ErrNoNodesAvailable); treated as UnschedulableAndUnresolvable."""

    def __init__(self) -> None:
        super().__init__(NO_NODES_AVAILABLE)


class FrameworkError(Exception):
    """A plugin returned Error (or an unexpected code): the cycle aborts as a SchedulerError."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def fit_error_for_node(pod: Pod, node_name: str, status: Status) -> FitError:
    """Reserve/Permit rejections are reported as a FitError over one node (NumAllNodes = 1)."""
    diagnosis = Diagnosis()
    diagnosis.node_to_status.statuses[node_name] = status
    diagnosis.add_plugin_status(status)
    return FitError(pod, 1, diagnosis)


def truncate_message(message: str) -> str:
    """Cut an event note to NOTE_LENGTH_LIMIT bytes ending in " ...".

    Upstream cuts the Go string at a byte offset; a multi-byte character split there is dropped
    here instead, because a Python str cannot hold half a character.
    """
    raw = message.encode()
    if len(raw) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return raw[: NOTE_LENGTH_LIMIT - len(suffix)].decode(errors="ignore") + suffix
