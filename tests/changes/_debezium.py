"""Reading Debezium JSON values back into binlake's Python values (the inverse of
:mod:`binlake.render.changes.debezium`, written from the Debezium MySQL connector's data type documentation), for
the tests that compare records with binlake's decoding and with ``SELECT``."""

from __future__ import annotations

import base64
import datetime as dt
import struct
import uuid
from decimal import Decimal
from typing import Any

from binlake.changes.records import TableInfo
from binlake.coltypes import Column, ColumnType
from binlake.values.spatial import Geometry
from binlake.values.temporal import InvalidDate, InvalidDatetime

T = ColumnType
EPOCH = dt.datetime(1970, 1, 1)
INTEGERS = {T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG}


def type_name(info: TableInfo, i: int) -> str | None:
    return info.ddl.columns[i].type_name if info.ddl is not None else None


def decode(col: Column, name: str | None, v: Any) -> Any:
    """The Python value (binlake's typed form) of one Debezium JSON value of ``col``; ``None`` for null."""
    if v is None:
        return None
    real = col.real_type_code
    if real == T.YEAR:
        return 0 if v == 1900 else v  # Debezium's binlog reader adds 1900 to the stored byte: 0 reads 1900
    if real in INTEGERS:
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, str):  # BIGINT UNSIGNED: Connect Decimal, base64 of two's-complement bytes
            return int.from_bytes(base64.b64decode(v), "big", signed=True)
        return v
    if real in (T.NEWDECIMAL, T.DECIMAL):
        return Decimal(v)
    if real == T.FLOAT:
        return struct.unpack("<f", struct.pack("<f", float(v)))[0]
    if real == T.DOUBLE:
        return float(v)
    if real == T.BIT:
        return int(v) if isinstance(v, bool) else int.from_bytes(base64.b64decode(v), "little")
    if real in (T.DATE, T.NEWDATE):
        return dt.date.fromordinal(EPOCH.toordinal() + v)
    if real in (T.TIME, T.TIME2):
        return dt.timedelta(microseconds=v)
    if real in (T.DATETIME, T.DATETIME2):
        return EPOCH + (dt.timedelta(milliseconds=v) if (col.fsp or 0) <= 3 else dt.timedelta(microseconds=v))
    if real in (T.TIMESTAMP, T.TIMESTAMP2):
        return dt.datetime.fromisoformat(v)
    if real == T.SET:  # a number where the table map names no member and no DDL was read
        return v if isinstance(v, int) else frozenset(v.split(",")) if v else frozenset()
    if real == T.GEOMETRY:
        return Geometry(v["srid"] or 0, base64.b64decode(v["wkb"]))
    if name == "uuid" and isinstance(v, str) and len(v) == 36:
        return uuid.UUID(v).bytes
    if real == T.ENUM or col.real_type_code == T.JSON:
        return v
    if col.is_character and not col.is_text:
        return base64.b64decode(v)
    return v


def same(col: Column, typed: Any, decoded: Any) -> bool:
    """Does ``decoded`` (from the JSON) stand for binlake's typed value ``typed``?"""
    if isinstance(typed, InvalidDate | InvalidDatetime):  # zero and partial dates: null, or the epoch if NOT NULL
        return decoded is None or decoded in (dt.date(1970, 1, 1), EPOCH) or str(decoded).startswith("1970-01-01")
    if isinstance(typed, bytes) and isinstance(decoded, str):  # bytes not valid in the text's charset
        return typed.decode("utf-8", "replace") == decoded
    if isinstance(typed, Geometry):
        return isinstance(decoded, Geometry) and (typed.srid, typed.wkb) == (decoded.srid, decoded.wkb)
    if isinstance(typed, float) and typed != typed:  # NaN cannot be stored: never equal
        return False
    return bool(typed == decoded)
