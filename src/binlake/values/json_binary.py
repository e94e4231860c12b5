"""MySQL's binary JSON (JSON columns, type 245) and the JSON diffs of PARTIAL_UPDATE_ROWS events.

The stored form is a BLOB (``col.length`` = 4 length bytes) holding ``json_binary`` (``sql-common/json_binary.cc``):
a type byte, then the value.  Objects/arrays come in a small (16-bit offsets) and a large (32-bit) layout: element
count, byte size, key entries (offset, 16-bit length; objects only), value entries (type byte + offset, or the
value itself for literals and integers that fit), then keys and values; offsets count from the byte after the
type byte.  Scalars: int16/uint16/int32/uint32/int64/uint64/double little-endian; strings with a 7-bits-per-byte
length; opaque values (a MySQL field type byte, a length, the bytes) carry DECIMAL, DATE, TIME, DATETIME and
other SQL values.

The converter prints the document exactly as MySQL does (``Json_wrapper::to_string``, ``wrapper_to_string`` in
``sql-common/json_dom.cc``): ``", "`` and ``": "`` separators, doubles through ``my_gcvt`` (``1.5``, ``100.0``,
``1e100``), decimals as numbers, dates/times as quoted strings with 6 fractional digits, every other opaque value
(VAR_STRING, BLOB, BIT, YEAR, GEOMETRY, ... whatever its bytes) as ``"base64:typeNN:..."``.  An empty value is JSON
``null``.  MariaDB's JSON is LONGTEXT: a plain string column.

Example::

    >>> to_text(encode({"a": 1, "b": [1.5, None]}))
    '{"a": 1, "b": [1.5, null]}'
"""

from __future__ import annotations

import base64
import enum
import functools
import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError, MalformedError
from binlake.values import decimal
from binlake.values.strings import length_prefixed, render_quoted
from binlake.wire import read_packed_int

__all__ = [
    "CONVERTERS",
    "READERS",
    "RENDER",
    "JsonDiff",
    "JsonDiffOperation",
    "apply_json_diffs",
    "encode",
    "parse_json_diffs",
    "to_text",
]

T = ColumnType
Reader = Callable[[bytes, int], tuple[object, int]]
Converter = Callable[[object], object]

# json_binary.h JSONB_TYPE_*
SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY = 0x00, 0x01, 0x02, 0x03
LITERAL, INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING, OPAQUE = (
    0x04,
    0x05,
    0x06,
    0x07,
    0x08,
    0x09,
    0x0A,
    0x0B,
    0x0C,
    0x0F,
)
_MAX_DEPTH = 150  # MySQL refuses documents deeper than JSON_DOCUMENT_MAX_DEPTH (100)

_I16, _U16, _I32, _U32 = struct.Struct("<h"), struct.Struct("<H"), struct.Struct("<i"), struct.Struct("<I")
_I64, _U64, _F64 = struct.Struct("<q"), struct.Struct("<Q"), struct.Struct("<d")
_SCALARS = {INT16: _I16, UINT16: _U16, INT32: _I32, UINT32: _U32, INT64: _I64, UINT64: _U64, DOUBLE: _F64}


@dataclass(frozen=True, slots=True)
class Opaque:
    """A SQL value inside a JSON document: ``field_type`` (a MySQL column type code) and its bytes."""

    field_type: int
    data: bytes


@dataclass(frozen=True, slots=True)
class _Scalar:
    """An opaque value already in its printed form (a decimal number or a quoted date/time)."""

    text: str


# ----------------------------------------------------------------------------------------------- decoding


