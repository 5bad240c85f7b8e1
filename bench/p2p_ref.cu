// Native reference for `perfprobe p2p`: for every ordered pair of GPUs, cudaMemcpyPeerAsync of
// BYTES one way with peer access off (staged) and on, and both ways at once on two streams (one per
// GPU), CUDA events; 2 warm-ups and 5 repeats, median (perfprobe's full preset from 64 MiB up).
// Build: nvcc -O2 -o bench/build/p2p_ref bench/p2p_ref.cu
// Run:   bench/build/p2p_ref BYTES   -> one JSON object per line and ordered pair.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.h"

static const int kWarm = 2, kReps = 5;

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median GB/s of `bytes` from src (on GPU s) to dst (on GPU d), on a stream of GPU s.
static double one_way(void* dst, int d, const void* src, int s, size_t bytes) {
    CHECK(cudaSetDevice(s));
    cudaStream_t stream;
    cudaEvent_t start, end;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    std::vector<double> gbs;
    for (int i = 0; i < kWarm + kReps; ++i) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaMemcpyPeerAsync(dst, d, src, s, bytes, stream));
        CHECK(cudaEventRecord(end, stream));
        CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        if (i >= kWarm) gbs.push_back(bytes / (ms * 1e-3) / 1e9);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
    CHECK(cudaStreamDestroy(stream));
    return median(gbs);
}

// Median GB/s (both copies' bytes) of a→b and b→a at once: start on a's stream, b's stream waits
// for it, b's end event is waited on by a's stream, the span is read between a's two events.
static double both_ways(void* const* src, void* const* dst, int a, int b, size_t bytes) {
    cudaStream_t sa, sb;
    cudaEvent_t start, end, b_done;
    CHECK(cudaSetDevice(a));
    CHECK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    CHECK(cudaSetDevice(b));
    CHECK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&b_done));
    std::vector<double> gbs;
    for (int i = 0; i < kWarm + kReps; ++i) {
        CHECK(cudaSetDevice(a));
        CHECK(cudaEventRecord(start, sa));
        CHECK(cudaSetDevice(b));
        CHECK(cudaStreamWaitEvent(sb, start, 0));
        CHECK(cudaSetDevice(a));
        CHECK(cudaMemcpyPeerAsync(dst[b], b, src[a], a, bytes, sa));
        CHECK(cudaSetDevice(b));
        CHECK(cudaMemcpyPeerAsync(dst[a], a, src[b], b, bytes, sb));
        CHECK(cudaEventRecord(b_done, sb));
        CHECK(cudaSetDevice(a));
        CHECK(cudaStreamWaitEvent(sa, b_done, 0));
        CHECK(cudaEventRecord(end, sa));
        CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        if (i >= kWarm) gbs.push_back(2.0 * bytes / (ms * 1e-3) / 1e9);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
    CHECK(cudaEventDestroy(b_done));
    CHECK(cudaStreamDestroy(sa));
    CHECK(cudaStreamDestroy(sb));
    return median(gbs);
}

// Turn peer access between a and b on or off both ways; returns whether both ways are on.
static bool set_peer(int a, int b, bool on) {
    bool ok = true;
    for (int k = 0; k < 2; ++k) {
        int from = k ? b : a, to = k ? a : b, can = 0;
        CHECK(cudaDeviceCanAccessPeer(&can, from, to));
        if (!can) { ok = false; continue; }
        CHECK(cudaSetDevice(from));
        cudaError_t err = on ? cudaDeviceEnablePeerAccess(to, 0) : cudaDeviceDisablePeerAccess(to);
        if (err == cudaErrorPeerAccessAlreadyEnabled || err == cudaErrorPeerAccessNotEnabled) {
            cudaGetLastError();  // not an error here: the state was already as asked
        } else {
            CHECK(err);
        }
    }
    return ok;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BYTES\n", argv[0]);
        return 2;
    }
    size_t bytes = strtoull(argv[1], nullptr, 10);
    int n = 0;
    CHECK(cudaGetDeviceCount(&n));
    std::vector<void*> src(n), dst(n);
    for (int d = 0; d < n; ++d) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaMalloc(&src[d], bytes));
        CHECK(cudaMalloc(&dst[d], bytes));
        CHECK(cudaMemset(src[d], 0x3C, bytes));
        CHECK(cudaMemset(dst[d], 0xC3, bytes));
        CHECK(cudaDeviceSynchronize());
    }
    for (int a = 0; a < n; ++a) {
        for (int b = a + 1; b < n; ++b) {
            set_peer(a, b, false);
            double staged[2] = {one_way(dst[b], b, src[a], a, bytes), one_way(dst[a], a, src[b], b, bytes)};
            double peer[2] = {-1, -1}, bidir = -1;
            bool on = set_peer(a, b, true);
            if (on) {
                peer[0] = one_way(dst[b], b, src[a], a, bytes);
                peer[1] = one_way(dst[a], a, src[b], b, bytes);
                bidir = both_ways(src.data(), dst.data(), a, b, bytes);
            }
            set_peer(a, b, false);
            for (int k = 0; k < 2; ++k) {
                printf("{\"src\": %d, \"dst\": %d, \"bytes\": %zu, \"peer_enabled\": %s, \"peer_gbs\": %.3f, "
                       "\"staged_gbs\": %.3f, \"bidir_gbs\": %.3f}\n", k ? b : a, k ? a : b, bytes,
                       on ? "true" : "false", peer[k], staged[k], bidir);
            }
        }
    }
    for (int d = 0; d < n; ++d) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaFree(src[d]));
        CHECK(cudaFree(dst[d]));
    }
    return 0;
}
