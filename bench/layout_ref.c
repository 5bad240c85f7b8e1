/* Native reference for `perfprobe layout`: split loads and AoS/SoA sums in C, to check perfprobe.
 *
 * split W OFFSET LINES REPS STEPS REPEATS: W-byte loads at OFFSET in each of LINES 64-byte lines, REPS
 *   times, in the loop of layout_kernels.throughput_asm (inline asm, the same instructions, registers
 *   and 64-byte loop alignment as the probe's kernel; four loads per iteration): ns/load; then a
 *   dependent chain over the same positions (line i -> line (i+1)*97 % LINES; each load's low 32 bits
 *   are the next offset), STEPS loads: ns/load. One untimed run of each, then REPEATS timed runs:
 *   prints the best throughput run and the median latency run, "<tp_ns> <lat_ns>".
 * page W AT REPS STEPS REPEATS: the same over 4 pages at byte AT of each page (AT = 4096 - W/2: split).
 * records BYTES K DRAM RUN_MS REPEATS FLUSH: one int64 field summed over N = BYTES/8/K records as AoS
 *   (N x K) and SoA (K x N), as the probe's measure._record_point: DRAM = 0: a calibrating pass, then
 *   REPEATS runs of the passes that take RUN_MS; DRAM = 1: REPEATS single passes, each after the set
 *   was evicted (clflushopt + mfence; FLUSH > 0: after reading a FLUSH-byte buffer instead).
 *   Prints the medians "<aos_ns> <soa_ns>" per record.
 * build: cc -O3 -march=native -DVEC_BYTES=64 -o layout_ref layout_ref.c       (timing: CLOCK_MONOTONIC)
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void sink_uint64_t(const char *p) { uint64_t v; memcpy(&v, p, sizeof v); __asm__ volatile("" :: "r"(v) : "memory"); }

/* The loop of perfprobe/kernels/layout_kernels.py's throughput_asm(W), line for line (`%%` for `%`;
 * tests/test_layout_method.py compares them): r8 base, rcx stride, rbx 3 x stride, rdi 4 x stride,
 * r9 count/4, r10 reps; each address loaded LOADS_PER_ADDRESS times a step. A template must be a
 * string literal, hence macros. */
