-- 03_dml.sql: DML shapes: PK-changing and NULL updates, multi-statement and rolled-back transactions (with MyISAM),
-- savepoints, XA (2PC, rollback, one phase), REPLACE, IODKU, INSERT IGNORE, INSERT..SELECT, multi-table
-- UPDATE/DELETE, CTAS, triggers, FK cascades, procedures, sequences, system versioning, partitions, temporary
-- tables, 5000-row statements, LOAD DATA in ROW format. One binlog file.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE C "dml": DML semantics, transactions, XA, triggers, FKs, sequences
-- ---------------------------------------------------------------------
FLUSH BINARY LOGS;
CREATE DATABASE corpus_dml CHARACTER SET utf8mb4;
USE corpus_dml;
DROP USER IF EXISTS 'corpus_user'@'localhost';
CREATE USER 'corpus_user'@'localhost' IDENTIFIED BY 'secret';
GRANT SELECT, INSERT ON corpus_dml.* TO 'corpus_user'@'localhost';

CREATE TABLE accounts (
  id      INT NOT NULL PRIMARY KEY,
  owner   VARCHAR(50) NOT NULL,
  balance DECIMAL(15,2) NOT NULL DEFAULT 0,
  email   VARCHAR(100) NULL,
  updated DATETIME(6) NULL,
  note    TEXT NULL
) ENGINE=InnoDB;
INSERT INTO accounts VALUES
 (1, 'alice',   100.00, 'alice@example.com', '2024-01-01 10:00:00.000001', 'first'),
 (2, 'bob',      50.50, NULL,                '2024-01-02 11:00:00.5',      NULL),
 (3, 'carol',  1000.00, 'carol@example.com', NULL,                         'vip'),
 (4, 'dave',      0.00, NULL,                NULL,                         NULL),
 (5, 'eve',     -10.25, 'eve@example.com',   '2024-01-05 00:00:00',        'overdrawn'),
 (6, 'frank',    20.00, 'frank@example.com', '2024-01-06 06:06:06.666666', ''),
 (7, 'grace',    30.00, NULL,                '2024-01-07 07:07:07',        'x'),
 (8, 'heidi',    40.00, 'heidi@example.com', '2024-01-08 08:08:08',        'y'),
 (9, 'ivan',     45.00, 'ivan@example.com',  '2024-01-09 09:09:09',        'z'),
 (10, 'judy',    60.00, 'judy@example.com',  '2024-01-10 10:10:10',        'ü😀');
-- update that changes the primary key
UPDATE accounts SET id = id + 100 WHERE id IN (1, 2);
-- updates that set NULLs and replace NULLs
UPDATE accounts SET email = NULL, note = NULL, updated = NULL WHERE id = 3;
UPDATE accounts SET email = 'dave@example.com', updated = '2024-02-01 00:00:00.123456', note = 'was null' WHERE id = 4;
-- multi-row update and delete
UPDATE accounts SET balance = balance * 1.10;
DELETE FROM accounts WHERE balance < 35;
-- update with no effective change (matched but not changed: no row event)
UPDATE accounts SET owner = owner WHERE id = 3;

-- multi-statement transaction across two tables
CREATE TABLE ledger (
  id         BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  account_id INT NOT NULL,
  amount     DECIMAL(15,2) NOT NULL,
  ts         DATETIME(6) NOT NULL DEFAULT '2024-01-01 00:00:00'
) ENGINE=InnoDB;
START TRANSACTION;
INSERT INTO ledger (account_id, amount, ts) VALUES (101, -25.00, '2024-03-01 12:00:00.000001');
UPDATE accounts SET balance = balance - 25 WHERE id = 101;
INSERT INTO ledger (account_id, amount, ts) VALUES (102, 25.00, '2024-03-01 12:00:00.000002');
UPDATE accounts SET balance = balance + 25 WHERE id = 102;
DELETE FROM accounts WHERE id = 9;
INSERT INTO accounts VALUES (11, 'mallory', 1.00, NULL, NULL, 'created in trx');
COMMIT;

-- rolled-back transaction, InnoDB only: nothing reaches the binlog
START TRANSACTION;
INSERT INTO accounts VALUES (999, 'ghost', 0, NULL, NULL, 'never committed');
UPDATE accounts SET balance = 0;
ROLLBACK;

