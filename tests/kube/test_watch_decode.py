"""The pod stream's decode (``scheduler.kube.transform.loads_trimmed`` and ``PodLineDecoder``): managedFields cut
from the watch line's bytes, and a spec seen before taken from its bytes, must leave exactly what decoding the
whole line and trimming it leaves, for any strings a pod may carry, and the cuts must be taken for pods shaped
as kube-apiserver writes them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.kube.transform import PodLineDecoder, loads_trimmed, managed_fields_span, trim

# Fragments that look like the marks the cut looks for, inside strings where they must not count.
TRICKY = [",\"managedFields\":[", "]},\"spec\":", "],\"", "\\", "\"", "[", "]", "{", "}", ",", ":", "spec",
          "managedFields", "\\\"", "]},\\\"spec\\\":", "},\"status\":{", "},\\\"status\\\":{", "status"]
text = st.lists(st.one_of(st.sampled_from(TRICKY), st.text(max_size=4)), max_size=5).map("".join)
plain = st.text(alphabet="abcdef-.:/", max_size=8)  # no bracket: the strings fieldsV1 keys usually hold


def _fields(prefix_text: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A fieldsV1 trie: prefixed keys, empty objects as leaves."""
    key = st.tuples(st.sampled_from(["f:", "k:", "v:", "i:"]), prefix_text).map("".join)
    return st.recursive(st.just({}), lambda inner: st.dictionaries(key | st.just("."), inner, max_size=3),
                        max_leaves=8)


def _entry(fields: st.SearchStrategy[dict[str, Any]], names: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """A ManagedFieldsEntry in Go's field order."""
    return st.builds(lambda manager, sub, f: {
        "manager": manager, "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1", "fieldsV1": f, **({"subresource": sub} if sub else {})},
        names, st.sampled_from(["", "status"]), fields)


def _pod(strings: st.SearchStrategy[str], managed: st.SearchStrategy[list[Any]]) -> st.SearchStrategy[Any]:
    """A watch event of a pod in Go's order (ObjectMeta's managedFields last), strings drawn from ``strings``."""
    string_map = st.dictionaries(strings, strings, max_size=3)
    return st.builds(
        lambda type_, name, labels, annotations, finalizers, mf, container, phase: {"type": type_, "object": {
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": "ns", "uid": "u", "resourceVersion": "7",
                         **({"labels": labels} if labels else {}),
                         **({"annotations": annotations} if annotations else {}),
                         **({"finalizers": finalizers} if finalizers else {}),
                         **({"managedFields": mf} if mf else {})},
            "spec": {"containers": [{"name": container, "image": "i"}], "schedulerName": "s"},
            "status": {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}]}}},
        st.sampled_from(["ADDED", "MODIFIED", "DELETED"]), strings, string_map, string_map,
        st.lists(strings, max_size=2), managed, strings, strings)


def _decoded_then_trimmed(line: bytes) -> Any:
    ev = orjson.loads(line)
    trim(ev["object"])
    return ev


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pod(text, st.lists(_entry(_fields(text), text), max_size=3)))
def test_any_strings_decode_as_the_whole_line_trimmed(event: Any) -> None:
    line = orjson.dumps(event)
    assert loads_trimmed(line) == _decoded_then_trimmed(line)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pod(text, st.lists(_entry(_fields(plain), plain), min_size=1, max_size=3)))
def test_the_cut_is_taken_for_apiserver_shaped_pods(event: Any) -> None:
    """With no bracket inside managedFields (fieldsV1 holds none; strings rarely do), whatever the other
    strings hold, the bytes are cut and the managedFields never decoded."""
    line = orjson.dumps(event)
    span = managed_fields_span(line)
    assert span is not None
    assert orjson.loads(b"[" + line[span[0] + len(b',"managedFields":'):span[1]] + b"]") == [
        event["object"]["metadata"]["managedFields"]]
    assert loads_trimmed(line) == _decoded_then_trimmed(line)


MANAGED = [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]


