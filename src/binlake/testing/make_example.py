"""Regenerate ``examples/example-bin.000001``: a small, realistic binlog written by a real MariaDB server.

A fresh private server (:class:`binlake.testing.mariadb.MariaDBServer`: ROW format, FULL row image, FULL
metadata, CRC32) runs :data:`EXAMPLE_SQL` — a little shop with ``customers`` and ``orders``, bulk inserts in
several transactions, updates, deletes, one multi-table transaction and an ``ALTER TABLE`` in the middle —
and is then shut down, so the whole example is the server's first binlog file, from its FORMAT_DESCRIPTION
event to the STOP event. The row values are fixed (derived from row numbers, no NOW() or RAND()), so a rerun
with the same MariaDB version writes the same events with only the event timestamps (the time of the run)
and the checksums that cover them changed. The clock is deliberately not pinned with ``SET TIMESTAMP``:
that would make every Query event's ``exec_time`` the distance to the pinned time.

Usage::

    python -m binlake.testing.make_example examples/example-bin.000001
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from binlake.testing.mariadb import MariaDBError, MariaDBServer

__all__ = ["EXAMPLE_SQL", "main", "make_example"]

BINLOG_BASENAME = "example-bin"


def _orders_batch(batch: int) -> str:
    """One transaction inserting 30 orders (ids 30*batch+1 ...), values derived from the row number."""
    first, last = 30 * batch + 1, 30 * batch + 30
    return f"""INSERT INTO orders (customer_id, status, total, placed, note)
SELECT 1 + (seq * 37) MOD 120, 'new', ROUND(5 + (seq * 7919) MOD 50000 / 100, 2),
       TIMESTAMP'2024-06-03 09:00:00' + INTERVAL seq * 397 SECOND + INTERVAL (seq * 1234) MOD 1000000 MICROSECOND,
       IF(seq MOD 9 = 0, CONCAT('gift wrap, order #', seq), NULL)
  FROM seq_{first}_to_{last};"""


EXAMPLE_SQL = "\n".join(
    [
        """SET SESSION time_zone = '+00:00';
SET NAMES utf8mb4;
CREATE DATABASE shop CHARACTER SET utf8mb4;
USE shop;
CREATE TABLE customers (
  id      INT UNSIGNED NOT NULL PRIMARY KEY,
  name    VARCHAR(60) NOT NULL,
  email   VARCHAR(120) NULL,
  country CHAR(2) NOT NULL,
  created DATETIME NOT NULL
) ENGINE=InnoDB;
CREATE TABLE orders (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  status      ENUM('new','paid','shipped','cancelled') NOT NULL DEFAULT 'new',
  total       DECIMAL(10,2) NOT NULL,
  placed      DATETIME(6) NOT NULL,
  note        VARCHAR(200) NULL,
  KEY idx_customer (customer_id)
) ENGINE=InnoDB;
INSERT INTO customers
SELECT seq,
       CONCAT(ELT(1 + seq MOD 8, 'Ada', 'Björn', 'Chen', 'Dalia', 'Émile', 'Farah', 'Gus', 'Hana'), ' ',
              ELT(1 + (seq DIV 8) MOD 6, 'Lovelace', 'Öberg', 'Wang', 'Núñez', 'Zola', 'Haddad')),
       IF(seq MOD 7 = 0, NULL, CONCAT('customer', seq, '@example.com')),
       ELT(1 + seq MOD 5, 'DE', 'FR', 'JP', 'BR', 'US'),
       '2024-01-01 00:00:00' + INTERVAL seq * 17 HOUR
  FROM seq_1_to_120;""",
        *(_orders_batch(batch) for batch in range(10)),
        """UPDATE orders SET status = 'paid' WHERE id MOD 3 <> 0;
UPDATE customers SET email = 'chen.wang@example.org' WHERE id = 18;
ALTER TABLE customers ADD COLUMN loyalty_points INT NOT NULL DEFAULT 0 AFTER country;
UPDATE customers c
   JOIN (SELECT customer_id, FLOOR(SUM(total)) AS pts FROM orders WHERE status = 'paid' GROUP BY customer_id) p
     ON p.customer_id = c.id
   SET c.loyalty_points = p.pts;
UPDATE orders SET status = 'shipped', note = CONCAT(COALESCE(note, ''), ' [shipped]')
 WHERE status = 'paid' AND id <= 150;
UPDATE orders SET status = 'cancelled' WHERE id MOD 25 = 0;
DELETE FROM orders WHERE status = 'cancelled' AND id > 200;
START TRANSACTION;
INSERT INTO customers (id, name, email, country, loyalty_points, created)
  VALUES (121, 'Ingrid Ødegård', 'ingrid@example.no', 'NO', 0, '2024-06-05 08:15:00');
INSERT INTO orders (customer_id, status, total, placed, note)
  VALUES (121, 'paid', 42.00, '2024-06-05 08:16:30.250000', 'first order 🎉'),
         (121, 'new', 7.50, '2024-06-05 08:17:02.000001', NULL);
UPDATE customers SET loyalty_points = loyalty_points + 42 WHERE id = 121;
COMMIT;
DELETE FROM orders WHERE customer_id IN (13, 57);
DELETE FROM customers WHERE id IN (13, 57);""",
    ]
)


def make_example(output: Path) -> Path:
    """Run :data:`EXAMPLE_SQL` on a fresh server, stop it, and copy its single binlog file to ``output``."""
    with MariaDBServer(binlog_basename=BINLOG_BASENAME) as server:
        server.execute(EXAMPLE_SQL)
        files = server.binlog_files()
        if len(files) != 1:
            raise MariaDBError(f"expected one binlog file, the server wrote {[f.name for f in files]}")
        server.stop()  # a clean shutdown ends the file with a STOP event
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(files[0], output)
    return output


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m binlake.testing.make_example OUTPUT``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("output", type=Path, help="where to write the binlog, e.g. examples/example-bin.000001")
    args = parser.parse_args(argv)
    path = make_example(args.output)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
