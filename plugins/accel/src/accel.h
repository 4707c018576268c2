/*
 * CpuAcc private header: CPU feature detection, the vector kernel tables, what
 * every create function receives (accel_env; the create functions are declared
 * in families.h), and the workload state shared by the memory-bound kernel
 * families.
 *
 * How a workload reaches the thread pool (thread_pool.h): the backend owns one
 * accel_threads (started with its first workload factory, sized by option
 * num_threads, joined in destroy; a later num_threads starts a new pool for
 * later factories and keeps the old one, which earlier workloads may use,
 * until destroy). Each workload factory copies the backend's accel_env (pool +
 * selected ISA) and hands a pointer to it to every create function; a workload
 * copies the accel_env by value (pool pointer + isa) and uses env.threads in
 * execute(). The runtime destroys every workload before the backend, so the
 * pool outlives every workload that points at it.
 */
#ifndef ACCEL_H
#define ACCEL_H

#include "plugnn/plugin_common.h"
#include "plugnn/pn_validate.h"
#include "thread_pool.h"

#include <stddef.h>
#include <stdint.h>

/* ---- CPU features (cpu.c) --------------------------------------------------- */

typedef enum accel_isa {
    ACCEL_ISA_PORTABLE = 0, /* plain C, every architecture */
    ACCEL_ISA_AVX2 = 1,     /* x86-64 AVX2 + FMA */
    ACCEL_ISA_AVX512 = 2    /* x86-64 AVX-512 F/DQ/BW/VL + FMA */
} accel_isa;

/* The best ISA both compiled in and supported by this CPU. */
accel_isa accel_detect_isa(void);
/* Bytes of the largest cache Linux lists for CPU 0 (the last level); 32 MiB when it lists none. */
int64_t accel_llc_bytes(void);
const char* accel_isa_name(accel_isa isa); /* "portable", "avx2", "avx512" */

/* ---- Vector kernels (kern_table.h, compiled once per ISA) ------------------- */

/* Pooling parameters of one layer, resolved for the kernels. */
typedef struct accel_pooling_params {
    int kind;                      /* pn_pooling_kind */
    int include_padding;           /* AVERAGE with PN_PADDING_INCLUDE */
    float p;                       /* LP order */
    int64_t ih, iw, oh, ow, c;     /* input/output spatial sizes; channels (NHWC rows) */
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl, pb, pr;        /* padding */
    int stream_out;                /* store the output non-temporally (accel_streams) */
} accel_pooling_params;

/* Depthwise convolution parameters of one layer, resolved for the kernels (weights, bias and
 * addend are passed per call). */
typedef struct accel_dw_params {
    int64_t ih, iw, oh, ow, c;     /* input/output spatial sizes; channels (NHWC, multiplier 1) */
    int64_t kh, kw, sh, sw, dh, dw;
    int64_t pt, pl;                /* padding before (after: implied by oh/ow) */
    const pn_activation_desc* act; /* the fused activation, or NULL */
} accel_dw_params;

/* Floats of the buffer the NCHW pooling and depthwise kernels keep on the stack: the padded
 * input of a block of output rows split into stride sub-planes (layers that cannot fit one
 * output row take a direct fallback). */
#define ACCEL_ROWBUF_FLOATS 12288
/* Window taps (kh * kw) the sub-plane pooling and the depthwise kernels take at most
 * (dw_nhwc requires it; the NCHW kernels fall back to a direct loop above it). */
#define ACCEL_TAPS_MAX 64

/* The elementwise functions of kern_math.h (accel_kernels.math_row); accuracy in README.md. */
typedef enum accel_math_fn {
    ACCEL_MATH_EXP = 0,
    ACCEL_MATH_EXPM1 = 1,
    ACCEL_MATH_LOG = 2,
    ACCEL_MATH_TANH = 3,
    ACCEL_MATH_SIGMOID = 4,
    ACCEL_MATH_ERF = 5,
    ACCEL_MATH_PHI = 6 /* the standard normal CDF (1 + erf(x / sqrt 2)) / 2, GELU's factor */
} accel_math_fn;

