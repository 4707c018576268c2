/* Layer validation: the common checks, the entry that adds the kind's, and shape helpers. */
#include "plugnn/pn_validate.h"
#include "plugnn/pn_kinds.h"

#include "pn_validate_internal.h"

#include "plugnn/pn_elements.h"

#include <stdio.h>
#include <string.h>

/* ---- Shape helpers ------------------------------------------------------ */

const char* pn_format_shape(const pn_tensor_info* info, char* buf, size_t capacity) {
    if (buf == NULL || capacity == 0) {
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, capacity, "[");
    for (uint32_t i = 0; i < info->rank && i < PN_MAX_DIMS && used < capacity; ++i) {
        used += (size_t)snprintf(buf + used, capacity - used, "%s%lld", i ? ", " : "",
                                 (long long)info->dims[i]);
    }
    if (used < capacity) {
        snprintf(buf + used, capacity - used, "]");
    }
    return buf;
}

int pn_broadcast_shape(const pn_tensor_info* a, const pn_tensor_info* b, pn_tensor_info* out) {
    uint32_t rank = a->rank > b->rank ? a->rank : b->rank;
    pn_tensor_info r;
    memset(&r, 0, sizeof(r));
    r.struct_size = (uint32_t)sizeof(r);
    r.dtype = a->dtype;
    r.rank = rank;
    for (uint32_t i = 0; i < rank; ++i) {
        /* Align from the end; a missing dim acts as 1. */
        int64_t da = i < rank - a->rank ? 1 : a->dims[i - (rank - a->rank)];
        int64_t db = i < rank - b->rank ? 1 : b->dims[i - (rank - b->rank)];
        if (da != db && da != 1 && db != 1) {
            return -1;
        }
        r.dims[i] = da == 1 ? db : da;
    }
    *out = r;
    return 0;
}

void pn_layout_nchw(const pn_tensor_info* info, pn_data_layout layout, int64_t nchw_out[4]) {
    const int64_t* d = info->dims;
    nchw_out[0] = d[0];
    if (layout == PN_LAYOUT_NHWC) {
        nchw_out[1] = d[3];
        nchw_out[2] = d[1];
        nchw_out[3] = d[2];
    } else {
        nchw_out[1] = d[1];
        nchw_out[2] = d[2];
        nchw_out[3] = d[3];
    }
}

void pn_layout_shape(pn_data_layout layout, int64_t n, int64_t c, int64_t h, int64_t w,
                     pn_tensor_info* out) {
    out->rank = 4;
    out->dims[0] = n;
    if (layout == PN_LAYOUT_NHWC) {
        out->dims[1] = h;
        out->dims[2] = w;
        out->dims[3] = c;
    } else {
        out->dims[1] = c;
        out->dims[2] = h;
        out->dims[3] = w;
    }
}

/* ---- Internal helpers shared by the kind validators --------------------- */

pn_status pnv_counts(const pn_layer* layer, uint32_t min_inputs, uint32_t max_inputs,
                     pn_string_out* reason) {
    const char* kind = pn_layer_kind_name(layer->kind);
    if (layer->num_inputs < min_inputs || layer->num_inputs > max_inputs) {
        if (min_inputs == max_inputs) {
            return PNV_FAIL(reason, "%s takes %u input(s), got %u", kind, min_inputs,
                            layer->num_inputs);
        }
        if (max_inputs == UINT32_MAX) {
            return PNV_FAIL(reason, "%s takes at least %u input(s), got %u", kind, min_inputs,
                            layer->num_inputs);
        }
        return PNV_FAIL(reason, "%s takes %u to %u inputs, got %u", kind, min_inputs, max_inputs,
                        layer->num_inputs);
    }
    if (layer->num_outputs != 1) {
        return PNV_FAIL(reason, "%s has exactly 1 output, got %u", kind, layer->num_outputs);
    }
    return PN_OK;
}

