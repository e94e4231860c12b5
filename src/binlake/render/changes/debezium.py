"""Debezium change events as JSON lines: the envelope and value encodings of the Debezium MySQL and MariaDB
connectors (3.x) through Kafka Connect's JSON converter (``schemas.enable=false``, ``decimal.format=BASE64``) with
transaction metadata on, and the connector's value settings under their names (:class:`ValueModes`;
``decimal.handling.mode``, ``bigint.unsigned.handling.mode``, ``time.precision.mode``, ``binary.handling.mode``),
each by default the connector's own, so a consumer written for a stock connector reads these lines unchanged.

Envelope (``io.debezium.data.Envelope``, fields in schema order, which the JSON converter keeps)::

    {"before": {...} | null, "after": {...} | null,
     "source": {"version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns", "table",
                "server_id", "gtid", "file", "pos", "row", "thread", "query"},
     "transaction": {"id", "total_order", "data_collection_order"},
     "op": "c" | "u" | "d", "ts_ms", "ts_us", "ts_ns"}

* ``source``: ``connector`` is ``mariadb`` or ``mysql`` (the format description's server); ``version`` is
  binlake's version; ``name`` the logical name (``--name``, Debezium's ``topic.prefix``); ``ts_ms`` the change's
  time: MySQL's original commit time of its transaction where the GTID event logs it, else the rows event's
  second (as the connectors take them); ``snapshot`` is ``"false"`` (the schema's default: binlake reads logs, it
  takes no snapshot, so ``op`` is never ``r``); ``gtid`` the transaction's; ``pos`` the rows event's position
  (a MySQL compressed transaction's: its TRANSACTION_PAYLOAD's); ``row`` the row's index in its event;
  ``thread`` the session's thread id where the binlog logs it (a ``BEGIN`` or statement QUERY event, a MariaDB
  11 GTID), else ``null``; ``query`` the ROWS_QUERY or ANNOTATE_ROWS text.
* ``transaction``: ``id`` is the GTID, or ``file=F,pos=P`` (its ``BEGIN``) without one; ``total_order`` counts
  the transaction's change events written, ``data_collection_order`` those of the same table (both from 1).
* Top-level ``ts_ms`` is, in Debezium, the time the connector processed the event.  binlake writes the change's
  own time (``source.ts_ms``), so the same binlog gives the same lines; :class:`DebeziumOptions` ``processing_time``
  writes the clock's time instead.
* An UPDATE stays one ``u`` event when it changes the primary key (Debezium emits ``d``, a tombstone and ``c``
  with Kafka headers, which a line of JSON has no place for); TRUNCATE is not written (``op`` ``t`` is skipped by
  Debezium's default ``skipped.operations``).
* A MySQL partial JSON update (``binlog_row_value_options=PARTIAL_JSON``) logs the change of the document, not
  the document: Debezium does not read these (its documentation asks for the option off); binlake leaves the
  column out of ``after``, as it leaves out what a MINIMAL image does not log (``--format sql`` replays the change).

Values (:func:`value_encoder`; ``docs/formats/debezium.md`` lists every type and mode): integers as numbers; BIGINT
UNSIGNED as a number (``long``: values of 2^63 and above wrap to negative, as the connector's ``long`` does) or as
Connect's ``Decimal`` (``precise``: base64 of ``BigInteger.toByteArray()``); DECIMAL as Connect's ``Decimal``
(``precise``: base64 of the unscaled value's big-endian two's-complement bytes at the column's scale), as a double
(``double``) or as its exact text (``string``); FLOAT/DOUBLE as Java prints them (``1.0E10``); BIT(1) as a boolean and
BIT(n) as base64 of its little-endian bytes; DATE as days since the epoch; TIME as microseconds (negative and past
24 h kept; ``connect``: Connect's ``Time``, milliseconds of the day, ``null`` outside 00:00:00-24:00:00, which it
cannot hold); DATETIME(0-3) as epoch milliseconds and DATETIME(4-6) as epoch microseconds (``connect``: all
milliseconds); TIMESTAMP as an ISO-8601 UTC string with the column's fraction digits (every mode); YEAR as a
number (the zero year is 1900: Debezium's binlog reader adds 1900 to the stored byte); zero and partial dates as
``null`` (or the epoch where the column is NOT NULL); CHAR and TEXT as strings; BINARY/BLOB (BINARY padded to its
length) as base64 (``bytes``, ``base64``), URL-safe base64 (``base64-url-safe``) or lower-case hex (``hex``); ENUM
as its member, SET as its members in definition order joined by ``,``, JSON as its text, GEOMETRY as ``{"wkb",
"srid"}`` and POINT as ``{"x", "y", "wkb", "srid"}`` (an SRID of 0 is ``null``).  A column a MINIMAL or NOBLOB
image does not carry is left out of ``before``/``after``; SQL NULL is ``null``.

Speed: :meth:`DebeziumEncoder.encode` writes a rows event whose columns the compiled writer takes (integers,
DECIMAL but as doubles, BIT, YEAR, the MySQL 5.6+ temporal layouts, UTF-8 text, binary strings:
``binlake._speedups.JsonPlan``, one per table layout, change kind and columns present) straight from its stored
bytes, the same bytes the Python writer writes (tested on every corpus binlog and the workloads' every type, in
every mode).  The Python writer
(:meth:`DebeziumEncoder.transaction`, and the rest) gets one generated function per layout that writes a row's JSON
object in a single f-string, calling a helper only for the types that need one (numbers and strings are formatted
inline; strings are escaped by the json module's C encoder).

Example::

    modes = ValueModes.parse([("decimal.handling.mode", "string")])   # or ValueModes.parse_text("KEY=VALUE,...")
    encoder = DebeziumEncoder(DebeziumOptions(name="shop", modes=modes))
    for trx in ChangeStream(FileSource(paths)):
        out.write(encoder.encode(trx))          # bytes; encoder.transaction(trx): the lines as str
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import time
import uuid
from binascii import b2a_base64
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from json.encoder import encode_basestring  # the C escaper of json.dumps(ensure_ascii=False)
from typing import TYPE_CHECKING

from binlake.changes.records import Change, RowsChange, TableInfo, Transaction
from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError
from binlake.render.changes.plans import INT_SIZES, STRINGS, UTF8, PlanCache
from binlake.render.changes.plans import speedups as _speedups
from binlake.rowdecoder import fixed_kinds
from binlake.values import collations
from binlake.values.row import ABSENT
from binlake.values.spatial import Geometry
from binlake.values.strings import length_bytes

__all__ = [
    "LEGACY_MODES",
    "SETTINGS",
    "DebeziumEncoder",
    "DebeziumOptions",
    "SourceInfo",
    "ValueModes",
    "java_double",
    "java_float",
    "value_encoder",
]

T = ColumnType
_E = encode_basestring
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_US_PER_DAY = 86_400_000_000
_OPS = {"insert": "c", "update": "u", "delete": "d"}
_UPPER_ESCAPE = re.compile(r"\\(\\|u00([0-9a-f]{2}))")
_INTEGERS = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.YEAR})


SETTINGS: dict[str, tuple[str, ...]] = {
    "decimal.handling.mode": ("precise", "double", "string"),
    "bigint.unsigned.handling.mode": ("long", "precise"),
    "time.precision.mode": ("adaptive_time_microseconds", "connect"),
    "binary.handling.mode": ("bytes", "base64", "base64-url-safe", "hex"),
}
"""The Debezium MySQL/MariaDB connector settings binlake takes, under their names, with the values it takes; the
first is the connector's default and binlake's (``RelationalDatabaseConnectorConfig`` / ``BinlogConnectorConfig``).
``time.precision.mode`` ``isostring``, ``structured``, ``microseconds`` and ``nanoseconds`` are not written."""


@dataclass(frozen=True, slots=True)
class ValueModes:
    """How values are written: the connector settings of :data:`SETTINGS` (``decimal`` is
    ``decimal.handling.mode``, and so on); the defaults are the connector's, so a consumer written for a stock
    connector reads the lines unchanged (what binlake wrote before: :data:`LEGACY_MODES`)."""

    decimal: str = "precise"
    bigint_unsigned: str = "long"
    time_precision: str = "adaptive_time_microseconds"
    binary: str = "bytes"

    def __post_init__(self) -> None:
        for key, value in self.settings().items():
            if value not in SETTINGS[key]:
                raise BinlogError(f"{key} is one of {', '.join(SETTINGS[key])}, not {value!r}")

    def settings(self) -> dict[str, str]:
        """The modes under the connector's names, in :data:`SETTINGS`' order."""
        values = (self.decimal, self.bigint_unsigned, self.time_precision, self.binary)
        return dict(zip(SETTINGS, values, strict=True))

    def text(self) -> str:
        """The settings as ``KEY=VALUE,...`` (what :meth:`parse_text` reads back)."""
        return ",".join(f"{k}={v}" for k, v in self.settings().items())

    @classmethod
    def parse(cls, settings: Iterable[tuple[str, str]]) -> ValueModes:
        """The modes of ``(name, value)`` settings (names and values in any case; a later one wins), the rest the
        connector's defaults: the one parser of ``--debezium-option`` and the Spark source's options.  Raises
        :class:`~binlake.errors.BinlogError` naming what is wrong for a name or value binlake does not take."""
        chosen = dict(zip(SETTINGS, (values[0] for values in SETTINGS.values()), strict=True))
        for name, value in settings:
            key = name.strip().lower()
            if key not in SETTINGS:
                raise BinlogError(f"unknown Debezium option {name!r}: binlake takes {', '.join(SETTINGS)}")
            chosen[key] = value.strip().lower()
        return cls(*chosen.values())

    @classmethod
    def parse_text(cls, texts: Iterable[str]) -> ValueModes:
        """The modes of ``KEY=VALUE[,KEY=VALUE...]`` texts (``--debezium-option``, given any number of times)."""
        pairs: list[tuple[str, str]] = []
        for text in texts:
            for item in text.split(","):
                name, eq, value = item.partition("=")
                if not eq or not name.strip():
                    raise BinlogError(
                        f"a Debezium option is KEY=VALUE (e.g. decimal.handling.mode=string), not {item!r}"
                    )
                pairs.append((name, value))
        return cls.parse(pairs)


LEGACY_MODES = ValueModes(decimal="string", bigint_unsigned="precise")
"""What binlake wrote before the connector's settings were offered (DECIMAL as text, BIGINT UNSIGNED as a
Connect ``Decimal``); ``--debezium-option decimal.handling.mode=string,bigint.unsigned.handling.mode=precise``."""


@dataclass(frozen=True, slots=True)
class DebeziumOptions:
    """``name``: the logical server name (Debezium's ``topic.prefix``); ``processing_time``: top-level ``ts_ms`` is
    the clock's time when the line is written (Debezium's meaning) instead of the change's own time; ``modes``: how
    values are written (:class:`ValueModes`)."""

    name: str = "binlake"
    processing_time: bool = False
    modes: ValueModes = ValueModes()


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """What the ``source`` block says about one rows event (the rows of the event differ only in ``row``)."""

    connector: str
    db: str
    table: str
    ts_us: int
    server_id: int
    gtid: str | None
    file: str
    pos: int
    thread: int | None
    query: str | None


# -- Java's number text -------------------------------------------------------------------------------------------


def _java_text(digits: str, exp10: int, negative: bool) -> str:
    """Java's ``Double.toString`` layout of the decimal ``0.digits × 10^exp10``: plain between 10^-3 and 10^7
    (at least one fraction digit), else ``d.dddE±n``."""
    sign = "-" if negative else ""
    if -2 <= exp10 <= 7:  # 10^-3 <= |x| < 10^7
        if exp10 <= 0:
            return f"{sign}0.{'0' * -exp10}{digits}"
        whole, frac = digits[:exp10].ljust(exp10, "0"), digits[exp10:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp10 - 1}"


def _shortest(x: float, text: str) -> tuple[str, int]:
    """The significant digits and the exponent (``0.digits × 10^exp``) of ``text``, a shortest repr of ``x``."""
    d = Decimal(text).normalize()
    _, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    s = "".join(map(str, digits))
    return s, len(s) + exponent


def java_double(x: float) -> str:
    """``Double.toString(x)`` (JDK 19+: the shortest decimal that reads back as ``x``, of two digits at least, the
    nearest to ``x`` among those), as Jackson writes a double.

    >>> java_double(1e10), java_double(0.001), java_double(1e-4), java_double(-0.0), java_double(100.0)
    ('1.0E10', '0.001', '1.0E-4', '-0.0', '100.0')
    """
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    digits, exp = _shortest(abs(x), repr(abs(x)))
    if len(digits) == 1:  # Java prints two digits at least: then the two-digit decimal nearest to x
        two = f"{abs(x):.1e}"
        if float(two) == abs(x):
            digits, exp = _shortest(abs(x), two)
    return _java_text(digits, exp, x < 0)


_F32 = struct.Struct("<f")


def java_float(x: float) -> str:
    """``Float.toString`` of a single-precision value (given widened to a double): the shortest decimal that reads
    back as the same float32.

    >>> java_float(0.1000000014901161), java_float(3.4028234663852886e38), java_float(1.0)
    ('0.1', '3.4028235E38', '1.0')
    """
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    target = _F32.pack(abs(x))
    for p in range(1, 10):
        text = f"{abs(x):.{p}g}"
        try:
            if _F32.pack(float(text)) == target:
                break
        except OverflowError:  # rounded past the largest float
            continue
    digits, exp = _shortest(abs(x), text)
    if len(digits) == 1:  # as Double.toString: two digits at least, the nearest to x when that reads back
        two = f"{abs(x):.1e}"
        if _F32.pack(float(two)) == target:
            digits, exp = _shortest(abs(x), two)
    return _java_text(digits, exp, x < 0)


# -- values ---------------------------------------------------------------------------------------------------------


_json_str: Callable[[str], str] = _E
"""A JSON string (control characters as ``\\u00xx``: :func:`_upper_escapes` makes them Jackson's)."""


def _upper_escapes(line: str) -> str:
    """Jackson writes the ``\\u00XX`` escapes of control characters in upper case; the json module in lower."""
    if "\\u00" not in line:
        return line
    return _UPPER_ESCAPE.sub(lambda m: m.group(0) if m.group(2) is None else "\\u00" + m.group(2).upper(), line)


def _b64(raw: bytes) -> str:
    return '"' + b2a_base64(raw, newline=False).decode("ascii") + '"'


_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def _binary_writer(mode: str) -> Callable[[bytes], str]:
    """The JSON of a binary column's bytes in ``binary.handling.mode`` ``mode``: ``bytes`` (Connect BYTES, which the
    JSON converter writes as base64) and ``base64`` alike, ``base64-url-safe`` as Java's URL encoder (padded),
    ``hex`` as ``HexConverter`` (lower case)."""
    if mode == "hex":
        return lambda raw: '"' + raw.hex() + '"'
    if mode == "base64-url-safe":
        return lambda raw: '"' + b2a_base64(raw, newline=False).translate(_URL_SAFE).decode("ascii") + '"'
    return _b64


def _connect_decimal(n: int) -> str:
    """Connect's ``Decimal`` of the unscaled integer ``n`` through the JSON converter (``decimal.format=BASE64``):
    base64 of ``BigInteger.toByteArray()``, the fewest big-endian two's-complement bytes with a sign bit."""
    return _b64(n.to_bytes((n if n >= 0 else ~n).bit_length() // 8 + 1, "big", signed=True))


def _decimal(v: Decimal) -> str:
    """``BigDecimal.toPlainString()``: exact, with the column's scale, no exponent, no negative zero."""
    if not v:
        v = abs(v)
    return '"' + format(v, "f") + '"'


def _precise_decimal(v: Decimal) -> str:
    """Connect's ``Decimal`` of a DECIMAL value: its unscaled integer at its scale (the reader gives every value
    the column's scale, as the binlog client gives the connector its ``BigDecimal``)."""
    sign, digits, _ = v.as_tuple()
    unscaled = int("".join(map(str, digits)))
    return _connect_decimal(-unscaled if sign else unscaled)


def _double_decimal(v: Decimal) -> str:
    """``BigDecimal.doubleValue()`` (the nearest double; a BigDecimal has no negative zero) as Jackson writes it."""
    return java_double(float(v) if v else 0.0)


def _epoch_day(v: object, fallback: str) -> str:
    if isinstance(v, dt.date):
        return str(v.toordinal() - _EPOCH_ORDINAL)
    return fallback


_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_ONE_US = dt.timedelta(microseconds=1)
_ONE_MS = dt.timedelta(milliseconds=1)


def _text_value(v: object) -> str:
    """A text column's value: ``str``; bytes invalid in its charset read as Java's decoder reads them (U+FFFD)."""
    if isinstance(v, str):
        return _json_str(v)
    assert isinstance(v, bytes | bytearray)
    return _json_str(bytes(v).decode("utf-8", "replace"))


def _uuid(v: object) -> str:
    """MariaDB's UUID type (BINARY(16) in the binlog) as Debezium's MariaDB connector writes it."""
    raw = bytes(v) if isinstance(v, bytes | bytearray) else b""
    return '"' + str(uuid.UUID(bytes=raw)) + '"' if len(raw) == 16 else _b64(raw)


def _geometry(v: Geometry, point: bool) -> str:
    srid = "null" if not v.srid else str(v.srid)
    if point and len(v.wkb) == 21:  # Debezium's Point: its coordinates too (a POINT column's value is one)
        x, y = struct.unpack("<dd" if v.wkb[0] == 1 else ">dd", v.wkb[5:21])
        return f'{{"x":{java_double(x)},"y":{java_double(y)},"wkb":{_b64(v.wkb)},"srid":{srid}}}'
    return f'{{"wkb":{_b64(v.wkb)},"srid":{srid}}}'


_DEFAULT_MODES = ValueModes()
_TWO_63 = 1 << 63


def value_encoder(
    col: Column, type_name: str | None = None, modes: ValueModes = _DEFAULT_MODES
) -> Callable[[object], str] | None:
    """The function writing a non-NULL value of ``col`` (typed, :mod:`binlake.values`) as Debezium's JSON in
    ``modes``, or ``None`` where ``str(value)`` is already that (integers).  ``type_name``: the column's declared
    type from its DDL (lower case), which tells BOOLEAN, POINT and UUID columns apart from what their table map
    logs."""
    real = col.real_type_code
    nullable = col.nullable
    if real in _INTEGERS:
        if real == T.YEAR:
            return lambda v: "1900" if v == 0 else str(v)
        if type_name in ("bool", "boolean") and real == T.TINY:
            return lambda v: "true" if v else "false"
        if real == T.LONGLONG and col.unsigned:
            if modes.bigint_unsigned == "precise":
                return lambda v: _connect_decimal(v)  # type: ignore[arg-type]
            return lambda v: str(v - (1 << 64) if v >= _TWO_63 else v)  # type: ignore[operator]
        return None
    if real in (T.NEWDECIMAL, T.DECIMAL):
        if modes.decimal == "precise":
            return _precise_decimal  # type: ignore[return-value]
        if modes.decimal == "double":
            return _double_decimal  # type: ignore[return-value]
        return _decimal  # type: ignore[return-value]
    if real == T.FLOAT:
        return java_float  # type: ignore[return-value]
    if real == T.DOUBLE:
        return java_double  # type: ignore[return-value]
    if real == T.BIT:
        if (col.bits or 1) == 1:
            return lambda v: "true" if v else "false"
        size = ((col.bits or 1) + 7) // 8
        return lambda v: _b64(v.to_bytes(size, "little"))  # type: ignore[attr-defined]
    if real in (T.DATE, T.NEWDATE):
        fallback = "null" if nullable else "0"
        return lambda v: _epoch_day(v, fallback)
    connect = modes.time_precision == "connect"
    if real in (T.TIME, T.TIME2):
        if connect:
            return _connect_time
        return lambda v: str((v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds)  # type: ignore[attr-defined]
    if real in (T.DATETIME, T.DATETIME2):
        fallback = "null" if nullable else "0"
        if (col.fsp or 0) <= 3 or connect:
            return lambda v: str((v - _EPOCH_NAIVE) // _ONE_MS) if v.__class__ is dt.datetime else fallback
        return lambda v: str((v - _EPOCH_NAIVE) // _ONE_US) if v.__class__ is dt.datetime else fallback
    if real in (T.TIMESTAMP, T.TIMESTAMP2):
        fsp = col.fsp or 0
        zero = "null" if nullable else '"1970-01-01T00:00:00Z"'

        def timestamp(v: object) -> str:
            if not isinstance(v, dt.datetime):
                return zero
            frac = f".{v.microsecond:06d}"[: fsp + 1] if fsp else ""
            return f'"{v:%Y-%m-%dT%H:%M:%S}{frac}Z"'

        return timestamp
    if real == T.ENUM:
        return lambda v: _json_str(v) if isinstance(v, str) else str(v)
    if real == T.SET:
        members = col.set_values
        if members is None:
            return None
        return lambda v: _json_str(",".join(m for m in members if m in v))  # type: ignore[operator]
    if real == T.GEOMETRY:
        point = type_name == "point" or col.geometry_type == 1
        return lambda v: _geometry(v, point)  # type: ignore[arg-type]
    if real == T.VECTOR:
        return lambda v: "[" + ",".join(java_float(x) for x in v) + "]"  # type: ignore[attr-defined]
    if type_name == "uuid" and real == T.STRING:
        return _uuid
    if _binary(col):
        write = _binary_writer(modes.binary)
        return lambda v: write(bytes(v)) if isinstance(v, bytes | bytearray) else _json_str(str(v))
    return _text_value


def _connect_time(v: object) -> str:
    """Connect's ``Time`` of a TIME value: milliseconds of the day; a value outside 00:00:00-24:00:00 has none
    (``Time.toMilliOfDay`` refuses it, and the connector's default ``event.converting.failure.handling.mode=warn``
    writes ``null``)."""
    assert isinstance(v, dt.timedelta)
    us = (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds
    return "null" if us < 0 or us > _US_PER_DAY else str(us // 1000)


def _binary(col: Column) -> bool:
    """Is a string column's value bytes (base64)?  Whatever its charset, known or not, does not make text
    (:attr:`Column.is_text <binlake.coltypes.Column.is_text>`: the lake's and the SQL output's rule too)."""
    return col.is_character and not col.is_text


# -- rows -----------------------------------------------------------------------------------------------------------

RowFn = Callable[["tuple[object, ...] | None"], str]


def _row_function(info: TableInfo, present: Sequence[bool], modes: ValueModes) -> RowFn:
    """The generated writer of one image's JSON object for ``info``'s layout with ``present`` columns."""
    ddl = info.ddl.columns if info.ddl is not None else None
    env: dict[str, object] = {"_E": _E, "_text": _text_value, "_json_str": _json_str}
    parts: list[str] = []
    lines = ["def row(r):", "    if r is None:", "        return 'null'"]
    first = True
    for i, (col, name) in enumerate(zip(info.columns, info.names, strict=True)):
        if not present[i]:
            continue
        key = ("{" if first else ",") + _json_str(name) + ":"
        first = False
        env[f"_k{i}"] = key
        enc = value_encoder(col, ddl[i].type_name if ddl is not None else None, modes)
        if enc is None:
            expr = f"v{i}"
        elif enc is _text_value:
            expr = f"_E(v{i}) if v{i}.__class__ is str else _text(v{i})"
        else:
            env[f"_c{i}"] = enc
            expr = f"_c{i}(v{i})"
        lines.append(f"    v{i} = r[{i}]")
        parts.append(f"{{_k{i}}}{{'null' if v{i} is None else {expr}}}")
    if first:
        return lambda r: "null" if r is None else "{}"
    lines.append(f'    return f"{"".join(parts)}}}}}"')
    lines[0] = f"def row(r, {', '.join(f'{k}={k}' for k in env)}):"  # constants as locals: the fastest loads
    exec("\n".join(lines), env)
    fn: RowFn = env["row"]  # type: ignore[assignment]
    return fn


class DebeziumEncoder:
    """Writes Debezium JSON lines (module docstring); one encoder per output, it keeps the generated row writers."""

    def __init__(self, options: DebeziumOptions | None = None) -> None:
        from binlake.version import __version__

        self.options = options or DebeziumOptions()
        self._head = f'"source":{{"version":{_json_str(__version__)},"connector":'
        self._name = _json_str(self.options.name)
        self._rows: dict[tuple[int, bytes], tuple[TableInfo, RowFn]] = {}
        modes = self.options.modes
        self.plans: PlanCache[JsonPlan] = PlanCache(lambda item, before, after: _json_plan(item, before, after, modes))
        self.counts: Counter[str] = Counter()
        """Row changes :meth:`encode` has written, per operation (``insert``, ``update``, ``delete``)."""

    def _writer(self, info: TableInfo, image: tuple[object, ...]) -> RowFn:
        present = tuple(v is not ABSENT for v in image)
        key = (id(info), bytes(present))
        hit = self._rows.get(key)
        if hit is None or hit[0] is not info:
            if len(self._rows) >= 4096:
                self._rows.clear()
            hit = self._rows[key] = (info, _row_function(info, present, self.options.modes))
        return hit[1]

    def _frame(self, kind: str, src: SourceInfo) -> tuple[str, str, str]:
        """The text around a rows event's objects: ``source`` up to ``"row":``, the rest of ``source``, and the
        line's end after the transaction block (``op``, the top-level times, the newline)."""
        ts_us = src.ts_us
        when_us = time.time_ns() // 1000 if self.options.processing_time else ts_us
        source = (
            f'{self._head}{_json_str(src.connector)},"name":{self._name},"ts_ms":{ts_us // 1000},'
            f'"snapshot":"false","db":{_json_str(src.db)},"sequence":null,"ts_us":{ts_us},'
            f'"ts_ns":{ts_us * 1000},"table":{_json_str(src.table)},"server_id":{src.server_id},'
            f'"gtid":{"null" if src.gtid is None else _json_str(src.gtid)},"file":{_json_str(src.file)},'
            f'"pos":{src.pos},"row":'
        )
        after_row = (
            f',"thread":{"null" if src.thread is None else src.thread},'
            f'"query":{"null" if src.query is None else _json_str(src.query)}}}'
        )
        tail = f',"op":"{_OPS[kind]}","ts_ms":{when_us // 1000},"ts_us":{when_us},"ts_ns":{when_us * 1000}}}\n'
        return source, after_row, tail

    def rows(
        self,
        info: TableInfo,
        kind: str,
        changes: Iterable[Change],
        src: SourceInfo,
        txn_id: str | None,
        orders: tuple[int, int] | None,
    ) -> list[str]:
        """The lines of one rows event's changes (typed images), each ending in a newline.  ``orders``: the
        ``total_order`` and ``data_collection_order`` of its first row, minus one (``None``: no transaction
        block, as without Debezium's transaction metadata)."""
        source, after_row, tail = self._frame(kind, src)
        txn = "null" if txn_id is None else _json_str(txn_id)
        if not isinstance(changes, list):
            changes = list(changes)
        if not changes:
            return []
        before0, after0 = changes[0]  # every row of an event has the same columns present
        w_before = self._writer(info, before0) if before0 is not None else _null
        w_after = self._writer(info, after0) if after0 is not None else _null
        total, mine = orders if orders is not None else (0, 0)
        out: list[str] = []
        for i, (before, after) in enumerate(changes):
            block = (
                "null"
                if orders is None
                else f'{{"id":{txn},"total_order":{total + i + 1},"data_collection_order":{mine + i + 1}}}'
            )
            line = (
                f'{{"before":{w_before(before)},"after":{w_after(after)},{source}{i}{after_row},'
                f'"transaction":{block}{tail}'
            )
            out.append(_upper_escapes(line))
        return out

    def transaction(self, trx: Transaction) -> list[str]:
        """Every line of a transaction's row changes, in order (the typed values through :func:`value_encoder`)."""
        out: list[str] = []
        orders = _Orders()
        txn_id = _txn_id(trx)
        for item, src in _events(trx):
            changes = _whole(item)
            out += self.rows(item.table, item.kind, changes, src, txn_id, orders.before(src))
            orders.add(src, len(changes))
        return out

    def encode(self, trx: Transaction) -> bytes:
        """:meth:`transaction`'s lines as UTF-8 (``surrogateescape``), the same bytes; the rows events of the
        layouts the compiled writer takes (``binlake._speedups.JsonPlan``) are written from their stored bytes."""
        out: list[bytes] = []
        orders = _Orders()
        txn_id = _txn_id(trx)
        txn = _upper_escapes(_json_str(txn_id)).encode("utf-8", "surrogateescape")
        for item, src in _events(trx):
            total, mine = orders.before(src)
            plan = None if item.event.partial else self.plans.get(item)
            if plan is not None:
                source, after_row, tail = (
                    _upper_escapes(s).encode("utf-8", "surrogateescape") for s in self._frame(item.kind, src)
                )
                done = plan.text(item.event.rows_data, source, after_row, txn, total, mine, tail)
                if done is not None:
                    out.append(done[0])
                    orders.add(src, done[1])
                    self.counts[item.kind] += done[1]
                    continue
            changes = _whole(item)
            lines = self.rows(item.table, item.kind, changes, src, txn_id, (total, mine))
            out.append("".join(lines).encode("utf-8", "surrogateescape"))
            orders.add(src, len(changes))
            self.counts[item.kind] += len(changes)
        return b"".join(out)

    @property
    def written(self) -> int:
        """Row changes :meth:`encode` has written."""
        return self.counts.total()


# -- the compiled writer (binlake._speedups.JsonPlan) -----------------------------------------------------------------

if TYPE_CHECKING:
    from binlake._speedups import JsonPlan
else:
    JsonPlan = getattr(_speedups, "JsonPlan", None)

_COMPILED_FIXED = frozenset({T.YEAR, T.BIT, T.DATE, T.NEWDATE, T.DATETIME2, T.TIMESTAMP2, T.TIME2, T.NEWDECIMAL})


_C_BINARY = {"bytes": 1, "base64": 1, "base64-url-safe": 2, "hex": 3}
"""The compiled writer's ``p2`` of a binary string per ``binary.handling.mode`` (0 is text)."""


def _c_json_column(col: Column, type_name: str | None, modes: ValueModes) -> tuple[int, int, int, int] | None:
    """The compiled writer's plan of one column, as :func:`value_encoder` writes it in ``modes``; ``None`` for a type
    it does not write (FLOAT, DOUBLE, DECIMAL as a double, ENUM, SET, JSON, spatial, UUID, VECTOR, text in charsets
    other than UTF-8, compressed columns, the old temporal layouts: the Python writer does)."""
    assert _speedups is not None
    real = col.real_type_code
    size = INT_SIZES.get(real)
    if size is not None:
        if real == T.TINY and type_name in ("bool", "boolean"):
            return (_speedups.K_INT, size, int(bool(col.unsigned)), 2)
        if size == 8 and col.unsigned and modes.bigint_unsigned == "long":
            return (_speedups.K_INT, size, 0, 0)  # read signed: Java's long
        return (_speedups.K_INT, size, int(bool(col.unsigned)), 1 if size == 8 and col.unsigned else 0)
    not_null = int(not col.nullable)
    if real in _COMPILED_FIXED:
        kind, params = fixed_kinds(_speedups)[real]
        p1, p2 = params(col)
        if real == T.BIT and p2 != (col.bits or 1):
            return None  # no width logged: the Python writer takes it for BIT(1)
        if real in (T.DATETIME2, T.TIMESTAMP2) and p1 != (col.fsp or 0):
            return None
        if real == T.NEWDECIMAL:  # p3: 1 Connect Decimal, 0 the text
            return None if modes.decimal == "double" else (kind, p1, p2, int(modes.decimal == "precise"))
        if real in (T.DATETIME2, T.TIME2):  # p2: 1 Connect's millisecond types
            return (kind, p1, int(modes.time_precision == "connect"), not_null)
        return (kind, p1, p2, not_null)
    if real not in STRINGS or type_name == "uuid":
        return None
    cs = collations.charset_name(col.charset) if col.charset is not None else None
    lb = length_bytes(col)
    if _binary(col):
        pad = col.length if col.charset == collations.BINARY and real == T.STRING and col.length else 0
        return (_speedups.K_STRING, lb, _C_BINARY[modes.binary], pad or 0)
    if cs in UTF8:  # UTF-8 text, or bytes invalid in it read as UTF-8 (the Python path for what is not UTF-8)
        return (_speedups.K_STRING, lb, 0, 0)
    return None


def _json_plan(item: RowsChange, before: bytes, after: bytes, modes: ValueModes) -> JsonPlan | None:
    """The compiled twin of :meth:`DebeziumEncoder.rows` for rows events of ``item``'s layout whose images hold the
    columns ``before`` and ``after`` flag, in ``modes`` (``None`` where it does not write every column, or the
    extension is not there)."""
    if JsonPlan is None:
        return None
    info, kind = item.table, item.kind
    ddl = info.ddl.columns if info.ddl is not None else None
    images: list[tuple[tuple[int, int, int, int], ...]] = []
    sides: list[tuple[tuple[bytes, int], ...] | None] = [None, None]
    spans = 0
    order = [(0, before), (1, after)] if kind == "update" else [(1, after)] if kind == "insert" else [(0, before)]
    for side, present in order:
        specs: list[tuple[int, int, int, int]] = []
        fields: list[tuple[bytes, int]] = []
        for i, here in enumerate(present):
            if not here:
                continue
            col = info.columns[i]
            spec = _c_json_column(col, ddl[i].type_name if ddl is not None else None, modes)
            if spec is None:
                return None
            key = ("{" if not fields else ",") + _upper_escapes(_json_str(info.names[i])) + ":"
            fields.append((key.encode("utf-8", "surrogateescape"), spans))
            specs.append(spec)
            spans += 1
        images.append(tuple(specs))
        sides[side] = tuple(fields)
    try:
        return JsonPlan(tuple(images), (sides[0], sides[1]))
    except ValueError:  # a length or precision the compiled writer does not take
        return None


def _whole(item: RowsChange) -> list[Change]:
    """The event's changes, the JSON columns a partial update logs as changes of their document (MySQL's
    ``PARTIAL_JSON``: lists of ``JsonDiff``) left out of its after images."""
    changes = item.rows()
    if not item.event.partial:
        return changes
    diffs = [i for i, c in enumerate(item.table.columns) if c.real_type_code == T.JSON]
    return [
        (
            before,
            None
            if after is None
            else tuple(ABSENT if i in diffs and type(v) is list else v for i, v in enumerate(after)),
        )
        for before, after in changes
    ]


def _txn_id(trx: Transaction) -> str:
    """``transaction.id``: the GTID, or ``file=F,pos=P`` (its ``BEGIN``) without one."""
    return trx.gtid if trx.gtid is not None else f"file={trx.file},pos={trx.begin_pos}"


def _events(trx: Transaction) -> Iterator[tuple[RowsChange, SourceInfo]]:
    """Each rows event of ``trx`` with its ``source``."""
    connector = trx.flavor or "mysql"
    for item in trx.items:
        if isinstance(item, RowsChange):
            info = item.table
            ts_us = trx.commit_us if trx.commit_us is not None else item.timestamp * 1_000_000
            src = SourceInfo(
                connector,
                info.schema,
                info.name,
                ts_us,
                item.server_id,
                trx.gtid,
                item.file,
                item.pos,
                trx.thread_id,
                item.query,
            )
            yield item, src


class _Orders:
    """``total_order`` and ``data_collection_order`` so far in one transaction."""

    __slots__ = ("per_table", "total")

    def __init__(self) -> None:
        self.total = 0
        self.per_table: dict[tuple[str, str], int] = {}

    def before(self, src: SourceInfo) -> tuple[int, int]:
        return self.total, self.per_table.get((src.db, src.table), 0)

    def add(self, src: SourceInfo, n: int) -> None:
        self.total += n
        key = (src.db, src.table)
        self.per_table[key] = self.per_table.get(key, 0) + n


def _null(_: object) -> str:
    return "null"
