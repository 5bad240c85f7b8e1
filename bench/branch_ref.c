/* Native reference for `perfprobe branch`: the same loops in C, to check perfprobe's numbers.
 *
 * Reads N int32 values (the bench script writes them: sorted, then shuffled, values 0..255) and
 * times, after one untimed pass each: `if (v >= 128) s += v` (the branch kept: an empty volatile
 * asm in the taken arm, and built with -O1 -fno-if-conversion -fno-if-conversion2
 * -fno-tree-vectorize, so gcc emits a conditional jump, not a cmov; bench_branch.py checks the
 * assembly; v goes through an empty asm so gcc loads it sign-extended and compares 64 bits,
 * `movslq; cmpq`, as LLVM does), and the branch-free `s += v >= 128 ? v : 0` as the probe's kernel
 * compiles it: one element a step, one accumulator, `movl $0; cmpq; cmovgeq` pinned in inline asm
 * (the flags above stop gcc's own cmov; its mask arithmetic `v & ~((v - t) >> 63)` was 9 fused
 * uops a step against LLVM's 7, 2.3 against 1.76 cycles in llvm-mca's sapphirerapids model, and
 * read 14-15% slower than the kernel on the Xeon). Loops and jump-only targets aligned to 16 bytes
 * (-falign-loops/-falign-jumps), as LLVM aligns loop headers; -march=native, as numba targets the
 * host CPU. The core clock: a chain of 64
 * dependent `add reg, reg` per iteration (one per cycle). Timing: clock_gettime(CLOCK_MONOTONIC).
 *
 * usage: branch_ref DATAFILE N REPS CLOCK_ITERS
 * prints: "sorted <ns/elem>", "shuffled ...", "branch_free_sorted ...", "branch_free_shuffled ...",
 *         "clock_ghz <GHz>"
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) int64_t branchy(const int32_t *d, long n, int32_t t, long reps, int64_t *sum) {
    int64_t s = 0, start = 0;
    for (long r = -1; r < reps; r++) {
        if (r == 0) start = now_ns();
        for (long i = 0; i < n; i++) {
            int64_t v = d[i];
            __asm__("" : "+r"(v)); /* v sign-extended by the load, compared as 64 bits, as LLVM does */
            if (v >= t) {
                __asm__ volatile("");
                s += v;
            }
        }
    }
    *sum = s;
    return now_ns() - start;
}

__attribute__((noinline)) int64_t branch_free(const int32_t *d, long n, int32_t t, long reps, int64_t *sum) {
    int64_t s = 0, start = 0, t64 = t;
    for (long r = -1; r < reps; r++) {
        if (r == 0) start = now_ns();
        for (long i = 0; i < n; i++) {
            __asm__ volatile("");
            int64_t v = d[i], z;
            /* z = v >= t ? v : 0: the instructions LLVM emits for the kernel's select */
            __asm__("movl $0, %k0\n\tcmpq %2, %1\n\tcmovgeq %1, %0" : "=&r"(z) : "r"(v), "r"(t64) : "cc");
            s += z;
        }
    }
    *sum = s;
    return now_ns() - start;
}

#define ADD8 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"

static double clock_ghz(long iters) {
    int64_t x = 0, y = 1;
    int64_t start = now_ns();
    for (long i = 0; i < iters; i++)
        __asm__ volatile(ADD8 ADD8 ADD8 ADD8 ADD8 ADD8 ADD8 ADD8 : "+r"(x) : "r"(y));
    return (double)iters * 64 / (double)(now_ns() - start) + 0 * (double)x;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: branch_ref DATAFILE N REPS CLOCK_ITERS\n");
        return 2;
    }
    long n = atol(argv[2]), reps = atol(argv[3]);
    int32_t *data = malloc(2 * n * sizeof *data);
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(data, sizeof *data, 2 * n, f) != (size_t)(2 * n)) {
        perror("read data");
        return 2;
    }
    fclose(f);
    int64_t s;
    const char *names[] = {"sorted", "shuffled"};
    for (int k = 0; k < 2; k++)
        printf("%s %.4f\n", names[k], (double)branchy(data + k * n, n, 128, reps, &s) / (reps * n));
    for (int k = 0; k < 2; k++)
        printf("branch_free_%s %.4f\n", names[k], (double)branch_free(data + k * n, n, 128, reps, &s) / (reps * n));
    printf("clock_ghz %.4f\n", clock_ghz(atol(argv[4])));
    return 0;
}
