/*
 * plugnn backend API: the C ABI between the plugnn runtime and every backend plugin.
 *
 * One header, one contract. A backend is a shared object named
 * <vendor>_<name>_backend.so[.<version>] that exports exactly three C symbols
 * (GetBackendId, GetVersion, BackendFactory; see "Entry points" at the end).
 * BackendFactory returns a pn_backend: a table of function pointers plus an
 * opaque self. Everything else the runtime learns from that table.
 *
 * ---------------------------------------------------------------------------
 * Versioning rules (PLUGNN_BACKEND_API_VERSION_MAJOR / _MINOR)
 * ---------------------------------------------------------------------------
 * A plugin reports the version of this header it was built with. The runtime
 * loads it when plugin.major == runtime.major and plugin.minor <= runtime.minor.
 *
 *   MINOR is bumped (and MAJOR kept) for a change an older plugin cannot notice:
 *     - a field appended at the end of a struct that begins with struct_size;
 *     - a function pointer appended at the end of a function table;
 *     - a new value appended to an enum (older plugins refuse what they do not know);
 *     - a new optional flag bit.
 *   MAJOR is bumped (and MINOR reset to 0) for any change that breaks a built plugin:
 *     - removing, renaming the meaning of, retyping or reordering a field, function
 *       pointer, parameter or enum value;
 *     - changing a struct that does not begin with struct_size (pn_string_out never
 *       changes);
 *     - changing the calling convention, ownership or lifetime of anything below.
 *
 * Structs passed in arrays (pn_tensor_info, pn_tensor, pn_layer, pn_substitution,
 * pn_failed_layer) are indexed with sizeof, so they never grow: each ends with a
 * `const void* extension` pointer, NULL in every 1.x version, through which a
 * later MINOR version may chain a size-prefixed extension struct.
 *
 * What a plugin built against an older MINOR version sees of a newer runtime:
 * new layer kinds, enum values and element types arrive as values it does not
 * know, and it refuses them (plugin_common's validation does so for every
 * plugin that uses it). A field appended to an existing descriptor is marked
 * "since 1.x" below; the runtime never sends a layer whose appended fields are
 * not zero to a plugin built against an older minor version (it answers for
 * that plugin that the layer is not supported). Everything marked "since 1.1"
 * arrived in 1.1, "since 1.2" in 1.2, "since 1.3" in 1.3; everything unmarked
 * is 1.0. The
 * additions of each version are listed in CHANGELOG.md beside this header.
 *
 * Reading appended fields: every ABI struct begins with uint32_t struct_size,
 * written by whoever fills the struct, as sizeof() of the struct in the header
 * that party was built with. A reader touches a field only when
 * PN_HAS_FIELD(ptr, type, field) holds. The runtime never calls a function
 * pointer that lies past the struct_size the plugin wrote, and never reads a
 * descriptor field past the struct_size in the descriptor.
 *
 * ---------------------------------------------------------------------------
 * General rules for every function in this header
 * ---------------------------------------------------------------------------
 * - Errors: a fallible function returns pn_status (PN_OK = 0 on success) and,
 *   on failure, writes a NUL-terminated human-readable message to the
 *   pn_string_out the caller passed (truncated to its capacity; the pointer may
 *   be NULL, then no message is written). No function may print, exit, abort,
 *   raise a signal or let a C++ exception escape.
 * - Ownership: a pointer passed into a function is borrowed for the duration of
 *   the call unless the function's comment says otherwise; the callee keeps no
 *   pointer to it after returning. An object returned through an `_out`
 *   parameter belongs to the caller, who releases it with the function named
 *   in its comment.
 * - Threads: the runtime calls the functions of one backend object (and of the
 *   objects it creates) from one thread at a time, except where noted.
 *   Different backend objects (two runtimes) may be used from different
 *   threads at the same time, so a plugin keeps no unsynchronised global state.
 * - Enums: every value is numbered explicitly; value 0 of every enum other than
 *   pn_status means "invalid", so zeroed memory is never a valid request.
 *
 * This header is plain C99, usable from C++. The block between the
 * PLUGNN_CDEF_BEGIN and PLUGNN_CDEF_END markers is also read by cffi when plugnn
 * is built: it holds no preprocessor conditionals and no function-like macros.
 */
#ifndef PLUGNN_BACKEND_API_H
#define PLUGNN_BACKEND_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Read a field only when the writer's struct was large enough to hold it. */
#define PN_HAS_FIELD(ptr, type, field) \
    ((ptr) != NULL && (size_t)(ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* PLUGNN_CDEF_BEGIN */

/* ===========================================================================
 * Version
 * ======================================================================== */

#define PLUGNN_BACKEND_API_VERSION_MAJOR 1
#define PLUGNN_BACKEND_API_VERSION_MINOR 3

/* Fixed limits. Changing one is a MAJOR change.
 *
 * PN_MAX_DIMS stays 8 in every 1.x version: it sizes the fixed arrays inside
 * pn_tensor_info (dims), pn_transpose_desc (perm), pn_reduce_desc (axes),
 * pn_slice_desc (starts, steps) and the other descriptors that hold one entry per
 * dim. pn_tensor_info is passed in arrays and indexed with sizeof, and a built
 * plugin has its size and the offsets of the fields after dims compiled in, so a
 * larger maximum would make every 1.x plugin misread every tensor and descriptor
 * it is given: a MAJOR change by the rules above. ONNX allows any rank; plugnn
 * refuses a model with a tensor of rank > PN_MAX_DIMS at import (ModelError naming
 * the tensor). A larger maximum waits for a 2.0 header. */
#define PN_MAX_DIMS 8
#define PN_MAX_BACKEND_ID_LENGTH 64

/* ===========================================================================
 * Status, strings and flags
 * ======================================================================== */

typedef enum pn_status {
    PN_OK = 0,
    PN_ERR_INVALID_ARGUMENT = 1, /* a caller-supplied value is wrong */
    PN_ERR_UNSUPPORTED = 2,      /* valid request this backend cannot serve */
    PN_ERR_OUT_OF_MEMORY = 3,
    PN_ERR_NOT_FOUND = 4,        /* e.g. an unknown option key */
    PN_ERR_INVALID_STATE = 5,    /* call out of order (e.g. execute before acquire) */
    PN_ERR_INTERNAL = 6          /* a bug or an unexpected failure inside the backend */
} pn_status;

/* A caller-owned output buffer for text. The callee writes at most `capacity`
 * bytes including the terminating NUL; it never allocates or frees `data`.
 * This struct never changes (so it carries no struct_size). */
typedef struct pn_string_out {
    char* data;
    size_t capacity;
} pn_string_out;

typedef uint32_t pn_bool; /* 0 = false, 1 = true */

/* ===========================================================================
 * Tensors
 * ======================================================================== */

/* Element types. Integers are two's complement, floats IEEE 754, all in the
 * host's byte order. INT8/UINT8 with quant_scale != 0 in their pn_tensor_info
 * are quantized (real = quant_scale * (q - quant_zero_point)); with
 * quant_scale == 0 they are plain integers, like every other integer type. */
typedef enum pn_data_type {
    PN_DTYPE_INVALID = 0,
    PN_DTYPE_FLOAT32 = 1,
    PN_DTYPE_FLOAT16 = 2,    /* IEEE binary16 */
    PN_DTYPE_INT8 = 3,
    PN_DTYPE_UINT8 = 4,
    PN_DTYPE_INT32 = 5,
    PN_DTYPE_INT64 = 6,
    PN_DTYPE_BOOL = 7,       /* one byte per element, 0 or 1 */
    PN_DTYPE_INT16 = 8,      /* since 1.1 */
    PN_DTYPE_UINT16 = 9,     /* since 1.1 */
    PN_DTYPE_UINT32 = 10,    /* since 1.1 */
    PN_DTYPE_UINT64 = 11,    /* since 1.1 */
    PN_DTYPE_FLOAT64 = 12,   /* since 1.1 */
    PN_DTYPE_BFLOAT16 = 13   /* since 1.1: the upper 16 bits of a float32 */
} pn_data_type;

/* Shape and element type of a tensor. Elements are stored dense, row-major
 * (the last dimension varies fastest), with no padding between rows. A rank-0
 * tensor holds one element. */
typedef struct pn_tensor_info {
    uint32_t struct_size;
    pn_data_type dtype;
    uint32_t rank;                /* 0..PN_MAX_DIMS */
    int64_t dims[PN_MAX_DIMS];    /* dims[rank..] are 0; every dim >= 0 */
    float quant_scale;            /* quantized INT8/UINT8 only, else 0 */
    int32_t quant_zero_point;     /* INT8/UINT8 only, else 0 */
    const void* extension;        /* NULL (array element: never grows; see the top) */
} pn_tensor_info;

/* A tensor handed to a workload. For a backend whose tensors are host memory
 * (PN_BACKEND_HOST_MEMORY), `data` is a host pointer aligned to at least 64
 * bytes for intermediates (inputs supplied by the user are at least
 * element-aligned). For any other backend, `data` is the handle that backend's
 * memory manager returned from allocate(). The runtime owns the memory; a
 * workload keeps no pointer to it after execute() returns. */
typedef struct pn_tensor {
    uint32_t struct_size;
    const pn_tensor_info* info;   /* never NULL; equals the info the layer had at creation
                                     (or was reshaped to), except for a workload with
                                     PN_WORKLOAD_SHAPES_AT_EXECUTE (since 1.3): then the
                                     dims of a non-constant input or of an output may be
                                     other ones (see pn_workload.flags) */
    void* data;                   /* may be NULL only for a tensor with zero elements */
    const void* extension;        /* NULL (array element: never grows) */
} pn_tensor;

/* ===========================================================================
 * Layer descriptors
 *
 * Each layer kind has one descriptor struct (or none). Weight, bias and
 * statistics tensors are inputs of the layer, listed in the order each kind
 * documents; an input whose contents are known when the network is optimized
 * is a constant and its data is available from pn_layer.constant_data, so a
 * backend may prepack it when it creates the workload.
 *
 * Kinds come in families: one kind, one descriptor with an enum that picks the
 * member (the unary operations, the reductions, the normalizations, ...), so a
 * backend claims a family at once and refuses, with a reason, the members it
 * does not run. Element types: unless a kind says otherwise, every input and
 * the output of a layer have one element type, any pn_data_type; the runtime
 * only builds layers whose types the kind's comment allows. "Float" means
 * FLOAT32, FLOAT16, BFLOAT16 or FLOAT64; "integer" the signed and unsigned
 * integer types; "numeric" both. Backends compute FLOAT16 and BFLOAT16 in
 * float32 or wider, rounding once when they store.
 *
 * Axes: a negative axis counts from the end, except where a field says it is
 * already resolved (0 <= axis < rank). Indices read from tensors (gather,
 * scatter) may be negative (counting from the end of their axis); an index out
 * of range fails execute() with PN_ERR_INVALID_ARGUMENT naming it.
 * ======================================================================== */

typedef enum pn_layer_kind {
    PN_LAYER_INVALID = 0,
    PN_LAYER_CONVOLUTION_2D = 1,      /* pn_convolution_2d_desc; inputs x, weights[, bias][, addend] */
    PN_LAYER_POOLING_2D = 2,          /* pn_pooling_2d_desc; inputs x */
    PN_LAYER_ELEMENTWISE_BINARY = 3,  /* pn_elementwise_binary_desc; inputs a, b (broadcast) */
    PN_LAYER_ELEMENTWISE_VARIADIC = 4,/* pn_elementwise_variadic_desc; inputs 1..n (broadcast) */
    PN_LAYER_ACTIVATION = 5,          /* pn_activation_desc; inputs x */
    PN_LAYER_FULLY_CONNECTED = 6,     /* pn_fully_connected_desc; inputs a, b[, c][, addend] */
    PN_LAYER_MATMUL = 7,              /* no descriptor; inputs a, b (NumPy matmul rules) */
    PN_LAYER_SOFTMAX = 8,             /* pn_softmax_desc; inputs x */
    PN_LAYER_BATCH_NORMALIZATION = 9, /* pn_batch_normalization_desc; x, scale, bias, mean, var */
    PN_LAYER_LOCAL_RESPONSE_NORMALIZATION = 10, /* pn_lrn_desc; inputs x */
    PN_LAYER_CONCAT = 11,             /* pn_concat_desc; inputs 1..n */
    PN_LAYER_RESHAPE = 12,            /* no descriptor; output info holds the new shape */
    PN_LAYER_TRANSPOSE = 13,          /* pn_transpose_desc; inputs x */
    PN_LAYER_COPY = 14,               /* no descriptor; output = input, same shape */
    PN_LAYER_PRECOMPILED = 15,        /* pn_precompiled_desc; created by optimize_subgraph */
    /* since 1.1 */
    PN_LAYER_ELEMENTWISE_UNARY = 16,  /* pn_elementwise_unary_desc; inputs x */
    PN_LAYER_SELECT = 17,             /* no descriptor; inputs condition, a, b (broadcast) */
    PN_LAYER_REDUCE = 18,             /* pn_reduce_desc; inputs x */
    PN_LAYER_NORMALIZATION = 19,      /* pn_normalization_desc; inputs x, scale[, bias] */
    PN_LAYER_GATHER = 20,             /* pn_gather_desc; inputs data, indices */
    PN_LAYER_SCATTER = 21,            /* pn_scatter_desc; inputs data, indices, updates */
    PN_LAYER_SLICE = 22,              /* pn_slice_desc; inputs x */
    PN_LAYER_SPLIT = 23,              /* pn_split_desc; inputs x; 1..n outputs */
    PN_LAYER_PAD = 24,                /* pn_pad_desc; inputs x[, constant value] */
    PN_LAYER_EXPAND = 25,             /* no descriptor; inputs x, broadcast to the output */
    PN_LAYER_RESIZE = 26,             /* pn_resize_desc; inputs x */
    PN_LAYER_CAST = 27,               /* pn_cast_desc; inputs x; output type from its info */
    PN_LAYER_CONVOLUTION = 28,        /* pn_convolution_desc; inputs x, weights[, bias] */
    PN_LAYER_POOLING = 29,            /* pn_pooling_desc; inputs x */
    PN_LAYER_RECURRENT = 30,          /* pn_recurrent_desc; inputs x, w, r[, ...]; outputs y, y_h[, y_c] */
    PN_LAYER_TOP_K = 31,              /* pn_top_k_desc; inputs x; outputs values, indices */
    PN_LAYER_CUMULATIVE = 32,         /* pn_cumulative_desc; inputs x */
    PN_LAYER_ONE_HOT = 33,            /* pn_one_hot_desc; inputs indices, values */
    PN_LAYER_TRIANGULAR = 34,         /* pn_triangular_desc; inputs x */
    PN_LAYER_QUANTIZATION = 35,       /* pn_quantization_desc; inputs x, scale, zero_point (per op) */
    PN_LAYER_QUANTIZED_CONVOLUTION = 36, /* pn_quantized_convolution_desc; x, w and their zero points
                                            (QLINEAR: scales, y's scale and zero point, [bias]) */
    PN_LAYER_QUANTIZED_MATMUL = 37,   /* pn_quantized_matmul_desc; a, b and their zero points
                                         (QLINEAR: scales, y's scale and zero point) */
    PN_LAYER_GRID_SAMPLE = 38,        /* pn_grid_sample_desc; inputs x, grid */
    PN_LAYER_ROI_ALIGN = 39,          /* pn_roi_align_desc; inputs x, rois, batch_indices */
    PN_LAYER_DEFORMABLE_CONVOLUTION = 40, /* pn_deformable_convolution_desc; inputs x, weights,
                                             offset[, bias][, mask] */
    PN_LAYER_SPECTRAL = 41,           /* pn_spectral_desc; inputs x[, window] */
    PN_LAYER_LINEAR_ALGEBRA = 42,     /* pn_linear_algebra_desc; inputs x */
    PN_LAYER_BITCAST = 43,            /* no descriptor; inputs x; output type from its info */
    PN_LAYER_RANDOM = 44,             /* pn_random_desc; inputs none or logits */
    PN_LAYER_DATA_DEPENDENT = 45,     /* pn_data_dependent_desc; output shapes depend on the data */
    /* since 1.2 */
    PN_LAYER_TREE_ENSEMBLE = 46       /* pn_tree_ensemble_desc; inputs x and the ensemble's arrays */
} pn_layer_kind;

typedef enum pn_data_layout {
    PN_LAYOUT_INVALID = 0,
    PN_LAYOUT_NCHW = 1,
    PN_LAYOUT_NHWC = 2
} pn_data_layout;

typedef enum pn_activation_kind {
    PN_ACTIVATION_INVALID = 0,
    PN_ACTIVATION_RELU = 1,          /* max(x, 0) */
    PN_ACTIVATION_BOUNDED_RELU = 2,  /* clip: min(max(x, alpha), beta); alpha=-inf/beta=+inf allowed */
    PN_ACTIVATION_LEAKY_RELU = 3,    /* x >= 0 ? x : alpha * x */
    PN_ACTIVATION_SIGMOID = 4,       /* 1 / (1 + exp(-x)) */
    PN_ACTIVATION_TANH = 5,          /* tanh(x) */
    PN_ACTIVATION_ELU = 6,           /* x >= 0 ? x : alpha * (exp(x) - 1) */
    PN_ACTIVATION_HARD_SWISH = 7,    /* x * max(0, min(1, x / 6 + 0.5)) */
    PN_ACTIVATION_HARD_SIGMOID = 8,  /* max(0, min(1, alpha * x + beta)) */
    PN_ACTIVATION_ABS = 9,
    PN_ACTIVATION_SQRT = 10,
    PN_ACTIVATION_SQUARE = 11,
    PN_ACTIVATION_LINEAR = 12,       /* alpha * x + beta */
    /* since 1.1 */
    PN_ACTIVATION_GELU = 13,         /* x * (1 + erf(x / sqrt(2))) / 2 */
    PN_ACTIVATION_GELU_TANH = 14,    /* x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) / 2 */
    PN_ACTIVATION_SWISH = 15,        /* x * sigmoid(alpha * x) (SiLU: alpha = 1) */
    PN_ACTIVATION_MISH = 16,         /* x * tanh(softplus(x)) */
    PN_ACTIVATION_SOFTPLUS = 17,     /* log(1 + exp(x)) */
    PN_ACTIVATION_SOFTSIGN = 18,     /* x / (1 + |x|) */
    PN_ACTIVATION_SELU = 19,         /* beta * (x > 0 ? x : alpha * (exp(x) - 1)) */
    PN_ACTIVATION_CELU = 20,         /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1));
                                        alpha == 0 is malformed */
    PN_ACTIVATION_THRESHOLDED_RELU = 21, /* x > alpha ? x : 0 */
    PN_ACTIVATION_SHRINK = 22,       /* x < -alpha ? x + beta : (x > alpha ? x - beta : 0) */
    PN_ACTIVATION_SCALED_TANH = 23   /* alpha * tanh(beta * x) */
} pn_activation_kind;

