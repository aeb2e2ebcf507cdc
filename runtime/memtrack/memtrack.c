/*
 * libkairos_memtrack: the allocation tracker of `kairos collect memory-consumption`.
 *
 * Preloaded (LD_PRELOAD=libkairos_memtrack.so), it interposes the allocation functions
 * (malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * mmap, mmap64, munmap, mremap), calls the real ones found with dlsym(RTLD_NEXT), and
 * records one event per call. C++ operator new/delete reach us through malloc/free.
 * The file format is described in runtime/memtrack/README.md and decoded by
 * crates/analysis/memory/src/decode.rs; keep the three in step.
 *
 * Output only when KAIROS_MEMTRACK_DIR names a directory (otherwise the hooks forward at
 * once): per thread DIR/PID-INST-SEQ.kmt; per process DIR/PID-INST.maps.start and
 * .maps.exit (copies of /proc/self/maps, to symbolise the stacks) and DIR/PID-INST.info
 * (written at exit: event counts). INST is the CLOCK_MONOTONIC time at which the process
 * image started (or forked), so a PID reused by exec or by a fork child never collides.
 *
 * Stacks: a frame-pointer walk, bounded by the thread's stack. It costs a few ns per frame
 * and needs no locks, no allocation and no unwind tables; glibc backtrace() goes through
 * libgcc's DWARF unwinder (about 1 us for 10 frames, may allocate and take the loader
 * lock on first use), libunwind is an extra dependency and still costlier. The price:
 * frames of code built without frame pointers are skipped or end the walk; the first
 * frame (the caller of malloc, which names the allocation site) is always exact because
 * it is our own return address. Every pointer read is checked against the thread's stack
 * bounds, so a garbage frame pointer ends the walk instead of faulting.
 *
 * Own memory: buffers come from the mmap system call directly (never through the hooks,
 * never counted); the few allocations dlsym makes while we resolve the real functions come
 * from a static arena and are not recorded either.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define NOINLINE __attribute__((noinline))

#define KMT_VERSION 1
#define MAX_DEPTH 32
#define BUF_BYTES (1u << 20)  /* per thread; a write() per MiB keeps system calls rare */
#define MAX_BUFS 4096         /* live thread buffers tracked for the exit flush */
#define ARENA_BYTES (64 * 1024)

enum kind {
    K_MALLOC = 1, K_CALLOC, K_REALLOC, K_FREE, K_POSIX_MEMALIGN, K_ALIGNED_ALLOC,
    K_MEMALIGN, K_VALLOC, K_PVALLOC, K_MMAP, K_MUNMAP, K_MREMAP,
};

/* Records, little-endian u64 words, variable length to keep the files (and the write
 * system calls) small -- a free is 16 bytes, a malloc 24 plus its stack:
 *   w0 = time | kind << 56              time: after the call for allocations, before it
 *                                       for free; ns since INST (clock 0) or TSC ticks
 *                                       since the process's first tick (clock 1)
 *   w1 = address returned (or freed / unmapped)
 *   free: nothing more
 *   malloc, calloc: w2 = size | depth << 56, then `depth` return addresses
 *   others: w2 = size | depth << 56, w3 = aux, w4 = aux2, w5 = t0 (absolute ns, 0 = none),
 *           then `depth` return addresses
 * size: requested bytes (new size for realloc and mremap); aux: realloc and mremap the old
 * address, mmap flags << 32 | prot; aux2: mremap old size, aligned kinds the alignment,
 * mmap the fd; t0 (same clock as `time`): realloc of a block, munmap, mremap: time before the call, when the old block was
 * still ours (another thread may be handed its address before `time`).
 *   clock anchor (kind 15, clock 1 only): w0 = ticks | 15 << 56, w1 = CLOCK_MONOTONIC ns.
 *   Written when a buffer starts and before each write, so every file carries the
 *   tick-to-ns mapping of its own lifetime; the decoder interpolates between anchors.
 *
 * Why TSC ticks: on this kind of machine (KVM) clock_gettime through the vDSO took ~40%
 * of the tracker's time; rdtsc is ~10 ns. Only used when /proc/cpuinfo says the TSC is
 * invariant (constant_tsc and nonstop_tsc), so ticks are comparable across CPUs. */
