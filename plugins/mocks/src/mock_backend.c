/*
 * One parametrized mock backend, compiled once per mock by plugins/mocks/CMakeLists.txt.
 * Each mock differs from a valid plugin in exactly one way, chosen by compile
 * definitions:
 *
 *   MOCK_NAME="valid"            the mock's directory name; get_option("which") returns it
 *   MOCK_TAG="MockValid"         prefix of every message the mock writes
 *   MOCK_ID="MockValid"          what GetBackendId returns (MOCK_ID_NULL: NULL;
 *                                MOCK_ID_EMPTY: "")
 *   MOCK_MAJOR=1, MOCK_MINOR=0   what GetVersion reports (default: this header's version)
 *   MOCK_OMIT_GETBACKENDID, MOCK_OMIT_GETVERSION, MOCK_OMIT_BACKENDFACTORY
 *                                leave that entry point out of the library
 *   MOCK_FACTORY_NULL            BackendFactory returns NULL
 *   MOCK_STRUCT_ENDS_BEFORE=<field>  pn_backend.struct_size = offsetof(pn_backend, <field>)
 *   MOCK_STRUCT_SIZE=<expr>      pn_backend.struct_size written (default sizeof(pn_backend));
 *                                every function pointer at or past it is set to a trap
 *                                that fails with "...lies past struct_size..." so a runtime
 *                                that calls it is caught
 *   MOCK_MINIMAL                 only destroy, is_layer_supported (refuses every layer)
 *                                and create_workload_factory (refuses every workload), from
 *                                the plugin skeleton with no kinds
 *   MOCK_DEPENDENCY              BackendFactory calls mock_dep_value() from libmock_dep.so
 *   MOCK_CRASH_HOW=<n>, MOCK_CRASH_IN_<step>
 *                                the plugin dies in <step> (CONSTRUCTOR: a library
 *                                constructor, run by dlopen; GETBACKENDID, GETVERSION,
 *                                BACKENDFACTORY; DESTROY: pn_backend.destroy; EXECUTE: the RELU
 *                                kernel, on a tensor of exactly 17 elements): n = 1 a NULL
 *                                dereference (SIGSEGV), 2 abort(), 3 exit(3), 4 it hangs
 *                                (sleeps forever)
 *   MOCK_LEAK                    every backend leaks 64 bytes (BackendFactory allocates them and
 *                                nothing frees them): plugnn check-backend's growth check finds it
 *   MOCK_FAULT_BY_NAME           the RELU kernel dies the way its layer's name says, for the
 *                                isolation tests (a layer named without one runs normally):
 *                                "fault_segv" a NULL store (SIGSEGV), "fault_abort" abort(),
 *                                "fault_fpe" an integer division by zero (SIGFPE),
 *                                "fault_stack" unbounded recursion (a stack overflow: SIGSEGV),
 *                                "fault_exit" exit(7), "fault_overrun" writes 256 MiB past the
 *                                end of its output, "fault_hang" spins forever (no syscall, so no
 *                                signal but SIGKILL ends it), "fault_status" fails with
 *                                PN_ERR_INTERNAL (a failure the backend reports); an ADD
 *                                named "fault_write_input" writes into its second input
 *   MOCK_WRONG_KERNEL            the RELU kernel forgets the last element of a tensor of
 *                                more than 8 elements (it copies x): a tail-loop bug that
 *                                only comparing with CpuRef finds
 *
 * Without MOCK_MINIMAL the backend is complete (see README.md): options "events",
 * "fail", "num_threads", "which"; ACTIVATION RELU, ELEMENTWISE_BINARY ADD and
 * CONVOLUTION_2D NCHW float32 kernels, judged and built through the plugin
 * skeleton (pn_plugin.h); conv+relu fusion in optimize_subgraph;
 * a memory manager; a backend context. Every call (but get_option) is appended to
 * an event log kept in the backend instance. Nothing is printed; no global state.
 */
#ifdef MOCK_CRASH_HOW
#define _POSIX_C_SOURCE 200809L /* sleep() */
#endif
#include "plugnn/plugin_common.h"
#include "plugnn/pn_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MOCK_NAME
#define MOCK_NAME "mock"
#endif
#ifndef MOCK_TAG
#define MOCK_TAG "Mock"
#endif
#if defined(MOCK_ID_EMPTY) && !defined(MOCK_ID)
#define MOCK_ID ""
#endif
#if !defined(MOCK_ID) && !defined(MOCK_ID_NULL)
#define MOCK_ID "MockValid"
#endif
#if defined(MOCK_STRUCT_ENDS_BEFORE) && !defined(MOCK_STRUCT_SIZE)
#define MOCK_STRUCT_SIZE offsetof(pn_backend, MOCK_STRUCT_ENDS_BEFORE)
#endif
#ifndef MOCK_MAJOR
#define MOCK_MAJOR PLUGNN_BACKEND_API_VERSION_MAJOR
#endif
#ifndef MOCK_MINOR
#define MOCK_MINOR PLUGNN_BACKEND_API_VERSION_MINOR
#endif

/* Not static, so a mock that omits BackendFactory (or whose factory returns NULL)
 * still compiles warning-free; the version script hides it anyway. */
pn_backend* mock_new_backend(void);

#ifdef MOCK_CRASH_HOW
#include <unistd.h>

