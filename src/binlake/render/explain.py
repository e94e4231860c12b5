"""``binlake explain`` (:mod:`binlake.cli.explain`): one event, field by field, with its bytes, offsets and meaning.

The fields are not described a second time here: the event's own decoder reads them through a
:class:`~binlake.trace.TracingCursor` (explain mode sets ``DecodeContext.trace``), so every row shows what the
decoder read, under the decoder's label, in the order it read it.  This module adds the meanings (type codes and
flags by name, column types with their metadata, the null bitmap per column, each table-map optional-metadata
entry, the checksum stored and computed) and draws the table, in the spirit of the seed article's "Visual
Breakdown" (``shared/seeds/000``).  Bytes of the event that no field covers are shown as ``(not read)``.

Input is an event of a binlog file (``binlake explain FILE --at POS``: the file is decoded up to POS so the format
description and table maps in force are known), an event inside the TRANSACTION_PAYLOAD_EVENT at POS
(``--at POS+OFFSET``, OFFSET counted in the uncompressed payload, as ``binlake events`` prints it), or a hex dump
(``--hex HEX`` or ``--hex -`` for stdin), with the offsets and ASCII column of ``xxd``/``hexdump`` output dropped,
decoded under a MySQL 8 format description unless ``--server-version``/``--no-checksum`` say otherwise.

Example::

    $ binlake explain --hex '3210356813010000004400...fba8d0d8'
    Position 620: TABLE_MAP_EVENT, 68 bytes = 19 header + 8 post-header + 37 body + 4 checksum
    ┌────────┬──────────────────┬────────────┬─────────────────────────────────────────┐
    │ offset │ bytes            │ field      │ value and meaning                       │
    ...
    $ binlake explain binlog.000043 --at 274+71
    Position 274+71: TABLE_MAP_EVENT, 45 bytes = 19 header + 8 post-header + 18 body
    Inside the TRANSACTION_PAYLOAD_EVENT at 274 (ZSTD, 124 bytes -> 179 bytes): offset 71 of the uncompressed ...
"""

from __future__ import annotations

import copy
import dataclasses
import re
import struct
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from binlake.coltypes import ColumnType
from binlake.decoder import Decoder as SansIODecoder
from binlake.decoder import Decryptor, computed_checksum, decode_event
from binlake.errors import BinlogError, EncryptedError, MalformedError, TruncatedError
from binlake.events.base import HEADER, HEADER_V1, LOG_EVENT_FLAGS, Event, EventHeader, EventType
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.events.format import FormatDescriptionEvent, synthetic_fde
from binlake.events.mariadb import StartEncryptionEvent
from binlake.events.payload import TransactionPayloadEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import OptionalField, OptionalMetadataType, TableMapEvent
from binlake.reader import CHUNK, Decoder, opened
from binlake.render.events import event_json, event_line
from binlake.render.explain_fields import Row, column_meta, field_row, flags_text, label, n_bytes, when
from binlake.render.explain_rows import RowImages
from binlake.schema import schema_tracker
from binlake.storage import binlog_source
from binlake.trace import TlvValue, TraceField, fields_of
from binlake.values.spatial import GEOMETRY_TYPES
from binlake.wire import Cursor

__all__ = [
    "HEX_SERVER",
    "Explanation",
    "InPayload",
    "Row",
    "event_at",
    "explain_event",
    "hex_event",
    "inner_event_at",
    "parse_hex_dump",
    "parse_position",
    "render_json",
    "render_text",
]

SECTIONS = ("header", "post-header", "body", "checksum")
_TITLES = {"header": "COMMON HEADER", "post-header": "POST-HEADER", "body": "BODY", "checksum": "CHECKSUM"}


@dataclass(frozen=True, slots=True)
class InPayload:
    """Where an event inside a TRANSACTION_PAYLOAD_EVENT lies: the payload event's file position ``pos``, the
    event's ``offset`` in the uncompressed payload, and the payload's compression and sizes.

    >>> InPayload(274, 71, "ZSTD", 124, 179).address
    '274+71'
    """

    pos: int
    offset: int
    compression: str
    payload_size: int
    uncompressed_size: int

    @property
    def address(self) -> str:
        """``POS+OFFSET``, as ``binlake events`` prints the event's position and ``--at`` takes it."""
        return f"{self.pos}+{self.offset}"


