"""A DML workload over every table of ``tests/workloads/01_types.sql`` (every column type), generated from the
server's catalog: for each table with one INT key, copies of rows under new keys, an UPDATE of every nullable
column to NULL, a key change and a DELETE; for tables without key, the same by LIMIT.  Its changes hold every
value of every type in INSERT, UPDATE (both images) and DELETE; the replay and rollback tests run it.

Then the transaction shapes of ``03_dml.sql`` on those tables: a multi-statement transaction, savepoints with a
MyISAM table, a rolled-back transaction that changed a MyISAM table, XA committed and rolled back after prepare,
REPLACE, INSERT ... ON DUPLICATE KEY UPDATE, INSERT IGNORE, a multi-table UPDATE and DELETE."""

from __future__ import annotations

from binlake.testing.mariadb import MariaDBServer

DB = "corpus_types"
SHAPES = """
USE corpus_types;
START TRANSACTION;
UPDATE corpus_types.t_int SET ti = 3, biu = 7 WHERE id = 2;
DELETE FROM corpus_types.t_decimal WHERE id = 3;
INSERT INTO corpus_types.t_myisam VALUES (900, 'in trx', '2024-05-05 05:05:05.5');
COMMIT;
START TRANSACTION;
UPDATE corpus_types.t_char SET c10_l1 = 'keep' WHERE id = 1;
SAVEPOINT sp1;
INSERT INTO corpus_types.t_aria VALUES (901, 'aria in savepoint', NULL);
UPDATE corpus_types.t_char SET c10_l1 = 'undone' WHERE id = 1;
ROLLBACK TO SAVEPOINT sp1;
COMMIT;
START TRANSACTION;
INSERT INTO corpus_types.t_myisam VALUES (902, 'rolled back trx', NULL);
UPDATE corpus_types.t_float SET f = 99 WHERE id = 2;
ROLLBACK;
XA START 'bl-commit';
UPDATE corpus_types.t_varchar SET v63_u4 = 'xa' WHERE id = 1;
XA END 'bl-commit';
XA PREPARE 'bl-commit';
XA COMMIT 'bl-commit';
XA START 'bl-rollback';
UPDATE corpus_types.t_varchar SET v63_u4 = 'xa rolled back' WHERE id = 2;
XA END 'bl-rollback';
XA PREPARE 'bl-rollback';
XA ROLLBACK 'bl-rollback';
REPLACE INTO corpus_types.t_memory VALUES (1, 'replaced'), (903, 'new');
INSERT INTO corpus_types.t_wide9 VALUES (1, 1, 'a', 1, 1, 1, 1, 1, 1, 1) ON DUPLICATE KEY UPDATE c3 = 'iodku';
INSERT IGNORE INTO corpus_types.t_uk_nopk VALUES (1, 'dup'), (904, 'ignore new');
UPDATE corpus_types.t_int a JOIN corpus_types.t_decimal d ON a.id = d.id SET a.ti = 9, d.dnn = 9 WHERE a.id < 3;
DELETE a, d FROM corpus_types.t_bit a JOIN corpus_types.t_float d ON a.id = d.id WHERE a.id = 4;
"""


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def generic_dml(server: MariaDBServer) -> str:
    """The generated statements (module docstring), in one script."""
    out = []
    columns: dict[str, list[tuple[str, str, str, str]]] = {}
    for table, name, nullable, extra, key in server.query(
        "SELECT table_name, column_name, is_nullable, extra, column_key FROM information_schema.columns "
        f"WHERE table_schema = '{DB}' ORDER BY table_name, ordinal_position"
    ):
        columns.setdefault(str(table), []).append((str(name), str(nullable), str(extra or ""), str(key or "")))
    for table, cols in columns.items():
        t = f"{_q(DB)}.{_q(table)}"
        writable = [c for c in cols if "GENERATED" not in c[2].upper() and "VIRTUAL" not in c[2].upper()]
        keys = [c[0] for c in cols if c[3] == "PRI"]
        names = ", ".join(_q(c[0]) for c in writable)
        nulls = ", ".join(f"{_q(c[0])} = NULL" for c in writable if c[1] == "YES" and c[3] != "PRI")
        if keys == ["id"] and not table.startswith("t_wide"):
            ids = sorted(int(str(r[0])) for r in server.query(f"SELECT id FROM {t}"))
            if len(ids) < 3:
                continue
            copy = ", ".join("id + 1000" if c[0] == "id" else _q(c[0]) for c in writable)
            out.append(f"INSERT INTO {t} ({names}) SELECT {copy} FROM {t} WHERE id IN ({ids[0]}, {ids[1]});")
            if nulls:
                out.append(f"UPDATE {t} SET {nulls} WHERE id = {ids[1]};")
            out.append(f"UPDATE {t} SET id = id + 2000 WHERE id = {ids[2]};")
            out.append(f"DELETE FROM {t} WHERE id = {ids[0]};")
        elif not keys:
            out.append(f"INSERT INTO {t} ({names}) SELECT {names} FROM {t} LIMIT 2;")
            if nulls:
                out.append(f"UPDATE {t} SET {nulls} LIMIT 1;")
            out.append(f"DELETE FROM {t} LIMIT 1;")
    return "\n".join(out) + "\n" + SHAPES
