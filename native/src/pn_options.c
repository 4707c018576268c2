/* Option parsing for plugins. */
#include "plugnn/plugin_common.h"

#include <errno.h>
#include <stdlib.h>

int pn_parse_u32(const char* text, uint32_t min, uint32_t max, uint32_t* value_out) {
    if (text == NULL || *text < '0' || *text > '9') {
        return -1;
    }
    char* end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        return -1;
    }
    *value_out = (uint32_t)v;
    return 0;
}
