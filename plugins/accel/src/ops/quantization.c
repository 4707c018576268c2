/* QUANTIZATION on CpuAcc: QUANTIZE_LINEAR (float32 -> int8 / uint8) and DEQUANTIZE_LINEAR
 * (int8 / uint8 -> float32), per tensor or per axis, as backend_api.h states them; the rows run
 * the ISA's quantize / dequantize kernels (kernels/int8_rows_body.h), which give CpuRef's bits
 * (float32 x and scale: precision FLOAT32, where CpuRef's double steps rounded to float32 are
 * the float32 operations). Chunks of rows split over the pool. The scale and zero point are read
 * at every execute (they may be computed at run time). DYNAMIC_QUANTIZE_LINEAR: the range of x
 * (chunks over the pool), scale and zero point by CpuRef's float32 steps, then the quantize rows
 * with them. Refused, with the reason: blocked scales, other element types. */
#include "ops/create.h"

#include "kernels/int8_kernels.h"
#include "plugnn/pn_elements.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define QUANT_CHUNK 16384 /* elements per work unit */

static int is_8bit(pn_data_type t) { return t == PN_DTYPE_INT8 || t == PN_DTYPE_UINT8; }

pn_status accel_quantization_check(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason) {
    const pn_quantization_desc* d = (const pn_quantization_desc*)layer->descriptor;
    const pn_tensor_info* in = layer->inputs;
    const pn_tensor_info* y = &layer->outputs[0];
    if (d->op == PN_QUANTIZATION_DYNAMIC_QUANTIZE_LINEAR) {
        return PN_OK; /* float32 x, uint8 y: the shared validation's rules */
    }
    const char* name = d->op == PN_QUANTIZATION_QUANTIZE_LINEAR ? "QuantizeLinear" : "DequantizeLinear";
    if (d->block_size != 0) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs %s per tensor or per axis only; the scale is "
                       "blocked (block_size %u)", plugin->id, name, d->block_size);
    }
    if (d->op == PN_QUANTIZATION_QUANTIZE_LINEAR) {
        if (in[0].dtype != PN_DTYPE_FLOAT32 || in[1].dtype != PN_DTYPE_FLOAT32 || !is_8bit(y->dtype) ||
            d->precision != PN_DTYPE_FLOAT32) {
            return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs QuantizeLinear from float32 x and scale to "
                           "int8 or uint8 only; x is %s, scale %s, y %s", plugin->id, pn_dtype_name(in[0].dtype),
                           pn_dtype_name(in[1].dtype), pn_dtype_name(y->dtype));
        }
        return PN_OK;
    }
    if (!is_8bit(in[0].dtype) || in[1].dtype != PN_DTYPE_FLOAT32 || y->dtype != PN_DTYPE_FLOAT32 ||
        d->precision != PN_DTYPE_FLOAT32) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s runs DequantizeLinear from int8 or uint8 x with a "
                       "float32 scale to float32 only; x is %s, scale %s, y %s", plugin->id,
                       pn_dtype_name(in[0].dtype), pn_dtype_name(in[1].dtype), pn_dtype_name(y->dtype));
    }
    return PN_OK;
}

typedef struct quant_state {
    accel_env env;
    const accel_int8_kernels* k;
    pn_tensor_info infos[4]; /* x, scale, zero_point, y */
    int quantize, is_signed;  /* is_signed: the 8-bit side is int8 */
    int dynamic;              /* DYNAMIC_QUANTIZE_LINEAR (quantize is 1) */
    int64_t n;                /* elements of x */
    int64_t outer, axis, inner; /* x as [outer, axis, inner]; axis 1 for per tensor */
} quant_state;

typedef struct quant_job {
    const quant_state* s;
    float* lo;                /* DYNAMIC_QUANTIZE_LINEAR: [pieces] each chunk's range */
    float* hi;
    const char* x;
    char* y;
    const float* scale;
    const int32_t* zero;      /* [axis] the zero points as int32 */
    int64_t piece;            /* elements per piece */
} quant_job;

