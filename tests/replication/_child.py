"""A replication consumer that a test kills with SIGKILL: it appends one JSON line per event of the server's files
(where it is, and the resume point after it) to a log, and on start goes on from the resume point of the log's last
whole line (a line cut by the kill is dropped).  ``python -m tests.replication._child PORT LOG MODE FOLLOW [GTID]``;
the password comes from ``BINLAKE_PASSWORD``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from binlake.replication import ConnectionOptions, ReplicationClient, ResumePoint, RetryPolicy, Secret, StartAt


def main(port: int, log: Path, mode: str, follow: bool, gtid: str) -> int:
    lines = log.read_bytes().split(b"\n") if log.exists() else [b""]
    whole = [json.loads(x) for x in lines[:-1]]
    if lines[-1]:  # a line the kill cut
        log.write_bytes(b"".join(x + b"\n" for x in lines[:-1]))
    point = ResumePoint.from_json(whole[-1]["point"]) if whole else None
    if point is not None:
        start = StartAt.resume(point, by="gtid" if mode == "gtid" else "position")
    else:
        start = StartAt.after_gtid(gtid) if mode == "gtid" else StartAt.oldest()
    options = ConnectionOptions(
        "127.0.0.1",
        "repl_native",
        server_id=5151,
        port=port,
        password=Secret(os.environ["BINLAKE_PASSWORD"]),
        heartbeat=0.5,
        timeout=5.0,
        retry=RetryPolicy(60, 0.05, 0.5),
    )
    client = ReplicationClient(options, start, follow=follow)
    with log.open("a", encoding="utf-8") as out:
        for se in client:
            if se.in_file and se.event.header.in_payload is None:
                resume = client.resume_point
                assert resume is not None
                row = {"file": se.file, "start": se.start, "end": se.end, "type": se.event.type}
                out.write(json.dumps({**row, "point": resume.to_json()}) + "\n")
                out.flush()
    return 0


if __name__ == "__main__":
    port, log, mode, follow = sys.argv[1:5]
    sys.exit(main(int(port), Path(log), mode, follow == "1", sys.argv[5] if len(sys.argv) > 5 else ""))
