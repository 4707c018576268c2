/* Messages and names for plugins. */
#include "plugnn/plugin_common.h"

#include <stdio.h>

static void write_va(pn_string_out* out, const char* fmt, va_list args) {
    if (out == NULL || out->data == NULL || out->capacity == 0) {
        return;
    }
    int n = vsnprintf(out->data, out->capacity, fmt, args);
    if (n < 0) {
        out->data[0] = '\0';
    }
}

void pn_write(pn_string_out* out, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    write_va(out, fmt, args);
    va_end(args);
}

pn_status pn_fail(pn_string_out* out, pn_status status, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    write_va(out, fmt, args);
    va_end(args);
    return status;
}

pn_status pn_refuse(pn_bool* supported_out, pn_string_out* reason_out, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    write_va(reason_out, fmt, args);
    va_end(args);
    *supported_out = 0;
    return PN_OK;
}

const char* pn_dtype_name(pn_data_type dtype) {
    switch (dtype) {
    case PN_DTYPE_FLOAT32: return "float32";
    case PN_DTYPE_FLOAT16: return "float16";
    case PN_DTYPE_INT8: return "int8";
    case PN_DTYPE_UINT8: return "uint8";
    case PN_DTYPE_INT32: return "int32";
    case PN_DTYPE_INT64: return "int64";
    case PN_DTYPE_BOOL: return "bool";
    case PN_DTYPE_INT16: return "int16";
    case PN_DTYPE_UINT16: return "uint16";
    case PN_DTYPE_UINT32: return "uint32";
    case PN_DTYPE_UINT64: return "uint64";
    case PN_DTYPE_FLOAT64: return "float64";
    case PN_DTYPE_BFLOAT16: return "bfloat16";
    case PN_DTYPE_INVALID: break;
    }
    return "invalid";
}

const char* pn_status_name(pn_status status) {
    switch (status) {
    case PN_OK: return "PN_OK";
    case PN_ERR_INVALID_ARGUMENT: return "PN_ERR_INVALID_ARGUMENT";
    case PN_ERR_UNSUPPORTED: return "PN_ERR_UNSUPPORTED";
    case PN_ERR_OUT_OF_MEMORY: return "PN_ERR_OUT_OF_MEMORY";
    case PN_ERR_NOT_FOUND: return "PN_ERR_NOT_FOUND";
    case PN_ERR_INVALID_STATE: return "PN_ERR_INVALID_STATE";
    case PN_ERR_INTERNAL: return "PN_ERR_INTERNAL";
    }
    return "PN_ERR_UNKNOWN";
}
