"""The modules behind genesis.utils.benchmark, laid out as torch.utils.benchmark.utils's:
common (TaskSpec, Measurement), timer (Timer), compare (Compare) and fuzzer (Fuzzer)."""
