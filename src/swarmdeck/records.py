"""Dataclasses that cost nothing to define: the records of every module `swarmdeck run` imports.

`swarmdeck run` starts before every caged command, so its start-up is part of what the cage
costs. Python 3.11's `dataclasses` writes the source of each class's `__init__`, `__repr__`,
`__eq__`, `__hash__` and `__setattr__` and compiles it when the class is made: about a
millisecond per class on a slow machine, some 40 classes on the run path, plus 9 ms to import
`dataclasses` itself (it pulls `inspect`, `ast`, `dis` and `tokenize`). A class made by this
module's `dataclass` gets the same methods, written once here and shared by every class, so
making one costs a few microseconds and importing this module pulls nothing.

What it supports is what this project uses: `frozen`, `eq`, defaults (an unhashable one, a
list or dict every record would share, refused as dataclasses refuses it), `field(default=…,
default_factory=…, metadata=…)`, `__post_init__`, and `fields`, `asdict`, `replace` and
`is_dataclass` over such classes. A class keeps the standard library's ways in too: the first
time anything reads its `__dataclass_fields__` (what `dataclasses.fields`, `asdict`, `replace`
and `is_dataclass` look at), the real description is built from the same annotations, so code
elsewhere may treat these records as the dataclasses they are; a frozen record refuses
assignment with `dataclasses.FrozenInstanceError`, as a frozen dataclass does.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing typing costs every start 3 ms, and this name
# is all that type checkers and linters look for.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar, dataclass_transform

    Kind = TypeVar("Kind", bound=type)
else:

    def dataclass_transform(**_marks):
        return lambda decorator: decorator


class _Missing:
    """The mark of a field without a default (the standard library's MISSING, for these)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MappingProxyType = type(type.__dict__)
"""`types.MappingProxyType`, a read-only view of a dict, named as types.py itself names it:
importing types costs every caged run half a millisecond, for the two names the run path
needs from it (this one, and cli/run.py's namespace)."""

MISSING: Any = _Missing()
_FIELDS = "__record_fields__"
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Field:
    """One field of a record: its name, annotation, default or default factory, and metadata."""

    __slots__ = ("default", "default_factory", "metadata", "name", "type")

    def __init__(
        self, default: Any, default_factory: Any, metadata: Mapping[str, Any] | None
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.metadata = _EMPTY if metadata is None else MappingProxyType(dict(metadata))

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r})"


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """A field's default, default factory or metadata, as `dataclasses.field` takes them."""
    return Field(default, default_factory, metadata)


@dataclass_transform(field_specifiers=(field,))
def dataclass(cls: Kind | None = None, /, *, frozen: bool = False, eq: bool = True) -> Any:
    """Make `cls` a record of its annotated fields, as `dataclasses.dataclass` would."""

    def make(cls: Kind) -> Kind:
        _make_record(cls, frozen, eq)
        return cls

    return make if cls is None else make(cls)


def _make_record(cls: type, frozen: bool, eq: bool) -> None:
    own = cls.__dict__
    found: list[Field] = []
    for name, kind in own.get("__annotations__", {}).items():
        if "ClassVar" in str(kind):
            continue
        value = own.get(name, MISSING)
        item = value if isinstance(value, Field) else Field(value, MISSING, None)
        item.name, item.type = name, kind
        if type(item.default).__hash__ is None:
            # As dataclasses refuses it: one object would be every record's default.
            raise ValueError(
                f"mutable default {type(item.default)} for field {name} is not allowed:"
                " use default_factory"
            )
        if isinstance(value, Field):
            if value.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, value.default)
        found.append(item)
    inherited = [item for base in cls.__mro__[-1:0:-1] for item in base.__dict__.get(_FIELDS, ())]
    items = tuple({item.name: item for item in [*inherited, *found]}.values())
    required_after_default = False
    for item in items:
        if item.default is MISSING and item.default_factory is MISSING:
            if required_after_default:
                raise TypeError(f"non-default argument {item.name!r} follows default argument")
        else:
            required_after_default = True
    names = tuple(item.name for item in items)
    setattr(cls, _FIELDS, items)
    cls.__match_args__ = names
    methods: dict[str, Any] = {"__init__": _init(cls, items), "__repr__": _repr}
    if eq:
        methods["__eq__"] = _eq
        methods["__hash__"] = _hash if frozen else None
    if frozen:
        methods["__setattr__"] = _refuse_assignment
        methods["__delattr__"] = _refuse_deletion
    for name, method in methods.items():
        if name == "__hash__" and "__hash__" in own and own["__hash__"] is not None:
            continue
        if name not in own or name == "__hash__":
            setattr(cls, name, method)
    cls.__dataclass_fields__ = _StandardFields(frozen, eq)


