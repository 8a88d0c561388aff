"""Opportunistic batching (upstream KEP-5598), exact: alike pods reuse the previous pod's Filter verdicts
and Score values on every node whose NodeInfo is unchanged.

A pod's signature is its template (``template_key``: namespace, labels, annotations, owners and spec,
without volume names, which differ per pod) plus what each plugin's ``sign_pod`` adds; a plugin returns
None when its verdicts or scores for the pod depend on more than the template and one node (pod
(anti-)affinity anywhere in the cluster, topology spread, claims, volumes with claims or disks). The
batch keeps, for each of the latest signatures, every node's verdict and the raw (unnormalized) score of each
plugin, tied to the very NodeInfo object of the snapshot they were computed on: the snapshot replaces a
node's NodeInfo whenever it changes, so an identity check finds the nodes to re-evaluate (usually the one
the previous pod went to) without a Python loop per node. A change in the number of nodes re-evaluates
all of them (ImageLocality scales by it).

The filter walk is then answered from sorted lists of feasible and rejected node positions: the same
nodes, in the same rotation order from the same start index, as the per-node walk visits, so sampling
(numFeasibleNodesToFind), the diagnosis, the next start index, the scores and the heap's tie-break
are those of the reference path. Normalization, weights and selection run on the feasible nodes as
always. Nodes holding nominated pods that count for the pod (the two-pass filter reads them) are filtered
afresh each cycle and override the batch's verdicts for that walk. The algorithm uses the batch only when
PreFilter did not narrow the nodes; a signature is evaluated on all nodes only when a
second pod with it comes, so lone pods pay nothing but the signing. A signature that differs from a
remembered one only in fragments whose plugins can name the nodes they disagree on (SignatureDeltaPlugin:
PodTopologySpread's full domains) is batched at once, from a copy of that batch with those nodes re-filtered.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from itertools import compress
from operator import is_not, not_
from typing import Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt
import orjson

from scheduler.framework.interface import ScoreMatrix, SignPlugin
from scheduler.framework.score_rows import score_rows
from scheduler.framework.status import CODE_ERROR, CODE_SUCCESS, Status
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod

# The extension points whose plugins must all sign pods for a profile to batch (Framework's signers).
SIGNED_POINTS = ("preFilter", "filter", "preScore", "score")

T = TypeVar("T")
_MEMO_KEY = "batch.template_key"
_CONTAINER_FIELDS = ("containers", "initContainers", "ephemeralContainers")


def plugins_without_sign_pod(points: Mapping[str, Sequence[str]], plugins: Mapping[str, object]) -> list[str]:
    """The plugins that turn batching off for their whole profile: a PreFilter, Filter, PreScore or Score
    plugin that is no SignPlugin. ``points`` is Framework.list_plugins(), ``plugins`` its instances by name."""
    names = dict.fromkeys(name for point in SIGNED_POINTS for name in points.get(point, ()))
    return [name for name in names if not isinstance(plugins.get(name), SignPlugin)]


def template_key(pod: Pod) -> str:
    """The pod as plugins read it, minus what differs between pods of one workload: name, uid,
    volume names (the service-account token volume is named per pod) and the containers' mounts."""
    key = pod.memo.get(_MEMO_KEY)
    if key is None:
        raw = pod.raw
        meta = raw.get("metadata") or {}
        spec = dict(raw.get("spec") or {})
        spec.pop("nodeName", None)
        volumes = spec.pop("volumes", None)
        spec["volumes"] = [{k: v for k, v in vol.items() if k != "name"} if _is_mapping(vol) else vol
                           for vol in volumes] if volumes else []
        for field in _CONTAINER_FIELDS:
            containers = spec.get(field)
            # Rebuilt only where some container has mounts (or is not a dict): the same key either way.
            if isinstance(containers, list) and _has_mounts(containers):
                spec[field] = [_without_mounts(c) for c in containers]
        # Written out (no comprehension's frame, as below: every pod computes its key once).
        body = [meta.get("namespace"), meta.get("labels"), meta.get("annotations"), meta.get("ownerReferences"), spec]
        try:  # orjson is much faster; str, as orjson's bytes keep a 4 KiB buffer per pod
            key = orjson.dumps(body, option=orjson.OPT_SORT_KEYS, default=str).decode()
        except TypeError:  # an integer beyond 64 bits
            key = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        pod.memo[_MEMO_KEY] = key
    return key


