"""What of a recorded raw dict its probe's TypedDicts do not name: so a figures.py shape that drifts
from what measure() records (a key renamed, a type changed) fails a test on the recordings."""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

SCALARS = {int: (int,), float: (int, float), str: (str,), bool: (bool,)}


def undeclared(value: Any, hint: Any, where: str = "raw") -> list[str]:
    """Where `value` holds a key `hint` does not name, or a value of another type ([] when none)."""
    origin = get_origin(hint)
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a dict"]
        fields = get_type_hints(hint)
        return [problem for key, item in value.items()
                for problem in (undeclared(item, fields[key], f"{where}.{key}") if key in fields
                                else [f"{where}.{key}: not named by {hint.__name__}"])]
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(hint):
            return []
        tries = [undeclared(value, arm, where) for arm in get_args(hint) if arm is not type(None)]
        return min(tries, key=len)
    if origin is dict:
        _key, item = get_args(hint)
        return [p for key, v in value.items() for p in undeclared(v, item, f"{where}.{key}")] \
            if isinstance(value, dict) else [f"{where}: {type(value).__name__}, not a dict"]
    if origin is list:
        (item,) = get_args(hint)
        return [p for i, v in enumerate(value) for p in undeclared(v, item, f"{where}[{i}]")] \
            if isinstance(value, list) else [f"{where}: {type(value).__name__}, not a list"]
    if origin is Literal:
        return [] if value in get_args(hint) else [f"{where}: {value!r} not one of {get_args(hint)}"]
    if hint in SCALARS and not isinstance(value, SCALARS[hint]):
        return [f"{where}: {type(value).__name__}, not {hint.__name__}"]
    return []
