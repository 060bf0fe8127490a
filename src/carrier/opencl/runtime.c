/*
 * The OpenCL runtime, loaded at first use: dlopen of the ICD loader, the
 * entry points resolved into one table, the devices of every platform
 * listed once, and a context with one in-order queue per device made when
 * the device is first used. Nothing here is freed before the process
 * ends: carriers and moves may use a device from any thread at any time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carrier/opencl/internal.h"

sw_cl_api sw_cl;

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static sw_status load_status;
static char load_message[1024];
static sw_cl_device devices[MAX_DEVICES];
static int64_t device_count;
static int64_t default_device;

#define INSTALL_HINT                                                           \
    "; install an OpenCL ICD loader and a driver (on Debian and Ubuntu: "      \
    "apt-get install ocl-icd-libopencl1 pocl-opencl-icd for the CPU, or "      \
    "your GPU vendor's OpenCL driver)"

static void load_failed(const char *fmt, const char *detail) {
    char what[320];
    snprintf(what, sizeof what, fmt, detail ? detail : "");
    snprintf(load_message, sizeof load_message,
             "OpenCL runtime is not available: %.320s" INSTALL_HINT, what);
    load_status = SW_ERUNTIME;
}

/* Resolves every entry point; 0 and the missing name when one is absent. */
static int resolve(void *lib, const char **missing) {
    struct {
        const char *name;
        void **slot;
    } table[] = {
#define E(n) {"cl" #n, (void **)&sw_cl.n}
        E(GetPlatformIDs),
        E(GetPlatformInfo),
        E(GetDeviceIDs),
        E(GetDeviceInfo),
        E(CreateContext),
        E(CreateCommandQueue),
        E(CreateBuffer),
        E(RetainMemObject),
        E(ReleaseMemObject),
        E(SetMemObjectDestructorCallback),
        E(EnqueueReadBuffer),
        E(EnqueueWriteBuffer),
        E(EnqueueCopyBuffer),
        E(EnqueueReadBufferRect),
        E(EnqueueWriteBufferRect),
        E(EnqueueCopyBufferRect),
        E(EnqueueFillBuffer),
        E(EnqueueMapBuffer),
        E(EnqueueUnmapMemObject),
        E(WaitForEvents),
        E(CreateUserEvent),
        E(SetUserEventStatus),
        E(EnqueueBarrierWithWaitList),
        E(ReleaseEvent),
        E(Flush),
        E(Finish),
        E(CreateProgramWithSource),
        E(BuildProgram),
        E(GetProgramBuildInfo),
        E(ReleaseProgram),
        E(CreateKernel),
        E(ReleaseKernel),
        E(SetKernelArg),
        E(EnqueueNDRangeKernel),
#undef E
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; ++i) {
        /* dlsym returns void *; the table's slots are function pointers of
         * the declared types, which POSIX lets us store this way. */
        void *f = dlsym(lib, table[i].name);
        if (!f) {
            *missing = table[i].name;
            return 0;
        }
        memcpy(table[i].slot, &f, sizeof f);
    }
    return 1;
}

