"""Every public parameter from the command line: ``--set key=value`` and ``--config FILE``, typed by the config.

Any init field of a method's ``Config`` (a frozen dataclass) can be set; the
field's declared type decides how a ``--set`` string is read (``bool``: true or
false; ``int``; ``float``; ``str``; ``X | None``: ``none``/``null`` for None).
``--config FILE`` is a TOML (``.toml``, read with :mod:`tomllib`) or JSON
(``.json``) table of the same keys with typed values. The order is: the
method's defaults (or its smoke preset), then the file, then each ``--set``
(a later one wins). ``epsilon`` and ``delta`` have their own flags. An unknown
key or a value of the wrong type is a :class:`~dpkit.validate.ParameterError`
naming the key; a value out of range is refused by the config itself, which
names the field. Nothing here reads private data.
"""

from __future__ import annotations

import json
import math
import tomllib
import types
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterable

from dpkit.validate import ParameterError

BUDGET_KEYS = ("epsilon", "delta")  # set with --epsilon / --delta, once


def settable(config_type) -> dict[str, Any]:
    """Field name -> declared type, for every field a user may set (not the budget, not derived fields)."""
    hints = typing.get_type_hints(config_type)
    out = {}
    for f in fields(config_type):
        if f.init and f.name not in BUDGET_KEYS and _scalar(hints[f.name]):
            out[f.name] = hints[f.name]
    return out


def _options(kind) -> tuple[tuple, bool]:
    """(the non-None types of ``kind``, whether None is allowed)."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        args = typing.get_args(kind)
        return tuple(a for a in args if a is not type(None)), type(None) in args
    return (kind,), False


def _scalar(kind) -> bool:
    base, _ = _options(kind)
    return all(b in (bool, int, float, str) for b in base)


#: How a setting's type reads in an error ("must be an integer", "must be a finite number or none").
TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a finite number", str: "text"}


def _type_name(kind) -> str:
    base, optional = _options(kind)
    return " or ".join(TYPE_WORDS.get(b, b.__name__) for b in base) + (" or none" if optional else "")


def parse_value(key: str, text: str, kind) -> Any:
    """A ``--set`` string read as the field's type; ParameterError names the key."""
    base, optional = _options(kind)
    if optional and text.strip().lower() in ("none", "null"):
        return None
    for b in base:
        try:
            if b is bool:
                if text.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
                    return text.strip().lower() in ("true", "yes", "1")
                continue
            if b is int:
                return int(text.strip())
            if b is float:
                value = float(text.strip())
                if math.isfinite(value):
                    return value
                continue
            return text
        except ValueError:
            continue
    raise ParameterError(key, text, f"must be {_type_name(kind)}")


def check_value(key: str, value, kind) -> Any:
    """A typed value (from a TOML/JSON file) checked against the field's type; ints widen to floats."""
    base, optional = _options(kind)
    if value is None:
        if optional:
            return None
    elif isinstance(value, str) and optional and value.strip().lower() in ("none", "null"):
        return None  # TOML has no null
    else:
        for b in base:
            if b is bool and isinstance(value, bool):
                return value
            if b is int and isinstance(value, int) and not isinstance(value, bool):
                return value
            if b is float and isinstance(value, (int, float)) and not isinstance(value, bool) and \
                    math.isfinite(value):
                return float(value)
            if b is str and isinstance(value, str):
                return value
    raise ParameterError(key, value, f"must be {_type_name(kind)}")


def _known(key: str, names: dict, method: str) -> None:
    if key in BUDGET_KEYS:
        raise ParameterError("--set", key, f"cannot set {key}: it is given once, with --{key}")
    if key not in names:
        raise ParameterError("--set", key, f"is not a parameter of {method}; the parameters are {sorted(names)}")


def read_config_file(path: str, config_type, method: str) -> dict[str, Any]:
    """The typed overrides of a TOML or JSON file (a flat table of the config's keys)."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ParameterError("--config", str(path), "must be a .toml or .json file")
    try:
        text = file.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        raise ParameterError("--config", str(path), "does not exist or is not a file") from None
    except UnicodeDecodeError as error:
        raise ParameterError("--config", str(path), f"is not UTF-8 (byte 0x{error.object[error.start]:02x} at "
                             f"offset {error.start}); save it as UTF-8") from None
    except OSError as error:
        raise ParameterError("--config", str(path), f"cannot be read ({error.strerror})") from None
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:  # tomllib.TOMLDecodeError and JSONDecodeError are ValueErrors
        raise ParameterError("--config", str(path), f"is not valid {suffix[1:].upper()}: {error}") from None
    if not isinstance(data, dict):
        raise ParameterError("--config", str(path), "must hold a table (an object) of parameter = value")
    names = settable(config_type)
    out = {}
    for key, value in data.items():
        _known(key, names, method)
        out[key] = check_value(key, value, names[key])
    return out


def overrides(config_type, method: str, pairs: Iterable[str] | None = (), config_file: str | None = None
              ) -> dict[str, Any]:
    """The parameters the user set: the ``--config`` file's, then each ``--set key=value`` (a later one wins)."""
    names = settable(config_type)
    out = read_config_file(config_file, config_type, method) if config_file else {}
    for pair in pairs or ():
        key, sep, text = str(pair).partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParameterError("--set", pair, "must be key=value")
        _known(key, names, method)
        out[key] = parse_value(key, text, names[key])
    return out
