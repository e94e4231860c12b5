"""Every option of the decoding subcommands does what it says, and secrets never come from the command line.

The encrypted log is the corpus's ``mariadb/binlogs/corpus-bin.000022`` (``encrypt_binlog=ON``, the key in
``workloads/keys.txt``); the server's own decryption of it (``mariadb/reference/remote-raw-corpus-bin.000022``) is
the oracle for ``explain --key-file``.  An encrypted key file is made here the way ``openssl enc -aes-256-cbc -md
sha1`` makes it (``plugin/file_key_management/parser.cc`` reads that format), with a secret that must appear in no
output.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from binlake.cli import main
from binlake.cli.decode import FILE_KEY_ENV
from binlake.crypto import load_key_file, mariadb_decryptor
from binlake.events.context import DecodeOptions
from binlake.reader import read_events, walk_headers
from binlake.render.explain import event_at

ENCRYPTED = "mariadb/binlogs/corpus-bin.000022"
DECRYPTED = "mariadb/reference/remote-raw-corpus-bin.000022"
KEYS = "workloads/keys.txt"
START_ENCRYPTION_POS = 256
SECRET = "file-key-secret-7c1e"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "example-bin.000001"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def openssl_enc(plain: bytes, secret: str, salt: bytes = b"8 bytes!") -> bytes:
    """``openssl enc -aes-256-cbc -md sha1 -k SECRET``: ``Salted__``, the salt, AES-256-CBC with PKCS#7 padding under
    EVP_BytesToKey(sha1) of the secret and salt."""
    derived, digest = b"", b""
    while len(derived) < 48:
        digest = hashlib.sha1(digest + secret.encode() + salt).digest()
        derived += digest
    padder = padding.PKCS7(128).padder()
    enc = Cipher(algorithms.AES(derived[:32]), modes.CBC(derived[32:48])).encryptor()
    return b"Salted__" + salt + enc.update(padder.update(plain) + padder.finalize()) + enc.finalize()


@pytest.fixture
def encrypted_keys(corpus_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The corpus's key file encrypted with :data:`SECRET`, and a file holding the secret."""
    keys = tmp_path / "keys.enc"
    keys.write_bytes(openssl_enc((corpus_dir / KEYS).read_bytes(), SECRET))
    secret = tmp_path / "filekey"
    secret.write_text(SECRET + "\n")
    assert load_key_file(keys, SECRET) == load_key_file(corpus_dir / KEYS)
    return keys, secret


# -- explain --key-file ---------------------------------------------------------------------------------------------


def test_explain_decrypts_every_event_as_the_server_does(corpus_dir: Path) -> None:
    decryptor = mariadb_decryptor(load_key_file(corpus_dir / KEYS))
    positions = [h.pos for h in walk_headers(corpus_dir / DECRYPTED)]
    assert len(positions) == 26
    for pos in positions:
        ours, ctx = event_at(str(corpus_dir / ENCRYPTED), pos, DecodeOptions(), decryptor)
        server, _ = event_at(str(corpus_dir / DECRYPTED), pos, DecodeOptions())
        if pos == START_ENCRYPTION_POS:  # the dump thread flags it ignorable and recomputes its CRC (sql_repl.cc)
            assert ours[:17] + ours[19:-4] == server[:17] + server[19:-4] and not ctx.encrypted
        else:
            assert ours == server, pos
            assert ctx.encrypted == (pos > START_ENCRYPTION_POS)