@dataclass(frozen=True, slots=True)
class Explanation:
    """An explained event: its rows in offset order, the decoded event (``None`` when decoding failed) and the
    first problem found (a checksum mismatch, a truncated field...), if any.

    ``in_payload`` says where an event inside a transaction payload lies (``pos`` is then its offset in the
    uncompressed payload); ``inner`` holds the events inside an explained TRANSACTION_PAYLOAD_EVENT."""

    pos: int
    raw: bytes
    header: EventHeader
    header_len: int
    post_header_len: int
    rows: tuple[Row, ...]
    event: Event | None
    error: BinlogError | None
    checksum: tuple[int, int] | None  # (stored, computed)
    decode_error: BinlogError | None = None  # where the traced decoding stopped (None when it reached the end)
    in_payload: InPayload | None = None
    inner: tuple[Event, ...] | None = None  # None unless the event is a TRANSACTION_PAYLOAD_EVENT
    uncompressed: tuple[Row, ...] = ()  # a MariaDB compressed rows event's row images, offsets in the uncompressed rows
    decrypted: bool = False  # the event is in the encrypted part of a MariaDB log: raw is its bytes once decrypted

    @property
    def address(self) -> str:
        """The event's position as ``binlake events`` prints it: ``POS``, or ``POS+OFFSET`` inside a payload."""
        return str(self.pos) if self.in_payload is None else self.in_payload.address

    @property
    def type(self) -> str:
        return self.header.type


# --- hex input ---------------------------------------------------------------------------------------------------

_OFFSET = re.compile(r"^\s*[0-9a-fA-F]+:\s?")  # xxd "0000026c: "
_AT = re.compile(r"^#\s*at\s+\d+\s*")  # a mysqlbinlog "# at N" line glued to the dump (seed 001)
_HEX_TOKEN = re.compile(r"(?:[0-9a-fA-F]{2})+")


def parse_hex_dump(text: str) -> bytes:
    """The bytes of a hex dump: plain hex, ``xxd`` output or ``hexdump`` one-byte groups, with or without offsets.

    Per line: a leading ``offset:`` is dropped, then whitespace-separated hex groups are read until what is left is
    the ASCII column (as many characters as the line had bytes, or ``|...|``).  Lines starting with ``#`` are
    mysqlbinlog comments, except that ``# at N`` followed by hex keeps the hex.

    >>> parse_hex_dump("0000026c: 3210 3568 1301 2.5h..\\n000002ac: fba8 d0d8 ....").hex()
    '321035681301fba8d0d8'
    >>> parse_hex_dump("00 02 74 34 00 ..t4.").hex()
    '0002743400'
    """
    out = bytearray()
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            m = _AT.match(line.strip())
            if m is None:
                continue
            line = line.strip()[m.end() :]
        offset = _OFFSET.match(line)
        if offset is not None:
            line = line[offset.end() :]
        out += _hex_line(line, offset is not None)
    return bytes(out)


def _hex_line(line: str, ascii_column_expected: bool) -> bytes:
    got = bytearray()
    pos = 0
    while True:
        rest = line[pos:]
        stripped = rest.lstrip(" \t")
        if not stripped:
            break
        gap = len(rest) - len(stripped)
        if got and (stripped.startswith("|") or _is_ascii_column(stripped, len(got), gap, ascii_column_expected)):
            break
        token = stripped.split(None, 1)[0]
        if not _HEX_TOKEN.fullmatch(token):
            break
        got += bytes.fromhex(token)
        pos += gap + len(token)
    return bytes(got)


def _is_ascii_column(rest: str, nbytes: int, gap: int, expected: bool) -> bool:
    """Whether ``rest`` is the ASCII rendering of the ``nbytes`` bytes read so far on the line."""
    if len(rest.rstrip("\n")) != nbytes:
        return False
    looks_hex = all(_HEX_TOKEN.fullmatch(t) for t in rest.split())
    return expected or gap >= 2 or not looks_hex


# --- finding the event and its context ---------------------------------------------------------------------------


def event_at(
    path: str, pos: int, options: DecodeOptions, decryptor: Decryptor | None = None
) -> tuple[bytes, DecodeContext]:
    """The bytes of the event at ``pos`` in the binlog at ``path`` and the context in force there.

    Decodes the file from its start (format descriptions and table maps before ``pos`` matter).  An event in the
    encrypted part of a MariaDB log (``encrypt_binlog``) is returned decrypted with ``decryptor`` (see
    :func:`binlake.crypto.mariadb_decryptor`).  Raises :class:`~binlake.errors.BinlogError` naming the file when no
    event starts at ``pos``, or when it is encrypted and there is no ``decryptor``.
    """
    try:
        if pos < 4:
            raise MalformedError(f"no event starts at {pos}: the first event is at 4, after the binlog magic")
        with opened(binlog_source(path)) as (f, _, _):
            dec = Decoder(options, decryptor=decryptor)
            dec.feed(f.read(4))
            for _ in dec.events():  # checks and consumes the magic: dec.position is 4
                pass
            before = 4
            encryption: StartEncryptionEvent | None = None  # its nonce and key version decrypt the later events
            while dec.position < pos:
                chunk = f.read(CHUNK)
                if not chunk:
                    dec.finish()
                    raise MalformedError(f"no event at {pos}: the last event ends at {dec.position}")
                dec.feed(chunk)
                for ev in dec.events():
                    if isinstance(ev, StartEncryptionEvent):
                        encryption = ev
                    if dec.position >= pos:
                        break
                    before = dec.position
            if dec.position != pos:
                raise MalformedError(f"no event starts at {pos}: the event at {before} ends at {dec.position}")
            f.seek(pos)
            head = f.read(dec.ctx.header_len)
            if not head:
                raise TruncatedError(f"no event at {pos}: the file ends there")
            if len(head) < 13:  # (the event's size is in its header's first 13 bytes)
                raise TruncatedError(f"the file ends inside an event header ({len(head)} bytes present)", pos=pos)
            size = int.from_bytes(head[9:13], "little")  # in clear in encrypted logs too
            f.seek(pos)
            raw = f.read(size)
            if len(raw) < size:
                raise TruncatedError(f"the file ends inside the {size}-byte event", pos=pos)
            if dec.ctx.encrypted:
                if decryptor is None or encryption is None:
                    raise EncryptedError(
                        "the event is encrypted (MariaDB encrypt_binlog): give the server's key file (--key-file)"
                    )
                raw = decryptor(raw, pos, encryption)
            return raw, dec.ctx
    except BinlogError as e:
        raise e.at_file(path) from None
    except OSError as e:
        raise BinlogError(f"cannot read: {e.strerror or e}", file=path) from e


