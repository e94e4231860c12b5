"""Reading a running server's binlog as a replica does: the adapter beside :mod:`binlake.reader` for bytes that come
over a replication connection instead of from a file.

Layers, each usable alone:

- :mod:`~binlake.replication.protocol` (sans-IO): the replication commands as bytes, packet framing, server errors;
- :mod:`~binlake.replication.gtid` (sans-IO): MariaDB GTID positions, MySQL GTID sets (text and binary), tracking;
- :mod:`~binlake.replication.stream` (sans-IO): stream bytes in, events with their file and positions out, through
  the same :class:`~binlake.decoder.Decoder` as files;
- :mod:`~binlake.replication.position`: :class:`StartAt` and the stored, versioned :class:`ResumePoint`;
- :mod:`~binlake.replication.options`: connection options (asked for: :class:`ConnectionRequest`), the password;
- :mod:`~binlake.replication.connection` (IO): one connection through PyMySQL (TCP, TLS, authentication);
- :mod:`~binlake.replication.client` (IO): reconnection with backoff and exact resumption;
- :mod:`~binlake.replication.mirror`: ``binlake mirror``, a byte-for-byte copy of the server's binlogs.

Example::

    from binlake.replication import ConnectionOptions, ReplicationClient, Secret, StartAt

    options = ConnectionOptions("db1", "repl", server_id=4242, password=Secret(open("pw").read().strip()))
    for se in ReplicationClient(options, StartAt.oldest(), follow=False):
        if se.in_file:
            print(se.file, se.start, se.event.type)
"""

from binlake.replication.client import ReplicationClient
from binlake.replication.options import ConnectionOptions, RetryPolicy, Secret, TlsOptions
from binlake.replication.position import ResumePoint, StartAt
from binlake.replication.stream import ReplicationStream, StreamEvent

__all__ = [
    "ConnectionOptions",
    "ReplicationClient",
    "ReplicationStream",
    "ResumePoint",
    "RetryPolicy",
    "Secret",
    "StartAt",
    "StreamEvent",
    "TlsOptions",
]
