-- 04_ddl.sql: ALTER TABLE between DML (table map changes), TRUNCATE, RENAME, two-phase ALTER, DROP, CREATE OR
-- REPLACE, with a FLUSH in the middle. Two binlog files.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE D "ddl": ALTER TABLE mid-stream (table map changes), TRUNCATE,
-- RENAME, two-phase ALTER; a rotate in the middle of the section
-- ---------------------------------------------------------------------
FLUSH BINARY LOGS;
USE corpus_dml;
CREATE TABLE evolve (id INT PRIMARY KEY, a INT, b VARCHAR(20), c DATETIME) ENGINE=InnoDB;
INSERT INTO evolve VALUES (1, 1, 'one', '2024-01-01 00:00:00'), (2, 2, 'two', NULL);
ALTER TABLE evolve ADD COLUMN x DECIMAL(10,2) AFTER a;
INSERT INTO evolve VALUES (3, 3, 3.33, 'three', '2024-01-03 00:00:00');
UPDATE evolve SET x = 1.11 WHERE id = 1;
ALTER TABLE evolve DROP COLUMN b;
INSERT INTO evolve VALUES (4, 4, 4.44, '2024-01-04 00:00:00');
UPDATE evolve SET a = 40 WHERE id = 4;
DELETE FROM evolve WHERE id = 2;
ALTER TABLE evolve MODIFY a BIGINT UNSIGNED NOT NULL DEFAULT 0, CHANGE c c_renamed DATETIME(6);
INSERT INTO evolve VALUES (5, 18446744073709551615, 5.55, '2024-01-05 00:00:00.555555');
FLUSH BINARY LOGS;
-- (new file) same table, first row event in this file refers to the altered table
UPDATE evolve SET c_renamed = '2025-01-01 00:00:00.000001' WHERE id = 5;
ALTER TABLE evolve ADD COLUMN first_col VARCHAR(5) CHARACTER SET latin1 FIRST, ADD COLUMN last_col JSON, ADD COLUMN e ENUM('on','off') DEFAULT 'on';
INSERT INTO evolve VALUES ('f', 6, 6, 6.66, NULL, '{"k": 6}', 'off');
UPDATE evolve SET first_col = 'F1', last_col = '[1]' WHERE id = 1;
ALTER TABLE evolve CONVERT TO CHARACTER SET utf8mb3;
INSERT INTO evolve VALUES ('g', 7, 7, 7.77, NULL, NULL, DEFAULT);
SET SESSION binlog_alter_two_phase = ON;
ALTER TABLE evolve ADD COLUMN two_phase INT DEFAULT 7;
SET SESSION binlog_alter_two_phase = OFF;
INSERT INTO evolve (id, a, two_phase) VALUES (8, 8, 8);
ALTER TABLE evolve ADD INDEX idx_a (a), ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE evolve ENGINE=InnoDB;
TRUNCATE TABLE evolve;
INSERT INTO evolve (id, a) VALUES (100, 100);
RENAME TABLE evolve TO evolved;
INSERT INTO evolved (id, a) VALUES (101, 101);
TRUNCATE TABLE ledger;
INSERT INTO ledger (account_id, amount) VALUES (1, 1.00);
DROP TABLE evolved;
DROP VIEW v_rich;
DROP TABLE IF EXISTS accounts_ctas, does_not_exist;
CREATE INDEX idx_owner ON accounts (owner);
OPTIMIZE TABLE bulk;
ANALYZE TABLE bulk;
CREATE OR REPLACE TABLE replaced (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE OR REPLACE TABLE replaced (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO replaced VALUES (1, 1);
