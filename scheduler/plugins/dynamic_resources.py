"""DynamicResources (kube-scheduler v1.37.2 ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``):
devices for pods through ResourceClaims, allocated by the scheduler from ResourceSlices (structured parameters).

Every extension point upstream uses, with its messages and status codes (upstream's
``statusUnschedulable`` is UnschedulableAndUnresolvable):

* PreEnqueue: each claim of ``spec.resourceClaims`` exists (a template's claim once the resourceclaim
  controller has named it in ``status.resourceClaimStatuses``), belongs to the pod and is not being deleted.
* PreFilter: Skip for a pod without claims (nothing else runs for it); allocated claims become node
  constraints (their ``nodeSelector``); an unallocated claim being allocated for another pod waits; every
  request's DeviceClass must exist; one allocator per cycle from the devices in use (allocated claims and
  in-flight allocations), the classes and the slices with DeviceTaintRules applied.
* Filter: the structured allocator on the node (``filterTimeout`` per node), allocated claims' node
  selectors and binding-condition failures / timeouts; the node's allocation kept for Score and Reserve.
* PostFilter: an allocated claim unavailable on every node and not used by another pod is deallocated.
* Score (weight 2): the prioritized-list score, normalised to 0-100.
* Reserve / Unreserve: the allocation is held in memory (the DRA manager's in-flight allocations) until
  PreBind writes it; Unreserve drops it and removes the pod from ``reservedFor``.
* PreBind: the claim gets the finalizer, ``status.allocation`` (with ``allocationTimestamp``) and the pod
  in ``status.reservedFor``, retried on conflicts as upstream's ``bindClaim``; then, when an allocated
  device has binding conditions, it waits for them (``bindingTimeout``).

Extended resources backed by a DeviceClass (DRAExtendedResource,
``pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go``): a pod requesting one gets a special
claim (in memory until PreBind creates it in the API and writes ``status.extendedResourceClaimStatus``); Filter builds
its requests per node from the containers, the same allocator allocates it; Unreserve and PostFilter delete a created
one.

Not built (off by default in v1.37.2, or a separate piece of work; docs/dra.md lists them): PodGroup
claim sharing (DRAWorkloadResourceClaims, GenericWorkload), node-allocatable resources
(DRANodeAllocatableResources), optional node operations.
"""

from __future__ import annotations

import contextlib
import copy
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog

from scheduler.config.args import plugin_args
from scheduler.config.types_pluginargs import DynamicResourcesArgs
from scheduler.framework.batch import SignsByTemplate
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    ScoreRow,
)
from scheduler.framework.podgroup import PodGroupInfo, PodGroupPostFilterResult, PodGroupSchedulingFunc
from scheduler.framework.status import Code, Status, error, skip, unresolvable, unschedulable
from scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    QueueingHint,
)
from scheduler.model.apierrors import ConflictError, NotFoundError
from scheduler.model.dra import AllocationResult, ResourceClaim, allocation_result_to_api, resource_claim_from_api
from scheduler.model.errors import InvalidObjectError
from scheduler.model.node import Node
from scheduler.model.pod import Pod
from scheduler.plugins.helper.dynamicresources.allocator import (
    MISS,
    AllocationError,
    AllocationTimeout,
    Allocator,
    FailedOnNodeError,
)
from scheduler.plugins.helper.dynamicresources.cel import CelCache
from scheduler.plugins.helper.dynamicresources.claims import (
    ClaimNameError,
    claim_name,
    consumer_reference,
    is_for_pod,
    is_reserved_for_pod,
    pod_claims,
)
from scheduler.plugins.helper.dynamicresources.extended import (
    SPECIAL_CLAIM_NAME,
    RequestMapping,
    create_requests_and_mappings,
    find_extended_resource_claim,
    is_dra_extended_resource_name,
    special_claim,
)
from scheduler.plugins.helper.dynamicresources.manager import MANAGER_KEY, RESOURCE_CLAIM, DraManager
from scheduler.plugins.helper.dynamicresources.score import ScoreError, prioritized_list_score
from scheduler.plugins.helper.nodeaffinity import parse_required_terms
from scheduler.plugins.helper.normalize_score import default_normalize_score, default_normalize_values

T = TypeVar("T")
log = structlog.get_logger(__name__)

NAME = "DynamicResources"
STATE_KEY = "PreFilter" + NAME
# In a pod group's cycle state: its members' states by "namespace/name" (upstream's podGroupStateData).
POD_GROUP_STATE_KEY = STATE_KEY + "/podGroup"

STATE_NOT_FOUND_MSG = "not found"  # fwk.ErrNotFound, what CycleState.Read returns upstream
FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
CONFLICT_RETRIES = 5  # retry.DefaultRetry: 5 steps, 10 ms apart (jitter 0.1)
CONFLICT_BACKOFF = 0.01
BINDING_POLL = 5.0  # PreBind checks binding conditions every 5 s


class _Unschedulable(Exception):
    """A reason the pod cannot be scheduled now (``foreachPodResourceClaim``'s errors)."""