#define K_CLOCK 15
#define MAX_REC_WORDS (6 + MAX_DEPTH)

struct tbuf {
    int busy;            /* owner or exit flusher is using it (see lock_buf) */
    int fd;
    uint32_t tid, seq;
    uint32_t slot;
    size_t used;
    unsigned char data[];
};

/* Real functions. */
static void *(*r_malloc)(size_t);
static void *(*r_calloc)(size_t, size_t);
static void *(*r_realloc)(void *, size_t);
static void (*r_free)(void *);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);
static void *(*r_memalign)(size_t, size_t);
static void *(*r_valloc)(size_t);
static void *(*r_pvalloc)(size_t);
static void *(*r_mmap)(void *, size_t, int, int, int, off_t);
static void *(*r_mmap64)(void *, size_t, int, int, int, off64_t);
static int (*r_munmap)(void *, size_t);
static void *(*r_mremap)(void *, size_t, size_t, int, ...);
static void (*r__exit)(int);
static void (*r__Exit)(int);
static int (*r_execve)(const char *, char *const[], char *const[]);
static int (*r_execv)(const char *, char *const[]);
static int (*r_execvp)(const char *, char *const[]);
static int (*r_execvpe)(const char *, char *const[], char *const[]);

static int resolving;          /* dlsym in progress: serve allocations from the arena */
static int active;             /* KAIROS_MEMTRACK_DIR set and usable */
static int finished;           /* exit flush done: later events are written at once */
static char out_dir[1024];
static size_t min_size;        /* blocks below this get no stack */
static uint32_t pid;
static uint64_t inst;
static uint32_t next_seq;
static uint64_t lost;          /* events dropped because a buffer could not be had or written */
static pthread_key_t buf_key;
static struct tbuf *bufs[MAX_BUFS];

static TLS int in_hook;
static TLS int in_flush;          /* this thread is inside flush_locked */
static TLS struct tbuf *my_buf;
static TLS uintptr_t stack_lo, stack_hi;

static _Alignas(16) unsigned char arena[ARENA_BYTES];
static size_t arena_used;

static int in_arena(const void *p)
{
    return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_BYTES;
}

/* Bump allocation with a 16-byte size header, for dlsym's own calls while we resolve. */
static void *arena_alloc(size_t n, size_t align)
{
    if (align < 16) align = 16;
    size_t start = (__atomic_load_n(&arena_used, __ATOMIC_RELAXED) + 16 + align - 1) & ~(align - 1);
    if (n > ARENA_BYTES || start + n > ARENA_BYTES) return NULL;
    __atomic_store_n(&arena_used, start + n, __ATOMIC_RELAXED);
    ((size_t *)(arena + start))[-1] = n;
    return arena + start;
}

static int use_tsc;
static uint64_t tsc_start;

static inline uint64_t ticks(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
#else
    return 0;
#endif
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *raw_mmap(size_t n)
{
    void *p = (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED); return; }
        c += w;
        n -= (size_t)w;
    }
}

/* "DIR/PID-INST" + suffix, without snprintf (which may allocate for some formats). */
static void path_of(char *out, size_t cap, const char *suffix, long seq)
{
    char tmp[96];
    int n;
    if (seq >= 0) n = snprintf(tmp, sizeof tmp, "/%u-%llu-%ld%s", pid, (unsigned long long)inst, seq, suffix);
    else n = snprintf(tmp, sizeof tmp, "/%u-%llu%s", pid, (unsigned long long)inst, suffix);
    size_t d = strlen(out_dir);
    if (n < 0 || d + (size_t)n + 1 > cap) { out[0] = 0; return; }
    memcpy(out, out_dir, d);
    memcpy(out + d, tmp, (size_t)n + 1);
}

static void copy_maps(const char *suffix)
{
    char path[1200], chunk[4096];
    path_of(path, sizeof path, suffix, -1);
    int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, chunk, sizeof chunk)) > 0) write_all(out, chunk, (size_t)n);
    if (in >= 0) close(in);
    if (out >= 0) close(out);
}

/* Time field of a record: ticks or ns since the process started. */
static inline uint64_t stamp(void)
{
    return (use_tsc ? ticks() - tsc_start : now_ns() - inst) & ((1ull << 56) - 1);
}

