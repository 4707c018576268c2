/* CpuAcc entry points, backend object, its options (one table), and its description for the plugin
 * skeleton. */
#include "chain/chain.h"
#include "ops/attention.h"
#include "ops/batch_norm.h"
#include "ops/create.h"
#include "ops/fused_linear.h"
#include "ops/index_copy.h"
#include "opt/optimize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define ACCEL_NUM_OPTIONS 8 /* rows of OPTIONS */

typedef struct accel_backend {
    pn_backend base;
    accel_env env;       /* env.threads: the pool of num_threads threads, made with the first
                            factory (so a runtime that only lists backends starts none) */
    int num_threads;
    int fuse;            /* option fuse: optimize_subgraph fuses layers (opt/layer_fusion.h) */
    int chains;          /* option blocked_chains: it runs runs of convolutions as blocked
                            chains (opt/chain_plan.h) */
    int flush_denormals; /* option flush_denormals: the pool's loops flush subnormals (thread_pool.h) */
    accel_isa best_isa;  /* the best kernels this build has for this CPU */
    int threads_shared;  /* env.threads was handed to a factory (workloads may hold it) */
    accel_threads** retired; /* pools replaced by a later num_threads, joined in destroy */
    int num_retired;
    /* list_options: the option table's descriptions (describe_options), defaults included */
    pn_option_info option_descs[ACCEL_NUM_OPTIONS];
    const pn_option_info* option_list[ACCEL_NUM_OPTIONS];
    char option_defaults[ACCEL_NUM_OPTIONS][32];
} accel_backend;

/* One row of the option table (OPTIONS, below). */
typedef struct accel_option {
    const char* name;
    pn_option_type type;
    const char* help;
    pn_status (*set)(accel_backend* b, const char* key, const char* value, pn_string_out* message_out);
    void (*get)(const accel_backend* b, pn_string_out* value_out);
} accel_option;

/* ---- What CpuAcc runs (the plugin skeleton, pn_plugin.h) ------------------------ */

/* The arithmetic binary operations (ADD .. PRELU) on float32; the integer and comparison ones
 * of accel_binary_typed (ops/elementwise.c). Every activation kind runs, as a layer and fused
 * (a CELU with alpha 0 is malformed: the shared validation refuses it). */
static pn_status check_binary(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    if (accel_logic_binary(layer) || accel_binary_typed(layer)) { /* ops/mask_ops.c, ops/elementwise.c */
        return PN_OK;
    }
    const pn_elementwise_binary_desc* d = layer->descriptor;
    const pn_data_type t = layer->num_inputs > 0 ? layer->inputs[0].dtype : PN_DTYPE_INVALID;
    if (t == PN_DTYPE_INT32 || t == PN_DTYPE_INT64) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs ElementwiseBinary on %s for ADD, SUB, MUL, MAXIMUM, "
                       "MINIMUM, the bitwise operations and the comparisons only, not operation %d",
                       plugin->id, pn_dtype_name(t), (int)d->op);
    }
    pn_status s = pn_plugin_float32_only(plugin, layer, reason);
    if (s == PN_OK && d->op > PN_BINARY_PRELU) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s has no kernel for binary operation %d",
                       plugin->id, (int)d->op);
    }
    return s;
}

/* ElementwiseVariadic on float32, and SUM, MAXIMUM and MINIMUM on int32 / int64
 * (accel_variadic_typed, ops/elementwise.c). */
static pn_status check_variadic(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    return accel_variadic_typed(layer) ? PN_OK : pn_plugin_float32_only(plugin, layer, reason);
}

/* Every kind CpuAcc runs: float32, but for the kinds that move bytes (accel_move_check), CAST,
 * ELEMENTWISE_BINARY's integer arithmetic and comparisons, ELEMENTWISE_VARIADIC's integer SUM /
 * MAXIMUM / MINIMUM, the mask kinds (ops/mask_ops.c), TREE_ENSEMBLE (x float32 or float64: the shared
 * validation's rules, ops/tree_ensemble.c) and the quantization kinds (int8 / uint8:
 * ops/quantization.c, ops/quantized_products.c). */