-- rolled-back transaction that also touched a MyISAM table: in ROW format the MyISAM row is
-- written at once as its own BEGIN..COMMIT group, the InnoDB part never reaches the binlog
CREATE TABLE audit_myisam (id INT AUTO_INCREMENT PRIMARY KEY, msg VARCHAR(100)) ENGINE=MyISAM;
START TRANSACTION;
INSERT INTO accounts VALUES (998, 'ghost2', 0, NULL, NULL, 'rolled back');
INSERT INTO audit_myisam (msg) VALUES ('non-transactional change inside rolled-back trx');
ROLLBACK;
-- MyISAM first, then InnoDB, then rollback
START TRANSACTION;
INSERT INTO audit_myisam (msg) VALUES ('non-transactional first');
INSERT INTO accounts VALUES (997, 'ghost3', 0, NULL, NULL, 'rolled back');
ROLLBACK;

-- savepoints
START TRANSACTION;
INSERT INTO accounts VALUES (200, 'sp-keep', 1, NULL, NULL, NULL);
SAVEPOINT sp1;
INSERT INTO accounts VALUES (201, 'sp-undone', 1, NULL, NULL, NULL);
ROLLBACK TO SAVEPOINT sp1;
INSERT INTO accounts VALUES (202, 'sp-after', 1, NULL, NULL, NULL);
RELEASE SAVEPOINT sp1;
COMMIT;
START TRANSACTION;
INSERT INTO accounts VALUES (203, 'sp-myisam', 1, NULL, NULL, NULL);
SAVEPOINT sp2;
INSERT INTO audit_myisam (msg) VALUES ('myisam after savepoint');
INSERT INTO accounts VALUES (204, 'sp-undone2', 1, NULL, NULL, NULL);
ROLLBACK TO SAVEPOINT sp2;
COMMIT;

-- XA transactions: two-phase commit, rollback after prepare, one-phase
XA START 'xa-commit-1';
INSERT INTO accounts VALUES (300, 'xa', 3.00, NULL, NULL, 'xa two phase');
UPDATE accounts SET balance = balance + 1 WHERE id = 3;
XA END 'xa-commit-1';
XA PREPARE 'xa-commit-1';
XA COMMIT 'xa-commit-1';
XA START X'0102FF', 'bqual-x', 42;
INSERT INTO accounts VALUES (301, 'xa-rb', 3.00, NULL, NULL, 'xa rolled back after prepare');
XA END X'0102FF', 'bqual-x', 42;
XA PREPARE X'0102FF', 'bqual-x', 42;
XA ROLLBACK X'0102FF', 'bqual-x', 42;
XA START 'xa-one-phase';
INSERT INTO accounts VALUES (302, 'xa-1p', 3.00, NULL, NULL, 'xa one phase');
XA END 'xa-one-phase';
XA COMMIT 'xa-one-phase' ONE PHASE;

-- REPLACE, INSERT ... ON DUPLICATE KEY UPDATE, INSERT IGNORE, INSERT ... SELECT
REPLACE INTO accounts VALUES (3, 'carol-replaced', 5.00, NULL, NULL, 'replace existing');
REPLACE INTO accounts VALUES (400, 'replace-new', 5.00, NULL, NULL, 'replace new');
INSERT INTO accounts VALUES (4, 'dave', 1.00, NULL, NULL, NULL) ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance), note = 'iodku';
INSERT INTO accounts VALUES (401, 'iodku-new', 1.00, NULL, NULL, NULL) ON DUPLICATE KEY UPDATE balance = 0;
INSERT IGNORE INTO accounts VALUES (4, 'dup-ignored', 0, NULL, NULL, NULL), (402, 'ignore-new', 0, NULL, NULL, NULL);
CREATE TABLE accounts_copy LIKE accounts;
INSERT INTO accounts_copy SELECT * FROM accounts WHERE id < 200;
-- multi-table UPDATE / DELETE, UPDATE ... ORDER BY ... LIMIT
UPDATE accounts a JOIN accounts_copy c ON a.id = c.id SET a.note = 'multi-upd', c.note = 'multi-upd-copy' WHERE a.id IN (3, 4);
DELETE a, c FROM accounts a JOIN accounts_copy c ON a.id = c.id WHERE a.id = 11;
UPDATE accounts SET balance = balance - 1 ORDER BY id DESC LIMIT 2;
CREATE TABLE accounts_ctas ENGINE=InnoDB AS SELECT id, owner, balance FROM accounts WHERE id > 100;

