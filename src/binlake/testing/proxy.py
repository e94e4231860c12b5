"""A TCP proxy on 127.0.0.1 that cuts connections on command, for tests of what a dropped connection does.

:class:`CuttingProxy` forwards every connection made to its port to a target (a moto S3 server, a MariaDB server)
byte for byte, and counts the bytes.  A test cuts connections (a reset, as a failed network or a killed peer
leaves them):

* :meth:`~CuttingProxy.cut_after`: the one through which the ``n``-th byte from now goes (either way);
* :meth:`~CuttingProxy.cut_on`: when the client sends bytes matching a pattern (an HTTP request line, say
  ``rb"PUT [^ ]*/_delta_log/"``: a Delta commit), before the request reaches the target or, ``answered=True``,
  after the target took it and before its answer reaches the client (the write happened; the client cannot know);
* :meth:`~CuttingProxy.down`: every open connection now, and every new one at once, until :meth:`~CuttingProxy.up`
  (a store or server that became unreachable).

The proxy runs in a process of its own (``python -m binlake.testing.proxy HOST PORT``: threads, the standard
library only), told what to do over its stdin: a client in the test's process that holds the interpreter's lock
while it waits for the network (deltalake's does) cannot starve it.  It dies with its owner
(``PR_SET_PDEATHSIG``).

Example::

    with S3Server() as s3, CuttingProxy("127.0.0.1", s3.port) as proxy:
        env = {**s3.env(), "AWS_ENDPOINT_URL": proxy.endpoint}
        proxy.cut_on(rb"PUT [^ ]*/_delta_log/\\d+\\.json", times=1)   # the first Delta commit's PUT is cut
        ...                                                                # the client retries, or says why not
        assert proxy.counts()["cuts"] == 1
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import struct
import subprocess
import sys
import threading
from types import TracebackType

__all__ = ["CuttingProxy", "main"]

_CHUNK = 64 << 10
_REQUESTS = 1000
_REQUEST_LINE = re.compile(rb"^[A-Z]+ \S+ HTTP/1\.[01]\r?$", re.MULTILINE)


class _Link:
    """One proxied connection: the client's socket, the target's, and whether it was cut."""

    def __init__(self, client: socket.socket, target: socket.socket) -> None:
        self.client, self.target = client, target
        self.doomed = False  # cut when the target's next bytes come (cut_on(..., answered=True))
        self.cut = False
        self._lock = threading.Lock()

    def reset(self) -> bool:
        """Close both sockets with a reset (SO_LINGER 0: an RST, not a FIN); whether this call did it."""
        with self._lock:
            if self.cut:
                return False
            self.cut = True
        for s in (self.client, self.target):
            with contextlib.suppress(OSError):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(OSError):
                # wakes the other pump's recv, which holds the socket open: the close (an RST) then happens at once
                s.shutdown(socket.SHUT_RD)
            s.close()
        return True

    def close(self) -> None:
        with self._lock:
            if self.cut:
                return
            self.cut = True
        for s in (self.client, self.target):
            with contextlib.suppress(OSError):
                s.close()


class _Forwarder:
    """The proxy's work, in its own process (:func:`main`): listening on 127.0.0.1 (a free port) in front of
    ``host:port``, with the faults :class:`CuttingProxy`'s methods of the same names describe.  ``connections``,
    ``cuts``, ``bytes_up`` (client to target) and ``bytes_down`` count what went through it, ``requests`` keeps
    the HTTP request lines clients sent (the last :data:`_REQUESTS`)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self.connections = self.cuts = self.bytes_up = self.bytes_down = 0
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self.requests: list[str] = []
        self._budget: int | None = None
        self._pattern: re.Pattern[bytes] | None = None
        self._times = 0
        self._answered = self._then_down = False
        self._down = False
        self._server: socket.socket | None = None
        self._accepter: threading.Thread | None = None

    # -- faults ------------------------------------------------------------------------------------------------

    def cut_after(self, n: int | None) -> None:
        with self._lock:
            self._budget = n

    def cut_on(self, pattern: bytes | None, *, times: int = 1, answered: bool = False, then_down: bool = False) -> None:
        with self._lock:
            self._pattern = None if pattern is None else re.compile(pattern, re.MULTILINE)
            self._times, self._answered, self._then_down = times, answered, then_down

    def down(self) -> None:
        with self._lock:
            self._down = True
            links = list(self._links)
        for link in links:
            self._reset(link)

    def up(self) -> None:
        with self._lock:
            self._down, self._budget, self._pattern, self._times = False, None, None, 0

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        self._server, self.port = server, server.getsockname()[1]
        self._accepter = threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True)
        self._accepter.start()

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"connections": self.connections, "cuts": self.cuts, "bytes_up": self.bytes_up,
                    "bytes_down": self.bytes_down}  # fmt: skip

    def close(self) -> None:
        """Stop listening and close every connection."""
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()
        if self._accepter is not None:
            self._accepter.join(5)
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            link.close()

    # -- forwarding --------------------------------------------------------------------------------------------

    def _accept(self) -> None:
        while self._server is not None:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            with self._lock:
                down = self._down
                self.connections += 1
            if down:
                _Link(client, client).reset()
                with self._lock:
                    self.cuts += 1
                continue
            try:
                target = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            target.settimeout(None)
            link = _Link(client, target)
            with self._lock:
                self._links.append(link)
            for src, dst, up in ((client, target, True), (target, client, False)):
                threading.Thread(target=self._pump, args=(link, src, dst, up), daemon=True).start()

    def _reset(self, link: _Link) -> None:
        if link.reset():
            with self._lock:
                self.cuts += 1
                if link in self._links:
                    self._links.remove(link)

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket, up: bool) -> None:
        """Copy ``src`` to ``dst`` until either side closes, applying the faults asked for."""
        while not link.cut:
            try:
                data = src.recv(_CHUNK)
            except OSError:
                break
            if not data:
                break
            if not up and link.doomed:
                self._reset(link)
                return
            send, cut = self._decide(link, data, up)
            if send:
                try:
                    dst.sendall(send)
                except OSError:
                    break
            if cut:
                self._reset(link)
                return
        # one side closed: pass the close on, as a peer's FIN (the other pump ends when its side closes)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def _decide(self, link: _Link, data: bytes, up: bool) -> tuple[bytes, bool]:
        """What of ``data`` to forward, and whether to cut the connection after it."""
        with self._lock:
            if self._down:
                return b"", True
            if up:
                self.requests.extend(m.decode("latin-1").rstrip() for m in _REQUEST_LINE.findall(data))
                del self.requests[:-_REQUESTS]
            if up and self._pattern is not None and self._times > 0 and self._pattern.search(data):
                self._times -= 1
                self._down = self._then_down  # (the next connections are cut as they come)
                if self._answered:
                    link.doomed = True
                else:
                    return b"", True
            if self._budget is not None:
                if len(data) >= self._budget:
                    data, self._budget = data[: self._budget], None
                    self._count(len(data), up)
                    return data, True
                self._budget -= len(data)
            self._count(len(data), up)
            return data, False

    def _count(self, n: int, up: bool) -> None:
        if up:
            self.bytes_up += n
        else:
            self.bytes_down += n