/* Appends a clock anchor; the caller holds b->busy and has room for 16 bytes. */
static void anchor_locked(struct tbuf *b)
{
    if (!use_tsc) return;
    uint64_t w[2] = {stamp() | (uint64_t)K_CLOCK << 56, now_ns()};
    memcpy(b->data + b->used, w, sizeof w);
    b->used += sizeof w;
}

/* Writes what the buffer holds; the caller holds b->busy. */
static void flush_locked(struct tbuf *b)
{
    if (b->used == 0) return;
    in_flush++;
    anchor_locked(b); /* emit and get_buf keep 16 bytes free for it */
    if (b->fd < 0) {
        char path[1200];
        path_of(path, sizeof path, ".kmt", b->seq);
        b->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (b->fd < 0) { __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED); b->used = 0; in_flush--; return; }
        struct { char magic[8]; uint32_t version, pid, tid, clock; uint64_t inst; } h = {
            {'K', 'A', 'I', 'R', 'O', 'S', 'M', 'T'}, KMT_VERSION, pid, b->tid, (uint32_t)use_tsc, inst };
        write_all(b->fd, &h, sizeof h);
    }
    write_all(b->fd, b->data, b->used);
    b->used = 0;
    in_flush--;
}

/* The owner marks its buffer busy while appending; the exit flush waits for that to clear.
 * Plain stores with compiler barriers, not an atomic exchange: the exchange cost a quarter
 * of the tracker's time per event. The price is a theoretical race with a thread that is
 * still allocating while the process exits (TSO lets its flag store trail the flusher's
 * check); at worst one record of that thread is cut, and the decoder stops at a cut record. */
static void lock_buf(struct tbuf *b)
{
    while (__atomic_load_n(&b->busy, __ATOMIC_ACQUIRE)) sched_yield();
    __atomic_store_n(&b->busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void unlock_buf(struct tbuf *b)
{
    __atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
}

/* Thread exit (pthread key destructor): flush, close, give the slot back. */
static void thread_done(void *v)
{
    struct tbuf *b = v;
    if (!b) return;
    in_hook++;
    lock_buf(b);
    flush_locked(b);
    if (b->fd >= 0) close(b->fd);
    __atomic_store_n(&bufs[b->slot], NULL, __ATOMIC_RELEASE);
    my_buf = NULL;
    syscall(SYS_munmap, b, BUF_BYTES);
    in_hook--;
}

static void find_stack(void)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    /* pthread_getattr_np may allocate (forwarded untracked: in_hook is set). */
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &addr, &size) == 0) {
            stack_lo = (uintptr_t)addr;
            stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&a);
    }
}

static struct tbuf *get_buf(void)
{
    if (my_buf) return my_buf;
    struct tbuf *b = raw_mmap(BUF_BYTES);
    if (!b) return NULL;
    b->fd = -1;
    b->tid = (uint32_t)syscall(SYS_gettid);
    b->seq = __atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < MAX_BUFS; i++) {
        struct tbuf *none = NULL;
        if (__atomic_compare_exchange_n(&bufs[i], &none, b, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            b->slot = i;
            anchor_locked(b);
            my_buf = b;
            pthread_setspecific(buf_key, b);
            find_stack();
            return b;
        }
    }
    syscall(SYS_munmap, b, BUF_BYTES);
    return NULL;
}

/* Return addresses from the caller of the hook outwards. NOINLINE with frame pointers:
 * our frame's saved return address leads into the hook, whose frame leads to its caller. */
static NOINLINE int walk(uint64_t *out)
{
    uintptr_t *fp = __builtin_frame_address(0);
    uintptr_t lo = stack_lo, hi = stack_hi;
    int n = 0, skip = 2; /* the returns into emit and into the hook: ours, not the program's */
    if (hi == 0 || (uintptr_t)fp < lo || (uintptr_t)fp >= hi) {
        /* Not on the known stack (sigaltstack, coroutine): only the caller is safe. The
         * frames of emit (fp[0]) and of the hook (its [0]) are our own; the hook's return
         * address is the caller of malloc. */
        out[0] = ((uintptr_t *)((uintptr_t *)fp[0])[0])[1];
        return 1;
    }
    while (n < MAX_DEPTH) {
        if (((uintptr_t)fp & 7) || (uintptr_t)fp < lo || (uintptr_t)fp + 16 > hi) break;
        uintptr_t ret = fp[1];
        if (ret < 4096) break;
        if (skip) skip--;
        else out[n++] = ret;
        uintptr_t *next = (uintptr_t *)fp[0];
        if (next <= fp) break; /* frames grow towards higher addresses; anything else is garbage */
        fp = next;
    }
    return n;
}