static const pn_plugin_kind kinds[] = {
    {PN_LAYER_CONVOLUTION_2D, pn_plugin_float32_only, accel_conv2d_create},
    {PN_LAYER_POOLING_2D, accel_pooling2d_check, accel_pooling2d_create},
    {PN_LAYER_ELEMENTWISE_BINARY, check_binary, accel_binary_create},
    {PN_LAYER_ELEMENTWISE_VARIADIC, check_variadic, accel_variadic_create},
    {PN_LAYER_ACTIVATION, pn_plugin_float32_only, accel_activation_create},
    {PN_LAYER_FULLY_CONNECTED, pn_plugin_float32_only, accel_fully_connected_create},
    {PN_LAYER_MATMUL, pn_plugin_float32_only, accel_matmul_create},
    {PN_LAYER_SOFTMAX, pn_plugin_float32_only, accel_softmax_create},
    {PN_LAYER_CONCAT, accel_move_check, accel_concat_create},
    {PN_LAYER_RESHAPE, accel_move_check, accel_copy_create},
    {PN_LAYER_TRANSPOSE, accel_move_check, accel_transpose_create},
    {PN_LAYER_COPY, accel_move_check, accel_copy_create},
    {PN_LAYER_ELEMENTWISE_UNARY, accel_unary_check, accel_unary_create},
    {PN_LAYER_REDUCE, accel_reduce_check, accel_reduce_create},
    {PN_LAYER_NORMALIZATION, accel_normalization_check, accel_normalization_create},
    {PN_LAYER_GATHER, accel_gather_check, accel_gather_create},
    {PN_LAYER_SELECT, accel_select_check, accel_select_create},
    {PN_LAYER_EXPAND, NULL, accel_expand_create},
    {PN_LAYER_CONVOLUTION, pn_plugin_float32_only, accel_convolution_create},
    {PN_LAYER_POOLING, accel_pooling_nd_check, accel_pooling_nd_create},
    {PN_LAYER_RESIZE, accel_resize_check, accel_resize_create},
    {PN_LAYER_PAD, pn_plugin_float32_only, accel_pad_create},
    {PN_LAYER_SLICE, accel_move_check, accel_slice_create},
    {PN_LAYER_SPLIT, accel_move_check, accel_split_create},
    {PN_LAYER_BATCH_NORMALIZATION, pn_plugin_float32_only, accel_batch_norm_create},
    {PN_LAYER_RECURRENT, accel_recurrent_check, accel_recurrent_create},
    {PN_LAYER_CAST, accel_cast_check, accel_cast_create},
    {PN_LAYER_TREE_ENSEMBLE, accel_tree_ensemble_check, accel_tree_ensemble_create},
    {PN_LAYER_QUANTIZATION, accel_quantization_check, accel_quantization_create},
    {PN_LAYER_QUANTIZED_MATMUL, accel_quantized_matmul_check, accel_quantized_matmul_create},
    {PN_LAYER_QUANTIZED_CONVOLUTION, accel_quantized_convolution_check, accel_quantized_convolution_create},
    {PN_LAYER_DATA_DEPENDENT, accel_data_dependent_check, accel_data_dependent_create},
    {PN_LAYER_ROI_ALIGN, accel_roi_align_check, accel_roi_align_create},
    {PN_LAYER_SCATTER, accel_scatter_check, accel_scatter_create},
    {PN_LAYER_TOP_K, accel_top_k_check, accel_top_k_create},
    {PN_LAYER_CUMULATIVE, accel_cumulative_check, accel_cumulative_create},
};

/* The PRECOMPILED layers optimize_subgraph makes, each payload starting with a magic number that
 * names its workload. */