#define LOADS_PER_ADDRESS 4
#define TP_ASM_4 ".p2align 6\n\t1:\n\tmov %%r9, %%rdx\n\tmov %%r8, %%rsi\n\t2:\n\tmovl (%%rsi), %%eax\n\tmovl (%%rsi,%%rcx), %%eax\n\tmovl (%%rsi,%%rcx,2), %%eax\n\tmovl (%%rsi,%%rbx), %%eax\n\tmovl (%%rsi), %%eax\n\tmovl (%%rsi,%%rcx), %%eax\n\tmovl (%%rsi,%%rcx,2), %%eax\n\tmovl (%%rsi,%%rbx), %%eax\n\tmovl (%%rsi), %%eax\n\tmovl (%%rsi,%%rcx), %%eax\n\tmovl (%%rsi,%%rcx,2), %%eax\n\tmovl (%%rsi,%%rbx), %%eax\n\tmovl (%%rsi), %%eax\n\tmovl (%%rsi,%%rcx), %%eax\n\tmovl (%%rsi,%%rcx,2), %%eax\n\tmovl (%%rsi,%%rbx), %%eax\n\tadd %%rdi, %%rsi\n\tdec %%rdx\n\tjnz 2b\n\tdec %%r10\n\tjnz 1b"
#define TP_ASM_8 ".p2align 6\n\t1:\n\tmov %%r9, %%rdx\n\tmov %%r8, %%rsi\n\t2:\n\tmovq (%%rsi), %%rax\n\tmovq (%%rsi,%%rcx), %%rax\n\tmovq (%%rsi,%%rcx,2), %%rax\n\tmovq (%%rsi,%%rbx), %%rax\n\tmovq (%%rsi), %%rax\n\tmovq (%%rsi,%%rcx), %%rax\n\tmovq (%%rsi,%%rcx,2), %%rax\n\tmovq (%%rsi,%%rbx), %%rax\n\tmovq (%%rsi), %%rax\n\tmovq (%%rsi,%%rcx), %%rax\n\tmovq (%%rsi,%%rcx,2), %%rax\n\tmovq (%%rsi,%%rbx), %%rax\n\tmovq (%%rsi), %%rax\n\tmovq (%%rsi,%%rcx), %%rax\n\tmovq (%%rsi,%%rcx,2), %%rax\n\tmovq (%%rsi,%%rbx), %%rax\n\tadd %%rdi, %%rsi\n\tdec %%rdx\n\tjnz 2b\n\tdec %%r10\n\tjnz 1b"
#define TP_ASM_16 ".p2align 6\n\t1:\n\tmov %%r9, %%rdx\n\tmov %%r8, %%rsi\n\t2:\n\tvmovdqu (%%rsi), %%xmm0\n\tvmovdqu (%%rsi,%%rcx), %%xmm0\n\tvmovdqu (%%rsi,%%rcx,2), %%xmm0\n\tvmovdqu (%%rsi,%%rbx), %%xmm0\n\tvmovdqu (%%rsi), %%xmm0\n\tvmovdqu (%%rsi,%%rcx), %%xmm0\n\tvmovdqu (%%rsi,%%rcx,2), %%xmm0\n\tvmovdqu (%%rsi,%%rbx), %%xmm0\n\tvmovdqu (%%rsi), %%xmm0\n\tvmovdqu (%%rsi,%%rcx), %%xmm0\n\tvmovdqu (%%rsi,%%rcx,2), %%xmm0\n\tvmovdqu (%%rsi,%%rbx), %%xmm0\n\tvmovdqu (%%rsi), %%xmm0\n\tvmovdqu (%%rsi,%%rcx), %%xmm0\n\tvmovdqu (%%rsi,%%rcx,2), %%xmm0\n\tvmovdqu (%%rsi,%%rbx), %%xmm0\n\tadd %%rdi, %%rsi\n\tdec %%rdx\n\tjnz 2b\n\tdec %%r10\n\tjnz 1b\n\tvzeroupper"
#define TP_ASM_32 ".p2align 6\n\t1:\n\tmov %%r9, %%rdx\n\tmov %%r8, %%rsi\n\t2:\n\tvmovdqu (%%rsi), %%ymm0\n\tvmovdqu (%%rsi,%%rcx), %%ymm0\n\tvmovdqu (%%rsi,%%rcx,2), %%ymm0\n\tvmovdqu (%%rsi,%%rbx), %%ymm0\n\tvmovdqu (%%rsi), %%ymm0\n\tvmovdqu (%%rsi,%%rcx), %%ymm0\n\tvmovdqu (%%rsi,%%rcx,2), %%ymm0\n\tvmovdqu (%%rsi,%%rbx), %%ymm0\n\tvmovdqu (%%rsi), %%ymm0\n\tvmovdqu (%%rsi,%%rcx), %%ymm0\n\tvmovdqu (%%rsi,%%rcx,2), %%ymm0\n\tvmovdqu (%%rsi,%%rbx), %%ymm0\n\tvmovdqu (%%rsi), %%ymm0\n\tvmovdqu (%%rsi,%%rcx), %%ymm0\n\tvmovdqu (%%rsi,%%rcx,2), %%ymm0\n\tvmovdqu (%%rsi,%%rbx), %%ymm0\n\tadd %%rdi, %%rsi\n\tdec %%rdx\n\tjnz 2b\n\tdec %%r10\n\tjnz 1b\n\tvzeroupper"

#define TP_RUN(I) do { \
        register long r8 __asm__("r8") = (long)a, r9 __asm__("r9") = count / 4, r10 __asm__("r10") = reps; \
        __asm__ volatile(TP_ASM_##I : "+r"(r10) : "r"(r8), "c"(stride), "b"(3 * stride), "D"(4 * stride), "r"(r9) \
                         : "rax", "rdx", "rsi", "xmm0", "memory", "cc"); } while (0)

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
    if (reps < 1 || count < 4) return 0;
    int64_t start = now_ns();
    if (w == 4) TP_RUN(4); else if (w == 8) TP_RUN(8); else if (w == 16) TP_RUN(16); else TP_RUN(32);
    return now_ns() - start;
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

