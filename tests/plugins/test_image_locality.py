"""ImageLocality: spread-scaled image sizes, clamping, name normalization, malformed names."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.model.node import Node
from scheduler.model.pod import Pod, pod_from_api
from scheduler.plugins.image_locality import ImageLocality, normalized_image_name
from tests.builders import MiB, container, make_node, make_pod
from tests.plugins.util import snapshot_handle

# Four nodes; nginx:1.25 (300 MiB) on n1 and n2 (spread 2/4), redis:latest (500 MiB) on n1 only (1/4),
# tools:v1 (400 MiB) on all four (4/4).
NGINX = (["nginx:1.25"], 300 * MiB)
REDIS = (["redis:latest", "redis@sha256:abc"], 500 * MiB)
TOOLS = (["tools:v1"], 400 * MiB)
NODES = [
    make_node("n1", images=[NGINX, REDIS, TOOLS]),
    make_node("n2", images=[NGINX, TOOLS]),
    make_node("n3", images=[TOOLS]),
    make_node("n4", images=[TOOLS, (["registry:5000/app:latest"], 800 * MiB)]),
]


def scores(pod: Pod, nodes: list[Node] = NODES) -> list[int]:
    handle = snapshot_handle(nodes)
    plugin = ImageLocality({}, handle)
    out = []
    for node in nodes:
        info = handle.snapshot().get(node.name)
        assert info is not None
        s, status = plugin.score(CycleState(), pod, info)
        assert status is None
        out.append(s)
    return out


def images(*names: str, init: tuple[str, ...] = ()) -> Pod:
    return make_pod(
        containers=[container(image=n, name=f"c{i}") for i, n in enumerate(names)],
        init_containers=[container(image=n, name=f"i{i}") for i, n in enumerate(init)],
    )


CASES: list[tuple[str, Pod, list[int]]] = [
    # 2 containers -> max 2000 MiB. n1: nginx 300*2/4 = 150 + redis 500*1/4 = 125 = 275 MiB:
    # 100*(275-23)/(2000-23) = 25200/1977 = 12; n2: 150 -> 12700/1977 = 6; n3, n4: below 23 MiB -> 0
    ("share of nodes scales sizes", images("nginx:1.25", "redis"), [12, 6, 0, 0]),
    # init container counts too (2 containers): tools 400 on every node (spread 1).
    # n1: 400 + 150 = 550 -> 52700/1977 = 26; n2 the same; n3, n4: 400 -> 37700/1977 = 19
    ("init container images count", images("nginx:1.25", init=("tools:v1",)), [26, 26, 19, 19]),
    # one container, tools 400 MiB everywhere: 100*(400-23)/(1000-23) = 37700/977 = 38
    ("single container", images("tools:v1"), [38, 38, 38, 38]),
    # 'redis' has no tag: normalized to redis:latest; 500*1/4 = 125 -> 100*(125-23)/977 = 10200/977 = 10
    ("missing tag means latest", images("redis"), [10, 0, 0, 0]),
    # a registry port is not a tag: the ':' is before the last '/' -> :latest appended;
    # 800 MiB on 1/4 = 200 -> 100*(200-23)/977 = 17700/977 = 18
    ("registry port is not a tag", images("registry:5000/app"), [0, 0, 0, 18]),
    # digest references are matched verbatim against the node's names (same 125 MiB as above)
    ("digest reference", images("redis@sha256:abc"), [10, 0, 0, 0]),
    ("image absent everywhere", images("absent:1"), [0, 0, 0, 0]),
    ("empty image name does not crash", images(""), [0, 0, 0, 0]),
    ("odd image name does not crash", images("::::/"), [0, 0, 0, 0]),
]


@pytest.mark.parametrize(("pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_score(pod: Pod, expected: list[int]) -> None:
    assert scores(pod) == expected


def test_sum_is_clamped_at_the_per_container_maximum() -> None:
    big = [make_node("a", images=[(["huge:1"], 3000 * MiB)]), make_node("b", images=[(["huge:1"], 3000 * MiB)])]
    # 3000 MiB on 2/2 nodes > 1000 MiB for one container -> 100
    assert scores(images("huge:1"), big) == [100, 100]


def test_image_volumes_count_as_images() -> None:
    """v1.37: an image volume's reference scores like a container image and raises the maximum.
    Container nginx:1.25 and volume redis (2 images -> max 2000 MiB): the same as two containers,
    n1 12, n2 6; a volume image absent everywhere still counts: nginx alone over 2000 MiB on n1 is
    100*(150-23)/1977 = 6."""
    pod = images("nginx:1.25")
    raw = dict(pod.raw)
    raw["spec"] = {**raw["spec"], "volumes": [{"name": "v", "image": {"reference": "redis"}}]}
    assert scores(pod_from_api(raw)) == [12, 6, 0, 0]
    raw["spec"]["volumes"] = [{"name": "v", "image": {"reference": "absent:1"}}, {"name": "e", "emptyDir": {}}]
    assert scores(pod_from_api(raw)) == [6, 6, 0, 0]


def test_container_without_image_field_does_not_crash() -> None:
    pod = make_pod(containers=[{"name": "c"}])
    assert scores(pod) == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("library/nginx", "library/nginx:latest"),
        ("host:5000/team/app", "host:5000/team/app:latest"),
        ("host:5000/team/app:v2", "host:5000/team/app:v2"),
        ("app@sha256:0123", "app@sha256:0123"),
        ("", ":latest"),
    ],
)
def test_normalized_image_name(name: str, expected: str) -> None:
    assert normalized_image_name(name) == expected


def test_registers_no_events() -> None:
    assert ImageLocality({}, snapshot_handle([])).events_to_register() == []
