"""Where bytes live: local paths and object-store URIs, read and written through one filesystem layer (``pyarrow.fs``).

A :class:`Location` is a URI: ``s3://bucket/key``, ``gs://bucket/key`` (``gcs://``), ``abfs://container@account.dfs.
core.windows.net/key`` (``abfss://``), ``hdfs://host:port/path``, ``file:///path`` or a plain path.  ``pyarrow.fs``
serves every scheme it knows (``FileSystem.from_uri``); a scheme it lacks goes to ``fsspec`` when that is installed
(``pip install fsspec`` and the scheme's own package).  The lake, the ingest driver and its tasks, the Spark data
sources and the decoding commands all read and write through it; Delta commits go through ``deltalake`` with the
storage options :meth:`Location.delta_options` derives from the same URI and environment.

Credentials are each cloud's standard environment and configuration, read by pyarrow and deltalake themselves (for S3:
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``,
``AWS_PROFILE`` and ``~/.aws``; GCS: ``GOOGLE_APPLICATION_CREDENTIALS``; Azure: ``AZURE_STORAGE_ACCOUNT_NAME``,
``AZURE_STORAGE_ACCOUNT_KEY`` ...).  binlake passes none on, logs none and pickles none: a :class:`Location` travels
(to a Spark executor, into a manifest) as its URI alone, and each process resolves its own filesystem from its own
environment.

Example::

    lake = locate("s3://bucket/lake")
    (lake / "_binlake" / "note.txt").write_bytes(b"hello")     # one PUT (a rename into place on local disk)
    [e.location.name for e in lake.list()]
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import threading
import time
import urllib.parse
import uuid
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from binlake.errors import BinlogError, ExitStatus

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = [
    "PART",
    "Entry",
    "Location",
    "Piece",
    "SegmentedFile",
    "StorageError",
    "StoreUnreachable",
    "StoredFile",
    "binlog_copies",
    "binlog_pieces",
    "binlog_source",
    "locate",
    "segment_name",
    "store_error",
    "store_reason",
    "writing",
]


class StorageError(BinlogError):
    """A location binlake cannot use: an unknown scheme, a missing object, a store that refused a request."""


class StoreUnreachable(StorageError):
    """A store that could not be reached through its client's retries (a connection refused, reset or timed out):
    a reason that passes, so the command's status is :attr:`~binlake.errors.ExitStatus.TEMPORARY`."""

    exit_status = ExitStatus.TEMPORARY


# what a store's client says when the network failed, not the store: delta-rs (object_store, reqwest), pyarrow (the
# AWS SDK, curl), botocore, the OS
_UNREACHABLE = re.compile(
    r"connection (refused|reset|error|closed|aborted)|error sending request|\(Connect\)|\(SendRequest\)|timed out|"
    r"couldn'?t connect|could not connect|NETWORK_CONNECTION|curlCode: (7|28|52|55|56)|broken pipe|EndpointConnection",
    re.IGNORECASE,
)


def store_error(what: str, e: BaseException, file: str) -> StorageError:
    """The error of ``what`` (``"cannot write"``, ``"Delta commit failed"``) failing at ``file`` for ``e``: the
    store's reason in one line (:func:`store_reason`), a :class:`StoreUnreachable` where the network failed (a
    later run goes on), else a :class:`StorageError` (a store that refuses, a full disk, a read-only one)."""
    cls = (
        StoreUnreachable
        if isinstance(e, ConnectionError | TimeoutError) or _UNREACHABLE.search(str(e))
        else StorageError
    )
    return cls(f"{what}: {store_reason(e)}", file=file)


@contextlib.contextmanager
def writing(loc: Location) -> Iterator[None]:
    """The block writing the file at ``loc``: pyarrow's (or the system's) error of a file that cannot be written (a
    full disk, one gone read-only, a store that refuses) raised as :func:`store_error`'s error naming it."""
    try:
        yield
    except OSError as e:
        raise store_error("cannot write", e, loc.uri) from None


