"""CUDA graphs with PyTorch's API: `CUDAGraph`, `graph`, `graph_pool_handle`,
`make_graphed_callables`.

A graph records the kernels a region of code launches and replays all of them with one launch,
on the same memory: the host cost of a whole training or decoding step becomes a few
microseconds. The usual recipe (as PyTorch documents it):

    s = genesis.cuda.Stream()                   # warm up on a side stream: compile, tune, and
    s.wait_stream(genesis.cuda.current_stream())  # create the optimizer's state
    with genesis.cuda.stream(s):
        for _ in range(3):
            step()
    genesis.cuda.current_stream().wait_stream(s)

    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):                 # capture: nothing runs, kernels are recorded
        static_loss = step()
    for batch in data:
        static_input.copy_(batch)               # new data into the captured input's memory
        g.replay()                              # static_loss now holds this batch's loss

Captured code reads and writes fixed addresses: inputs are refilled in place, outputs are
overwritten by each replay. It must not read anything back to the host: `.item()`, printing,
synchronizing, host copies, compiling a new kernel and autotuning raise a clear error during
capture (backends/cuda/runtime/graphs.py). Random draws read their seed and offset from device
memory, so each replay draws new numbers, the ones eager execution would have drawn.
"""

import gc

import numpy as np

from ..backends.cuda.runtime import device as _devices
from ..backends.cuda.runtime import graphs as _graphs
from ..backends.cuda.runtime import stream as _streams
from ..backends.cuda.runtime.array import CUDAArray
from ..random import cuda_generator


def graph_pool_handle():
    """A new memory-pool id for `graph(..., pool=handle)`: graphs captured with one handle
    share their private memory (replay them in the order they were captured)."""
    return _graphs.new_pool_id()


def is_current_stream_capturing():
    """True while the current CUDA stream is being captured into a graph."""
    if not _devices._contexts:
        return False
    return _graphs.active_capture(_streams.current_stream().cuda_stream) is not None


class CUDAGraph:
    """A CUDA graph: `capture_begin()` / `capture_end()` around the code to record (or the
    `graph` context manager), then `replay()` as often as needed; `reset()` frees it."""

    def __init__(self, keep_graph=False):
        self._graph = _graphs.Graph()
        self._pool = None
        self._device = None
        self._generators = []  # [generator, device state array, counters per replay]
        self._extra_generators = []

    def register_generator_state(self, generator):
        """Capture `generator`'s draws too (the device's default generator always is)."""
        self._extra_generators.append(generator)

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Start recording the work of the current stream (which must not be the legacy default
        stream); its allocations come from the private pool `pool` (a new one by default)."""
        stream = _streams.current_stream()
        self._device = stream.device_index
        self._pool = _graphs.new_pool_id() if pool is None else tuple(pool)
        allocator = _devices.get_context(self._device).allocator
        self._begin_generators()
        try:
            self._graph.begin(stream.cuda_stream, self._device, allocator, self._pool,
                              capture_error_mode)
        except BaseException:
            self._end_generators()
            self._generators = []
            raise

    def _begin_generators(self):
        generators = [cuda_generator(self._device)] + [
            g for g in self._extra_generators if g is not cuda_generator(self._device)]
        self._generators = []
        for generator in generators:
            state = CUDAArray.empty((2,), np.int64, self._device)
            generator.graph_capture_begin(state)
            self._generators.append([generator, state, 0])

    def _end_generators(self):
        for entry in self._generators:
            entry[2] = entry[0].graph_capture_end()

    def capture_end(self, failed=False):
        """Stop recording and instantiate the graph (`failed`: discard what was recorded)."""
        self._end_generators()
        self._graph.end(failed=failed)
        if failed:
            self._generators = []

    def replay(self):
        """Run the recorded work again on the current stream."""
        stream = _streams.current_stream(self._device).cuda_stream
        for generator, state, used in self._generators:
            if used:
                seed, offset = generator.philox_reserve(used)
                values = np.array([seed, offset], dtype=np.uint64).view(np.int64)
                _graphs.upload(state.ptr, values, stream)
        self._graph.launch(stream)

    def instantiate(self):
        """Graphs are instantiated by capture_end; kept for PyTorch's API."""

    def reset(self):
        """Free the graph and release its memory pool (returned to the driver by
        genesis.cuda.empty_cache once no graph or output uses it)."""
        self._graph.destroy()
        self._generators = []

    def pool(self):
        """The id of this graph's memory pool, to share it: graph(g2, pool=g1.pool())."""
        return self._pool

    def enable_debug_mode(self):
        """Kept for PyTorch's API: the graph is always kept, so debug_dump works."""

    def debug_dump(self, debug_path):
        """Write the graph as a Graphviz DOT file."""
        self._graph.debug_dump(debug_path)

    def raw_cuda_graph(self):
        return self._graph.graph

    def raw_cuda_graph_exec(self):
        return self._graph.exec

    def __del__(self):
        try:
            self.reset()
        except Exception:  # interpreter shutdown
            pass


class graph:
    """`with genesis.cuda.graph(g):` captures the block into CUDAGraph `g`.

    Args:
        cuda_graph (CUDAGraph): the graph to capture into.
        pool (optional): a memory-pool id (graph_pool_handle() or another graph's pool()) to
            share that pool.
        stream (Stream, optional): the stream to capture on; by default a side stream kept for
            capturing.
        capture_error_mode (str): "global" (default), "thread_local" or "relaxed": which other
            CUDA calls in the process (global) or this thread (thread_local) are errors while
            capturing, as CUDA defines them.

    Before capturing it synchronizes the device, collects garbage and empties the allocator's
    cache, as PyTorch does; an exception inside the block discards the capture and leaves the
    stream usable.
    """

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if stream is None:
            if graph.default_capture_stream is None:
                graph.default_capture_stream = _streams.Stream()
            stream = graph.default_capture_stream
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self._stream_context = _streams.stream_context(stream)

    def __enter__(self):
        _streams.synchronize(self.capture_stream.device_index)
        gc.collect()
        _devices.get_context(self.capture_stream.device_index).allocator.empty_cache()
        self._stream_context.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, self.capture_error_mode)
        except BaseException:
            self._stream_context.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            self.cuda_graph.capture_end(failed=exc_type is not None)
        finally:
            self._stream_context.__exit__(exc_type, exc, tb)
        return False
