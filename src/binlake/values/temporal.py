"""DATE, TIME, DATETIME, TIMESTAMP in all their stored formats, to Python values and ``mariadb-binlog`` text.

Formats (``fsp`` = fractional-second digits, ``(fsp + 1) // 2`` fraction bytes, all big-endian unless noted):

* DATE / NEWDATE: 3 bytes little-endian, ``day | month << 5 | year << 9`` (``Field_newdate``).
* TIME2 (MySQL 5.6+, MariaDB 10.1+): ``my_time_packed_from_binary`` in ``mysys/my_time.c``: 3 bytes
  ``hour << 12 | minute << 6 | second`` offset by ``0x800000``, then the fraction (fsp 1-2: 1 byte of hundredths,
  3-4: 2 bytes of 1/10000 s, 5-6: the 6 bytes hold one 48-bit value offset by ``0x800000000000``).  A negative time
  with a fraction stores the integer part rounded down and the fraction complemented (``-00:00:00.01`` is
  ``7FFFFF FF``), which the reader undoes as ``my_time_packed_from_binary`` does.
* DATETIME2: 5 bytes ``((year * 13 + month) << 5 | day) << 17 | hour << 12 | minute << 6 | second`` offset by
  ``0x8000000000``, then the fraction (1 byte hundredths, 2 bytes 1/10000 s, 3 bytes microseconds).
* TIMESTAMP2: 4 bytes of seconds since the epoch, then the fraction as DATETIME2 (``my_timestamp_from_binary``).
* Old TIME (type 11): 3 bytes little-endian signed ``HHMMSS``; old DATETIME (12): 8 bytes little-endian
  ``YYYYMMDDhhmmss``; old TIMESTAMP (7): 4 bytes little-endian seconds (``Field_time``/``Field_datetime``/
  ``Field_timestamp``).
* MariaDB 5.3 fractional TIME/DATETIME/TIMESTAMP (``mysql56_temporal_format=OFF``) keep the old codes 11/12/7 and
  log **no metadata**, so their ``fsp`` is not in the binlog (``mariadb-binlog`` misreads them).  Their layout
  (``Field_time_hires``/``Field_datetime_hires``/``Field_timestamp_hires`` in MariaDB's ``sql/field.cc``) is used
  when the caller supplies the fsp (``col.with_(fsp=3)``, e.g. from the table's DDL): TIME is
  ``total_microseconds / 10**(6 - fsp)`` offset by ``839 hours`` in the same units, in 4/4/5/5/5/6 bytes;
  DATETIME ``pack_time()`` (``((((year * 13 + month) * 32 + day) * 24 + hour) * 60 + minute) * 60 + second``
  microseconds) divided by ``10**(6 - fsp)``, in 6/6/7/7/7/8 bytes; TIMESTAMP 4 bytes of seconds then
  ``microseconds / 10**(6 - fsp)`` in ``(fsp + 1) // 2`` bytes.  With fsp 0 (or unknown) the classic layouts apply,
  which is what MariaDB writes for columns without a fraction.

Python values: DATE -> ``datetime.date``; DATETIME -> naive ``datetime.datetime``; TIMESTAMP -> ``datetime.datetime``
in UTC; TIME -> ``datetime.timedelta`` (negative and beyond 24 h allowed).  Dates ``datetime`` cannot hold (zero
dates, zero parts, Feb 30 under ``ALLOW_INVALID_DATES``, the year 0) come back as :class:`InvalidDate` /
:class:`InvalidDatetime`, and the zero TIMESTAMP as ``InvalidDatetime`` of zeros.  Fields beyond their calendar
maxima (month 13, hour 24, minute 60, a fraction of a million microseconds), which no server writes, are
:class:`MalformedError`.

Example::

    >>> from binlake.coltypes import Column
    >>> col = Column.build(0, ColumnType.TIME2, b"\\x02")
    >>> value, _ = READERS[ColumnType.TIME2](col)(bytes.fromhex("7fffffff"), 0)
    >>> value, RENDER[ColumnType.TIME2](col, value)
    (datetime.timedelta(days=-1, seconds=86399, microseconds=990000), "'-00:00:00.01'")
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError, TruncatedError
from binlake.values.row import Reader, ReaderFactory

__all__ = ["READERS", "RENDER", "InvalidDate", "InvalidDatetime", "column_fsp"]

T = ColumnType

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_US = dt.timedelta(microseconds=1)
_TIMEF_INT_OFS = 0x800000  # TIMEF_INT_OFS, mysys/my_time.c
_TIMEF_OFS = 0x800000000000  # TIMEF_OFS
DATETIMEF_INT_OFS = 0x8000000000  # DATETIMEF_INT_OFS
# Field_time_hires::zero_point: (TIME_MAX_VALUE_SECONDS + 1) seconds in microseconds (MariaDB sql/field.cc)
_TIME_HIRES_ZERO_US = (838 * 3600 + 59 * 60 + 59 + 1) * 1_000_000
# time_hires_bytes[] / datetime_hires_bytes[] of MariaDB's sql/field.cc, by fsp
_TIME_HIRES_BYTES = (3, 4, 4, 5, 5, 5, 6)
_DATETIME_HIRES_BYTES = (5, 6, 6, 7, 7, 7, 8)


@dataclass(frozen=True, slots=True)
class InvalidDate:
    """A DATE value ``datetime.date`` cannot hold: ``str(InvalidDate(2020, 0, 15)) == '2020-00-15'``."""

    year: int
    month: int
    day: int

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"


@dataclass(frozen=True, slots=True)
class InvalidDatetime:
    """A DATETIME/TIMESTAMP value ``datetime.datetime`` cannot hold, printed as MySQL prints it.

    ``fsp`` (the column's fractional digits, not part of equality) sets how many fraction digits ``str()`` shows;
    with ``fsp`` 0 a non-zero ``microsecond`` still shows all six.

    >>> str(InvalidDatetime(2020, 0, 15, 10, 11, 12, 123456, fsp=6))
    '2020-00-15 10:11:12.123456'
    >>> str(InvalidDatetime(0, 0, 0, 0, 0, 0, 0))
    '0000-00-00 00:00:00'
    """

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    microsecond: int
    fsp: int = field(default=0, compare=False)

    def __str__(self) -> str:
        text = f"{self.year:04d}-{self.month:02d}-{self.day:02d} {self.hour:02d}:{self.minute:02d}:{self.second:02d}"
        return text + _fraction(self.microsecond, self.fsp or (6 if self.microsecond else 0))


def _fraction(microsecond: int, fsp: int) -> str:
    """``.123`` for 123456 µs at fsp 3 (``sec_part_shift`` then zero-padded), ``''`` at fsp 0."""
    return f".{microsecond // 10 ** (6 - fsp):0{fsp}d}" if fsp else ""


def column_fsp(col: Column) -> int:
    """Fractional-second digits of a temporal column: ``col.fsp``, else the metadata byte (0 for the old types).

    Raises :class:`MalformedError` above 6, which no server writes.
    """
    fsp = (
        col.fsp
        if col.fsp is not None
        else (col.meta if col.real_type_code in (T.TIME2, T.DATETIME2, T.TIMESTAMP2) else 0)
    )
    if not 0 <= fsp <= 6:
        raise MalformedError(f"{col.real_type} column {col.index + 1} has {fsp} fractional digits (at most 6)")
    return fsp


def _truncated(col: Column, pos: int, size: int, have: int) -> TruncatedError:
    return TruncatedError(
        f"{col.real_type} value of column {col.index + 1} at byte {pos}: needs {size} bytes, {max(have, 0)} left"
    )


def _malformed(col: Column, pos: int, what: str) -> MalformedError:
    return MalformedError(f"{col.real_type} value of column {col.index + 1} at byte {pos}: {what}")


def _date(col: Column, pos: int, year: int, month: int, day: int) -> dt.date | InvalidDate:
    if month > 12 or year > 9999:
        raise _malformed(col, pos, f"date {year:04d}-{month:02d}-{day:02d} out of range")
    try:
        return dt.date(year, month, day)
    except ValueError:  # a zero or partial date, or one the calendar lacks
        return InvalidDate(year, month, day)


def _datetime(
    col: Column, pos: int, fsp: int, y: int, mo: int, d: int, h: int, mi: int, s: int, us: int
) -> dt.datetime | InvalidDatetime:
    if mo > 12 or d > 31 or h > 23 or mi > 59 or s > 59 or us > 999_999 or y > 9999:
        raise _malformed(col, pos, f"datetime {y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}.{us:06d} out of range")
    try:
        return dt.datetime(y, mo, d, h, mi, s, us)
    except ValueError:  # a zero or partial date, or one the calendar lacks
        return InvalidDatetime(y, mo, d, h, mi, s, us, fsp)


def _time(col: Column, pos: int, negative: bool, h: int, mi: int, s: int, us: int) -> dt.timedelta:
    if mi > 59 or s > 59 or us > 999_999:
        raise _malformed(col, pos, f"time {h:02d}:{mi:02d}:{s:02d}.{us:06d} out of range")
    value = dt.timedelta(0, h * 3600 + mi * 60 + s, us)
    return -value if negative else value


# ---- DATE ----------------------------------------------------------------------------------------------------


def _date_reader(col: Column) -> Reader:
    from_bytes = int.from_bytes

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + 3
        if end > len(buf):
            raise _truncated(col, pos, 3, len(buf) - pos)
        v = from_bytes(buf[pos:end], "little")
        return _date(col, pos, v >> 9, (v >> 5) & 15, v & 31), end

    return read


# ---- TIME ----------------------------------------------------------------------------------------------------


def _time2_reader(col: Column) -> Reader:
    fsp = column_fsp(col)
    size = 3 + (fsp + 1) // 2
    frac_bytes = size - 3
    frac_bits = 8 * frac_bytes
    frac_base = 1 << frac_bits  # my_time_packed_from_binary: negative fractions are stored as base - |frac|
    frac_mask = frac_base - 1
    frac_unit = (1, 10_000, 100)[frac_bytes] if fsp < 5 else 1  # microseconds per stored unit
    from_bytes = int.from_bytes

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise _truncated(col, pos, size, len(buf) - pos)
        v = from_bytes(buf[pos:end], "big")
        if fsp >= 5:
            packed = v - _TIMEF_OFS
        else:
            intpart = (v >> frac_bits) - _TIMEF_INT_OFS
            frac = v & frac_mask
            if intpart < 0 and frac:
                intpart += 1  # negative with a fraction: shift to the next integer, un-complement the fraction
                frac -= frac_base
            packed = (intpart << 24) + frac * frac_unit
        negative = packed < 0
        if negative:
            packed = -packed
        hms = packed >> 24
        return _time(col, pos, negative, hms >> 12, (hms >> 6) & 63, hms & 63, packed & 0xFFFFFF), end

    return read


def _old_time_reader(col: Column) -> Reader:
    fsp = column_fsp(col)
    from_bytes = int.from_bytes
    if fsp:
        # MariaDB 5.3 Field_time_hires: big-endian units of 10**(6 - fsp) µs, offset by zero_point
        size = _TIME_HIRES_BYTES[fsp]
        unit = 10 ** (6 - fsp)
        zero = _TIME_HIRES_ZERO_US // unit

        def read_hires(buf: bytes, pos: int) -> tuple[object, int]:
            end = pos + size
            if end > len(buf):
                raise _truncated(col, pos, size, len(buf) - pos)
            return dt.timedelta(microseconds=(from_bytes(buf[pos:end], "big") - zero) * unit), end

        return read_hires

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + 3
        if end > len(buf):
            raise _truncated(col, pos, 3, len(buf) - pos)
        v = from_bytes(buf[pos:end], "little", signed=True)  # Field_time: int3store of +-HHMMSS
        a = -v if v < 0 else v
        return _time(col, pos, v < 0, a // 10000, a // 100 % 100, a % 100, 0), end

    return read


# ---- DATETIME ------------------------------------------------------------------------------------------------


def frac_reader_params(fsp: int) -> tuple[int, int, int]:
    """``(fraction bytes, microseconds per stored unit, exclusive bound)`` of DATETIME2/TIMESTAMP2 fractions."""
    frac_bytes = (fsp + 1) // 2
    unit = (1, 10_000, 100, 1)[frac_bytes]
    return frac_bytes, unit, 1_000_000 // unit


def _datetime2_reader(col: Column) -> Reader:
    fsp = column_fsp(col)
    frac_bytes, unit, bound = frac_reader_params(fsp)
    size = 5 + frac_bytes
    frac_bits = 8 * frac_bytes
    frac_mask = (1 << frac_bits) - 1
    from_bytes = int.from_bytes
    new_datetime = dt.datetime

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise _truncated(col, pos, size, len(buf) - pos)
        v = from_bytes(buf[pos:end], "big")
        ymdhms = (v >> frac_bits) - DATETIMEF_INT_OFS
        frac = v & frac_mask
        if ymdhms < 0:
            raise _malformed(col, pos, "negative datetime")
        if frac >= bound:
            raise _malformed(col, pos, f"fraction {frac} out of range")
        ymd = ymdhms >> 17
        ym = ymd >> 5
        fields = (ym // 13, ym % 13, ymd & 31, (ymdhms >> 12) & 31, (ymdhms >> 6) & 63, ymdhms & 63, frac * unit)
        try:  # the common case first: datetime checks the ranges itself
            return new_datetime(*fields), end
        except ValueError:  # zero/partial dates become InvalidDatetime, impossible fields MalformedError
            return _datetime(col, pos, fsp, *fields), end

    return read


def _old_datetime_reader(col: Column) -> Reader:
    fsp = column_fsp(col)
    from_bytes = int.from_bytes
    if fsp:
        # MariaDB 5.3 Field_datetime_hires: pack_time() microseconds / 10**(6 - fsp), big-endian (unpack_time)
        size = _DATETIME_HIRES_BYTES[fsp]
        unit = 10 ** (6 - fsp)

        def read_hires(buf: bytes, pos: int) -> tuple[object, int]:
            end = pos + size
            if end > len(buf):
                raise _truncated(col, pos, size, len(buf) - pos)
            seconds, us = divmod(from_bytes(buf[pos:end], "big") * unit, 1_000_000)
            minutes, s = divmod(seconds, 60)
            hours, mi = divmod(minutes, 60)
            days, h = divmod(hours, 24)
            months, d = divmod(days, 32)
            y, mo = divmod(months, 13)
            return _datetime(col, pos, fsp, y, mo, d, h, mi, s, us), end

        return read_hires

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + 8
        if end > len(buf):
            raise _truncated(col, pos, 8, len(buf) - pos)
        v = from_bytes(buf[pos:end], "little")  # Field_datetime: YYYYMMDDhhmmss
        ymd, hms = divmod(v, 1_000_000)
        return _datetime(
            col, pos, 0, ymd // 10000, ymd // 100 % 100, ymd % 100, hms // 10000, hms // 100 % 100, hms % 100, 0
        ), end

    return read


# ---- TIMESTAMP -----------------------------------------------------------------------------------------------


def _timestamp(fsp: int, seconds: int, us: int) -> dt.datetime | InvalidDatetime:
    if not seconds and not us:
        return InvalidDatetime(0, 0, 0, 0, 0, 0, 0, fsp)  # the zero TIMESTAMP '0000-00-00 00:00:00'
    return _EPOCH + dt.timedelta(0, seconds, us)


def _timestamp2_reader(col: Column) -> Reader:
    fsp = column_fsp(col)
    frac_bytes, unit, bound = frac_reader_params(fsp)
    size = 4 + frac_bytes
    frac_bits = 8 * frac_bytes
    frac_mask = (1 << frac_bits) - 1
    from_bytes = int.from_bytes

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise _truncated(col, pos, size, len(buf) - pos)
        v = from_bytes(buf[pos:end], "big")
        frac = v & frac_mask
        if frac >= bound:
            raise _malformed(col, pos, f"fraction {frac} out of range")
        return _timestamp(fsp, v >> frac_bits, frac * unit), end

    return read


def _old_timestamp_reader(col: Column) -> Reader:
    fsp = column_fsp(col)
    # MariaDB 5.3 Field_timestamp_hires: 4 bytes big-endian seconds, then microseconds / 10**(6 - fsp) big-endian;
    # fsp 0 is Field_timestamp, 4 bytes little-endian
    frac_bytes = (fsp + 1) // 2
    size = 4 + frac_bytes
    unit = 10 ** (6 - fsp)
    bound = 10**fsp
    frac_bits = 8 * frac_bytes
    frac_mask = (1 << frac_bits) - 1
    order: Literal["big", "little"] = "big" if fsp else "little"
    from_bytes = int.from_bytes

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise _truncated(col, pos, size, len(buf) - pos)
        v = from_bytes(buf[pos:end], order)
        frac = v & frac_mask
        if frac >= bound:
            raise _malformed(col, pos, f"fraction {frac} out of range")
        return _timestamp(fsp, v >> frac_bits, frac * unit), end

    return read


READERS: dict[int, ReaderFactory] = {
    T.DATE: _date_reader,
    T.NEWDATE: _date_reader,
    T.TIME2: _time2_reader,
    T.TIME: _old_time_reader,
    T.DATETIME2: _datetime2_reader,
    T.DATETIME: _old_datetime_reader,
    T.TIMESTAMP2: _timestamp2_reader,
    T.TIMESTAMP: _old_timestamp_reader,
}


# ---- mariadb-binlog text -------------------------------------------------------------------------------------


def render_date(col: Column, value: object) -> str:
    """``'2024:02:29'``: ``mariadb-binlog`` prints DATE with colons (``'%04d:%02d:%02d'``)."""
    assert isinstance(value, dt.date | InvalidDate)
    return f"'{value.year:04d}:{value.month:02d}:{value.day:02d}'"


def render_time(col: Column, value: object) -> str:
    """``'-838:59:59.000000'``: ``my_time_to_str`` with the column's fsp, hours past 99 in full."""
    assert isinstance(value, dt.timedelta)
    us = value // _ONE_US
    sign = "-" if us < 0 else ""
    seconds, us = divmod(abs(us), 1_000_000)
    minutes, s = divmod(seconds, 60)
    h, mi = divmod(minutes, 60)
    return f"'{sign}{h:02d}:{mi:02d}:{s:02d}{_fraction(us, column_fsp(col))}'"


def render_datetime(col: Column, value: object) -> str:
    """``'2001-02-03 04:05:06.789'``: ``my_datetime_to_str`` with the column's fsp, quoted."""
    assert isinstance(value, dt.datetime | InvalidDatetime)
    return (
        f"'{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:"
        f"{value.second:02d}{_fraction(value.microsecond, column_fsp(col))}'"
    )


def render_timestamp(col: Column, value: object) -> str:
    """``1709210096.123``: seconds since the epoch, then the fsp digits (``my_timeval_to_str``), unquoted."""
    if isinstance(value, InvalidDatetime):
        seconds, us = 0, value.microsecond
    else:
        assert isinstance(value, dt.datetime)
        delta = value - _EPOCH
        seconds, us = delta.days * 86400 + delta.seconds, delta.microseconds
    return f"{seconds}{_fraction(us, column_fsp(col))}"


RENDER: dict[int, Callable[[Column, object], str]] = {
    T.DATE: render_date,
    T.NEWDATE: render_date,
    T.TIME2: render_time,
    T.TIME: render_time,
    T.DATETIME2: render_datetime,
    T.DATETIME: render_datetime,
    T.TIMESTAMP2: render_timestamp,
    T.TIMESTAMP: render_timestamp,
}
