"""A consumer written for stock Debezium, reading binlake's Debezium JSON back into binlake's Python values.

It knows only what the Debezium MySQL connector's documentation says ("Data type mappings": the literal and
semantic type of each MySQL type under each ``decimal.handling.mode``, ``bigint.unsigned.handling.mode``,
``time.precision.mode`` and ``binary.handling.mode``) and what Kafka Connect's JSON converter writes for each
Connect type (``BYTES`` and ``Decimal`` as base64, ``decimal.format=BASE64``; ``Date``/``Time``/``Timestamp`` as
their integers): :func:`schema` is that table, :func:`decode` reads a value by it, :func:`conforms` checks a JSON
value has its literal type.  :func:`carried` is what a mode keeps of a full value (a DECIMAL as a double, a
DATETIME(6) at milliseconds, a TIME outside a day as nothing), for comparing with binlake's decoding or ``SELECT``.
"""

from __future__ import annotations

import base64
import datetime as dt
import struct
import uuid
from decimal import Decimal
from typing import Any

from binlake.changes.records import TableInfo
from binlake.coltypes import Column, ColumnType
from binlake.render.changes.debezium import LEGACY_MODES, ValueModes
from binlake.values.decimal import precision_scale
from binlake.values.spatial import Geometry
from binlake.values.temporal import InvalidDate, InvalidDatetime

T = ColumnType
EPOCH = dt.datetime(1970, 1, 1)
DEFAULTS = ValueModes()
INTEGERS = {T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG}
_SIGNED = {T.TINY: "int8", T.SHORT: "int16", T.INT24: "int32", T.LONG: "int32", T.LONGLONG: "int64"}
_UNSIGNED = {T.TINY: "int16", T.SHORT: "int32", T.INT24: "int32", T.LONG: "int64"}
DECIMAL = "org.apache.kafka.connect.data.Decimal"


def type_name(info: TableInfo, i: int) -> str | None:
    return info.ddl.columns[i].type_name if info.ddl is not None else None


def schema(col: Column, name: str | None, modes: ValueModes = DEFAULTS) -> tuple[str, str | None]:
    """The documented (literal type, semantic type) of a column in ``modes`` (Debezium's MySQL connector
    documentation, "Data type mappings": basic, temporal, decimal, boolean, spatial types)."""
    real = col.real_type_code
    connect = modes.time_precision == "connect"
    if real == T.TINY and name in ("bool", "boolean"):
        return "boolean", None
    if real == T.LONGLONG and col.unsigned:
        return ("bytes", DECIMAL) if modes.bigint_unsigned == "precise" else ("int64", None)
    if real in INTEGERS:
        return (_UNSIGNED if col.unsigned else _SIGNED)[real], None
    if real == T.YEAR:
        return "int32", "io.debezium.time.Year"
    if real in (T.NEWDECIMAL, T.DECIMAL):
        return {"precise": ("bytes", DECIMAL), "double": ("float64", None), "string": ("string", None)}[modes.decimal]
    if real == T.FLOAT:
        return "float32", None
    if real == T.DOUBLE:
        return "float64", None
    if real == T.BIT:
        return ("boolean", None) if (col.bits or 1) == 1 else ("bytes", "io.debezium.data.Bits")
    if real in (T.DATE, T.NEWDATE):
        return "int32", "org.apache.kafka.connect.data.Date" if connect else "io.debezium.time.Date"
    if real in (T.TIME, T.TIME2):
        return ("int32", "org.apache.kafka.connect.data.Time") if connect else ("int64", "io.debezium.time.MicroTime")
    if real in (T.DATETIME, T.DATETIME2):
        if connect:
            return "int64", "org.apache.kafka.connect.data.Timestamp"
        return "int64", "io.debezium.time.Timestamp" if (col.fsp or 0) <= 3 else "io.debezium.time.MicroTimestamp"
    if real in (T.TIMESTAMP, T.TIMESTAMP2):
        return "string", "io.debezium.time.ZonedTimestamp"
    if real == T.ENUM:
        return "string", "io.debezium.data.Enum"
    if real == T.SET:
        return "string", "io.debezium.data.EnumSet"
    if real == T.JSON:
        return "string", "io.debezium.data.Json"
    if real == T.GEOMETRY:
        point = name == "point" or col.geometry_type == 1
        return "struct", "io.debezium.data.geometry.Point" if point else "io.debezium.data.geometry.Geometry"
    if real == T.VECTOR:
        return "array", "io.debezium.data.FloatVector"
    if name == "uuid" and real == T.STRING:
        return "string", "io.debezium.data.Uuid"
    if col.is_character and not col.is_text:
        return ("bytes", None) if modes.binary == "bytes" else ("string", None)
    return "string", None


def conforms(literal: str, v: Any) -> bool:
    """Is the JSON value ``v`` what the JSON converter writes for a Connect ``literal`` type?"""
    if literal.startswith("int"):
        bits = int(literal[3:])
        return type(v) is int and -(1 << (bits - 1)) <= v < 1 << (bits - 1)
    if literal.startswith("float"):
        return type(v) in (int, float)
    if literal == "boolean":
        return type(v) is bool
    if literal == "bytes":
        return type(v) is str and base64.b64encode(base64.b64decode(v, validate=True)).decode() == v
    return isinstance(v, {"string": str, "struct": dict, "array": list}[literal])


