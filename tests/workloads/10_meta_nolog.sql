-- 10_meta_nolog.sql: binlog_row_metadata=NO_LOG and binlog_annotate_row_events=OFF. One binlog file.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE J "meta_nolog":  binlog_row_metadata=NO_LOG (no optional metadata)
-- and binlog_annotate_row_events=OFF
-- ---------------------------------------------------------------------
SET GLOBAL binlog_row_metadata = NO_LOG;
FLUSH BINARY LOGS;
SET SESSION binlog_annotate_row_events = OFF;
USE corpus_types;
INSERT INTO t_int (ti, tiu, bi, biu, ti_nn) VALUES (-6, 251, -2, 18446744073709551614, 2);
INSERT INTO t_char (id, c10_l1, c10_u4, c255_u4, c10_u32, c10_uca, bin16, c_nn) VALUES (201, 'no meta', '😀', REPEAT('€', 201), 'u32', 'uca', 0x02, 'y');
UPDATE t_enum_set SET e_small = 'a', s8 = 's5' WHERE id = 2;
INSERT INTO t_geo (id, pt, pt_nn) VALUES (11, ST_GeomFromText('POINT(11 11)'), ST_GeomFromText('POINT(3 4)', 4326));
INSERT INTO t_net VALUES (11, '::11', '10.0.0.11', NULL, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', '::11');
DELETE FROM t_decimal WHERE id = 4;
SET SESSION binlog_annotate_row_events = ON;
SET GLOBAL binlog_row_metadata = FULL;
