/*
 * StrideWeave block devices: synchronous raw storage on a Linux block
 * special file, and the BlockDeviceCarrier that lives in one of its
 * extents.
 *
 * A device (sw_blockdev) is a handle on a block device opened with
 * O_DIRECT: every transfer reaches the device in whole logical blocks
 * from memory aligned to the logical block size, through bounce buffers
 * the library manages, so callers pass any byte range and any memory.
 * The geometry (capacity, logical and physical block sizes) is read once
 * at opening. The device hands out extents of whole physical blocks at
 * the lowest aligned free offset; a carrier (Float32 only, storage only,
 * of fixed size) owns one extent until it is released or destroyed.
 *
 * I/O goes through a table of function pointers (sw_blockdev_io): the
 * system's pread/pwrite/close for a real device, or a caller's table, as
 * the scripted test device of sw_blockdev_open_scripted uses, so that
 * every retry and fault path can be driven without a device.
 *
 * Transfers. One transfer is a loop of system calls until every byte
 * moved: an interrupted call (EINTR) and a short one are retried; a call
 * that moves nothing ends the transfer with SW_BLOCKDEV_ZERO_COMPLETION
 * and one that fails with another errno with SW_BLOCKDEV_OS_ERROR. Both
 * terminal outcomes fault the whole device (sw_blockdev_is_faulted):
 * later transfers and allocations fail with SW_ERUNTIME "... is faulted"
 * and every carrier on it refuses access the same way. Release, sizes
 * and close still work.
 *
 * Threads: one mutex per device serialises every transfer of the device
 * and all of its carriers, the allocator and close. A carrier's release
 * takes it too, so an extent is reused only after the transfer running
 * on it has ended.
 *
 * Ownership: a device is reference-counted (sw_blockdev_retain and
 * sw_blockdev_unref); every carrier holds a reference to its device, so a
 * device lives as long as its last carrier. The last reference closes a
 * device that is still open.
 */
#ifndef STRIDEWEAVE_BLOCKDEV_H
#define STRIDEWEAVE_BLOCKDEV_H

#include "strideweave/base.h"
#include "strideweave/carrier.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_blockdev sw_blockdev;

/*
 * The I/O of a device. version must be SW_BLOCKDEV_IO_VERSION. read and
 * write move at most count bytes at byte offset and return how many moved
 * (0 is "no progress"), or -1 with the errno in *err. close closes the
 * descriptor and returns 0 or an errno; it is called exactly once per
 * device. drop (optional) frees ctx when the device is destroyed.
 */
#define SW_BLOCKDEV_IO_VERSION 1
typedef struct sw_blockdev_io {
    uint32_t version;
    int64_t (*read)(void *ctx, int fd, void *buf, int64_t count, int64_t offset,
                    int *err);
    int64_t (*write)(void *ctx, int fd, const void *buf, int64_t count,
                     int64_t offset, int *err);
    int (*close)(void *ctx, int fd);
    void (*drop)(void *ctx);
} sw_blockdev_io;

/* How a transfer ended. */
typedef enum sw_blockdev_outcome {
    SW_BLOCKDEV_COMPLETE = 0,
    SW_BLOCKDEV_ZERO_COMPLETION = 1, /* a call moved nothing */
    SW_BLOCKDEV_OS_ERROR = 2         /* a call failed (not EINTR) */
} sw_blockdev_outcome;

/* A transfer's outcome: completed is the bytes of the device span that
 * moved before the end; error_number the errno of an OS error (else 0). */
typedef struct sw_blockdev_result {
    sw_blockdev_outcome outcome;
    int64_t completed;
    int error_number;
} sw_blockdev_result;

/*
 * Opens path, which must be a block special file, for reading and writing
 * with O_DIRECT and reads its geometry (BLKGETSIZE64, BLKSSZGET,
 * BLKPBSZGET). SW_EVALUE "<path> is not a block device" for anything else
 * (a regular file is opened read-only to look at it, never written);
 * SW_EOS with the errno (ENOENT, EACCES, ...) when it cannot be opened;
 * SW_EVALUE for a geometry that the rules of sw_blockdev_open_io refuse.
 */