static NOINLINE void emit(int kind, uint64_t addr, uint64_t size, uint64_t aux, uint64_t aux2, uint64_t t0, int stack)
{
    struct tbuf *b = get_buf();
    if (!b) { __atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED); return; }
    uint64_t w[MAX_REC_WORDS];
    size_t n = 2;
    if (kind != K_FREE) {
        int depth = stack ? walk(&w[kind == K_MALLOC || kind == K_CALLOC ? 3 : 6]) : 0;
        w[2] = size | (uint64_t)depth << 56;
        if (kind == K_MALLOC || kind == K_CALLOC) {
            n = 3 + (size_t)depth;
        } else {
            w[3] = aux;
            w[4] = aux2;
            w[5] = t0;
            n = 6 + (size_t)depth;
        }
    }
    w[1] = addr;
    w[0] = stamp() | (uint64_t)kind << 56;
    lock_buf(b);
    if (b->used + n * 8 + 16 > BUF_BYTES - sizeof(struct tbuf)) flush_locked(b);
    memcpy(b->data + b->used, w, n * 8);
    b->used += n * 8;
    if (finished) flush_locked(b);
    unlock_buf(b);
}

#define RESOLVE(name) r_##name = (__typeof__(r_##name))dlsym(RTLD_NEXT, #name)

static void resolve(void)
{
    if (r_free) return;
    resolving = 1;
    RESOLVE(malloc); RESOLVE(calloc); RESOLVE(realloc);
    RESOLVE(posix_memalign); RESOLVE(aligned_alloc); RESOLVE(memalign); RESOLVE(valloc);
    RESOLVE(pvalloc); RESOLVE(mmap); RESOLVE(mmap64); RESOLVE(munmap); RESOLVE(mremap);
    RESOLVE(_exit); RESOLVE(_Exit); RESOLVE(execve); RESOLVE(execv); RESOLVE(execvp); RESOLVE(execvpe);
    RESOLVE(free);
    resolving = 0;
}

/* TSC usable as a clock: x86-64 and invariant per /proc/cpuinfo. */
static int tsc_invariant(void)
{
#if defined(__x86_64__)
    static char text[16384];
    int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    return strstr(text, " constant_tsc") && strstr(text, " nonstop_tsc");
#else
    return 0;
#endif
}

static void start_process(void)
{
    pid = (uint32_t)getpid();
    inst = now_ns();
    tsc_start = ticks();
    next_seq = 0;
    copy_maps(".maps.start");
}

static void finish(void)
{
    if (!active || finished) return;
    in_hook++;
    for (uint32_t i = 0; i < MAX_BUFS; i++) {
        struct tbuf *b = __atomic_load_n(&bufs[i], __ATOMIC_ACQUIRE);
        if (!b) continue;
        if (b == my_buf && b->busy) {
            /* Called from the signal handler while this very thread was appending: its
             * lock can never clear. Its records up to `used` are whole (used grows after
             * the copy); unless it was interrupted while writing them out already. */
            if (!in_flush) flush_locked(b);
            continue;
        }
        lock_buf(b);
        flush_locked(b);
        unlock_buf(b);
    }
    finished = 1;
    copy_maps(".maps.exit");
    char path[1200], text[160];
    path_of(path, sizeof path, ".info", -1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        int n = snprintf(text, sizeof text, "version=%d\nlost=%llu\nmin_size=%zu\n", KMT_VERSION,
                         (unsigned long long)lost, min_size);
        if (n > 0) write_all(fd, text, (size_t)n);
        close(fd);
    }
    in_hook--;
}

/* Child of fork: the parent's unflushed events belong to the parent (it writes them);
 * the other threads' buffers do not exist here. Start over as a new process. */
