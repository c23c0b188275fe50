/* Sudoku search on bit-parallel digit bands: packsolve.native.sudoku_bands.
 *
 * count(grid, max_solutions, node_limit, deadline) -> (stop, count, solution, nodes)
 *   the same contract as packsolve.native.sudoku.count (see there).
 * count_batch(grids, max_solutions) -> (counts, solutions, nodes)
 *   grids is n*81 bytes; counts n bytes, solutions n*81 ASCII digits ('0' where none); the whole
 *   loop runs in C so a benchmark can time the solver alone, as tdoku's harness does.
 *
 * The state holds, for each digit and each band of three rows, a 27-bit set of the cells
 * where the digit may still go (bit = row-in-band * 9 + column). Within a band a digit fills
 * one cell of each row and one of each box, the rows matched to the boxes one to one: the
 * nine row-box segments of the band that take part in some such matching (a "triad" table
 * of 512 entries) are the only ones kept, which applies locked candidates (pointing and
 * claiming) for the band in one step. A row left with one cell places the digit (hidden
 * single); a column left in one band and one row of it does too; a cell left with one digit
 * (found bit-sliced over the nine digits) is a naked single. Only digit-bands that changed
 * are revisited. Search branches on a cell with two candidates when there is one, else on
 * a cell with the fewest.
 */
#include "sudoku_common.h"

#define BAND 0x7FFFFFFu

static uint16_t TRIAD[512];       /* segments (row*3 + box) kept by some row-box matching */
static uint32_t SEG_CELLS[512];   /* 27-bit cells of a set of segments */
static uint8_t BOX_OCC[512];      /* 9-bit row -> 3-bit set of its boxes with a candidate */
static uint8_t SINGLE[512];       /* 9-bit row -> 1 when it holds exactly one cell */
/* 27-bit band -> 3-bit set of its rows that hold a cell */
#define BOX_OCC_ROWS(u) (((u) & 0x1FFu ? 1u : 0u) | ((u) & (0x1FFu << 9) ? 2u : 0u) | ((u) >> 18 ? 4u : 0u))
static uint32_t BAND_PEERS[27];   /* cells of the same row or box inside the band, itself excluded */
static uint32_t COLUMN[27];       /* the three cells of the cell's column inside a band */
static uint32_t ROW[27];          /* the nine cells of the cell's row */
static uint32_t SEGMENT[27];      /* the three cells of the cell's row inside its box */

typedef struct {
    uint32_t f[27];      /* f[digit * 3 + band] */
    uint32_t open[3];    /* cells not placed yet, per band */
    uint32_t changed;    /* digit-bands to revisit, bit digit * 3 + band */
    uint32_t cols[9];    /* per digit: the columns of each band holding it when its stack triads last held */
} State;


static void init_tables(void) {
    static const int PERMS[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int s = 0; s < 512; s++) {
        uint16_t keep = 0;
        for (int p = 0; p < 6; p++) {
            uint16_t m = 0;
            for (int r = 0; r < 3; r++) m |= (uint16_t)(1u << (r * 3 + PERMS[p][r]));
            if ((s & m) == m) keep |= m;
        }
        TRIAD[s] = keep;
        uint32_t cells = 0;
        for (int seg = 0; seg < 9; seg++)
            if (s >> seg & 1) cells |= 7u << ((seg / 3) * 9 + (seg % 3) * 3);
        SEG_CELLS[s] = cells;
        SINGLE[s] = s && !(s & (s - 1));
        BOX_OCC[s] = (uint8_t)(((s & 7) != 0) | ((s & 070) != 0) << 1 | ((s & 0700) != 0) << 2);
    }
    for (int k = 0; k < 27; k++) {
        int r = k / 9, c = k % 9;
        uint32_t peers = 0x1FFu << (r * 9);
        for (int i = 0; i < 3; i++) peers |= 7u << (i * 9 + (c / 3) * 3);
        BAND_PEERS[k] = peers & ~(1u << k);
        COLUMN[k] = (1u << c) | (1u << (9 + c)) | (1u << (18 + c));
        ROW[k] = 0x1FFu << (r * 9);
        SEGMENT[k] = 7u << (r * 9 + (c / 3) * 3);
    }
}

/* Place digit d in band b at bit k: clear its row, box and column peers and the cell's other digits. */
static inline void place(State *s, int d, int b, int k) {
    uint32_t bit = 1u << k, changed = 0;
    s->open[b] &= ~bit;
    /* the cell's other digits (this digit's own bit is put back below) */
    for (int e = 0; e < 9; e++) {
        int j = e * 3 + b;
        uint32_t f = s->f[j];
        changed |= (uint32_t)((f & bit) != 0) << j;
        s->f[j] = f & ~bit;
    }
    int i = d * 3 + b;
    s->f[i] = (s->f[i] | bit) & ~BAND_PEERS[k];
    changed |= 7u << (d * 3);
    for (int o = 1; o < 3; o++) s->f[d * 3 + (b + o) % 3] &= ~COLUMN[k];
    s->changed |= changed;
}

