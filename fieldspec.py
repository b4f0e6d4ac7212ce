"""Declared YAML fields and their validation, shared by the experiment schema and the Pi inventory.

A neutral, dependency-free module at the top of the tree, imported by all three users (routing.links.loss declares its settings with it; the layer test keeps it importing nothing of the project): ``experiments.schema`` (experiment files) and
``deploy.inventory`` (inventory files) both declare their fields with :class:`Field`
and validate with :func:`fill`, so a wrong file is rejected the same way everywhere:
a :class:`ConfigError` naming the file, the field path and what was expected.
It imports nothing of the project (the layer rule of tests/test_layers.py).
"""
from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection

__all__ = ["ConfigError", "raise_all", "Field", "Check", "in_range", "one_of", "member_of", "one_of_int", "type_name",
           "check_value", "unknown_field", "fill", "INT", "NUM", "STR", "BOOL"]

Check = Callable[[Any], "str | None"]

INT = (int,)
NUM = (int, float)
STR = (str,)
BOOL = (bool,)


class ConfigError(ValueError):
    """A configuration file is invalid.  The message names file, field path and expectation.

    ``errors`` lists every error found in the file (this one alone unless :func:`raise_all`
    made it from several), so a command can report them all at once.
    """

    def __init__(self, source: str, path: str, message: str) -> None:
        self.source, self.path, self.message = source, path, message
        self.errors: list[ConfigError] = [self]
        super().__init__(f"{source}: {path or '<top>'}: {message}")


def raise_all(errors: list[ConfigError]) -> None:
    """Raise nothing for no errors, the error itself for one, else one error carrying them all.

    The combined error is of the first error's class, names its field (``path``, ``message``),
    lists every error in ``errors``, and reads as one ``file: field: message`` line per error.
    """
    if not errors:
        return
    first = errors[0]
    if len(errors) == 1:
        raise first
    combined = type(first)(first.source, first.path, first.message)
    combined.errors = list(errors)
    combined.args = ("\n".join(str(e) for e in errors),)
    raise combined


@dataclass(frozen=True)
class Field:
    """One scalar field: Python type(s), default, and an optional check returning an error text or None."""

    types: tuple[type, ...]
    default: Any
    check: Check | None = None
    doc: str = ""


def in_range(lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> Check:
    """A check: ``lo <= v <= hi`` (``lo < v`` with ``lo_open``); either bound may be None."""
    def check(v: Any) -> str | None:
        if lo is not None and (v <= lo if lo_open else v < lo):
            return f"expected a value {'>' if lo_open else '>='} {lo}, got {v}"
        if hi is not None and v > hi:
            return f"expected a value <= {hi}, got {v}"
        return None
    return check


def one_of(*choices: str) -> Check:
    """A check: the value is one of ``choices`` (strings)."""
    def check(v: Any) -> str | None:
        return None if v in choices else f"expected one of {', '.join(choices)}, got {v!r}"
    return check


def member_of(registry: Collection[str]) -> Check:
    """A check: the value is a name of ``registry`` (a dict or tuple of names), read at check time.

    Registries own their names (a scheme, a loss model, a backend is added by one line in its
    registry), so the check must see entries registered after the schema was imported.
    """
    def check(v: Any) -> str | None:
        if v in registry:
            return None
        return f"expected one of {', '.join(registry)}, got {v!r}"
    return check


def one_of_int(*choices: int) -> Check:
    """A check: the value is one of ``choices`` (integers)."""
    def check(v: Any) -> str | None:
        return None if v in choices else f"expected one of {', '.join(map(str, choices))}, got {v!r}"
    return check


def type_name(types: tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true/false", list: "a list", dict: "a mapping",
             type(None): "null"}
    if types[:2] == NUM:   # int and float: "a number" (and whatever follows, e.g. null)
        types = (float, *types[2:])
    return " or ".join(names.get(t, t.__name__) for t in types)


def check_value(src: str, path: str, spec: Field, v: Any, error: type[ConfigError] = ConfigError) -> Any:
    """``v`` if it has ``spec``'s type and passes its check, else an ``error`` at ``path``."""
    if isinstance(v, bool) and bool not in spec.types:
        raise error(src, path, f"expected {type_name(spec.types)}, got {v!r}")
    if not isinstance(v, spec.types):
        raise error(src, path, f"expected {type_name(spec.types)}, got {type(v).__name__} {v!r}")
    if spec.check:
        err = spec.check(v)
        if err:
            raise error(src, path, err)
    return v


def unknown_field(src: str, path: str, key: str, known: list[str],
                  error: type[ConfigError] = ConfigError) -> ConfigError:
    """The error for a key the schema does not declare, with the closest known name as a hint."""
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return error(src, f"{path}.{key}" if path else key,
                 f"unknown field{hint}; expected one of {', '.join(known)}")


def fill(src: str, path: str, schema: dict[str, Any], data: Any,
         error: type[ConfigError] = ConfigError, errors: list[ConfigError] | None = None) -> dict[str, Any]:
    """Validate ``data`` against ``schema`` (nested dicts of :class:`Field`) and return it with defaults filled in.

    A wrong field raises ``error`` (a :class:`ConfigError` subclass of the caller's choosing:
    ``ExperimentError``, ``InventoryError``) naming ``src`` and the field path.  With an
    ``errors`` list, every wrong field is appended to it instead, and the result holds the
    field's default in its place, so the caller can go on checking and report them all.
    """
    def fail(e: ConfigError) -> None:
        if errors is None:
            raise e
        errors.append(e)

    if data is None:
        data = {}
    if not isinstance(data, dict):
        fail(error(src, path, f"expected a mapping, got {type(data).__name__}"))
        data = {}
    for key in data:
        if key not in schema:
            fail(unknown_field(src, path, str(key), list(schema), error))
    out: dict[str, Any] = {}
    for key, spec in schema.items():
        sub = f"{path}.{key}" if path else key
        if isinstance(spec, dict):
            out[key] = fill(src, sub, spec, data.get(key), error, errors)
            continue
        out[key] = copy.deepcopy(spec.default)
        if key in data:
            try:
                out[key] = check_value(src, sub, spec, data[key], error)
            except ConfigError as e:
                fail(e)
    return out


def beside_source(src: str, path: str) -> str:
    """A file a config names, relative to the config file's directory, made absolute (processes started
    elsewhere read it: the node daemons, the medium process)."""
    return str((Path(src).parent / Path(path).expanduser()).resolve())
