/* CAST between any two element types (ONNX Cast's rules, backend_api.h's pn_cast_desc): the
 * same type is a copy of bytes; the casts exports build attention masks with (an integer or
 * float32 to BOOL, BOOL to float32) and a quantized network's integers to float32 are loops of
 * their own, float16 and bfloat16 to and from float32 are the vector rows of kernels/half_rows.h (the
 * casts at the edges of the float32 regions a half-precision model runs in: the runtime's
 * half_precision.py; pn_convert's bits); every other pair goes through
 * plugin_common's pn_convert (pn_elements.h: the conversion CpuRef runs, so the results are
 * CpuRef's). Chunks of elements split over the pool. Refused: quantized tensors (CpuRef
 * refuses them too) and `saturate` with a float target other than the input's type (CpuAcc
 * does not clamp to the largest finite value). */
#include "ops/create.h"

#include "kernels/vector_kernels.h"

#include "plugnn/pn_elements.h"

#include <stdlib.h>
#include <string.h>

#define CAST_CHUNK 16384 /* elements per work unit */

static int quantized(const pn_tensor_info* t) {
    return PN_HAS_FIELD(t, pn_tensor_info, quant_zero_point) && t->quant_scale != 0.0f;
}

pn_status accel_cast_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_cast_desc* d = (const pn_cast_desc*)layer->descriptor;
    const pn_tensor_info* x = &layer->inputs[0];
    const pn_tensor_info* y = &layer->outputs[0];
    if (quantized(x) || quantized(y)) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs Cast on plain tensors only; %s is quantized %s",
                       plugin->id, quantized(x) ? "input 0" : "output 0",
                       pn_dtype_name(quantized(x) ? x->dtype : y->dtype));
    }
    if (d->saturate && pn_dtype_is_float(y->dtype) && x->dtype != y->dtype) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s runs Cast with saturate only to integer and BOOL targets; output 0 is %s",
                       plugin->id, pn_dtype_name(y->dtype));
    }
    return PN_OK;
}

/* CAST_U8_F32, CAST_I8_F32, CAST_I32_F32: the integers of a quantized network's glue (a QLinearAdd's
 * operands, its sums) to float32, in loops the compiler vectorizes: exact for 8-bit values, and
 * for int32 the one rounding to nearest pn_convert does (through double, which holds every int32). */
typedef enum cast_path {
    CAST_COPY, CAST_I64_BOOL, CAST_I32_BOOL, CAST_F32_BOOL, CAST_BOOL_F32, CAST_U8_F32, CAST_I8_F32, CAST_I32_F32,
    CAST_F16_F32, CAST_F32_F16, CAST_BF16_F32, CAST_F32_BF16, CAST_ANY
} cast_path;

typedef struct cast_state {
    accel_env env;
    pn_tensor_info infos[2]; /* input, output */
    cast_path path;
    const accel_kernels* k; /* accel_kernel_set_for(env.isa)->vector: the half rows */
    int64_t n;
    size_t xs, ys;           /* element sizes */
} cast_state;

typedef struct cast_job {
    const cast_state* s;
    const char* x;
    char* y;
} cast_job;

