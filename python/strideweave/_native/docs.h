/*
 * Docstrings from strideweave/_native_docs.py (see docs.c).
 */
#ifndef SWPY_DOCS_H
#define SWPY_DOCS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Attaches every docstring of DOCS to the object its path names; -1 with
 * an exception on an unknown path, a non-str text or a conflict. */
int swpy_docs_apply(PyObject *module);

#endif