static void after_fork_child(void)
{
    if (!active) return;
    struct tbuf *mine = my_buf;
    for (uint32_t i = 0; i < MAX_BUFS; i++) {
        struct tbuf *b = bufs[i];
        bufs[i] = NULL;
        if (b && b != mine) syscall(SYS_munmap, b, BUF_BYTES);
    }
    start_process();
    if (mine) {
        mine->busy = 0;
        mine->used = 0;
        if (mine->fd >= 0) close(mine->fd);
        mine->fd = -1;
        mine->tid = (uint32_t)syscall(SYS_gettid);
        mine->seq = next_seq++;
        mine->slot = 0;
        anchor_locked(mine);
        bufs[0] = mine;
    }
    finished = 0;
    lost = 0;
}

static void flush_on_signals(void);

__attribute__((constructor)) static void memtrack_init(void)
{
    in_hook++;
    resolve();
    const char *dir = getenv("KAIROS_MEMTRACK_DIR");
    const char *ms = getenv("KAIROS_MEMTRACK_MIN_SIZE");
    if (ms) min_size = strtoull(ms, NULL, 10);
    if (dir && *dir && strlen(dir) < sizeof out_dir - 1 && pthread_key_create(&buf_key, thread_done) == 0) {
        strcpy(out_dir, dir);
        use_tsc = tsc_invariant() && !getenv("KAIROS_MEMTRACK_NO_TSC");
        start_process();
        pthread_atfork(NULL, NULL, after_fork_child);
        atexit(finish);
        flush_on_signals();
        active = 1;
    }
    in_hook--;
}

/* SIGTERM (how kairos ends a target it was told to stop) and SIGINT (Ctrl-C) would end the
 * process without the exit flush, losing every buffer not yet full: flush, then let the
 * signal end the process as it would have. Only where the program left the default
 * action; a program with its own handler exits through exit() and the atexit flush. */
static void on_fatal_signal(int sig)
{
    int saved = errno;
    in_hook++;
    finish();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    /* Pending until the handler returns (the signal is blocked in its own handler). */
    raise(sig);
    in_hook--;
    errno = saved;
}

static void flush_on_signals(void)
{
    int sigs[] = {SIGTERM, SIGINT};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigfillset(&sa.sa_mask); /* one flush at a time */
        sigaction(sigs[i], &sa, NULL);
    }
}

__attribute__((destructor)) static void memtrack_fini(void)
{
    finish();
}

/* ---- hooks ---- */

#define ENTER_OR(fallback) \
    do { if (!r_free) { if (resolving) { fallback; } resolve(); } } while (0)
#define TRACKING (active && !in_hook)

EXPORT void *malloc(size_t n)
{
    ENTER_OR(return arena_alloc(n, 16));
    if (!TRACKING) return r_malloc(n);
    in_hook++;
    void *p = r_malloc(n);
    if (p) emit(K_MALLOC, (uintptr_t)p, n, 0, 0, 0, n >= min_size);
    in_hook--;
    return p;
}

EXPORT void *calloc(size_t m, size_t n)
{
    ENTER_OR({ void *p = arena_alloc(m * n, 16); if (p) memset(p, 0, m * n); return p; });
    if (!TRACKING) return r_calloc(m, n);
    in_hook++;
    void *p = r_calloc(m, n);
    if (p) emit(K_CALLOC, (uintptr_t)p, (uint64_t)m * n, 0, 0, 0, m * n >= min_size);
    in_hook--;
    return p;
}

EXPORT void free(void *p)
{
    if (!p || in_arena(p)) return;
    ENTER_OR(return);
    if (!TRACKING) { r_free(p); return; }
    in_hook++;
    /* Recorded before the real free: once the block is back, another thread may get the
     * same address from malloc, and its event must come after ours in time. */
    emit(K_FREE, (uintptr_t)p, 0, 0, 0, 0, 0);
    r_free(p);
    in_hook--;
}

