-- 05_stmt_mixed.sql: session binlog_format=STATEMENT and MIXED: Intvar, Rand, User_var, Begin_load_query/
-- Execute_load_query, session variables in the Query status block. One binlog file.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE E "stmt_mixed": session binlog_format=STATEMENT and MIXED
-- (Intvar, Rand, User_var, Begin_load_query/Execute_load_query events)
-- ---------------------------------------------------------------------
FLUSH BINARY LOGS;
CREATE DATABASE corpus_stmt CHARACTER SET utf8mb4;
USE corpus_stmt;
CREATE TABLE s (
  id INT AUTO_INCREMENT PRIMARY KEY,
  v  VARCHAR(100),
  r  DOUBLE,
  ts DATETIME(6),
  u  VARCHAR(36)
) ENGINE=InnoDB;
CREATE TABLE s_myisam (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(50)) ENGINE=MyISAM;

SET SESSION binlog_format = STATEMENT;
INSERT INTO s (v) VALUES ('stmt auto_increment');
INSERT INTO s (v) VALUES ('a'), ('b'), ('c');
INSERT INTO s (v, r) VALUES (CONCAT('last_insert_id=', LAST_INSERT_ID()), 1);
SET @sv_str = 'user var é', @sv_int = -42, @sv_uint = 18446744073709551615, @sv_dec = 3.14159,
    @sv_real = 1e10, @sv_null = NULL, @sv_bin = _binary 0x00FF, @sv_u4 = _utf8mb4 '😀', @sv_l1 = _latin1 X'6C6174696E3120E9';
INSERT INTO s (v, r) VALUES (@sv_str, @sv_int), (@sv_dec, @sv_real), (@sv_null, NULL);
INSERT INTO s (v, r) VALUES (HEX(@sv_bin), @sv_uint), (@sv_u4, 0), (@sv_l1, 0);
INSERT INTO s (v, r) VALUES ('rand', RAND());
INSERT INTO s (v, r) VALUES ('rand seeded', RAND(7));
UPDATE s SET r = r + 1 WHERE id <= 2;
DELETE FROM s WHERE id = 3;
INSERT INTO s (v, ts) VALUES ('now', NOW(6));
SET TIMESTAMP = 1700000000.123456;
INSERT INTO s (v, ts) VALUES ('fixed timestamp', NOW(6));
SET TIMESTAMP = DEFAULT;
INSERT INTO s (v, u) VALUES ('uuid (unsafe for statement)', UUID());
LOAD DATA INFILE '${BASE_DIR}/load_data.tsv' INTO TABLE s (@id, v, r);
START TRANSACTION;
INSERT INTO s (v) VALUES ('stmt trx 1');
UPDATE s SET v = CONCAT(v, ' (upd in trx)') WHERE id = 1;
INSERT INTO s (v) VALUES ('stmt trx 2');
COMMIT;
INSERT INTO s_myisam (v) VALUES ('myisam stmt');
-- STATEMENT format, transactional then non-transactional change, rolled back:
-- logged as BEGIN ... ROLLBACK (Query event "ROLLBACK")
START TRANSACTION;
INSERT INTO s (v) VALUES ('stmt trx rolled back');
INSERT INTO s_myisam (v) VALUES ('myisam inside rolled-back stmt trx');
ROLLBACK;
SET SESSION sql_mode = '';
SET SESSION time_zone = '+05:30';
SET SESSION character_set_client = latin1, collation_connection = latin1_german2_ci;
INSERT INTO s (v, ts) VALUES ('session vars in query event', '2024-01-01 00:00:00');
SET NAMES utf8mb4;
SET SESSION time_zone = '+00:00';
SET SESSION sql_mode = DEFAULT;
SET SESSION auto_increment_increment = 5, auto_increment_offset = 3;
INSERT INTO s (v) VALUES ('auto_inc inc/offset');
SET SESSION auto_increment_increment = 1, auto_increment_offset = 1;
SET SESSION foreign_key_checks = 0, unique_checks = 0;
INSERT INTO s (v) VALUES ('fk/unique checks off');
SET SESSION foreign_key_checks = 1, unique_checks = 1;

SET SESSION binlog_format = MIXED;
INSERT INTO s (v) VALUES ('mixed: deterministic -> statement');
INSERT INTO s (v, u) VALUES ('mixed: uuid -> row', UUID());
UPDATE s SET v = CONCAT(v, '!') WHERE id = 1;
UPDATE s SET r = 0 WHERE id = 2 LIMIT 1;
INSERT INTO s (v) SELECT v FROM s WHERE id < 3 LIMIT 2;
DELETE FROM s WHERE v = 'b';
SET SESSION binlog_format = ROW;
