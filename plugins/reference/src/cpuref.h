/*
 * CpuRef private header: the workload state every kernel family shares, the
 * small helpers they use, and each family's create function.
 *
 * backend.c describes CpuRef to the plugin skeleton (pn_plugin.h): per kind,
 * its element-type limit and the family's create function. The skeleton runs
 * the shared pn_validate_* of the kind and that limit before a create
 * function; the create function copies what it needs from the layer into a
 * cpuref_op and picks the kernel that execute() calls.
 *
 * Two kinds of kernel. A float kernel (cpuref_kernel) reads and writes float32;
 * its workload stages every other float type through float32 buffers (so a
 * float kind runs on FLOAT16, BFLOAT16 and FLOAT64 too, computed in float32). A
 * typed kernel (cpuref_typed_kernel) reads and writes the tensors' own types,
 * usually through pn_elements.h (in double for floats, int64/uint64 for
 * integers), and may fail for what the data decides.
 */
#ifndef CPUREF_H
#define CPUREF_H

#include "plugnn/plugin_common.h"
#include "plugnn/pn_elements.h"
#include "plugnn/pn_plugin.h"
#include "plugnn/pn_validate.h"

typedef struct cpuref_op cpuref_op;

/* Runs one layer: in[i] / out[i] point at the float32 data of input/output i
 * (NULL only for a tensor with no elements). Never called when the output is
 * empty. Kernels cannot fail: everything was checked before. */
typedef void (*cpuref_kernel)(const cpuref_op* op, const float* const* in, float* const* out);

/* Runs one layer on its tensors' own element types: in[i] / out[i] point at the
 * data of input/output i (an empty input gets a valid pointer it never reads).
 * Never called when every output is empty, except for DATA_DEPENDENT kernels
 * (they report their outputs' dims; an empty output's pointer may be NULL). Fails only for what the data
 * decides (an index out of range, an integer division by zero): then returns
 * PN_ERR_INVALID_ARGUMENT with a message that names the kind and the value. */
typedef pn_status (*cpuref_typed_kernel)(const cpuref_op* op, const void* const* in,
                                         void* const* out, pn_string_out* message_out);

/* What a workload keeps from its layer: copies only, never the layer's pointers. */
struct cpuref_op {
    pn_layer_kind kind;
    uint32_t num_inputs;
    uint32_t num_outputs;
    pn_tensor_info* inputs;          /* num_inputs copies */
    pn_tensor_info* outputs;         /* num_outputs copies */
    const float** in_data;           /* execute() scratch: one pointer per input */
    float** out_data;                /* execute() scratch: one pointer per output */
    int64_t (*strides)[PN_MAX_DIMS]; /* kernel scratch: one stride row per input */
    cpuref_kernel kernel;            /* a float kernel, or NULL */
    cpuref_typed_kernel typed;       /* a typed kernel, or NULL */
    float** staged;                  /* float kernels: a float32 buffer per input then output
                                        of another float type, else NULL entries */
    void* priv;                      /* family state (typed kernels), freed with free() */
    void* workspace;                 /* execute() scratch: the workspace the runtime passed */
    int64_t* output_dims;            /* execute() scratch: where a DATA_DEPENDENT kernel reports
                                        its outputs' actual dims (the execute arguments'), else NULL */
    pn_shared* constants;            /* cpuref_constants: which constant buffers the layer
                                        reads, shared with the workloads reshaped from it */
    int has_activation;              /* the fused activation below applies */
    pn_activation_desc activation;
    union {                          /* the layer's descriptor; pointers inside are NULL */
        pn_convolution_2d_desc conv;
        pn_pooling_2d_desc pool;
        pn_elementwise_binary_desc binary;
        pn_elementwise_variadic_desc variadic;
        pn_activation_desc activation;
        pn_fully_connected_desc fc;
        pn_softmax_desc softmax;
        pn_batch_normalization_desc bn;
        pn_lrn_desc lrn;
        pn_concat_desc concat;
        pn_transpose_desc transpose;
        pn_elementwise_unary_desc unary;
        pn_reduce_desc reduce;
        pn_normalization_desc norm;
        pn_gather_desc gather;
        pn_scatter_desc scatter;
        pn_slice_desc slice;
        pn_split_desc split;
        pn_pad_desc pad;
        pn_resize_desc resize;
        pn_cast_desc cast;
        pn_convolution_desc convnd;
        pn_pooling_desc poolnd;
        pn_recurrent_desc recurrent;
        pn_top_k_desc top_k;
        pn_cumulative_desc cumulative;
        pn_one_hot_desc one_hot;
        pn_triangular_desc triangular;
        pn_quantization_desc quantization;
        pn_quantized_convolution_desc qconv;
        pn_quantized_matmul_desc qmatmul;
        pn_grid_sample_desc grid_sample;
        pn_roi_align_desc roi_align;
        pn_deformable_convolution_desc deform;
        pn_spectral_desc spectral;
        pn_linear_algebra_desc linalg;
        pn_random_desc random;
        pn_data_dependent_desc data_dependent;
        pn_tree_ensemble_desc tree_ensemble;
    } desc;
};

