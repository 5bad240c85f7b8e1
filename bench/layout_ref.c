/* Native reference for `perfprobe layout`: split loads and AoS/SoA sums in C, to check perfprobe.
 *
 * split W OFFSET LINES REPS STEPS REPEATS: W-byte loads (memcpy into a register or vector, kept by an empty
 *   asm with a memory clobber, as LLVM treats the probe's asm: no load is hoisted; four per iteration) at OFFSET in each of LINES 64-byte lines, REPS times: ns/load; then a
 *   dependent chain over the same positions (line i -> line (i+1)*97 % LINES; each load's low 32 bits
 *   are the next offset), STEPS loads: ns/load. One untimed run of each, then REPEATS timed runs:
 *   prints the medians "<tp_ns> <lat_ns>".
 * page W AT REPS STEPS REPEATS: the same over 4 pages at byte AT of each page (AT = 4096 - W/2: split).
 * records BYTES K FLUSH REPS: one int64 field summed over N = BYTES/8/K records as AoS (N x K) and
 *   SoA (K x N); FLUSH > 0 reads a FLUSH-byte buffer before each run (DRAM). Prints "<aos_ns> <soa_ns>"
 *   per record.
 * build: cc -O3 -march=native -DVEC_BYTES=64 -o layout_ref layout_ref.c       (timing: CLOCK_MONOTONIC)
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define SINK(T, CON) static inline void sink_##T(const char *p) { T v; memcpy(&v, p, sizeof v); __asm__ volatile("" :: CON(v) : "memory"); }
SINK(uint32_t, "r")
SINK(uint64_t, "r")
SINK(__m128i, "x")
SINK(__m256i, "x")

#define TP(T) static int64_t tp_##T(const char *a0, long stride, long count, long reps) { \
    int64_t start = now_ns(); \
    for (long r = 0; r < reps; r++) { const char *a = a0; \
        for (long j = 0; j < count / 4; j++) { sink_##T(a); sink_##T(a + stride); sink_##T(a + 2 * stride); \
            sink_##T(a + 3 * stride); a += 4 * stride; } } \
    return now_ns() - start; }
TP(uint32_t) TP(uint64_t) TP(__m128i) TP(__m256i)

/* The next offset, as the probe's _load_next takes it: the full-width value through a register
 * (so the load is not narrowed to the 4 bytes used), then its low 32 bits (vmovq + a 32-bit mov for
 * 16/32 bytes; a 32-bit mov for 8). The load itself is inline asm with a base+index address, the
 * form LLVM emits for the probe; base in rsi and index in rdi (with r13 or rbp as the base the
 * encoding needs a disp8: gcc emitted 0x0(%r13,%rbx,1), a cycle more on Zen 4). */
static inline uint32_t next_of(const char *base, uint32_t off, int w) {
    uint64_t o = off;
    if (w == 4) { uint32_t v; __asm__ volatile("movl (%1,%2), %0" : "=r"(v) : "S"(base), "D"(o) : "memory"); return v; }
    if (w == 8) { uint64_t v; __asm__ volatile("movq (%1,%2), %0" : "=r"(v) : "S"(base), "D"(o) : "memory"); return (uint32_t)v; }
    if (w == 16) { __m128i v; __asm__ volatile("vmovdqu (%1,%2), %0" : "=x"(v) : "S"(base), "D"(o) : "memory");
        return (uint32_t)(uint64_t)_mm_cvtsi128_si64(v); }
    __m256i v; __asm__ volatile("vmovdqu (%1,%2), %0" : "=x"(v) : "S"(base), "D"(o) : "memory");
    return (uint32_t)(uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(v));
}

#define LAT(W) static int64_t lat_##W(const char *base, uint32_t first, long steps, uint32_t *last) { \
    uint32_t off = first; int64_t start = now_ns(); \
    for (long i = 0; i < steps; i++) off = next_of(base, off, W); \
    *last = off; return now_ns() - start; }
LAT(4) LAT(8) LAT(16) LAT(32)

static int64_t tp(int w, const char *a, long stride, long count, long reps) {
    return w == 4 ? tp_uint32_t(a, stride, count, reps) : w == 8 ? tp_uint64_t(a, stride, count, reps)
         : w == 16 ? tp___m128i(a, stride, count, reps) : tp___m256i(a, stride, count, reps);
}

static int64_t lat(int w, const char *base, uint32_t first, long steps) {
    uint32_t last;
    int64_t ns = w == 4 ? lat_4(base, first, steps, &last) : w == 8 ? lat_8(base, first, steps, &last)
               : w == 16 ? lat_16(base, first, steps, &last) : lat_32(base, first, steps, &last);
    static volatile uint32_t keep;
    keep = last;
    (void)keep;
    return ns;
}

