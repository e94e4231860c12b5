"""TRANSACTION_PAYLOAD: fields, zstd decompression and its bounds, and the events inside."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard
from tests.events._corpus import events_of

from binlake.errors import DecompressionError, MalformedError
from binlake.events.base import EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.events.payload import TransactionPayloadEvent, decode_transaction_payload


def _h() -> EventHeader:
    return EventHeader(0, EventType.TRANSACTION_PAYLOAD_EVENT, 1, 0, 0, 0, 4)


def _body(payload: bytes, size: int, kind: int = 0) -> bytes:
    def field(t: int, v: int) -> bytes:
        enc = (
            bytes([v])
            if v < 251
            else b"\xfd" + v.to_bytes(3, "little")
            if v < 1 << 24
            else b"\xfe" + v.to_bytes(8, "little")
        )
        return bytes([t, len(enc)]) + enc

    return field(2, kind) + field(3, size) + field(1, len(payload)) + b"\x00" + payload


def test_corpus_payloads(corpus_dir: Path) -> None:
    evs = events_of(corpus_dir, "mysql/rust_mysql_common/transaction_compression.000001")
    payload = next(ev for ev in evs if isinstance(ev, TransactionPayloadEvent))
    # the bytes of the event at 274: compression 0, uncompressed 179, payload 124
    assert (payload.compression, payload.uncompressed_size, payload.payload_size) == ("ZSTD", 179, 124)
    assert len(payload.uncompressed(1 << 20)) == 179
    inner = [ev for ev in evs if ev.header.in_payload == payload.header.pos]
    assert [ev.type for ev in inner] == ["QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"]
    assert sum(ev.header.event_size for ev in inner) == 179 and inner[0].header.pos == 0


def test_bounds() -> None:
    data = b"x" * 10_000
    body = _body(zstandard.ZstdCompressor().compress(data), len(data))
    ev = decode_transaction_payload(_h(), body, DecodeContext())
    assert ev.uncompressed(10_000) == data
    with pytest.raises(DecompressionError, match="limit"):
        ev.uncompressed(9_999)
    lying = decode_transaction_payload(_h(), _body(zstandard.ZstdCompressor().compress(data), 100), DecodeContext())
    with pytest.raises(DecompressionError, match="header says 100"):
        lying.uncompressed(1 << 20)  # a bomb that claims little stops after 101 bytes
    broken = decode_transaction_payload(_h(), _body(b"\x28\xb5\x2f\xfd garbage", 10), DecodeContext())
    with pytest.raises(DecompressionError):
        broken.uncompressed(100)


def test_uncompressed_payload_and_bad_sizes() -> None:
    ev = decode_transaction_payload(_h(), _body(b"abc", 3, kind=255), DecodeContext())
    assert ev.compression == "NONE" and ev.uncompressed(3) == b"abc"
    with pytest.raises(MalformedError):
        decode_transaction_payload(_h(), _body(b"abc", 3)[:-1], DecodeContext())
