"""Hooks on the tensors a graph saves for backward (`torch.autograd.graph`'s names).

Inside `saved_tensors_hooks(pack, unpack)`, each tensor an op saves for its backward is stored
as `pack(tensor)`, whatever that returns, and backward reads it back as `unpack(packed)`. That
is how saved activations move to the host (`save_on_cpu`) or are dropped and recomputed
(`genesis.utils.checkpoint`). Hooks are per thread and nest; the innermost one applies.
"""

import threading

_local = threading.local()
_in_use = 0  # contexts open in any thread: the save path checks this plain int first


def current_hooks():
    """The innermost (pack, unpack) pair of this thread, or None."""
    if not _in_use:
        return None
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


class saved_tensors_hooks:
    """Store what ops save for backward as `pack_hook(tensor)`; backward reads
    `unpack_hook(packed)`. A context manager; `disable_saved_tensors_hooks` inside it raises."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        global _in_use
        message = getattr(_local, "disabled", None)
        if message is not None:
            raise RuntimeError(message)
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append((self.pack_hook, self.unpack_hook))
        _in_use += 1
        return self

    def __exit__(self, *exc):
        global _in_use
        _local.stack.pop()
        _in_use -= 1
        return False


class disable_saved_tensors_hooks:
    """Within it, entering saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self._previous = getattr(_local, "disabled", None)
        _local.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _local.disabled = self._previous
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors saved for backward on the host (pinned when `pin_memory`), and move each
    back to its device when backward reads it: GPU memory for activations, paid in copies."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            if tensor.device.type == "cpu":
                return tensor.device, tensor
            host = tensor.detach().to("cpu")
            return tensor.device, host.pin_memory() if pin_memory else host

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)
