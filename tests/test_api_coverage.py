"""How much of PyTorch's public API genesis offers, counted by name.

The population is every public callable of the `torch` namespace (functions, not classes or
modules) and every public attribute of `torch.Tensor`, less what issue 21 leaves aside by scope
(OUT_OF_SCOPE: quantized, sparse, MKL-DNN/cuDNN and other backends' internals, complex dtypes,
TorchScript and compiler internals) and less the names genesis leaves out on purpose (LEFT_OUT,
each with its reason). The test prints both ratios and holds the floors that have been reached,
so coverage can only grow.
"""

import inspect
import re
import types

import pytest
import torch

import genesis

OUT_OF_SCOPE = {
    "quantized tensors": r"quant|^q_|_q_|qscheme|int_repr|qparams|fbgemm",
    "sparse layouts": r"sparse|coalesce|^indices$|^values$|^dense_dim$|^to_dense$|_indices|"
                      r"^crow|^ccol|^row_indices|^col_indices|^smm$|^dsmm$|^hsmm$|^hspmm$|"
                      r"^spmm$|^sspaddmm$|^saddmm$",
    "MKL-DNN, cuDNN, MIOpen and other backends' internals": r"mkldnn|cudnn|miopen|xpu|mps|"
                                                             r"vulkan|ipu|xla|hpu|mtia|maia|"
                                                             r"^is_meta$|^batch_norm_|^native_|"
                                                             r"_backward|^conv_tbc$",
    "complex dtypes": r"complex|conj|polar|^real$|^imag$|view_as_real|resolve_neg|^is_neg|"
                      r"^angle$|^isreal$|^cfloat$|^cdouble$|^chalf$|^adjoint$|^H$|^mH$",
    "nested tensors": r"nested|to_padded_tensor",
    "TorchScript, compiler and symbolic-shape internals": r"^sym_|_jit|_ir$|^import_ir|"
                                                          r"type_comment|schema|^fork$|^wait$|"
                                                          r"compile|cxx11|^classproperty$|"
                                                          r"^unify_type|cupti|"
                                                          r"^while_loop$|^cond$|"
                                                          r"thread_safe|^merge_type|"
                                                          r"^get_file_path$|^slice_inverse$|"
                                                          r"^module_load$|^hash_tensor$",
    "functionalization's *_copy variants": r"_copy$",
    "autocast's internal state": r"autocast",
}
_SCOPE = re.compile("|".join(f"(?:{p})" for p in OUT_OF_SCOPE.values()))

# Names genesis leaves out on purpose, and why. Anything else absent is a gap still to close.
LEFT_OUT = {
    "stft": "returns complex tensors (complex dtypes are out of scope)",
    "istft": "takes complex tensors (complex dtypes are out of scope)",
    "from_file": "reads a raw storage file; genesis has no storage objects",
    "storage": "genesis has no storage objects (arrays carry their own memory)",
    "untyped_storage": "genesis has no storage objects",
    "storage_type": "genesis has no storage objects",
    "is_set_to": "compares storages; genesis has no storage objects",
    "set_": "rebinds a tensor to another storage; genesis has no storage objects",
    "resize": "deprecated alias of resize_",
    "resize_as": "deprecated alias of resize_as_",
    "reinforce": "removed stochastic-function API (raises in PyTorch itself)",
    "output_nr": "autograd-graph internal",
    "as_subclass": "Tensor subclassing through __torch_function__ is not supported",
    "const_data_ptr": "raw pointers: use data_ptr, which genesis has",
    "dim_order": "an experimental API in PyTorch (its docs say it may change); layouts are read "
                 "with is_contiguous(memory_format=...) and stride()",
    "segment_reduce": "prototype op without a stable signature",
    "nonzero_static": "export-time op for static shapes (torch.export)",
    "is_distributed": "legacy flag of removed distributed tensors",
    "get_device_module": "backend registry internal",
    "prepare_multiprocessing_environment": "torch.multiprocessing internal",
    "is_storage": "genesis has no storage objects",
    "grad_dtype": "prototype attribute",
    "solve": "removed from PyTorch (it raises there); linalg.solve",
    "lstsq": "removed from PyTorch (it raises there); linalg.lstsq",
    "eig": "removed from PyTorch (it raises there); its results are complex (out of scope)",
    "symeig": "removed from PyTorch (it raises there); linalg.eigh",
    "matrix_rank": "removed from PyTorch (it raises there); linalg.matrix_rank",
    "geqrf": "LAPACK's Householder form of QR, for orgqr/ormqr; linalg.qr gives Q and R (orgqr, "
             "as linalg.householder_product, takes such a form made otherwise)",
    "ormqr": "takes geqrf's Householder form (see geqrf)",
    "lobpcg": "iterative eigensolver for large sparse matrices (sparse layouts are out of "
              "scope); linalg.eigh solves dense ones",
    "lstm": "ATen's flat-weight-list form behind nn.LSTM; the module and lstm_cell are genesis's",
    "gru": "ATen's flat-weight-list form behind nn.GRU; the module and gru_cell are genesis's",
    "rnn_tanh": "ATen's flat-weight-list form behind nn.RNN; the module and rnn_tanh_cell are "
                "genesis's",
    "rnn_relu": "ATen's flat-weight-list form behind nn.RNN; the module and rnn_relu_cell are "
                "genesis's",
    "embedding_bag": "ATen's form returns three workspace tensors for its backward beside the "
                     "result; F.embedding_bag is genesis's",
    "is_inference": "genesis's inference_mode is no_grad without inference tensors: no tensor "
                    "is marked as one",
    "as_strided_": "rebinds a tensor's geometry in place; genesis changes geometry only by "
                   "making views (as_strided)",
    "index": "binds first-class dimensions (functorch.dim), which genesis does not have",
    "name": "named tensors are not supported",
}


