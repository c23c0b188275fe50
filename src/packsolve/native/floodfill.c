/* Flood fill accelerators: packsolve.native.floodfill.
 *
 * scanline(match, height, width, row, col) -> bytes
 *   match   height*width bytes, row-major, nonzero where the pixel has the clicked colour
 *   returns height*width bytes, 1 for every pixel filled from (row, col): the scanline (span)
 *           fill, which fills a whole run of a row at once and seeds the runs it touches
 *           above and below.
 *
 * reach(mask, height, width, row, col) -> int
 *   the number of nonzero mask pixels 4-connected to (row, col) inside the mask, by a
 *   pixel-by-pixel breadth-first search. verify uses it to check a fill is one region; it shares
 *   no code with scanline so a bug in one cannot hide a bug in the other.
 *
 * Both run in time linear in the pixels; even 16 million pixels take a fraction of a second, so
 * they need no cooperative time checks: the caller charges the budget with the pixel count.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_ssize_t *data;
    Py_ssize_t len, cap;
} Stack;

static int push(Stack *s, Py_ssize_t v) {
    if (s->len == s->cap) {
        Py_ssize_t cap = s->cap ? s->cap * 2 : 1024;
        Py_ssize_t *data = realloc(s->data, (size_t)cap * sizeof(Py_ssize_t));
        if (!data)
            return -1;
        s->data = data;
        s->cap = cap;
    }
    s->data[s->len++] = v;
    return 0;
}

static int check_args(Py_buffer *buf, Py_ssize_t h, Py_ssize_t w, Py_ssize_t r, Py_ssize_t c) {
    if (h <= 0 || w <= 0 || buf->len != h * w) {
        PyErr_SetString(PyExc_ValueError, "buffer length must be height * width");
        return -1;
    }
    if (r < 0 || r >= h || c < 0 || c >= w) {
        PyErr_SetString(PyExc_ValueError, "start pixel outside the image");
        return -1;
    }
    return 0;
}

static PyObject *scanline(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t h, w, r0, c0;
    if (!PyArg_ParseTuple(args, "y*nnnn", &buf, &h, &w, &r0, &c0))
        return NULL;
    if (check_args(&buf, h, w, r0, c0) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const uint8_t *match = buf.buf;
    PyObject *out = PyBytes_FromStringAndSize(NULL, h * w);
    if (!out) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    uint8_t *filled = (uint8_t *)PyBytes_AS_STRING(out);
    memset(filled, 0, (size_t)(h * w));
    Stack stack = {0};
    int failed = 0;
    if (match[r0 * w + c0] && push(&stack, r0 * w + c0) < 0)
        failed = 1;
    Py_BEGIN_ALLOW_THREADS
    while (!failed && stack.len) {
        Py_ssize_t p = stack.data[--stack.len];
        if (filled[p])
            continue;
        Py_ssize_t r = p / w, base = r * w, left = p - base, right = left;
        while (left > 0 && match[base + left - 1])
            left--;
        while (right + 1 < w && match[base + right + 1])
            right++;
        memset(filled + base + left, 1, (size_t)(right - left + 1));
        for (int d = -1; d <= 1 && !failed; d += 2) {
            Py_ssize_t nr = r + d;
            if (nr < 0 || nr >= h)
                continue;
            const uint8_t *m = match + nr * w;
            const uint8_t *f = filled + nr * w;
            /* Seed one pixel per run touching [left, right]; runs are filled whole. */
            for (Py_ssize_t c = left; c <= right; c++) {
                if (m[c] && !f[c] && (c == left || !m[c - 1])) {
                    if (push(&stack, nr * w + c) < 0) {
                        failed = 1;
                        break;
                    }
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(stack.data);
    PyBuffer_Release(&buf);
    if (failed) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    return out;
}

static PyObject *reach(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t h, w, r0, c0;
    if (!PyArg_ParseTuple(args, "y*nnnn", &buf, &h, &w, &r0, &c0))
        return NULL;
    if (check_args(&buf, h, w, r0, c0) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const uint8_t *mask = buf.buf;
    if (!mask[r0 * w + c0]) {
        PyBuffer_Release(&buf);
        return PyLong_FromLong(0);
    }
    uint8_t *seen = calloc((size_t)(h * w), 1);
    Py_ssize_t *queue = malloc((size_t)(h * w) * sizeof(Py_ssize_t));
    if (!seen || !queue) {
        free(seen);
        free(queue);
        PyBuffer_Release(&buf);
        return PyErr_NoMemory();
    }
    Py_ssize_t head = 0, tail = 0;
    queue[tail++] = r0 * w + c0;
    seen[r0 * w + c0] = 1;
    Py_BEGIN_ALLOW_THREADS
    while (head < tail) {
        Py_ssize_t p = queue[head++], r = p / w, c = p % w;
        Py_ssize_t next[4] = {r > 0 ? p - w : -1, r + 1 < h ? p + w : -1, c > 0 ? p - 1 : -1,
                              c + 1 < w ? p + 1 : -1};
        for (int k = 0; k < 4; k++) {
            Py_ssize_t q = next[k];
            if (q >= 0 && mask[q] && !seen[q]) {
                seen[q] = 1;
                queue[tail++] = q;
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(seen);
    free(queue);
    PyBuffer_Release(&buf);
    return PyLong_FromSsize_t(tail);
}

static PyMethodDef METHODS[] = {
    {"scanline", scanline, METH_VARARGS, "Scanline flood fill of a 0/1 match buffer; returns the filled buffer."},
    {"reach", reach, METH_VARARGS, "Count mask pixels 4-connected to the start inside the mask (BFS)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "floodfill", "Flood fill accelerators.", -1, METHODS};

PyMODINIT_FUNC PyInit_floodfill(void) { return PyModule_Create(&MODULE); }
