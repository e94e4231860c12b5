"""Delta deletion vectors (DVs), both ways: the rows of a data file that a table no longer holds, as the Delta
protocol stores them (PROTOCOL.md, "Deletion Vectors", "Deletion Vector Format").

* A DV is a set of row indexes of one Parquet file (0-based, 64-bit), serialized as a ``RoaringBitmapArray``: the
  magic number 1681511377 (int32 little-endian), then the RoaringBitmap "portable" 64-bit format: a bucket count
  (int64 LE), then per bucket its key (the high 32 bits, int32 LE, below 2^31) and a 32-bit portable RoaringBitmap
  of the low halves.  pyroaring's ``BitMap64.serialize`` writes exactly that portable format (CRoaring's
  ``roaring64_bitmap_portable_serialize``).
* Its :class:`DeletionVector` descriptor, in the log's ``add``/``remove`` actions, says where it is: inline (storage
  type ``i``: Z85 of the bytes, zero-padded to a multiple of 4, ``sizeInBytes`` the real length), or in a file beside
  the data (``u``: ``[random prefix]<Z85 of the 16 bytes of a UUID>`` names
  ``TABLE/[prefix/]deletion_vector_<uuid>.bin``; ``p``: an absolute path), at ``offset``.
* A DV file is a version byte (1), then per DV: its size (int32 big-endian), its bytes, their CRC-32 (int32 BE).  The
  descriptor's ``offset`` points at the size field (delta-spark's ``DeletionVectorStore``: the first DV is at 1).

:func:`write_deletion_vectors` writes a commit's DVs: each one of at most :data:`INLINE_MAX_BYTES` inline, the others
together in one new file.  :func:`read_rows` reads any descriptor back (a file DV's size field and checksum checked),
:func:`keep_mask` turns it into the boolean row filter readers apply.

Example::

    dvs = write_deletion_vectors(table, {"part-1.parquet": np.array([3, 7], np.uint64)})
    read_rows(table, dvs["part-1.parquet"])              # array([3, 7], dtype=uint64)
"""

from __future__ import annotations

import base64
import struct
import urllib.parse
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap64

from binlake.lake.records import LakeFormatError
from binlake.storage import Location, locate

__all__ = [
    "INLINE_MAX_BYTES",
    "MAGIC",
    "DeletionVector",
    "Rows",
    "decode_bitmap",
    "decode_uuid",
    "encode_bitmap",
    "encode_uuid",
    "keep_mask",
    "read_rows",
    "rows_from_text",
    "rows_to_text",
    "write_deletion_vectors",
    "z85_decode",
    "z85_encode",
]

Rows = npt.NDArray[np.uint64]  # sorted, distinct row indexes of one data file

MAGIC = 1681511377  # PROTOCOL.md, "Deletion Vector Format": the RoaringBitmapArray's magic number
FILE_FORMAT = 1  # "Deletion Vector File Storage Format": the version byte
MAX_ROW = (1 << 63) - 1  # every bucket key has a 0 as its most significant bit (read signed in Java)

#: A DV whose bytes are at most this many goes inline into the log (1280 characters of Z85 at most), a larger one into
#: the commit's DV file.  1 KiB holds up to ~500 scattered deleted rows of one file (2 bytes a row in a roaring array
#: container), more when they are runs.  Inline saves the reader of that file a request (an object-store GET per DV
#: file) and the writer a PUT; but the log and every checkpoint carry it, for every re-add of the file, until the log
#: is cleaned up, so inline stays the size of an ``add`` action with column statistics, not more.
INLINE_MAX_BYTES = 1024

_B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_TO_Z85 = str.maketrans(_B85, _Z85)
_FROM_Z85 = str.maketrans(_Z85, _B85)
_Z85_CHARS = frozenset(_Z85)
_UUID_CHARS = 20  # Z85 of 16 bytes


def z85_encode(data: bytes) -> str:
    """Z85 (ZeroMQ RFC 32: big-endian 4-byte blocks, 5 characters each) of ``data`` zero-padded to a multiple of 4
    bytes, as Delta encodes inline DVs and UUIDs.  Python's base85 is the same code with another alphabet.

    >>> z85_encode(bytes.fromhex("864FD26FB559F75B"))
    'HelloWorld'
    """
    return base64.b85encode(data, pad=True).decode("ascii").translate(_TO_Z85)


