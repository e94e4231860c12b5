"""Typed events: one module per event family, each registering its decoders in :mod:`binlake.events.base`."""

from binlake.events.base import Event, EventHeader, EventType, RawEvent

__all__ = ["Event", "EventHeader", "EventType", "RawEvent"]
