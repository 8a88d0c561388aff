"""NodeLabelScore: an out-of-tree Score plugin for py-scheduler that prefers nodes by an integer label.

Label nodes with a number that says how much you want pods there (``example.com/generation: "5"`` for
newer hardware, ``example.com/cost: "3"`` for a price tier) and enable the plugin in a profile: among
the nodes that pass every filter, those with a higher value score higher (or lower, with
``preferLower: true``). Nodes without the label, or with a value that is not a non-negative integer,
score 0, below every labelled node. The plugin never rejects a node: it only ranks the feasible ones,
weighted against the other Score plugins like any of them.

Args (``pluginConfig``)::

    - name: NodeLabelScore
      args:
        label: example.com/generation   # required: the node label to read
        preferLower: false              # true: the lowest value scores highest

See docs/plugins.md in the py-scheduler repository for how this plugin is registered, enabled and
tested, and what ``sign_pod`` buys.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, NodeScore
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo
from scheduler.model.pod import Pod

__all__ = ["NAME", "NodeLabelScore", "NodeLabelScoreArgs"]

NAME = "NodeLabelScore"

# Raw score of a node without a usable label value; real values are >= 0, so normalization can tell them apart.
_MISSING = -1
# Longer values are treated as missing: the framework keeps raw scores as int64.
_MAX_DIGITS = 18


@dataclass(frozen=True, slots=True)
class NodeLabelScoreArgs:
    """The plugin's args, decoded and checked once when the profile is built."""

    label: str
    prefer_lower: bool = False

    @classmethod
    def decode(cls, raw: Mapping[str, Any] | None) -> NodeLabelScoreArgs:
        """Args from the ``pluginConfig`` mapping. Raises ValueError naming the field, which py-scheduler
        reports as the profile's error, as it does for an in-tree plugin's invalid args."""
        raw = dict(raw or {})
        unknown = sorted(set(raw) - {"label", "preferLower"})
        if unknown:
            raise ValueError(f"{NAME} args: unknown field(s) {unknown}")
        label = raw.get("label")
        if not isinstance(label, str) or not label:
            raise ValueError(f"{NAME} args.label: required, a node label key such as example.com/generation")
        prefer_lower = raw.get("preferLower", False)
        if not isinstance(prefer_lower, bool):
            raise ValueError(f"{NAME} args.preferLower: must be true or false, not {prefer_lower!r}")
        return cls(label, prefer_lower)


def label_value(node_info: NodeInfo, label: str) -> int:
    """The node's value for ``label`` as a non-negative integer, else ``_MISSING``."""
    node = node_info.node
    text = node.labels.get(label) if node is not None else None
    if text is None or not text.isascii() or not text.isdigit() or len(text) > _MAX_DIGITS:
        return _MISSING
    return int(text)


class NodeLabelScore:
    """Score: the node's label value; NormalizeScore: those values scaled to [1, MAX_NODE_SCORE]."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | NodeLabelScoreArgs | None, handle: Handle) -> None:
        # py-scheduler passes an out-of-tree plugin its pluginConfig args as the mapping given (``{}`` when
        # none), so the plugin decodes them itself; a test may pass the typed args directly.
        self.args = args if isinstance(args, NodeLabelScoreArgs) else NodeLabelScoreArgs.decode(args)
        self.handle = handle

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        """The raw score: the label's value, or ``_MISSING``."""
        return label_value(node_info, self.args.label), None

    def score_extensions(self) -> NodeLabelScore:
        """This plugin normalizes its own scores (raw label values are not in [0, 100])."""
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        """Scale the labelled nodes' values to [1, MAX_NODE_SCORE], the preferred end highest; unlabelled
        nodes get 0, so any labelled node outranks them. Labelled nodes that all carry one value get
        MAX_NODE_SCORE: the label says nothing between them."""
        values = [s.score for s in scores if s.score != _MISSING]
        if not values:
            for s in scores:
                s.score = 0
            return None
        low, high = min(values), max(values)
        span = high - low
        for s in scores:
            if s.score == _MISSING:
                s.score = 0
            elif span == 0:
                s.score = MAX_NODE_SCORE
            else:
                distance = (high - s.score) if self.args.prefer_lower else (s.score - low)
                s.score = 1 + distance * (MAX_NODE_SCORE - 1) // span
        return None

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """The batching signature fragment: the raw score depends on the node's labels only, never on the
        pod or on other nodes (normalization runs every cycle anyway), so every pod signs the same. Without
        this method py-scheduler turns opportunistic batching off for every pod of the profile."""
        return NAME