def _init(cls: type, items: tuple[Field, ...]) -> Callable[..., None]:
    names = tuple(item.name for item in items)
    count = len(names)
    post_init = hasattr(cls, "__post_init__")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        values = self.__dict__
        if kwargs and not args and len(kwargs) == count:
            # Every field by name, as a row is read: the common case after all positional.
            try:
                args = tuple(map(kwargs.__getitem__, names))
            except KeyError:
                args = _arguments(type(self), items, args, kwargs)
        elif len(args) != count or kwargs:
            args = _arguments(type(self), items, args, kwargs)
        values.update(zip(names, args, strict=True))
        if post_init:
            self.__post_init__()

    return __init__


def _arguments(
    cls: type, items: tuple[Field, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """Every field's value in order, from positional and keyword arguments and the defaults."""
    if len(args) > len(items):
        raise TypeError(
            f"{cls.__qualname__}.__init__() takes {len(items) + 1} positional arguments"
            f" but {len(args) + 1} were given"
        )
    values = list(args)
    used = 0
    for item in items[len(args):]:
        value = kwargs.get(item.name, MISSING)
        if value is not MISSING:
            used += 1
        elif item.default is not MISSING:
            value = item.default
        elif item.default_factory is not MISSING:
            value = item.default_factory()
        else:
            raise TypeError(
                f"{cls.__qualname__}.__init__() missing 1 required argument: {item.name!r}"
            )
        values.append(value)
    if used != len(kwargs):
        positional = {item.name for item in items[:len(args)]}
        for name in kwargs:
            if name in positional:
                raise TypeError(
                    f"{cls.__qualname__}.__init__() got multiple values for {name!r}"
                )
            if all(item.name != name for item in items):
                raise TypeError(
                    f"{cls.__qualname__}.__init__() got an unexpected keyword argument {name!r}"
                )
    return tuple(values)


def _values(record: Any) -> list[Any]:
    values = record.__dict__
    return [values[item.name] for item in getattr(record, _FIELDS)]


def _repr(self: Any) -> str:
    shown = ", ".join(f"{item.name}={self.__dict__[item.name]!r}" for item in fields(self))
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(tuple(_values(self)))


def _refuse_assignment(self: Any, name: str, value: Any) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_deletion(self: Any, name: str) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot delete field {name!r}")


class _StandardFields:
    """A record's `__dataclass_fields__`, built by `dataclasses` from the same annotations the
    first time anything outside this module asks for it, then kept on the class."""

    def __init__(self, frozen: bool, eq: bool) -> None:
        self.frozen = frozen
        self.eq = eq

    def __get__(self, record: Any, cls: type) -> dict[str, Any]:
        import dataclasses

        namespace: dict[str, Any] = {
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__annotations__": {item.name: item.type for item in fields(cls)},
        }
        for item in fields(cls):
            given: dict[str, Any] = {"metadata": item.metadata}
            if item.default is not MISSING:
                given["default"] = item.default
            if item.default_factory is not MISSING:
                given["default_factory"] = item.default_factory
            namespace[item.name] = dataclasses.field(**given)
        twin = dataclasses.dataclass(frozen=self.frozen, eq=self.eq)(
            type(cls.__name__, (), namespace)
        )
        described = twin.__dataclass_fields__
        type.__setattr__(cls, "__dataclass_fields__", described)
        return described


def is_dataclass(thing: Any) -> bool:
    """Whether `thing` is a record made here, or an instance of one."""
    return hasattr(thing, _FIELDS)


def fields(thing: Any) -> tuple[Field, ...]:
    """A record's fields (of its class or an instance), in order."""
    try:
        return getattr(thing, _FIELDS)
    except AttributeError:
        raise TypeError(f"{thing!r} is not a record made by swarmdeck.records") from None


def replace(record: Any, **changes: Any) -> Any:
    """A copy of a record with some fields changed (and `__post_init__` run again)."""
    for item in fields(record):
        changes.setdefault(item.name, record.__dict__[item.name])
    return type(record)(**changes)


def asdict(record: Any) -> dict[str, Any]:
    """A record as a dict of its fields; records, lists, tuples and dicts inside are turned
    over too, as `dataclasses.asdict` does (other values are kept, not copied)."""
    return {item.name: _plain(record.__dict__[item.name]) for item in fields(record)}


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, list | tuple):
        items = [_plain(item) for item in value]
        if hasattr(value, "_fields"):
            return type(value)(*items)
        return type(value)(items)
    if isinstance(value, dict):
        return type(value)((_plain(key), _plain(item)) for key, item in value.items())
    return value
