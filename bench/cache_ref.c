/* cache_ref.c: native reference for `perfprobe cache` (bench/bench_cache.py builds and runs it).
 *
 *   cache_ref chase SIZE_BYTES LINE_BYTES HUGE(0|1) REPEATS RUN_MS
 *       ns per dependent load over a random cyclic permutation of SIZE/LINE lines (one pointer a
 *       line, built by random insertion with splitmix64, as perfprobe's kernel does), on an mmap'd
 *       buffer advised MADV_HUGEPAGE (HUGE=1) or MADV_NOHUGEPAGE (HUGE=0).
 *   cache_ref read  ONE_BYTES EACH_BYTES THREADS REPEATS RUN_MS
 *   cache_ref triad ONE_BYTES EACH_BYTES THREADS REPEATS RUN_MS
 *       GB/s: one thread over ONE_BYTES, then THREADS OpenMP threads each over its own EACH_BYTES
 *       share (first touched by that thread). Triad a = b + s*c counts 24 bytes an element.
 *
 *   cache_ref sweep read|triad TOTAL_BYTES 1,2,4,... REPEATS RUN_MS
 *       GB/s at each thread count over TOTAL_BYTES split in equal contiguous shares, on arrays
 *       allocated for that count and first touched share by share by the thread that uses it
 *       (STREAM). Threads are placed by OpenMP: run with OMP_PROC_BIND=close OMP_PLACES=cores
 *       (one thread a physical core, filled in order), as bench/bench_cache.py --manycore does.
 *
 * Prints one JSON object: {"median": ..., "min": ..., "max": ...} (chase),
 * {"1t": {...}, "all": {...}} (read, triad) or {"threads": [...], "gbs": [{...}, ...]} (sweep).
 * Build: cc -O3 -march=native -mprefer-vector-width=256 -fopenmp.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAXREP 1000
#define HUGE_ALIGN (2u << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_stats(const char *key, double *v, int n, const char *tail) {
    qsort(v, n, sizeof *v, cmp);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (key) printf("\"%s\": ", key);
    printf("{\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}%s", med, v[0], v[n - 1], tail);
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static char *page_buffer(size_t bytes, int huge, void **map, size_t *map_len) {
    *map_len = bytes + HUGE_ALIGN;
    *map = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (*map == MAP_FAILED) { perror("mmap"); exit(1); }
    madvise(*map, *map_len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    uintptr_t p = (uintptr_t)*map;
    return (char *)((p + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
}

/* Random insertion: line i goes after a random line j < i; always one cycle. */
static void build_cycle(char *buf, size_t n, size_t line) {
    uint64_t state = 1;
    *(void **)buf = buf;
    for (size_t i = 1; i < n; i++) {
        char *j = buf + ((((splitmix64(&state) >> 32) * (uint64_t)i) >> 32) * line);
        char *me = buf + i * line;
        *(void **)me = *(void **)j;
        *(void **)j = me;
    }
}

static void *chase(void *p, long steps) {
    for (long i = 0; i < steps; i++) p = *(void **)p;
    return p;
}

static int do_chase(size_t size, size_t line, int huge, int repeats, double run_ms) {
    void *map; size_t map_len;
    /* at least one huge page: a smaller mapping cannot hold an aligned one (random 4K/2M pages) */
    char *buf = page_buffer(size < HUGE_ALIGN ? HUGE_ALIGN : size, huge, &map, &map_len);
    size_t n = size / line;
    build_cycle(buf, n, line);
    void *p = chase(buf, n < (1u << 20) ? (long)n : (1l << 20));
    long steps = 4096;
    for (;;) {  /* grow until a run lasts a quarter of run_ms, then scale to run_ms */
        double t = now_s(); p = chase(p, steps); t = now_s() - t;
        if (t >= run_ms * 1e-3 / 4) { steps = (long)(steps * run_ms * 1e-3 / t) + 1; break; }
        steps *= 8;
    }
    double v[MAXREP];
    for (int r = 0; r < repeats; r++) {
        double t = now_s(); p = chase(p, steps); v[r] = (now_s() - t) * 1e9 / steps;
    }
    print_stats(NULL, v, repeats, p == NULL ? " \n" : "\n");
    munmap(map, map_len);
    return 0;
}

