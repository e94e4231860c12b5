"""binlake's one reader of SQL statement text: the statements QUERY events log, and schema scripts.

* :mod:`binlake.sql.lexer`: the tokenizer (comments, executable comments, quoting under the statement's sql_mode:
  ANSI_QUOTES, NO_BACKSLASH_ESCAPES) and the byte prefilter built from the same grammar;
* :mod:`binlake.sql.cursor`: a lazy cursor over a statement's tokens, and the statement heads (CREATE, DROP,
  ALTER, RENAME) more than one reader needs;
* :mod:`binlake.sql.statements`: the statement shapes binlake reads, one function each: transaction control, XA
  outcomes, the tables a statement empties, the tables it renames, each read in the statement's session's
  temporary tables (its :class:`~binlake.sql.statements.Scope`).  The DDL that changes columns is followed by
  :class:`binlake.schema.SchemaTracker` on the same lexer and heads;
* :mod:`binlake.sql.temporary`: each session's temporary tables, followed as the server keeps them (a statement
  naming ``t`` in a session with a temporary ``t`` acts on that table, not on the base table ``t``).

Why a lexer of its own and not sqlglot's MySQL dialect: measured on the 1,286 statements of the corpus' QUERY events
(``python benchmarks/sql_readers.py``, sqlglot 30.30, one core): reading the shapes binlake needs takes 11 us a
statement here against 180 us for ``sqlglot.parse(read="mysql")`` (55 us for its tokenizer alone), and sqlglot reads
wrong or not at all the statements that matter most: it drops executable comments as comments (``DROP /*!40005
TEMPORARY */ TABLE t``, which the servers write at disconnect, reads as a DROP of the base table; ``CREATE /*M!100100
OR REPLACE */ TABLE`` loses its OR REPLACE), fails on every XA statement (6 in the corpus) and on 14 CREATEs, leaves
RENAME TABLE and 40 other DDL statements as unparsed ``Command`` text, reads ``SAVEPOINT x`` as a column alias, and
has no per-statement ANSI_QUOTES.  binlake needs a few statement shapes read exactly as the server reads them, not
a syntax tree of every statement: a small lexer over the servers' own token rules does that, in the standard library.

Example::

    >>> from binlake.sql.statements import control, emptied
    >>> control("/* app */ COMMIT WORK"), emptied("DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `t`", "shop")
    (Control(kind='commit', name='', xid=None, one_phase=False), ())
"""
