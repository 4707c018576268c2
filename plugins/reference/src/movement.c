/* SLICE, SPLIT, PAD, EXPAND and TRIANGULAR: data movement only, any element type (elements
 * are moved as bytes of pn_dtype_size; a zero is all bits clear in every type). */
#include "cpuref.h"

#include <string.h>

/* ---- SLICE: output [i..] = input [starts + i * steps] ------------------------------------ */

static pn_status slice_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                              pn_string_out* message_out) {
    (void)message_out;
    const pn_slice_desc* d = &op->desc.slice;
    const pn_tensor_info* x = &op->inputs[0];
    const pn_tensor_info* y = &op->outputs[0];
    size_t es = pn_dtype_size(x->dtype);
    int64_t strides[PN_MAX_DIMS], at[PN_MAX_DIMS];
    cpuref_dense_strides(x, strides);
    int64_t n = pn_num_elements(y);
    for (int64_t i = 0; i < n; ++i) {
        cpuref_unravel(y, i, at);
        int64_t offset = 0;
        for (uint32_t a = 0; a < x->rank; ++a) {
            offset += (d->starts[a] + at[a] * d->steps[a]) * strides[a];
        }
        memcpy((char*)out[0] + (size_t)i * es, (const char*)in[0] + (size_t)offset * es, es);
    }
    return PN_OK;
}

pn_status cpuref_slice_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_slice_desc), NULL, slice_kernel, NULL,
                                     workload_out, message_out);
}

/* ---- SPLIT: consecutive pieces along the axis --------------------------------------------- */

static pn_status split_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                              pn_string_out* message_out) {
    (void)message_out;
    const pn_tensor_info* x = &op->inputs[0];
    uint32_t axis = (uint32_t)pn_normalize_axis(op->desc.split.axis, x->rank);
    int64_t outer = cpuref_span(x, 0, axis);
    size_t inner = (size_t)cpuref_span(x, axis + 1, x->rank) * pn_dtype_size(x->dtype);
    const char* src = (const char*)in[0];
    for (int64_t o = 0; o < outer; ++o) {
        for (uint32_t k = 0; k < op->num_outputs; ++k) {
            /* Output k takes one block of its dims[axis] * inner bytes per outer index. */
            size_t block = (size_t)op->outputs[k].dims[axis] * inner;
            if (block > 0) {
                memcpy((char*)out[k] + (size_t)o * block, src, block);
                src += block;
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_split_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                              pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_split_desc), NULL, split_kernel, NULL,
                                     workload_out, message_out);
}

/* ---- PAD ---------------------------------------------------------------------------------- */

/* The coordinate in the cropped axis of `kept` elements that output position p (counted from
 * the first kept element) reads, or -1 for the constant value. */
static int64_t pad_source(pn_pad_mode mode, int64_t p, int64_t kept) {
    if (p >= 0 && p < kept) {
        return p;
    }
    switch (mode) {
    case PN_PAD_EDGE: return p < 0 ? 0 : kept - 1;
    case PN_PAD_REFLECT: return p < 0 ? -p : 2 * (kept - 1) - p; /* pads < kept */
    case PN_PAD_WRAP: return ((p % kept) + kept) % kept;
    default: return -1;
    }
}

static pn_status pad_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                            pn_string_out* message_out) {
    (void)message_out;
    const pn_pad_desc* d = &op->desc.pad;
    const pn_tensor_info* x = &op->inputs[0];
    const pn_tensor_info* y = &op->outputs[0];
    size_t es = pn_dtype_size(x->dtype);
    static const unsigned char zero[16] = {0};
    const void* value = op->num_inputs == 2 ? in[1] : zero;
    int64_t strides[PN_MAX_DIMS], at[PN_MAX_DIMS], first[PN_MAX_DIMS], kept[PN_MAX_DIMS];
    cpuref_dense_strides(x, strides);
    for (uint32_t a = 0; a < x->rank; ++a) {
        int64_t b = d->pads_begin[a], e = d->pads_end[a];
        first[a] = b < 0 ? -b : 0; /* the first element the negative pads keep */
        kept[a] = x->dims[a] - first[a] - (e < 0 ? -e : 0);
    }
    int64_t n = pn_num_elements(y);
    for (int64_t i = 0; i < n; ++i) {
        cpuref_unravel(y, i, at);
        int64_t offset = 0;
        for (uint32_t a = 0; a < x->rank && offset >= 0; ++a) {
            int64_t b = d->pads_begin[a];
            int64_t source = pad_source(d->mode, at[a] - (b > 0 ? b : 0), kept[a]);
            offset = source < 0 ? -1 : offset + (first[a] + source) * strides[a];
        }
        const void* src = offset < 0 ? value : (const char*)in[0] + (size_t)offset * es;
        memcpy((char*)out[0] + (size_t)i * es, src, es);
    }
    return PN_OK;
}

pn_status cpuref_pad_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                            pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_pad_desc), NULL, pad_kernel, NULL,
                                     workload_out, message_out);
}

/* ---- EXPAND: NumPy broadcasting ------------------------------------------------------------- */

static pn_status expand_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                               pn_string_out* message_out) {
    (void)message_out;
    const pn_tensor_info* x = &op->inputs[0];
    const pn_tensor_info* y = &op->outputs[0];
    size_t es = pn_dtype_size(x->dtype);
    int64_t strides[PN_MAX_DIMS], at[PN_MAX_DIMS];
    pn_broadcast_strides(x, y, strides); /* validated: x broadcasts to y */
    int64_t n = pn_num_elements(y);
    for (int64_t i = 0; i < n; ++i) {
        cpuref_unravel(y, i, at);
        memcpy((char*)out[0] + (size_t)i * es,
               (const char*)in[0] + (size_t)cpuref_dot(at, strides, y->rank) * es, es);
    }
    return PN_OK;
}

pn_status cpuref_expand_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                               pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, 0, NULL, expand_kernel, NULL, workload_out,
                                     message_out);
}

/* ---- TRIANGULAR: keep one side of diagonal k of the last two dims, zero the other --------- */

static pn_status triangular_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                                   pn_string_out* message_out) {
    (void)message_out;
    const pn_triangular_desc* d = &op->desc.triangular;
    const pn_tensor_info* x = &op->inputs[0];
    size_t es = pn_dtype_size(x->dtype);
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t matrices = cpuref_span(x, 0, x->rank - 2);
    memcpy(out[0], in[0], pn_num_bytes(x));
    char* y = (char*)out[0];
    for (int64_t m = 0; m < matrices; ++m) {
        for (int64_t i = 0; i < rows; ++i) {
            for (int64_t j = 0; j < cols; ++j) {
                /* j - i and k compared without overflow: |j - i| < 2^62 for any real tensor. */
                int keep = d->upper ? (j - i >= d->k) : (j - i <= d->k);
                if (!keep) {
                    memset(y + (size_t)((m * rows + i) * cols + j) * es, 0, es);
                }
            }
        }
    }
    return PN_OK;
}

pn_status cpuref_triangular_create(void* context, const pn_layer* layer,
                                   pn_workload** workload_out, pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_triangular_desc), NULL, triangular_kernel,
                                     NULL, workload_out, message_out);
}
