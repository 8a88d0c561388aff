"""ImageLocality (kube-scheduler v1.37 ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go``).

Favors nodes that already hold the pod's images. For each init and regular container, and (since v1.37)
each image volume (``spec.volumes[].image.reference``), whose normalized image name is on the node, the
image size is scaled by the share of nodes holding it (``int(size · numNodes / totalNodes)``, damping the
"node heating" of popular images); the sum is clamped to [23 MiB, 1000 MiB x number of images] and mapped
linearly onto 0..100.

Image names are normalized as upstream does: ``:latest`` is appended when there is no ':' after the
last '/'. Digest references (``name@sha256:…``) contain a ':' after the last '/', so they are used
verbatim and match only a node image listed under that exact digest name, as upstream.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from scheduler.framework.batch import SignsByTemplate, TemplateMemo
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, score_by_batch
from scheduler.framework.status import Status
from scheduler.framework.types import ClusterEventWithHint, ImageStateSummary, NodeInfo
from scheduler.model.pod import Pod
from scheduler.plugins.helper.gomath import go_div

NAME = "ImageLocality"

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """The CRI name the kubelet reports: add the default tag when none follows the last '/'."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _pod_images(pod: Pod) -> tuple[str, ...]:
    """Normalized names of the init and regular container images, then of the image volumes, once per pod.

    A missing or non-string image (the API server would reject both) becomes "" and matches nothing."""
    cached = pod.memo.get(NAME)
    if cached is None:
        cached = pod.memo[NAME] = tuple(
            normalized_image_name(i) if isinstance(i, str) and i else "" for i in (*pod.images, *_volume_images(pod))
        )
    return cached


def _image_plan(pod: Pod) -> tuple[tuple[str, ...], int, int]:
    """What score_nodes needs of the pod: its non-empty image names, how many images it has, the zero score."""
    images = _pod_images(pod)
    return tuple(i for i in images if i), len(images), calculate_priority(0, len(images))


def _volume_images(pod: Pod) -> list[Any]:
    """The references of the pod's image volumes (ImageVolume), in spec order."""
    out = []
    for v in (pod.raw.get("spec") or {}).get("volumes") or []:
        image = v.get("image") if isinstance(v, Mapping) else None
        if isinstance(image, Mapping):
            out.append(image.get("reference"))
    return out


def scaled_image_score(state: ImageStateSummary, total_nodes: int) -> int:
    """Size times the share of nodes holding the image, so rare images do not attract every pod."""
    spread = float(state.num_nodes) / float(total_nodes)
    return int(float(state.size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Clamp to [23 MiB, 1000 MiB x containers] and map linearly onto 0..100 (integer division)."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality(SignsByTemplate):
    """Scores nodes by the (spread-damped) size of the pod's images they already have."""

    name = NAME


    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Batchable: verdicts and scores depend on the pod template and the one node only."""
        return ()

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        # Per pod template: its non-empty image names, the count of its images and the score of a zero sum.
        self._plans: TemplateMemo[tuple[tuple[str, ...], int, int]] = TemplateMemo()

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return score_by_batch(self, state, pod, node_info)

    def score_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status | None]:
        """``score`` for every node: nodes holding none of the pod's images (most of them) share the
        score of a zero sum, computed once."""
        total_nodes = len(self.handle.snapshot().list())
        if total_nodes == 0:
            return [0] * len(nodes), None
        images, num_containers, zero = self._plans.get(pod, None, lambda: _image_plan(pod))
        if not images:
            return [zero] * len(nodes), None
        out: list[int] = []
        append = out.append
        if len(images) == 1:
            image = images[0]
            for ni in nodes:
                st = ni.image_states.get(image)
                if st is None:
                    append(zero)
                else:
                    append(calculate_priority(scaled_image_score(st, total_nodes), num_containers))
            return out, None
        for ni in nodes:
            states = ni.image_states
            if not states:
                append(zero)
                continue
            total = 0
            for image in images:
                st = states.get(image)
                if st is not None:
                    total += scaled_image_score(st, total_nodes)
            append(calculate_priority(total, num_containers) if total else zero)
        return out, None

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A score-only plugin never rejects a pod, so no event can make one schedulable."""
        return []
