/* Native reference for `perfprobe falseshare`: the same experiment in C, to check perfprobe's numbers.
 *
 * T pthreads, thread i pinned (sched_setaffinity on itself) to the i-th CPU given, meet at a spin
 * barrier, then each adds 1 ITERS times to its own 8-byte counter; counter i sits at i*SPACING bytes
 * in one page-aligned buffer (SPACING 0: all threads on one counter). Updates are C11
 * atomic_fetch_add (seq_cst) or a volatile load+store increment. Each thread times its own loop with
 * clock_gettime(CLOCK_MONOTONIC); a run's figure is (last end - first start) / ITERS, the same
 * definition perfprobe uses. pingpong: two threads hand one flag back and forth ITERS times; prints
 * the one-way time (half a round trip).
 *
 * usage: falseshare_ref atomic|plain CPU,CPU,... ITERS SPACING...
 *        falseshare_ref pingpong CPU,CPU ROUNDS
 * prints one line per spacing: "<mode> <spacing> <ns> <cpu_ratio>", cpu_ratio being the smallest share
 * of its timed wall time that any thread had on the CPU (under 0.9: preempted; perfprobe retries those)
 * build: cc -O2 -std=c11 -pthread -o falseshare_ref falseshare_ref.c
 */
#define _GNU_SOURCE
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE 4096
#define MAX_THREADS 1024

enum mode { ATOMIC, PLAIN, PINGPONG };

struct job {
    enum mode mode;
    int cpu, role, parties;
    long iters;
    char *counter;
    atomic_long *ready;
    int64_t start_ns, end_ns, cpu_ns;
};

static int64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        exit(2);
    }
}

static void barrier(atomic_long *ready, int parties) {
    atomic_fetch_add(ready, 1);
    while (atomic_load_explicit(ready, memory_order_acquire) < parties) {
    }
}

static void pingpong(atomic_long *flag, int role, long rounds) {
    for (long i = 0; i < rounds; i++) {
        long wait_for = 2 * i + role;
        while (atomic_load_explicit(flag, memory_order_acquire) != wait_for) {
        }
        atomic_store_explicit(flag, wait_for + 1, memory_order_release);
    }
}

static void *worker(void *arg) {
    struct job *job = arg;
    pin_self(job->cpu);
    long iters = job->iters;
    barrier(job->ready, job->parties);
    int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    job->start_ns = clock_ns(CLOCK_MONOTONIC);
    if (job->mode == ATOMIC) {
        atomic_long *c = (atomic_long *)job->counter;
        for (long i = 0; i < iters; i++) atomic_fetch_add_explicit(c, 1, memory_order_seq_cst);
    } else if (job->mode == PLAIN) {
        volatile int64_t *c = (volatile int64_t *)job->counter;
        for (long i = iters; i > 0; i--) *c = *c + 1; /* counts down, like numba's loop */
    } else {
        pingpong((atomic_long *)job->counter, job->role, iters);
    }
    job->end_ns = clock_ns(CLOCK_MONOTONIC);
    job->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    return NULL;
}

/* One run; returns (last end - first start) in ns, and in *cpu_ratio the smallest share of its wall
 * time any thread spent on the CPU (below 0.9: it was preempted, as perfprobe counts it). */
static int64_t run(enum mode mode, const int *cpus, int n, long iters, long spacing, double *cpu_ratio) {
    size_t area = ((size_t)(n - 1) * spacing + 8 + PAGE - 1) / PAGE * PAGE;
    char *buf = aligned_alloc(PAGE, area + PAGE);
    memset(buf, 0, area + PAGE);
    atomic_long *ready = (atomic_long *)(buf + area);
    pthread_t tid[MAX_THREADS];
    struct job jobs[MAX_THREADS];
    for (int i = 0; i < n; i++) {
        jobs[i] = (struct job){mode, cpus[i], i, n, iters, buf + (mode == PINGPONG ? 0 : i * spacing),
                               ready, 0, 0};
        pthread_create(&tid[i], NULL, worker, &jobs[i]);
    }
    int64_t first = INT64_MAX, last = 0;
    *cpu_ratio = 1.0;
    for (int i = 0; i < n; i++) {
        pthread_join(tid[i], NULL);
        if (jobs[i].start_ns < first) first = jobs[i].start_ns;
        if (jobs[i].end_ns > last) last = jobs[i].end_ns;
        double ratio = (double)jobs[i].cpu_ns / (double)(jobs[i].end_ns - jobs[i].start_ns);
        if (ratio < *cpu_ratio) *cpu_ratio = ratio;
    }
    free(buf);
    return last - first;
}

static int parse_cpus(const char *text, int *cpus) {
    int n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && n < MAX_THREADS; tok = strtok_r(NULL, ",", &save))
        cpus[n++] = atoi(tok);
    free(copy);
    return n;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s atomic|plain|pingpong CPU,CPU,... ITERS [SPACING...]\n", argv[0]);
        return 2;
    }
    enum mode mode = !strcmp(argv[1], "atomic") ? ATOMIC : !strcmp(argv[1], "plain") ? PLAIN : PINGPONG;
    int cpus[MAX_THREADS];
    int n = parse_cpus(argv[2], cpus);
    long iters = atol(argv[3]);
    double ratio;
    if (mode == PINGPONG) {
        double ns = (double)run(mode, cpus, 2, iters, 0, &ratio) / iters / 2.0;
        printf("pingpong 0 %.3f %.3f\n", ns, ratio);
        return 0;
    }
    for (int a = 4; a < argc; a++) {
        long spacing = atol(argv[a]);
        double ns = (double)run(mode, cpus, n, iters, spacing, &ratio) / iters;
        printf("%s %ld %.3f %.3f\n", argv[1], spacing, ns, ratio);
    }
    return 0;
}
