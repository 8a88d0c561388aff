"""The configuration document as upstream's strict decoding reads it: YAML (or JSON, a subset) with duplicate
keys rejected, errors naming the line and column (upstream ``apis/config/scheme`` with the strict serializer).
"""

from __future__ import annotations

from typing import Any

import yaml

from scheduler.config.errors import ConfigError, FieldError

__all__ = ["parse_document"]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys, as upstream's strict decoding does."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, list | dict):
            continue  # unhashable keys are rejected by the base constructor with its own message
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_document(text: str, source: str) -> Any:
    """YAML (or JSON, a subset) with duplicate keys rejected; errors name the line and column."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        raise ConfigError([FieldError("", f"{where}: YAML error: {problem}")], source) from None