SW_API sw_status sw_blockdev_open(const char *path, sw_blockdev **out);

/*
 * A device over descriptor fd (which the device closes, through io, from
 * now on, also when this fails) with the given geometry and I/O table.
 * SW_EVALUE, checked in this order: "capacity must be positive", "logical
 * block size must be positive", "physical block size must be positive",
 * "capacity must be a multiple of the logical block size", "physical
 * block size must be a multiple of the logical block size"; SW_ETYPE for
 * a bad table. ctx is handed to io's slots (and dropped by io->drop when
 * the device goes, or at once on failure).
 */
SW_API sw_status sw_blockdev_open_io(int fd, int64_t capacity, int64_t logical,
                                     int64_t physical, const sw_blockdev_io *io,
                                     void *ctx, sw_blockdev **out);

/* One step of a scripted system call. */
typedef enum sw_blockdev_step_kind {
    SW_BLOCKDEV_STEP_INTERRUPT = 0, /* fails with EINTR */
    SW_BLOCKDEV_STEP_PROGRESS = 1,  /* moves min(value, asked) bytes */
    SW_BLOCKDEV_STEP_ZERO = 2,      /* moves nothing */
    SW_BLOCKDEV_STEP_ERROR = 3      /* fails with errno value */
} sw_blockdev_step_kind;

typedef struct sw_blockdev_step {
    sw_blockdev_step_kind kind;
    int64_t value;
} sw_blockdev_step;

/*
 * For tests: a device backed by capacity bytes of memory (zeroed), whose
 * system calls follow scripts: the n-th read call takes reads[n] (and the
 * n-th write call writes[n]); once a script runs out, calls move all they
 * are asked. close fails with close_error when it is non-zero. The scripts
 * are copied. Geometry errors as sw_blockdev_open_io; SW_EVALUE "unknown
 * script step" for a bad step; SW_ENOMEM.
 */
SW_API sw_status sw_blockdev_open_scripted(int64_t capacity, int64_t logical,
                                           int64_t physical,
                                           const sw_blockdev_step *reads,
                                           int64_t nreads,
                                           const sw_blockdev_step *writes,
                                           int64_t nwrites, int close_error,
                                           sw_blockdev **out);
/* The system calls a scripted device has seen (zero for other devices;
 * any pointer may be NULL). */
SW_API void sw_blockdev_attempts(const sw_blockdev *d, int64_t *reads,
                                 int64_t *writes, int64_t *closes);

SW_API sw_blockdev *sw_blockdev_retain(sw_blockdev *d);
/* Drops a reference (NULL is accepted); the last one closes the device if
 * it is open (ignoring a close error) and frees it. */
SW_API void sw_blockdev_unref(sw_blockdev *d);

/* Binding support: one borrowed pointer the device keeps for its host
 * object (NULL at first); the binding sets and reads it under its own
 * lock (the GIL). */
SW_API void sw_blockdev_set_peer(sw_blockdev *d, void *peer);
SW_API void *sw_blockdev_get_peer(const sw_blockdev *d);

/* Geometry, fixed at opening (no I/O). */
SW_API int64_t sw_blockdev_capacity(const sw_blockdev *d);
SW_API int64_t sw_blockdev_logical_block_size(const sw_blockdev *d);
SW_API int64_t sw_blockdev_physical_block_size(const sw_blockdev *d);
SW_API int sw_blockdev_is_closed(sw_blockdev *d);
SW_API int sw_blockdev_is_faulted(sw_blockdev *d);
/* The carriers of d that are not destroyed yet (released ones count). */
SW_API int64_t sw_blockdev_carrier_count(sw_blockdev *d);

/*
 * Closes d. SW_ERUNTIME "BlockDevice cannot close: a Carrier object
 * exists" while any carrier of d is not destroyed (nothing changes). A
 * closed device does nothing. Otherwise the device is marked closed and
 * the descriptor closed exactly once; a close error is SW_EOS with its
 * errno, yet the device is closed all the same.
 */