/* Read by loads alone, as perfprobe's read_loads (perfprobe/kernels/cache_kernels.py): vectors as
 * wide as the CPU's widest (zmm with AVX-512, ymm with AVX, else xmm) OR'ed into eight independent
 * accumulators, so two loads a cycle never wait on an OR; the bits come back, so no load can be
 * dropped. Built with -mprefer-vector-width=256, which leaves these explicit vectors at their width
 * and keeps GCC's vectorised triad at 256 bits, as LLVM gives numba's. */
#if defined(__AVX512F__)
#define VECTOR_BYTES 64
#elif defined(__AVX__)
#define VECTOR_BYTES 32
#else
#define VECTOR_BYTES 16
#endif
typedef long long vload __attribute__((vector_size(VECTOR_BYTES)));

static uint64_t read_loads(const double *a, size_t n, long reps) {
    const size_t lanes = VECTOR_BYTES / 8, block = 8 * lanes;
    uint64_t total = 0;
    for (long r = 0; r < reps; r++) {
        __asm__ volatile("" ::: "memory"); /* each repeat really reads the array again */
        vload s[8] = {{0}}, x;
        size_t i = 0;
        for (; i + block <= n; i += block)
            for (int k = 0; k < 8; k++) { memcpy(&x, a + i + lanes * k, VECTOR_BYTES); s[k] |= x; }
        vload u = ((s[0] | s[1]) | (s[2] | s[3])) | ((s[4] | s[5]) | (s[6] | s[7]));
        uint64_t t = 0, w;
        for (size_t l = 0; l < lanes; l++) t |= (uint64_t)u[l];
        for (; i < n; i++) { memcpy(&w, a + i, 8); t |= w; }
        total |= t;
    }
    return total;
}

static void triad(double *a, const double *b, const double *c, double s, size_t n, long reps) {
    for (long r = 0; r < reps; r++) {
#pragma GCC unroll 4
#pragma GCC ivdep
        for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        __asm__ volatile("" ::: "memory");
    }
}

static double sink;
static volatile uint64_t read_sink; /* volatile: the loads' bits are kept, never dropped */

/* one run of `reps` repeats: threads==0 means one thread on the first `one` elements */
static void run_kernel(int is_triad, double *a, double *b, double *c, size_t one, size_t each,
                       int threads, long reps) {
    if (threads == 0) {
        if (is_triad) triad(a, b, c, 3.0, one, reps); else read_sink |= read_loads(a, one, reps);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        size_t lo = (size_t)omp_get_thread_num() * each;
        if (is_triad) triad(a + lo, b + lo, c + lo, 3.0, each, reps);
        else {
            uint64_t s = read_loads(a + lo, each, reps);
#pragma omp critical
            read_sink |= s;
        }
    }
}

static void time_rate(int is_triad, double *a, double *b, double *c, size_t one, size_t each,
                      int threads, int repeats, double run_ms, double *out) {
    if (threads && run_ms < 20) run_ms = 20; /* as perfprobe: one late thread delays a region */
    size_t elems = threads ? each * threads : one;
    double bytes = elems * (is_triad ? 24.0 : 8.0);
    long reps = (long)((64 << 20) / bytes);
    if (reps < 1) reps = 1;
    run_kernel(is_triad, a, b, c, one, each, threads, 1);
    for (;;) {
        double t = now_s(); run_kernel(is_triad, a, b, c, one, each, threads, reps); t = now_s() - t;
        if (t >= run_ms * 1e-3 / 4) { reps = (long)(reps * run_ms * 1e-3 / t) + 1; break; }
        reps *= 8;
    }
    for (int r = 0; r < repeats; r++) {
        double t = now_s(); run_kernel(is_triad, a, b, c, one, each, threads, reps); t = now_s() - t;
        out[r] = bytes * reps / t / 1e9;
    }
}

