"""skip() hands out one shared Skip status: it must read as a fresh one and refuse changes to its reasons."""

import pytest

from scheduler.framework.status import Code, Status, code_name, skip, success


def test_the_shared_skip_reads_as_a_fresh_one() -> None:
    s = skip()
    assert s is skip()
    assert s == Status(Code.SKIP) and s.code == Code.SKIP and s.reasons == [] and s.message == ""
    assert s.plugin == "" and s.error is None
    assert not success(s) and not s.is_rejected() and code_name(s) == "Skip"


def test_the_shared_skip_refuses_reasons() -> None:
    s = skip()
    for change in (lambda: s.reasons.append("x"), lambda: s.reasons.extend(["x"]), lambda: s.reasons.insert(0, "x")):
        with pytest.raises(TypeError):
            change()
    with pytest.raises(TypeError):
        s.reasons += ["x"]
    assert skip().reasons == [] and skip().message == ""
