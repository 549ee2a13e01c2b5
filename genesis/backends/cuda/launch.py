"""The launch path: compile a Triton kernel once per specialization, bind it, call it directly.

`kernel[grid](...)` costs about 17 us of host time per call (argument specialization, cache
lookups, launch-metadata hooks). Here a specialization is compiled with `triton.compile` on first
use (cached on disk by Triton, under GENESIS_KERNEL_CACHE_DIR when set), its module loaded once,
and later calls go straight to Triton's C launcher with plain ints: a dict lookup and one call.

A kernel's launcher writes its call once, positionally, as the Triton tutorials do:
`Launch(fn, grid, meta, ...)(stream, x, out, n_rows, ...)`. The first call derives the
specialization from the arguments it is given (see `Launch`); later calls only launch.
"""

import os
import threading

import numpy as np

from .runtime import graphs
from .runtime.array import CUDAArray
from .runtime.device import get_context

_cache = {}
_lock = threading.Lock()

_TRITON_TYPES = {
    "float32": "fp32", "float64": "fp64", "float16": "fp16", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1",
}


def pointer_type(np_dtype):
    """Triton's pointer type for a numpy dtype, e.g. float32 -> "*fp32"."""
    return "*" + _TRITON_TYPES[np_dtype.name]


def target(device=None):
    from triton.backends.compiler import GPUTarget
    major, minor = get_context(device).properties.capability
    return GPUTarget("cuda", major * 10 + minor, 32)


PROGRAMMATIC_LAUNCH = os.environ.get("GENESIS_PDL", "1") != "0"
"""Whether kernels written for it are launched as programmatic dependents (Hopper's PDL; see
`Launch`). GENESIS_PDL=0 turns it off, to compare or to rule it out."""


def compile_kernel(fn, signature, constexprs=None, aligned=(), num_warps=4, num_stages=3,
                   target_=None, pdl=False):
    """Compile `fn` for one specialization (no GPU needed when `target_` is given).

    `signature` maps argument names to Triton types ("*fp32", "i64", "constexpr"); `aligned`
    names the arguments known to be multiples of 16 (pointers in bytes, integers in value), which
    lets Triton emit 16-byte vector loads. `pdl`: launch it as a programmatic dependent.
    """
    import triton
    from triton.compiler import ASTSource
    names = list(signature)
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs or {}, attrs=attrs)
    return triton.compile(src, target=target_ or target(),
                          options={"num_warps": num_warps, "num_stages": num_stages,
                                   "launch_pdl": pdl})


def constant_suffix(signature):
    """How many parameters come before the trailing run of constexprs in `signature`: the ones
    a caller of the bound kernel passes."""
    kinds = list(signature.values())
    n = len(kinds)
    while n and kinds[n - 1] == "constexpr":
        n -= 1
    return n


class BoundKernel:
    """A compiled specialization with its launcher resolved: `bound(grid, stream, *args)`.

    `args` are the kernel's parameters in order up to the trailing run of compile-time ones
    (the first `n_args`); a parameter compiled as a constant before that is passed as any value
    (Triton's launcher ignores it). The launcher takes every parameter, so the trailing
    constants are appended from `_tail`.

    Kernels skip `compiled.run`, a Python frame that allocates scratch, and call the C launch
    function under it directly with its leading arguments (`_head`: function, cooperative-grid
    and PDL flags, no scratch, packed metadata, no launch metadata or hooks), as triton 3.6's
    nvidia launcher takes them: about a microsecond less per launch. Kernels that need global
    scratch (device-side TMA descriptors) are bound as ScratchKernel, which hands them the
    stream's workspace.
    """

    __slots__ = ("name", "compiled", "n_args", "_run", "_head", "_tail")

    def __init__(self, compiled, signature, constexprs):
        compiled._init_handles()
        self.name = compiled.name
        self.compiled = compiled
        launcher = compiled.run
        direct = getattr(launcher, "launch", None)
        if direct is not None and not launcher.profile_scratch_size:
            self._run = direct
            self._head = (compiled.function, launcher.launch_cooperative_grid,
                          launcher.launch_pdl, None, None, compiled.packed_metadata, None, None,
                          None)
        else:
            self._run = launcher
            self._head = (compiled.function, compiled.packed_metadata, None, None, None)
        self.n_args = constant_suffix(signature)
        self._tail = tuple(constexprs.get(name) for name in list(signature)[self.n_args:])

    def __call__(self, grid, stream, *args):
        if len(grid) == 1:
            self._run(grid[0], 1, 1, stream, *self._head, *args, *self._tail)
        else:
            gx, gy, gz = (tuple(grid) + (1, 1))[:3]
            self._run(gx, gy, gz, stream, *self._head, *args, *self._tail)