static void list_devices(void) {
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int err = sw_cl.GetPlatformIDs(MAX_PLATFORMS, platforms, &np);
    if (err != SW_CL_SUCCESS || np == 0) {
        load_failed("no OpenCL platform is installed%s", "");
        return;
    }
    if (np > MAX_PLATFORMS)
        np = MAX_PLATFORMS;
    for (cl_uint p = 0; p < np && device_count < MAX_DEVICES; ++p) {
        cl_device_id ids[MAX_DEVICES];
        cl_uint nd = 0;
        err = sw_cl.GetDeviceIDs(platforms[p], SW_CL_DEVICE_TYPE_ALL,
                                 MAX_DEVICES, ids, &nd);
        if (err != SW_CL_SUCCESS)
            continue;
        if (nd > MAX_DEVICES)
            nd = MAX_DEVICES;
        char pname[128] = "";
        (void)sw_cl.GetPlatformInfo(platforms[p], SW_CL_PLATFORM_NAME,
                                    sizeof pname - 1, pname, NULL);
        for (cl_uint d = 0; d < nd && device_count < MAX_DEVICES; ++d) {
            sw_cl_device *dev = &devices[device_count];
            memset(dev, 0, sizeof *dev);
            dev->index = device_count;
            dev->platform = platforms[p];
            dev->id = ids[d];
            memcpy(dev->platform_name, pname, sizeof pname);
            (void)sw_cl.GetDeviceInfo(ids[d], SW_CL_DEVICE_NAME,
                                      sizeof dev->name - 1, dev->name, NULL);
            (void)sw_cl.GetDeviceInfo(ids[d], SW_CL_DEVICE_TYPE,
                                      sizeof dev->type, &dev->type, NULL);
            (void)sw_cl.GetDeviceInfo(ids[d], SW_CL_DEVICE_GLOBAL_MEM_SIZE,
                                      sizeof dev->global_mem, &dev->global_mem,
                                      NULL);
            (void)sw_cl.GetDeviceInfo(ids[d], SW_CL_DEVICE_MAX_WORK_GROUP_SIZE,
                                      sizeof dev->max_group, &dev->max_group,
                                      NULL);
            pthread_mutex_init(&dev->lock, NULL);
            ++device_count;
        }
    }
    if (device_count == 0) {
        load_failed("no OpenCL device is available%s", "");
        return;
    }
    /* The default: the environment's choice, else the first GPU, else
     * the first device. */
    default_device = 0;
    for (int64_t i = device_count - 1; i >= 0; --i)
        if (devices[i].type & SW_CL_DEVICE_TYPE_GPU)
            default_device = i;
    const char *env = getenv("STRIDEWEAVE_OPENCL_DEVICE");
    if (env && *env) {
        char *end = NULL;
        long long v = strtoll(env, &end, 10);
        if (*end != '\0' || v < 0 || v >= device_count) {
            char detail[160];
            snprintf(detail, sizeof detail, "%.64s (there are %lld devices)",
                     env, (long long)device_count);
            load_failed("STRIDEWEAVE_OPENCL_DEVICE is not a device index: %s",
                        detail);
            device_count = 0;
            return;
        }
        default_device = v;
    }
}

static void load(void) {
    const char *path = getenv("STRIDEWEAVE_OPENCL_LIBRARY");
    if (!path || !*path)
        path = "libOpenCL.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        load_failed("%s", why ? why : "libOpenCL.so.1 cannot be loaded");
        return;
    }
    const char *missing = NULL;
    if (!resolve(lib, &missing)) {
        load_failed("the OpenCL loader has no %s (OpenCL 1.2 is needed)",
                    missing);
        memset(&sw_cl, 0, sizeof sw_cl);
        return;
    }
    load_status = SW_OK;
    list_devices();
}

sw_status sw_cl_load(void) {
    pthread_once(&load_once, load);
    if (load_status)
        return sw_fail(load_status, "%s", load_message);
    return SW_OK;
}

sw_status sw_opencl_load(void) {
    return sw_cl_load();
}

sw_status sw_cl_fail(const char *what, cl_int err) {
    return sw_fail(SW_ERUNTIME, "OpenCL %s failed (error %d)", what, (int)err);
}

sw_status sw_cl_fail_injected(const char *what) {
    return sw_fail(SW_ERUNTIME, "OpenCL %s failed (injected)", what);
}

/* ---------------------------------------------------------- devices */

