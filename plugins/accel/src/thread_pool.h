/*
 * CpuAcc's thread pool (thread_pool.c): persistent threads that run parallel
 * loops, split into ranges the caller and the workers claim. The backend owns
 * one accel_threads (started with its first workload factory, sized by option
 * num_threads, joined in destroy); workloads reach it through accel_env.threads.
 * Built with C11 atomics (stdatomic.h).
 */
#ifndef ACCEL_THREAD_POOL_H
#define ACCEL_THREAD_POOL_H

#include <stdint.h>

typedef struct accel_threads accel_threads;

/* The largest pool the backend makes (option num_threads). */
#define ACCEL_MAX_THREADS 256

/* fn(ctx, begin, end) processes items [begin, end). */
typedef void (*accel_range_fn)(void* ctx, int64_t begin, int64_t end);

/* A pool of `num_threads` threads in total (the caller of parallel_for counts as
 * one; num_threads == 1 starts no thread and runs everything inline). Returns
 * NULL when out of memory or when a thread cannot be started. */
accel_threads* accel_threads_create(int num_threads);

/* Monotonic nanoseconds (CLOCK_MONOTONIC): what profiled runs time their parts with. */
int64_t accel_now_ns(void);

/* Joins the threads and frees the pool (NULL is a no-op). */
void accel_threads_destroy(accel_threads* threads);

/* Threads in the pool, >= 1 (1 for NULL). */
int accel_threads_count(const accel_threads* threads);

/* Runs fn over [0, n) split into at most 4 * accel_threads_count(threads) contiguous,
 * balanced ranges (the same split whoever runs them), each run once by whichever
 * pool thread claims it first (the caller included: a thread the OS has not
 * scheduled delays nothing), and returns when all are done. Safe to call from
 * several threads at once and from inside fn (a call that finds the pool busy
 * runs inline, serially). threads may be NULL (inline). n <= 0 does nothing. */
void accel_parallel_for(accel_threads* threads, int64_t n, accel_range_fn fn, void* ctx);

/* Like accel_parallel_for, but never gives a thread fewer than `grain` items
 * (so small n runs inline without waking threads). grain <= 1 means 1. */
void accel_parallel_for_grain(accel_threads* threads, int64_t n, int64_t grain, accel_range_fn fn,
                              void* ctx);

/* Like accel_parallel_for_grain, but pool thread t (the caller is 0) owns items
 * [cuts[t], cuts[t + 1]): it runs them first, in order, in 4 ranges, then takes what is left
 * of the others' ranges from their end. Loops given the same cuts run the same items on the
 * same thread as long as the threads keep pace, so a thread reads what it wrote itself.
 * cuts: accel_threads_count(threads) + 1 values, 0 = cuts[0] <= cuts[1] <= ... <= cuts[T] = n,
 * alive until the call returns. Inline (one range) when the pool is NULL, has one thread or
 * is busy, or when n <= grain. */
void accel_parallel_for_owned(accel_threads* threads, int64_t n, int64_t grain, const int64_t* cuts,
                              accel_range_fn fn, void* ctx);

/* Whether the pool's loops run with subnormal results flushed to zero (x86: MXCSR FTZ, set on
 * every thread of a loop and the caller's restored after it; no effect elsewhere). Every thread
 * of a loop otherwise runs with the caller's floating-point mode. Default 0; NULL is a no-op. */
void accel_threads_set_flush_denormals(accel_threads* threads, int flush);

/* The number of CPUs this process may run on (sched_getaffinity), >= 1. */
int accel_available_cpus(void);

#endif /* ACCEL_THREAD_POOL_H */
