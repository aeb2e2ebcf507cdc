/*
 * kfaults: a known number of page faults of the program's own, in kernel and in user mode,
 * for checking that a profiler counts the program's faults and not its own.
 *
 * usage: kfaults [KERNEL] [USER] [SPIN_MS]   (20000, 2000, 200)
 *
 *   KERNEL: read(2) of one byte from /dev/zero into an address with no mapping: the
 *           kernel's copy to user memory faults in kernel mode, finds nothing and fails
 *           with EFAULT (a fault-handler entry from kernel mode that never completes,
 *           the very shape of the fault a sampler's user-stack walk takes);
 *   USER:   one write to each of USER fresh pages (user-mode faults that complete);
 *   SPIN_MS: then a busy loop in user mode (`spin`), so that a sampler takes samples
 *           with call stacks.
 *
 * Prints "kfaults: kernel K efault E user U" with K reads made, E of them failed with
 * EFAULT, and U pages touched. Exit status 0, 2 on a usage error, 1 on a run-time error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* An address that is surely unmapped: a page mapped, then unmapped again. */
static void *hole(long page)
{
    void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    munmap(p, page);
    return p;
}

static long kernel_faults(long n, void *where)
{
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0)
        return -1;
    long efault = 0;
    for (long i = 0; i < n; i++)
        if (read(fd, where, 1) < 0 && errno == EFAULT)
            efault++;
    close(fd);
    return efault;
}

static int user_faults(long n, long page)
{
    char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    /* One fault per page, not one per 2 MiB. */
    madvise(p, n * page, MADV_NOHUGEPAGE);
    for (long i = 0; i < n; i++)
        ((volatile char *)p)[i * page] = 1;
    munmap(p, n * page);
    return 0;
}

static unsigned long spin(double ms)
{
    unsigned long x = 0;
    double end = now_ms() + ms;
    while (now_ms() < end)
        for (int i = 0; i < 1000; i++)
            x += (unsigned long)i * 2654435761u;
    return x;
}

int main(int argc, char **argv)
{
    long k = argc > 1 ? atol(argv[1]) : 20000;
    long u = argc > 2 ? atol(argv[2]) : 2000;
    double ms = argc > 3 ? atof(argv[3]) : 200;
    if (k < 0 || u < 0 || ms < 0 || argc > 4) {
        fprintf(stderr, "usage: kfaults [KERNEL] [USER] [SPIN_MS]\n");
        return 2;
    }
    long page = sysconf(_SC_PAGESIZE);
    void *where = hole(page);
    if (!where) {
        perror("kfaults: mmap");
        return 1;
    }
    long efault = kernel_faults(k, where);
    if (efault < 0) {
        perror("kfaults: /dev/zero");
        return 1;
    }
    if (u > 0 && user_faults(u, page) != 0) {
        perror("kfaults: mmap");
        return 1;
    }
    unsigned long x = spin(ms);
    printf("kfaults: kernel %ld efault %ld user %ld\n", k, efault, u);
    return x == 1; /* keeps the spin from being optimised away; never 1 in practice */
}
