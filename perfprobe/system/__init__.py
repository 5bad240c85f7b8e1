"""Code that acts on, or reads, the live process and machine: CPU and memory binding (bind.py), the
kernel's NUMA calls (numa_sys.py), the process state restored after each probe (process_state.py),
the memory budget read from what is free and allowed now (budget.py), and the files perfprobe is
handed to read (untrusted.py). Host facts are read by perfprobe/host/; kernels live in kernels/."""