/* PN_LAYER_ACTIVATION, and the fused activation of other layers. Float types:
 * an activation is computed in float (backends may use the widest they have). */
typedef struct pn_activation_desc {
    uint32_t struct_size;
    pn_activation_kind kind;
    float alpha;
    float beta;
} pn_activation_desc;

/* Flags of pn_convolution_2d_desc and pn_fully_connected_desc. */
#define PN_LAYER_FLAG_HAS_BIAS 0x1u   /* the optional bias/c input is present */
#define PN_LAYER_FLAG_HAS_ADDEND 0x2u /* a last input of the output's shape is added
                                         before the fused activation (residual add) */

/* PN_LAYER_CONVOLUTION_2D. Inputs: x (layout), weights [O, I/groups, KH, KW]
 * (always this order, whatever the data layout), optional bias [O], optional
 * addend (output shape). Depthwise convolution is groups == input channels.
 * Output size per spatial axis:
 *   floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1. */
typedef struct pn_convolution_2d_desc {
    uint32_t struct_size;
    pn_data_layout layout;
    uint32_t stride_h, stride_w;      /* >= 1 */
    uint32_t pad_top, pad_left, pad_bottom, pad_right;
    uint32_t dilation_h, dilation_w;  /* >= 1 */
    uint32_t groups;                  /* >= 1, divides input and output channels */
    uint32_t flags;                   /* PN_LAYER_FLAG_* */
    const pn_activation_desc* fused_activation; /* NULL: none */
} pn_convolution_2d_desc;

typedef enum pn_pooling_kind {
    PN_POOLING_INVALID = 0,
    PN_POOLING_MAX = 1,
    PN_POOLING_AVERAGE = 2,
    PN_POOLING_LP = 3        /* (sum |x|^p)^(1/p); p = 2 is L2 pooling */
} pn_pooling_kind;

typedef enum pn_output_rounding {
    PN_ROUNDING_INVALID = 0,
    PN_ROUNDING_FLOOR = 1,
    PN_ROUNDING_CEIL = 2     /* a last window that starts in the end padding is dropped */
} pn_output_rounding;

typedef enum pn_padding_method {
    PN_PADDING_INVALID = 0,
    PN_PADDING_EXCLUDE = 1,  /* averages divide by the number of real elements */
    PN_PADDING_INCLUDE = 2   /* averages divide by the taps inside the padded input
                                (padding counted; taps past the end padding, which only
                                CEIL rounding creates, are not) */
} pn_padding_method;

/* PN_LAYER_POOLING_2D. Global pooling is a kernel equal to the input's
 * spatial size with no padding and stride 1. A window that covers padding only
 * has no MAX or EXCLUDE-average value: backends refuse such layers. NaN
 * propagates (as in NumPy) through MAX, elementwise MAXIMUM/MINIMUM and sums. */
typedef struct pn_pooling_2d_desc {
    uint32_t struct_size;
    pn_pooling_kind kind;
    pn_data_layout layout;
    uint32_t kernel_h, kernel_w;      /* >= 1 */
    uint32_t stride_h, stride_w;      /* >= 1 */
    uint32_t pad_top, pad_left, pad_bottom, pad_right;
    uint32_t dilation_h, dilation_w;  /* >= 1 */
    pn_output_rounding rounding;
    pn_padding_method padding_method; /* AVERAGE only; padding never counts for MAX/LP */
    float p;                          /* LP only: the norm's order (> 0) */
} pn_pooling_2d_desc;

typedef enum pn_binary_op {
    PN_BINARY_INVALID = 0,
    PN_BINARY_ADD = 1,
    PN_BINARY_SUB = 2,
    PN_BINARY_MUL = 3,
    PN_BINARY_DIV = 4,
    PN_BINARY_MAXIMUM = 5,
    PN_BINARY_MINIMUM = 6,
    PN_BINARY_POWER = 7,
    PN_BINARY_PRELU = 8,     /* a >= 0 ? a : a * b */
    /* since 1.1 */
    PN_BINARY_MOD = 9,       /* a - floor(a / b) * b: the sign of b (NumPy's %) */
    PN_BINARY_FMOD = 10,     /* a - trunc(a / b) * b: the sign of a (C's fmod and %) */
    PN_BINARY_EQUAL = 11,    /* comparisons (BOOL output): EQUAL numeric or bool, the others numeric */
    PN_BINARY_LESS = 12,
    PN_BINARY_LESS_EQUAL = 13,
    PN_BINARY_GREATER = 14,
    PN_BINARY_GREATER_EQUAL = 15,
    PN_BINARY_LOGICAL_AND = 16,  /* logic: BOOL a, b and output */
    PN_BINARY_LOGICAL_OR = 17,
    PN_BINARY_LOGICAL_XOR = 18,
    PN_BINARY_BITWISE_AND = 19,  /* bitwise: integer a, b and output */
    PN_BINARY_BITWISE_OR = 20,
    PN_BINARY_BITWISE_XOR = 21,
    PN_BINARY_SHIFT_LEFT = 22,   /* integers: a's bits moved b places; bits moved out are lost */
    PN_BINARY_SHIFT_RIGHT = 23   /* integers: arithmetic (sign-extending) for signed a, logical
                                    for unsigned a. For both shifts, b < 0 or b >= the width of
                                    the type gives 0 (-1 for SHIFT_RIGHT of a negative a) */
} pn_binary_op;

/* PN_LAYER_ELEMENTWISE_BINARY: NumPy broadcasting of a and b to the output.
 * a and b have one element type; the output has it too, except for the
 * comparisons (BOOL). ADD..POWER, MOD, FMOD: numeric. On integers DIV truncates
 * toward zero, POWER needs b >= 0, and DIV, MOD and FMOD by zero fail execute()
 * with PN_ERR_INVALID_ARGUMENT; integer overflow wraps. PRELU: float. A fused
 * activation needs a float output.
 * In detail (since 1.1): integer results are exact modulo the width of the type
 * (two's complement): ADD, SUB, MUL and POWER (repeated multiplication) wrap, the
 * lowest signed value divided by -1 gives itself and its MOD/FMOD gives 0; a
 * negative POWER exponent fails execute() like a zero divisor (the message names
 * the kind and the value). MAXIMUM, MINIMUM and the comparisons compare exactly.
 * On floats: IEEE arithmetic (x / 0 is an infinity or NaN), MAXIMUM/MINIMUM
 * propagate NaN, a comparison with NaN is false (EQUAL too), FMOD is C's fmod
 * and MOD is NumPy's: fmod(a, b), plus b when that is non-zero and of the other
 * sign than b, a zero result taking the sign of b (so a finite a MOD an infinite
 * b of the other sign is b; an infinite a or a zero b gives NaN). */
typedef struct pn_elementwise_binary_desc {
    uint32_t struct_size;
    pn_binary_op op;
    const pn_activation_desc* fused_activation; /* NULL: none */
} pn_elementwise_binary_desc;

typedef enum pn_variadic_op {
    PN_VARIADIC_INVALID = 0,
    PN_VARIADIC_SUM = 1,
    PN_VARIADIC_MAXIMUM = 2,
    PN_VARIADIC_MINIMUM = 3,
    PN_VARIADIC_MEAN = 4
} pn_variadic_op;

/* PN_LAYER_ELEMENTWISE_VARIADIC: all inputs broadcast to the output; numeric
 * (MEAN: float). Integer SUM wraps (since 1.1: as pn_binary_op's ADD); MAXIMUM and
 * MINIMUM propagate NaN. */
typedef struct pn_elementwise_variadic_desc {
    uint32_t struct_size;
    pn_variadic_op op;
} pn_elementwise_variadic_desc;

/* PN_LAYER_FULLY_CONNECTED, ONNX Gemm semantics:
 *   y = act(alpha * op(a) @ op(b) + beta * c + addend),  op(t) = transpose_? ? t^T : t,
 * a and b rank 2, c (when PN_LAYER_FLAG_HAS_BIAS) broadcast to [M, N], addend (when
 * PN_LAYER_FLAG_HAS_ADDEND) of shape [M, N]. */
typedef struct pn_fully_connected_desc {
    uint32_t struct_size;
    pn_bool transpose_a;
    pn_bool transpose_b;
    float alpha;
    float beta;
    uint32_t flags;                             /* PN_LAYER_FLAG_* */
    const pn_activation_desc* fused_activation; /* NULL: none */
} pn_fully_connected_desc;

/* PN_LAYER_MATMUL (no descriptor): NumPy matmul of a and b (a [..., M, K] or [K],
 * b [..., K, N] or [K], the batch dims broadcast; a rank-1 operand's added dim is
 * not in the output). Numeric; a, b and the output have one type (since 1.1: any
 * numeric type; integer products and sums wrap as pn_binary_op's MUL and ADD). */

/* PN_LAYER_SOFTMAX along one axis (negative counts from the end). */
typedef struct pn_softmax_desc {
    uint32_t struct_size;
    int32_t axis;
} pn_softmax_desc;

/* PN_LAYER_BATCH_NORMALIZATION (inference): inputs x, scale, bias, mean, var,
 * the last four of shape [C]; y = scale * (x - mean) / sqrt(var + eps) + bias. */
typedef struct pn_batch_normalization_desc {
    uint32_t struct_size;
    pn_data_layout layout;   /* where C lies for rank-4 x; rank 2/3 x is channels-second
                                (layout must still be a valid value) */
    float epsilon;
} pn_batch_normalization_desc;

/* PN_LAYER_LOCAL_RESPONSE_NORMALIZATION across channels (ONNX LRN):
 * y = x / (bias + alpha / size * sum(x^2 over `size` neighbouring channels))^beta */
typedef struct pn_lrn_desc {
    uint32_t struct_size;
    pn_data_layout layout;
    uint32_t size;           /* odd or even, window [c - (size-1)/2, c + size/2] */
    float alpha;
    float beta;
    float bias;
} pn_lrn_desc;

/* PN_LAYER_CONCAT along one axis (negative counts from the end). Any element
 * type (as RESHAPE, TRANSPOSE and COPY). */
typedef struct pn_concat_desc {
    uint32_t struct_size;
    int32_t axis;
} pn_concat_desc;

/* PN_LAYER_TRANSPOSE: output dim i is input dim perm[i]. */
typedef struct pn_transpose_desc {
    uint32_t struct_size;
    uint32_t rank;
    uint32_t perm[PN_MAX_DIMS];
} pn_transpose_desc;

/* ---- Since 1.1 ---------------------------------------------------------- */