/* Pieces: per tensor, chunks of QUANT_CHUNK elements; per axis with inner > 1, one (outer, a)
 * row of inner elements (one scale); per axis with the axis innermost, one outer row of axis
 * elements (a scale per element). */
static void quant_range(void* raw, int64_t b, int64_t e) {
    const quant_job* j = (const quant_job*)raw;
    const quant_state* s = j->s;
    const size_t xs = s->quantize ? sizeof(float) : 1, ys = s->quantize ? 1 : sizeof(float);
    for (int64_t p = b; p < e; ++p) {
        int64_t i0, n, a = 0;
        int step = 0;
        if (s->axis == 1) {
            i0 = p * j->piece;
            n = s->n - i0 < j->piece ? s->n - i0 : j->piece;
        } else if (s->inner > 1) {
            i0 = p * s->inner;
            n = s->inner;
            a = p % s->axis;
        } else {
            i0 = p * s->axis;
            n = s->axis;
            step = 1;
        }
        if (s->quantize) {
            s->k->quantize((const float*)(j->x + (size_t)i0 * xs), j->y + (size_t)i0 * ys, n, j->scale + a,
                           j->zero + a, step, s->is_signed);
        } else {
            s->k->dequantize(j->x + (size_t)i0 * xs, (float*)(j->y + (size_t)i0 * ys), n, j->scale + a,
                             j->zero + a, step, s->is_signed);
        }
    }
}

static void range_chunks(void* raw, int64_t b, int64_t e) {
    const quant_job* j = (const quant_job*)raw;
    const quant_state* s = j->s;
    for (int64_t p = b; p < e; ++p) {
        const int64_t i0 = p * QUANT_CHUNK, n = s->n - i0 < QUANT_CHUNK ? s->n - i0 : QUANT_CHUNK;
        j->lo[p] = 0.0f;
        j->hi[p] = 0.0f;
        s->k->range((const float*)j->x + i0, n, &j->lo[p], &j->hi[p]);
    }
}

/* DYNAMIC_QUANTIZE_LINEAR: backend_api.h's float32 steps, as CpuRef computes them. */
static pn_status dynamic_execute(const quant_state* s, const pn_execute_args* args, pn_string_out* message_out) {
    pn_status st = pn_check_execute_args(args, 1, &s->infos[0], 3, &s->infos[1], "CpuAcc", message_out);
    if (st != PN_OK) {
        return st;
    }
    const int64_t pieces = (s->n + QUANT_CHUNK - 1) / QUANT_CHUNK;
    float* parts = (float*)malloc((size_t)(2 * pieces + 2) * sizeof(float));
    if (parts == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory running a DynamicQuantizeLinear layer");
    }
    quant_job j = {s, parts, parts + pieces, (const char*)args->inputs[0].data, (char*)args->outputs[0].data, NULL, NULL,
                   QUANT_CHUNK};
    accel_parallel_for_grain(s->env.threads, pieces, 4, range_chunks, &j);
    float hi = 0.0f, lo = 0.0f; /* max(0, max(x)) and min(0, min(x)) */
    for (int64_t p = 0; p < pieces; ++p) {
        lo = j.lo[p] < lo ? j.lo[p] : lo;
        hi = j.hi[p] > hi ? j.hi[p] : hi;
    }
    free(parts);
    const float range = hi == lo ? 1.0f : (float)((double)hi - (double)lo);
    const float scale = (float)((double)range / 255.0);
    const float initial = (float)(0.0 - (double)(float)((double)lo / (double)scale));
    const float clamped = !(initial > 0.0f) ? 0.0f : initial < 255.0f ? initial : 255.0f;
    const int32_t zero = (int32_t)rintf(clamped);
    *(float*)args->outputs[1].data = scale;
    *(uint8_t*)args->outputs[2].data = (uint8_t)zero;
    if (s->n == 0) {
        return PN_OK;
    }
    j.scale = &scale;
    j.zero = &zero;
    accel_parallel_for_grain(s->env.threads, pieces, 1, quant_range, &j);
    return PN_OK;
}

