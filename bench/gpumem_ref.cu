// Native reference for `perfprobe gpumem`: the same kernels (perfprobe/kernels/gpumem_kernels.py's
// SOURCE, written out as build/gpumem_kernels.cuh by bench/bench_gpumem.py), the same launch shapes
// (perfprobe/probes/gpumem/plan.py), the same warm-ups and repeats (the full preset), timed with CUDA
// events on a non-blocking stream through the runtime API, each event pair behind the same 200 µs
// gate kernel as the probe's; median ms per case.
// Build: python3 -c 'from perfprobe.kernels.gpumem_kernels import SOURCE; print(SOURCE)' > bench/build/gpumem_kernels.cuh
//        nvcc -O3 -arch=sm_90 -Ibench/build -o bench/build/gpumem_ref bench/gpumem_ref.cu
// Run:   bench/build/gpumem_ref BYTES [DEVICE]   -> one JSON object per line and case.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "gpumem_kernels.cuh"

static const int kBlock = 256, kWarm = 2, kReps = 15, kOccReps = 7, kSmemReps = 256, kDivergeIters = 32768;
static const size_t kOccupancyBytes = size_t(512) << 20;
static const long long kGateNs = 200000;  // the probe's GATE_NS: the start event fires with the launch queued

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static cudaStream_t g_stream;

// Median ms of `launch` over `reps` event-bracketed runs after `warm` warm-ups; prints the case.
static void timed(const std::string& name, double bytes, int warm, int reps, const std::function<void()>& launch) {
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    for (int i = 0; i < warm; ++i) launch();
    CHECK(cudaStreamSynchronize(g_stream));
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
        gate<<<1, 1, 0, g_stream>>>(kGateNs);
        CHECK(cudaEventRecord(start, g_stream));
        launch();
        CHECK(cudaEventRecord(end, g_stream));
        CHECK(cudaEventSynchronize(end));
        float t = 0;
        CHECK(cudaEventElapsedTime(&t, start, end));
        ms.push_back(t);
    }
    CHECK(cudaGetLastError());
    double m = median(ms);
    printf("{\"case\": \"%s\", \"ms\": %.6f, \"gbs\": %.3f}\n", name.c_str(), m, bytes > 0 ? bytes / (m * 1e-3) / 1e9 : 0.0);
    fflush(stdout);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
}

int main(int argc, char** argv) {
    size_t size = argc > 1 ? strtoull(argv[1], nullptr, 10) : (size_t(1) << 30);
    int device = argc > 2 ? atoi(argv[2]) : 0;
    size = size / 4096 * 4096;
    CHECK(cudaSetDevice(device));
    int sms = 0, threads_per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CHECK(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    float *a, *b, *sink;
    CHECK(cudaMalloc(&a, size));
    CHECK(cudaMalloc(&b, size));
    CHECK(cudaMalloc(&sink, sizeof(float)));
    CHECK(cudaMemset(sink, 0, sizeof(float)));
    const long long n4 = size / 16, elements = size / 4;
    const int blocks = sms * (threads_per_sm / kBlock);
    cudaStream_t s = g_stream;

    timed("dram.write", size, kWarm, kReps, [&] { write_f4<<<blocks, kBlock, 0, s>>>((float4*)a, n4, 1.0f); });
    timed("dram.read", size, kWarm, kReps, [&] { read_f4<<<blocks, kBlock, 0, s>>>((const float4*)a, n4, sink); });
    timed("dram.copy", 2.0 * size, kWarm, kReps, [&] { copy_f4<<<blocks, kBlock, 0, s>>>((const float4*)a, (float4*)b, n4); });
    timed("dram.d2d_memcpy", 2.0 * size, kWarm, kReps, [&] { CHECK(cudaMemcpyAsync(b, a, size, cudaMemcpyDeviceToDevice, s)); });

    const long long strides[] = {1, 2, 4, 8, 16, 32};
    for (long long st : strides) {
        long long count = (elements - 0 - 1) / st + 1;
        timed("coalesce.stride" + std::to_string(st), count * 4.0, kWarm, kReps,
              [&] { strided_read<<<blocks, kBlock, 0, s>>>(a, count, st, 0, sink); });
    }
    long long count1 = (elements - 1 - 1) / 1 + 1;
    timed("coalesce.misaligned", count1 * 4.0, kWarm, kReps,
          [&] { strided_read<<<blocks, kBlock, 0, s>>>(a, count1, 1, 1, sink); });

    const int smem_strides[] = {1, 2, 3, 4, 8, 16, 32, 33};
    double smem_bytes = double(blocks) * kBlock * kSmemReps * 32 * 4;
    for (int st : smem_strides)
        timed("smem.stride" + std::to_string(st), smem_bytes, kWarm, kReps,
              [&] { smem_stride<<<blocks, kBlock, 0, s>>>(st, kSmemReps, sink); });

    const int warps_list[] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64};
    size_t occ = std::min(kOccupancyBytes, size) / 16 * 16;
    for (int serial = 1; serial >= 0; --serial) {
        for (int w : warps_list) {
            if (w > threads_per_sm / 32) continue;
            int per_sm = w <= 32 ? 1 : 2, threads = w * 32 / per_sm;
            std::string name = std::string("occupancy.") + (serial ? "serial." : "unrolled4.") + std::to_string(w);
            timed(name, occ, 1, kOccReps, [&] {
                if (serial) read_f4_serial<<<sms * per_sm, threads, 0, s>>>((const float4*)a, occ / 16, sink);
                else read_f4<<<sms * per_sm, threads, 0, s>>>((const float4*)a, occ / 16, sink);
            });
        }
    }

    int n = 8192;
    while (n > 64 && size_t(n) * n * 4 > size) n /= 2;
    dim3 tgrid(n / 32, n / 32), tblock(32, 8);
    double tbytes = 2.0 * n * n * 4;
    timed("transpose.naive", tbytes, kWarm, kReps, [&] { transpose_naive<<<tgrid, tblock, 0, s>>>(a, b, n); });
    timed("transpose.tiled", tbytes, kWarm, kReps, [&] { transpose_tiled<<<tgrid, tblock, 0, s>>>(a, b, n); });
    timed("transpose.padded", tbytes, kWarm, kReps, [&] { transpose_padded<<<tgrid, tblock, 0, s>>>(a, b, n); });

    timed("divergence.divergent", 0, kWarm, kReps, [&] { diverge<<<blocks, kBlock, 0, s>>>(b, kDivergeIters, 0); });
    timed("divergence.split", 0, kWarm, kReps, [&] { diverge<<<blocks, kBlock, 0, s>>>(b, kDivergeIters, 1); });

    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(sink));
    return 0;
}
