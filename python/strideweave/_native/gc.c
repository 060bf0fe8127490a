/*
 * Garbage collection through library references.
 *
 * The problem. Every carrier, tensor and operation object is the peer of a
 * library object (see py_carrier.h): it owns one reference to it, and while
 * the library object has other holders, the library object owns one
 * reference to the peer (the toggle reference, sw_peer_hooks in base.h).
 * The cycle collector sees neither the library's references nor the
 * toggle reference, so a cycle through a library object (a carrier whose
 * attributes hold a tensor over it, x.grad = x, an operation whose ctx
 * holds its result) looked referenced from outside and was never freed.
 *
 * What the collector needs. It asks each object's tp_traverse for the
 * references the object holds; an object whose count exceeds the
 * references reported by the objects it examines is reachable from
 * outside, and so is everything reported from it. Reporting a reference
 * that does not exist, or one twice, can free an object still in use;
 * leaving one out only keeps garbage. So every report here stands for one
 * real Python reference, and none is reported twice.
 *
 * The invariant. For every library object X with a peer PX: if X is
 * reachable (from a Python reference the collector cannot explain, or
 * from a library reference no report explains), so is PX, through
 * reported references. Given it, PX may report the Python references X
 * holds (a Generic store), and a library object without a peer that X
 * alone holds (every one of its references is X's) is as much a part of
 * PX as X is: the walk below goes on into it.
 *
 * The toggle reference of the peer P of library object O (held while O
 * has other holders) is reported once, by exactly one of:
 *   (a) P itself, for a carrier, when every other reference to O belongs
 *       to a tensor whose object exists: each of those objects holds a
 *       real reference to P (tensor.carrier) and reports it, so O
 *       reachable means one of the tensors is, hence its object, hence P
 *       (CarrierObject.tensor_peers counts those objects);
 *   (b) the holder, when one object met by a walk holds all the other
 *       references to O (refcount - 1 equals the number of times it
 *       holds O): O reachable means the holder is, hence the peer whose
 *       walk met it, which reports P.
 * They exclude each other: a walk meets a carrier through a tensor
 * without a peer or through an Evictable, never through the tensor of the
 * walking object itself (whose carrier edge (a) covers). When neither
 * applies (two holders apart, a holder no walk meets: a pending move, a
 * DLPack capsule, a graph node shared by two results, a chain deeper than
 * WALK_DEPTH), nothing reports the toggle reference: the peer counts as
 * referenced from outside, and everything it holds survives.
 *
 * The walk. From the library object of a peer, the edges are: tensor ->
 * its carrier (not from the walking tensor itself), its autograd context
 * and its gradient; operation -> its saved inputs (counted with
 * multiplicity) and an EvictableOperation's primary operation; carrier ->
 * a Generic store (a Python object) and an Evictable's two tiers. A
 * target with a peer is reported by (b) and ends the walk there (its own
 * object walks on from it); a target without one is walked into when the
 * holder holds all its references.
 *
 * Results without a carrier object. A Tensor object of a CPU result
 * whose carrier has no object yet names the module's CPU placeholder
 * (tensor.h) and is not counted in any tensor_peers: the carrier has no
 * peer, and a CPU carrier holds no Python object, so there is nothing to
 * report from it. When its object is made later while other such tensors
 * hold the carrier, rule (a) does not apply until they go, and the object
 * counts as referenced from outside; it holds nothing but its carrier, so
 * no cycle passes through it.
 *
 * Other threads. Library code that runs without the GIL (kernels, reverse
 * passes, asynchronous moves) changes counts and fields meanwhile, but a
 * collection traverses each object more than once and needs the same
 * reports each time. While such a call is in progress anywhere
 * (swpy_nogil_calls, sw_move_pending_count), only the objects' own Python
 * references are reported: toggle references count as external and
 * cycles wait for a later collection. Both numbers rise only with the GIL
 * held, so never during a collection; if one falls during a collection,
 * the later traversals only add reachability.
 *
 * Clearing. An object the collector found unreachable is garbage together
 * with its library object (by the invariant). The tp_clear of a tensor
 * object drops its gradient and context first: every cycle among library
 * objects goes through one of those (carriers hold only carriers and
 * Python objects, operations only tensors and operations), and it holds a
 * tensor whose object exists (those made from Python have objects for as
 * long as they live). Carriers and operations only let go of theirs.
 */
#include "gc.h"

#include "py_carrier.h"
#include "gil.h"
#include "operation.h"
#include "py_tensor.h"

#include "strideweave/evictable.h"
#include "strideweave/interop.h"

/* How many library objects without a peer a walk goes through in a row. */
#define WALK_DEPTH 64

/* Saved inputs beyond this many are not walked (their multiplicities are
 * counted pairwise). */
#define WALK_INPUTS 64

_Atomic long swpy_nogil_calls = 0;

typedef struct walk {
    visitproc visit;
    void *arg;
} walk;

/* Whether only Python references may be reported now (see above). */
static int conservative(void) {
    return atomic_load(&swpy_nogil_calls) > 0 || sw_move_pending_count() > 0;
}

static int walk_tensor(walk *w, sw_tensor *t, int root, int depth);
static int walk_op(walk *w, sw_op *op, int depth);
static int walk_carrier(walk *w, sw_carrier *c, int depth);