def _varlen(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """json_binary's variable-length length: 7 bits per byte, low bits first, at most 5 bytes."""
    value = 0
    for i in range(5):
        if pos >= end:
            raise MalformedError("JSON: length runs past the end of the value")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value, pos
    raise MalformedError("JSON: variable-length length longer than 5 bytes")


def _value(buf: bytes, kind: int, pos: int, end: int, depth: int) -> object:
    """Decode the value of type ``kind`` whose data starts at ``pos`` (data ends at most at ``end``)."""
    if kind <= LARGE_ARRAY:
        return _container(buf, kind, pos, end, depth)
    if kind == LITERAL:
        if pos >= end:
            raise MalformedError("JSON: literal past the end of the value")
        lit = buf[pos]
        if lit > 2:
            raise MalformedError(f"JSON: unknown literal {lit}")
        return (None, True, False)[lit]
    s = _SCALARS.get(kind)
    if s is not None:
        if pos + s.size > end:
            raise MalformedError("JSON: number past the end of the value")
        return s.unpack_from(buf, pos)[0]
    if kind == STRING:
        n, pos = _varlen(buf, pos, end)
        if pos + n > end:
            raise MalformedError("JSON: string past the end of the value")
        return buf[pos : pos + n].decode("utf-8")
    if kind == OPAQUE:
        if pos >= end:
            raise MalformedError("JSON: opaque value past the end of the value")
        ftype = buf[pos]
        n, pos = _varlen(buf, pos + 1, end)
        if pos + n > end:
            raise MalformedError("JSON: opaque value past the end of the value")
        return _opaque(ftype, buf[pos : pos + n])
    raise MalformedError(f"JSON: unknown value type {kind:#04x}")


def _container(buf: bytes, kind: int, pos: int, end: int, depth: int) -> object:
    if depth > _MAX_DEPTH:
        raise MalformedError("JSON: document nested too deep")
    large = kind in (LARGE_OBJECT, LARGE_ARRAY)
    word = _U32 if large else _U16
    w = word.size
    if pos + 2 * w > end:
        raise MalformedError("JSON: container header past the end of the value")
    count = word.unpack_from(buf, pos)[0]
    size = word.unpack_from(buf, pos + w)[0]
    if size < 2 * w or pos + size > end:
        raise MalformedError(f"JSON: container of {size} bytes does not fit its value")
    limit = pos + size
    is_object = kind in (SMALL_OBJECT, LARGE_OBJECT)
    key_entry = w + 2
    value_entry = 1 + w
    entries = pos + 2 * w
    values_at = entries + (count * key_entry if is_object else 0)
    if values_at + count * value_entry > limit:
        raise MalformedError("JSON: container entries past the end of the container")
    items: list[object] = []
    for i in range(count):
        ve = values_at + i * value_entry
        vkind = buf[ve]
        if vkind == LITERAL or vkind in (INT16, UINT16) or (large and vkind in (INT32, UINT32)):
            # inlined in the entry (json_binary.cc: inlined_type)
            item = _value(buf, vkind, ve + 1, ve + 1 + w, depth + 1)
        else:
            off = word.unpack_from(buf, ve + 1)[0]
            if off >= size:
                raise MalformedError("JSON: value offset past the end of the container")
            item = _value(buf, vkind, pos + off, limit, depth + 1)
        items.append(item)
    if not is_object:
        return items
    obj: dict[str, object] = {}
    for i in range(count):
        ke = entries + i * key_entry
        off = word.unpack_from(buf, ke)[0]
        n = _U16.unpack_from(buf, ke + w)[0]
        if off + n > size:
            raise MalformedError("JSON: key past the end of the container")
        obj[buf[pos + off : pos + off + n].decode("utf-8")] = items[i]
    return obj


# The MySQL field types of opaque values that are typed JSON values (include/field_types.h): Json_wrapper::type()
# (sql-common/json_dom.cc) makes NEWDECIMAL a J_DECIMAL and DATETIME/DATE/TIME/TIMESTAMP J_DATETIME/J_DATE/J_TIME/
# J_TIMESTAMP; every other type, VAR_STRING (253) included, is J_OPAQUE, printed as base64 of its bytes.
_DECIMAL, _DATE, _TIME, _DATETIME, _TIMESTAMP = 246, 10, 11, 12, 7


@functools.cache
def _decimal_reader(precision: int, scale: int) -> Reader:
    col = Column(0, T.NEWDECIMAL, 0, real_type_code=T.NEWDECIMAL, precision=precision, scale=scale)
    return decimal.READERS[T.NEWDECIMAL](col)


def _decimal_text(data: bytes) -> str:
    """decimal2string of an opaque DECIMAL: precision byte, scale byte, then ``decimal2bin`` bytes
    (``strings/decimal.cc``), read by the DECIMAL column reader."""
    if len(data) < 2 or not 0 < data[0] <= 65 or data[1] > min(data[0], 30):
        raise MalformedError("JSON: opaque DECIMAL without a valid precision and scale")
    value, _ = _decimal_reader(data[0], data[1])(data, 2)
    return format(value, "f")


def _packed_datetime(data: bytes, ftype: int) -> str:
    """my_TIME_to_str(.., 6) of TIME_to_longlong_*_packed values (``mysys/my_time.cc``)."""
    if len(data) < 8:
        raise MalformedError("JSON: opaque temporal value shorter than 8 bytes")
    packed = _I64.unpack_from(data)[0]
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    frac = packed % (1 << 24)
    whole = packed >> 24
    if ftype == _TIME:
        hms = whole
        return f"{sign}{hms >> 12:02d}:{hms >> 6 & 63:02d}:{hms & 63:02d}.{frac:06d}"
    ymd, hms = whole >> 17, whole % (1 << 17)
    ym = ymd >> 5
    date = f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d}"
    if ftype == _DATE:
        return date
    return f"{date} {hms >> 12:02d}:{hms >> 6 & 63:02d}:{hms & 63:02d}.{frac:06d}"


