"""MariaDB-only events: ANNOTATE_ROWS and START_ENCRYPTION."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from tests.events._corpus import events_at

from binlake.events.mariadb import AnnotateRowsEvent, StartEncryptionEvent
from binlake.reader import read_events


def test_annotate_rows(corpus_dir: Path) -> None:
    # corpus-bin.000004 reference: "#Q> INSERT INTO accounts VALUES (300, 'xa', 3.00, NULL, NULL, 'xa two phase')"
    annotations = [
        ev
        for ev in events_at(corpus_dir, "mariadb/binlogs/corpus-bin.000004").values()
        if isinstance(ev, AnnotateRowsEvent)
    ]
    assert len(annotations) == 54
    assert "INSERT INTO accounts VALUES (300, 'xa', 3.00, NULL, NULL, 'xa two phase')" in [a.query for a in annotations]
    mysql_common = events_at(corpus_dir, "mysql/rust_mysql_common/mariadb-bin.000001")[372]
    assert isinstance(mysql_common, AnnotateRowsEvent)
    assert mysql_common.query == "insert into outbox (topic, event_type, event) values ('foo', 'JSON', '{\"foo\":1}')"


def test_start_encryption(corpus_dir: Path) -> None:
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000022"
    raw = path.read_bytes()
    _, ev = islice(read_events(path), 2)  # the events after it are encrypted
    assert isinstance(ev, StartEncryptionEvent) and ev.header.pos == 256
    assert (ev.crypto_scheme_name, ev.key_version) == ("AES", 1)
    assert ev.nonce == raw[256 + 19 + 5 : 256 + 19 + 17]
