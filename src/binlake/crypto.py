"""Decrypt MariaDB encrypted binlogs (``encrypt_binlog=ON``) with the server's ``file_key_management`` key file.

The scheme (MariaDB ``sql/log_event_server.cc`` ``Log_event_writer``, ``sql/log_event.cc`` ``read_log_event``,
``mysys_ssl/my_crypt.cc``):

* A START_ENCRYPTION_EVENT after the format description carries the scheme (1 = AES), the key version and a
  12-byte nonce.  The key is the encryption key of id 1 (``ENCRYPTION_KEY_SYSTEM_DATA``) of that version; the
  ``file_key_management`` plugin has one version of each key.
* Every later event is encrypted whole except its first 4 bytes, with AES-CBC and no padding
  (``ENCRYPTION_FLAG_NOPAD``), IV = nonce + the event's position (4 bytes little-endian).  A last partial block is
  XORed with AES-ECB(IV) (``MyCTX_nopad::finish``), so the ciphertext is as long as the event.
* Before encrypting, the writer puts the timestamp (bytes 0-3) where the event size goes (bytes 9-12); after, it
  moves ciphertext bytes 9-12 to the front and writes the size in clear at 9-12.  A reader can therefore split an
  encrypted log into events without the key.

``file_key_management`` key files (``plugin/file_key_management/parser.cc``) hold lines ``id;hexkey`` (16, 24 or 32
bytes of key), ``#`` comments and blank lines; a file made by ``openssl enc -aes-256-cbc -md sha1 -k SECRET`` (it
starts with ``Salted__``) is the same text encrypted with a key derived from the ``file_key_management_filekey``
secret.

Decrypting needs the ``cryptography`` package (a dependency of binlake); it is imported only here, only when a
decryptor is made, so the core decoder keeps to the standard library.

Example::

    keys = load_key_file("/etc/mysql/keys.txt")
    for ev in read_events("mariadb-bin.000022", decryptor=mariadb_decryptor(keys)):
        print(ev.header.pos, ev.type)
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from typing import Any

from binlake.decoder import Decryptor
from binlake.errors import EncryptedError, UnsupportedError
from binlake.events.mariadb import StartEncryptionEvent
from binlake.wire import crc32

__all__ = ["load_key_file", "mariadb_decryptor", "parse_key_file"]

SYSTEM_DATA_KEY_ID = 1  # ENCRYPTION_KEY_SYSTEM_DATA (include/mysql/service_encryption.h): the binlog's key
_AES_SCHEME = 1
_BLOCK = 16
_OPENSSL_PREFIX = b"Salted__"  # parser.cc: what `openssl enc` writes before the 8-byte salt
_KEY_LINE = re.compile(r"[ \t\r\f\v]*(\d+);([0-9A-Fa-f]*)")
_INSTALL = "decrypting MariaDB binlogs needs the 'cryptography' package (a dependency): pip install cryptography"


def _cryptography() -> Any:
    """The ``cryptography`` cipher module, or a clear :class:`EncryptedError` when it is not installed."""
    try:
        from cryptography.hazmat.primitives import ciphers
    except ImportError:
        raise EncryptedError(_INSTALL) from None
    return ciphers


def parse_key_file(text: str, name: str = "key file") -> dict[int, bytes]:
    """Keys by id from the text of a ``file_key_management`` key file (rules of ``Parser::parse_line``).

    >>> parse_key_file("# binlog key\\n1;000102030405060708090a0b0c0d0e0f\\n")
    {1: b'\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\t\\n\\x0b\\x0c\\r\\x0e\\x0f'}
    """
    keys: dict[int, bytes] = {}
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _KEY_LINE.match(line)
        if m is None:
            raise EncryptedError(f"{name} line {number}: syntax error (expected 'id;hexkey')")
        key_id, hexkey = int(m.group(1)), m.group(2)
        if not 1 <= key_id <= 0xFFFFFFFF:
            raise EncryptedError(f"{name} line {number}: invalid key id {key_id}")
        if len(hexkey) not in (32, 48, 64):
            raise EncryptedError(f"{name} line {number}: a key is 16, 24 or 32 bytes, not {len(hexkey) / 2:g}")
        keys[key_id] = bytes.fromhex(hexkey)
    return keys


def _openssl_bytes_to_key(secret: bytes, salt: bytes) -> tuple[bytes, bytes]:
    """Key (32 bytes) and IV (16) as ``openssl enc -md sha1`` derives them (``Parser::bytes_to_key``)."""
    out, digest = b"", b""
    while len(out) < 48:
        digest = hashlib.sha1(digest + secret + salt).digest()
        out += digest
    return out[:32], out[32:48]


def _decrypt_key_file(data: bytes, filekey: str, name: str) -> bytes:
    ciphers = _cryptography()
    from cryptography.hazmat.primitives import padding

    salt, body = data[8:16], data[16:]
    if len(salt) < 8 or not body or len(body) % _BLOCK:
        raise EncryptedError(f"{name}: truncated encrypted key file")
    key, iv = _openssl_bytes_to_key(filekey.encode(), salt)
    d = ciphers.Cipher(ciphers.algorithms.AES(key), ciphers.modes.CBC(iv)).decryptor()
    unpad = padding.PKCS7(128).unpadder()
    try:
        plain: bytes = unpad.update(d.update(body) + d.finalize()) + unpad.finalize()
    except ValueError:
        raise EncryptedError(f"{name}: cannot decrypt the key file: wrong file key?") from None
    return plain


def load_key_file(path: str | os.PathLike[str], filekey: str | None = None) -> dict[int, bytes]:
    """Keys by id from a ``file_key_management`` key file, plain or encrypted with ``filekey``.

    ``filekey`` is the server's ``file_key_management_filekey``: the secret itself, or ``FILE:path`` naming a file
    that holds it (its first line).  Every problem is an :class:`~binlake.errors.EncryptedError` naming the file,
    never the secret.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read(1 << 20)  # MAX_KEY_FILE_SIZE
    except OSError as e:
        raise EncryptedError(f"cannot read key file: {e.strerror or e}", file=name) from e
    if filekey is not None and filekey.startswith("FILE:"):
        try:
            with open(filekey[5:], "rb") as f:
                filekey = f.read(257).rstrip(b"\r\n").decode("utf-8", "surrogateescape")
        except OSError as e:
            raise EncryptedError(f"cannot read the file key: {e.strerror or e}", file=filekey[5:]) from e
    if data.startswith(_OPENSSL_PREFIX):
        if not filekey:
            raise EncryptedError(
                "the key file is encrypted: give its file key (file_key_management_filekey)", file=name
            )
        data = _decrypt_key_file(data, filekey, name)
    elif filekey:
        raise EncryptedError("a file key was given but the key file is not encrypted", file=name)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise EncryptedError("not a key file (not text): wrong file key?", file=name) from None
    return parse_key_file(text, name)


