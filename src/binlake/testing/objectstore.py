"""A private S3-compatible server for tests and benchmarks: moto in server mode (``pip install 'moto[server]'``), a real
process speaking S3's HTTP API on 127.0.0.1 (not an in-process mock of a client), so binlake's S3 traffic goes
through pyarrow's and delta-rs' own S3 clients exactly as it would to AWS.

Its credentials are made up per server (a random secret, so a test can look for it where it must never be) and are
handed out only as environment variables (:meth:`S3Server.env`), the way binlake expects credentials.  The server
dies with its owner (``PR_SET_PDEATHSIG``), like :class:`binlake.testing.mariadb.MariaDBServer`.

Example::

    with S3Server() as s3:
        bucket = s3.bucket()                         # a new, empty bucket
        env = {**os.environ, **s3.env()}
        subprocess.run(["binlake", "ingest", f"s3://{bucket}/binlogs/", "--lake", f"s3://{bucket}/lake"], env=env)
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from binlake.testing.mariadb import die_with_parent, free_port

__all__ = ["INSTALL_HINT", "S3Server", "available"]

INSTALL_HINT = "pip install 'moto[server]' (the S3 tests start a local S3 server)"
REGION = "us-east-1"
#: The requests an ``iam=True`` server takes unchecked, in order (:meth:`S3Server._set_up_iam`): a user, its access
#: key and its policy, for the administrator and the reader.
_IAM_SETUP = ("CreateUser", "CreateAccessKey", "PutUserPolicy") * 2


def _command() -> list[str] | None:
    """moto's server of the Python running this (the one ``pip install '.[test]'`` gave the version pyproject.toml
    asks for), else a ``moto_server`` on PATH."""
    try:
        import moto.server  # noqa: F401
    except ImportError:
        exe = shutil.which("moto_server")
        return None if exe is None else [exe]
    return [sys.executable, "-m", "moto.server"]


def available() -> bool:
    """Whether moto's server can be started here."""
    return _command() is not None


class S3Server:
    """One ``moto_server -H 127.0.0.1 -p PORT`` process with made-up credentials (see the module docstring).

    ``iam=True``: the server checks every request against the IAM policies of the credentials that signed it
    (moto's ``INITIAL_NO_AUTH_ACTION_COUNT``: only the setup's first requests go unchecked), so that a test can
    hold credentials that may read but not write (:meth:`read_only_env`); :meth:`env` then gives an administrator's.
    """

    def __init__(self, *, start_timeout: float = 60.0, iam: bool = False) -> None:
        self.port = 0
        self.access_key = "binlake-test-" + secrets.token_hex(4)
        self.secret_key = "binlake-secret-" + secrets.token_hex(16)
        self.start_timeout = start_timeout
        self.iam = iam
        self._read_only: tuple[str, str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment a client of this server needs (and only it: no instance metadata lookups)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def __enter__(self) -> S3Server:
        command = _command()
        if command is None:
            raise RuntimeError(f"moto is not installed: {INSTALL_HINT}")
        fd, log = tempfile.mkstemp(prefix="binlake-moto-", suffix=".log")
        self._log = Path(log)
        for _ in range(3):  # the free port may be taken before the server binds it
            self.port = free_port()
            self._proc = subprocess.Popen(
                [*command, "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=fd,
                stderr=fd,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(len(_IAM_SETUP))} if self.iam else None,
                preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
            )
            if self._wait_ready():
                os.close(fd)
                if self.iam:
                    self._set_up_iam()
                return self
            self._stop()
        os.close(fd)
        raise RuntimeError(f"moto_server did not start: see {self._log}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2):
                    return True
            except urllib.error.HTTPError:
                return True  # it answers
            except OSError:
                time.sleep(0.1)
        return False

    def _set_up_iam(self) -> None:
        """An administrator (whose keys :meth:`env` gives) and a reader, each with an access key: the unchecked
        requests of :data:`_IAM_SETUP`, in its order."""
        import json

        import boto3  # type: ignore[import-untyped,unused-ignore]  # (moto's own dependency)

        iam = boto3.client(
            "iam",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
        )
        keys = {}
        for user, actions in (("admin", ["*"]), ("reader", ["s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation"])):
            iam.create_user(UserName=user)
            key = iam.create_access_key(UserName=user)["AccessKey"]
            policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}
            iam.put_user_policy(UserName=user, PolicyName=user, PolicyDocument=json.dumps(policy))
            keys[user] = (key["AccessKeyId"], key["SecretAccessKey"])
        self.access_key, self.secret_key = keys["admin"]
        self._read_only = keys["reader"]

    def read_only_env(self) -> dict[str, str]:
        """With ``iam=True``: :meth:`env` with the credentials of a user who may list and read objects, not write."""
        if self._read_only is None:
            raise RuntimeError("read-only credentials need S3Server(iam=True)")
        key, secret = self._read_only
        return {**self.env(), "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret}

    def bucket(self, prefix: str = "binlake") -> str:
        """Create a new empty bucket; its name."""
        import pyarrow.fs as pafs

        name = f"{prefix}-{secrets.token_hex(6)}"
        fs = pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            region=REGION,
            endpoint_override=self.endpoint,
            scheme="http",
            allow_bucket_creation=True,
        )
        fs.create_dir(name)
        return name

    def _stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop()
        if self._log is not None:
            self._log.unlink(missing_ok=True)