SW_API sw_status sw_blockdev_close(sw_blockdev *d);

/*
 * Raw transfers of count bytes at byte offset between buf and the device
 * (outside any extent). Preflight, with no I/O: SW_EVALUE "pointer must
 * be non-null" (for a non-zero count), "byte_offset must be non-negative",
 * "byte_count must be non-negative", "byte range exceeds the device
 * capacity"; SW_EOVERFLOW "pointer byte endpoint overflows" and "byte
 * endpoint overflows Index"; SW_ERUNTIME "BlockDevice handle is closed"
 * and "BlockDevice is faulted". Then the transfer, whose outcome *res
 * reports (NULL allowed): SW_OK when complete, SW_EOS with the errno for
 * an OS error, SW_ERUNTIME "BlockDevice transfer completed N of M bytes"
 * for a zero completion; both fault the device, and the bytes that moved
 * before the failure stay moved (in the device, or in buf for a read). A
 * write of a range that
 * does not cover whole logical blocks first reads the blocks at its
 * edges. zero writes zeros.
 */
SW_API sw_status sw_blockdev_read(sw_blockdev *d, int64_t offset, int64_t count,
                                  void *buf, sw_blockdev_result *res);
SW_API sw_status sw_blockdev_write(sw_blockdev *d, int64_t offset,
                                   int64_t count, const void *buf,
                                   sw_blockdev_result *res);
SW_API sw_status sw_blockdev_zero(sw_blockdev *d, int64_t offset, int64_t count,
                                  sw_blockdev_result *res);

/* ------------------------------------------------------------- carriers */

/*
 * A BlockDeviceCarrier of size Float32 slots in a fresh extent of d.
 * Checks in order: SW_ERUNTIME "BlockDevice is closed", "BlockDevice is
 * faulted"; SW_EVALUE "BlockDeviceCarrier dtype must be DType.Float32";
 * SW_EVALUE "size must be non-negative"; SW_EOVERFLOW "byte length
 * overflows". The extent starts at the lowest free offset that is a
 * multiple of the physical block size and spans whole physical blocks;
 * size 0 takes offset 0 and extent 0 and reserves nothing. SW_ENOMEM
 * "BlockDevice has no aligned extent of N bytes free" when nothing fits
 * (nothing changes). Unless empty, the extent is zero-filled; a terminal
 * failure of that write faults the device and returns its status, with
 * the extent free again and no carrier.
 */
SW_API sw_status sw_blockdev_allocate(sw_blockdev *d, int64_t size,
                                      int mutable_, sw_dtype dtype, int empty,
                                      sw_carrier **out);

SW_API int sw_carrier_is_blockdev(const sw_carrier *c);
/* The backend class of block carriers: the tag of its shipped (sealed,
 * empty) capability set. */
SW_API const sw_carrier_class *sw_blockdev_class(void);
/* The device of a block carrier (borrowed; NULL for other carriers),
 * kept after release. */
SW_API sw_blockdev *sw_blockdev_of(const sw_carrier *c);
/* The extent's byte offset and length (0 and 0 after release). */
SW_API int64_t sw_blockdev_carrier_offset(sw_carrier *c);
SW_API int64_t sw_blockdev_carrier_extent(sw_carrier *c);

/*
 * Bulk transfers of count bytes starting at byte offset within c's slots
 * (byte offset 0 is slot 0): SW_EINDEX "Carrier index out of range"
 * outside the slots, released and faulted as element access, then the
 * outcome as sw_blockdev_read. A write needs a mutable carrier and bumps
 * the version once, when the transfer starts.
 */
SW_API sw_status sw_blockdev_carrier_read(sw_carrier *c, int64_t offset,
                                          int64_t count, void *buf);
SW_API sw_status sw_blockdev_carrier_write(sw_carrier *c, int64_t offset,
                                           int64_t count, const void *buf);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_BLOCKDEV_H */