class ScratchKernel(BoundKernel):
    """A bound kernel that needs Triton's global scratch (`scratch` bytes per program, at
    `align`-byte addresses): each launch passes it a piece of the stream's workspace
    (stream_workspace: graph-owned during a capture), as Triton's launcher would pass memory from
    its allocator. Launched through BoundKernel.__call__ (which profiling swaps), its `_run`
    puts the scratch address in."""

    __slots__ = ("device", "scratch", "align", "_direct")

    def __init__(self, compiled, signature, constexprs, device):
        super().__init__(compiled, signature, constexprs)
        if self._run is compiled.run:
            raise RuntimeError(f"{self.name}: no direct launcher to pass global scratch to")
        launcher = compiled.run
        self.device = device
        self.scratch = launcher.global_scratch_size * launcher.num_ctas
        self.align = max(launcher.global_scratch_align, 1)
        self._direct, self._run = self._run, self._with_scratch

    def _with_scratch(self, gx, gy, gz, stream, function, cooperative, pdl, _, *rest):
        base = stream_workspace(self.device, stream, gx * gy * gz * self.scratch + self.align).ptr
        self._direct(gx, gy, gz, stream, function, cooperative, pdl,
                     -(-base // self.align) * self.align, *rest)


def bind(compiled, signature, constexprs, device):
    """The BoundKernel of `compiled` (a ScratchKernel where it needs global scratch)."""
    if getattr(compiled.run, "global_scratch_size", 0):
        return ScratchKernel(compiled, signature, constexprs, device)
    return BoundKernel(compiled, signature, constexprs)


def get_kernel(fn, signature, constexprs=None, aligned=(), num_warps=4, num_stages=3, device=0,
               pdl=False):
    """The bound kernel for this specialization on `device`, compiled on first use.

    The caller has made `device` active (runtime.device.activate); the module is loaded there.
    """
    key = (fn, tuple(signature.items()), tuple(sorted((constexprs or {}).items())),
           tuple(aligned), num_warps, num_stages, device, pdl)
    bound = _cache.get(key)
    if bound is None:
        with _lock:
            bound = _cache.get(key)
            if bound is None:
                graphs.check_not_capturing(
                    f"compiling the Triton kernel {fn.__name__} for a new specialization (run "
                    "the captured code once before capturing, to compile its kernels)")
                from .triton_driver import install
                install()
                compiled = compile_kernel(fn, signature, constexprs, aligned, num_warps, num_stages,
                                          target(device), pdl)
                bound = _cache[key] = bind(compiled, signature, constexprs or {}, device)
    return bound


def is_aligned(*values):
    """True when every pointer/size is a multiple of 16 (the divisibility Triton specializes on)."""
    return all(v % 16 == 0 for v in values)


class Const:
    """A launch argument compiled into the kernel as a constant (an unused dim's size or
    stride, a stride of 1 that tells Triton an access is contiguous). Its launches pass it on
    unchanged; Triton's launcher ignores it."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Const({self.value!r})"


_POINTER_TYPES = {}


def pointer_of(dtype):
    """Triton's pointer type for a numpy dtype (cached: dtype.name is slow)."""
    ty = _POINTER_TYPES.get(dtype)
    if ty is None:
        ty = _POINTER_TYPES[dtype] = pointer_type(dtype)
    return ty


class Launch:
    """One launch of Triton kernel `fn` over `grid`, specialized on its first call.

    `launch(stream, *args)` takes the kernel's parameters in order up to its meta-parameters
    (the ones annotated tl.constexpr, given once in `meta`); those of them compiled as
    constants at the end are left out of the launch (see BoundKernel). The first call derives the
    specialization from them: an array is a pointer of its dtype (the launch passes its
    address), None and a `Const` are compiled in, an int is `int_type` and a float `fp32`
    unless `types` names another type for its parameter. Arrays at 16-byte addresses and ints
    that are multiples of 16 are marked divisible by 16 (Triton then emits 16-byte accesses),
    except the parameters in `per_call`: those whose values change from call to call in ways
    the caller's cache key does not fix (a stored scalar, an array of unknown alignment).
    With a `target`, the first call only compiles, for that target (the compile checks).

    Kernels that begin with `kernels._math.wait_for_prior_grid(PDL)` get PDL from `pdl`: with it
    (and PROGRAMMATIC_LAUNCH) they are launched as programmatic dependents, their programs
    dispatched while the previous kernel's last ones still run, to wait there for its results.
    That hides part of a small kernel's launch latency, inside CUDA graphs too. The decode
    kernels ask for it at one row only: a 1.1B Llama's batch-1 decode step gained about 2% on an
    H200 with it, and its 16-row step lost 6%, likely because the early programs crowd the SMs
    that the previous kernel leaves first.
    """

    __slots__ = ("fn", "grid", "meta", "num_warps", "num_stages", "int_type", "types",
                 "per_call", "device", "target", "kernel", "pointers", "pdl")

    def __init__(self, fn, grid, meta, num_warps=4, num_stages=1, int_type="i32", types=None,
                 per_call=(), device=0, target=None, pdl=False):
        self.pdl = pdl and PROGRAMMATIC_LAUNCH
        if "PDL" in fn.arg_names:
            meta = dict(meta, PDL=self.pdl)
        self.fn, self.grid, self.meta = fn, tuple(grid), meta
        self.num_warps, self.num_stages = num_warps, num_stages
        self.int_type, self.types, self.per_call = int_type, types or {}, per_call
        self.device, self.target = device, target
        self.kernel, self.pointers = None, ()

    def __call__(self, stream, *args):
        kernel = self.kernel
        if kernel is None:
            kernel = self.bind(args)
            if kernel is None:
                return
        args = list(args[:kernel.n_args])
        for i in self.pointers:
            args[i] = args[i].ptr
        kernel(self.grid, stream, *args)

    def bind(self, args):
        """Compile (and, without a target, bind and keep) the specialization for `args`: the
        BoundKernel, for callers that launch it themselves over grids of their own (None with
        a target)."""
        signature, constexprs, aligned, pointers = self.specialization(args)
        if self.target is not None:
            compile_kernel(self.fn, signature, constexprs, aligned, self.num_warps,
                           self.num_stages, self.target, self.pdl)
            return None
        self.pointers = tuple(pointers)
        self.kernel = get_kernel(self.fn, signature, constexprs, aligned, self.num_warps,
                                 self.num_stages, self.device, self.pdl)
        return self.kernel

    def specialization(self, args):
        """(signature, constexprs, aligned names, positions of the array arguments) for
        `args`, the kernel's parameters in order up to its meta-parameters."""
        signature, constexprs, aligned, pointers = {}, {}, [], []
        for i, (name, value) in enumerate(zip(self.fn.arg_names, args)):
            if value is None or value.__class__ is Const:
                signature[name] = "constexpr"
                constexprs[name] = None if value is None else value.value
            elif value.__class__ is CUDAArray:
                signature[name] = pointer_of(value.dtype)
                pointers.append(i)
                if value.ptr % 16 == 0 and name not in self.per_call:
                    aligned.append(name)
            elif isinstance(value, (int, np.integer)):
                signature[name] = self.types.get(name, self.int_type)
                if value % 16 == 0 and name not in self.per_call:
                    aligned.append(name)
            else:
                signature[name] = self.types.get(name, "fp32")
        for name in self.fn.arg_names[len(args):]:
            signature[name] = "constexpr"
            constexprs[name] = self.meta[name]
        return signature, constexprs, aligned, pointers


class LaunchCache(dict):
    """Launches (or plans of several) by geometry key; emptied past `limit` (many shapes)."""

    def __init__(self, limit=4096):
        super().__init__()
        self.limit = limit

    def get_or_build(self, key, build):
        value = self.get(key)
        if value is None:
            if len(self) >= self.limit:
                self.clear()
            value = self[key] = build()
        return value


_workspaces = {}


def stream_workspace(device, stream, nbytes):
    """At least `nbytes` bytes of scratch (a uint8 CUDAArray) for single launches on (device,
    stream), kept for the process and grown when a launch needs more.

    Launches on one stream run one after another, so they can all use it, as they would the one
    block the allocator's cache hands each of them in turn, minus an allocation per launch. The
    buffer it replaces goes back to the allocator on the same stream, so a launch still reading
    it finishes before anything else gets that memory."""
    if graphs.active_capture(stream) is not None:
        return graphs.scratch(nbytes, device, stream)
    return _stream_buffer(device, stream, nbytes)


def _stream_buffer(device, stream, nbytes):
    workspace = _workspaces.get((device, stream))
    if workspace is None or workspace.storage.nbytes < nbytes:
        workspace = _workspaces[(device, stream)] = CUDAArray.empty(
            (max(nbytes, 1 << 16),), np.uint8, device, stream)
    return workspace


_views = {}


def workspace_views(device, stream, nbytes, key, make):
    """make(workspace) for the stream's workspace of at least `nbytes` (stream_workspace): views
    kept under `key` while that workspace is the stream's, so that a launch reusing them builds
    no arrays. A grown workspace drops the views of the one it replaces, which then goes back
    to the allocator (views kept by the launches themselves would hold every workspace they
    ever saw). During a capture they are made on the capture's scratch and not kept."""
    if graphs.active_capture(stream) is not None:
        return make(graphs.scratch(nbytes, device, stream))
    workspace = _stream_buffer(device, stream, nbytes)
    kept = _views.get((device, stream))
    if kept is None or kept[0] is not workspace:
        kept = _views[(device, stream)] = (workspace, {})
    views = kept[1].get(key)
    if views is None:
        views = kept[1][key] = make(workspace)
    return views
