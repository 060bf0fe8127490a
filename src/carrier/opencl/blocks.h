/*
 * Strided blocks of an OpenCL carrier's elements, for dependent carriers
 * that keep one array over several tiers in the same slot order
 * (TiledEvictable, src/carrier/tiled.c): a tile's footprint moves between
 * an OpenCL tier and host memory, or another OpenCL carrier on the same
 * device, in a few rectangular device commands (clEnqueue*BufferRect)
 * instead of one device round trip per element. These are the transfers
 * of the exact bulk moves (a device write, a device read, a device copy)
 * over a strided region instead of one span.
 *
 * A block is the elements src_at + sum a_k * src_stride[k] of the source,
 * 0 <= a_k < extent[k], each going to dst_at + sum a_k * dst_stride[k] of
 * the destination. Strides are in elements and must describe a
 * non-overlapping column-major nesting on both sides: stride[0] == 1 and
 * stride[k + 1] >= stride[k] * extent[k] (a tile of an array, or the
 * array of tiles that a projection makes). Host memory is addressed from
 * its element 0, as the carrier.
 *
 * Every call checks the element range against the carrier's size
 * (SW_EINDEX), enqueues its commands, waits for them and returns: SW_OK
 * once the device has completed them, or SW_ERUNTIME "OpenCL ... failed"
 * (the fault hook's ENQUEUE and WAIT stages included). On failure the
 * destination's block may be partly written; the caller must not treat it
 * as holding values (TiledEvictable rolls its tile states back). The
 * carriers' versions never change: the caller is the owner writing
 * inside owner access.
 */
#ifndef SW_CARRIER_OPENCL_BLOCKS_H
#define SW_CARRIER_OPENCL_BLOCKS_H

#include <stdint.h>

#include "strideweave/carrier.h"

#define SW_CL_BLOCK_MAX_RANK 8

typedef struct sw_cl_block {
    int32_t rank; /* 1 .. SW_CL_BLOCK_MAX_RANK */
    int64_t extent[SW_CL_BLOCK_MAX_RANK];
    int64_t src_at, dst_at;
    int64_t src_stride[SW_CL_BLOCK_MAX_RANK];
    int64_t dst_stride[SW_CL_BLOCK_MAX_RANK];
} sw_cl_block;

/* Host memory (src, element 0) -> OpenCL carrier dst. */
sw_status sw_opencl_block_write(sw_carrier *dst, const void *src,
                                const sw_cl_block *b);
/* OpenCL carrier src -> host memory (dst, element 0). */
sw_status sw_opencl_block_read(sw_carrier *src, void *dst,
                               const sw_cl_block *b);
/* OpenCL carrier src -> OpenCL carrier dst (distinct carriers of one
 * dtype). *handled is 0, and nothing happens, when they are on different
 * devices: the caller copies another way. */
sw_status sw_opencl_block_copy(sw_carrier *src, sw_carrier *dst,
                               const sw_cl_block *b, int *handled);

/*
 * Gives an empty (size 0), live, unowned OpenCL carrier size zeroed
 * elements on its device, as an empty FileBacked tier grows to a
 * dependent carrier's extent. The version does not change. SW_EVALUE for
 * a carrier that is not empty, SW_ERUNTIME "Carrier is released" or when
 * the device refuses the buffer, SW_EOVERFLOW for too many bytes.
 */
sw_status sw_opencl_grow_empty(sw_carrier *c, int64_t size);

#endif /* SW_CARRIER_OPENCL_BLOCKS_H */