/* Keep the segments of a band or stack that take part in a matching; 0 when none is left. */
static inline uint32_t band_triad(uint32_t f) {
    unsigned occ = BOX_OCC[f & 0x1FF] | BOX_OCC[(f >> 9) & 0x1FF] << 3 | BOX_OCC[f >> 18] << 6;
    return f & SEG_CELLS[TRIAD[occ]];
}

/* The columns of each band that hold a cell of f (band b's nine at bits 9b..9b+8). */
static inline uint32_t columns(const uint32_t *f) {
    uint32_t c = 0;
    for (int b = 0; b < 3; b++) c |= ((f[b] | f[b] >> 9 | f[b] >> 18) & 0x1FF) << (b * 9);
    return c;
}

/* The same for the three stacks of digit d, whose columns are cols: columns matched one to one
 * with the bands' boxes. Returns 0 on a contradiction. */
static inline int stack_triads(uint32_t *f, uint32_t cols) {
    uint32_t keep[3] = {0, 0, 0};
    for (int t = 0; t < 9; t += 3) {
        unsigned occ = (cols >> t & 7) | (cols >> (9 + t) & 7) << 3 | (cols >> (18 + t) & 7) << 6;
        unsigned k = TRIAD[occ];
        if (!k) return 0;
        for (int b = 0; b < 3; b++) keep[b] |= (k >> (b * 3) & 7) << t;
    }
    for (int b = 0; b < 3; b++) f[b] &= keep[b] | keep[b] << 9 | keep[b] << 18;
    return 1;
}

/* Revisit changed digits to a fixpoint: band and stack triads, then rows left with one cell.
 * 0 on a contradiction. */
static int settle_bands(State *s) {
    while (s->changed) {
        int d = __builtin_ctz(s->changed) / 3;
        s->changed &= ~(7u << (d * 3));
        uint32_t *f = s->f + d * 3;
        for (;;) {
            uint32_t g0 = band_triad(f[0]), g1 = band_triad(f[1]), g2 = band_triad(f[2]);
            if (!(g0 && g1 && g2)) return 0;
            f[0] = g0;
            f[1] = g1;
            f[2] = g2;
            /* the stack triads read only the columns: the same columns as when they last held
             * change nothing */
            uint32_t cols = columns(f);
            if (cols == s->cols[d]) break;
            if (!stack_triads(f, cols)) return 0;
            if (f[0] == g0 && f[1] == g1 && f[2] == g2) {
                s->cols[d] = cols;
                break;
            }
        }
        /* rows (band * 3 + row) left with one cell that is not placed yet: hidden singles */
        unsigned rows = 0;
        for (int b = 0; b < 3; b++) {
            uint32_t g = f[b], u = g & s->open[b];
            unsigned one = SINGLE[g & 0x1FF] | SINGLE[(g >> 9) & 0x1FF] << 1 | SINGLE[g >> 18] << 2;
            unsigned open = BOX_OCC_ROWS(u);
            rows |= (one & open) << (b * 3);
        }
        while (rows) {
            int r = __builtin_ctz(rows);
            rows &= rows - 1;
            int b = r / 3;
            uint32_t cell = f[b] & (0x1FFu << (r % 3 * 9)) & s->open[b];
            if (cell) place(s, d, b, __builtin_ctz(cell));
        }
    }
    return 1;
}

/* Place every naked single (a cell left with one digit); -1 on a contradiction, else how many.
 * Hidden singles need no pass of their own: the triads leave a row with one cell for them. */
static int singles(State *s) {
    int placed = 0;
    for (int b = 0; b < 3; b++) {
        uint32_t once = 0, twice = 0;
        for (int d = 0; d < 9; d++) {
            uint32_t f = s->f[d * 3 + b];
            twice |= once & f;
            once |= f;
        }
        if (s->open[b] & ~once) return -1; /* a cell with no digit left */
        uint32_t naked = s->open[b] & ~twice;
        while (naked) {
            int k = __builtin_ctz(naked);
            naked &= naked - 1;
            for (int d = 0; d < 9; d++) {
                if (s->f[d * 3 + b] >> k & 1) {
                    if (s->open[b] >> k & 1) {
                        place(s, d, b, k);
                        placed++;
                    }
                    break;
                }
            }
        }
    }
    return placed;
}

static int propagate(State *s) {
    for (;;) {
        if (!settle_bands(s)) return 0;
        if (!(s->open[0] | s->open[1] | s->open[2])) return 1;
        int placed = singles(s);
        if (placed < 0) return 0;
        if (!placed) return 1;
    }
}