typedef enum pn_unary_op {
    PN_UNARY_INVALID = 0,
    PN_UNARY_ABS = 1,          /* numeric (the lowest signed value stays itself: it wraps) */
    PN_UNARY_NEG = 2,          /* signed integers and floats (wraps as ABS) */
    PN_UNARY_SIGN = 3,         /* numeric: -1, 0 or 1 (NaN stays NaN, -0.0 gives 0) */
    PN_UNARY_RECIPROCAL = 4,   /* float from here to ATANH */
    PN_UNARY_SQRT = 5,
    PN_UNARY_RSQRT = 6,        /* 1 / sqrt(x) */
    PN_UNARY_EXP = 7,
    PN_UNARY_LOG = 8,          /* natural logarithm */
    PN_UNARY_ERF = 9,
    PN_UNARY_SIN = 10,
    PN_UNARY_COS = 11,
    PN_UNARY_TAN = 12,
    PN_UNARY_ASIN = 13,
    PN_UNARY_ACOS = 14,
    PN_UNARY_ATAN = 15,
    PN_UNARY_SINH = 16,
    PN_UNARY_COSH = 17,
    PN_UNARY_ASINH = 18,
    PN_UNARY_ACOSH = 19,
    PN_UNARY_ATANH = 20,
    PN_UNARY_FLOOR = 21,       /* float */
    PN_UNARY_CEIL = 22,
    PN_UNARY_ROUND = 23,       /* to nearest, halves to even */
    PN_UNARY_IS_NAN = 24,      /* float x, BOOL output */
    PN_UNARY_IS_INF = 25,      /* float x, BOOL output: +inf or -inf */
    PN_UNARY_IS_POS_INF = 26,  /* float x, BOOL output: +inf */
    PN_UNARY_IS_NEG_INF = 27,  /* float x, BOOL output: -inf */
    PN_UNARY_LOGICAL_NOT = 28, /* BOOL x and output */
    PN_UNARY_BITWISE_NOT = 29  /* integer */
} pn_unary_op;

/* PN_LAYER_ELEMENTWISE_UNARY: y = op(x), same shape; the output has x's type
 * except where the op says BOOL. Float ops follow C99's <math.h> (a domain
 * error gives NaN, a pole an infinity: LOG(0) = -inf, RECIPROCAL(0) = inf). */
typedef struct pn_elementwise_unary_desc {
    uint32_t struct_size;
    pn_unary_op op;
} pn_elementwise_unary_desc;

/* PN_LAYER_SELECT (ONNX Where): output = condition ? a : b, the three
 * broadcast to the output (NumPy rules); condition is BOOL, a, b and the
 * output share any one element type. No descriptor. */

typedef enum pn_reduce_op {
    PN_REDUCE_INVALID = 0,
    PN_REDUCE_SUM = 1,          /* numeric */
    PN_REDUCE_MEAN = 2,         /* numeric: SUM / count (integers: see below) */
    PN_REDUCE_MAX = 3,          /* numeric or BOOL (BOOL: any) */
    PN_REDUCE_MIN = 4,          /* numeric or BOOL (BOOL: all) */
    PN_REDUCE_PROD = 5,         /* numeric */
    PN_REDUCE_L1 = 6,           /* sum |x|; numeric */
    PN_REDUCE_L2 = 7,           /* sqrt(sum x^2); numeric */
    PN_REDUCE_LOG_SUM = 8,      /* log(sum x); float */
    PN_REDUCE_LOG_SUM_EXP = 9,  /* log(sum exp(x)), computed without overflow
                                   (max + log(sum exp(x - max))); float */
    PN_REDUCE_SUM_SQUARE = 10,  /* sum x^2; numeric */
    PN_REDUCE_ARG_MAX = 11,     /* numeric x; INT64 output: the index along the one axis of
                                   the first (with select_last_index, the last) largest value */
    PN_REDUCE_ARG_MIN = 12      /* as ARG_MAX, smallest */
} pn_reduce_op;

/* PN_LAYER_REDUCE over the listed axes of x. Inputs x; one output.
 *
 * Axes: resolved, 0 <= axes[i] < rank, strictly increasing (no repeats),
 * num_axes <= rank; ARG_MAX and ARG_MIN take exactly one axis, whose size is at
 * least 1. num_axes == 0 reduces nothing: each output element is the op over
 * one element (SUM, MEAN, MAX, MIN, PROD, LOG_SUM_EXP give x; L1 and L2 |x|;
 * SUM_SQUARE x^2; LOG_SUM log x). Reducing every axis of x is listing them all.
 *
 * Output: x's shape with each reduced axis kept as size 1 (keep_dims) or
 * dropped; x's element type, but INT64 for ARG_MAX and ARG_MIN.
 *
 * Empty reductions (a reduced axis of size 0): SUM, L1, L2, SUM_SQUARE 0; PROD
 * 1; MEAN NaN (integers: 0); MAX the type's lowest value (-inf for floats, 0
 * for BOOL); MIN the type's highest value (+inf for floats, 1 for BOOL);
 * LOG_SUM and LOG_SUM_EXP -inf.
 *
 * Floats: computed in float32 or wider (CpuRef: double), rounded once to the
 * output type. A NaN among the reduced values gives NaN for every op; for
 * ARG_MAX and ARG_MIN a NaN counts as more extreme than every number (the
 * first NaN's index, or the last's with select_last_index), as NumPy's argmax
 * and argmin. LOG_SUM_EXP of values all -inf is -inf; with a +inf it is +inf.
 *
 * Integers: SUM, PROD, L1 and SUM_SQUARE are exact modulo 2^bits of the type
 * (they wrap, two's complement; |INT_MIN| wraps to INT_MIN); MAX, MIN, ARG_MAX,
 * ARG_MIN are exact; MEAN and L2 are computed in double and truncated toward
 * zero (as NumPy's mean of integers cast back to their type), L2 saturating at
 * the type's highest value. */
typedef struct pn_reduce_desc {
    uint32_t struct_size;
    pn_reduce_op op;
    uint32_t num_axes;           /* 0..PN_MAX_DIMS */
    uint32_t axes[PN_MAX_DIMS];  /* axes[0..num_axes): see above */
    pn_bool keep_dims;
    pn_bool select_last_index;   /* ARG_MAX/ARG_MIN: ties give the last index; 0 for the other ops */
} pn_reduce_desc;

typedef enum pn_normalization_op {
    PN_NORMALIZATION_INVALID = 0,
    PN_NORMALIZATION_LAYER = 1,     /* over dims [axis, rank): (x - mean) / sqrt(var + eps) */
    PN_NORMALIZATION_RMS = 2,       /* over dims [axis, rank): x / sqrt(mean(x^2) + eps) */
    PN_NORMALIZATION_GROUP = 3,     /* x [N, C, ...] (rank >= 2): over each group of
                                       C / num_groups consecutive channels and all the dims
                                       after C: (x - mean) / sqrt(var + eps); instance
                                       normalization is num_groups == C */
    PN_NORMALIZATION_LP = 4         /* along dim `axis`: x / ||x||_p, p = 1 (sum |x|) or 2
                                       (sqrt(sum x^2)) held in num_groups; a zero norm gives 0 */
} pn_normalization_op;

/* PN_LAYER_NORMALIZATION: y = normalized(x) * scale + bias, x's shape. Float x,
 * scale, bias and output, one type. Inputs:
 *   LAYER, RMS: x (rank >= 1), scale, optional bias; scale and bias broadcast
 *               (NumPy rules, their rank at most rank - axis) to x.shape[axis:]
 *               (ONNX LayerNormalization's and RMSNormalization's Scale, B);
 *   GROUP:      x, scale [C], optional bias [C] (per channel);
 *   LP:         x only (no scale, no bias, flags 0).
 * `axis` (LAYER, RMS, LP) may be negative (counts from the end); GROUP ignores
 * it. num_groups: GROUP >= 1 dividing C; LP the order p, 1 or 2; LAYER and RMS
 * ignore it. epsilon: finite and >= 0 (LP ignores it). Means and variances are
 * taken over the normalized elements; variances are the biased (population)
 * ones: mean((x - mean)^2). A normalized set of size 0 gives an empty output.
 * CpuRef computes in double, rounding once to the output type. */
typedef struct pn_normalization_desc {
    uint32_t struct_size;
    pn_normalization_op op;
    int32_t axis;                /* LAYER, RMS, LP */
    uint32_t num_groups;         /* GROUP: divides C; LP: the order p (1 or 2) */
    float epsilon;
    uint32_t flags;              /* PN_LAYER_FLAG_HAS_BIAS: the bias input is present
                                    (LAYER, RMS, GROUP); no other bit */
} pn_normalization_desc;

typedef enum pn_gather_op {
    PN_GATHER_INVALID = 0,
    PN_GATHER_TAKE = 1,      /* ONNX Gather: out[i.., j.., k..] = data[i.., idx[j..], k..] along axis */
    PN_GATHER_ELEMENTS = 2,  /* ONNX GatherElements: indices of data's rank; out has its shape */
    PN_GATHER_ND = 3         /* ONNX GatherND with batch_dims */
} pn_gather_op;

/* PN_LAYER_GATHER: inputs data (any type, rank r >= 1) and indices (INT32 or
 * INT64, rank q); the output has data's type. Every index may be negative
 * (counting from the end of the axis it indexes); one out of range fails
 * execute() with PN_ERR_INVALID_ARGUMENT naming the index and the axis size.
 *   TAKE:     axis in [-r, r); output dims data[:axis] + indices + data[axis+1:]
 *             (q may be 0: the axis is removed).
 *   ELEMENTS: q == r; indices dims <= data dims on every axis but `axis`;
 *             output dims = indices dims, out[i..] = data[i.. with i_axis
 *             replaced by indices[i..]].
 *   ND:       batch_dims b < min(q, r); data and indices share their first b
 *             dims; k = indices dims[q-1] in 1..r-b; output dims
 *             indices[:q-1] + data[b+k:]: each k-tuple of indices (within its
 *             batch) picks the slice data[batch.., i0, .., ik-1, ...]. */
typedef struct pn_gather_desc {
    uint32_t struct_size;
    pn_gather_op op;
    int32_t axis;            /* TAKE, ELEMENTS (negative counts from the end); ND: 0 */
    uint32_t batch_dims;     /* ND; TAKE, ELEMENTS: 0 */
} pn_gather_desc;

typedef enum pn_scatter_op {
    PN_SCATTER_INVALID = 0,
    PN_SCATTER_ELEMENTS = 1, /* ONNX ScatterElements along axis */
    PN_SCATTER_ND = 2        /* ONNX ScatterND */
} pn_scatter_op;

typedef enum pn_scatter_reduction {
    PN_SCATTER_REDUCTION_INVALID = 0,
    PN_SCATTER_REDUCTION_NONE = 1,  /* replace (repeated indices: the last update in
                                       row-major order of the updates wins) */
    PN_SCATTER_REDUCTION_ADD = 2,
    PN_SCATTER_REDUCTION_MUL = 3,
    PN_SCATTER_REDUCTION_MAX = 4,
    PN_SCATTER_REDUCTION_MIN = 5
} pn_scatter_reduction;

/* PN_LAYER_SCATTER: inputs data (rank r >= 1), indices (INT32 or INT64, rank
 * q) and updates; the output is a copy of data into which the updates are
 * written, one after the other in row-major order of the updates, each
 * combined with the element already there by `reduction` (so repeated indices
 * accumulate; with NONE the last one wins). data, updates and output share one
 * type: any type with NONE, numeric with a reduction. Floats combine in double,
 * rounded once per update; integers exactly (ADD and MUL wrap to the width);
 * MAX/MIN keep the element when the update is NaN. Indices may be negative
 * (counting from the end of their axis); one out of range fails execute()
 * with PN_ERR_INVALID_ARGUMENT naming the index and the axis size.
 *   ELEMENTS: q == r, updates dims = indices dims, <= data dims on every axis
 *             but `axis`; update [i..] goes to data [i.. with i_axis replaced
 *             by indices[i..]].
 *   ND:       q >= 1, k = indices dims[q-1] in 1..r; updates dims
 *             indices[:q-1] + data[k:]; each k-tuple of indices names the
 *             slice data[i0, .., ik-1, ...] its update slice goes to. */
typedef struct pn_scatter_desc {
    uint32_t struct_size;
    pn_scatter_op op;
    pn_scatter_reduction reduction;
    int32_t axis;            /* ELEMENTS (negative counts from the end); ND: 0 */
} pn_scatter_desc;

/* PN_LAYER_SLICE: output element [i0, i1, ...] is input element
 * [starts[0] + i0 * steps[0], ...]; the output (same rank and type as x) has
 * the counts as its dims. Every start is resolved: where the output dim n is
 * > 0, start and start + (n - 1) * step lie in [0, dim); where it is 0 (an
 * empty output), start is 0. Every step is non-zero (negative steps walk
 * backwards). Any element type. */
typedef struct pn_slice_desc {
    uint32_t struct_size;
    uint32_t rank;               /* the input's rank */
    int64_t starts[PN_MAX_DIMS];
    int64_t steps[PN_MAX_DIMS];
} pn_slice_desc;

/* PN_LAYER_SPLIT: 1..n outputs, consecutive pieces of x along `axis` (negative
 * counts from the end), their sizes those of the outputs' dims (which sum to
 * x's; a piece may be empty); every other dim and the type are x's. Any
 * element type. */
typedef struct pn_split_desc {
    uint32_t struct_size;
    int32_t axis;
} pn_split_desc;

typedef enum pn_pad_mode {
    PN_PAD_INVALID = 0,
    PN_PAD_CONSTANT = 1,     /* the value: input 1 (a one-element tensor of x's type), or 0 */
    PN_PAD_REFLECT = 2,      /* mirrored without the edge: pads < dim */
    PN_PAD_EDGE = 3,         /* the edge repeated */
    PN_PAD_WRAP = 4          /* the other end continued (periodic) */
} pn_pad_mode;

/* PN_LAYER_PAD: output dim i = pads_begin[i] + dim i + pads_end[i]. Negative
 * pads first remove elements from their end of x (the cropped dim,
 * dim - max(-begin, 0) - max(-end, 0), must be >= 0); the positive pads then
 * extend the cropped tensor, whose elements REFLECT, EDGE and WRAP read.
 * REFLECT needs positive pads < the cropped dim; EDGE and WRAP a non-empty
 * cropped dim where they pad (WRAP pads of any size repeat it periodically).
 * rank == x's rank; every pad lies within +-2^40. Inputs x and, for CONSTANT only, an optional value (one
 * element of x's type; without it the value is 0). Any element type. */
typedef struct pn_pad_desc {
    uint32_t struct_size;
    pn_pad_mode mode;
    uint32_t rank;                    /* x's rank */
    int64_t pads_begin[PN_MAX_DIMS];  /* per dim, before its first element (< 0: removed) */
    int64_t pads_end[PN_MAX_DIMS];    /* per dim, after its last element (< 0: removed) */
} pn_pad_desc;

/* PN_LAYER_EXPAND: x broadcast (NumPy rules) to the output's shape: the output
 * has rank >= x's, and each dim of x (aligned at the last dim) is 1 or the
 * output's. Any element type (the output's is x's). No descriptor. */

typedef enum pn_resize_mode {
    PN_RESIZE_INVALID = 0,
    PN_RESIZE_NEAREST = 1,   /* the input element nearest to x_in (nearest_mode breaks ties) */
    PN_RESIZE_LINEAR = 2,    /* linear along every resized axis (bilinear, trilinear, ...) */
    PN_RESIZE_CUBIC = 3      /* cubic convolution with coefficient cubic_coeff_a */
} pn_resize_mode;

/* How an output index x_out of an axis maps to a real input coordinate x_in. `in` and `out`
 * are the axis' input and output lengths, `scale` its scales[] entry and
 * length = scale * in (a real number, equal to `out` when the model gave sizes). */
