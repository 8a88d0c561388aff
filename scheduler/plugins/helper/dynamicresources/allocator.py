"""The structured allocator: which devices of which ResourceSlices a node can give a pod's claims.

Follows ``k8s.io/dynamic-resource-allocation/structured/internal/incubating/allocator_incubating.go``
and ``k8s.io/dynamic-resource-allocation/structured/internal/incubating/constraint.go``, the implementation
``structured.NewAllocator`` picks in kube-scheduler v1.37.2 with its default feature gates (DRAConsumableCapacity,
DRADeviceBindingConditions and DRAFractionalCapacityRange are beta and on, which the "stable" allocator does not
support).

The search is upstream's: claims in order, their requests in order, for each device of a request
the pools in driver/pool order, their slices in name order, the devices in slice order, the first
complete solution wins (a depth-first search that backtracks and, inside one request, only tries
combinations, not permutations). A ``firstAvailable`` request tries its subrequests in order. So
the devices chosen are the ones kube-scheduler chooses for the same inputs.

Built: ``exactly`` requests (ExactCount with ``count``, All), ``firstAvailable`` subrequests, class
and request CEL selectors, ``matchAttribute`` and ``distinctAttribute`` constraints, ``adminAccess``,
class and claim configuration in the result, allocated devices (and in-flight ones, passed in the
same :class:`AllocatedState`) excluded, device taints and tolerations, partitionable devices (shared
counters, per-device node selection), consumable capacity (shared devices, capacity requests, share
IDs), binding conditions (carried to the result; such pools are tried last), the 32-device result
limit and upstream's errors. Not built: the alpha features (derived attributes, list-type attributes,
compatibility groups: slices using them are ignored as upstream does with the gate off, optional
node operations). The caller's deadline stands in for upstream's context (the filter timeout).
"""

from __future__ import annotations

import itertools
import math
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from scheduler.model.dra import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    CONFIG_SOURCE_CLAIM,
    CONFIG_SOURCE_CLASS,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    AllocationResult,
    Device,
    DeviceAllocationConfiguration,
    DeviceAttribute,
    DeviceClass,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
)
from scheduler.model.node import Node
from scheduler.plugins.helper.dynamicresources import capacity as cap
from scheduler.plugins.helper.dynamicresources.cel import CelCache, CelDevice, CelRuntimeError
from scheduler.plugins.helper.dynamicresources.pools import (
    DEFAULT_FEATURES,
    Features,
    NodeEntry,
    Pool,
    PoolError,
    PoolKey,
    SliceIndex,
    node_matches,
)

DeviceID = tuple[str, str, str]  # driver, pool, device
RequestKey = tuple[int, int, int]  # claim, request, subrequest index


def device_id_text(d: DeviceID) -> str:
    """``DeviceID.String()``: driver/pool/device."""
    return "/".join(d)


class AllocationError(Exception):
    """A problem with the inputs (a claim, a class, a selector) that stops scheduling the pod
    everywhere; the message is upstream's."""


class FailedOnNodeError(AllocationError):
    """``ErrFailedAllocationOnNode``: only this node failed (an invalid pool), others may work."""


class AllocationTimeout(AllocationError):
    """The deadline passed during the search (``filter operation aborted``: the DRASchedulerFilterTimeout
    case, which the plugin reports as ``node <name>: timed out trying to allocate devices``)."""


class _MaxSizeExceeded(Exception):
    """``errAllocationResultMaxSizeExceeded``: backtrack further, a claim cannot hold more devices."""


_NO_DEVICES: frozenset[DeviceID] = frozenset()
MISS = object()  # Allocator.remembered_on: no outcome remembered


class PoolDeviceSet(AbstractSet[DeviceID]):
    """Device IDs held as one frozenset per pool: a copy of the mapping is a copy of the set (the pools'
    frozensets are shared, never changed), and a node's taken devices are its pools' entries."""

    __slots__ = ("by_pool",)

    def __init__(self, by_pool: Mapping[PoolKey, frozenset[DeviceID]]) -> None:
        self.by_pool = by_pool

    def __contains__(self, did: object) -> bool:
        return isinstance(did, tuple) and did in self.by_pool.get(did[:2], _NO_DEVICES)

    def __iter__(self) -> Iterator[DeviceID]:
        return itertools.chain.from_iterable(self.by_pool.values())

    def __len__(self) -> int:
        return sum(map(len, self.by_pool.values()))

    @classmethod
    def _from_iterable(cls, it: Iterable[Any]) -> set[Any]:
        return set(it)  # what the Set operators (|, &, -) build: a plain set


def by_pool(devices: Iterable[DeviceID]) -> dict[PoolKey, frozenset[DeviceID]]:
    """``devices`` grouped by their pool."""
    grouped: dict[PoolKey, set[DeviceID]] = {}
    for did in devices:
        grouped.setdefault(did[:2], set()).add(did)
    return {k: frozenset(v) for k, v in grouped.items()}


