/*
 * inkernel: a program that spends most of its time in the kernel, and says how much by
 * getrusage, for checking measured kernel time against the kernel's own accounting.
 *
 * usage: inkernel [SECONDS] [faults|syscalls|both]   (1.0, both)
 *
 *   faults:   map 16 fresh pages, write one byte to each (16 page faults), unmap them;
 *   syscalls: getppid(), the cheapest real system call (glibc does not cache it);
 *   both:     one of each in turn.
 *
 * Runs for SECONDS of wall time, then prints one line of getrusage(RUSAGE_SELF) figures:
 *   inkernel: rounds N utime_s U stime_s S kernel_share P
 * with P = 100 * S / (U + S). Exit status 0, 2 on a usage error, 1 when mmap fails.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGES 16

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* vDSO: no system call */
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int touch_pages(long page)
{
    char *p = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    for (int i = 0; i < PAGES; i++)
        ((volatile char *)p)[i * page] = 1;
    munmap(p, PAGES * page);
    return 0;
}

static void cheap_syscall(void)
{
    syscall(SYS_getppid);
}

static double tv(struct timeval t)
{
    return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? strtod(argv[1], NULL) : 1.0;
    const char *mode = argc > 2 ? argv[2] : "both";
    int faults = !strcmp(mode, "faults") || !strcmp(mode, "both");
    int calls = !strcmp(mode, "syscalls") || !strcmp(mode, "both");
    if (!(seconds > 0) || (!faults && !calls) || argc > 3) {
        fprintf(stderr, "usage: inkernel [SECONDS] [faults|syscalls|both]\n");
        return 2;
    }
    long page = sysconf(_SC_PAGESIZE);
    double end = now_s() + seconds;
    long rounds = 0;
    while (now_s() < end) {
        for (int k = 0; k < 50; k++) {
            if (faults && touch_pages(page) != 0) {
                perror("inkernel: mmap");
                return 1;
            }
            if (calls)
                for (int j = 0; j < 16; j++)
                    cheap_syscall();
            rounds++;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double u = tv(ru.ru_utime), s = tv(ru.ru_stime);
    printf("inkernel: rounds %ld utime_s %.6f stime_s %.6f kernel_share %.2f\n", rounds, u, s,
           u + s > 0 ? 100.0 * s / (u + s) : 0.0);
    return 0;
}
