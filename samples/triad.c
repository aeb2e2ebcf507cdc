/*
 * triad: the NUMA half of the memory-access recipe. STREAM-like a[i] = b[i] + s * c[i]
 * over three large arrays from malloc, computed by N threads pinned across the NUMA nodes.
 *
 * usage: triad [--size BYTES] [--threads N] [--iterations N] [--init serial|parallel]
 *              [--report-placement]
 *   --size        bytes per array, suffix K, M or G allowed (64M)
 *   --threads     worker threads (the number of online CPUs)
 *   --iterations  timed triad passes (10)
 *   --init serial     one thread (the main thread, pinned to the first node) writes all
 *                     three arrays in `init_arrays`: first touch puts every page there;
 *          parallel   each worker writes, in `init_part`, the elements it later computes,
 *                     so each part lands on its worker's node (the fix).
 *   --report-placement  after the run, count each array's pages per node with
 *                     move_pages(2) in query mode (no page is moved).
 *
 * Threads are spread in blocks: with T threads and N nodes (nodes that have CPUs, from
 * /sys/devices/system/node/nodeK/cpulist), threads [k*T/N, (k+1)*T/N) run on node k, each
 * pinned to one CPU of it, and thread t computes elements [t*len/T, (t+1)*len/T).
 * Without /sys/devices/system/node the machine is one node with every allowed CPU.
 *
 * Output lines (all start with "triad: "):
 *   triad: size B elements E threads T iterations I init M nodes N
 *   triad: node K cpus LIST
 *   triad: thread T tid TID node K cpu C first F last L        (one per thread)
 *   triad: array a addr 0xADDR bytes B                          (a, b, c)
 *   triad: init_tid TID init_node K                             (serial init only)
 *   triad: init_s S best_s S avg_s S best_gbs G                 (3 * B bytes per pass)
 *   triad: check ok
 *   triad: placement a node0 P node1 P ... absent P             (--report-placement)
 * Exit status 0, 2 on a usage error, 1 on a run-time error (allocation, pinning, a wrong
 * result, move_pages failing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 64
#define MAX_THREADS 256
#define SCALAR 3.0

struct node {
    int id;
    int ncpus;
    int cpus[CPU_SETSIZE];
};

struct worker {
    int index, node, cpu;
    pid_t tid;
    long first, last;          /* elements [first, last) */
    double pass_start, pass_end; /* of the current pass, read by main between passes */
};

static struct node nodes[MAX_NODES];
static int nnodes;
static double *a, *b, *c;
static long len;
static int nthreads, iterations;
static int parallel_init;
static struct worker workers[MAX_THREADS];
static pthread_barrier_t barrier;
static volatile int failed;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Parses a kernel CPU list ("0-3,8,10-11") into n->cpus. Returns -1 when malformed. */
static int parse_cpulist(const char *s, struct node *n)
{
    n->ncpus = 0;
    while (*s && *s != '\n') {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;
        if (end == s || lo < 0)
            return -1;
        s = end;
        if (*s == '-') {
            hi = strtol(s + 1, &end, 10);
            if (end == s + 1 || hi < lo)
                return -1;
            s = end;
        }
        for (long cpu = lo; cpu <= hi && cpu < CPU_SETSIZE; cpu++)
            n->cpus[n->ncpus++] = (int)cpu;
        if (*s == ',')
            s++;
    }
    return 0;
}

/* Nodes with at least one CPU, in id order; memory-only nodes hold no thread. */
static int discover_nodes(void)
{
    for (int id = 0; id < 1024 && nnodes < MAX_NODES; id++) {
        char path[96], buf[4096];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", id);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = 0;
        struct node *n = &nodes[nnodes];
        n->id = id;
        if (parse_cpulist(buf, n) < 0) {
            fprintf(stderr, "triad: cannot parse %s: %s\n", path, buf);
            return -1;
        }
        if (n->ncpus > 0)
            nnodes++;
    }
    if (nnodes == 0) { /* no NUMA in this kernel: one node of every allowed CPU */
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) < 0) {
            perror("triad: sched_getaffinity");
            return -1;
        }
        nodes[0].id = 0;
        nodes[0].ncpus = 0;
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &set))
                nodes[0].cpus[nodes[0].ncpus++] = cpu;
        nnodes = 1;
    }
    return 0;
}