@dataclass(slots=True)
class AllocatedState:
    """``schedulerapi.AllocatedState``: devices in use by allocated and in-flight claims.

    ``allocated_devices`` holds exclusively used devices; devices shared through consumable capacity
    are in ``shared_device_ids`` (device, share ID) and their consumption in ``aggregated_capacity``.
    """

    allocated_devices: AbstractSet[DeviceID] = field(default_factory=set)
    shared_device_ids: AbstractSet[tuple[DeviceID, str]] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, dict[str, Decimal]] = field(default_factory=dict)

    def is_allocated(self, did: DeviceID) -> bool:
        """``IsDeviceAllocated``: used exclusively, or shared by at least one allocation."""
        return (did in self.allocated_devices or did in self.aggregated_capacity
                or any(d == did for d, _ in self.shared_device_ids))

    def allocated_by_pool(self) -> Mapping[PoolKey, frozenset[DeviceID]]:
        """``allocated_devices`` by pool (without copying when they are held that way already)."""
        held = self.allocated_devices
        return held.by_pool if isinstance(held, PoolDeviceSet) else by_pool(held)

    @staticmethod
    def from_claims(claims: Sequence[ResourceClaim]) -> AllocatedState:
        """The state that the given claims' allocations make (the scheduler's allocated-devices tracker)."""
        allocated: set[DeviceID] = set()
        shared: set[tuple[DeviceID, str]] = set()
        aggregated: dict[DeviceID, dict[str, Decimal]] = {}
        for claim in claims:
            if claim.allocation is None:
                continue
            for r in claim.allocation.results:
                did = (r.driver, r.pool, r.device)
                if r.admin_access:
                    continue  # admin access does not take the device
                if r.share_id is None:
                    allocated.add(did)
                    continue
                shared.add((did, r.share_id))
                agg = aggregated.setdefault(did, {})
                for name, q in (r.consumed_capacity or {}).items():
                    agg[name] = agg.get(name, Decimal(0)) + q
        return AllocatedState(allocated, shared, aggregated)


@dataclass(slots=True)
class _RequestData:
    request: DeviceSubRequest
    parent: DeviceRequest | None
    device_class: DeviceClass | None = None
    num_devices: int = 0
    selected_sub_request: int = 0
    all_devices: list[_Candidate] = field(default_factory=list)

    def request_name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent is not None else self.request.name


@dataclass(frozen=True, slots=True)
class _Candidate:
    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True)
class _Result:
    request: str  # the request, or the subrequest of parent
    parent: str
    id: DeviceID
    device: Device
    slice: ResourceSlice
    share_id: str | None = None
    consumed_capacity: dict[str, Decimal] | None = None
    admin_access: bool | None = None

    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


class _AttributeConstraint:
    """A constraint on one attribute of the devices picked for some of a claim's requests (all of them when
    ``requests`` is empty): the request filter, the lookup and the undo are the same for both kinds."""

    def __init__(self, requests: frozenset[str], attribute: str) -> None:
        self.requests = requests
        self.attribute = attribute

    def applies(self, request: str, sub: str) -> bool:
        return not self.requests or _constraint_names(self.requests, request, sub)

    def add(self, request: str, sub: str, device: Device, did: DeviceID) -> bool:
        """Whether the device may join; a device without the attribute never may."""
        if not self.applies(request, sub):
            return True
        attr = lookup_attribute(device, did, self.attribute)
        return attr is not None and self._accept(attr)

    def remove(self, request: str, sub: str, device: Device, did: DeviceID) -> None:
        """Undo the matching add (the allocator removes in reverse order of adding)."""
        if self.applies(request, sub):
            self._forget()

    def _accept(self, attr: DeviceAttribute) -> bool:
        raise NotImplementedError

    def _forget(self) -> None:
        raise NotImplementedError


