"""Merge rules: default MultiPoint + user multiPoint + per-point lists, as upstream resolves them."""

from __future__ import annotations

from .helpers import names, one_profile, profile, scores
from .test_defaults import EXPECTED, EXPECTED_WEIGHTS


def test_disable_star_drops_all_defaults_of_that_point_only() -> None:
    p = profile(one_profile({"score": {"disabled": [{"name": "*"}]}}))
    assert names(p, "score") == []
    assert names(p, "preScore") == EXPECTED["preScore"]  # other points untouched
    assert names(p, "filter") == EXPECTED["filter"]


def test_disable_star_then_enable_keeps_only_the_enabled_in_given_order() -> None:
    p = profile(
        one_profile(
            {
                "score": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "ImageLocality", "weight": 5}, {"name": "TaintToleration"}],
                }
            }
        )
    )
    assert scores(p) == [("ImageLocality", 5), ("TaintToleration", 1)]


def test_disable_star_in_multipoint_drops_every_default() -> None:
    p = profile(
        one_profile(
            {
                "multiPoint": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}, {"name": "NodeName"}],
                }
            }
        )
    )
    assert names(p, "queueSort") == ["PrioritySort"]
    assert names(p, "bind") == ["DefaultBinder"]
    assert names(p, "filter") == ["NodeName"]
    assert names(p, "score") == [] and names(p, "preEnqueue") == []


def test_default_relisted_in_multipoint_is_replaced_in_place_with_new_weight() -> None:
    p = profile(one_profile({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 7}]}}))
    assert scores(p) == [("TaintToleration", 7), *EXPECTED_WEIGHTS[1:]]
    assert names(p, "filter") == EXPECTED["filter"]  # position kept, not appended


def test_default_relisted_without_weight_scores_one() -> None:
    """Upstream replaces the whole entry: NodeAffinity's default weight 2 becomes 0 -> 1."""
    p = profile(one_profile({"multiPoint": {"enabled": [{"name": "NodeAffinity"}]}}))
    assert dict(scores(p))["NodeAffinity"] == 1
    assert names(p, "score") == EXPECTED["score"]


def test_other_multipoint_plugins_are_appended_in_given_order() -> None:
    p = profile(
        one_profile(
            {
                "multiPoint": {
                    "enabled": [
                        {"name": "LeastRequestedPriority", "weight": 4},
                        {"name": "NodeName"},  # default: stays in place
                        {"name": "SelectorSpread", "weight": 2},
                    ]
                }
            }
        )
    )
    assert scores(p) == [*EXPECTED_WEIGHTS, ("LeastRequestedPriority", 4), ("SelectorSpread", 2)]
    assert names(p, "preScore") == [*EXPECTED["preScore"], "SelectorSpread"]
    assert names(p, "filter") == EXPECTED["filter"]


def test_specific_point_plugins_come_after_multipoint_ones() -> None:
    p = profile(
        one_profile(
            {"score": {"enabled": [{"name": "LeastRequestedPriority", "weight": 2}, {"name": "EqualPriority"}]}}
        )
    )
    assert scores(p) == [*EXPECTED_WEIGHTS, ("LeastRequestedPriority", 2), ("EqualPriority", 1)]


def test_specific_point_overrides_multipoint_weight_and_moves_first() -> None:
    """Upstream's expandMultiPointPlugins: explicit overrides first, then MultiPoint, then the rest."""
    p = profile(
        one_profile({"score": {"enabled": [{"name": "EqualPriority"}, {"name": "ImageLocality", "weight": 5}]}})
    )
    assert scores(p) == [("ImageLocality", 5), *EXPECTED_WEIGHTS[:-1], ("EqualPriority", 1)]
    # only the score point is affected
    assert names(p, "filter") == EXPECTED["filter"]


def test_precedence_specific_over_explicit_multipoint_over_default() -> None:
    p = profile(
        one_profile(
            {
                "multiPoint": {
                    "enabled": [{"name": "TaintToleration", "weight": 7}, {"name": "NodeAffinity", "weight": 9}]
                },
                "score": {"enabled": [{"name": "TaintToleration", "weight": 11}]},
            }
        )
    )
    w = dict(scores(p))
    assert w["TaintToleration"] == 11  # specific point
    assert w["NodeAffinity"] == 9  # explicit multiPoint
    assert w["PodTopologySpread"] == 2  # default multiPoint


def test_specific_point_without_weight_resolves_to_one_not_the_multipoint_weight() -> None:
    p = profile(one_profile({"score": {"enabled": [{"name": "TaintToleration"}]}}))
    assert dict(scores(p))["TaintToleration"] == 1


def test_explicit_weight_zero_resolves_to_one_and_large_weights_are_kept() -> None:
    p = profile(
        one_profile(
            {
                "multiPoint": {
                    "enabled": [{"name": "TaintToleration", "weight": 0}, {"name": "NodeAffinity", "weight": 1000}]
                }
            }
        )
    )
    w = dict(scores(p))
    assert (w["TaintToleration"], w["NodeAffinity"]) == (1, 1000)


def test_filter_override_moves_plugin_to_the_front() -> None:
    p = profile(one_profile({"filter": {"enabled": [{"name": "NodeName"}]}}))
    assert names(p, "filter") == ["NodeName", *[n for n in EXPECTED["filter"] if n != "NodeName"]]


def test_plugin_disabled_in_multipoint_is_removed_from_all_points() -> None:
    p = profile(one_profile({"multiPoint": {"disabled": [{"name": "TaintToleration"}]}}))
    for point in ("filter", "preScore", "score"):
        assert "TaintToleration" not in names(p, point)
    assert "TaintToleration" not in p.plugin_config


def test_plugin_disabled_in_multipoint_but_enabled_at_a_point_runs_only_there() -> None:
    p = profile(
        one_profile(
            {"multiPoint": {"disabled": [{"name": "NodeAffinity"}]}, "filter": {"enabled": [{"name": "NodeAffinity"}]}}
        )
    )
    assert names(p, "filter")[-1] == "NodeAffinity"
    assert "NodeAffinity" not in names(p, "preFilter")
    assert "NodeAffinity" not in names(p, "score")
    assert "NodeAffinity" in p.plugin_config


def test_plugin_disabled_at_one_point_stays_at_the_others() -> None:
    p = profile(one_profile({"filter": {"disabled": [{"name": "NodePorts"}]}}))
    assert "NodePorts" not in names(p, "filter")
    assert "NodePorts" in names(p, "preFilter")


def test_disable_star_at_a_point_skips_multipoint_expansion_there() -> None:
    p = profile(
        one_profile(
            {
                "multiPoint": {"enabled": [{"name": "SelectorSpread", "weight": 3}]},
                "preScore": {"disabled": [{"name": "*"}]},
            }
        )
    )
    assert names(p, "preScore") == []
    assert "SelectorSpread" in names(p, "score")


def test_default_disabled_and_reenabled_in_multipoint_moves_to_the_end() -> None:
    """mergePluginSet: a disabled default is skipped, so the enabled entry is appended, not replaced in place."""
    p = profile(
        one_profile(
            {
                "multiPoint": {
                    "disabled": [{"name": "TaintToleration"}],
                    "enabled": [{"name": "TaintToleration", "weight": 4}],
                }
            }
        )
    )
    assert scores(p) == [*EXPECTED_WEIGHTS[1:], ("TaintToleration", 4)]
    assert names(p, "filter")[-1] == "TaintToleration"
