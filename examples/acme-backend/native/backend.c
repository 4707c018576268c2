/* Acme's plugnn backend: the plugin. The skeleton (pn_plugin.h) does the shared work:
 * plugnn's validation of every layer, "AcmeBasic has no <Kind> kernel" for the kinds below
 * are not, the workload factory; this file says which kinds Acme runs and exports the
 * three entry points. */
#include "acme.h"

static const pn_plugin_kind kinds[] = {
    {PN_LAYER_ACTIVATION, acme_check_activation, acme_create_activation},
    {PN_LAYER_ELEMENTWISE_BINARY, acme_check_binary, acme_create_binary},
    {PN_LAYER_FULLY_CONNECTED, acme_check_fully_connected, acme_create_fully_connected},
};

/* Named fields: those the skeleton adds later (pn_plugin.h) start at zero. */
static const pn_plugin acme = {.id = "AcmeBasic", .kinds = kinds, .num_kinds = sizeof(kinds) / sizeof(kinds[0])};

PLUGNN_BACKEND_EXPORT const char* GetBackendId(void) { return acme.id; }

PLUGNN_BACKEND_EXPORT void GetVersion(uint32_t* major_out, uint32_t* minor_out) {
    *major_out = PLUGNN_BACKEND_API_VERSION_MAJOR;
    *minor_out = PLUGNN_BACKEND_API_VERSION_MINOR;
}

PLUGNN_BACKEND_EXPORT void* BackendFactory(void) { return pn_plugin_backend_new(&acme); }