/* Dies the way MOCK_CRASH_HOW says. The NULL pointer is read through a volatile
 * object, so the compiler cannot see it is NULL and must emit the real access; in a
 * sanitized build UBSan must not turn that access into a report and an exit of its own. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((no_sanitize("undefined")))
#endif
static void mock_crash(void) {
#if MOCK_CRASH_HOW == 1
    volatile int* volatile pointer = NULL;
    *pointer = 1;
#elif MOCK_CRASH_HOW == 2
    abort();
#elif MOCK_CRASH_HOW == 3
    exit(3);
#elif MOCK_CRASH_HOW == 4
    for (;;) {
        sleep(1);
    }
#else
#error "MOCK_CRASH_HOW must be 1 (SIGSEGV), 2 (abort), 3 (exit(3)) or 4 (hang)"
#endif
}
#define MOCK_CRASH_POINT(step) mock_crash_at_##step()
#define mock_crash_at_CONSTRUCTOR() ((void)0)
#define mock_crash_at_GETBACKENDID() ((void)0)
#define mock_crash_at_GETVERSION() ((void)0)
#define mock_crash_at_BACKENDFACTORY() ((void)0)
#define mock_crash_at_DESTROY() ((void)0)
#define mock_crash_at_EXECUTE() ((void)0)
#if defined(MOCK_CRASH_IN_CONSTRUCTOR)
#undef mock_crash_at_CONSTRUCTOR
#define mock_crash_at_CONSTRUCTOR() mock_crash()
/* Runs when the library is loaded, before dlopen returns. */
__attribute__((constructor)) static void mock_constructor(void) { MOCK_CRASH_POINT(CONSTRUCTOR); }
#elif defined(MOCK_CRASH_IN_GETBACKENDID)
#undef mock_crash_at_GETBACKENDID
#define mock_crash_at_GETBACKENDID() mock_crash()
#elif defined(MOCK_CRASH_IN_GETVERSION)
#undef mock_crash_at_GETVERSION
#define mock_crash_at_GETVERSION() mock_crash()
#elif defined(MOCK_CRASH_IN_BACKENDFACTORY)
#undef mock_crash_at_BACKENDFACTORY
#define mock_crash_at_BACKENDFACTORY() mock_crash()
#elif defined(MOCK_CRASH_IN_DESTROY)
#undef mock_crash_at_DESTROY
#define mock_crash_at_DESTROY() mock_crash()
#elif defined(MOCK_CRASH_IN_EXECUTE)
#undef mock_crash_at_EXECUTE
#define mock_crash_at_EXECUTE() mock_crash()
#else
#error "MOCK_CRASH_HOW needs one MOCK_CRASH_IN_<step>"
#endif
#else
#define MOCK_CRASH_POINT(step) ((void)0)
#endif

#ifdef MOCK_FAULT_BY_NAME
#include <signal.h>

/* Not static, so the compiler must keep every store and the recursion (the version script
 * hides them). */
volatile int mock_fault_divisor;
volatile unsigned char mock_fault_sink;
volatile unsigned mock_fault_depth_limit = 0xffffffffu; /* never reached: the stack ends first */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline, no_sanitize("undefined")))
#endif
unsigned mock_fault_recurse(unsigned depth) {
    volatile unsigned char frame[4096];
    if (depth >= mock_fault_depth_limit) {
        return 0;
    }
    frame[depth % sizeof(frame)] = (unsigned char)depth;
    return mock_fault_recurse(depth + 1) + frame[(depth * 7) % sizeof(frame)];
}

/* Dies (or fails) as `name` says; returns PN_OK when it names no fault. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((no_sanitize("undefined", "address")))
#endif
static pn_status mock_fault_by_name(const char* name, float* y, int64_t count,
                                    pn_string_out* message_out) {
    if (strstr(name, "fault_segv") != NULL) {
        volatile int* volatile pointer = NULL;
        *pointer = 1;
    } else if (strstr(name, "fault_abort") != NULL) {
        abort();
    } else if (strstr(name, "fault_fpe") != NULL) {
        mock_fault_divisor = 0;
        mock_fault_sink = (unsigned char)(1 / mock_fault_divisor);
        raise(SIGFPE); /* where integer division by zero does not trap */
    } else if (strstr(name, "fault_stack") != NULL) {
        mock_fault_sink = (unsigned char)mock_fault_recurse(0);
    } else if (strstr(name, "fault_exit") != NULL) {
        exit(7);
    } else if (strstr(name, "fault_overrun") != NULL) {
        volatile unsigned char* end = (volatile unsigned char*)(y + count);
        for (size_t i = 0; i < ((size_t)256 << 20); i += 64) {
            end[i] = 0x7f;
        }
    } else if (strstr(name, "fault_hang") != NULL) {
        for (;;) {
            mock_fault_sink++;
        }
    } else if (strstr(name, "fault_status") != NULL) {
        return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TAG ": '%s' failed as asked", name);
    }
    return PN_OK;
}
#endif

#ifdef MOCK_LEAK
/* Not static, so the compiler must keep every store (the version script hides it). */
void* mock_leaked_block;
#endif

#ifdef MOCK_DEPENDENCY
/* Defined in libmock_dep.so (src/dep.c), which the tests never ship. */
extern int mock_dep_value(void);
#endif

#ifndef MOCK_MINIMAL
/* ===========================================================================
 * Complete backend
 * ======================================================================== */

#define MOCK_FAIL_NAME_MAX 32

typedef struct mock_backend {
    pn_backend base;
    char* log;          /* comma-separated events, NUL-terminated (NULL while empty) */
    size_t log_len;
    size_t log_cap;
    char fail[MOCK_FAIL_NAME_MAX]; /* function whose next call fails, "" for none */
    uint32_t num_threads;
} mock_backend;

/* Functions the "fail" option may name: every logged function returning pn_status. */
static const char* const failable_functions[] = {
    "set_option", "is_layer_supported", "create_workload_factory", "create_memory_manager",
    "create_context", "optimize_subgraph", "before_load_network", "after_load_network",
    "before_unload_network", "after_unload_network", "acquire", "release", "allocate",
    "copy_from_host", "copy_to_host", "create_workload", "execute"};

static mock_backend* as_mock(pn_backend* backend) { return (mock_backend*)backend->self; }

/* Appends "event" or "event:arg" to the log. Out of memory: the event is dropped. */
static void log_event(mock_backend* b, const char* event, const char* arg) {
    size_t need = strlen(event) + (arg != NULL ? 1 + strlen(arg) : 0) + 1 /* comma */ + 1;
    if (b->log_len + need > b->log_cap) {
        size_t cap = b->log_cap != 0 ? b->log_cap : 256;
        while (b->log_len + need > cap) {
            cap *= 2;
        }
        char* grown = (char*)realloc(b->log, cap);
        if (grown == NULL) {
            return;
        }
        b->log = grown;
        b->log_cap = cap;
    }
    int n = snprintf(b->log + b->log_len, b->log_cap - b->log_len, "%s%s%s%s",
                     b->log_len != 0 ? "," : "", event, arg != NULL ? ":" : "",
                     arg != NULL ? arg : "");
    if (n > 0) {
        b->log_len += (size_t)n;
    }
}

static void log_event_u64(mock_backend* b, const char* event, uint64_t value) {
    char text[24];
    snprintf(text, sizeof(text), "%llu", (unsigned long long)value);
    log_event(b, event, text);
}

/* 1 (and the request is cleared) when `fn` is the function the "fail" option names. */
static int take_failure(mock_backend* b, const char* fn) {
    if (b->fail[0] != '\0' && strcmp(b->fail, fn) == 0) {
        b->fail[0] = '\0';
        return 1;
    }
    return 0;
}

#define MOCK_INJECT(b, fn, message_out)                                                     \
    do {                                                                                    \
        if (take_failure((b), (fn))) {                                                      \
            return pn_fail((message_out), PN_ERR_INTERNAL,                                  \
                           MOCK_TAG ": injected failure in %s (option fail=%s)", (fn), (fn)); \
        }                                                                                   \
    } while (0)