def decode(col: Column, name: str | None, v: Any, modes: ValueModes = DEFAULTS) -> Any:
    """The Python value (binlake's typed form) of one Debezium JSON value of ``col``; ``None`` for null."""
    if v is None:
        return None
    literal, semantic = schema(col, name, modes)
    real = col.real_type_code
    if semantic == DECIMAL:  # Decimal.toLogical: the unscaled two's-complement bytes at the column's scale
        unscaled = int.from_bytes(base64.b64decode(v), "big", signed=True)
        if real not in (T.NEWDECIMAL, T.DECIMAL):
            return unscaled  # BIGINT UNSIGNED: scale 0
        return Decimal(f"{unscaled}E-{precision_scale(col)[1]}")
    if real == T.LONGLONG and col.unsigned:  # long: the unsigned value's 64 bits read as a Java long
        return v % (1 << 64)
    if semantic == "io.debezium.time.Year":
        return 0 if v == 1900 else v  # Debezium's binlog reader adds 1900 to the stored byte: 0 reads 1900
    if literal == "boolean":
        return int(v)
    if real in INTEGERS:
        return v
    if real in (T.NEWDECIMAL, T.DECIMAL):
        return Decimal(v) if literal == "string" else float(v)
    if real == T.FLOAT:
        return struct.unpack("<f", struct.pack("<f", float(v)))[0]
    if real == T.DOUBLE:
        return float(v)
    if semantic == "io.debezium.data.Bits":
        return int.from_bytes(base64.b64decode(v), "little")
    if semantic in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return dt.date.fromordinal(EPOCH.toordinal() + v)
    if semantic == "io.debezium.time.MicroTime":
        return dt.timedelta(microseconds=v)
    if semantic == "org.apache.kafka.connect.data.Time":
        return dt.timedelta(milliseconds=v)
    if semantic in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
        return EPOCH + dt.timedelta(milliseconds=v)
    if semantic == "io.debezium.time.MicroTimestamp":
        return EPOCH + dt.timedelta(microseconds=v)
    if semantic == "io.debezium.time.ZonedTimestamp":
        return dt.datetime.fromisoformat(v)
    if semantic == "io.debezium.data.EnumSet" and isinstance(v, str):
        return frozenset(v.split(",")) if v else frozenset()
    if semantic == "io.debezium.data.EnumSet":  # a number where the table map names no member and no DDL was read
        return v
    if literal == "struct":
        return Geometry(v["srid"] or 0, base64.b64decode(v["wkb"]))
    if semantic == "io.debezium.data.Uuid" and len(v) == 36:
        return uuid.UUID(v).bytes
    if semantic in ("io.debezium.data.Enum", "io.debezium.data.Json"):
        return v
    if col.is_character and not col.is_text:
        if modes.binary == "hex":
            return bytes.fromhex(v)
        if modes.binary == "base64-url-safe":
            return base64.urlsafe_b64decode(v)
        return base64.b64decode(v)
    return v


def carried(col: Column, value: Any, modes: ValueModes = DEFAULTS) -> Any:
    """What ``modes`` keep of the full ``value`` of ``col`` (binlake's typed value, or SELECT's): a DECIMAL as the
    nearest double (``double``); with ``connect`` a DATETIME at milliseconds and a TIME as Connect's ``Time``
    (milliseconds of the day; ``None`` outside 00:00:00-24:00:00)."""
    real = col.real_type_code
    if isinstance(value, Decimal) and modes.decimal == "double":
        return float(value)
    if modes.time_precision == "connect":
        if isinstance(value, dt.timedelta):
            if value < dt.timedelta(0) or value > dt.timedelta(days=1):
                return None
            return value - dt.timedelta(microseconds=value.microseconds % 1000)
        if real in (T.DATETIME, T.DATETIME2) and type(value) is dt.datetime:
            return value.replace(microsecond=value.microsecond // 1000 * 1000)
    return value


def same(col: Column, typed: Any, decoded: Any, modes: ValueModes = DEFAULTS) -> bool:
    """Does ``decoded`` (from the JSON) stand for binlake's typed value ``typed``?"""
    if isinstance(typed, InvalidDate | InvalidDatetime):  # zero and partial dates: null, or the epoch if NOT NULL
        return decoded is None or decoded in (dt.date(1970, 1, 1), EPOCH) or str(decoded).startswith("1970-01-01")
    if isinstance(typed, bytes) and isinstance(decoded, str):  # bytes not valid in the text's charset
        return typed.decode("utf-8", "replace") == decoded
    if isinstance(typed, Geometry):
        return isinstance(decoded, Geometry) and (typed.srid, typed.wkb) == (decoded.srid, decoded.wkb)
    if isinstance(typed, float) and typed != typed:  # NaN cannot be stored: never equal
        return False
    return bool(carried(col, typed, modes) == decoded)


MODES = [
    DEFAULTS,
    LEGACY_MODES,
    ValueModes("double", "long", "connect", "hex"),
    ValueModes("string", "precise", "connect", "base64-url-safe"),
    ValueModes("precise", "precise", "adaptive_time_microseconds", "base64"),
]
"""Mode sets that take every value of every setting: the connector's defaults, binlake's output from before the
settings, and three more."""
