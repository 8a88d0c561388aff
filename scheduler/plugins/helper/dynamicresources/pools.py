"""Resource pools as one node sees them, and DeviceTaintRules applied to slices.

Follows ``k8s.io/dynamic-resource-allocation/structured/internal/incubating/pools_incubating.go``
(``GatherPools``, ``NodeMatches``: the slices a node can use, grouped by driver and pool, only the
newest generation, a pool incomplete while not all of its ``resourceSliceCount`` slices are known,
invalid with duplicate device names or bad counter references, pools in driver/pool order with
those whose devices have binding conditions last, slices in name order),
``k8s.io/dynamic-resource-allocation/structured/internal/incubating/compatibility_groups.go``
(DRADeviceCompatibilityGroups is alpha and off: such slices are ignored) and
``k8s.io/dynamic-resource-allocation/resourceslice/tracker/tracker.go``'s ``applyPatches`` (a DeviceTaintRule's taint
is appended to every device its selector names).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from scheduler.model.dra import DeviceTaintRule, ResourceSlice
from scheduler.model.node import Node
from scheduler.plugins.helper.nodeaffinity import parse_required_terms

PoolKey = tuple[str, str]  # driver, pool


class PoolError(ValueError):
    """A slice's node selection cannot be evaluated (upstream: a fatal allocation error)."""


@dataclass(frozen=True, slots=True)
class Features:
    """The allocator features v1.37.2 turns on by default (``structured.Features`` from feature gates).

    With these, ``NewAllocator`` picks the "incubating" implementation, which this package follows.
    The alpha ones (compatibility groups, list-type attributes, derived attributes, optional node
    operations) are off and not implemented.
    """

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_binding_and_status: bool = True
    consumable_capacity: bool = True
    fractional_capacity_range: bool = True


DEFAULT_FEATURES = Features()


@dataclass(slots=True)
class Pool:
    driver: str
    pool: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices_targeting_node: list[ResourceSlice] = field(default_factory=list)
    slices_not_targeting_node: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, Mapping[str, Decimal]] = field(default_factory=dict)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.pool}"


def _selector_matches(node: Node, selector: Mapping[str, Any], what: str) -> bool:
    """``nodeaffinity.NewNodeSelector(...).Match``: any term matches; a malformed selector is an error."""
    terms = parse_required_terms(selector, what, "nodeSelector")
    errors = [e for t in terms for e in t.errors]
    if errors:
        raise PoolError(f"failed to parse node selector: {'; '.join(errors)}")
    return any(t.matches(node) for t in terms)


def node_matches(node: Node, node_name: str, all_nodes: bool, selector: Mapping[str, Any] | None,
                 what: str = "") -> bool:
    """``NodeMatches``: a node name, all nodes, or a node selector (in that order); nothing: no match."""
    if node_name:
        return node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return _selector_matches(node, selector, what)
    return False


def _uses_compatibility_groups(s: ResourceSlice) -> bool:
    return any(c.compatibility_groups for d in s.devices for c in d.consumes_counters)


def _relevant(s: ResourceSlice, node: Node) -> bool | None:
    """Whether a slice offers devices to the node; None for a slice with no node selection at all."""
    if s.node_name or s.all_nodes or s.node_selector is not None:
        try:
            return node_matches(node, s.node_name or "", bool(s.all_nodes), s.node_selector, f"ResourceSlice {s.name}")
        except PoolError as exc:
            raise PoolError(f"failed to perform node selection for slice {s.name}: {exc}") from None
    if s.per_device_node_selection:
        for d in s.devices:
            try:
                if node_matches(node, d.node_name or "", bool(d.all_nodes), d.node_selector, f"device {d.name}"):
                    return True
            except PoolError as exc:
                raise PoolError(f"failed to perform node selection for device {d.name} in slice {s.name}: "
                                f"{exc}") from None
        return False
    return None


def _add_slice(pools: dict[tuple[str, str], list[ResourceSlice]], s: ResourceSlice) -> None:
    """Keep only the newest generation of each pool."""
    key = (s.driver, s.pool_name)
    current = pools.get(key)
    if current is None or s.pool_generation > current[0].pool_generation:
        pools[key] = [s]
    elif s.pool_generation == current[0].pool_generation:
        current.append(s)


def _check_slices_in_pool(all_slices: Sequence[ResourceSlice], key: tuple[str, str],
                          generation: int) -> tuple[bool, list[ResourceSlice]]:
    """``checkSlicesInPool``: (obsolete because a newer generation exists, the pool's slices of this one)."""
    same = []
    for s in all_slices:
        if (s.driver, s.pool_name) != key:
            continue
        if s.pool_generation == generation:
            same.append(s)
        elif s.pool_generation > generation:
            return True, []
    return False, same