static pn_status quant_execute(void* raw, const pn_execute_args* args, pn_string_out* message_out) {
    const quant_state* s = (const quant_state*)raw;
    if (s->dynamic) {
        return dynamic_execute(s, args, message_out);
    }
    pn_status st = pn_check_execute_args(args, 3, &s->infos[0], 1, &s->infos[3], "CpuAcc", message_out);
    if (st != PN_OK || s->n == 0) {
        return st;
    }
    int32_t one_zero = 0;
    int32_t* zero = s->axis > 1 ? (int32_t*)malloc((size_t)s->axis * sizeof(int32_t)) : &one_zero;
    if (zero == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory running a Quantization layer");
    }
    for (int64_t a = 0; a < s->axis; ++a) {
        zero[a] = (int32_t)pn_load_int64(s->infos[2].dtype, args->inputs[2].data, a);
    }
    quant_job j = {s, NULL, NULL, (const char*)args->inputs[0].data, (char*)args->outputs[0].data,
                   (const float*)args->inputs[1].data, zero, QUANT_CHUNK};
    int64_t pieces, per_piece;
    if (s->axis == 1) {
        pieces = (s->n + QUANT_CHUNK - 1) / QUANT_CHUNK;
        per_piece = QUANT_CHUNK;
    } else if (s->inner > 1) {
        pieces = s->outer * s->axis;
        per_piece = s->inner;
    } else {
        pieces = s->outer;
        per_piece = s->axis;
    }
    int64_t grain = QUANT_CHUNK / (per_piece > 0 ? per_piece : 1);
    accel_parallel_for_grain(s->env.threads, pieces, grain > 1 ? grain : 1, quant_range, &j);
    if (zero != &one_zero) {
        free(zero);
    }
    return PN_OK;
}

static void quant_release(void* raw) { free(raw); }

pn_status accel_quantization_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                                    pn_string_out* message_out) {
    const pn_quantization_desc* d = (const pn_quantization_desc*)layer->descriptor;
    quant_state* s = (quant_state*)calloc(1, sizeof(*s));
    if (s == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Quantization workload");
    }
    s->env = *(const accel_env*)context;
    s->k = accel_kernel_set_for(s->env.isa)->int8;
    s->dynamic = d->op == PN_QUANTIZATION_DYNAMIC_QUANTIZE_LINEAR;
    for (uint32_t i = 0; i < 4; ++i) { /* dynamic: x, then its outputs y, scale, zero_point */
        const pn_tensor_info* src = s->dynamic ? (i == 0 ? &layer->inputs[0] : &layer->outputs[i - 1])
                                    : i < 3    ? &layer->inputs[i]
                                               : &layer->outputs[0];
        s->infos[i].struct_size = (uint32_t)sizeof(pn_tensor_info);
        s->infos[i].dtype = src->dtype;
        s->infos[i].rank = src->rank;
        memcpy(s->infos[i].dims, src->dims, sizeof(s->infos[i].dims));
    }
    const pn_tensor_info* x = &layer->inputs[0];
    s->quantize = d->op != PN_QUANTIZATION_DEQUANTIZE_LINEAR;
    s->is_signed = (s->quantize ? layer->outputs[0].dtype : x->dtype) == PN_DTYPE_INT8;
    s->n = pn_num_elements(x);
    s->outer = s->n;
    s->axis = 1;
    s->inner = 1;
    if (!s->dynamic && (pn_num_elements(&layer->inputs[1]) != 1 || layer->inputs[1].rank > 1)) { /* per axis (validated) */
        uint32_t axis = (uint32_t)pn_normalize_axis(d->axis, x->rank);
        s->axis = x->dims[axis];
        s->inner = accel_span(x, axis + 1, x->rank);
        s->outer = accel_span(x, 0, axis);
    }
    *workload_out = pn_workload_new(s, quant_execute, quant_release, 0);
    if (*workload_out == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a Quantization workload");
    }
    return PN_OK;
}