static const char* layer_name(const pn_layer* layer) {
    return layer != NULL && layer->name != NULL ? layer->name : "?";
}

/* ---- Layer support: the mock's own limits (pn_plugin_check_fn) -------------- */
/* The plugin skeleton (pn_plugin.h) runs each after the layer passed the shared checks of
 * its kind (counts, shapes, descriptor values), so only what the mock does not do is left. */

static int info_ok(const pn_tensor_info* info) { return PN_HAS_FIELD(info, pn_tensor_info, dims); }

/* The fused activation of a convolution descriptor, NULL when none. */
static const pn_activation_desc* conv_fused(const pn_convolution_2d_desc* d) {
    return PN_HAS_FIELD(d, pn_convolution_2d_desc, fused_activation) ? d->fused_activation : NULL;
}

static pn_status check_activation(const pn_plugin* plugin, const pn_layer* layer,
                                  pn_string_out* reason) {
    const pn_activation_desc* d = (const pn_activation_desc*)layer->descriptor;
    if (d->kind != PN_ACTIVATION_RELU) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s: only the RELU Activation is supported, not activation kind %d",
                       plugin->id, (int)d->kind);
    }
    return pn_plugin_check_dtype(plugin, layer, PN_DTYPE_FLOAT32, reason);
}

static pn_status check_binary(const pn_plugin* plugin, const pn_layer* layer,
                              pn_string_out* reason) {
    const pn_elementwise_binary_desc* d = (const pn_elementwise_binary_desc*)layer->descriptor;
    if (d->op != PN_BINARY_ADD) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s: only the ADD ElementwiseBinary is supported, not op %d", plugin->id,
                       (int)d->op);
    }
    if (d->fused_activation != NULL) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s: ElementwiseBinary ADD with a fused activation is not supported",
                       plugin->id);
    }
    if (!pn_same_dims(&layer->inputs[0], &layer->inputs[1])) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED,
                       "%s: ElementwiseBinary ADD needs identical input shapes (no broadcasting)",
                       plugin->id);
    }
    return pn_plugin_check_dtype(plugin, layer, PN_DTYPE_FLOAT32, reason);
}

static pn_status check_conv(const pn_plugin* plugin, const pn_layer* layer,
                            pn_string_out* reason) {
    const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)layer->descriptor;
    const pn_activation_desc* act = conv_fused(d);
    const char* refused = d->layout != PN_LAYOUT_NCHW ? "supports the NCHW layout only"
                          : d->groups != 1            ? "supports groups=1 only"
                          : (d->flags & PN_LAYER_FLAG_HAS_ADDEND) != 0
                              ? "with an addend is not supported"
                          : act != NULL && act->kind != PN_ACTIVATION_RELU
                              ? "supports only a fused RELU activation"
                              : NULL;
    if (refused != NULL) {
        return pn_fail(reason, PN_ERR_UNSUPPORTED, "%s: Convolution2d %s", plugin->id, refused);
    }
    return pn_plugin_check_dtype(plugin, layer, PN_DTYPE_FLOAT32, reason);
}

/* ---- Workloads ------------------------------------------------------------ */

typedef struct mock_workload {
    mock_backend* backend;
    char* name;
    pn_layer_kind kind;
    int64_t count;                   /* elements of input 0 (activation, add) */
    uint32_t num_inputs;
    /* Convolution2d */
    int64_t n, c, h, w, o, kh, kw, oh, ow;
    uint32_t sh, sw, pt, pl, dh, dw;
    int has_bias;
    int relu;
} mock_workload;

static void workload_release(void* state) {
    mock_workload* s = (mock_workload*)state;
    log_event(s->backend, "destroy_workload", s->name);
    free(s->name);
    free(s);
}

static void run_conv(const mock_workload* s, const float* x, const float* wt, const float* bias,
                     float* y) {
    for (int64_t n = 0; n < s->n; ++n) {
        for (int64_t o = 0; o < s->o; ++o) {
            for (int64_t oy = 0; oy < s->oh; ++oy) {
                for (int64_t ox = 0; ox < s->ow; ++ox) {
                    float acc = bias != NULL ? bias[o] : 0.0f;
                    for (int64_t c = 0; c < s->c; ++c) {
                        for (int64_t ky = 0; ky < s->kh; ++ky) {
                            int64_t iy = oy * s->sh - s->pt + ky * s->dh;
                            if (iy < 0 || iy >= s->h) {
                                continue;
                            }
                            for (int64_t kx = 0; kx < s->kw; ++kx) {
                                int64_t ix = ox * s->sw - s->pl + kx * s->dw;
                                if (ix < 0 || ix >= s->w) {
                                    continue;
                                }
                                acc += x[((n * s->c + c) * s->h + iy) * s->w + ix] *
                                       wt[((o * s->c + c) * s->kh + ky) * s->kw + kx];
                            }
                        }
                    }
                    if (s->relu && acc < 0.0f) {
                        acc = 0.0f;
                    }
                    y[((n * s->o + o) * s->oh + oy) * s->ow + ox] = acc;
                }
            }
        }
    }
}

static pn_status workload_execute(void* state, const pn_execute_args* args,
                                  pn_string_out* message_out) {
    mock_workload* s = (mock_workload*)state;
    log_event(s->backend, "execute", s->name);
    MOCK_INJECT(s->backend, "execute", message_out);
    if (args == NULL || args->num_inputs != s->num_inputs || args->num_outputs != 1 ||
        args->inputs == NULL || args->outputs == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       MOCK_TAG ": execute of '%s' needs %u inputs and 1 output", s->name,
                       s->num_inputs);
    }
    for (uint32_t i = 0; i < args->num_inputs; ++i) {
        if (args->inputs[i].data == NULL) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           MOCK_TAG ": execute of '%s': input %u has no data", s->name, i);
        }
    }
    if (args->outputs[0].data == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       MOCK_TAG ": execute of '%s': the output has no data", s->name);
    }
    const pn_tensor_info* in_info = args->inputs[0].info;
    if (s->kind != PN_LAYER_CONVOLUTION_2D && info_ok(in_info) &&
        pn_num_elements(in_info) != s->count) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       MOCK_TAG ": execute of '%s': input has %lld elements, expected %lld",
                       s->name, (long long)pn_num_elements(in_info), (long long)s->count);
    }
    float* y = (float*)args->outputs[0].data;
    switch (s->kind) {
    case PN_LAYER_ACTIVATION: {
        const float* x = (const float*)args->inputs[0].data;
        if (s->count == 17) {
            MOCK_CRASH_POINT(EXECUTE);
        }
#ifdef MOCK_FAULT_BY_NAME
        {
            pn_status fault = mock_fault_by_name(s->name, y, s->count, message_out);
            if (fault != PN_OK) {
                return fault;
            }
        }
#endif
        for (int64_t i = 0; i < s->count; ++i) {
            y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        }
#ifdef MOCK_WRONG_KERNEL
        if (s->count > 8) {
            y[s->count - 1] = x[s->count - 1]; /* the deliberate bug: the tail is not rectified */
        }
#endif
        break;
    }
    case PN_LAYER_ELEMENTWISE_BINARY: {
        const float* a = (const float*)args->inputs[0].data;
        const float* b = (const float*)args->inputs[1].data;
#ifdef MOCK_FAULT_BY_NAME
        if (strstr(s->name, "fault_write_input") != NULL) {
            ((float*)args->inputs[1].data)[0] = 42.0f; /* the bug: it writes into its input b */
        }
#endif
        for (int64_t i = 0; i < s->count; ++i) {
            y[i] = a[i] + b[i];
        }
        break;
    }
    case PN_LAYER_CONVOLUTION_2D:
        run_conv(s, (const float*)args->inputs[0].data, (const float*)args->inputs[1].data,
                 s->has_bias ? (const float*)args->inputs[2].data : NULL, y);
        break;
    default:
        return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TAG ": workload of unknown kind");
    }
    return PN_OK;
}

