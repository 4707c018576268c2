/*
 * The "mangled" mock: a C++ plugin whose author forgot extern "C". The three entry
 * points are defined with C++ linkage, so the library exports only their mangled
 * names (_Z12GetBackendIdv, _Z10GetVersionPjS_, _Z14BackendFactoryv; the version
 * script lists the C++ names for exactly this case) and the runtime must report
 * GetBackendId, GetVersion and BackendFactory as missing.
 *
 * backend_api.h declares the entry points inside extern "C"; a later declaration
 * without a linkage specification would inherit C linkage. So the header's
 * declarations are renamed away while it is included, leaving these definitions
 * the only (C++-linkage) declarations of those names.
 */
#define GetBackendId mock_header_GetBackendId
#define GetVersion mock_header_GetVersion
#define BackendFactory mock_header_BackendFactory
#include "plugnn/plugin_common.h"
#undef GetBackendId
#undef GetVersion
#undef BackendFactory

#include <cstdlib>

namespace {

void backend_destroy(pn_backend* backend) noexcept { std::free(backend->self); }

pn_status backend_is_layer_supported(pn_backend*, const pn_layer* layer, pn_bool* supported_out,
                                     pn_string_out* reason_out) noexcept {
    return pn_refuse(supported_out, reason_out, "MockMangled supports no layers (asked about %s)",
                     layer != nullptr ? pn_layer_kind_name(layer->kind) : "nothing");
}

void factory_destroy(pn_workload_factory* factory) noexcept { std::free(factory->self); }

pn_status factory_create_workload(pn_workload_factory*, const pn_layer*, pn_workload** workload_out,
                                  pn_string_out* message_out) noexcept {
    *workload_out = nullptr;
    return pn_fail(message_out, PN_ERR_UNSUPPORTED, "MockMangled supports no layers");
}

pn_status backend_create_workload_factory(pn_backend*, pn_memory_manager*,
                                          pn_workload_factory** factory_out,
                                          pn_string_out* message_out) noexcept {
    auto* f = static_cast<pn_workload_factory*>(std::calloc(1, sizeof(pn_workload_factory)));
    if (f == nullptr) {
        return pn_fail(message_out, PN_ERR_OUT_OF_MEMORY, "MockMangled: out of memory");
    }
    f->struct_size = static_cast<uint32_t>(sizeof(pn_workload_factory));
    f->self = f;
    f->destroy = factory_destroy;
    f->create_workload = factory_create_workload;
    *factory_out = f;
    return PN_OK;
}

}  // namespace

// Deliberately NOT extern "C".
__attribute__((visibility("default"))) const char* GetBackendId() { return "MockMangled"; }

__attribute__((visibility("default"))) void GetVersion(uint32_t* major_out, uint32_t* minor_out) {
    *major_out = PLUGNN_BACKEND_API_VERSION_MAJOR;
    *minor_out = PLUGNN_BACKEND_API_VERSION_MINOR;
}

__attribute__((visibility("default"))) void* BackendFactory() {
    auto* b = static_cast<pn_backend*>(std::calloc(1, sizeof(pn_backend)));
    if (b == nullptr) {
        return nullptr;
    }
    b->struct_size = static_cast<uint32_t>(sizeof(pn_backend));
    b->flags = PN_BACKEND_HOST_MEMORY;
    b->self = b;
    b->destroy = backend_destroy;
    b->is_layer_supported = backend_is_layer_supported;
    b->create_workload_factory = backend_create_workload_factory;
    return b;
}
