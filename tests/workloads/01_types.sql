-- 01_types.sql: all column types: DDL + INSERT/UPDATE/DELETE per type family (ints, decimal, float, bit, temporal fsp 0-6,
-- char/varchar charsets and STRING metadata edge cases, blobs/text/json, compressed columns, enum/set incl. a
-- 300-member enum and 64-member set, geometry, inet4/inet6/uuid, invisible, generated, 9/70/300-column tables,
-- no-PK, composite/prefix PK, MyISAM/Aria/MEMORY, odd/unicode/64-char names). One binlog file.
--
-- Adapted from the binlake corpus workload (../shared/corpus/workloads/workload.sql, written for this project).
-- Run by tests/conftest.py (fixture workload_binlogs) through binlake.testing.mariadb.run_workloads: every file
-- in name order, each in its own client session, against a server started with ROW format, FULL images, FULL
-- metadata and CRC32. Each file starts a new binlog before its first logged statement, so the files it writes
-- are its own. ${BASE_DIR} is replaced by the server's base directory (its secure_file_priv).

SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;
SET GLOBAL log_bin_compress = OFF;
SET GLOBAL binlog_row_metadata = FULL;
SET GLOBAL mysql56_temporal_format = ON;

-- ---------------------------------------------------------------------
-- FILE A "types": one table per type family, DDL + INSERT/UPDATE/DELETE
-- ---------------------------------------------------------------------
FLUSH BINARY LOGS;

DROP DATABASE IF EXISTS corpus_types;
DROP DATABASE IF EXISTS corpus_dml;
DROP DATABASE IF EXISTS corpus_stmt;
DROP DATABASE IF EXISTS `db with space & 'quotes'`;
DROP DATABASE IF EXISTS `données_ünïcödé_数据库`;
DROP DATABASE IF EXISTS `d234567890123456789012345678901234567890123456789012345678901234`;
CREATE DATABASE corpus_types CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
USE corpus_types;

-- ---------- integers -------------------------------------------------
CREATE TABLE t_int (
  id      INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  ti      TINYINT,
  tiu     TINYINT UNSIGNED,
  si      SMALLINT,
  siu     SMALLINT UNSIGNED,
  mi      MEDIUMINT,
  miu     MEDIUMINT UNSIGNED,
  i       INT,
  iu      INT UNSIGNED,
  bi      BIGINT,
  biu     BIGINT UNSIGNED,
  tz      TINYINT(3) UNSIGNED ZEROFILL,
  iz      INT(10) UNSIGNED ZEROFILL,
  bool_c  BOOLEAN,
  ti_nn   TINYINT NOT NULL DEFAULT 0,
  biu_nn  BIGINT UNSIGNED NOT NULL DEFAULT 0
) ENGINE=InnoDB;

INSERT INTO t_int (ti,tiu,si,siu,mi,miu,i,iu,bi,biu,tz,iz,bool_c,ti_nn,biu_nn) VALUES
 (-128,0,-32768,0,-8388608,0,-2147483648,0,-9223372036854775808,0,0,0,0,-128,0),
 (127,255,32767,65535,8388607,16777215,2147483647,4294967295,9223372036854775807,18446744073709551615,255,4294967295,1,127,18446744073709551615),
 (-1,1,-1,1,-1,1,-1,1,-1,1,1,1,1,-1,1),
 (0,128,0,32768,0,8388608,0,2147483648,0,9223372036854775808,7,42,0,0,9223372036854775808),
 (NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,0),
 (100,200,-12345,54321,-1234567,7654321,-123456789,3123456789,-1234567890123456789,12345678901234567890,12,123,1,5,5);
UPDATE t_int SET ti=-ti-1, bi=NULL, biu=biu DIV 2 WHERE id=2;
UPDATE t_int SET ti=1, tiu=2, si=3, siu=4, mi=5, miu=6, i=7, iu=8, bi=9, biu=10, tz=11, iz=12, bool_c=0 WHERE id=5;
DELETE FROM t_int WHERE id=3;

-- ---------- decimal --------------------------------------------------
CREATE TABLE t_decimal (
  id     INT PRIMARY KEY,
  d1_0   DECIMAL(1,0),
  d5_2   DECIMAL(5,2),
  d9_4   DECIMAL(9,4),
  d10_0  DECIMAL(10,0),
  d10_10 DECIMAL(10,10),
  d18_9  DECIMAL(18,9),
  d19_4  DECIMAL(19,4),
  d20_10 DECIMAL(20,10),
  d38_10 DECIMAL(38,10),
  d38_38 DECIMAL(38,38),
  d65_0  DECIMAL(65,0),
  d65_30 DECIMAL(65,30),
  d12_4u DECIMAL(12,4) UNSIGNED,
  dnn    DECIMAL(7,3) NOT NULL DEFAULT 0
) ENGINE=InnoDB;

