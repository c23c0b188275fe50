/* Compact additive pattern databases for sliding tiles: packsolve.native.pattern_db.
 *
 * build(n, group) -> bytes
 *   For every placement of the group's k tiles on the n x n board, the fewest moves of those
 *   tiles that bring them home while the other tiles move for free (255: unreachable). The
 *   table holds nn!/(nn-k)! bytes (nn = n*n), indexed by rank(): the placement as a number in
 *   the mixed radix nn, nn-1, ..., nn-k+1, each tile's position counted among the cells the
 *   tiles before it left free. On 5x5 a 6-tile group gives 127,512,000 entries, half the
 *   25**6 of the sparse index the 4-tile tables use.
 * rank(n, positions) -> int: that index of a placement (the search computes it the same way).
 *
 * The breadth-first search runs over (placement, blank region): with the pattern tiles fixed
 * the blank roams its region of free cells at no cost, so a state keeps only the lowest cell of
 * that region. Each layer is a bitmap over rank * nn + cell (cur), another takes the next layer
 * (nxt), a third marks every state seen: three bitmaps of nn bits per placement (3 x 399 MB for
 * 6 tiles on 5x5) besides the table itself.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXC 25
#define MAXK 8

typedef struct {
    int n, nn, k;
    uint32_t all, not_first_col, not_last_col;
    uint32_t nbr[MAXC]; /* the cells next to each cell, as a mask */
} Geometry;

static void geometry(Geometry *g, int n, int k) {
    g->n = n;
    g->nn = n * n;
    g->k = k;
    g->all = (uint32_t)((1ull << g->nn) - 1);
    g->not_first_col = g->not_last_col = g->all;
    for (int r = 0; r < n; r++) {
        g->not_first_col &= ~(1u << (r * n));
        g->not_last_col &= ~(1u << (r * n + n - 1));
    }
    for (int p = 0; p < g->nn; p++) {
        int r = p / n, c = p % n;
        uint32_t m = 0;
        if (r > 0) m |= 1u << (p - n);
        if (r < n - 1) m |= 1u << (p + n);
        if (c > 0) m |= 1u << (p - 1);
        if (c < n - 1) m |= 1u << (p + 1);
        g->nbr[p] = m;
    }
}

/* The cells of free reachable from the cells of seed. */
static inline uint32_t region(const Geometry *g, uint32_t seed, uint32_t free) {
    uint32_t r = seed;
    for (;;) {
        uint32_t grown = r | ((r << 1) & g->not_first_col) | ((r >> 1) & g->not_last_col) |
                         (r << g->n) | (r >> g->n);
        grown &= free;
        grown |= seed;
        if (grown == r) return r;
        r = grown;
    }
}

static inline uint64_t rank(const Geometry *g, const int *pos) {
    uint64_t r = 0;
    for (int i = 0; i < g->k; i++) {
        int p = pos[i], below = 0;
        /* comparisons, not a popcount: without -mpopcnt that is a library call */
        for (int j = 0; j < i; j++) below += pos[j] < p;
        r = r * (uint64_t)(g->nn - i) + (uint64_t)(p - below);
    }
    return r;
}

static inline void unrank(const Geometry *g, uint64_t r, int *pos) {
    int digit[MAXK];
    for (int i = g->k - 1; i >= 0; i--) {
        digit[i] = (int)(r % (uint64_t)(g->nn - i));
        r /= (uint64_t)(g->nn - i);
    }
    uint32_t free = g->all;
    for (int i = 0; i < g->k; i++) {
        uint32_t f = free;
        for (int j = 0; j < digit[i]; j++) f &= f - 1;
        pos[i] = __builtin_ctz(f);
        free &= ~(1u << pos[i]);
    }
}

static uint64_t table_size(int nn, int k) {
    uint64_t size = 1;
    for (int i = 0; i < k; i++) size *= (uint64_t)(nn - i);
    return size;
}

