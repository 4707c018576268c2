/* Stress driver for CpuAcc's thread pool (plugins/accel/src/pool.c), built and run by
 * test_pool_race.py: usage `pool_stress THREADS ITERATIONS`. Back-to-back parallel loops of
 * 1..500 items, alternating between two functions and two contexts on the caller's stack;
 * every item must run exactly once, with its own loop's function and context, and no part
 * may run after its loop returned. Exit status 0 and "ok" on stdout, else a message on stderr
 * and abort(). */
#include "accel.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_ITEMS 512

typedef struct loop {
    atomic_int* hits;
    int tag; /* 0xA or 0xB while the loop runs, 0xDEAD after it returned */
} loop;

static void check_tag(const loop* l, int want) {
    if (l->tag != want) {
        fprintf(stderr, "a part ran with the context of another loop (tag %#x, want %#x)\n", l->tag, want);
        abort();
    }
}

static void run_a(void* ctx, int64_t begin, int64_t end) {
    loop* l = (loop*)ctx;
    check_tag(l, 0xA);
    for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&l->hits[i], 1);
}

static void run_b(void* ctx, int64_t begin, int64_t end) {
    loop* l = (loop*)ctx;
    check_tag(l, 0xB);
    for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&l->hits[i], 1);
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: pool_stress THREADS ITERATIONS\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    long iterations = atol(argv[2]);
    accel_pool* pool = accel_pool_create(threads);
    if (pool == NULL) {
        fprintf(stderr, "cannot create a pool of %d threads\n", threads);
        return 1;
    }
    atomic_int hits[MAX_ITEMS];
    for (long it = 0; it < iterations; ++it) {
        int64_t n = 1 + (it * 7919) % (MAX_ITEMS - 12);
        for (int64_t i = 0; i < n; ++i) atomic_store(&hits[i], 0);
        loop l = {hits, (it & 1) ? 0xA : 0xB};
        accel_parallel_for(pool, n, (it & 1) ? run_a : run_b, &l);
        l.tag = 0xDEAD;
        for (int64_t i = 0; i < n; ++i) {
            if (atomic_load(&hits[i]) != 1) {
                fprintf(stderr, "loop %ld: item %ld of %ld ran %d times\n", it, (long)i, (long)n,
                        atomic_load(&hits[i]));
                abort();
            }
        }
    }
    accel_pool_destroy(pool);
    printf("ok: %ld loops on %d threads\n", iterations, threads);
    return 0;
}