static void chain(char *buf, const long *pos, long n) {
    for (long i = 0; i < n; i++) { uint32_t next = (uint32_t)pos[(i + 1) % n]; memcpy(buf + pos[i], &next, 4); }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* As the probe's measure._throughput and _latency: one untimed run of each (the same length), then
 * REPEATS timed runs, medians. A single short run straight after memset() read a page split 10x
 * cheaper than the steady state on the KVM guest (the first ~10 us after the pages are written). */
/* As the probe's page_throughput/page_latency: before each page-mode run, an aligned 8-byte load
 * in the page of the first and of the last byte of each access (the L1 DTLB holds both). */
static void touch(const char *a, long stride, long count, int w) {
    for (long j = 0; j < count; j++) {
        const char *p = a + j * stride, *q = p + w - 1;
        sink_uint64_t((const char *)((uintptr_t)p & ~(uintptr_t)4095));
        sink_uint64_t((const char *)((uintptr_t)q & ~(uintptr_t)4095));
    }
}

static void timed(int w, const char *buf, long first, long stride, long count, long reps, long steps, int repeats) {
    double t[64], l[64];
    if (repeats > 64) repeats = 64;
    int page = stride == 4096;
    if (page) touch(buf + first, stride, count, w);
    tp(w, buf + first, stride, count, reps);
    for (int i = 0; i < repeats; i++) {
        if (page) touch(buf + first, stride, count, w);
        t[i] = (double)tp(w, buf + first, stride, count, reps) / (count * reps);
    }
    if (page) touch(buf + first, stride, count, w);
    lat(w, buf, (uint32_t)first, steps);
    for (int i = 0; i < repeats; i++) {
        if (page) touch(buf + first, stride, count, w);
        l[i] = (double)lat(w, buf, (uint32_t)first, steps) / steps;
    }
    printf("%.4f %.4f\n", median(t, repeats), median(l, repeats));
}

/* The loops numba's LLVM emits for the probe's aos_sum/soa_sum (read from their assembly with
 * perfprobe.kernels.compiled.innermost_loops), written out so gcc runs the same code:
 * AoS (stride K x 8 bytes, K >= 2): scalar, one accumulator, unrolled 8 (LLVM keeps its vector
 *   version of this loop for a unit stride only, and gathers for none);
 * SoA: VEC_BYTES-wide vector adds into 4 accumulators (LLVM's interleave of 4), a scalar tail.
 *   VEC_BYTES is the probe's soa_sum vector width on this host (bench_layout.py passes it: 64 with
 *   zmm on AVX-512 hosts where LLVM prefers 512-bit vectors, 32 elsewhere). */
#ifndef VEC_BYTES
#define VEC_BYTES 32
#endif
typedef int64_t vec_t __attribute__((vector_size(VEC_BYTES)));
#define LANES (VEC_BYTES / 8)

__attribute__((noinline)) int64_t aos_sum(const int64_t *a, long n, long k, int64_t *s) {
    int64_t t = 0, start = now_ns();
#pragma GCC unroll 8
    for (long r = 0; r < n; r++) t += a[r * k];
    *s = t; return now_ns() - start;
}

static inline vec_t load_vec(const int64_t *p) { vec_t v; memcpy(&v, p, sizeof v); return v; }

__attribute__((noinline)) int64_t soa_sum(const int64_t *row, long n, int64_t *s) {
    int64_t start = now_ns();
    vec_t acc[4] = {{0}, {0}, {0}, {0}};
    long r = 0;
    for (; r + 4 * LANES <= n; r += 4 * LANES)
        for (int j = 0; j < 4; j++) acc[j] += load_vec(row + r + j * LANES);
    vec_t v = acc[0] + acc[1] + acc[2] + acc[3];
    int64_t t = 0;
    for (int i = 0; i < LANES; i++) t += v[i];
    for (; r < n; r++) t += row[r];
    *s = t; return now_ns() - start;
}

int main(int argc, char **argv) {
    if (argc >= 8 && !strcmp(argv[1], "split")) {
        int w = atoi(argv[2]); long off = atol(argv[3]), lines = atol(argv[4]), reps = atol(argv[5]), steps = atol(argv[6]);
        int repeats = atoi(argv[7]);
        char *buf = aligned_alloc(4096, (lines + 2) * 64 + 4096);
        memset(buf, 0, (lines + 2) * 64);
        long *pos = malloc(lines * sizeof *pos);
        for (long i = 0; i < lines; i++) pos[i] = ((i * 97) % lines) * 64 + off;
        chain(buf, pos, lines);
        timed(w, buf, pos[0], 64, lines, reps, steps, repeats);
    } else if (argc >= 7 && !strcmp(argv[1], "page")) {
        int w = atoi(argv[2]); long at = atol(argv[3]), reps = atol(argv[4]), steps = atol(argv[5]);
        int repeats = atoi(argv[6]);
        char *buf = aligned_alloc(4096, 6 * 4096);
        memset(buf, 0, 6 * 4096);
        long pos[4];
        for (int i = 0; i < 4; i++) pos[i] = 4096 + at + 4096 * i;
        chain(buf, pos, 4);
        timed(w, buf, pos[0], 4096, 4, reps, steps, repeats);
    } else if (argc >= 6 && !strcmp(argv[1], "records")) {
        long bytes = atol(argv[2]), k = atol(argv[3]), flush = atol(argv[4]), reps = atol(argv[5]);
        long n = bytes / 8 / k / 64 * 64;
        int64_t *a = aligned_alloc(4096, (n * k * 8 + 4095) / 4096 * 4096), s, sink = 0;
        for (long i = 0; i < n * k; i++) a[i] = 1;
        int64_t *f = flush ? aligned_alloc(4096, (flush + 4095) / 4096 * 4096) : NULL;
        if (f) for (long i = 0; i < flush / 8; i++) f[i] = 1;
        double ns[2] = {0, 0};
        for (int lay = 0; lay < 2; lay++) {
            if (!f) { if (lay) soa_sum(a, n, &s); else aos_sum(a, n, k, &s); }
            int64_t total = 0;
            for (long r = 0; r < reps; r++) {
                if (f) for (long i = 0; i < flush / 8; i += 8) sink += ((volatile int64_t *)f)[i];
                total += lay ? soa_sum(a, n, &s) : aos_sum(a, n, k, &s);
            }
            ns[lay] = (double)total / (reps * n);
        }
        printf("%.4f %.4f\n", ns[0], ns[1] + 0 * (double)sink);
    } else {
        fprintf(stderr, "usage: layout_ref split|page|records ... (see the header)\n");
        return 2;
    }
    return 0;
}
