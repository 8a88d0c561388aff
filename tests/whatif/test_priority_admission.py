"""The what-if commands' Priority admission (plugin/pkg/admission/priority at v1.37.2): a pod's priority
and preemption policy from its PriorityClass or the global default, admission's refusals, and the
PriorityClass validation that decides which classes count."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.validation import validate
from scheduler.whatif.priority_admission import AdmissionError, PriorityAdmission


def pclass(name: str, value: int, *, default: bool = False, policy: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": name}, "value": value}
    if default:
        obj["globalDefault"] = True
    if policy:
        obj["preemptionPolicy"] = policy
    return obj


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [], **spec}}


def resolved(admission: PriorityAdmission, p: dict[str, Any]) -> tuple[Any, Any, Any]:
    spec = admission.admit(p)["spec"]
    return spec.get("priorityClassName"), spec.get("priority"), spec.get("preemptionPolicy")


CLASSES = [pclass("high", 1000), pclass("polite", 500, policy="Never"), pclass("low", 10)]


@pytest.mark.parametrize(
    ("classes", "spec", "want"),
    [
        (CLASSES, {"priorityClassName": "high"}, ("high", 1000, "PreemptLowerPriority")),
        (CLASSES, {"priorityClassName": "polite"}, ("polite", 500, "Never")),
        # no class named, no global default: priority 0, PreemptLowerPriority, no class name
        (CLASSES, {}, (None, 0, "PreemptLowerPriority")),
        # the global default is named in the pod; of two defaults the lower value wins
        ([*CLASSES, pclass("d1", 7, default=True), pclass("d2", 5, default=True)], {},
         ("d2", 5, "PreemptLowerPriority")),
        # the system classes exist without being listed
        ([], {"priorityClassName": "system-node-critical"},
         ("system-node-critical", 2000001000, "PreemptLowerPriority")),
        # a matching policy or priority written in the pod is accepted
        (CLASSES, {"priorityClassName": "polite", "preemptionPolicy": "Never"}, ("polite", 500, "Never")),
        (CLASSES, {"priorityClassName": "high", "priority": 1000}, ("high", 1000, "PreemptLowerPriority")),
        # a pod written with a priority is taken as stored: kept, its unknown class too
        (CLASSES, {"priority": 42}, (None, 42, None)),
        (CLASSES, {"priorityClassName": "gone", "priority": 42}, ("gone", 42, None)),
    ],
)
def test_priority_from_the_class(classes: list[dict[str, Any]], spec: dict[str, Any], want: tuple[Any, ...]) -> None:
    assert resolved(PriorityAdmission.from_objects(classes), pod(**spec)) == want


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"priorityClassName": "missing"}, 'pods "p" is forbidden: no PriorityClass with name missing was found'),
        ({"priorityClassName": "high", "priority": 5},
         'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority '
         "admission controller computed 1000 from the given PriorityClass name"),
        ({"priorityClassName": "polite", "preemptionPolicy": "PreemptLowerPriority"},
         'pods "p" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in '
         "pod spec; priority admission controller computed Never from the given PriorityClass name"),
    ],
)
def test_admission_refusals(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(AdmissionError) as err:
        PriorityAdmission.from_objects(CLASSES).admit(pod(**spec))
    assert str(err.value) == message


def test_generate_name_in_the_refusal() -> None:
    p = {"kind": "Pod", "metadata": {"generateName": "web-"}, "spec": {"priorityClassName": "x"}}
    with pytest.raises(AdmissionError, match=r'^pods "web-" is forbidden'):
        PriorityAdmission([]).admit(p)


def test_incomplete_class_set_leaves_unknown_classes_and_defaults_alone() -> None:
    """--from-cluster: the live cluster's classes are not read, so what the files do not define is kept."""
    admission = PriorityAdmission.from_objects(CLASSES, complete=False)
    assert resolved(admission, pod(priorityClassName="elsewhere")) == ("elsewhere", None, None)
    assert resolved(admission, pod()) == (None, None, None)
    assert resolved(admission, pod(priorityClassName="high")) == ("high", 1000, "PreemptLowerPriority")


@pytest.mark.parametrize(
    ("obj", "errors"),
    [
        (pclass("ok", 1000000000), []),
        (pclass("too-high", 1000000001), ["value: maximum allowed value of a user defined priority is 1000000000"]),
        (pclass("system-mine", 5), ["metadata.name: priority class names with 'system-' prefix are reserved for "
                                    "system use only. error: system-mine is not a known system priority class"]),
        (pclass("system-node-critical", 2000001000), []),
        (pclass("system-node-critical", 7), ["metadata.name: priority class names with 'system-' prefix are reserved "
                                             "for system use only. error: value of system-node-critical PriorityClass "
                                             "must be 2000001000"]),
        ({**pclass("x", 1), "value": "1"}, ["value: '1' must be a 32-bit integer"]),
        (pclass("x", 1, policy="Sometimes"),
         ["preemptionPolicy: unsupported value 'Sometimes' (supported: Never, PreemptLowerPriority)"]),
    ],
)
def test_priority_class_validation(obj: dict[str, Any], errors: list[str]) -> None:
    assert [str(e) for e in validate(obj)] == errors
