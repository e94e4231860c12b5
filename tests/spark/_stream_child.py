"""A streaming query of ``binlake`` into a Parquet sink with a checkpoint, run as a process of its own so that a test
can SIGKILL it (with its JVM) and start it again from the checkpoint.

Usage: ``python -m tests.spark._stream_child SOURCE CHECKPOINT OUT follow|available [MAX_BYTES]``; ``follow`` runs
until killed (a trigger every 0.2 s), ``available`` catches up (Trigger.AvailableNow) and exits 0.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def main(argv: list[str]) -> int:
    source, checkpoint, out, mode = argv[:4]
    max_bytes = argv[4] if len(argv) > 4 else None
    from binlake.spark.session import build_session

    spark = build_session("local[2]", shuffle_partitions=2, app_name="binlake-stream-child")
    reader = spark.readStream.format("binlake").option("view", "changes").option("splitBytes", 1 << 16)
    if max_bytes is not None:
        reader = reader.option("maxBytesPerTrigger", max_bytes)
    writer = reader.load(source).writeStream.format("parquet").option("checkpointLocation", checkpoint)
    if mode == "available":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="200 milliseconds")
    query = writer.start(out)
    print("started", flush=True)
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
