"""Property tests for view semantics: random chains of view ops on random shapes.

Each chain runs on a genesis tensor and on numpy's equivalent view of the same values. A view
must read numpy's values, share the base's memory at numpy's offset and strides, keep the root
as `_base`, share the version counter, and carry writes both ways.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import genesis

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


def _dim(data, ndim):
    return data.draw(st.integers(-ndim, ndim - 1))


def _slice(data, size):
    start = data.draw(st.none() | st.integers(-size - 1, size + 1))
    stop = data.draw(st.none() | st.integers(-size - 1, size + 1))
    return slice(start, stop, data.draw(st.integers(1, 3)))


def draw_op(data, shape):
    """A random view op valid for `shape`: (name, genesis fn, numpy fn)."""
    ndim = len(shape)
    names = ["none", "unsqueeze", "squeeze", "expand"]
    if ndim:
        names += ["slice", "narrow", "select", "transpose", "permute", "movedim", "flip_T",
                  "unbind", "split"]
    if ndim >= 2:
        names += ["diagonal", "mT"]
    name = data.draw(st.sampled_from(names))
    if name == "none":
        pos = data.draw(st.integers(0, ndim))
        index = (slice(None),) * pos + (None,)
        return name, lambda x: x[index], lambda a: a[index]
    if name == "unsqueeze":
        d = data.draw(st.integers(-ndim - 1, ndim))
        return name, lambda x: x.unsqueeze(d), lambda a: np.expand_dims(a, d)
    if name == "squeeze":
        return name, lambda x: x.squeeze(), lambda a: a.reshape([s for s in a.shape if s != 1])
    if name == "expand":
        target = tuple(data.draw(st.integers(0, 3)) if s == 1 else s for s in shape)
        lead = tuple(data.draw(st.lists(st.integers(1, 2), max_size=1)))
        return name, lambda x: x.expand(lead + target), \
            lambda a: np.broadcast_to(a, lead + target)
    if name == "slice":
        index = tuple(_slice(data, s) for s in shape[:data.draw(st.integers(1, ndim))])
        return name, lambda x: x[index], lambda a: a[index]
    if name == "narrow":
        d = _dim(data, ndim)
        size = shape[d]
        start = data.draw(st.integers(0, size))
        length = data.draw(st.integers(0, size - start))
        index = (slice(None),) * (d % ndim) + (slice(start, start + length),)
        return name, lambda x: x.narrow(d, start, length), lambda a: a[index]
    if name in ("select", "unbind", "split"):
        d = _dim(data, ndim)
        size = shape[d]
        if size == 0:
            return "all", lambda x: x[...], lambda a: a[...]
        i = data.draw(st.integers(-size, size - 1))
        index = (slice(None),) * (d % ndim) + (i, Ellipsis)
        if name == "unbind":
            return name, lambda x: x.unbind(d)[i], lambda a: a[index]
        if name == "split":
            step = data.draw(st.integers(1, size))
            k = (i % size) // step
            piece = (slice(None),) * (d % ndim) + (slice(k * step, (k + 1) * step),)
            return name, lambda x: x.split(step, d)[k], lambda a: a[piece]
        return name, lambda x: x.select(d, i), lambda a: a[index]
    if name == "transpose":
        d0, d1 = _dim(data, ndim), _dim(data, ndim)
        return name, lambda x: x.transpose(d0, d1), lambda a: np.swapaxes(a, d0, d1)
    if name == "permute":
        perm = tuple(data.draw(st.permutations(range(ndim))))
        return name, lambda x: x.permute(perm), lambda a: np.transpose(a, perm)
    if name == "movedim":
        src, dst = _dim(data, ndim), _dim(data, ndim)
        return name, lambda x: x.movedim(src, dst), lambda a: np.moveaxis(a, src, dst)
    if name == "flip_T":
        return name, lambda x: x.permute(tuple(reversed(range(x.ndim)))), lambda a: a.T
    if name == "mT":
        return name, lambda x: x.mT, lambda a: np.swapaxes(a, -1, -2)
    offset = data.draw(st.integers(-3, 3))
    d1, d2 = data.draw(st.permutations(range(ndim)))[:2]
    return name, lambda x: x.diagonal(offset, d1, d2), lambda a: np.diagonal(a, offset, d1, d2)


def build(data):
    """A fresh contiguous base (values 0..n-1), a chain of views of it, and the chain as a numpy
    function (so it can also map element positions)."""
    shape = data.draw(shapes)
    host = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    base = genesis.tensor(host)
    view, expected, chain = base, host, []
    for _ in range(data.draw(st.integers(1, 4))):
        _, fn_g, fn_np = draw_op(data, tuple(view.shape))
        view, expected = fn_g(view), fn_np(expected)
        chain.append(fn_np)

    def np_chain(a):
        for fn in chain:
            a = fn(a)
        return a
    return base, host, view, np_chain


def _overlaps(t):
    return any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))


SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data())
def test_view_reads_numpy_values_and_geometry(data):
    base, host, view, np_chain = build(data)
    expected = np_chain(host)
    np.testing.assert_array_equal(view.numpy(), expected)
    assert view._storage is base._storage
    assert view._base is base
    if view.numel():
        itemsize = expected.itemsize
        assert view.data_ptr() - base.data_ptr() == \
            expected.__array_interface__["data"][0] - host.__array_interface__["data"][0]
        for size, stride, np_stride in zip(view.shape, view.stride(), expected.strides):
            assert size <= 1 or stride * itemsize == np_stride
        assert np.shares_memory(view.numpy(), base.numpy())


@SETTINGS
@given(st.data())
def test_writes_through_a_view_land_in_the_base(data):
    base, host, view, np_chain = build(data)
    if _overlaps(view):
        return
    covered = np_chain(np.arange(host.size).reshape(host.shape))
    values = -1.0 - np.arange(view.numel(), dtype=np.float64).reshape(tuple(view.shape))
    version = base._version
    view[...] = genesis.tensor(values)
    expected = host.copy()
    expected.reshape(-1)[covered.reshape(-1)] = values.reshape(-1)
    np.testing.assert_array_equal(base.numpy(), expected)
    assert base._version == view._version == version + 1


@SETTINGS
@given(st.data())
def test_writes_to_the_base_show_in_the_view(data):
    base, host, view, np_chain = build(data)
    before = view._version
    base.add_(1.0)
    np.testing.assert_array_equal(view.numpy(), np_chain(host) + 1.0)
    assert view._version == before + 1


@settings(max_examples=300, deadline=None)
@given(shapes, st.lists(st.none() | st.integers(0, 30), min_size=4, max_size=4))
def test_cuda_arrays_count_contiguity_as_numpy(shape, choices):
    """CUDAArray.is_contiguous (what the kernels and Tensor.is_contiguous read off the GPU)
    against numpy's c_contiguous flag: dims of size 1 and empty arrays take any strides. Each
    dim keeps its row-major stride (None) or takes a drawn one."""
    from genesis.backends.cuda.kernels._strided_indexing import placeholder
    row_major = genesis.tensor(np.empty(shape)).stride()
    strides = tuple(r if c is None else c for r, c in zip(row_major, choices))
    arr = placeholder(shape, np.float32, strides)
    host = np.lib.stride_tricks.as_strided(np.empty(1, np.float32), shape, arr.strides)
    assert arr.is_contiguous() == host.flags.c_contiguous