static int do_bandwidth(int is_triad, size_t one_bytes, size_t each_bytes, int threads,
                        int repeats, double run_ms) {
    size_t width = is_triad ? 24 : 8;
    size_t one = one_bytes / width, each = each_bytes / width;
    size_t n = one > each * threads ? one : each * threads;
    double *arr[3], *base[3];
    for (int k = 0; k < (is_triad ? 3 : 1); k++) {
        /* arrays k start k*1088 bytes past a 2 MiB boundary: all at the same offset modulo 4 KiB,
         * the stores of a[i] would falsely alias the loads of b[i] and c[i] (4K aliasing) */
        size_t len = (n * sizeof(double) + 2 * HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN;
        base[k] = aligned_alloc(HUGE_ALIGN, len);
        madvise(base[k], len, MADV_HUGEPAGE); /* as numpy does for large arrays */
        arr[k] = base[k] + k * 136;
#pragma omp parallel for schedule(static) num_threads(threads)
        for (size_t i = 0; i < n; i++) arr[k][i] = k;
    }
    if (!is_triad) arr[1] = arr[2] = arr[0];
    double v1[MAXREP], vall[MAXREP];
    time_rate(is_triad, arr[0], arr[1], arr[2], one, each, 0, repeats, run_ms, v1);
    time_rate(is_triad, arr[0], arr[1], arr[2], one, each, threads, repeats, run_ms, vall);
    printf("{");
    print_stats("1t", v1, repeats, ", ");
    print_stats("all", vall, repeats, "}\n");
    for (int k = 0; k < (is_triad ? 3 : 1); k++) free(base[k]);
    return 0;
}

/* arrays k start k*1088 bytes past a 2 MiB boundary (4K aliasing, see do_bandwidth); share t of
 * `each` elements first touched by thread t of a team of `threads` */
static double *sweep_array(int k, size_t each, int threads, double **base) {
    size_t n = each * threads;
    size_t len = (n * sizeof(double) + 2 * HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN;
    *base = aligned_alloc(HUGE_ALIGN, len);
    madvise(*base, len, MADV_HUGEPAGE);
    double *a = *base + k * 136;
#pragma omp parallel num_threads(threads)
    {
        size_t lo = (size_t)omp_get_thread_num() * each;
        for (size_t i = lo; i < lo + each; i++) a[i] = k;
    }
    return a;
}

static int do_sweep(int is_triad, size_t total_bytes, const char *list, int repeats, double run_ms) {
    size_t width = is_triad ? 24 : 8;
    char *copy = strdup(list), *save = NULL;
    int first = 1;
    printf("{\"kind\": \"%s\", \"runs\": [", is_triad ? "triad" : "read");
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int threads = atoi(tok);
        if (threads < 1) continue;
        size_t each = (total_bytes / width / 16 * 16) / threads;
        double *arr[3], *base[3] = {NULL, NULL, NULL}, v[MAXREP];
        for (int k = 0; k < (is_triad ? 3 : 1); k++) arr[k] = sweep_array(k, each, threads, &base[k]);
        if (!is_triad) arr[1] = arr[2] = arr[0];
        time_rate(is_triad, arr[0], arr[1], arr[2], 0, each, threads, repeats, run_ms, v);
        printf("%s{\"threads\": %d, \"gbs\": ", first ? "" : ", ", threads);
        print_stats(NULL, v, repeats, "}");
        first = 0;
        for (int k = 0; k < 3; k++) free(base[k]);
    }
    printf("]}\n");
    free(copy);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s chase SIZE LINE HUGE REPEATS RUN_MS | read|triad ONE EACH THREADS REPEATS RUN_MS"
                " | sweep read|triad TOTAL 1,2,4,... REPEATS RUN_MS\n", argv[0]);
        return 2;
    }
    size_t x = strtoull(argv[2], NULL, 10), y = strtoull(argv[3], NULL, 10);
    int z = atoi(argv[4]), repeats = atoi(argv[5]);
    double run_ms = atof(argv[6]);
    if (repeats < 1 || repeats > MAXREP) repeats = 5;
    if (!strcmp(argv[1], "sweep")) return do_sweep(!strcmp(argv[2], "triad"), y, argv[4], repeats, run_ms);
    if (!strcmp(argv[1], "chase")) return do_chase(x, y, z, repeats, run_ms);
    if (!strcmp(argv[1], "read")) return do_bandwidth(0, x, y, z, repeats, run_ms);
    if (!strcmp(argv[1], "triad")) return do_bandwidth(1, x, y, z, repeats, run_ms);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