static pn_status precompiled_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                    pn_string_out* message_out) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const uint32_t* magic = d != NULL ? (const uint32_t*)d->payload : NULL;
    if (magic != NULL && *magic == ACCEL_ATTN_MAGIC) { /* a fused attention (ops/attention.h) */
        return accel_attention_create(context, layer, workload_out, message_out);
    }
    if (magic != NULL && *magic == ACCEL_LINEAR_MAGIC) { /* a fused linear layer (ops/fused_linear.h) */
        return accel_linear_create(context, layer, workload_out, message_out);
    }
    if (magic != NULL && *magic == ACCEL_LINEAR_GROUP_MAGIC) { /* sibling projections (ops/fused_linear.h) */
        return accel_linear_group_create(context, layer, workload_out, message_out);
    }
    if (magic != NULL && *magic == ACCEL_INDEX_COPY_MAGIC) { /* a fused reshape-transpose (ops/index_copy.h) */
        return accel_index_copy_create(context, layer, workload_out, message_out);
    }
    if (magic != NULL && *magic == ACCEL_BN_ACT_MAGIC) { /* a batch normalization with its activation */
        return accel_bn_act_create(context, layer, workload_out, message_out);
    }
    return accel_chain_create(context, layer, workload_out, message_out); /* a blocked chain (chain/chain.h) */
}

/* pn_plugin.precompiled_at_execute: the PRECOMPILED layers that run at other dims given at execute:
 * a fused attention that derives its operands again (ops/attention.h), and the fused linear
 * layers, whose payload holds no shape (their reshape takes any rows); not the blocked chains,
 * made for their dims. */
static int precompiled_at_execute(const pn_layer* layer, uint32_t* fixed_inputs) {
    const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
    const uint32_t* magic = d != NULL ? (const uint32_t*)d->payload : NULL;
    if (magic != NULL && *magic == ACCEL_ATTN_MAGIC) {
        return accel_attention_at_execute(layer, fixed_inputs);
    }
    if (magic != NULL && (*magic == ACCEL_LINEAR_MAGIC || *magic == ACCEL_LINEAR_GROUP_MAGIC)) {
        *fixed_inputs = 0;
        return 1;
    }
    return 0;
}

/* PRECOMPILED layers are those optimize_subgraph made (blocked chains, fused attentions and
 * linear layers, ...), told apart by their payload (precompiled_create). The factory context of every
 * create function is the factory's copy of the backend's accel_env. */
static const pn_plugin accel = {"CpuAcc", kinds, sizeof(kinds) / sizeof(kinds[0]),
                                precompiled_create, PN_PLUGIN_SHAPES_AT_EXECUTE, precompiled_at_execute};

/* ---- Backend and factory ------------------------------------------------- */

static void backend_destroy(pn_backend* backend) {
    accel_backend* b = (accel_backend*)backend->self;
    accel_pack_counter_free(b->env.packed);
    accel_threads_destroy(b->env.threads);
    for (int i = 0; i < b->num_retired; ++i) {
        accel_threads_destroy(b->retired[i]);
    }
    free(b->retired);
    free(b);
}

static pn_status backend_is_layer_supported(pn_backend* backend, const pn_layer* layer,
                                            pn_bool* supported_out, pn_string_out* reason_out) {
    (void)backend;
    return pn_plugin_is_layer_supported(&accel, layer, supported_out, reason_out);
}

/* optimize_subgraph (opt/optimize.h): the fusions of opt/layer_fusion.h (none with option fuse=0) and the
 * blocked chains of opt/chain_plan.h (none with blocked_chains=0), judged by the same check as
 * is_layer_supported. */
static pn_status backend_optimize_subgraph(pn_backend* backend, const pn_subgraph* subgraph,
                                           pn_optimization** optimization_out,
                                           pn_string_out* message_out) {
    accel_backend* b = (accel_backend*)backend->self;
    return accel_optimize_subgraph(subgraph, b->fuse, b->chains, b->env.isa, &accel,
                                   optimization_out, message_out);
}

