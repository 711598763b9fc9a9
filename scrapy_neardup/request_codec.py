"""Scrapy requests as tagged JSON: what the frontier journal writes, never a pickle.

Promises: :func:`request_from_json` gives back an equal request for everything
:func:`request_to_json` accepts (JSON values, their containers, the standard library's dates,
times, ``Decimal`` and ``UUID``, Scrapy items, dataclass and attrs instances, callbacks that
are the spider's methods); anything else raises :class:`Unjournalable` or ValueError. Reading
a record imports nothing: a class is looked up among modules already imported and must be
of the kind its tag says. The plugin's own meta keys (:mod:`scrapy_neardup.meta`) are left
out. The request dict is Scrapy's (``Request.to_dict``/``request_from_dict``); this module
adds the JSON of its values. Tags and rationale: ``docs/design.md#frontier``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import functools
import json
import operator
import sys
import uuid
from collections.abc import Callable
from typing import Any

import orjson
from scrapy import Item, Request
from scrapy.utils.request import request_from_dict

from scrapy_neardup.meta import INTERNAL_META

# JSON's own values: written as they are, without a call (most of a request is these).
_SCALARS = frozenset((str, int, bool, type(None)))
_CONTAINERS = frozenset((dict, list))
# Containers written as a tagged list (a subclass as its base: a named tuple as a tuple).
_SEQUENCES = ((tuple, "__tuple__"), (frozenset, "__frozenset__"), (set, "__set__"))
#: Subclasses of JSON's types, and how each becomes a plain value of its base (never by its
#: own ``__str__``: a ``(str, Enum)`` member is its value). Bool cannot be subclassed.
_BASES: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (float, float.__float__), (str, str.__str__), (int, int.__int__), (dict, dict), (list, list),
)  # fmt: skip
#: What :func:`_plain_to_json` reads of a request, in one call: Scrapy's slots, the lazy
#: parts (headers, cookies, flags, keyword arguments) last, None until first accessed.
_PLAIN_FIELDS = operator.attrgetter(
    "_url", "_body", "method", "_encoding", "_meta", "callback", "errback", "priority",
    "dont_filter", "_headers", "_cookies", "_flags", "_cb_kwargs",
)  # fmt: skip


class Unjournalable(TypeError):
    """A value of a type the journal cannot hold (:attr:`kind` names the type)."""

    def __init__(self, kind: type, why: str = "") -> None:
        self.kind = f"{kind.__module__}.{kind.__qualname__}"
        super().__init__(f"a {self.kind}{why} cannot be journaled")


class _NotForOrjson(Exception):
    """A NaN or an infinity, which orjson would write as null."""


def request_to_json(request: Request, spider: Any = None) -> bytes:
    """``request.to_dict(spider=spider)`` as tagged JSON (see the module docstring), without
    this plugin's own meta keys (they are set again when the request is re-queued).
    TypeError or ValueError when the request holds something that cannot be written.
    Written by orjson, else (an int beyond 64 bits, a NaN, an infinity) by ``json``."""
    plain = _plain_to_json(request, spider)
    if plain is not None:
        return plain
    data = _to_dict(request, spider)
    meta = data.get("meta")
    if meta and not INTERNAL_META.isdisjoint(meta):
        data["meta"] = {k: v for k, v in meta.items() if k not in INTERNAL_META}
    try:
        return orjson.dumps(_encode(data))
    except (orjson.JSONEncodeError, _NotForOrjson):
        return json.dumps(_encode(data, True), ensure_ascii=False, separators=(",", ":")).encode()


def _plain_to_json(request: Request, spider: Any) -> bytes | None:
    """The JSON of a request of the usual kind (a link followed: a GET with no body, headers,
    cookies, flags or keyword arguments, meta of strings, ints and booleans, a callback and
    an errback that are the spider's methods of their names or none), else None. Fields at
    their defaults are left out; Scrapy's lazy parts (a ``Headers`` object) are not made."""
    if type(request) is not Request:
        return None
    try:
        (url, body, method, encoding, meta, callback, errback, priority, dont_filter,
         *lazy) = _PLAIN_FIELDS(request)  # fmt: skip
    except AttributeError:  # not Scrapy's slots (another version): the full way
        return None
    if body or any(lazy):
        return None
    data: dict[str, Any] = {"url": url}
    for field, func in (("callback", callback), ("errback", errback)):
        if func is not None:
            if (name := _method_name(func, spider)) is None:
                return None
            data[field] = name
    user = {}
    for key, value in (meta or {}).items():
        if key in INTERNAL_META:
            continue
        if type(key) is not str or key in _TAGS:
            return None
        if type(value) not in _SCALARS:  # a float may be a NaN: not here
            if not isinstance(value, str):
                return None
            value = str.__str__(value)  # lxml's link text (CrawlSpider): a plain str
        user[key] = value
    if user:
        data["meta"] = user
    if priority:
        data["priority"] = priority
    if dont_filter:
        data["dont_filter"] = True
    if method != "GET":
        data["method"] = method
    if encoding != "utf-8":
        data["encoding"] = encoding
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:  # an int beyond 64 bits: the full way writes it
        return None


def _method_name(func: Any, spider: Any) -> str | None:
    """The name of ``func`` if it is the spider's method of that name, else None."""
    name = getattr(func, "__name__", None)
    if (
        spider is None
        or not name
        or getattr(func, "__self__", None) is not spider
        or getattr(spider, name, None) != func
    ):
        return None
    return name


def _to_dict(request: Request, spider: Any) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, without its search of the spider's members
    (``inspect.getmembers``) where a callback is the spider's method of its own name."""
    funcs = (request.callback, request.errback)
    # a method's name, else the callback as given (None, a str)
    names = [_method_name(func, spider) if callable(func) else func for func in funcs]
    if any(name is None and func is not None for func, name in zip(funcs, names, strict=True)):
        return request.to_dict(spider=spider)
    data: dict[str, Any] = {"url": request.url, "callback": names[0], "errback": names[1]}
    data["headers"] = dict(request.headers)
    for attr in request.attributes:
        data.setdefault(attr, getattr(request, attr))
    if type(request) is not Request:
        data["_class"] = f"{type(request).__module__}.{type(request).__name__}"
    return data


def request_from_json(data: bytes, spider: Any = None) -> Request:
    """The request :func:`request_to_json` wrote. Imports nothing: its class (``_class``),
    and the classes of items in it, must be in modules already imported (ValueError else)."""
    d = json.loads(data, object_hook=_decoded)
    if not isinstance(d, dict):
        raise ValueError("a journaled request is not an object")
    if "_class" in d and not issubclass(_imported_class(d["_class"]), Request):
        raise ValueError(f"{d['_class']!r} is not a scrapy.Request subclass")
    # request_from_dict's load_object now finds the module imported: nothing is imported
    return request_from_dict(d, spider=spider)


def _encode(obj: Any, any_float: bool = False) -> Any:
    """``obj`` as JSON values and tags. A subclass of a builtin is written as its base
    (lxml's ``_ElementUnicodeResult`` as a str, an ``IntEnum`` as an int, an ``OrderedDict``
    as a dict); an item by :func:`_encode_item`. :class:`_NotForOrjson` for a NaN or an
    infinity unless ``any_float``."""
    kind: type = type(obj)
    if kind in _SCALARS:
        return obj
    if kind is float:
        if obj - obj != 0.0 and not any_float:  # NaN or an infinity
            raise _NotForOrjson
        return obj
    if kind is dict:
        out = {}
        for k, v in obj.items():
            if type(k) is not str or k in _TAGS:
                pairs = [[_encode(k, any_float), _encode(v, any_float)] for k, v in obj.items()]
                return {"__dict__": pairs}
            t = type(v)
            # An empty dict or list is itself in JSON (a request has several: no call).
            out[k] = v if t in _SCALARS or (t in _CONTAINERS and not v) else _encode(v, any_float)
        return out
    if kind is list:
        return [v if type(v) in _SCALARS else _encode(v, any_float) for v in obj]
    if kind is bytes or isinstance(obj, (bytes, bytearray)):  # a body, header names and values
        return {"__bytes__": base64.b64encode(obj).decode("ascii")}
    for base, tag in _SEQUENCES:
        if isinstance(obj, base):
            return {tag: [_encode(v, any_float) for v in obj]}
    for builtin, plain in _BASES:
        if isinstance(obj, builtin):
            return _encode(plain(obj), any_float)
    if isinstance(obj, datetime.datetime):
        zone = _zone_key(obj.tzinfo)
        if zone is None and not obj.fold:
            return {"__datetime__": obj.isoformat()}
        return {"__datetime__": [obj.isoformat(), zone, obj.fold]}
    if isinstance(obj, datetime.date):
        return {"__date__": obj.isoformat()}
    if isinstance(obj, datetime.time):
        return {"__time__": [obj.isoformat(), obj.fold] if obj.fold else obj.isoformat()}
    if isinstance(obj, datetime.timedelta):
        return {"__timedelta__": [obj.days, obj.seconds, obj.microseconds]}
    if isinstance(obj, decimal.Decimal):
        return {"__decimal__": str(obj)}
    if isinstance(obj, uuid.UUID):
        return {"__uuid__": str(obj)}
    return _encode_item(obj, kind, any_float)


def _encode_item(obj: Any, kind: type, any_float: bool) -> Any:
    """An item (``scrapy.Item``, dataclass, attrs instance) with the path of its class
    (apart from :func:`_encode`, whose ``obj`` its comprehensions would make a cell)."""
    attr = sys.modules.get("attr")  # an attrs instance has it imported
    if isinstance(obj, Item):
        tag, fields = "__item__", dict(obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        tag, fields = "__dataclass__", {n: getattr(obj, n) for n, _ in _dataclass_fields(kind)}
    elif attr is not None and attr.has(kind):
        tag, fields = "__attrs__", {a.name: getattr(obj, a.name) for a in attr.fields(kind)}
    else:
        raise Unjournalable(kind)
    return {tag: [*_class_path(kind), _encode(fields, any_float)]}


def _zone_key(tzinfo: Any) -> str | None:
    """The IANA name of a ``zoneinfo.ZoneInfo`` (kept with its offset), else None."""
    zoneinfo = sys.modules.get("zoneinfo")
    if zoneinfo is not None and isinstance(tzinfo, zoneinfo.ZoneInfo):
        return tzinfo.key
    return None


@functools.lru_cache(maxsize=256)
def _class_path(cls: type) -> tuple[str, str]:
    """``(module, qualname)`` of an item class, which :func:`_imported_class` finds again
    (Unjournalable else: a class made in a function cannot be found by its name)."""
    module, qualname = cls.__module__, cls.__qualname__
    try:
        found = _imported_class(f"{module}.{qualname}", module)
    except ValueError:
        found = None
    if found is not cls:
        raise Unjournalable(cls, " (not found by its name)")
    return module, qualname


@functools.lru_cache(maxsize=256)
def _dataclass_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """A dataclass's fields: (name, passed to ``__init__``). Unjournalable when its
    ``__init__`` takes an ``InitVar`` without a default, which no field holds."""
    for f in getattr(cls, "__dataclass_fields__", {}).values():
        if (
            getattr(f, "_field_type", None) is getattr(dataclasses, "_FIELD_INITVAR", False)
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ):
            raise Unjournalable(cls, " (an InitVar without a default)")
    return tuple((f.name, f.init) for f in dataclasses.fields(cls))


def _decoded(obj: dict[str, Any]) -> Any:
    """``json.loads``' ``object_hook``: an object as it is, a tagged one as its value (its
    parts, read first, are decoded already)."""
    if not any(k in _TAGS for k in obj):
        return obj
    if len(obj) != 1:
        raise ValueError(f"a tag among other keys: {sorted(obj)[:5]}")
    ((tag, value),) = obj.items()
    decode = _DECODERS.get(tag)
    if decode is None:  # "__item__", "__dataclass__", "__attrs__"
        return _decode_item(tag, value)
    return decode(value)


def _decode_datetime(value: Any) -> datetime.datetime:
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    text, zone, fold = value
    found = datetime.datetime.fromisoformat(text)
    if zone is not None:
        import zoneinfo  # the standard library's (it reads the system's zone files)

        # Its wall time in its zone (the offset written is that zone's at that time).
        found = found.replace(tzinfo=zoneinfo.ZoneInfo(_text(zone)))
    return found.replace(fold=1 if fold else 0)  # which of a repeated hour


def _decode_time(value: Any) -> datetime.time:
    if isinstance(value, str):
        return datetime.time.fromisoformat(value)
    text, fold = value
    return datetime.time.fromisoformat(text).replace(fold=1 if fold else 0)


def _decode_timedelta(value: Any) -> datetime.timedelta:
    days, seconds, microseconds = value
    if not all(type(v) is int for v in value):
        raise ValueError(f"not a timedelta: {value!r}")
    return datetime.timedelta(days=days, seconds=seconds, microseconds=microseconds)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"not a string: {value!r}")
    return value


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "__bytes__": lambda value: base64.b64decode(value, validate=True),
    "__tuple__": tuple,
    "__set__": set,
    "__frozenset__": frozenset,
    "__dict__": lambda value: dict(map(tuple, value)),
    "__datetime__": _decode_datetime,
    "__date__": datetime.date.fromisoformat,
    "__time__": _decode_time,
    "__timedelta__": _decode_timedelta,
    "__decimal__": lambda value: decimal.Decimal(_text(value)),
    "__uuid__": lambda value: uuid.UUID(_text(value)),
}
_TAGS = frozenset((*_DECODERS, "__item__", "__dataclass__", "__attrs__"))


