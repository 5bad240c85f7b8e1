"""Inside the GPU (cupy RawKernels): DRAM bandwidth, coalescing, shared-memory banks, occupancy,
tiled transpose and warp divergence. Timings (CUDA events) and checked results only.

`SOURCE` is the CUDA C of every kernel; bench/gpumem_ref.cu compiles the very same text with nvcc
(bench/bench_gpumem.py writes it out as a header), so the reference differs from perfprobe only in
how kernels are compiled (NVRTC against nvcc) and launched and timed (cupy against the runtime API).
Every kernel writes something the host can check: reads fold what they read into a sum that is
stored only when it matches an impossible value (so the loads cannot be dropped), writes and
copies are sampled back, transposes compared with the input, divergent results counted.
Judgement lives in perfprobe/probes/gpumem/rules.py.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable

import numpy as np

from perfprobe.kernels import nvml
from perfprobe.pure.stats import summarize

D2D = 3  # cudaMemcpyDeviceToDevice
TILE, TILE_ROWS = 32, 8
SMEM_WORDS = 2048
GATE_NS = 200_000  # longer than a Python launch takes (tens of µs), short beside a repeat's cost

SOURCE = r"""
// perfprobe gpumem kernels (also compiled by bench/gpumem_ref.cu through a generated header).
extern "C" __global__ void read_f4(const float4* __restrict__ a, long long n, float* sink) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long step = (long long)gridDim.x * blockDim.x;
    float acc = 0.f;
#pragma unroll 4
    for (; i < n; i += step) { float4 v = a[i]; acc += (v.x + v.y) + (v.z + v.w); }
    if (acc == -1.0f) sink[0] = acc;
}

// One float4 load in flight per thread: how many warps hide DRAM latency without ILP.
extern "C" __global__ void read_f4_serial(const float4* __restrict__ a, long long n, float* sink) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long step = (long long)gridDim.x * blockDim.x;
    float acc = 0.f;
#pragma unroll 1
    for (; i < n; i += step) { float4 v = a[i]; acc += (v.x + v.y) + (v.z + v.w); }
    if (acc == -1.0f) sink[0] = acc;
}

extern "C" __global__ void write_f4(float4* __restrict__ a, long long n, float value) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long step = (long long)gridDim.x * blockDim.x;
    float4 v = make_float4(value, value, value, value);
#pragma unroll 4
    for (; i < n; i += step) a[i] = v;
}

extern "C" __global__ void copy_f4(const float4* __restrict__ a, float4* __restrict__ b, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long step = (long long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (; i < n; i += step) b[i] = a[i];
}

// Thread j reads element offset + j * stride: consecutive threads `stride` floats apart.
extern "C" __global__ void strided_read(const float* __restrict__ a, long long count, long long stride,
                                        long long offset, float* sink) {
    long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long step = (long long)gridDim.x * blockDim.x;
    float acc = 0.f;
#pragma unroll 4
    for (; j < count; j += step) acc += a[offset + j * stride];
    if (acc == -1.0f) sink[0] = acc;
}

// Lane l reads shared word l * stride + k for k = 0..31, `reps` times: a stride-s warp load hits
// gcd(s, 32) words in one bank (s = 32: a column of a [32][32] tile; s = 33: of a [32][33] tile).
extern "C" __global__ void smem_stride(int stride, int reps, float* sink) {
    __shared__ float s[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = (float)(i & 7);
    __syncthreads();
    volatile float* p = s + (threadIdx.x & 31) * stride;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    for (int r = 0; r < reps; ++r) {
#pragma unroll
        for (int k = 0; k < 32; k += 4) { a0 += p[k]; a1 += p[k + 1]; a2 += p[k + 2]; a3 += p[k + 3]; }
    }
    float acc = (a0 + a1) + (a2 + a3);
    if (acc == -1.0f) sink[0] = acc;
}

// n x n floats, n a multiple of 32; blocks of 32 x 8 threads, each moving a 32 x 32 tile.
extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, int n) {
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) out[(long long)x * n + (y + j)] = in[(long long)(y + j) * n + x];
}

#define PERFPROBE_TILED(NAME, COLS)                                                                  \
extern "C" __global__ void NAME(const float* __restrict__ in, float* __restrict__ out, int n) {      \
    __shared__ float tile[32][COLS];                                                                 \
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;                        \
    for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(y + j) * n + x]; \
    __syncthreads();                                                                                 \
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;                            \
    for (int j = 0; j < 32; j += 8) out[(long long)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j]; \
}
PERFPROBE_TILED(transpose_tiled, 32)
PERFPROBE_TILED(transpose_padded, 33)

// Spins one thread for `nanoseconds`: queued before each timed launch, so the start event fires
// with the launch already waiting behind it and the host's launch latency stays out of the timing.
extern "C" __global__ void gate(long long nanoseconds) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < (unsigned long long)nanoseconds);
}

extern "C" __global__ void iota(float* __restrict__ a, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long step = (long long)gridDim.x * blockDim.x; i < n; i += step) a[i] = (float)i;
}