INSERT INTO t_decimal VALUES
 (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
 (2, 9, 999.99, 99999.9999, 9999999999, 0.9999999999, 999999999.999999999, 999999999999999.9999, 9999999999.9999999999,
     9999999999999999999999999999.9999999999, 0.99999999999999999999999999999999999999,
     99999999999999999999999999999999999999999999999999999999999999999,
     99999999999999999999999999999999999.999999999999999999999999999999, 99999999.9999, 9999.999),
 (3, -9, -999.99, -99999.9999, -9999999999, -0.9999999999, -999999999.999999999, -999999999999999.9999, -9999999999.9999999999,
     -9999999999999999999999999999.9999999999, -0.99999999999999999999999999999999999999,
     -99999999999999999999999999999999999999999999999999999999999999999,
     -99999999999999999999999999999999999.999999999999999999999999999999, 0, -9999.999),
 (4, -1, -0.01, -0.0001, -1, -0.0000000001, -0.000000001, -0.0001, -0.0000000001,
     -0.0000000001, -0.00000000000000000000000000000000000001, -1,
     -0.000000000000000000000000000001, 0.0001, -0.001),
 (5, 5, 123.45, 1234.5678, 1234567890, 0.1234567890, 123456789.123456789, 123456789012345.6789, 1234567890.1234567890,
     1234567890123456789012345678.1234567890, 0.12345678901234567890123456789012345678,
     12345678901234567890123456789012345678901234567890123456789012345,
     12345678901234567890123456789012345.123456789012345678901234567890, 12345678.1234, 1234.567),
 (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0),
 (7, -3, -100.5, -0.5, -100000, -0.5, -0.000000001, -12345.6789, -1.5,
     -1000000000.0000000001, -0.5, -100000000000000000000000000000000000000000000000000000000000,
     -0.5, 1.5, 0.5);
UPDATE t_decimal SET d65_30 = -d65_30, d5_2 = d5_2 / 2, d38_10 = NULL WHERE id IN (2,5);
DELETE FROM t_decimal WHERE id = 1;

-- ---------- float / double -------------------------------------------
CREATE TABLE t_float (
  id     INT PRIMARY KEY,
  f      FLOAT,
  fu     FLOAT UNSIGNED,
  f73    FLOAT(7,3),
  f_p30  FLOAT(30),
  d      DOUBLE,
  du     DOUBLE UNSIGNED,
  d206   DOUBLE(20,6),
  r      REAL,
  d_nn   DOUBLE NOT NULL DEFAULT 0
) ENGINE=InnoDB;
INSERT INTO t_float VALUES
 (1, 0, 0, 0, 0, 0, 0, 0, 0, 0),
 (2, -0.0, 0, -0.0, -0.0, -0.0, 0, -0.0, -0.0, -0.0),
 (3, 1.5, 1.5, 1234.567, 1.25, 1.5, 1.5, 12345678901234.123456, 0.1, 0.1),
 (4, -3.40282e38, 3.40282e38, -9999.999, 1e300, -1.7976931348623157e308, 1.7976931348623157e308, -99999999999999.999999, 2.2250738585072014e-308, 4.9e-324),
 (5, 1.17549e-38, 1.4e-45, 0.001, -2.5e-300, 2.2250738585072014e-308, 4.9e-324, 0.000001, -1e-100, -123.456),
 (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 3.141592653589793),
 (7, 3.14159265, 2.71828, -1.5, 0.333333333333333333, 0.1, 0.2, 0.3, 1e22, 1e-22);
UPDATE t_float SET f = f * 2, d = -d, r = NULL WHERE id IN (3,7);
DELETE FROM t_float WHERE id = 6;

-- ---------- bit ------------------------------------------------------
CREATE TABLE t_bit (
  id  INT PRIMARY KEY,
  b1  BIT(1),  b2  BIT(2),  b7  BIT(7),  b8  BIT(8),  b9  BIT(9),
  b15 BIT(15), b16 BIT(16), b17 BIT(17), b31 BIT(31), b32 BIT(32),
  b33 BIT(33), b63 BIT(63), b64 BIT(64), b1_nn BIT(1) NOT NULL DEFAULT b'0'
) ENGINE=InnoDB;
INSERT INTO t_bit VALUES
 (1, b'0', b'00', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0'),
 (2, b'1', b'11', b'1111111', b'11111111', b'111111111', b'111111111111111', b'1111111111111111',
     b'11111111111111111', b'1111111111111111111111111111111', b'11111111111111111111111111111111',
     b'111111111111111111111111111111111',
     b'111111111111111111111111111111111111111111111111111111111111111',
     b'1111111111111111111111111111111111111111111111111111111111111111', b'1'),
 (3, b'1', b'10', b'1010101', b'10000001', b'100000001', b'100000000000001', b'1000000000000001',
     b'10000000000000001', b'1000000000000000000000000000001', b'10000000000000000000000000000001',
     b'100000000000000000000000000000001',
     b'100000000000000000000000000000000000000000000000000000000000001',
     b'1000000000000000000000000000000000000000000000000000000000000001', b'0'),
 (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, b'1'),
 (5, 1, 2, 100, 200, 300, 30000, 60000, 100000, 2000000000, 4000000000, 8000000000, 4611686018427387904, 0xDEADBEEFCAFEBABE, 1);
UPDATE t_bit SET b64 = b64 >> 1, b9 = NULL WHERE id = 2;
DELETE FROM t_bit WHERE id = 1;

-- ---------- temporal (MySQL 5.6 format: TIME2/DATETIME2/TIMESTAMP2) ---
SET SESSION sql_mode = '';
CREATE TABLE t_temporal (
  id   INT PRIMARY KEY,
  y    YEAR,
  dt0  DATE,
  t0 TIME, t1 TIME(1), t2 TIME(2), t3 TIME(3), t4 TIME(4), t5 TIME(5), t6 TIME(6),
  dtm0 DATETIME, dtm1 DATETIME(1), dtm2 DATETIME(2), dtm3 DATETIME(3), dtm4 DATETIME(4), dtm5 DATETIME(5), dtm6 DATETIME(6),
  ts0 TIMESTAMP NULL, ts1 TIMESTAMP(1) NULL, ts2 TIMESTAMP(2) NULL, ts3 TIMESTAMP(3) NULL,
  ts4 TIMESTAMP(4) NULL, ts5 TIMESTAMP(5) NULL, ts6 TIMESTAMP(6) NULL,
  d_nn DATE NOT NULL DEFAULT '2000-01-01'
) ENGINE=InnoDB;
INSERT INTO t_temporal VALUES
 (1, 1901, '1000-01-01',
     '-838:59:59', '-838:59:59.9', '-838:59:59.99', '-838:59:59.999', '-838:59:59.9999', '-838:59:59.99999', '-838:59:59.999999',
     '1000-01-01 00:00:00', '1000-01-01 00:00:00.0', '1000-01-01 00:00:00.00', '1000-01-01 00:00:00.000', '1000-01-01 00:00:00.0000', '1000-01-01 00:00:00.00000', '1000-01-01 00:00:00.000000',
     '1970-01-01 00:00:01', '1970-01-01 00:00:01.0', '1970-01-01 00:00:01.00', '1970-01-01 00:00:01.000', '1970-01-01 00:00:01.0000', '1970-01-01 00:00:01.00000', '1970-01-01 00:00:01.000000',
     '1000-01-01'),
 (2, 2155, '9999-12-31',
     '838:59:59', '838:59:59.9', '838:59:59.99', '838:59:59.999', '838:59:59.9999', '838:59:59.99999', '838:59:59.999999',
     '9999-12-31 23:59:59', '9999-12-31 23:59:59.9', '9999-12-31 23:59:59.99', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.9999', '9999-12-31 23:59:59.99999', '9999-12-31 23:59:59.999999',
     '2038-01-19 03:14:07', '2038-01-19 03:14:07.9', '2038-01-19 03:14:07.99', '2038-01-19 03:14:07.999', '2038-01-19 03:14:07.9999', '2038-01-19 03:14:07.99999', '2038-01-19 03:14:07.999999',
     '9999-12-31'),
 (3, 0, '0000-00-00',
     '00:00:00', '00:00:00.0', '00:00:00.00', '00:00:00.000', '00:00:00.0000', '00:00:00.00000', '00:00:00.000000',
     '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00',
     '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00',
     '0000-00-00'),
 (4, 2000, '2024-02-29',
     '-00:00:01', '-00:00:00.1', '-00:00:00.01', '-00:00:00.001', '-00:00:00.0001', '-00:00:00.00001', '-00:00:00.000001',
     '2024-02-29 12:34:56', '2024-02-29 12:34:56.1', '2024-02-29 12:34:56.12', '2024-02-29 12:34:56.123', '2024-02-29 12:34:56.1234', '2024-02-29 12:34:56.12345', '2024-02-29 12:34:56.123456',
     '2024-02-29 12:34:56', '2024-02-29 12:34:56.1', '2024-02-29 12:34:56.12', '2024-02-29 12:34:56.123', '2024-02-29 12:34:56.1234', '2024-02-29 12:34:56.12345', '2024-02-29 12:34:56.123456',
     '2024-02-29'),
 (5, 1999, '2024-00-15',
     '-12:34:56', '-12:34:56.5', '-12:34:56.05', '-12:34:56.005', '-12:34:56.0005', '-12:34:56.00005', '-12:34:56.000005',
     '2024-00-00 00:00:00', '2024-01-00 10:00:00.5', '2024-06-15 23:59:59.99', '1969-12-31 23:59:59.999', '1900-01-01 00:00:00.0001', '2000-01-01 00:00:00.00001', '2000-01-01 00:00:00.000001',
     '1999-12-31 23:59:59', '1999-12-31 23:59:59.5', '1999-12-31 23:59:59.05', '1999-12-31 23:59:59.005', '1999-12-31 23:59:59.0005', '1999-12-31 23:59:59.00005', '1999-12-31 23:59:59.000005',
     '2024-00-00'),
 (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2000-01-01'),
 (7, 1970, '1970-01-01',
     '100:00:00', '-100:00:00.5', '01:02:03.4', '-01:02:03.45', '23:59:59.9999', '-23:59:59.99999', '00:00:00.500000',
     '2001-02-03 04:05:06', '2001-02-03 04:05:06.7', '2001-02-03 04:05:06.78', '2001-02-03 04:05:06.789', '2001-02-03 04:05:06.7891', '2001-02-03 04:05:06.78912', '2001-02-03 04:05:06.789123',
     '2001-02-03 04:05:06', '2001-02-03 04:05:06.7', '2001-02-03 04:05:06.78', '2001-02-03 04:05:06.789', '2001-02-03 04:05:06.7891', '2001-02-03 04:05:06.78912', '2001-02-03 04:05:06.789123',
     '1970-01-01');
UPDATE t_temporal SET t6 = '-00:00:00.000001', dtm6 = '2020-01-01 00:00:00.000001', ts6 = NULL, y = 2069 WHERE id = 4;
UPDATE t_temporal SET t0 = NULL, dtm0 = NULL, ts0 = '2001-01-01 00:00:00' WHERE id = 7;
DELETE FROM t_temporal WHERE id = 6;

SET SESSION sql_mode = DEFAULT;

-- ---------- CHAR / BINARY: lengths, charsets, STRING metadata edge cases
CREATE TABLE t_char (
  id       INT PRIMARY KEY,
  c0       CHAR(0),
  c1_l1    CHAR(1)   CHARACTER SET latin1,
  c10_l1   CHAR(10)  CHARACTER SET latin1,
  c10_u3   CHAR(10)  CHARACTER SET utf8mb3,
  c10_u4   CHAR(10)  CHARACTER SET utf8mb4,
  c255_l1  CHAR(255) CHARACTER SET latin1,
  c63_u4   CHAR(63)  CHARACTER SET utf8mb4,
  c64_u4   CHAR(64)  CHARACTER SET utf8mb4,
  c85_u3   CHAR(85)  CHARACTER SET utf8mb3,
  c86_u3   CHAR(86)  CHARACTER SET utf8mb3,
  c255_u3  CHAR(255) CHARACTER SET utf8mb3,
  c255_u4  CHAR(255) CHARACTER SET utf8mb4,
  c10_ucs2 CHAR(10)  CHARACTER SET ucs2,
  c10_u16  CHAR(10)  CHARACTER SET utf16,
  c10_u32  CHAR(10)  CHARACTER SET utf32,
  c100_u32 CHAR(100) CHARACTER SET utf32,
  c10_sjis CHAR(10)  CHARACTER SET sjis,
  c10_gbk  CHAR(10)  CHARACTER SET gbk,
  c10_cp1251 CHAR(10) CHARACTER SET cp1251,
  c10_nopad CHAR(10) CHARACTER SET latin1 COLLATE latin1_swedish_nopad_ci,
  c10_hr   CHAR(10)  CHARACTER SET utf8mb4 COLLATE utf8mb4_croatian_ci,
  c10_uca  CHAR(10)  CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_ai_ci,
  c10_u4bin CHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  bin1     BINARY(1),
  bin16    BINARY(16),
  bin255   BINARY(255),
  cbin10   CHAR(10) CHARACTER SET binary,
  c_nn     CHAR(5) CHARACTER SET utf8mb4 NOT NULL DEFAULT ''
) ENGINE=InnoDB DEFAULT CHARSET=latin1;
INSERT INTO t_char VALUES
 (1, '', 'a', 'latin1 é', 'utf8 ü€', 'utf8mb4 😀', REPEAT('x',255), REPEAT('😀',63), REPEAT('ä',64), REPEAT('€',85), REPEAT('€',86),
     REPEAT('ñ',255), REPEAT('😀',255), 'ucs2 ü€', 'utf16 😀', 'utf32 😀', REPEAT('ß',100), 'ｶﾀｶﾅ日本', '中文汉字', 'Привет', 'nopad  ',
     'čćđšž', 'ÀÁÂ', 'bin😀', 0x00, 0x000102030405060708090A0B0C0D0E0F, REPEAT(0xFF,255), 'cb', 'nn'),
 (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, ''),
 (3, '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', ''),
 (4, '', 'Z', 'trail   ', ' lead', 'mix😀€ü', CONCAT(REPEAT('y',254),'z'), 'short', '😀', 'a', 'b', 'c', CONCAT('😀',REPEAT('a',200),'😀'),
     'x', 'y', 'z', 'w', 'ｱ', '汉', 'Ж', 'x', 'đ', 'é', 'Ω', 0x41, 0x41, 0x4142, 0x00FF00, '😀');
UPDATE t_char SET c255_u4 = REPEAT('€',255), c64_u4 = NULL, bin16 = UNHEX('FFEEDDCCBBAA99887766554433221100') WHERE id = 1;
UPDATE t_char SET c10_l1 = 'was null', c255_u4 = 'was null' WHERE id = 2;
DELETE FROM t_char WHERE id = 3;

-- ---------- VARCHAR / VARBINARY: 1-byte vs 2-byte length prefix -------
CREATE TABLE t_varchar (
  id        INT PRIMARY KEY,
  v0        VARCHAR(0),
  v1_l1     VARCHAR(1)     CHARACTER SET latin1,
  v255_l1   VARCHAR(255)   CHARACTER SET latin1,
  v256_l1   VARCHAR(256)   CHARACTER SET latin1,
  v63_u4    VARCHAR(63)    CHARACTER SET utf8mb4,
  v64_u4    VARCHAR(64)    CHARACTER SET utf8mb4,
  v85_u3    VARCHAR(85)    CHARACTER SET utf8mb3,
  v86_u3    VARCHAR(86)    CHARACTER SET utf8mb3,
  v2000_u4  VARCHAR(2000)  CHARACTER SET utf8mb4,
  v20000_l1 VARCHAR(20000) CHARACTER SET latin1,
  v100_u32  VARCHAR(100)   CHARACTER SET utf32,
  v50_ucs2  VARCHAR(50)    CHARACTER SET ucs2,
  vb255     VARBINARY(255),
  vb256     VARBINARY(256),
  vb3000    VARBINARY(3000),
  v_cmp     VARCHAR(1000)  CHARACTER SET utf8mb4 COMPRESSED,
  vb_cmp    VARBINARY(1000) COMPRESSED,
  v_nn      VARCHAR(10)    CHARACTER SET utf8mb4 NOT NULL DEFAULT ''
) ENGINE=InnoDB DEFAULT CHARSET=latin1;
INSERT INTO t_varchar VALUES
 (1, '', 'a', REPEAT('a',255), REPEAT('b',256), REPEAT('😀',63), REPEAT('😀',64), REPEAT('€',85), REPEAT('€',86),
     REPEAT('日本語',666), REPEAT('L',20000), REPEAT('😀',100), REPEAT('ü',50), REPEAT(0xAB,255), REPEAT(0xCD,256), REPEAT(0x00,3000),
     REPEAT('compress me 😀 ',60), REPEAT(0x01,1000), 'nn'),
 (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ''),
 (3, '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', ''),
 (4, '', 'z', 'short', 'short', 'short', 'short', 'short', 'short', 'short 😀', 'short', 'short', 'short', 0x00, 0x00FF, 0xDEADBEEF, 'tiny', 0x42, 'x');
UPDATE t_varchar SET v256_l1 = 'now short', v2000_u4 = REPEAT('x',2000), v_cmp = 'uncompressed now' WHERE id = 1;
UPDATE t_varchar SET v255_l1 = 'from null', vb3000 = 0x00 WHERE id = 2;
DELETE FROM t_varchar WHERE id = 3;

-- ---------- BLOB / TEXT / JSON ---------------------------------------
CREATE TABLE t_blob (
  id      INT PRIMARY KEY,
  tb      TINYBLOB,
  b       BLOB,
  mb      MEDIUMBLOB,
  lb      LONGBLOB,
  b100    BLOB(100),
  tt      TINYTEXT CHARACTER SET latin1,
  t       TEXT CHARACTER SET utf8mb4,
  mt      MEDIUMTEXT CHARACTER SET utf8mb3,
  lt      LONGTEXT CHARACTER SET utf8mb4,
  t_u32   TEXT CHARACTER SET utf32,
  j       JSON,
  b_cmp   BLOB COMPRESSED,
  t_cmp   TEXT CHARACTER SET utf8mb4 COMPRESSED,
  b_nn    BLOB NOT NULL
) ENGINE=InnoDB;
INSERT INTO t_blob VALUES
 (1, '', '', '', '', '', '', '', '', '', '', '{}', '', '', ''),
 (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ''),
 (3, REPEAT(0xFF,255), REPEAT('B',65535), REPEAT('M',70000), REPEAT('L',100000), REPEAT('s',255), REPEAT('t',255),
     REPEAT('😀',16383), REPEAT('€',30000), REPEAT('😀',50000), REPEAT('u',100),
     '{"a": 1, "b": [1, 2.5, "x", null, true, false], "c": {"d": "😀"}, "e": -1e-10}',
     REPEAT('compressible ',500), REPEAT('текст ',500), 0x00),
 (4, 0x00010203, 'blob', 'mediumblob', 'longblob', 'b100', 'tiny text é', 'text 😀', 'medium text €', 'long text',
     'utf32 text', '[1,"two",{"three":3}]', 'b', 't', 'nn');
UPDATE t_blob SET lb = REPEAT('Z', 200000), j = JSON_SET(j, '$.c.d', 'changed') WHERE id = 3;
UPDATE t_blob SET tb = 'now set', j = '"scalar"' WHERE id = 2;
DELETE FROM t_blob WHERE id = 1;
-- one large (~4 MiB) row in a single Write_rows event
INSERT INTO t_blob (id, lb, lt, b_nn) VALUES (5, REPEAT(UNHEX('00FF7F80'), 1048576), REPEAT('big text ', 100000), 'x');

-- ---------- ENUM / SET -----------------------------------------------
CREATE TABLE t_enum_set (
  id      INT PRIMARY KEY,
  e_small ENUM('a','b','c'),
  e_nn    ENUM('x','y','z') NOT NULL DEFAULT 'y',
  e_u4    ENUM('ä','😀','日本','it''s','com,ma','') CHARACTER SET utf8mb4,
  e_l1    ENUM('é','è','ê') CHARACTER SET latin1 COLLATE latin1_bin,
  s1      SET('only'),
  s8      SET('s1','s2','s3','s4','s5','s6','s7','s8'),
  s9      SET('s1','s2','s3','s4','s5','s6','s7','s8','s9'),
  s_u4    SET('😀','€','ü') CHARACTER SET utf8mb4
) ENGINE=InnoDB;
INSERT INTO t_enum_set VALUES
 (1, 'a', 'x', 'ä', 'é', 'only', 's1', 's1', '😀'),
 (2, 'c', 'z', '😀', 'ê', '', 's1,s2,s3,s4,s5,s6,s7,s8', 's1,s2,s3,s4,s5,s6,s7,s8,s9', '😀,€,ü'),
 (3, NULL, 'y', 'it''s', NULL, NULL, NULL, NULL, NULL),
 (4, 'b', 'y', 'com,ma', 'è', 'only', 's8', 's9', 'ü'),
 (5, 'b', 'y', '', 'è', '', '', '', '');
UPDATE t_enum_set SET e_small = NULL, s9 = 's2,s9', e_nn = 'z' WHERE id = 1;
DELETE FROM t_enum_set WHERE id = 5;

-- ENUM with 300 members (2-byte storage) and SET with 64 members (8-byte storage)
SET @enum_members = (SELECT GROUP_CONCAT(CONCAT('''m', seq, '''') ORDER BY seq) FROM seq_1_to_300);
SET @set_members  = (SELECT GROUP_CONCAT(CONCAT('''f', seq, '''') ORDER BY seq) FROM seq_1_to_64);
SET @ddl = CONCAT('CREATE TABLE t_enum_big (id INT PRIMARY KEY, e300 ENUM(', @enum_members,
                  '), e300_nn ENUM(', @enum_members, ') NOT NULL, s64 SET(', @set_members, '), s17 SET(',
                  (SELECT GROUP_CONCAT(CONCAT('''g', seq, '''') ORDER BY seq) FROM seq_1_to_17), ')) ENGINE=InnoDB');
PREPARE stmt FROM @ddl; EXECUTE stmt; DEALLOCATE PREPARE stmt;
INSERT INTO t_enum_big VALUES
 (1, 'm1', 'm300', 'f1', 'g1'),
 (2, 'm256', 'm257', 'f1,f2,f3,f4,f5,f6,f7,f8,f9,f10,f11,f12,f13,f14,f15,f16,f17,f18,f19,f20,f21,f22,f23,f24,f25,f26,f27,f28,f29,f30,f31,f32,f33,f34,f35,f36,f37,f38,f39,f40,f41,f42,f43,f44,f45,f46,f47,f48,f49,f50,f51,f52,f53,f54,f55,f56,f57,f58,f59,f60,f61,f62,f63,f64', 'g1,g9,g17'),
 (3, NULL, 'm255', 'f64', NULL),
 (4, 'm300', 'm1', 'f32,f33', 'g16,g17');
UPDATE t_enum_big SET e300 = 'm299', s64 = 'f63,f64' WHERE id = 1;
DELETE FROM t_enum_big WHERE id = 3;

-- ---------- spatial --------------------------------------------------
CREATE TABLE t_geo (
  id    INT PRIMARY KEY,
  g     GEOMETRY,
  pt    POINT,
  ls    LINESTRING,
  poly  POLYGON,
  mpt   MULTIPOINT,
  mls   MULTILINESTRING,
  mpoly MULTIPOLYGON,
  gc    GEOMETRYCOLLECTION,
  pt_nn POINT REF_SYSTEM_ID=4326 NOT NULL
) ENGINE=InnoDB;
INSERT INTO t_geo VALUES
 (1, ST_GeomFromText('POINT(1 1)'), ST_GeomFromText('POINT(1.5 -2.25)'),
     ST_GeomFromText('LINESTRING(0 0,1 1,2 2)'),
     ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(5 5,7 5,7 7,5 7,5 5))'),
     ST_GeomFromText('MULTIPOINT(0 0,1 1)'),
     ST_GeomFromText('MULTILINESTRING((0 0,1 1),(2 2,3 3))'),
     ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 1,0 0)),((2 2,3 2,3 3,2 3,2 2)))'),
     ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1))'),
     ST_GeomFromText('POINT(13.4 52.5)', 4326)),
 (2, ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'), NULL, NULL, NULL, NULL, NULL, NULL, NULL, ST_GeomFromText('POINT(0 0)', 4326)),
 (3, ST_GeomFromText('GEOMETRYCOLLECTION EMPTY'), ST_GeomFromText('POINT(-180 -90)'), NULL, NULL, NULL, NULL, NULL, NULL,
     ST_GeomFromText('POINT(180 90)', 4326));
UPDATE t_geo SET pt = ST_GeomFromText('POINT(3 4)'), ls = NULL WHERE id = 1;
DELETE FROM t_geo WHERE id = 2;

-- ---------- INET4 / INET6 / UUID (MariaDB data type plugins) -----------
CREATE TABLE t_net (
  id   INT PRIMARY KEY,
  ip6  INET6,
  ip4  INET4,
  u    UUID,
  u_nn UUID NOT NULL,
  ip6_nn INET6 NOT NULL
) ENGINE=InnoDB;
INSERT INTO t_net VALUES
 (1, '::', '0.0.0.0', '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '::1'),
 (2, '2001:db8::ff00:42:8329', '192.168.1.1', '123e4567-e89b-12d3-a456-426614174000', '6ccd780c-baba-1026-9564-5b8c656024db', 'fe80::1'),
 (3, '::ffff:10.0.0.1', '255.255.255.255', NULL, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'),
 (4, NULL, NULL, NULL, '00000000-0000-0000-0000-000000000001', '::');
UPDATE t_net SET ip4 = '10.1.2.3', u = '01234567-89ab-4def-8123-456789abcdef' WHERE id = 3;
DELETE FROM t_net WHERE id = 4;

-- ---------- invisible + generated columns -----------------------------
CREATE TABLE t_invisible (
  id    INT PRIMARY KEY,
  a     VARCHAR(20),
  hid   INT INVISIBLE DEFAULT 42,
  b     INT,
  hid2  VARCHAR(10) INVISIBLE NULL
) ENGINE=InnoDB;
INSERT INTO t_invisible VALUES (1, 'one', 10), (2, 'two', 20);
INSERT INTO t_invisible (id, a, hid, b, hid2) VALUES (3, 'three', 7, 30, 'hidden');
UPDATE t_invisible SET hid = hid + 1, hid2 = 'upd' WHERE id IN (1, 3);
DELETE FROM t_invisible WHERE id = 2;

CREATE TABLE t_invisible_nopk (
  a INT,
  b INT
) ENGINE=InnoDB;   -- no key at all
INSERT INTO t_invisible_nopk VALUES (1, 1), (1, 1), (2, NULL);

CREATE TABLE t_generated (
  id  INT PRIMARY KEY,
  a   INT,
  b   VARCHAR(20),
  v1  INT AS (a * 2) VIRTUAL,
  s1  VARCHAR(40) AS (CONCAT(b, '-', a)) PERSISTENT,
  s2  BIGINT AS (a + 1000) STORED,
  v2  VARCHAR(20) AS (UPPER(b)) VIRTUAL,
  c   INT,
  KEY (v1)
) ENGINE=InnoDB;
INSERT INTO t_generated (id, a, b, c) VALUES (1, 1, 'x', 10), (2, 2, 'y', 20), (3, NULL, NULL, 30);
UPDATE t_generated SET a = a + 10, b = 'changed' WHERE id = 1;
UPDATE t_generated SET c = 99 WHERE id = 2;
DELETE FROM t_generated WHERE id = 3;

-- ---------- wide tables (null bitmap > 1 byte, column count > 251) -----
CREATE TABLE t_wide9 (
  c1 INT PRIMARY KEY, c2 INT, c3 VARCHAR(5), c4 INT, c5 INT, c6 INT, c7 INT, c8 INT, c9 INT, c10 INT NOT NULL DEFAULT 0
) ENGINE=InnoDB;
INSERT INTO t_wide9 VALUES (1,NULL,'a',NULL,4,NULL,6,NULL,8,9), (2,2,NULL,4,NULL,6,NULL,8,NULL,10), (3,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0);
UPDATE t_wide9 SET c9 = NULL, c2 = 22 WHERE c1 = 1;
DELETE FROM t_wide9 WHERE c1 = 3;

-- 70 columns: c1 INT PK, c2..c70 mixed types (all nullable)
SET @cols = (SELECT GROUP_CONCAT(CONCAT('c', seq, ' ', ELT(1 + seq MOD 5, 'INT', 'VARCHAR(10)', 'BIGINT UNSIGNED', 'DATETIME(3)', 'DECIMAL(10,2)')) ORDER BY seq) FROM seq_2_to_70);
SET @ddl = CONCAT('CREATE TABLE t_wide70 (c1 INT PRIMARY KEY, ', @cols, ') ENGINE=InnoDB');
PREPARE stmt FROM @ddl; EXECUTE stmt; DEALLOCATE PREPARE stmt;
-- row 1: every column set, row 2: only PK, row 3: every even column set
SET @vals = (SELECT GROUP_CONCAT(ELT(1 + seq MOD 5, seq, CONCAT('''v', seq, ''''), 18446744073709551615 - seq, '''2024-01-01 00:00:00.123''', CONCAT(seq, '.25')) ORDER BY seq) FROM seq_2_to_70);
SET @sql = CONCAT('INSERT INTO t_wide70 VALUES (1, ', @vals, ')'); PREPARE stmt FROM @sql; EXECUTE stmt; DEALLOCATE PREPARE stmt;
INSERT INTO t_wide70 (c1) VALUES (2);
SET @vals = (SELECT GROUP_CONCAT(IF(seq MOD 2 = 0, ELT(1 + seq MOD 5, seq, CONCAT('''v', seq, ''''), 18446744073709551615 - seq, '''2024-01-01 00:00:00.123''', CONCAT(seq, '.25')), 'NULL') ORDER BY seq) FROM seq_2_to_70);
SET @sql = CONCAT('INSERT INTO t_wide70 VALUES (3, ', @vals, ')'); PREPARE stmt FROM @sql; EXECUTE stmt; DEALLOCATE PREPARE stmt;
UPDATE t_wide70 SET c70 = 7070, c66 = 'x66', c9 = 1.5, c2 = NULL WHERE c1 = 1;
UPDATE t_wide70 SET c61 = 'sixty1' WHERE c1 = 2;
DELETE FROM t_wide70 WHERE c1 = 3;

-- 300 columns: column count needs a 3-byte packed integer (>250)
SET @cols = (SELECT GROUP_CONCAT(CONCAT('c', seq, ' TINYINT') ORDER BY seq) FROM seq_2_to_300);
SET @ddl = CONCAT('CREATE TABLE t_wide300 (c1 INT PRIMARY KEY, ', @cols, ') ENGINE=InnoDB');
PREPARE stmt FROM @ddl; EXECUTE stmt; DEALLOCATE PREPARE stmt;
SET @vals = (SELECT GROUP_CONCAT(IF(seq MOD 3 = 0, 'NULL', seq MOD 128) ORDER BY seq) FROM seq_2_to_300);
SET @sql = CONCAT('INSERT INTO t_wide300 VALUES (1, ', @vals, ')'); PREPARE stmt FROM @sql; EXECUTE stmt; DEALLOCATE PREPARE stmt;
INSERT INTO t_wide300 (c1, c300) VALUES (2, -1);
UPDATE t_wide300 SET c299 = 99, c300 = NULL, c2 = -128 WHERE c1 = 1;
DELETE FROM t_wide300 WHERE c1 = 2;

-- ---------- key variants ---------------------------------------------
CREATE TABLE t_nopk (
  a INT,
  b VARCHAR(10),
  c DOUBLE
) ENGINE=InnoDB;
INSERT INTO t_nopk VALUES (1, 'dup', 1.0), (1, 'dup', 1.0), (2, NULL, NULL), (3, 'x', 3.0);
UPDATE t_nopk SET c = 9.5 WHERE a = 1;        -- updates two identical rows
DELETE FROM t_nopk WHERE a = 1 LIMIT 1;       -- deletes one of two identical rows
UPDATE t_nopk SET b = 'was null' WHERE b IS NULL;

CREATE TABLE t_uk_nopk (
  a INT NOT NULL,
  b VARCHAR(10),
  UNIQUE KEY uk_a (a)
) ENGINE=InnoDB;
INSERT INTO t_uk_nopk VALUES (1, 'one'), (2, 'two');
UPDATE t_uk_nopk SET a = 3 WHERE a = 1;

CREATE TABLE t_composite_pk (
  a INT NOT NULL,
  b VARCHAR(10) NOT NULL,
  c DATE NOT NULL,
  payload VARCHAR(20),
  PRIMARY KEY (c, a, b)          -- key order differs from column order
) ENGINE=InnoDB;
INSERT INTO t_composite_pk VALUES (1, 'x', '2024-01-01', 'p1'), (1, 'y', '2024-01-01', 'p2'), (2, 'x', '2024-01-02', 'p3');
UPDATE t_composite_pk SET b = 'z' WHERE a = 1 AND b = 'y';
UPDATE t_composite_pk SET payload = NULL WHERE a = 2;
DELETE FROM t_composite_pk WHERE a = 1 AND b = 'x';

CREATE TABLE t_prefix_pk (
  name VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL,
  val  INT,
  PRIMARY KEY (name(10))
) ENGINE=InnoDB;
INSERT INTO t_prefix_pk VALUES ('abcdefghij-suffix-1', 1), ('😀😀😀😀😀😀😀😀😀😀-emoji', 2), ('short', 3);
UPDATE t_prefix_pk SET val = 20, name = '😀😀😀😀😀😀😀😀😀x-changed' WHERE val = 2;
DELETE FROM t_prefix_pk WHERE val = 3;

CREATE TABLE t_prefix_pk2 (
  id  INT NOT NULL,
  doc TEXT NOT NULL,
  bin BLOB NOT NULL,
  PRIMARY KEY (id, doc(20), bin(4))    -- composite with prefix parts on TEXT/BLOB
) ENGINE=InnoDB;
INSERT INTO t_prefix_pk2 VALUES (1, 'document number one, long enough to be cut', 0x0102030405), (2, 'doc2', 0xFF);
UPDATE t_prefix_pk2 SET doc = 'document number one, changed tail' WHERE id = 1;

-- ---------- storage engines -------------------------------------------
CREATE TABLE t_myisam (id INT PRIMARY KEY, v VARCHAR(20), t DATETIME(6)) ENGINE=MyISAM;
CREATE TABLE t_aria   (id INT PRIMARY KEY, v VARCHAR(20), t DATETIME(6)) ENGINE=Aria;
CREATE TABLE t_memory (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MEMORY;
INSERT INTO t_myisam VALUES (1, 'myisam', '2024-01-01 00:00:00.5'), (2, NULL, NULL);
INSERT INTO t_aria   VALUES (1, 'aria', '2024-01-01 00:00:00.25');
INSERT INTO t_memory VALUES (1, 'memory');
UPDATE t_myisam SET v = 'myisam2' WHERE id = 2;
DELETE FROM t_aria WHERE id = 1;

-- ---------- several databases, odd and long names ---------------------
CREATE DATABASE `db with space & 'quotes'` CHARACTER SET latin1;
CREATE TABLE `db with space & 'quotes'`.`table ``with`` backticks` (`col umn` INT PRIMARY KEY, `sel``ect` VARCHAR(10)) ENGINE=InnoDB;
INSERT INTO `db with space & 'quotes'`.`table ``with`` backticks` VALUES (1, 'a'), (2, 'b');
UPDATE `db with space & 'quotes'`.`table ``with`` backticks` SET `sel``ect` = 'c' WHERE `col umn` = 2;

CREATE DATABASE `données_ünïcödé_数据库` CHARACTER SET utf8mb4;
CREATE TABLE `données_ünïcödé_数据库`.`表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表` (
  `列_ü` INT PRIMARY KEY,
  `значение` VARCHAR(20)
) ENGINE=InnoDB;
INSERT INTO `données_ünïcödé_数据库`.`表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表表` VALUES (1, 'один'), (2, '二');
CREATE TABLE `données_ünïcödé_数据库`.`ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé` (
  `ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé` INT PRIMARY KEY
) ENGINE=InnoDB;
INSERT INTO `données_ünïcödé_数据库`.`ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé` VALUES (1), (2);

CREATE DATABASE `d234567890123456789012345678901234567890123456789012345678901234`;
CREATE TABLE `d234567890123456789012345678901234567890123456789012345678901234`.`t234567890123456789012345678901234567890123456789012345678901234` (
  `c234567890123456789012345678901234567890123456789012345678901234` INT PRIMARY KEY,
  `v234567890123456789012345678901234567890123456789012345678901234` VARCHAR(64)
) ENGINE=InnoDB;
INSERT INTO `d234567890123456789012345678901234567890123456789012345678901234`.`t234567890123456789012345678901234567890123456789012345678901234`
  VALUES (1, 'max length identifiers (64 chars)'), (2, NULL);
DELETE FROM `d234567890123456789012345678901234567890123456789012345678901234`.`t234567890123456789012345678901234567890123456789012345678901234` WHERE `c234567890123456789012345678901234567890123456789012345678901234` = 2;