def test_explain_cli_with_the_key(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, keys = str(corpus_dir / ENCRYPTED), str(corpus_dir / KEYS)
    rows = next(ev for ev in read_events(corpus_dir / DECRYPTED) if ev.type == "WRITE_ROWS_EVENT_V1")
    status, out, err = run(capsys, "explain", "--key-file", keys, log, "--at", str(rows.header.pos))
    assert (status, err) == (0, "")
    assert f"Position {rows.header.pos}: WRITE_ROWS_EVENT_V1" in out and "Decrypted with the key file" in out
    assert "@2='encrypted row 😀'" in out and "CRC32 stored 0x" in out
    status, out, err = run(capsys, "explain", "--key-file", keys, log, "--at", str(rows.header.pos), "--json")
    explained = json.loads(out)
    assert status == 0 and explained["decrypted"] and explained["checksum"]["ok"]
    status, out, err = run(capsys, "explain", log, "--at", str(rows.header.pos))
    assert status == 2 and out == "" and "encrypted" in err and "key file" in err


def test_explain_options_apply_to_file_or_hex(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = str(corpus_dir / ENCRYPTED)
    status, _, err = run(capsys, "explain", log, "--at", "4", "--no-checksum")
    assert status == 2 and "--no-checksum: only with --hex" in err
    status, _, err = run(capsys, "explain", log, "--at", "4", "--server-version", "10.11.6-MariaDB")
    assert status == 2 and "--server-version: only with --hex" in err
    status, _, err = run(capsys, "explain", "--hex", "00" * 19, "--key-file", str(corpus_dir / KEYS))
    assert status == 2 and "--key-file: only with FILE" in err
    with pytest.raises(SystemExit) as exit_:
        main(["explain", log, "--at", "4", "--on-error", "skip-event"])  # one event: nothing to skip
    assert exit_.value.code == 2


# -- the file key: a file or the environment, never argv ----------------------------------------------------------


@pytest.mark.parametrize("command", ["events", "dump", "stats", "explain"])
def test_the_file_key_comes_from_a_file_or_the_environment(
    corpus_dir: Path,
    encrypted_keys: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    command: str,
) -> None:
    keys, secret = encrypted_keys
    log = str(corpus_dir / ENCRYPTED)
    argv = [command, log, *(["--at", "980"] if command == "explain" else [])]
    marker = "corpus_enc.secret    " if command == "stats" else "encrypted row"  # text only the decrypted log has
    monkeypatch.delenv(FILE_KEY_ENV, raising=False)

    def outcome(*extra: str) -> tuple[int, str]:
        status = main([*argv, "--key-file", str(keys), *extra])
        out, err = capfd.readouterr()  # dump writes to the stdout file descriptor
        assert SECRET not in out + err
        return status, out + err

    status, text = outcome("--file-key-file", str(secret))
    assert status == 0 and marker in text
    monkeypatch.setenv(FILE_KEY_ENV, SECRET)
    status, text = outcome()
    assert status == 0 and marker in text
    monkeypatch.setenv(FILE_KEY_ENV, "not the secret")
    status, text = outcome()
    assert status != 0 and "wrong file key" in text
    monkeypatch.delenv(FILE_KEY_ENV)
    status, text = outcome()
    assert status != 0 and "give its file key" in text
    with pytest.raises(SystemExit):  # the secret itself is no option any more
        main([*argv, "--key-file", str(keys), "--file-key", SECRET])
    capfd.readouterr()


def test_a_file_key_file_needs_a_key_file(
    encrypted_keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "events", str(EXAMPLE), "--file-key-file", str(encrypted_keys[1]))
    assert status == 2 and "give --key-file too" in err


# -- dump honours every decoding option -----------------------------------------------------------------------------


def test_dump_honours_unknown_events_and_checksums(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """An event of a type no server writes (code 200, CRC32 recomputed) is kept raw by default and stops the dump
    with --unknown-events error; a damaged CRC stops it unless --no-verify-checksum."""
    data = bytearray(EXAMPLE.read_bytes())
    xid = next(h for h in walk_headers(EXAMPLE) if h.type_code == 16)
    data[xid.pos + 4] = 200
    end = xid.pos + xid.size
    struct.pack_into("<I", data, end - 4, zlib.crc32(bytes(data[xid.pos : end - 4])))
    unknown = tmp_path / "unknown.000001"
    unknown.write_bytes(bytes(data))
    assert main(["dump", str(unknown)]) == 0
    assert main(["dump", str(unknown), "--unknown-events", "error"]) == 2
    assert capfd.readouterr().err == f"binlake dump: {unknown}: at {xid.pos}: unknown event type 200\n"
    data[end - 1] ^= 0xFF
    damaged = tmp_path / "damaged.000001"
    damaged.write_bytes(bytes(data))
    assert main(["dump", str(damaged)]) == 2
    err = capfd.readouterr().err
    assert err.startswith(f"binlake dump: {damaged}: at {xid.pos}: CRC32 mismatch") and err.count("\n") == 1
    assert err.endswith(" (--on-error skip-event or skip-transaction reads on past it)\n")
    assert main(["dump", str(damaged), "--no-verify-checksum"]) == 0
    capfd.readouterr()


def test_an_unreadable_schema_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("events", "stats", "explain"):
        argv = [command, str(EXAMPLE), *(["--at", "4"] if command == "explain" else [])]
        status, _, err = run(capsys, *argv, "--schema", str(tmp_path / "absent.sql"))
        assert status != 0 and "cannot read --schema" in err and "Traceback" not in err, command
    assert os.path.exists(EXAMPLE)


def test_events_idle_timeout_needs_follow(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "events", str(EXAMPLE), "--idle-timeout", "1")
    assert (status, out) == (2, "") and "--idle-timeout: only with --follow" in err
    status, out, _ = run(capsys, "events", str(EXAMPLE), "--idle-timeout", "0.1", "--follow")
    assert status == 0 and "FORMAT_DESCRIPTION_EVENT" in out
