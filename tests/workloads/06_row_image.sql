-- 06_row_image.sql: binlog_row_image=MINIMAL and NOBLOB sessions (partial images, PK and no-PK tables). One file.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE F "row_image": binlog_row_image MINIMAL and NOBLOB (session)
-- ---------------------------------------------------------------------
FLUSH BINARY LOGS;
USE corpus_stmt;
CREATE TABLE ri (id INT PRIMARY KEY, a INT, b VARCHAR(20), c TEXT, d BLOB, e DATETIME(6), f INT NOT NULL DEFAULT 5) ENGINE=InnoDB;
CREATE TABLE ri_nopk (a INT, b VARCHAR(20), c TEXT) ENGINE=InnoDB;
INSERT INTO ri VALUES (1, 1, 'one', 'text one', 0x01, '2024-01-01 00:00:00.1', 1),
                      (2, 2, 'two', 'text two', 0x02, NULL, 2),
                      (3, 3, 'three', NULL, NULL, NULL, 3);
INSERT INTO ri_nopk VALUES (1, 'a', 'ta'), (2, 'b', 'tb'), (3, 'c', NULL);
SET SESSION binlog_row_image = MINIMAL;
INSERT INTO ri (id, a) VALUES (10, 10);
UPDATE ri SET a = a + 1 WHERE id = 1;
UPDATE ri SET b = NULL, c = 'minimal text' WHERE id = 2;
UPDATE ri SET id = 20 WHERE id = 3;
DELETE FROM ri WHERE id = 10;
UPDATE ri_nopk SET b = 'min' WHERE a = 1;
DELETE FROM ri_nopk WHERE a = 2;
SET SESSION binlog_row_image = NOBLOB;
INSERT INTO ri VALUES (30, 30, 'thirty', 'noblob text', 0x30, NULL, 30);
UPDATE ri SET a = 100 WHERE id = 1;
UPDATE ri SET c = 'noblob changed text' WHERE id = 2;
DELETE FROM ri WHERE id = 30;
UPDATE ri_nopk SET b = 'noblob';
DELETE FROM ri_nopk WHERE a = 3;
SET SESSION binlog_row_image = FULL;
UPDATE ri SET a = 1000 WHERE id = 1;