-- triggers (row events of the trigger body are logged) and FK cascades
CREATE TABLE parent (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB;
CREATE TABLE child (
  id INT PRIMARY KEY, parent_id INT, v INT,
  FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE ON UPDATE CASCADE
) ENGINE=InnoDB;
CREATE TABLE trig_audit (id INT AUTO_INCREMENT PRIMARY KEY, action VARCHAR(10), ref INT) ENGINE=InnoDB;
CREATE TRIGGER parent_ai AFTER INSERT ON parent FOR EACH ROW INSERT INTO trig_audit (action, ref) VALUES ('insert', NEW.id);
CREATE TRIGGER parent_bd BEFORE DELETE ON parent FOR EACH ROW INSERT INTO trig_audit (action, ref) VALUES ('delete', OLD.id);
INSERT INTO parent VALUES (1, 'p1'), (2, 'p2');
INSERT INTO child VALUES (10, 1, 1), (11, 1, 2), (20, 2, 3);
UPDATE parent SET id = 3 WHERE id = 2;       -- child rows updated by cascade (not logged separately)
DELETE FROM parent WHERE id = 1;             -- child rows deleted by cascade

-- stored procedure and function
DELIMITER //
CREATE PROCEDURE p_fill(IN n INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < n DO
    INSERT INTO ledger (account_id, amount, ts) VALUES (i, i * 1.5, '2024-04-01 00:00:00');
    SET i = i + 1;
  END WHILE;
END//
CREATE FUNCTION f_double(x INT) RETURNS INT DETERMINISTIC RETURN x * 2//
DELIMITER ;
CALL p_fill(3);
INSERT INTO ledger (account_id, amount) VALUES (f_double(21), 0);
CREATE VIEW v_rich AS SELECT id, owner FROM accounts WHERE balance > 40;

-- sequences (NEXTVAL/SETVAL are logged as row events on the sequence table)
CREATE SEQUENCE seq1 START WITH 1 INCREMENT BY 1 CACHE 5;
SELECT NEXTVAL(seq1);
INSERT INTO ledger (account_id, amount) VALUES (NEXTVAL(seq1), 1);
SELECT SETVAL(seq1, 1000);
SELECT NEXTVAL(seq1);

-- system-versioned table (row_start/row_end are invisible columns)
CREATE TABLE sv (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB WITH SYSTEM VERSIONING;
INSERT INTO sv VALUES (1, 'v1'), (2, 'v2');
UPDATE sv SET v = 'v1-new' WHERE id = 1;
DELETE FROM sv WHERE id = 2;

-- partitioned table, update moving a row between partitions
CREATE TABLE parted (
  id INT NOT NULL, d DATE NOT NULL, v VARCHAR(10),
  PRIMARY KEY (id, d)
) ENGINE=InnoDB PARTITION BY RANGE (YEAR(d)) (
  PARTITION p2023 VALUES LESS THAN (2024),
  PARTITION p2024 VALUES LESS THAN (2025),
  PARTITION pmax  VALUES LESS THAN MAXVALUE);
INSERT INTO parted VALUES (1, '2023-05-05', 'a'), (2, '2024-05-05', 'b'), (3, '2030-01-01', 'c');
UPDATE parted SET d = '2024-12-31' WHERE id = 1;
ALTER TABLE parted TRUNCATE PARTITION pmax;

-- temporary table (not logged in ROW format) feeding a permanent table
CREATE TEMPORARY TABLE tmp_src (id INT, owner VARCHAR(50));
INSERT INTO tmp_src VALUES (500, 'from-temp'), (501, 'from-temp2');
INSERT INTO accounts (id, owner) SELECT id, owner FROM tmp_src;
DROP TEMPORARY TABLE tmp_src;

-- one statement producing several Write/Update/Delete_rows events (>8 KiB of rows)
CREATE TABLE bulk (id INT PRIMARY KEY, grp INT, v VARCHAR(64), f DOUBLE) ENGINE=InnoDB;
INSERT INTO bulk SELECT seq, seq MOD 10, CONCAT('row-', seq, '-', REPEAT('x', seq MOD 40)), seq / 7 FROM seq_1_to_5000;
UPDATE bulk SET f = -f, v = CONCAT(v, '-u') WHERE grp < 5;
DELETE FROM bulk WHERE grp >= 5;

-- LOAD DATA in ROW format (becomes Write_rows events). The data file (also read by 05_stmt_mixed.sql) is
-- written here by the server itself; a SELECT is not logged.
SELECT '1\talpha\t10.50\n2\tbeta\t-3.25\n3\tgamma\t\\N\n4\tdélta 😀\t0\n' INTO DUMPFILE '${BASE_DIR}/load_data.tsv';
CREATE TABLE loaded (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(8,2)) ENGINE=InnoDB;
LOAD DATA INFILE '${BASE_DIR}/load_data.tsv' INTO TABLE loaded (id, name, amount);
