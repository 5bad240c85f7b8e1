// Native reference for `perfprobe uvm`: the same read-reduce kernel, launch shape, data pattern,
// warm-up and repeats as the probe, timed with CUDA events, median per path.
// Paths: managed on demand, managed after a prefetch to the GPU, pinned copy + kernel (reference),
// zero-copy (mapped pinned) and the time of a prefetch of GPU-written managed memory to the host.
// Build: nvcc -O2 -o bench/build/uvm_ref bench/uvm_ref.cu
// Run:   bench/build/uvm_ref BYTES [DEVICE] [REPEATS]   -> one JSON object on one line.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.h"

static const unsigned long long kMask = (1ULL << 18) - 1;  // pattern period: 2^18 uint32

__global__ void read_sum(const uint4* __restrict__ p, unsigned long long n_vec,
                         unsigned long long* __restrict__ out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long acc = 0;
    for (; i + 3 * stride < n_vec; i += 4 * stride) {
        const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
        acc += (unsigned long long)a.x + a.y + a.z + a.w;
        acc += (unsigned long long)b.x + b.y + b.z + b.w;
        acc += (unsigned long long)c.x + c.y + c.z + c.w;
        acc += (unsigned long long)d.x + d.y + d.z + d.w;
    }
    for (; i < n_vec; i += stride) {
        const uint4 a = p[i];
        acc += (unsigned long long)a.x + a.y + a.z + a.w;
    }
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

__global__ void fill_pattern(unsigned int* __restrict__ p, unsigned long long n, unsigned int salt) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
        p[i] = (((unsigned int)(i & kMask) * 2654435761u) >> 16) + salt;
}

struct Bench {
    size_t bytes;
    int device, blocks, repeats;
    cudaStream_t stream;
    unsigned long long* out;
};

static void host_fill(unsigned int* p, size_t n, unsigned int salt) {
    for (size_t i = 0; i < n; ++i) p[i] = (((unsigned int)(i & kMask) * 2654435761u) >> 16) + salt;
}

static unsigned long long expected(size_t n, unsigned int salt) {
    unsigned long long sum = 0;
    for (size_t i = 0; i <= kMask && i < n; ++i) sum += ((unsigned int)i * 2654435761u) >> 16;
    return sum * (n / (kMask + 1)) + (unsigned long long)n * salt;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static float elapsed_s(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e-3f;
}

// One GPU read of `read` after host-filling `host` (and, if `copy_to`, copying host -> copy_to;
// if `prefetch`, prefetching `read` to the GPU first). Returns seconds; checks the sum.
static double gpu_read(const Bench& b, unsigned int* host, const void* read, void* copy_to,
                       bool prefetch, unsigned int salt) {
    host_fill(host, b.bytes / 4, salt);
    CHECK(cudaMemsetAsync(b.out, 0, sizeof(unsigned long long), b.stream));
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    CHECK(cudaEventRecord(start, b.stream));
    if (prefetch) {
#if CUDART_VERSION >= 13000
        cudaMemLocation loc = {};
        loc.type = cudaMemLocationTypeDevice;
        loc.id = b.device;
        CHECK(cudaMemPrefetchAsync(read, b.bytes, loc, 0, b.stream));
#else
        CHECK(cudaMemPrefetchAsync(read, b.bytes, b.device, b.stream));
#endif
    }
    if (copy_to) CHECK(cudaMemcpyAsync(copy_to, host, b.bytes, cudaMemcpyHostToDevice, b.stream));
    read_sum<<<b.blocks, 256, 0, b.stream>>>((const uint4*)(copy_to ? copy_to : read), b.bytes / 16, b.out);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(end, b.stream));
    CHECK(cudaEventSynchronize(end));
    double s = elapsed_s(start, end);
    unsigned long long got = 0;
    CHECK(cudaMemcpy(&got, b.out, sizeof(got), cudaMemcpyDeviceToHost));
    if (got != expected(b.bytes / 4, salt)) { fprintf(stderr, "wrong sum\n"); exit(2); }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
    return s;
}

// The GPU writes managed memory; then the time of a prefetch of it to the host.
static double prefetch_to_host(const Bench& b, unsigned int* managed, unsigned int salt) {
    fill_pattern<<<b.blocks, 256, 0, b.stream>>>(managed, b.bytes / 4, salt);
    CHECK(cudaStreamSynchronize(b.stream));
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    CHECK(cudaEventRecord(start, b.stream));
#if CUDART_VERSION >= 13000
    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeHost;
    CHECK(cudaMemPrefetchAsync(managed, b.bytes, loc, 0, b.stream));
#else
    CHECK(cudaMemPrefetchAsync(managed, b.bytes, cudaCpuDeviceId, b.stream));
#endif
    CHECK(cudaEventRecord(end, b.stream));
    CHECK(cudaEventSynchronize(end));
    double s = elapsed_s(start, end);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
    return s;
}

template <typename F>
static double timed(int repeats, F step) {
    step(1u);  // warm-up
    std::vector<double> v;
    for (int r = 0; r < repeats; ++r) v.push_back(step(2u + r));
    return median(v);
}

int main(int argc, char** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s BYTES [DEVICE] [REPEATS]\n", argv[0]); return 2; }
    Bench b;
    b.bytes = strtoull(argv[1], nullptr, 10) / (4 << 20) * (4 << 20);
    b.device = argc > 2 ? atoi(argv[2]) : 0;
    b.repeats = argc > 3 ? atoi(argv[3]) : 3;
    CHECK(cudaSetDevice(b.device));
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, b.device));
    b.blocks = sms * 8;
    CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&b.out, sizeof(unsigned long long)));

    unsigned int *managed, *pinned, *mapped_dev;
    void* dev;
    double on_demand, prefetched, copy, zero_copy, to_host;
    CHECK(cudaMallocManaged(&managed, b.bytes));
    on_demand = timed(b.repeats, [&](unsigned s) { return gpu_read(b, managed, managed, nullptr, false, s); });
    CHECK(cudaFree(managed));
    CHECK(cudaMallocManaged(&managed, b.bytes));
    prefetched = timed(b.repeats, [&](unsigned s) { return gpu_read(b, managed, managed, nullptr, true, s); });
    CHECK(cudaFree(managed));
    CHECK(cudaMallocManaged(&managed, b.bytes));
    to_host = timed(b.repeats, [&](unsigned s) { return prefetch_to_host(b, managed, s); });
    CHECK(cudaFree(managed));
    CHECK(cudaHostAlloc(&pinned, b.bytes, cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void**)&mapped_dev, pinned, 0));
    CHECK(cudaMalloc(&dev, b.bytes));
    copy = timed(b.repeats, [&](unsigned s) { return gpu_read(b, pinned, nullptr, dev, false, s); });
    zero_copy = timed(b.repeats, [&](unsigned s) { return gpu_read(b, pinned, mapped_dev, nullptr, false, s); });
    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(pinned));
    printf("{\"size_bytes\": %zu, \"managed_on_demand_s\": %.6g, \"managed_prefetch_s\": %.6g, "
           "\"explicit_copy_s\": %.6g, \"zero_copy_s\": %.6g, \"host_prefetch_move_s\": %.6g}\n",
           b.bytes, on_demand, prefetched, copy, zero_copy, to_host);
    return 0;
}
