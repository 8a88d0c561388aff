"""Consumable capacity (DRAConsumableCapacity, DRAFractionalCapacityRange: beta and on in v1.37.2).

Follows ``k8s.io/dynamic-resource-allocation/structured/internal/incubating/consumable_capacity.go``:
how much of each capacity a request consumes from a device that allows multiple allocations (its
request, rounded up to the device's request policy, or the policy's default, or the whole capacity),
and whether that still fits next to what allocated and in-flight claims already consume.

Quantities are exact Decimals; ``Value()`` and ``MilliValue()`` round up as upstream's do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal

from scheduler.model.dra import CapacityRequestPolicy, CapacityRequestPolicyRange, DeviceCapacity

_INT64_MAX = 2**63 - 1
NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"
NEGATIVE = "capacity value is negative"

ConsumedCapacity = dict[str, Decimal]


class CapacityError(ValueError):
    """A capacity computation that upstream reports as an error (not as "does not fit")."""


def _value(q: Decimal) -> int:
    """``Quantity.Value()``: rounded up to an integer."""
    return math.ceil(q)


def _milli(q: Decimal) -> int:
    """``Quantity.MilliValue()``: rounded up to milli-units."""
    return math.ceil(q * 1000)


def _safe_milli(q: Decimal) -> int | None:
    """The milli value when ``q`` is exactly representable in milli-units, else None."""
    m = q * 1000
    return int(m) if m == m.to_integral_value() else None


def _use_milli(rng: CapacityRequestPolicyRange, fractional: bool) -> bool:
    """Milli arithmetic only with DRAFractionalCapacityRange and every bound exact in milli-units."""
    if not fractional:
        return False
    for i, q in enumerate((rng.min, rng.max, rng.step)):
        if q is None:
            continue
        m = _safe_milli(q)
        if m is None or (i == 2 and m < 1):
            return False
    return True


def _round_up_range(requested: Decimal, rng: CapacityRequestPolicyRange, fractional: bool) -> Decimal:
    assert rng.min is not None
    if requested < rng.min:
        return rng.min
    if rng.step is None:
        return requested
    if _use_milli(rng, fractional):
        req_milli = _safe_milli(requested)
        if req_milli is None:
            raise CapacityError(f"{NOT_REPRESENTABLE}: request {requested} is not a representable milli value")
        step, low = _milli(rng.step), _milli(rng.min)
        n = -(-(req_milli - low) // step)
        if n > (_INT64_MAX - low) // step:
            raise CapacityError(f"{NOT_REPRESENTABLE}: rounding request {requested} up to the next step passes "
                                "the milli-value range")
        return Decimal(low + step * n) / 1000
    if requested > _INT64_MAX:
        raise CapacityError(f"{NOT_REPRESENTABLE}: request {requested} exceeds MaxInt64")
    req, step, low = _value(requested), _value(rng.step), _value(rng.min)
    added = req - low
    n = int(added / step)  # Go's integer division truncates toward zero
    if added % step != 0 and added > 0:
        n += 1
    if low >= 0 and n > (_INT64_MAX - low) // step:
        raise CapacityError(f"{NOT_REPRESENTABLE}: rounding request {requested} up to the next step passes MaxInt64")
    return Decimal(low + step * n)


def consumed_amount(requested: Decimal | None, capacity: DeviceCapacity, fractional: bool) -> Decimal:
    """``calculateConsumedCapacity``: what one request takes of one capacity of a shared device."""
    policy = capacity.request_policy
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else capacity.value
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, policy.valid_range, fractional)
    if policy.valid_values:
        for v in policy.valid_values:
            if requested <= v:
                return v
    return requested


def _violates_range(value: Decimal, rng: CapacityRequestPolicyRange, fractional: bool) -> bool:
    if rng.max is not None and value > rng.max:
        return True
    if rng.step is None:
        return False
    low = rng.min if rng.min is not None else Decimal(0)
    if _use_milli(rng, fractional):
        v = _safe_milli(value)
        if v is None:
            return True
        return (v - _milli(low)) % _milli(rng.step) != 0
    return (_value(value) - _value(low)) % _value(rng.step) != 0


def violates_policy(value: Decimal, policy: CapacityRequestPolicy | None, fractional: bool) -> bool:
    """``violatesPolicy``: the consumed amount is not one the device's policy allows."""
    if policy is None:
        return False
    if policy.default is not None and value == policy.default:
        return False
    if policy.valid_range is not None:
        return _violates_range(value, policy.valid_range, fractional)
    if policy.valid_values:
        return all(value != v for v in policy.valid_values)
    return False


def request_fits(current: Mapping[str, Decimal], requests: Mapping[str, Decimal] | None,
                 capacity: Mapping[str, DeviceCapacity], allocating: Mapping[str, Decimal],
                 fractional: bool) -> bool:
    """``CmpRequestOverCapacity``: every capacity's consumption (allocated + in flight + this request)
    stays within the device's value and policy; a request for a capacity the device lacks never fits."""
    if requests and any(name not in capacity for name in requests):
        return False
    if not requests and not current and not allocating and all(c.request_policy is None for c in capacity.values()):
        # Nearly every check: a device nobody shares, a request without capacity requests. Each capacity's
        # consumption is then its whole value, which fits exactly (the loops below give the same answer).
        for name, c in capacity.items():
            if c.value < 0:
                raise CapacityError(f'capacity "{name}": {NEGATIVE}')
        return True
    consumed: dict[str, Decimal] = {}
    for name, cap in capacity.items():
        amount = consumed_amount(None if requests is None else requests.get(name), cap, fractional)
        if amount < 0:
            raise CapacityError(f'capacity "{name}": {NEGATIVE}')
        consumed[name] = amount
    for name, cap in capacity.items():
        amount = consumed[name]
        if violates_policy(amount, cap.request_policy, fractional):
            return False
        total = current.get(name, Decimal(0)) + amount + allocating.get(name, Decimal(0))
        if total > cap.value:
            return False
    return True


def consumed_by_request(requests: Mapping[str, Decimal] | None, capacity: Mapping[str, DeviceCapacity],
                        fractional: bool) -> ConsumedCapacity:
    """``GetConsumedCapacityFromRequest``: the amount per capacity that goes into the allocation result."""
    return {name: consumed_amount(None if requests is None else requests.get(name), cap, fractional)
            for name, cap in capacity.items()}