def store_reason(e: BaseException) -> str:
    """A store's reason in one line: the OS's message of a delta-rs error (``Os { code: 20, kind: NotADirectory,
    message: "Not a directory" }`` -> ``Not a directory``), an object store's error code and message (S3's XML
    ``<Code>``/``<Message>``), an OS error's own text, else the error's text on one line (delta-rs' colour codes
    and indented causes folded in).

    >>> store_reason(OSError('Could not create directory\\nError: Os { code: 30, message: "Read-only file system" }'))
    'Read-only file system'
    >>> store_reason(OSError("404 Not Found <Error><Code>NoSuchBucket</Code><Message>No bucket</Message></Error>"))
    'NoSuchBucket: No bucket'
    >>> store_reason(OSError(28, "No space left on device"))
    'No space left on device'
    """
    text = str(e)
    found = re.search(r'message: "([^"]*)"', text)
    if found:
        return found[1]
    code, message = re.search(r"<Code>([^<]*)</Code>", text), re.search(r"<Message>([^<]*)</Message>", text)
    if code and message:
        return f"{code[1]}: {message[1]}"
    if isinstance(e, OSError) and e.strerror and not e.filename:
        return e.strerror
    return " ".join(re.sub(r"\x1b\[[0-9;]*m|↳", " ", text).split())[:500]


@dataclass(frozen=True, slots=True)
class Entry:
    """One object or folder found by :meth:`Location.list`: ``mtime_ns`` is when it was last written (``None``
    where the store does not say: a folder of an object store)."""

    location: Location
    is_dir: bool
    size: int
    mtime_ns: int | None = None


def locate(text: str | os.PathLike[str] | Location) -> Location:
    """The :class:`Location` of a URI or a path (made absolute; ``file://`` URIs are plain paths).

    >>> locate("s3://bucket/lake/").uri, locate("file:///data/lake").uri
    ('s3://bucket/lake', '/data/lake')
    >>> (locate("s3://bucket/lake") / "db" / "t").uri
    's3://bucket/lake/db/t'
    """
    if isinstance(text, Location):
        return text
    raw = os.fspath(text)
    if "://" not in raw:
        return Location(os.path.abspath(raw))
    scheme, rest = raw.split("://", 1)
    scheme = scheme.lower()
    if scheme == "file":
        return Location(os.path.abspath(urllib.parse.unquote(urllib.parse.urlsplit(raw).path)))
    netloc, _, path = rest.partition("/")
    if not netloc:
        raise StorageError(f"{scheme}:// needs a bucket, container or host: {raw}")
    path = "/".join(p for p in path.split("/") if p)
    return Location(f"{scheme}://{netloc}/{path}" if path else f"{scheme}://{netloc}")


