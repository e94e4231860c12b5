-- workload_big.sql: the schema and generator of binlake's benchmark binlog (run by benchmarks/run.py).
--
-- One InnoDB table of 10 columns (integers of four widths, VARCHAR, DECIMAL, two DATETIME(6), TEXT and a nullable
-- BIGINT) and a procedure that writes N transactions of 1 to 100 row changes each, chosen by a seeded RAND():
--   45 %  one INSERT ... SELECT of k new rows
--   30 %  one UPDATE of k consecutive rows (every column of the after image can change)
--   17 %  one DELETE of k consecutive rows
--    8 %  a mixed transaction: INSERT, UPDATE and DELETE of about k/3 rows each
-- With ROW format, FULL row images and FULL metadata, N = 110000 writes about 5.5 million row changes, ~1 GiB.
--
-- Usage (the client must accept DELIMITER):
--   mariadb ... < workload_big.sql
--   CALL binlake_bench.generate(110000, 7);
DROP DATABASE IF EXISTS binlake_bench;
CREATE DATABASE binlake_bench CHARACTER SET utf8mb4;
USE binlake_bench;

CREATE TABLE shipment (
  id        BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  account   INT UNSIGNED NOT NULL,
  region    TINYINT UNSIGNED NOT NULL,
  code      VARCHAR(40) NOT NULL,
  units     MEDIUMINT NOT NULL,
  amount    DECIMAL(14,4) NOT NULL,
  placed    DATETIME(6) NOT NULL,
  shipped   DATETIME(6) NULL,
  remark    TEXT NULL,
  tracking  BIGINT NULL
) ENGINE=InnoDB;

-- 100 numbered rows: the row source of the INSERT ... SELECT statements (LIMIT k picks the batch size).
CREATE TABLE hundred (n TINYINT UNSIGNED NOT NULL PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO hundred (n)
  WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100) SELECT n FROM c;

DELIMITER //
CREATE PROCEDURE generate(IN n_txn INT, IN seed INT)
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE pick DOUBLE;
  DECLARE k INT;
  DECLARE first_id BIGINT UNSIGNED;
  DECLARE last_id BIGINT UNSIGNED;
  DECLARE from_id BIGINT UNSIGNED;
  -- RAND() without an argument draws from the session's generator, which these two variables seed (RAND(seed)
  -- would seed only its own call site): the same seed writes the same binlog.
  SET @@SESSION.rand_seed1 = seed, @@SESSION.rand_seed2 = seed * 7919 + 1;
  WHILE done < n_txn DO
    SET pick = RAND();
    SET k = 1 + FLOOR(RAND() * 100);
    SELECT COALESCE(MIN(id), 1), COALESCE(MAX(id), 1) INTO first_id, last_id FROM shipment;
    SET from_id = first_id + FLOOR(RAND() * GREATEST(last_id - first_id, 1));
    START TRANSACTION;
    IF pick < 0.45 THEN
      INSERT INTO shipment (account, region, code, units, amount, placed, shipped, remark, tracking)
        SELECT FLOOR(RAND() * 4000000000), FLOOR(RAND() * 16),
               CONCAT(ELT(1 + FLOOR(RAND() * 4), 'EU', 'US', 'AP', 'LA'), '/', HEX(FLOOR(RAND() * 1099511627776))),
               1 + FLOOR(RAND() * 500), ROUND(RAND() * 250000, 4),
               TIMESTAMP'2021-01-01 00:00:00' + INTERVAL FLOOR(RAND() * 126000000000000) MICROSECOND,
               IF(RAND() < 0.6, NULL,
                  TIMESTAMP'2025-01-01 00:00:00' + INTERVAL FLOOR(RAND() * 20000000000000) MICROSECOND),
               IF(RAND() < 0.2, NULL, SUBSTRING(REPEAT(CONCAT(SHA1(RAND()), '; '), 6), 1, FLOOR(RAND() * 180))),
               IF(RAND() < 0.5, NULL, FLOOR((RAND() - 0.5) * 4611686018427387904))
          FROM hundred ORDER BY n LIMIT k;
    ELSEIF pick < 0.75 THEN
      UPDATE shipment
         SET region = FLOOR(RAND() * 16), units = units + 1, amount = ROUND(amount * 1.02, 4),
             shipped = TIMESTAMP'2025-01-01 00:00:00' + INTERVAL FLOOR(RAND() * 20000000000000) MICROSECOND,
             remark = IF(RAND() < 0.25, CONCAT(COALESCE(SUBSTRING(remark, 1, 120), ''), ' +moved'), remark),
             tracking = IF(RAND() < 0.1, NULL, COALESCE(tracking, 0) + 1)
       WHERE id >= from_id ORDER BY id LIMIT k;
    ELSEIF pick < 0.92 THEN
      DELETE FROM shipment WHERE id >= from_id ORDER BY id LIMIT k;
    ELSE
      SET k = GREATEST(1, k DIV 3);
      INSERT INTO shipment (account, region, code, units, amount, placed, shipped, remark, tracking)
        SELECT FLOOR(RAND() * 4000000000), 15, CONCAT('MIXED/', n), 1, 19.9900,
               TIMESTAMP'2024-03-01 00:00:00' + INTERVAL FLOOR(RAND() * 2000000000000) MICROSECOND,
               NULL, SUBSTRING(SHA1(RAND()), 1, FLOOR(RAND() * 40)), NULL
          FROM hundred ORDER BY n LIMIT k;
      UPDATE shipment SET region = 0, shipped = TIMESTAMP'2025-06-30 23:59:59.999999'
       WHERE id >= from_id ORDER BY id LIMIT k;
      DELETE FROM shipment WHERE id >= from_id ORDER BY id LIMIT k;
    END IF;
    COMMIT;
    SET done = done + 1;
  END WHILE;
END//
DELIMITER ;
