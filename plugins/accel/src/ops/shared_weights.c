/* CpuAcc shared prepacked weights and the reshapable workload (see ops/shared_weights.h). */
#include "ops/shared_weights.h"
#include "gemm/gemm.h"
#include "plugnn/pn_plugin.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- the counter -------------------------------------------------------------------------- */

struct accel_pack_counter {
    _Atomic int64_t bytes;
};

accel_pack_counter* accel_pack_counter_new(void) {
    accel_pack_counter* c = (accel_pack_counter*)malloc(sizeof(*c));
    if (c != NULL) {
        atomic_init(&c->bytes, 0);
    }
    return c;
}

void accel_pack_counter_free(accel_pack_counter* counter) { free(counter); }

int64_t accel_pack_counter_bytes(const accel_pack_counter* counter) {
    return counter != NULL ? atomic_load(&((accel_pack_counter*)counter)->bytes) : 0;
}

/* ---- packed blocks ------------------------------------------------------------------------ */

void accel_pack_key_init(accel_pack_key* key, accel_pack_layout layout, accel_isa isa,
                         const void* source, const void* source2) {
    memset(key, 0, sizeof(*key));
    key->layout = (int32_t)layout;
    key->isa = (int32_t)isa;
    key->source = source;
    key->source2 = source2;
}

/* The data of one pn_shared block: its key and floats, the floats 64-byte aligned inside raw. */
typedef struct pack_block {
    accel_pack_key key;
    accel_pack_counter* counter;
    int64_t bytes;
    float* data;
    void* raw;
} pack_block;

static void pack_block_release(void* vb) {
    pack_block* b = (pack_block*)vb;
    if (b != NULL) {
        if (b->counter != NULL) {
            atomic_fetch_sub(&b->counter->bytes, b->bytes);
        }
        free(b->raw);
        free(b);
    }
}

static int packs_add(accel_packs* packs, pn_shared* block) {
    if (packs->count == packs->capacity) {
        uint32_t cap = packs->capacity > 0 ? packs->capacity * 2 : 4;
        pn_shared** grown = (pn_shared**)realloc(packs->blocks, cap * sizeof(*grown));
        if (grown == NULL) {
            return 0;
        }
        packs->blocks = grown;
        packs->capacity = cap;
    }
    packs->blocks[packs->count++] = block;
    return 1;
}

float* accel_packs_get(accel_packs* packs, const accel_pack_key* key, size_t floats, int* fresh) {
    *fresh = 0;
    for (uint32_t i = 0; packs->donor != NULL && i < packs->donor->count; ++i) {
        pack_block* b = (pack_block*)pn_shared_data(packs->donor->blocks[i]);
        if (memcmp(&b->key, key, sizeof(*key)) == 0) {
            if (!packs_add(packs, packs->donor->blocks[i])) {
                return NULL;
            }
            pn_shared_ref(packs->donor->blocks[i]);
            packs->shared += 1;
            return b->data;
        }
    }
    pack_block* b = (pack_block*)calloc(1, sizeof(*b));
    if (b == NULL) {
        return NULL;
    }
    b->key = *key;
    b->raw = malloc((floats > 0 ? floats : 1) * sizeof(float) + 64);
    if (b->raw == NULL) {
        free(b);
        return NULL;
    }
    b->data = (float*)(((uintptr_t)b->raw + 63u) & ~(uintptr_t)63u);
    b->bytes = (int64_t)(floats * sizeof(float));
    pn_shared* block = pn_shared_new(b, pack_block_release);
    if (block == NULL) {
        return NULL; /* b released by pn_shared_new (not counted yet) */
    }
    if (!packs_add(packs, block)) {
        pn_shared_unref(block);
        return NULL;
    }
    b->counter = packs->counter;
    if (b->counter != NULL) {
        atomic_fetch_add(&b->counter->bytes, b->bytes);
    }
    *fresh = 1;
    return b->data;
}