/* ---- workload.c ---------------------------------------------------------- */

/* A workload running `kernel` on a copy of `layer`: its tensor infos, the
 * first `desc_size` bytes of its descriptor (bounded by the descriptor's
 * struct_size) and `fused` (may be NULL). */
pn_status cpuref_workload_new(const pn_layer* layer, size_t desc_size,
                              const pn_activation_desc* fused, cpuref_kernel kernel,
                              pn_workload** workload_out, pn_string_out* message_out);

/* The same, asking the runtime for `workspace_bytes` of scratch, which the kernel finds in
 * op->workspace during execute(). */
pn_status cpuref_workload_new_scratch(const pn_layer* layer, size_t desc_size,
                                      const pn_activation_desc* fused, cpuref_kernel kernel,
                                      size_t workspace_bytes, pn_workload** workload_out,
                                      pn_string_out* message_out);

/* The same with a typed kernel; `priv` (may be NULL) is owned by the workload from
 * this call on, also when it fails. */
pn_status cpuref_typed_workload_new(const pn_layer* layer, size_t desc_size,
                                    const pn_activation_desc* fused, cpuref_typed_kernel kernel,
                                    void* priv, pn_workload** workload_out,
                                    pn_string_out* message_out);

/* ---- backend.c: the workload factory's create, for pn_workload.reshape ------- */

/* pn_plugin_create_workload for CpuRef's own plugin description: the layer is
 * judged as the factory judges it, then built by its kind's create function. */
pn_status cpuref_create_workload(const pn_layer* layer, pn_workload** workload_out,
                                 pn_string_out* message_out);

/* ---- backend.c: element-type limits (pn_plugin_check_fn) -------------------- */

/* Every tensor of one float type (FLOAT32, FLOAT16, BFLOAT16 or FLOAT64). */
pn_status cpuref_floats(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason);
/* Any element types: the shared validation already checked what the kind allows. */
pn_status cpuref_any_type(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason);
/* Any element types, but no quantized tensor (quant_scale != 0): the kinds that compute values
 * (CpuRef's typed kernels read integers as plain integers). */
pn_status cpuref_unquantized(const pn_plugin* plugin, const pn_layer* layer, pn_string_out* reason);

/* ---- Family create functions (one file each) ---------------------------- */

/* pn_plugin_create_fn: CpuRef's factory has no context (NULL). */
pn_status cpuref_conv2d_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_pooling2d_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_binary_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_variadic_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_activation_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_fully_connected_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_matmul_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_softmax_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_batch_norm_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_lrn_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_concat_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_reshape_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_transpose_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_copy_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_recurrent_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_gather_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_scatter_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_one_hot_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_slice_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_split_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_pad_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_expand_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_triangular_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_convolution_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_pooling_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_resize_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_reduce_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_normalization_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_top_k_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_cumulative_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_unary_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_select_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_cast_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_data_dependent_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_grid_sample_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_roi_align_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_deformable_convolution_create(void*, const pn_layer*, pn_workload**,
                                               pn_string_out*);
pn_status cpuref_spectral_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_linear_algebra_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_bitcast_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_random_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_tree_ensemble_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_quantization_create(void*, const pn_layer*, pn_workload**, pn_string_out*);
pn_status cpuref_quantized_convolution_create(void*, const pn_layer*, pn_workload**,
                                              pn_string_out*);
pn_status cpuref_quantized_matmul_create(void*, const pn_layer*, pn_workload**, pn_string_out*);

/* ---- activation.c --------------------------------------------------------- */

/* The activation's formula from backend_api.h, in double. */
double cpuref_activate(const pn_activation_desc* act, double x);

/* The op's fused activation applied to v (v itself when it has none). */
double cpuref_fused(const cpuref_op* op, double v);