def _torch_functions():
    names = []
    for name in dir(torch):
        if name.startswith("_") or _SCOPE.search(name):
            continue
        value = getattr(torch, name)
        if callable(value) and not inspect.isclass(value) and not isinstance(value,
                                                                           types.ModuleType):
            names.append(name)
    return names


def _tensor_methods():
    return [n for n in dir(torch.Tensor) if not n.startswith("_") and not _SCOPE.search(n)]


def _coverage(population, present):
    considered = [n for n in population if n not in LEFT_OUT]
    have = [n for n in considered if present(n)]
    missing = sorted(set(considered) - set(have))
    return len(have), len(considered), len(population), missing


# Issue 21 asks 0.75 and 0.85. Reached under torch 2.13: 1.000 (501 of 501) and 1.000 (492 of
# 492); the floors sit a little below so that torch 2.11's slightly different lists pass too.
# Raise them as names are added.
FUNCTION_FLOOR = 0.98
METHOD_FLOOR = 0.98


def _has(obj, name):
    """Whether `obj` has attribute `name` (one that raises on this instance, such as `.T` of a
    1-D tensor, still exists)."""
    try:
        getattr(obj, name)
    except AttributeError:
        return False
    except Exception:  # noqa: BLE001  (the attribute exists; this sample cannot produce it)
        return True
    return True


def test_function_coverage():
    have, considered, total, missing = _coverage(_torch_functions(),
                                                 lambda n: hasattr(genesis, n))
    print(f"\ntorch.* functions: genesis has {have} of {considered} "
          f"({have / considered:.3f}); {total - considered} left out on purpose; "
          f"counting those as missing: {have / total:.3f}")
    print("missing:", " ".join(missing))
    assert have / considered >= FUNCTION_FLOOR


def test_tensor_method_coverage():
    sample = genesis.zeros(1)
    have, considered, total, missing = _coverage(_tensor_methods(),
                                                 lambda n: _has(sample, n))
    print(f"\nTensor methods: genesis has {have} of {considered} ({have / considered:.3f}); "
          f"{total - considered} left out on purpose; counting those as missing: "
          f"{have / total:.3f}")
    print("missing:", " ".join(missing))
    assert have / considered >= METHOD_FLOOR


def test_left_out_names_are_really_left_out():
    """A name in LEFT_OUT that genesis gains must leave the list (it would hide coverage)."""
    sample = genesis.zeros(1)
    gained = [n for n in LEFT_OUT if hasattr(genesis, n) or _has(sample, n)]
    assert not gained, f"remove from LEFT_OUT: {gained}"
    assert all(LEFT_OUT.values())


# SummaryWriter methods that genesis.utils.tensorboard has but refuses (NotImplementedError), and
# why. Every other method of torch.utils.tensorboard.SummaryWriter must be there.
TENSORBOARD_LEFT_OUT = {}


def test_tensorboard_writer_coverage(tmp_path):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from genesis.utils.tensorboard import SummaryWriter
    names = [n for n in dir(TorchWriter) if not n.startswith("_")]
    assert [n for n in names if not hasattr(SummaryWriter, n)] == []
    with SummaryWriter(tmp_path) as writer:
        for name in TENSORBOARD_LEFT_OUT:
            with pytest.raises(NotImplementedError):
                getattr(writer, name)(None)
    assert all(TENSORBOARD_LEFT_OUT.values())
