/* The float32 FMA peak of this machine, measured: the benchmark's "% peak" for GFLOP/s rows.
 *
 * Usage: fma_peak THREADS MILLISECONDS REPEATS. For every kernel variant this build has (below),
 * THREADS threads each warm up on their core, meet at a barrier, then run the variant for about
 * MILLISECONDS; the best of REPEATS such runs is printed as one line "LANES CHAINS GFLOP/s"
 * (2 flop per lane per FMA, all threads together). The caller takes the best line: the peak, and
 * the vector width and chain count that reached it. Exit 2 on bad arguments, 1 if a thread cannot
 * start.
 *
 * A variant is CHAINS independent chains acc = acc * m + a of vectors of LANES floats, in
 * registers, each step one FMA instruction. It reaches the peak when CHAINS covers the FMA
 * latency on every FMA pipe (Zen 3/4/5 and Intel since Skylake: 4 cycles x 2 pipes = 8), so the
 * counts go from 8 to as many as the register file holds next to m and a: 14 with 16 vector
 * registers, 30 with AVX-512's 32. Built at -march=native (scripts/bench/machine.py), it has
 * 512-bit variants on AVX-512 machines and 256-bit ones on AVX machines with FMA: both on an
 * AVX-512 machine, since one with a single 512-bit FMA unit, or one that lowers its clock for
 * 512-bit work, peaks with 256-bit vectors. What this guards against, each a way an earlier
 * version (12 chains of the widest vector, 10 on AVX2, timed from a cold start) could under-read:
 *  - FMAs written as intrinsics, not as a * b + c left to the compiler's -ffp-contract (a
 *    compiler that does not contract emits a multiply and an add: half the rate where they share
 *    the FMA pipes, as on Intel, and twice the latency to cover);
 *  - the chains start from different values, so a compiler cannot merge two of them;
 *  - every step is an FMA on registers only: tests/bench checks the loops with objdump (a chain
 *    spilled to memory, or a load per FMA, would show there);
 *  - each thread warms up on its core before the barrier (a quarter of a run; four runs before
 *    the first one), so the clock has ramped up and (on Intel) the core has the power license
 *    for wide FMAs before anything is timed; and the length of a run is calibrated on this
 *    machine, not a fixed iteration count that takes a few milliseconds on a fast core. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__) || (defined(__AVX__) && defined(__FMA__))
#include <immintrin.h>
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Chains in named variables: an array of vectors indexed in a loop ends up on the stack. X(i, T, P)
 * is one chain's code, T the vector type, P the prefix of its operations (P##_fmadd_ps, ...). */
#define REP8(X, T, P) X(0, T, P) X(1, T, P) X(2, T, P) X(3, T, P) X(4, T, P) X(5, T, P) X(6, T, P) X(7, T, P)
#define REP10(X, T, P) REP8(X, T, P) X(8, T, P) X(9, T, P)
#define REP12(X, T, P) REP10(X, T, P) X(10, T, P) X(11, T, P)
#define REP14(X, T, P) REP12(X, T, P) X(12, T, P) X(13, T, P)
#define REP16(X, T, P) REP14(X, T, P) X(14, T, P) X(15, T, P)
#define REP20(X, T, P) REP16(X, T, P) X(16, T, P) X(17, T, P) X(18, T, P) X(19, T, P)
#define REP24(X, T, P) REP20(X, T, P) X(20, T, P) X(21, T, P) X(22, T, P) X(23, T, P)
#define REP30(X, T, P) REP24(X, T, P) X(24, T, P) X(25, T, P) X(26, T, P) X(27, T, P) X(28, T, P) X(29, T, P)

/* A kernel runs its chains `rounds` times and returns the sum of their lanes, so no chain is
 * dead code. */
