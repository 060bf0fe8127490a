/*
 * The DLPack exchange structures, as StrideWeave produces them.
 *
 * DLPack is an external standard for handing a strided array from one
 * library to another without copying. Where the standard's own header
 * <dlpack/dlpack.h> is on the include path, this header includes it, so a
 * program that uses both gets the standard's declarations whichever it
 * includes first. Elsewhere the declarations below stand in for it:
 * written from the standard's list of fields (protocol 1.0), they
 * reproduce its binary layout and its enumerators, so a consumer compiled
 * against the standard's header reads what we produce. They sit behind the
 * standard header's include guard, so that header, reached later by
 * another path, is skipped rather than declaring everything twice.
 * The protocol version StrideWeave produces is SW_DLPACK_MAJOR and
 * SW_DLPACK_MINOR (interop.h), whichever header declares the structures.
 *
 * StrideWeave only exports (see sw_tensor_to_dlpack in interop.h); there is
 * no import.
 */
#ifndef STRIDEWEAVE_DLPACK_H
#define STRIDEWEAVE_DLPACK_H

#include <stdint.h>

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

/* The protocol version of the versioned structures declared here. */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

/* The kind of device that holds the data. */
typedef enum {
    kDLCPU = 1,          /* host memory */
    kDLCUDA = 2,         /* CUDA device memory */
    kDLCUDAHost = 3,     /* pinned CUDA host memory */
    kDLOpenCL = 4,       /* OpenCL device memory */
    kDLVulkan = 7,       /* Vulkan buffers */
    kDLMetal = 8,        /* Metal buffers */
    kDLVPI = 9,          /* Verilator simulation */
    kDLROCM = 10,        /* ROCm device memory */
    kDLROCMHost = 11,    /* pinned ROCm host memory */
    kDLExtDev = 12,      /* reserved for extension devices */
    kDLCUDAManaged = 13, /* CUDA managed memory */
    kDLOneAPI = 14,      /* oneAPI unified shared memory */
    kDLWebGPU = 15,      /* WebGPU buffers */
    kDLHexagon = 16      /* Hexagon DSP memory */
} DLDeviceType;

/* A device: its kind and its ordinal among devices of that kind. */
typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

/* The class of an element type (the code of DLDataType). */
typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U
} DLDataTypeCode;

/* An element type: class code, bits per lane and lanes per element. */
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

/*
 * A strided view of memory: element (i_0, ..., i_{ndim-1}) is at byte
 * address data + byte_offset + itemsize * sum(i_k * strides[k]). Strides
 * count elements, not bytes; a NULL strides array means compact row-major.
 */
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

/*
 * The unversioned ("legacy") managed tensor. The consumer calls deleter
 * once, with the structure itself, when it no longer needs the data.
 */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* A protocol version. */
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* Bits of DLManagedTensorVersioned.flags. */
/* The consumer should not write through the tensor (advisory). */
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
/* The producer made a copy the consumer may own outright. */
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)
/* Sub-byte element types are padded to whole bytes. */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (UINT64_C(1) << 2)

/*
 * The versioned managed tensor (protocol 1.x): the version comes first so
 * that a consumer can check it before reading anything else.
 */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* DLPACK_DLPACK_H_ */

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_DLPACK_H */