def _duplicate_device(slices: Iterable[ResourceSlice]) -> str | None:
    seen: set[str] = set()
    for s in slices:
        for d in s.devices:
            if d.name in seen:
                return f"duplicate device name {d.name}"
            seen.add(d.name)
    return None


def _counter_sets(slices: Iterable[ResourceSlice]) -> tuple[dict[str, Mapping[str, Decimal]], str | None]:
    out: dict[str, Mapping[str, Decimal]] = {}
    for s in slices:
        for cs in s.shared_counters:
            if cs.name in out:
                return out, f"duplicate counter set name {cs.name}"
            out[cs.name] = cs.counters
    return out, None


def _bad_consumption(counter_sets: Mapping[str, Mapping[str, Decimal]], slices: Iterable[ResourceSlice]) -> str | None:
    for s in slices:
        for d in s.devices:
            for c in d.consumes_counters:
                available = counter_sets.get(c.counter_set)
                if available is None:
                    return f"counter set {c.counter_set} not found"
                for name in c.counters:
                    if name not in available:
                        return f"counter {name} not found in counter set {c.counter_set}"
    return None


def _build_pool(key: tuple[str, str], slices: list[ResourceSlice], features: Features,
                all_for_pool: Sequence[ResourceSlice]) -> Pool:
    """``buildPool``: slices sorted by name; counter sets from every slice of the pool."""
    slices = sorted(slices, key=lambda s: s.name)
    device_slices: list[ResourceSlice] = []
    counter_slices: list[ResourceSlice] = []
    not_targeting: list[ResourceSlice] = []
    for s in slices:
        (counter_slices if features.partitionable_devices and s.shared_counters else device_slices).append(s)
    if len(slices) < len(all_for_pool):
        names = {s.name for s in slices}
        for s in all_for_pool:
            if s.name in names:
                continue
            (counter_slices if features.partitionable_devices and s.shared_counters else not_targeting).append(s)
    pool = Pool(key[0], key[1])
    reason = _duplicate_device(device_slices)
    if reason is None and features.partitionable_devices:
        counters, reason = _counter_sets(counter_slices)
        reason = reason or _bad_consumption(counters, device_slices) or _bad_consumption(counters, not_targeting)
        pool.counter_sets = counters
    if reason is not None:
        return Pool(key[0], key[1], invalid=True, invalid_reason=reason)
    pool.slices_targeting_node = device_slices
    pool.slices_not_targeting_node = not_targeting if features.partitionable_devices else []
    return pool


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.slices_targeting_node for d in s.devices)


def gather_pools(slices_for_node: Sequence[ResourceSlice], node: Node, features: Features,
                 all_slices: Sequence[ResourceSlice]) -> list[Pool]:
    """``GatherPools``: the pools with devices for this node, in upstream's order."""
    grouped: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices_for_node:
        if not features.partitionable_devices and (s.per_device_node_selection is not None or s.shared_counters):
            continue
        if _uses_compatibility_groups(s):
            continue
        if _relevant(s, node):
            _add_slice(grouped, s)
    plain: list[Pool] = []
    with_bindings: list[Pool] = []
    for key, slices in grouped.items():
        count = slices[0].pool_resource_slice_count
        if len(slices) == count:
            pool = _build_pool(key, slices, features, ())
        else:
            obsolete, all_for_pool = _check_slices_in_pool(all_slices, key, slices[0].pool_generation)
            if obsolete:
                continue
            all_for_pool = [s for s in all_for_pool if not _uses_compatibility_groups(s)]
            if len(all_for_pool) != count:
                plain.append(Pool(key[0], key[1], incomplete=True))
                continue
            pool = _build_pool(key, slices, features, all_for_pool)
        (with_bindings if _has_binding_conditions(pool) else plain).append(pool)
    plain.sort(key=lambda p: (p.driver, p.pool))
    with_bindings.sort(key=lambda p: (p.driver, p.pool))
    return plain + with_bindings


@dataclass(slots=True)
class NodeEntry:
    """One node's pools for one Node object and features (``GatherPools``), with the allocator's outcomes
    remembered there. ``pool_keys``: the pools' (driver, pool) where nothing but which of their devices are
    taken can change an allocation on the node (every slice of each pool on the node, no shared devices), else
    None (nothing is remembered)."""

    node: Node
    features: Features
    pools: list[Pool]
    pool_keys: tuple[PoolKey, ...] | None
    devices: frozenset[tuple[str, str, str]] = frozenset()  # the ids of the pools' devices (with pool_keys)
    single_pool: PoolKey | None = None  # pool_keys' one pool, if one
    memo: dict[Any, tuple[Any, Any]] = field(default_factory=dict)  # key -> (objects held, outcome)
    # the pools' taken devices last looked at, and those of them on the node (one tuple: stored at once)
    seen: tuple[Any, frozenset[tuple[str, str, str]]] | None = None