static double minimum(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) if (v[i] < m) m = v[i];
    return m;
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* As the probe's throughput_runs(page)/page_latency: before each page-mode run, an aligned 8-byte load
 * in the page of the first and of the last byte of each access (the L1 DTLB holds both). */
static void touch(const char *a, long stride, long count, int w) {
    for (long j = 0; j < count; j++) {
        const char *p = a + j * stride, *q = p + w - 1;
        sink_uint64_t((const char *)((uintptr_t)p & ~(uintptr_t)4095));
        sink_uint64_t((const char *)((uintptr_t)q & ~(uintptr_t)4095));
    }
}

/* As the probe's measure._throughput and _latency: one untimed run of each (the same length), then
 * REPEATS timed runs, the best throughput and the median latency. A single short run straight after
 * memset() read a page split 10x cheaper than the steady state on the KVM guest (the first ~10 us
 * after the pages are written). */
static void timed_point(int w, const char *buf, long first, long stride, long count, long reps, long steps,
                        int repeats, double out[2]) {
    double t[64], l[64];
    if (repeats > 64) repeats = 64;
    int page = stride == 4096;
    if (page) touch(buf + first, stride, count, w);
    tp(w, buf + first, stride, count, reps);
    for (int i = 0; i < repeats; i++) {
        if (page) touch(buf + first, stride, count, w);
        t[i] = (double)tp(w, buf + first, stride, count, reps) / ((double)count * reps * LOADS_PER_ADDRESS);
    }
    if (page) touch(buf + first, stride, count, w);
    lat(w, buf, (uint32_t)first, steps);
    for (int i = 0; i < repeats; i++) {
        if (page) touch(buf + first, stride, count, w);
        l[i] = (double)lat(w, buf, (uint32_t)first, steps) / steps;
    }
    out[0] = minimum(t, repeats);   /* throughput: the best repeat, latency: the median (figures.statistic) */
    out[1] = median(l, repeats);
}

static void timed(int w, const char *buf, long first, long stride, long count, long reps, long steps, int repeats) {
    double out[2];
    timed_point(w, buf, first, stride, count, reps, steps, repeats, out);
    printf("%.4f %.4f\n", out[0], out[1]);
}

/* The record loops, in the shape numba's LLVM gives the probe's aos_sum/soa_sum (read from both
 * assemblies, docs/probes/layout.md "Records: the loops"):
 * AoS (stride K x 8 bytes, K >= 2): scalar, one accumulator carried across passes, unrolled 8 (LLVM
 *   keeps a vector version for a unit stride only, which K >= 2 never takes; no gathers), in
 *   LLVM's addressing and counter (aos_pass, inline asm);
 * SoA: VEC_BYTES-wide vpaddq from memory into 4 accumulators, base+index*8 addressing (LLVM's form;
 *   on Intel an indexed vpaddq is two uops where gcc's pointer form is one); the running total
 *   enters each pass in the first accumulator's low lane and leaves by the reduction (LLVM's
 *   vmovq %rbp,%xmm0 ... vmovq %xmm0,%rbp), so passes are chained through the reduction: at
 *   128 records (K = 16 in L1) that chain is most of a pass; adding the total after the reduction,
 *   as the C did, let passes overlap and read 30-40% less than numba. VEC_BYTES is the probe's soa_sum width on this host
 *   (bench_layout.py passes it: 64 where LLVM uses zmm, the Zen 4 guest; 32 where it prefers ymm,
 *   Sapphire/Emerald Rapids). The empty asm after each pass keeps gcc from merging passes. */