def _opaque(ftype: int, data: bytes) -> object:
    if ftype == _DECIMAL:
        return _Scalar(_decimal_text(data))
    if ftype in (_DATE, _TIME, _DATETIME, _TIMESTAMP):
        return _Scalar(_quote(_packed_datetime(data, ftype)))
    return Opaque(ftype, data)


def _base64(data: bytes) -> str:
    """``base64_encode`` of ``mysys/base64.cc``: standard base64 with a newline after every 76 characters."""
    text = base64.b64encode(data).decode("ascii")
    return "\n".join(text[i : i + 76] for i in range(0, len(text), 76))


def decode(doc: bytes) -> object:
    """The Python tree of a binary JSON document (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``,
    :class:`Opaque` for SQL values MySQL prints as base64); raises :class:`MalformedError` on bad bytes."""
    if not doc:
        return None
    try:
        return _value(doc, doc[0], 1, len(doc), 0)
    except BinlogError:
        raise
    except (UnicodeDecodeError, IndexError, struct.error, RecursionError) as e:
        raise MalformedError(f"JSON: {e}") from None


# ----------------------------------------------------------------------------------------------- printing

_JSON_ESCAPES = {c: f"\\u00{c:02X}" for c in (*range(0x20), 0x7F)}
_JSON_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t"})


def _quote(s: str) -> str:
    """double_quote() of sql-common/json_dom.cc: the escapes above, every other character as is."""
    return '"' + s.translate(_JSON_ESCAPES) + '"'


_MAX_DECPT_FOR_F_FORMAT = 15  # DBL_DIG, include/m_string.h
_GCVT_WIDTH = 15 + 4 + max(5, _MAX_DECPT_FOR_F_FORMAT)  # MY_GCVT_MAX_FIELD_WIDTH