typedef enum pn_coordinate_transform {
    PN_COORDINATES_INVALID = 0,
    PN_COORDINATES_HALF_PIXEL = 1,          /* x_in = (x_out + 0.5) / scale - 0.5 */
    PN_COORDINATES_HALF_PIXEL_SYMMETRIC = 2,/* as HALF_PIXEL plus in / 2 * (1 - out / length) */
    PN_COORDINATES_PYTORCH_HALF_PIXEL = 3,  /* as HALF_PIXEL; -0.5 where length == 1 */
    PN_COORDINATES_ALIGN_CORNERS = 4,       /* x_out * (in - 1) / (length - 1); 0 where length == 1 */
    PN_COORDINATES_ASYMMETRIC = 5,          /* x_out / scale */
    PN_COORDINATES_TF_CROP_AND_RESIZE = 6   /* x_out * (roi_end - roi_start) * (in - 1) / (length - 1)
                                               + roi_start * (in - 1) (length == 1: the middle,
                                               (roi_end - roi_start) * (in - 1) / 2 + roi_start *
                                               (in - 1)); x_in outside [0, in - 1] gives
                                               extrapolation_value */
} pn_coordinate_transform;

/* NEAREST: which input index x_in picks (x_in an integer picks itself). */
typedef enum pn_nearest_mode {
    PN_NEAREST_INVALID = 0,
    PN_NEAREST_ROUND_PREFER_FLOOR = 1,  /* round, halves down */
    PN_NEAREST_ROUND_PREFER_CEIL = 2,   /* round, halves up */
    PN_NEAREST_FLOOR = 3,
    PN_NEAREST_CEIL = 4
} pn_nearest_mode;

/* PN_LAYER_RESIZE, ONNX Resize (opset 19) semantics: every axis of x may be resized, to the
 * output's dims (rank 1..PN_MAX_DIMS, output rank = input rank; the output dims are the
 * layer's: ONNX's sizes, or floor(in * scale); an empty input axis resizes only to 0). Input
 * x; one output of x's type. Element types: float x for LINEAR and CUBIC; NEAREST takes any
 * type and copies elements exactly.
 *
 * Axes are resized one after another in increasing order (separable), LINEAR and CUBIC each
 * pass from the previous pass' values in double. An axis with out == in,
 * |scale - 1| <= 1e-9 * max(scale, 1) and (TF_CROP_AND_RESIZE) roi_start == 0 and roi_end
 * within 1e-9 of 1 is left as it is. Per output index:
 * x_in from `coordinates`; base = floor(x_in), r = x_in - base, except that an integer x_in
 * has base = x_in - 1, r = 1; the taps are input indices base + t for t in [t0, t0 + n)
 * with weights w(t), and an index outside [0, in) reads the nearest edge element:
 *   NEAREST: n = 2, t0 = 0; the tap t = 1 when r == 1, or when r > 0.5 (ROUND_PREFER_FLOOR),
 *            r >= 0.5 (ROUND_PREFER_CEIL), never (FLOOR), always (CEIL); else t = 0.
 *   LINEAR:  n = 2, t0 = 0, w = (1 - r, r).
 *   CUBIC:   n = 4, t0 = -1, w(t) = k(t - r) with Keys' kernel of a = cubic_coeff_a:
 *            k(s) = (a + 2)|s|^3 - (a + 3)|s|^2 + 1 for |s| <= 1,
 *                   a|s|^3 - 5a|s|^2 + 8a|s| - 4a for 1 < |s| < 2, else 0.
 *   antialias (LINEAR, CUBIC) with scale < 1: the kernel is stretched by 1 / scale:
 *            t0 = floor(-support / scale) + 1 (support 1 for LINEAR, 2 for CUBIC), n = 2 - 2 t0,
 *            w(t) = k(scale * (t - r)) (LINEAR: k(s) = max(0, 1 - |s|)), divided by their sum.
 *   exclude_outside: the weights of taps outside [0, in) become 0 and the rest are divided by
 *            their sum (NEAREST whose chosen tap lies outside then gives 0).
 * The first tap's index is computed as ONNX's reference does, in double:
 * floor(x_in + n / 2) - n + 1, or floor(x_in + n / 2) - n where x_in + n / 2 is an integer
 * (this is base + t0 except for an x_in within one rounding of an integer). */
typedef struct pn_resize_desc {
    uint32_t struct_size;
    pn_resize_mode mode;
    pn_coordinate_transform coordinates;
    pn_nearest_mode nearest_mode;    /* NEAREST; ignored by the other modes */
    float cubic_coeff_a;             /* CUBIC: Keys' a, finite (ONNX default -0.75; PyTorch -0.5) */
    pn_bool exclude_outside;         /* see above */
    float extrapolation_value;       /* TF_CROP_AND_RESIZE: the value of x_in outside the input */
    pn_bool antialias;               /* LINEAR / CUBIC only */
    uint32_t rank;                   /* = the rank of x */
    double scales[PN_MAX_DIMS];      /* finite, > 0: the scale of axis i the coordinates use */
    double roi_start[PN_MAX_DIMS];   /* TF_CROP_AND_RESIZE: normalized crop [start, end] per */
    double roi_end[PN_MAX_DIMS];     /* axis, finite (other transforms ignore them) */
} pn_resize_desc;

/* PN_LAYER_CAST: x of any type, the output (same shape) of the type its info
 * names (any type; the same type copies). ONNX Cast's rules:
 *   float to integer truncates toward zero (NaN and values out of the target's
 *     range: unspecified, but never a failure);
 *   integer to integer keeps the low bits (two's complement: int16 200 -> int8 -56);
 *   anything to BOOL: non-zero (NaN included) is 1, zero (and -0.0) is 0;
 *   BOOL to anything: 0 or 1;
 *   to a float type: the nearest value, ties to even, rounded once from the exact
 *     source value (float64 -> float16 never goes through float32); a value
 *     beyond the target's range becomes an infinity, or with `saturate` the
 *     largest finite value of its sign (infinities and NaN stay as they are). */
typedef struct pn_cast_desc {
    uint32_t struct_size;
    pn_bool saturate;  /* 0 or 1 */
} pn_cast_desc;

typedef enum pn_convolution_op {
    PN_CONVOLUTION_INVALID = 0,
    PN_CONVOLUTION_FORWARD = 1,     /* weights [O, I / groups, k...] */
    PN_CONVOLUTION_TRANSPOSED = 2   /* weights [I, O / groups, k...] (ONNX ConvTranspose) */
} pn_convolution_op;

/* PN_LAYER_CONVOLUTION: 1-, 2- or 3-D convolution of x [N, C, spatial...] (channels first,
 * no other layout). Inputs x, weights (FORWARD [O, C / groups, k...], TRANSPOSED
 * [C, O / groups, k...], k one size >= 1 per spatial axis), optional bias [O]; one output
 * [N, O, out...]; every tensor of one float type. Groups split C and O into `groups` equal
 * parts, part g of the output reading part g of the input (depthwise: groups == C).
 * FORWARD (ONNX Conv):
 *   y[n, o, i] = bias[o] + sum over c in o's group and taps t of
 *                x[n, c, i * stride - pad_begin + t * dilation] * w[o, c mod (C / groups), t]
 *   (x outside the input is 0); output size per axis as pn_convolution_2d_desc's:
 *   floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1, which must be >= 0.
 * TRANSPOSED (ONNX ConvTranspose): every x[n, c, j] adds x * w[c, o mod (O / groups), t] to the
 *   full output position j * stride + t * dilation, for o in c's group; the output is the full
 *   output from position pad_begin on, plus bias:
 *   out = stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - pad_begin - pad_end,
 *   which must be >= 0 (in >= 1); positions past the full output (output_padding) hold the
 *   bias only.
 * Unused entries of the arrays (axes >= spatial_rank) are ignored. */
typedef struct pn_convolution_desc {
    uint32_t struct_size;
    pn_convolution_op op;
    uint32_t spatial_rank;              /* 1..3 */
    uint32_t strides[3];                /* >= 1 */
    uint32_t pads_begin[3];             /* zeros before each spatial axis (TRANSPOSED: cropped) */
    uint32_t pads_end[3];               /* zeros after (TRANSPOSED: cropped from the end) */
    uint32_t dilations[3];              /* >= 1 */
    uint32_t output_padding[3];         /* TRANSPOSED: outputs added at the end of each axis
                                           (PyTorch keeps it < max(stride, dilation); any value
                                           is valid); FORWARD: 0 */
    uint32_t groups;                    /* >= 1, divides C and O */
    uint32_t flags;                     /* PN_LAYER_FLAG_HAS_BIAS only */
    const pn_activation_desc* fused_activation; /* NULL: none; applied after the bias */
} pn_convolution_desc;

/* PN_LAYER_POOLING: 1-, 2- or 3-D pooling of x [N, C, spatial...] (channels first), with the
 * rules of pn_pooling_2d_desc per axis: window i of an axis covers the input indices
 * i * stride - pad_begin + t * dilation, t in [0, kernel); output size per axis
 * floor((in + pad_begin + pad_end - dilation * (kernel - 1) - 1) / stride) + 1 (CEIL: ceil,
 * without a last window that starts in the end padding). One input x, one output of x's
 * type. Element types: MAX any numeric type (integers compared exactly), AVERAGE and LP
 * float. A window holding no input element has no MAX or EXCLUDE-average value: such layers
 * are invalid. Unused entries of the arrays (axes >= spatial_rank) are ignored. */
typedef struct pn_pooling_desc {
    uint32_t struct_size;
    pn_pooling_kind kind;
    uint32_t spatial_rank;              /* 1..3 */
    uint32_t kernel[3];                 /* >= 1 */
    uint32_t strides[3];                /* >= 1 */
    uint32_t pads_begin[3];
    uint32_t pads_end[3];
    uint32_t dilations[3];              /* >= 1 */
    pn_output_rounding rounding;
    pn_padding_method padding_method;   /* AVERAGE only; padding never counts for MAX/LP */
    float p;                            /* LP only: the norm's order, finite and > 0 */
} pn_pooling_desc;

typedef enum pn_recurrent_cell {
    PN_RECURRENT_INVALID = 0,
    PN_RECURRENT_RNN = 1,    /* h = f(x W^T + h R^T + b) */
    PN_RECURRENT_GRU = 2,    /* gates z, r, h (ONNX order) */
    PN_RECURRENT_LSTM = 3    /* gates i, o, f, c (ONNX order) */
} pn_recurrent_cell;

typedef enum pn_recurrent_direction {
    PN_DIRECTION_INVALID = 0,
    PN_DIRECTION_FORWARD = 1,
    PN_DIRECTION_REVERSE = 2,
    PN_DIRECTION_BIDIRECTIONAL = 3
} pn_recurrent_direction;

/* Flags of pn_recurrent_desc: which optional inputs are present. They follow
 * x, w, r in this order: bias, sequence_lens, initial_h, initial_c, peepholes. */
#define PN_RECURRENT_HAS_BIAS 0x1u          /* b [dirs, 2 * gates * hidden] */
#define PN_RECURRENT_HAS_SEQUENCE_LENS 0x2u /* INT32 [batch] */
#define PN_RECURRENT_HAS_INITIAL_H 0x4u     /* shaped like y_h */
#define PN_RECURRENT_HAS_INITIAL_C 0x8u     /* LSTM, shaped like y_h */
#define PN_RECURRENT_HAS_PEEPHOLES 0x10u    /* LSTM p [dirs, 3 * hidden] */

/* PN_LAYER_RECURRENT (ONNX RNN, GRU, LSTM): x [seq, batch, input] ([batch,
 * seq, input] when batch_major), w [dirs, gates * hidden, input], r [dirs,
 * gates * hidden, hidden]. Outputs y [seq, dirs, batch, hidden] ([batch, seq,
 * dirs, hidden] when batch_major), y_h [dirs, batch, hidden] ([batch, dirs,
 * hidden]) and, for LSTM, y_c like y_h; initial_h and initial_c are laid out
 * like y_h (ONNX's layout attribute). Steps past a sequence's length give 0
 * in y. The cell's functions are activations[0..num_activations) (RNN 1, GRU 2,
 * LSTM 3 per direction; forward then reverse), each RELU, TANH, SIGMOID,
 * LINEAR (ONNX's Affine), LEAKY_RELU, THRESHOLDED_RELU, SCALED_TANH,
 * HARD_SIGMOID, ELU, SOFTSIGN or SOFTPLUS with its alpha and beta. Float
 * tensors but sequence_lens. ONNX's equations, with the gates in the order of
 * the rows of w, r and p, and b = [Wb of every gate, Rb of every gate]:
 * (f(), g(), h() are the direction's activations 0, 1, 2; . multiplies elementwise)
 *   RNN   h = f(x Wi^T + h Ri^T + Wbi + Rbi)
 *   GRU   z = f(x Wz^T + h Rz^T + Wbz + Rbz),  r = f(x Wr^T + h Rr^T + Wbr + Rbr),
 *         n = g(x Wh^T + (r . h) Rh^T + Rbh + Wbh)   (linear_before_reset:
 *         n = g(x Wh^T + r . (h Rh^T + Rbh) + Wbh)),  h = (1 - z) . n + z . h
 *   LSTM  i = f(x Wi^T + h Ri^T + Pi . c + Wbi + Rbi),
 *         fg = f(x Wf^T + h Rf^T + Pf . c + Wbf + Rbf)   (input_forget: 1 - i),
 *         c = fg . c + i . g(x Wc^T + h Rc^T + Wbc + Rbc),
 *         o = f(x Wo^T + h Ro^T + Po . c + Wbo + Rbo)  (the new c),  h = o . h(c)
 * clip bounds the argument of every gate's function (not the c of h(c)). The
 * reverse direction runs each sequence from its last valid step to step 0;
 * y_h (y_c) is the state after a direction's last step (step len - 1
 * forward, step 0 reverse), y at step t the state after step t. sequence_lens
 * values lie in [0, seq]: a length 0 gives 0 in y, y_h and y_c; a value
 * outside fails execute() with PN_ERR_INVALID_ARGUMENT. */
typedef struct pn_recurrent_desc {
    uint32_t struct_size;
    pn_recurrent_cell cell;
    pn_recurrent_direction direction;
    uint32_t hidden_size;
    uint32_t flags;                          /* PN_RECURRENT_HAS_* */
    pn_bool batch_major;
    float clip;                              /* > 0: gate inputs clipped to [-clip, clip]; 0: none */
    pn_bool linear_before_reset;             /* GRU */
    pn_bool input_forget;                    /* LSTM: couple the input and forget gates */
    uint32_t num_activations;                /* <= 6 */
    pn_activation_kind activations[6];
    float activation_alpha[6];
    float activation_beta[6];
} pn_recurrent_desc;

/* PN_LAYER_TOP_K: the k largest (or smallest) values of x along `axis` and
 * their INT64 indices. Inputs x (numeric, rank >= 1); outputs values (x's type)
 * and indices (INT64), both of x's shape with dim `axis` replaced by k, where
 * 0 <= k <= x's dim `axis` (k is the outputs' dim `axis`). Equal values keep
 * the lower index first. A NaN counts as larger than every number (NaNs are
 * equal to one another), so NaNs come first when largest and last when not (as
 * onnxruntime and ONNX's reference). With sorted, values are in order (largest
 * first, or smallest first); without, the k chosen may come in any order
 * (backends may still sort). */