_POSITION = re.compile(r"(\d+)(?:\+(\d+))?")


def parse_position(text: str) -> tuple[int, int | None]:
    """``--at``'s value: ``POS``, or ``POS+OFFSET`` for the event at OFFSET inside the TRANSACTION_PAYLOAD_EVENT at
    POS, as ``binlake events`` prints the position of such an event.

    >>> parse_position("620"), parse_position("274+71")
    ((620, None), (274, 71))

    Raises :class:`ValueError` for anything else.
    """
    m = _POSITION.fullmatch(text.strip())
    if m is None:
        raise ValueError(
            f"{text!r} is not POS or POS+OFFSET (an event inside a transaction payload, as `binlake events` shows it)"
        )
    return int(m[1]), None if m[2] is None else int(m[2])


def inner_event_at(
    path: str, pos: int, offset: int, options: DecodeOptions, decryptor: Decryptor | None = None
) -> tuple[bytes, DecodeContext, InPayload]:
    """The bytes of the event at ``offset`` in the uncompressed TRANSACTION_PAYLOAD_EVENT at ``pos`` of ``path``,
    the context in force there (the file's format description, and table maps including those earlier in the
    payload) and where it lies.

    The payload is decompressed and split by :class:`~binlake.decoder.Decoder` itself, so a payload that fails to
    decompress raises the decoder's error.  Raises :class:`~binlake.errors.MalformedError` when the event at ``pos``
    is not a payload or no inner event starts at ``offset`` (the message names the offsets that do).
    """
    raw, ctx = event_at(path, pos, options, decryptor)
    try:
        payload, inner = _payload_events(raw, pos, ctx)
        event = next((ev for ev in inner if ev.header.pos == offset), None)
        if event is None:
            raise MalformedError(
                f"no event starts at offset {offset} of the transaction payload: {_starts(inner, offset)}", pos=pos
            )
        data = payload.uncompressed(ctx.options.max_decompressed)
    except BinlogError as e:
        raise e.at_file(path) from None
    earlier = {ev.table_id: ev for ev in inner if ev.header.pos < offset and isinstance(ev, TableMapEvent)}
    inner_ctx = dataclasses.replace(ctx, table_maps={**ctx.table_maps, **earlier})
    place = InPayload(pos, offset, payload.compression, payload.payload_size, payload.uncompressed_size)
    return data[offset : offset + event.header.event_size], inner_ctx, place


def _payload_events(raw: bytes, pos: int, ctx: DecodeContext) -> tuple[TransactionPayloadEvent, tuple[Event, ...]]:
    """The TRANSACTION_PAYLOAD_EVENT ``raw`` at ``pos`` and the events inside it, as the decoder yields them (from a
    copy of ``ctx``: ``ctx`` is not changed)."""
    own = dataclasses.replace(ctx, table_maps=dict(ctx.table_maps), trace=None, encrypted=False)  # raw is decrypted
    dec = SansIODecoder(context=own, start_pos=pos, magic=False)
    dec.feed(raw)
    events = list(dec.events())
    dec.finish()  # a TruncatedError when raw is shorter than its header says
    payload, inner = events[0], events[1:]
    if not isinstance(payload, TransactionPayloadEvent):
        raise MalformedError(
            f"{payload.header.type} has no events inside it: --at POS+OFFSET addresses an event inside a "
            "TRANSACTION_PAYLOAD_EVENT",
            pos=pos,
        )
    return payload, tuple(inner)


def _starts(inner: Sequence[Event], offset: int, shown: int = 12) -> str:
    """The offsets where ``inner``'s events start: all of them, or the ``shown`` nearest to ``offset``."""
    starts = [ev.header.pos for ev in inner]
    if not starts:
        return "the payload holds no event"
    if len(starts) <= shown:
        return "its events start at offsets " + ", ".join(map(str, starts))
    near = sorted(sorted(starts, key=lambda s: abs(s - offset))[:shown])
    return f"the nearest of its {len(starts)} event starts are at offsets " + ", ".join(map(str, near))


