/*
 * kairos_requests.h: request markers that let Kairos tell one request from another.
 *
 * A sampler sees where a program spends its time, not which request the time belonged
 * to. A service that calls kairos_request_begin(id) when a request starts and
 * kairos_request_end() when it is done gives Kairos the start, end and thread of every
 * request, so that a slow request can be matched with what the profile saw during it.
 *
 * The markers write into a ring of fixed-size records inside the program. Kairos (another
 * process) finds the ring through the ELF section "kairos_requests" (section headers
 * survive strip), sets `attached` with process_vm_writev and reads the records with
 * process_vm_readv. While `attached` is 0 a marker costs one load and one branch; while
 * it is set, a clock read (clock_gettime(CLOCK_MONOTONIC), vDSO, no system call), one
 * atomic add, six stores and a release fence. The thread id is read once per thread
 * (syscall(SYS_gettid)) and cached. The writer never waits: a reader that falls behind by
 * more than the ring's capacity loses the oldest records, and sees that it did by their
 * `seq`.
 *
 * Use (stb style): include this header wherever markers are called; in exactly one
 * translation unit define KAIROS_REQUESTS_IMPLEMENTATION before including it, which
 * defines the ring, its record array (zero-initialised, .bss), and the out-of-line
 * kairos_request_begin_extern / kairos_request_end_extern for other languages (Rust's
 * `extern "C"`). KAIROS_REQUESTS_CAPACITY (records, a power of two, default 65536 =
 * 2 MiB of .bss) may be defined in that unit to change the ring's size.
 *
 * ABI (version 1; 64-bit little-endian Linux, x86-64 and aarch64; the reader depends on
 * these offsets, checked by the static assertions below):
 *
 *   struct kairos_request_ring, 64 bytes, 64-byte aligned, alone in section
 *   "kairos_requests":
 *     0  char     magic[16]     "kairos-requests" and a NUL
 *     16 uint32_t version       1
 *     20 uint32_t capacity      records in the array, a power of two
 *     24 uint32_t record_size   32
 *     28 uint32_t attached      nonzero while a profiler reads; written by the profiler only
 *     32 uint64_t head          records claimed so far (atomic fetch-add, relaxed)
 *     40 uint64_t records       address of the record array
 *     48 uint64_t read          records the profiler has copied; written by the profiler only
 *     56 uint64_t reserved      0
 *
 *   struct kairos_request_record, 32 bytes; record number n (0, 1, ...) is in slot
 *   n & (capacity - 1):
 *     0  uint64_t seq           n + 1 once the record is complete; 0 while it is written
 *     8  uint64_t time_ns       CLOCK_MONOTONIC
 *     16 uint64_t id            the request's id for a begin, 0 for an end
 *     24 uint32_t tid           kernel thread id of the writer
 *     28 uint32_t kind          1 = begin, 2 = end
 *
 * Writing record n: claim n = fetch_add(head, 1); store seq = 0; release fence; store
 * time_ns, id, tid, kind; store seq = n + 1 with release ordering. A reader copies a
 * slot, copies it again, and keeps it when both copies are equal and seq is nonzero:
 * a slot being rewritten has seq 0, and a complete one never changes but to a larger seq.
 * Records are written only while `attached` is set; requests that began before Kairos
 * attached are not seen, nor the end of a request whose begin was (or the other way).
 * A program Kairos launches is attached from its start (KAIROS_REQUESTS=attach in its
 * environment, read once by a constructor), so none of its requests is missed.
 * A child made by fork inherits the ring as it was, `attached` included.
 *
 * Needs: GCC or Clang (atomic builtins, __thread), POSIX clocks (the default unless a
 * strict -std=c11 without feature macros is used), and on glibc older than 2.34 -pthread
 * for the unit that holds the implementation (pthread_atfork).
 */
#ifndef KAIROS_REQUESTS_H
#define KAIROS_REQUESTS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define KAIROS_REQUESTS_MAGIC "kairos-requests" /* 15 chars + NUL = 16 bytes */
#define KAIROS_REQUESTS_VERSION 1
#ifndef KAIROS_REQUESTS_CAPACITY
#define KAIROS_REQUESTS_CAPACITY 65536 /* records, must be a power of two */
#endif
#define KAIROS_REQUESTS_SECTION "kairos_requests"
#define KAIROS_REQUEST_KIND_BEGIN 1u
#define KAIROS_REQUEST_KIND_END 2u