/* ---- elementwise.c: what the elementwise families share ---------------------- */

/* How a typed kernel computes on an element type: floats in double, signed integers in
 * int64, unsigned integers and BOOL in uint64 (pn_elements.h loads each exactly). */
typedef enum cpuref_domain { CPUREF_FLOAT, CPUREF_SIGNED, CPUREF_UNSIGNED } cpuref_domain;
cpuref_domain cpuref_domain_of(pn_data_type dtype);

/* The width of an element type in bits. */
uint32_t cpuref_bits(pn_data_type dtype);

/* A walk over the output (outputs[0]) in order, with each input's element offset under NumPy
 * broadcasting: begin fills strides[k] (one row per input) and sets offsets[k] (one per input)
 * and index to element 0; next moves them to the following output element. */
void cpuref_broadcast_begin(const cpuref_op* op, int64_t (*strides)[PN_MAX_DIMS],
                            int64_t* offsets, int64_t index[PN_MAX_DIMS]);
void cpuref_broadcast_next(const cpuref_op* op, int64_t (*strides)[PN_MAX_DIMS], int64_t* offsets,
                           int64_t index[PN_MAX_DIMS]);

/* ---- Index helpers (workload.c) ------------------------------------------- */

/* Element strides of a dense tensor stored in `layout`, indexed [n, c, h, w]. */
void cpuref_layout_strides(pn_data_layout layout, const int64_t nchw[4], int64_t strides[4]);

/* The multi-index of element `linear` of a dense tensor of `info`'s dims. */
void cpuref_unravel(const pn_tensor_info* info, int64_t linear, int64_t index[PN_MAX_DIMS]);

/* sum(index[i] * strides[i]) over `rank` dims. */
int64_t cpuref_dot(const int64_t* index, const int64_t* strides, uint32_t rank);

/* Product of dims [begin, end) of `info`. */
int64_t cpuref_span(const pn_tensor_info* info, uint32_t begin, uint32_t end);

/* memcpy of n floats that accepts n == 0 with NULL pointers. */
void cpuref_copy_floats(float* dst, const float* src, int64_t n);

/* The 1-, 2- and 3-D spatial kernels (CONVOLUTION, QUANTIZED_CONVOLUTION, POOLING) run as 3-D:
 * the `rank` values of an axis parameter land in the last `rank` of three slots and the leading
 * slots take `fill` (1 for sizes, strides and dilations, 0 for pads). */
void cpuref_spatial3_dims(uint32_t rank, const int64_t* values, int64_t fill, int64_t out[3]);
void cpuref_spatial3_u32(uint32_t rank, const uint32_t* values, int64_t fill, int64_t out[3]);

/* ---- gather.c: shared by the indexing and movement kernels ----------------------- */

/* Row-major element strides of a dense tensor of `info`'s dims. */
void cpuref_dense_strides(const pn_tensor_info* info, int64_t strides[PN_MAX_DIMS]);

/* Element i of an index tensor of `dtype` for an axis of `size`, negative ones counted from
 * the end, into *index_out (0 <= index < size); out of range: PN_ERR_INVALID_ARGUMENT with a
 * message naming op's kind, the index, the axis and its size. */
pn_status cpuref_load_index(const cpuref_op* op, pn_data_type dtype, const void* indices,
                            int64_t i, uint32_t axis, int64_t size, int64_t* index_out,
                            pn_string_out* message_out);

/* ---- quantization.c: what the quantization families share ------------------------- */

/* v rounded once to the float type `dtype` (FLOAT64: v itself). */
double cpuref_round_to(pn_data_type dtype, double v);

/* The nearest integer to v, halves to even (v itself when it is not finite or beyond 2^52). */
double cpuref_round_half_even(double v);

/* An integer-valued v saturated to the range of `dtype` (INT8, UINT8, INT16, UINT16; INT32 for
 * any other type): an infinity to the end of its sign, NaN to the lowest value. */
int64_t cpuref_saturate(pn_data_type dtype, double v);

/* The low 32 bits of v as a two's complement INT32 (integer sums wrap modulo 2^32). */
int32_t cpuref_wrap_int32(uint64_t v);

/* QLINEAR's requantization (backend_api.h): saturate(round(double(acc) * multiplier +
 * zero_point)) in `dtype`, each step in double. */
int64_t cpuref_requantize(pn_data_type dtype, int32_t acc, double multiplier, double zero_point);

#endif /* CPUREF_H */