static char* copy_string(const char* text) {
    size_t n = strlen(text) + 1;
    char* copy = (char*)malloc(n);
    if (copy != NULL) {
        memcpy(copy, text, n);
    }
    return copy;
}

/* ---- Workload factory ------------------------------------------------------- */

typedef struct mock_factory {
    pn_workload_factory base;
    mock_backend* backend;
    pn_memory_manager* memory_manager;
} mock_factory;

static void factory_destroy(pn_workload_factory* factory) {
    mock_factory* f = (mock_factory*)factory->self;
    log_event(f->backend, "destroy_workload_factory", NULL);
    free(f);
}

/* pn_plugin_create_fn of every kind the mock runs: context is the backend. */
static pn_status create_workload(void* context, const pn_layer* layer,
                                 pn_workload** workload_out, pn_string_out* message_out) {
    mock_workload* s = (mock_workload*)calloc(1, sizeof(*s));
    char* name = copy_string(layer_name(layer));
    if (s == NULL || name == NULL) {
        free(s);
        free(name);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, MOCK_TAG ": out of memory");
    }
    s->backend = (mock_backend*)context;
    s->name = name;
    s->kind = layer->kind;
    s->num_inputs = layer->num_inputs;
    s->count = pn_num_elements(&layer->inputs[0]);
    if (layer->kind == PN_LAYER_CONVOLUTION_2D) {
        const pn_convolution_2d_desc* d = (const pn_convolution_2d_desc*)layer->descriptor;
        const pn_tensor_info* x = &layer->inputs[0];
        const pn_tensor_info* w = &layer->inputs[1];
        const pn_tensor_info* y = &layer->outputs[0];
        s->n = x->dims[0];
        s->c = x->dims[1];
        s->h = x->dims[2];
        s->w = x->dims[3];
        s->o = w->dims[0];
        s->kh = w->dims[2];
        s->kw = w->dims[3];
        s->oh = y->dims[2];
        s->ow = y->dims[3];
        s->sh = d->stride_h;
        s->sw = d->stride_w;
        s->pt = d->pad_top;
        s->pl = d->pad_left;
        s->dh = d->dilation_h;
        s->dw = d->dilation_w;
        s->has_bias = (d->flags & PN_LAYER_FLAG_HAS_BIAS) != 0;
        s->relu = conv_fused(d) != NULL;
    }
    pn_workload* workload = pn_workload_new(s, workload_execute, workload_release, 0);
    if (workload == NULL) {
        /* pn_workload_new released the state (and logged destroy_workload). */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, MOCK_TAG ": out of memory");
    }
    *workload_out = workload;
    return PN_OK;
}

/* What the mock runs, for the plugin skeleton. */
static const pn_plugin_kind kinds[] = {
    {PN_LAYER_ACTIVATION, check_activation, create_workload},
    {PN_LAYER_ELEMENTWISE_BINARY, check_binary, create_workload},
    {PN_LAYER_CONVOLUTION_2D, check_conv, create_workload},
};
static const pn_plugin plugin = {MOCK_TAG, kinds, sizeof(kinds) / sizeof(kinds[0]), NULL, 0, NULL};

/* Logged (and failed on request) before the skeleton judges and builds the workload. */
static pn_status factory_create_workload(pn_workload_factory* factory, const pn_layer* layer,
                                         pn_workload** workload_out, pn_string_out* message_out) {
    mock_factory* f = (mock_factory*)factory->self;
    log_event(f->backend, "create_workload", layer_name(layer));
    MOCK_INJECT(f->backend, "create_workload", message_out);
    return pn_plugin_create_workload(&plugin, f->backend, layer, workload_out, message_out);
}

static pn_status backend_create_workload_factory(pn_backend* backend, pn_memory_manager* mm,
                                                 pn_workload_factory** factory_out,
                                                 pn_string_out* message_out) {
    mock_backend* b = as_mock(backend);
    log_event(b, "create_workload_factory", NULL);
    MOCK_INJECT(b, "create_workload_factory", message_out);
    if (factory_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, MOCK_TAG ": factory_out is NULL");
    }
    mock_factory* f = (mock_factory*)calloc(1, sizeof(*f));
    if (f == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, MOCK_TAG ": out of memory");
    }
    f->base.struct_size = (uint32_t)sizeof(pn_workload_factory);
    f->base.self = f;
    f->base.destroy = factory_destroy;
    f->base.create_workload = factory_create_workload;
    f->backend = b;
    f->memory_manager = mm;
    *factory_out = &f->base;
    return PN_OK;
}

/* ---- Memory manager --------------------------------------------------------- */

typedef struct mock_memory_manager {
    pn_memory_manager base;
    mock_backend* backend;
    uint32_t acquired; /* acquire() calls not yet matched by release() */
} mock_memory_manager;

static mock_memory_manager* as_mm(pn_memory_manager* mm) { return (mock_memory_manager*)mm->self; }

static void mm_destroy(pn_memory_manager* mm) {
    mock_memory_manager* m = as_mm(mm);
    log_event(m->backend, "destroy_memory_manager", NULL);
    free(m);
}

static pn_status mm_acquire(pn_memory_manager* mm, pn_string_out* message_out) {
    mock_memory_manager* m = as_mm(mm);
    log_event(m->backend, "acquire", NULL);
    MOCK_INJECT(m->backend, "acquire", message_out);
    m->acquired++;
    return PN_OK;
}

