/*
 * inkernel: a program that spends most of its time in the kernel and measures, exactly,
 * how much of its CPU time was user time: the truth `kairos collect system-overview`'s
 * measured kernel share is checked against.
 *
 * usage: inkernel [SECONDS] [faults|syscalls|both] [SPIN]   (1.0, both, 0)
 *
 *   faults:   map 16 fresh pages, write one byte to each (16 page faults), unmap them;
 *   syscalls: getppid(), the cheapest real system call (glibc does not cache it);
 *   both:     one of each in turn;
 *   SPIN:     after every kernel entry, a user-mode busy loop of SPIN iterations, so that
 *             the kernel share can be set anywhere from about 99% down.
 *
 * Why not getrusage alone: with CONFIG_TICK_CPU_ACCOUNTING (most distribution kernels)
 * the user/system split is sampled at the timer tick, and a tick that arrives while the
 * kernel runs with interrupts off (the way back to user mode) is taken right after the
 * return, in user mode: measured here, getrusage put 46% of a getppid loop in the kernel
 * where the loop spent 92% there. Only the total (utime + stime, the scheduler's exact
 * run time) is exact.
 *
 * So the program times its own user mode. Every kernel entry it makes (a system call, a
 * store that faults) is bracketed by two reads of the cycle counter (lfence; rdtsc on x86-64,
 * cntvct_el0 on aarch64, CLOCK_MONOTONIC through the vDSO elsewhere); the time from the
 * read after one entry to the read before the next is user time (loop, spin, the reads
 * themselves). A gap longer than GAP_CAP_NS held something else (a preemption, an
 * interrupt's handler): it counts GAP_CAP_NS, so the user time is exact to within
 * GAP_CAP_NS per such gap (they are counted). The kernel time of the bracketed entries
 * includes a few user instructions (the syscall wrapper, the faulting store): nanoseconds.
 *
 * Prints, after SECONDS of wall time:
 *   inkernel: rounds N utime_s U stime_s S kernel_share P
 *   inkernel: cpu_s C user_s G long_gaps L exact_kernel_share E
 * with P = 100 S / (U + S) (getrusage's sampled split), C = U + S, G the user time timed
 * as above and E = 100 (C - G) / C. Exit status 0, 2 on a usage error, 1 when mmap fails.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGES 16
#define GAP_CAP_NS 20000.0

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* vDSO: no system call */
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A cheap counter read that never enters the kernel. */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* lfence: the read waits for every earlier instruction (the spin before a kernel
     * entry). rdtscp with an lfence after it made every kernel entry of this loop about
     * 150 ns slower here, a cost no other program pays. */
    __builtin_ia32_lfence();
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
#endif
}

/* The user-time ledger: the last read after a kernel entry, the sum of the gaps. */
static uint64_t last_exit, cap_ticks, long_gaps;
static uint64_t user_ticks;

static inline void enter(void)
{
    uint64_t gap = ticks() - last_exit;
    if (gap > cap_ticks) {
        gap = cap_ticks;
        long_gaps++;
    }
    user_ticks += gap;
}

static inline void left(void)
{
    last_exit = ticks();
}

static void spin(long n)
{
    for (volatile long i = 0; i < n; i++) {
    }
}

/* Counter ticks per nanosecond, over a 20 ms window of CLOCK_MONOTONIC. */
static double ticks_per_ns(void)
{
    double t0 = now_s();
    uint64_t c0 = ticks();
    while (now_s() - t0 < 0.02) {
    }
    double t1 = now_s();
    uint64_t c1 = ticks();
    return (double)(c1 - c0) / ((t1 - t0) * 1e9);
}

static int touch_pages(long page, long spin_n)
{
    enter();
    char *p = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    left();
    if (p == MAP_FAILED)
        return -1;
    spin(spin_n);
    for (int i = 0; i < PAGES; i++) {
        enter();
        ((volatile char *)p)[i * page] = 1;
        left();
        spin(spin_n);
    }
    enter();
    munmap(p, PAGES * page);
    left();
    spin(spin_n);
    return 0;
}

static void cheap_syscall(long spin_n)
{
    enter();
    syscall(SYS_getppid);
    left();
    spin(spin_n);
}

static double tv(struct timeval t)
{
    return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? strtod(argv[1], NULL) : 1.0;
    const char *mode = argc > 2 ? argv[2] : "both";
    long spin_n = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
    int faults = !strcmp(mode, "faults") || !strcmp(mode, "both");
    int calls = !strcmp(mode, "syscalls") || !strcmp(mode, "both");
    if (!(seconds > 0) || (!faults && !calls) || spin_n < 0 || argc > 4) {
        fprintf(stderr, "usage: inkernel [SECONDS] [faults|syscalls|both] [SPIN]\n");
        return 2;
    }
    long page = sysconf(_SC_PAGESIZE);
    uint64_t calibration = ticks();
    double tpn = ticks_per_ns();
    /* The calibration spin is user time of its own: counted whole, not capped. */
    user_ticks = ticks() - calibration;
    if (!(tpn > 0)) {
        fprintf(stderr, "inkernel: the cycle counter does not advance\n");
        return 1;
    }
    cap_ticks = (uint64_t)(GAP_CAP_NS * tpn);
    /* Start-up before the calibration (the dynamic loader: mostly kernel entries) is left
     * out of the user time: under a millisecond. */
    double end = now_s() + seconds;
    long rounds = 0;
    left();
    while (now_s() < end) {
        for (int k = 0; k < 50; k++) {
            if (faults && touch_pages(page, spin_n) != 0) {
                perror("inkernel: mmap");
                return 1;
            }
            if (calls)
                for (int j = 0; j < 16; j++)
                    cheap_syscall(spin_n);
            rounds++;
        }
    }
    enter();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double u = tv(ru.ru_utime), s = tv(ru.ru_stime);
    double cpu = u + s;
    double user = (double)user_ticks / tpn * 1e-9;
    printf("inkernel: rounds %ld utime_s %.6f stime_s %.6f kernel_share %.2f\n", rounds, u, s,
           cpu > 0 ? 100.0 * s / cpu : 0.0);
    printf("inkernel: cpu_s %.6f user_s %.6f long_gaps %llu exact_kernel_share %.2f\n", cpu, user,
           (unsigned long long)long_gaps, cpu > 0 ? 100.0 * (cpu - user) / cpu : 0.0);
    return 0;
}
