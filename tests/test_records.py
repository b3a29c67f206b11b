"""Records made by swarmdeck.records behave as the frozen dataclasses they replace, for this
project's uses and for the standard library's functions over dataclasses."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from swarmdeck import records


@records.dataclass(frozen=True)
class Point:
    """A frozen record with a default and a default factory."""

    x: int
    y: int = 0
    tags: list[str] = records.field(default_factory=list, metadata={"doc": "labels"})

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must not be negative")


@records.dataclass
class Counter:
    """A mutable record: compared by value, so not hashable."""

    count: int = 0


@dataclasses.dataclass(frozen=True)
class StandardPoint:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


def test_arguments_are_taken_as_a_dataclass_takes_them() -> None:
    assert Point(1) == Point(1, 0, []) == Point(x=1) == Point(tags=[], y=0, x=1)
    assert Point(1).tags is not Point(1).tags
    wrong = ((), (1, 2, [], 4), (1,), (1,))
    named = ({}, {}, {"x": 2}, {"z": 3})
    for kind in (Point, StandardPoint):
        for args, kwargs in zip(wrong, named, strict=True):
            with pytest.raises(TypeError):
                kind(*args, **kwargs)


def test_post_init_checks_every_construction() -> None:
    with pytest.raises(ValueError, match="negative"):
        Point(-1)
    with pytest.raises(ValueError, match="negative"):
        records.replace(Point(1), x=-1)


def test_equality_hash_and_repr_follow_the_fields() -> None:
    assert Point(1, 2) != Point(1, 3)
    assert Point(1, 2) != StandardPoint(1, 2)
    assert hash(Point(1, 2, ())) == hash(Point(1, 2, ()))  # type: ignore[arg-type]
    assert repr(Point(1, 2, ["a"])) == "Point(x=1, y=2, tags=['a'])"
    assert Counter(1) == Counter(1)
    with pytest.raises(TypeError):
        hash(Counter(1))


def test_a_frozen_record_refuses_assignment_as_a_frozen_dataclass_does() -> None:
    point = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.x  # type: ignore[misc]
    counter = Counter()
    counter.count += 1
    assert counter == Counter(1)


def test_fields_replace_and_asdict_of_this_module() -> None:
    point = Point(1, 2, ["a"])
    assert [item.name for item in records.fields(Point)] == ["x", "y", "tags"]
    assert records.fields(point)[2].metadata["doc"] == "labels"
    assert records.fields(Point)[0].default is records.MISSING
    assert records.replace(point, y=5) == Point(1, 5, ["a"])
    assert records.asdict(point) == {"x": 1, "y": 2, "tags": ["a"]}
    assert records.is_dataclass(Point) and records.is_dataclass(point)
    assert not records.is_dataclass(StandardPoint)


def test_the_standard_library_sees_a_dataclass() -> None:
    point = Point(1, 2, ["a"])
    assert dataclasses.is_dataclass(Point)
    assert [item.name for item in dataclasses.fields(point)] == ["x", "y", "tags"]
    assert dataclasses.fields(Point)[2].metadata["doc"] == "labels"
    assert dataclasses.replace(point, x=3) == Point(3, 2, ["a"])
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "tags": ["a"]}


def test_copies_and_pickles_keep_the_values() -> None:
    point = Point(1, 2, ["a"])
    assert copy.copy(point) == point
    assert copy.deepcopy(point) == point
    assert pickle.loads(pickle.dumps(point)) == point


def test_a_required_field_after_a_default_is_refused() -> None:
    with pytest.raises(TypeError, match="follows default"):

        @records.dataclass
        class Wrong:
            first: int = 0
            second: int  # type: ignore[misc]


@pytest.mark.parametrize("default", [[], {}, set()], ids=["list", "dict", "set"])
def test_a_mutable_default_is_refused_as_a_dataclass_refuses_it(default: object) -> None:
    # Shared by every record made without the field: one record's change would show in all.
    with pytest.raises(ValueError, match=r"mutable default .* use default_factory"):

        @records.dataclass
        class Shared:
            items: object = default

    with pytest.raises(ValueError, match=r"mutable default .* use default_factory"):

        @records.dataclass(frozen=True)
        class SharedByField:
            items: object = records.field(default=default)