class _MatchAttribute(_AttributeConstraint):
    """All devices of the constrained requests share the attribute's value (``matchAttributeConstraint``)."""

    def __init__(self, requests: frozenset[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.value: DeviceAttribute | None = None
        self.count = 0

    def _accept(self, attr: DeviceAttribute) -> bool:
        if self.count == 0:
            self.value, self.count = attr, 1
            return True
        if not _same_scalar(attr, self.value):
            return False
        self.count += 1
        return True

    def _forget(self) -> None:
        self.count -= 1


class _DistinctAttribute(_AttributeConstraint):
    """No two devices of the constrained requests share the attribute's value (``distinctAttributeConstraint``)."""

    def __init__(self, requests: frozenset[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: list[DeviceAttribute] = []

    def _accept(self, attr: DeviceAttribute) -> bool:
        if _scalar(attr) is None or any(_same_scalar(attr, v) for v in self.values):
            return False
        self.values.append(attr)
        return True

    def _forget(self) -> None:
        self.values.pop()


def _constraint_names(names: frozenset[str], request: str, sub: str) -> bool:
    if not sub:
        return request in names
    return request in names or f"{request}/{sub}" in names


def _scalar(a: DeviceAttribute) -> tuple[str, Any] | None:
    """The attribute's single value with its kind; list values never match (the constraint is scalar)."""
    for kind, v in (("string", a.string_value), ("int", a.int_value), ("bool", a.bool_value),
                    ("version", a.version_value)):
        if v is not None:
            return kind, v
    return None


def _same_scalar(a: DeviceAttribute, b: DeviceAttribute | None) -> bool:
    sa = _scalar(a)
    return sa is not None and b is not None and sa == _scalar(b)


def lookup_attribute(device: Device, did: DeviceID, name: str) -> DeviceAttribute | None:
    """``lookupAttribute``: the fully qualified name, or its id when the domain is the driver's name."""
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != did[0]:
        return None
    return device.attributes.get(ident)


def _tolerated(device: Device, request: DeviceSubRequest) -> bool:
    """``taintPreventsAllocation`` negated: every NoSchedule/NoExecute taint has a matching toleration."""
    for taint in device.taints:
        if taint.effect in (TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE) and not any(
                t.tolerates(taint) for t in request.tolerations):
            return False
    return True


def _class_not_found(name: str) -> str:
    return f'deviceclass.resource.k8s.io "{name}" not found'


class Allocator:
    """``structured.NewAllocator`` + ``Allocate``: reusable for many nodes with the same inputs.

    ``slices`` are those the scheduler sees (DeviceTaintRules already applied, see
    :func:`..pools.apply_device_taint_rules`), or their :class:`..pools.SliceIndex` (kept across cycles);
    ``classes`` by name; ``state`` the devices already in use.
    """

    def __init__(self, state: AllocatedState, classes: Mapping[str, DeviceClass],
                 slices: Sequence[ResourceSlice] | SliceIndex,
                 cel_cache: CelCache, features: Features = DEFAULT_FEATURES,
                 new_share_id: Callable[[], str] = lambda: str(uuid.uuid4())) -> None:
        self.state = state
        self.classes = classes
        self.cel_cache = cel_cache
        self.features = features
        self.new_share_id = new_share_id
        self.slices = slices if isinstance(slices, SliceIndex) else SliceIndex(slices)
        self.available_counters: dict[str, dict[str, dict[str, Decimal]]] = {}
        # What the search reads besides the node and the claims, by identity: a remembered outcome's key holds
        # their ids, its entry the objects themselves (so that those ids stay theirs).
        self._held = (features, tuple(classes.values()))
        # (as text: a key's hash is then computed once an allocator, not once a node)
        self._inputs = repr((id(features), tuple(classes), tuple(map(id, classes.values()))))
        # the claims' ids -> (the claims, the text of what the search reads of them: requests, constraints, config)
        self._specs: dict[tuple[int, ...], tuple[tuple[ResourceClaim, ...], str]] = {}
        self._last_spec: tuple[tuple[ResourceClaim, ...], str] | None = None  # the last claims tuple and its text
        # The devices taken, by pool, where outcomes may be remembered: shared devices (and the share IDs drawn
        # at random for them) could change an outcome too.
        self._taken = None if state.shared_device_ids or state.aggregated_capacity else state.allocated_by_pool()

    def allocate(self, node: Node, claims: Sequence[ResourceClaim],
                 deadline: float | None = None, timeout: float | None = None) -> list[AllocationResult] | None:
        """One allocation result per claim, or None when the claims do not fit on this node.

        Raises :class:`AllocationError` for a problem of the inputs, :class:`FailedOnNodeError`
        when this node only has invalid pools to offer, and :class:`AllocationTimeout` once
        ``time.monotonic()`` passes ``deadline`` (checked at every step, as upstream checks its context;
        ``timeout``: the deadline that many seconds after the search starts).

        An outcome is remembered in the slice index (errors are not): the same claims on the same node
        with the same devices taken get it again without the search. A tuple of claims passed again (a
        cycle's Filter calls) is known by identity.
        """
        found = self._lookup(node, claims)
        if found is not None:
            hit = found[0].memo.get(found[1])
            if hit is not None:
                return None if hit[1] is None else list(hit[1])
        if deadline is None and timeout is not None:
            deadline = time.monotonic() + timeout
        result = _Run(self, node, claims, deadline).run()
        if found is not None:
            SliceIndex.remember(found[0], found[1], self._held, None if result is None else tuple(result))
        return result

    def _memo_key(self, node: Node, claims: Sequence[ResourceClaim]) -> tuple[Any, ...] | None:
        """What, beside the Node, decides the outcome on this node: the features and classes, the claims'
        specs and which of the node's devices are taken (what is left of a pool's shared counters follows from
        them). None where more could (shared devices, pools with slices elsewhere, share IDs drawn at random)."""
        found = self._lookup(node, claims)
        return None if found is None else found[1]

    def remembered_on(self, claims: tuple[ResourceClaim, ...]) -> Callable[[Node], Any]:
        """For many nodes (a cycle's Filter calls): what ``allocate(node, claims)`` would return from a remembered
        outcome (None or a tuple of results), or MISS where it would do more (then call it)."""
        taken = self._taken
        if taken is None:
            return lambda node: MISS
        entries, features = self.slices.entries, self.features
        prefix = self._spec_text(claims)

        def remembered(node: Node) -> Any:
            # _lookup's steps for an entry already built, with one pool whose taken devices were seen last time
            entry = entries.get(node.name)
            if entry is None or entry.node is not node or entry.features is not features:
                return MISS
            pool, seen = entry.single_pool, entry.seen
            if pool is None or seen is None or seen[0] is not taken.get(pool, _NO_DEVICES):
                return MISS
            hit = entry.memo.get((prefix, seen[1]))
            return MISS if hit is None else hit[1]

        return remembered

    def _spec_text(self, claims: Sequence[ResourceClaim]) -> str:
        """The text of what the search reads besides the node: the features and classes (``_inputs``), the claims'
        requests, constraints and config; once per claims."""
        last = self._last_spec
        if last is not None and last[0] is claims:
            return last[1]
        ids = tuple(map(id, claims))
        known = self._specs.get(ids)
        if known is None:  # (the claims held with their text keep their ids from being reused meanwhile)
            known = (tuple(claims), self._inputs + repr([(c.requests, c.constraints, c.config) for c in claims]))
            self._specs[ids] = known
        if isinstance(claims, tuple):  # immutable: the same object is the same claims
            self._last_spec = (claims, known[1])
        return known[1]

    def _lookup(self, node: Node, claims: Sequence[ResourceClaim]) -> tuple[NodeEntry, tuple[Any, ...]] | None:
        """The node's entry and the outcome's key there (``_memo_key``), or None."""
        taken = self._taken
        if taken is None:
            return None
        try:
            entry = self.slices.entry(node, self.features)
        except PoolError:
            return None
        pools = entry.pool_keys
        if pools is None:
            return None
        text = self._spec_text(claims)
        # The node's taken devices: its pools' taken devices (frozensets: those of a pool no pod took from since
        # are the same objects as last time) less any not on the node now (of an older generation of the pool).
        seen = entry.seen
        if len(pools) == 1:
            held: Any = taken.get(pools[0], _NO_DEVICES)
            if seen is None or seen[0] is not held:
                seen = entry.seen = (held, held & entry.devices)
        else:
            held = tuple([taken.get(k, _NO_DEVICES) for k in pools])
            if seen is None or seen[0] != held:
                seen = entry.seen = (held, frozenset().union(*held) & entry.devices)
        return entry, (text, seen[1])


class _Run:
    """One ``Allocate`` call: the search state (``allocator`` in upstream's file)."""

    def __init__(self, a: Allocator, node: Node, claims: Sequence[ResourceClaim], deadline: float | None) -> None:
        self.a = a
        self.deadline = deadline
        self.f = a.features
        self.node = node
        self.claims = list(claims)
        self.pools: list[Pool] = []
        self.request_data: dict[RequestKey, _RequestData] = {}
        self.constraints: list[list[_AttributeConstraint]] = [[] for _ in claims]
        self.matches: dict[tuple[DeviceID, RequestKey], bool] = {}
        self.cel_devices: dict[DeviceID, CelDevice] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Decimal]] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Decimal]]] = {}
        self.result: list[list[_Result]] = [[] for _ in claims]

    # --- setup -------------------------------------------------------------------------------------

    def run(self) -> list[AllocationResult] | None:
        try:
            self.pools = self.a.slices.pools(self.node, self.f)
        except PoolError as exc:
            raise AllocationError(f"gather pool information: {exc}") from None
        for ci, claim in enumerate(self.claims):
            self._prepare_claim(ci, claim)
        try:
            done = self._allocate_one((0, 0, 0, 0), False, (0, 0, 0))
        except _MaxSizeExceeded:
            # Upstream returns errAllocationResultMaxSizeExceeded itself when it escapes the first claim.
            raise AllocationError("allocation max size exceeded") from None
        if not done:
            if any(p.invalid for p in self.pools):
                raise FailedOnNodeError("invalid resource pools were encountered")
            return None
        return [self._result(ci, claim) for ci, claim in enumerate(self.claims)]

    def _prepare_claim(self, ci: int, claim: ResourceClaim) -> None:
        min_per_claim = 0
        for ri, request in enumerate(claim.requests):
            has_subs = bool(request.first_available)
            if not self.f.prioritized_list and has_subs:
                raise AllocationError(f"claim {claim.key}, request {request.name}: has subrequests, but the "
                                      "DRAPrioritizedList feature is disabled")
            if has_subs:
                min_per_request = math.inf
                for si, sub in enumerate(request.first_available):
                    data = self._validate(sub, request, (ci, ri, si))
                    self.request_data[(ci, ri, si)] = data
                    min_per_request = min(min_per_request, data.num_devices)
            else:
                assert request.exactly is not None
                data = self._validate(request.exactly, None, (ci, ri, 0))
                self.request_data[(ci, ri, 0)] = data
                min_per_request = data.num_devices
            if min_per_request > ALLOCATION_RESULTS_MAX_SIZE - min_per_claim:
                raise AllocationError(
                    f"claim {claim.key}, request {request.name}: adding {min_per_request} devices exceeds the claim "
                    f"limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {min_per_claim} already accounted for")
            min_per_claim += int(min_per_request)
        constraints: list[_AttributeConstraint] = []
        for i, c in enumerate(claim.constraints):
            if c.match_attribute is not None:
                constraints.append(_MatchAttribute(frozenset(c.requests), c.match_attribute))
            elif c.distinct_attribute is not None:
                constraints.append(_DistinctAttribute(frozenset(c.requests), c.distinct_attribute))
            else:
                raise AllocationError(f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint "
                                      "type?)")
        self.constraints[ci] = constraints

    def _validate(self, request: DeviceSubRequest, parent: DeviceRequest | None, key: RequestKey) -> _RequestData:
        """``validateDeviceRequest``: the class, and how many devices (for All: which ones)."""
        claim = self.claims[key[0]]
        data = _RequestData(request, parent)
        if request.has_derived_attributes:
            raise AllocationError(f"claim {claim.key}, request {request.name}: cannot handle request with derived "
                                  "attributes, the feature is disabled")
        for i, sel in enumerate(request.selectors):
            if sel.cel is None:
                raise AllocationError(f"claim {claim.key}, request {request.name}, selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
        if not self.f.admin_access and request.admin_access is not None:
            raise AllocationError(f"claim {claim.key}, request {request.name}: admin access is requested, but the "
                                  "feature is disabled")
        if not self.f.consumable_capacity and request.capacity_requests is not None:
            what = "subrequest" if parent is not None else "request"
            raise AllocationError(f"claim {claim.key}, {what} {request.name}: has capacity requests, but the "
                                  "DRAConsumableCapacity feature is disabled")
        if not request.device_class_name:
            raise AllocationError(f"claim {claim.key}, request {request.name}: missing device class name "
                                  "(unsupported request type?)")
        device_class = self.a.classes.get(request.device_class_name)
        if device_class is None:
            raise AllocationError(f"claim {claim.key}, request {request.name}: could not retrieve device class "
                                  f"{request.device_class_name}: {_class_not_found(request.device_class_name)}")
        data.device_class = device_class
        if request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == ALLOCATION_MODE_ALL:
            self._all_devices(key, data)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {claim.key}, request {request.name}: unsupported count mode "
                                  f"{request.allocation_mode}")
        return data

    def _all_devices(self, key: RequestKey, data: _RequestData) -> None:
        claim = self.claims[key[0]]
        for pool in self.pools:
            if pool.incomplete:
                raise AllocationError(f"claim {claim.key}, request {data.request.name}: asks for all devices, but "
                                      f"resource pool {pool.pool_id} is currently being updated")
            if pool.invalid:
                raise AllocationError(f"claim {claim.key}, request {data.request.name}: asks for all devices, but "
                                      f"resource pool {pool.pool_id} is currently invalid")
            for s in pool.slices_targeting_node:
                for i, device in enumerate(s.devices):
                    if not self._selectable(key, data, s, i):
                        continue
                    if self.f.consumable_capacity:
                        try:
                            fits = cap.request_fits({}, data.request.capacity_requests, device.capacity, {},
                                                    self.f.fractional_capacity_range)
                        except cap.CapacityError as exc:
                            raise AllocationError(f"claim {claim.key}, request {data.request.name}: checking capacity "
                                                  f"for device {device.name}: {exc}") from None
                        if not fits:
                            continue
                    data.all_devices.append(_Candidate((s.driver, s.pool_name, device.name), device, s, pool))

    # --- the search --------------------------------------------------------------------------------

    def _allocate_one(self, r: tuple[int, int, int, int], allocate_sub: bool, start: tuple[int, int, int]) -> bool:
        """``allocateOne``: find a device for position r and recurse; True once everything is allocated."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout("filter operation aborted: context deadline exceeded")
        ci, ri, si, di = r
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self._allocate_one((ci + 1, 0, 0, 0), False, (0, 0, 0))
            except _MaxSizeExceeded:
                return False
        key = (ci, ri, si)
        data = self.request_data[key]
        if not allocate_sub and data.parent is not None:
            return self._allocate_sub_requests(r)
        request = data.request
        do_all = request.allocation_mode == ALLOCATION_MODE_ALL
        if do_all and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._allocate_one((ci, ri + 1, 0, 0), False, (0, 0, 0))
        if data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE - len(self.result[ci]):
            raise _MaxSizeExceeded()
        if do_all:
            undo = self._allocate_device(r, data.all_devices[di], must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one((ci, ri, si, di + 1), allocate_sub, (0, 0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        return self._search(r, data, allocate_sub, start)

    def _allocate_sub_requests(self, r: tuple[int, int, int, int]) -> bool:
        """Try each subrequest in order; the first that leads to a full solution is selected."""
        ci, ri, _, di = r
        all_exceeded = True
        si = 0
        while (ci, ri, si) in self.request_data:
            try:
                success = self._allocate_one((ci, ri, si, di), True, (0, 0, 0))
            except _MaxSizeExceeded:
                si += 1
                continue
            all_exceeded = False
            if success:
                self.request_data[(ci, ri, 0)].selected_sub_request = si
                return True
            si += 1
        if all_exceeded:
            raise _MaxSizeExceeded()
        return False

    def _search(self, r: tuple[int, int, int, int], data: _RequestData, allocate_sub: bool,
                start: tuple[int, int, int]) -> bool:
        ci, ri, si, di = r
        key = (ci, ri, si)
        request = data.request
        admin = bool(request.admin_access)
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            slice_start = start[1] if pi == start[0] else 0
            for sli in range(slice_start, len(pool.slices_targeting_node)):
                s = pool.slices_targeting_node[sli]
                dev_start = start[2] if pi == start[0] and sli == start[1] else 0
                for dvi in range(dev_start, len(s.devices)):
                    device = s.devices[dvi]
                    did = (pool.driver, pool.pool, device.name)
                    if admin and ci in self.allocating.get(did, ()):
                        continue
                    if not admin and self._in_use(did):
                        continue
                    if not self._selectable(key, data, s, dvi):
                        continue
                    if self.f.consumable_capacity and not self._capacity_fits(ci, data, did, device):
                        continue
                    undo = self._allocate_device(r, _Candidate(did, device, s, pool), must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one((ci, ri, si, di + 1), allocate_sub, (pi, sli, dvi + 1))
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _in_use(self, did: DeviceID) -> bool:
        return did in self.a.state.allocated_devices or bool(self.allocating.get(did))

    def _capacity_in_use(self, did: DeviceID) -> bool:
        st = self.a.state
        return (did in st.aggregated_capacity or any(d == did for d, _ in st.shared_device_ids)
                or did in self.allocating_capacity)

    def _capacity_fits(self, ci: int, data: _RequestData, did: DeviceID, device: Device,
                       verb: str = "checking") -> bool:
        """``CmpRequestOverCapacity`` with what allocated and in-flight shares already consume."""
        try:
            return cap.request_fits(self.a.state.aggregated_capacity.get(did, {}), data.request.capacity_requests,
                                    device.capacity, self.allocating_capacity.get(did, {}),
                                    self.f.fractional_capacity_range)
        except cap.CapacityError as exc:
            raise AllocationError(f"claim {self.claims[ci].key}, request {data.request.name}: {verb} capacity for "
                                  f"device {device_id_text(did)}: {exc}") from None

    # --- selectors ---------------------------------------------------------------------------------

    def _selectable(self, key: RequestKey, data: _RequestData, s: ResourceSlice, index: int) -> bool:
        """``isSelectable``: class and request selectors, and per-device node selection; cached per pair."""
        device = s.devices[index]
        if not self.f.device_binding_and_status and device.binding_conditions:
            return False
        did = (s.driver, s.pool_name, device.name)
        cached = self.matches.get((did, key))
        if cached is not None:
            return cached
        ok = True
        if data.device_class is not None:
            ok = self._selectors_match(key, device, did, data.device_class, data.device_class.selectors)
        ok = ok and self._selectors_match(key, device, did, None, data.request.selectors)
        if ok and s.per_device_node_selection:
            try:
                ok = node_matches(self.node, device.node_name or "", bool(device.all_nodes), device.node_selector,
                                  f"device {device.name}")
            except PoolError as exc:
                raise AllocationError(str(exc)) from None
        self.matches[(did, key)] = ok
        return ok

    def _selectors_match(self, key: RequestKey, device: Device, did: DeviceID, device_class: DeviceClass | None,
                         selectors: Sequence[DeviceSelector]) -> bool:
        owner = f"class {device_class.name}" if device_class is not None else f"claim {self.claims[key[0]].key}"
        for i, sel in enumerate(selectors):
            compiled = self.a.cel_cache.get_or_compile(sel.cel or "")
            if compiled.error is not None:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {compiled.error}")
            try:
                matches = compiled.device_matches_cached(device, did[0], lambda: self._cel_device(did, device))
            except CelRuntimeError as exc:
                raise AllocationError(f"{owner}: selector #{i} on device {device_id_text(did)}: CEL runtime error: "
                                      f"{exc}") from None
            if not matches:
                return False
        return True

    def _cel_device(self, did: DeviceID, device: Device) -> CelDevice:
        """The selector input for a device, built once per run (its CEL value is built on first use)."""
        cel_device = self.cel_devices.get(did)
        if cel_device is None:
            cel_device = CelDevice(did[0], device.attributes, device.capacity, device.allow_multiple_allocations)
            self.cel_devices[did] = cel_device
        return cel_device

    # --- taking a device ---------------------------------------------------------------------------

    def _allocate_device(self, r: tuple[int, int, int, int], c: _Candidate, must: bool) -> Callable[[], None] | None:
        """``allocateDevice``: check use, counters, taints and constraints; record the device.

        Returns the rollback for backtracking, or None when the device cannot be taken.
        """
        ci, ri, si, _ = r
        claim = self.claims[ci]
        data = self.request_data[(ci, ri, si)]
        request = data.request
        admin = bool(request.admin_access)
        multi = self.f.consumable_capacity and bool(c.device.allow_multiple_allocations)
        if not multi and admin and ci in self.allocating.get(c.id, ()):
            return None
        if not admin and self._in_use(c.id):
            return None
        if not self.f.partitionable_devices and c.device.consumes_counters:
            return None
        counters_reserved = False
        if not (multi and self._capacity_in_use(c.id)) and c.device.consumes_counters:
            if not self._reserve_counters(c):
                return None
            counters_reserved = True
        base, sub = (data.parent.name, request.name) if data.parent is not None else (request.name, "")
        undo_steps: list[Callable[[], None]] = []
        if counters_reserved:
            undo_steps.append(lambda: self._release_counters(c))

        def rollback() -> None:
            for step in reversed(undo_steps):
                step()

        if self.f.device_taints and not _tolerated(c.device, request):
            rollback()
            return None
        for constraint in self.constraints[ci]:
            if not constraint.add(base, sub, c.device, c.id):
                rollback()
                if must:
                    raise AllocationError(f"claim {claim.key}, request {request.name}: cannot add device "
                                          f"{device_id_text(c.id)} because a claim constraint would not be satisfied")
                return None
            undo_steps.append(_remover(constraint, base, sub, c))
        if not multi:
            self.allocating.setdefault(c.id, set()).add(ci)
            undo_steps.append(lambda: self.allocating[c.id].discard(ci))
        consumed: dict[str, Decimal] | None = None
        share_id = None
        if self.f.consumable_capacity:
            try:
                fits = self._capacity_fits(ci, data, c.id, c.device, "rechecking")
            except AllocationError:
                rollback()
                raise
            if not fits:
                rollback()
                return None
            if multi:
                consumed = cap.consumed_by_request(request.capacity_requests, c.device.capacity,
                                                   self.f.fractional_capacity_range)
                share_id = self.a.new_share_id()
                existed = c.id in self.allocating_capacity
                agg = self.allocating_capacity.setdefault(c.id, {})
                for name, q in consumed.items():
                    agg[name] = agg.get(name, Decimal(0)) + q
                undo_steps.append(lambda: self._release_capacity(c.id, consumed or {}, existed))
        self.result[ci].append(_Result(request.name, data.parent.name if data.parent is not None else "", c.id,
                                       c.device, c.slice, share_id, consumed or None, True if admin else None))
        n = len(self.result[ci]) - 1
        undo_steps.append(lambda: self._truncate(ci, n))
        return rollback

    def _truncate(self, ci: int, n: int) -> None:
        del self.result[ci][n:]

    def _release_capacity(self, did: DeviceID, consumed: Mapping[str, Decimal], existed: bool) -> None:
        """Undo one share's consumption; the entry of an earlier share stays as its "shared" marker."""
        agg = self.allocating_capacity.get(did, {})
        for name, q in consumed.items():
            agg[name] = agg.get(name, Decimal(0)) - q
            if agg[name] == 0:
                del agg[name]
        if not agg and not existed:
            self.allocating_capacity.pop(did, None)

    def _pool_counters(self, pool: Pool) -> dict[str, dict[str, Decimal]]:
        """The pool's counters less what allocated (or shared) devices consume, once per allocator."""
        cached = self.a.available_counters.get(pool.pool_id)
        if cached is not None:
            return cached
        available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
        for slices in (pool.slices_targeting_node, pool.slices_not_targeting_node):
            for s in slices:
                for d in s.devices:
                    if not self.a.state.is_allocated((s.driver, s.pool_name, d.name)):
                        continue
                    for consumption in d.consumes_counters:
                        counter_set = available.get(consumption.counter_set, {})
                        for name, q in consumption.counters.items():
                            if name in counter_set:
                                counter_set[name] -= q
        self.a.available_counters[pool.pool_id] = available
        return available

    def _reserve_counters(self, c: _Candidate) -> bool:
        """``checkAvailableCounters``: take the device's counters if every counter stays within the pool's."""
        available = self._pool_counters(c.pool)
        consumed = self.consumed_counters.setdefault(c.pool.pool_id, {})
        for consumption in c.device.consumes_counters:
            counter_set = consumed.setdefault(consumption.counter_set, {})
            for name, q in consumption.counters.items():
                counter_set[name] = counter_set.get(name, Decimal(0)) + q
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, value in counters.items():
                if value < used.get(name, Decimal(0)):
                    self._release_counters(c)
                    return False
        return True

    def _release_counters(self, c: _Candidate) -> None:
        consumed = self.consumed_counters.get(c.pool.pool_id, {})
        for consumption in c.device.consumes_counters:
            counter_set = consumed.get(consumption.counter_set, {})
            for name, q in consumption.counters.items():
                counter_set[name] = counter_set.get(name, Decimal(0)) - q

    # --- the result --------------------------------------------------------------------------------

    def _result(self, ci: int, claim: ResourceClaim) -> AllocationResult:
        results = []
        for res in self.result[ci]:
            request = self._lookup_request(claim, res)
            results.append(DeviceRequestAllocationResult(
                request=res.request_name(), driver=res.id[0], pool=res.id[1], device=res.id[2],
                admin_access=res.admin_access, tolerations=request.tolerations if request is not None else (),
                binding_conditions=res.device.binding_conditions if self.f.device_binding_and_status else (),
                binding_failure_conditions=(res.device.binding_failure_conditions
                                            if self.f.device_binding_and_status else ()),
                share_id=res.share_id, consumed_capacity=res.consumed_capacity))
        try:
            node_selector = self._node_selector(self.result[ci])
        except AllocationError as exc:
            raise AllocationError(f"create NodeSelector for claim {claim.name}: {exc}") from None
        return AllocationResult(tuple(results), tuple(self._config(ci, claim)), node_selector)

    @staticmethod
    def _lookup_request(claim: ResourceClaim, res: _Result) -> DeviceSubRequest | None:
        name = res.parent or res.request
        for request in claim.requests:
            if request.name != name:
                continue
            if not res.parent:
                return request.exactly
            for sub in request.first_available:
                if sub.name == res.request:
                    return sub
        return None

    def _selected(self, ci: int, ri: int) -> _RequestData:
        data = self.request_data[(ci, ri, 0)]
        if data.parent is not None:
            data = self.request_data[(ci, ri, data.selected_sub_request)]
        return data

    def _config(self, ci: int, claim: ResourceClaim) -> list[DeviceAllocationConfiguration]:
        """Class configs once per class (naming every request using the class), then claim configs."""
        configs: list[tuple[str, list[str], Any]] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for ri in range(len(claim.requests)):
            data = self._selected(ci, ri)
            dc = data.device_class
            if dc is None:
                continue
            if dc.name in class_ranges:
                lo, hi = class_ranges[dc.name]
                for i in range(lo, hi):
                    configs[i][1].append(data.request_name())
                continue
            lo = len(configs)
            configs.extend((CONFIG_SOURCE_CLASS, [data.request_name()], cfg) for cfg in dc.config)
            class_ranges[dc.name] = (lo, len(configs))
        for cc in claim.config:
            if not cc.requests:
                configs.append((CONFIG_SOURCE_CLAIM, [], cc.config))
                continue
            for ri, request in enumerate(claim.requests):
                if request.name in cc.requests:
                    configs.append((CONFIG_SOURCE_CLAIM, list(cc.requests), cc.config))
                    break
                data = self.request_data[(ci, ri, 0)]
                if data.parent is None:
                    continue
                sub = request.first_available[data.selected_sub_request]
                if f"{request.name}/{sub.name}" in cc.requests:
                    configs.append((CONFIG_SOURCE_CLAIM, list(cc.requests), cc.config))
                    break
        out = []
        for source, requests, cfg in configs:
            if requests and self._applies_to_all(ci, claim, requests):
                requests = []
            out.append(DeviceAllocationConfiguration(source, tuple(requests), cfg))
        return out

    def _applies_to_all(self, ci: int, claim: ResourceClaim, requests: Sequence[str]) -> bool:
        for ri, request in enumerate(claim.requests):
            if request.name in requests:
                continue
            data = self.request_data[(ci, ri, 0)]
            if data.parent is not None:
                sub = request.first_available[data.selected_sub_request]
                if f"{request.name}/{sub.name}" in requests:
                    continue
            return False
        return True

    def _node_selector(self, results: Sequence[_Result]) -> Mapping[str, Any] | None:
        """``createNodeSelector``: this node when a device is node-local, else the slices' selectors merged."""
        fields: list[Mapping[str, Any]] = []
        exprs: list[Mapping[str, Any]] = []
        for res in results:
            if res.slice.per_device_node_selection:
                node_name, selector = res.device.node_name, res.device.node_selector
            else:
                node_name, selector = res.slice.node_name, res.slice.node_selector
            if node_name is not None or res.device.binds_to_node:
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [self.node.name]}]}]}
            if selector is None:
                continue
            terms = selector.get("nodeSelectorTerms") or []
            if len(terms) > 1:
                raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
            if len(terms) == 1:
                _add_requirements(terms[0].get("matchFields") or [], fields)
                _add_requirements(terms[0].get("matchExpressions") or [], exprs)
        if not fields and not exprs:
            return None
        term: dict[str, Any] = {}
        if exprs:
            term["matchExpressions"] = exprs
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


def _remover(constraint: _AttributeConstraint, base: str, sub: str,
             c: _Candidate) -> Callable[[], None]:
    return lambda: constraint.remove(base, sub, c.device, c.id)


def _add_requirements(new: Sequence[Mapping[str, Any]], into: list[Mapping[str, Any]]) -> None:
    """Append requirements not yet present (same key, operator and set of values)."""
    for req in new:
        values = set(req.get("values") or [])
        if not any(r.get("key") == req.get("key") and r.get("operator") == req.get("operator")
                   and set(r.get("values") or []) == values for r in into):
            into.append(req)
