"""Collation ids of MySQL 8/9 and MariaDB 10.x/11.x: their names, character sets and text decoders.

A table map's COLUMN_CHARSET / DEFAULT_CHARSET optional metadata gives each string column a *collation id*
(``SHOW COLLATION``'s ``Id``); the character set, and so the decoder that turns stored bytes into ``str``,
follows from it: a Python codec where it is the server's mapping, else the server's own table
(:mod:`binlake.values.charmap`).  Ids below 256 are shared by both servers (as listed by MySQL's
``strings/ctype-*.cc`` and MariaDB's ``strings/ctype-*.c``); MySQL 8 adds the ``utf8mb4_*_0900_*`` ids
255..323; MariaDB adds NO PAD variants at ``1024 + id`` of their PAD twin, the croatian/myanmar/thai UCA
collations at 576..738, and the UCA-14.0.0 collations at ``2048 + (charset << 8) + (tailoring << 3) + flags``
(``my_uca1400_make_builtin_collation_id`` in ``strings/ctype-uca1400.c``).

Example::

    >>> collation_name(255), charset_name(255), codec(255)
    ('utf8mb4_0900_ai_ci', 'utf8mb4', 'utf-8')
    >>> collation_name(2304), codec(8), codec(63)
    ('utf8mb4_uca1400_ai_ci', 'cp1252', None)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from binlake.values import charmap

__all__ = [
    "BINARY",
    "RULE_DECODED",
    "charset_name",
    "codec",
    "collation_id",
    "collation_name",
    "decode",
    "decoder",
    "max_bytes",
]

BINARY = 63
"""The ``binary`` pseudo collation: BINARY/VARBINARY/BLOB columns, whose values stay ``bytes``."""

# Ids 1..99 and the other single collations (SHOW COLLATION on MySQL 8.0 / MariaDB 10.11).
_SINGLE: dict[int, str] = {
    1: "big5_chinese_ci",
    2: "latin2_czech_cs",
    3: "dec8_swedish_ci",
    4: "cp850_general_ci",
    5: "latin1_german1_ci",
    6: "hp8_english_ci",
    7: "koi8r_general_ci",
    8: "latin1_swedish_ci",
    9: "latin2_general_ci",
    10: "swe7_swedish_ci",
    11: "ascii_general_ci",
    12: "ujis_japanese_ci",
    13: "sjis_japanese_ci",
    14: "cp1251_bulgarian_ci",
    15: "latin1_danish_ci",
    16: "hebrew_general_ci",
    18: "tis620_thai_ci",
    19: "euckr_korean_ci",
    20: "latin7_estonian_cs",
    21: "latin2_hungarian_ci",
    22: "koi8u_general_ci",
    23: "cp1251_ukrainian_ci",
    24: "gb2312_chinese_ci",
    25: "greek_general_ci",
    26: "cp1250_general_ci",
    27: "latin2_croatian_ci",
    28: "gbk_chinese_ci",
    29: "cp1257_lithuanian_ci",
    30: "latin5_turkish_ci",
    31: "latin1_german2_ci",
    32: "armscii8_general_ci",
    33: "utf8mb3_general_ci",
    34: "cp1250_czech_cs",
    35: "ucs2_general_ci",
    36: "cp866_general_ci",
    37: "keybcs2_general_ci",
    38: "macce_general_ci",
    39: "macroman_general_ci",
    40: "cp852_general_ci",
    41: "latin7_general_ci",
    42: "latin7_general_cs",
    43: "macce_bin",
    44: "cp1250_croatian_ci",
    45: "utf8mb4_general_ci",
    46: "utf8mb4_bin",
    47: "latin1_bin",
    48: "latin1_general_ci",
    49: "latin1_general_cs",
    50: "cp1251_bin",
    51: "cp1251_general_ci",
    52: "cp1251_general_cs",
    53: "macroman_bin",
    54: "utf16_general_ci",
    55: "utf16_bin",
    56: "utf16le_general_ci",
    57: "cp1256_general_ci",
    58: "cp1257_bin",
    59: "cp1257_general_ci",
    60: "utf32_general_ci",
    61: "utf32_bin",
    62: "utf16le_bin",
    63: "binary",
    64: "armscii8_bin",
    65: "ascii_bin",
    66: "cp1250_bin",
    67: "cp1256_bin",
    68: "cp866_bin",
    69: "dec8_bin",
    70: "greek_bin",
    71: "hebrew_bin",
    72: "hp8_bin",
    73: "keybcs2_bin",
    74: "koi8r_bin",
    75: "koi8u_bin",
    76: "utf8mb3_tolower_ci",
    77: "latin2_bin",
    78: "latin5_bin",
    79: "latin7_bin",
    80: "cp850_bin",
    81: "cp852_bin",
    82: "swe7_bin",
    83: "utf8mb3_bin",
    84: "big5_bin",
    85: "euckr_bin",
    86: "gb2312_bin",
    87: "gbk_bin",
    88: "sjis_bin",
    89: "tis620_bin",
    90: "ucs2_bin",
    91: "ujis_bin",
    92: "geostd8_general_ci",
    93: "geostd8_bin",
    94: "latin1_spanish_ci",
    95: "cp932_japanese_ci",
    96: "cp932_bin",
    97: "eucjpms_japanese_ci",
    98: "eucjpms_bin",
    99: "cp1250_polish_ci",
    159: "ucs2_general_mysql500_ci",
    223: "utf8mb3_general_mysql500_ci",
    248: "gb18030_chinese_ci",
    249: "gb18030_bin",
    250: "gb18030_unicode_520_ci",
}

# The UCA-4.0.0/5.2.0 language collations, in id order from each Unicode charset's first id
# (ctype-uca.cc: utf16 101.., ucs2 128.., utf32 160.., utf8mb3 192.., utf8mb4 224..).
_UCA_LANGS = (
    "unicode",
    "icelandic",
    "latvian",
    "romanian",
    "slovenian",
    "polish",
    "estonian",
    "spanish",
    "swedish",
    "turkish",
    "czech",
    "danish",
    "lithuanian",
    "slovak",
    "spanish2",
    "roman",
    "persian",
    "esperanto",
    "hungarian",
    "sinhala",
    "german2",
    "croatian",
    "unicode_520",
    "vietnamese",
)
_UCA_FIRST = {"utf16": 101, "ucs2": 128, "utf32": 160, "utf8mb3": 192, "utf8mb4": 224}
# MariaDB's later UCA collations (ctype-uca.c): croatian, myanmar, thai_520_w2 per Unicode charset.
_MARIADB_UCA_FIRST = {"utf8mb3": 576, "utf8mb4": 608, "ucs2": 640, "utf16": 672, "utf32": 736}

# each charset's default collation (SHOW CHARACTER SET "Default collation") among ids 1..99
_DEFAULTS = (
    1,
    3,
    4,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    16,
    18,
    19,
    22,
    24,
    25,
    26,
    28,
    30,
    32,
    33,
    35,
    36,
    37,
    38,
    39,
    40,
    41,
    45,
    51,
    54,
    56,
    57,
    59,
    60,
    92,
    95,
    97,
)

# MySQL 8.0 utf8mb4 UCA-9.0.0 collations (ctype-uca.cc, ids 255..323): (id, name) with gaps.
_MYSQL_0900: dict[int, str] = {
    255: "utf8mb4_0900_ai_ci",
    278: "utf8mb4_0900_as_cs",
    305: "utf8mb4_0900_as_ci",
    309: "utf8mb4_0900_bin",
}
_0900_LANGS = (
    "de_pb",
    "is",
    "lv",
    "ro",
    "sl",
    "pl",
    "et",
    "es",
    "sv",
    "tr",
    "cs",
    "da",
    "lt",
    "sk",
    "es_trad",
    "la",
    None,
    "eo",
    "hu",
    "hr",
    None,
    "vi",
)
for _i, _lang in enumerate(_0900_LANGS):
    if _lang is not None:
        _MYSQL_0900[256 + _i] = f"utf8mb4_{_lang}_0900_ai_ci"
        _MYSQL_0900[279 + _i] = f"utf8mb4_{_lang}_0900_as_cs"
_MYSQL_0900.update(
    {
        303: "utf8mb4_ja_0900_as_cs",
        304: "utf8mb4_ja_0900_as_cs_ks",
        306: "utf8mb4_ru_0900_ai_ci",
        307: "utf8mb4_ru_0900_as_cs",
        308: "utf8mb4_zh_0900_as_cs",
    }
)
for _i, _lang in enumerate(("nb", "nn", "sr_latn", "bs", "bg", "gl", "mn_cyrl")):
    _MYSQL_0900[310 + 2 * _i] = f"utf8mb4_{_lang}_0900_ai_ci"
    _MYSQL_0900[311 + 2 * _i] = f"utf8mb4_{_lang}_0900_as_cs"

# MariaDB UCA-14.0.0 (ctype-uca1400.h): charset index, and tailorings by index (None: no such tailoring).
_UCA1400_CHARSETS = ("utf8mb3", "utf8mb4", "ucs2", "utf16", "utf32")
_UCA1400_TAILORINGS: tuple[str | None, ...] = (
    "",
    *_UCA_LANGS[1:21],
    None,
    None,
    "vietnamese",
    "croatian",
    "myanmar",
)


def _build() -> dict[int, str]:
    names = dict(_SINGLE)
    for cs, first in _UCA_FIRST.items():
        for i, lang in enumerate(_UCA_LANGS):
            names[first + i] = f"{cs}_{lang}_ci"
    for cs, first in _MARIADB_UCA_FIRST.items():
        for i, lang in enumerate(("croatian", "myanmar", "thai_520_w2")):
            names[first + i] = f"{cs}_{lang}_ci" if lang != "thai_520_w2" else f"{cs}_{lang}"
    names.update(_MYSQL_0900)
    # MariaDB NO PAD twins (ctype-*.c "_nopad" definitions): 1024 + the PAD collation's id, for each charset's
    # default and binary collation and the Unicode "unicode"/"unicode_520" ones.
    pad_ids = {*_DEFAULTS, *(i for i, n in _SINGLE.items() if n.endswith("_bin") and i < 248)}
    pad_ids |= {first + k for first in _UCA_FIRST.values() for k in (0, 22)}
    for pad in sorted(pad_ids):
        name = names[pad]
        if name.endswith("_bin"):
            names[1024 + pad] = name[: -len("_bin")] + "_nopad_bin"
        elif name.endswith("_ci"):
            names[1024 + pad] = name[: -len("_ci")] + "_nopad_ci"
    for c, cs in enumerate(_UCA1400_CHARSETS):
        for t, tailoring in enumerate(_UCA1400_TAILORINGS):
            if tailoring is None:
                continue
            for flags in range(8):
                name = f"{cs}_uca1400{'_' if tailoring else ''}{tailoring}{'_nopad' if flags & 4 else ''}"
                name += f"{'_as' if flags & 2 else '_ai'}{'_cs' if flags & 1 else '_ci'}"
                names[2048 + (c << 8) + (t << 3) + flags] = name
    return names


_NAMES = _build()
# ids whose MariaDB name differs: MariaDB renamed MySQL-5.6's croatian collations when it added its own (576..)
_MARIADB_RENAMED = {first + 21: f"{cs}_croatian_mysql561_ci" for cs, first in _UCA_FIRST.items()}

# How each charset's text is decoded: a Python codec where it is the server's own mapping for every code (proven
# by tests/values/test_charsets.py against a server), or a rule on top of one; every other charset decodes with
# the server's table binlake ships (values.charmap), named by the charset.
_RULES: dict[str, str | None] = {
    "binary": None,  # bytes, not text
    "utf8mb4": "utf-8",
    # utf8mb3 is utf8mb4 without 4-byte codes; the same decoder, so the compiled row decoder's UTF-8 path serves
    # both (a 4-byte sequence, which the server never stores in utf8mb3, decodes as well)
    "utf8mb3": "utf-8",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    # MySQL latin1 is Windows-1252 with the five bytes it leaves undefined (0x81 0x8D 0x8F 0x90 0x9D) read as
    # U+0081.. like ISO-8859-1 (ctype-latin1.c): total (_latin1)
    "latin1": "cp1252",
    # UCS-2: UTF-16BE without surrogate pairs (every 2 bytes are one code: _ucs2)
    "ucs2": "ucs2",
    # MySQL's alone (ids 248..250): Python's GB18030 codec, not checked code by code (no MariaDB has the charset,
    # so the test suite's server cannot state its mapping)
    "gb18030": "gb18030",
}
RULE_DECODED = frozenset(_RULES)
"""The charsets decoded by a rule of their own rather than by a shipped server table."""

# MySQL latin1's 0x80..0x9F: latin-1 decoding, then these bytes moved to their cp1252 characters.
_LATIN1_FIX = {c: ch for c in range(0x80, 0xA0) if (ch := bytes([c]).decode("cp1252", "replace")) != "\ufffd"}


def collation_name(collation_id: int, *, mariadb: bool = False) -> str | None:
    """``SHOW COLLATION`` name of ``collation_id`` (``None`` when unknown); ``mariadb`` picks MariaDB's names
    where the two servers name one id differently (the ``*_croatian_mysql561_ci`` ids)."""
    if mariadb and collation_id in _MARIADB_RENAMED:
        return _MARIADB_RENAMED[collation_id]
    return _NAMES.get(collation_id)


def charset_name(collation_id: int) -> str | None:
    """Character set of ``collation_id`` (``"utf8mb4"``, ``"latin1"``, ``"binary"``...), ``None`` when unknown."""
    name = _NAMES.get(collation_id)
    return None if name is None else name.split("_", 1)[0]


# The names a statement may give a charset or collation by, besides their own: ``utf8`` is utf8mb3 (MySQL 8, and
# MariaDB under its default old_mode UTF8_IS_UTF8MB3)
_ALIASES = {"utf8": "utf8mb3"}
_IDS: dict[str, int] = {}  # collation name and charset name (its default collation) -> id, built on first use
# bytes of the longest character of the charsets with characters longer than one byte (SHOW CHARACTER SET Maxlen)
_MAX_BYTES = {"big5": 2, "cp932": 2, "eucjpms": 3, "euckr": 2, "gb18030": 4, "gb2312": 2, "gbk": 2, "sjis": 2}
_MAX_BYTES |= {"ucs2": 2, "ujis": 3, "utf16": 4, "utf16le": 4, "utf32": 4, "utf8mb3": 3, "utf8mb4": 4}


def collation_id(name: str) -> int | None:
    """The id of a collation or (its default collation's) of a character set, by the name a statement gives it
    (any case; ``utf8`` is ``utf8mb3``); ``None`` when unknown.

    >>> collation_id("latin1"), collation_id("UTF8MB4"), collation_id("utf8_bin"), collation_id("utf8mb4_uca1400_ai_ci")
    (8, 45, 83, 2304)
    """
    if not _IDS:
        for i, n in sorted(_NAMES.items(), reverse=True):
            _IDS[n] = i
        _IDS.update({n: i for i, n in _MARIADB_RENAMED.items()})
        _IDS.update({_NAMES[i].split("_", 1)[0]: i for i in (*_DEFAULTS, 248)})  # 248: MySQL's gb18030_chinese_ci
        _IDS["binary"] = BINARY
    name = name.lower()
    head, sep, tail = name.partition("_")
    return _IDS.get(_ALIASES.get(head, head) + sep + tail)


def max_bytes(collation_id: int) -> int | None:
    """Bytes of the longest character of ``collation_id``'s charset (a CHAR(n) or VARCHAR(n) column holds up to
    ``n`` times that many); ``None`` when unknown.

    >>> max_bytes(45), max_bytes(8), max_bytes(63)
    (4, 1, 1)
    """
    cs = charset_name(collation_id)
    return None if cs is None else _MAX_BYTES.get(cs, 1)


def codec(collation_id: int) -> str | None:
    """Name of the decoder of ``collation_id``'s charset for :func:`decode`; ``None`` for ``binary`` and unknown ids.

    A Python codec name where Python's codec is the server's mapping (``utf-8``, ``utf-16-be``, ``utf-16-le``,
    ``utf-32-be``), ``cp1252`` for MySQL's latin1, ``ucs2``, else the charset's own name, decoded with the
    server's table (:mod:`binlake.values.charmap`).
    """
    cs = charset_name(collation_id)
    if cs is None:
        return None
    if cs in _RULES:
        return _RULES[cs]
    return cs if cs in charmap.names() else None


def _utf8(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _latin1(raw: bytes) -> str:
    return raw.decode("latin-1").translate(_LATIN1_FIX)


def _ucs2(raw: bytes) -> str | bytes:
    try:
        text = raw.decode("utf-16-be")
    except UnicodeDecodeError:
        return raw
    # UTF-16 reads U+D8xx U+DCxx as one character; to UCS-2 (and the server) they are two codes with no character
    return text if 2 * len(text) == len(raw) else raw


def _python(codec_name: str) -> Callable[[bytes], str | bytes]:
    def decode(raw: bytes) -> str | bytes:
        try:
            return raw.decode(codec_name)
        except UnicodeDecodeError:
            return raw

    return decode


@cache
def decoder(codec_name: str) -> Callable[[bytes], str | bytes]:
    """The function that decodes a value with the decoder :func:`codec` named (build it once per column).

    It returns ``str``, or the bytes themselves when they are not valid text: keeping the stored bytes (rather than
    replacing or escaping characters) loses nothing, and a caller sees at once that the value did not match its
    column's charset.  Valid is what the server accepts on ``INSERT``; a code the server accepts but has no Unicode
    character for is ``?``, as ``SELECT`` returns it (:mod:`binlake.values.charmap`).  Code points the server
    accepts that are no characters (the surrogates U+D800..U+DFFF, which utf8mb3, utf8mb4, ucs2 and utf32 store
    and ``SELECT`` sends as the invalid UTF-8 ``ED A0 80``...) keep the value's bytes too.
    """
    if codec_name == "utf-8":
        return _utf8
    if codec_name == "cp1252":
        return _latin1
    if codec_name == "ucs2":
        return _ucs2
    if codec_name in charmap.names():
        return charmap.load(codec_name).decode
    if codec_name not in _RULES.values():
        raise KeyError(f"no text decoder named {codec_name!r}")
    return _python(codec_name)


def decode(raw: bytes, codec_name: str) -> str | bytes:
    """``raw`` decoded with the decoder :func:`codec` named, as :func:`decoder` says.

    >>> decode(b"\\x80\\x81", "cp1252"), decode(b"\\xff", "utf-8"), decode(b"C:\\x81\\x5fdir", "sjis")
    ('€\\x81', b'\\xff', 'C:\\\\dir')
    """
    return decoder(codec_name)(raw)