static void backend_release_optimization(pn_backend* backend, pn_optimization* optimization) {
    (void)backend;
    accel_release_optimization(optimization);
}

/* A factory with a copy of the backend's accel_env: its pool outlives every workload, and a
 * later option change does not reach factories made before it. */
static pn_status backend_create_workload_factory(pn_backend* backend, pn_memory_manager* mm,
                                                 pn_workload_factory** factory_out,
                                                 pn_string_out* message_out) {
    accel_backend* b = (accel_backend*)backend->self;
    (void)mm;
    if (factory_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc create_workload_factory: factory_out is NULL");
    }
    if (b->env.threads == NULL) {
        b->env.threads = accel_threads_create(b->num_threads);
        if (b->env.threads == NULL) {
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                           "CpuAcc: cannot start a pool of %d threads", b->num_threads);
        }
        accel_threads_set_flush_denormals(b->env.threads, b->flush_denormals);
    }
    pn_status s = pn_plugin_factory_new(&accel, &b->env, sizeof(b->env), factory_out, message_out);
    if (s == PN_OK) {
        b->threads_shared = 1;
    }
    return s;
}

/* ---- Options -------------------------------------------------------------- */

static int streq(const char* a, const char* b) {
    while (*a != '\0' && *a == *b) {
        ++a;
        ++b;
    }
    return *a == *b;
}

/* Option isa: auto (the best this CPU supports), or one of portable, avx2, avx512 (for testing
 * and comparing kernel sets); applies to factories created afterwards. */
static pn_status set_isa(accel_backend* b, const char* key, const char* value, pn_string_out* message_out) {
    static const accel_isa all[] = {ACCEL_ISA_PORTABLE, ACCEL_ISA_AVX2, ACCEL_ISA_AVX512};
    (void)key;
    if (value != NULL && streq(value, "auto")) {
        b->env.isa = b->best_isa;
        return PN_OK;
    }
    for (size_t i = 0; value != NULL && i < sizeof(all) / sizeof(all[0]); ++i) {
        if (streq(value, accel_isa_name(all[i]))) {
            if (all[i] > b->best_isa) {
                return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                               "CpuAcc option isa=%s: this CPU or build supports only up to %s",
                               value, accel_isa_name(b->best_isa));
            }
            b->env.isa = all[i];
            return PN_OK;
        }
    }
    return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                   "CpuAcc option isa must be auto, portable, avx2 or avx512, got '%s'",
                   value == NULL ? "(null)" : value);
}

static void get_isa(const accel_backend* b, pn_string_out* value_out) {
    pn_write(value_out, "%s", accel_isa_name(b->env.isa)); /* the effective kernel set */
}

static pn_status parse_flag(int* flag, const char* key, const char* value, pn_string_out* message_out) {
    if (value != NULL && (streq(value, "0") || streq(value, "1"))) {
        *flag = value[0] == '1';
        return PN_OK;
    }
    return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                   "CpuAcc option %s must be 1 or 0, got '%s'", key, value == NULL ? "(null)" : value);
}

/* Options fuse and blocked_chains apply to later optimize_subgraph calls. */
static pn_status set_fuse(accel_backend* b, const char* key, const char* value, pn_string_out* message_out) {
    return parse_flag(&b->fuse, key, value, message_out);
}

static void get_fuse(const accel_backend* b, pn_string_out* value_out) { pn_write(value_out, "%d", b->fuse); }

/* Option amx: 1 only where the CPU has AMX-INT8 and Linux lets this process use it. */
static pn_status set_amx(accel_backend* b, const char* key, const char* value, pn_string_out* message_out) {
    int on = 0;
    pn_status s = parse_flag(&on, key, value, message_out);
    if (s != PN_OK) {
        return s;
    }
    if (on && !accel_amx_usable()) {
        return pn_fail(message_out, PN_ERR_UNSUPPORTED,
                       "CpuAcc option amx=1: this CPU has no AMX-INT8, or Linux does not let this process use it");
    }
    b->env.amx = on;
    return PN_OK;
}

