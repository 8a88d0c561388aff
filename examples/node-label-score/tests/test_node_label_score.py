"""NodeLabelScore's unit tests, written as a plugin author writes them: with py-scheduler's public testing
kit (scheduler.testing) alone, nothing else from py-scheduler."""

from __future__ import annotations

from typing import Any

import pytest
from node_label_score import NAME, NodeLabelScore

from scheduler.testing import PluginRunner, make_node, make_pod, schedule

LABEL = "example.com/generation"

# Node "a" would win every tie by name; the label says "c" (generation 7) is the best, "b" (2) the worst
# labelled one, and unlabelled "a" and "d" and the unparseable "e" come last.
NODES = [
    make_node().name("a").capacity(cpu="8", memory="32Gi", pods=110).obj(),
    make_node().name("b").capacity(cpu="8", memory="32Gi", pods=110).label(LABEL, "2").obj(),
    make_node().name("c").capacity(cpu="8", memory="32Gi", pods=110).label(LABEL, "7").obj(),
    make_node().name("d").capacity(cpu="8", memory="32Gi", pods=110).obj(),
    make_node().name("e").capacity(cpu="8", memory="32Gi", pods=110).label(LABEL, "not-a-number").obj(),
]
POD = make_pod().name("web").scheduler_name("py-scheduler").req(cpu="100m", memory="64Mi").obj()


def test_raw_scores_are_the_label_values_and_normalized_ones_span_1_to_100() -> None:
    cycle = PluginRunner(NodeLabelScore, {"label": LABEL}, nodes=NODES).cycle(POD)
    assert cycle.score() == {"a": 0, "b": 1, "c": 100, "d": 0, "e": 0}
    assert cycle.raw_scores() == {"a": -1, "b": 2, "c": 7, "d": -1, "e": -1}


def test_prefer_lower_turns_the_ranking_around() -> None:
    scores = PluginRunner(NodeLabelScore, {"label": LABEL, "preferLower": True}, nodes=NODES).score(POD)
    assert scores == {"a": 0, "b": 100, "c": 1, "d": 0, "e": 0}


def test_one_shared_value_gives_every_labelled_node_the_top_score() -> None:
    nodes = [make_node().name(n).label(LABEL, "3").obj() for n in ("x", "y")] + [make_node().name("z").obj()]
    assert PluginRunner(NodeLabelScore, {"label": LABEL}, nodes=nodes).score(POD) == {"x": 100, "y": 100, "z": 0}


def test_the_plugin_never_filters_and_signs_every_pod_alike() -> None:
    runner = PluginRunner(NodeLabelScore, {"label": LABEL}, nodes=NODES)
    assert runner.filter(POD) == {n.name: None for n in NODES}  # no Filter: every node stays feasible
    other = make_pod().name("db").req(cpu="2").obj()
    assert runner.plugin.sign_pod(POD) == runner.plugin.sign_pod(other) == NAME


@pytest.mark.parametrize(("args", "field"), [({}, "args.label"), ({"label": LABEL, "preferLower": "yes"},
                                                                  "args.preferLower"),
                                             ({"label": LABEL, "typo": 1}, "unknown field")])
def test_invalid_args_are_refused_naming_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        PluginRunner(NodeLabelScore, args, nodes=NODES)


def config(weight: int, **args: Any) -> dict[str, Any]:
    """A profile with the plugin enabled in multiPoint beside the default plugins."""
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "py-scheduler",
                          "plugins": {"multiPoint": {"enabled": [{"name": NAME, "weight": weight}]}},
                          "pluginConfig": [{"name": NAME, "args": {"label": LABEL, **args}}]}]}


def test_in_a_whole_profile_the_label_outweighs_the_default_scores() -> None:
    result = schedule(POD, NODES, config=config(5), plugins={NAME: NodeLabelScore})
    assert result.node == "c"
    # Weight 5 x 100 for "c" against the default plugins' few points of difference between empty nodes.
    assert result.scores["c"] - result.scores["b"] >= 5 * 99 - 10


def test_the_default_profile_alone_breaks_the_tie_by_name() -> None:
    assert schedule(POD, NODES).node == "a"


def test_a_pod_that_fits_nowhere_fails_with_the_schedulers_message() -> None:
    big = make_pod().name("big").scheduler_name("py-scheduler").req(cpu="16").obj()
    result = schedule(big, NODES, config=config(5), plugins={NAME: NodeLabelScore})
    assert result.node is None
    assert result.message.startswith("0/5 nodes are available: 5 Insufficient cpu.")