typedef struct accel_kernels {
    /* y[i] = act(x[i]) (x == y allowed). */
    void (*activation)(const pn_activation_desc* act, const float* x, float* y, int64_t n);
    /* y[i] = a[i*sa] op b[i*sb], sa/sb in {0, 1} (y may equal a or b when its stride is 1). */
    void (*binary_row)(pn_binary_op op, const float* a, int sa, const float* b, int sb, float* y,
                       int64_t n);
    /* Max of x[0..n) (NaN wins), -inf for n == 0. */
    float (*max_row)(const float* x, int64_t n);
    /* y[i] = exp(x[i] - m); returns the sum of y. */
    float (*exp_sub_sum)(const float* x, float m, float* y, int64_t n);
    /* y[i] *= s. */
    void (*scale)(float* y, float s, int64_t n);
    /* Column forms for softmax over a non-last axis: m[i] = max(m[i], x[i]) (NaN wins),
     * y[i] = exp(x[i] - m[i]), s[i] += y[i], y[i] *= r[i]. */
    void (*max_cols)(float* m, const float* x, int64_t n);
    void (*exp_sub_cols)(const float* x, const float* m, float* y, float* s, int64_t n);
    void (*mul_cols)(float* y, const float* r, int64_t n);
    /* Pooling: NCHW output rows [oy0, oy1) of one plane; NHWC output rows [oy0, oy1) of one
     * image (x/y point at the image). */
    void (*pool_nchw)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                      int64_t oy1);
    void (*pool_nhwc)(const accel_pooling_params* pp, const float* x, float* y, int64_t oy0,
                      int64_t oy1);
    /* Sum of x[0..n) (lane-parallel partial sums: a fixed order for a given n). */
    float (*sum_row)(const float* x, int64_t n);
    /* Depthwise NCHW: output rows [oy0, oy1) of one output plane y = bias + conv(x, w) (x is
     * the input plane, w the kh*kw weights), + addend plane (or NULL), then dp->act. */
    void (*dw_nchw)(const accel_dw_params* dp, const float* x, const float* w, float bias,
                    const float* addend, float* y, int64_t oy0, int64_t oy1);
    /* Depthwise NHWC with multiplier 1 and kh * kw <= ACCEL_TAPS_MAX: output rows [oy0, oy1) of one image (x, y, addend at
     * the image); wt is the weights transposed to [kh*kw][c]; bias [c] or NULL. */
    void (*dw_nhwc)(const accel_dw_params* dp, const float* x, const float* wt, const float* bias,
                    const float* addend, float* y, int64_t oy0, int64_t oy1);
    /* activation and binary_row (then act, when not NULL) storing y non-temporally, for
     * layers larger than the last-level cache (accel_op.stream_out). */
    void (*activation_stream)(const pn_activation_desc* act, const float* x, float* y, int64_t n);
    void (*binary_row_stream)(pn_binary_op op, const float* a, int sa, const float* b, int sb,
                              const pn_activation_desc* act, float* y, int64_t n);
    /* y[i] = fn(x[i]) (x == y allowed): the functions the activations are built from, one
     * row at a time (tests/cpuacc/test_vector_math.py measures their accuracy through it). */
    void (*math_row)(accel_math_fn fn, const float* x, float* y, int64_t n);
} accel_kernels;

/* The kernel table of an ISA (one compiled in: never NULL). */
const accel_kernels* accel_kernels_for(accel_isa isa);

/* ---- What every create function receives (families.h) ---------------------- */

typedef struct accel_env {
    accel_threads* threads; /* the backend's thread pool; never NULL for a live backend */
    accel_isa isa;          /* the ISA the kernels use */
    int64_t stream_bytes;   /* layers whose inputs + outputs exceed this store their output
                             * non-temporally (option nontemporal_bytes; default: the
                             * last-level cache, accel_llc_bytes) */
    const struct pn_plugin* plugin;          /* CpuAcc's description (backend.c): reshape
                                              * judges layers with it (shared_weights.h) */
    struct accel_pack_counter* packed;       /* the backend's count of packed weight bytes
                                              * (shared_weights.h), or NULL */
} accel_env;

/* ---- Shared helpers (workload.c) ------------------------------------------- */

/* A fused activation applied in place to y[0..n) (act NULL: nothing), vectorized
 * for env->isa. Usable by gemm/conv/fc for their fused activations. */
void accel_apply_activation(accel_isa isa, const pn_activation_desc* act, float* y, int64_t n);

/* Copies a layer's fused activation `src` (NULL or kind INVALID: none) into *dst with this
 * build's struct_size and returns 1, or returns 0 and leaves *dst alone when there is none. */
int accel_copy_activation(const pn_activation_desc* src, pn_activation_desc* dst);

/* ---- The workload of the memory-bound families (workload.c) ---------------- */

typedef struct accel_op accel_op;

/* Runs one layer on float32 data (in[i]/out[i]; an empty input gets a dummy
 * pointer). Never called when the output is empty; cannot fail. */
typedef void (*accel_kernel)(const accel_op* op, const float* const* in, float* const* out);

struct accel_op {
    accel_env env;
    const accel_kernels* k;          /* accel_kernels_for(env.isa) */
    pn_layer_kind kind;
    uint32_t num_inputs;
    uint32_t num_outputs;
    pn_tensor_info* inputs;          /* copies */
    pn_tensor_info* outputs;         /* copies */
    const float** in_data;           /* execute() scratch */
    float** out_data;                /* execute() scratch */
    accel_kernel kernel;
    int has_activation;
    pn_activation_desc activation;   /* the fused activation (has_activation) */
    int stream_out;                  /* accel_streams(env, layer): store outputs non-temporally */
    void* priv;                      /* family state, freed with free() */
    union {                          /* the descriptor; pointers inside are NULL */
        pn_pooling_2d_desc pool;
        pn_elementwise_binary_desc binary;
        pn_elementwise_variadic_desc variadic;
        pn_activation_desc activation;
        pn_softmax_desc softmax;
        pn_concat_desc concat;
        pn_transpose_desc transpose;
    } desc;
};

/* A workload running `kernel` on a copy of `layer` (infos, the first desc_size
 * bytes of the descriptor bounded by its struct_size, the fused activation).
 * `priv` (may be NULL) is owned by the workload from this call on. */
pn_status accel_workload_new(const accel_env* env, const pn_layer* layer, size_t desc_size,
                             const pn_activation_desc* fused, accel_kernel kernel, void* priv,
                             pn_workload** workload_out, pn_string_out* message_out);

/* Whether the layer's inputs and outputs together exceed env->stream_bytes (its kernels then
 * store the output non-temporally: it would not stay cached for the next layer). */
int accel_streams(const accel_env* env, const pn_layer* layer);

/* Product of dims [begin, end). */
int64_t accel_span(const pn_tensor_info* info, uint32_t begin, uint32_t end);

#endif /* ACCEL_H */
