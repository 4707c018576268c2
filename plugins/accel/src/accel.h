/*
 * CpuAcc private header: CPU feature detection, the CPU's kernel set (accel_kernel_set), what
 * every create function receives (accel_env; the create functions are declared
 * in ops/create.h), and the workload state shared by the memory-bound kernel
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

/* ---- The CPU's kernels (cpu.c) --------------------------------------------- */

/* Every vector kernel table of one ISA, chosen once (cpu.c): a workload takes its tables from
 * here and never compares ISAs itself. Each table is compiled once per ISA from one body
 * (kernels/), so a new vector kernel is its body, its field in the table's struct and one
 * line in the body's table; a new table is one field here and one entry in cpu.c's list. */
struct accel_kernels;      /* kernels/vector_kernels.h */
struct accel_row_kernels;  /* kernels/row_kernels.h */
struct accel_resize_rows;  /* kernels/resize_rows.h */
struct gemm_arch;          /* kernels/gemm_kernels.h */
struct qgemm_arch;         /* kernels/int8_kernels.h */
struct accel_int8_kernels; /* kernels/int8_kernels.h */

typedef struct accel_kernel_set {
    accel_isa isa;
    const struct accel_kernels* vector;     /* elementwise, softmax, pooling, depthwise, math rows */
    const struct accel_row_kernels* rows;   /* normalization, reduce, unary, select, the fused
                                             * linear epilogue, fused attention */
    const struct accel_resize_rows* resize; /* Resize's separable rows */
    const struct gemm_arch* gemm;           /* SGEMM micro-kernels and their blocking */
    const struct qgemm_arch* qgemm;         /* the integer GEMM's micro-kernel: AVX512-VNNI in
                                             * the AVX-512 set when the CPU has it, else AVX2's */
    const struct accel_int8_kernels* int8;  /* quantize, dequantize, requantize rows */
    int nchwc;                              /* 1: the NCHW16c kernels (kernels/nchwc_kernels.h)
                                             * run: blocked convolutions and chains */
} accel_kernel_set;

/* The kernels of `isa` (portable when `isa` is not compiled in; never NULL). */
const accel_kernel_set* accel_kernel_set_for(accel_isa isa);

/* ---- What every create function receives (ops/create.h) ---------------------- */

typedef struct accel_env {
    accel_threads* threads; /* the backend's thread pool; never NULL for a live backend */
    accel_isa isa;          /* the ISA the kernels use */
    int64_t stream_bytes;   /* layers whose inputs + outputs exceed this store their output
                             * non-temporally (option nontemporal_bytes; default: the
                             * last-level cache, accel_llc_bytes) */
    const struct pn_plugin* plugin;          /* CpuAcc's description (backend.c): reshape
                                              * judges layers with it (ops/shared_weights.h) */
    struct accel_pack_counter* packed;       /* the backend's count of packed weight bytes
                                              * (ops/shared_weights.h), or NULL */
    int amx;                /* the integer GEMM runs on AMX-INT8 (option amx; only where
                             * accel_amx_usable() and isa is avx512) */
} accel_env;

/* Whether this CPU has AMX-INT8 and Linux lets this process use the tile data (asked once, with
 * arch_prctl(ARCH_REQ_XCOMP_PERM)); 0 on builds without the x86 kernels. */
int accel_amx_usable(void);

/* The integer GEMM's micro-kernel of env: AMX-INT8's where env->amx, else env->isa's set's. */
const struct qgemm_arch* accel_qgemm_for(const accel_env* env);

/* ---- Shared helpers (ops/layer_workload.c) ------------------------------------------- */

/* A fused activation applied in place to y[0..n) (act NULL: nothing), vectorized
 * for env->isa. Usable by gemm/conv/fc for their fused activations. */
void accel_apply_activation(accel_isa isa, const pn_activation_desc* act, float* y, int64_t n);

/* Copies a layer's fused activation `src` (NULL or kind INVALID: none) into *dst with this
 * build's struct_size and returns 1, or returns 0 and leaves *dst alone when there is none. */
int accel_copy_activation(const pn_activation_desc* src, pn_activation_desc* dst);

/* ---- The workload of the memory-bound families (ops/layer_workload.c) ---------------- */

typedef struct accel_op accel_op;

/* Runs one layer on float32 data (in[i]/out[i]; an empty input gets a dummy
 * pointer). Never called when the output is empty; cannot fail. */
typedef void (*accel_kernel)(const accel_op* op, const float* const* in, float* const* out);

struct accel_op {
    accel_env env;
    const struct accel_kernels* k;   /* accel_kernel_set_for(env.isa)->vector */
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

/* p rounded up to the next 64-byte boundary (inside a buffer allocated 63 bytes larger). */
static inline float* accel_align64(float* p) { return (float*)(((uintptr_t)p + 63u) & ~(uintptr_t)63u); }

/* Product of dims [begin, end). */
int64_t accel_span(const pn_tensor_info* info, uint32_t begin, uint32_t end);

/* The workload's own copies of tensor infos (ops/layer_workload.c): struct_size, dtype, rank
 * and dims of src[0..n) into dst (the other fields 0); accel_copy_layer_infos: the layer's
 * inputs, then its outputs, into dst[0 .. num_inputs + num_outputs). */
void accel_copy_infos(pn_tensor_info* dst, const pn_tensor_info* src, uint32_t n);
void accel_copy_layer_infos(pn_tensor_info* dst, const pn_layer* layer);

#endif /* ACCEL_H */
