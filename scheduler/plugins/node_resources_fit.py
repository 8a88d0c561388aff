"""NodeResourcesFit (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/noderesources/fit.go`` and its scorers;
extended resources backed by a DeviceClass, which v1.37 leaves to DynamicResources, are not told apart:
docs/kube-scheduler-v1.37.md 7d).

Filter compares the pod's real request (``resourcehelper.PodRequests``: containers plus sidecars vs. the
largest init need, plus overhead) with ``Allocatable - Requested`` of the node and lists every shortage;
the code is UnschedulableAndUnresolvable when one request exceeds the node's whole allocatable
(preemption cannot help), else Unschedulable. Score uses the strategy from ``scoringStrategy``:
LeastAllocated (default), MostAllocated or RequestedToCapacityRatio, on non-zero requests (100m / 200Mi
per container without a request) for cpu and memory and real requests for the rest. In a pod group's cycle
(TopologyAwareWorkloadScheduling) ScorePlacement scores a candidate placement as MostAllocated over its nodes taken
together, the group's proposed members included.

The resource-allocation scorer below is shared with NodeResourcesBalancedAllocation, as upstream's
``pkg/scheduler/framework/plugins/noderesources/resource_allocation.go`` is shared by both plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, PreFilterResult
from scheduler.framework.podgroup import PodGroupAssignments, PodGroupInfo
from scheduler.framework.status import Code, Status, error, unresolvable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY
from scheduler.model.resources import (
    Resource,
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_request_list,
    request_amount,
    scoring_request_list,
)
from scheduler.plugins.helper.dynamicresources.manager import MANAGER_KEY, DraManager
from scheduler.plugins.helper.generation_memo import LIMIT, GenerationMemo
from scheduler.plugins.helper.gomath import go_div, go_round
from scheduler.plugins.helper.shape_score import build_broken_linear_function

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
_FIT_STATE = NAME + ".FitState"

MAX_UTILIZATION = 100


def _amount(r: Resource, name: str) -> int:
    """Amount of `name` in a request; unlike Resource.get, 'pods' is not a requestable resource."""
    if name == CPU:
        return r.milli_cpu
    if name == MEMORY:
        return r.memory
    if name == EPHEMERAL_STORAGE:
        return r.ephemeral_storage
    return r.scalar.get(name, 0)


# --- filtering ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """One shortage on a node; `unresolvable` when the request exceeds the node's whole allocatable."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def fit_request(pod: Pod) -> Resource:
    """computePodResourceRequest: the spec's requests (pod-level ones included, status resources not: the
    pod is not running yet) as framework.Resource.SetMaxResource keeps them (scalar names only, no pods)."""
    cached = pod.resource_memo.get(NAME)
    if cached is None:
        rl = pod_request_list(pod.raw.get("spec") or {}, {}, f"pod {pod.key}")
        r = Resource.from_quantities(rl)
        r.allowed_pod_number = 0
        cached = pod.resource_memo[NAME] = r
    return cached


def _requests_nothing(req: Resource) -> bool:
    return not (req.milli_cpu or req.memory or req.ephemeral_storage or req.scalar)


def _ignored(name: str, ignored: frozenset[str], groups: frozenset[str]) -> bool:
    if not is_extended_resource_name(name):
        return False
    return name in ignored or (bool(groups) and name.split("/", 1)[0] in groups)


def _delegated(name: str, dra_backed: frozenset[str], allocatable: Resource) -> bool:
    """``shouldDelegateResourceToDRA``: backed by a DeviceClass and not in the node's allocatable."""
    return name in dra_backed and allocatable.scalar.get(name, 0) <= 0