EXPORT void *realloc(void *old, size_t n)
{
    if (in_arena(old)) {
        /* A block dlsym got from the arena: move it to the real heap. */
        size_t had = ((size_t *)old)[-1];
        void *p = r_malloc ? r_malloc(n) : arena_alloc(n, 16);
        if (p) memcpy(p, old, had < n ? had : n);
        return p;
    }
    ENTER_OR(return arena_alloc(n, 16));
    if (!TRACKING) return r_realloc(old, n);
    in_hook++;
    uint64_t t0 = old ? stamp() : 0;
    void *p = r_realloc(old, n);
    /* realloc(p, 0) frees (glibc) and returns NULL; a failed realloc keeps the old block. */
    if (p || n == 0) emit(K_REALLOC, (uintptr_t)p, n, (uintptr_t)old, 0, t0, n >= min_size);
    in_hook--;
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    ENTER_OR({ *out = arena_alloc(n, align); return *out ? 0 : ENOMEM; });
    if (!TRACKING) return r_posix_memalign(out, align, n);
    in_hook++;
    int rc = r_posix_memalign(out, align, n);
    if (rc == 0) emit(K_POSIX_MEMALIGN, (uintptr_t)*out, n, 0, align, 0, n >= min_size);
    in_hook--;
    return rc;
}

#define ALIGNED_HOOK(name, kind, params, call, align_expr, size_expr)                 \
    EXPORT void *name params                                                       \
    {                                                                               \
        ENTER_OR(return arena_alloc(size_expr, 4096));                              \
        if (!TRACKING) return r_##name call;                                        \
        in_hook++;                                                                  \
        void *p = r_##name call;                                                    \
        if (p) emit(kind, (uintptr_t)p, size_expr, 0, align_expr, 0, (size_expr) >= min_size); \
        in_hook--;                                                                  \
        return p;                                                                   \
    }

ALIGNED_HOOK(aligned_alloc, K_ALIGNED_ALLOC, (size_t a, size_t n), (a, n), a, n)
ALIGNED_HOOK(memalign, K_MEMALIGN, (size_t a, size_t n), (a, n), a, n)
ALIGNED_HOOK(valloc, K_VALLOC, (size_t n), (n), 4096, n)
ALIGNED_HOOK(pvalloc, K_PVALLOC, (size_t n), (n), 4096, n)

EXPORT void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    if (!r_mmap) { resolve(); if (!r_mmap) return (void *)syscall(SYS_mmap, a, n, prot, flags, fd, off); }
    if (!TRACKING) return r_mmap(a, n, prot, flags, fd, off);
    in_hook++;
    void *p = r_mmap(a, n, prot, flags, fd, off);
    if (p != MAP_FAILED) emit(K_MMAP, (uintptr_t)p, n, (uint64_t)(uint32_t)flags << 32 | (uint32_t)prot, (uint64_t)(int64_t)fd, 0, 1);
    in_hook--;
    return p;
}

EXPORT void *mmap64(void *a, size_t n, int prot, int flags, int fd, off64_t off)
{
    if (!r_mmap64) { resolve(); if (!r_mmap64) return (void *)syscall(SYS_mmap, a, n, prot, flags, fd, off); }
    if (!TRACKING) return r_mmap64(a, n, prot, flags, fd, off);
    in_hook++;
    void *p = r_mmap64(a, n, prot, flags, fd, off);
    if (p != MAP_FAILED) emit(K_MMAP, (uintptr_t)p, n, (uint64_t)(uint32_t)flags << 32 | (uint32_t)prot, (uint64_t)(int64_t)fd, 0, 1);
    in_hook--;
    return p;
}

EXPORT int munmap(void *a, size_t n)
{
    if (!r_munmap) { resolve(); if (!r_munmap) return (int)syscall(SYS_munmap, a, n); }
    if (!TRACKING) return r_munmap(a, n);
    in_hook++;
    /* Time before the call, for the same reason as free. A failed munmap unmapped nothing. */
    uint64_t t0 = stamp();
    int rc = r_munmap(a, n);
    if (rc == 0) emit(K_MUNMAP, (uintptr_t)a, n, 0, 0, t0, 0);
    in_hook--;
    return rc;
}

EXPORT void *mremap(void *old, size_t old_n, size_t n, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    if (!r_mremap) { resolve(); if (!r_mremap) return (void *)syscall(SYS_mremap, old, old_n, n, flags, want); }
    if (!TRACKING) return r_mremap(old, old_n, n, flags, want);
    in_hook++;
    uint64_t t0 = stamp();
    void *p = r_mremap(old, old_n, n, flags, want);
    if (p != MAP_FAILED) emit(K_MREMAP, (uintptr_t)p, n, (uintptr_t)old, old_n, t0, n >= min_size);
    in_hook--;
    return p;
}

