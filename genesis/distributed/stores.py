"""The stores besides TCPStore (PyTorch's HashStore, FileStore and PrefixStore), with the same
methods (genesis.distributed.store_api.Store)."""

import fcntl
import json
import time

from .store import _decode, _encode
from .store_api import BLOCKING, Shared, Store, Table


class HashStore(Store):
    """A store in this process's memory, for threads of one process (and tests)."""

    def __init__(self):
        super().__init__()
        self._shared = Shared()

    def _call(self, op, *args):
        return self._shared.call(op, *args)

    def clone(self):
        """Another handle on the same contents."""
        twin = HashStore()
        twin._shared = self._shared
        return twin


class FileStore(Store):
    """A store kept in the file `file_name`, shared by the processes of one machine (or of a
    shared file system): each operation locks the file, reads it, and writes it back."""

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        self.path, self.world_size = file_name, world_size
        with open(file_name, "a"):
            pass

    def _call(self, op, *args):
        if op not in BLOCKING:
            return self._locked(op, *args)
        *args, timeout = args
        deadline = time.monotonic() + timeout
        while (result := self._locked(BLOCKING[op], *args)) is None and \
                time.monotonic() < deadline:
            time.sleep(0.005)
        return result

    def _locked(self, op, *args):
        """`op` run on the file's table under an exclusive lock, written back if changed."""
        with open(self.path, "r+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            text = f.read()
            values, queues = _decode(json.loads(text)) if text else ([], [])
            table = Table(dict(values), dict(queues))
            result = table.run(op, *args)
            after = json.dumps(_encode([list(table.values.items()),
                                        list(table.queues.items())]))
            if after != text:
                f.seek(0)
                f.truncate()
                f.write(after)
        return result

    def _where(self):
        return f" in {self.path}"

    def clone(self):
        return FileStore(self.path, self.world_size)


class PrefixStore(Store):
    """`store` with every key put under `prefix` + "/" (many users of one store)."""

    def __init__(self, prefix, store):
        super().__init__(store.timeout)
        self.prefix, self.underlying_store = prefix, store

    def _key(self, key):
        return f"{self.prefix}/{key}"

    def _call(self, op, *args):
        if op == "num_keys":
            return self.underlying_store._call(op)
        if op == "list_keys":
            mine = self._key("")
            return [k[len(mine):] for k in self.underlying_store._call(op) if k.startswith(mine)]
        first = args[0]
        first = [self._key(k) for k in first] if isinstance(first, list) else self._key(first)
        return self.underlying_store._call(op, first, *args[1:])

    def clone(self):
        return PrefixStore(self.prefix, self.underlying_store.clone())