int accel_packs_offered(const accel_packs* packs, const accel_pack_key* key) {
    for (uint32_t i = 0; packs->donor != NULL && i < packs->donor->count; ++i) {
        const pack_block* b = (const pack_block*)pn_shared_data(packs->donor->blocks[i]);
        if (memcmp(&b->key, key, sizeof(*key)) == 0) {
            return 1;
        }
    }
    return 0;
}

void accel_pack_gemm_key(accel_pack_key* key, accel_isa isa, int is_a, const float* src, int64_t rows,
                         int64_t cols, int64_t rs, int64_t cs, int64_t count, int64_t stride) {
    accel_pack_key_init(key, is_a ? ACCEL_PACK_GEMM_A : ACCEL_PACK_GEMM_B, isa, src, NULL);
    key->params[0] = rows;
    key->params[1] = cols;
    key->params[2] = rs;
    key->params[3] = cs;
    key->params[4] = count;
    key->params[5] = stride;
}

const float* accel_pack_gemm(accel_packs* packs, accel_isa isa, int is_a, const float* src, int64_t rows,
                             int64_t cols, int64_t rs, int64_t cs, int64_t count, int64_t stride,
                             size_t* each_out) {
    const gemm_arch* arch = accel_kernel_set_for(isa)->gemm;
    size_t each = is_a ? gemm_packed_a_floats(arch, rows, cols) : gemm_packed_b_floats(arch, rows, cols);
    each = (each + 15) / 16 * 16; /* every matrix 64-byte aligned */
    accel_pack_key key;
    accel_pack_gemm_key(&key, isa, is_a, src, rows, cols, rs, cs, count, stride);
    int fresh = 0;
    float* dst = accel_packs_get(packs, &key, each * (size_t)count, &fresh);
    for (int64_t i = 0; dst != NULL && fresh && i < count; ++i) {
        if (is_a) {
            gemm_pack_a_full(arch, rows, cols, src + i * stride, rs, cs, dst + (size_t)i * each);
        } else {
            gemm_pack_b_full(arch, rows, cols, src + i * stride, rs, cs, dst + (size_t)i * each);
        }
    }
    *each_out = each;
    return dst;
}

void accel_packs_release(accel_packs* packs) {
    for (uint32_t i = 0; i < packs->count; ++i) {
        pn_shared_unref(packs->blocks[i]);
    }
    free(packs->blocks);
    packs->blocks = NULL;
    packs->count = packs->capacity = packs->shared = 0;
}

/* ---- what makes a layer "the same layer at other shapes" ---------------------------------- */

/* The bytes of a descriptor that reshape compares: the fields before its fused-activation
 * pointer (all 4-byte fields, no padding), read within its struct_size; 0 for kinds without a
 * descriptor or whose descriptor is compared otherwise (PRECOMPILED: the label). */
static size_t compared_bytes(pn_layer_kind kind) {
    switch (kind) {
    case PN_LAYER_CONVOLUTION_2D: return offsetof(pn_convolution_2d_desc, fused_activation);
    case PN_LAYER_CONVOLUTION: return offsetof(pn_convolution_desc, fused_activation);
    case PN_LAYER_FULLY_CONNECTED: return offsetof(pn_fully_connected_desc, fused_activation);
    default: return 0;
    }
}

static const pn_activation_desc* fused_of(const pn_layer* layer) {
    if (layer->descriptor == NULL) {
        return NULL;
    }
    uint32_t given = *(const uint32_t*)layer->descriptor;
    switch (layer->kind) {
    case PN_LAYER_CONVOLUTION_2D:
        return given >= sizeof(pn_convolution_2d_desc)
                   ? ((const pn_convolution_2d_desc*)layer->descriptor)->fused_activation : NULL;
    case PN_LAYER_CONVOLUTION:
        return given >= sizeof(pn_convolution_desc)
                   ? ((const pn_convolution_desc*)layer->descriptor)->fused_activation : NULL;
    case PN_LAYER_FULLY_CONNECTED:
        return given >= sizeof(pn_fully_connected_desc)
                   ? ((const pn_fully_connected_desc*)layer->descriptor)->fused_activation : NULL;
    default: return NULL;
    }
}

