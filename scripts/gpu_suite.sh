#!/usr/bin/env bash
# The one command for a GPU machine: the GPU test suite, then the benchmarks, logs and JSON under
# $OUT (default ./out). Run from the repository root:
#   bash scripts/gpu_suite.sh [tests|cuda-tests|core-tests|sanitize|bench|all|interpret]
# `tests` is `cuda-tests` (tests/cuda and the kernel compile checks) then `core-tests` (the
# device-parametrized tests' cuda cases); with a cold kernel cache each half takes most of a
# 10-minute call on an H200, so they can run as separate calls. The logs are verbose (one line a
# test, so a run cut short still names what failed); failures also print as they happen, and
# their tracebacks and seeds go into $OUT/failures.log at once (tests/conftest.py), not only in
# the summary that a run cut off never reaches.
# `interpret` (not part of `all`; needs no GPU) runs the kernels of tests/interpret on the CPU
# through Triton's interpreter.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export GENESIS_KERNEL_CACHE_DIR=${GENESIS_KERNEL_CACHE_DIR:-/tmp/genesis_kernels}
what=${1:-all}
if ls .whl/*.whl >/dev/null 2>&1; then  # wheels carried for packages the GPU image lacks
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
status=0

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null \
  | tee "$OUT/gpu.txt"
python3 -c "import sys, numpy, triton, ml_dtypes; from cuda.bindings import __version__ as cb; \
print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'triton', triton.__version__, \
'cuda-bindings', cb, 'ml_dtypes', ml_dtypes.__version__)" | tee -a "$OUT/gpu.txt"

failures() {  # pytest's verbose output into $OUT/$1, its failures and summary on the screen
  tee "$OUT/$1" | grep --line-buffered -E "FAILED|ERROR|passed|failed"
}
testing=0
case "$what" in tests|all|cuda-tests|core-tests) testing=1 ;; esac
if [ $testing = 1 ]; then
  # Kernel-heavy suites compile hundreds of specializations: spread them over pytest-xdist workers
  # when it is there. The runtime and memory tests measure the device and run alone. The tests
  # keep their kernels and autotuning winners apart from the benchmarks': matmul configurations
  # timed while a dozen workers share the GPU are noise, and would be reused by the benchmarks.
  export GENESIS_FAILURE_LOG="$(cd "$OUT" && pwd)/failures.log"
  bench_cache=$GENESIS_KERNEL_CACHE_DIR
  export GENESIS_KERNEL_CACHE_DIR=$bench_cache-tests
  workers=$(python3 -c "import xdist" 2>/dev/null && echo "-n ${GENESIS_TEST_WORKERS:-12}")
  pytest="python3 -m pytest -v -rf -p no:cacheprovider"
  if [ "$what" != core-tests ]; then
    serial="tests/cuda/test_runtime.py tests/cuda/test_memory_gpu.py tests/cuda/test_torch_free.py"
    $pytest $serial 2>&1 | failures gpu_runtime_tests.log || status=1
    $pytest $workers tests/cuda tests/test_kernels_compile.py \
      $(for f in $serial; do echo "--ignore=$f"; done) 2>&1 | failures gpu_kernel_tests.log \
      || status=1
  fi
  if [ "$what" != cuda-tests ]; then
    # the core op tests' cuda cases (the same tests the CPU runs, parametrized by device)
    $pytest $workers -m cuda tests --ignore=tests/cuda 2>&1 | failures gpu_core_tests.log \
      || status=1
  fi
  export GENESIS_KERNEL_CACHE_DIR=$bench_cache
fi
if [ "$what" = interpret ]; then
  workers=$(python3 -c "import xdist" 2>/dev/null && echo "-n ${GENESIS_TEST_WORKERS:-12}")
  TRITON_INTERPRET=1 python3 -m pytest -q -rf -p no:cacheprovider $workers tests/interpret \
    2>&1 | tee "$OUT/interpret_tests.log" || status=1
fi
if [ "$what" = sanitize ] || [ "$what" = all ]; then
  if command -v compute-sanitizer >/dev/null; then
    timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      python3 -m pytest -q -x -p no:cacheprovider tests/cuda/test_runtime.py \
      tests/cuda/test_memory_gpu.py 2>&1 | tail -n 40 | tee "$OUT/memcheck.log" || status=1
  else
    echo "compute-sanitizer not found: memcheck skipped" | tee "$OUT/memcheck.log"
  fi
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  for b in benchmarks/overhead.py benchmarks/launch.py benchmarks/allocator.py benchmarks/ops.py \
           benchmarks/matmul.py benchmarks/attention.py benchmarks/train_step.py \
           benchmarks/optim.py benchmarks/gpt2.py benchmarks/generate.py benchmarks/rnn.py \
           benchmarks/conv.py benchmarks/resnet.py benchmarks/linalg.py; do
    [ -f "$b" ] || continue
    name=$(basename "$b" .py)
    timeout 300 python3 "$b" --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.log" || status=1
  done
  # each convolution kernel alone beside cuDNN's, bf16 and TF32 (benchmarks/README.md's tables)
  for dtype in bf16 fp32; do
    timeout 300 python3 benchmarks/conv.py --kernels --dtype "$dtype" \
      --json "$OUT/conv_kernels_$dtype.json" 2>&1 | tee "$OUT/conv_kernels_$dtype.log" || status=1
  done
fi
exit $status