class SliceIndex:
    """The slices the scheduler sees, by node, and each node's pools (``GatherPools``) remembered per Node
    object: built once per change of the slices, so that a cycle's Filter calls do not regroup every slice.
    A Node object is never changed in place (an update brings a new one), and the allocator only reads
    pools, so a remembered list stands for as long as this index and that Node object do.

    It also holds the allocator's remembered outcomes per node (``remembered`` / ``remember``): the
    allocator's answer is a function of the node's pools, the Node, the claims' specs, the classes and
    which of the node's devices are taken, so the next pod with the same claims on an unchanged node
    gets the same answer without the search."""

    MEMO_PER_NODE = 8  # outcomes kept per node (a pod's claims rarely come in many shapes)

    def __init__(self, slices: Sequence[ResourceSlice]) -> None:
        self.all_slices = list(slices)
        self.on_node: dict[str, list[ResourceSlice]] = {}
        self.shared: list[ResourceSlice] = []
        for s in self.all_slices:
            if s.node_name:
                self.on_node.setdefault(s.node_name, []).append(s)
            else:
                self.shared.append(s)
        self.entries: dict[str, NodeEntry] = {}  # node name -> its entry (for the Node object it holds)

    def entry(self, node: Node, features: Features) -> NodeEntry:
        """The node's entry, built anew for another Node object or other features (its outcomes with it);
        raises PoolError as ``gather_pools`` does (an error is not remembered)."""
        cached = self.entries.get(node.name)
        if cached is not None and cached.node is node and (cached.features is features or cached.features == features):
            return cached
        pools = gather_pools(self.on_node.get(node.name, []) + self.shared, node, features, self.all_slices)
        plain = _plain_pools(pools)
        entry = NodeEntry(node, features, pools, None) if plain is None else \
            NodeEntry(node, features, pools, *plain, single_pool=plain[0][0] if len(plain[0]) == 1 else None)
        self.entries[node.name] = entry
        return entry

    def pools(self, node: Node, features: Features) -> list[Pool]:
        """``gather_pools`` for the node; raises PoolError as it does (an error is not remembered)."""
        return self.entry(node, features).pools

    def remembered(self, node: Node, key: Any) -> tuple[bool, Any]:
        """(found, outcome) for ``key`` on this Node object (another object of the same name finds nothing)."""
        entry = self.entries.get(node.name)
        found = None if entry is None or entry.node is not node else entry.memo.get(key)
        return (False, None) if found is None else (True, found[1])

    @classmethod
    def remember(cls, entry: NodeEntry, key: Any, held: Any, outcome: Any) -> None:
        """Keep ``outcome`` for ``key``; ``held`` stays referenced as long as the entry (the objects whose ids
        the key holds, so that no other object can take one of those ids meanwhile)."""
        if len(entry.memo) >= cls.MEMO_PER_NODE:
            entry.memo.clear()
        entry.memo[key] = (held, outcome)


def _plain_pools(pools: Sequence[Pool]) -> tuple[tuple[PoolKey, ...], frozenset[tuple[str, str, str]]] | None:
    # A pool's shared counters are its own and what is left of them follows from which of its devices are
    # taken: with every slice of the pool on this node, those devices are all in the list.
    devices = []
    for pool in pools:
        if pool.slices_not_targeting_node:
            return None
        for s in pool.slices_targeting_node:
            for d in s.devices:
                if d.allow_multiple_allocations:
                    return None
                devices.append((s.driver, s.pool_name, d.name))
    return tuple((pool.driver, pool.pool) for pool in pools), frozenset(devices)


def apply_device_taint_rules(slices: Sequence[ResourceSlice], rules: Sequence[DeviceTaintRule]) -> list[ResourceSlice]:
    """Each rule's taint appended to the devices it selects (by driver, pool and device name; a rule
    without a selector selects nothing), as the scheduler's slice tracker patches slices."""
    out = []
    for s in slices:
        devices = list(s.devices)
        changed = False
        for rule in rules:
            if not rule.has_selector:
                continue
            if rule.driver is not None and rule.driver != s.driver:
                continue
            if rule.pool is not None and rule.pool != s.pool_name:
                continue
            for i, d in enumerate(devices):
                if rule.device is not None and rule.device != d.name:
                    continue
                devices[i] = replace(d, taints=(*d.taints, rule.taint))
                changed = True
        out.append(replace(s, devices=tuple(devices)) if changed else s)
    return out

