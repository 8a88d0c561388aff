"""The what-if commands' Priority admission (plugin/pkg/admission/priority at v1.37.2): a pod's priority
and preemption policy from its PriorityClass or the global default, admission's refusals, and the
PriorityClass validation that decides which classes count."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.model.validation import validate
from scheduler.testing import PodWrapper, make_pod
from scheduler.whatif.priority_admission import AdmissionError, PriorityAdmission


def pclass(name: str, value: int, *, default: bool = False, policy: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": name}, "value": value}
    if default:
        obj["globalDefault"] = True
    if policy:
        obj["preemptionPolicy"] = policy
    return obj


def resolved(admission: PriorityAdmission, p: dict[str, Any]) -> tuple[Any, Any, Any]:
    spec = admission.admit(p)["spec"]
    return spec.get("priorityClassName"), spec.get("priority"), spec.get("preemptionPolicy")


CLASSES = [pclass("high", 1000), pclass("polite", 500, policy="Never"), pclass("low", 10)]


@pytest.mark.parametrize(
    ("classes", "pod", "want"),
    [
        (CLASSES, make_pod().priority_class_name("high"), ("high", 1000, "PreemptLowerPriority")),
        (CLASSES, make_pod().priority_class_name("polite"), ("polite", 500, "Never")),
        # no class named, no global default: priority 0, PreemptLowerPriority, no class name
        (CLASSES, make_pod(), (None, 0, "PreemptLowerPriority")),
        # the global default is named in the pod; of two defaults the lower value wins
        ([*CLASSES, pclass("d1", 7, default=True), pclass("d2", 5, default=True)], make_pod(),
         ("d2", 5, "PreemptLowerPriority")),
        # the system classes exist without being listed
        ([], make_pod().priority_class_name("system-node-critical"),
         ("system-node-critical", 2000001000, "PreemptLowerPriority")),
        # a matching policy or priority written in the pod is accepted
        (CLASSES, make_pod().priority_class_name("polite").preemption_policy("Never"), ("polite", 500, "Never")),
        (CLASSES, make_pod().priority_class_name("high").priority(1000), ("high", 1000, "PreemptLowerPriority")),
        # a pod written with a priority is taken as stored: kept, its unknown class too
        (CLASSES, make_pod().priority(42), (None, 42, None)),
        (CLASSES, make_pod().priority_class_name("gone").priority(42), ("gone", 42, None)),
    ],
)
def test_priority_from_the_class(classes: list[dict[str, Any]], pod: PodWrapper, want: tuple[Any, ...]) -> None:
    assert resolved(PriorityAdmission.from_objects(classes), pod.api()) == want


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (make_pod().priority_class_name("missing"),
         'pods "p" is forbidden: no PriorityClass with name missing was found'),
        (make_pod().priority_class_name("high").priority(5),
         'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority '
         "admission controller computed 1000 from the given PriorityClass name"),
        (make_pod().priority_class_name("polite").preemption_policy("PreemptLowerPriority"),
         'pods "p" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in '
         "pod spec; priority admission controller computed Never from the given PriorityClass name"),
    ],
)
def test_admission_refusals(pod: PodWrapper, message: str) -> None:
    with pytest.raises(AdmissionError) as err:
        PriorityAdmission.from_objects(CLASSES).admit(pod.api())
    assert str(err.value) == message


def test_generate_name_in_the_refusal() -> None:
    p = {"kind": "Pod", "metadata": {"generateName": "web-"}, "spec": {"priorityClassName": "x"}}
    with pytest.raises(AdmissionError, match=r'^pods "web-" is forbidden'):
        PriorityAdmission([]).admit(p)


def test_incomplete_class_set_leaves_unknown_classes_and_defaults_alone() -> None:
    """--from-cluster: the live cluster's classes are not read, so what the files do not define is kept."""
    admission = PriorityAdmission.from_objects(CLASSES, complete=False)
    assert resolved(admission, make_pod().priority_class_name("elsewhere").api()) == ("elsewhere", None, None)
    assert resolved(admission, make_pod().api()) == (None, None, None)
    assert resolved(admission, make_pod().priority_class_name("high").api()) == ("high", 1000, "PreemptLowerPriority")


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
