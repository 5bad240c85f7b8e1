// Native reference for `perfprobe alloc` (bench/bench_alloc.py): the same loops as
// perfprobe/kernels/alloc_kernels.py, in C (-O2, pthreads), built as a shared object
// (liballoc_ref.so, -fPIC -shared) that bench/alloc_ref_main.c runs:
//
//   alloc_ref THREADS ITERS TOUCH_BYTES COPY_BYTES...
//
// Why a shared object: the loader maps it next to libc, as numba's JIT code lies next to libc, so
// the calls to malloc and free are near calls on both sides. From a PIE executable's own text
// (0x55..., libc at 0x7f..., terabytes away) the same loop read ~1 ns more per malloc+free pair on
// the 2-vCPU Zen 4 guest (8.1-8.4 against 7.0-7.3 ns, five runs each): the call site's distance,
// not the allocator's cost.
//
// prints "name value" lines: malloc+free pairs of 64 B and the mixed pattern (1024 live blocks,
// 16 B-4 KiB, the kernels' xorshift and size draw; filled and warmed up before the barrier, only the
// ops timed) on 1 and THREADS pinned threads (median of the threads' ns per op, after a spin
// barrier), malloc and free called through function pointers as the kernels call them; a 64 B
// free-list pool (pop, touch, push, with the kernels' compiler barrier); first touch of fresh 4 KiB
// pages (MADV_NOHUGEPAGE) and of 2 MiB pages (MADV_HUGEPAGE, 2 MiB aligned), munmap outside the
// timed region; memcpy GB/s at each COPY_BYTES (the buffers madvised as numpy madvises its arrays).
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SLOTS 1024
#define PAGE 4096
#define HUGE (2u << 20)
#define MIXED_WARMUP 64  // untimed mixed ops per slot (the kernels' MIXED_WARMUP)

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint64_t xorshift(uint64_t x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

static inline size_t mixed_size(uint64_t r) {
    uint64_t k = ((r >> 3) & 0xFFFF) % 9, base = 16u << k;
    uint64_t size = base + ((r >> 16) & 0xFFFFFFFF) % base;
    return size < 4096 ? size : 4096;
}

static void poke(void *p, int64_t v) { *(volatile char *)p = (char)v; }

// malloc and free are called through pointers held in registers, as the kernels call them (through
// the addresses ctypes gives): a direct call goes through the PLT stub, one more indirect jump per
// call, ~0.5 ns a call here, which is the call site's cost, not the allocator's.
void *(*volatile use_malloc)(size_t) = malloc;
void (*volatile use_free)(void *) = free;

static int64_t pairs(size_t size, long iters) {
    void *(*alloc)(size_t) = use_malloc;
    void (*release)(void *) = use_free;
    int64_t t = now_ns();
    for (long i = 0; i < iters; i++) {
        void *p = alloc(size);
        poke(p, i);
        release(p);
    }
    return now_ns() - t;
}

// The mixed pattern in three steps, as the kernels split it: fill the working set, ops (untimed
// warm-up until the heap has its steady size, then timed), free the working set.
static __thread void *slots[SLOTS];

static uint64_t mixed_fill(uint64_t seed) {
    uint64_t r = seed;
    for (int j = 0; j < SLOTS; j++) {
        r = xorshift(r);
        slots[j] = use_malloc(mixed_size(r));
        poke((char *)slots[j] + 8, j);
    }
    return r;
}

static uint64_t mixed_ops(long iters, uint64_t r) {
    void *(*alloc)(size_t) = use_malloc;
    void (*release)(void *) = use_free;
    for (long i = 0; i < iters; i++) {
        r = xorshift(r);
        uint64_t j = ((r >> 24) & 0xFFFFFFFF) % SLOTS;
        size_t size = mixed_size(r);
        release(slots[j]);
        char *p = alloc(size);
        poke(p + size - 1, i);
        slots[j] = p;
    }
    return r;
}

static void mixed_drain(void) {
    for (int j = 0; j < SLOTS; j++) use_free(slots[j]);
}

static int64_t pool_pairs(size_t block, long iters) {
    char *buf = aligned_alloc(64, 64 * block);
    for (int i = 0; i < 63; i++) *(char **)(buf + i * block) = buf + (i + 1) * block;
    *(char **)(buf + 63 * block) = NULL;
    char *head = buf;
    int64_t t = now_ns();
#if defined(__x86_64__)
    // The kernel's loop as LLVM emits it (perfprobe/kernels/alloc_kernels.py `_pairs`, kind 1; read
    // with inspect_asm for Zen 4 and Sapphire Rapids): load the next pointer, the byte store, store
    // it back, one 16-byte-aligned loop. gcc's loop has the same three memory operations but other
    // counter and alignment code; on the H200 Xeon that read 0.50 ns a pair against the kernel's
    // 0.40 (a pair is about one cycle there, so the loop's shape is the figure).
    if (iters > 0) {
        long left = iters + 1;
        char *p = head;
        __asm__ volatile(
            "xorl %%eax, %%eax\n\t"
            ".p2align 4\n"
            "1:\n\t"
            "movq (%[p]), %%rcx\n\t"
            "movb %%al, 8(%[p])\n\t"
            "incb %%al\n\t"
            "movq %%rcx, (%[p])\n\t"
            "decq %[left]\n\t"
            "cmpq $1, %[left]\n\t"
            "ja 1b\n\t"
            : [left] "+r"(left)
            : [p] "r"(p)
            : "rax", "rcx", "memory", "cc");
    }
#else
    for (long i = 0; i < iters; i++) {
        char *p = head;
        head = *(char *volatile *)p;  // volatile: loaded before the poke, as the kernel orders it
        poke(p + 8, i);
        __asm__ volatile("" ::: "memory");
        *(char *volatile *)p = head;
        head = p;
        __asm__ volatile("" ::: "memory");
    }
#endif
    int64_t e = now_ns() - t;
    free(buf);
    return e;
}

struct job { int kind, cpu, parties; long iters; atomic_long *ready; int64_t ns; };

static void *worker(void *arg) {
    struct job *j = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(j->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    uint64_t r = 0;
    if (j->kind == 0) {
        pairs(64, 256);
    } else {
        r = mixed_ops((long)MIXED_WARMUP * SLOTS, mixed_fill(0x1E3779B97F4A7C15ull + j->cpu));
    }
    atomic_fetch_add(j->ready, 1);
    while (atomic_load(j->ready) < j->parties) {}
    if (j->kind == 0) {
        j->ns = pairs(64, j->iters);
    } else {
        int64_t t = now_ns();
        mixed_ops(j->iters, r);
        j->ns = now_ns() - t;
        mixed_drain();
    }
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double threaded(int kind, int n, const int *cpus, long iters) {
    pthread_t th[256];
    struct job jobs[256];
    double per[256];
    atomic_long ready = 0;
    for (int i = 0; i < n; i++) {
        jobs[i] = (struct job){kind, cpus[i], n, iters, &ready, 0};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        per[i] = (double)jobs[i].ns / iters;
    }
    qsort(per, n, sizeof per[0], cmp);
    return per[n / 2];
}

static char *map(size_t len, size_t align) {
    char *raw = mmap(NULL, len + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *start = align ? (char *)(((uintptr_t)raw + align - 1) / align * align) : raw;
    if (start > raw) munmap(raw, start - raw);
    if (align && raw + len + align > start + len) munmap(start + len, raw + len + align - (start + len));
    return start;
}

static double first_touch(size_t len, int huge) {
    char *m = map(len, huge ? HUGE : 0);
    madvise(m, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    int64_t t = now_ns();
    // Unrolled by 8 as LLVM unrolls the kernels' touch loop (one store a page either way): the
    // rolled loop read ~6% more per fault here (2-vCPU EPYC guest), the loop's shape, not the kernel's.
#pragma GCC unroll 8
    for (size_t off = 0; off < len; off += PAGE) poke(m + off, off);
    int64_t e = now_ns() - t;
    munmap(m, len);
    return (double)e / (huge ? len / HUGE : len / PAGE);
}

// The probe copies between numpy arrays, and numpy madvises every array of 4 MiB or more
// MADV_HUGEPAGE from its first page boundary on (numpy's alloc.c, on by default on Linux): with THP
// 'madvise' those buffers sit on 2 MiB pages, malloc's alone on 4 KiB ones. Without the same advice
// here, the probe read 12-20% more GB/s at L2 and DRAM (fewer TLB misses, no page colouring).
static void numpy_pages(char *p, size_t n) {
    if (n < (4u << 20)) return;
    size_t offset = PAGE - (uintptr_t)p % PAGE;
    madvise(p + offset, n - offset, MADV_HUGEPAGE);
}

static double copy_gbs(char *dst, const char *src, size_t n) {
    memcpy(dst, src, n);
    int64_t t = now_ns();
    memcpy(dst, src, n);
    int64_t once = now_ns() - t;
    long reps = once > 0 ? (long)(2e6 / once) : 1;  // ~2 ms per timed run
    if (reps < 1) reps = 1;
    t = now_ns();
    for (long i = 0; i < reps; i++) {
        memcpy(dst, src, n);
        __asm__ volatile("" ::: "memory");
    }
    return (double)n * reps / (now_ns() - t);
}

int alloc_ref_main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s THREADS ITERS TOUCH_BYTES COPY_BYTES...\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    long iters = atol(argv[2]);
    size_t touch = strtoull(argv[3], NULL, 10);
    cpu_set_t mine;
    sched_getaffinity(0, sizeof mine, &mine);
    int cpus[256], have = 0;
    for (int c = 0; c < CPU_SETSIZE && have < n && have < 256; c++)
        if (CPU_ISSET(c, &mine)) cpus[have++] = c;
    printf("malloc_ns.1t.64B %.4f\n", threaded(0, 1, cpus, iters));
    printf("malloc_ns.all.64B %.4f\n", threaded(0, have, cpus, iters));
    printf("malloc_ns.1t.mixed %.4f\n", threaded(1, 1, cpus, iters));
    printf("malloc_ns.all.mixed %.4f\n", threaded(1, have, cpus, iters));
    pool_pairs(64, 1000);
    printf("pool_ns.1t.64B %.4f\n", (double)pool_pairs(64, iters * 4) / (iters * 4));
    printf("first_touch_ns.4K %.2f\n", first_touch(touch, 0));
    printf("first_touch_ns.2M %.1f\n", first_touch(touch, 1));
    size_t top = 0;
    for (int i = 4; i < argc; i++) if (strtoull(argv[i], NULL, 10) > top) top = strtoull(argv[i], NULL, 10);
    char *src = malloc(top), *dst = malloc(top);
    numpy_pages(src, top);
    numpy_pages(dst, top);
    memset(src, 1, top);
    memset(dst, 2, top);
    for (int i = 4; i < argc; i++) {
        size_t bytes = strtoull(argv[i], NULL, 10);
        printf("memcpy_gbs.%zu %.3f\n", bytes, copy_gbs(dst, src, bytes));
    }
    free(src);
    free(dst);
    return 0;
}
