// Native reference for `perfprobe pinned`: pinned H2D and D2H bandwidth with cudaMemcpyAsync and
// CUDA events, the same sizes, warm-ups and repeats as the probe, median per size.
// Build: nvcc -O2 -o bench/build/pinned_ref bench/pinned_ref.cu
// Run:   bench/build/pinned_ref MAX_BYTES [DEVICE]   -> one JSON object per line and size.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_check.h"

static const size_t kMin = 64 << 10, kLarge = 64 << 20;

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median GB/s of one copy of `bytes` repeated `reps` times after `warm` warm-ups.
static double copy_gbs(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                       cudaStream_t stream, int warm, int reps) {
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    std::vector<double> gbs;
    for (int i = 0; i < warm + reps; ++i) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
        CHECK(cudaEventRecord(end, stream));
        CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        if (i >= warm) gbs.push_back(bytes / (ms * 1e-3) / 1e9);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
    return median(gbs);
}

int main(int argc, char** argv) {
    size_t top = argc > 1 ? strtoull(argv[1], nullptr, 10) : (size_t(1) << 30);
    int device = argc > 2 ? atoi(argv[2]) : 0;
    CHECK(cudaSetDevice(device));
    void *h_src, *h_dst, *d_a, *d_b;
    CHECK(cudaHostAlloc(&h_src, top, cudaHostAllocDefault));
    CHECK(cudaHostAlloc(&h_dst, top, cudaHostAllocDefault));
    CHECK(cudaMalloc(&d_a, top));
    CHECK(cudaMalloc(&d_b, top));
    memset(h_src, 0xA5, top);
    memset(h_dst, 0x96, top);
    CHECK(cudaMemset(d_b, 0xC3, top));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<size_t> sizes;
    for (size_t s = kMin; s <= top; s *= 4) sizes.push_back(s);
    if (sizes.empty() || sizes.back() != top) sizes.push_back(top);
    for (size_t s : sizes) {
        int warm = 2, reps = s >= kLarge ? 7 : 20;
        double h2d = copy_gbs(d_a, h_src, s, cudaMemcpyHostToDevice, stream, warm, reps);
        double d2h = copy_gbs(h_dst, d_b, s, cudaMemcpyDeviceToHost, stream, warm, reps);
        printf("{\"size_bytes\": %zu, \"h2d_gbs\": %.4f, \"d2h_gbs\": %.4f}\n", s, h2d, d2h);
    }
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    CHECK(cudaFreeHost(h_src));
    CHECK(cudaFreeHost(h_dst));
    return 0;
}