@pytest.mark.parametrize("metadata", [
    {"name": "p", "managedFields": MANAGED, "finalizers": ["x"]},  # not last: another array follows
    {"name": "p", "managedFields": MANAGED, "deletionGracePeriodSeconds": 30},  # not last: a scalar follows
    {"managedFields": MANAGED, "name": "p"},  # first, so no comma before the key
    {"name": "p", "managedFields": [{**MANAGED[0], "fieldsV1": {"f:spec": {"k:[1]": {}}}}]},  # a bracket inside
    {"name": "p", "managedFields": [{**MANAGED[0], "extra": [1]}]},  # an array inside
    # an array inside, closed by the very bytes that end metadata: only the '[' check tells them apart
    {"name": "p", "managedFields": [{**MANAGED[0], "fieldsV1": {"f:a": {"b": [1]}, "spec": {}}}]},
])
def test_other_shapes_fall_back_to_a_whole_decode(metadata: dict[str, Any]) -> None:
    line = orjson.dumps({"type": "MODIFIED", "object": {"metadata": metadata, "spec": {"a": 1}, "status": {}}})
    assert loads_trimmed(line) == _decoded_then_trimmed(line)
    assert "managedFields" not in loads_trimmed(line)["object"]["metadata"]


def test_events_without_a_pod_decode_unchanged() -> None:
    for ev in ({"type": "ERROR", "object": {"kind": "Status", "code": 410}},
               {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}):
        assert loads_trimmed(orjson.dumps(ev)) == ev


def _spec(strings: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """A spec with strings from ``strings``, some with an object member named status inside (so that the first
    ``},"status":{`` after the spec's start is not its end), unbound or bound to one of two nodes."""
    return st.builds(lambda name, image, inner, node: {
        "containers": [{"name": name, "image": image}],
        **({"extra": {"a": {"b": name}, "status": {"c": image}}} if inner else {}),
        **({"nodeName": node} if node else {}), "schedulerName": "s"},
        strings, strings, st.booleans(), st.sampled_from(["", "n1", "n2"]))


def _event(strings: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    managed = st.lists(_entry(_fields(plain), plain), max_size=2)  # mostly cut: the spec's bytes are looked up
    return st.builds(lambda type_, name, spec, mf, phase: {"type": type_, "object": {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "uid": "u", **({"managedFields": mf} if mf else {})},
        "spec": spec, "status": {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}]}}},
        st.sampled_from(["ADDED", "MODIFIED", "DELETED"]), strings, _spec(strings), managed, strings)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event(text), min_size=1, max_size=5), st.sampled_from([1, 2, 4096]))
def test_a_decoder_gives_every_line_as_the_whole_line_decoded_and_trimmed(events: list[Any], capacity: int) -> None:
    """Every line twice through one decoder (the second time its spec is remembered, unless the capacity
    dropped it), whatever its strings and whatever lies inside its spec."""
    decoder = PodLineDecoder(capacity)
    for event in events + events:
        line = orjson.dumps(event)
        assert decoder.loads(line) == _decoded_then_trimmed(line)


def _line(name: str, spec: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": "ADDED", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": name, "managedFields": MANAGED}, "spec": spec, "status": {"phase": "Pending"}}})


def test_a_spec_seen_before_is_shared_and_a_bound_spec_shares_its_templates_parts() -> None:
    decoder = PodLineDecoder()
    template = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
                "tolerations": [{"key": "k", "operator": "Exists"}], "schedulerName": "s"}
    a = decoder.loads(_line("a", template))["object"]
    b = decoder.loads(_line("b", template))["object"]
    assert a["spec"] is b["spec"] and a["spec"] == template and (a["metadata"], b["metadata"]) == ({"name": "a"},
                                                                                                    {"name": "b"})
    bound = decoder.loads(_line("a", {**template, "nodeName": "n1"}))["object"]["spec"]
    assert bound == {**template, "nodeName": "n1"} and len(decoder) == 2
    assert bound["containers"] is a["spec"]["containers"] and bound["tolerations"] is a["spec"]["tolerations"]


def test_a_spec_with_a_status_member_inside_is_decoded_whole_and_not_remembered() -> None:
    decoder = PodLineDecoder()
    spec = {"containers": [{"name": "c"}], "extra": {"a": {}, "status": {"b": 1}}}
    for _ in range(2):
        assert decoder.loads(_line("a", spec)) == _decoded_then_trimmed(_line("a", spec))
    assert len(decoder) == 0