# --- building the rows -------------------------------------------------------------------------------------------


def explain_event(
    raw: bytes, pos: int, ctx: DecodeContext, in_payload: InPayload | None = None, row_limit: int | None = 3
) -> Explanation:
    """Explain the event ``raw`` found at ``pos`` under ``ctx`` (``ctx`` is not changed).

    For an event inside a transaction payload (see :func:`inner_event_at`) ``pos`` is its offset in the
    uncompressed payload and ``in_payload`` says where it lies: it is decoded as the decoder decodes such events,
    without a checksum.  The event is decoded twice: once with ``ctx.options`` to find the error ``binlake events``
    would report (a checksum mismatch among them), once traced without checksum verification to show every field
    anyway.  The events inside a TRANSACTION_PAYLOAD_EVENT are listed in ``inner`` (a failure to decompress or split
    the payload is the explanation's error).  A rows event's row images are split into fields
    (:mod:`binlake.render.explain_rows`), the first ``row_limit`` row changes in full (``None``: all of them).
    """
    hlen = ctx.header_len
    header = _header(raw, pos, hlen)
    error: BinlogError | None = None
    if len(raw) != header.event_size:
        error = TruncatedError(f"{len(raw)} bytes given, the header says the event has {header.event_size}", pos=pos)
    try:
        _decode(raw, pos, ctx, in_payload)
    except BinlogError as e:
        error = error or e
    unverified = dataclasses.replace(ctx.options, verify_checksum=False)
    traced = dataclasses.replace(ctx, options=unverified, trace=[], table_maps=dict(ctx.table_maps))
    event: Event | None = None
    decode_error: BinlogError | None = None
    try:
        event = _decode(raw, pos, traced, in_payload)
    except BinlogError as e:
        decode_error = e
        error = error or e
    inner: tuple[Event, ...] | None = None
    if isinstance(event, TransactionPayloadEvent) and len(raw) == header.event_size:
        try:
            inner = _payload_events(raw, pos, dataclasses.replace(ctx, options=unverified))[1]
        except BinlogError as e:
            error = error or e
    if event is not None:
        header = event.header
        has_checksum = header.checksum is not None
    else:
        has_checksum = in_payload is None and ctx.checksum_len == 4 and len(raw) >= hlen + 4
    body_end = len(raw) - 4 if has_checksum else len(raw)
    # an FDE says its own post-header length; everything else goes by the FDE in force
    ph_len = (event if isinstance(event, FormatDescriptionEvent) else ctx).post_header_len(header.type_code)
    rows = _header_rows(raw, header, hlen)
    meaning = _MEANINGS.get(header.type_code)
    images = None
    if isinstance(event, RowsEvent):
        images = RowImages(event, row_limit)
        meaning = images.meaning
    body_rows: list[Row] = []
    for f in fields_of(traced.trace):
        for r in meaning(f, event, ctx) if meaning and event else [field_row(f)]:
            section = "post-header" if r.offset < hlen + ph_len else "body"
            body_rows.append(dataclasses.replace(r, section=section))
    rows += _fill_gaps(sorted(body_rows, key=lambda r: r.offset), raw, hlen, body_end, ph_len, decode_error)
    uncompressed: tuple[Row, ...] = ()
    if images is not None:
        error = error or images.error
        uncompressed = tuple(images.uncompressed)
    checksum = None
    if has_checksum:
        stored = int.from_bytes(raw[-4:], "little")
        checksum = (stored, computed_checksum(raw, stored))
        verdict = "OK" if checksum[0] == checksum[1] else "MISMATCH"
        meaning_text = f"CRC32 stored 0x{stored:08x}, computed 0x{checksum[1]:08x}: {verdict}"
        rows.append(Row("checksum", "checksum", len(raw) - 4, raw[-4:], stored, meaning_text))
    return Explanation(
        pos,
        raw,
        header,
        hlen,
        ph_len,
        tuple(rows),
        event,
        error,
        checksum,
        decode_error,
        in_payload,
        inner,
        uncompressed,
        ctx.encrypted and in_payload is None,
    )


def _decode(raw: bytes, pos: int, ctx: DecodeContext, place: InPayload | None) -> Event:
    """``decode_event``, for an event inside a payload as the decoder does it: no checksum, and an error names the
    payload's position and the offset inside it (``Decoder._payload_events``)."""
    if place is None:
        return decode_event(raw, pos, ctx)
    try:
        return decode_event(raw, pos, ctx, checksummed=False, in_payload=place.pos)
    except BinlogError as e:
        err = copy.copy(e)
        err.pos, err.offset = place.pos, place.offset + (e.offset or 0)
        raise err from None


def _header(raw: bytes, pos: int, hlen: int) -> EventHeader:
    if len(raw) < hlen:
        raise TruncatedError(f"{len(raw)} bytes cannot hold the {hlen}-byte event header", pos=pos)
    if hlen == 13:
        ts, code, server_id, size = HEADER_V1.unpack_from(raw)
        return EventHeader(ts, code, server_id, size, 0, 0, pos)
    ts, code, server_id, size, log_pos, flags = HEADER.unpack_from(raw)
    return EventHeader(ts, code, server_id, size, log_pos, flags, pos)