typedef struct pn_top_k_desc {
    uint32_t struct_size;
    int32_t axis;            /* may be negative (counts from the end) */
    pn_bool largest;         /* 1: the largest values; 0: the smallest */
    pn_bool sorted;          /* 0: any order (backends may still sort) */
} pn_top_k_desc;

typedef enum pn_cumulative_op {
    PN_CUMULATIVE_INVALID = 0,
    PN_CUMULATIVE_SUM = 1,
    PN_CUMULATIVE_PROD = 2
} pn_cumulative_op;

/* PN_LAYER_CUMULATIVE (ONNX CumSum, CumProd) along `axis`: output element i of
 * each line along the axis is the sum (product) of the line's elements 0..i
 * (exclusive: 0..i-1; reverse: i..end, exclusive: i+1..end; an empty range
 * gives 0 for SUM and 1 for PROD). Inputs x (numeric, rank >= 1); output of x's
 * shape and type. Integers wrap (two's complement, modulo 2^bits); floats are
 * accumulated in float32 or wider (CpuRef: double), each output rounded once. */
typedef struct pn_cumulative_desc {
    uint32_t struct_size;
    pn_cumulative_op op;
    int32_t axis;            /* may be negative (counts from the end) */
    pn_bool exclusive;       /* element i excludes x[i] (the first is the identity) */
    pn_bool reverse;         /* from the end */
} pn_cumulative_desc;

/* PN_LAYER_ONE_HOT: inputs indices (numeric, any rank q; floats truncated
 * toward zero; negative ones count from depth) and values (rank 1, two
 * elements [off, on], any type); the output has rank q + 1, values' type and
 * indices' dims with a new axis `axis` of size depth (its dim there, >= 0)
 * inserted: out[.., j, ..] = (j == index) ? on : off. An index outside
 * [-depth, depth) gives an all-off row (no failure). */
typedef struct pn_one_hot_desc {
    uint32_t struct_size;
    int32_t axis;            /* in [-(q + 1), q], negative counts from the end of the output */
} pn_one_hot_desc;

/* PN_LAYER_TRIANGULAR (ONNX Trilu) on the last two dims of x (rank >= 2), any
 * element type, output of x's shape and type: element [.., i, j] is kept when
 * j - i >= k (upper) or j - i <= k (lower), else set to 0 (false for BOOL). */
typedef struct pn_triangular_desc {
    uint32_t struct_size;
    pn_bool upper;           /* 1: keep the upper triangle, 0: the lower */
    int64_t k;               /* the diagonal: 0 the main one, > 0 above it, < 0 below */
} pn_triangular_desc;

/* ---- Quantization (since 1.1) ----------------------------------------------
 *
 * Linear quantization: real = scale * (q - zero_point), q an integer. Three kinds:
 * QUANTIZATION (quantize, dequantize, and quantize with the scale computed from the
 * data), QUANTIZED_CONVOLUTION and QUANTIZED_MATMUL (integer products, either given as
 * their INT32 sums or requantized). Their scales and zero points are tensors, inputs of
 * the layer: ONNX gives them as tensors, possibly computed at run time (a
 * DYNAMIC_QUANTIZE_LINEAR's outputs), per axis or per block, which the static per-tensor
 * pn_tensor_info.quant_scale / quant_zero_point cannot hold. So every tensor of these
 * kinds is a plain tensor (quant_scale 0, quant_zero_point 0): a layer of these kinds
 * whose tensor info carries static quantization is malformed. (Those 1.0 fields describe
 * an INT8/UINT8 tensor quantized by convention; a backend's optimize_subgraph may fold a
 * dequantize / float layer / quantize chain into a layer on such tensors, an internal
 * matter of that backend; no layer kind computes with them.) Zero points are always
 * given (0 where ONNX leaves one out).
 *
 * Rounding and saturation, for every op below: round(v) is the nearest integer, halves
 * to even; saturate(v) clamps v to the range of the integer type (INT8 [-128, 127],
 * UINT8 [0, 255], INT16 [-32768, 32767], UINT16 [0, 65535]), an infinity to the end of
 * its sign and NaN to the type's lowest value. "Rounded to T" is IEEE rounding to
 * nearest even of the exact value, once, to the float type T. */

typedef enum pn_quantization_op {
    PN_QUANTIZATION_INVALID = 0,
    PN_QUANTIZATION_QUANTIZE_LINEAR = 1,         /* ONNX QuantizeLinear */
    PN_QUANTIZATION_DEQUANTIZE_LINEAR = 2,       /* ONNX DequantizeLinear */
    PN_QUANTIZATION_DYNAMIC_QUANTIZE_LINEAR = 3  /* ONNX DynamicQuantizeLinear */
} pn_quantization_op;

/* PN_LAYER_QUANTIZATION.
 *
 * QUANTIZE_LINEAR: inputs x (float or INT32), scale (float or INT32), zero_point (INT8,
 *   UINT8, INT16 or UINT16); one output y of x's shape and zero_point's type:
 *     y = saturate(round(x' / scale') + zero_point),
 *   x' and scale' being x and scale rounded to `precision`, and their quotient rounded to
 *   `precision` again before it is rounded to an integer. A zero scale gives infinities
 *   (saturated) or NaN (0 / 0: the lowest value).
 * DEQUANTIZE_LINEAR: inputs x (INT8, UINT8, INT16, UINT16 or INT32), scale (float),
 *   zero_point (x's type); one output y of x's shape and any float type:
 *     y = (x - zero_point)' * scale',
 *   x - zero_point exact (an integer), then it and scale rounded to `precision`, their
 *   product rounded to `precision`, and that rounded to y's type.
 * Granularity of both (scale and zero_point have one shape):
 *   per tensor  block_size 0, scale of one element (rank 0 or 1); axis is ignored;
 *   per axis    block_size 0, scale of rank 1 and x's dim `axis` elements: element i of x
 *               along the axis uses scale[i];
 *   blocked     block_size >= 1, scale of x's rank and x's dims but along `axis`, where it
 *               has ceil(x's dim / block_size) elements: element i along the axis uses
 *               scale index floor(i / block_size) (the last block may be shorter).
 *   Per axis or blocked, axis is in [-rank, rank) of x (negative counts from the end).
 * DYNAMIC_QUANTIZE_LINEAR: input x (FLOAT32); outputs y (UINT8, x's shape), scale
 *   (FLOAT32, rank 0) and zero_point (UINT8, rank 0); axis 0, block_size 0, precision
 *   FLOAT32. In float32 arithmetic (each step rounded to float32), as ONNX's reference:
 *     hi = max(0, max(x)), lo = min(0, min(x)) (NaN elements are left out),
 *     scale = (hi == lo ? 1 : hi - lo) / 255,
 *     zero_point = round(saturate(0 - lo / scale)),
 *     y = saturate(round(x / scale) + zero_point).
 *   An empty x gives scale 1 / 255 and zero_point 0. */
typedef struct pn_quantization_desc {
    uint32_t struct_size;
    pn_quantization_op op;
    int32_t axis;            /* per axis / blocked: the axis of x (negative counts from the end) */
    uint32_t block_size;     /* 0: per tensor or per axis (the scale's shape says); >= 1: blocked */
    pn_data_type precision;  /* a float type: what QUANTIZE_LINEAR divides and DEQUANTIZE_LINEAR
                                multiplies in (ONNX's reference: NumPy's promotion of x's and
                                scale's types, FLOAT64 for INT32; DEQUANTIZE: FLOAT32, FLOAT64
                                for INT32 x); FLOAT32 for DYNAMIC_QUANTIZE_LINEAR */
} pn_quantization_desc;

typedef enum pn_quantized_op {
    PN_QUANTIZED_INVALID = 0,
    PN_QUANTIZED_INTEGER = 1,  /* the INT32 sums (ONNX ConvInteger, MatMulInteger) */
    PN_QUANTIZED_QLINEAR = 2   /* the sums requantized (ONNX QLinearConv, QLinearMatMul) */
} pn_quantized_op;

/* What QUANTIZED_CONVOLUTION and QUANTIZED_MATMUL share. The operands x (a) and w (b) are
 * INT8 or UINT8 (each its own), each with a zero point of its type; the products of the
 * shifted operands (x - x_zero_point) * (w - w_zero_point) are exact and summed in INT32,
 * wrapping modulo 2^32 (two's complement): acc.
 *   INTEGER: inputs x, x_zero_point, w, w_zero_point; the output is acc, INT32.
 *   QLINEAR: inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
 *     y_zero_point (INT8 or UINT8; the output's type), then (convolution only, with
 *     PN_LAYER_FLAG_HAS_BIAS) bias (INT32 [O]), added to acc in INT32 (wrapping). Scales
 *     share one float type T; y_scale and y_zero_point have one element (the operands'
 *     scales: see each kind). Per output element, as ONNX's reference computes:
 *       m = (x_scale * w_scale) / y_scale, the product and the quotient each rounded to T,
 *       v = double(acc) * double(m) + y_zero_point, in double (each step rounded),
 *       y = saturate(round(v)). */

/* PN_LAYER_QUANTIZED_CONVOLUTION (ONNX ConvInteger, QLinearConv): a FORWARD
 * pn_convolution_desc convolution of x [N, C, spatial...] with w [O, C / groups, k...],
 * 1 to 3 spatial axes, output [N, O, out...] (out: pn_convolution_desc's FORWARD sizes).
 * x_zero_point and x_scale have one element (rank 0 or 1); w_zero_point and w_scale one
 * element or [O] (per output channel: o uses element o). Padding adds x_zero_point (it adds 0 to acc). Unused entries of the arrays
 * (axes >= spatial_rank) are ignored. */
typedef struct pn_quantized_convolution_desc {
    uint32_t struct_size;
    pn_quantized_op op;
    uint32_t spatial_rank;              /* 1..3 */
    uint32_t strides[3];                /* >= 1 */
    uint32_t pads_begin[3];
    uint32_t pads_end[3];
    uint32_t dilations[3];              /* >= 1 */
    uint32_t groups;                    /* >= 1, divides C and O */
    uint32_t flags;                     /* PN_LAYER_FLAG_HAS_BIAS (QLINEAR only) */
} pn_quantized_convolution_desc;

/* PN_LAYER_QUANTIZED_MATMUL (ONNX MatMulInteger, QLinearMatMul): a NumPy matmul of a and b
 * (PN_LAYER_MATMUL's shapes and batch broadcasting). The zero point and scale of an
 * operand each broadcast (NumPy rules) to that operand's shape and are constant along its
 * summed axis K (a's last; b's second to last, or its only one): their dim aligned with K is
 * absent or 1. So a's are per tensor or per row ([M, 1], [..., M, 1]) and b's per tensor or
 * per column ([N], [..., 1, N]). y_scale and y_zero_point (QLINEAR) have one element. */
typedef struct pn_quantized_matmul_desc {
    uint32_t struct_size;
    pn_quantized_op op;
} pn_quantized_matmul_desc;

/* How PN_LAYER_GRID_SAMPLE treats coordinates and taps outside the input. */
typedef enum pn_grid_padding {
    PN_GRID_PADDING_INVALID = 0,
    PN_GRID_PADDING_ZEROS = 1,       /* a tap outside the input reads 0 */
    PN_GRID_PADDING_BORDER = 2,      /* the nearest edge element */
    PN_GRID_PADDING_REFLECTION = 3   /* mirrored at the borders */
} pn_grid_padding;

/* PN_LAYER_GRID_SAMPLE (ONNX GridSample, PyTorch's grid_sample): inputs x [N, C, d_1..d_r]
 * (r >= 1 spatial axes) and grid [N, o_1..o_r, r]; one output [N, C, o_1..o_r] of x's type.
 * grid holds, per output position, one normalized coordinate per spatial axis in reverse
 * order: grid[.., 0] is the last axis' (x, the width), grid[.., r - 1] the first's. x: any
 * type; grid: any float type (it may differ from x's).
 * Per spatial axis of size d and normalized coordinate g, the input coordinate is
 *   u = (g + 1) / 2 * (d - 1)          with align_corners (borders lo = 0, hi = d - 1),
 *   u = ((g + 1) * d - 1) / 2          without (borders lo = -0.5, hi = d - 0.5),
 * computed in double. NEAREST first rounds u to the nearest integer, halves to even. A u
 * outside [lo, hi] then becomes, with BORDER, min(max(u, 0), d - 1); with REFLECTION, u
 * mirrored at the borders until it lies within them (a distance t beyond a border is
 * t' = t - k * (hi - lo) for k = floor(t / (hi - lo)), measured from that border inwards
 * when k is even, from the other border when k is odd; hi == lo gives lo); ZEROS leaves it.
 * The taps of an axis, with b = floor(u) and f = u - b:
 *   NEAREST: the one index u (an integer);
 *   LINEAR:  b, b + 1 with weights 1 - f, f;
 *   CUBIC:   b - 1 .. b + 2 with Keys' cubic convolution weights, a = -0.75 (as
 *            pn_resize_desc's CUBIC: w(t) = k(t - f) for t = -1..2).
 * A tap index j outside [0, d) reads: ZEROS 0; BORDER the element at min(max(j, 0), d - 1);
 * REFLECTION the element at j mirrored as u is above (an integer again). The output is the
 * sum over every combination of the axes' taps of the product of their weights times the
 * element, in double (CpuRef), converted to x's type as pn_elements.h stores a double
 * (floats rounded once; integers truncated toward zero and saturated; BOOL: non-zero);
 * NEAREST copies the element (or gives 0) exactly. An output element whose grid coordinates
 * include a NaN or an infinity, or whose x has an empty spatial axis, is 0. */
typedef struct pn_grid_sample_desc {
    uint32_t struct_size;
    pn_resize_mode mode;       /* NEAREST, LINEAR or CUBIC */
    pn_grid_padding padding;
    pn_bool align_corners;     /* 0 or 1 */
} pn_grid_sample_desc;

/* PN_LAYER_ROI_ALIGN (ONNX RoiAlign, Mask R-CNN): inputs x [N, C, H, W], rois [R, 4]
 * (x1, y1, x2, y2 per region, in the coordinates spatial_scale maps onto x) and
 * batch_indices [R] (INT32 or INT64: the image of each region, in [0, N); another value
 * fails execute() with PN_ERR_INVALID_ARGUMENT naming it); one output [R, C, output_height,
 * output_width]. x, rois and the output share one float type.
 * Per region, with o = 0.5 when half_pixel, else 0: start = (x1, y1) * spatial_scale - o,
 * end = (x2, y2) * spatial_scale - o, size = end - start (without half_pixel at least 1 per
 * axis), bin = size / output dims; per axis the bin holds g sample points, g = sampling_ratio
 * or, when sampling_ratio is 0, ceil(size / output dim) (then g <= 0 means no samples), at
 * start + p * bin + (i + 0.5) * bin / g for output index p and i in [0, g). A sample at
 * (y, x) with y < -1, y > H, x < -1 or x > W is 0 (every corner weight 0); otherwise y and x
 * are raised to at least 0, y_lo = floor(y), and if y_lo >= H - 1 then y_lo = y_hi = H - 1
 * and y = y_lo, else y_hi = y_lo + 1 (x likewise); ly = y - y_lo, lx = x - x_lo, and the four
 * corners have weights (1-ly)(1-lx), (1-ly)lx, ly(1-lx), ly lx.
 * AVERAGE: the sum over the bin's samples of their bilinear values, divided by
 * max(g_y * g_x, 1); MAX: the largest over its samples of the largest of the four
 * weight * corner products (onnxruntime's and ONNX's reference definition). A bin without
 * samples, and every bin of an x with H or W 0, is 0. CpuRef computes in double. */