@dataclass(frozen=True, slots=True)
class Location:
    """A file or folder, local or in an object store, by its URI (a plain absolute path for local ones).

    Picklable as its URI: its filesystem is resolved (and cached) by each process that uses it."""

    uri: str

    # -- naming ------------------------------------------------------------------------------------------------

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri

    @property
    def scheme(self) -> str:
        return "file" if self.is_local else self.uri.split("://", 1)[0]

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        head = self.uri.rstrip("/").rsplit("/", 1)[0]
        return Location(head or "/")

    def __truediv__(self, part: str) -> Location:
        """The child ``part`` (one name, or several joined by ``/``)."""
        if not part or part.startswith("/") or ".." in part.split("/"):
            raise ValueError(f"not a relative name below {self.uri}: {part!r}")
        return Location(f"{self.uri.rstrip('/')}/{part}")

    def relative_to(self, base: Location) -> str:
        """This location's path below ``base`` (``a/b``)."""
        prefix = base.uri.rstrip("/") + "/"
        if not self.uri.startswith(prefix):
            raise ValueError(f"{self.uri} is not below {base.uri}")
        return self.uri[len(prefix) :]

    def __str__(self) -> str:
        return self.uri

    # -- the filesystem --------------------------------------------------------------------------------------------

    @property
    def fs(self) -> pafs.FileSystem:
        return _filesystem(self)[0]

    @property
    def path(self) -> str:
        """The location's path inside :attr:`fs` (``bucket/key`` for S3, the absolute path for local files)."""
        return _filesystem(self)[1]

    def info(self) -> Any:
        """pyarrow's ``FileInfo`` (``type``, ``size``, ``mtime_ns``) of this location."""
        return _call(self, lambda: self.fs.get_file_info(self.path))

    def exists(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self.info().type != pafs.FileType.NotFound)

    def is_dir(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self.info().type == pafs.FileType.Directory)

    def list(self, *, recursive: bool = False) -> list[Entry]:
        """What the folder holds (nothing when it does not exist), sorted by URI."""
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.path, allow_not_found=True, recursive=recursive)
        infos = _call(self, lambda: self.fs.get_file_info(selector))
        base = self.path.rstrip("/")
        out = []
        for i in infos:
            rel = i.path[len(base) + 1 :] if i.path.startswith(base + "/") else i.base_name
            out.append(Entry(self / rel, i.type == pafs.FileType.Directory, i.size or 0, i.mtime_ns))
        return sorted(out, key=lambda e: e.location.uri)

    def read_bytes(self) -> bytes:
        def read() -> bytes:
            with self.fs.open_input_stream(self.path) as f:
                return bytes(f.read())

        data: bytes = _call(self, read)
        return data

    def write_bytes(self, data: bytes) -> None:
        """Write ``data`` as this file, atomically: readers see the old content or the new, never a part (an object
        store's single PUT; a local file is written beside and renamed into place, after an fsync)."""
        if self.is_local:
            tmp = f"{self.uri}.tmp{os.getpid()}-{threading.get_ident()}"
            try:
                os.makedirs(os.path.dirname(self.uri), exist_ok=True)
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.uri)
            except OSError as e:  # a full disk, a read-only one: no part left behind
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise store_error("cannot write", e, self.uri) from None
            return

        def put() -> None:
            with self.fs.open_output_stream(self.path) as f:
                f.write(data)

        _call(self, lambda: _retrying(self, put))

    def create_bytes(self, data: bytes) -> bool:
        """Write ``data`` as this file only if there is none yet, atomically: whether it wrote (``False``: the file
        was there, left as it was).  Of writers racing to create one file exactly one succeeds where the store can
        say so: a local disk links a fully written file into place (``link`` never replaces), S3 takes a
        conditional PUT (``If-None-Match: *``, which pyarrow's S3 client cannot send: botocore sends it, with the
        same credential chain and ``AWS_ENDPOINT_URL``).  Other stores (GCS, Azure, HDFS, fsspec) are asked whether
        the file exists, then written: the caller must be the only writer (the lake's writer lease, checked just
        before).
        """
        if self.is_local:
            os.makedirs(os.path.dirname(self.uri), exist_ok=True)
            # a hidden name no reader listing the folder takes for the file's (a Delta log's ``N.json``)
            tmp = os.path.join(os.path.dirname(self.uri), f".{self.name}.{uuid.uuid4().hex}.tmp")
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                try:
                    os.link(tmp, self.uri)
                except FileExistsError:
                    return False
            except OSError as e:
                raise store_error("storage error", e, self.uri) from e
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            return True
        if self.scheme in ("s3", "s3a"):
            return _s3_create(self, data)
        if self.exists():
            return False
        self.write_bytes(data)
        return True

    def open_input(self) -> Any:
        """A seekable binary file (pyarrow ``RandomAccessFile``) reading this location."""
        return _call(self, lambda: self.fs.open_input_file(self.path))

    def open_mapped(self) -> Any:
        """:meth:`open_input`, but a local file is mapped into memory: Arrow reads its uncompressed buffers without
        a copy (they stay valid after the file is closed, or removed)."""
        if self.is_local:
            import pyarrow as pa

            return _call(self, lambda: pa.memory_map(self.path))
        return self.open_input()

    def open_output(self) -> Any:
        """A binary output stream writing this file (its folders created first on a local disk)."""
        if self.is_local:
            _call(self, lambda: os.makedirs(os.path.dirname(self.uri), exist_ok=True))
        return _call(self, lambda: self.fs.open_output_stream(self.path))

    def copy_to(self, dst: Location) -> None:
        """Copy this file to ``dst``, a new file on the same store (an object store copies it server-side)."""
        if dst.is_local:
            os.makedirs(os.path.dirname(dst.uri), exist_ok=True)
        _call(self, lambda: self.fs.copy_file(self.path, dst.path))

    def delete_dir(self) -> None:
        """Remove this folder and everything below it (nothing when it does not exist)."""
        if self.exists():
            _call(self, lambda: self.fs.delete_dir(self.path))

    def delete(self) -> None:
        """Remove this file (nothing when it does not exist)."""
        if self.exists():
            _call(self, lambda: self.fs.delete_file(self.path))

    # -- deltalake ------------------------------------------------------------------------------------------------

    @property
    def delta_uri(self) -> str:
        """This location as ``deltalake`` names a table (``s3://...`` or a local path; ``gs://`` for ``gcs://``)."""
        return "gs://" + self.uri[len("gcs://") :] if self.uri.startswith("gcs://") else self.uri

    def delta_options(self) -> dict[str, str]:
        """``deltalake`` storage options for this location, derived from the environment: delta-rs reads each cloud's
        credentials and endpoint from the environment itself, and needs only to be told that an S3-compatible
        endpoint at an ``http://`` URL (a private server, MinIO, moto) may be used without TLS.  Holds no secret."""
        if self.scheme in ("s3", "s3a"):
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
            if endpoint.startswith("http://"):
                return {"allow_http": "true"}
        return {}


