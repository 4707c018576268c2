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

/* Chains in named variables: an array of vectors indexed in a loop ends up on the stack. */
#define REP8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define REP10(X) REP8(X) X(8) X(9)
#define REP12(X) REP10(X) X(10) X(11)
#define REP14(X) REP12(X) X(12) X(13)
#define REP16(X) REP14(X) X(14) X(15)
#define REP20(X) REP16(X) X(16) X(17) X(18) X(19)
#define REP24(X) REP20(X) X(20) X(21) X(22) X(23)
#define REP30(X) REP24(X) X(24) X(25) X(26) X(27) X(28) X(29)

/* The kernels use V (the vector type), V_SET1, V_MUL, V_ADD, V_FMA and V_LANES as defined where
 * KERNEL is expanded. Each returns the sum of its chains' lanes, so no chain is dead code. */
#define INIT(i) V acc##i = V_MUL(a, V_SET1((float)((i) + 1)));
#define STEP(i) acc##i = V_FMA(acc##i, m, a);
#define SUM(i) total = V_ADD(total, acc##i);
#define KERNEL(NAME, REP)                                               \
    __attribute__((noinline)) static float NAME(long rounds, float mul, float add) { \
        const V m = V_SET1(mul), a = V_SET1(add);                       \
        REP(INIT)                                                       \
        for (long r = 0; r < rounds; ++r) {                             \
            REP(STEP)                                                   \
        }                                                               \
        V total = V_SET1(0.0f);                                         \
        REP(SUM)                                                        \
        float lanes[V_LANES], s = 0.0f;                                 \
        __builtin_memcpy(lanes, &total, sizeof(total));                 \
        for (int l = 0; l < V_LANES; ++l) s += lanes[l];                \
        return s;                                                       \
    }

typedef float (*kernel_fn)(long rounds, float mul, float add);
typedef struct {
    int lanes, chains;
    kernel_fn run;
} variant;

#if defined(__AVX512F__)
#define V __m512
#define V_LANES 16
#define V_SET1 _mm512_set1_ps
#define V_MUL _mm512_mul_ps
#define V_ADD _mm512_add_ps
#define V_FMA _mm512_fmadd_ps
KERNEL(zmm_8, REP8)
KERNEL(zmm_12, REP12)
KERNEL(zmm_16, REP16)
KERNEL(zmm_20, REP20)
KERNEL(zmm_24, REP24)
KERNEL(zmm_30, REP30)
#undef V
#undef V_LANES
#undef V_SET1
#undef V_MUL
#undef V_ADD
#undef V_FMA
#endif

#if defined(__AVX__) && defined(__FMA__)
#define V __m256
#define V_LANES 8
#define V_SET1 _mm256_set1_ps
#define V_MUL _mm256_mul_ps
#define V_ADD _mm256_add_ps
#define V_FMA _mm256_fmadd_ps
KERNEL(ymm_8, REP8)
KERNEL(ymm_10, REP10)
KERNEL(ymm_12, REP12)
KERNEL(ymm_14, REP14)
#if defined(__AVX512F__) /* AVX-512VL: 32 registers for 256-bit vectors too */
KERNEL(ymm_16, REP16)
KERNEL(ymm_20, REP20)
KERNEL(ymm_24, REP24)
KERNEL(ymm_30, REP30)
#endif
#undef V
#undef V_LANES
#undef V_SET1
#undef V_MUL
#undef V_ADD
#undef V_FMA
#else
/* No FMA instructions in this build (or not x86): 128-bit vectors, a * b + c as the compiler
 * sees fit (an FMA where it can contract, else a multiply and an add, the peak of such a CPU). */
typedef float vec4 __attribute__((vector_size(16)));
static vec4 set1_4(float x) { return (vec4){x, x, x, x}; }
#define V vec4
#define V_LANES 4
#define V_SET1 set1_4
#define V_MUL(x, y) ((x) * (y))
#define V_ADD(x, y) ((x) + (y))
#define V_FMA(x, y, z) ((x) * (y) + (z))
KERNEL(xmm_8, REP8)
KERNEL(xmm_10, REP10)
KERNEL(xmm_12, REP12)
KERNEL(xmm_14, REP14)
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