#define INIT(i, T, P) T acc##i = P##_mul_ps(a, P##_set1_ps((float)((i) + 1)));
#define STEP(i, T, P) acc##i = P##_fmadd_ps(acc##i, m, a);
#define SUM(i, T, P) total = P##_add_ps(total, acc##i);
#define KERNEL(NAME, REP, T, P)                                         \
    __attribute__((noinline)) static float NAME(long rounds, float mul, float add) { \
        const T m = P##_set1_ps(mul), a = P##_set1_ps(add);             \
        REP(INIT, T, P)                                                 \
        for (long r = 0; r < rounds; ++r) {                             \
            REP(STEP, T, P)                                             \
        }                                                               \
        T total = P##_set1_ps(0.0f);                                    \
        REP(SUM, T, P)                                                  \
        float lanes[sizeof(T) / sizeof(float)], s = 0.0f;               \
        __builtin_memcpy(lanes, &total, sizeof(total));                 \
        for (unsigned l = 0; l < sizeof(T) / sizeof(float); ++l) s += lanes[l]; \
        return s;                                                       \
    }

typedef float (*kernel_fn)(long rounds, float mul, float add);
typedef struct {
    int lanes, chains;
    kernel_fn run;
} variant;

#if defined(__AVX512F__)
KERNEL(zmm_8, REP8, __m512, _mm512)
KERNEL(zmm_12, REP12, __m512, _mm512)
KERNEL(zmm_16, REP16, __m512, _mm512)
KERNEL(zmm_20, REP20, __m512, _mm512)
KERNEL(zmm_24, REP24, __m512, _mm512)
KERNEL(zmm_30, REP30, __m512, _mm512)
#endif

#if defined(__AVX__) && defined(__FMA__)
KERNEL(ymm_8, REP8, __m256, _mm256)
KERNEL(ymm_10, REP10, __m256, _mm256)
KERNEL(ymm_12, REP12, __m256, _mm256)
KERNEL(ymm_14, REP14, __m256, _mm256)
#if defined(__AVX512F__) /* AVX-512VL: 32 registers for 256-bit vectors too */
KERNEL(ymm_16, REP16, __m256, _mm256)
KERNEL(ymm_20, REP20, __m256, _mm256)
KERNEL(ymm_24, REP24, __m256, _mm256)
KERNEL(ymm_30, REP30, __m256, _mm256)
#endif
#else
/* No FMA instructions in this build (or not x86): 128-bit vectors, a * b + c as the compiler
 * sees fit (an FMA where it can contract, else a multiply and an add, the peak of such a CPU). */
typedef float v4 __attribute__((vector_size(16)));
static inline v4 v4_set1_ps(float x) { return (v4){x, x, x, x}; }
static inline v4 v4_mul_ps(v4 x, v4 y) { return x * y; }
static inline v4 v4_add_ps(v4 x, v4 y) { return x + y; }
static inline v4 v4_fmadd_ps(v4 x, v4 y, v4 z) { return x * y + z; }
KERNEL(xmm_8, REP8, v4, v4)
KERNEL(xmm_10, REP10, v4, v4)
KERNEL(xmm_12, REP12, v4, v4)
KERNEL(xmm_14, REP14, v4, v4)
#endif

static const variant VARIANTS[] = {
#if defined(__AVX512F__)
    {16, 8, zmm_8}, {16, 12, zmm_12}, {16, 16, zmm_16}, {16, 20, zmm_20}, {16, 24, zmm_24}, {16, 30, zmm_30},
#endif
#if defined(__AVX__) && defined(__FMA__)
    {8, 8, ymm_8}, {8, 10, ymm_10}, {8, 12, ymm_12}, {8, 14, ymm_14},
#if defined(__AVX512F__)
    {8, 16, ymm_16}, {8, 20, ymm_20}, {8, 24, ymm_24}, {8, 30, ymm_30},
#endif
#else
    {4, 8, xmm_8}, {4, 10, xmm_10}, {4, 12, xmm_12}, {4, 14, xmm_14},
#endif
};

typedef struct {
    kernel_fn run;
    long rounds, warmup_rounds;
    float add;     /* differs per thread; read at run time, so the compiler cannot fold the chains */
    float sink;    /* the kernel's result */
    double t0, t1; /* when this thread started and finished its timed run */
    pthread_barrier_t* start;
} job;