pn_status pnv_rank(const pn_layer* layer, const pn_tensor_info* info, const char* what,
                   uint32_t min_rank, uint32_t max_rank, pn_string_out* reason) {
    if (info->rank < min_rank || info->rank > max_rank) {
        const char* kind = pn_layer_kind_name(layer->kind);
        if (min_rank == max_rank) {
            return PNV_FAIL(reason, "%s: %s must have rank %u, got rank %u", kind, what, min_rank,
                            info->rank);
        }
        return PNV_FAIL(reason, "%s: %s must have rank %u to %u, got rank %u", kind, what, min_rank,
                        max_rank, info->rank);
    }
    return PN_OK;
}

pn_status pnv_shape_is(const pn_layer* layer, const pn_tensor_info* actual,
                       const pn_tensor_info* expected, const char* what, pn_string_out* reason) {
    if (pn_same_dims(actual, expected)) {
        return PN_OK;
    }
    char a[160], e[160];
    return PNV_FAIL(reason, "%s: %s has shape %s, expected %s", pn_layer_kind_name(layer->kind),
                    what, pn_format_shape(actual, a, sizeof(a)),
                    pn_format_shape(expected, e, sizeof(e)));
}

pn_status pnv_layout(const pn_layer* layer, pn_data_layout layout, pn_string_out* reason) {
    if (layout != PN_LAYOUT_NCHW && layout != PN_LAYOUT_NHWC) {
        return PNV_FAIL(reason, "%s: unknown data layout %d (expected NCHW=1 or NHWC=2)",
                        pn_layer_kind_name(layer->kind), (int)layout);
    }
    return PN_OK;
}

/* ---- Fused activation --------------------------------------------------- */

pn_status pn_validate_fused_activation(const pn_activation_desc* act, const char* what,
                                       pn_string_out* reason) {
    if (act == NULL) {
        return PN_OK;
    }
    if (!PN_HAS_FIELD(act, pn_activation_desc, beta)) {
        return PNV_FAIL(reason, "%s: pn_activation_desc struct_size %u is too small (needs %u)",
                        what, act->struct_size,
                        (unsigned)(offsetof(pn_activation_desc, beta) + sizeof(float)));
    }
    if (act->kind < PN_ACTIVATION_RELU || act->kind > PN_ACTIVATION_SCALED_TANH) {
        return PNV_FAIL(reason, "%s: unknown activation kind %d", what, (int)act->kind);
    }
    if (act->kind == PN_ACTIVATION_CELU && act->alpha == 0.0f) {
        return PNV_FAIL(reason, "%s: CELU needs alpha != 0 (it divides by alpha)", what);
    }
    return PN_OK;
}

/* ---- Element types ----------------------------------------------------- */

static int in_class(pn_data_type t, pnv_class cls) {
    switch (cls) {
    case PNV_ANY: return 1;
    case PNV_FLOAT: return pn_dtype_is_float(t);
    case PNV_NUMERIC: return t != PN_DTYPE_BOOL;
    case PNV_INTEGER: return pn_dtype_is_integer(t);
    case PNV_SIGNED: return pn_dtype_is_signed(t);
    case PNV_UNSIGNED: return pn_dtype_is_unsigned(t);
    case PNV_BOOL: return t == PN_DTYPE_BOOL;
    case PNV_INDEX: return t == PN_DTYPE_INT32 || t == PN_DTYPE_INT64;
    }
    return 0;
}

static const char* class_name(pnv_class cls) {
    switch (cls) {
    case PNV_ANY: return "any";
    case PNV_FLOAT: return "a float type";
    case PNV_NUMERIC: return "a numeric type";
    case PNV_INTEGER: return "an integer type";
    case PNV_SIGNED: return "a signed type";
    case PNV_UNSIGNED: return "an unsigned integer type";
    case PNV_BOOL: return "bool";
    case PNV_INDEX: return "int32 or int64";
    }
    return "?";
}

pn_status pnv_type_class(const pn_layer* layer, const pn_tensor_info* info, const char* what,
                         pnv_class cls, pn_string_out* reason) {
    if (!in_class(info->dtype, cls)) {
        return PNV_FAIL(reason, "%s: %s must be %s, not %s", pn_layer_kind_name(layer->kind),
                        what, class_name(cls), pn_dtype_name(info->dtype));
    }
    return PN_OK;
}

