/* Helpers shared by the pn_validate*.c files (not installed). */
#ifndef PLUGNN_PN_VALIDATE_INTERNAL_H
#define PLUGNN_PN_VALIDATE_INTERNAL_H

#include "plugnn/plugin_common.h"
#include "plugnn/pn_validate.h"

/* Every validation failure is PN_ERR_INVALID_ARGUMENT with a reason. */
#define PNV_FAIL(reason, ...) pn_fail((reason), PN_ERR_INVALID_ARGUMENT, __VA_ARGS__)

/* Offset just past `field` of `type`: the struct_size that covers it. */
#define PNV_END(type, field) (offsetof(type, field) + sizeof(((type*)0)->field))

/* Propagate a failing status. */
#define PNV_TRY(expr)                   \
    do {                                \
        pn_status pnv_status_ = (expr); \
        if (pnv_status_ != PN_OK) {     \
            return pnv_status_;         \
        }                               \
    } while (0)

/* num_inputs in [min_inputs, max_inputs] and exactly one output. */
pn_status pnv_counts(const pn_layer* layer, uint32_t min_inputs, uint32_t max_inputs,
                     pn_string_out* reason);

/* info->rank in [min_rank, max_rank]; `what` names the tensor ("input 0"). */
pn_status pnv_rank(const pn_layer* layer, const pn_tensor_info* info, const char* what,
                   uint32_t min_rank, uint32_t max_rank, pn_string_out* reason);

/* actual has the dims of expected. */
pn_status pnv_shape_is(const pn_layer* layer, const pn_tensor_info* actual,
                       const pn_tensor_info* expected, const char* what, pn_string_out* reason);

/* The element-type classes of backend_api.h's kind comments. */
typedef enum pnv_class {
    PNV_ANY,
    PNV_FLOAT,
    PNV_NUMERIC,    /* every type but BOOL */
    PNV_INTEGER,
    PNV_SIGNED,     /* signed integers and floats */
    PNV_UNSIGNED,
    PNV_BOOL,
    PNV_INDEX       /* INT32 or INT64 */
} pnv_class;

/* `info` (named `what`, "input 0") is of class `cls`. */
pn_status pnv_type_class(const pn_layer* layer, const pn_tensor_info* info, const char* what,
                         pnv_class cls, pn_string_out* reason);

/* Inputs [first, last] (last clamped to num_inputs - 1) and, with with_outputs, every
 * output share input first's element type, which is of class `cls`. */
pn_status pnv_same_type(const pn_layer* layer, uint32_t first, uint32_t last, int with_outputs,
                        pnv_class cls, pn_string_out* reason);

/* The inputs broadcast (NumPy rules) to exactly the shape of the one output. */
pn_status pnv_broadcast_output(const pn_layer* layer, pn_string_out* reason);

/* layout is NCHW or NHWC. */
pn_status pnv_layout(const pn_layer* layer, pn_data_layout layout, pn_string_out* reason);

/* The pooling parameters POOLING_2D and POOLING share (pn_validate_window.c): kind, output
 * rounding, AVERAGE's padding method and LP's order p; `what` names the kind in the reason. */
pn_status pnv_pool_mode(const char* what, pn_pooling_kind kind, pn_output_rounding rounding,
                        pn_padding_method padding_method, float p, pn_string_out* reason);

/* Index of the first output along an axis whose window holds no input element (only
 * padding), or -1 when every window holds at least one. */
int64_t pnv_first_empty_window(int64_t in, uint32_t pad_begin, uint32_t k, uint32_t stride,
                               uint32_t dilation, int64_t out);

#endif /* PLUGNN_PN_VALIDATE_INTERNAL_H */
