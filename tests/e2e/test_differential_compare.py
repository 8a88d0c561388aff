"""The differential's verdict rules (e2e/differential.compare) on hand-made results: the same node when one
has the best total, any of the best when several tie (v1.37's tie-break is a race there)."""

from __future__ import annotations

from e2e.differential import Verdict, compare

SCORES = {"n1": {"total": 300, "NodeResourcesFit": 100}, "n2": {"total": 300, "NodeResourcesFit": 100},
          "n3": {"total": 100, "NodeResourcesFit": 100}}
LOGGED = {n: {"NodeResourcesFit": 100} for n in SCORES}


def verdict(kube: str, py: str) -> Verdict:
    return Verdict(1, kube, py, "", "", len(LOGGED))


def test_a_unique_best_must_be_kubes_node() -> None:
    unique = {**SCORES, "n2": {"total": 200, "NodeResourcesFit": 100}}
    v = verdict("n2", "n1")
    compare(v, LOGGED, unique)
    assert v.problems and "unique best is n1" in v.problems[0]
    ok = verdict("n1", "n1")
    compare(ok, LOGGED, unique)
    assert ok.problems == []


def test_among_tied_best_any_will_do_but_not_a_worse_node() -> None:
    tied = verdict("n2", "n1")
    compare(tied, LOGGED, SCORES)
    assert tied.problems == []
    worse = verdict("n3", "n1")
    compare(worse, LOGGED, SCORES)
    assert worse.problems and "simulate's best are ['n1', 'n2']" in worse.problems[0]


def test_a_dra_filter_error_naming_another_nodes_device_is_agreement() -> None:
    """kube-scheduler filters in parallel: the first node to fail with an allocator error is a race."""
    from e2e.differential_dra import same_error_on_another_node

    def err(device: str) -> str:
        return (f'running "DynamicResources" filter plugin: claim ns/c, request r0: cannot add device {device} '
                "because a claim constraint would not be satisfied")

    assert same_error_on_another_node(err("gpu.x/n3/dev-2"), err("gpu.x/shared/dev-0"))
    assert not same_error_on_another_node(err("gpu.x/n3/dev-2"), err("gpu.x/n3/dev-2"))  # equal: compared as is
    assert not same_error_on_another_node(err("gpu.x/n3/dev-2"), "0/3 nodes are available: 3 cannot allocate.")
    assert not same_error_on_another_node(err("gpu.x/n3/dev-2"), err("gpu.x/n3/dev-2").replace("r0", "r1"))