_ABSENT = object()


class SignsByTemplate:
    """Base of the SignPlugins whose ``sign_pod`` reads the pod's template alone (TemplateSignPlugin): the
    framework signs each template once with them."""

    def signs_by_template(self) -> bool:
        return True


class TemplateMemo(Generic[T]):
    """Values a plugin derives from a pod's template alone (``template_key``) and what ``extra`` names (an
    object store's generation, say), shared by every pod of the template: a workload's pods are new objects
    each, so a memo in ``pod.memo`` derives them again for each pod. A derivation that raises (its error
    names its pod) is not remembered; the memo is cleared when full."""

    __slots__ = ("_values", "size")

    def __init__(self, size: int = 256) -> None:
        self._values: dict[tuple[str, Hashable], T] = {}
        self.size = size

    def get(self, pod: Pod, extra: Hashable, derive: Callable[[], T]) -> T:
        key = (template_key(pod), extra)
        value = self._values.get(key, _ABSENT)
        if value is _ABSENT:
            value = derive()
            if len(self._values) >= self.size:
                self._values.clear()
            self._values[key] = value
        return value  # type: ignore[return-value]  # a derived T (no typing.cast call: twice a pod)


def _is_mapping(value: Any) -> bool:
    """isinstance(value, Mapping), without the ABC check for the API's plain dicts."""
    return type(value) is dict or isinstance(value, Mapping)


def _has_mounts(containers: list[Any]) -> bool:
    """Some container has volumeMounts or is not a plain dict (then rebuilt by _without_mounts)."""
    for c in containers:  # noqa: SIM110  (any() builds a generator a call)
        if type(c) is not dict or "volumeMounts" in c:
            return True
    return False


def _without_mounts(container: Any) -> Any:
    if not _is_mapping(container):
        return container
    return {k: v for k, v in container.items() if k != "volumeMounts"}


# (remembered signature, new signature) -> a test for the nodes whose verdicts may differ, or None (unrelated).
SignatureDelta = Callable[[Hashable, Hashable], Callable[[NodeInfo], bool] | None]
RawScorer = Callable[[Sequence[NodeInfo]], "tuple[dict[str, list[int]], Status | None]"]
_NO_MATRIX: ScoreMatrix = np.zeros((0, 0), dtype=np.int64)
_NOTHING_KNOWN: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
# Up to this many positions are written element by element (no GIL release; see OpportunisticBatch._remember).
_FANCY_FROM = 8
# Up to this many flipped verdicts move one at a time between the position lists; more rebuild them (_reclassify).
_MOVES_ONE_BY_ONE = 32


