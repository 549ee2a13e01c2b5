"""The launch path: compile a Triton kernel once per specialization, bind it, call it directly.

`kernel[grid](...)` costs about 17 us of host time per call (argument specialization, cache
lookups, launch-metadata hooks). Here a specialization is compiled with `triton.compile` on first
use (cached on disk by Triton, under GENESIS_KERNEL_CACHE_DIR when set), its module loaded once,
and later calls go straight to Triton's C launcher with plain ints: a dict lookup and one call.
"""

import operator
import threading

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


def scalar_type(np_dtype):
    return _TRITON_TYPES[np_dtype.name]


def target(device=None):
    from triton.backends.compiler import GPUTarget
    major, minor = get_context(device).properties.capability
    return GPUTarget("cuda", major * 10 + minor, 32)


def compile_kernel(fn, signature, constexprs=None, aligned=(), num_warps=4, num_stages=3,
                   target_=None):
    """Compile `fn` for one specialization (no GPU needed when `target_` is given).

    `signature` maps argument names to Triton types ("*fp32", "i64", "constexpr"); `aligned`
    names the arguments known to be multiples of 16 (pointers in bytes, integers in value), which
    lets Triton emit 16-byte vector loads.
    """
    import triton
    from triton.compiler import ASTSource
    names = list(signature)
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs or {}, attrs=attrs)
    return triton.compile(src, target=target_ or target(),
                          options={"num_warps": num_warps, "num_stages": num_stages})


class BoundKernel:
    """A compiled specialization with its launcher resolved: `bound(grid, stream, *args)`.

    `args` are the runtime arguments in order. Triton's launcher also takes the constexpr
    values (and ignores them): `_tail` holds them, appended to the arguments; when some come
    before a runtime argument, `_layout` (an itemgetter) puts every value back in its place.

    Kernels that need no scratch memory (all of Genesis's) skip `compiled.run`, a Python frame
    that allocates scratch, and call the C launch function under it directly with its leading
    arguments (`_head`: function, cooperative-grid and PDL flags, no scratch, packed metadata, no
    launch metadata or hooks), as triton 3.6's nvidia launcher takes them: about a microsecond
    less per launch.
    """

    __slots__ = ("name", "compiled", "_run", "_head", "_tail", "_layout")

    def __init__(self, compiled, signature, constexprs):
        compiled._init_handles()
        self.name = compiled.name
        self.compiled = compiled
        launcher = compiled.run
        direct = getattr(launcher, "launch", None)
        if direct is not None and not (launcher.global_scratch_size
                                       or launcher.profile_scratch_size):
            self._run = direct
            self._head = (compiled.function, launcher.launch_cooperative_grid,
                          launcher.launch_pdl, None, None, compiled.packed_metadata, None, None,
                          None)
        else:
            self._run = launcher
            self._head = (compiled.function, compiled.packed_metadata, None, None, None)
        kinds = [kind == "constexpr" for kind in signature.values()]
        self._tail = tuple(constexprs.get(name) for name, c in zip(signature, kinds) if c)
        places, next_arg, next_const = [], 0, len(kinds) - len(self._tail)
        for is_const in kinds:  # the index in args + _tail of each value of the full list
            places.append(next_const if is_const else next_arg)
            next_const += is_const
            next_arg += not is_const
        self._layout = None if places == sorted(places) else operator.itemgetter(*places)

    def __call__(self, grid, stream, *args):
        args += self._tail
        if self._layout is not None:
            args = self._layout(args)
        if len(grid) == 1:
            gx, gy, gz = grid[0], 1, 1
        else:
            gx, gy, gz = (tuple(grid) + (1, 1))[:3]
        self._run(gx, gy, gz, stream, *self._head, *args)


def get_kernel(fn, signature, constexprs=None, aligned=(), num_warps=4, num_stages=3, device=0):
    """The bound kernel for this specialization on `device`, compiled on first use.

    The caller has made `device` active (runtime.device.activate); the module is loaded there.
    """
    key = (fn, tuple(signature.items()), tuple(sorted((constexprs or {}).items())),
           tuple(aligned), num_warps, num_stages, device)
    bound = _cache.get(key)
    if bound is None:
        with _lock:
            bound = _cache.get(key)
            if bound is None:
                from .triton_driver import install
                install()
                compiled = compile_kernel(fn, signature, constexprs, aligned, num_warps, num_stages,
                                          target(device))
                bound = _cache[key] = BoundKernel(compiled, signature, constexprs or {})
    return bound


def is_aligned(*values):
    """True when every pointer/size is a multiple of 16 (the divisibility Triton specializes on)."""
    return all(v % 16 == 0 for v in values)