def fits_request(
    req: Resource,
    allocatable: Resource,
    requested: Resource,
    num_pods: int,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
    dra_backed: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """fitsRequest: every shortage, in upstream's order (pods, cpu, memory, ephemeral, scalars).

    Scalars are listed in name order (upstream iterates a Go map, i.e. in random order). A scalar in
    ``dra_backed`` (a DeviceClass backs it) that the node does not offer is left to DynamicResources
    (``shouldDelegateResourceToDRA``)."""
    out: list[InsufficientResource] = []
    if num_pods + 1 > allocatable.allowed_pod_number:
        out.append(InsufficientResource("pods", "Too many pods", 1, num_pods, allocatable.allowed_pod_number))
    if _requests_nothing(req):
        return out
    # _amount of each fixed resource, read directly: preemption's dry runs reach here for most nodes they try.
    for name, want, cap, used in (
        (CPU, req.milli_cpu, allocatable.milli_cpu, requested.milli_cpu),
        (MEMORY, req.memory, allocatable.memory, requested.memory),
        (EPHEMERAL_STORAGE, req.ephemeral_storage, allocatable.ephemeral_storage, requested.ephemeral_storage),
    ):
        if want > 0 and want > cap - used:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, used, cap, want > cap))
    for name in sorted(req.scalar):
        want = req.scalar[name]
        if want == 0 or _ignored(name, ignored, ignored_groups) or _delegated(name, dra_backed, allocatable):
            continue
        cap, used = allocatable.scalar.get(name, 0), requested.scalar.get(name, 0)
        if want > cap - used:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, used, cap, want > cap))
    return out


def status_for(insufficient: Sequence[InsufficientResource]) -> Status | None:
    """All reasons in one status; unresolvable as soon as one request exceeds the node's size."""
    if not insufficient:
        return None
    code = Code.UNSCHEDULABLE
    if any(r.unresolvable for r in insufficient):
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return Status(code, [r.reason for r in insufficient])


@dataclass(frozen=True, slots=True)
class FitState:
    """PreFilter state: the request plus what Filter checks, precomputed once per cycle.

    `cpu`, `memory` and `ephemeral` are the positive requests (0 = not checked); `scalars` the non-zero,
    non-ignored scalar requests in name order; `nothing` mirrors the early return of fitsRequest."""

    request: Resource
    cpu: int
    memory: int
    ephemeral: int
    scalars: tuple[tuple[str, int], ...]
    nothing: bool
    dra_backed: frozenset[str] = frozenset()
    # What Filter checks, as one hashable value: the key of the generations that passed it (filter_for),
    # built once here rather than as a fresh tuple each cycle.
    checks: tuple[Any, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", (self.cpu, self.memory, self.ephemeral, self.scalars, self.nothing,
                                            self.dra_backed))

    def has_room(self, node_info: NodeInfo) -> bool:
        """fits_request finds no shortage: the node has a pod slot and room for every checked request."""
        alloc = node_info.allocatable
        if len(node_info.pods) >= alloc.allowed_pod_number:
            return False
        if self.nothing:
            return True
        used = node_info.requested
        cpu, mem, eph = self.cpu, self.memory, self.ephemeral
        return (
            (not cpu or cpu <= alloc.milli_cpu - used.milli_cpu)
            and (not mem or mem <= alloc.memory - used.memory)
            and (not eph or eph <= alloc.ephemeral_storage - used.ephemeral_storage)
            and (not self.scalars or all(want <= alloc.scalar.get(name, 0) - used.scalar.get(name, 0)
                                         or _delegated(name, self.dra_backed, alloc)
                                         for name, want in self.scalars))
        )

    @classmethod
    def build(cls, req: Resource, ignored: frozenset[str], ignored_groups: frozenset[str],
              dra_backed: frozenset[str] = frozenset()) -> FitState:
        scalars = tuple(
            (name, req.scalar[name])
            for name in sorted(req.scalar)
            if req.scalar[name] != 0 and not _ignored(name, ignored, ignored_groups)
        )
        return cls(
            req,
            max(req.milli_cpu, 0),
            max(req.memory, 0),
            max(req.ephemeral_storage, 0),
            scalars,
            _requests_nothing(req),
            dra_backed,
        )


# --- scoring -----------------------------------------------------------------------------------


ScorerFn = Callable[[list[int], list[int], list[int]], int]
_Plan = list[tuple[int, int, str, int]]  # ResourceAllocationScorer._plan: (index, source, name, pod request)


def request_memo_key(resources: Sequence[ResourceSpec], use_requested: bool) -> Hashable:
    """The key ``pod_resource_requests`` remembers a pod's amounts under: the resources' names (the amounts do
    not depend on the weights), built once by a caller that asks every cycle (hashing the ResourceSpec
    dataclasses took two Python ``__hash__`` calls a lookup)."""
    return (NAME, use_requested, tuple([spec.name for spec in resources]))


