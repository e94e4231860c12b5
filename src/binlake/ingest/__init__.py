"""The ingest without an engine: binlogs planned into byte ranges, decoded by tasks into Parquet files, and landed in
the lake (:mod:`binlake.lake`) a batch at a time, exactly once.  Nothing here imports Spark: the tasks run through
a :class:`~binlake.lake.runner.Runner` (this process, or Spark's executors: :class:`binlake.spark.runner.SparkRunner`).

==================  ===============================================================================================
``run``             :func:`~binlake.ingest.run.ingest`: the batch driver (plan, scan, tasks, the lake's commit)
``live``            ``binlake ingest --host``: a server's binlog mirrored into the lake and landed batch by batch
``plan``            byte ranges cut at transaction boundaries from header walks
``statements``      the driver's scan of a batch's DDL, renames and XA outcomes; the schema where a split starts
``layouts``         each table map's lake columns, and the schema history
``extract``         one split decoded into events, table-map runs, row changes and emptying statements
``tasks``           a task's work: a split's row changes written as Parquet, the last change of each key staged
``columnar``        the compiled builder of a change table's data columns straight from rows events' bytes
``arrow``           Arrow types of the lake's columns, and the data source's views
``identity``        which binlog a file is, beyond its name
``tails``           where a file's last whole transaction ends
``progress``        what a run shows while it runs
==================  ===============================================================================================

Example::

    from binlake.ingest.run import ingest
    from binlake.spark.runner import SparkRunner
    ingest(SparkRunner(spark), ["binlogs/"], "lake/")
"""