static void get_amx(const accel_backend* b, pn_string_out* value_out) { pn_write(value_out, "%d", b->env.amx); }

static pn_status set_chains(accel_backend* b, const char* key, const char* value, pn_string_out* message_out) {
    return parse_flag(&b->chains, key, value, message_out);
}

static void get_chains(const accel_backend* b, pn_string_out* value_out) { pn_write(value_out, "%d", b->chains); }

/* Option flush_denormals: the pool's loops from the next run on, every workload's. */
static pn_status set_flush_denormals(accel_backend* b, const char* key, const char* value,
                                     pn_string_out* message_out) {
    pn_status s = parse_flag(&b->flush_denormals, key, value, message_out);
    if (s == PN_OK) {
        accel_threads_set_flush_denormals(b->env.threads, b->flush_denormals);
    }
    return s;
}

static void get_flush_denormals(const accel_backend* b, pn_string_out* value_out) {
    pn_write(value_out, "%d", b->flush_denormals);
}

/* Option nontemporal_bytes applies to workloads created afterwards. */
static pn_status set_stream_bytes(accel_backend* b, const char* key, const char* value,
                                  pn_string_out* message_out) {
    char* end = NULL;
    (void)key;
    errno = 0;
    long long n = value != NULL && *value >= '0' && *value <= '9' ? strtoll(value, &end, 10) : -1;
    if (n < 0 || errno != 0 || end == NULL || *end != '\0') {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc option nontemporal_bytes must be a non-negative integer (bytes), got '%s'",
                       value == NULL ? "(null)" : value);
    }
    b->env.stream_bytes = (int64_t)n;
    return PN_OK;
}

static void get_stream_bytes(const accel_backend* b, pn_string_out* value_out) {
    pn_write(value_out, "%lld", (long long)b->env.stream_bytes);
}

static void get_packed_bytes(const accel_backend* b, pn_string_out* value_out) {
    pn_write(value_out, "%lld", (long long)accel_pack_counter_bytes(b->env.packed));
}

/* Option num_threads (PN_OPTION_NUM_THREADS): the new size applies to factories created
 * afterwards. Workloads made earlier keep their pool: a pool a factory received is retired
 * (joined in destroy), not freed. */
static pn_status set_num_threads(accel_backend* b, const char* key, const char* value,
                                 pn_string_out* message_out) {
    uint32_t n = 0;
    (void)key;
    if (value == NULL || pn_parse_u32(value, 1, ACCEL_MAX_THREADS, &n) != 0) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc option num_threads must be an integer from 1 to %d, got '%s'",
                       ACCEL_MAX_THREADS, value == NULL ? "(null)" : value);
    }
    if ((int)n == b->num_threads) {
        return PN_OK;
    }
    if (b->env.threads != NULL && b->threads_shared) {
        accel_threads** grown = (accel_threads**)realloc(
            b->retired, (size_t)(b->num_retired + 1) * sizeof(*grown));
        if (grown == NULL) {
            return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory");
        }
        b->retired = grown;
        b->retired[b->num_retired++] = b->env.threads;
    } else {
        accel_threads_destroy(b->env.threads);
    }
    b->env.threads = NULL; /* started by the next create_workload_factory */
    b->threads_shared = 0;
    b->num_threads = (int)n;
    return PN_OK;
}

static void get_num_threads(const accel_backend* b, pn_string_out* value_out) {
    pn_write(value_out, "%d", b->num_threads);
}

#define ACCEL_STR(x) #x
#define ACCEL_XSTR(x) ACCEL_STR(x)