typedef struct pn_roi_align_desc {
    uint32_t struct_size;
    pn_pooling_kind mode;          /* MAX or AVERAGE */
    uint32_t output_height;        /* >= 1, the output's dim 2 */
    uint32_t output_width;         /* >= 1, the output's dim 3 */
    uint32_t sampling_ratio;       /* samples per bin and axis; 0: adaptive (see above) */
    float spatial_scale;           /* finite */
    pn_bool half_pixel;            /* 0 or 1 */
} pn_roi_align_desc;

/* Flag of pn_deformable_convolution_desc (with PN_LAYER_FLAG_HAS_BIAS): the mask input is
 * present. */
#define PN_DEFORMABLE_HAS_MASK 0x4u

/* PN_LAYER_DEFORMABLE_CONVOLUTION (ONNX DeformConv): a 1-, 2- or 3-D convolution of
 * x [N, C, in...] whose taps are moved by learned offsets. Inputs x, weights [O, C / groups,
 * k...], offset [N, offset_groups * K * r, out...] (K = the product of the kernel sizes k,
 * r = spatial_rank), optional bias [O] (PN_LAYER_FLAG_HAS_BIAS), optional mask
 * [N, offset_groups * K, out...] (PN_DEFORMABLE_HAS_MASK), in this order; one output
 * [N, O, out...] with out per axis floor((in + pad_begin + pad_end - dilation * (k - 1) - 1)
 * / stride) + 1, which must be >= 1. Every tensor of one float type. The input channels
 * split into offset_groups equal parts; part g uses offset channels [g * K * r, (g + 1) * K * r)
 * ordered (tap t, axis a) -> (g * K + t) * r + a, and mask channels g * K + t (taps t in
 * row-major order of the kernel). For output position i and tap t the sampling position along
 * axis a is p_a = i_a * stride_a - pad_begin_a + t_a * dilation_a + offset[n, (g K + t) r + a, i]
 * and the sampled value is the multilinear interpolation of x[n, c] at p: the 2^r corners
 * floor(p_a) + {0, 1}, weights 1 - f_a and f_a (f_a = p_a - floor(p_a)), a corner outside the
 * input reading 0. Then
 *   y[n, o, i] = bias[o] + sum over c in o's group and taps t of
 *                w[o, c mod (C / groups), t] * mask[n, g(c) K + t, i] * sample(n, c, t, i)
 * (mask 1 without the mask input). groups divides C and O; offset_groups divides C.
 * CpuRef computes in double. Unused array entries (axes >= spatial_rank) are ignored. */
typedef struct pn_deformable_convolution_desc {
    uint32_t struct_size;
    uint32_t spatial_rank;              /* 1..3 */
    uint32_t strides[3];                /* >= 1 */
    uint32_t pads_begin[3];
    uint32_t pads_end[3];
    uint32_t dilations[3];              /* >= 1 */
    uint32_t groups;                    /* >= 1 */
    uint32_t offset_groups;             /* >= 1 */
    uint32_t flags;                     /* PN_LAYER_FLAG_HAS_BIAS, PN_DEFORMABLE_HAS_MASK */
} pn_deformable_convolution_desc;

typedef enum pn_spectral_op {
    PN_SPECTRAL_INVALID = 0,
    PN_SPECTRAL_DFT = 1,     /* ONNX DFT: one axis, forward or inverse, full or one-sided */
    PN_SPECTRAL_STFT = 2     /* ONNX STFT: DFTs of windowed frames of a signal */
} pn_spectral_op;

/* Flag of pn_spectral_desc: STFT's window input is present. */
#define PN_SPECTRAL_HAS_WINDOW 0x1u

/* PN_LAYER_SPECTRAL: discrete Fourier transforms. Complex values are a trailing dim of 2
 * (real, imaginary); a trailing dim of 1 holds a real value (imaginary part 0). Every tensor
 * of one float type; CpuRef computes in double, with the angle 2 pi (j k mod n) / n of each
 * term reduced exactly before its sine and cosine.
 *   DFT:  input x [.., L, .., c] (rank >= 2, c = 1 or 2, `axis` any dim but the last) with
 *         n = length: the input along the axis is cut to its first n values or padded with
 *         zeros to n. Output along the axis (the other dims are x's):
 *           forward:            y_k = sum_j x_j exp(-2 pi i j k / n), k < n; [.., n, .., 2]
 *           forward, onesided:  the same for k <= n / 2 only;                 [.., n/2+1, .., 2]
 *           inverse:            y_j = 1/n sum_k x_k exp(+2 pi i j k / n);     [.., n, .., 2]
 *           inverse, onesided:  the real inverse of a one-sided spectrum (NumPy's irfft): the
 *             first min(L, n/2 + 1) values x_k with x_{n-k} = conj(x_k) supplying the rest
 *             and the imaginary parts of x_0 and (n even) x_{n/2} ignored, zeros where x has
 *             no value; y_j = 1/n sum_k X_k exp(+2 pi i j k / n), real;      [.., n, .., 1]
 *   STFT: inputs signal [B, L, c] and, with PN_SPECTRAL_HAS_WINDOW, window [n] (n = length,
 *         the frame length; without a window every weight is 1); output [B, F, bins, 2] with
 *         F = floor((L - n) / frame_step) + 1 frames (which must be >= 0) and bins = n / 2 + 1
 *         (onesided) or n: frame f is the forward DFT of w_j * signal[b, f * frame_step + j],
 *         j < n. */
typedef struct pn_spectral_desc {
    uint32_t struct_size;
    pn_spectral_op op;
    int32_t axis;            /* DFT: the transformed dim of x (negative counts from the end),
                                not the last; STFT: 0 */
    pn_bool inverse;         /* DFT: 0 or 1; STFT: 0 */
    pn_bool onesided;        /* 0 or 1 */
    int64_t length;          /* DFT: n (dft_length), STFT: the frame length; >= 1 */
    int64_t frame_step;      /* STFT: >= 1; DFT: 0 */
    uint32_t flags;          /* STFT: PN_SPECTRAL_HAS_WINDOW; DFT: 0 */
} pn_spectral_desc;

typedef enum pn_linear_algebra_op {
    PN_LINEAR_ALGEBRA_INVALID = 0,
    PN_LINEAR_ALGEBRA_DETERMINANT = 1  /* ONNX Det */
} pn_linear_algebra_op;

/* PN_LAYER_LINEAR_ALGEBRA: matrix functions of the last two dims of x.
 *   DETERMINANT: x [.., M, M] (rank >= 2), output [..] (x's dims without the last two; rank 0
 *     for a single matrix): the determinant of each matrix (1 for M = 0). Float x and output,
 *     one type. CpuRef: Gaussian elimination with partial pivoting in double, rounded once. */
typedef struct pn_linear_algebra_desc {
    uint32_t struct_size;
    pn_linear_algebra_op op;
} pn_linear_algebra_desc;

/* PN_LAYER_BITCAST (ONNX BitCast; no descriptor): x of any type, the output (x's shape) of
 * the type its info names, whose elements have x's size in bytes: each element's bytes are
 * copied unchanged (plugnn tensors are in the host's byte order; ONNX defines BitCast on
 * little-endian bytes, so the two agree on little-endian hosts). A BOOL output holds 0 or 1
 * only: an input byte of another value fails execute() with PN_ERR_INVALID_ARGUMENT naming
 * it. Neither tensor may be quantized (quant_scale 0). */

typedef enum pn_random_op {
    PN_RANDOM_INVALID = 0,
    PN_RANDOM_UNIFORM = 1,      /* no input: a + (b - a) * u */
    PN_RANDOM_NORMAL = 2,       /* no input: a + b * z, z standard normal */
    PN_RANDOM_MULTINOMIAL = 3   /* input logits: class indices drawn per row */
} pn_random_op;

/* Flag of pn_random_desc: every execute() draws new values (see below). */
#define PN_RANDOM_ADVANCE 0x1u

/* PN_LAYER_RANDOM: pseudo-random values from a generator every backend computes alike, so a
 * layer gives the same values on every backend.
 * Generator: Philox4x64-10 (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as
 * 1, 2, 3", SC 2011; NumPy's numpy.random.Philox) with key (seed, 0). Output element i (in
 * row-major order; MULTINOMIAL: i = row * samples + sample) of execution r takes the four
 * 64-bit words w0..w3 of the block at counter (i, r, 0, 0), and
 *   u  = (w0 >> 11) * 2^-53                    in [0, 1),
 *   u1 = ((w0 >> 11) + 1) * 2^-53              in (0, 1],
 *   u2 = (w1 >> 11) * 2^-53,  z = sqrt(-2 ln u1) cos(2 pi u2)   (Box-Muller),
 * in double. r counts the executions of the workload that draw values (0, 1, 2, ... from its
 * creation; an execution with an empty output draws none) when flags has PN_RANDOM_ADVANCE;
 * without it r is 0 for every execution (the same values each run: ONNX's seeded
 * generators). Uniform values are then exact on every backend; normal ones to within the
 * rounding of the C library's log and cos.
 *   UNIFORM:     no input; output of any float type: a + (b - a) * u, computed in double and
 *                rounded once to the output type (a <= b, both finite).
 *   NORMAL:      no input; output of any float type: a + b * z (b: the standard deviation),
 *                in double, rounded once (a, b finite).
 *   MULTINOMIAL: input logits [R, classes] (float, classes >= 1); output [R, samples] of
 *                INT32 or INT64: per row, with m its largest value and, in double,
 *                p_c = exp(x_c - m) and P_c = p_0 + .. + p_c (summed in this order), each
 *                sample is the smallest c with u * P_last < P_c. A row holding NaN or +inf,
 *                or only -inf, fails execute() with PN_ERR_INVALID_ARGUMENT naming it; a and
 *                b are 0. */
typedef struct pn_random_desc {
    uint32_t struct_size;
    pn_random_op op;
    uint32_t flags;          /* PN_RANDOM_ADVANCE or 0 */
    uint64_t seed;           /* the Philox key's first word */
    double a;                /* UNIFORM: low; NORMAL: mean */
    double b;                /* UNIFORM: high; NORMAL: standard deviation */
} pn_random_desc;

/* ---------------------------------------------------------------------------
 * Data-dependent layers (since 1.1)
 * ---------------------------------------------------------------------------
 * PN_LAYER_DATA_DEPENDENT holds the operators whose output shapes depend on the
 * input values (ONNX NonZero, Unique, NonMaxSuppression, Compress). Each
 * output's pn_tensor_info holds an UPPER BOUND of its shape, derived from the
 * input shapes as each op below says (the shared validation checks it), and
 * the runtime passes buffers of that size. execute() writes each output
 * densely, row-major in its ACTUAL shape, from the start of its buffer (bytes
 * past the actual size are unspecified), and reports the actual dims through
 * pn_execute_args.output_dims: row i (PN_MAX_DIMS int64_t entries, at
 * output_dims + i * PN_MAX_DIMS) receives output i's dims in its first `rank`
 * entries (rank as in the output's info; the other entries are not read).
 * Every actual dim is >= 0 and <= the bound's dim (an empty bound still gets
 * its actual dims reported: [0, 3] compressed along axis 1 may be [0, 1]).
 * The runtime sizes what follows such a
 * layer on the reported dims (plugnn runs later layers in a network
 * specialized for them).
 *
 * Ownership: output_dims belongs to the runtime and is valid for the call; the
 * workload keeps no pointer to it. Errors: a workload of this kind whose
 * execute arguments do not cover output_dims (PN_HAS_FIELD fails) or hold NULL
 * there fails with PN_ERR_INVALID_ARGUMENT (the runtime always passes it for
 * this kind); so does a result that would exceed a bound the layer states
 * below the largest possible one (NON_MAX_SUPPRESSION only), naming the op and
 * the bound. A 1.0 plugin never receives this kind (it refuses kinds it does
 * not know), so 1.0 plugins are unaffected.
 *
 * NON_ZERO (ONNX NonZero): input x (any type, rank >= 1); one output, INT64,
 * bound [rank, count(x)], actual [rank, n]: column j holds the multi-index of
 * the j-th nonzero element of x in row-major order (nonzero: != 0 for
 * numbers, NaN included; true for BOOL).
 *
 * UNIQUE (ONNX Unique): input x (any type, not quantized); four
 * outputs: y (x's type), indices, inverse_indices, counts (INT64). Without
 * has_axis, x is read flattened (N elements): bounds y [N], indices [N],
 * inverse_indices [N] (always exact), counts [N]. With has_axis, the items are
 * x's slices along `axis` (D of them): bounds y = x's shape with dim `axis`
 * (exact but for dim axis), indices [D], inverse_indices [D] (exact), counts
 * [D]. With u unique items: y holds them (sorted: ascending, slices compared
 * lexicographically by their elements in row-major order, NaN after every
 * number; not sorted: in order of first occurrence), indices[k] is the first
 * position of item k in x, inverse_indices[i] the k of x's item i, counts[k]
 * how often item k occurs. Items are equal when every element compares equal
 * (NaNs equal to one another, -0.0 equal to 0.0).
 *
 * NON_MAX_SUPPRESSION (ONNX NonMaxSuppression): inputs boxes [B, N, 4] and
 * scores [B, C, N] (one float type), then optionally, in order, one-element
 * tensors max_output_boxes_per_class (INT64; absent: 0, so nothing is
 * selected, as ONNX says), iou_threshold (the boxes' type; absent: 0) and
 * score_threshold (the boxes' type; absent: no threshold). One output, INT64
 * [K, 3] rows (batch, class, box), bound [R, 3] with R <= B * C * N (the
 * largest possible; a smaller R may be stated when the maximum is known). Per
 * batch b and class c, in that order: the boxes whose score is above
 * score_threshold (strictly), by descending score (NaN after every number;
 * equal scores and NaNs: lower box index first), each selected unless its IoU
 * with an already selected box of (b, c) exceeds iou_threshold (strictly), at
 * most max_output_boxes_per_class
 * (a negative maximum selects none). Boxes are [y1, x1, y2, x2] corners in any
 * order, or [x_center, y_center, width, height] with center_point_box; the
 * IoU of boxes with no union area is 0.
 *
 * COMPRESS (ONNX Compress): inputs x (any type) and condition (BOOL, rank 1,
 * L elements). With has_axis: the slices i of x along `axis` with i < L and
 * condition[i] true, in order; bound = x's shape with dim `axis` =
 * min(L, dim). Without: x flattened (N elements), the elements i < L with
 * condition[i]; bound [min(L, N)]. L may be below the dim (the rest is not
 * selected); L above it is refused. */
