"""The gloo backend's transport: one TCP connection between every two ranks, met through the store.

Each rank listens on the interface it reaches the store through and publishes that address in
the store, as Gloo does; a rank connects to every lower rank and accepts the higher ones. A
reader thread per connection drains it into the Mailbox, so a send never waits for the peer to
post its receive. Messages are (key, bytes) frames; a receive names a key and a source (or any
source) and matches messages in arrival order, as MPI matches its receives.
"""

import socket
import struct
import threading
import time
from collections import defaultdict, deque

import numpy as np

_FRAME = struct.Struct("!IQ")  # key length, payload length
_HELLO = struct.Struct("!I")  # the connecting rank


class PeerClosed(ConnectionError):
    """The connection to the rank a receive waits on has ended."""


class _Slot:
    """A posted receive: the source and payload of the message that matched it, once one has."""

    def __init__(self, key, src):
        self.key, self.src, self.payload = key, src, None


class Mailbox:
    """Messages that arrived before their receive was posted, and receives still waiting."""

    def __init__(self):
        self.cond = threading.Condition()
        self.posted = defaultdict(deque)  # key -> slots in posting order
        self.unexpected = defaultdict(deque)  # key -> (src, payload) in arrival order
        self.closed = set()

    def post(self, key, src):
        """A receive of the next message under `key` from `src` (None: any source)."""
        slot = _Slot(key, src)
        with self.cond:
            waiting = self.unexpected[key]
            for i, (sender, payload) in enumerate(waiting):
                if src in (None, sender):
                    del waiting[i]
                    slot.src, slot.payload = sender, payload
                    return slot
            self.posted[key].append(slot)
        return slot

    def deliver(self, src, key, payload):
        with self.cond:
            slots = self.posted[key]
            for i, slot in enumerate(slots):
                if slot.src in (None, src):
                    del slots[i]
                    slot.src, slot.payload = src, payload
                    self.cond.notify_all()
                    return
            self.unexpected[key].append((src, payload))

    def close_peer(self, src):
        with self.cond:
            self.closed.add(src)
            self.cond.notify_all()

    def wait(self, slot, timeout):
        """The slot's payload; TimeoutError after `timeout` seconds, PeerClosed if its source
        hung up first."""
        with self.cond:
            if not self.cond.wait_for(lambda: slot.payload is not None or
                                      slot.src in self.closed, timeout):
                raise TimeoutError(f"timed out after {timeout:g} s")
            if slot.payload is None:
                raise PeerClosed(f"the connection to rank {slot.src} closed")
            return slot.payload

    def ready(self, slot):
        with self.cond:
            return slot.payload is not None


class Mesh:
    """A connection to every other rank of the world and the Mailbox their messages land in."""

    def __init__(self, store, rank, world_size, timeout):
        self.rank, self.mailbox = rank, Mailbox()
        self.socks, self.locks = {}, defaultdict(threading.Lock)
        host, family = _local_address(store)
        with socket.create_server((host, 0), family=family, backlog=world_size) as listener:
            store.set(f"gloo/addr/{rank}", f"{host} {listener.getsockname()[1]}")
            for peer in range(rank):
                self.socks[peer] = _connect(store, peer, rank, timeout)
            listener.settimeout(timeout)
            for _ in range(rank + 1, world_size):
                sock, _ = listener.accept()
                sock.settimeout(None)
                (peer,) = _HELLO.unpack(_recv_exact(sock, _HELLO.size))
                self.socks[peer] = sock
        self.readers = []
        for peer, sock in self.socks.items():
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.readers.append(threading.Thread(target=self._read, args=(peer, sock),
                                                 daemon=True))
            self.readers[-1].start()

    def send(self, peer, key, data):
        """Send `data` (bytes or a numpy array) under `key`; returns once it is on its way."""
        view = _bytes_of(data)
        if peer == self.rank:
            self.mailbox.deliver(peer, key, bytearray(view))
            return
        name = key.encode()
        with self.locks[peer]:
            self.socks[peer].sendall(_FRAME.pack(len(name), view.nbytes) + name)
            self.socks[peer].sendall(view)

    def _read(self, peer, sock):
        """Hand every frame from `peer` to the mailbox until the connection ends."""
        try:
            while True:
                n_key, n_payload = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
                key = _recv_exact(sock, n_key).decode()
                self.mailbox.deliver(peer, key, _recv_exact(sock, n_payload))
        except OSError:
            self.mailbox.close_peer(peer)

    def close(self, linger=5.0):
        """Say we are done sending, wait (at most `linger` s) for the peers to say the same, so
        that nothing in flight is lost to a reset, then close."""
        for sock in self.socks.values():
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the peer hung up first
        deadline = time.monotonic() + linger
        for reader in self.readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        for sock in self.socks.values():
            sock.close()


def _local_address(store):
    """The address (and family) this host reaches the store's server from: the interface the
    other ranks can reach it on."""
    sock = store._sock
    return sock.getsockname()[0], sock.family


def _connect(store, peer, rank, timeout):
    """A connection to `peer`'s published address, introduced with this rank's number."""
    host, port = store.get(f"gloo/addr/{peer}").decode().split()
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection((host, int(port)), timeout=timeout)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    sock.settimeout(None)
    sock.sendall(_HELLO.pack(rank))
    return sock


def _bytes_of(data):
    if isinstance(data, np.ndarray):
        return memoryview(np.ascontiguousarray(data).reshape(-1).view(np.uint8))
    return memoryview(data)


def _recv_exact(sock, n):
    """Exactly `n` bytes from `sock`, as a bytearray; ConnectionError if it closes first."""
    buf, got = bytearray(n), 0
    view = memoryview(buf)
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise ConnectionError("connection closed by the peer")
        got += k
    return buf