static pn_status mm_release(pn_memory_manager* mm, pn_string_out* message_out) {
    mock_memory_manager* m = as_mm(mm);
    log_event(m->backend, "release", NULL);
    MOCK_INJECT(m->backend, "release", message_out);
    if (m->acquired == 0) {
        return pn_fail(message_out, PN_ERR_INVALID_STATE,
                       MOCK_TAG ": release without a matching acquire");
    }
    m->acquired--;
    return PN_OK;
}

static pn_status mm_allocate(pn_memory_manager* mm, size_t bytes, void** handle_out,
                             pn_string_out* message_out) {
    mock_memory_manager* m = as_mm(mm);
    log_event(m->backend, "allocate", NULL);
    MOCK_INJECT(m->backend, "allocate", message_out);
    if (handle_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, MOCK_TAG ": handle_out is NULL");
    }
    *handle_out = malloc(bytes != 0 ? bytes : 1);
    if (*handle_out == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY,
                       MOCK_TAG ": out of memory allocating %zu bytes", bytes);
    }
    return PN_OK;
}

static void mm_free(pn_memory_manager* mm, void* handle) {
    mock_memory_manager* m = as_mm(mm);
    log_event(m->backend, "free", NULL);
    free(handle);
}

static pn_status mm_copy_from_host(pn_memory_manager* mm, void* dst_handle, const void* src,
                                   size_t bytes, pn_string_out* message_out) {
    mock_memory_manager* m = as_mm(mm);
    log_event(m->backend, "copy_from_host", NULL);
    MOCK_INJECT(m->backend, "copy_from_host", message_out);
    if (bytes != 0 && (dst_handle == NULL || src == NULL)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, MOCK_TAG ": copy_from_host with NULL");
    }
    if (bytes != 0) {
        memcpy(dst_handle, src, bytes);
    }
    return PN_OK;
}

static pn_status mm_copy_to_host(pn_memory_manager* mm, void* dst, const void* src_handle,
                                 size_t bytes, pn_string_out* message_out) {
    mock_memory_manager* m = as_mm(mm);
    log_event(m->backend, "copy_to_host", NULL);
    MOCK_INJECT(m->backend, "copy_to_host", message_out);
    if (bytes != 0 && (dst == NULL || src_handle == NULL)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, MOCK_TAG ": copy_to_host with NULL");
    }
    if (bytes != 0) {
        memcpy(dst, src_handle, bytes);
    }
    return PN_OK;
}

static pn_status backend_create_memory_manager(pn_backend* backend, pn_memory_manager** mm_out,
                                               pn_string_out* message_out) {
    mock_backend* b = as_mock(backend);
    log_event(b, "create_memory_manager", NULL);
    MOCK_INJECT(b, "create_memory_manager", message_out);
    if (mm_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       MOCK_TAG ": memory_manager_out is NULL");
    }
    mock_memory_manager* m = (mock_memory_manager*)calloc(1, sizeof(*m));
    if (m == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, MOCK_TAG ": out of memory");
    }
    m->base.struct_size = (uint32_t)sizeof(pn_memory_manager);
    m->base.self = m;
    m->base.destroy = mm_destroy;
    m->base.acquire = mm_acquire;
    m->base.release = mm_release;
    m->base.allocate = mm_allocate;
    m->base.free = mm_free;
    m->base.copy_from_host = mm_copy_from_host;
    m->base.copy_to_host = mm_copy_to_host;
    m->backend = b;
    *mm_out = &m->base;
    return PN_OK;
}

/* ---- Backend context -------------------------------------------------------- */

typedef struct mock_context {
    pn_backend_context base;
    mock_backend* backend;
} mock_context;

static mock_backend* context_backend(pn_backend_context* context) {
    return ((mock_context*)context->self)->backend;
}

static void context_destroy(pn_backend_context* context) {
    mock_context* c = (mock_context*)context->self;
    log_event(c->backend, "destroy_context", NULL);
    free(c);
}

#define MOCK_NOTIFICATION(fn)                                                                \
    static pn_status context_##fn(pn_backend_context* context, uint64_t network_id,         \
                                  pn_string_out* message_out) {                             \
        mock_backend* b = context_backend(context);                                         \
        log_event_u64(b, #fn, network_id);                                                  \
        MOCK_INJECT(b, #fn, message_out);                                                   \
        return PN_OK;                                                                       \
    }
MOCK_NOTIFICATION(before_load_network)
MOCK_NOTIFICATION(after_load_network)
MOCK_NOTIFICATION(before_unload_network)
MOCK_NOTIFICATION(after_unload_network)
#undef MOCK_NOTIFICATION

static pn_status backend_create_context(pn_backend* backend, pn_backend_context** context_out,
                                        pn_string_out* message_out) {
    mock_backend* b = as_mock(backend);
    log_event(b, "create_context", NULL);
    MOCK_INJECT(b, "create_context", message_out);
    if (context_out == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, MOCK_TAG ": context_out is NULL");
    }
    mock_context* c = (mock_context*)calloc(1, sizeof(*c));
    if (c == NULL) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, MOCK_TAG ": out of memory");
    }
    c->base.struct_size = (uint32_t)sizeof(pn_backend_context);
    c->base.self = c;
    c->base.destroy = context_destroy;
    c->base.before_load_network = context_before_load_network;
    c->base.after_load_network = context_after_load_network;
    c->base.before_unload_network = context_before_unload_network;
    c->base.after_unload_network = context_after_unload_network;
    c->backend = b;
    *context_out = &c->base;
    return PN_OK;
}

/* ---- Subgraph optimization -------------------------------------------------- */

#define MOCK_REASON_MAX 256

/* Storage behind one conv+relu substitution. */
typedef struct mock_fusion {
    uint32_t replaced[2];
    pn_convolution_2d_desc desc;
    pn_activation_desc act;
    char* name;
    pn_tensor_info* inputs;
    uint32_t* input_ids;
    const void** constant_data;
    pn_tensor_info output;
    uint32_t output_id;
} mock_fusion;

typedef struct mock_optimization {
    pn_optimization base;        /* first: release_optimization casts back */
    pn_substitution* substitutions;
    mock_fusion* fusions;
    pn_failed_layer* failed;
    char (*reasons)[MOCK_REASON_MAX];
    uint32_t* untouched;
} mock_optimization;