class OpportunisticBatch:
    """Verdicts and raw scores of the latest signature, by position in the snapshot's node list."""

    __slots__ = (
        "_feasible_at", "_known_bytes", "_settled", "_walked", "feasible", "known", "mark", "nodes", "raw", "rejected",
        "score_plugins", "signature", "verdicts",
    )

    def __init__(self) -> None:
        self.signature: Hashable | None = None
        self.nodes: list[NodeInfo] = []  # the NodeInfo each position's entries were computed on
        self.verdicts: list[Status | None] = []
        self.feasible: list[int] = []  # sorted positions
        self.rejected: list[int] = []  # sorted positions
        # A row per position, a column per score plugin: the gather of the feasible positions' rows copies
        # one contiguous run of a row each (scores() hands out its transpose, a row per plugin).
        self.raw: ScoreMatrix = _NO_MATRIX
        self.known: npt.NDArray[np.bool_] = _NOTHING_KNOWN  # positions whose column holds their raw scores
        # ``known``'s memory: a changed node's flag is cleared (a few a cycle) by a bytearray store, not a numpy
        # scalar assignment ten times its cost.
        self._known_bytes = bytearray()
        self.score_plugins: tuple[str, ...] = ()
        self.mark: Hashable = None  # the snapshot's change-log position at the last refresh
        # ``feasible`` as an array, built when first needed after it changed (None: stale), and the latest
        # walk's chosen list with the (start, stop) slices of ``feasible`` it was cut from: scores() gathers by
        # those slices of the array instead of converting hundreds of Python ints each cycle.
        self._feasible_at: npt.NDArray[np.intp] | None = None
        self._walked: tuple[list[int], list[tuple[int, int]]] | None = None
        # No verdict flipped since the previous cycle: the array is worth building (a signature whose feasible
        # set changes every cycle, as anti-affinity's, converts just the walk's positions instead).
        self._settled = False

    def invalidate(self) -> None:
        self.signature = None
        self.nodes, self.verdicts, self.feasible, self.rejected = [], [], [], []
        self.raw, self.score_plugins = _NO_MATRIX, ()
        self._set_known(bytearray())
        self._feasible_at = self._walked = None
        self._settled = False

    def refresh(
        self,
        signature: Hashable,
        all_nodes: Sequence[NodeInfo],
        run_filters: Callable[[NodeInfo], Status | None],
        changed_since: Callable[[Any], Sequence[int] | None] | None = None,
        mark: Hashable = None,
        also: Sequence[int] = (),
    ) -> bool:
        """Bring the verdicts up to date for ``signature`` (which includes the skipped filters): on the
        changed nodes, or on all of them for a new signature. False: a filter errored; run the per-node walk.

        ``changed_since(previous mark)`` names the positions replaced since then (None: unknown), and
        ``mark`` is the current one; without them every position's NodeInfo is compared by identity.
        ``also``: positions to re-evaluate though unchanged (a batch derived from another signature's)."""
        n = len(all_nodes)
        logged = changed_since(self.mark) if changed_since is not None and self.signature is not None else None
        self.mark = mark
        if signature != self.signature or n != len(self.nodes):
            self.invalidate()
            self.nodes = list(all_nodes)
            self.verdicts = [None] * n
            changed: Sequence[int] = range(n)
            fresh = True
        else:
            changed = logged if logged is not None else list(compress(range(n), map(is_not, self.nodes, all_nodes)))
            if also:
                changed = sorted(set(changed).union(also))
            fresh = False
        flipped: list[int] = []
        for p in changed:
            info = all_nodes[p]
            status = run_filters(info)
            if status is not None and status.code == CODE_ERROR:
                self.invalidate()
                return False
            ok = status is None or status.code == CODE_SUCCESS
            if fresh:
                (self.feasible if ok else self.rejected).append(p)
            else:
                old = self.verdicts[p]
                if ok != (old is None or old.code == CODE_SUCCESS):  # most verdicts stay
                    flipped.append(p)
            self.verdicts[p] = status
            self.nodes[p] = info
        if flipped:
            self._reclassify(flipped)
        if not fresh and self.known.size:
            if len(changed) <= 8:  # usually the node the previous pod went to: no index array to build
                known = self._known_bytes
                for p in changed:
                    known[p] = 0
            else:
                self.known[changed] = False
        self.signature = signature
        return True

    def _set_known(self, flags: bytearray) -> None:
        """``known`` as a view of ``flags`` (one byte a position: numpy's bool)."""
        self._known_bytes = flags
        self.known = np.frombuffer(flags, dtype=np.bool_) if flags else _NOTHING_KNOWN

    def derived(self, signature: Hashable) -> OpportunisticBatch:
        """A copy of this batch for another signature, to be refreshed with the positions the two
        signatures may disagree on (``refresh(also=...)``)."""
        copy = OpportunisticBatch()
        copy.signature = signature
        copy.nodes = self.nodes.copy()
        copy.verdicts = self.verdicts.copy()
        copy.feasible = self.feasible.copy()
        copy.rejected = self.rejected.copy()
        copy.raw = self.raw.copy()
        copy._set_known(bytearray(self._known_bytes))
        copy.score_plugins = self.score_plugins
        copy.mark = self.mark
        return copy

    def _reclassify(self, flipped: list[int]) -> None:
        """Move the positions whose verdict flipped (now in ``verdicts``) between the sorted feasible and
        rejected lists. Each move shifts the lists' tails (a memmove of up to 40 KB at 5000 nodes), so many
        flips at once, as a derived batch's full domain (a third of the cluster under a zone constraint),
        rebuild both lists from the verdicts in one pass instead."""
        if len(flipped) <= _MOVES_ONE_BY_ONE:
            for p in flipped:
                src, dst = (self.rejected, self.feasible) if _ok(self.verdicts[p]) else (self.feasible, self.rejected)
                del src[bisect_left(src, p)]
                insort(dst, p)
        else:
            ok = [status is None or status.code == CODE_SUCCESS for status in self.verdicts]
            positions = range(len(ok))
            self.feasible = list(compress(positions, ok))
            self.rejected = list(compress(positions, map(not_, ok)))
        self._feasible_at = self._walked = None
        self._settled = False

    def walk(
        self, start: int, k: int, overrides: Mapping[int, Status | None] | None = None
    ) -> tuple[list[int], list[int]]:
        """The positions the per-node walk from ``start`` finds feasible (at most ``k``) and those it
        rejects on the way, both in visiting order. ``overrides`` gives some positions another verdict for
        this walk only (nodes with nominated pods, filtered twice)."""
        feasible, rejected = self.feasible, self.rejected
        if overrides:
            self._walked = None
            ok = {p for p, status in overrides.items() if _ok(status)}
            feasible = sorted([p for p in feasible if p not in overrides] + list(ok))
            rejected = sorted([p for p in rejected if p not in overrides] + [p for p in overrides if p not in ok])
            return walk_positions(feasible, rejected, start, k)
        spans: list[tuple[int, int]] = []
        chosen, visited_rejected = walk_positions(feasible, rejected, start, k, spans)
        self._walked = (chosen, spans)
        return chosen, visited_rejected

    def scores(
        self, positions: Sequence[int], plugins: tuple[str, ...], compute: RawScorer
    ) -> tuple[ScoreMatrix, Status | None]:
        """Raw scores of ``plugins`` on the nodes at ``positions`` (a row per plugin): remembered ones,
        ``compute`` for the rest (all plugins' entries of a node are dropped together when it changes)."""
        n = len(self.nodes)
        if plugins != self.score_plugins or self.raw.shape[0] != n:
            self.raw = np.zeros((n, len(plugins)), dtype=np.int64)
            self._set_known(bytearray(n))
            self.score_plugins = plugins
        at = self._positions_array(positions)
        if not plugins:
            return self.raw[at].T, None
        missing = at[~self.known[at]]
        if missing.size:
            todo = missing.tolist()
            computed, status = compute([self.nodes[p] for p in todo])
            if status is not None:
                return _NO_MATRIX, status
            self._remember(plugins, todo, computed)
        return self.raw.take(at, axis=0).T, None  # a gather over the feasible positions, no loop per node

    def _positions_array(self, positions: Sequence[int]) -> npt.NDArray[np.intp]:
        """``positions`` as an index array: slices of ``feasible``'s array when they are the latest walk's."""
        walked = self._walked
        if walked is None or positions is not walked[0] or not walked[1]:
            return np.fromiter(positions, dtype=np.intp, count=len(positions))
        if self._feasible_at is None:
            if not self._settled:
                self._settled = True
                return np.fromiter(positions, dtype=np.intp, count=len(positions))
            self._feasible_at = np.fromiter(self.feasible, dtype=np.intp, count=len(self.feasible))
        feasible_at = self._feasible_at
        spans = walked[1]
        if len(spans) == 1:
            return feasible_at[spans[0][0]:spans[0][1]]
        return np.concatenate([feasible_at[lo:hi] for lo, hi in spans])

    def _remember(self, plugins: tuple[str, ...], todo: list[int], computed: Mapping[str, Sequence[int]]) -> None:
        """Store the raw scores computed for the positions ``todo``. Usually one or two nodes changed since the
        previous pod: a row each then, by basic indexing, because numpy releases the GIL for every
        fancy-indexed assignment (twice: checking the indices, then writing), and live each release hands the
        GIL and the core to a waiting binding or watch thread for a while."""
        raw = self.raw
        columns = [computed[name] for name in plugins]
        if len(todo) > _FANCY_FROM:
            raw[todo] = score_rows(columns, len(todo)).T
            self.known[todo] = True
            return
        for j, p in enumerate(todo):
            raw[p] = [values[j] for values in columns]  # a basic-index write of one short row
            self._known_bytes[p] = 1


