/*
 * allocs: a known mix of heap and mmap allocations, for checking allocation trackers
 * (kairos collect memory-consumption, valgrind --tool=dhat) against ground truth.
 *
 * usage: allocs [ROUNDS]      (default 1; every count below scales with ROUNDS)
 *
 * Each kind of call comes from its own function, so each is one allocation site:
 * malloc/free of small blocks, calloc, a realloc chain, posix_memalign, aligned_alloc,
 * memalign, valloc, malloc(0), a second thread, anonymous mmap with a partial munmap,
 * and blocks deliberately leaked. Pure C (no operator new).
 *
 * At the end it prints what it asked for, counted the way valgrind DHAT counts: a
 * realloc of a live block counts as one more block of the new size, malloc(0) as 1 byte;
 * mmap is counted apart (DHAT ignores it). stdio's own buffer (allocated by libc on the
 * first printf) is not in these figures; trackers see it, so they report it on top.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NOINLINE __attribute__((noinline))

static uint64_t heap_bytes, heap_blocks, leak_bytes, leaked_blocks, mmap_bytes;
static void *volatile sink;

static void count(uint64_t bytes) { heap_bytes += bytes; heap_blocks++; }

NOINLINE void small_blocks(void)
{
    for (int i = 0; i < 1000; i++) {
        size_t n = 16 + (size_t)(i % 8) * 8;
        char *p = malloc(n);
        if (!p) exit(1);
        memset(p, i, n);
        sink = p;
        count(n);
        free(p);
    }
}

NOINLINE void calloc_blocks(void)
{
    for (int i = 0; i < 10; i++) {
        void *p = calloc(100, 40);
        if (!p) exit(1);
        sink = p;
        count(4000);
        free(p);
    }
}

NOINLINE void realloc_chain(void)
{
    char *p = realloc(NULL, 16);  /* same as malloc(16) */
    if (!p) exit(1);
    count(16);
    for (size_t n = 32; n <= 65536; n *= 2) {
        char *q = realloc(p, n);
        if (!q) exit(1);
        q[n - 1] = 1;
        p = q;
        count(n);
    }
    char *q = realloc(p, 100);   /* shrink: DHAT counts it too */
    if (!q) exit(1);
    count(100);
    free(q);
}

NOINLINE void aligned_blocks(void)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, 1000) != 0) exit(1);
    count(1000);
    free(p);
    p = aligned_alloc(4096, 8192);
    if (!p) exit(1);
    count(8192);
    free(p);
    p = memalign(256, 3000);
    if (!p) exit(1);
    count(3000);
    free(p);
    p = valloc(5000);
    if (!p) exit(1);
    count(5000);
    free(p);
}

NOINLINE void zero_size(void)
{
    void *p = malloc(0);
    sink = p;
    count(1);  /* DHAT counts malloc(0) as one byte */
    free(p);
}

NOINLINE void leak_blocks(void)
{
    for (int i = 0; i < 5; i++) {
        void *p = malloc(777);
        if (!p) exit(1);
        memset(p, 0, 777);
        sink = p;
        count(777);
        leak_bytes += 777;
        leaked_blocks++;
    }
}

NOINLINE void big_block(void)
{
    /* Above glibc's mmap threshold: malloc maps it itself, still one heap block. */
    char *p = malloc(1 << 20);
    if (!p) exit(1);
    memset(p, 1, 1 << 20);
    count(1 << 20);
    free(p);
}

NOINLINE void mapped_region(void)
{
    size_t n = 4 << 20;
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(1);
    memset(p, 2, n);
    mmap_bytes += n;
    munmap(p, n / 2);          /* partial unmap: the upper half stays mapped */
    munmap(p + n / 2, n / 2);
}

NOINLINE void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 500; i++) {
        void *p = malloc(48);
        if (!p) exit(1);
        sink = p;
        free(p);
    }
    return NULL;
}

NOINLINE void run_thread(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) exit(1);
    pthread_join(t, NULL);
    /* The worker's blocks; counted here, after the join, so no counter is shared. */
    heap_bytes += 500 * 48;
    heap_blocks += 500;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 1;
    if (rounds < 1) {
        fprintf(stderr, "usage: allocs [ROUNDS]\n");
        return 2;
    }
    for (long r = 0; r < rounds; r++) {
        small_blocks();
        calloc_blocks();
        realloc_chain();
        aligned_blocks();
        zero_size();
        leak_blocks();
        big_block();
        mapped_region();
        run_thread();
    }
    printf("heap_bytes=%llu heap_blocks=%llu leaked_bytes=%llu leaked_blocks=%llu mmap_bytes=%llu\n",
           (unsigned long long)heap_bytes, (unsigned long long)heap_blocks,
           (unsigned long long)leak_bytes, (unsigned long long)leaked_blocks,
           (unsigned long long)mmap_bytes);
    return 0;
}