/* The cell to branch on (band * 27 + bit): two candidates if any, else the fewest. */
static int pick(const State *s) {
    int best = -1, best_n = 10;
    for (int b = 0; b < 3; b++) {
        uint32_t once = 0, twice = 0, thrice = 0;
        for (int d = 0; d < 9; d++) {
            uint32_t f = s->f[d * 3 + b];
            thrice |= twice & f;
            twice |= once & f;
            once |= f;
        }
        uint32_t pair = s->open[b] & twice & ~thrice;
        if (pair) return b * 27 + __builtin_ctz(pair);
        uint32_t open = s->open[b];
        while (open) {
            int k = __builtin_ctz(open);
            open &= open - 1;
            int n = 0;
            for (int d = 0; d < 9; d++) n += s->f[d * 3 + b] >> k & 1;
            if (n < best_n) {
                best_n = n;
                best = b * 27 + k;
            }
        }
    }
    return best;
}

static void search(const State *s, Search *x) {
    if (out_of_budget(x)) return;
    if (!(s->open[0] | s->open[1] | s->open[2])) {
        if (x->count == 0) {
            for (int i = 0; i < 27; i++) {
                uint32_t f = s->f[i];
                int b = i % 3;
                while (f) {
                    int k = __builtin_ctz(f);
                    f &= f - 1;
                    x->solution[b * 27 + k] = (uint8_t)(i / 3 + 1);
                }
            }
        }
        x->count++;
        return;
    }
    int cell = pick(s);
    int b = cell / 27, k = cell % 27;
    for (int d = 0; d < 9; d++) {
        if (!(s->f[d * 3 + b] >> k & 1)) continue;
        State t = *s;
        place(&t, d, b, k);
        if (propagate(&t)) {
            search(&t, x);
            if (x->stop || x->count >= x->max_solutions) return;
        }
    }
}

/* Set up the givens (grid bytes 0..9, checked by the caller); 0 when they contradict each other. */
static int start(State *s, const uint8_t *grid) {
    for (int i = 0; i < 27; i++) s->f[i] = BAND;
    for (int b = 0; b < 3; b++) s->open[b] = BAND;
    for (int d = 0; d < 9; d++) s->cols[d] = 0;
    s->changed = 0;
    for (int cell = 0; cell < 81; cell++) {
        if (!grid[cell]) continue;
        int d = grid[cell] - 1, b = cell / 27, k = cell % 27;
        if (!(s->f[d * 3 + b] >> k & 1)) return 0;
        place(s, d, b, k);
    }
    s->changed = (1u << 27) - 1;
    return propagate(s);
}

static void solve(const uint8_t *grid, Search *x) {
    State s;
    if (start(&s, grid)) search(&s, x);
    else x->nodes = 1; /* the root was expanded and refuted by propagation */
}

static PyObject *count(PyObject *self, PyObject *args) {
    uint8_t grid[81];
    Search x;
    if (!count_args(args, grid, &x)) return NULL;
    solve(grid, &x);
    return count_result(&x);
}

static PyObject *count_batch(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int max_solutions;
    if (!PyArg_ParseTuple(args, "y*i", &buf, &max_solutions)) return NULL;
    if (buf.len % 81) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "grids must be a multiple of 81 bytes");
        return NULL;
    }
    Py_ssize_t n = buf.len / 81;
    PyObject *counts = PyBytes_FromStringAndSize(NULL, n);
    PyObject *solutions = PyBytes_FromStringAndSize(NULL, n * 81);
    if (!counts || !solutions) {
        Py_XDECREF(counts);
        Py_XDECREF(solutions);
        PyBuffer_Release(&buf);
        return NULL;
    }
    char *cp = PyBytes_AS_STRING(counts), *sp = PyBytes_AS_STRING(solutions);
    long long nodes = 0;
    for (Py_ssize_t p = 0; p < n; p++) {
        uint8_t grid[81];
        if (!read_grid(&buf, p * 81, grid)) {
            Py_DECREF(counts);
            Py_DECREF(solutions);
            PyBuffer_Release(&buf);
            return NULL;
        }
        Search x;
        memset(&x, 0, sizeof x);
        x.node_limit = -1;
        x.deadline = -1;
        x.max_solutions = max_solutions < 1 ? 1 : max_solutions;
        solve(grid, &x);
        nodes += x.nodes;
        cp[p] = (char)x.count;
        for (int i = 0; i < 81; i++) sp[p * 81 + i] = (char)('0' + (x.count ? x.solution[i] : 0));
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("NNL", counts, solutions, nodes);
}

static PyMethodDef methods[] = {
    {"count", count, METH_VARARGS,
     "count(grid, max_solutions, node_limit, deadline) -> (stop, count, solution, nodes)"},
    {"count_batch", count_batch, METH_VARARGS,
     "count_batch(grids, max_solutions) -> (counts, solutions, nodes) over n*81-byte grids"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "sudoku_bands",
                                    "Sudoku search on bit-parallel digit bands with row-box triads.",
                                    -1, methods};

PyMODINIT_FUNC PyInit_sudoku_bands(void) {
    init_tables();
    return PyModule_Create(&module);
}