def _call(loc: Location, fn: Any) -> Any:
    """``fn()``, an error of the store (refused, unreachable, missing) raised as a :class:`StorageError` naming
    the location (the stores' messages hold no credentials)."""
    try:
        return fn()
    except FileNotFoundError as e:
        raise StorageError(f"not found: {e}", file=loc.uri) from e
    except OSError as e:
        raise store_error("storage error", e, loc.uri) from e


_log = logging.getLogger(__name__)

#: Words of an object store's error that say it failed this time, not for good (S3's InternalError, SlowDown and
#: ServiceUnavailable as the AWS SDK behind pyarrow names them; HTTP 500/503).
_TRANSIENT = ("INTERNAL_FAILURE", "SLOW_DOWN", "SERVICE_UNAVAILABLE", "Status Code: 500", "Status Code: 503")
_PUT_ATTEMPTS = 5


def _retrying(loc: Location, put: Any) -> None:
    """``put()``, a whole-object write, again after a store's transient failure, up to :data:`_PUT_ATTEMPTS` times
    with capped exponential backoff and one log line per retry.  A whole PUT is idempotent, so a retry cannot leave
    a part behind; an error that is not transient is raised at once."""
    for attempt in range(1, _PUT_ATTEMPTS + 1):
        try:
            put()
            return
        except OSError as e:
            if isinstance(e, FileNotFoundError) or attempt == _PUT_ATTEMPTS or not any(w in str(e) for w in _TRANSIENT):
                raise
            delay = min(0.2 * 2 ** (attempt - 1), 2.0)
            _log.warning("%s: the store failed a write (%s); retry %d in %.1f s", loc.uri, e, attempt, delay)
            time.sleep(delay)


_S3_CLIENTS: dict[str, Any] = {}  # per process: botocore clients are thread-safe


