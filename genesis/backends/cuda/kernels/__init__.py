"""Triton kernels of the CUDA backend, one module per family."""
