"""TCPStore: a small key-value store over TCP that the ranks of a job meet at (PyTorch's API).

The master rank serves it from a thread; every rank (the master included) is a client. Values
are bytes; `get` and `wait` block until the keys exist or the timeout passes. Messages are JSON
(bytes as base64) naming one of the store's operations, so nothing a peer sends is executed.
"""

import base64
import json
import socket
import struct
import threading
import time
from datetime import timedelta

from .errors import DistStoreError
from .store_api import OPERATIONS, Shared, Store

_HEADER = struct.Struct("!I")


def _encode(obj):
    """`obj` (bytes, str, numbers, None, lists or tuples of them) as JSON-ready data."""
    if isinstance(obj, (bytes, bytearray)):
        return {"bytes": base64.b64encode(bytes(obj)).decode("ascii")}
    if isinstance(obj, (list, tuple)):
        return [_encode(o) for o in obj]
    return obj


def _decode(obj):
    if isinstance(obj, dict):
        return base64.b64decode(obj["bytes"])
    if isinstance(obj, list):
        return [_decode(o) for o in obj]
    return obj


def _send(sock, obj):
    data = json.dumps(_encode(obj)).encode("utf-8")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("TCPStore: connection closed by the other side")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(sock):
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    return _decode(json.loads(_recv_exact(sock, n)))


class _Server:
    """The store's data and the thread that answers clients, one handler thread per client."""

    def __init__(self, host, port):
        self.shared = Shared()
        try:
            self.sock = socket.create_server((host, port))
        except OSError as e:
            raise DistStoreError(f"TCPStore: cannot serve on {host}:{port} ({e})") from None
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            try:
                while True:
                    op, args = _recv(conn)
                    if op not in OPERATIONS:
                        return
                    _send(conn, self.shared.call(op, *args))
            except (ConnectionError, OSError, EOFError, ValueError, TypeError):
                return

    def close(self):
        self.sock.close()


class TCPStore(Store):
    """A key-value store at `host_name:port`, served by the process with `is_master=True`.

    `port=0` on the master picks a free port (read it back from `.port`). Clients retry the
    connection until `timeout`, since the master may start after them.
    """

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=timedelta(seconds=300), wait_for_workers=True):
        super().__init__(timeout)
        self.host, self.world_size = host_name, world_size
        self._server = _Server(host_name, port) if is_master else None
        self.port = self._server.port if is_master else port
        self._lock = threading.Lock()
        self._sock = self._connect()

    def _connect(self):
        deadline = time.monotonic() + self.timeout.total_seconds()
        while True:
            try:
                return socket.create_connection((self.host, self.port), timeout=None)
            except OSError as e:
                if time.monotonic() > deadline:
                    raise DistStoreError(f"TCPStore: could not connect to {self.host}:{self.port} "
                                       f"within {self._seconds:g} s ({e})") from None
                time.sleep(0.05)

    def _call(self, op, *args):
        with self._lock:
            _send(self._sock, (op, args))
            return _recv(self._sock)

    def _where(self):
        return f" at {self.host}:{self.port}"

    def clone(self):
        """Another client of the same store, with a connection of its own."""
        return TCPStore(self.host, self.port, self.world_size, timeout=self.timeout)

    def close(self):
        """Close this client's connection, and the server on the master."""
        self._sock.close()
        if self._server is not None:
            self._server.close()