def _s3_create(loc: Location, data: bytes) -> bool:
    """:meth:`Location.create_bytes` on S3: a PUT with ``If-None-Match: *`` (AWS since August 2024, MinIO, moto;
    a store that ignores the header overwrites, as for delta-rs' own commits there).  412 (the object exists) and
    409 (a conditional PUT of the same key in flight) mean another writer got there first, unless an earlier try
    of this one failed after all and the object holds ``data``."""
    try:
        import botocore.session
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise StorageError(
            "conditional writes to S3 need botocore (pip install 'binlake[spark]')", file=loc.uri
        ) from None
    bucket, _, key = loc.uri.split("://", 1)[1].partition("/")
    region = os.environ.get("AWS_REGION") or None  # else botocore's own: AWS_DEFAULT_REGION, the profile
    # one client per endpoint and region of the environment, as the filesystem layer's (a process whose
    # environment names another S3 endpoint later gets a client of that one)
    endpoint = f"{os.environ.get('AWS_ENDPOINT_URL_S3') or os.environ.get('AWS_ENDPOINT_URL') or ''} {region}"
    with _LOCK:
        client = _S3_CLIENTS.get(endpoint)
        if client is None:
            client = _S3_CLIENTS[endpoint] = botocore.session.get_session().create_client("s3", region_name=region)

    tries: list[int] = []

    def put() -> bool:
        tries.append(1)
        try:
            client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except ClientError as e:
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status in (409, 412):
                # after a failed try, the object there may be this very write: that try's PUT landed
                return len(tries) > 1 and loc.read_bytes() == data
            code = e.response.get("Error", {}).get("Code", "")
            if status in (500, 503) or code in ("InternalError", "SlowDown", "ServiceUnavailable"):
                raise OSError(f"Status Code: {status}: {code}") from None  # transient: _retrying tries again
            raise StorageError(f"storage error: {code or status}: {e}", file=loc.uri) from None
        except BotoCoreError as e:
            raise store_error("storage error", e, loc.uri) from None
        return True

    written: list[bool] = []
    _call(loc, lambda: _retrying(loc, lambda: written.append(put())))
    return written[0]


_FILESYSTEMS: dict[tuple[str, str], tuple[Any, str]] = {}  # (scheme, netloc) -> (filesystem, its root path)
_LOCK = threading.Lock()


def _filesystem(loc: Location) -> tuple[Any, str]:
    """(filesystem, path inside it) of ``loc``: one filesystem per scheme and bucket (host, container) per process."""
    if loc.is_local:
        import pyarrow.fs as pafs

        return pafs.LocalFileSystem(), loc.uri
    scheme, rest = loc.uri.split("://", 1)
    netloc, _, path = rest.partition("/")
    key = (scheme, netloc)
    with _LOCK:
        held = _FILESYSTEMS.get(key)
        if held is None:
            held = _FILESYSTEMS[key] = _resolve(scheme, netloc)
    fs, root = held
    return fs, (f"{root.rstrip('/')}/{path}" if path else root)