class CuttingProxy:
    """A proxy listening on 127.0.0.1 (:attr:`port`, :attr:`endpoint`) in front of ``host:port``, in a process of
    its own (see the module docstring); each method returns once the proxy does what it says."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``: where an HTTP client (an S3 endpoint URL) goes through the proxy."""
        return f"http://127.0.0.1:{self.port}"

    def cut_after(self, n: int | None) -> None:
        """Cut the connection through which the ``n``-th byte from now goes (counting both ways, all
        connections), after forwarding that byte; then forward new connections again.  ``None``: never."""
        self._tell({"op": "cut_after", "n": n})

    def cut_on(self, pattern: bytes | None, *, times: int = 1, answered: bool = False, then_down: bool = False) -> None:
        """Cut the connection whose client sends bytes matching the regular expression ``pattern`` (searched in
        each chunk read), the next ``times`` times it happens: before the bytes reach the target, or with
        ``answered`` after they did, when the target's answer comes (which the client then never gets);
        ``then_down``: and from then on, every connection (:meth:`down`), until :meth:`up`."""
        text = None if pattern is None else pattern.decode("latin-1")
        self._tell({"op": "cut_on", "pattern": text, "times": times, "answered": answered, "then_down": then_down})

    def down(self) -> None:
        """Cut every open connection, and each new one as it comes, until :meth:`up`."""
        self._tell({"op": "down"})

    def up(self) -> None:
        """Forward connections again (:meth:`down`, :meth:`cut_after` and :meth:`cut_on` all off)."""
        self._tell({"op": "up"})

    def counts(self) -> dict[str, int]:
        """``connections``, ``cuts``, ``bytes_up`` (client to target) and ``bytes_down`` so far."""
        return self._tell({"op": "counts"})

    def requests(self) -> list[str]:
        """The HTTP request lines clients sent through the proxy (the last 1000): where a cut fell."""
        answer: list[str] = self._tell({"op": "requests"})["requests"]  # type: ignore[assignment]
        return answer

    def _tell(self, command: dict[str, object]) -> dict[str, int]:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise RuntimeError("the proxy is not running")
        proc.stdin.write(json.dumps(command) + "\n")
        proc.stdin.flush()
        answer: dict[str, int] = json.loads(proc.stdout.readline())
        return answer

    def __enter__(self) -> CuttingProxy:
        from binlake.testing.mariadb import die_with_parent

        self._proc = subprocess.Popen(
            [sys.executable, "-m", "binlake.testing.proxy", *map(str, self.target)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self.close()
            raise RuntimeError("the proxy did not start")
        self.port = int(line)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the proxy (its connections end with it)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()  # (its end of input ends it)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main(argv: list[str] | None = None) -> int:
    """``python -m binlake.testing.proxy HOST PORT``: forward 127.0.0.1:<a free port> to HOST:PORT, print that
    port, then take one JSON command per line on stdin (:class:`CuttingProxy`'s methods), answering each with the
    counts as one JSON line; stop at the end of stdin."""
    host, port = (sys.argv[1:] if argv is None else argv)[:2]
    forwarder = _Forwarder(host, int(port))
    forwarder.start()
    print(forwarder.port, flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "cut_after":
            forwarder.cut_after(command["n"])
        elif op == "cut_on":
            pattern = command["pattern"]
            encoded = None if pattern is None else pattern.encode("latin-1")
            forwarder.cut_on(
                encoded, times=command["times"], answered=command["answered"], then_down=command["then_down"]
            )
        elif op == "down":
            forwarder.down()
        elif op == "up":
            forwarder.up()
        answer = {"requests": list(forwarder.requests)} if op == "requests" else forwarder.counts()
        print(json.dumps(answer), flush=True)
    forwarder.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