def format_double(x: float) -> str:
    """A double as MySQL prints it in JSON: ``my_gcvt(x, MY_GCVT_ARG_DOUBLE, MY_GCVT_MAX_FIELD_WIDTH)``
    (``strings/dtoa.cc``), then ``".0"`` when neither a point nor an exponent was written.

    >>> [format_double(v) for v in (1.5, 100.0, 1e100, -1e-10, 1e15, 0.1)]
    ['1.5', '100.0', '1e100', '-0.0000000001', '1e15', '0.1']
    """
    # dtoa mode 4 with 34 digits = the shortest round-trip digits, i.e. Python's repr
    mantissa, _, e = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    decpt = len(whole) + (int(e) if e else 0)  # value = 0.DIGITS * 10**decpt
    stripped = digits.lstrip("0")
    decpt -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    if digits == "0":
        decpt = 1
    n = len(digits)
    width = _GCVT_WIDTH - (x < 0)
    exp_len = 1 + (decpt >= 101 or decpt <= -99) + (decpt >= 11 or decpt <= -9)
    have_space = (n - decpt + 2 if decpt <= 0 else n + 1 if decpt < n else decpt) <= width
    force_e = decpt <= 0 and width <= 2 - decpt and width >= 3 + exp_len
    use_f = (
        have_space or (decpt <= width and (decpt >= -1 or (decpt == -2 and (n > 1 or not force_e))) and not force_e)
    ) and (
        not have_space or (decpt >= -_MAX_DECPT_FOR_F_FORMAT + 1 and (decpt <= _MAX_DECPT_FOR_F_FORMAT or n > decpt))
    )
    sign = "-" if str(x)[0] == "-" else ""
    if use_f:
        if decpt <= 0:
            text = "0." + "0" * -decpt + digits
        elif decpt < n:
            text = digits[:decpt] + "." + digits[decpt:]
        else:
            text = digits + "0" * (decpt - n)
    else:
        text = digits[0] + ("." + digits[1:] if n > 1 else "") + f"e{decpt - 1}"
    text = sign + text
    return text if "." in text or "e" in text else text + ".0"


def _key_order(key: str) -> tuple[int, bytes]:
    # json_binary stores object keys sorted by length, then bytes (Json_object's key comparator)
    raw = key.encode("utf-8")
    return len(raw), raw


