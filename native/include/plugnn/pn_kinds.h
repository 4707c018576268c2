/*
 * plugnn layer kinds: the one table of what plugin_common knows about each
 * pn_layer_kind of backend_api.h (its display name, the size of its
 * descriptor struct, its shared validator). pn_layer_kind_name,
 * pn_validate_common, pn_validate_layer and the plugin skeleton (pn_plugin.h)
 * all read it, so a kind added to the header costs one entry here plus its
 * pn_validate_<kind> (pn_validate.h).
 *
 * Part of plugnn::plugin_common (not of the ABI).
 */
#ifndef PLUGNN_PN_KINDS_H
#define PLUGNN_PN_KINDS_H

#include "plugnn/backend_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A layer kind's validator: PN_OK for a well-formed layer, else
 * PN_ERR_INVALID_ARGUMENT with the reason (see pn_validate.h). */
typedef pn_status (*pn_validate_fn)(const pn_layer* layer, pn_string_out* reason);

typedef struct pn_kind_info {
    const char* name;          /* "Convolution2d", ...: what pn_layer_kind_name returns */
    size_t descriptor_size;    /* bytes of the kind's descriptor struct in backend_api.h 1.0
                                  (the least struct_size a descriptor may have); 0: the kind
                                  takes no descriptor */
    pn_validate_fn validate;   /* pn_validate_<kind>; assumes pn_validate_common passed */
} pn_kind_info;

/* The facts of `kind`; NULL for PN_LAYER_INVALID and for any value this
 * plugin_common does not know (a kind added by a newer backend_api.h). The
 * entry is static: it lives as long as the plugin. */
const pn_kind_info* pn_kind_info_of(pn_layer_kind kind);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PLUGNN_PN_KINDS_H */
