"""CHAR/VARCHAR/BINARY/VARBINARY, BLOB/TEXT and MariaDB's compressed columns.

Stored forms (``Field_string::pack``, ``Field_varstring::pack``, ``Field_blob::pack`` in ``sql/field.cc``):

* STRING (CHAR/BINARY): a length prefix of 1 byte when the column's maximum byte length is below 256, else 2
  bytes (little-endian), then the bytes without trailing pad (spaces; ``\\0`` for BINARY);
* VARCHAR/VAR_STRING: the same prefix rule on the metadata's maximum length;
* BLOB/TEXT (and GEOMETRY, JSON, VECTOR elsewhere): ``col.length`` (1..4) little-endian length bytes, then bytes;
* MariaDB VARCHAR_COMPRESSED (141) / BLOB_COMPRESSED (140): prefixed like VARCHAR/BLOB, the payload being
  ``Field_longstr::compress``'s format: empty, or one header byte (high nibble 0 = stored as is, 8 = zlib; low
  3 bits = bytes of the big-endian original length; bit 3 = raw deflate without zlib wrapper) then the data.

Readers return the stored ``bytes`` (compressed payloads as stored: ``mariadb-binlog`` prints them so).  The
converter decompresses, then decodes with the column's charset when the table map names one (COLUMN_CHARSET
optional metadata), the way the server converts it for ``SELECT`` (``collations.decoder``: the server's own
mapping, :mod:`binlake.values.charmap`): ``str``, or the ``bytes`` when they are not valid in that charset;
binary columns stay ``bytes`` (BINARY(n) padded back to ``n`` bytes with ``\\0``, as ``SELECT`` returns it);
without a known charset values stay ``bytes``.  MariaDB's INET4/INET6/UUID columns are BINARY(4)/BINARY(16) in
the table map and decode as such.

Example::

    >>> from binlake.coltypes import Column
    >>> col = Column.build(0, 15, b"\\x0a\\x00").with_(charset=45)
    >>> READERS[col.real_type_code](col)(b"\\x03abc", 0), CONVERTERS[col.real_type_code](col)(b"abc")
    ((b'abc', 4), 'abc')
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

from binlake.coltypes import Column, ColumnType
from binlake.errors import DecompressionError, MalformedError, TruncatedError
from binlake.values.collations import BINARY, codec, decoder

__all__ = [
    "BLOB_TYPES",
    "CONVERTERS",
    "MAX_DECOMPRESSED",
    "READERS",
    "RENDER",
    "VARLEN_TYPES",
    "length_bytes",
    "render_quoted",
    "text_codec",
    "uncompress",
]

T = ColumnType
Reader = Callable[[bytes, int], tuple[object, int]]
Converter = Callable[[object], object]

MAX_DECOMPRESSED = 1 << 30
"""Upper bound on one decompressed column value (1 GiB, MariaDB's ``max_allowed_packet`` ceiling)."""


def length_prefixed(nbytes: int, what: str) -> Reader:
    """Reader of ``nbytes`` (1..4) little-endian length bytes followed by that many bytes of data."""
    if not 1 <= nbytes <= 4:
        raise MalformedError(f"{what}: {nbytes} length bytes (1..4 expected)")

    if nbytes == 1:

        def read1(buf: bytes, pos: int) -> tuple[object, int]:
            if pos >= len(buf):
                raise TruncatedError(f"{what}: length byte past the end of the row", offset=pos)
            end = pos + 1 + buf[pos]
            if end > len(buf):
                raise TruncatedError(f"{what}: value runs past the end of the row", offset=pos)
            return buf[pos + 1 : end], end

        return read1

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        start = pos + nbytes
        if start > len(buf):
            raise TruncatedError(f"{what}: length bytes past the end of the row", offset=pos)
        end = start + int.from_bytes(buf[pos:start], "little")
        if end > len(buf):
            raise TruncatedError(f"{what}: value runs past the end of the row", offset=pos)
        return buf[start:end], end

    return read


# length-prefixed types: the VARCHAR family (1 or 2 length bytes) and the BLOB family (col.length bytes)
VARLEN_TYPES = frozenset({T.STRING, T.VARCHAR, T.VAR_STRING, T.VARCHAR_COMPRESSED})
BLOB_TYPES = frozenset({T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB_COMPRESSED})


def length_bytes(col: Column) -> int:
    """Bytes of the length prefix of a string or blob value.

    ``Field_varstring::length_bytes`` / ``Field_string::pack``: 1 byte while the column's maximum byte length is
    below 256, else 2; BLOB-like columns (``Field_blob::pack``) store ``col.length`` (1..4) bytes.
    """
    if col.real_type_code in VARLEN_TYPES:
        return 1 if (col.length or 0) < 256 else 2
    return col.length or 0


def _prefixed_reader(col: Column) -> Reader:
    return length_prefixed(length_bytes(col), col.real_type)


def uncompress(stored: bytes, max_length: int) -> bytes:
    """The original bytes of a MariaDB compressed column value (``Field_longstr::uncompress``).

    ``max_length`` bounds the announced original length (the column's maximum, capped at
    :data:`MAX_DECOMPRESSED`); a longer, damaged or trailing-garbage stream is a :class:`DecompressionError`.

    >>> uncompress(b"\\x00tiny", 100), uncompress(b"", 100)
    (b'tiny', b'')
    """
    if not stored:
        return b""
    header = stored[0]
    method = header >> 4
    if method == 0:
        return stored[1:]
    if method != 8:
        raise DecompressionError(f"compressed column: unknown compression method {method}")
    nlen = header & 7
    if len(stored) < 1 + nlen:
        raise DecompressionError("compressed column: header longer than the value")
    original = int.from_bytes(stored[1 : 1 + nlen], "big")
    limit = min(max_length, MAX_DECOMPRESSED)
    if original > limit:
        raise DecompressionError(f"compressed column: announces {original} bytes, more than {limit}")
    inflater = zlib.decompressobj(-15 if header & 8 else 15)
    try:
        out = inflater.decompress(stored[1 + nlen :], original)
    except zlib.error as e:
        raise DecompressionError(f"compressed column: {e}") from None
    if not inflater.eof or inflater.unused_data:
        raise DecompressionError("compressed column: stream does not end at the announced length")
    return out


def text_codec(col: Column) -> str | None:
    """The decoder a string column's values decode with (``collations.codec``: ``"utf-8"`` for utf8mb3 and
    utf8mb4); ``None`` when they stay bytes (binary, unknown)."""
    return codec(col.charset) if col.is_text and col.charset is not None else None


def _text(col: Column) -> Callable[[bytes], object] | None:
    """bytes -> str with the column's charset (its bytes when they are not valid in it: ``collations.decoder``);
    ``None`` when values stay bytes (binary or unknown)."""
    name = text_codec(col)
    return None if name is None else decoder(name)


def _string_converter(col: Column) -> Converter | None:
    text = _text(col)
    if text is not None:
        return text  # type: ignore[return-value]
    if col.charset == BINARY and col.real_type_code == T.STRING and col.length:
        width = col.length
        return lambda raw: raw.ljust(width, b"\0")  # type: ignore[attr-defined]
    return None


def _plain_converter(col: Column) -> Converter | None:
    return _text(col)  # type: ignore[return-value]


def _compressed_converter(col: Column) -> Converter:
    # the largest value the column holds: 2**(8*length bytes)-1 for BLOB, the metadata's length for VARCHAR
    blob = col.real_type_code == T.BLOB_COMPRESSED
    max_length = (1 << (8 * (col.length or 4))) - 1 if blob else col.length or 0
    text = _text(col)

    def convert(stored: object) -> object:
        raw = uncompress(stored, max_length)  # type: ignore[arg-type]
        return raw if text is None else text(raw)

    return convert


# my_b_write_quoted (sql/log_event.cc): bytes below 0x20 as \xNN, everything else as is (quotes included)
_CONTROL = re.compile(rb"[\x00-\x1f]")


def render_quoted(raw: bytes) -> str:
    """``'...'`` as ``mariadb-binlog -vv`` prints a string or blob value (``my_b_write_quoted``).

    Bytes that are not UTF-8 come back as surrogate escapes, so ``s.encode("utf-8", "surrogateescape")``
    gives exactly the bytes ``mariadb-binlog`` writes.

    >>> render_quoted(b"a\\x00'\\xe9")
    "'a\\\\x00'\\udce9'"
    """
    if _CONTROL.search(raw) is not None:  # rare: a per-character translate of every value is the slow path
        raw = _CONTROL.sub(lambda m: b"\\x%02x" % m[0][0], raw)
    return "'" + raw.decode("utf-8", "surrogateescape") + "'"


def _render(col: Column, value: object) -> str:
    return render_quoted(value)  # type: ignore[arg-type]


READERS: dict[int, Callable[[Column], Reader]] = {
    **{code: _prefixed_reader for code in VARLEN_TYPES},
    **{code: _prefixed_reader for code in BLOB_TYPES},
}
CONVERTERS: dict[int, Callable[[Column], Converter | None]] = {
    T.STRING: _string_converter,
    T.VARCHAR: _plain_converter,
    T.VAR_STRING: _plain_converter,
    **{code: _plain_converter for code in BLOB_TYPES - {T.BLOB_COMPRESSED}},
    T.VARCHAR_COMPRESSED: _compressed_converter,
    T.BLOB_COMPRESSED: _compressed_converter,
}
RENDER: dict[int, Callable[[Column, object], str]] = {code: _render for code in VARLEN_TYPES | BLOB_TYPES}
