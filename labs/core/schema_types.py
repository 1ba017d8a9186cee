"""The ledger schema (ledger.schema.json) as msgspec types, made from the schema itself, so that
msgspec can read a ledger and check it against the schema in one pass: 0.9 s for a class of 1,000
ledgers where reading them (0.7-1.0 s) and then running the compiled schema (0.7-1.2 s) took twice
that. Only the keywords the schema uses are translated; the types are never looser than the
schema, so a ledger they accept is valid. Everything they refuse, and anything they cannot tell,
goes the old way (labs.core.state), which names what is wrong:

- JSON Schema's integer and its const 1 also accept 1.0; the types do not (the old way decides);
- msgspec drops a key a typed object does not name instead of refusing it; labs.core.state counts
  the ledger's strings against its quotes, so a file with a dropped key goes the old way too.

`ledger_decoder(schema)` returns None for a schema using a keyword not translated here
(tests/test_ledger_types.py asserts the project's schema is fully translated)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

import msgspec
from msgspec import Meta

_IGNORED = {"description", "title", "$schema", "$id", "$defs"}  # words, not constraints


class Untranslated(ValueError):
    """A schema keyword (or combination) this module does not translate."""


def ledger_decoder(schema: dict) -> msgspec.json.Decoder | None:
    try:
        return msgspec.json.Decoder(_type(schema, schema.get("$defs", {}), "Ledger"))
    except Untranslated:
        return None


def _type(node: dict, defs: dict, name: str):
    words = set(node) - _IGNORED
    if "$ref" in node:
        if words != {"$ref"} or not node["$ref"].startswith("#/$defs/"):
            raise Untranslated(f"{name}: $ref beside {sorted(words - {'$ref'})}")
        key = node["$ref"].removeprefix("#/$defs/")
        return _type(defs[key], defs, key)
    if "const" in node:
        if words != {"const"} or type(node["const"]) not in (int, str):
            raise Untranslated(f"{name}: const")
        return Literal[node["const"]]
    kind = node.get("type")
    if isinstance(kind, list):
        if sorted(kind) != ["null", "string"] or words - {"type", "minLength", "maxLength"}:
            raise Untranslated(f"{name}: type {kind}")
        return _string({**node, "type": "string"}, name) | None
    if kind == "string":
        return _string(node, name)
    if kind == "integer":
        _only(node, name, {"type", "minimum", "maximum"})
        return Annotated[int, Meta(ge=node.get("minimum"), le=node.get("maximum"))]
    if kind == "array":
        _only(node, name, {"type", "items", "maxItems"})
        return Annotated[list[_type(node["items"], defs, name + "Item")], Meta(max_length=node.get("maxItems"))]
    if kind == "object":
        return _object(node, defs, name)
    raise Untranslated(f"{name}: type {kind!r}")


def _only(node: dict, name: str, allowed: set) -> None:
    extra = set(node) - _IGNORED - allowed
    if extra:
        raise Untranslated(f"{name}: {sorted(extra)}")


def _string(node: dict, name: str):
    _only(node, name, {"type", "minLength", "maxLength"})
    return Annotated[str, Meta(min_length=node.get("minLength"), max_length=node.get("maxLength"))]


def _object(node: dict, defs: dict, name: str):
    """A fixed set of properties (additionalProperties false) as a TypedDict; a free-form object as
    a dict whose keys and values are typed by propertyNames and additionalProperties."""
    if "properties" in node:
        _only(node, name, {"type", "properties", "required", "additionalProperties"})
        if node.get("additionalProperties") is not False:
            raise Untranslated(f"{name}: properties without additionalProperties false")
        required = set(node.get("required", ()))
        fields = {key: (Required if key in required else NotRequired)[_type(value, defs, name + key.title())] for key, value in node["properties"].items()}
        return TypedDict(name, fields)
    _only(node, name, {"type", "maxProperties", "propertyNames", "additionalProperties"})
    keys = str if "propertyNames" not in node else _string({"type": "string", **node["propertyNames"]}, name + "Key")
    if not isinstance(node.get("additionalProperties", {}), dict):
        raise Untranslated(f"{name}: additionalProperties {node['additionalProperties']!r} without properties")
    values = _type(node["additionalProperties"], defs, name + "Value") if "additionalProperties" in node else Any
    return Annotated[dict[keys, values], Meta(max_length=node.get("maxProperties"))]
