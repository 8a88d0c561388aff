"""The CEL environment of device selectors: variables, Kubernetes functions, errors in upstream's words."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scheduler.model.dra import DeviceAttribute, DeviceCapacity
from scheduler.plugins.helper.dynamicresources.cel import CelCache, CelDevice, CelRuntimeError, compile_selector

DEVICE = CelDevice(
    driver="gpu.example.com",
    attributes={
        "model": DeviceAttribute(string_value="A100"),
        "index": DeviceAttribute(int_value=3),
        "healthy": DeviceAttribute(bool_value=True),
        "driverVersion": DeviceAttribute(version_value="1.2.3-rc.1"),
        "numa.example.com/node": DeviceAttribute(int_value=1),
    },
    capacity={"memory": DeviceCapacity(Decimal(80 * 2**30))},
    allow_multiple_allocations=True,
)
NO_SUCH_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
                    "with has() for optional fields")

MATCHES: dict[str, bool] = {
    'device.driver == "gpu.example.com"': True,
    'device.attributes["gpu.example.com"].model == "A100"': True,
    'device.attributes["gpu.example.com"].index > 2 && device.attributes["gpu.example.com"].healthy': True,
    'device.attributes["numa.example.com"].node == 1': True,
    # a domain the device does not have reads as an empty map
    'has(device.attributes["other.example.com"].x)': False,
    'device.attributes["other.example.com"].?x.orValue(7) == 7': True,
    'device.allowMultipleAllocations': True,
    'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0': True,
    'device.capacity["gpu.example.com"].memory.isLessThan(quantity("80Gi"))': False,
    'device.capacity["gpu.example.com"].memory == quantity("80Gi")': True,
    'quantity("1000m") == quantity("1")': True,
    'quantity("1.5").isInteger() || quantity("2").asInteger() != 2': False,
    'quantity("1Gi").add(1).sub(quantity("1")).asInteger() == 1073741824': True,
    'sign(quantity("-3")) == -1 && isQuantity("5Mi") && !isQuantity("5 Mi")': True,
    'device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3"))': True,
    'device.attributes["gpu.example.com"].driverVersion.major() == 1': True,
    'semver("v01.2", true).compareTo(semver("1.2.0")) == 0 && !isSemver("1.2") && isSemver("1.2", true)': True,
    'semver("1.0.0+build.1") == semver("1.0.0+build.2")': True,
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))': True,
    'semver("1.0.0-beta.11").isGreaterThan(semver("1.0.0-beta.2"))': True,
    'device.attributes["gpu.example.com"].model.lowerAscii().startsWith("a")': True,
    '"a,b,c".split(",").size() == 3 && "abc".indexOf("c") == 2': True,
    '[1, 2, 3].sum() == 6 && [3, 1, 2].max() == 3 && [3, 1, 2].min() == 1 && [1, 2].isSorted()': True,
    '"gpu-12".find("[0-9]+") == "12" && "a1b22".findAll("[0-9]+") == ["1", "22"]': True,
    'sets.contains([1, 2, 3], [2]) && sets.intersects([1], [1, 4]) && sets.equivalent([1, 2], [2, 1])': True,
    'cel.bind(a, device.attributes["gpu.example.com"], a.index == 3 && a.model == "A100")': True,
    '[1, 2, 3].exists(i, i == device.attributes["gpu.example.com"].index)': True,
}


@pytest.mark.parametrize("expression", list(MATCHES))
def test_device_matches(expression: str) -> None:
    compiled = compile_selector(expression)
    assert compiled.error is None
    assert compiled.device_matches(DEVICE) is MATCHES[expression]


COMPILE_ERRORS: dict[str, str] = {
    "device.foo": "compilation failed: ERROR: <input>:1:7: undefined field 'foo'\n | device.foo\n | ......^",
    '"a" + 1 == "a1"': "compilation failed: ERROR: <input>:1:5: found no matching overload for '_+_' applied to "
                       "'(string, int)'\n | \"a\" + 1 == \"a1\"\n | ....^",
    "1 + 1": "must evaluate to bool or the unknown type, not int",
    "device.driver": "must evaluate to bool or the unknown type, not string",
    "device.driver == 1": "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to "
                          "'(string, int)'\n | device.driver == 1\n | ..............^",
    'quantity("1").isGreaterThan(semver("1.0.0"))': "compilation failed: ERROR: <input>:1:28: found no matching "
    "overload for 'isGreaterThan' applied to '(kubernetes.Quantity, kubernetes.Semver)'\n"
    ' | quantity("1").isGreaterThan(semver("1.0.0"))\n | ...........................^',
}


@pytest.mark.parametrize("expression", list(COMPILE_ERRORS))
def test_compile_errors(expression: str) -> None:
    assert compile_selector(expression).error == COMPILE_ERRORS[expression]


RUNTIME_ERRORS: dict[str, str] = {
    'device.attributes["other.example.com"].x == 1': "no such key: x" + NO_SUCH_KEY_HINT,
    'device.attributes["gpu.example.com"].missing': "no such key: missing" + NO_SUCH_KEY_HINT,
    'device.attributes["gpu.example.com"].index / 0 == 1': "division by zero",
    'sign(quantity("abc")) == 1': "quantities must match the regular expression "
                                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    'quantity("1.5").asInteger() == 1': "cannot convert value to integer",
    'semver("1.2").major() == 1': "No Major.Minor.Patch elements found",
    'semver("1.2", true).major() == 1 && semver("1.2-rc", true).major() == 1':
        "short version cannot contain PreRelease/Build meta data",
    "[].max() == 1": "max called on empty list",
    "[1, 2][5] == 1": "index out of bounds: 5",
    'device.attributes["gpu.example.com"].model': "CEL result of type string could not be converted to bool: "
                                                  "unsupported native conversion from string to 'bool'",
    'device.attributes["gpu.example.com"].index': "CEL result of type int could not be converted to bool: "
                                                  "unsupported type conversion from 'int' to bool",
}


@pytest.mark.parametrize("expression", list(RUNTIME_ERRORS))
def test_runtime_errors(expression: str) -> None:
    compiled = compile_selector(expression)
    assert compiled.error is None
    with pytest.raises(CelRuntimeError) as info:
        compiled.device_matches(DEVICE)
    assert str(info.value) == RUNTIME_ERRORS[expression]


def test_invalid_version_attribute_is_a_runtime_error() -> None:
    device = CelDevice("d", {"v": DeviceAttribute(version_value="01.0.0")}, {})
    with pytest.raises(CelRuntimeError) as info:
        compile_selector("device.driver == 'd'").device_matches(device)
    assert str(info.value) == 'attribute v: parse semantic version: Major number must not contain leading zeroes "01"'


def test_cache_compiles_once_and_keeps_only_successes() -> None:
    cache = CelCache(max_entries=2)
    first = cache.get_or_compile("device.driver == 'a'")
    assert cache.get_or_compile("device.driver == 'a'") is first
    assert cache.get_or_compile("device.foo").error is not None
    assert cache.get_or_compile("device.foo") is not cache.get_or_compile("device.foo")
    cache.get_or_compile("device.driver == 'b'")
    cache.get_or_compile("device.driver == 'c'")  # evicts the least recently used: 'a'
    assert cache.get_or_compile("device.driver == 'a'") is not first


def test_outcomes_are_remembered_per_device_object_and_driver() -> None:
    compiled = compile_selector('device.driver == "a"')
    built: list[str] = []

    def make(driver: str) -> CelDevice:
        built.append(driver)
        return CelDevice(driver, {}, {})

    key = DeviceKey()
    assert compiled.device_matches_cached(key, "a", lambda: make("a")) is True
    assert compiled.device_matches_cached(key, "a", lambda: make("a")) is True
    assert compiled.device_matches_cached(key, "b", lambda: make("b")) is False
    assert built == ["a", "b"]


def test_remembered_runtime_error_is_raised_again() -> None:
    compiled = compile_selector('device.attributes["x.com"].y == 1')
    key = DeviceKey()
    for _ in range(2):
        with pytest.raises(CelRuntimeError, match="no such key: y"):
            compiled.device_matches_cached(key, "d", lambda: CelDevice("d", {}, {}))


class DeviceKey:
    """Stands in for a slice's Device object: any weakly referenceable object can key the outcomes."""
