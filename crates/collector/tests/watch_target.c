/* Target of the watchpoint tests: threads touch known words, so hits can be checked
 * against ground truth.
 *
 * usage: watch_target MODE WHEN SECONDS [INT1S]
 *   MODE spaced: writer 0 stores to line.slot[0] (a global), writer 1 to *heap, a reader
 *                loads slot[0], slot[1] and *heap; every iteration ends with a short spin.
 *   MODE hot:    writers 0 and 1 store to line.slot[0] and line.slot[1] (one cache line)
 *                as fast as they can: false sharing.
 *   WHEN early:  threads exist before "go"; late: they are created after it.
 * Prints "addr SLOT0 SLOT1 HEAP", waits for a line on stdin, runs SECONDS, then prints
 * "tid NAME TID", "iters NAME N" and "cpu NAME NS" (thread CPU time) for each thread. Built with -no-pie so that nm
 * addresses are run-time addresses.
 *   INT1S: after "go", the main thread executes that many `int1` (icebp) instructions, 1 ms apart, and
 *          prints "int1 main N": each raises the #DB a hypervisor delivers for a watchpoint trap whose DR6
 *          bits it lost (DR6 empty: SIGTRAP, si_code TRAP_BRKPT), which kills the process unless its
 *          tracer drops the signal (src/watch/guard.rs).
 * Diagnosis only: with WATCH_TARGET_SIGTRAP set in the environment, a SIGTRAP is printed (thread, si_code,
 * si_addr, CLOCK_MONOTONIC) to stderr instead of killing the process. No test sets it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct line {
    volatile uint64_t slot[8];
} __attribute__((aligned(64)));

struct line line;
volatile uint64_t *heap;
static volatile int stop;
static int hot;
static pthread_barrier_t start;

struct worker {
    const char *name;
    int index;
    long tid;
    uint64_t iters;
    uint64_t cpu_ns;
};

/* Diagnosis only (WATCH_TARGET_SIGTRAP set): report a SIGTRAP instead of dying of it. */
static void on_trap(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    char b[200];
    int n = snprintf(b, sizeof b, "SIGTRAP tid %ld code %d addr %p mono %lld.%09ld\n",
                     (long)syscall(SYS_gettid), si->si_code, si->si_addr, (long long)t.tv_sec,
                     t.tv_nsec);
    if (write(2, b, n) < 0) {
    }
}

static void spin(void) {
    for (volatile int k = 0; k < 3000; k++) {
    }
}

/* Plain stores (no read-modify-write) so a writer's hits are writes only. */
__attribute__((noinline)) uint64_t writer_loop(volatile uint64_t *p) {
    uint64_t n = 0;
    while (!stop) {
        *p = n++;
        if (!hot)
            spin();
    }
    return n;
}

__attribute__((noinline)) uint64_t reader_loop(void) {
    uint64_t n = 0, sum = 0;
    while (!stop) {
        sum += line.slot[0];
        sum += line.slot[1];
        sum += *heap;
        n++;
        spin();
    }
    return n + (sum & 1) * 0;
}

static void *run(void *arg) {
    struct worker *w = arg;
    w->tid = syscall(SYS_gettid);
    pthread_barrier_wait(&start);
    if (w->index < 0)
        w->iters = reader_loop();
    else if (hot)
        w->iters = writer_loop(&line.slot[w->index]);
    else
        w->iters = writer_loop(w->index == 0 ? &line.slot[0] : heap);
    /* CPU time, trap handling included: a slowdown measure that other load on the
     * machine does not distort the way wall time would. */
    struct timespec c;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
    w->cpu_ns = (uint64_t)c.tv_sec * 1000000000u + (uint64_t)c.tv_nsec;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4)
        return 2;
    if (getenv("WATCH_TARGET_SIGTRAP")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_trap;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGTRAP, &sa, NULL);
    }
    hot = strcmp(argv[1], "hot") == 0;
    int early = strcmp(argv[2], "early") == 0;
    double secs = atof(argv[3]);
    int int1s = argc > 4 ? atoi(argv[4]) : 0;
    heap = aligned_alloc(64, 64);
    memset((void *)heap, 0, 64);
    struct worker ws[3] = {{"w0", 0, 0, 0, 0}, {"w1", 1, 0, 0, 0}, {"r", -1, 0, 0, 0}};
    int n = hot ? 2 : 3;
    pthread_t th[3];
    pthread_barrier_init(&start, NULL, n + 1);
    if (early)
        for (int i = 0; i < n; i++)
            pthread_create(&th[i], NULL, run, &ws[i]);
    /* After the early threads exist, so that a watcher opened now finds them. */
    printf("addr %p %p %p\n", (void *)&line.slot[0], (void *)&line.slot[1], (void *)heap);
    fflush(stdout);
    char buf[16];
    if (!fgets(buf, sizeof buf, stdin))
        return 3;
    if (!early)
        for (int i = 0; i < n; i++)
            pthread_create(&th[i], NULL, run, &ws[i]);
    pthread_barrier_wait(&start);
    for (int i = 0; i < int1s; i++) {
        __asm__ volatile(".byte 0xf1" ::: "memory");
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    stop = 1;
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++)
        printf("tid %s %ld\niters %s %llu\ncpu %s %llu\n", ws[i].name, ws[i].tid, ws[i].name,
               (unsigned long long)ws[i].iters, ws[i].name, (unsigned long long)ws[i].cpu_ns);
    if (int1s)
        printf("int1 main %d\n", int1s);
    return 0;
}
