/*
 * Moves from Python: MoveOperation and the built-in move classes, the
 * move registry keyed by carrier classes, move() and move_async() with
 * their completion handles (AwaitResult, AwaitMove).
 *
 * The library owns the rules (validation order, routes, commit, autograd,
 * the asynchronous worker); this file maps Python classes to the
 * library's move keys and move classes. A carrier class is a move key by
 * identity: CPU, Generic and FileBacked themselves are the library's
 * built-in keys, every other class (a Python subclass) is keyed by the
 * class object, which is also the dispatch tag its instances carry. Each
 * MoveOperation class has one library move class, made on first use: its
 * pins come from the source_class and destination_class attributes, and
 * its copy hook is the native copy of its nearest built-in base unless the
 * class overrides _copy, in which case the hook calls self._copy(...).
 */
#ifndef SWPY_MOVE_H
#define SWPY_MOVE_H

#include "module.h"
#include "operation.h"

#include "strideweave/interop.h"

/* Creates the move types and functions. Returns 0, or -1 with an
 * exception set. */
int swpy_move_init(PyObject *module, swpy_state *st);

/* Drops the registrations made from Python and the move state. */
void swpy_move_clear(swpy_state *st);

/* The Python class of a library move class (borrowed). */
PyTypeObject *swpy_move_type_of_class(swpy_state *st, const sw_move_class *cls);

/*
 * Runs a move operation on Python arguments (tensor, destination):
 * recorded (SWPY_RUN_FORWARD) or lowered. Returns the result Tensor, or
 * NULL with an exception set.
 */
PyObject *swpy_move_run(swpy_state *st, sw_op *op, PyObject *const *args,
                        Py_ssize_t nargs, swpy_run_mode mode);

/* A completion handle of type (AwaitResult or a subclass) for req, whose
 * reference it takes (also on failure). Returns NULL with an exception
 * set. */
PyObject *swpy_await_new(swpy_state *st, PyTypeObject *type,
                         sw_move_request *req);

#endif /* SWPY_MOVE_H */
