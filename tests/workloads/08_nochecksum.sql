-- 08_nochecksum.sql: binlog_checksum=NONE (the change rotates the log), then back to CRC32. Two binlog files: the
-- checksum-less one, and a header-only one opened when CRC32 came back.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE H "nochecksum": binlog_checksum=NONE (changing it rotates the log)
-- ---------------------------------------------------------------------
SET GLOBAL binlog_checksum = NONE;
USE corpus_dml;
INSERT INTO accounts VALUES (600, 'no-checksum', 6.00, 'nc@example.com', '2024-06-06 06:06:06.000006', 'crc none');
UPDATE accounts SET balance = balance + 1, note = NULL WHERE id = 600;
DELETE FROM accounts WHERE id = 600;
CREATE TABLE nc (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;
INSERT INTO nc VALUES (1, 'a'), (2, 'b');
SET SESSION binlog_format = STATEMENT;
SET @nc_var = 'user var, no checksum';
INSERT INTO corpus_stmt.s (v, r) VALUES (@nc_var, RAND(3));
SET SESSION binlog_format = ROW;
XA START 'xa-nochecksum';
INSERT INTO nc VALUES (3, 'xa');
XA END 'xa-nochecksum';
XA PREPARE 'xa-nochecksum';
XA COMMIT 'xa-nochecksum';
SET GLOBAL binlog_checksum = CRC32;
