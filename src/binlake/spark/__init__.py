"""binlake on Spark: the ``binlake`` data source (views ``events``, ``tablemaps``, ``changes``) and ``binlake ingest``
(binlogs -> Delta tables, incremental and exactly once).

Example::

    from binlake.spark.session import build_session
    spark = build_session("local[*]")
    spark.read.format("binlake").option("view", "events").load("binlogs/").show()
"""