def z85_decode(text: str, size: int | None = None) -> bytes:
    """The bytes of the Z85 ``text`` (its first ``size`` bytes: an inline DV's ``sizeInBytes``)."""
    if len(text) % 5 or not _Z85_CHARS.issuperset(text):
        raise LakeFormatError(f"not Z85 text (a deletion vector or its file's id): {text[:40]!r}")
    try:
        data = base64.b85decode(text.translate(_FROM_Z85))
    except ValueError as e:
        raise LakeFormatError(f"not Z85 text (a deletion vector or its file's id): {e}") from None
    if size is not None:
        if size > len(data) or len(data) - size >= 4:
            raise LakeFormatError(f"an inline deletion vector of {len(data)} bytes said to hold {size}")
        data = data[:size]
    return data


def encode_uuid(u: uuid.UUID, prefix: str = "") -> str:
    """A file DV's ``pathOrInlineDv``: the random ``prefix`` (a folder of the table; may be empty), then the 20
    characters of Z85 of the UUID's 16 bytes (most significant first)."""
    return prefix + z85_encode(u.bytes)


def decode_uuid(text: str) -> tuple[str, uuid.UUID]:
    """(random prefix, UUID) of a file DV's ``pathOrInlineDv``: the UUID is the last 20 characters."""
    if len(text) < _UUID_CHARS:
        raise LakeFormatError(f"a deletion vector file id of {len(text)} characters (at least 20): {text!r}")
    return text[:-_UUID_CHARS], uuid.UUID(bytes=z85_decode(text[-_UUID_CHARS:]))


def _bitmap(rows: Rows) -> tuple[bytes, int]:
    """(RoaringBitmapArray bytes, cardinality) of the row indexes ``rows``."""
    rows = np.unique(np.asarray(rows, np.uint64))
    if rows.size and int(rows[-1]) > MAX_ROW:
        raise ValueError(f"row index {int(rows[-1])} beyond a deletion vector's range (2^63 - 1)")
    bitmap = BitMap64(rows)
    bitmap.run_optimize()  # runs where they are smaller (a range of deleted rows)
    return struct.pack("<i", MAGIC) + bitmap.serialize(), int(rows.size)


def encode_bitmap(rows: Rows) -> bytes:
    """The RoaringBitmapArray bytes of the row indexes ``rows`` (any order, repeats allowed)."""
    return _bitmap(rows)[0]


def rows_to_text(rows: Rows) -> str:
    """Row indexes as text (base64 of :func:`encode_bitmap`): positions in a task's JSON record."""
    return base64.b64encode(encode_bitmap(rows)).decode("ascii")


def rows_from_text(text: str) -> Rows:
    """The row indexes :func:`rows_to_text` wrote."""
    return decode_bitmap(base64.b64decode(text))


def decode_bitmap(data: bytes) -> Rows:
    """The sorted row indexes of RoaringBitmapArray bytes (the inverse of :func:`encode_bitmap`)."""
    if len(data) < 12 or struct.unpack_from("<i", data)[0] != MAGIC:
        raise LakeFormatError("not a Delta deletion vector (RoaringBitmapArray magic number missing)")
    try:
        bitmap = BitMap64.deserialize(data[4:])
    except ValueError as e:
        raise LakeFormatError(f"a damaged deletion vector: {e}") from None
    rows = np.frombuffer(bitmap.to_array(), np.uint64)
    if rows.size and int(rows[-1]) > MAX_ROW:
        raise LakeFormatError("a deletion vector with a bucket key of 2^31 or more (negative in Java)")
    return rows


