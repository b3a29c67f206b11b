"""Sets of named words that act as an enum's members where swarmdeck needs them, without enum.

A caged run starts on every agent command, and importing enum and building its classes costs
it some 2 ms; its few sets of words (what a booking was based on, the admission answer, what
the cage did to a job) need only this: members made from the upper-case class attributes,
each an instance of its class with a name and a value, compared by identity (a copy or a
pickle gives back the member itself).
"""

from __future__ import annotations


class Choice:
    """Subclass with upper-case attributes, `CAP = "cap"`: each becomes a member of the class."""

    __slots__ = ("name", "value")
    name: str
    value: str

    def __init_subclass__(cls) -> None:
        for name, value in list(vars(cls).items()):
            if name.isupper():
                member = object.__new__(cls)
                member.name, member.value = name, value
                setattr(cls, name, member)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {self.value!r}>"

    def __reduce__(self) -> tuple[object, tuple[type, str]]:
        return getattr, (type(self), self.name)
