"""binlake on Spark, only what needs pyspark: the session (:mod:`.session`), the ``binlake`` data source (views
``events``, ``tablemaps``, ``changes``, and :mod:`.streaming`'s stream reader), the lake's tables as a data source
(:mod:`.lakesource`), and :class:`~binlake.spark.runner.SparkRunner`, which runs the ingest's and the snapshot's tasks
on the executors.  ``binlake ingest``'s command line is :mod:`.cli` (the ingest itself is :mod:`binlake.ingest`).

Example::

    from binlake.spark.session import build_session
    spark = build_session("local[*]")
    spark.read.format("binlake").option("view", "events").load("binlogs/").show()
"""
