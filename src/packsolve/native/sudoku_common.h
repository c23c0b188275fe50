/* What the two Sudoku searches (sudoku.c, sudoku_bands.c) share: the search record, its budget
 * checks and the Python side of count(grid, max_solutions, node_limit, deadline). */
#ifndef PACKSOLVE_SUDOKU_COMMON_H
#define PACKSOLVE_SUDOKU_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct {
    long long nodes;
    long long node_limit;
    double deadline;
    int max_solutions;
    int count;
    int stop;
    uint8_t solution[81];
} Search;

static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Count one node; 1 when the node cap or the deadline stops the search (the clock is read every
 * 1024 nodes). */
static inline int out_of_budget(Search *x) {
    x->nodes++;
    if (x->node_limit >= 0 && x->nodes > x->node_limit) {
        x->stop = 1;
        return 1;
    }
    if (x->deadline >= 0 && (x->nodes & 1023) == 0 && monotonic() >= x->deadline) {
        x->stop = 2;
        return 1;
    }
    return 0;
}

/* Copy 81 grid bytes from buf at offset; 0 with ValueError set when a byte is not 0..9. */
static int read_grid(const Py_buffer *buf, Py_ssize_t at, uint8_t *grid) {
    memcpy(grid, (const uint8_t *)buf->buf + at, 81);
    for (int i = 0; i < 81; i++) {
        if (grid[i] > 9) {
            PyErr_SetString(PyExc_ValueError, "grid bytes must be 0..9");
            return 0;
        }
    }
    return 1;
}

/* Parse count()'s arguments into grid and a fresh search record, and the optional flag after them
 * into *flag when flag is not NULL (a search with two variants); 0 with an exception set. */
static int count_args(PyObject *args, uint8_t *grid, Search *x, int *flag) {
    Py_buffer buf;
    int max_solutions;
    long long node_limit;
    double deadline;
    if (!(flag ? PyArg_ParseTuple(args, "y*iLd|p", &buf, &max_solutions, &node_limit, &deadline, flag)
               : PyArg_ParseTuple(args, "y*iLd", &buf, &max_solutions, &node_limit, &deadline)))
        return 0;
    int ok = buf.len == 81;
    if (!ok) PyErr_SetString(PyExc_ValueError, "grid must be 81 bytes");
    else ok = read_grid(&buf, 0, grid);
    PyBuffer_Release(&buf);
    memset(x, 0, sizeof *x);
    x->node_limit = node_limit;
    x->deadline = deadline;
    x->max_solutions = max_solutions < 1 ? 1 : max_solutions;
    return ok;
}

/* count()'s result: (stop, count, first solution as 81 digits or None, nodes). */
static PyObject *count_result(const Search *x) {
    PyObject *solution;
    if (x->count) {
        char digits[81];
        for (int i = 0; i < 81; i++) digits[i] = (char)('0' + x->solution[i]);
        solution = PyUnicode_FromStringAndSize(digits, 81);
    } else {
        solution = Py_NewRef(Py_None);
    }
    return Py_BuildValue("iiNL", x->stop, x->count, solution, x->nodes);
}

#endif
