"""CUDA C++ through NVRTC without a GPU: real sources compiled to CUBIN and PTX for sm_90, the
process and disk caches, compile errors with NVRTC's log, and argument packing by CuPy's rules.
Launches are in tests/cuda/test_nvrtc_cuda.py."""

import ctypes
import json
import os

import numpy as np
import pytest

pytest.importorskip("cuda.bindings.nvrtc")

from genesis.backends.cuda import nvrtc  # noqa: E402
from genesis.backends.cuda.runtime.array import CUDAArray  # noqa: E402
from nvrtc_sources import ADD, AXPY, fresh_kernel_cache  # noqa: E402, F401


@pytest.fixture
def compiles(monkeypatch):
    """The list of (name, options) NVRTC compiles in this test."""
    calls = []
    real = nvrtc._compile

    def counted(source, name, options, arch):
        calls.append((name, options))
        return real(source, name, options, arch)

    monkeypatch.setattr(nvrtc, "_compile", counted)
    return calls


def test_cubin_for_sm90():
    program = nvrtc.compile_program(ADD, "vector_add", arch=90)
    assert program.format == "cubin"
    assert program.arch_option == "--gpu-architecture=sm_90"
    assert program.image.startswith(b"\x7fELF")
    assert program.lowered_name == "vector_add"


def test_ptx_for_an_architecture_newer_than_nvrtc():
    """An SM version NVRTC does not know gets PTX for the newest one below it."""
    newest = max(nvrtc.supported_archs())
    program = nvrtc.compile_program(ADD, "vector_add", arch=newest + 1)
    assert program.format == "ptx"
    assert program.arch_option == f"--gpu-architecture=compute_{newest}"
    assert b".entry vector_add" in program.image
    assert program.image.endswith(b"\0")


def test_user_architecture_option_wins():
    program = nvrtc.compile_program(ADD, "vector_add", ("--gpu-architecture=compute_80",), arch=90)
    assert program.format == "ptx"
    assert b".target sm_80" in program.image


def test_compiling_leaves_python_bytes_alone():
    """NVRTC writes its log and image into buffers Genesis hands it; a one-byte bytes object
    there would be CPython's shared b" " (or b"\\0"), and every b" " in the process would change."""
    nvrtc.compile_program(ADD, "vector_add", arch=90)
    assert b" " * 3 == bytes([32, 32, 32])


def test_template_instance_by_name_expression():
    program = nvrtc.compile_program(AXPY, "axpy<float>", arch=90)
    assert program.format == "cubin"
    assert program.lowered_name.startswith("_Z") and "axpy" in program.lowered_name
    double = nvrtc.compile_program(AXPY, "axpy<double>", arch=90)
    assert double.lowered_name != program.lowered_name


def test_second_compile_hits_the_process_cache(compiles):
    first = nvrtc.compile_program(ADD, "vector_add", arch=90)
    second = nvrtc.compile_program(ADD, "vector_add", arch=90)
    assert second is first
    assert len(compiles) == 1


def test_disk_cache_serves_a_new_process(compiles, tmp_path):
    first = nvrtc.compile_program(ADD, "vector_add", ("-lineinfo",), arch=90)
    nvrtc.clear_memory_cache()
    second = nvrtc.compile_program(ADD, "vector_add", ("-lineinfo",), arch=90)
    assert len(compiles) == 1
    assert second == first
    files = sorted(p.suffix for p in (tmp_path / "nvrtc").iterdir())
    assert files == [".bin", ".json"]


@pytest.mark.parametrize("change", [
    dict(options=("-lineinfo", "--use_fast_math")),
    dict(arch=80),
    dict(driver_version=13000),
    dict(source=ADD + "\n// another source\n"),
])
def test_any_key_change_is_a_miss(compiles, change):
    base = dict(source=ADD, name="vector_add", options=("-lineinfo",), arch=90)
    nvrtc.compile_program(**base)
    nvrtc.compile_program(**{**base, **change})
    assert len(compiles) == 2


