"""Pure helpers, no I/O and no side effects: statistics of repeats (stats.py), what users type
(units.py), which CPUs threads get (cpu_order.py), a PCIe link's rate (pcie_rate.py), whether the
host is a VM (vm.py), whether the GPU was shared while measuring (gpu_activity.py)."""