/* Fill table by breadth-first search from the goal; 0 when the bitmaps cannot be allocated. */
static int bfs(const Geometry *g, const int *tiles, uint8_t *table) {
    uint64_t size = table_size(g->nn, g->k), states = size * (uint64_t)g->nn, words = states / 64 + 1;
    uint64_t *cur = calloc(words, 8), *nxt = calloc(words, 8), *seen = calloc(words, 8);
    if (!cur || !nxt || !seen) {
        free(cur);
        free(nxt);
        free(seen);
        return 0;
    }
    memset(table, 0xFF, size);
    uint64_t goal = rank(g, tiles);
    uint32_t occupied = 0;
    for (int i = 0; i < g->k; i++) occupied |= 1u << tiles[i];
    uint64_t st = goal * g->nn + (uint64_t)__builtin_ctz(region(g, 1u, g->all & ~occupied));
    cur[st / 64] |= 1ull << (st % 64);
    seen[st / 64] |= 1ull << (st % 64);
    table[goal] = 0;
    for (int depth = 1;; depth++) {
        int any = 0;
        for (uint64_t w = 0; w < words; w++) {
            uint64_t bits = cur[w];
            while (bits) {
                st = w * 64 + (uint64_t)__builtin_ctzll(bits);
                bits &= bits - 1;
                uint64_t r = st / g->nn;
                int cell = (int)(st % g->nn), pos[MAXK];
                unrank(g, r, pos);
                uint32_t occ = 0;
                for (int i = 0; i < g->k; i++) occ |= 1u << pos[i];
                uint32_t free = g->all & ~occ, blank = region(g, 1u << cell, free);
                /* gather the successors first and prefetch their bits: the bitmaps are far larger
                 * than the caches, and overlapping the misses is most of the speed */
                uint64_t succ[MAXK * 4], succ_rank[MAXK * 4];
                int m = 0;
                for (int i = 0; i < g->k; i++) {
                    int p = pos[i];
                    uint32_t to = g->nbr[p] & blank;
                    while (to) {
                        int q = __builtin_ctz(to);
                        to &= to - 1;
                        /* tile i steps into the blank's region at q; the blank is left at p */
                        pos[i] = q;
                        uint32_t left = region(g, 1u << p, (free | (1u << p)) & ~(1u << q));
                        uint64_t nr = rank(g, pos);
                        pos[i] = p;
                        succ_rank[m] = nr;
                        succ[m] = nr * g->nn + (uint64_t)__builtin_ctz(left);
                        __builtin_prefetch(&seen[succ[m] / 64]);
                        __builtin_prefetch(&table[nr]);
                        m++;
                    }
                }
                for (int j = 0; j < m; j++) {
                    uint64_t ns = succ[j];
                    if (seen[ns / 64] >> (ns % 64) & 1) continue;
                    seen[ns / 64] |= 1ull << (ns % 64);
                    nxt[ns / 64] |= 1ull << (ns % 64);
                    if (table[succ_rank[j]] == 0xFF) table[succ_rank[j]] = (uint8_t)depth;
                    any = 1;
                }
            }
        }
        if (!any) break;
        uint64_t *t = cur;
        cur = nxt;
        nxt = t;
        memset(nxt, 0, words * 8);
    }
    free(cur);
    free(nxt);
    free(seen);
    return 1;
}

/* Read n and a tuple of distinct tiles (or positions) 0..nn-1 into g and out; 0 with an exception set. */
static int read_group(PyObject *args, Geometry *g, int *out, int lowest) {
    int n;
    PyObject *group;
    if (!PyArg_ParseTuple(args, "iO!", &n, &PyTuple_Type, &group)) return 0;
    Py_ssize_t k = PyTuple_GET_SIZE(group);
    if (n < 2 || n > 5 || k < 1 || k > MAXK || k >= n * n) {
        PyErr_SetString(PyExc_ValueError, "n must be 2..5 and the group 1..8 tiles, fewer than n*n");
        return 0;
    }
    geometry(g, n, (int)k);
    uint32_t used = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        long t = PyLong_AsLong(PyTuple_GET_ITEM(group, i));
        if (t < lowest || t >= g->nn || (used >> t & 1)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "group entries must be distinct, in range");
            return 0;
        }
        used |= 1u << t;
        out[i] = (int)t;
    }
    return 1;
}

static PyObject *py_build(PyObject *self, PyObject *args) {
    Geometry g;
    int tiles[MAXK];
    if (!read_group(args, &g, tiles, 1)) return NULL;
    uint64_t size = table_size(g.nn, g.k);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!out) return NULL;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = bfs(&g, tiles, (uint8_t *)PyBytes_AS_STRING(out));
    Py_END_ALLOW_THREADS
    if (!ok) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    return out;
}

static PyObject *py_rank(PyObject *self, PyObject *args) {
    Geometry g;
    int pos[MAXK];
    if (!read_group(args, &g, pos, 0)) return NULL;
    return PyLong_FromUnsignedLongLong(rank(&g, pos));
}

static PyMethodDef methods[] = {
    {"build", py_build, METH_VARARGS,
     "build(n, group) -> bytes: fewest moves of the group's tiles to home them, for every placement, "
     "indexed by rank(n, positions); 255 where unreachable."},
    {"rank", py_rank, METH_VARARGS, "rank(n, positions) -> int: the table index of a placement."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "packsolve.native.pattern_db",
                                    "Compact (ranked) additive pattern databases for sliding tiles.", -1,
                                    methods};

PyMODINIT_FUNC PyInit_pattern_db(void) { return PyModule_Create(&module); }