def test_cache_key_names_every_input():
    base = nvrtc.cache_key(ADD, "vector_add", (), 90, None)
    assert len({base, nvrtc.cache_key(ADD, "other", (), 90, None),
                nvrtc.cache_key(ADD, "vector_add", ("-G",), 90, None),
                nvrtc.cache_key(ADD, "vector_add", (), 89, None),
                nvrtc.cache_key(ADD, "vector_add", (), 90, 13000)}) == 5


def test_unreadable_cache_entry_is_recompiled(compiles, tmp_path):
    nvrtc.compile_program(ADD, "vector_add", arch=90)
    nvrtc.clear_memory_cache()
    (meta,) = (tmp_path / "nvrtc").glob("*.json")
    meta.write_text("{not json")
    program = nvrtc.compile_program(ADD, "vector_add", arch=90)
    assert len(compiles) == 2
    assert program.image.startswith(b"\x7fELF")
    assert json.loads(meta.read_text())["lowered_name"] == "vector_add"


def test_default_cache_dir_is_tritons(monkeypatch, tmp_path):
    monkeypatch.delenv("GENESIS_KERNEL_CACHE_DIR")
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_HOME", str(tmp_path))
    assert nvrtc.cache_dir() == os.path.join(str(tmp_path), ".triton", "cache", "nvrtc")
    monkeypatch.setenv("TRITON_CACHE_DIR", "/somewhere")
    assert nvrtc.cache_dir() == os.path.join("/somewhere", "nvrtc")


def test_compile_error_shows_the_log_and_the_kernel_name():
    bad = ADD.replace("x[i] + y[i]", "x[i] + undeclared_value")
    with pytest.raises(nvrtc.NVRTCError) as info:
        nvrtc.compile_program(bad, "vector_add", arch=90)
    message = str(info.value)
    assert "'vector_add'" in message
    assert 'identifier "undeclared_value" is undefined' in message
    assert "sm_90" in message


def test_unknown_kernel_name_is_a_compile_error():
    with pytest.raises(nvrtc.NVRTCError,
                       match="(?s)'missing'.*identifier \"missing\" is undefined"):
        nvrtc.compile_program(ADD, "missing", arch=90)


def test_bad_option_is_a_compile_error():
    with pytest.raises(nvrtc.NVRTCError, match="vector_add"):
        nvrtc.compile_program(ADD, "vector_add", ("--no-such-option",), arch=90)


def test_options_must_be_strings():
    with pytest.raises(TypeError, match="options must be strings"):
        nvrtc.compile_program(ADD, "vector_add", ("-lineinfo", 3), arch=90)


def test_failed_compile_is_not_cached(compiles, tmp_path):
    bad = ADD.replace("x[i] + y[i]", "x[i] +")
    for _ in range(2):
        with pytest.raises(nvrtc.NVRTCError):
            nvrtc.compile_program(bad, "vector_add", arch=90)
    assert len(compiles) == 2
    assert not (tmp_path / "nvrtc").exists()


def _unpack(params, buffer):
    """The bytes each packed argument occupies, from its address."""
    base = ctypes.addressof(buffer)
    return [p - base for p in params]


def test_python_scalars_follow_cupy():
    """int -> long long, float -> double, bool -> bool, complex -> cuDoubleComplex (16-byte
    aligned, as double2)."""
    params, buffer = nvrtc.pack_arguments((True, 7, 2.5, 1 + 2j, -3, False))
    offsets = _unpack(params, buffer)
    assert offsets == [0, 8, 16, 32, 48, 56]
    raw = buffer.raw
    assert raw[0:1] == b"\x01" and raw[56:57] == b"\x00"
    assert np.frombuffer(raw[8:16], np.int64)[0] == 7
    assert np.frombuffer(raw[16:24], np.float64)[0] == 2.5
    assert np.frombuffer(raw[32:48], np.complex128)[0] == 1 + 2j
    assert np.frombuffer(raw[48:56], np.int64)[0] == -3