static void cast_range(void* raw, int64_t b, int64_t e) {
    const cast_job* j = (const cast_job*)raw;
    const cast_state* s = j->s;
    const int64_t i0 = b * CAST_CHUNK, i1 = e * CAST_CHUNK < s->n ? e * CAST_CHUNK : s->n;
    const char* x = j->x + (size_t)i0 * s->xs;
    char* y = j->y + (size_t)i0 * s->ys;
    const int64_t n = i1 - i0;
    uint8_t* yb = (uint8_t*)y;
    switch (s->path) {
    case CAST_COPY: memcpy(y, x, (size_t)n * s->xs); break;
    case CAST_I64_BOOL: {
        const int64_t* v = (const int64_t*)x;
        for (int64_t i = 0; i < n; ++i) yb[i] = v[i] != 0;
        break;
    }
    case CAST_I32_BOOL: {
        const int32_t* v = (const int32_t*)x;
        for (int64_t i = 0; i < n; ++i) yb[i] = v[i] != 0;
        break;
    }
    case CAST_F32_BOOL: { /* NaN is not 0: true; -0.0 is 0: false */
        const float* v = (const float*)x;
        for (int64_t i = 0; i < n; ++i) yb[i] = v[i] != 0.0f;
        break;
    }
    case CAST_BOOL_F32: { /* BOOL bytes are 0 or 1 (backend_api.h) */
        const uint8_t* v = (const uint8_t*)x;
        float* out = (float*)y;
        for (int64_t i = 0; i < n; ++i) out[i] = v[i] != 0 ? 1.0f : 0.0f;
        break;
    }
    case CAST_U8_F32: {
        const uint8_t* v = (const uint8_t*)x;
        float* out = (float*)y;
        for (int64_t i = 0; i < n; ++i) out[i] = (float)v[i];
        break;
    }
    case CAST_I8_F32: {
        const int8_t* v = (const int8_t*)x;
        float* out = (float*)y;
        for (int64_t i = 0; i < n; ++i) out[i] = (float)v[i];
        break;
    }
    case CAST_I32_F32: {
        const int32_t* v = (const int32_t*)x;
        float* out = (float*)y;
        for (int64_t i = 0; i < n; ++i) out[i] = (float)v[i];
        break;
    }
    case CAST_F16_F32: s->k->half_to_float_row((const uint16_t*)x, (float*)y, n); break;
    case CAST_F32_F16: s->k->float_to_half_row((const float*)x, (uint16_t*)y, n); break;
    case CAST_BF16_F32: s->k->bfloat16_to_float_row((const uint16_t*)x, (float*)y, n); break;
    case CAST_F32_BF16: s->k->float_to_bfloat16_row((const float*)x, (uint16_t*)y, n); break;
    case CAST_ANY: pn_convert(s->infos[1].dtype, y, s->infos[0].dtype, x, n); break;
    }
}

static pn_status cast_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const cast_state* s = (const cast_state*)raw;
    pn_status st = pn_check_execute_args(args, 1, &s->infos[0], 1, &s->infos[1], "CpuAcc", message_out);
    if (st != PN_OK || s->n == 0) {
        return st;
    }
    cast_job j = {s, (const char*)args->inputs[0].data, (char*)args->outputs[0].data};
    accel_parallel_for_grain(s->env.threads, (s->n + CAST_CHUNK - 1) / CAST_CHUNK, 1, cast_range, &j);
    return PN_OK;
}

static void cast_release(void* raw) { free(raw); }

pn_status accel_cast_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                            pn_string_out* message_out) {
    cast_state* s = (cast_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Cast workload");
    }
    s->env = *(const accel_env*)context;
    accel_copy_layer_infos(s->infos, layer); /* input, output */
    const pn_data_type from = s->infos[0].dtype, to = s->infos[1].dtype;
    s->n = pn_num_elements(&s->infos[1]);
    s->xs = pn_dtype_size(from);
    s->ys = pn_dtype_size(to);
    s->path = from == to                                        ? CAST_COPY
              : to == PN_DTYPE_BOOL && from == PN_DTYPE_INT64   ? CAST_I64_BOOL
              : to == PN_DTYPE_BOOL && from == PN_DTYPE_INT32   ? CAST_I32_BOOL
              : to == PN_DTYPE_BOOL && from == PN_DTYPE_FLOAT32 ? CAST_F32_BOOL
              : to == PN_DTYPE_FLOAT32 && from == PN_DTYPE_BOOL ? CAST_BOOL_F32
              : to == PN_DTYPE_FLOAT32 && from == PN_DTYPE_UINT8 ? CAST_U8_F32
              : to == PN_DTYPE_FLOAT32 && from == PN_DTYPE_INT8 ? CAST_I8_F32
              : to == PN_DTYPE_FLOAT32 && from == PN_DTYPE_INT32 ? CAST_I32_F32
              : to == PN_DTYPE_FLOAT32 && from == PN_DTYPE_FLOAT16 ? CAST_F16_F32
              : to == PN_DTYPE_FLOAT16 && from == PN_DTYPE_FLOAT32 ? CAST_F32_F16
              : to == PN_DTYPE_FLOAT32 && from == PN_DTYPE_BFLOAT16 ? CAST_BF16_F32
              : to == PN_DTYPE_BFLOAT16 && from == PN_DTYPE_FLOAT32 ? CAST_F32_BF16
                                                                : CAST_ANY;
    s->k = accel_kernel_set_for(s->env.isa)->vector;
    *workload_out = pn_workload_new(s, cast_execute, cast_release, 0);
    if (*workload_out == NULL) { /* s released by pn_workload_new */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Cast workload");
    }
    return PN_OK;
}