static void free_optimization(mock_optimization* mo) {
    if (mo == NULL) {
        return;
    }
    if (mo->fusions != NULL) {
        for (uint32_t i = 0; i < mo->base.num_substitutions; ++i) {
            free(mo->fusions[i].name);
            free(mo->fusions[i].inputs);
            free(mo->fusions[i].input_ids);
            free((void*)mo->fusions[i].constant_data);
        }
    }
    free(mo->substitutions);
    free(mo->fusions);
    free(mo->failed);
    free(mo->reasons);
    free(mo->untouched);
    free(mo);
}

static int id_in(uint32_t id, const uint32_t* ids, uint32_t count) {
    for (uint32_t i = 0; ids != NULL && i < count; ++i) {
        if (ids[i] == id) {
            return 1;
        }
    }
    return 0;
}

/* The index of the RELU layer that is the only user of conv layer i's output, or -1. */
static int64_t fusable_relu(const pn_subgraph* sg, uint32_t i) {
    const pn_layer* conv = &sg->layers[i];
    if (conv->kind != PN_LAYER_CONVOLUTION_2D || conv->num_outputs != 1 ||
        conv->output_ids == NULL || pn_plugin_check_layer(&plugin, conv, NULL) != PN_OK ||
        conv_fused((const pn_convolution_2d_desc*)conv->descriptor) != NULL) {
        return -1;
    }
    uint32_t tensor = conv->output_ids[0];
    if (id_in(tensor, sg->output_ids, sg->num_output_ids)) {
        return -1; /* also used outside the subgraph */
    }
    int64_t user = -1;
    uint32_t uses = 0;
    for (uint32_t j = 0; j < sg->num_layers; ++j) {
        const pn_layer* l = &sg->layers[j];
        for (uint32_t k = 0; l->input_ids != NULL && k < l->num_inputs; ++k) {
            if (l->input_ids[k] == tensor) {
                uses++;
                user = (int64_t)j;
            }
        }
    }
    if (uses != 1) {
        return -1;
    }
    const pn_layer* relu = &sg->layers[user];
    if (relu->kind != PN_LAYER_ACTIVATION || relu->output_ids == NULL ||
        pn_plugin_check_layer(&plugin, relu, NULL) != PN_OK) {
        return -1;
    }
    return user;
}

static pn_status build_fusion(const pn_layer* conv, const pn_layer* relu, mock_fusion* fu,
                              pn_substitution* sub) {
    const pn_convolution_2d_desc* cd = (const pn_convolution_2d_desc*)conv->descriptor;
    const pn_activation_desc* ad = (const pn_activation_desc*)relu->descriptor;
    size_t n_in = conv->num_inputs;
    size_t name_len = strlen(layer_name(conv)) + 1 + strlen(layer_name(relu)) + 1;
    fu->name = (char*)malloc(name_len);
    fu->inputs = (pn_tensor_info*)malloc(n_in * sizeof(pn_tensor_info));
    fu->input_ids = (uint32_t*)malloc(n_in * sizeof(uint32_t));
    if (conv->constant_data != NULL) {
        fu->constant_data = (const void**)malloc(n_in * sizeof(void*));
    }
    if (fu->name == NULL || fu->inputs == NULL || fu->input_ids == NULL ||
        (conv->constant_data != NULL && fu->constant_data == NULL)) {
        return PN_ERR_OUT_OF_MEMORY;
    }
    snprintf(fu->name, name_len, "%s+%s", layer_name(conv), layer_name(relu));
    memcpy(fu->inputs, conv->inputs, n_in * sizeof(pn_tensor_info));
    memcpy(fu->input_ids, conv->input_ids, n_in * sizeof(uint32_t));
    if (fu->constant_data != NULL) {
        memcpy((void*)fu->constant_data, conv->constant_data, n_in * sizeof(void*));
    }
    size_t desc_bytes = cd->struct_size < sizeof(fu->desc) ? cd->struct_size : sizeof(fu->desc);
    memset(&fu->desc, 0, sizeof(fu->desc));
    memcpy(&fu->desc, cd, desc_bytes);
    fu->desc.struct_size = (uint32_t)sizeof(fu->desc);
    fu->act.struct_size = (uint32_t)sizeof(fu->act);
    fu->act.kind = PN_ACTIVATION_RELU;
    fu->act.alpha = PN_HAS_FIELD(ad, pn_activation_desc, alpha) ? ad->alpha : 0.0f;
    fu->act.beta = PN_HAS_FIELD(ad, pn_activation_desc, beta) ? ad->beta : 0.0f;
    fu->desc.fused_activation = &fu->act;
    fu->output = relu->outputs[0];
    fu->output_id = relu->output_ids[0];
    fu->replaced[0] = conv->id;
    fu->replaced[1] = relu->id;

    memset(sub, 0, sizeof(*sub));
    sub->struct_size = (uint32_t)sizeof(*sub);
    sub->num_replaced_layer_ids = 2;
    sub->replaced_layer_ids = fu->replaced;
    pn_layer* r = &sub->replacement;
    r->struct_size = (uint32_t)sizeof(*r);
    r->kind = PN_LAYER_CONVOLUTION_2D;
    r->name = fu->name;
    r->descriptor = &fu->desc;
    r->num_inputs = conv->num_inputs;
    r->inputs = fu->inputs;
    r->constant_data = fu->constant_data;
    r->num_outputs = 1;
    r->outputs = &fu->output;
    r->input_ids = fu->input_ids;
    r->output_ids = &fu->output_id;
    r->id = 0;
    return PN_OK;
}