float fma_peak_mul = 0.999999f; /* a global the compiler cannot see through; the chains tend to 1 */

static void* work(void* arg) {
    job* j = (job*)arg;
    float s = j->run(j->warmup_rounds, fma_peak_mul, j->add); /* warm-up on this thread's core */
    pthread_barrier_wait(j->start);
    j->t0 = now();
    s += j->run(j->rounds, fma_peak_mul, j->add);
    j->t1 = now();
    j->sink = s;
    return NULL;
}

/* THREADS threads: each warms up for warmup_rounds, then all run `rounds` together. GFLOP/s of
 * the timed part, from the first thread's start to the last one's end as the threads saw them
 * (the main thread may be descheduled past the barrier, and on a small machine often is);
 * -1 if a thread cannot start. */
static double measure(const variant* v, int threads, long rounds, long warmup_rounds, float* sink) {
    pthread_t tid[1024];
    job jobs[1024];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int t = 0; t < threads; ++t) {
        jobs[t] = (job){v->run, rounds, warmup_rounds, 1e-6f * (float)(t + 1), 0.0f, 0.0, 0.0, &start};
        if (pthread_create(&tid[t], NULL, work, &jobs[t]) != 0) {
            fprintf(stderr, "fma_peak: cannot start thread %d\n", t);
            return -1.0;
        }
    }
    double t0 = 0.0, t1 = 0.0;
    for (int t = 0; t < threads; ++t) {
        pthread_join(tid[t], NULL);
        *sink += jobs[t].sink;
        if (t == 0 || jobs[t].t0 < t0) t0 = jobs[t].t0;
        if (t == 0 || jobs[t].t1 > t1) t1 = jobs[t].t1;
    }
    pthread_barrier_destroy(&start);
    return 2.0 * v->lanes * v->chains * (double)rounds * threads / (t1 - t0) / 1e9;
}

/* Rounds of `v` that take about `seconds` on one thread of this machine, measured. */
static long calibrate(const variant* v, double seconds, float* sink) {
    long rounds = 1000;
    for (;;) {
        double t0 = now();
        *sink += v->run(rounds, fma_peak_mul, 1e-6f);
        double elapsed = now() - t0;
        if (elapsed >= seconds / 4 || rounds > (1L << 40)) {
            double scaled = (double)rounds * seconds / (elapsed > 1e-9 ? elapsed : 1e-9);
            return scaled < 1.0 ? 1 : (long)scaled;
        }
        rounds *= elapsed < seconds / 64 ? 8 : 2;
    }
}

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s THREADS MILLISECONDS REPEATS\n", argv[0]);
        return 2;
    }
    char* end[3];
    long threads = strtol(argv[1], &end[0], 10), ms = strtol(argv[2], &end[1], 10);
    long repeats = strtol(argv[3], &end[2], 10);
    if (*end[0] || *end[1] || *end[2] || threads < 1 || threads > 1024 || ms < 1 || ms > 60000 || repeats < 1 ||
        repeats > 1000) {
        fprintf(stderr, "fma_peak: THREADS in 1..1024, MILLISECONDS in 1..60000, REPEATS in 1..1000\n");
        return 2;
    }
    const double seconds = (double)ms / 1e3;
    float sink = 0.0f;
    const int count = (int)(sizeof(VARIANTS) / sizeof(VARIANTS[0]));
    for (int i = 0; i < count; ++i) {
        const variant* v = &VARIANTS[i];
        long rounds = calibrate(v, seconds, &sink);
        double best = 0.0;
        for (long r = 0; r < repeats; ++r) {
            /* every thread warms up for a quarter of a run; before the first one, for four runs */
            long warmup = i == 0 && r == 0 ? 4 * rounds : rounds / 4 + 1;
            double gflops = measure(v, (int)threads, rounds, warmup, &sink);
            if (gflops < 0) return 1;
            if (gflops > best) best = gflops;
        }
        printf("%d %d %.1f\n", v->lanes, v->chains, best);
    }
    /* sink is never NaN (the chains tend to 1); testing it keeps every chain's result live */
    return sink != sink ? 3 : 0;
}
