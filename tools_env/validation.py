"""Validate tool arguments against a tool's JSON schema (the subset our tool specs use).

Supported keywords: ``type`` (one name or a list), ``properties``, ``required``, ``additionalProperties``
(bool or schema), ``enum``, ``const``, ``minimum``/``maximum``, ``exclusiveMinimum``/``exclusiveMaximum``,
``minLength``/``maxLength``, ``pattern``, ``items``, ``minItems``/``maxItems`` and ``anyOf``. Annotation
keywords (``description``, ``default``, ``title``, ``examples``, ``format``, ``deprecated``) are accepted and
not checked. Anything else makes :func:`check_schema` fail, so a spec never silently loses a constraint.

Validation also makes two forgiving conversions that models need all the time, and reports them so the
parser can record them as repairs: a numeric string where a number is expected (``"x": "10"``) and a whole
float where an integer is expected (``10.0``).

Example:
    >>> schema = {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0}}, "required": ["x"]}
    >>> validate_arguments(schema, {"x": "3"})
    ValidationResult(value={'x': 3}, errors=(), coerced=('x',))
    >>> validate_arguments(schema, {}).errors
    ("missing required property 'x'",)
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any

from opensearch_vl.errors import ConfigError

__all__ = ["ValidationResult", "validate_arguments", "check_schema", "apply_defaults"]

_CHECKED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "items",
    "minItems",
    "maxItems",
    "anyOf",
}
_ANNOTATIONS = {"description", "default", "title", "examples", "format", "deprecated", "$comment"}
_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}


@dataclass(frozen=True)
class ValidationResult:
    """Outcome of :func:`validate_arguments`: the (converted) value, error messages, converted paths."""

    value: Any
    errors: tuple[str, ...]
    coerced: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True iff there were no errors."""
        return not self.errors


def check_schema(schema: Any, where: str = "parameters") -> None:
    """Raise :class:`ConfigError` if ``schema`` uses a keyword or type this validator does not check.

    Example:
        >>> check_schema({"type": "object", "properties": {"q": {"type": "string", "minLength": 1}}})
    """
    if not isinstance(schema, dict):
        raise ConfigError(f"{where}: a schema must be a JSON object, got {type(schema).__name__}")
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    if unknown:
        raise ConfigError(
            f"{where}: unsupported JSON-schema keyword(s) {sorted(unknown)}; supported: {sorted(_CHECKED)}"
        )
    types = schema.get("type")
    for name in [types] if isinstance(types, str) else (types or []):
        if name not in _TYPES:
            raise ConfigError(f"{where}: unknown type {name!r}; use one of {sorted(_TYPES)}")
    for key, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{where}.{key}")
    if isinstance(schema.get("additionalProperties"), dict):
        check_schema(schema["additionalProperties"], f"{where}.additionalProperties")
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")
    for i, sub in enumerate(schema.get("anyOf") or []):
        check_schema(sub, f"{where}.anyOf[{i}]")
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except re.error as exc:
            raise ConfigError(f"{where}: pattern {schema['pattern']!r} is not a valid regex ({exc})") from exc


def validate_arguments(schema: dict[str, Any], value: Any) -> ValidationResult:
    """Check ``value`` against ``schema``; never raises on bad input, returns every error found.

    Example:
        >>> validate_arguments({"type": "object", "additionalProperties": False}, {"z": 1}).errors
        ("unexpected property 'z'",)
    """
    errors: list[str] = []
    coerced: list[str] = []
    converted = _validate(schema, value, "", errors, coerced)
    return ValidationResult(converted, tuple(errors), tuple(coerced))


def apply_defaults(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``arguments`` with the top-level ``default`` values of missing properties filled in.

    Example:
        >>> apply_defaults({"properties": {"amount": {"type": "number", "default": 1.5}}}, {})
        {'amount': 1.5}
    """
    out = dict(arguments)
    for key, sub in (schema.get("properties") or {}).items():
        if key not in out and isinstance(sub, dict) and "default" in sub:
            out[key] = copy.deepcopy(sub["default"])
    return out


def _label(path: str) -> str:
    return repr(path) if path else "arguments"


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _coerce(kind: str, value: Any) -> Any:
    """A converted value for ``kind``, or the sentinel ``_NO`` when no forgiving conversion applies."""
    if kind == "integer":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+(\.0*)?\s*", value):
            return int(float(value))
    if kind == "number" and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return _NO
        return number if math.isfinite(number) else _NO
    return _NO


_NO = object()


def _validate(schema: dict[str, Any], value: Any, path: str, errors: list[str], coerced: list[str]) -> Any:
    if "anyOf" in schema:
        for sub in schema["anyOf"]:
            trial_errors: list[str] = []
            trial_coerced: list[str] = []
            result = _validate(sub, value, path, trial_errors, trial_coerced)
            if not trial_errors:
                coerced.extend(trial_coerced)
                value = result
                break
        else:
            errors.append(f"{_label(path)} matches none of the allowed forms")
            return value

    types = schema.get("type")
    if types is not None:
        kinds = (types,) if isinstance(types, str) else tuple(types)
        actual = _type_of(value)
        if actual not in kinds and not (actual == "integer" and "number" in kinds):
            for kind in kinds:
                converted = _coerce(kind, value)
                if converted is not _NO:
                    value = converted
                    coerced.append(path or "arguments")
                    break
            else:
                errors.append(f"{_label(path)} must be {' or '.join(kinds)}, got {actual}")
                return value

    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{_label(path)} must be one of {schema['enum']}, got {value!r}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{_label(path)} must be {schema['const']!r}, got {value!r}")

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{_label(path)} must be >= {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{_label(path)} must be <= {schema['maximum']}, got {value}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{_label(path)} must be > {schema['exclusiveMinimum']}, got {value}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            errors.append(f"{_label(path)} must be < {schema['exclusiveMaximum']}, got {value}")

    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{_label(path)} must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(
                f"{_label(path)} must have at most {schema['maxLength']} characters, got {len(value)}"
            )
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{_label(path)} must match {schema['pattern']!r}, got {value!r}")

    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{_label(path)} must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{_label(path)} must have at most {schema['maxItems']} items, got {len(value)}")
        if isinstance(schema.get("items"), dict):
            value = [
                _validate(schema["items"], item, f"{path}[{i}]", errors, coerced)
                for i, item in enumerate(value)
            ]

    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(f"missing required property {(f'{path}.{key}' if path else key)!r}")
        extra = schema.get("additionalProperties", True)
        out = {}
        for key, item in value.items():
            sub_path = f"{path}.{key}" if path else str(key)
            if key in properties:
                out[key] = _validate(properties[key], item, sub_path, errors, coerced)
            elif extra is False:
                errors.append(f"unexpected property {sub_path!r}")
                out[key] = item
            elif isinstance(extra, dict):
                out[key] = _validate(extra, item, sub_path, errors, coerced)
            else:
                out[key] = item
        value = out
    return value