def pod_resource_requests(
    pod: Pod, resources: Sequence[ResourceSpec], use_requested: bool, key: Hashable = None
) -> tuple[int, ...]:
    """calculatePodResourceRequestList: the pod's request per configured resource, in args order.

    Unless `use_requested` (NodeResourcesFit), every container lacking a cpu or memory request counts
    100m / 200Mi and pod-level requests are not read (upstream's Fit scorer lacks that feature flag);
    any resource name is read from the request list, cpu in millicores. Remembered with the pod's
    resource fields (shared by the pods of a template); ``key``: ``request_memo_key``'s, if the caller has it."""
    if key is None:
        key = request_memo_key(resources, use_requested)
    amounts: tuple[int, ...] | None = pod.resource_memo.get(key)
    if amounts is None:
        rl = scoring_request_list(pod.raw.get("spec") or {}, pod.raw.get("status") or {}, f"pod {pod.key}",
                                  use_requested)
        amounts = pod.resource_memo[key] = tuple(request_amount(rl, spec.name) for spec in resources)
    return amounts


_NONE_BACKED: frozenset[str] = frozenset()
# Up to this many nodes, the resource scorers skip their generation memo (see score_nodes).
_FEW_NODES = 8


@dataclass(frozen=True, slots=True)
class ResourceAllocationScorer:
    """resourceAllocationScorer: gathers (requested, allocated, allocatable) per resource and applies `fn`,
    the strategy's formula (the only place it is written). `allocated` is the node's use before the pod,
    read only by BalancedAllocation (v1.37 scores the change in balance)."""

    resources: tuple[ResourceSpec, ...]
    use_requested: bool
    fn: ScorerFn
    memo: GenerationMemo[int] = field(default_factory=GenerationMemo, compare=False, repr=False)
    # pod requests -> (their _plan, and for cpu and memory alone: (node's allocatable cpu, used cpu,
    # allocatable memory, used memory) -> score)
    by_request: dict[tuple[int, ...], tuple[_Plan, dict[tuple[int, int, int, int], int] | None]] = field(
        default_factory=dict, compare=False, repr=False)

    def score(self, node_info: NodeInfo, pod_requests: Sequence[int]) -> int:
        return self.compute_nodes([node_info], pod_requests)[0]

    def _plan(self, pod_requests: Sequence[int]) -> list[tuple[int, int, str, int]]:
        """calculateResourceAllocatableRequest hoisted out of the node loop: per counted resource (index,
        source, name, pod request). Resources that can never count (a scalar the pod does not request) are
        left out, which equals allocatable 0 for every formula. Sources: 0 cpu, 1 memory, 2 ephemeral-storage,
        3 a scalar read from allocatable.scalar."""
        out = []
        for i, spec in enumerate(self.resources):
            name, pr = spec.name, pod_requests[i]
            if name == CPU:
                src = 0
            elif name == MEMORY:
                src = 1
            elif name == EPHEMERAL_STORAGE:
                src = 2
            elif pr == 0 and is_scalar_resource_name(name):
                continue
            else:
                src = 3
            out.append((i, src, name, pr))
        return out

    def score_nodes(self, nodes: Sequence[NodeInfo], pod_requests: Sequence[int]) -> list[int]:
        """``[self.score(n, pod_requests) for n in nodes]``, from the memo for nodes unchanged since a pod
        with the same requests was scored: the score depends only on them and the node's resources."""
        reqs = tuple(pod_requests)
        if len(nodes) <= _FEW_NODES:
            # A batched cycle scores only the nodes changed since the previous pod: their generations are new,
            # so the generation memo would miss on each; the amounts' memo of compute_nodes answers them.
            return self.compute_nodes(nodes, reqs)
        return self.memo.values(reqs, nodes, lambda todo: self.compute_nodes(todo, reqs))

    def compute_nodes(self, nodes: Sequence[NodeInfo], pod_requests: Sequence[int]) -> list[int]:
        """The score of each node: (requested, allocated, allocatable) per resource, allocatable 0 where the
        node has none (the formulas skip those). Allocated is the node's non-zero or real requests for cpu and
        memory, the real ones for the rest; requested is allocated plus the pod's request.

        For cpu and memory alone (the default resources) the score is remembered by the node's four amounts
        it reads: the nodes the watch changed since the previous pod (its confirmation, its Running update)
        mostly hold amounts some node already had, so their scores need no formula."""
        reqs = tuple(pod_requests)
        entry = self.by_request.get(reqs)
        if entry is None:
            if len(self.by_request) >= 4:
                self.by_request.clear()
            plan = self._plan(reqs)
            entry = self.by_request[reqs] = (plan, {} if [src for _, src, _, _ in plan] == [0, 1] else None)
        plan, known = entry
        if known is None:
            return [self._compute(ni, plan) for ni in nodes]
        if len(known) > LIMIT:
            known.clear()
        use_requested = self.use_requested
        out: list[int] = []
        append = out.append
        for ni in nodes:
            alloc = ni.allocatable
            used = ni.requested if use_requested else ni.non_zero_requested
            key = (alloc.milli_cpu, used.milli_cpu, alloc.memory, used.memory)
            score = known.get(key)
            if score is None:
                score = known[key] = self._compute(ni, plan)
            append(score)
        return out

    def _compute(self, ni: NodeInfo, plan: list[tuple[int, int, str, int]]) -> int:
        """The formula on one node (``_plan``'s resources)."""
        return self.fn(*self._amounts(ni, plan))

    def _amounts(self, ni: NodeInfo, plan: _Plan) -> tuple[list[int], list[int], list[int]]:
        """calculateNodeAllocatableRequest: (requested, allocated, allocatable) per resource of one node."""
        n = len(self.resources)
        alloc = ni.allocatable
        used = ni.requested if self.use_requested else ni.non_zero_requested
        requested = [0] * n
        allocated = [0] * n
        allocatable = [0] * n
        for i, src, name, pr in plan:
            if src == 0:
                a, u = alloc.milli_cpu, used.milli_cpu
            elif src == 1:
                a, u = alloc.memory, used.memory
            elif src == 2:
                a, u = alloc.ephemeral_storage, ni.requested.ephemeral_storage
            else:
                a, u = alloc.scalar.get(name, 0), ni.requested.scalar.get(name, 0)
            if a:
                allocatable[i] = a
                allocated[i] = u
                requested[i] = u + pr
        return requested, allocated, allocatable

    def score_placement(self, nodes: Sequence[NodeInfo], pods: Sequence[Pod]) -> int:
        """scorePlacement: the formula once over a placement, its nodes summed as one: requested is the pods'
        requests plus every node's allocated, allocated and allocatable the nodes' sums. A node counts a
        resource only where it has some allocatable, and a scalar resource none of the pods requests not at all
        (as in a node's score)."""
        n = len(self.resources)
        use_requested = self.use_requested
        key = request_memo_key(self.resources, use_requested)
        requested = [0] * n
        for pod in pods:
            for i, amount in enumerate(pod_resource_requests(pod, self.resources, use_requested, key)):
                requested[i] += amount
        allocated = [0] * n
        allocatable = [0] * n
        plan = self._plan(requested)
        for ni in nodes:
            _, node_allocated, node_allocatable = self._amounts(ni, plan)
            for i in range(n):
                allocatable[i] += node_allocatable[i]
                allocated[i] += node_allocated[i]
                requested[i] += node_allocated[i]
        return self.fn(requested, allocated, allocatable)