#define ID_DESC_BYTES 96
#define ID_LABEL 96

/* What reshape compares of a layer (a copy: the layer is borrowed for the call). */
typedef struct layer_id {
    pn_layer_kind kind;
    uint32_t num_inputs, num_outputs;
    unsigned char desc[ID_DESC_BYTES];
    int has_act;
    pn_activation_desc act;
    char label[ID_LABEL];        /* PRECOMPILED */
    pn_data_type* dtypes;        /* inputs then outputs */
    const void** constants;      /* per input: constant_data, or NULL */
    pn_tensor_info* const_infos; /* per input (constants only) */
} layer_id;

static void layer_id_free(layer_id* id) {
    free(id->dtypes);
    free(id->constants);
    free(id->const_infos);
}

static int layer_id_init(layer_id* id, const pn_layer* layer) {
    memset(id, 0, sizeof(*id));
    id->kind = layer->kind;
    id->num_inputs = layer->num_inputs;
    id->num_outputs = layer->num_outputs;
    size_t n = compared_bytes(layer->kind);
    if (n > 0 && layer->descriptor != NULL) {
        size_t given = *(const uint32_t*)layer->descriptor;
        memcpy(id->desc, layer->descriptor, given < n ? given : n);
    }
    id->has_act = accel_copy_activation(fused_of(layer), &id->act);
    if (layer->kind == PN_LAYER_PRECOMPILED && layer->descriptor != NULL) {
        const pn_precompiled_desc* d = (const pn_precompiled_desc*)layer->descriptor;
        const char* label = d->struct_size >= sizeof(*d) && d->label != NULL ? d->label : "";
        strncpy(id->label, label, ID_LABEL - 1);
    }
    uint32_t ni = layer->num_inputs, no = layer->num_outputs;
    id->dtypes = (pn_data_type*)calloc(ni + no + 1, sizeof(pn_data_type));
    id->constants = (const void**)calloc(ni + 1, sizeof(void*));
    id->const_infos = (pn_tensor_info*)calloc(ni + 1, sizeof(pn_tensor_info));
    if (id->dtypes == NULL || id->constants == NULL || id->const_infos == NULL) {
        layer_id_free(id);
        return 0;
    }
    for (uint32_t i = 0; i < ni; ++i) {
        id->dtypes[i] = layer->inputs[i].dtype;
        id->constants[i] = layer->constant_data != NULL ? layer->constant_data[i] : NULL;
        if (id->constants[i] != NULL) {
            id->const_infos[i] = layer->inputs[i];
            id->const_infos[i].extension = NULL;
        }
    }
    for (uint32_t i = 0; i < no; ++i) {
        id->dtypes[ni + i] = layer->outputs[i].dtype;
    }
    return 1;
}

/* NULL when `b` is `a`'s layer at other shapes, else what differs. */
static const char* layer_id_differs(const layer_id* a, const layer_id* b) {
    if (a->kind != b->kind || a->num_inputs != b->num_inputs || a->num_outputs != b->num_outputs) {
        return "its kind or number of inputs or outputs differs";
    }
    if (memcmp(a->desc, b->desc, sizeof(a->desc)) != 0 || strcmp(a->label, b->label) != 0 ||
        a->has_act != b->has_act ||
        (a->has_act && (a->act.kind != b->act.kind || a->act.alpha != b->act.alpha ||
                        a->act.beta != b->act.beta))) {
        return "its descriptor differs";
    }
    for (uint32_t i = 0; i < a->num_inputs + a->num_outputs; ++i) {
        if (a->dtypes[i] != b->dtypes[i]) {
            return "an element type differs";
        }
    }
    for (uint32_t i = 0; i < a->num_inputs; ++i) {
        if (a->constants[i] != b->constants[i]) {
            return "a constant input is not the buffer the workload was made with";
        }
        if (a->constants[i] != NULL && !pn_same_dims(&a->const_infos[i], &b->const_infos[i])) {
            return "a constant input has another shape";
        }
    }
    return NULL;
}

