"""Resource arithmetic: the scheduler's view of requests and allocatable (framework.Resource upstream)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, resource_amount

# Defaults used for scoring only, per container without a request (util/pod_resources.go upstream).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


@dataclass(slots=True)
class Resource:
    """Amounts of compute resources; cpu in millicores, the rest in whole units."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, rl: Mapping[str, object] | None, obj: str, fld: str) -> Resource:
        """Build from a ResourceList dict such as status.allocatable or container requests."""
        r = cls()
        for name, value in (rl or {}).items():
            r.set(name, resource_amount(name, value, obj, f"{fld}.{name}"))
        return r

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def set(self, name: str, amount: int) -> None:
        if name == CPU:
            self.milli_cpu = amount
        elif name == MEMORY:
            self.memory = amount
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = amount
        elif name == PODS:
            self.allowed_pod_number = amount
        else:
            self.scalar[name] = amount

    def add(self, other: Resource) -> None:
        """In-place sum (pods count excluded: it is a node property, not a request)."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        """In-place difference, used when a pod leaves a node."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def set_max(self, other: Resource) -> None:
        """In-place per-resource maximum (init containers run one at a time)."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def copy(self) -> Resource:
        return Resource(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar)
        )

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or any(self.scalar.values()))


def _container_requests(
    c: Mapping[str, object], obj: str, fld: str, with_defaults: bool
) -> Resource:
    res = c.get("resources") or {}
    requests = res.get("requests") if isinstance(res, Mapping) else None
    r = Resource.from_list(requests if isinstance(requests, Mapping) else None, obj, f"{fld}.resources.requests")
    if with_defaults:
        names = requests.keys() if isinstance(requests, Mapping) else ()
        if CPU not in names:
            r.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in names:
            r.memory = DEFAULT_MEMORY_REQUEST
    return r


def pod_requests(spec: Mapping[str, object], obj: str, with_defaults: bool = False) -> Resource:
    """Effective pod request as upstream's resourcehelper.PodRequests computes it.

    App containers and restartable (sidecar) init containers add up; a regular init container needs
    its own request plus the sidecars started before it; the pod needs the larger of the two; pod
    overhead is added last. `with_defaults` applies the 100m / 200Mi non-zero defaults per container
    (scoring only).
    """
    reqs = Resource()
    for i, c in enumerate(_list(spec.get("containers"))):
        reqs.add(_container_requests(c, obj, f"spec.containers[{i}]", with_defaults))
    sidecars = Resource()
    init_max = Resource()
    for i, c in enumerate(_list(spec.get("initContainers"))):
        cr = _container_requests(c, obj, f"spec.initContainers[{i}]", with_defaults)
        if c.get("restartPolicy") == "Always":
            reqs.add(cr)
            sidecars.add(cr)
            need = sidecars.copy()
        else:
            need = cr
            need.add(sidecars)
        init_max.set_max(need)
    reqs.set_max(init_max)
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping) and isinstance(pod_level.get("requests"), Mapping) and not with_defaults:
        pl = Resource.from_list(pod_level["requests"], obj, "spec.resources.requests")
        # Pod-level requests (PodLevelResources, beta in 1.34) replace the aggregate for cpu and memory.
        if CPU in pod_level["requests"]:
            reqs.milli_cpu = pl.milli_cpu
        if MEMORY in pod_level["requests"]:
            reqs.memory = pl.memory
    overhead = spec.get("overhead")
    if isinstance(overhead, Mapping):
        reqs.add(Resource.from_list(overhead, obj, "spec.overhead"))
    return reqs


def _list(value: object) -> list[Mapping[str, object]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []
