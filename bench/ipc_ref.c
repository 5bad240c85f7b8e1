/* C reference for `perfprobe ipc`: ping-pong round trips between a parent and a forked child over
 * the same transports (Unix stream and seqpacket socket pairs, two pipes, loopback TCP with
 * TCP_NODELAY, and a shared-memory SPSC ring per direction whose receiver spins, sleeps on a futex
 * or on an eventfd), with the same ring protocol as perfprobe/kernels/ipc_kernels.py: the consumer
 * polls the sequence word at the end of the slot itself (up to 56 B a message and its sequence
 * word share one line), the producer keeps its head and a cached copy of the tail, the consumer
 * publishes its tail once a quarter ring, the wait flags (and a full fence) only in the sleeping
 * modes; copies up to 256 B in 8-byte words, larger ones through memcpy; slots up to 512 B demoted
 * to the LLC after a publish (CLDEMOTE, where the CPU has it; IPC_REF_NO_DEMOTE=1 leaves it out).
 * Two more, to judge it by:
 *   oneline    the hardware's floor: one cache line per direction, a sequence word and nothing
 *              else (each side spins on the other's line, then writes its own);
 *   shm_naive  the ring perfprobe had before (issue 29): shared seq_cst head and tail words on
 *              their own lines, read and written on every message, a slot exactly one message wide.
 *
 *   ipc_ref CPU_PARENT CPU_CHILD COUNT SIZE...
 * Each measurement runs COUNT untimed round trips, then COUNT timed ones (the first 10% of those
 * left out), and prints one line per transport and size: "transport size median_us p99_us"; the
 * spinning ones up to 4 KiB are timed 16 round trips a sample (as perfprobe's plan.timing_batch).
 * IPC_REF_ONLY=name (or a comma-separated list) limits it to those transports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

enum { SPIN, FUTEX, EVENTFD, NAIVE, ONELINE };
#define RING_BYTES (4 << 20)
#define COPY_INLINE 256
typedef struct { int64_t tail, pad0[7], cwait, pad1[7], pwait, pad2[7]; } ring_ctl;
typedef struct { int64_t abort, pad[7]; ring_ctl ring[2]; int64_t naive_head[2][8], naive_tail[2][8]; } ctl_page;

static int64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); sched_setaffinity(0, sizeof s, &s); }
static int cmp64(const void *a, const void *b) { int64_t x = *(const int64_t *)a, y = *(const int64_t *)b; return (x > y) - (x < y); }

static int full_io(int fd, char *p, size_t n, int sock, int packet, int out) {
    size_t done = 0;
    while (done < n) {
        ssize_t r = out ? (sock ? send(fd, p + done, n - done, MSG_NOSIGNAL) : write(fd, p + done, n - done))
                        : (sock ? recv(fd, p + done, n - done, 0) : read(fd, p + done, n - done));
        if (r <= 0) return -1;
        done += (size_t)r;
        if (packet && !out) return 0;
    }
    return 0;
}

/* ---- the ring ---------------------------------------------------------------------------- */
static ctl_page *ctl; static char *data;
static int efd_of[2];   /* the eventfd each side sleeps on: [0] parent, [1] child */
typedef struct { int64_t head, head_slot, cached_tail, tail, tail_slot, published; } ring_ix;   /* private */

/* 8-byte words through a volatile pointer: the compiler keeps the copy here, not a memcpy call. */
static inline void copy(char *dst, const char *src, size_t n) {
    if (n <= COPY_INLINE && n % 8 == 0) {
        for (size_t i = 0; i < n; i += 8) { int64_t w; __builtin_memcpy(&w, src + i, 8); *(volatile int64_t *)(dst + i) = w; }
    } else memcpy(dst, src, n);
}

static void wait_change(int64_t *word, int64_t old, int64_t *flag, int mode, int my_efd) {
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == old) {
        if (mode == SPIN || mode >= NAIVE) continue;
        __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == old) {
            if (mode == FUTEX) {
                struct timespec ts = {0, 50000000};
                syscall(SYS_futex, word, FUTEX_WAIT, (int)(old & 0xFFFFFFFF), &ts, NULL, 0);
            } else { uint64_t v; if (read(my_efd, &v, 8) < 0) exit(2); }
        }
        __atomic_store_n(flag, 0, __ATOMIC_SEQ_CST);
    }
}

static void wake(int64_t *word, int64_t *flag, int mode, int peer_efd) {
    if (mode != FUTEX && mode != EVENTFD) return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(flag, __ATOMIC_SEQ_CST)) {
        if (mode == FUTEX) syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
        else { uint64_t one = 1; if (write(peer_efd, &one, 8) < 0) exit(2); }
    }
}

/* After a publish, slots up to DEMOTE_MAX bytes are demoted line by line (CLDEMOTE: from this core's
 * caches to the shared LLC, where the consumer reads them without snooping this core), where the CPU
 * has it (CPUID.7.0:ECX[25]), as perfprobe's kernels do where numba compiles for such a CPU. */
#define DEMOTE_MAX 512
static int can_demote;
static void detect_demote(void) {
#if defined(__x86_64__)
    unsigned a, b, c, d;
    can_demote = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c >> 25 & 1);
#endif
    if (getenv("IPC_REF_NO_DEMOTE")) can_demote = 0;
}
static inline void demote(const char *p, int64_t n) {
#if defined(__x86_64__)
    if (can_demote && n <= DEMOTE_MAX)
        for (int64_t o = 0; o < n; o += 64) __asm__ volatile("cldemote (%0)" :: "r"(p + o) : "memory");
#endif
}

static inline char *slot(int r, int64_t stride, int64_t i) { return data + (int64_t)r * RING_BYTES + i * stride; }

static void push(int r, int64_t slots, int64_t stride, ring_ix *x, const char *src, size_t n, int mode, int me, int peer) {
    ring_ctl *c = &ctl->ring[r];
    if (x->head - x->cached_tail >= slots) {
        x->cached_tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
        while (x->head - x->cached_tail >= slots) {
            wait_change(&c->tail, x->cached_tail, &c->pwait, mode, me);
            x->cached_tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
        }
    }
    char *s = slot(r, stride, x->head_slot);
    int64_t *seq = (int64_t *)(s + stride - 8);
    copy(s, src, n);
    __atomic_store_n(seq, x->head + 1, __ATOMIC_RELEASE);
    demote(s, stride);
    wake(seq, &c->cwait, mode, peer);
    x->head++; x->head_slot = x->head_slot + 1 == slots ? 0 : x->head_slot + 1;
}

static void pop(int r, int64_t slots, int64_t stride, ring_ix *x, char *dst, size_t n, int mode, int me, int peer) {
    ring_ctl *c = &ctl->ring[r];
    char *s = slot(r, stride, x->tail_slot);
    int64_t *seq = (int64_t *)(s + stride - 8), now = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
    if (now != x->tail + 1) wait_change(seq, now, &c->cwait, mode, me);
    copy(dst, s, n);
    x->tail++; x->tail_slot = x->tail_slot + 1 == slots ? 0 : x->tail_slot + 1;
    if (x->tail - x->published >= (slots / 4 > 1 ? slots / 4 : 1)) {
        __atomic_store_n(&c->tail, x->tail, __ATOMIC_RELEASE);
        x->published = x->tail;
        wake(&c->tail, &c->pwait, mode, peer);
    }
}

/* The ring perfprobe had before: shared head and tail, seq_cst, on every message (spinning only). */
static void naive_push(int r, int64_t slots, const char *src, size_t n) {
    int64_t head = __atomic_load_n(ctl->naive_head[r], __ATOMIC_SEQ_CST);
    while (head - __atomic_load_n(ctl->naive_tail[r], __ATOMIC_SEQ_CST) >= slots) ;
    memcpy(data + (int64_t)r * RING_BYTES + (head % slots) * (RING_BYTES / slots), src, n);
    __atomic_store_n(ctl->naive_head[r], head + 1, __ATOMIC_SEQ_CST);
}

static void naive_pop(int r, int64_t slots, char *dst, size_t n) {
    int64_t tail = __atomic_load_n(ctl->naive_tail[r], __ATOMIC_SEQ_CST);
    while (__atomic_load_n(ctl->naive_head[r], __ATOMIC_SEQ_CST) == tail) ;
    memcpy(dst, data + (int64_t)r * RING_BYTES + (tail % slots) * (RING_BYTES / slots), n);
    __atomic_store_n(ctl->naive_tail[r], tail + 1, __ATOMIC_SEQ_CST);
}

/* One line per direction: wait for the other side's sequence word, then write one's own. */
static void line_wait(int r, int64_t want) { while (__atomic_load_n((int64_t *)(data + (int64_t)r * RING_BYTES), __ATOMIC_ACQUIRE) != want) ; }
static void line_post(int r, int64_t v) { __atomic_store_n((int64_t *)(data + (int64_t)r * RING_BYTES), v, __ATOMIC_RELEASE); }

static void ring_send(int r, int64_t slots, int64_t stride, ring_ix *x, char *buf, size_t n, int mode, int me, int peer) {
    if (mode == ONELINE) line_post(r, x->head + 1), x->head++;
    else if (mode == NAIVE) naive_push(r, slots, buf, n);
    else push(r, slots, stride, x, buf, n, mode, me, peer);
}

static void ring_recv(int r, int64_t slots, int64_t stride, ring_ix *x, char *buf, size_t n, int mode, int me, int peer) {
    if (mode == ONELINE) line_wait(r, x->tail + 1), x->tail++;
    else if (mode == NAIVE) naive_pop(r, slots, buf, n);
    else pop(r, slots, stride, x, buf, n, mode, me, peer);
}