class NodesAt(Sequence[NodeInfo]):
    """The NodeInfos at some positions of a node list, looked up when read. A batched cycle's feasible
    nodes (hundreds) are mostly only counted; building the list touched every one of those scattered
    objects per pod, a cost that grew with the cluster (51 us a cycle at 5000 nodes)."""

    __slots__ = ("_nodes", "_positions")

    def __init__(self, nodes: Sequence[NodeInfo], positions: Sequence[int]) -> None:
        self._nodes = nodes
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | list[NodeInfo]:
        if isinstance(index, slice):
            return list(map(self._nodes.__getitem__, self._positions[index]))
        return self._nodes[self._positions[index]]

    def __iter__(self) -> Iterator[NodeInfo]:
        return map(self._nodes.__getitem__, self._positions)


class OpportunisticBatches:
    """The batches of the few latest signatures. A signature may flip between values and back (which of
    PodTopologySpread's domains are full, say): the batch it had is then still valid on every node not
    changed since, as for any batch. A signature is batched from its second pod on, so lone pods pay
    nothing but the signing."""

    __slots__ = ("_batches", "_candidate", "size")

    def __init__(self, size: int = 4) -> None:
        self._batches: dict[Hashable, OpportunisticBatch] = {}  # least recently used first
        self._candidate: Hashable | None = None  # seen once; batched when the next pod has it too
        self.size = size

    def refresh(
        self,
        signature: Hashable,
        all_nodes: Sequence[NodeInfo],
        run_filters: Callable[[NodeInfo], Status | None],
        changed_since: Callable[[Any], Sequence[int] | None] | None = None,
        mark: Hashable = None,
        delta: SignatureDelta | None = None,
    ) -> OpportunisticBatch | None:
        """The signature's batch brought up to date (``OpportunisticBatch.refresh``), or None: not batched
        this time (first pod of the signature, or a filter errored).

        A new signature that ``delta`` relates to a remembered one (only some nodes' verdicts may differ)
        is batched at once, from a copy of that batch with those nodes re-filtered; one related to the
        previous lone signature counts as its second pod (a template whose signature moves with every pod,
        as under a maxSkew of 1, would never be batched otherwise)."""
        batch = self._batches.pop(signature, None)
        also: Sequence[int] = ()
        if batch is None:
            derived = self._derive(signature, delta) if delta is not None else None
            if derived is not None:
                batch, also = derived
            elif signature != self._candidate and not self._related(self._candidate, signature, delta):
                self._candidate = signature
                return None
            else:
                batch = OpportunisticBatch()
            while len(self._batches) >= self.size:
                del self._batches[next(iter(self._batches))]
        if not batch.refresh(signature, all_nodes, run_filters, changed_since, mark, also):
            return None
        self._batches[signature] = batch
        return batch

    @staticmethod
    def _related(candidate: Hashable | None, signature: Hashable, delta: SignatureDelta | None) -> bool:
        return candidate is not None and delta is not None and delta(candidate, signature) is not None

    def _derive(self, signature: Hashable, delta: SignatureDelta) -> tuple[OpportunisticBatch, list[int]] | None:
        """A copy of the most recent batch ``delta`` relates to ``signature``, and the positions to re-filter."""
        for old_signature in reversed(self._batches):
            affected = delta(old_signature, signature)
            if affected is not None:
                old = self._batches[old_signature]
                return old.derived(signature), list(compress(range(len(old.nodes)), map(affected, old.nodes)))
        return None


def walk_positions(
    feasible: list[int], rejected: list[int], start: int, k: int, spans: list[tuple[int, int]] | None = None
) -> tuple[list[int], list[int]]:
    """The walk over sorted feasible and rejected positions (see ``OpportunisticBatch.walk``). ``spans``, if
    given, receives the (start, stop) slices of ``feasible`` the chosen positions are, in order."""
    b = bisect_left(feasible, start)
    chosen = feasible[b:b + k]
    cuts = [(b, b + len(chosen))]
    if len(chosen) < k:
        wrapped = min(k - len(chosen), b)
        chosen += feasible[:wrapped]
        cuts.append((0, wrapped))
    if spans is not None:
        spans.extend(cut for cut in cuts if cut[1] > cut[0])
    if len(chosen) < k:  # fewer feasible than wanted: every node is visited
        r = bisect_left(rejected, start)
        return chosen, rejected[r:] + rejected[:r]
    last = chosen[-1]
    lo = bisect_left(rejected, start)
    if last >= start:
        return chosen, rejected[lo:bisect_right(rejected, last)]
    return chosen, rejected[lo:] + rejected[:bisect_right(rejected, last)]


def _ok(status: Status | None) -> bool:
    return status is None or status.code == CODE_SUCCESS