def test_numpy_scalars_keep_their_type_and_alignment():
    args = (np.int8(-2), np.float32(1.5), np.int16(300), np.float64(-0.25), np.uint32(7),
            np.float16(3.0), np.array([9], np.int32))
    params, buffer = nvrtc.pack_arguments(args)
    offsets = _unpack(params, buffer)
    assert offsets == [0, 4, 8, 16, 24, 28, 32]
    raw = buffer.raw
    expected = [np.int8(-2), np.float32(1.5), np.int16(300), np.float64(-0.25), np.uint32(7),
                np.float16(3.0), np.int32(9)]
    for off, value in zip(offsets, expected):
        assert np.frombuffer(raw[off:off + value.itemsize], value.dtype)[0] == value


def test_arrays_pass_their_device_pointer():
    arr = CUDAArray.__new__(CUDAArray)
    arr.ptr, arr.device = 0x7F0012345600, 0
    params, buffer = nvrtc.pack_arguments((arr, np.int32(4)), device=0)
    raw = buffer.raw
    assert np.frombuffer(raw[0:8], np.uint64)[0] == 0x7F0012345600
    assert _unpack(params, buffer) == [0, 8]


class _FakeTensor:
    """What the packing reads of a genesis Tensor: its device and data_ptr()."""

    def __init__(self, kind, index, ptr):
        from genesis.device import device
        self.device = device(kind, index)
        self._ptr = ptr

    def data_ptr(self):
        return self._ptr


def test_cuda_tensors_pass_their_data_pointer():
    params, buffer = nvrtc.pack_arguments((_FakeTensor("cuda", 0, 0xABC00), 5), device=0)
    assert np.frombuffer(buffer.raw[:8], np.uint64)[0] == 0xABC00


def test_cpu_tensor_argument_is_refused():
    import genesis
    with pytest.raises(TypeError, match=r"'k': argument 1 is a tensor on cpu"):
        nvrtc.pack_arguments((1, genesis.ones(3)), kernel="k")


def test_tensor_on_another_device_is_refused():
    with pytest.raises(ValueError, match="argument 0 is on cuda:1 but the kernel launches on "
                                         "cuda:0"):
        nvrtc.pack_arguments((_FakeTensor("cuda", 1, 16),), device=0, kernel="k")


@pytest.mark.parametrize("bad, error, match", [
    ("text", TypeError, "argument 0 has unsupported type str"),
    (None, TypeError, "argument 0 has unsupported type NoneType"),
    (np.zeros(3), TypeError, "argument 0 has unsupported type ndarray"),
    (1 << 63, OverflowError, "does not fit a long long"),
])
def test_unsupported_arguments(bad, error, match):
    with pytest.raises(error, match=match):
        nvrtc.pack_arguments((bad,), kernel="k")


def test_args_must_be_a_sequence():
    with pytest.raises(TypeError, match="args must be a tuple or list"):
        nvrtc.pack_arguments(np.float32(1), kernel="k")


def test_no_arguments():
    params, buffer = nvrtc.pack_arguments(())
    assert len(params) == 1 and len(buffer) == 1


@pytest.mark.parametrize("value, dims", [(7, (7, 1, 1)), ((4, 2), (4, 2, 1)),
                                         ((1, 2, 3), (1, 2, 3)), (np.int64(5), (5, 1, 1))])
def test_dim3(value, dims):
    assert nvrtc.dim3(value, "grid") == dims


@pytest.mark.parametrize("value", [0, (1, 2, 3, 4), (), (2, -1), 1.5])
def test_dim3_rejects(value):
    with pytest.raises(ValueError, match="block must be a positive int"):
        nvrtc.dim3(value, "block")


