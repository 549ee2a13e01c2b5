"""The CUDA backend: Genesis's own GPU runtime (runtime/) and Triton kernels (kernels/).

Importing this package loads nothing heavy; `register` (imported by the dispatcher on first use
of a "cuda" device) imports Triton and registers the kernels. The driver is initialised lazily.
"""