#ifndef VEC_BYTES
#define VEC_BYTES 32
#endif
typedef int64_t vec_t __attribute__((vector_size(VEC_BYTES)));
#define LANES (VEC_BYTES / 8)
#if VEC_BYTES == 64
#define OFF1 "64"
#define OFF2 "128"
#define OFF3 "192"
#define STEP "32"
#else
#define OFF1 "32"
#define OFF2 "64"
#define OFF3 "96"
#define STEP "16"
#endif

/* One AoS pass in LLVM's loop, instruction for instruction (numba's aos_sum for Zen 4 and
 * Sapphire Rapids alike): 8 records a step, the first two loads base and base+stride, then
 * base+=stride before each further load addressed (stride,base), two adds at the end, a counter
 * counting up to zero. gcc's own unrolled loop (a pointer add after every load, cmp+jne) read
 * 11-14% slower on the H200 Xeon at L1 and L2, where a record costs about one cycle. */
static inline int64_t aos_pass(const int64_t *a, long n, long k, int64_t t) {
    long m = n / 8 * 8, count = -m, stride = k * 8;
    const int64_t *p = a;
    if (m)
        __asm__ volatile(".p2align 4\n1:\n\t"
                         "addq (%[p]), %[t]\n\t"
                         "addq (%[p],%[s]), %[t]\n\t"
                         "addq %[s], %[p]\n\t"
                         "addq (%[s],%[p]), %[t]\n\taddq %[s], %[p]\n\t"
                         "addq (%[s],%[p]), %[t]\n\taddq %[s], %[p]\n\t"
                         "addq (%[s],%[p]), %[t]\n\taddq %[s], %[p]\n\t"
                         "addq (%[s],%[p]), %[t]\n\taddq %[s], %[p]\n\t"
                         "addq (%[s],%[p]), %[t]\n\taddq %[s], %[p]\n\t"
                         "addq (%[s],%[p]), %[t]\n\taddq %[s], %[p]\n\t"
                         "addq %[s], %[p]\n\t"
                         "addq $8, %[c]\n\t"
                         "jne 1b"
                         : [t] "+r"(t), [p] "+r"(p), [c] "+r"(count)
                         : [s] "r"(stride)
                         : "memory", "cc");
    for (long r = m; r < n; r++) t += a[r * k];
    return t;
}

__attribute__((noinline)) int64_t aos_sum(const int64_t *a, long n, long k, long reps, int64_t *s) {
    int64_t t = 0, start = now_ns();
    for (long p = 0; p < reps; p++) {
        t = aos_pass(a, n, k, t);
        __asm__ volatile("" : "+r"(t));
    }
    *s = t; return now_ns() - start;
}

static inline int64_t soa_pass(const int64_t *row, long n, int64_t t) {
    vec_t a0 = {t}, a1 = {0}, a2 = {0}, a3 = {0};
    long i = 0, m = n / (4 * LANES) * (4 * LANES);
    if (m)
        __asm__ volatile(".p2align 4\n1:\n\t"
                         "vpaddq (%[p],%[i],8), %[a0], %[a0]\n\t"
                         "vpaddq " OFF1 "(%[p],%[i],8), %[a1], %[a1]\n\t"
                         "vpaddq " OFF2 "(%[p],%[i],8), %[a2], %[a2]\n\t"
                         "vpaddq " OFF3 "(%[p],%[i],8), %[a3], %[a3]\n\t"
                         "addq $" STEP ", %[i]\n\tcmpq %[i], %[m]\n\tjne 1b"
                         : [a0] "+v"(a0), [a1] "+v"(a1), [a2] "+v"(a2), [a3] "+v"(a3), [i] "+r"(i)
                         : [p] "r"(row), [m] "r"(m) : "cc", "memory");
    /* LLVM's reduction: (a0 + a1) + (a2 + a3), then halves added down to one lane (vextracti64x4,
     * vextracti128, vpshufd $238); gcc's own extracted and added the lanes one by one. */
    vec_t v = (a0 + a1) + (a2 + a3);
#if VEC_BYTES == 64
    __m256i h = _mm256_add_epi64(_mm512_castsi512_si256((__m512i)v), _mm512_extracti64x4_epi64((__m512i)v, 1));
#else
    __m256i h = (__m256i)v;
#endif
    __m128i x = _mm_add_epi64(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    x = _mm_add_epi64(x, _mm_shuffle_epi32(x, 238));
    t = _mm_cvtsi128_si64(x);
    for (; i < n; i++) t += row[i];
    return t;
}

__attribute__((noinline)) int64_t soa_sum(const int64_t *row, long n, long reps, int64_t *s) {
    int64_t t = 0, start = now_ns();
    for (long p = 0; p < reps; p++) {
        t = soa_pass(row, n, t);
        __asm__ volatile("" : "+r"(t));
    }
    *s = t; return now_ns() - start;
}

/* As layout_kernels.record_buffer: an anonymous mapping advised MADV_HUGEPAGE, used from its first
 * 2 MiB boundary, every word written: both sides' record sets lie on the same kind of pages
 * (numpy's own 16-byte-aligned allocation put SoA rows 16-48 bytes off a line: split vector loads). */
static int64_t *record_buffer(long bytes) {
    long huge = 2L << 20, len = (bytes + huge - 1) / huge * huge;
    char *m = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); exit(1); }
    int64_t *a = (int64_t *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(a, len, MADV_HUGEPAGE);
    for (long i = 0; i < len / 8; i++) a[i] = 1;
    return a;
}

