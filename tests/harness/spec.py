"""Check captured Discord REST calls against Discord's published OpenAPI description.

``tests/data/discord-api-spec/openapi.json`` is Discord's own machine-readable description of
its v10 HTTP API (see ``tests/data/README.md``).  :func:`validate_call` finds the operation a
:class:`~tests.harness.payloads.Call` hits by matching its method and *concrete* path against
the spec's path templates (discord.py and Discord name the path parameters differently, e.g.
``{webhook_id}`` vs ``{interaction_id}``), then validates the path parameters, the query
string and the JSON body against that operation's schemas with ``jsonschema`` (Draft 2020-12;
a ``referencing`` registry resolves ``#/components/schemas/...``).  A violation raises
:class:`SpecError` naming the route, the JSON path of the bad value and what is wrong.

The harness calls :func:`validate_call` for every request it captures (see
``Harness.create(validate_spec=...)``), so every Discord test checks its payloads for free.
The spec is loaded lazily on the first request and validators are cached per operation.
"""

from __future__ import annotations

import collections
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, relevance
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from tests.harness.errors import HarnessError
from tests.harness.payloads import Call

__all__ = [
    "SPEC_PATH",
    "TOLERATED",
    "UNDOCUMENTED_ROUTES",
    "VALIDATED",
    "Operation",
    "SpecError",
    "Tolerance",
    "find_operation",
    "load_spec",
    "validate_call",
    "validate_request",
]

SPEC_PATH = Path(__file__).parents[1] / "data" / "discord-api-spec" / "openapi.json"
# The whole document is registered under this URI; every validator's root schema is a
# ``$ref`` into it, so the spec's own ``#/components/...`` refs resolve against the document.
_SPEC_URI = "urn:discord-api-spec"

#: Requests the bot may make although the spec does not describe them, as
#: ``{(method, discord.py route template): reason}``.  Every entry needs a reason.
UNDOCUMENTED_ROUTES: dict[tuple[str, str], str] = {}


def _anything(value: Any) -> bool:
    return True


@dataclass(frozen=True)
class Tolerance:
    """A known, accepted mismatch between a request and the spec.

    A problem is ignored if its operation is one of ``operations`` (``"METHOD /template"``
    with the spec's template), its JSON path matches the regex ``json_path`` in full (e.g.
    ``$.data.attachments[0].id``), the failing schema keyword is ``keyword`` and the bad
    value passes ``value`` (so the tolerance stays as narrow as the quirk).
    """

    operations: tuple[str, ...]
    json_path: str
    keyword: str
    reason: str
    value: Callable[[Any], bool] = _anything

    def covers(self, op: Operation, error: ValidationError) -> bool:
        """True if this tolerance accepts ``error`` raised while validating ``op``."""
        return (
            str(op) in self.operations
            and self.keyword == error.validator
            and re.fullmatch(self.json_path, error.json_path) is not None
            and self.value(error.instance)
        )


