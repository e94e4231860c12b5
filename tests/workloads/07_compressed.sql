-- 07_compressed.sql: log_bin_compress=ON: Query_compressed and *_rows_compressed_v1 events. One binlog file.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;

-- ---------------------------------------------------------------------
-- FILE G "compressed": log_bin_compress=ON (events >= 256 bytes are
-- written as Query_compressed / *_rows_compressed_v1 events)
-- ---------------------------------------------------------------------
SET GLOBAL log_bin_compress = ON;
FLUSH BINARY LOGS;
USE corpus_dml;
CREATE TABLE comp (
  id  INT PRIMARY KEY,
  a   INT,
  txt TEXT,
  pad VARCHAR(400)
) ENGINE=InnoDB COMMENT 'This table is created while log_bin_compress=ON. The CREATE statement is padded with this long comment so that the Query event exceeds log_bin_compress_min_len (256 bytes) and gets written as a QUERY_COMPRESSED_EVENT.';
INSERT INTO comp VALUES (1, 1, REPEAT('compress me ', 100), REPEAT('p', 400)), (2, 2, REPEAT('again ', 200), REPEAT('q', 300));
INSERT INTO comp VALUES (3, 3, 'tiny', 'x');
UPDATE comp SET a = a + 1;
UPDATE comp SET txt = 'small now' WHERE id = 3;
DELETE FROM comp WHERE id = 1;
INSERT INTO corpus_types.t_char SELECT id + 100, c0, c1_l1, c10_l1, c10_u3, c10_u4, c255_l1, c63_u4, c64_u4, c85_u3, c86_u3, c255_u3, c255_u4,
  c10_ucs2, c10_u16, c10_u32, c100_u32, c10_sjis, c10_gbk, c10_cp1251, c10_nopad, c10_hr, c10_uca, c10_u4bin, bin1, bin16, bin255, cbin10, c_nn
  FROM corpus_types.t_char WHERE id IN (1, 4);
INSERT INTO corpus_types.t_blob (id, lb, b_nn) VALUES (100, REPEAT('highly compressible ', 50000), 'c');
UPDATE corpus_types.t_blob SET lb = NULL WHERE id = 100;
START TRANSACTION;
INSERT INTO comp VALUES (10, 10, REPEAT('trx ', 100), NULL);
UPDATE comp SET pad = REPEAT('r', 399) WHERE id = 2;
COMMIT;
SET SESSION binlog_format = STATEMENT;
INSERT INTO comp VALUES (20, 20, 'statement-format insert long enough to be compressed: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.', 'stmt');
UPDATE comp SET a = 0 WHERE id = 20;
SET SESSION binlog_format = ROW;
SET GLOBAL log_bin_compress = OFF;
