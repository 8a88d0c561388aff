"""Kubernetes quantities, parsed with the official client's parser and rounded as upstream does."""

from __future__ import annotations

import math
from decimal import Decimal

from kubernetes.utils import parse_quantity

from scheduler.model.errors import InvalidObjectError

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"


def parse(value: object, obj: str, field: str) -> Decimal:
    """Parse a quantity (string or number); raise InvalidObjectError naming obj and field."""
    try:
        return parse_quantity(value)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise InvalidObjectError(obj, field, f"invalid quantity {value!r}: {exc}") from None


def to_milli(value: object, obj: str, field: str) -> int:
    """CPU in millicores; upstream's MilliValue rounds up (ceil)."""
    return math.ceil(parse(value, obj, field) * 1000)


def to_int(value: object, obj: str, field: str) -> int:
    """Memory, storage, pods and extended resources as whole units; upstream's Value rounds up."""
    return math.ceil(parse(value, obj, field))
