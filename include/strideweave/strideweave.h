/*
 * StrideWeave: tensors and autograd on hierarchical, CuTe-style layouts.
 *
 * The umbrella header. Each subsystem has its own header, named after it;
 * include this one to get the whole public API.
 */
#ifndef STRIDEWEAVE_H
#define STRIDEWEAVE_H

#include "strideweave/base.h"
#include "strideweave/layout.h"
#include "strideweave/carrier.h"
#include "strideweave/blockdev.h"
#include "strideweave/tensor.h"
#include "strideweave/representation.h"
#include "strideweave/op.h"
#include "strideweave/registry.h"
#include "strideweave/policy.h"
#include "strideweave/definition.h"
#include "strideweave/capability.h"
#include "strideweave/extension.h"
#include "strideweave/einops.h"
#include "strideweave/dlpack.h"
#include "strideweave/interop.h"
#include "strideweave/evictable.h"
#include "strideweave/profile.h"
#include "strideweave/threads.h"
#include "strideweave/tiled.h"
#include "strideweave/opencl.h"
#include "strideweave/softmax.h"
#include "strideweave/distributed.h"

#endif /* STRIDEWEAVE_H */