def _header_rows(raw: bytes, h: EventHeader, hlen: int) -> list[Row]:
    """The common header's fields, laid out by the same struct the decoder unpacks it with."""
    fmt = (HEADER_V1 if hlen == 13 else HEADER).format.lstrip("<")
    names = [f.name for f in dataclasses.fields(EventHeader)]
    rows, off = [], 0
    for name, code in zip(names, fmt, strict=False):
        size = struct.calcsize("<" + code)
        value = getattr(h, name)
        rows.append(Row("header", name, off, raw[off : off + size], value, _header_meaning(name, value, h)))
        off += size
    return rows


def _header_meaning(name: str, value: int, h: EventHeader) -> str:
    if name == "timestamp":
        return when(value)
    if name == "type_code":
        return f"{h.type} ({value}, 0x{value:02x})"
    if name == "event_size":
        return n_bytes(value)
    if name == "log_pos":
        if value == 0:
            return "0: not recorded (relay log, v1 binlog, or an event inside a transaction payload)"
        if value == h.end_pos:
            return f"next event at {value} = {h.pos} + {h.event_size} ✓"
        return (
            f"next event at {value}, but {h.pos} + {h.event_size} = {h.end_pos} (the event was copied from another log)"
        )
    if name == "flags":
        return flags_text(value, LOG_EVENT_FLAGS)
    return str(value)


def _fill_gaps(rows: list[Row], raw: bytes, hlen: int, end: int, ph_len: int, error: BinlogError | None) -> list[Row]:
    """``rows`` plus a ``(not read)`` row for every byte range of the post-header and body no field covers."""
    out: list[Row] = []
    at = hlen

    def gap(upto: int) -> None:
        nonlocal at
        while at < upto:
            stop = upto if at >= hlen + ph_len else min(upto, hlen + ph_len)
            section = "post-header" if at < hlen + ph_len else "body"
            why = "no field read these bytes"
            if error is not None and upto == end:
                why = f"not decoded: {error.message}"
            out.append(Row(section, "(not read)", at, raw[at:stop], None, why))
            at = stop

    for r in rows:
        gap(r.offset)
        out.append(r)
        at = max(at, r.offset + r.size)
    gap(end)
    return out


# --- meanings of specific event types ----------------------------------------------------------------------------

Meaning = Callable[[TraceField, Event, DecodeContext], list[Row]]


def _collation(cid: int, ctx: DecodeContext) -> str:
    try:
        from binlake.values.collations import collation_name
    except ImportError:  # the collation table is optional for explain
        return f"collation {cid}"
    name = collation_name(cid, mariadb=ctx.is_mariadb)
    return f"{name} ({cid})" if name else f"collation {cid}"


def _optional_meaning(of: OptionalField, tm: TableMapEvent, ctx: DecodeContext) -> str:
    """One optional-metadata entry in words (``Table_map_event::Optional_metadata_fields``, rows_event.cpp)."""
    m, v, cols = OptionalMetadataType, of.value, tm.columns
    code = of.type_code
    if code == m.SIGNEDNESS and isinstance(v, list):
        numeric = [c for c in cols if tm.writer.has_signedness(c)]
        return ", ".join(f"{label(c)} is {'unsigned' if u else 'signed'}" for c, u in zip(numeric, v, strict=False))
    if code in (m.DEFAULT_CHARSET, m.ENUM_AND_SET_DEFAULT_CHARSET) and isinstance(v, dict):
        which = [
            c
            for c in cols
            if (c.is_enum_or_set if code == m.ENUM_AND_SET_DEFAULT_CHARSET else tm.writer.has_charset(c))
        ]
        parts = [_collation(v["default"], ctx)]
        parts += [f"{label(which[k])}: {_collation(coll, ctx)}" for k, coll in v["overrides"] if k < len(which)]
        return "; ".join(parts)
    if code in (m.COLUMN_CHARSET, m.ENUM_AND_SET_COLUMN_CHARSET) and isinstance(v, list):
        which = [
            c for c in cols if (c.is_enum_or_set if code == m.ENUM_AND_SET_COLUMN_CHARSET else tm.writer.has_charset(c))
        ]
        return ", ".join(f"{label(c)}: {_collation(i, ctx)}" for c, i in zip(which, v, strict=False))
    if code == m.COLUMN_NAME and isinstance(v, list):
        return ", ".join(f"col {i + 1} = `{n}`" for i, n in enumerate(v))
    if code in (m.SET_STR_VALUE, m.ENUM_STR_VALUE) and isinstance(v, list):
        real = ColumnType.SET if code == m.SET_STR_VALUE else ColumnType.ENUM
        which = [c for c in cols if c.real_type_code == real]
        return "; ".join(f"{label(c)}: {_values(vals)}" for c, vals in zip(which, v, strict=False))
    if code == m.GEOMETRY_TYPE and isinstance(v, list):
        which = [c for c in cols if c.real_type_code == ColumnType.GEOMETRY]
        return ", ".join(f"{label(c)}: {GEOMETRY_TYPES.get(k, str(k))}" for c, k in zip(which, v, strict=False))
    if code == m.SIMPLE_PRIMARY_KEY and isinstance(v, list):
        return "primary key (" + ", ".join(label(cols[i]) for i in v if i < len(cols)) + ")"
    if code == m.PRIMARY_KEY_WITH_PREFIX and isinstance(v, list):
        keys = [label(cols[i]) + (f"({p})" if p else "") for i, p in v if i < len(cols)]
        return "primary key (" + ", ".join(keys) + ")"
    if code == m.COLUMN_VISIBILITY and isinstance(v, list):
        return ", ".join(f"{label(c)} {'visible' if b else 'INVISIBLE'}" for c, b in zip(cols, v, strict=False))
    if code == m.VECTOR_DIMENSIONALITY and isinstance(v, list):
        which = [c for c in cols if c.real_type_code == ColumnType.VECTOR]
        return ", ".join(f"{label(c)}: {d} dimensions" for c, d in zip(which, v, strict=False))
    return of.raw.hex() or "(empty)"