def _resolve(scheme: str, netloc: str) -> tuple[Any, str]:
    import pyarrow as pa
    import pyarrow.fs as pafs

    uri = f"{scheme}://{netloc}/"
    try:
        fs, root = pafs.FileSystem.from_uri("s3://" + uri[len("s3a://") :] if scheme == "s3a" else uri)
        return fs, root.rstrip("/") or ("/" if scheme in ("hdfs", "viewfs") else root)
    except pa.ArrowInvalid as e:
        if "Unrecognized filesystem type" not in str(e):
            raise StorageError(f"cannot use {uri}: {e}", file=uri) from e
    except OSError as e:
        raise StorageError(f"cannot use {uri}: {e}", file=uri) from e
    try:
        import fsspec  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise StorageError(
            f"no filesystem for {scheme}://: pyarrow has none, and fsspec is not installed "
            f"(pip install fsspec and the package for {scheme}://)",
            file=uri,
        ) from None
    try:
        spec = fsspec.filesystem(scheme)
    except (ImportError, ValueError) as e:
        raise StorageError(f"no filesystem for {scheme}://: {e}", file=uri) from e
    root = spec._strip_protocol(uri)
    return pafs.PyFileSystem(pafs.FSSpecHandler(spec)), root


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A binlog in an object store, as :mod:`binlake.reader` reads it (its ``Source``): a name for errors, the
    size, a seekable stream (each ``read`` one ranged request: the reader asks for large chunks)."""

    location: Location

    @property
    def name(self) -> str:
        return self.location.uri

    def size(self) -> int:
        return int(self.location.info().size or 0)

    def open(self) -> BinaryIO:
        return cast("BinaryIO", self.location.open_input())

    def identity(self) -> tuple[object, ...]:
        info = self.location.info()
        return (info.size, info.mtime_ns)


def binlog_source(path: str | os.PathLike[str]) -> str | StoredFile | SegmentedFile:
    """What :mod:`binlake.reader` reads for ``path``: a local path as it is (memory-mapped, the fast path), a
    ``file://`` URI as its path, the folder of a segmented copy (``.../NAME.part``) as a :class:`SegmentedFile`,
    any other URI as a :class:`StoredFile`."""
    text = os.fspath(path)
    if "://" not in text:
        return text
    loc = locate(text)
    if loc.is_local:
        return loc.uri
    if loc.name.endswith(PART):
        return SegmentedFile(loc.parent, loc.name[: -len(PART)])
    return StoredFile(loc)


# -- binlog copies in segments ------------------------------------------------------------------------------------

PART = ".part"
"""The suffix of the folder of a binlog copy kept in segments: ``FOLDER/NAME.part/OFFSET`` holds the copy's bytes
from ``OFFSET`` on (the live ingest's mirror writes one segment per sync into an object store, which has no
appends; see :mod:`binlake.replication.mirror`)."""


def segment_name(offset: int) -> str:
    """The object name of the segment starting at byte ``offset`` (zero-padded: listings sort it in place).

    >>> segment_name(4)
    '00000000000000000004'
    """
    return f"{offset:020d}"


@dataclass(frozen=True, slots=True)
class Piece:
    """One object holding bytes of a binlog copy: from ``offset`` on, ``size`` bytes."""

    offset: int
    location: Location
    size: int
    mtime_ns: int | None

    @property
    def end(self) -> int:
        return self.offset + self.size


def _chain(whole: Entry | None, segments: list[Entry]) -> list[Piece]:
    """The pieces of one copy: the whole object ``NAME`` where there is one (a lake written before segments, or a
    local folder), then each segment that starts where the bytes so far end.  A segment off that chain (none is
    written so; a leftover at most) holds no byte of the copy."""
    pieces = [] if whole is None else [Piece(0, whole.location, whole.size, whole.mtime_ns)]
    at = {int(e.location.name): e for e in segments if not e.is_dir and e.location.name.isdigit()}
    end = whole.size if whole is not None else 0
    while (e := at.get(end)) is not None and e.size > 0:
        pieces.append(Piece(end, e.location, e.size, e.mtime_ns))
        end += e.size
    return pieces


def binlog_copies(folder: Location) -> dict[str, list[Piece]]:
    """Every binlog copy in ``folder``, plain files and segmented copies alike: its name -> the objects that hold
    its bytes, in order (:func:`binlog_pieces` of each).  One listing of the folder, one of each ``NAME.part``."""
    whole: dict[str, Entry] = {}
    parts: dict[str, list[Entry]] = {}
    for entry in folder.list():
        name = entry.location.name
        if entry.is_dir and name.endswith(PART) and len(name) > len(PART):
            parts[name[: -len(PART)]] = entry.location.list()
        elif not entry.is_dir:
            whole[name] = entry
    copies = {name: _chain(whole.get(name), parts.get(name, [])) for name in sorted({*whole, *parts})}
    return {name: pieces for name, pieces in copies.items() if pieces}


def binlog_pieces(folder: Location, name: str) -> list[Piece]:
    """What bytes binlog ``name`` of ``folder`` holds: the objects holding them, in order (empty: no copy).  The one
    answer the decode (:func:`binlog_source`, :func:`binlake.binlogs.list_binlogs`), the mirror's recovery and
    ``binlake maintain`` take: a plain file ``FOLDER/NAME``, or the segments ``FOLDER/NAME.part/OFFSET`` that
    continue it (or start at 0 where there is no plain file)."""
    import pyarrow.fs as pafs

    loc = folder / name
    info = loc.info()
    whole = Entry(loc, False, int(info.size or 0), info.mtime_ns) if info.type == pafs.FileType.File else None
    return _chain(whole, (folder / (name + PART)).list())


class SegmentedFile:
    """A binlog copy held by several objects (:func:`binlog_pieces`), as :mod:`binlake.reader` reads it (its
    ``Source``): one file whose byte ranges may span segments.  The pieces are listed once, when first asked for
    (a source does not grow while it is read), and travel with the instance when it is pickled."""

    __slots__ = ("_pieces", "file", "folder")

    def __init__(self, folder: Location, file: str, pieces: list[Piece] | None = None) -> None:
        self.folder, self.file, self._pieces = folder, file, pieces

    @property
    def name(self) -> str:
        return (self.folder / self.file).uri

    @property
    def pieces(self) -> list[Piece]:
        if self._pieces is None:
            self._pieces = binlog_pieces(self.folder, self.file)
            if not self._pieces:
                raise StorageError("not found: no copy of this binlog", file=self.name)
        return self._pieces

    def size(self) -> int:
        return self.pieces[-1].end

    def open(self) -> BinaryIO:
        return cast("BinaryIO", _PiecesReader(self.pieces))

    def identity(self) -> tuple[object, ...]:
        first, last = self.pieces[0], self.pieces[-1]  # the first is rewritten when the in-use flag is cleared
        return (last.end, first.mtime_ns, last.location.uri, last.mtime_ns)

    def __getstate__(self) -> tuple[Location, str, list[Piece] | None]:
        return (self.folder, self.file, self._pieces)

    def __setstate__(self, state: tuple[Location, str, list[Piece] | None]) -> None:
        self.folder, self.file, self._pieces = state


class _PiecesReader(io.RawIOBase):
    """A seekable binary stream over the pieces of a copy: each ``read`` one ranged request per piece it spans (one
    piece held open at a time: a copy may have thousands)."""

    def __init__(self, pieces: list[Piece]) -> None:
        super().__init__()
        self._pieces = pieces
        self._starts = [p.offset for p in pieces]
        self._size = pieces[-1].end if pieces else 0
        self._pos = 0
        self._open: tuple[int, Any] | None = None  # the piece read last (its index) and its opened object

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        stop = self._size if size is None or size < 0 else min(self._size, self._pos + size)
        out = []
        while self._pos < stop:
            i = bisect_right(self._starts, self._pos) - 1
            piece = self._pieces[i]
            if self._open is None or self._open[0] != i:
                self._close_piece()
                self._open = (i, piece.location.open_input())
            f = self._open[1]
            try:  # (an object shorter than its listing: pyarrow's "Cannot seek past end of file")
                f.seek(self._pos - piece.offset)
                data = bytes(f.read(min(stop, piece.end) - self._pos))
            except OSError as e:
                raise store_error("storage error", e, piece.location.uri) from e
            if not data:
                raise StorageError(
                    f"a piece of the copy ends before its listed size ({piece.size})", file=piece.location.uri
                )
            out.append(data)
            self._pos += len(data)
        return b"".join(out)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _close_piece(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def close(self) -> None:
        self._close_piece()
        super().close()