pn_status pnv_same_type(const pn_layer* layer, uint32_t first, uint32_t last, int with_outputs,
                        pnv_class cls, pn_string_out* reason) {
    if (!in_class(layer->inputs[first].dtype, cls)) { /* the label made only for the message */
        char what[32];
        snprintf(what, sizeof(what), "input %u", first);
        return pnv_type_class(layer, &layer->inputs[first], what, cls, reason);
    }
    pn_data_type t = layer->inputs[first].dtype;
    for (uint32_t i = first + 1; i <= last && i < layer->num_inputs; ++i) {
        if (layer->inputs[i].dtype != t) {
            return PNV_FAIL(reason, "%s: input %u is %s but input %u is %s",
                            pn_layer_kind_name(layer->kind), i, pn_dtype_name(layer->inputs[i].dtype),
                            first, pn_dtype_name(t));
        }
    }
    for (uint32_t i = 0; with_outputs && i < layer->num_outputs; ++i) {
        if (layer->outputs[i].dtype != t) {
            return PNV_FAIL(reason, "%s: output %u is %s but input %u is %s",
                            pn_layer_kind_name(layer->kind), i,
                            pn_dtype_name(layer->outputs[i].dtype), first, pn_dtype_name(t));
        }
    }
    return PN_OK;
}

/* ---- Common checks ------------------------------------------------------ */

static pn_status check_tensor_info(const pn_tensor_info* info, const char* role, uint32_t index,
                                   pn_string_out* reason) {
    if (!PN_HAS_FIELD(info, pn_tensor_info, dims)) {
        return PNV_FAIL(reason, "%s %u: pn_tensor_info struct_size %u is too small", role, index,
                        info->struct_size);
    }
    if (pn_dtype_size(info->dtype) == 0) {
        return PNV_FAIL(reason, "%s %u has unknown dtype %d", role, index, (int)info->dtype);
    }
    if (info->rank > PN_MAX_DIMS) {
        return PNV_FAIL(reason, "%s %u has rank %u, more than PN_MAX_DIMS (%d)", role, index,
                        info->rank, PN_MAX_DIMS);
    }
    /* Every partial product stays below this bound, so nothing overflows. */
    const int64_t limit = (int64_t)1 << 56;
    int64_t elements = 1;
    for (uint32_t i = 0; i < info->rank; ++i) {
        int64_t d = info->dims[i];
        if (d < 0) {
            return PNV_FAIL(reason, "%s %u has negative dim %u (%lld)", role, index, i,
                            (long long)d);
        }
        if (d != 0 && elements > limit / d) {
            return PNV_FAIL(reason, "%s %u is too large to address", role, index);
        }
        elements *= d;
    }
    if ((uint64_t)elements > (uint64_t)(SIZE_MAX / 8)) {
        return PNV_FAIL(reason, "%s %u is too large to address", role, index);
    }
    return PN_OK;
}

/* The descriptor of a kind pn_kind_info_of knows; nothing to check for another. */
static pn_status check_descriptor(const pn_layer* layer, pn_string_out* reason) {
    const pn_kind_info* info = pn_kind_info_of(layer->kind);
    if (info == NULL || info->descriptor_size == 0) {
        return PN_OK; /* a descriptor given to a kind without one is ignored */
    }
    size_t needed = info->descriptor_size;
    const char* kind = info->name;
    if (layer->descriptor == NULL) {
        return PNV_FAIL(reason, "%s needs a descriptor, got NULL", kind);
    }
    /* Every descriptor begins with uint32_t struct_size. */
    uint32_t size = *(const uint32_t*)layer->descriptor;
    if (size < needed) {
        return PNV_FAIL(reason, "%s: descriptor struct_size %u is too small (needs %u)", kind,
                        size, (unsigned)needed);
    }
    return PN_OK;
}