/* ---- one measurement ---------------------------------------------------------------------- */
static void tcp_pair(int sv[2]) {
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    bind(l, (struct sockaddr *)&a, sizeof a); listen(l, 1); getsockname(l, (struct sockaddr *)&a, &len);
    sv[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(sv[0], (struct sockaddr *)&a, sizeof a) < 0) exit(2);
    sv[1] = accept(l, NULL, NULL); close(l);
    setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void run(const char *name, int cpu_p, int cpu_c, long count, size_t size) {
    int sv[2] = {-1, -1}, p2c[2], c2p[2], ring = -1, sock = 1, packet = 0;
    if (!strcmp(name, "uds")) socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    else if (!strcmp(name, "uds_seqpacket")) {
        int buf = 4 << 20; socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv); packet = 1;
        for (int i = 0; i < 2; i++) { setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf); setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf); }
    } else if (!strcmp(name, "tcp")) tcp_pair(sv);
    else if (!strcmp(name, "pipe")) { if (pipe(p2c) || pipe(c2p)) exit(2); sock = 0; }
    else ring = !strcmp(name, "shm_spin") ? SPIN : !strcmp(name, "shm_futex") ? FUTEX : !strcmp(name, "shm_eventfd") ? EVENTFD
              : !strcmp(name, "shm_naive") ? NAIVE : ONELINE;
    /* perfprobe's layout (plan.ring_layout): the message, its sequence word, whole lines */
    int64_t stride = (((int64_t)(size + 7) / 8 * 8 + 8 + 63) / 64) * 64;
    int64_t slots = RING_BYTES / (ring == NAIVE ? (int64_t)(size < 64 ? 64 : size) : stride);
    if (slots > 1024) slots = 1024;
    if (slots < 2) slots = 2;
    memset(ctl, 0, sizeof *ctl); memset(data, 0, 2 * (size_t)RING_BYTES);
    ring_ix x = {0};
    /* plan.timing_batch: the spinning modes up to 4 KiB time 16 round trips a sample (a clock read
     * costs as much as a spinning round trip on a KVM guest); one a sample elsewhere */
    long batch = (ring == SPIN || ring >= NAIVE) && size <= 4096 ? 16 : 1;
    count = count / batch > 0 ? count / batch : 1;
    char *buf = calloc(1, size); int64_t *lat = calloc((size_t)count, 8);
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); pin(cpu_c);
        int rfd = sock ? sv[1] : p2c[0], wfd = sock ? sv[1] : c2p[1];
        for (long i = 0; i < 2 * count * batch; i++) {   /* untimed warm-up round trips, then as many timed */
            if (ring >= 0) { ring_recv(0, slots, stride, &x, buf, size, ring, efd_of[1], efd_of[0]); ring_send(1, slots, stride, &x, buf, size, ring, efd_of[1], efd_of[0]); }
            else if (full_io(rfd, buf, size, sock, packet, 0) || full_io(wfd, buf, size, sock, packet, 1)) _exit(2);
        }
        _exit(0);
    }
    pin(cpu_p);
    int rfd = sock ? sv[0] : c2p[0], wfd = sock ? sv[0] : p2c[1];
    for (long i = 0; i < 2 * count; i++) {
        int64_t t = now_ns();
        for (long b = 0; b < batch; b++) {
            if (ring >= 0) { ring_send(0, slots, stride, &x, buf, size, ring, efd_of[0], efd_of[1]); ring_recv(1, slots, stride, &x, buf, size, ring, efd_of[0], efd_of[1]); }
            else if (full_io(wfd, buf, size, sock, packet, 1) || full_io(rfd, buf, size, sock, packet, 0)) { fprintf(stderr, "%s: io error %s\n", name, strerror(errno)); exit(2); }
        }
        if (i >= count) lat[i - count] = (now_ns() - t) / batch;
    }
    waitpid(child, NULL, 0);
    long skip = count / 10;
    qsort(lat + skip, (size_t)(count - skip), 8, cmp64);
    long n = count - skip;
    printf("%s %zu %.3f %.3f\n", name, size, lat[skip + n / 2] / 1e3, lat[skip + (long)(0.99 * (n - 1))] / 1e3);
    fflush(stdout);
    for (int i = 0; i < 2; i++) { if (sv[i] >= 0) close(sv[i]); }
    if (!sock) { close(p2c[0]); close(p2c[1]); close(c2p[0]); close(c2p[1]); }
    free(buf); free(lat);
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: %s CPU_PARENT CPU_CHILD COUNT SIZE...\n", argv[0]); return 2; }
    int cpu_p = atoi(argv[1]), cpu_c = atoi(argv[2]); long count = atol(argv[3]);
    detect_demote();
    char *map = mmap(NULL, 4096 + 2 * RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return 2;
    ctl = (ctl_page *)map; data = map + 4096;
    efd_of[0] = eventfd(0, 0); efd_of[1] = eventfd(0, 0);
    const char *names[] = {"uds", "uds_seqpacket", "pipe", "tcp", "shm_spin", "shm_futex", "shm_eventfd", "oneline", "shm_naive"};
    const char *only = getenv("IPC_REF_ONLY");   /* bench_ipc.py times point by point */
    for (int a = 4; a < argc; a++)
        for (int t = 0; t < 9; t++) {
            int spins = t == 4 || t >= 7;
            if (cpu_p == cpu_c && spins) continue;   /* no spinning when both share one CPU */
            if (only) {   /* a comma-separated list of names */
                size_t len = strlen(names[t]); const char *p = only; int found = 0;
                while (p && *p) { if (!strncmp(p, names[t], len) && (p[len] == ',' || !p[len])) found = 1; p = strchr(p, ','); if (p) p++; }
                if (!found) continue;
            } else if (t >= 7) continue;   /* the two yardsticks only when asked for */
            size_t size = (size_t)atol(argv[a]);
            long n = count; if (size >= (64 << 10)) n = count / 10 > 20 ? count / 10 : 20;
            run(names[t], cpu_p, cpu_c, n, size);
        }
    return 0;
}