def _is_index_or_snowflake(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64


_MESSAGE_WRITES = (
    "POST /channels/{channel_id}/messages",
    "PATCH /channels/{channel_id}/messages/{message_id}",
    "POST /interactions/{interaction_id}/{interaction_token}/callback",
    "POST /webhooks/{webhook_id}/{webhook_token}",
    "PATCH /webhooks/{webhook_id}/{webhook_token}/messages/@original",
    "PATCH /webhooks/{webhook_id}/{webhook_token}/messages/{message_id}",
)

#: Accepted mismatches between what is sent and the spec (keep each one narrow).
TOLERATED: list[Tolerance] = [
    Tolerance(
        operations=_MESSAGE_WRITES,
        json_path=r"\$(\.data)?\.attachments\[\d+\]\.id",
        keyword="type",
        value=_is_index_or_snowflake,
        reason=(
            "discord.py 2.7 sends attachment ids as JSON integers: the file's index for a new "
            "upload (File.to_dict) and the snowflake for a kept one (Attachment.to_dict); the "
            "spec types them as SnowflakeType strings, Discord accepts both"
        ),
    ),
]

#: Requests validated so far in this process, by ``"METHOD /spec/template"`` (reported at
#: the end of the pytest run by ``tests/conftest.py``).
VALIDATED: collections.Counter[str] = collections.Counter()


class SpecError(HarnessError):
    """A request Discord's published API description does not allow (Discord would 400)."""


# --------------------------------------------------------------------------------------
# Loading and route matching
# --------------------------------------------------------------------------------------


def _fold_const_unions(node: Any) -> None:
    """Rewrite enums spelled ``oneOf: [{const: 1, title: PRIMARY}, ...]`` as ``enum`` in place.

    Same meaning (the consts are distinct), but jsonschema then checks one keyword instead
    of descending into every branch: component ``type`` and ``style`` fields are such
    unions, and this makes validating a board about 3x faster.  The titles are kept under
    ``x-enum-titles`` for error messages.
    """
    if isinstance(node, dict):
        branches = node.get("oneOf")
        if (
            isinstance(branches, list)
            and branches
            and all(
                isinstance(b, dict)
                and "const" in b
                and b.keys() <= {"const", "title", "description"}
                for b in branches
            )
        ):
            del node["oneOf"]
            node["enum"] = [b["const"] for b in branches]
            node["x-enum-titles"] = [b.get("title") for b in branches]
        for value in node.values():
            _fold_const_unions(value)
    elif isinstance(node, list):
        for value in node:
            _fold_const_unions(value)


def _drop_redundant_enum_refs(node: Any, schemas: Mapping[str, Any]) -> None:
    """Drop ``allOf: [{$ref: SomeEnum}]`` beside an ``enum`` that is a subset of SomeEnum.

    Every component spells its tag as ``{type: integer, enum: [2], allOf: [{$ref:
    MessageComponentTypes}]}``; the ref adds nothing once ``enum`` holds, but costs a lookup
    for every branch of every component union (about a third of the validation time).
    Run after :func:`_fold_const_unions`.
    """
    if isinstance(node, dict):
        refs = node.get("allOf")
        if (
            "enum" in node
            and isinstance(refs, list)
            and len(refs) == 1
            and refs[0].keys() == {"$ref"}
        ):
            target = schemas.get(str(refs[0]["$ref"]).removeprefix("#/components/schemas/"))
            if (
                isinstance(target, dict)
                and target.keys() <= {"type", "enum", "x-enum-titles", "format", "title"}
                and target.get("type") == node.get("type")
                and all(v in target.get("enum", ()) for v in node["enum"])
            ):
                del node["allOf"]
        for value in node.values():
            _drop_redundant_enum_refs(value, schemas)
    elif isinstance(node, list):
        for value in node:
            _drop_redundant_enum_refs(value, schemas)


@functools.cache
def load_spec() -> dict[str, Any]:
    """The parsed OpenAPI document, loaded once on first use and simplified for speed
    without changing what it accepts (see the two functions above)."""
    with SPEC_PATH.open("rb") as f:
        doc: dict[str, Any] = json.load(f)
    _fold_const_unions(doc)
    _drop_redundant_enum_refs(doc, doc["components"]["schemas"])
    return doc


@functools.cache
def _registry() -> Registry[Any]:
    resource = DRAFT202012.create_resource(load_spec())
    registry: Registry[Any] = Registry().with_resource(_SPEC_URI, resource)
    return registry


def _pointer(*segments: str | int) -> str:
    """A JSON pointer into the spec (``/`` in path templates escapes to ``~1``)."""
    parts = (str(s).replace("~", "~0").replace("/", "~1") for s in segments)
    return "/" + "/".join(parts)


@dataclass(frozen=True)
class Operation:
    """One ``METHOD /template`` of the spec and where its schemas live."""

    method: str
    template: str
    operation_id: str
    pattern: re.Pattern[str]
    #: Per path segment 0 for a literal, 1 for a parameter: the smallest rank wins, so a
    #: literal beats a parameter at the first segment where two matches differ
    #: (``@original`` over ``{message_id}``).
    rank: tuple[int, ...]
    #: ``(location, name) -> JSON pointer of the parameter's schema``.
    params: Mapping[tuple[str, str], str]
    #: ``content type -> JSON pointer of the request body schema``.
    bodies: Mapping[str, str]
    body_required: bool

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


_HTTP_METHODS = ("get", "put", "post", "patch", "delete")


@functools.cache
def _operations() -> dict[str, list[Operation]]:
    """Every operation of the spec, by method, best-ranked first."""
    by_method: dict[str, list[Operation]] = collections.defaultdict(list)
    for template, item in load_spec()["paths"].items():
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        pattern = re.compile(regex)
        rank = tuple(int(seg.startswith("{")) for seg in template.strip("/").split("/"))
        shared = item.get("parameters") or []
        for method in _HTTP_METHODS:
            op = item.get(method)
            if op is None:
                continue
            params: dict[tuple[str, str], str] = {}
            for i, p in enumerate(shared):
                params[p["in"], p["name"]] = _pointer("paths", template, "parameters", i, "schema")
            for i, p in enumerate(op.get("parameters") or []):
                ptr = _pointer("paths", template, method, "parameters", i, "schema")
                params[p["in"], p["name"]] = ptr
            body = op.get("requestBody") or {}
            bodies = {
                ctype: _pointer(
                    "paths", template, method, "requestBody", "content", ctype, "schema"
                )
                for ctype in body.get("content") or {}
            }
            by_method[method.upper()].append(
                Operation(
                    method=method.upper(),
                    template=template,
                    operation_id=op.get("operationId", "?"),
                    pattern=pattern,
                    rank=rank,
                    params=params,
                    bodies=bodies,
                    body_required=bool(body.get("required")),
                )
            )
    for ops in by_method.values():
        ops.sort(key=lambda o: o.rank)
    return dict(by_method)


def find_operation(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    """The spec operation for ``method`` on concrete ``path`` (``/channels/1/messages``) and
    its path parameters under the spec's names, or ``None`` if the spec has no such route."""
    path = path.split("?", 1)[0]
    for op in _operations().get(method.upper(), ()):
        m = op.pattern.fullmatch(path)
        if m is not None:
            return op, m.groupdict()
    return None


@functools.cache
def _validator(pointer: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": _SPEC_URI + "#" + pointer}, registry=_registry())


@functools.cache
def _schema_types(pointer: str) -> frozenset[str]:
    """The JSON types a (possibly ``$ref``-ed) parameter schema allows."""
    schema = _registry().resolver().lookup(_SPEC_URI + "#" + pointer).contents
    while "$ref" in schema:
        schema = _registry().resolver().lookup(_SPEC_URI + schema["$ref"]).contents
    types = schema.get("type", ())
    return frozenset([types] if isinstance(types, str) else types)


@functools.cache
def _schema_names() -> dict[int, str]:
    """``id(schema) -> component name``, to name enums in messages (the resolver hands out
    the spec's own dicts, so identity works)."""
    return {id(s): name for name, s in load_spec()["components"]["schemas"].items()}


# --------------------------------------------------------------------------------------
# Error reporting
# --------------------------------------------------------------------------------------


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(error: ValidationError) -> str:
    """A one-line explanation that does not dump whole payloads."""
    kw, inst, expected = error.validator, error.instance, error.validator_value
    if kw in ("maxLength", "minLength", "maxItems", "minItems") and hasattr(inst, "__len__"):
        what, unit = ("string", "characters") if isinstance(inst, str) else ("array", "items")
        too = "long" if kw.startswith("max") else "short"
        return f"{what} of {len(inst)} {unit} is too {too} ({kw} {expected})"
    if kw == "enum" and "x-enum-titles" in error.schema:
        owner = _schema_names().get(id(error.schema))
        where = f" of {owner}" if owner else ""
        titles = error.schema["x-enum-titles"]
        names = [f"{v!r} ({t})" if t else repr(v) for v, t in zip(expected, titles, strict=True)]
        return f"{_short(inst)} is not one of the values{where}: {', '.join(names)}"
    if kw in ("oneOf", "anyOf") and isinstance(expected, list):
        names = []
        for sub in expected:
            if "$ref" in sub:
                names.append(str(sub["$ref"]).rsplit("/", 1)[-1])
            else:
                names.append(str(sub.get("title") or sub.get("type") or "inline schema"))
        owner = _schema_names().get(id(error.schema))
        where = f" of {owner}" if owner else ""
        if not error.context:  # several branches matched
            return f"{_short(inst)} is ambiguous under {kw}{where}: {', '.join(names)}"
        return f"{_short(inst)} matches none of {kw}{where}: {', '.join(names)}"
    message = str(error.message)
    return message if len(message) <= 200 else message[:199] + "…"


def _misses_discriminator(error: ValidationError) -> bool:
    """True if this branch of a union is plainly meant for another shape: wrong JSON type
    (``null`` vs object) or a different ``type`` tag (a button is not a select)."""
    rel = tuple(error.relative_path)
    return (not rel and error.validator == "type") or (
        rel == ("type",) and error.validator in ("enum", "const")
    )


def _problems(
    error: ValidationError, tolerated: Callable[[ValidationError], bool]
) -> list[ValidationError]:
    """The leaf errors that explain ``error``, descending into ``anyOf``/``oneOf`` through
    the branch the instance was evidently meant for (best_match gives up at a union whose
    branches tie, printing the whole payload); tolerated leaves are dropped."""
    if not error.context:
        return [] if tolerated(error) else [error]
    branches: dict[Any, list[ValidationError]] = collections.defaultdict(list)
    for sub in error.context:
        branches[sub.relative_schema_path[0]].append(sub)
    live = [errs for errs in branches.values() if not any(map(_misses_discriminator, errs))]
    if not live:  # no branch fits at all: the union itself is the clearest thing to report
        return [] if tolerated(error) else [error]
    candidates = []
    for errs in live:
        found = [p for e in errs for p in _problems(e, tolerated)]
        if not found:
            return []  # one branch is satisfied once tolerances apply
        candidates.append(found)
    return min(candidates, key=lambda found: (len(found), min(map(relevance, found))))


def _format(op: Operation, call_route: str | None, problems: list[tuple[str, str]]) -> str:
    via = f" (discord.py route {call_route})" if call_route and call_route != op.template else ""
    where, what = problems[0]
    lines = [f"{op} [{op.operation_id}]{via} violates Discord's API description: {where}: {what}"]
    if len(problems) > 1:
        lines.append(f"  and {len(problems) - 1} more problem(s):")
        lines += [f"    {w}: {d}" for w, d in problems[1:6]]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------


def _coerce_query(value: Any, types: frozenset[str]) -> Any:
    """A query value as Discord parses it from the URL (everything arrives as text)."""
    text = str(value)
    if "boolean" in types and text.lower() in ("true", "false", "1", "0"):
        return text.lower() in ("true", "1")
    if "integer" in types and re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def _param_problems(
    op: Operation, path_params: Mapping[str, str], query: Mapping[str, Any] | None
) -> Iterable[tuple[str, str]]:
    for name, value in path_params.items():
        pointer = op.params.get(("path", name))
        if pointer is not None:
            for e in _validator(pointer).iter_errors(value):
                yield f"path parameter {name}={_short(value)}", _describe(e)
    for name, value in (query or {}).items():
        pointer = op.params.get(("query", name))
        if pointer is None:
            yield f"query parameter {name}", "not a parameter of this operation"
            continue
        if isinstance(value, bool):
            # aiohttp/yarl refuse booleans in a query string (TypeError at request time).
            yield f"query parameter {name}={value!r}", "booleans cannot be sent; use 0/1"
            continue
        coerced = _coerce_query(value, _schema_types(pointer))
        for e in _validator(pointer).iter_errors(coerced):
            yield f"query parameter {name}={_short(value)}", _describe(e)


def _body_problems(op: Operation, body: Any, multipart: bool) -> Iterable[tuple[str, str]]:
    if body is None:
        if op.body_required:
            yield "$", "the operation requires a request body and none was sent"
        return
    pointer = None
    if multipart and "multipart/form-data" in op.bodies:
        # The JSON part of a multipart request travels as ``payload_json``; use its schema if
        # the spec gives one, else the JSON body schema (Discord documents them as equal).
        schema = _registry().resolver().lookup(_SPEC_URI + "#" + op.bodies["multipart/form-data"])
        if "payload_json" in (schema.contents.get("properties") or {}):
            pointer = op.bodies["multipart/form-data"] + "/properties/payload_json"
    pointer = pointer or op.bodies.get("application/json") or op.bodies.get("multipart/form-data")
    if pointer is None:
        yield "$", "the operation takes no request body but one was sent"
        return

    def tolerated(error: ValidationError) -> bool:
        return any(t.covers(op, error) for t in TOLERATED)

    found = [p for e in _validator(pointer).iter_errors(body) for p in _problems(e, tolerated)]
    for e in sorted(found, key=relevance):
        yield e.json_path, _describe(e)


def validate_request(
    method: str,
    path: str,
    body: Any = None,
    *,
    query: Mapping[str, Any] | None = None,
    multipart: bool = False,
    route: str | None = None,
) -> Operation | None:
    """Validate one request; return its spec operation (``None`` if allow-listed).

    ``path`` is the concrete path below ``/api/v10``; ``route`` is discord.py's template,
    used for :data:`UNDOCUMENTED_ROUTES` and messages.  Raises :class:`SpecError`.
    """
    found = find_operation(method, path)
    if found is None:
        reason = UNDOCUMENTED_ROUTES.get((method, route or path))
        if reason is not None:
            VALIDATED[f"{method} {route or path} (allow-listed)"] += 1
            return None
        via = f" (discord.py route {route})" if route else ""
        raise SpecError(
            f"{method} {path}{via} is not a route in Discord's API description; fix the "
            "request or add it to UNDOCUMENTED_ROUTES with a reason"
        )
    op, path_params = found
    problems = [*_param_problems(op, path_params, query), *_body_problems(op, body, multipart)]
    if problems:
        raise SpecError(_format(op, route, problems))
    VALIDATED[str(op)] += 1
    return op


def validate_call(call: Call) -> Operation | None:
    """Validate a captured :class:`Call` (what the harness does for every request)."""
    return validate_request(
        call.method,
        call.path,
        call.json,
        query=call.query,
        multipart=bool(call.files),
        route=call.route,
    )