def _values(vals: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(f"'{s}'" for s in vals[:limit])
    return shown + (f", … ({len(vals)} values)" if len(vals) > limit else "")


def _table_map(f: TraceField, ev: Event, ctx: DecodeContext) -> list[Row]:
    """TABLE_MAP_EVENT fields, as labelled by ``decode_table_map``."""
    if not isinstance(ev, TableMapEvent):
        return [field_row(f)]
    cols, name, v = ev.columns, f.name, f.value
    meaning: str | None = None
    if name == "flags" and isinstance(v, int):
        from binlake.events.table_map import TM_FLAGS

        meaning = flags_text(v, TM_FLAGS)
    elif name == "table_id":
        meaning = f"{v}: the row events that follow name the table by this id"
    elif name.endswith("length") and isinstance(v, int):
        meaning = n_bytes(v)
    elif name in ("schema name", "table name") and isinstance(v, bytes):
        meaning = "`" + v.decode("utf-8", "surrogateescape") + "`"
    elif name == "column count":
        meaning = f"{v} columns"
    elif name == "column types":
        meaning = ", ".join(f"{label(c)} {c.type} ({c.type_code})" for c in cols)
    elif name == "column metadata":
        meaning = ", ".join(f"{label(c)} {c.type}: {column_meta(c)}" for c in cols if c.meta_bytes) or "(none)"
    elif name == "null bitmap":
        meaning = ", ".join(f"{label(c)} {'nullable' if c.nullable else 'NOT NULL'}" for c in cols)
    elif name == "optional metadata" and isinstance(v, TlvValue):
        of = next((o for o in ev.optional if o.offset == f.offset), None)
        kind = OptionalMetadataType.name_of(v.type_code)
        detail = _optional_meaning(of, ev, ctx) if of is not None else v.value.hex()
        meaning = f"{kind}: {detail} [type {v.type_code}, length {v.length}]"
    return [field_row(f, meaning)]


def _format_description(f: TraceField, ev: Event, ctx: DecodeContext) -> list[Row]:
    """FORMAT_DESCRIPTION_EVENT fields, as labelled by ``decode_fde``; its tail is split into the post-header
    lengths and the checksum algorithm (``Format_description_event`` in control_events.h)."""
    if not isinstance(ev, FormatDescriptionEvent):
        return [field_row(f)]
    v = f.value
    if f.name == "binlog_version":
        return [field_row(f, f"v{v} ({_BINLOG_VERSIONS.get(ev.binlog_version, 'unknown')})")]
    if f.name == "server_version":
        return [field_row(f, f'"{ev.server_version}"')]
    if f.name == "create_timestamp" and isinstance(v, int):
        return [field_row(f, when(v) if v else "0: not the first format description since server start")]
    if f.name == "header_length":
        return [field_row(f, f"{v}-byte common header")]
    if f.name != "rest of the event":
        return [field_row(f)]
    n = len(ev.post_header_lengths)
    lengths = ", ".join(f"{EventType.name_of(i + 1)} {x}" for i, x in enumerate(ev.post_header_lengths) if x)
    rows = [Row("", "post_header_lengths", f.offset, f.raw[:n], list(ev.post_header_lengths), lengths)]
    if ev.checksum_alg is not None:
        alg = f"{ev.checksum_alg} = {ev.checksum_alg_name}"
        rows.append(Row("", "checksum_alg", f.offset + n, f.raw[n:], ev.checksum_alg, alg))
    return rows


_BINLOG_VERSIONS = {1: "MySQL 3.23", 3: "MySQL 4.0/4.1", 4: "MySQL 5.0 and later, MariaDB"}


def _transaction_payload(f: TraceField, ev: Event, ctx: DecodeContext) -> list[Row]:
    """TRANSACTION_PAYLOAD_EVENT fields, as labelled by ``decode_transaction_payload``: each field type named
    (``Transaction_payload_event`` OTW_PAYLOAD_* in libs/mysql/binlog/event/control_events.h) with the value that
    follows it, and the payload with its sizes."""
    if not isinstance(ev, TransactionPayloadEvent):
        return [field_row(f)]
    v = f.value
    if f.name == "payload field type" and isinstance(v, int):
        follows = {
            0: "OTW_PAYLOAD_HEADER_END_MARK: the payload follows",
            1: f"OTW_PAYLOAD_SIZE_FIELD: the payload's size follows ({n_bytes(ev.payload_size)})",
            2: f"OTW_PAYLOAD_COMPRESSION_TYPE_FIELD: the compression type follows ({ev.compression})",
            3: f"OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD: the uncompressed size follows ({n_bytes(ev.uncompressed_size)})",
        }
        return [field_row(f, follows.get(v, f"unknown field type {v}: skipped"))]
    if f.name == "payload field" and isinstance(v, bytes):
        try:
            number = Cursor(v).packed_int("payload field")
        except BinlogError:
            return [field_row(f)]
        return [Row("", f.name, f.offset, f.raw, number, f"{number} (packed integer)")]
    if f.name == "rest of the event":
        return [
            field_row(
                f, f"the payload: {ev.compression}, {n_bytes(ev.payload_size)} -> {n_bytes(ev.uncompressed_size)}"
            )
        ]
    return [field_row(f)]


_MEANINGS: dict[int, Meaning] = {
    EventType.TABLE_MAP_EVENT: _table_map,
    EventType.FORMAT_DESCRIPTION_EVENT: _format_description,
    EventType.TRANSACTION_PAYLOAD_EVENT: _transaction_payload,
}


# --- output ------------------------------------------------------------------------------------------------------


def render_json(ex: Explanation) -> dict[str, object]:
    """The ``--json`` form: the header facts, every row, the checksum and the error.

    For an event inside a transaction payload, ``pos`` is its offset in the uncompressed payload, ``in_payload``
    the payload event's position (as ``binlake events --json`` has them) and ``payload`` the compression and sizes;
    a TRANSACTION_PAYLOAD_EVENT lists its ``inner_events`` as ``binlake events --json`` prints them; a MariaDB
    compressed rows event has its row images in ``uncompressed_fields`` (offsets in the uncompressed rows)."""
    h, place = ex.header, ex.in_payload
    return {
        "pos": ex.pos,
        "in_payload": None if place is None else place.pos,
        "payload": None
        if place is None
        else {
            "compression": place.compression,
            "payload_size": place.payload_size,
            "uncompressed_size": place.uncompressed_size,
        },
        "end_pos": h.end_pos,
        "size": h.event_size,
        "type": h.type,
        "type_code": h.type_code,
        "header_length": ex.header_len,
        "post_header_length": ex.post_header_len,
        "summary": ex.event.summary() if ex.event is not None else None,
        "fields": [_field_json(r) for r in ex.rows],
        "uncompressed_fields": [_field_json(r) for r in ex.uncompressed],
        "checksum": None
        if ex.checksum is None
        else {
            "stored": f"0x{ex.checksum[0]:08x}",
            "computed": f"0x{ex.checksum[1]:08x}",
            "ok": ex.checksum[0] == ex.checksum[1],
        },
        "inner_events": None if ex.inner is None else [event_json(ev) for ev in ex.inner],
        "decrypted": ex.decrypted,
        "error": None if ex.error is None else str(ex.error),
        "decode_error": None if ex.decode_error is None else str(ex.decode_error),
    }


def _field_json(r: Row) -> dict[str, object]:
    return {
        "section": r.section,
        "name": r.name,
        "offset": r.offset,
        "size": r.size,
        "hex": r.raw.hex(),
        "value": r.value,
        "meaning": r.meaning,
    }


_HEX_WIDTH = 32  # hex digits per line of the bytes column (16 bytes)
_HEX_LINES = 8  # longer fields are cut in text output (the JSON form has every byte)


def render_text(ex: Explanation, width: int = 120) -> str:
    """The box table of ``binlake explain``: one band per section, one row per field."""
    sizes = {s: sum(r.size for r in ex.rows if r.section == s) for s in SECTIONS}
    parts = [f"{sizes[s]} {s}" for s in SECTIONS if sizes[s]]
    lines = [f"Position {ex.address}: {ex.type}, {ex.header.event_size} bytes = " + " + ".join(parts)]
    if ex.decrypted:
        lines.append(
            "Decrypted with the key file (MariaDB encrypt_binlog): the bytes below are the event before encryption "
            "(in the file only the size, bytes 9-12, is in clear)"
        )
    if ex.in_payload is not None:
        p = ex.in_payload
        lines.append(
            f"Inside the TRANSACTION_PAYLOAD_EVENT at {p.pos} ({p.compression}, {n_bytes(p.payload_size)} -> "
            f"{n_bytes(p.uncompressed_size)}): offset {p.offset} of the uncompressed payload; no checksum (events in "
            "a payload carry none)"
        )
    everything = ex.rows + ex.uncompressed
    name_w = min(28, max(len("field"), *(len(r.name) for r in everything)))
    hex_w = min(_HEX_WIDTH, max(len("bytes"), *(len(r.raw.hex()) for r in everything)))
    widths = [max(6, len(str(len(ex.raw))), *(len(str(r.offset)) for r in ex.uncompressed)), hex_w, name_w, 0]
    widths[3] = max(24, width - sum(widths[:3]) - 13)
    lines.append(_border("┌", "┬", "┐", widths))
    lines.append(_cells(["offset", "bytes", "field", "value and meaning"], widths))
    bands = [(f"{_TITLES[s]} ({n_bytes(sizes[s])})", [r for r in ex.rows if r.section == s]) for s in SECTIONS]
    if ex.uncompressed:
        size = sum(r.size for r in ex.uncompressed)
        bands.append(
            (f"ROW IMAGES, UNCOMPRESSED ({n_bytes(size)}; offsets in the uncompressed rows)", list(ex.uncompressed))
        )
    for title, rows in bands:
        if not rows:
            continue
        inner = sum(widths) + 3 * (len(widths) - 1)
        lines.append(_border("├", "┴", "┤", widths))
        lines.append(f"│ {title:<{inner}} │")
        lines.append(_border("├", "┬", "┤", widths))
        for i, r in enumerate(rows):
            if i:
                lines.append(_border("├", "┼", "┤", widths))
            lines.extend(_row_lines(r, widths))
    lines.append(_border("└", "┴", "┘", widths))
    if ex.event is not None and ex.event.summary():
        lines.append(f"{ex.type}: {ex.event.summary()}")
    if ex.inner is not None:
        lines.append(f"{len(ex.inner)} events inside (explain one with --at {ex.pos}+OFFSET):")
        lines.extend(event_line(ev) for ev in ex.inner)
    if ex.error is not None:
        lines.append(f"Error: {ex.error}")
    if ex.decode_error is not None and ex.decode_error is not ex.error:
        lines.append(f"Decoding stopped: {ex.decode_error}")
    return "\n".join(lines) + "\n"


def _border(left: str, mid: str, right: str, widths: Iterable[int]) -> str:
    return left + mid.join("─" * (w + 2) for w in widths) + right


def _cells(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "│" + "│".join(f" {c:<{w}} " for c, w in zip(cells, widths, strict=True)) + "│"


def _row_lines(r: Row, widths: Sequence[int]) -> list[str]:
    hexs = r.raw.hex()
    hex_lines = [hexs[i : i + widths[1]] for i in range(0, len(hexs), widths[1])] or [""]
    if len(hex_lines) > _HEX_LINES:
        hex_lines = [*hex_lines[: _HEX_LINES - 1], f"… ({r.size} bytes)"]
    name_lines = textwrap.wrap(r.name, widths[2]) or [""]
    meaning_lines = textwrap.wrap(r.meaning, widths[3], break_on_hyphens=False) or [""]
    n = max(len(hex_lines), len(name_lines), len(meaning_lines))
    out = []
    for i in range(n):
        cells = [
            str(r.offset) if i == 0 else "",
            hex_lines[i] if i < len(hex_lines) else "",
            name_lines[i] if i < len(name_lines) else "",
            meaning_lines[i] if i < len(meaning_lines) else "",
        ]
        out.append(_cells(cells, widths))
    return out


# --- bytes given as hex ------------------------------------------------------------------------------------------


HEX_SERVER = "8.0.40"
"""The server ``--hex`` input is decoded as, unless ``--server-version`` says otherwise."""


def hex_event(
    text: str, options: DecodeOptions, *, server_version: str | None = None, checksum: bool = True
) -> tuple[bytes, int, DecodeContext]:
    """The event of a hex dump (``--hex``: :func:`parse_hex_dump`), the position its header's ``log_pos`` implies,
    and the context it is decoded in: a format description of ``server_version`` (default :data:`HEX_SERVER`), with
    or without CRC32s.  Bytes after the event are ignored, and said so on stderr; fewer bytes than a header are a
    :class:`ValueError`."""
    data = parse_hex_dump(text)
    if len(data) < 19:
        raise ValueError(f"--hex holds {len(data)} bytes, fewer than an event header")
    fde = synthetic_fde(server_version or HEX_SERVER, checksum=checksum)
    ctx = DecodeContext(options, fde=fde, schema=schema_tracker(options))
    size, log_pos = int.from_bytes(data[9:13], "little"), int.from_bytes(data[13:17], "little")
    if len(data) > size >= 19:
        print(f"binlake explain: {len(data) - size} bytes after the {size}-byte event ignored", file=sys.stderr)
        data = data[:size]
    return data, log_pos - size if log_pos >= size else 0, ctx
