"""Event classes built through slot descriptors (:func:`binlake.events.base.quicken`) stay what the dataclasses
they are declare: the same signature and defaults, the same fields stored, equal instances, frozen."""

from __future__ import annotations

import dataclasses
import inspect
import sys

import pytest

from binlake.decoder import DECODERS
from binlake.events.base import Event, EventHeader, quicken
from binlake.events.rows import RowsEvent


def event_classes() -> list[type]:
    found = {EventHeader}
    for module in {sys.modules["binlake.events.base"], *(sys.modules[fn.__module__] for fn in DECODERS.values())}:
        found.update(v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Event))
    return sorted(found, key=lambda c: c.__qualname__)


def quickened(cls: type) -> bool:
    return cls.__init__.__code__.co_filename == "<string>" and "_set_" in " ".join(cls.__init__.__code__.co_names)


def test_the_event_classes_are_quickened() -> None:
    classes = event_classes()
    assert len(classes) > 30
    slow = [c.__qualname__ for c in classes if dataclasses.is_dataclass(c) and not quickened(c)]
    assert slow == [], "frozen event dataclasses still built by object.__setattr__"
    assert quickened(EventHeader) and quickened(RowsEvent)


@pytest.mark.parametrize("cls", [c for c in event_classes() if dataclasses.is_dataclass(c)], ids=lambda c: c.__name__)
def test_same_fields_defaults_and_frozen(cls: type) -> None:
    fields = dataclasses.fields(cls)
    sig = inspect.signature(cls)
    assert list(sig.parameters) == [f.name for f in fields]
    for f in fields:
        default = sig.parameters[f.name].default
        assert default == (inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
    values = [object() for _ in fields]  # a distinct sentinel per field
    made = cls(*values)
    expected = object.__new__(cls)
    for f, v in zip(fields, values, strict=True):
        object.__setattr__(expected, f.name, v)  # what dataclasses' own __init__ does
    assert all(getattr(made, f.name) is v for f, v in zip(fields, values, strict=True))
    assert made == expected
    by_name = cls(**{f.name: v for f, v in zip(fields, values, strict=True)})
    assert by_name == expected
    required = [v for f, v in zip(fields, values, strict=True) if f.default is dataclasses.MISSING]
    with_defaults = cls(*required)
    for f in fields:
        if f.default is not dataclasses.MISSING:
            assert getattr(with_defaults, f.name) == f.default
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, fields[0].name, None)
    with pytest.raises(TypeError):
        cls(*values, object())  # one argument too many


def test_classes_with_more_in_init_are_left_alone() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Post:
        x: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        x: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclasses.dataclass(slots=True)
    class NotFrozen:
        x: int

    assert quicken([Post, Factory, NoSlots, NotFrozen]) == []