@dataclass(slots=True)
class _ClaimInfo:
    """``informationForClaim``: the node constraint of an allocated claim, the allocation once reserved."""

    available_on: Callable[[Node], bool] | None = None
    allocation: AllocationResult | None = None


@dataclass(slots=True)
class _State:
    """``stateData``: the pod's claims (as at PreFilter; PreBind replaces the ones it writes), the
    allocator, what Filter found per node. Shared by clones, as upstream's Clone returns itself."""

    claims: list[ResourceClaim] = field(default_factory=list)
    infos: list[_ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    unavailable: set[int] = field(default_factory=set)
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The special claim for extended resources backed by a DeviceClass (last in ``claims``), the uid it had
    # at PreFilter (in-flight allocations are keyed by it), the pod's scalar requests, and per node the
    # claim with that node's requests and the container -> request mappings.
    extended: ResourceClaim | None = None
    initial_extended_uid: str = ""
    scalars: Mapping[str, int] = field(default_factory=dict)
    node_extended: dict[str, tuple[ResourceClaim | None, list[RequestMapping]]] = field(default_factory=dict)
    # Set at PreFilter: the claims when every one is a user claim to allocate (no node constraint, binding
    # condition or extended resource to check per node: Filter only allocates them; None once Reserve holds an
    # allocation), and whether no claim has a firstAvailable request (Score is 0 on every node).
    plain: tuple[ResourceClaim, ...] | None = None
    zero_score: bool = False

    def clone(self) -> _State:
        return self

    def to_allocate(self) -> Iterator[tuple[int, ResourceClaim]]:
        return ((i, c) for i, c in enumerate(self.claims) if c.allocation is None)

    def no_user_claim(self) -> bool:
        return len(self.claims) == (1 if self.extended is not None else 0)


_NO_CLAIMS = _State()  # read-only: every point returns before touching it when ``claims`` is empty


def _join_group_state(state: CycleState, pod: Pod, s: _State) -> None:
    """In a pod group's cycle, keep the member's state in the group's (upstream's podGroupStateData, made at
    every member's PreFilter): PodGroupPostFilter reads it."""
    group_cycle = state.get_pod_group_scheduling_cycle()
    if group_cycle is None:
        return
    states = group_cycle.get(POD_GROUP_STATE_KEY)
    if not isinstance(states, dict):
        states = {}
        group_cycle.write(POD_GROUP_STATE_KEY, states)
    states[pod.key] = s


def _node_selector(selector: Mapping[str, Any], claim: ResourceClaim) -> Callable[[Node], bool]:
    """``nodeaffinity.NewNodeSelector(allocation.nodeSelector).Match``; a malformed selector is an error."""
    terms = parse_required_terms(selector, f"ResourceClaim {claim.key}", "status.allocation.nodeSelector")
    errors = [e for t in terms for e in t.errors]
    if errors:
        raise InvalidObjectError(f"ResourceClaim {claim.key}", "status.allocation.nodeSelector", "; ".join(errors))
    return lambda node: any(t.matches(node) for t in terms)


def _deleting(claim: ResourceClaim) -> bool:
    return bool((claim.raw.get("metadata") or {}).get("deletionTimestamp"))


def _now() -> str:
    """metav1.Time as the API writes it (RFC 3339, seconds)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class DynamicResources(SignsByTemplate):
    """Allocates devices for pods' ResourceClaims as kube-scheduler v1.37.2 does."""

    name = NAME

    def __init__(self, args: DynamicResourcesArgs | Mapping[str, Any] | None, handle: Handle) -> None:
        typed = plugin_args(DynamicResourcesArgs, args)
        self.filter_timeout = typed.filter_timeout
        self.binding_timeout = typed.binding_timeout
        self.handle = handle
        # One manager per scheduler, as upstream's SharedDRAManager: every profile sees the others'
        # in-flight allocations, and a configuration reload keeps them.
        self.manager: DraManager = handle.shared_plugin_state(MANAGER_KEY, DraManager)
        # The most recent 10 compiled selectors, reused across cycles (upstream's cel.NewCache(10)).
        self.cel_cache = CelCache()

    # ----- the claims' cache (ClusterEventObserver) -------------------------------------------------

    def on_pod_event(self, deleted: bool, pod: Pod) -> None:
        """Pods are read from the pod itself; nothing is kept."""

    def on_object_event(self, kind: str, deleted: bool, obj: Mapping[str, Any]) -> None:
        """Each profile's instance passes every event on; the shared manager takes a version once."""
        self.manager.on_object_event(kind, deleted, obj)

    # ----- batching -------------------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Pods with claims are not signable (upstream: "pods with dra resource claims are not signable")."""
        return None if (pod.raw.get("spec") or {}).get("resourceClaims") else ()

    # ----- claims of a pod --------------------------------------------------------------------------

    def _pod_claims(self, pod: Pod) -> list[ResourceClaim]:
        """``foreachPodResourceClaim``: the pod's claims in order; raises _Unschedulable with upstream's text."""
        out = []
        for pc in pod_claims(pod):
            try:
                name, must_check_owner = claim_name(pod, pc)
            except ClaimNameError as exc:
                raise _Unschedulable(str(exc)) from None
            if name is None:
                continue  # no claim was generated for this entry: nothing to allocate
            claim = self.manager.claim(pod.namespace, name)
            if claim is None:
                raise _Unschedulable(f'could not find ResourceClaim "{pod.namespace}/{name}"')
            if _deleting(claim):
                raise _Unschedulable(f'resourceclaim "{claim.name}" is being deleted')
            if must_check_owner:
                reason = is_for_pod(pod, claim)
                if reason is not None:
                    raise _Unschedulable(reason)
            out.append(claim)
        return out

    # ----- PreEnqueue -----------------------------------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Wait until every claim exists (the controller creates template claims after the pod). A pod
        naming no claims (nearly every pod, each added one asks) returns before the walk."""
        if not (pod.raw.get("spec") or {}).get("resourceClaims"):
            return None
        try:
            self._pod_claims(pod)
        except _Unschedulable as exc:
            return unresolvable(str(exc))
        return None

    # ----- PreFilter ------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        backed = self._has_class_backed_request(pod)
        if not backed and not (pod.raw.get("spec") or {}).get("resourceClaims"):
            # The common case costs one shared, never-written state: later points see "no claims".
            state.write(STATE_KEY, _NO_CLAIMS)
            _join_group_state(state, pod, _NO_CLAIMS)
            return None, skip()
        s = _State()
        state.write(STATE_KEY, s)
        _join_group_state(state, pod, s)
        try:
            claims = self._pod_claims(pod)
        except _Unschedulable as exc:
            return None, unresolvable(str(exc))
        if backed:
            s.scalars = dict(pod.requests.scalar)
            s.extended = self._extended_claim(pod)
            s.initial_extended_uid = s.extended.uid
            claims.append(s.extended)
        if not claims:
            return None, skip()
        s.infos = [_ClaimInfo() for _ in claims]
        to_allocate = 0
        for i, claim in enumerate(claims):
            if claim.allocation is not None:
                # CanBeReserved is always true in v1.37: "resourceclaim in use" cannot happen.
                if claim.allocation.node_selector is not None:
                    try:
                        s.infos[i].available_on = _node_selector(claim.allocation.node_selector, claim)
                    except InvalidObjectError as exc:
                        return None, error(exc)
                continue
            to_allocate += 1
            if self.manager.pending_allocation(claim.uid) is not None:
                return None, unresolvable(f"resource claim {claim.key} is in the process of being allocated")
            if claim is s.extended:
                continue  # its requests are made per node at Filter, from classes known to exist
            status = self._check_classes(claim)
            if status is not None:
                return None, status
        if to_allocate:
            s.allocator = Allocator(self.manager.allocated_state(), self.manager.device_classes(),
                                    self.manager.slice_index(), self.cel_cache)
        s.claims = claims
        if to_allocate == len(claims) and s.extended is None:
            s.plain = tuple(claims)
        s.zero_score = not any(r.first_available for c in claims for r in c.requests)
        return None, None

    def _has_class_backed_request(self, pod: Pod) -> bool:
        """``hasDeviceClassMappedExtendedResource``: a non-zero request a DeviceClass backs."""
        scalar = pod.requests.scalar
        if not scalar:  # most pods: cpu and memory alone, no generator to build
            return False
        find = self.manager.class_for_resource
        return any(v and is_dra_extended_resource_name(n) and find(n) is not None for n, v in scalar.items())

    def _extended_claim(self, pod: Pod) -> ResourceClaim:
        """``preFilterExtendedResources``: the claim a prior cycle created for the pod, else a new
        in-memory one (no requests, a temporary uid, the name ``<extended-resources>``)."""
        found = find_extended_resource_claim(pod, self.manager.claims())
        return found if found is not None else resource_claim_from_api(special_claim(pod))

    def filter_for(self, state: CycleState, pod: Pod) -> Callable[[NodeInfo], Status | None] | None:
        """``filter`` for one pod's nodes: claims only to allocate are looked up in the allocator's remembered
        outcomes first (a hit is the allocation ``filter`` finds), the rest go to ``filter``."""
        s = state.get(STATE_KEY)
        if isinstance(s, _State) and not s.claims:
            return None
        plain = s.plain if isinstance(s, _State) else None
        allocator = s.allocator if isinstance(s, _State) else None
        if plain is None or allocator is None:
            return lambda node_info: self.filter(state, pod, node_info)
        remembered = allocator.remembered_on(plain)
        allocations = s.node_allocations

        def check(node_info: NodeInfo) -> Status | None:
            node = node_info.node
            if node is None:
                return error("node not found")
            outcome = remembered(node)
            if outcome is MISS:
                return self.filter(state, pod, node_info)
            if outcome is None or len(outcome) != len(plain):
                return unresolvable("cannot allocate all claims")
            allocations[node.name] = list(outcome)  # one store: atomic under the GIL
            return None

        return check

    def _filter_extended(self, s: _State, pod: Pod, node_info: NodeInfo
                         ) -> tuple[ResourceClaim | None, list[RequestMapping], Status | None]:
        """``filterExtendedResources``: the special claim with this node's requests (None when the node
        offers every such resource itself, or it is already allocated)."""
        ext = s.extended
        if ext is None:
            return None, [], None
        if ext.requests:
            # Created by an earlier cycle: PostFilter deletes it and the pod starts anew.
            return None, [], unresolvable("cannot schedule extended resource claim")
        wanted: dict[str, int] = {}
        alloc = node_info.allocatable.scalar
        for name, quantity in s.scalars.items():
            if not is_dra_extended_resource_name(name) or quantity == 0:
                continue
            if self.manager.class_for_resource(name) is not None and alloc.get(name, 0) == 0:
                wanted[name] = quantity
            elif name not in alloc:
                return None, [], unresolvable("cannot fit resource")
        if (s.no_user_claim() and not wanted) or ext.allocation is not None:
            return None, [], None
        requests, mappings = create_requests_and_mappings(pod, wanted, self.manager.extended_resources())
        raw = copy.deepcopy(dict(ext.raw))
        raw["spec"] = {"devices": {"requests": [r.to_api() for r in requests]}}
        return resource_claim_from_api(raw), mappings, None

    def _check_classes(self, claim: ResourceClaim) -> Status | None:
        """``validateDeviceClass`` for every request and subrequest of an unallocated claim."""
        for request in claim.requests:
            if request.exactly is not None:
                subs = [(request.name, request.exactly.device_class_name)]
            elif request.first_available:
                subs = [(f"{request.name}/{sub.name}", sub.device_class_name) for sub in request.first_available]
            else:
                return unresolvable(f"resource claim {claim.key}, request {request.name}: unknown request type")
            for name, class_name in subs:
                if not class_name:
                    return error(f"request {name}: unsupported request type")
                if self.manager.device_class(class_name) is None:
                    return unresolvable(f"request {name}: device class {class_name} does not exist")
        return None

    def pre_filter_extensions(self) -> None:
        return None

    # ----- Filter ---------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(STATE_NOT_FOUND_MSG)
        if not s.claims:
            return None
        node = node_info.node
        if node is None:
            return error("node not found")
        plain = s.plain
        if plain is not None and s.allocator is not None:
            # What the rest does for such claims: no extended claim, none unavailable, nothing pending.
            result, status = self._allocate(s.allocator, node, plain)
            if status is None:
                s.node_allocations[node.name] = result  # one store: atomic under the GIL, as the lock's pair
            return status
        node_ext, mappings, status = self._filter_extended(s, pod, node_info)
        if status is not None:
            return status
        if node_ext is None and s.no_user_claim():
            return None  # the node offers the extended resources itself: NodeResourcesFit counted them
        unavailable = self._unavailable_claims(s, node)
        allocations: list[AllocationResult] = []
        if s.allocator is not None:
            to_allocate = []
            pending = []
            for i, claim in s.to_allocate():
                alloc = s.infos[i].allocation
                if alloc is not None:
                    pending.append(alloc)
                else:
                    to_allocate.append(node_ext if claim is s.extended and node_ext is not None else claim)
            result, status = self._allocate(s.allocator, node, to_allocate)
            if status is not None:
                return status
            allocations = [*result, *pending]
        if unavailable:
            with s.lock:
                s.unavailable.update(unavailable)
            return unresolvable("resourceclaim not available on the node")
        if s.allocator is not None:
            with s.lock:
                s.node_allocations[node.name] = allocations
                s.node_extended[node.name] = (node_ext, mappings)
        return None

    def _allocate(self, allocator: Allocator, node: Node, claims: Sequence[ResourceClaim]
                  ) -> tuple[list[AllocationResult], Status | None]:
        """The claims' allocations on the node, or the status Filter returns when there are none."""
        try:
            # The filter timeout counts from the search (a remembered outcome needs none).
            result = allocator.allocate(node, claims, timeout=self.filter_timeout if self.filter_timeout > 0 else None)
        except AllocationTimeout:
            # Potentially transient: an error, so the pod retries after backoff.
            return [], error(f"node {node.name}: timed out trying to allocate devices")
        except FailedOnNodeError as exc:
            return [], unresolvable(str(exc))
        except AllocationError as exc:
            return [], error(str(exc))
        if result is None or len(result) != len(claims):
            return [], unresolvable("cannot allocate all claims")
        return result, None

    def _unavailable_claims(self, s: _State, node: Node) -> list[int]:
        """Allocated claims the node cannot use: node selector, failed or timed-out binding conditions."""
        out = []
        for i, claim in enumerate(s.claims):
            match = s.infos[i].available_on
            if match is not None and not match(node):
                out.append(i)
                continue
            if claim.allocation is not None:
                try:
                    ready = self._claim_ready_for_binding(claim)
                except _BindingFailed:
                    out.append(i)
                    continue
                if not ready and self._claim_timed_out(claim):
                    out.append(i)
        return out

    # ----- binding conditions ---------------------------------------------------------------------

    def _claim_ready_for_binding(self, claim: ResourceClaim) -> bool:
        """``isClaimReadyForBinding``: every binding condition of every allocated device is True (and no
        failure condition is); raises _BindingFailed naming the failure condition."""
        if claim.allocation is None:
            return False
        statuses = (claim.raw.get("status") or {}).get("devices") or []
        for r in claim.allocation.results:
            if not r.binding_conditions:
                continue
            conditions = next((d.get("conditions") or [] for d in statuses
                               if d.get("driver") == r.driver and d.get("pool") == r.pool
                               and d.get("device") == r.device and (d.get("shareID") or None) == r.share_id), None)
            if conditions is None:
                return False
            by_type = {c.get("type"): c for c in conditions}
            for cond in r.binding_failure_conditions:
                c = by_type.get(cond)
                if c is not None and c.get("status") == "True":
                    raise _BindingFailed(f'device binding failed: claim={claim.name}, reason={c.get("reason", "")}, '
                                         f'message="{c.get("message", "")}"')
            if any((by_type.get(cond) or {}).get("status") != "True" for cond in r.binding_conditions):
                return False
        return True

    def _claim_timed_out(self, claim: ResourceClaim) -> bool:
        """``isClaimTimeout``: a device with binding conditions allocated longer than ``bindingTimeout`` ago."""
        if claim.allocation is None or not any(r.binding_conditions for r in claim.allocation.results):
            return False
        stamp = ((claim.raw.get("status") or {}).get("allocation") or {}).get("allocationTimestamp")
        if not stamp:
            return False
        allocated = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
        return allocated + self.binding_timeout < time.time()

    # ----- PostFilter -----------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return None, error(STATE_NOT_FOUND_MSG)
        if not s.claims:
            return None, unschedulable()
        return None, self._deallocate_or_delete_pod_claims(pod, s)[1]

    def pod_group_post_filter(
        self, state: CycleState, pod_group: PodGroupInfo, scheduling_func: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        """After a group's cycle failed: for each unscheduled member that had claims, what PostFilter does for a
        pod (deallocate one claim unavailable on some node, or delete the extended-resource claim), so the next
        cycle may find devices. Never makes the group schedulable itself. (Groups with topology constraints are
        left alone, as upstream; PodGroup-level claims need DRAWorkloadResourceClaims, which is not built.)"""
        if self.handle.features().enable_topology_aware_workload_scheduling and pod_group.pod_group is not None \
                and pod_group.pod_group.topology_keys:
            return None, unschedulable()
        states = state.get(POD_GROUP_STATE_KEY)
        if not isinstance(states, dict):  # no member reached PreFilter: upstream's read of the state fails
            return None, error("not found")
        for pod in pod_group.unscheduled_pods:
            s = states.get(pod.key)
            if not isinstance(s, _State) or not s.claims:
                continue
            _, status = self._deallocate_or_delete_pod_claims(pod, s)
            if status is not None and status.code == Code.ERROR:
                return None, status
        return None, unschedulable("deallocation and deletion of ResourceClaims completed")

    def _deallocate_or_delete_pod_claims(self, pod: Pod, s: _State) -> tuple[bool, Status | None]:
        """deallocateOrDeletePodClaims: (whether a claim was deallocated or deleted, the status to return)."""
        # Upstream picks one at random (map order): there is no better heuristic. The scheduler's
        # random source keeps a seeded run (simulate --seed) reproducible.
        candidates = sorted(s.unavailable)
        self.handle.rng().shuffle(candidates)
        created_ext = s.extended is not None and s.extended.name != SPECIAL_CLAIM_NAME
        for i in candidates:
            claim = s.claims[i]
            if claim is s.extended:
                if created_ext:
                    break
                continue
            if not claim.reserved_for or (len(claim.reserved_for) == 1 and claim.reserved_for[0].uid == pod.uid):
                obj = copy.deepcopy(dict(claim.raw))
                status = obj.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                try:
                    self.handle.update_object(RESOURCE_CLAIM, obj, "status")
                except Exception as exc:  # the API edge's failure, whatever it is, is the pod's error
                    return True, error(exc)
                return True, unschedulable("deallocation of ResourceClaim completed")
        if created_ext and s.extended is not None:
            try:
                self._delete_claim(s.extended)
            except Exception as exc:  # the API edge's failure is the pod's error
                return True, error(exc)
            return True, unschedulable("deletion of ResourceClaim completed")
        return False, unschedulable()

    # ----- Score ----------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return 0, error(STATE_NOT_FOUND_MSG)
        if not s.claims:
            return 0, None
        allocations = s.node_allocations.get(node_info.name)
        if allocations is None:
            return 0, None
        try:
            return prioritized_list_score(s.claims, allocations), None
        except ScoreError as exc:
            return 0, error(exc)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node in one call (pods without claims: all zero at once)."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return [0] * len(nodes), error(STATE_NOT_FOUND_MSG)
        if not s.claims or s.zero_score:
            # zero_score: no claim has a firstAvailable request, so none adds to a node's score (and Filter kept
            # one allocation per unallocated claim, the count prioritized_list_score checks)
            return [0] * len(nodes), None
        out = []
        for ni in nodes:
            value, status = self.score(state, pod, ni)
            if status is not None:
                return [0] * len(nodes), status
            out.append(value)
        return out, None

    def score_extensions(self) -> DynamicResources:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_values(self, state: CycleState, pod: Pod, values: ScoreRow) -> Status | None:
        s = state.get(STATE_KEY)
        if isinstance(s, _State) and (not s.claims or s.zero_score):
            return None  # Score gave every node 0, a row DefaultNormalizeScore leaves as it is: no pass over it
        default_normalize_values(MAX_NODE_SCORE, False, values)
        return None

    # ----- Reserve / Unreserve --------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Hold the node's allocations in memory (in flight) so that the next pod cannot take the devices."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(STATE_NOT_FOUND_MSG)
        unallocated = [(i, c) for i, c in s.to_allocate()]
        if not unallocated or s.allocator is None:
            return None
        allocations = s.node_allocations.get(node_name)
        if not allocations:
            if all(c is s.extended for _, c in unallocated):
                return None  # only the extended-resource claim, and this node offers the resources itself
            return error("claim allocation not found for node")
        if len(allocations) != len(unallocated):
            return error(f"internal error, have {len(allocations)} allocations, {len(unallocated)} claims to "
                         f"allocate, want {len(unallocated)} claims")
        node_ext = (s.node_extended.get(node_name) or (None, []))[0]
        s.plain = None  # Filter must now count these as pending
        for (i, claim), allocation in zip(unallocated, allocations, strict=True):
            s.infos[i].allocation = allocation
            if claim is s.extended and node_ext is not None:
                claim = node_ext
            self.manager.signal_pending_allocation(claim, allocation)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Forget in-flight allocations; remove the pod from claims PreBind reserved for it."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State) or not s.claims:
            return
        for claim in s.claims:
            if claim is s.extended:
                continue
            if self.manager.remove_pending_allocation(claim.uid):
                self.manager.restore_claim(claim.namespace, claim.name)
            if claim.allocation is not None and is_reserved_for_pod(pod, claim):
                patch = {"metadata": {"uid": claim.uid},
                         "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]}}
                try:
                    self.handle.patch_object_status(RESOURCE_CLAIM, claim.namespace, claim.name, patch)
                except Exception as exc:  # retried when the pod is scheduled again
                    log.error("unreserve", resourceclaim=claim.key, pod=pod.key, error=str(exc))
        self._unreserve_extended(s)

    def _unreserve_extended(self, s: _State) -> None:
        """``unreserveExtendedResourceClaim``: drop its in-flight allocation; delete it once created."""
        ext = s.extended
        if ext is None:
            return
        if self.manager.remove_pending_allocation(s.initial_extended_uid):
            self.manager.restore_claim(ext.namespace, ext.name)
        if ext.name == SPECIAL_CLAIM_NAME:
            return
        try:
            self._delete_claim(ext)
        except Exception as exc:  # logged only, as upstream
            log.error("delete", resourceclaim=ext.key, error=str(exc))

    def _delete_claim(self, claim: ResourceClaim) -> None:
        """``deleteClaim``: remove the allocation finalizer (conflicts retried with a fresh read), then
        delete; a claim already gone is fine."""

        def drop_finalizer(obj: Mapping[str, Any]) -> None:
            updated = copy.deepcopy(dict(obj))
            meta = updated.setdefault("metadata", {})
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
            try:
                self.handle.update_object(RESOURCE_CLAIM, updated)
            except ConflictError:
                raise
            except Exception as exc:
                raise _BindError(f"update resourceclaim {claim.key}: {exc}") from None

        self._retry_conflicts(claim, f"get resourceclaim {claim.key}", drop_finalizer)
        with contextlib.suppress(NotFoundError):
            self.handle.delete_object(RESOURCE_CLAIM, claim.namespace, claim.name)

    # ----- PreBind --------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(STATE_NOT_FOUND_MSG)
        return None if s.claims else skip()

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Write allocations and reservations (``bindClaim``), then wait for binding conditions."""
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return error(STATE_NOT_FOUND_MSG)
        if not s.claims:
            return None
        written: list[ResourceClaim] = []
        for i, claim in enumerate(s.claims):
            if is_reserved_for_pod(pod, claim):
                continue
            allocation = s.infos[i].allocation
            if claim is s.extended and allocation is None and not claim.requests:
                continue  # the node offers the extended resources itself: nothing to write
            try:
                if claim is s.extended:
                    s.claims[i] = s.extended = self._bind_extended_claim(s, claim, allocation, pod, node_name)
                else:
                    s.claims[i] = self._bind_claim(claim, allocation, pod)
            except _BindError as exc:
                return error(str(exc))
            written.append(claim)
        status = self._wait_for_binding_conditions(s)
        if status is None:
            # Success: the written allocations are in the cache now, no longer in flight (on failure
            # Unreserve drops them).
            for claim in written:
                self.manager.remove_pending_allocation(claim.uid)
        return status

    def _bind_extended_claim(self, s: _State, claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod,
                             node_name: str) -> ResourceClaim:
        """The special claim: created in the API first (``createExtendedResourceClaimInAPI``), then bound
        as any claim, then the pod's ``status.extendedResourceClaimStatus`` written."""
        node_ext, mappings = s.node_extended.get(node_name) or (None, [])
        if claim.name == SPECIAL_CLAIM_NAME:
            if node_ext is None:
                raise _BindError(f"extended resource claim not found for node {node_name}")
            obj = copy.deepcopy(dict(node_ext.raw))
            meta = obj["metadata"]
            meta.pop("name", None)
            meta.pop("uid", None)
            obj.pop("status", None)
            try:
                created = self.handle.create_object(RESOURCE_CLAIM, obj)
            except Exception as exc:
                raise _BindError(f"create claim for extended resources {claim.namespace}/: {exc}") from None
            claim = resource_claim_from_api(created)
            s.extended = claim
        bound = self._bind_claim(claim, allocation, pod)
        if not mappings:
            raise _BindError(f"nil or empty request mappings, no update of pod {pod.key} ExtendedResourceClaimStatus")
        patch = {"status": {"extendedResourceClaimStatus": {
            "requestMappings": [m.to_api() for m in mappings], "resourceClaimName": bound.name}}}
        try:
            self.handle.patch_pod_status(pod.namespace, pod.name, patch)
        except Exception as exc:
            raise _BindError(f"update pod {pod.key} ExtendedResourceClaimStatus: {exc}") from None
        return bound

    def _bind_claim(self, claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod) -> ResourceClaim:
        """Finalizer, allocation and reservation of one claim, conflicts retried with a fresh claim;
        the written claim is assumed (newer than the watch's until the watch catches up)."""
        try:
            stored = self._retry_conflicts(claim, f"get updated claim {claim.key} after conflict",
                                           lambda obj: self._write_claim(claim, obj, allocation, pod))
        except ConflictError as exc:
            raise _BindError(self._write_error(claim, allocation, exc)) from None
        self.manager.assume_claim(stored)
        updated = self.manager.claim(claim.namespace, claim.name)
        return updated if updated is not None and updated.uid == claim.uid else claim

    def _retry_conflicts(self, claim: ResourceClaim, get_what: str, write: Callable[[Mapping[str, Any]], T]) -> T:
        """Upstream's RetryOnConflict around one claim write: the claim as known first, then a fresh read
        before each retry; the last conflict propagates, a failed read is a binding error."""
        obj: Mapping[str, Any] = claim.raw
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                time.sleep(CONFLICT_BACKOFF * (1 + 0.1 * random.random()))
                try:
                    obj = self.handle.get_object(RESOURCE_CLAIM, claim.namespace, claim.name)
                except Exception as exc:
                    raise _BindError(f"{get_what}: {exc}") from None
            try:
                return write(obj)
            except ConflictError:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    def _write_claim(self, claim: ResourceClaim, current: Mapping[str, Any], allocation: AllocationResult | None,
                     pod: Pod) -> Mapping[str, Any]:
        """One attempt: the finalizer (a normal update) and the status (an update of the status)."""
        obj = _editable(current)
        meta, status = obj["metadata"], obj["status"]
        if meta.get("deletionTimestamp"):
            raise _BindError(f"claim {claim.key} got deleted in the meantime")
        if allocation is not None:
            if status.get("allocation") is not None:
                raise _BindError(f"claim {claim.key} got allocated elsewhere in the meantime")
            if FINALIZER not in (meta.get("finalizers") or []):
                meta["finalizers"] = [*(meta.get("finalizers") or []), FINALIZER]
                try:
                    obj = _editable(self.handle.update_object(RESOURCE_CLAIM, obj))
                except ConflictError:
                    raise
                except Exception as exc:
                    raise _BindError(f"add finalizer to claim {claim.key}: {exc}") from None
                status = obj["status"]
            status["allocation"] = allocation_result_to_api(allocation)
        ref = consumer_reference(pod)
        status["reservedFor"] = [*(status.get("reservedFor") or []),
                                 {**({"apiGroup": ref.api_group} if ref.api_group else {}),
                                  "resource": ref.resource, "name": ref.name, "uid": ref.uid}]
        # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus are on: the timestamp is set.
        if status.get("allocation") is None:
            raise _BindError(f"claim {claim.key} got deallocated elsewhere in the meantime")
        if "allocationTimestamp" not in status["allocation"]:
            status["allocation"] = {**status["allocation"], "allocationTimestamp": _now()}
        try:
            return self.handle.update_object(RESOURCE_CLAIM, obj, "status")
        except ConflictError:
            raise
        except Exception as exc:
            raise _BindError(self._write_error(claim, allocation, exc)) from None

    @staticmethod
    def _write_error(claim: ResourceClaim, allocation: AllocationResult | None, exc: Exception) -> str:
        if allocation is not None:
            return f"add allocation and reservation to claim {claim.key}: {exc}"
        return f"add reservation to claim {claim.key}: {exc}"

    def _wait_for_binding_conditions(self, s: _State) -> Status | None:
        """Devices with binding conditions: poll the claims until all are met, one fails, or ``bindingTimeout``."""
        if not any(c.allocation is not None and any(r.binding_conditions for r in c.allocation.results)
                   for c in s.claims):
            return None
        deadline = time.monotonic() + self.binding_timeout
        while True:
            try:
                if self._pod_ready_for_binding(s):
                    return None
            except _BindingFailed as exc:
                return error(str(exc))
            if time.monotonic() + BINDING_POLL > deadline:
                return error("device binding timeout: context deadline exceeded")
            time.sleep(BINDING_POLL)

    def _pod_ready_for_binding(self, s: _State) -> bool:
        """``isPodReadyForBinding`` on the latest claims."""
        for i, claim in enumerate(s.claims):
            latest = self.manager.claim(claim.namespace, claim.name)
            if latest is None:
                raise _BindingFailed(f'could not find ResourceClaim "{claim.key}"')
            s.claims[i] = latest
            if not self._claim_ready_for_binding(latest):
                if self._claim_timed_out(latest):
                    raise _BindingFailed(f"device binding timeout: claim={latest.name}")
                return False
        return True

    # ----- queueing hints -------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's events: nodes, claims (only pods that use the claim, or any after a deallocation),
        the pod's own generated claims, classes and slices; DeviceTaintRule changes stand in for the
        slice updates upstream's slice tracker derives from them."""
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node_actions)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_CLAIM, add_update | ActionType.DELETE),
                                 self.is_schedulable_after_claim_change, self.claim_keys, self.claim_event_keys),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                                 self.is_schedulable_after_pod_update),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_SLICE, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_TAINT_RULE, add_update | ActionType.DELETE)),
        ]

    def is_schedulable_after_claim_change(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """``isSchedulableAfterClaimChange``: a deallocation helps anyone; otherwise only the claim's pods,
        when it is created or its status changes."""
        old_obj = old if isinstance(old, Mapping) else None
        new_obj = new if isinstance(new, Mapping) else None
        if new_obj is None:
            return QueueingHint.QUEUE if old_obj is not None and _allocation(old_obj) is not None else \
                QueueingHint.QUEUE_SKIP
        try:
            uses = any(c.uid == _uid(new_obj) for c in self._pod_claims(pod))
        except _Unschedulable:
            return QueueingHint.QUEUE_SKIP
        if old_obj is not None and _allocation(old_obj) is not None and _allocation(new_obj) is None:
            return QueueingHint.QUEUE
        if not uses:
            return QueueingHint.QUEUE_SKIP
        if old_obj is None:
            return QueueingHint.QUEUE
        if (old_obj.get("status") or {}) == (new_obj.get("status") or {}):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def claim_keys(pod: Pod) -> list[str]:
        """``podResourceClaimIndexFunc``: ``namespace/name`` of each claim the pod names (a template's
        once the controller named it); the queue files unschedulable pods under them."""
        keys = []
        for pc in pod_claims(pod):
            try:
                name, _ = claim_name(pod, pc)
            except ClaimNameError:
                continue
            if name is not None:
                keys.append(f"{pod.namespace}/{name}")
        return keys

    @staticmethod
    def claim_event_keys(old: object, new: object) -> list[str] | None:
        """The claim keys of the pods is_schedulable_after_claim_change can answer Queue for (None: any
        pod). A deallocation, or the deletion of an allocated claim, may help any pod; the deletion of
        an unallocated one helps none; otherwise only a pod using the claim (same UID, so the same
        namespace/name, which the manager looks claims up by) can get Queue."""
        old_obj = old if isinstance(old, Mapping) else None
        new_obj = new if isinstance(new, Mapping) else None
        if new_obj is None:
            return None if old_obj is not None and _allocation(old_obj) is not None else []
        if old_obj is not None and _allocation(old_obj) is not None and _allocation(new_obj) is None:
            return None
        if not _uid(new_obj):
            return None  # claims without a UID (hand-made objects) all match one another
        meta = new_obj.get("metadata") or {}
        return [f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"]

    def is_schedulable_after_pod_update(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """``isSchedulableAfterTargetPodUpdate``: the controller named the pod's claims and they exist."""
        target = new if isinstance(new, Pod) else pod
        try:
            self._pod_claims(target)
        except _Unschedulable:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE


class _BindingFailed(Exception):
    """``ErrDeviceBindingFailed`` / ``ErrDeviceBindingTimeout`` with upstream's text."""


class _BindError(Exception):
    """``bindClaim`` failed; the message is upstream's."""


def _editable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a claim whose metadata and status may be changed (new values replace what they hold; the
    rest is shared, never changed: a deep copy of every claim written cost more than the write)."""
    return {**obj, "metadata": dict(obj.get("metadata") or {}), "status": dict(obj.get("status") or {})}


def _allocation(obj: Mapping[str, Any]) -> Any:
    return (obj.get("status") or {}).get("allocation")


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")
