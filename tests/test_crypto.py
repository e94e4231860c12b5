"""MariaDB binlog encryption: the corpus's encrypted log decodes, with its key, to the server's decrypted copy.

The anchor is real: ``mariadb/binlogs/corpus-bin.000022`` was written with ``encrypt_binlog=ON`` and the key of
``workloads/keys.txt``; ``mariadb/reference/remote-raw-corpus-bin.000022`` is the same log as the server's dump
thread sent it (decrypted, START_ENCRYPTION flagged ignorable).  Key files are checked against ``openssl enc``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.crypto import load_key_file, mariadb_decryptor, parse_key_file
from binlake.decoder import Decoder
from binlake.errors import BinlogError, ChecksumError, EncryptedError
from binlake.events.base import EventHeader
from binlake.events.mariadb import StartEncryptionEvent
from binlake.reader import read_events
from binlake.wire import crc32

ENCRYPTED = "mariadb/binlogs/corpus-bin.000022"
DECRYPTED = "mariadb/reference/remote-raw-corpus-bin.000022"
KEYS = "workloads/keys.txt"
KEY_HEX = "a7addd9adea9978fda19f21e6be987880e68ac92632ca052e5bb42b1a506939a"  # gen.sh's test-only key
START_ENCRYPTION_POS = 256


@pytest.fixture(scope="module")
def keys(corpus_dir: Path) -> dict[int, bytes]:
    return load_key_file(corpus_dir / KEYS)


@pytest.mark.corpus
def test_encrypted_log_decodes_to_the_servers_decrypted_copy(corpus_dir: Path, keys: dict[int, bytes]) -> None:
    ours = list(read_events(corpus_dir / ENCRYPTED, decryptor=mariadb_decryptor(keys)))
    server = list(read_events(corpus_dir / DECRYPTED))
    assert len(ours) == len(server) == 26
    for a, b in zip(ours, server, strict=True):
        if a.header.pos == START_ENCRYPTION_POS:
            # the dump thread flags it LOG_EVENT_IGNORABLE_F and recomputes its CRC (sql_repl.cc fix_checksum)
            assert (a.header.flags, b.header.flags) == (0, 0x80)
            assert isinstance(a, StartEncryptionEvent) and isinstance(b, StartEncryptionEvent)
            assert (a.crypto_scheme, a.key_version, a.nonce) == (b.crypto_scheme, b.key_version, b.nonce)
            assert a.nonce.hex() == "f58bfdb7d91d5e66b2327043"
        else:
            assert a == b
    assert [e.type for e in ours[-8:]] == [
        "UPDATE_ROWS_EVENT_V1",
        "XID_EVENT",
        "GTID_EVENT",
        "ANNOTATE_ROWS_EVENT",
        "TABLE_MAP_EVENT",
        "DELETE_ROWS_EVENT_V1",
        "XID_EVENT",
        "ROTATE_EVENT",
    ]
    # gen.sh: INSERT INTO corpus_enc.secret VALUES (1, 'encrypted row 😀', '2024-01-01 00:00:00.5'), (2, NULL, NULL)
    writes = [e for e in ours if e.type == "WRITE_ROWS_EVENT_V1"]
    rows = [after for _, after in writes[0].rows()]  # type: ignore[attr-defined]
    assert rows == [(1, "encrypted row 😀", datetime(2024, 1, 1, 0, 0, 0, 500000)), (2, None, None)]


@pytest.mark.corpus
def test_wrong_key_is_said(corpus_dir: Path) -> None:
    with pytest.raises(EncryptedError, match=r"wrong key\?") as exc:
        list(read_events(corpus_dir / ENCRYPTED, decryptor=mariadb_decryptor({1: bytes(32)})))
    assert exc.value.pos == 296 and exc.value.file is not None and exc.value.file.endswith("000022")


@pytest.mark.corpus
def test_missing_key_and_missing_decryptor(corpus_dir: Path) -> None:
    with pytest.raises(EncryptedError, match="no key of id 1") as exc:
        list(read_events(corpus_dir / ENCRYPTED, decryptor=mariadb_decryptor({2: bytes.fromhex(KEY_HEX)})))
    assert exc.value.pos == 296
    with pytest.raises(EncryptedError, match="give the server's key file") as exc:
        list(read_events(corpus_dir / ENCRYPTED))
    assert exc.value.pos == 296


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("offset", "error", "message"),
    [
        (6, EncryptedError, "damaged"),  # first cipher block: the decrypted log position is garbage
        (40, ChecksumError, "CRC32 mismatch in TABLE_MAP_EVENT"),  # later block: header fine, CRC catches it
    ],
)
def test_damaged_ciphertext_is_an_error_not_garbage(
    corpus_dir: Path, keys: dict[int, bytes], offset: int, error: type[BinlogError], message: str
) -> None:
    data = bytearray((corpus_dir / ENCRYPTED).read_bytes())
    data[1107 + offset] ^= 0x01  # inside the encrypted TABLE_MAP at 1107
    dec = Decoder(decryptor=mariadb_decryptor(keys))
    dec.feed(bytes(data))
    with pytest.raises(error, match=message) as exc:
        list(dec.events())
    assert exc.value.pos == 1107
    assert dec.position == 1107  # the events before it were all yielded


def test_key_file_format() -> None:
    text = "# comment\n\n   \n  1;" + KEY_HEX + "\r\n2;00112233445566778899AABBCCDDEEFF   trailing words\n"
    keys = parse_key_file(text)
    assert keys == {1: bytes.fromhex(KEY_HEX), 2: bytes.fromhex("00112233445566778899aabbccddeeff")}
    for bad, message in [
        ("x;00", "syntax error"),
        ("1 00", "syntax error"),
        ("1;0011", "16, 24 or 32 bytes"),
        ("1;" + "0" * 33, "16, 24 or 32 bytes"),
        ("0;" + "0" * 32, "invalid key id"),
    ]:
        with pytest.raises(EncryptedError, match=message):
            parse_key_file(bad)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl command-line tool not installed")
def test_encrypted_key_file_made_by_openssl(tmp_path: Path) -> None:
    plain = tmp_path / "keys.txt"
    plain.write_text(f"1;{KEY_HEX}\n3;{'ab' * 24}\n")
    enc = tmp_path / "keys.enc"
    # the command parser.cc documents for file_key_management_filekey
    subprocess.run(
        ["openssl", "enc", "-aes-256-cbc", "-md", "sha1", "-k", "secret", "-in", plain, "-out", enc],
        check=True,
        capture_output=True,
    )
    assert enc.read_bytes().startswith(b"Salted__")
    expected = {1: bytes.fromhex(KEY_HEX), 3: bytes.fromhex("ab" * 24)}
    assert load_key_file(enc, "secret") == expected
    secret_file = tmp_path / "filekey"
    secret_file.write_text("secret\n")
    assert load_key_file(enc, f"FILE:{secret_file}") == expected
    with pytest.raises(EncryptedError, match="wrong file key"):
        load_key_file(enc, "not the secret")
    with pytest.raises(EncryptedError, match="is encrypted"):
        load_key_file(enc)
    with pytest.raises(EncryptedError, match="not encrypted"):
        load_key_file(plain, "secret")
    with pytest.raises(EncryptedError, match="cannot read key file"):
        load_key_file(tmp_path / "absent.txt")


def _server_encrypt(event: bytes, pos: int, key: bytes, nonce: bytes) -> bytes:
    """Log_event_writer's encryption of one event, written from sql/log_event_server.cc and my_crypt.cc."""
    iv = nonce + pos.to_bytes(4, "little")
    plain = event[4:9] + event[:4] + event[13:]  # write_header: the timestamp goes where the size was
    full = len(plain) - len(plain) % 16
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    cipher_text = enc.update(plain[:full]) + enc.finalize()
    if full < len(plain):  # MyCTX_nopad::finish
        ecb = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        mask = ecb.update(iv) + ecb.finalize()
        cipher_text += bytes(a ^ b for a, b in zip(plain[full:], mask, strict=False))
    return cipher_text[5:9] + cipher_text[:5] + event[9:13] + cipher_text[9:]  # maybe_write_event_len


