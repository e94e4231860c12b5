-- 09_meta_minimal.sql: binlog_row_metadata=MINIMAL table maps (no column names, no PK). One binlog file.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE I "meta_minimal": binlog_row_metadata=MINIMAL (signedness, charsets,
-- enum/set values, geometry type only; no column names, no PK)
-- ---------------------------------------------------------------------
SET GLOBAL binlog_row_metadata = MINIMAL;
FLUSH BINARY LOGS;
USE corpus_types;
INSERT INTO t_int (ti, tiu, bi, biu, ti_nn) VALUES (-5, 250, -1, 18446744073709551615, 1);
INSERT INTO t_char (id, c10_l1, c10_u4, c255_u4, c10_u32, c10_uca, bin16, c_nn) VALUES (200, 'min meta', '😀', REPEAT('€', 200), 'u32', 'uca', 0x01, 'x');
UPDATE t_enum_set SET e_small = 'c', s8 = 's3,s4' WHERE id = 2;
UPDATE t_enum_big SET e300 = 'm257' WHERE id = 2;
INSERT INTO t_geo (id, pt, pt_nn) VALUES (10, ST_GeomFromText('POINT(10 10)'), ST_GeomFromText('POINT(1 2)', 4326));
INSERT INTO t_net VALUES (10, '::10', '10.0.0.10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '::10');
UPDATE t_prefix_pk SET val = 21 WHERE val = 20;
DELETE FROM t_decimal WHERE id = 7;
INSERT INTO t_temporal (id, t6, dtm6, ts6) VALUES (10, '-01:02:03.000004', '2024-01-01 00:00:00.000004', '2024-01-01 00:00:00.000004');
