/*
 * plugnn-probe: loads one backend plugin in a process of its own, calls its three
 * entry points, creates and destroys one backend, and reports each step as it
 * goes, so that the runtime can reject a plugin that crashes, exits or hangs
 * without ever loading it into its own process.
 *
 *   plugnn-probe PLUGIN_PATH
 *
 * The report goes to the file descriptor that was stdout at start, one line per
 * event, written with write(2) before and after every call into the plugin (so a
 * crash loses nothing); the plugin's own stdout is sent to stderr. Lines:
 *
 *   plugnn-probe 1                   always first (the protocol version)
 *   enter <step> / leave <step>      around every call: dlopen, GetBackendId,
 *                                    GetVersion, BackendFactory, destroy, dlclose
 *   dlopen-error <message>           dlopen failed (not a crash: the runtime says why)
 *   missing <symbol>                 an entry point is not exported
 *   id <text>                        what GetBackendId returned ("id" alone: NULL),
 *                                    non-printable bytes as '?', at most 64 + 1 bytes
 *   version <major> <minor>          what GetVersion wrote
 *   backend <struct_size>            BackendFactory's object ("backend null": NULL)
 *   done                             the probe finished; it exits 0
 *
 * Whatever the plugin does wrong that is not a crash (a missing entry point, a bad
 * id or version, a NULL backend) the probe only reports: the runtime's own checks
 * judge it. The probe judges nothing but whether the process survives.
 */
#define _POSIX_C_SOURCE 200809L

#include "plugnn/backend_api.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PROBE_PROTOCOL 1

static int report_fd = -1;

/* Writes all of `text` to the report descriptor; a failure to write is not fatal
 * (the parent then sees a truncated report and says so). */
static void report(const char* text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t n = write(report_fd, text, left);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;
        }
        text += n;
        left -= (size_t)n;
    }
}

static void reportf(const char* format, const char* a, const char* b) {
    char line[1200];
    snprintf(line, sizeof(line), format, a, b);
    report(line);
}

/* dlsym without the pedantic object-to-function pointer cast warning. */
typedef const char* (*get_backend_id_fn)(void);
typedef void (*get_version_fn)(uint32_t*, uint32_t*);
typedef void* (*backend_factory_fn)(void);

static int resolve(void* lib, const char* name, void* fn_out, size_t fn_size) {
    void* symbol = dlsym(lib, name);
    if (symbol == NULL) {
        reportf("missing %s%s\n", name, "");
        return 0;
    }
    memcpy(fn_out, &symbol, fn_size);
    return 1;
}

static void report_id(const char* id) {
    char line[80] = "id";
    if (id != NULL) {
        size_t n = 2;
        line[n++] = ' ';
        for (size_t i = 0; id[i] != '\0' && i <= PN_MAX_BACKEND_ID_LENGTH; ++i) {
            unsigned char c = (unsigned char)id[i];
            line[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
        }
        line[n] = '\0';
    }
    report(line);
    report("\n");
}

int main(int argc, char** argv) {
    /* The report keeps the original stdout; the plugin's prints go to stderr. */
    report_fd = dup(STDOUT_FILENO);
    if (report_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        return 125;
    }
    char hello[32];
    snprintf(hello, sizeof(hello), "plugnn-probe %d\n", PROBE_PROTOCOL);
    report(hello);
    if (argc != 2) {
        fprintf(stderr, "usage: plugnn-probe PLUGIN_PATH\n");
        return 124;
    }

    report("enter dlopen\n");
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char* error = dlerror();
        char message[1024];
        snprintf(message, sizeof(message), "%s", error != NULL ? error : "unknown error");
        for (char* p = message; *p != '\0'; ++p) {
            if (*p == '\n') {
                *p = ' ';
            }
        }
        reportf("dlopen-error %s%s\n", message, "");
        report("done\n");
        return 0;
    }
    report("leave dlopen\n");

    get_backend_id_fn get_backend_id = NULL;
    get_version_fn get_version = NULL;
    backend_factory_fn backend_factory = NULL;
    int have_id = resolve(lib, "GetBackendId", &get_backend_id, sizeof(get_backend_id));
    int have_version = resolve(lib, "GetVersion", &get_version, sizeof(get_version));
    int have_factory = resolve(lib, "BackendFactory", &backend_factory, sizeof(backend_factory));

    if (have_id) {
        report("enter GetBackendId\n");
        const char* id = get_backend_id();
        report("leave GetBackendId\n");
        report_id(id);
    }
    if (have_version) {
        uint32_t major = 0, minor = 0;
        report("enter GetVersion\n");
        get_version(&major, &minor);
        report("leave GetVersion\n");
        char line[64];
        snprintf(line, sizeof(line), "version %u %u\n", (unsigned)major, (unsigned)minor);
        report(line);
    }
    /* The runtime calls BackendFactory only for a plugin with all three entry points. */
    if (have_id && have_version && have_factory) {
        report("enter BackendFactory\n");
        pn_backend* backend = (pn_backend*)backend_factory();
        report("leave BackendFactory\n");
        if (backend == NULL) {
            report("backend null\n");
        } else {
            char line[64];
            uint32_t size = backend->struct_size;
            snprintf(line, sizeof(line), "backend %u\n", (unsigned)size);
            report(line);
            if (PN_HAS_FIELD(backend, pn_backend, destroy) && backend->destroy != NULL) {
                report("enter destroy\n");
                backend->destroy(backend);
                report("leave destroy\n");
            }
        }
    }
    /* The runtime dlcloses a plugin when its last runtime closes: its destructors run then. */
    report("enter dlclose\n");
    dlclose(lib);
    report("leave dlclose\n");
    report("done\n");
    return 0;
}