static int pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err) {
        fprintf(stderr, "triad: cannot pin to cpu %d: %s\n", cpu, strerror(err));
        return -1;
    }
    return 0;
}

/* Serial first touch: every page of the three arrays is faulted in by this thread. */
static void init_arrays(void)
{
    for (long i = 0; i < len; i++) {
        a[i] = 0.0;
        b[i] = 1.0 + (double)(i % 7);
        c[i] = 2.0 + (double)(i % 5);
    }
}

/* Parallel first touch: a worker writes exactly the elements it computes later. */
static void init_part(long first, long last)
{
    for (long i = first; i < last; i++) {
        a[i] = 0.0;
        b[i] = 1.0 + (double)(i % 7);
        c[i] = 2.0 + (double)(i % 5);
    }
}

static void triad_part(long first, long last, double s)
{
    for (long i = first; i < last; i++)
        a[i] = b[i] + s * c[i];
}

static void *run_worker(void *arg)
{
    struct worker *w = arg;
    w->tid = (pid_t)syscall(SYS_gettid);
    if (pin_to(w->cpu) < 0)
        failed = 1;
    if (parallel_init)
        init_part(w->first, w->last);
    pthread_barrier_wait(&barrier); /* init done */
    for (int it = 0; it < iterations; it++) {
        pthread_barrier_wait(&barrier); /* pass starts */
        w->pass_start = now_s();
        triad_part(w->first, w->last, SCALAR);
        w->pass_end = now_s();
        pthread_barrier_wait(&barrier); /* pass ends */
    }
    return NULL;
}

/* Pages of [p, p + bytes) per node, by move_pages with nodes == NULL (query only). */
static int report_placement(const char *name, void *p, size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    char *start = (char *)((unsigned long)p & ~(unsigned long)(page - 1));
    unsigned long count = (unsigned long)(((char *)p + bytes - start + page - 1) / page);
    void **pages = malloc(count * sizeof *pages);
    int *status = malloc(count * sizeof *status);
    long per_node[MAX_NODES * 16] = { 0 }, absent = 0;
    if (!pages || !status) {
        fprintf(stderr, "triad: out of memory for the placement query\n");
        return -1;
    }
    for (unsigned long i = 0; i < count; i++)
        pages[i] = start + i * page;
    if (syscall(SYS_move_pages, 0, count, pages, NULL, status, 0) < 0) {
        fprintf(stderr, "triad: move_pages (query) failed: %s\n", strerror(errno));
        return -1;
    }
    int max_node = -1;
    for (unsigned long i = 0; i < count; i++) {
        if (status[i] >= 0 && status[i] < MAX_NODES * 16) {
            per_node[status[i]]++;
            if (status[i] > max_node)
                max_node = status[i];
        } else {
            absent++; /* -ENOENT: not faulted in; other errors counted here too */
        }
    }
    if (max_node < nodes[nnodes - 1].id)
        max_node = nodes[nnodes - 1].id;
    printf("triad: placement %s", name);
    for (int n = 0; n <= max_node; n++)
        printf(" node%d %ld", n, per_node[n]);
    printf(" absent %ld\n", absent);
    free(pages);
    free(status);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: triad [--size BYTES[K|M|G]] [--threads N] [--iterations N] "
                    "[--init serial|parallel] [--report-placement]\n");
    return 2;
}

static long parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    long mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = 1L << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mult = 1L << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mult = 1L << 30, end++;
    if (end == s || *end || v <= 0 || v > (1L << 40) / mult)
        return -1;
    return v * mult;
}

