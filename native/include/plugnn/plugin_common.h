/*
 * plugnn plugin helpers: code every backend would otherwise write again.
 * Linked into each plugin as plugnn::plugin_common (static); nothing here is
 * part of the ABI between the runtime and a plugin, so it may change freely
 * between plugnn releases without touching the backend API version.
 *
 * The other headers of plugin_common: pn_kinds.h (the layer kind table),
 * pn_validate.h (the shared layer validation) and pn_plugin.h (the plugin
 * skeleton built on both).
 */
#ifndef PLUGNN_PLUGIN_COMMON_H
#define PLUGNN_PLUGIN_COMMON_H

#include "plugnn/backend_api.h"

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PN_PRINTF_FORMAT(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define PN_PRINTF_FORMAT(fmt_index, first_arg)
#endif

/* ---- Messages ----------------------------------------------------------- */

/* Writes the formatted text into `out` (truncated to its capacity, always
 * NUL-terminated; nothing when out or out->data is NULL) and returns `status`,
 * so a failing path reads `return pn_fail(msg, PN_ERR_..., "...", ...);`. */
pn_status pn_fail(pn_string_out* out, pn_status status, const char* fmt, ...) PN_PRINTF_FORMAT(3, 4);

/* Writes the formatted text into `out` like pn_fail, without a status. */
void pn_write(pn_string_out* out, const char* fmt, ...) PN_PRINTF_FORMAT(2, 3);

/* For is_layer_supported: writes the reason, sets *supported_out = 0, returns PN_OK. */
pn_status pn_refuse(pn_bool* supported_out, pn_string_out* reason_out, const char* fmt, ...)
    PN_PRINTF_FORMAT(3, 4);

/* ---- Names -------------------------------------------------------------- */

const char* pn_dtype_name(pn_data_type dtype);         /* "float32", ..., "invalid" */
const char* pn_layer_kind_name(pn_layer_kind kind);    /* "Convolution2d", ..., "Invalid"
                                                          (from the kind table, pn_kinds.h) */
const char* pn_status_name(pn_status status);          /* "PN_OK", ... */

/* ---- Tensors ------------------------------------------------------------ */

/* Bytes per element; 0 for PN_DTYPE_INVALID or an unknown value. */
size_t pn_dtype_size(pn_data_type dtype);

/* Number of elements (1 for rank 0). */
int64_t pn_num_elements(const pn_tensor_info* info);

/* Bytes of the tensor's dense storage. */
size_t pn_num_bytes(const pn_tensor_info* info);

/* 1 when both infos have the same rank and dims, else 0. The dtype is not
 * compared: a caller that needs it equal too tests it itself. */
int pn_same_dims(const pn_tensor_info* a, const pn_tensor_info* b);

/* Normalizes a possibly negative axis against `rank`; returns -1 when out of range. */
int32_t pn_normalize_axis(int32_t axis, uint32_t rank);

/* Element strides of `in` seen through NumPy broadcasting to `out`: strides_out
 * has out->rank entries, 0 where `in` is broadcast (size 1 or missing). Returns
 * 0 on success, -1 when `in` cannot broadcast to `out`. */
int pn_broadcast_strides(const pn_tensor_info* in, const pn_tensor_info* out,
                         int64_t strides_out[PN_MAX_DIMS]);

/* Output size of a window operation along one axis, the formula of
 * pn_convolution_2d_desc (ceil=1 selects CEIL rounding as pooling defines it).
 * Returns -1 when the window does not fit even once. */
int64_t pn_window_output_size(int64_t in, uint32_t pad_begin, uint32_t pad_end, uint32_t kernel,
                              uint32_t stride, uint32_t dilation, int ceil_mode);

/* ---- Reshapes ----------------------------------------------------------- */

/* How a Reshape of dims in[0..in_rank) into out[0..out_rank) (the same element
 * count) groups axes, so that a fused layer reading a tensor through it can work
 * the Reshape's output dims out again from other input dims (a KV cache one
 * token longer). The grouping, walking both shapes from the first axis:
 *   - an input axis and an output axis both of size 1 pair up (the output's is
 *     the input's);
 *   - any other output axis of size 1 stays 1 (it belongs to no input axis);
 *   - otherwise the fewest input axes and output axes with equal products form
 *     a group: one output axis is the product of its input axes (an axis kept,
 *     or adjacent axes merged); several output axes (an axis split, or a mixed
 *     group) keep their sizes and need the group's input sizes kept;
 *   - input axes left after the last output axis (sizes 1) join the last group.
 * plugnn's runtime applies the same rule to every Reshape a PRECOMPILED layer
 * absorbed that reads one of the layer's inputs before it passes that layer other dims (PN_WORKLOAD_SHAPES_AT_EXECUTE):
 * it does so only where each such Reshape's output at the new dims is what this
 * rule gives (python/plugnn/reshape_groups.py), so a payload may derive them so. */
typedef struct pn_reshape_groups {
    uint32_t in_rank, out_rank;
    int64_t in_dims[PN_MAX_DIMS];       /* the dims the grouping was made at */
    int64_t out_dims[PN_MAX_DIMS];
    uint8_t first[PN_MAX_DIMS];         /* output axis j: input axes [first, first + count) */
    uint8_t count[PN_MAX_DIMS];         /* 0: an output axis of size 1 of no input axis */
    uint8_t kept[PN_MAX_DIMS];          /* 1: the axis keeps its size (a split or mixed group,
                                           or count 0), its input axes must keep theirs */
} pn_reshape_groups;

/* The grouping of a Reshape of in into out into *g: 1, or 0 when the shapes do
 * not form one (ranks above PN_MAX_DIMS, a zero or negative size, counts that
 * differ). */
int pn_reshape_groups_make(uint32_t in_rank, const int64_t* in, uint32_t out_rank, const int64_t* out,
                           pn_reshape_groups* g);

/* The output dims of g's Reshape at input dims in[0..g->in_rank) into out[0..g->out_rank):
 * 1, or 0 when they do not follow from the grouping (a split group's input sizes
 * changed, a size below 1). */
int pn_reshape_groups_apply(const pn_reshape_groups* g, const int64_t* in, int64_t* out);

/* ---- Options ------------------------------------------------------------ */

/* Parses a decimal integer in [min, max] from the whole of `text`.
 * Returns 0 on success, -1 (leaving *value_out alone) otherwise. */
int pn_parse_u32(const char* text, uint32_t min, uint32_t max, uint32_t* value_out);

/* ---- Workloads ---------------------------------------------------------- */

typedef pn_status (*pn_execute_fn)(void* state, const pn_execute_args* args,
                                   pn_string_out* message_out);

/* A pn_workload around `state`: execute() calls `execute(state, ...)`,
 * destroy() calls `release_state(state)` (when not NULL) and frees the
 * workload. Returns NULL when out of memory (and then releases `state`). */
pn_workload* pn_workload_new(void* state, pn_execute_fn execute, void (*release_state)(void*),
                             size_t workspace_bytes);

/* pn_workload.reshape for a workload of pn_workload_new_reshapable: `state` is
 * the source workload's, read-only (it may be executing on another thread). */
typedef pn_status (*pn_reshape_fn)(const void* state, const pn_layer* layer,
                                   pn_workload** workload_out, pn_string_out* message_out);

/* pn_workload_new with pn_workload.reshape set: reshape() checks its arguments
 * (NULL layer or workload_out: PN_ERR_INVALID_ARGUMENT), sets *workload_out to
 * NULL and calls `reshape(state, ...)`. */
pn_workload* pn_workload_new_reshapable(void* state, pn_execute_fn execute,
                                        void (*release_state)(void*), size_t workspace_bytes,
                                        pn_reshape_fn reshape);

/* pn_workload.read_profile for a workload of pn_workload_new: `state` is the
 * workload's. */
typedef pn_status (*pn_read_profile_fn)(void* state, pn_profile_entry* entries, uint32_t capacity,
                                        uint32_t* count_out, pn_string_out* message_out);

/* Sets pn_workload.read_profile of a workload made by pn_workload_new or
 * pn_workload_new_reshapable: read_profile() checks its arguments (NULL
 * count_out, NULL entries with capacity > 0: PN_ERR_INVALID_ARGUMENT), sets
 * *count_out to 0 and calls `read_profile(state, ...)`. */
void pn_workload_set_read_profile(pn_workload* workload, pn_read_profile_fn read_profile);

/* Whether `args` asks the workload to time its parts (pn_execute_args.profile,
 * read only when the caller's struct holds it). */
int pn_execute_profiling(const pn_execute_args* args);

/* Copies n profile entries (names and nanoseconds) into the caller's `entries`
 * as read_profile does: at most `capacity`, checking each entry's struct_size;
 * *count_out = n. */
pn_status pn_profile_copy(const char* const* names, const uint64_t* nanoseconds, uint32_t n,
                          pn_profile_entry* entries, uint32_t capacity, uint32_t* count_out,
                          pn_string_out* message_out);

/* The state of a workload made by pn_workload_new or pn_workload_new_reshapable
 * (undefined for any other workload). */
void* pn_workload_state(const pn_workload* workload);

/* ---- Shared immutable state --------------------------------------------------- */

/* A reference-counted block of immutable state (prepacked weights, tables) that a
 * workload and the workloads reshaped from it share (pn_workload.reshape). The
 * count is atomic: a workload with PN_WORKLOAD_SHAPES_AT_EXECUTE re-sizes itself
 * inside execute() (pn_plugin.h), which may run on one thread while the runtime
 * reshapes or destroys another workload sharing the state on another. */
typedef struct pn_shared pn_shared;

/* A block holding `data` with one reference; release(data) (when not NULL) runs
 * when the last reference goes. NULL when out of memory (data is then released). */
pn_shared* pn_shared_new(void* data, void (*release)(void* data));

/* One more reference; returns `shared` (NULL stays NULL). */
pn_shared* pn_shared_ref(pn_shared* shared);

/* One reference less; the last releases the data and the block. NULL: nothing. */
void pn_shared_unref(pn_shared* shared);

/* The data (NULL for a NULL block) and the number of references (for tests). */
void* pn_shared_data(const pn_shared* shared);
unsigned pn_shared_refs(const pn_shared* shared);

/* ---- Tree ensembles ------------------------------------------------------------ */

/* TREE_ENSEMBLE's post transform (backend_api.h, "Tree ensembles") in place over one row's k
 * scores s, in double: NONE leaves them; LOGISTIC, SOFTMAX, SOFTMAX_ZERO (|s| <= 1e-7 gives 0,
 * left out of the sum) and PROBIT (sqrt(2) erfinv(2s - 1): Winitzki's approximation refined
 * by Newton steps on erf) as the header states. */
void pn_tree_apply_post_transform(pn_tree_post_transform post, double* s, int64_t k);

/* TREE_ENSEMBLE's epilogue for one row, what every backend does after summing the leaves: the
 * row's k sums s divided by `trees` for PN_TREE_AGGREGATE_AVERAGE, base[j] added, then the post
 * transform applied in place; returns the target of the highest score before the transform
 * (the first of equal ones: a classifier's label). */
int64_t pn_tree_finish_row(pn_tree_aggregate agg, int64_t trees, const double* base, pn_tree_post_transform post,
                           double* s, int64_t k);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PLUGNN_PLUGIN_COMMON_H */