def test_public_name_and_import_stays_light():
    import subprocess
    import sys
    code = ("import sys, genesis; assert genesis.cuda.compile_kernel is not None; "
            "print(sorted(m for m in sys.modules if m.startswith(('torch', 'cuda'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


class _Launches:
    """Stand-ins for the driver and device calls of a launch, recording what reaches them."""

    def __init__(self, monkeypatch):
        from genesis.backends.cuda.runtime import device, driver, stream
        self.loads, self.launches, self.opt_ins = [], [], []
        context = type("Context", (), {"properties": type("P", (), {"capability": (9, 0)})})
        monkeypatch.setattr(device, "get_context", lambda index=None: context)
        monkeypatch.setattr(device, "current_device", lambda: 0)
        monkeypatch.setattr(device, "activate", lambda index: None)
        monkeypatch.setattr(stream, "current_stream_handle", lambda index: 77)
        monkeypatch.setattr(driver, "driver_version", lambda: 13000)
        monkeypatch.setattr(driver, "module_load_data", self._load)
        monkeypatch.setattr(driver, "module_get_function", lambda module, name: (module, name))
        monkeypatch.setattr(driver, "function_set_max_dynamic_shared",
                            lambda function, nbytes: self.opt_ins.append(nbytes))
        monkeypatch.setattr(driver, "launch_kernel", self._launch)

    def _load(self, image):
        self.loads.append(image)
        return len(self.loads)

    def _launch(self, function, grid, block, shared_mem, stream, params):
        """Records the launch with the argument words it points to (read during the call, as
        the driver reads them)."""
        import ctypes
        pointers = (ctypes.c_uint64 * 4).from_address(params)  # vector_add's four arguments
        words = [ctypes.c_uint64.from_address(p).value for p in pointers]
        self.launches.append((function, grid, block, shared_mem, stream, words))


def test_launch_path(monkeypatch):
    fake = _Launches(monkeypatch)
    kernel = nvrtc.compile_kernel(ADD, "vector_add")
    assert kernel.program().arch_option == "--gpu-architecture=sm_90"
    x, y, out = (_FakeTensor("cuda", 0, ptr) for ptr in (0x1000, 0x2000, 0x3000))
    kernel((4,), 128, (x, y, out, 500))
    kernel(4, (128,), [x, y, out, 500])
    assert len(fake.loads) == 1 and fake.loads[0].startswith(b"\x7fELF")
    assert fake.launches[0] == ((1, "vector_add"), (4, 1, 1), (128, 1, 1), 0, 77,
                                [0x1000, 0x2000, 0x3000, 500])
    assert fake.launches[1] == fake.launches[0]


def test_launch_on_a_given_stream(monkeypatch):
    fake = _Launches(monkeypatch)
    kernel = nvrtc.compile_kernel(ADD, "vector_add")
    side = type("Stream", (), {"cuda_stream": 99, "device_index": 0})()
    args = (_FakeTensor("cuda", 0, 16),) * 3 + (1,)
    kernel(1, 32, args, stream=side)
    kernel(1, 32, args, stream=55)
    assert [launch[4] for launch in fake.launches] == [99, 55]


def test_shared_memory_past_48k_opts_in_once(monkeypatch):
    fake = _Launches(monkeypatch)
    kernel = nvrtc.compile_kernel(ADD, "vector_add")
    args = (_FakeTensor("cuda", 0, 16),) * 3 + (1,)
    for nbytes in (1024, 64 << 10, 64 << 10, 48 << 10, 100 << 10):
        kernel(1, 32, args, shared_mem=nbytes)
    assert fake.opt_ins == [64 << 10, 100 << 10]
    assert [launch[3] for launch in fake.launches] == [1024, 64 << 10, 64 << 10, 48 << 10,
                                                       100 << 10]


def test_loading_during_a_capture_is_refused_and_a_loaded_kernel_launches(monkeypatch):
    """Loading a module would break a capture: the first launch must come before it, and a
    kernel loaded already launches inside one."""
    from genesis.backends.cuda.runtime import graphs
    fake = _Launches(monkeypatch)
    kernel = nvrtc.compile_kernel(ADD, "vector_add")
    args = (_FakeTensor("cuda", 0, 16),) * 3 + (1,)
    monkeypatch.setitem(graphs._active, 77, graphs.Capture(77, 0, (0, 1), "global"))
    with pytest.raises(graphs.CaptureError, match="loading the NVRTC kernel vector_add"):
        kernel(1, 32, args)
    assert fake.loads == [] and fake.launches == []
    monkeypatch.delitem(graphs._active, 77)
    kernel(1, 32, args)
    monkeypatch.setitem(graphs._active, 77, graphs.Capture(77, 0, (0, 1), "global"))
    kernel(1, 32, args)
    assert len(fake.loads) == 1 and len(fake.launches) == 2