/*
 * The edges from a walked object that holds target `times` times: the
 * target's peer when that holder holds all its other references (rule
 * (b)); the target itself, walked, when it has no peer and the holder
 * holds all its references.
 */
static int edge_tensor(walk *w, sw_tensor *t, int64_t times, int depth) {
    if (t == NULL) {
        return 0;
    }
    PyObject *peer = sw_tensor_get_peer(t);
    int64_t refs = sw_tensor_refcount(t);
    if (peer != NULL) {
        return refs - 1 == times ? w->visit(peer, w->arg) : 0;
    }
    return refs == times && depth < WALK_DEPTH ? walk_tensor(w, t, 0, depth + 1)
                                               : 0;
}

static int edge_op(walk *w, sw_op *op, int64_t times, int depth) {
    if (op == NULL) {
        return 0;
    }
    PyObject *peer = sw_op_get_peer(op);
    int64_t refs = sw_op_refcount(op);
    if (peer != NULL) {
        return refs - 1 == times ? w->visit(peer, w->arg) : 0;
    }
    return refs == times && depth < WALK_DEPTH ? walk_op(w, op, depth + 1) : 0;
}

static int edge_carrier(walk *w, sw_carrier *c, int64_t times, int depth) {
    if (c == NULL) {
        return 0;
    }
    PyObject *peer = sw_carrier_get_peer(c);
    int64_t refs = sw_carrier_refcount(c);
    if (peer != NULL) {
        return refs - 1 == times ? w->visit(peer, w->arg) : 0;
    }
    return refs == times && depth < WALK_DEPTH ? walk_carrier(w, c, depth + 1)
                                               : 0;
}

static int walk_tensor(walk *w, sw_tensor *t, int root, int depth) {
    int r = 0;
    if (!root) {
        r = edge_carrier(w, sw_tensor_carrier(t), 1, depth);
    }
    if (r == 0) {
        r = edge_op(w, sw_tensor_autograd_ctx(t), 1, depth);
    }
    if (r == 0) {
        r = edge_tensor(w, sw_tensor_grad(t), 1, depth);
    }
    return r;
}

static int walk_op(walk *w, sw_op *op, int depth) {
    int32_t n = sw_op_ninputs(op);
    int r = 0;
    for (int32_t i = 0; r == 0 && n <= WALK_INPUTS && i < n; i++) {
        sw_tensor *t = sw_op_input(op, i);
        int first = 1;
        int64_t times = 0;
        for (int32_t j = 0; j < n; j++) {
            if (sw_op_input(op, j) == t) {
                first &= j >= i;
                times++;
            }
        }
        if (first) {
            r = edge_tensor(w, t, times, depth);
        }
    }
    if (r == 0 && sw_op_is_evictable(op)) {
        r = edge_op(w, sw_evictable_op_primary(op), 1, depth);
    }
    return r;
}

static int walk_carrier(walk *w, sw_carrier *c, int depth) {
    if (sw_generic_ops(c) == &swpy_host_ops) {
        /* The store is a Python object; its one reference is c's. */
        PyObject *store = sw_generic_store(c);
        if (store != NULL) {
            int r = w->visit(store, w->arg);
            if (r != 0) {
                return r;
            }
        }
    }
    if (!sw_carrier_is_evictable(c)) {
        return 0;
    }
    sw_carrier *p = sw_evictable_primary(c), *s = sw_evictable_secondary(c);
    if (p == s) {
        return edge_carrier(w, p, 2, depth);
    }
    int r = edge_carrier(w, p, 1, depth);
    return r != 0 ? r : edge_carrier(w, s, 1, depth);
}

int swpy_gc_traverse_carrier(PyObject *self, visitproc visit, void *arg) {
    CarrierObject *o = (CarrierObject *)self;
    sw_carrier *c = o->carrier;
    if (c == NULL || sw_carrier_get_peer(c) != self) {
        return 0;
    }
    walk w = {visit, arg};
    if (conservative()) {
        /* A Generic store is this object's as before: the invariant needs
         * no report of a toggle reference. */
        if (sw_generic_ops(c) == &swpy_host_ops &&
            sw_generic_store(c) != NULL) {
            return visit((PyObject *)sw_generic_store(c), arg);
        }
        return 0;
    }
    int64_t refs = sw_carrier_refcount(c);
    if (refs > 1 && refs - 1 == o->tensor_peers) {
        /* Rule (a): the toggle reference, explained by tensor objects. */
        int r = visit(self, arg);
        if (r != 0) {
            return r;
        }
    }
    return walk_carrier(&w, c, 0);
}

int swpy_gc_traverse_tensor(PyObject *self, visitproc visit, void *arg) {
    sw_tensor *t = ((TensorObject *)self)->tensor;
    if (t == NULL || sw_tensor_get_peer(t) != self || conservative()) {
        return 0;
    }
    walk w = {visit, arg};
    return walk_tensor(&w, t, 1, 0);
}

int swpy_gc_traverse_op(PyObject *self, visitproc visit, void *arg) {
    sw_op *op = ((OperationObject *)self)->op;
    if (op == NULL || sw_op_get_peer(op) != self || conservative()) {
        return 0;
    }
    walk w = {visit, arg};
    return walk_op(&w, op, 0);
}