def _weighted(resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int]) -> ScorerFn:
    """Σ s_r·w_r / Σ w_r over resources with allocatable > 0 (integer division)."""

    def fn(requested: list[int], _allocated: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            node_score += per_resource(requested[i], alloc) * resources[i].weight
            weight_sum += resources[i].weight
        return go_div(node_score, weight_sum) if weight_sum else 0

    return fn


def least_requested_score(requested: int, capacity: int) -> int:
    """Free share of the resource on 0..100; an over-committed resource scores 0."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)


def most_requested_score(requested: int, capacity: int) -> int:
    """`requested` may exceed capacity because of the non-zero defaults: it is capped, not zeroed."""
    if capacity == 0:
        return 0
    return go_div(min(requested, capacity) * MAX_NODE_SCORE, capacity)


def requested_to_capacity_ratio_fn(
    resources: Sequence[ResourceSpec], shape: Sequence[UtilizationShapePoint]
) -> ScorerFn:
    """Shape scores x10; utilization = req·100/alloc (100 when over); only resources scoring > 0
    count; the weighted mean is rounded half away from zero."""
    raw = build_broken_linear_function(
        [(p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape]
    )

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(go_div(requested * MAX_UTILIZATION, capacity))

    def fn(requested: list[int], _allocated: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            s = resource_score(requested[i], alloc)
            if s > 0:
                node_score += s * resources[i].weight
                weight_sum += resources[i].weight
        return go_round(node_score / weight_sum) if weight_sum else 0

    return fn


def _build_scorer(strategy: ScoringStrategy) -> ResourceAllocationScorer:
    resources = strategy.resources
    if strategy.type == MOST_ALLOCATED:
        fn = _weighted(resources, most_requested_score)
    elif strategy.type == REQUESTED_TO_CAPACITY_RATIO and strategy.requested_to_capacity_ratio is not None:
        fn = requested_to_capacity_ratio_fn(resources, strategy.requested_to_capacity_ratio.shape)
    else:
        fn = _weighted(resources, least_requested_score)
    return ResourceAllocationScorer(resources, use_requested=False, fn=fn)


# --- the plugin -----------------------------------------------------------------------------------


def _is_resource_error(pod: Pod) -> bool:
    """A parse error this plugin must report (tolerations errors belong to TaintToleration)."""
    err = pod.parse_error
    return err is not None and not err.field.startswith("spec.tolerations")


class NodeResourcesFit:
    """Checks that the node has room for the pod's requests and scores by the configured strategy; in a pod
    group's cycle (v1.37) also a PlacementScore plugin, scoring a placement by MostAllocated."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: verdicts and scores depend on the pod template and the one node only; not when a
        request is backed by a DeviceClass (upstream: "signature disabled when dra extended resources
        are used in the cluster")."""
        return None if self._dra_backed(fit_request(pod)) else ()

    def _dra_backed(self, req: Resource) -> frozenset[str]:
        """The pod's scalar requests that a DeviceClass backs (DRAExtendedResource, GA in v1.37)."""
        if not req.scalar:  # most pods: cpu and memory alone (signing and PreFilter both ask)
            return _NONE_BACKED
        find = self.dra.class_for_resource
        return frozenset(n for n, v in req.scalar.items() if v and find(n) is not None)

    def __init__(self, args: NodeResourcesFitArgs | Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        a = plugin_args(NodeResourcesFitArgs, args)
        self.ignored_resources = frozenset(a.ignored_resources)
        self.ignored_resource_groups = frozenset(a.ignored_resource_groups)
        self.scorer = _build_scorer(a.scoring_strategy)
        self.resources = self.scorer.resources
        self._request_key = request_memo_key(self.resources, False)
        # Upstream builds it only with TopologyAwareWorkloadScheduling on, which alone calls ScorePlacement: always
        # MostAllocated over the configured resources (a placement that packs the group scores higher), without
        # the feature flags the node scorer gets (none changes what this one reads here).
        self.placement_scorer = _build_scorer(ScoringStrategy(MOST_ALLOCATED, a.scoring_strategy.resources))
        self._fits: GenerationMemo[bool] = GenerationMemo()
        # The DRA manager's DeviceClass index tells which extended resources DynamicResources allocates.
        self.dra: DraManager = handle.shared_plugin_state(MANAGER_KEY, DraManager)

    # PlacementScore (a pod group's cycle)

    def score_placement(self, state: CycleState, pod_group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status | None]:
        """ScorePlacement: the placement's nodes (every node when it has none) with the members it places."""
        placement = assignments.placement
        nodes = placement.nodes if placement is not None else self.handle.snapshot().list()
        pods = [a.pod for a in assignments.proposed_assignments]
        return self.placement_scorer.score_placement(nodes, pods), None

    # PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Record the pod's request; a pod whose quantities do not parse fits nowhere (and says why)."""
        if _is_resource_error(pod):
            return None, unresolvable(str(pod.parse_error))
        req = fit_request(pod)
        dra_backed = self._dra_backed(req)
        # Shared by the pods with these resource fields (the memo is), under this configuration.
        key = (_FIT_STATE, self.ignored_resources, self.ignored_resource_groups, dra_backed)
        fit_state = pod.resource_memo.get(key)
        if fit_state is None:
            fit_state = pod.resource_memo[key] = FitState.build(
                req, self.ignored_resources, self.ignored_resource_groups, dra_backed)
        state.write(PRE_FILTER_STATE_KEY, fit_state)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Every shortage of the node for the request PreFilter recorded (real requests)."""
        st = state.get(PRE_FILTER_STATE_KEY)
        if st is None:
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if st.has_room(node_info):
            return None
        # Some check fails: list every shortage, in upstream's order.
        return status_for(
            fits_request(
                st.request,
                node_info.allocatable,
                node_info.requested,
                len(node_info.pods),
                self.ignored_resources,
                self.ignored_resource_groups,
                st.dra_backed,
            )
        )

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None] | None:
        """``filter`` with the PreFilter state read once: nodes with room for the request pass inline, the
        rest go to ``filter`` for the full list of shortages."""
        st = state.get(PRE_FILTER_STATE_KEY)
        if st is None:
            return lambda node_info: self.filter(state, pod, node_info)
        has_room = st.has_room
        slow = self.filter
        # NodeInfo generations that passed this very request, so pods alike skip the arithmetic on nodes
        # unchanged since the last cycle.
        fits = self._fits.table(st.checks, len(self.handle.snapshot().list()))

        def check(node_info: NodeInfo) -> Status | None:
            if node_info.generation in fits:
                return None
            if has_room(node_info):
                fits[node_info.generation] = True
                return None
            return slow(state, pod, node_info)

        return check

    # PreScore / Score

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, pod_resource_requests(pod, self.resources, False, self._request_key))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        reqs = state.get(PRE_SCORE_STATE_KEY)
        if reqs is None:
            reqs = pod_resource_requests(pod, self.resources, use_requested=False)
        return self.scorer.score(node_info, reqs), None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node in one call (same values, in order)."""
        reqs = state.get(PRE_SCORE_STATE_KEY)
        if reqs is None:
            reqs = pod_resource_requests(pod, self.resources, use_requested=False)
        return self.scorer.score_nodes(nodes, reqs), None

    def score_extensions(self) -> None:
        return None

    # queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod deletion or scale-down frees room; a node add or allocatable change may add room."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                self.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_event(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        """Any deleted pod that was bound (or nominated) may free room; a scale-down only if it shrinks
        a resource the pending pod requests (or is the pending pod itself)."""
        if old is None:  # not a deletion nor an update: nothing to judge, so queue
            return QueueingHint.QUEUE
        if new is None:
            unbound = not old.node_name and not old.nominated_node_name
            return QueueingHint.QUEUE_SKIP if unbound else QueueingHint.QUEUE
        return QueueingHint.QUEUE if _scaled_down_for(pod, old, new) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue only if the pod would fit the new node when empty and, for an update, a resource it
        requests (or the pod count) grew."""
        if new is None or _is_resource_error(pod):
            return QueueingHint.QUEUE_SKIP
        req = fit_request(pod)
        if fits_request(req, new.allocatable, Resource(), 0):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if _requested_resources_increased(req, old, new) else QueueingHint.QUEUE_SKIP


def _scaled_down_for(target: Pod, old: Pod, new: Pod) -> bool:
    """isSchedulableAfterPodScaleDown."""
    if new.uid == target.uid:
        return True
    if not new.node_name:
        return False
    before, after = old.requests, new.requests  # PodRequests with status resources, as NodeInfo counts
    want = target.requests
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
        if _amount(want, name) and _amount(before, name) > _amount(after, name):
            return True
    for name, amount in want.scalar.items():
        if amount and is_scalar_resource_name(name) and before.scalar.get(name, 0) > after.scalar.get(name, 0):
            return True
    return False


def _requested_resources_increased(req: Resource, old: Node, new: Node) -> bool:
    """haveAnyRequestedResourcesIncreased."""
    a, b = old.allocatable, new.allocatable
    if b.allowed_pod_number > a.allowed_pod_number:
        return True
    if _requests_nothing(req):
        return False
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
        if _amount(req, name) > 0 and _amount(b, name) > _amount(a, name):
            return True
    return any(q and b.scalar.get(n, 0) > a.scalar.get(n, 0) for n, q in req.scalar.items())
