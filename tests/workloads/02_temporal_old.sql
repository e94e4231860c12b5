-- 02_temporal_old.sql: tables created with mysql56_temporal_format=OFF (MariaDB 5.3 TIME/DATETIME/TIMESTAMP, binlog
-- types 11/12/7). One binlog file.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE B "temporal_old": tables created with mysql56_temporal_format=OFF
-- (MariaDB 5.3 TIME/DATETIME/TIMESTAMP storage, binlog types 11/12/7).
-- Kept in its own file because `mariadb-binlog -v` stops (rc=1) on these.
-- First a fsp=0 table, then a fractional one.
-- ---------------------------------------------------------------------
FLUSH BINARY LOGS;
USE corpus_types;
SET SESSION sql_mode = '';
SET GLOBAL mysql56_temporal_format = OFF;
CREATE TABLE t_temporal_old0 (
  id INT PRIMARY KEY,
  t0 TIME, dtm0 DATETIME, ts0 TIMESTAMP NULL
) ENGINE=InnoDB;
SET GLOBAL mysql56_temporal_format = ON;
INSERT INTO t_temporal_old0 VALUES
 (1, '-838:59:59', '1000-01-01 00:00:00', '1970-01-01 00:00:01'),
 (2, '838:59:59', '9999-12-31 23:59:59', '2038-01-19 03:14:07'),
 (3, '-00:00:01', '0000-00-00 00:00:00', '0000-00-00 00:00:00'),
 (4, NULL, NULL, NULL);
UPDATE t_temporal_old0 SET t0 = '12:00:00' WHERE id = 4;
DELETE FROM t_temporal_old0 WHERE id = 3;
SET GLOBAL mysql56_temporal_format = OFF;
CREATE TABLE t_temporal_old (
  id INT PRIMARY KEY,
  t0 TIME, t3 TIME(3), t6 TIME(6),
  dtm0 DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6),
  ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, ts6 TIMESTAMP(6) NULL
) ENGINE=InnoDB;
SET GLOBAL mysql56_temporal_format = ON;
INSERT INTO t_temporal_old VALUES
 (1, '-838:59:59', '-838:59:59.999', '-838:59:59.999999', '1000-01-01 00:00:00', '1000-01-01 00:00:00.001', '1000-01-01 00:00:00.000001',
     '1970-01-01 00:00:01', '1970-01-01 00:00:01.001', '1970-01-01 00:00:01.000001'),
 (2, '838:59:59', '838:59:59.999', '838:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.999999',
     '2038-01-19 03:14:07', '2038-01-19 03:14:07.999', '2038-01-19 03:14:07.999999'),
 (3, '-00:00:01', '-00:00:00.001', '-00:00:00.000001', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000', '0000-00-00 00:00:00.000000',
     '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00'),
 (4, '12:34:56', '12:34:56.789', '-12:34:56.789012', '2024-02-29 12:34:56', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789012',
     '2024-02-29 12:34:56', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789012'),
 (5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
UPDATE t_temporal_old SET t6 = '01:00:00.5', dtm6 = NULL WHERE id = 4;
DELETE FROM t_temporal_old WHERE id = 5;
SET SESSION sql_mode = DEFAULT;
