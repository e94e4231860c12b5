-- 11_tail.sql: two consecutive FLUSH BINARY LOGS (an empty file), then one insert. Two binlog files (the
-- fixture's final FLUSH closes the last one; a STOP event is tested with a server of its own).
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE K "tail": two empty rotations, then a last file that gen.sh ends
-- by shutting the server down (=> Stop event at its end)
-- ---------------------------------------------------------------------
FLUSH BINARY LOGS;
FLUSH BINARY LOGS;
USE corpus_dml;
INSERT INTO accounts VALUES (700, 'last before shutdown', 7.00, NULL, NULL, 'stop event follows');
