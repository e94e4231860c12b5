"""The servers' own character-set mappings, for the charsets whose text Python's codecs do not decode the server's way.

MariaDB and MySQL decode a stored code with their charset's table (``strings/ctype-*.c``), and for many charsets
that table is not the Python codec of the same name: sjis stores ``\\`` as 0x815F, eucjpms has NEC and IBM rows
euc_jp lacks, euckr accepts the whole UHC range, dec8, hp8, swe7, armscii8, keybcs2 and geostd8 have no Python
codec at all.  binlake ships each such table as package data (``charsets/<charset>.bin``), generated from a server
by :mod:`binlake.testing.charmaps`, and decodes with it.

A table maps every *code* the server accepts in a column of the charset (a byte sequence it stores as one
character) to the text ``SELECT`` returns for it in utf8mb4: the character, or ``?`` for a code the charset
accepts but has no Unicode character for (sjis 0xF040, cp1256 0x8A, any byte above 0x7F in ascii), as the
server converts it (``my_convert``, ``copy_and_convert``).  A value holding a byte sequence that is no code is
not valid in the charset (the server rejects it on ``INSERT``): :meth:`Charmap.decode` returns its bytes.

File format, version 1: the magic ``b"BLCM"``, the version byte ``1``, then a zlib stream of unsigned LEB128
varints: the number of codes *n*; *n* gaps between consecutive codes in ascending order (``code - previous -
1``, the first from -1), each code being its bytes read as a big-endian integer and so as long as that integer's
minimal byte length (every multi-byte code starts with a byte above 0x00); then *n* zigzag-encoded differences
between consecutive Unicode code points (the first from 0).  Delta coding keeps each file near 1 byte per code.

Example::

    >>> sjis = load("sjis")
    >>> sjis.decode(b"C:\\x81\\x5fdir"), sjis.decode(b"\\x82\\xa0"), sjis.decode(b"\\x81")
    ('C:\\\\dir', 'あ', b'\\x81')
"""

from __future__ import annotations

import codecs
import re
import zlib
from collections.abc import Mapping
from functools import cache
from importlib import resources

__all__ = ["FORMAT_VERSION", "Charmap", "load", "names", "pack", "unpack"]

MAGIC = b"BLCM"
FORMAT_VERSION = 1
_UNDEFINED = "\ufffe"  # codecs.charmap_decode's "no character for this byte"


def _varints(data: bytes, pos: int, count: int) -> tuple[list[int], int]:
    """``count`` unsigned LEB128 varints from ``data`` at ``pos``, and the position after them."""
    out = []
    for _ in range(count):
        n = shift = 0
        while True:
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append(n)
    return out, pos


def _varint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def pack(codes: Mapping[bytes, str]) -> bytes:
    """The file bytes of a table (every code -> its one-character text), in the format above.

    >>> unpack(pack({b"A": "A", b"\\x81\\x5f": "\\\\"})) == {b"A": "A", b"\\x81\\x5f": "\\\\"}
    True
    """
    items = sorted((int.from_bytes(code, "big"), code, text) for code, text in codes.items())
    gaps, deltas = bytearray(), bytearray()
    previous_code, previous_cp = -1, 0
    for number, code, text in items:
        if len(text) != 1 or len(code) != max(1, (number.bit_length() + 7) // 8):
            raise ValueError(f"code {code.hex()}: one character for a code without leading 0x00 bytes expected")
        _varint(number - previous_code - 1, gaps)
        delta = ord(text) - previous_cp
        _varint(delta << 1 if delta >= 0 else (-delta << 1) - 1, deltas)
        previous_code, previous_cp = number, ord(text)
    head = bytearray()
    _varint(len(items), head)
    return MAGIC + bytes([FORMAT_VERSION]) + zlib.compress(bytes(head + gaps + deltas), 9)


def unpack(data: bytes) -> dict[bytes, str]:
    """The table a file holds: every code -> its text (the inverse of :func:`pack`)."""
    if data[:4] != MAGIC or data[4:5] != bytes([FORMAT_VERSION]):
        raise ValueError(f"not a binlake charset table of format {FORMAT_VERSION} (reinstall binlake)")
    body = zlib.decompress(data[5:])
    (count,), pos = _varints(body, 0, 1)
    gaps, pos = _varints(body, pos, count)
    deltas, _ = _varints(body, pos, count)
    codes: dict[bytes, str] = {}
    number, cp = -1, 0
    for gap, zigzag in zip(gaps, deltas, strict=True):
        number += gap + 1
        cp += zigzag >> 1 if not zigzag & 1 else -((zigzag + 1) >> 1)
        codes[number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")] = chr(cp)
    return codes


class Charmap:
    """One charset's table and its decoder.

    ``codes`` maps every code to its text.  A charset whose codes are all one byte decodes with
    ``codecs.charmap_decode`` (one C pass); a multi-byte one splits the bytes into codes by their first byte (in
    each of these charsets the first byte alone says how long the code is, as the server's ``mb_wc`` reads it)
    and looks each code up, with plain ASCII values decoded at once where the charset keeps ASCII as is.
    """

    __slots__ = ("_ascii", "_split", "_table", "codes", "name")

    def __init__(self, name: str, codes: Mapping[bytes, str]) -> None:
        self.name = name
        self.codes = dict(codes)
        lengths: dict[int, int] = {}
        for code in self.codes:
            if lengths.setdefault(code[0], len(code)) != len(code):
                raise ValueError(f"{name}: codes of {lengths[code[0]]} and {len(code)} bytes start with {code[0]:#x}")
        self._ascii = all(self.codes.get(bytes([b])) == chr(b) for b in range(0x80))
        self._table: str | None = None
        self._split: re.Pattern[bytes] | None = None
        if max(lengths.values()) == 1:
            self._table = "".join(self.codes.get(bytes([b]), _UNDEFINED) for b in range(256))
        else:
            alternatives = [
                b"["
                + b"".join(re.escape(bytes([b])) for b in sorted(k for k, n in lengths.items() if n == size))
                + b"]"
                + b"[\\x00-\\xff]" * (size - 1)
                for size in sorted(set(lengths.values()), reverse=True)
            ]
            # a byte no code starts with, or a code cut short, matches alone and is no key: the value is invalid
            self._split = re.compile(b"|".join([*alternatives, b"[\\x00-\\xff]"]))

    def decode(self, raw: bytes) -> str | bytes:
        """``raw`` as text, or ``raw`` itself when it holds a byte sequence that is no code of the charset."""
        if self._table is not None:
            try:
                return codecs.charmap_decode(raw, "strict", self._table)[0]
            except UnicodeDecodeError:
                return raw
        if self._ascii and raw.isascii():
            return raw.decode("ascii")
        assert self._split is not None
        try:
            return "".join(map(self.codes.__getitem__, self._split.findall(raw)))
        except KeyError:
            return raw

    def __repr__(self) -> str:
        return f"Charmap({self.name!r}, {len(self.codes)} codes)"


_DATA = "charsets"


@cache
def names() -> frozenset[str]:
    """The charsets binlake ships a table for."""
    folder = resources.files("binlake.values").joinpath(_DATA)
    return frozenset(f.name[: -len(".bin")] for f in folder.iterdir() if f.name.endswith(".bin"))


@cache
def load(name: str) -> Charmap:
    """The table of charset ``name`` (read once, on first use: each file is read only when a column needs it)."""
    if name not in names():
        raise KeyError(f"no charset table for {name!r}")
    return Charmap(name, unpack(resources.files("binlake.values").joinpath(_DATA, f"{name}.bin").read_bytes()))
