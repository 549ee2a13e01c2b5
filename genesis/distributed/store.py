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

_HEADER = struct.Struct("!I")


class DistError(RuntimeError):
    """A distributed operation failed."""


class DistStoreError(DistError):
    """The store did not answer in time (a rank that never joined, a key never set)."""


class DistBackendError(DistError):
    """The communication backend (NCCL, MPI) reported an error; its message is included."""


def _seconds(timeout):
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


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

    OPERATIONS = ("set", "add", "wait", "check", "delete_key", "num_keys")

    def __init__(self, host, port):
        self.data, self.cond = {}, threading.Condition()
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
                    if op not in self.OPERATIONS:
                        return
                    _send(conn, getattr(self, "_" + op)(*args))
            except (ConnectionError, OSError, EOFError, ValueError, TypeError):
                return

    def _set(self, key, value):
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def _add(self, key, amount):
        with self.cond:
            value = int(self.data.get(key, b"0")) + amount
            self.data[key] = str(value).encode()
            self.cond.notify_all()
            return value

    def _wait(self, keys, timeout):
        """The values of `keys` once all exist, or None after `timeout` seconds."""
        with self.cond:
            if not self.cond.wait_for(lambda: all(k in self.data for k in keys), timeout):
                return None
            return [self.data[k] for k in keys]

    def _check(self, keys):
        with self.cond:
            return all(k in self.data for k in keys)

    def _delete_key(self, key):
        with self.cond:
            return self.data.pop(key, None) is not None

    def _num_keys(self):
        with self.cond:
            return len(self.data)

    def close(self):
        self.sock.close()


class TCPStore:
    """A key-value store at `host_name:port`, served by the process with `is_master=True`.

    `port=0` on the master picks a free port (read it back from `.port`). Clients retry the
    connection until `timeout`, since the master may start after them.
    """

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=timedelta(seconds=300), wait_for_workers=True):
        self.host, self.timeout = host_name, _seconds(timeout)
        self._server = _Server(host_name, port) if is_master else None
        self.port = self._server.port if is_master else port
        self._lock = threading.Lock()
        self._sock = self._connect()

    def _connect(self):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return socket.create_connection((self.host, self.port), timeout=None)
            except OSError as e:
                if time.monotonic() > deadline:
                    raise DistStoreError(f"TCPStore: could not connect to {self.host}:{self.port} "
                                       f"within {self.timeout:g} s ({e})") from None
                time.sleep(0.05)

    def _call(self, op, *args):
        with self._lock:
            _send(self._sock, (op, args))
            return _recv(self._sock)

    def set(self, key, value):
        """Store `value` (bytes or str) under `key`."""
        self._call("set", key, value.encode() if isinstance(value, str) else bytes(value))

    def get(self, key):
        """The value of `key`, waiting up to the store's timeout for it to be set."""
        return self.wait([key])[0]

    def add(self, key, amount):
        """Add `amount` to the integer under `key` (0 when absent) and return the new value."""
        return self._call("add", key, int(amount))

    def wait(self, keys, timeout=None):
        """Block until every key in `keys` is set; returns their values."""
        timeout = self.timeout if timeout is None else _seconds(timeout)
        values = self._call("wait", list(keys), timeout)
        if values is None:
            raise DistStoreError(f"TCPStore: timed out after {timeout:g} s waiting for keys "
                               f"{list(keys)} at {self.host}:{self.port}")
        return values

    def check(self, keys):
        """True when every key in `keys` is set (does not wait)."""
        return self._call("check", list(keys))

    def delete_key(self, key):
        return self._call("delete_key", key)

    def num_keys(self):
        return self._call("num_keys")

    def set_timeout(self, timeout):
        self.timeout = _seconds(timeout)

    def close(self):
        """Close this client's connection, and the server on the master."""
        self._sock.close()
        if self._server is not None:
            self._server.close()