class _MariaDBDecryptor:
    """A :data:`~binlake.decoder.Decryptor` for MariaDB binlog encryption; see the module docstring."""

    def __init__(self, keys: Mapping[int, bytes], key_id: int) -> None:
        self._ciphers = _cryptography()
        self._keys = dict(keys)
        self._key_id = key_id

    def _key(self, start: StartEncryptionEvent, pos: int) -> bytes:
        if start.crypto_scheme != _AES_SCHEME:
            raise UnsupportedError(f"binlog encryption scheme {start.crypto_scheme} (only 1, AES, exists)", pos=pos)
        key = self._keys.get(self._key_id)
        if key is None:
            raise EncryptedError(
                f"no key of id {self._key_id} (the binlog key, version {start.key_version}) in the key file", pos=pos
            )
        if len(key) not in (16, 24, 32):
            raise EncryptedError(f"the key of id {self._key_id} is {len(key)} bytes, not 16, 24 or 32", pos=pos)
        return key

    def __call__(self, stored: bytes, pos: int, start: StartEncryptionEvent) -> bytes:
        key = self._key(start, pos)
        c = self._ciphers
        iv = start.nonce + (pos & 0xFFFFFFFF).to_bytes(4, "little")  # Binlog_crypt_data::set_iv
        # undo maybe_write_event_len: ciphertext bytes 9-12 were moved to the front, the size written in their place
        cipher_text = stored[4:9] + stored[:4] + stored[13:]
        full = len(cipher_text) - len(cipher_text) % _BLOCK
        dec = c.Cipher(c.algorithms.AES(key), c.modes.CBC(iv)).decryptor()
        plain: bytes = dec.update(cipher_text[:full]) + dec.finalize()
        if full < len(cipher_text):  # MyCTX_nopad::finish: the tail is XORed with AES-ECB(IV)
            ecb = c.Cipher(c.algorithms.AES(key), c.modes.ECB()).encryptor()
            mask: bytes = ecb.update(iv) + ecb.finalize()
            tail = cipher_text[full:]
            plain += (int.from_bytes(tail, "little") ^ int.from_bytes(mask[: len(tail)], "little")).to_bytes(
                len(tail), "little"
            )
        # plain is the event from byte 4 on, with the timestamp where the size belongs
        event = plain[5:9] + plain[:5] + stored[9:13] + plain[9:]
        self._check(event, pos)
        return event

    @staticmethod
    def _check(event: bytes, pos: int) -> None:
        """A decrypted event names its own end (log_pos) or carries a matching CRC32; garbage from a wrong key (or
        damaged ciphertext) does neither, with odds of 2**-32 each."""
        end = int.from_bytes(event[13:17], "little")
        if end == pos + len(event) or (len(event) >= 23 and crc32(event[:-4]) == int.from_bytes(event[-4:], "little")):
            return
        raise EncryptedError(
            "the event does not decrypt to a valid event (its log position and CRC32 do not match): "
            "wrong key? (or damaged encrypted bytes)",
            pos=pos,
        )


def mariadb_decryptor(keys: Mapping[int, bytes], *, key_id: int = SYSTEM_DATA_KEY_ID) -> Decryptor:
    """A decryptor for :class:`~binlake.decoder.Decoder` / :func:`~binlake.reader.read_events` from keys by id
    (see :func:`load_key_file`).  Raises :class:`~binlake.errors.EncryptedError` at once when ``cryptography`` is
    missing; a missing or wrong key is an :class:`~binlake.errors.EncryptedError` at the first encrypted event."""
    return _MariaDBDecryptor(keys, key_id)