/* ---- the reshapable workload ------------------------------------------------------------ */

typedef struct reshapable {
    accel_env env;
    accel_build_fn build;
    layer_id id;
    accel_packs packs;
    pn_workload* inner;
} reshapable;

static void reshapable_release(void* vs) {
    reshapable* r = (reshapable*)vs;
    if (r != NULL) {
        if (r->inner != NULL) {
            r->inner->destroy(r->inner);
        }
        accel_packs_release(&r->packs); /* after the inner workload, which points into them */
        layer_id_free(&r->id);
        free(r);
    }
}

static pn_status reshapable_execute(void* vs, const pn_execute_args* args, pn_string_out* message_out) {
    reshapable* r = (reshapable*)vs;
    return r->inner->execute(r->inner, args, message_out);
}

static pn_status make(const accel_env* env, const pn_layer* layer, accel_build_fn build,
                      const accel_packs* donor, pn_workload** workload_out, pn_string_out* message_out);

/* The inner workload's read_profile (set only when it has one). */
static pn_status reshapable_read_profile(void* vs, pn_profile_entry* entries, uint32_t capacity, uint32_t* count_out,
                                         pn_string_out* message_out) {
    reshapable* r = (reshapable*)vs;
    return r->inner->read_profile(r->inner, entries, capacity, count_out, message_out);
}

static pn_status reshapable_reshape(const void* vs, const pn_layer* layer, pn_workload** workload_out,
                                    pn_string_out* message_out) {
    const reshapable* src = (const reshapable*)vs;
    const char* name = layer->name != NULL ? layer->name : "?";
    pn_status s = layer->kind == PN_LAYER_PRECOMPILED ? pn_validate_layer(layer, message_out)
                                                        : pn_plugin_check_layer(src->env.plugin, layer, message_out);
    if (s != PN_OK) {
        return s;
    }
    layer_id id;
    if (!layer_id_init(&id, layer)) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory reshaping layer '%s'", name);
    }
    const char* why = layer_id_differs(&src->id, &id);
    layer_id_free(&id);
    if (why != NULL) {
        return pn_fail(message_out, PN_ERR_INVALID_ARGUMENT,
                       "CpuAcc reshape(layer '%s'): not the workload's layer at other shapes: %s", name, why);
    }
    return make(&src->env, layer, src->build, &src->packs, workload_out, message_out);
}

static pn_status make(const accel_env* env, const pn_layer* layer, accel_build_fn build,
                      const accel_packs* donor, pn_workload** workload_out, pn_string_out* message_out) {
    reshapable* r = (reshapable*)calloc(1, sizeof(*r));
    if (r == NULL || !layer_id_init(&r->id, layer)) {
        free(r);
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a %s workload",
                       pn_layer_kind_name(layer->kind));
    }
    r->env = *env;
    r->build = build;
    r->packs.donor = donor;
    r->packs.counter = env->packed;
    pn_status s = build(env, layer, &r->packs, &r->inner, message_out);
    r->packs.donor = NULL;
    if (s != PN_OK) {
        r->inner = NULL;
        reshapable_release(r);
        return s;
    }
    pn_workload* wl = pn_workload_new_reshapable(r, reshapable_execute, reshapable_release,
                                                 r->inner->workspace_bytes, reshapable_reshape);
    if (wl == NULL) { /* r released by pn_workload_new_reshapable */
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "CpuAcc: out of memory creating a %s workload",
                       pn_layer_kind_name(layer->kind));
    }
    if (PN_HAS_FIELD(r->inner, pn_workload, read_profile) && r->inner->read_profile != NULL) {
        pn_workload_set_read_profile(wl, reshapable_read_profile);
    }
    *workload_out = wl;
    return PN_OK;
}

pn_status accel_reshapable_new(const accel_env* env, const pn_layer* layer, accel_build_fn build,
                               pn_workload** workload_out, pn_string_out* message_out) {
    return make(env, layer, build, NULL, workload_out, message_out);
}