static pn_status backend_optimize_subgraph(pn_backend* backend, const pn_subgraph* sg,
                                           pn_optimization** optimization_out,
                                           pn_string_out* message_out) {
    mock_backend* b = as_mock(backend);
    log_event(b, "optimize_subgraph", NULL);
    MOCK_INJECT(b, "optimize_subgraph", message_out);
    if (sg == NULL || optimization_out == NULL || (sg->num_layers != 0 && sg->layers == NULL)) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       MOCK_TAG ": optimize_subgraph needs a subgraph and optimization_out");
    }
    *optimization_out = NULL;
    uint32_t n = sg->num_layers;
    size_t slots = n != 0 ? n : 1;
    mock_optimization* mo = (mock_optimization*)calloc(1, sizeof(*mo));
    int64_t* partner = (int64_t*)malloc(slots * sizeof(int64_t)); /* conv -> relu index */
    unsigned char* absorbed = (unsigned char*)calloc(slots, 1);   /* relu fused into a conv */
    if (mo != NULL) {
        mo->substitutions = (pn_substitution*)calloc(slots, sizeof(pn_substitution));
        mo->fusions = (mock_fusion*)calloc(slots, sizeof(mock_fusion));
        mo->failed = (pn_failed_layer*)calloc(slots, sizeof(pn_failed_layer));
        mo->reasons = (char(*)[MOCK_REASON_MAX])calloc(slots, MOCK_REASON_MAX);
        mo->untouched = (uint32_t*)calloc(slots, sizeof(uint32_t));
    }
    if (mo == NULL || partner == NULL || absorbed == NULL || mo->substitutions == NULL ||
        mo->fusions == NULL || mo->failed == NULL || mo->reasons == NULL ||
        mo->untouched == NULL) {
        free(partner);
        free(absorbed);
        free_optimization(mo);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, MOCK_TAG ": out of memory");
    }
    mo->base.struct_size = (uint32_t)sizeof(pn_optimization);

    /* Pair each conv with the RELU that alone consumes its output. */
    for (uint32_t i = 0; i < n; ++i) {
        partner[i] = -1;
    }
    for (uint32_t i = 0; i < n; ++i) {
        int64_t j = fusable_relu(sg, i);
        if (j >= 0 && (uint32_t)j != i && !absorbed[j] && partner[j] < 0) {
            partner[i] = j;
            absorbed[j] = 1;
        }
    }

    pn_status status = PN_OK;
    for (uint32_t i = 0; i < n && status == PN_OK; ++i) {
        const pn_layer* layer = &sg->layers[i];
        if (absorbed[i]) {
            continue;
        }
        if (partner[i] >= 0) {
            uint32_t k = mo->base.num_substitutions;
            status = build_fusion(layer, &sg->layers[partner[i]], &mo->fusions[k],
                                  &mo->substitutions[k]);
            mo->base.num_substitutions = k + 1; /* counted even on failure, so it is freed */
            continue;
        }
        uint32_t f = mo->base.num_failed;
        pn_string_out reason = {mo->reasons[f], MOCK_REASON_MAX};
        if (pn_plugin_check_layer(&plugin, layer, &reason) != PN_OK) {
            mo->failed[f].struct_size = (uint32_t)sizeof(pn_failed_layer);
            mo->failed[f].layer_id = layer->id;
            mo->failed[f].reason = mo->reasons[f];
            mo->base.num_failed = f + 1;
            continue;
        }
        mo->untouched[mo->base.num_untouched++] = layer->id;
    }
    free(partner);
    free(absorbed);
    if (status != PN_OK) {
        free_optimization(mo);
        return pn_fail(message_out, status, MOCK_TAG ": out of memory");
    }
    mo->base.substitutions = mo->substitutions;
    mo->base.failed = mo->failed;
    mo->base.untouched_layer_ids = mo->untouched;
    *optimization_out = &mo->base;
    return PN_OK;
}

static void backend_release_optimization(pn_backend* backend, pn_optimization* optimization) {
    log_event(as_mock(backend), "release_optimization", NULL);
    free_optimization((mock_optimization*)optimization);
}

/* ---- Backend ---------------------------------------------------------------- */

static pn_status backend_is_layer_supported(pn_backend* backend, const pn_layer* layer,
                                            pn_bool* supported_out, pn_string_out* reason_out) {
    mock_backend* b = as_mock(backend);
    log_event(b, "is_layer_supported", layer_name(layer));
    MOCK_INJECT(b, "is_layer_supported", reason_out);
    return pn_plugin_is_layer_supported(&plugin, layer, supported_out, reason_out);
}

static pn_status backend_set_option(pn_backend* backend, const char* key, const char* value,
                                    pn_string_out* message_out) {
    mock_backend* b = as_mock(backend);
    log_event(b, "set_option", NULL);
    MOCK_INJECT(b, "set_option", message_out);
    if (key == NULL || value == NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, MOCK_TAG ": NULL option key or value");
    }
    if (strcmp(key, "num_threads") == 0) {
        uint32_t v = 0;
        if (pn_parse_u32(value, 1, 256, &v) != 0) {
            return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                           MOCK_TAG ": num_threads must be an integer in 1..256, not '%s'", value);
        }
        b->num_threads = v;
        return PN_OK;
    }
    if (strcmp(key, "fail") == 0) {
        if (value[0] == '\0') {
            b->fail[0] = '\0';
            return PN_OK;
        }
        for (size_t i = 0; i < sizeof(failable_functions) / sizeof(failable_functions[0]); ++i) {
            if (strcmp(value, failable_functions[i]) == 0) {
                snprintf(b->fail, sizeof(b->fail), "%s", value);
                return PN_OK;
            }
        }
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       MOCK_TAG ": fail names no function that can fail: '%s'", value);
    }
    if (strcmp(key, "events") == 0 || strcmp(key, "which") == 0) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT, MOCK_TAG ": option '%s' is read-only",
                       key);
    }
    return pn_fail(message_out, PN_ERR_NOT_FOUND, MOCK_TAG ": unknown option '%s'", key);
}

static pn_status backend_get_option(pn_backend* backend, const char* key, pn_string_out* value_out,
                                    pn_string_out* message_out) {
    mock_backend* b = as_mock(backend);
    char number[16];
    const char* value = NULL;
    if (key == NULL || value_out == NULL || value_out->data == NULL || value_out->capacity == 0) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       MOCK_TAG ": get_option needs a key and a value buffer");
    }
    if (strcmp(key, "events") == 0) {
        value = b->log != NULL ? b->log : "";
    } else if (strcmp(key, "fail") == 0) {
        value = b->fail;
    } else if (strcmp(key, "num_threads") == 0) {
        snprintf(number, sizeof(number), "%u", b->num_threads);
        value = number;
    } else if (strcmp(key, "which") == 0) {
        value = MOCK_NAME;
    } else {
        return pn_fail(message_out, PN_ERR_NOT_FOUND, MOCK_TAG ": unknown option '%s'", key);
    }
    size_t need = strlen(value) + 1;
    pn_write(value_out, "%s", value);
    if (need > value_out->capacity) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       MOCK_TAG ": the value of '%s' needs %zu bytes, the buffer holds %zu", key,
                       need, value_out->capacity);
    }
    return PN_OK;
}

static void backend_destroy(pn_backend* backend) {
    MOCK_CRASH_POINT(DESTROY);
    mock_backend* b = as_mock(backend);
    free(b->log);
    free(b);
}

