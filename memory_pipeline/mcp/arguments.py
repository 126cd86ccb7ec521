"""The MCP server's tool arguments as a caller reads them: a rejected argument is one line naming it and what
is allowed (`search: argument 'k' must be a whole number from 1 to 1000 (number of hits); got 0`), not
pydantic's multi-line dump with its model name and a link; and the tools' schemas carry titles a person can
read (`search arguments`) instead of the SDK's generated model names (`search_memoryArguments`).

What is allowed is read from the tool's own JSON schema, so the line and the schema a client sees never
disagree."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

_TYPE_WORDS = {"string": "text", "integer": "a whole number", "number": "a number", "boolean": "true or false",
               "array": "a list", "object": "an object", "null": "null"}  # fmt: skip


def argument_error(tool: str, schema: Mapping[str, Any], error: ValidationError, given: Iterable[str] = ()) -> str:
    """One line for every argument `error` rejects (joined by "; "), plus any argument name the tool does not
    take, named with the ones it does (the tools' argument models forbid extra arguments, so a misspelt name is
    an error, never silently ignored). A value of the wrong JSON type (`k: true`, `k: "3"`) is rejected, not
    converted: the models are strict."""
    lines: dict[str, str] = {}
    for e in error.errors():
        path, prop = _locate(schema, e["loc"])
        if e["type"] == "extra_forbidden":
            if "." in path or (path and path in schema.get("properties", {})):  # a nested object's unknown field
                field = str(e["loc"][-1])
                takes = ", ".join(_resolve(schema, prop).get("properties", {})) if prop is not None else ""
                lines.setdefault(f"{path}.{field}", f"argument '{path}' has no field {field!r}"
                                                    + (f" (it takes: {takes})" if takes else ""))  # fmt: skip
            continue  # an unknown argument: named below with the ones the tool takes
        if not path or path in lines:
            continue
        allowed = _allowed(schema, prop) if prop is not None else ""
        about = _description(schema, prop)
        if e["type"] == "missing":
            lines[path] = f"argument '{path}' is required: {allowed or 'a value'}{about}"
        else:
            lines[path] = f"argument '{path}' must be {allowed or _reason(e)}{about}; got {_shown(e.get('input'))}"
    unknown = unknown_arguments(schema, given)
    if unknown:
        lines["*"] = unknown
    if not lines:  # nothing in the schema to name: pydantic's own first message, still one line
        first = error.errors()[0]
        lines["?"] = " ".join(_reason(first).split())
    return f"{tool}: " + "; ".join(lines.values())


def unknown_arguments(schema: Mapping[str, Any], given: Iterable[str]) -> str:
    """The line naming the arguments in `given` the tool does not take — `unknown argument 'home' (this tool
    takes: query, k, …)` — or "" when it takes them all."""
    known = list(schema.get("properties", {}))
    unknown = [name for name in given if name not in known]
    if not unknown:
        return ""
    plural = "s" if len(unknown) > 1 else ""
    return f"unknown argument{plural} {', '.join(repr(u) for u in unknown)} (this tool takes: {', '.join(known)})"


_PARAM_WORDS = {"dict_type": "an object", "model_type": "an object", "string_type": "text",
                "int_type": "a whole number", "list_type": "a list", "bool_type": "true or false",
                "float_type": "a number"}  # fmt: skip


def params_error(method: str, error: ValidationError) -> str:
    """A request's params the protocol rejects, in one line naming them (the SDK answers only "Invalid request
    parameters"): `Invalid params for tools/call: 'arguments' must be an object (argument names to values);
    got "TIA"`."""
    parts: list[str] = []
    for e in error.errors()[:3]:
        loc = [str(p) for p in e["loc"]]
        name = ".".join(loc[1:] if loc[:1] == ["params"] else loc) or "params"
        if e["type"] == "missing":
            parts.append(f"'{name}' is required")
            continue
        want = _PARAM_WORDS.get(e["type"]) or _reason(e)
        if name == "arguments" and e["type"] == "dict_type":
            want += " (argument names to values)"
        parts.append(f"'{name}' must be {want}; got {_shown(e.get('input'))}")
    return f"Invalid params for {method}: " + "; ".join(parts)


def titled(schema: dict[str, Any] | None, title: str) -> dict[str, Any] | None:
    """`schema` with its title replaced (the SDK names it after the Python function: `search_memoryArguments`)
    and its nested models' titles in words (`SearchHit` → `search hit`)."""
    if schema is None:
        return None
    defs = {name: {**d, "title": _words(str(d.get("title", name)))} for name, d in schema.get("$defs", {}).items()}
    return {**schema, "title": title, **({"$defs": defs} if defs else {})}


def _words(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").lower()


def _resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follows a `$ref` into `$defs` and unwraps `anyOf: [X, null]` (an optional argument) to X."""
    for _ in range(8):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = root.get("$defs", {}).get(ref.rpartition("/")[2], {})
            continue
        options = [o for o in node.get("anyOf", []) if o.get("type") != "null"]
        if len(options) == 1:
            node = {**{k: v for k, v in node.items() if k != "anyOf"}, **options[0]}
            continue
        break
    return node


def _locate(root: Mapping[str, Any], loc: Iterable[int | str]) -> tuple[str, Mapping[str, Any] | None]:
    """The argument's dotted path (`turns.0.role`) and its schema; parts pydantic adds that are not in the
    schema (the member of a union it tried) are dropped."""
    path: list[str] = []
    node: Mapping[str, Any] | None = root
    for part in loc:
        here = _resolve(root, node) if node is not None else {}
        if isinstance(part, int) and here.get("type") == "array":
            path.append(str(part))
            node = here.get("items", {})
        elif isinstance(part, str) and part in here.get("properties", {}):
            path.append(part)
            node = here["properties"][part]
        elif not path:
            return str(part), None
    return ".".join(path), node


def _allowed(root: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    s = _resolve(root, node)
    if "enum" in s:
        return "one of " + ", ".join(str(v) for v in s["enum"])
    if "const" in s:
        return f"exactly {s['const']!r}"
    kind = s.get("type")
    if kind in ("integer", "number"):
        low, high = s.get("minimum"), s.get("maximum")
        word = _TYPE_WORDS[kind]
        if low is not None and high is not None:
            return f"{word} from {low} to {high}"
        if low is not None:
            return f"{word} of at least {low}"
        return f"{word} of at most {high}" if high is not None else word
    if kind == "string":
        low, high = s.get("minLength"), s.get("maxLength")
        if low and high:
            return f"text of {low} to {high:,} characters"
        if low:
            return "non-empty text" if low == 1 else f"text of at least {low} characters"
        return f"text of at most {high:,} characters" if high else "text"
    if kind == "array":
        items = _allowed(root, s.get("items", {}))
        low = s.get("minItems")
        return f"a list of {low} or more of: {items}" if low else f"a list of: {items}"
    if kind == "object" and "properties" in s:
        required = s.get("required", [])
        optional = [p for p in s["properties"] if p not in required]
        return "an object with " + ", ".join(required) + (f" (and optionally {', '.join(optional)})" if optional
                                                           else "")  # fmt: skip
    return _TYPE_WORDS.get(str(kind), "a valid value")


def _description(root: Mapping[str, Any], node: Mapping[str, Any] | None) -> str:
    text = _resolve(root, node).get("description") if node is not None else None
    return f" ({' '.join(text.split())})" if isinstance(text, str) and text and len(text) <= 160 else ""


def _reason(e: Mapping[str, Any]) -> str:
    return str(e.get("msg", "invalid")).removeprefix("Input should be ").replace("\n", " ")


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"