static pn_status check_tensor_array(const pn_tensor_info* infos, uint32_t count, const char* role,
                                    pn_string_out* reason) {
    if (count > 0 && infos == NULL) {
        return PNV_FAIL(reason, "%u %ss declared but the %s array is NULL", count, role, role);
    }
    for (uint32_t i = 0; i < count; ++i) {
        pn_status s = check_tensor_info(&infos[i], role, i, reason);
        if (s != PN_OK) {
            return s;
        }
    }
    return PN_OK;
}

pn_status pn_validate_common(const pn_layer* layer, pn_string_out* reason) {
    if (layer == NULL) {
        return PNV_FAIL(reason, "layer is NULL");
    }
    if (!PN_HAS_FIELD(layer, pn_layer, outputs)) {
        return PNV_FAIL(reason, "pn_layer struct_size %u is too small", layer->struct_size);
    }
    if ((int)layer->kind <= (int)PN_LAYER_INVALID) {
        return PNV_FAIL(reason, "invalid layer kind %d", (int)layer->kind);
    }
    pn_status s = check_tensor_array(layer->inputs, layer->num_inputs, "input", reason);
    if (s == PN_OK) {
        s = check_tensor_array(layer->outputs, layer->num_outputs, "output", reason);
    }
    if (s == PN_OK) {
        s = check_descriptor(layer, reason);
    }
    return s;
}

/* ---- Entry ------------------------------------------------------------ */

pn_status pn_validate_layer(const pn_layer* layer, pn_string_out* reason) {
    PNV_TRY(pn_validate_common(layer, reason));
    const pn_kind_info* info = pn_kind_info_of(layer->kind);
    if (info == NULL) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "layer kind %d is newer than this plugin's backend_api.h",
                       (int)layer->kind);
    }
    return info->validate(layer, reason);
}

/* ---- Execute arguments ------------------------------------------------------ */

static pn_status check_tensor(const pn_tensor* t, const pn_tensor_info* expected, const char* role,
                              uint32_t index, const char* backend, pn_string_out* message_out) {
    if (!PN_HAS_FIELD(t, pn_tensor, data)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s execute: %s %u: pn_tensor struct_size is too small", backend, role, index);
    }
    if (t->info != NULL &&
        (t->info->dtype != expected->dtype || !pn_same_dims(t->info, expected))) {
        char given[160], wanted[160];
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s execute: %s %u is %s %s, the workload was created for %s %s", backend,
                       role, index, pn_dtype_name(t->info->dtype),
                       pn_format_shape(t->info, given, sizeof(given)),
                       pn_dtype_name(expected->dtype),
                       pn_format_shape(expected, wanted, sizeof(wanted)));
    }
    if (t->data == NULL && pn_num_elements(expected) > 0) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, "%s execute: %s %u has NULL data",
                       backend, role, index);
    }
    return PN_OK;
}

pn_status pn_check_execute_args(const pn_execute_args* args, uint32_t num_inputs,
                                const pn_tensor_info* inputs, uint32_t num_outputs,
                                const pn_tensor_info* outputs, const char* backend,
                                pn_string_out* message_out) {
    if (!PN_HAS_FIELD(args, pn_execute_args, outputs)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s execute: args is NULL or its struct_size is too small", backend);
    }
    if (args->num_inputs != num_inputs || args->num_outputs != num_outputs) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s execute: the workload takes %u inputs and %u outputs, got %u and %u",
                       backend, num_inputs, num_outputs, args->num_inputs, args->num_outputs);
    }
    if ((num_inputs > 0 && args->inputs == NULL) || (num_outputs > 0 && args->outputs == NULL)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "%s execute: the inputs or outputs array is NULL", backend);
    }
    for (uint32_t i = 0; i < num_inputs; ++i) {
        pn_status s = check_tensor(&args->inputs[i], &inputs[i], "input", i, backend, message_out);
        if (s != PN_OK) {
            return s;
        }
    }
    for (uint32_t i = 0; i < num_outputs; ++i) {
        pn_status s = check_tensor(&args->outputs[i], &outputs[i], "output", i, backend, message_out);
        if (s != PN_OK) {
            return s;
        }
    }
    return PN_OK;
}

