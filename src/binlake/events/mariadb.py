"""MariaDB-only events that are neither row events nor GTIDs: ANNOTATE_ROWS (160) and START_ENCRYPTION (164).

(QUERY_COMPRESSED is in :mod:`binlake.events.query`, MariaDB's GTID, GTID_LIST and BINLOG_CHECKPOINT in
:mod:`binlake.events.gtid`, the compressed row events in :mod:`binlake.events.rows`.)

Layouts (MariaDB ``sql/log_event.h``, ``sql/log_event.cc``)::

    ANNOTATE_ROWS     the statement that produced the following row events, to the end of the event
    START_ENCRYPTION  crypto_scheme u8 (1 = AES), key_version u32, nonce 12 bytes; every later event is encrypted

After a START_ENCRYPTION event the decoder (:class:`binlake.decoder.Decoder`) needs a decryptor for every later
event, and raises :class:`~binlake.errors.EncryptedError` without one.

Example::

    >>> from binlake.events.base import EventHeader
    >>> from binlake.events.context import DecodeContext
    >>> body = bytes([1]) + (1).to_bytes(4, "little") + bytes(range(12))
    >>> decode_start_encryption(EventHeader(0, 164, 1, 40, 0, 0, 256), body, DecodeContext()).summary()
    'scheme AES, key version 1, nonce 000102030405060708090a0b'
"""

from __future__ import annotations

from dataclasses import dataclass

from binlake.events.base import Event, EventHeader
from binlake.events.context import DecodeContext

__all__ = ["CRYPTO_SCHEMES", "AnnotateRowsEvent", "StartEncryptionEvent"]

CRYPTO_SCHEMES = {1: "AES"}


@dataclass(frozen=True, slots=True)
class AnnotateRowsEvent(Event):
    """The SQL text behind the row events that follow (``binlog_annotate_row_events``)."""

    query_raw: bytes

    @property
    def query(self) -> str:
        return self.query_raw.decode("utf-8", "surrogateescape")

    def summary(self) -> str:
        text = " ".join(self.query.split())
        return text if len(text) <= 200 else text[:197] + "..."


def decode_annotate_rows(header: EventHeader, body: bytes, ctx: DecodeContext) -> AnnotateRowsEvent:
    return AnnotateRowsEvent(header, ctx.cursor(body).rest())


@dataclass(frozen=True, slots=True)
class StartEncryptionEvent(Event):
    """Start_encryption_log_event: the events after this one are encrypted with ``key_version`` of the binlog key."""

    crypto_scheme: int
    key_version: int
    nonce: bytes

    @property
    def crypto_scheme_name(self) -> str:
        return CRYPTO_SCHEMES.get(self.crypto_scheme, f"UNKNOWN_{self.crypto_scheme}")

    def summary(self) -> str:
        return f"scheme {self.crypto_scheme_name}, key version {self.key_version}, nonce {self.nonce.hex()}"


def decode_start_encryption(header: EventHeader, body: bytes, ctx: DecodeContext) -> StartEncryptionEvent:
    c = ctx.cursor(body)
    return StartEncryptionEvent(header, c.u8("crypto_scheme"), c.u32("key_version"), c.take(12, "nonce"))