@dataclass(frozen=True, slots=True)
class DeletionVector:
    """A DV descriptor (PROTOCOL.md, "Deletion Vector Descriptor Schema"): ``storage_type`` ``i`` (inline), ``u`` (a
    file named by a UUID) or ``p`` (a file by absolute path), ``path_or_inline_dv``, ``size_in_bytes`` of the
    bitmap, its ``cardinality`` (rows deleted) and, for a file, the ``offset`` of its size field."""

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DeletionVector:
        """The descriptor of an action's ``deletionVector`` object (a JSON commit's, or a checkpoint row's)."""
        kind = d.get("storageType")
        if kind not in ("i", "u", "p"):
            raise LakeFormatError(f"a deletion vector of storage type {kind!r} (known: i, u, p)")
        offset = d.get("offset")
        return cls(kind, str(d["pathOrInlineDv"]), int(d["sizeInBytes"]), int(d["cardinality"]),
                   None if offset is None else int(offset))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline_dv}
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.size_in_bytes
        out["cardinality"] = self.cardinality
        return out

    @property
    def unique_id(self) -> str:
        """What tells two DVs of one file apart in a snapshot (the protocol's derived ``uniqueId``)."""
        at = "" if self.offset is None else f"@{self.offset}"
        return f"{self.storage_type}{self.path_or_inline_dv}{at}"

    def file(self, table: Location) -> Location:
        """The DV file of this descriptor (table ``table``); an inline DV has none."""
        if self.storage_type == "u":
            prefix, u = decode_uuid(self.path_or_inline_dv)
            folder = table / prefix if prefix else table
            return folder / f"deletion_vector_{u}.bin"
        if self.storage_type == "p":
            return locate(urllib.parse.unquote(self.path_or_inline_dv))
        raise ValueError("an inline deletion vector has no file")


def read_rows(table: Location, dv: DeletionVector) -> Rows:
    """The sorted row indexes ``dv`` deletes from its data file of ``table``: decoded from the log, or read from its
    file (one ranged read: the size field, the bitmap, its CRC-32; both checked), and checked against its
    cardinality."""
    if dv.storage_type == "i":
        data = z85_decode(dv.path_or_inline_dv, dv.size_in_bytes)
    else:
        where = dv.file(table)
        offset = 1 if dv.offset is None else dv.offset
        with where.open_input() as f:
            raw = bytes(f.read_at(dv.size_in_bytes + 8, offset))
        if len(raw) != dv.size_in_bytes + 8:
            raise LakeFormatError(f"a deletion vector file ends before its DV at {offset}", file=where.uri)
        size, crc = struct.unpack_from(">i", raw)[0], struct.unpack_from(">I", raw, 4 + dv.size_in_bytes)[0]
        data = raw[4 : 4 + dv.size_in_bytes]
        if size != dv.size_in_bytes or crc != zlib.crc32(data):
            raise LakeFormatError(f"a damaged deletion vector at {offset} (size or CRC-32 differ)", file=where.uri)
    rows = decode_bitmap(data)
    if rows.size != dv.cardinality:
        raise LakeFormatError(f"a deletion vector of {rows.size} rows whose descriptor says {dv.cardinality}")
    return rows


def keep_mask(rows: Rows, num_rows: int) -> npt.NDArray[np.bool_]:
    """The row filter of a data file of ``num_rows`` rows whose deleted rows are ``rows``: True keeps a row."""
    if rows.size and int(rows[-1]) >= num_rows:
        raise LakeFormatError(f"a deletion vector deletes row {int(rows[-1])} of a file of {num_rows} rows")
    mask = np.ones(num_rows, np.bool_)
    mask[rows.astype(np.intp)] = False
    return mask


def write_deletion_vectors(
    table: Location, rows: Mapping[str, Rows], *, inline_max: int = INLINE_MAX_BYTES
) -> dict[str, DeletionVector]:
    """The descriptors of new DVs deleting ``rows[path]`` from each data file ``path`` of ``table`` (each the whole
    set the file's DV is to hold: union it with an existing DV first).  Those of at most ``inline_max`` bytes go
    inline; the others are written together into one new ``deletion_vector_<uuid>.bin`` in the table folder, which
    exists, whole, when this returns, so a commit may then reference it (a crashed writer's file stays unreferenced,
    for vacuum)."""
    out: dict[str, DeletionVector] = {}
    name = uuid.uuid4()
    body = bytearray([FILE_FORMAT])
    for path, wanted in rows.items():
        data, cardinality = _bitmap(wanted)
        if cardinality == 0:
            raise ValueError(f"no rows to delete from {path}: a file with none has no deletion vector")
        if len(data) <= inline_max:
            out[path] = DeletionVector("i", z85_encode(data), len(data), cardinality)
            continue
        out[path] = DeletionVector("u", encode_uuid(name), len(data), cardinality, len(body))
        body += struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    if len(body) > 1:
        (table / f"deletion_vector_{name}.bin").write_bytes(bytes(body))
    return out