pn_backend* mock_new_backend(void) {
    mock_backend* b = (mock_backend*)calloc(1, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->num_threads = 1;
    b->base.struct_size = (uint32_t)sizeof(pn_backend);
    b->base.flags = PN_BACKEND_HOST_MEMORY;
    b->base.self = b;
    b->base.destroy = backend_destroy;
    b->base.is_layer_supported = backend_is_layer_supported;
    b->base.create_workload_factory = backend_create_workload_factory;
    b->base.create_memory_manager = backend_create_memory_manager;
    b->base.create_context = backend_create_context;
    b->base.optimize_subgraph = backend_optimize_subgraph;
    b->base.release_optimization = backend_release_optimization;
    b->base.set_option = backend_set_option;
    b->base.get_option = backend_get_option;
    return &b->base;
}

#else /* MOCK_MINIMAL */
/* ===========================================================================
 * Minimal backend: the three required functions, nothing supported
 * ======================================================================== */

/* Runs no kind: the skeleton refuses every layer ("<tag> has no <Kind> kernel"). */
static const pn_plugin plugin = {MOCK_TAG, NULL, 0, NULL, 0, NULL};

pn_backend* mock_new_backend(void) { return pn_plugin_backend_new(&plugin); }

#endif /* MOCK_MINIMAL */

#ifdef MOCK_STRUCT_SIZE
/* ===========================================================================
 * Truncated pn_backend: traps past struct_size
 *
 * The runtime must never call a function pointer that lies past the struct_size
 * the plugin wrote. Those pointers are set (not left NULL, which a careless
 * runtime would skip anyway) to traps that fail loudly, so such a call surfaces
 * as an error naming the function.
 * ======================================================================== */

#define MOCK_TRAP_MESSAGE(fn) \
    MOCK_TAG ": the runtime called " fn ", which lies past the struct_size this plugin wrote (%u)"

static pn_status trap_is_layer_supported(pn_backend* backend, const pn_layer* layer,
                                         pn_bool* supported_out, pn_string_out* reason_out) {
    (void)layer;
    (void)supported_out;
    return pn_fail(reason_out, PN_ERR_INTERNAL, MOCK_TRAP_MESSAGE("is_layer_supported"),
                   backend->struct_size);
}
static pn_status trap_create_workload_factory(pn_backend* backend, pn_memory_manager* mm,
                                              pn_workload_factory** factory_out,
                                              pn_string_out* message_out) {
    (void)mm;
    if (factory_out != NULL) {
        *factory_out = NULL;
    }
    return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TRAP_MESSAGE("create_workload_factory"),
                   backend->struct_size);
}
static pn_status trap_create_memory_manager(pn_backend* backend, pn_memory_manager** mm_out,
                                            pn_string_out* message_out) {
    if (mm_out != NULL) {
        *mm_out = NULL;
    }
    return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TRAP_MESSAGE("create_memory_manager"),
                   backend->struct_size);
}
static pn_status trap_create_context(pn_backend* backend, pn_backend_context** context_out,
                                     pn_string_out* message_out) {
    if (context_out != NULL) {
        *context_out = NULL;
    }
    return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TRAP_MESSAGE("create_context"),
                   backend->struct_size);
}
static pn_status trap_optimize_subgraph(pn_backend* backend, const pn_subgraph* subgraph,
                                        pn_optimization** optimization_out,
                                        pn_string_out* message_out) {
    (void)subgraph;
    if (optimization_out != NULL) {
        *optimization_out = NULL;
    }
    return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TRAP_MESSAGE("optimize_subgraph"),
                   backend->struct_size);
}
static void trap_release_optimization(pn_backend* backend, pn_optimization* optimization) {
    (void)backend;
    (void)optimization; /* unreachable in a correct runtime: optimize_subgraph is a trap too */
}
static pn_status trap_set_option(pn_backend* backend, const char* key, const char* value,
                                 pn_string_out* message_out) {
    (void)key;
    (void)value;
    return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TRAP_MESSAGE("set_option"),
                   backend->struct_size);
}
static pn_status trap_get_option(pn_backend* backend, const char* key, pn_string_out* value_out,
                                 pn_string_out* message_out) {
    (void)key;
    (void)value_out;
    return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TRAP_MESSAGE("get_option"),
                   backend->struct_size);
}
static pn_status trap_list_options(pn_backend* backend, const pn_option_info* const** options_out,
                                   uint32_t* count_out, pn_string_out* message_out) {
    (void)options_out;
    (void)count_out;
    return pn_fail(message_out, PN_ERR_INTERNAL, MOCK_TRAP_MESSAGE("list_options"),
                   backend->struct_size);
}

#define MOCK_TRAP_IF_PAST(b, field)                                     \
    if (offsetof(pn_backend, field) >= (size_t)(b)->struct_size) {     \
        (b)->field = trap_##field;                                      \
    }

static void truncate_backend(pn_backend* b) {
    b->struct_size = (uint32_t)(MOCK_STRUCT_SIZE);
    MOCK_TRAP_IF_PAST(b, is_layer_supported)
    MOCK_TRAP_IF_PAST(b, create_workload_factory)
    MOCK_TRAP_IF_PAST(b, create_memory_manager)
    MOCK_TRAP_IF_PAST(b, create_context)
    MOCK_TRAP_IF_PAST(b, optimize_subgraph)
    MOCK_TRAP_IF_PAST(b, release_optimization)
    MOCK_TRAP_IF_PAST(b, set_option)
    MOCK_TRAP_IF_PAST(b, get_option)
    MOCK_TRAP_IF_PAST(b, list_options)
}
#endif /* MOCK_STRUCT_SIZE */

/* ===========================================================================
 * Entry points
 * ======================================================================== */

#ifndef MOCK_OMIT_GETBACKENDID
PLUGNN_BACKEND_EXPORT const char* GetBackendId(void) {
    MOCK_CRASH_POINT(GETBACKENDID);
#ifdef MOCK_ID_NULL
    return NULL;
#else
    return MOCK_ID;
#endif
}
#endif

#ifndef MOCK_OMIT_GETVERSION
PLUGNN_BACKEND_EXPORT void GetVersion(uint32_t* major_out, uint32_t* minor_out) {
    MOCK_CRASH_POINT(GETVERSION);
    *major_out = (uint32_t)(MOCK_MAJOR);
    *minor_out = (uint32_t)(MOCK_MINOR);
}
#endif

#ifndef MOCK_OMIT_BACKENDFACTORY
PLUGNN_BACKEND_EXPORT void* BackendFactory(void) {
    MOCK_CRASH_POINT(BACKENDFACTORY);
#ifdef MOCK_FACTORY_NULL
    return NULL;
#else
#ifdef MOCK_DEPENDENCY
    if (mock_dep_value() != 42) {
        return NULL;
    }
#endif
    pn_backend* b = mock_new_backend();
#ifdef MOCK_LEAK
    mock_leaked_block = malloc(64); /* the deliberate leak: the previous block is lost */
#endif
#ifdef MOCK_STRUCT_SIZE
    if (b != NULL) {
        truncate_backend(b);
    }
#endif
    return b;
#endif
}
#endif