def _print(value: object, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(format_double(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, key in enumerate(sorted(value, key=_key_order)):
            if i:
                out.append(", ")
            out.append(_quote(key))
            out.append(": ")
            _print(value[key], out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _print(item, out)
        out.append("]")
    elif isinstance(value, _Scalar):
        out.append(value.text)
    elif isinstance(value, Opaque):
        # wrapper_to_string, J_OPAQUE: "base64:typeNN:" and the base64 text, quoted (its newlines escaped)
        out.append(_quote(f"base64:type{value.field_type}:" + _base64(value.data)))
    else:
        raise TypeError(f"not a JSON value: {type(value).__name__}")


def dumps(value: object) -> str:
    """JSON text of a decoded tree, printed the way MySQL prints it."""
    out: list[str] = []
    _print(value, out)
    return "".join(out)


def to_text(doc: bytes) -> str:
    """MySQL's JSON text of a binary JSON document (the converter of JSON columns)."""
    return dumps(decode(doc))


# ----------------------------------------------------------------------------------------------- encoding


def encode(value: object) -> bytes:
    """Binary JSON of a Python value, laid out like ``json_binary::serialize`` (small containers when they fit).

    Used to build test documents and by nothing in the decoder; ints outside int64/uint64 are refused.
    """
    kind, data = _encode_value(value)
    return bytes([kind]) + data


def _encode_value(value: object) -> tuple[int, bytes]:
    if value is None or isinstance(value, bool):
        return LITERAL, bytes([0 if value is None else 1 if value else 2])
    if isinstance(value, int):
        for kind in (INT16, INT32, INT64, UINT64):
            s = _SCALARS[kind]
            try:
                return kind, s.pack(value)
            except struct.error:
                continue
        raise ValueError(f"integer {value} does not fit JSON's 64 bits")
    if isinstance(value, float):
        return DOUBLE, _F64.pack(value)
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return STRING, _encode_varlen(len(raw)) + raw
    if isinstance(value, Opaque):
        return OPAQUE, bytes([value.field_type]) + _encode_varlen(len(value.data)) + value.data
    if isinstance(value, dict | list):
        small = _encode_container(value, large=False)
        return small if small is not None else _encode_container(value, large=True)  # type: ignore[return-value]
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def _encode_varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _encode_container(value: dict[str, object] | list[object], large: bool) -> tuple[int, bytes] | None:
    word = _U32 if large else _U16
    w = word.size
    is_object = isinstance(value, dict)
    keys = sorted(value, key=_key_order) if isinstance(value, dict) else []
    items = [value[k] for k in keys] if isinstance(value, dict) else list(value)
    header = 2 * w + len(items) * (1 + w) + (len(keys) * (w + 2) if is_object else 0)
    key_bytes = [k.encode("utf-8") for k in keys]
    body = bytearray()
    key_entries = bytearray()
    offset = header
    for raw in key_bytes:
        if offset >= 1 << (8 * w):
            return None
        key_entries += word.pack(offset) + _U16.pack(len(raw))
        offset += len(raw)
        body += raw
    value_entries = bytearray()
    for item in items:
        kind, data = _encode_value(item)
        if kind == LITERAL or kind in (INT16, UINT16) or (large and kind in (INT32, UINT32)):
            value_entries += bytes([kind]) + data.ljust(w, b"\0")
            continue
        if offset >= 1 << (8 * w):
            return None
        value_entries += bytes([kind]) + word.pack(offset)
        body += data
        offset += len(data)
    size = header + len(body)
    if size >= 1 << (8 * w) or (not large and len(items) >= 1 << 16):
        return None
    kind = (LARGE_OBJECT if large else SMALL_OBJECT) if is_object else (LARGE_ARRAY if large else SMALL_ARRAY)
    return kind, word.pack(len(items)) + word.pack(size) + bytes(key_entries) + bytes(value_entries) + bytes(body)


# ----------------------------------------------------------------------------------------------- JSON diffs


class JsonDiffOperation(enum.IntEnum):
    """``enum_json_diff_operation`` (``sql/json_diff.h``)."""

    REPLACE = 0
    INSERT = 1
    REMOVE = 2


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One change of a partial JSON update: ``operation`` at ``path`` (a MySQL JSON path such as ``$.a[1]``)
    with ``value`` (binary JSON; ``None`` for REMOVE)."""

    operation: JsonDiffOperation
    path: str
    value: bytes | None


def parse_json_diffs(buf: bytes, pos: int, end: int) -> list[JsonDiff]:
    """The diffs in ``buf[pos:end]`` (``Json_diff_vector::read_binary`` in ``sql/json_diff.cc``, after the
    4-byte length): per diff an operation byte, a packed-length path, and unless REMOVE a packed-length value.

    >>> parse_json_diffs(b"\\x02\\x03$.a", 0, 5)
    [JsonDiff(operation=<JsonDiffOperation.REMOVE: 2>, path='$.a', value=None)]
    """
    if end > len(buf):
        raise MalformedError("JSON diff: runs past the end of the row")
    diffs: list[JsonDiff] = []
    while pos < end:
        op = buf[pos]
        if op > 2:
            raise MalformedError(f"JSON diff: unknown operation {op}", offset=pos)
        n, pos = read_packed_int(buf, pos + 1, end)
        if n is None or pos + n > end:
            raise MalformedError("JSON diff: path runs past the end of the diff", offset=pos)
        try:
            path = buf[pos : pos + n].decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedError("JSON diff: path is not UTF-8", offset=pos) from None
        pos += n
        value = None
        if op != JsonDiffOperation.REMOVE:
            n, pos = read_packed_int(buf, pos, end)
            if n is None or pos + n > end:
                raise MalformedError("JSON diff: value runs past the end of the diff", offset=pos)
            value = bytes(buf[pos : pos + n])
            pos += n
        diffs.append(JsonDiff(JsonDiffOperation(op), path, value))
    return diffs


_LEG = re.compile(r'\s*(?:\.\s*(?:([A-Za-z_$][\w$]*)|("(?:[^"\\]|\\.)*"))|\[\s*(last(?:\s*-\s*\d+)?|\d+)\s*\])')


def _parse_path(path: str) -> list[str | int | tuple[str, int]]:
    """Legs of a simple JSON path: member names, array indexes, ``("last", n)`` for ``[last-n]``."""
    text = path.strip()
    if not text.startswith("$"):
        raise MalformedError(f"JSON diff: path {path!r} does not start with $")
    legs: list[str | int | tuple[str, int]] = []
    pos = 1
    while pos < len(text):
        m = _LEG.match(text, pos)
        if m is None:
            raise MalformedError(f"JSON diff: cannot parse path {path!r}")
        name, quoted, index = m.groups()
        if name is not None:
            legs.append(name)
        elif quoted is not None:
            legs.append(json.loads(quoted))
        elif index.startswith("last"):
            legs.append(("last", int(index[4:].replace("-", "").strip() or 0)))
        else:
            legs.append(int(index))
        pos = m.end()
    return legs


def _index(leg: int | tuple[str, int], size: int) -> int:
    return size - 1 - leg[1] if isinstance(leg, tuple) else leg


def apply_json_diffs(doc: bytes | str, diffs: list[JsonDiff]) -> str:
    """Apply ``diffs`` in order to ``doc`` (binary JSON, or JSON text) and print the result as MySQL does.

    Follows ``apply_json_diffs`` of ``sql/json_diff.cc``: REPLACE needs an existing target; INSERT adds an
    object member or inserts into an array (appending past its end); REMOVE deletes the target.  A diff that
    does not fit the document is a :class:`MalformedError`.

    >>> apply_json_diffs('{"a": [1, 2]}', [JsonDiff(JsonDiffOperation.INSERT, "$.a[1]", encode(9))])
    '{"a": [1, 9, 2]}'
    """
    # numbers of a text document keep their printed form (MySQL printed them already)
    root: object = decode(doc) if isinstance(doc, bytes) else json.loads(doc, parse_float=_Scalar)
    for diff in diffs:
        legs = _parse_path(diff.path)
        value = None if diff.value is None else decode(diff.value)
        if not legs:
            if diff.operation != JsonDiffOperation.REPLACE:
                raise MalformedError(f"JSON diff: {diff.operation.name} of the whole document")
            root = value
            continue
        parent = root
        for leg in legs[:-1]:
            parent = _step(parent, leg, diff.path)
        _change(parent, legs[-1], diff, value)
    return dumps(root)


def _step(node: object, leg: str | int | tuple[str, int], path: str) -> object:
    if isinstance(leg, str):
        if isinstance(node, dict) and leg in node:
            return node[leg]
    elif isinstance(node, list):
        i = _index(leg, len(node))
        if 0 <= i < len(node):
            return node[i]
    raise MalformedError(f"JSON diff: path {path!r} does not exist in the document")


def _change(parent: object, leg: str | int | tuple[str, int], diff: JsonDiff, value: object) -> None:
    op = diff.operation
    if isinstance(leg, str) and isinstance(parent, dict):
        if op == JsonDiffOperation.INSERT:
            if leg in parent:
                raise MalformedError(f"JSON diff: INSERT of existing member {diff.path!r}")
            parent[leg] = value
            return
        if leg in parent:
            if op == JsonDiffOperation.REPLACE:
                parent[leg] = value
            else:
                del parent[leg]
            return
    elif not isinstance(leg, str) and isinstance(parent, list):
        i = _index(leg, len(parent))
        if op == JsonDiffOperation.INSERT and i >= 0:
            parent.insert(min(i, len(parent)), value)
            return
        if 0 <= i < len(parent):
            if op == JsonDiffOperation.REPLACE:
                parent[i] = value
            else:
                del parent[i]
            return
    raise MalformedError(f"JSON diff: {op.name} at {diff.path!r} does not fit the document")


# ----------------------------------------------------------------------------------------------- registry


def _reader(col: Column) -> Reader:
    return length_prefixed(col.length or 0, "JSON")


def _converter(col: Column) -> Converter:
    return to_text  # type: ignore[return-value]


def _render(col: Column, value: object) -> str:
    # mysqlbinlog (sql/log_event.cc, MYSQL_TYPE_JSON) prints the JSON text through my_b_write_quoted
    return render_quoted(to_text(value).encode("utf-8"))  # type: ignore[arg-type]


READERS: dict[int, Callable[[Column], Reader]] = {T.JSON: _reader}
CONVERTERS: dict[int, Callable[[Column], Converter | None]] = {T.JSON: _converter}
RENDER: dict[int, Callable[[Column, object], str]] = {T.JSON: _render}
