/*
 * plugnn element types for plugins: the classes backend_api.h's kind comments
 * name ("float", "integer", ...), and element access by pn_data_type for
 * kernels that run on any type (reference kernels, data movement).
 *
 * Part of plugnn::plugin_common (not of the ABI). Loads and stores take the
 * tensor's base pointer and an element index; nothing here checks bounds.
 */
#ifndef PLUGNN_PN_ELEMENTS_H
#define PLUGNN_PN_ELEMENTS_H

#include "plugnn/backend_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Classes ------------------------------------------------------------- */

int pn_dtype_is_float(pn_data_type dtype);    /* FLOAT32, FLOAT16, BFLOAT16, FLOAT64 */
int pn_dtype_is_integer(pn_data_type dtype);  /* the signed and unsigned integer types */
int pn_dtype_is_unsigned(pn_data_type dtype); /* UINT8, UINT16, UINT32, UINT64 */
int pn_dtype_is_signed(pn_data_type dtype);   /* the signed integers and the floats */

/* ---- 16-bit floats --------------------------------------------------------- */

float pn_half_to_float(uint16_t bits);
uint16_t pn_float_to_half(float value);     /* round to nearest even; overflow to infinity */
float pn_bfloat16_to_float(uint16_t bits);
uint16_t pn_float_to_bfloat16(float value); /* round to nearest even; NaN stays NaN */

/* ---- Element access ---------------------------------------------------------
 * As double: floats exactly (FLOAT64 as is), integers exactly up to 2^53, BOOL as
 * 0 or 1. Storing a double rounds to the nearest value of a float type, ties to
 * even, once (the 16-bit floats too: never through a rounded float32), truncates
 * toward zero for an integer type (NaN gives 0; values beyond the type saturate)
 * and stores v != 0 for BOOL.
 * As integers: exact for every integer type; a float is truncated toward zero
 * (saturating, NaN gives 0); storing an integer wraps to the width of an integer
 * type (two's complement), converts to the nearest value of a float type (rounded
 * once from the exact integer) and stores v != 0 for BOOL. */

double pn_load_double(pn_data_type dtype, const void* data, int64_t index);
void pn_store_double(pn_data_type dtype, void* data, int64_t index, double value);
int64_t pn_load_int64(pn_data_type dtype, const void* data, int64_t index);
uint64_t pn_load_uint64(pn_data_type dtype, const void* data, int64_t index);
void pn_store_int64(pn_data_type dtype, void* data, int64_t index, int64_t value);
void pn_store_uint64(pn_data_type dtype, void* data, int64_t index, uint64_t value);

/* Converts n elements of `src_dtype` at src to `dst_dtype` at dst: a float source
 * by pn_store_double, an integer or BOOL source by pn_store_int64 / pn_store_uint64
 * (so integer to integer is exact modulo the width and integer to float rounds
 * once). */
void pn_convert(pn_data_type dst_dtype, void* dst, pn_data_type src_dtype, const void* src,
                int64_t n);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PLUGNN_PN_ELEMENTS_H */