#ifdef __cplusplus
#define KAIROS_REQUESTS_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
extern "C" {
#else
#define KAIROS_REQUESTS_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Inlined into callers, and never reported as calls by -finstrument-functions builds. */
#define KAIROS_REQUESTS_INLINE \
    static inline __attribute__((always_inline, no_instrument_function))

struct kairos_request_record { /* 32 bytes */
    uint64_t seq;     /* 0: record number + 1, stored last with release ordering; 0 while written */
    uint64_t time_ns; /* 8: CLOCK_MONOTONIC */
    uint64_t id;      /* 16: request id for a begin, 0 for an end */
    uint32_t tid;     /* 24: kernel thread id */
    uint32_t kind;    /* 28: 1 = begin, 2 = end */
};

struct kairos_request_ring { /* 64 bytes */
    char magic[16];                         /* 0: KAIROS_REQUESTS_MAGIC */
    uint32_t version;                       /* 16: KAIROS_REQUESTS_VERSION */
    uint32_t capacity;                      /* 20: records, a power of two */
    uint32_t record_size;                   /* 24: 32 */
    uint32_t attached;                      /* 28: nonzero while a profiler reads; profiler writes */
    uint64_t head;                          /* 32: records claimed so far */
    struct kairos_request_record *records;  /* 40: address of the record array */
    uint64_t read;                          /* 48: records copied; profiler writes */
    uint64_t reserved;                      /* 56: 0 */
};

KAIROS_REQUESTS_STATIC_ASSERT(sizeof(void *) == 8, "kairos_requests: 64-bit targets only");
KAIROS_REQUESTS_STATIC_ASSERT(sizeof(struct kairos_request_record) == 32, "record size");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_record, seq) == 0, "record.seq");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_record, time_ns) == 8, "record.time_ns");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_record, id) == 16, "record.id");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_record, tid) == 24, "record.tid");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_record, kind) == 28, "record.kind");
KAIROS_REQUESTS_STATIC_ASSERT(sizeof(struct kairos_request_ring) == 64, "ring size");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, magic) == 0, "ring.magic");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, version) == 16, "ring.version");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, capacity) == 20, "ring.capacity");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, record_size) == 24, "ring.record_size");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, attached) == 28, "ring.attached");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, head) == 32, "ring.head");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, records) == 40, "ring.records");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, read) == 48, "ring.read");
KAIROS_REQUESTS_STATIC_ASSERT(offsetof(struct kairos_request_ring, reserved) == 56, "ring.reserved");
KAIROS_REQUESTS_STATIC_ASSERT(sizeof(KAIROS_REQUESTS_MAGIC) == 16, "magic is 15 chars + NUL");

/* Defined by the unit with KAIROS_REQUESTS_IMPLEMENTATION. */
extern struct kairos_request_ring kairos_request_ring;
/* This thread's kernel id, 0 until its first marker while attached (and after fork).
 * initial-exec: a plain thread-pointer-relative access, no __tls_get_addr call. */
extern __thread uint32_t kairos_request_tid_cache __attribute__((tls_model("initial-exec")));
/* Reads the thread id with syscall(SYS_gettid) and caches it. */
uint32_t kairos_request_tid_slow(void);
/* Out-of-line markers for callers that cannot inline C (Rust, other FFI). */
void kairos_request_begin_extern(uint64_t id);
void kairos_request_end_extern(void);

KAIROS_REQUESTS_INLINE void kairos_request__write(uint64_t id, uint32_t kind)
{
    struct kairos_request_ring *r = &kairos_request_ring;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint32_t tid = kairos_request_tid_cache;
    if (__builtin_expect(tid == 0, 0))
        tid = kairos_request_tid_slow();
    uint64_t n = __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
    struct kairos_request_record *s = &r->records[n & (uint64_t)(r->capacity - 1)];
    /* seq 0 first: a reader never takes a half-written slot for a complete one. */
    __atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&s->time_ns, now, __ATOMIC_RELAXED);
    __atomic_store_n(&s->id, id, __ATOMIC_RELAXED);
    __atomic_store_n(&s->tid, tid, __ATOMIC_RELAXED);
    __atomic_store_n(&s->kind, kind, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, n + 1, __ATOMIC_RELEASE);
}