typedef enum pn_data_dependent_op {
    PN_DATA_DEPENDENT_INVALID = 0,
    PN_DATA_DEPENDENT_NON_ZERO = 1,
    PN_DATA_DEPENDENT_UNIQUE = 2,
    PN_DATA_DEPENDENT_NON_MAX_SUPPRESSION = 3,
    PN_DATA_DEPENDENT_COMPRESS = 4
} pn_data_dependent_op;

/* A field that does not apply to `op` is 0 (the shared validation refuses
 * anything else). */
typedef struct pn_data_dependent_desc {
    uint32_t struct_size;
    pn_data_dependent_op op;
    pn_bool has_axis;        /* UNIQUE, COMPRESS: 1 works on slices along axis, 0 on x flattened */
    int32_t axis;            /* with has_axis: in [-rank, rank), negative from the end; else 0 */
    pn_bool sorted;          /* UNIQUE: 1 ascending, 0 in order of first occurrence */
    pn_bool center_point_box;/* NON_MAX_SUPPRESSION: 1 [x_c, y_c, w, h], 0 two corners */
} pn_data_dependent_desc;

/* ---------------------------------------------------------------------------
 * Tree ensembles (since 1.2)
 * ---------------------------------------------------------------------------
 * PN_LAYER_TREE_ENSEMBLE evaluates a forest of decision trees on the rows of x
 * (ONNX-ML TreeEnsembleRegressor, TreeEnsembleClassifier and TreeEnsemble:
 * random forests, gradient-boosted trees of scikit-learn, XGBoost, LightGBM).
 * A 1.0 or 1.1 plugin never receives this kind (it refuses kinds it does not
 * know).
 *
 * Inputs, in this order (every input but x is a CONSTANT: pn_layer.constant_data
 * holds its data, so a backend lays the nodes out once in create_workload;
 * the shared validation refuses a layer where one is not, and checks every
 * value below):
 *   0  x           [N, F]  FLOAT32 or FLOAT64: N rows of F features
 *   1  tree_offsets INT64 [T + 1]: tree t's nodes are [tree_offsets[t],
 *                  tree_offsets[t + 1]); tree_offsets[0] = 0, each tree has at
 *                  least one node, tree_offsets[T] = M; its root is its first node
 *   2  node_modes  UINT8 [M]: pn_tree_node_mode, optionally ORed with
 *                  PN_TREE_MISSING_TRUE
 *   3  node_features INT64 [M]: a branch's feature, in [0, F); 0 for a leaf
 *   4  node_thresholds FLOAT64 [M]: a branch's threshold; 0 for a leaf
 *   5  node_true   INT64 [M]: a branch's child when its test holds; a leaf's
 *                  first weight (an index into inputs 7 and 8)
 *   6  node_false  INT64 [M]: a branch's child when it does not; a leaf's
 *                  number of weights (>= 0, its weights are node_true[i] ..
 *                  node_true[i] + node_false[i] - 1, within [0, W])
 *                  A branch's children lie after it and inside its tree
 *                  (i < child < tree_offsets[t + 1]), so every walk ends at a
 *                  leaf; a node may be the child of several (shared subtrees).
 *   7  leaf_targets INT64 [W]: each weight's target (class), in [0, K)
 *   8  leaf_weights FLOAT64 [W]
 *   9  base_values FLOAT64 [K]: added to each target's aggregate
 * Outputs: scores [N, K] of x's type; CLASSIFIER also label INT64 [N].
 *
 * Each row walks every tree from its root: at a branch with feature f and
 * threshold v, the test is x[f] <= v (LEQ), x[f] < v (LT), x[f] >= v (GTE),
 * x[f] > v (GT), x[f] == v (EQ), x[f] != v (NEQ), compared in double (a FLOAT32
 * x widened exactly); a NaN x[f] takes the true child when the node has
 * PN_TREE_MISSING_TRUE, else the comparison decides (false but for NEQ). At
 * the leaf reached, each weight (target k, value w) is aggregated into target
 * k: SUM and AVERAGE add w (AVERAGE divides the sum by T at the end), MIN and
 * MAX keep the smallest / largest w seen; a target no reached leaf names is 0
 * (all four). Then base_values[k] is added, then post_transform over the row's
 * K scores: NONE; LOGISTIC 1 / (1 + exp(-s)) per score; SOFTMAX
 * exp(s - max) / sum; SOFTMAX_ZERO as SOFTMAX but a score with |s| <= 1e-7
 * gives 0 and is left out of the sum; PROBIT sqrt(2) * erfinv(2 s - 1) per
 * score. Accumulation is in double at least (the result is rounded once to
 * x's type). CLASSIFIER: aggregate SUM; label[n] is the index of the largest
 * score after base_values and before post_transform (the first on ties).
 * execute() cannot fail on the data (every index was checked). */
typedef enum pn_tree_ensemble_op {
    PN_TREE_ENSEMBLE_INVALID = 0,
    PN_TREE_ENSEMBLE_REGRESSOR = 1,  /* outputs scores */
    PN_TREE_ENSEMBLE_CLASSIFIER = 2  /* outputs scores, label */
} pn_tree_ensemble_op;

typedef enum pn_tree_node_mode {
    PN_TREE_NODE_INVALID = 0,
    PN_TREE_NODE_LEQ = 1,
    PN_TREE_NODE_LT = 2,
    PN_TREE_NODE_GTE = 3,
    PN_TREE_NODE_GT = 4,
    PN_TREE_NODE_EQ = 5,
    PN_TREE_NODE_NEQ = 6,
    PN_TREE_NODE_LEAF = 7
} pn_tree_node_mode;

/* A bit ORed into a node_modes byte: a NaN feature takes the true child. */
#define PN_TREE_MISSING_TRUE 0x80

typedef enum pn_tree_aggregate {
    PN_TREE_AGGREGATE_INVALID = 0,
    PN_TREE_AGGREGATE_SUM = 1,
    PN_TREE_AGGREGATE_AVERAGE = 2,
    PN_TREE_AGGREGATE_MIN = 3,
    PN_TREE_AGGREGATE_MAX = 4
} pn_tree_aggregate;

typedef enum pn_tree_post_transform {
    PN_TREE_POST_INVALID = 0,
    PN_TREE_POST_NONE = 1,
    PN_TREE_POST_LOGISTIC = 2,
    PN_TREE_POST_SOFTMAX = 3,
    PN_TREE_POST_SOFTMAX_ZERO = 4,
    PN_TREE_POST_PROBIT = 5
} pn_tree_post_transform;

typedef struct pn_tree_ensemble_desc {
    uint32_t struct_size;
    pn_tree_ensemble_op op;
    pn_tree_aggregate aggregate;           /* CLASSIFIER: SUM */
    pn_tree_post_transform post_transform;
} pn_tree_ensemble_desc;

/* PN_LAYER_PRECOMPILED: a layer a backend made in optimize_subgraph (fused
 * chains, blocked layouts, anything private to it). Only the backend that made
 * it receives it back, in create_workload (with release_payload NULL: the
 * runtime keeps that pointer). `payload` is the backend's; the runtime calls
 * release_payload(payload) exactly once, after every workload created from it
 * has been destroyed: when the optimized network is destroyed, or, if the
 * backend is destroyed first (its runtime closes), just before destroy. */
typedef struct pn_precompiled_desc {
    uint32_t struct_size;
    void* payload;
    void (*release_payload)(void* payload); /* may be NULL: nothing to release */
    const char* label;                      /* shown to users, e.g. "conv+bias+relu" */
} pn_precompiled_desc;

/* ===========================================================================
 * Layers
 * ======================================================================== */

/* One layer, as the runtime describes it to a backend. Every pointer inside is
 * borrowed for the duration of the call that receives the layer. */
typedef struct pn_layer {
    uint32_t struct_size;
    pn_layer_kind kind;
    const char* name;             /* unique in the network, NUL-terminated */
    const void* descriptor;       /* the kind's pn_*_desc, or NULL where the kind has none */
    uint32_t num_inputs;
    const pn_tensor_info* inputs; /* array of num_inputs */
    const void* const* constant_data; /* NULL, or num_inputs entries: input i's data
                                          when it is a constant, else NULL */
    uint32_t num_outputs;
    const pn_tensor_info* outputs;/* array of num_outputs */
    const uint32_t* input_ids;    /* subgraph tensor ids (in optimize_subgraph), else NULL */
    const uint32_t* output_ids;   /* subgraph tensor ids (in optimize_subgraph), else NULL */
    uint32_t id;                  /* layer id (in optimize_subgraph), else 0 */
    const void* extension;        /* NULL (array element: never grows) */
} pn_layer;

/* ===========================================================================
 * Subgraph optimization
 * ======================================================================== */

/* Consecutive layers the runtime assigned to one backend. Tensor ids name the
 * edges: an id in a layer's input_ids is either another layer's output or one
 * of `input_ids` (produced outside the subgraph or constant). `output_ids`
 * lists the tensors used outside the subgraph; they must keep their ids, shapes
 * and types in any substitution. */
typedef struct pn_subgraph {
    uint32_t struct_size;
    uint32_t num_layers;
    const pn_layer* layers;
    uint32_t num_input_ids;
    const uint32_t* input_ids;
    uint32_t num_output_ids;
    const uint32_t* output_ids;
} pn_subgraph;

/* The layers `replaced_layer_ids` are replaced by one layer, `replacement`,
 * whose input_ids/output_ids refer to tensors of the subgraph: its inputs must
 * be produced outside the replaced set, and every tensor of the replaced set
 * used outside it must be one of its outputs. replacement.id is ignored. */
typedef struct pn_substitution {
    uint32_t struct_size;
    uint32_t num_replaced_layer_ids;
    const uint32_t* replaced_layer_ids;
    pn_layer replacement;
    const void* extension;        /* NULL (array element: never grows) */
} pn_substitution;

/* A layer the backend cannot run after all; the runtime tries the next backend. */
typedef struct pn_failed_layer {
    uint32_t struct_size;
    uint32_t layer_id;
    const char* reason;
    const void* extension;        /* NULL (array element: never grows) */
} pn_failed_layer;

/* What optimize_subgraph returns. Every layer of the subgraph appears exactly
 * once: in one substitution, among the failed layers or among the untouched
 * ones. The whole struct, and everything it points to, belongs to the backend
 * until the runtime passes it to release_optimization, except each
 * pn_precompiled_desc payload, which the runtime owns from the moment it
 * receives the result (see pn_precompiled_desc). The runtime copies every
 * descriptor it keeps. */
typedef struct pn_optimization {
    uint32_t struct_size;
    uint32_t num_substitutions;
    const pn_substitution* substitutions;
    uint32_t num_failed;
    const pn_failed_layer* failed;
    uint32_t num_untouched;
    const uint32_t* untouched_layer_ids;
} pn_optimization;

/* ===========================================================================
 * Memory manager (optional)
 * ======================================================================== */

/* Owned by the runtime from create_memory_manager until destroy. acquire() is
 * called once before the first run of a loaded network, release() when it is
 * unloaded. allocate/free/copy_* are required only for backends without
 * PN_BACKEND_HOST_MEMORY: the runtime then asks this manager for each tensor the
 * backend works on and copies across the boundary with copy_from_host and
 * copy_to_host. */
typedef struct pn_memory_manager {
    uint32_t struct_size;
    void* self;
    void (*destroy)(struct pn_memory_manager* mm);
    pn_status (*acquire)(struct pn_memory_manager* mm, pn_string_out* message_out);
    pn_status (*release)(struct pn_memory_manager* mm, pn_string_out* message_out);
    /* Non-host backends: a handle for `bytes` bytes, valid until free(). */
    pn_status (*allocate)(struct pn_memory_manager* mm, size_t bytes, void** handle_out,
                          pn_string_out* message_out);
    void (*free)(struct pn_memory_manager* mm, void* handle);
    pn_status (*copy_from_host)(struct pn_memory_manager* mm, void* dst_handle, const void* src,
                                size_t bytes, pn_string_out* message_out);
    pn_status (*copy_to_host)(struct pn_memory_manager* mm, void* dst, const void* src_handle,
                              size_t bytes, pn_string_out* message_out);
} pn_memory_manager;

/* ===========================================================================
 * Workloads
 * ======================================================================== */

/* Arguments of one execution. */
typedef struct pn_execute_args {
    uint32_t struct_size;
    uint32_t num_inputs;
    const pn_tensor* inputs;   /* constants included, in the layer's input order */
    uint32_t num_outputs;
    const pn_tensor* outputs;  /* memory the workload writes; never aliases an input */
    void* workspace;           /* host scratch of the size the workload asked for, or NULL */
    /* Since 1.1: for PN_LAYER_DATA_DEPENDENT (NULL for every other kind), where
     * the workload reports its outputs' actual dims: num_outputs rows of
     * PN_MAX_DIMS entries (see "Data-dependent layers"). Read it only when
     * PN_HAS_FIELD(args, pn_execute_args, output_dims). */
    int64_t* output_dims;
    /* Since 1.2: nonzero when the runtime profiles this execution and will ask
     * pn_workload.read_profile for the time of each original layer inside a
     * fused layer. A workload times its parts only when this is set (read it
     * only when PN_HAS_FIELD(args, pn_execute_args, profile)), so a run that is
     * not profiled pays nothing. */
    pn_bool profile;
} pn_execute_args;

/* Since 1.2: the time one original layer took inside a fused layer (see
 * pn_workload.read_profile). Filled by the workload; the caller sets
 * struct_size of each entry it passes (sizeof in its header), and the workload
 * writes only the fields that fit in it. */
typedef struct pn_profile_entry {
    uint32_t struct_size;
    /* An original layer's name, as the subgraph given to optimize_subgraph
     * named it (pn_layer.name). Owned by the workload: valid until its next
     * execute(), reshape() or destroy(). */
    const char* layer;
    /* Wall time of that layer's part of the last execute(), in nanoseconds
     * (on several threads: from the first thread starting it to the last one
     * finishing; for layers the workload ran interleaved in one parallel loop,
     * each one's share of that loop's wall time, as the workload apportions
     * it). A layer whose work ran inside another's kernel (a fused activation,
     * a residual add) reports 0: its time is in that layer's. */
    uint64_t nanoseconds;
} pn_profile_entry;

/* One layer ready to run, owned by the runtime until destroy. The runtime never
 * calls execute() on one workload from two threads at once, but workloads of
 * different loaded networks may execute concurrently. execute() may use threads
 * of its own and must have joined them before it returns. */
