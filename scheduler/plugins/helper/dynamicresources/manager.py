"""What DynamicResources knows of the cluster's DRA objects: the DRA manager and the claims' assume cache.

Follows ``pkg/scheduler/framework/plugins/dynamicresources/dra_manager.go``
(claim tracker: assume cache, in-flight allocations, allocated-devices tracking), the assume cache
(``pkg/scheduler/util/assumecache``) and the slice tracker's DeviceTaintRule patching.

* Claims as the watch delivers them, each possibly overridden by an *assumed* version: the object
  PreBind wrote (kept until the watch delivers that version or a newer one) or nothing. Upstream's
  assume cache replaces an assumed object only with one whose resourceVersion is at least as new.
* In-flight allocations: Reserve records a claim's new allocation here, so that the next pod's
  allocator sees its devices as taken before PreBind writes it; PreBind's success or Unreserve
  removes it.
* The devices in use, kept incrementally per claim (each claim change replaces that claim's
  contribution), so a scheduling cycle copies the sets instead of walking every claim.
* Slices and DeviceTaintRules, the tainted slice list built once per change, not per cycle.

Objects are parsed once, when the watch delivers them; an object that does not parse is logged and
left out (the API server validated it, so this means a field the model does not know).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import structlog

from scheduler.model.dra import (
    AllocationResult,
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
    device_class_from_api,
    device_taint_rule_from_api,
    resource_claim_from_api,
    resource_slice_from_api,
)
from scheduler.model.errors import InvalidObjectError
from scheduler.plugins.helper.dynamicresources.allocator import AllocatedState, DeviceID, PoolDeviceSet, by_pool
from scheduler.plugins.helper.dynamicresources.extended import ExtendedResourceCache
from scheduler.plugins.helper.dynamicresources.pools import PoolKey, SliceIndex, apply_device_taint_rules

log = structlog.get_logger(__name__)

RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_SLICE = "ResourceSlice"
DEVICE_CLASS = "DeviceClass"
DEVICE_TAINT_RULE = "DeviceTaintRule"
DRA_KINDS = frozenset({RESOURCE_CLAIM, RESOURCE_SLICE, DEVICE_CLASS, DEVICE_TAINT_RULE})

MANAGER_KEY = "dynamicresources.DraManager"  # Handle.shared_plugin_state key: one manager per scheduler
ClaimKey = tuple[str, str]  # namespace, name


def _version(rv: str) -> int:
    """A resourceVersion as a number (etcd's revisions); a non-numeric one compares as 0."""
    try:
        return int(rv)
    except ValueError:
        return 0


@dataclass(frozen=True, slots=True)
class _Contribution:
    """The devices one claim's allocation takes
    (``pkg/scheduler/framework/plugins/dynamicresources/allocateddevices.go``; admin access takes none)."""

    exclusive: tuple[DeviceID, ...] = ()
    shared: tuple[tuple[DeviceID, str], ...] = ()
    capacity: tuple[tuple[DeviceID, str, Decimal], ...] = ()


_NONE = _Contribution()


def _contribution(claim: ResourceClaim | None) -> _Contribution:
    if claim is None or claim.allocation is None:
        return _NONE
    exclusive: list[DeviceID] = []
    shared: list[tuple[DeviceID, str]] = []
    capacity: list[tuple[DeviceID, str, Decimal]] = []
    for r in claim.allocation.results:
        if r.admin_access:
            continue
        did = (r.driver, r.pool, r.device)
        if r.share_id is None:
            exclusive.append(did)
            continue
        shared.append((did, r.share_id))
        capacity.extend((did, name, q) for name, q in (r.consumed_capacity or {}).items())
    return _Contribution(tuple(exclusive), tuple(shared), tuple(capacity))


class _InUse:
    """The devices allocated claims take, as counts so that claims can be added and removed in any order."""

    def __init__(self) -> None:
        self.exclusive: Counter[DeviceID] = Counter()
        # the devices with a count, by pool: a change replaces its pool's frozenset, so the state handed out
        # is a copy of this dict (one entry a pool), not of every device
        self.by_pool: dict[PoolKey, frozenset[DeviceID]] = {}
        self.shared: Counter[tuple[DeviceID, str]] = Counter()
        self.capacity: dict[DeviceID, dict[str, Decimal]] = {}
        self._state: AllocatedState | None = None  # the sets as of the last change, handed out read-only

    def apply(self, c: _Contribution, sign: int) -> None:
        if c is not _NONE:
            self._state = None
        for did in c.exclusive:
            before = self.exclusive[did]
            self.exclusive[did] = after = before + sign
            if after <= 0:
                del self.exclusive[did]
            if (before > 0) != (after > 0):
                self._flip(did, after > 0)
        for key in c.shared:
            self.shared[key] += sign
            if self.shared[key] <= 0:
                del self.shared[key]
        for did, name, q in c.capacity:
            per = self.capacity.setdefault(did, {})
            per[name] = per.get(name, Decimal(0)) + sign * q
            if per[name] == 0:
                del per[name]
            if not per:
                del self.capacity[did]

    def _flip(self, did: DeviceID, taken: bool) -> None:
        pool = did[:2]
        held = self.by_pool.get(pool, frozenset())
        held = held | {did} if taken else held - {did}
        if held:
            self.by_pool[pool] = held
        else:
            self.by_pool.pop(pool, None)

    def state(self) -> AllocatedState:
        """The devices in use, one object until the next change: most cycles follow no claim change, and
        none of its readers changes it (``DraManager.allocated_state`` adds in-flight devices to copies)."""
        if self._state is None:
            self._state = AllocatedState(PoolDeviceSet(dict(self.by_pool)), set(self.shared),
                                         {did: dict(per) for did, per in self.capacity.items()})
        return self._state


class DraManager:
    """The DRA objects the plugin reads, fed by watch events (thread-safe: watch threads write, the
    scheduling and binding threads read)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[ClaimKey, ResourceClaim] = {}  # as the watch delivered them
        self._assumed: dict[ClaimKey, ResourceClaim] = {}  # newer versions this scheduler wrote or assumed
        self._in_flight: dict[str, ResourceClaim] = {}  # claim UID -> claim with the pending allocation
        self._in_use = _InUse()
        # the claim parsed last: a template's claims share one spec, parsed once (resource_claim_from_api)
        self._last_claim: ResourceClaim | None = None
        self._slices: dict[str, ResourceSlice] = {}
        self._classes: dict[str, DeviceClass] = {}
        self._extended = ExtendedResourceCache()
        self._rules: dict[str, DeviceTaintRule] = {}
        self._tainted: list[ResourceSlice] | None = None
        self._index: SliceIndex | None = None  # of _tainted, with each node's pools
        # (kind, namespace, name) -> the resourceVersion last parsed: a relist's unchanged objects are skipped,
        # which also keeps the slices' device objects (and the selector outcomes remembered on them).
        self._versions: dict[tuple[str, str, str], str] = {}

    # ----- watch events ------------------------------------------------------------------------

    def on_object_event(self, kind: str, deleted: bool, obj: Mapping[str, Any]) -> None:
        """Store or forget one DRA object; other kinds are ignored."""
        if kind not in DRA_KINDS:
            return
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        key = (kind, str(meta.get("namespace") or ""), name)
        rv = str(meta.get("resourceVersion") or "")
        with self._lock:
            if not deleted and rv and self._versions.get(key) == rv:
                return  # a resync's copy of what is stored: parsing it again would only cost time
            if deleted:
                self._versions.pop(key, None)
            else:
                self._versions[key] = rv
        try:
            with self._lock:
                if kind == RESOURCE_CLAIM:
                    self._claim_event((str(meta.get("namespace") or ""), name), deleted, obj)
                elif kind == RESOURCE_SLICE:
                    self._put(self._slices, name, None if deleted else resource_slice_from_api(obj))
                    self._tainted = None
                elif kind == DEVICE_CLASS:
                    self._class_event(name, deleted, obj)
                else:
                    self._put(self._rules, name, None if deleted else device_taint_rule_from_api(obj))
                    self._tainted = None
        except InvalidObjectError as exc:
            log.warning("DRA object not understood, ignored", kind=kind, name=name, error=str(exc))

    def _class_event(self, name: str, deleted: bool, obj: Mapping[str, Any]) -> None:
        """Store the class and keep the extended-resource mapping as upstream's cache does."""
        old = self._classes.get(name)
        if deleted:
            self._classes.pop(name, None)
            if old is not None:
                self._extended.delete(old)
            return
        new = device_class_from_api(obj)
        self._classes[name] = new
        self._extended.add_or_update(new, old)

    @staticmethod
    def _put(store: dict[str, Any], name: str, value: Any) -> None:
        if value is None:
            store.pop(name, None)
        else:
            store[name] = value

    def _effective(self, key: ClaimKey) -> ResourceClaim | None:
        return self._assumed.get(key) or self._claims.get(key)

    def _set_claim(self, key: ClaimKey, change: Any) -> None:
        """Apply ``change`` (a callable on the two dicts) keeping the devices-in-use counts right."""
        before = self._effective(key)
        change()
        after = self._effective(key)
        if before is not after:
            self._in_use.apply(_contribution(before), -1)
            self._in_use.apply(_contribution(after), +1)

    def _claim_event(self, key: ClaimKey, deleted: bool, obj: Mapping[str, Any]) -> None:
        if deleted:
            def drop() -> None:
                self._claims.pop(key, None)
                self._assumed.pop(key, None)
            self._set_claim(key, drop)
            return
        claim = resource_claim_from_api(obj, self._effective(key) or self._last_claim)
        self._last_claim = claim

        def store() -> None:
            self._claims[key] = claim
            assumed = self._assumed.get(key)
            if assumed is not None and (assumed.uid != claim.uid or
                                        _version(claim.resource_version) >= _version(assumed.resource_version)):
                del self._assumed[key]
        self._set_claim(key, store)

    # ----- reads ---------------------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The latest version known (an assumed one if newer than the watch's)."""
        with self._lock:
            return self._effective((namespace, name))

    def device_class(self, name: str) -> DeviceClass | None:
        with self._lock:
            return self._classes.get(name)

    def class_for_resource(self, resource: str) -> DeviceClass | None:
        """``DeviceClassResolver().GetDeviceClass``: the class backing an extended resource name."""
        with self._lock:
            return self._extended.get(resource)

    def extended_resources(self) -> ExtendedResourceCache:
        """The resolver itself (read under the GIL; its dict is replaced entry by entry)."""
        return self._extended

    def device_classes(self) -> dict[str, DeviceClass]:
        with self._lock:
            return dict(self._classes)

    def slices_with_taint_rules(self) -> list[ResourceSlice]:
        """All slices, each device carrying the taints DeviceTaintRules add (``ListWithDeviceTaintRules``)."""
        with self._lock:
            return self._tainted_slices()

    def _tainted_slices(self) -> list[ResourceSlice]:
        if self._tainted is None:
            self._tainted = apply_device_taint_rules(list(self._slices.values()), list(self._rules.values()))
            self._index = None
        return self._tainted

    def slice_index(self) -> SliceIndex:
        """``slices_with_taint_rules`` indexed by node, the same object until a slice or rule changes."""
        with self._lock:
            slices = self._tainted_slices()
            if self._index is None:
                self._index = SliceIndex(slices)
            return self._index

    def allocated_state(self) -> AllocatedState:
        """``GatherAllocatedState``: the devices allocated claims and in-flight allocations take (read-only:
        without in-flight allocations it is the cache's own object)."""
        with self._lock:
            state = self._in_use.state()
            in_flight = [c for c in self._in_flight.values() if not self._allocated_in_cache(c)]
        if not in_flight:
            return state
        extra = AllocatedState.from_claims(in_flight)
        capacity = {did: dict(per) for did, per in state.aggregated_capacity.items()}
        for did, per in extra.aggregated_capacity.items():
            agg = capacity.setdefault(did, {})
            for name, q in per.items():
                agg[name] = agg.get(name, Decimal(0)) + q
        taken = dict(state.allocated_by_pool())
        for pool, devices in by_pool(extra.allocated_devices).items():
            taken[pool] = taken.get(pool, frozenset()) | devices
        return AllocatedState(PoolDeviceSet(taken), {*state.shared_device_ids, *extra.shared_device_ids}, capacity)

    def _allocated_in_cache(self, claim: ResourceClaim) -> bool:
        """An in-flight claim whose allocation the cache already counts (PreBind wrote it, success
        cleanup not yet run): counted once."""
        known = self._effective((claim.namespace, claim.name))
        return known is not None and known.uid == claim.uid and known.allocation is not None

    # ----- in-flight allocations and the assume cache ------------------------------------------

    def pending_allocation(self, uid: str) -> AllocationResult | None:
        """``GetPendingAllocation``: the allocation Reserve made for the claim, not yet written."""
        with self._lock:
            claim = self._in_flight.get(uid)
            return None if claim is None else claim.allocation

    def signal_pending_allocation(self, claim: ResourceClaim, allocation: AllocationResult) -> None:
        """``SignalClaimPendingAllocation``: Reserve took these devices for the claim (nothing when the
        cache already has the claim allocated: the pod's cycle state was stale)."""
        with self._lock:
            known = self._effective((claim.namespace, claim.name))
            if known is not None and known.uid == claim.uid and known.allocation is not None:
                return
            self._in_flight[claim.uid] = replace(claim, allocation=allocation)

    def remove_pending_allocation(self, uid: str) -> bool:
        """``MaybeRemoveClaimPendingAllocation``: True when there was one (one pod per allocation here:
        the PodGroup sharing of pending allocations is not built)."""
        with self._lock:
            return self._in_flight.pop(uid, None) is not None

    def assume_claim(self, obj: Mapping[str, Any]) -> None:
        """``AssumeClaimAfterAPICall``: the object an API write returned, used until the watch catches up."""
        meta = obj.get("metadata") or {}
        claim = resource_claim_from_api(obj, self.claim(str(meta.get("namespace") or ""), str(meta.get("name") or "")))
        key = (claim.namespace, claim.name)
        with self._lock:
            known = self._effective(key)
            if known is not None and (known.uid != claim.uid or
                                      _version(claim.resource_version) < _version(known.resource_version)):
                return  # the watch is already past this write (or the claim was replaced)

            def store() -> None:
                self._assumed[key] = claim
            self._set_claim(key, store)

    def restore_claim(self, namespace: str, name: str) -> None:
        """``AssumedClaimRestore``: forget the assumed version, back to what the watch delivered."""
        key = (namespace, name)
        with self._lock:
            self._set_claim(key, lambda: self._assumed.pop(key, None))

    def in_flight_count(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def claims(self) -> Sequence[ResourceClaim]:
        """Every claim, assumed versions in place of the watch's (for tests and the cache dump)."""
        with self._lock:
            return [self._effective(k) for k in self._claims.keys() | self._assumed.keys()]  # type: ignore[misc]
