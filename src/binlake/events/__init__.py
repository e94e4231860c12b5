"""Typed events: one module per event family, each with the decoders of its types; the decoder's one dispatch
table (:data:`binlake.decoder.DECODERS`) maps type codes to them."""

from binlake.events.base import Event, EventHeader, EventType, RawEvent

__all__ = ["Event", "EventHeader", "EventType", "RawEvent"]