/* A request with this id starts on the calling thread. */
KAIROS_REQUESTS_INLINE void kairos_request_begin(uint64_t id)
{
    if (__builtin_expect(!__atomic_load_n(&kairos_request_ring.attached, __ATOMIC_RELAXED), 1))
        return;
    kairos_request__write(id, KAIROS_REQUEST_KIND_BEGIN);
}

/* The calling thread's current request is done. */
KAIROS_REQUESTS_INLINE void kairos_request_end(void)
{
    if (__builtin_expect(!__atomic_load_n(&kairos_request_ring.attached, __ATOMIC_RELAXED), 1))
        return;
    kairos_request__write(0, KAIROS_REQUEST_KIND_END);
}

#ifdef __cplusplus
}
#endif
#endif /* KAIROS_REQUESTS_H */

#if defined(KAIROS_REQUESTS_IMPLEMENTATION) && !defined(KAIROS_REQUESTS_IMPLEMENTED)
#define KAIROS_REQUESTS_IMPLEMENTED

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

KAIROS_REQUESTS_STATIC_ASSERT(KAIROS_REQUESTS_CAPACITY >= 2 &&
                                  KAIROS_REQUESTS_CAPACITY <= 0x80000000u &&
                                  (KAIROS_REQUESTS_CAPACITY & (KAIROS_REQUESTS_CAPACITY - 1)) == 0,
                              "KAIROS_REQUESTS_CAPACITY must be a power of two, 2 to 2^31");

#ifdef __cplusplus
extern "C" {
#elif defined(__GLIBC__) && !defined(__USE_MISC)
/* A strict -std=c.. hides syscall(); its declaration is fixed. */
extern long syscall(long number, ...);
#endif

struct kairos_request_record kairos_request_records[KAIROS_REQUESTS_CAPACITY]
    __attribute__((aligned(64)));

struct kairos_request_ring kairos_request_ring
    __attribute__((section("kairos_requests"), used, aligned(64))) = {
        KAIROS_REQUESTS_MAGIC,    KAIROS_REQUESTS_VERSION, KAIROS_REQUESTS_CAPACITY,
        sizeof(struct kairos_request_record), 0, 0, kairos_request_records, 0, 0};

__thread uint32_t kairos_request_tid_cache __attribute__((tls_model("initial-exec")));

__attribute__((noinline, cold, no_instrument_function)) uint32_t kairos_request_tid_slow(void)
{
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    kairos_request_tid_cache = tid;
    return tid;
}

/* The child of fork runs on a thread with another id: forget the cached one. */
__attribute__((no_instrument_function)) static void kairos_request__after_fork(void)
{
    kairos_request_tid_cache = 0;
}

/* At exit, while a profiler reads: wait (at most 100 ms) until it has copied the last
 * records, which would otherwise go with the process. */
__attribute__((no_instrument_function)) static void kairos_request__at_exit(void)
{
    if (!__atomic_load_n(&kairos_request_ring.attached, __ATOMIC_RELAXED))
        return;
    uint64_t head = __atomic_load_n(&kairos_request_ring.head, __ATOMIC_ACQUIRE);
    struct timespec pause = {0, 200000};
    for (int i = 0; i < 500; i++) {
        if (__atomic_load_n(&kairos_request_ring.read, __ATOMIC_ACQUIRE) >= head)
            return;
        nanosleep(&pause, NULL);
    }
}

/* A program Kairos launches gets KAIROS_REQUESTS=attach in its environment: it records
 * from its first request on, and Kairos reads the ring from its first record once it has
 * found it, so no request is missed while Kairos looks for the ring. */
__attribute__((constructor, no_instrument_function)) static void kairos_request__init(void)
{
    pthread_atfork(NULL, NULL, kairos_request__after_fork);
    atexit(kairos_request__at_exit);
    const char *want = getenv("KAIROS_REQUESTS");
    if (want != NULL && strcmp(want, "attach") == 0)
        __atomic_store_n(&kairos_request_ring.attached, 1, __ATOMIC_RELAXED);
}

__attribute__((no_instrument_function)) void kairos_request_begin_extern(uint64_t id)
{
    kairos_request_begin(id);
}

__attribute__((no_instrument_function)) void kairos_request_end_extern(void)
{
    kairos_request_end();
}

#ifdef __cplusplus
}
#endif
#endif /* KAIROS_REQUESTS_IMPLEMENTATION */