int main(int argc, char **argv)
{
    long size = 64L << 20;
    int report = 0;
    nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    iterations = 10;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "--report-placement")) {
            report = 1;
            continue;
        }
        if (!val)
            return usage();
        i++;
        if (!strcmp(arg, "--size"))
            size = parse_size(val);
        else if (!strcmp(arg, "--threads"))
            nthreads = atoi(val);
        else if (!strcmp(arg, "--iterations"))
            iterations = atoi(val);
        else if (!strcmp(arg, "--init") && !strcmp(val, "serial"))
            parallel_init = 0;
        else if (!strcmp(arg, "--init") && !strcmp(val, "parallel"))
            parallel_init = 1;
        else
            return usage();
    }
    len = size / (long)sizeof(double);
    if (size < 0 || len < 1 || nthreads < 1 || nthreads > MAX_THREADS || iterations < 1 ||
        len < nthreads)
        return usage();
    if (discover_nodes() < 0)
        return 1;

    printf("triad: size %ld elements %ld threads %d iterations %d init %s nodes %d\n",
           len * (long)sizeof(double), len, nthreads, iterations,
           parallel_init ? "parallel" : "serial", nnodes);
    for (int n = 0; n < nnodes; n++) {
        printf("triad: node %d cpus", nodes[n].id);
        for (int k = 0; k < nodes[n].ncpus; k++)
            printf("%s%d", k ? "," : " ", nodes[n].cpus[k]);
        printf("\n");
    }

    /* The main thread stays on the first node from here on, so serial first touch lands
     * there; pinned before malloc, whose chunk header is the first write to each array. */
    if (pin_to(nodes[0].cpus[0]) < 0)
        return 1;
    /* One malloc per array, each on its own line: three memory objects. */
    a = malloc((size_t)len * sizeof(double));
    b = malloc((size_t)len * sizeof(double));
    c = malloc((size_t)len * sizeof(double));
    if (!a || !b || !c) {
        fprintf(stderr, "triad: cannot allocate 3 x %ld bytes\n", size);
        return 1;
    }

    double t0 = now_s();
    if (!parallel_init) {
        init_arrays();
        printf("triad: init_tid %d init_node %d\n", (int)syscall(SYS_gettid), nodes[0].id);
    }

    pthread_barrier_init(&barrier, NULL, (unsigned)nthreads + 1);
    pthread_t ids[MAX_THREADS];
    int used_on_node[MAX_NODES] = { 0 };
    for (int t = 0; t < nthreads; t++) {
        int n = (int)((long)t * nnodes / nthreads);
        struct worker *w = &workers[t];
        w->index = t;
        w->node = nodes[n].id;
        w->cpu = nodes[n].cpus[used_on_node[n]++ % nodes[n].ncpus];
        w->first = (long)t * len / nthreads;
        w->last = (long)(t + 1) * len / nthreads;
        if (pthread_create(&ids[t], NULL, run_worker, w)) {
            perror("triad: pthread_create");
            return 1;
        }
    }
    pthread_barrier_wait(&barrier);
    double init_s = now_s() - t0;
    double best = 1e30, total = 0;
    for (int it = 0; it < iterations; it++) {
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);
        /* The workers' own clocks: the main thread shares a CPU with a worker and may
         * run late, so its own timestamps would not bracket the pass. */
        double first = 1e30, last = 0;
        for (int t = 0; t < nthreads; t++) {
            if (workers[t].pass_start < first)
                first = workers[t].pass_start;
            if (workers[t].pass_end > last)
                last = workers[t].pass_end;
        }
        double d = last - first;
        total += d;
        if (d < best)
            best = d;
    }
    for (int t = 0; t < nthreads; t++)
        pthread_join(ids[t], NULL);
    if (failed)
        return 1;
    for (int t = 0; t < nthreads; t++)
        printf("triad: thread %d tid %d node %d cpu %d first %ld last %ld\n", t,
               (int)workers[t].tid, workers[t].node, workers[t].cpu, workers[t].first,
               workers[t].last);
    printf("triad: array a addr %p bytes %ld\n", (void *)a, size);
    printf("triad: array b addr %p bytes %ld\n", (void *)b, size);
    printf("triad: array c addr %p bytes %ld\n", (void *)c, size);
    printf("triad: init_s %.3f best_s %.4f avg_s %.4f best_gbs %.2f\n", init_s, best,
           total / iterations, 3.0 * (double)size / best / 1e9);

    for (long i = 0; i < len; i++) {
        double want = (1.0 + (double)(i % 7)) + SCALAR * (2.0 + (double)(i % 5));
        if (a[i] != want) {
            fprintf(stderr, "triad: wrong result at %ld: %g, want %g\n", i, a[i], want);
            return 1;
        }
    }
    printf("triad: check ok\n");
    if (report && (report_placement("a", a, (size_t)size) < 0 ||
                   report_placement("b", b, (size_t)size) < 0 ||
                   report_placement("c", c, (size_t)size) < 0))
        return 1;
    fflush(stdout);
    return 0;
}
