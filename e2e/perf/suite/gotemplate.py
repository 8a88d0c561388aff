"""The part of Go's text/template that upstream's scheduler_perf templates use, so that they are read as they are.

scheduler_perf renders every node, pod and object template with ``text/template`` plus its own functions
(``getTemplateFuncs``: AddInt, DivideInt, Mod, Int, JSON, ...) before decoding the YAML. Supported: text,
``{{ pipeline }}``, ``{{- -}}`` trimming, comments, ``if``/``else if``/``else``/``end``, ``range`` over an
integer, list or map (with ``$i :=`` / ``$i, $v :=``), ``$x := ...`` / ``$x = ...``, pipes, parentheses,
field chains on ``.`` and on variables, and the builtins ``and or not eq ne lt le gt ge len index print``.
A missing map key is ``nil`` and prints ``<no value>``, as Go's default ``missingkey`` does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


class TemplateError(ValueError):
    """A template that does not parse or a call that fails while rendering."""


# ---- values as Go prints and tests them


def go_str(v: Any) -> str:
    """``fmt.Sprint``'s text of a value."""
    if v is None:
        return "<no value>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, list | tuple):
        return "[" + " ".join(go_str(x) for x in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join(f"{go_str(k)}:{go_str(x)}" for k, x in sorted(v.items())) + "]"
    return str(v)


def _go_float(f: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)`` (what %v prints): the shortest digits, in exponent form when
    the exponent is below -4 or at least 6 (Go prints 1e+06 for a million held as float64)."""
    if math.isnan(f) or math.isinf(f):
        return "NaN" if math.isnan(f) else ("+Inf" if f > 0 else "-Inf")
    if f == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits))
    exp = len(ds) + exponent - 1
    neg = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return neg + format(Decimal(repr(abs(f))).normalize(), "f")


def truth(v: Any) -> bool:
    """Go template truth: false, 0, nil and empty strings, lists and maps are false."""
    if v is None:
        return False
    if isinstance(v, bool | int | float | str | list | tuple | dict):
        return bool(v)
    return True


def _num(v: Any) -> float:
    if isinstance(v, bool) or v is None:
        raise TemplateError(f"cannot cast {go_str(v)} to a number")
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        raise TemplateError(f"cannot cast {v!r} to a number") from None


def _int(v: Any) -> int:
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            raise TemplateError(f"cannot cast {v!r} to int") from None
    return int(_num(v))


def _divide(a: Any, b: Any) -> float:
    if _num(b) == 0:
        raise TemplateError("division by zero")
    return _num(a) / _num(b)


def _mod(a: Any, b: Any) -> int:
    # Go's % truncates toward zero
    x, y = int(_num(a)), int(_num(b))
    if y == 0:
        raise TemplateError("division by zero")
    r = abs(x) % abs(y)
    return -r if x < 0 else r


def _product(*xs: Any) -> float:
    p = 1.0
    for x in xs:
        p *= _num(x)
    return p


def _and(*xs: Any) -> Any:
    for x in xs:
        if not truth(x):
            return x
    return xs[-1]


def _or(*xs: Any) -> Any:
    for x in xs:
        if truth(x):
            return x
    return xs[-1]


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return (a > b) - (a < b)
    if isinstance(a, str) and isinstance(b, str):
        return (a > b) - (a < b)
    raise TemplateError(f"incompatible types for comparison: {go_str(a)}, {go_str(b)}")


def _index(v: Any, *keys: Any) -> Any:
    for k in keys:
        v = v.get(k) if isinstance(v, dict) else v[int(k)]
    return v


# scheduler_perf's getTemplateFuncs (operations.go) and text/template's builtins.
FUNCS: dict[str, Callable[..., Any]] = {
    "AddFloat": lambda *xs: sum(_num(x) for x in xs),
    "AddInt": lambda *xs: int(sum(_num(x) for x in xs)),
    "SubtractFloat": lambda a, b: _num(a) - _num(b),
    "SubtractInt": lambda a, b: int(_num(a) - _num(b)),
    "MultiplyFloat": _product,
    "MultiplyInt": lambda *xs: int(_product(*xs)),
    "DivideFloat": _divide,
    "DivideInt": lambda a, b: int(_divide(a, b)),
    "Mod": _mod,
    "Int": _int,
    "JSON": lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False),
    "and": _and,
    "or": _or,
    "not": lambda v: not truth(v),
    "eq": lambda a, *bs: any(_cmp(a, b) == 0 if not (a is None or b is None) else a is b for b in bs),
    "ne": lambda a, b: _cmp(a, b) != 0,
    "lt": lambda a, b: _cmp(a, b) < 0,
    "le": lambda a, b: _cmp(a, b) <= 0,
    "gt": lambda a, b: _cmp(a, b) > 0,
    "ge": lambda a, b: _cmp(a, b) >= 0,
    "len": len,
    "index": _index,
    "print": lambda *xs: "".join(go_str(x) for x in xs),
}


# ---- lexing an action's inside

_TOKEN = re.compile(r"""\s*(?:
    (?P<str>"(?:[^"\\]|\\.)*"|`[^`]*`)
  | (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<decl>:=)
  | (?P<op>[()|,=])
  | (?P<var>\$\w*(?:\.\w+)*)
  | (?P<field>(?:\.\w+)+|\.)
  | (?P<ident>\w+)
)""", re.X)  # fmt: skip


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos, text = [], 0, text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"cannot parse {text[pos:]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


# ---- the tree


@dataclass
class _Scope:
    dot: Any
    vars: list[dict[str, Any]]

    def lookup(self, name: str) -> Any:
        for frame in reversed(self.vars):
            if name in frame:
                return frame[name]
        raise TemplateError(f"undefined variable {name}")

    def assign(self, name: str, value: Any) -> None:
        for frame in reversed(self.vars):
            if name in frame:
                frame[name] = value
                return
        raise TemplateError(f"undefined variable {name}")


def _fields(v: Any, names: Sequence[str]) -> Any:
    for n in names:
        if v is None:
            return None
        if not isinstance(v, Mapping):
            raise TemplateError(f"can't evaluate field {n} in {go_str(v)}")
        v = v.get(n)
    return v


class _Pipeline:
    """``[$x :=] cmd | cmd ...``: each command's result becomes the next command's last argument."""

    def __init__(self, cmds: list[list[tuple[str, Any]]], decl: list[str], assign: bool) -> None:
        if not cmds or not all(cmds):
            raise TemplateError("empty command in pipeline")
        self.cmds, self.decl, self.assign = cmds, decl, assign

    def eval(self, sc: _Scope) -> Any:
        value: Any = _NOTHING
        for cmd in self.cmds:
            value = _command(cmd, sc, value)
        return value


_NOTHING = object()
_DECL_SEPARATORS = (("decl", ":="), ("op", "="), ("op", ","))


def _pipeline(toks: list[tuple[str, str]]) -> _Pipeline:
    """Parse an action's tokens: the variables it declares or assigns, then its commands, with each
    parenthesized part a pipeline of its own."""
    decl: list[str] = []
    assign = False
    i = 0
    while i + 1 < len(toks) and toks[i][0] == "var" and toks[i + 1] in _DECL_SEPARATORS:
        decl.append(toks[i][1])
        sep = toks[i + 1]
        i += 2
        if sep != ("op", ","):
            assign = sep == ("op", "=")
            break
    cmds, pos = _commands(toks, i)
    if pos != len(toks):
        raise TemplateError("unexpected )")
    return _Pipeline(cmds, decl, assign)


def _commands(toks: list[tuple[str, str]], pos: int) -> tuple[list[list[tuple[str, Any]]], int]:
    """Commands from ``pos`` up to a closing parenthesis or the end; returns them and where they stopped."""
    cmds: list[list[tuple[str, Any]]] = [[]]
    while pos < len(toks):
        tok = toks[pos]
        if tok == ("op", ")"):
            return cmds, pos
        if tok == ("op", "("):
            inner, end = _commands(toks, pos + 1)
            if end >= len(toks):
                raise TemplateError("unclosed (")
            cmds[-1].append(("paren", _Pipeline(inner, [], False)))
            pos = end + 1
            continue
        if tok == ("op", "|"):
            cmds.append([])
        else:
            cmds[-1].append(tok)
        pos += 1
    return cmds, pos


def _operand(tok: tuple[str, Any], sc: _Scope) -> Any:
    kind, text = tok
    if kind == "str":
        return text[1:-1] if text[0] == "`" else json.loads(text)
    if kind == "num":
        return float(text) if any(c in text for c in ".eE") else int(text)
    if kind == "field":
        return sc.dot if text == "." else _fields(sc.dot, text[1:].split("."))
    if kind == "var":
        name, *rest = text.split(".")
        return _fields(sc.lookup(name), rest)
    if kind == "paren":
        return text.eval(sc)
    if kind == "ident":
        if text in ("true", "false"):
            return text == "true"
        if text == "nil":
            return None
        return _call(text, [])
    raise TemplateError(f"unexpected {text!r}")


def _call(name: str, args: list[Any]) -> Any:
    fn = FUNCS.get(name)
    if fn is None:
        raise TemplateError(f'function "{name}" not defined')
    try:
        return fn(*args)
    except TemplateError:
        raise
    except Exception as e:  # a Go template function's panic or error
        raise TemplateError(f"error calling {name}: {e}") from e


def _command(cmd: list[Any], sc: _Scope, piped: Any) -> Any:
    head = cmd[0]
    if head[0] == "ident" and head[1] not in ("true", "false", "nil"):
        args = [_operand(t, sc) for t in cmd[1:]]
        if piped is not _NOTHING:
            args.append(piped)
        return _call(head[1], args)
    if len(cmd) > 1 or piped is not _NOTHING:
        raise TemplateError(f"can't give argument to non-function {head[1]}")
    return _operand(head, sc)


@dataclass
class _Node:
    kind: str  # text, out, set, if, range
    text: str = ""
    pipe: _Pipeline | None = None
    body: list[_Node] = field(default_factory=list)
    orelse: list[_Node] = field(default_factory=list)


_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)


def _parse(src: str) -> list[_Node]:
    items: list[tuple[str, str]] = []  # ("text", s) / ("act", inside)
    pos = 0
    for m in _ACTION.finditer(src):
        text = src[pos : m.start()]
        if m.group(1):
            text = text.rstrip()
        items.append(("text", text))
        items.append(("act", m.group(2).strip()))
        pos = m.end()
        if m.group(3):
            rest = src[pos:]
            pos += len(rest) - len(rest.lstrip())
    items.append(("text", src[pos:]))
    root: list[_Node] = []
    stack: list[tuple[_Node, list[_Node]]] = []  # (block node, the list being filled)
    cur = root
    for kind, s in items:
        if kind == "text":
            if s:
                cur.append(_Node("text", text=s))
            continue
        if s.startswith("/*"):
            continue
        word, _, rest = s.partition(" ")
        if word in ("if", "range"):
            cur = _open_block(word, rest, cur, stack, cur)
        elif word == "else":
            if not stack:
                raise TemplateError("unexpected {{else}}")
            cur = stack[-1][0].orelse
            if rest.startswith("if "):  # else if: a nested if that the same end closes
                cur = _open_block("if", rest[3:], cur, stack, _ELSE_IF)
        elif word == "end":
            if not stack:
                raise TemplateError("unexpected {{end}}")
            while True:
                _node, parent = stack.pop()
                if parent is not _ELSE_IF:
                    cur = parent
                    break
        else:
            pipe = _pipeline(_tokens(s))
            cur.append(_Node("set" if pipe.decl else "out", pipe=pipe))
    if stack:
        raise TemplateError("missing {{end}}")
    return root


_ELSE_IF: list[_Node] = []


def _open_block(word: str, rest: str, cur: list[_Node], stack: list[tuple[_Node, list[_Node]]],
                parent: list[_Node]) -> list[_Node]:
    """Append an if/range node to ``cur``, remember where ``end`` returns to, and fill its body next."""
    node = _Node(word, pipe=_pipeline(_tokens(rest)))
    cur.append(node)
    stack.append((node, parent))
    return node.body


def _items(v: Any) -> list[tuple[Any, Any]]:
    if v is None:
        return []
    if isinstance(v, bool):
        raise TemplateError("range can't iterate over a bool")
    if isinstance(v, int | float):
        return [(i, i) for i in range(int(v))]
    if isinstance(v, dict):
        return [(k, v[k]) for k in sorted(v)]
    if isinstance(v, list | tuple):
        return list(enumerate(v))
    raise TemplateError(f"range can't iterate over {go_str(v)}")


def _exec(nodes: list[_Node], sc: _Scope, out: list[str]) -> None:
    for n in nodes:
        if n.kind == "text":
            out.append(n.text)
            continue
        assert n.pipe is not None
        if n.kind == "out":
            out.append(go_str(n.pipe.eval(sc)))
        elif n.kind == "set":
            value = n.pipe.eval(sc)
            for name in n.pipe.decl:
                if n.pipe.assign:
                    sc.assign(name, value)
                else:
                    sc.vars[-1][name] = value
        elif n.kind == "if":
            sc.vars.append({})
            _exec(n.body if truth(n.pipe.eval(sc)) else n.orelse, sc, out)
            sc.vars.pop()
        else:
            _range(n, sc, out)


def _range(n: _Node, sc: _Scope, out: list[str]) -> None:
    assert n.pipe is not None
    items = _items(n.pipe.eval(sc))
    if not items:
        sc.vars.append({})
        _exec(n.orelse, sc, out)
        sc.vars.pop()
        return
    dot = sc.dot
    for key, value in items:
        frame: dict[str, Any] = {}
        names = n.pipe.decl
        if len(names) == 1:  # one variable takes the element (for an integer, the element is its index)
            frame[names[0]] = value
        elif len(names) == 2:
            frame[names[0]], frame[names[1]] = key, value
        sc.vars.append(frame)
        sc.dot = value
        _exec(n.body, sc, out)
        sc.vars.pop()
    sc.dot = dot


class Template:
    """A parsed template; ``render(env)`` runs it with ``.`` = env (``$`` too, as Go sets it)."""

    def __init__(self, src: str, name: str = "template") -> None:
        self.name = name
        try:
            self._nodes = _parse(src)
        except TemplateError as e:
            raise TemplateError(f"{name}: {e}") from None

    def render(self, env: Mapping[str, Any]) -> str:
        out: list[str] = []
        try:
            _exec(self._nodes, _Scope(dict(env), [{"$": dict(env)}]), out)
        except TemplateError as e:
            raise TemplateError(f"{self.name}: {e}") from None
        return "".join(out)


def render(src: str, env: Mapping[str, Any], name: str = "template") -> str:
    """Render ``src`` once (see :class:`Template`)."""
    return Template(src, name).render(env)