def _decode_item(tag: str, value: Any) -> Any:
    """An item of a class looked up in the modules already imported, and checked to be of
    the kind its tag says before it is made: a ``scrapy.Item``, a dataclass, an attrs class.
    Made with ``cls(**arguments)``, then every field set as it was written (what
    ``__post_init__`` or a converter made of them aside): it equals the one journaled."""
    module, qualname, fields = value
    path = f"{module}.{qualname}"
    cls = _imported_class(path, module)
    if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
        raise ValueError(f"the fields of a {path} are not an object")
    if tag == "__item__":
        if not issubclass(cls, Item):
            raise ValueError(f"{path} is not a scrapy.Item subclass")
        return cls(fields)
    if tag == "__dataclass__":
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"{path} is not a dataclass")
        names = {name: name if passed else None for name, passed in _dataclass_fields(cls)}
    else:
        attr = sys.modules.get("attr")
        if attr is None or not attr.has(cls):
            raise ValueError(f"{path} is not an attrs class")
        names = {
            a.name: (getattr(a, "alias", None) or a.name.lstrip("_")) if a.init else None
            for a in attr.fields(cls)
        }
    if not fields.keys() <= names.keys():
        raise ValueError(f"not fields of {path}: {sorted(fields - names.keys())}")
    obj = cls(**{name: v for k, v in fields.items() if (name := names[k])})
    for name, v in fields.items():
        object.__setattr__(obj, name, v)
    return obj


def _imported_class(path: Any, module: str | None = None) -> type:
    """The class at ``path`` (``module.Name``, or ``module`` then a qualname), looked up in
    a module already imported: never imports one a journal names."""
    if not isinstance(path, str):
        raise ValueError(f"not a class path: {path!r}")
    if module is None:
        module = path.rpartition(".")[0]
    found: Any = sys.modules.get(module)
    if found is None or not path.startswith(module + "."):
        raise ValueError(f"{path!r} is not in an imported module")
    for name in path[len(module) + 1 :].split("."):
        found = getattr(found, name, None)
    if not isinstance(found, type):
        raise ValueError(f"{path!r} is not a class")
    return found
