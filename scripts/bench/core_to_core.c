/* How far apart two of this process's CPUs are, measured: the round trip of one cache line
 * between two threads, printed in the benchmark's header. On a VM the host may put two vCPUs on
 * cores that share a last-level cache or on different core complexes that do not, and a
 * two-thread run whose threads read each other's writes is up to twice as slow in the second
 * case (docs/performance.md); this tells the two apart.
 *
 * Usage: core_to_core ROUNDS REPEATS. Two threads pinned to the first two CPUs the process may
 * run on hand a counter back and forth ROUNDS times (each waits for the other's store, then
 * stores the next value); prints the best of REPEATS runs as nanoseconds per round trip and the
 * two CPUs (a thread that cannot be pinned runs where the OS puts it). Exit 2 on bad arguments
 * or with fewer than two CPUs, 1 if a thread cannot start. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Atomic long line __attribute__((aligned(64)));
static long rounds;
static int cpus[2];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The second thread: answers each odd value with the next even one. */
static void* answer(void* arg) {
    (void)arg;
    pin(cpus[1]); /* unpinned if that fails: the round trips are still answered */
    for (long i = 0; i < rounds; ++i) {
        while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 1) {
        }
        atomic_store_explicit(&line, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ROUNDS REPEATS\n", argv[0]);
        return 2;
    }
    rounds = atol(argv[1]);
    int repeats = atoi(argv[2]);
    if (rounds < 1 || rounds > 100000000 || repeats < 1 || repeats > 1000) {
        fprintf(stderr, "core_to_core: ROUNDS in 1..100000000, REPEATS in 1..1000\n");
        return 2;
    }
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return 1;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; ++c) {
        if (CPU_ISSET(c, &allowed)) cpus[found++] = c;
    }
    if (found < 2) {
        fprintf(stderr, "core_to_core: the process may run on one CPU only\n");
        return 2;
    }
    double best = 0.0;
    for (int r = 0; r < repeats; ++r) {
        atomic_store(&line, 0);
        pthread_t other;
        if (pthread_create(&other, NULL, answer, NULL) != 0) {
            fprintf(stderr, "core_to_core: cannot start a thread\n");
            return 1;
        }
        pin(cpus[0]);
        double t0 = now();
        for (long i = 0; i < rounds; ++i) {
            atomic_store_explicit(&line, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 2) {
            }
        }
        double ns = (now() - t0) / (double)rounds * 1e9;
        pthread_join(other, NULL);
        if (r == 0 || ns < best) best = ns;
    }
    printf("%.0f %d %d\n", best, cpus[0], cpus[1]);
    return 0;
}
