/* deep: call chains 40 to 125 frames deep, for bench/import_report.sh.
 *
 * Usage: deep SECONDS [THREADS]   (defaults: 10 s, 2 threads)
 *
 * Each thread walks, again and again, down a chain of three mutually recursive functions
 * to a depth between 40 and 119, doing a little work at every level on the way down and
 * up and more at the bottom, so that samples land at every depth. Which function calls
 * which follows one of 16 fixed bit patterns, so the stacks are deep and varied but
 * repeat, as in a recursive-descent parser or a tree walk. Build with frame pointers:
 *   cc -O2 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -pthread
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static double seconds = 10;

static void work(int n) {
    for (int i = 0; i < n; i++) sink += (unsigned long)i;
}

void walk_a(int depth, unsigned path);
void walk_b(int depth, unsigned path);
void walk_c(int depth, unsigned path);

/* One level: some work, then down into the function the next bit of `path` picks. */
#define LEVEL(depth, path)                                   \
    do {                                                     \
        work(40);                                            \
        if ((depth) == 0) {                                  \
            work(3000);                                      \
            return;                                          \
        }                                                    \
        unsigned next = (path) >> 1 | (path) << 31;          \
        switch ((path) % 3) {                                \
        case 0: walk_a((depth) - 1, next); break;            \
        case 1: walk_b((depth) - 1, next); break;            \
        default: walk_c((depth) - 1, next); break;           \
        }                                                    \
        work(40);                                            \
    } while (0)

void walk_a(int depth, unsigned path) { LEVEL(depth, path); }
void walk_b(int depth, unsigned path) { LEVEL(depth, path); }
void walk_c(int depth, unsigned path) { LEVEL(depth, path); }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *run(void *arg) {
    unsigned seed = (unsigned)(unsigned long)arg * 2654435761u + 1;
    double end = now() + seconds;
    while (now() < end) {
        for (int i = 0; i < 64; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned path = 0x9e3779b9u * ((seed >> 16) % 16 + 1);
            walk_a(40 + (int)((seed >> 8) % 80), path);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = 2;
    if (argc > 1) seconds = atof(argv[1]);
    if (argc > 2) threads = atoi(argv[2]);
    if (seconds <= 0 || threads < 1 || threads > 256) {
        fprintf(stderr, "usage: deep [SECONDS] [THREADS]\n");
        return 2;
    }
    pthread_t t[256];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, run, (void *)(unsigned long)i) != 0) {
            perror("pthread_create");
            return 1;
        }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("deep: %d threads, %.1f s\n", threads, seconds);
    return 0;
}