@settings(max_examples=60, deadline=None)
@given(
    body=st.binary(min_size=0, max_size=80),
    pos=st.integers(4, 2**32 - 200),
    key=st.sampled_from([bytes(range(16)), bytes(range(24)), bytes.fromhex(KEY_HEX)]),
    nonce=st.binary(min_size=12, max_size=12),
)
def test_every_length_round_trips(body: bytes, pos: int, key: bytes, nonce: bytes) -> None:
    size = 19 + len(body) + 4
    head = (1700000000).to_bytes(4, "little") + bytes([2]) + (1).to_bytes(4, "little") + size.to_bytes(4, "little")
    head += (pos + size).to_bytes(4, "little") + b"\0\0"
    event = head + body
    event += crc32(event).to_bytes(4, "little")
    start = StartEncryptionEvent(EventHeader(0, 164, 1, 40, pos, 0, 4), 1, 1, nonce)
    stored = _server_encrypt(event, pos, key, nonce)
    assert stored[9:13] == event[9:13]  # the size stays readable
    assert mariadb_decryptor({1: key})(stored, pos, start) == event


def test_unknown_scheme_is_unsupported() -> None:
    start = StartEncryptionEvent(EventHeader(0, 164, 1, 40, 4, 0, 4), 2, 1, bytes(12))
    with pytest.raises(BinlogError, match="scheme 2"):
        mariadb_decryptor({1: bytes(16)})(bytes(40), 300, start)


def test_missing_cryptography_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives", None)
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers", None)
    with pytest.raises(EncryptedError, match="pip install cryptography"):
        mariadb_decryptor({1: bytes(16)})


def test_resuming_mid_file_in_an_encrypted_log(corpus_dir: Path) -> None:
    """read_events(start=...) decodes the header events first, START_ENCRYPTION included, so a byte range of an
    encrypted log (a Spark split) decrypts like the whole file."""
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000022"
    decryptor = mariadb_decryptor(load_key_file(corpus_dir / KEYS))
    whole = [(e.header.pos, e.type) for e in read_events(path, decryptor=decryptor)]
    start = whole[len(whole) // 2][0]
    tail = [(e.header.pos, e.type) for e in read_events(path, decryptor=decryptor, start=start)]
    assert tail == [w for w in whole if w[0] >= start] and len(tail) > 3
