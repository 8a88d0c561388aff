"""Consumable capacity: what a request consumes of a shared device under its request policy, and fit."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scheduler.model.dra import CapacityRequestPolicy, CapacityRequestPolicyRange, DeviceCapacity
from scheduler.plugins.helper.dynamicresources.capacity import (
    CapacityError,
    consumed_amount,
    request_fits,
    violates_policy,
)

GI = Decimal(2**30)
RANGE = CapacityRequestPolicy(GI, (), CapacityRequestPolicyRange(GI, 8 * GI, GI))
VALUES = CapacityRequestPolicy(2 * GI, (2 * GI, 4 * GI, 8 * GI), None)
MILLI = CapacityRequestPolicy(Decimal(1), (), CapacityRequestPolicyRange(Decimal("0.1"), None, Decimal("0.25")))


@pytest.mark.parametrize(("requested", "policy", "consumed"), [
    (None, None, 16 * GI),  # no request, no policy: the whole capacity
    (None, RANGE, GI),  # no request: the policy's default
    (3 * GI, None, 3 * GI),
    (Decimal(1536 * 2**20), RANGE, 2 * GI),  # rounded up to the next step
    (Decimal(2**20), RANGE, GI),  # below the minimum: the minimum
    (3 * GI, VALUES, 4 * GI),  # the next valid value
    (9 * GI, VALUES, 9 * GI),  # above every valid value: as requested (and then refused by the policy)
    (Decimal("0.3"), MILLI, Decimal("0.35")),  # milli-unit steps (DRAFractionalCapacityRange)
])
def test_consumed_amount(requested: Decimal | None, policy: CapacityRequestPolicy | None, consumed: Decimal) -> None:
    assert consumed_amount(requested, DeviceCapacity(16 * GI, policy), fractional=True) == consumed


@pytest.mark.parametrize(("value", "policy", "violates"), [
    (9 * GI, RANGE, True),  # above max
    (3 * GI, RANGE, False),
    (9 * GI, VALUES, True),
    (2 * GI, VALUES, False),
    (Decimal("0.35"), MILLI, False),
    (Decimal("0.3"), MILLI, True),  # off the step
])
def test_violates_policy(value: Decimal, policy: CapacityRequestPolicy, violates: bool) -> None:
    assert violates_policy(value, policy, fractional=True) is violates


def test_fit_counts_allocated_and_in_flight_consumption() -> None:
    capacity = {"memory": DeviceCapacity(10 * GI)}
    assert request_fits({"memory": 4 * GI}, {"memory": 4 * GI}, capacity, {}, True)
    assert not request_fits({"memory": 4 * GI}, {"memory": 4 * GI}, capacity, {"memory": 4 * GI}, True)
    assert not request_fits({}, {"cores": Decimal(1)}, capacity, {}, True)  # the device has no such capacity


def test_negative_consumption_is_an_error() -> None:
    with pytest.raises(CapacityError, match="capacity value is negative"):
        request_fits({}, {"memory": -GI}, {"memory": DeviceCapacity(10 * GI)}, {}, True)