static sw_status device_ready(sw_cl_device *d) {
    pthread_mutex_lock(&d->lock);
    sw_status st = SW_OK;
    if (!d->ready) {
        cl_int err = SW_CL_SUCCESS;
        cl_context ctx = sw_cl.CreateContext(NULL, 1, &d->id, NULL, NULL, &err);
        if (!ctx) {
            st = sw_cl_fail("context creation", err);
        } else {
            cl_command_queue q = sw_cl.CreateCommandQueue(ctx, d->id, 0, &err);
            if (!q) {
                st = sw_cl_fail("command queue creation", err);
            } else {
                d->context = ctx;
                d->queue = q;
                d->ready = 1;
            }
        }
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

sw_status sw_cl_device_get(int64_t index, sw_cl_device **out) {
    sw_status st = sw_cl_load();
    if (st)
        return st;
    if (index < 0)
        index = default_device;
    if (index >= device_count)
        return sw_fail(SW_EVALUE,
                       "OpenCL device %lld is out of range: there are %lld "
                       "devices",
                       (long long)index, (long long)device_count);
    sw_cl_device *d = &devices[index];
    if ((st = device_ready(d)))
        return st;
    *out = d;
    return SW_OK;
}

int64_t sw_opencl_device_count(void) {
    if (sw_cl_load()) {
        sw_clear_error();
        return 0;
    }
    return device_count;
}

sw_status sw_opencl_device_info(int64_t i, sw_opencl_device_desc *out) {
    if (i < 0 || i >= sw_opencl_device_count())
        return sw_fail(SW_EINDEX, "OpenCL device index out of range");
    const sw_cl_device *d = &devices[i];
    memset(out, 0, sizeof *out);
    out->index = i;
    memcpy(out->platform, d->platform_name, sizeof out->platform);
    memcpy(out->name, d->name, sizeof out->name);
    out->type = d->type & SW_CL_DEVICE_TYPE_GPU           ? "GPU"
                : d->type & SW_CL_DEVICE_TYPE_CPU         ? "CPU"
                : d->type & SW_CL_DEVICE_TYPE_ACCELERATOR ? "Accelerator"
                                                          : "Other";
    out->global_memory = (int64_t)d->global_mem;
    out->is_default = i == default_device;
    return SW_OK;
}

/* ------------------------------------------------------ events, faults */

static atomic_int inject_stage;
static atomic_int_fast64_t inject_left;

void sw_debug_opencl_fail(sw_opencl_stage stage, int64_t after) {
    atomic_store(&inject_left, after < 0 ? 0 : after);
    atomic_store(&inject_stage, (int)stage);
}

int sw_cl_injected(sw_opencl_stage stage) {
    if (atomic_load(&inject_stage) != (int)stage)
        return 0;
    if (atomic_fetch_sub(&inject_left, 1) > 0)
        return 0;
    /* This call fails; the hook is spent. */
    atomic_store(&inject_stage, SW_OPENCL_STAGE_NONE);
    return 1;
}

sw_status sw_cl_wait(cl_uint n, const cl_event *events, const char *what) {
    if (sw_cl_injected(SW_OPENCL_STAGE_WAIT)) {
        /* The work still ends; only its outcome is reported lost. */
        (void)sw_cl.WaitForEvents(n, events);
        return sw_cl_fail_injected(what);
    }
    cl_int err = sw_cl.WaitForEvents(n, events);
    if (err != SW_CL_SUCCESS)
        return sw_cl_fail(what, err);
    return SW_OK;
}

sw_status sw_cl_finish(sw_cl_device *d, const char *what) {
    if (sw_cl_injected(SW_OPENCL_STAGE_WAIT)) {
        (void)sw_cl.Finish(d->queue);
        return sw_cl_fail_injected(what);
    }
    cl_int err = sw_cl.Finish(d->queue);
    return err == SW_CL_SUCCESS ? SW_OK : sw_cl_fail(what, err);
}

void sw_cl_release_events(cl_uint n, cl_event *events) {
    for (cl_uint i = 0; i < n; ++i)
        if (events[i]) {
            (void)sw_cl.ReleaseEvent(events[i]);
            events[i] = NULL;
        }
}

/* ---------------------------------------------------------- test hold */

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_event hold_events[MAX_DEVICES]; /* under hold_lock */

sw_status sw_debug_opencl_hold(int hold) {
    sw_cl_device *first = NULL;
    sw_status st = sw_cl_device_get(-1, &first);
    if (st)
        return st;
    pthread_mutex_lock(&hold_lock);
    for (int64_t i = 0; i < device_count && !st; ++i) {
        sw_cl_device *d = &devices[i];
        pthread_mutex_lock(&d->lock);
        int ready = d->ready;
        pthread_mutex_unlock(&d->lock);
        if (!hold && hold_events[i]) {
            (void)sw_cl.SetUserEventStatus(hold_events[i], SW_CL_COMPLETE);
            sw_cl_release_events(1, &hold_events[i]);
        } else if (hold && ready && !hold_events[i]) {
            cl_int err = SW_CL_SUCCESS;
            cl_event ev = sw_cl.CreateUserEvent(d->context, &err);
            if (!ev) {
                st = sw_cl_fail("user event creation", err);
                break;
            }
            /* The in-order queue runs nothing enqueued after the barrier
             * until the user event completes. */
            err = sw_cl.EnqueueBarrierWithWaitList(d->queue, 1, &ev, NULL);
            if (err != SW_CL_SUCCESS) {
                (void)sw_cl.SetUserEventStatus(ev, SW_CL_COMPLETE);
                sw_cl_release_events(1, &ev);
                st = sw_cl_fail("barrier", err);
                break;
            }
            (void)sw_cl.Flush(d->queue);
            hold_events[i] = ev;
        }
    }
    pthread_mutex_unlock(&hold_lock);
    return st;
}