typedef struct pn_workload {
    uint32_t struct_size;
    void* self;
    void (*destroy)(struct pn_workload* workload);
    pn_status (*execute)(struct pn_workload* workload, const pn_execute_args* args,
                         pn_string_out* message_out);
    size_t workspace_bytes;    /* scratch the runtime passes to execute(), 0 for none */
    /* Since 1.1, optional (NULL, or past the struct_size a 1.0 plugin wrote: the
     * runtime then calls create_workload). A new workload for the same layer at
     * other tensor shapes: XNNPACK's create / reshape / setup / run split, for a
     * network specialized again for new input shapes (a new batch size).
     *
     * `layer` is the layer this workload was created from (or reshaped to) with
     * only the shapes of non-constant inputs and of outputs changed: the same
     * kind, name, descriptor, element types and number of inputs and outputs,
     * and the same constant inputs (same shapes, and constant_data pointing at
     * the same bytes the source was given, which the runtime keeps alive and
     * unchanged while any workload made from them exists). The backend judges
     * `layer` as create_workload would (never trusting the caller) and may
     * check that it is such a layer.
     *
     * Ownership: on PN_OK *workload_out is a new workload owned by the runtime
     * (released with its destroy()), independent of `workload` in lifetime:
     * either may be destroyed first, and each may be reshaped again. The two may
     * share immutable state (prepacked weights, tables), reference-counted by the
     * backend; they never share anything execute() writes, because the runtime
     * may run them at the same time (they belong to different loaded networks).
     * `layer` is borrowed for the call, like in create_workload.
     *
     * Threads: the general rule (one thread at a time for a backend's objects),
     * with one exception: `workload` itself may be executing on another thread
     * during the call, so reshape reads only what execute() does not write. The
     * runtime never calls reshape or destroy on workloads sharing state from two
     * threads at once, so a plain (non-atomic) reference count suffices.
     *
     * Errors: PN_ERR_UNSUPPORTED when this workload cannot be re-sized to
     * `layer` (the runtime then calls create_workload on the factory instead,
     * so this is not an error to the user); PN_ERR_INVALID_ARGUMENT when
     * `layer` is not this layer at other shapes or is malformed; PN_ERR_OUT_OF_MEMORY.
     * On failure *workload_out is NULL and the message is written; `workload`
     * is unchanged and stays usable. */
    pn_status (*reshape)(struct pn_workload* workload, const pn_layer* layer,
                         struct pn_workload** workload_out, pn_string_out* message_out);
    /* Since 1.2, optional (NULL, or past the struct_size a 1.0 or 1.1 plugin
     * wrote: the runtime then reports the layer as one whole). The workload of
     * a fused layer (a PRECOMPILED layer made by optimize_subgraph) reports how
     * long each original layer it was made from took in the last execute()
     * whose pn_execute_args.profile was set: every such layer once, in the
     * order they ran, their times adding up to at most the execute's (what
     * the fused layer does beyond its layers, such as layout conversions, is
     * in none).
     *
     * Writes min(capacity, n) entries to `entries` (each caller-initialised
     * with its struct_size; `entries` may be NULL when capacity is 0) and n to
     * *count_out, so a caller may ask with capacity 0 first. Ownership: the
     * entries belong to the caller; the `layer` strings in them to the
     * workload (valid until its next execute, reshape or destroy).
     *
     * Errors: PN_ERR_INVALID_ARGUMENT when count_out is NULL, or entries is
     * NULL with capacity > 0, or an entry's struct_size is too small to hold
     * `layer`; PN_ERR_INVALID_STATE when no profiled execute() has run since
     * the workload was made, or the last execute() was not profiled or
     * failed. On failure *count_out (when not NULL) is 0. */
    pn_status (*read_profile)(struct pn_workload* workload, pn_profile_entry* entries, uint32_t capacity,
                              uint32_t* count_out, pn_string_out* message_out);
    /* Since 1.3 (0, or past the struct_size a 1.0, 1.1 or 1.2 plugin wrote: no
     * flag): PN_WORKLOAD_* bits, written by the backend before it returns the
     * workload and never changed after. */
    uint32_t flags;
    /* Since 1.3, with PN_WORKLOAD_SHAPES_AT_EXECUTE: bit i set when non-constant
     * input i must keep the dims the layer gave it (bit 31 stands for inputs 31
     * and up): the runtime passes other dims only for the others (a fused layer
     * that reads one input through a Reshape made for its dims). Constant inputs
     * keep theirs whatever the bits say. */
    uint32_t fixed_inputs;
} pn_workload;

/* Since 1.3: pn_workload.flags bit. The workload runs at shapes other than the
 * ones it was made for, read from the arguments of each execute(): the runtime
 * may pass non-constant inputs and outputs whose pn_tensor.info has other dims
 * (same rank and element type; for an input of pn_workload.fixed_inputs, the
 * same dims) than the layer the workload was created from or reshaped to,
 * such that the layer with those dims is one reshape() would
 * be given (the same kind, name, descriptor, element types, ranks and constant
 * inputs). A network whose shapes change at every run (a KV cache growing by
 * one token per decoding step) then touches no workload: it writes the new
 * dims into the execute arguments.
 *
 * A PRECOMPILED layer (made by optimize_subgraph from layers of the network)
 * is passed other dims only where the layers it was made from are, at those
 * dims, the same layers but shapes, and where each Reshape among them that
 * reads one of the layer's inputs reshapes it by the same grouping of axes as
 * at the dims the layer was made for (the rule of plugin_common.h's pn_reshape_groups: axes kept or
 * merged follow their input axes, split ones keep their sizes): a payload may
 * work the dims of a tensor it reads through a Reshape out by that rule.
 *
 * The workload judges such dims as create_workload would judge the layer at
 * them (never trusting the runtime) and, at dims it has not run at before, may
 * do the work reshape() would (plan, allocate). It fails with
 * PN_ERR_INVALID_ARGUMENT when they do not form a valid layer (a rank or
 * element type that differs, a constant input's dims, an output shape that
 * does not follow the inputs), PN_ERR_UNSUPPORTED when it does not run the
 * layer at those dims, PN_ERR_OUT_OF_MEMORY; on any failure the outputs'
 * contents are unspecified and the workload stays usable at any dims it
 * accepts. workspace_bytes keeps its value: scratch a workload needs beyond
 * it at other dims is its own (allocated and freed by it). The runtime keeps
 * the layer's constant data (and a PRECOMPILED payload) alive and unchanged
 * while the workload exists, as for reshape(). Threads: as execute(). */
#define PN_WORKLOAD_SHAPES_AT_EXECUTE 0x1u

/* Owned by the runtime until destroy. Workloads it created stay valid after the
 * factory is destroyed (the runtime may destroy the factory first). */
typedef struct pn_workload_factory {
    uint32_t struct_size;
    void* self;
    void (*destroy)(struct pn_workload_factory* factory);
    /* `layer` was accepted by is_layer_supported (or made by this backend's
     * optimize_subgraph). The workload copies what it keeps from `layer`,
     * including constant data it wants (prepacked or not). */
    pn_status (*create_workload)(struct pn_workload_factory* factory, const pn_layer* layer,
                                 pn_workload** workload_out, pn_string_out* message_out);
} pn_workload_factory;

/* ===========================================================================
 * Backend context (optional)
 * ======================================================================== */

/* Created once per runtime, destroyed when the runtime closes. Notified around
 * each load and unload of a network by that runtime; an error from
 * before_load_network aborts that load (unload always completes). When a load
 * fails after a context's before_load_network succeeded, that context hears
 * after_unload_network for the abandoned network id. */
typedef struct pn_backend_context {
    uint32_t struct_size;
    void* self;
    void (*destroy)(struct pn_backend_context* context);
    pn_status (*before_load_network)(struct pn_backend_context* context, uint64_t network_id,
                                     pn_string_out* message_out);
    pn_status (*after_load_network)(struct pn_backend_context* context, uint64_t network_id,
                                    pn_string_out* message_out);
    pn_status (*before_unload_network)(struct pn_backend_context* context, uint64_t network_id,
                                       pn_string_out* message_out);
    pn_status (*after_unload_network)(struct pn_backend_context* context, uint64_t network_id,
                                      pn_string_out* message_out);
} pn_backend_context;

/* ===========================================================================
 * The backend object
 * ======================================================================== */

/* Flags of pn_backend.flags. */
#define PN_BACKEND_HOST_MEMORY 0x1u /* tensors are plain host memory: the runtime may
                                       hand the same buffer to this backend and to any
                                       other host-memory backend without a copy */
/* Since 1.1, with PN_BACKEND_HOST_MEMORY: the backend's CONCAT, SPLIT and SLICE workloads
 * leave a part that already is at its place where it is: a CONCAT input whose data is its block
 * of the output, a SPLIT or SLICE output whose data is its block of the input (the same
 * address). They never copy a tensor onto itself. The runtime plans such views when the part
 * is one contiguous block of the whole (a CONCAT or SPLIT with only 1s before the axis, a SLICE
 * whose box is one run of the input) and lets the producers of CONCAT inputs write into the
 * output and the readers of SLICE/SPLIT outputs read the input. Without the flag, every tensor
 * has a buffer of its own, disjoint from every other live one. */
#define PN_BACKEND_MOVES_IN_PLACE 0x2u

/* ---- Option descriptions (since 1.2) -----------------------------------------
 * What a backend tells about one of its options (pn_backend.list_options). Values are
 * strings whatever the type; the type says which strings set_option accepts. */
typedef enum pn_option_type {
    PN_OPTION_TYPE_INVALID = 0,
    PN_OPTION_TYPE_STRING = 1, /* text; the help names the values it accepts, if only some */
    PN_OPTION_TYPE_INT = 2,    /* a decimal integer (the help gives its range) */
    PN_OPTION_TYPE_BOOL = 3,   /* "1" or "0" */
    PN_OPTION_TYPE_FLOAT = 4   /* a decimal number */
} pn_option_type;

/* The option can be read (get_option) but not set: set_option fails with
 * PN_ERR_INVALID_ARGUMENT (a counter or a fact the backend reports). */
#define PN_OPTION_READ_ONLY 1

typedef struct pn_option_info {
    uint32_t struct_size;
    uint32_t flags;            /* PN_OPTION_READ_ONLY */
    const char* name;          /* the key, as set_option and get_option take it */
    pn_option_type type;
    const char* default_value; /* what get_option gives on a backend object no set_option has
                                  changed (it may depend on the machine: a CPU count) */
    const char* help;          /* one line a person reads: what it does, its values */
} pn_option_info;

/* What BackendFactory returns: one backend instance, created per runtime.
 * The runtime calls set_option for each user option, then uses the other
 * functions, and finally destroy(), after destroying every object the
 * backend created. Required: destroy, is_layer_supported,
 * create_workload_factory (the runtime rejects a plugin whose struct_size does
 * not cover them). Optional: any other pointer may be NULL. */
typedef struct pn_backend {
    uint32_t struct_size;
    uint32_t flags;               /* PN_BACKEND_* */
    void* self;
    void (*destroy)(struct pn_backend* backend);
    /* yes/no plus a reason: *supported_out = 1, or 0 with a reason a person can
     * read in reason_out ("float16 is not supported"). A non-OK status means
     * the query itself failed, not that the layer is unsupported. */
    pn_status (*is_layer_supported)(struct pn_backend* backend, const pn_layer* layer,
                                    pn_bool* supported_out, pn_string_out* reason_out);
    /* A new factory. `memory_manager` is this backend's, from
     * create_memory_manager, or NULL; it outlives the factory and its workloads. */
    pn_status (*create_workload_factory)(struct pn_backend* backend,
                                         pn_memory_manager* memory_manager,
                                         pn_workload_factory** factory_out,
                                         pn_string_out* message_out);
    pn_status (*create_memory_manager)(struct pn_backend* backend,
                                       pn_memory_manager** memory_manager_out,
                                       pn_string_out* message_out);
    pn_status (*create_context)(struct pn_backend* backend, pn_backend_context** context_out,
                                pn_string_out* message_out);
    /* Fuse, substitute or refuse layers of `subgraph` (see pn_optimization). */
    pn_status (*optimize_subgraph)(struct pn_backend* backend, const pn_subgraph* subgraph,
                                   pn_optimization** optimization_out,
                                   pn_string_out* message_out);
    void (*release_optimization)(struct pn_backend* backend, pn_optimization* optimization);
    /* Options are strings; an unknown key is PN_ERR_NOT_FOUND, a bad value
     * PN_ERR_INVALID_ARGUMENT. The runtime calls it for every user option before
     * any other function but destroy; it may call it again later, between other
     * calls (an option then applies to objects created afterwards, unless the
     * backend documents otherwise). */
    pn_status (*set_option)(struct pn_backend* backend, const char* key, const char* value,
                            pn_string_out* message_out);
    /* The effective value of an option (given or default) into value_out. */
    pn_status (*get_option)(struct pn_backend* backend, const char* key, pn_string_out* value_out,
                            pn_string_out* message_out);
    /* since 1.2, optional (NULL, or past the struct_size of a 1.0 / 1.1 plugin: the backend
     * does not describe its options). The options set_option and get_option take:
     * *options_out points at *count_out pointers to descriptions (count 0: none, and the
     * array may be NULL), each a
     * pn_option_info whose struct_size its writer set. The array, the descriptions and their
     * strings belong to the backend and stay valid and unchanged until destroy; set_option
     * does not change them. A backend that takes one of the reserved common keys (PN_OPTION_*
     * below the ABI block) lists it under that name with the meaning given there. */
    pn_status (*list_options)(struct pn_backend* backend, const pn_option_info* const** options_out,
                              uint32_t* count_out, pn_string_out* message_out);
} pn_backend;

/* PLUGNN_CDEF_END */

/* ===========================================================================
 * Reserved option keys (since 1.2)
 *
 * Keys whose meaning is common to every backend, so that a tool can set them without
 * knowing the backend. A backend need not take them; one that takes such an option uses
 * this key for it, with this meaning, and lists it in list_options. (Outside the ABI block:
 * cffi reads no string constants; plugnn's Python reads them from this header too.)
 * ======================================================================== */

/* The threads one backend object runs its workloads on: a decimal integer >= 1 (type INT);
 * applies to workload factories created afterwards. */
#define PN_OPTION_NUM_THREADS "num_threads"

/* ===========================================================================
 * Entry points
 *
 * A plugin exports exactly these three functions with C linkage (use
 * PLUGNN_BACKEND_EXPORT; plugnn_add_backend() hides every other symbol).
 *
 *   GetBackendId   the backend id: 1..PN_MAX_BACKEND_ID_LENGTH characters of
 *                  [A-Za-z0-9_], not starting with a digit, and not one of the
 *                  ids the runtime reserves for itself ("Host", "Runtime",
 *                  "Unknown", in any case). The string is static: it lives as
 *                  long as the library is loaded.
 *   GetVersion     the backend API version the plugin was built with; pass
 *                  PLUGNN_BACKEND_API_VERSION_MAJOR/_MINOR.
 *   BackendFactory a new pn_backend (as void*), owned by the caller, who
 *                  releases it with its destroy(); NULL on failure. Called once
 *                  per runtime; instances must be independent.
 * ======================================================================== */

#if defined(_WIN32)
#define PLUGNN_BACKEND_EXPORT __declspec(dllexport)
#else
#define PLUGNN_BACKEND_EXPORT __attribute__((visibility("default")))
#endif

PLUGNN_BACKEND_EXPORT const char* GetBackendId(void);
PLUGNN_BACKEND_EXPORT void GetVersion(uint32_t* major_out, uint32_t* minor_out);
PLUGNN_BACKEND_EXPORT void* BackendFactory(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PLUGNN_BACKEND_API_H */
