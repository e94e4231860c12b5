"""Test support for binlake: private MariaDB servers that write real binlogs (:mod:`binlake.testing.mariadb`).

Nothing here is used by the decoder; it is shipped with the package so the test suite, the example generator
(``python -m binlake.testing.make_example``) and users' own tests can start a server the same way.

Example::

    from binlake.testing.mariadb import MariaDBServer, available

    if available():
        with MariaDBServer() as server:
            server.execute("CREATE DATABASE d")
"""