/* CpuAcc's options: keys, types, help, parsing and reading, in one table (set_option,
 * get_option and list_options all read it; the defaults are what `get` gives on a new backend
 * object, recorded when it is made). set NULL: read-only. */
static const accel_option OPTIONS[ACCEL_NUM_OPTIONS] = {
    {PN_OPTION_NUM_THREADS, PN_OPTION_TYPE_INT,
     "threads of the pool its workloads run on, 1 to " ACCEL_XSTR(ACCEL_MAX_THREADS)
     "; applies to workload factories created afterwards (default: the CPUs this process may run on)",
     set_num_threads, get_num_threads},
    {"isa", PN_OPTION_TYPE_STRING,
     "the kernel set: auto (the best this CPU and build support), portable, avx2 or avx512; get_option "
     "gives the set in use; applies to workload factories created afterwards",
     set_isa, get_isa},
    {"fuse", PN_OPTION_TYPE_BOOL,
     "1: optimize_subgraph fuses layers (pattern, linear and layer fusion); 0: it does not",
     set_fuse, get_fuse},
    {"amx", PN_OPTION_TYPE_BOOL,
     "1: the integer GEMM (quantized matmuls and convolutions) runs on AMX-INT8 tiles with the avx512 kernel "
     "set, 0: on AVX512-VNNI; the same sums either way (default: 1 where the CPU has AMX-INT8 and Linux grants "
     "it); applies to workloads created afterwards",
     set_amx, get_amx},
    {"blocked_chains", PN_OPTION_TYPE_BOOL,
     "1: optimize_subgraph runs runs of convolutions as blocked NCHW16c chains (AVX-512 only); 0: it does not",
     set_chains, get_chains},
    {"nontemporal_bytes", PN_OPTION_TYPE_INT,
     "layers (outside blocked chains) whose inputs and outputs together exceed this many bytes store their "
     "output non-temporally (default: the last-level cache size); applies to workloads created afterwards",
     set_stream_bytes, get_stream_bytes},
    {"flush_denormals", PN_OPTION_TYPE_BOOL,
     "1: workloads flush subnormal float results to zero (x86: MXCSR FTZ on the pool's threads while they "
     "run; the caller's mode restored after), which spares Intel cores a microcode assist per subnormal "
     "result; a result below 2^-126 is then 0, inputs are read as they are; 0: subnormal results kept (the "
     "caller's floating-point mode); takes effect at the next run",
     set_flush_denormals, get_flush_denormals},
    {"packed_weight_bytes", PN_OPTION_TYPE_INT,
     "read-only: the bytes of prepacked weights the backend's workloads hold now",
     NULL, get_packed_bytes},
};

static const accel_option* find_option(const char* key) {
    for (size_t i = 0; key != NULL && i < ACCEL_NUM_OPTIONS; ++i) {
        if (streq(key, OPTIONS[i].name)) {
            return &OPTIONS[i];
        }
    }
    return NULL;
}

/* PN_ERR_NOT_FOUND naming the key and every option of the table. */
static pn_status unknown_option(const char* key, pn_string_out* message_out) {
    char names[256];
    size_t used = 0;
    names[0] = '\0';
    for (size_t i = 0; i < ACCEL_NUM_OPTIONS; ++i) {
        int n = snprintf(names + used, sizeof(names) - used, "%s%s", i > 0 ? ", " : "", OPTIONS[i].name);
        used = n < 0 || (size_t)n >= sizeof(names) - used ? sizeof(names) - 1 : used + (size_t)n;
    }
    return pn_fail(message_out, PN_ERR_NOT_FOUND, "CpuAcc has no option '%s' (options: %s)",
                   key == NULL ? "(null)" : key, names);
}