/* ---- process end without exit(): _exit, _Exit, exec ----
 * Shells end with _exit and replace themselves with exec; without these hooks the events
 * still in their buffers would be lost. Only in the process that owns the buffers: a
 * vfork child (same memory, other PID, no fork handlers) must not write them. */

static int owner_process(void)
{
    return active && (uint32_t)getpid() == pid;
}

EXPORT void _exit(int status)
{
    if (!r__exit) resolve();
    if (owner_process()) finish();
    if (r__exit) r__exit(status);
    for (;;) syscall(SYS_exit_group, status);
}

EXPORT void _Exit(int status)
{
    if (!r__Exit) resolve();
    if (owner_process()) finish();
    if (r__Exit) r__Exit(status);
    for (;;) syscall(SYS_exit_group, status);
}

/* Before exec: everything so far is written (as at exit). If exec fails the process goes
 * on: `finished` makes later events go out at once, which is slower but loses nothing. */
#define EXEC_HOOK(name, params, call)                                       \
    EXPORT int name params                                                  \
    {                                                                       \
        if (!r_##name) resolve();                                           \
        if (owner_process()) finish();                                      \
        if (!r_##name) { errno = ENOSYS; return -1; }                       \
        return r_##name call;                                               \
    }

EXEC_HOOK(execve, (const char *f, char *const a[], char *const e[]), (f, a, e))
EXEC_HOOK(execv, (const char *f, char *const a[]), (f, a))
EXEC_HOOK(execvp, (const char *f, char *const a[]), (f, a))
EXEC_HOOK(execvpe, (const char *f, char *const a[], char *const e[]), (f, a, e))

/* ---- C++ operator new ----
 * Interposed itself, not only the malloc under it: libstdc++ is built without frame
 * pointers, so a walk starting in malloc sees operator new and then skips its caller --
 * the very line that allocated. From here our return address is that line. The malloc
 * that operator new makes is not recorded again (in_hook is set). The cleanup attribute
 * (with -fexceptions) resets in_hook when a bad_alloc unwinds through this frame. */

static void hook_done(int *unused)
{
    (void)unused;
    in_hook--;
}

#define NEW_HOOK(sym, params, call, size)                                                 \
    static void *(*r_##sym) params;                                                       \
    EXPORT void *sym params                                                               \
    {                                                                                     \
        if (!r_##sym) r_##sym = (__typeof__(r_##sym))dlsym(RTLD_NEXT, #sym);              \
        if (!r_##sym) {                                                                   \
            void *q = malloc(size ? size : 1); /* no libstdc++ below us: never expected */ \
            if (!q) abort();                                                              \
            return q;                                                                     \
        }                                                                                 \
        if (!TRACKING) return r_##sym call;                                               \
        in_hook++;                                                                        \
        __attribute__((cleanup(hook_done))) int guard = 0;                                \
        (void)guard;                                                                      \
        void *p = r_##sym call;                                                           \
        if (p) emit(K_MALLOC, (uintptr_t)p, size, 0, 0, 0, (size) >= min_size);           \
        return p;                                                                         \
    }

typedef struct nothrow_tag nothrow_tag; /* std::nothrow_t, only passed by reference */
NEW_HOOK(_Znwm, (size_t n), (n), n)
NEW_HOOK(_Znam, (size_t n), (n), n)
NEW_HOOK(_ZnwmRKSt9nothrow_t, (size_t n, const nothrow_tag *t), (n, t), n)
NEW_HOOK(_ZnamRKSt9nothrow_t, (size_t n, const nothrow_tag *t), (n, t), n)
NEW_HOOK(_ZnwmSt11align_val_t, (size_t n, size_t a), (n, a), n)
NEW_HOOK(_ZnamSt11align_val_t, (size_t n, size_t a), (n, a), n)
NEW_HOOK(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const nothrow_tag *t), (n, a, t), n)
NEW_HOOK(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const nothrow_tag *t), (n, a, t), n)
