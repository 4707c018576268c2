/* CAST: every pair of element types by pn_convert (pn_elements.h: rounding once, integers
 * wrapping, BOOL as 0/1), and `saturate` for float targets. */
#include "cpuref.h"

#include <float.h>
#include <math.h>

/* The largest finite value of a float type. */
static double largest_finite(pn_data_type dtype) {
    switch (dtype) {
    case PN_DTYPE_FLOAT16: return 65504.0;
    case PN_DTYPE_BFLOAT16: return 3.38953138925153547590470800371487866880e38; /* 0x7f7f */
    case PN_DTYPE_FLOAT32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

static pn_status cast_kernel(const cpuref_op* op, const void* const* in, void* const* out,
                             pn_string_out* message_out) {
    (void)message_out;
    pn_data_type from = op->inputs[0].dtype, to = op->outputs[0].dtype;
    int64_t n = pn_num_elements(&op->outputs[0]);
    if (!op->desc.cast.saturate || !pn_dtype_is_float(to)) {
        pn_convert(to, out[0], from, in[0], n);
        return PN_OK;
    }
    /* Saturating: a finite value beyond the target's range becomes its largest finite
     * value of that sign; everything else converts as without saturation. */
    double largest = largest_finite(to);
    size_t from_size = pn_dtype_size(from), to_size = pn_dtype_size(to);
    for (int64_t i = 0; i < n; ++i) {
        double v = pn_load_double(from, in[0], i);
        if (isfinite(v) && fabs(v) > largest) {
            pn_store_double(to, out[0], i, copysign(largest, v));
        } else {
            pn_convert(to, (char*)out[0] + (size_t)i * to_size, from,
                       (const char*)in[0] + (size_t)i * from_size, 1);
        }
    }
    return PN_OK;
}

pn_status cpuref_cast_create(void* context, const pn_layer* layer, pn_workload** workload_out,
                             pn_string_out* message_out) {
    (void)context;
    return cpuref_typed_workload_new(layer, sizeof(pn_cast_desc), NULL, cast_kernel, NULL,
                                     workload_out, message_out);
}