static pn_status backend_set_option(pn_backend* backend, const char* key, const char* value,
                                    pn_string_out* message_out) {
    accel_backend* b = (accel_backend*)backend->self;
    if (key == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc: option key is NULL");
    }
    const accel_option* o = find_option(key);
    if (o == NULL) {
        return unknown_option(key, message_out);
    }
    if (o->set == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc option %s is read-only (%s)", key,
                       o->help + sizeof("read-only: ") - 1);
    }
    return o->set(b, key, value, message_out);
}

static pn_status backend_get_option(pn_backend* backend, const char* key, pn_string_out* value_out,
                                    pn_string_out* message_out) {
    const accel_backend* b = (const accel_backend*)backend->self;
    const accel_option* o = find_option(key);
    if (o == NULL) {
        return unknown_option(key, message_out);
    }
    o->get(b, value_out);
    return PN_OK;
}

/* Each option's description, its default read by `get` from the new backend object. */
static void describe_options(accel_backend* b) {
    for (size_t i = 0; i < ACCEL_NUM_OPTIONS; ++i) {
        pn_string_out out = {b->option_defaults[i], sizeof(b->option_defaults[i])};
        OPTIONS[i].get(b, &out);
        pn_option_info* d = &b->option_descs[i];
        d->struct_size = (uint32_t)sizeof(*d);
        d->flags = OPTIONS[i].set == NULL ? PN_OPTION_READ_ONLY : 0;
        d->name = OPTIONS[i].name;
        d->type = OPTIONS[i].type;
        d->default_value = b->option_defaults[i];
        d->help = OPTIONS[i].help;
        b->option_list[i] = d;
    }
}

static pn_status backend_list_options(pn_backend* backend, const pn_option_info* const** options_out,
                                      uint32_t* count_out, pn_string_out* message_out) {
    const accel_backend* b = (const accel_backend*)backend->self;
    if (options_out == NULL || count_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "CpuAcc list_options: an output pointer is NULL");
    }
    *options_out = b->option_list;
    *count_out = ACCEL_NUM_OPTIONS;
    return PN_OK;
}

/* ---- Entry points ----------------------------------------------------------- */

PLUGNN_BACKEND_EXPORT const char* GetBackendId(void) { return accel.id; }

PLUGNN_BACKEND_EXPORT void GetVersion(uint32_t* major_out, uint32_t* minor_out) {
    *major_out = PLUGNN_BACKEND_API_VERSION_MAJOR;
    *minor_out = PLUGNN_BACKEND_API_VERSION_MINOR;
}

PLUGNN_BACKEND_EXPORT void* BackendFactory(void) {
    accel_backend* b = (accel_backend*)calloc(1, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->num_threads = accel_available_cpus();
    if (b->num_threads > ACCEL_MAX_THREADS) {
        b->num_threads = ACCEL_MAX_THREADS;
    }
    b->best_isa = accel_detect_isa();
    b->env.isa = b->best_isa;
    b->env.stream_bytes = accel_llc_bytes();
    b->env.plugin = &accel;
    b->env.amx = accel_amx_usable();
    b->env.packed = accel_pack_counter_new();
    if (b->env.packed == NULL) {
        free(b);
        return NULL;
    }
    b->fuse = 1;
    b->chains = 1;
    b->flush_denormals = 1;
    b->base.struct_size = (uint32_t)sizeof(pn_backend);
    b->base.flags = PN_BACKEND_HOST_MEMORY;
    b->base.flags |= PN_BACKEND_MOVES_IN_PLACE; /* ops/data_movement.c skips inputs already in place */
    b->base.self = b;
    b->base.destroy = backend_destroy;
    b->base.is_layer_supported = backend_is_layer_supported;
    b->base.create_workload_factory = backend_create_workload_factory;
    b->base.optimize_subgraph = backend_optimize_subgraph;
    b->base.release_optimization = backend_release_optimization;
    b->base.set_option = backend_set_option;
    b->base.get_option = backend_get_option;
    b->base.list_options = backend_list_options;
    describe_options(b);
    return &b->base;
}