/* As layout_kernels.evict: clflushopt of every line of the set, then mfence. */
static void evict(const void *p, long bytes) {
#ifdef __CLFLUSHOPT__
    for (uintptr_t a = (uintptr_t)p & ~(uintptr_t)63; a < (uintptr_t)p + bytes; a += 64) _mm_clflushopt((void *)a);
    _mm_mfence();
#else
    (void)p; (void)bytes;
#endif
}

static long passes(double ns_per_pass, double run_ms) {
    long p = (long)(run_ms * 1e6 / (ns_per_pass > 1.0 ? ns_per_pass : 1.0));
    return p > 1 ? p : 1;
}

static int64_t record_run(int lay, const int64_t *a, long n, long k, long reps) {
    int64_t s;
    return lay ? soa_sum(a, n, reps, &s) : aos_sum(a, n, k, reps, &s);
}

/* One layout's point, as measure._record_point: see the header. */
static double record_point(int lay, const int64_t *a, long n, long k, int dram, double run_ms, int repeats,
                           const int64_t *f, long flush) {
    double t[64];
    if (repeats > 64) repeats = 64;
    static volatile int64_t sink;
    if (dram) {
        record_run(lay, a, 64, k, 1);   /* the probe's compile call, on the first 64 records */
        for (int i = 0; i < repeats; i++) {
            if (f) { int64_t x = 0; for (long j = 0; j < flush / 8; j += 8) x += f[j]; sink = x; (void)sink; }
            else evict(a, n * k * 8);
            t[i] = (double)record_run(lay, a, n, k, 1) / n;
        }
    } else {
        long reps = passes((double)record_run(lay, a, n, k, 1), run_ms);
        for (int i = 0; i < repeats; i++) t[i] = (double)record_run(lay, a, n, k, reps) / (reps * n);
    }
    return median(t, repeats);
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
    } else if (argc >= 8 && !strcmp(argv[1], "records")) {
        long bytes = atol(argv[2]), k = atol(argv[3]), flush = atol(argv[7]);
        int dram = atoi(argv[4]), repeats = atoi(argv[6]);
        double run_ms = atof(argv[5]);
        long n = bytes / 8 / k / 64 * 64;
        if (n < 64) n = 64;
        int64_t *a = record_buffer(n * k * 8);
        int64_t *f = dram && flush > 0 ? record_buffer(flush) : NULL;
        double aos = record_point(0, a, n, k, dram, run_ms, repeats, f, flush);
        double soa = record_point(1, a, n, k, dram, run_ms, repeats, f, flush);
        printf("%.5f %.5f\n", aos, soa);
    } else {
        fprintf(stderr, "usage: layout_ref split|page|records ... (see the header)\n");
        return 2;
    }
    return 0;
}