// Two paths of equal cost (fixed points 0.2 and 0.5, so the two results differ); mode 0 picks by lane parity (both paths run in every warp), mode 1 by
// warp parity (each warp runs one path).
extern "C" __global__ void diverge(float* __restrict__ out, int iters, int mode) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int pick = mode == 0 ? (threadIdx.x & 1) : ((t >> 5) & 1);
    float x = 0.3f;
    if (pick) { for (int k = 0; k < iters; ++k) x = fmaf(x, 0.999f, 0.0002f); }
    else      { for (int k = 0; k < iters; ++k) x = fmaf(x, -x, 0.75f); }
    out[t] = x;
}
"""

NAMES = ("read_f4", "read_f4_serial", "write_f4", "copy_f4", "strided_read", "smem_stride",
         "transpose_naive", "transpose_tiled", "transpose_padded", "diverge", "iota", "gate")

# cudaDeviceAttr values (driver_types.h), read through cudaDeviceGetAttribute.
ATTRIBUTES = {"memory_clock_khz": 36, "bus_width_bits": 37, "l2_bytes": 38, "max_threads_per_sm": 39,
              "shared_per_sm_bytes": 81, "max_blocks_per_sm": 106}


def compile_kernels(cupy: ModuleType) -> dict[str, Any]:
    """Every kernel of SOURCE, compiled once (NVRTC through cupy)."""
    module = cupy.RawModule(code=SOURCE, options=("-std=c++17",))
    return {name: module.get_function(name) for name in NAMES}


def device_attributes(cupy: ModuleType, device: int) -> dict[str, int | None]:
    """The attributes the plan and the peak need; None where this driver cannot say."""
    out: dict[str, int | None] = {}
    for key, attr in ATTRIBUTES.items():
        try:
            out[key] = int(cupy.cuda.runtime.deviceGetAttribute(attr, device))
        except Exception:  # an attribute this runtime no longer knows (CUDA 13 dropped some)
            out[key] = None
    return out


class MemoryNvml(nvml.Nvml):
    """The NVML session of kernels/nvml.py, with the memory interface's width and clocks."""

    def memory_interface(self) -> dict[str, Any]:
        return {"bus_width_bits": self._ask("nvmlDeviceGetMemoryBusWidth"),
                "mem_clock_max_mhz": self._ask("nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_MEM),
                "mem_clock_mhz": self._ask("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_MEM)}


def time_ms(cupy: ModuleType, launch: Callable[[Any], None], warmup: int, repeats: int,
            gate: Any = None, inner: int = 1) -> list[float]:
    """Milliseconds per launch, one CUDA-event pair around `inner` launches, after `warmup`; each
    pair behind a GATE_NS spin of `gate` (the module's gate kernel) when given."""
    stream = cupy.cuda.Stream(non_blocking=True)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(warmup):
        launch(stream)
    stream.synchronize()
    samples = []
    for _ in range(repeats):
        if gate is not None:
            gate((1,), (1,), (np.int64(GATE_NS),), stream=stream)
        start.record(stream)
        for _ in range(inner):
            launch(stream)
        end.record(stream)
        end.synchronize()
        samples.append(float(cupy.cuda.get_elapsed_time(start, end)) / inner)
    return samples


def case(samples: list[float], nbytes: int, **launch: Any) -> dict[str, Any]:
    """Median and spread of ms and of GB/s (`nbytes` counted per launch), with the launch shape."""
    return {"ms": summarize(samples), "gbs": summarize([nbytes / (ms * 1e-3) / 1e9 for ms in samples]),
            "bytes": nbytes, **launch}


def launcher(kernel: Any, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]) -> Callable[[Any], None]:
    def launch(stream: Any) -> None:
        kernel(grid, block, args, stream=stream)
    return launch


def memcpy_launcher(cupy: ModuleType, dst: int, src: int, nbytes: int) -> Callable[[Any], None]:
    def launch(stream: Any) -> None:
        cupy.cuda.runtime.memcpyAsync(dst, src, nbytes, D2D, stream.ptr)
    return launch


def busy_reads(cupy: ModuleType, kernel: Any, grid: int, block: int, a: Any, n4: int, sink: Any,
               launches: int) -> Any:
    """Enqueue `launches` read kernels (so NVML can be read under load); the stream to wait on."""
    stream = cupy.cuda.Stream(non_blocking=True)
    for _ in range(launches):
        kernel((grid,), (block,), (a, np.int64(n4), sink), stream=stream)
    return stream


def iota(kernels: dict[str, Any], array: Any, blocks: int) -> None:
    """array[i] = float(i) in place, by the module's own kernel (no cupy kernel to compile)."""
    kernels["iota"]((blocks,), (256,), (array, np.int64(array.size)))


def zero(cupy: ModuleType, array: Any) -> None:
    """Every byte of `array` zero (cudaMemset: no cupy kernel to compile)."""
    cupy.cuda.runtime.memset(array.data.ptr, 0, array.nbytes)


def chunks_equal(array: Any, expected: Callable[[int, int], np.ndarray], chunks: int = 8, width: int = 4096) -> bool:
    """Whether `chunks` contiguous runs of `width` elements spread over `array` equal
    expected(lo, hi): copied back by plain memcpy, compared on the host."""
    size = int(array.size)
    width = min(width, size)
    for lo in np.linspace(0, size - width, chunks).astype(np.int64):
        lo = int(lo)
        if not np.array_equal(array[lo:lo + width].get(), expected(lo, lo + width)):
            return False
    return True


def constant(value: float) -> Callable[[int, int], np.ndarray]:
    return lambda lo, hi: np.full(hi - lo, value, dtype=np.float32)
