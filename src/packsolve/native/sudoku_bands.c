/* Sudoku search on bit-parallel digit bands: packsolve.native.sudoku_bands.
 *
 * count(grid, max_solutions, node_limit, deadline, configs=False) -> (stop, count, solution, nodes)
 *   the same contract as packsolve.native.sudoku.count (see there).
 * count_batch(grids, max_solutions, configs=False) -> (counts, solutions, nodes)
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
 * are revisited.
 *
 * Two loops share these rules. band-triads (configs false) branches on a cell with two
 * candidates when there is one, else on a cell with the fewest: the trees of propagate's
 * per-cell search. band-configs (configs true) adds, at the fixpoint, a count of the digits
 * of each horizontal minirow (a row's three cells in a box, which hold three digits:
 * counted bit-sliced over the nine digits' segment sets), and branches as tdoku does: in
 * the band whose digits have the fewest row-box matchings in all, the digit with the
 * fewest, one child per matching (the digit kept to its three segments); a cell only when
 * every digit of every band has one matching left.
 */
#include "sudoku_common.h"
#ifdef __SSE2__
#include <emmintrin.h> /* baseline on x86_64; other machines take the plain loop */
#endif

#define BAND 0x7FFFFFFu

static uint16_t TRIAD[512];       /* segments (row*3 + box) kept by some row-box matching */
static uint32_t SEG_CELLS[512];   /* 27-bit cells of a set of segments */
static uint8_t BOX_OCC[512];      /* 9-bit row -> 3-bit set of its boxes with a candidate */
static uint8_t MATCHINGS[512];    /* 9-bit segments -> the row-box matchings (6 bits) they hold */
static uint8_t N_MATCHINGS[512];  /* how many */
static uint16_t MATCHING[6];      /* the three segments of each matching */
static uint16_t REACH[512];       /* segments -> the other segments of their rows and boxes */
static uint16_t BOUND[512];       /* segments -> those alone in their row or alone in their box */
#define X0 0x40201u               /* bit 0 of each row of a band */
#define LOW8 (0xFFu * X0)         /* bits 0-7 of each row */
#define HIGH (0x100u * X0)        /* bit 8 of each row */
static uint32_t BAND_PEERS[27];   /* cells of the same row or box inside the band, itself excluded */
static uint32_t COLUMN[27];       /* the three cells of the cell's column inside a band */
static uint32_t ROW[27];          /* the nine cells of the cell's row */
static uint32_t SEGMENT[27];      /* the three cells of the cell's row inside its box */

typedef struct {
    uint32_t f[27];      /* f[AT(digit, band)]: a band's nine digits side by side */
    uint32_t open[3];    /* cells not placed yet, per band */
    uint32_t changed;    /* digit-bands to revisit, bit AT(digit, band) */
    uint32_t cols[9];    /* per digit: the columns of each band holding it when its stack triads last held */
    int configs;         /* the band-configs loop: minirow counts, branching on a digit's matching */
    uint16_t occ[27];    /* the segments of f[i] as its last triad pass left them: right for every
                          * digit-band once settle_bands is done (each change is revisited) */
} State;


#define AT(d, b) ((b) * 9 + (d))

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
        uint8_t held = 0;
        for (int p = 0; p < 6; p++) {
            uint16_t m = 0;
            for (int r = 0; r < 3; r++) m |= (uint16_t)(1u << (r * 3 + PERMS[p][r]));
            MATCHING[p] = m;
            if ((s & m) == m) held |= (uint8_t)(1u << p);
        }
        MATCHINGS[s] = held;
        uint16_t reach = 0, bound = 0;
        for (int seg = 0; seg < 9; seg++) {
            uint16_t row = (uint16_t)(7u << (seg / 3 * 3)), box = (uint16_t)(0111u << (seg % 3));
            if (!(s >> seg & 1)) continue;
            reach |= row | box;
            if ((s & row) == 1u << seg || (s & box) == 1u << seg) bound |= (uint16_t)(1u << seg);
        }
        REACH[s] = reach & (uint16_t)~s;
        BOUND[s] = bound;
        N_MATCHINGS[s] = (uint8_t)__builtin_popcount(held);
        uint32_t cells = 0;
        for (int seg = 0; seg < 9; seg++)
            if (s >> seg & 1) cells |= 7u << ((seg / 3) * 9 + (seg % 3) * 3);
        SEG_CELLS[s] = cells;
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
    uint32_t bit = 1u << k, *fb = s->f + AT(0, b);
    unsigned had; /* the digits the cell still had */
    s->open[b] &= ~bit;
    /* the cell's digits (this digit's own bit is put back below) */
#ifdef __SSE2__
    __m128i bits = _mm_set1_epi32((int)bit);
    __m128i lo = _mm_loadu_si128((const __m128i *)fb), hi = _mm_loadu_si128((const __m128i *)(fb + 4));
    had = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(lo, bits), bits))) |
          (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(hi, bits), bits))) << 4 |
          (fb[8] >> k & 1) << 8;
    _mm_storeu_si128((__m128i *)fb, _mm_andnot_si128(bits, lo));
    _mm_storeu_si128((__m128i *)(fb + 4), _mm_andnot_si128(bits, hi));
    fb[8] &= ~bit;
#else
    had = 0;
    for (int e = 0; e < 9; e++) {
        had |= (fb[e] >> k & 1) << e;
        fb[e] &= ~bit;
    }
#endif
    /* the column's cells in every band, then the row and box in this one, the cell put back */
    uint32_t column = COLUMN[k];
    for (int o = 0; o < 3; o++) s->f[AT(d, o)] &= ~column;
    s->f[AT(d, b)] = (s->f[AT(d, b)] | bit) & ~BAND_PEERS[k];
    s->changed |= had << AT(0, b) | X0 << d;
}

/* The 9-bit set of a band's segments (row * 3 + box) that hold a cell of f. */
static inline unsigned occupancy(uint32_t f) {
    return BOX_OCC[f & 0x1FF] | BOX_OCC[(f >> 9) & 0x1FF] << 3 | BOX_OCC[f >> 18] << 6;
}



/* The columns of each band that hold a cell of a digit (band b's nine at bits 9b..9b+8); f is
 * the digit's first band, its others 9 and 18 words on. */
static inline uint32_t columns(const uint32_t *f) {
    uint32_t c = 0;
    for (int b = 0; b < 3; b++) c |= ((f[9 * b] | f[9 * b] >> 9 | f[9 * b] >> 18) & 0x1FF) << (b * 9);
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
    for (int b = 0; b < 3; b++) f[9 * b] &= keep[b] | keep[b] << 9 | keep[b] << 18;
    return 1;
}

/* Revisit changed digits to a fixpoint: band and stack triads, then rows left with one cell.
 * 0 on a contradiction. */
static int settle_bands(State *s) {
    while (s->changed) {
        int d = __builtin_ctz(s->changed) % 9;
        /* the digit's bands not marked changed still hold their triads and have their singles
         * placed: only the marked ones, and those the stack triads narrow, are looked at */
        uint32_t marks = s->changed >> d & X0;
        unsigned todo = (marks | marks >> 8 | marks >> 16) & 7, seen = todo;
        s->changed &= ~(X0 << d);
        uint32_t *f = s->f + d; /* band b at f[9 * b] */
        for (;;) {
            for (int b = 0; b < 3; b++) {
                if (!(todo >> b & 1)) continue;
                /* keep the segments that take part in a row-box matching */
                unsigned occ = TRIAD[occupancy(f[9 * b])];
                if (!occ) return 0;
                f[9 * b] &= SEG_CELLS[occ];
                s->occ[AT(d, b)] = (uint16_t)occ;
            }
            /* the stack triads read only the columns: the same columns as when they last held
             * change nothing */
            uint32_t cols = columns(f);
            if (cols == s->cols[d]) break;
            uint32_t g0 = f[0], g1 = f[9], g2 = f[18];
            if (!stack_triads(f, cols)) return 0;
            todo = (f[0] != g0) | (f[9] != g1) << 1 | (f[18] != g2) << 2;
            if (!todo) {
                s->cols[d] = cols;
                break;
            }
            seen |= todo;
        }
        /* rows left with one cell that is not placed yet: hidden singles. The triads leave every
         * row a cell, so subtracting 1 from each 9-bit row borrows nothing from the next, and
         * g & (g - 1) clears a row exactly when it held one cell. */
        uint32_t lone[3] = {0, 0, 0};
        for (int b = 0; b < 3; b++) {
            if (!(seen >> b & 1)) continue;
            uint32_t g = f[9 * b], y = g & (g - X0);
            uint32_t held = (((y & LOW8) + LOW8) | y) & HIGH; /* bit 8 of each row y left non-empty */
            lone[b] = g & ((HIGH & ~held) >> 8) * 0x1FFu & s->open[b];
        }
        for (int b = 0; b < 3; b++) {
            /* a cell placed before may have taken a later one's row, box or column: such a row
             * is left empty, which the next triad pass reports */
            for (uint32_t cells = lone[b]; cells; cells &= cells - 1) {
                int k = __builtin_ctz(cells);
                if (f[9 * b] >> k & 1 && s->open[b] >> k & 1) place(s, d, b, k);
            }
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
            uint32_t f = s->f[AT(d, b)];
            twice |= once & f;
            once |= f;
        }
        if (s->open[b] & ~once) return -1; /* a cell with no digit left */
        uint32_t naked = s->open[b] & ~twice;
        while (naked) {
            int k = __builtin_ctz(naked);
            naked &= naked - 1;
            for (int d = 0; d < 9; d++) {
                if (s->f[AT(d, b)] >> k & 1) {
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

/* Add the words w to a count kept bit-sliced and saturated at 4: bits c1 and c2, c4 once 4. */
#define COUNT_ADD(w)                \
    do {                            \
        unsigned carry_ = c1 & (w); \
        c1 ^= (w);                  \
        c4 |= c2 & carry_;          \
        c2 ^= carry_;               \
    } while (0)

/* Keep digit-band i to g; 1 when that removed something (the digit is then revisited). */
static inline int narrow(State *s, int i, uint32_t g) {
    if (g == s->f[i]) return 0;
    s->f[i] = g;
    s->changed |= X0 << (i % 9);
    return 1;
}

/* A minirow (a row's three cells in a box) holds three digits. Where only three digits can go,
 * each goes there, and leaves the rest of its row and box in the band; where three digits must
 * go (their only segment in its row or in its box), no other digit can. Horizontal minirows
 * only, on the segments settle_bands left (s->occ): -1 on a contradiction, else 1 when a
 * candidate went. */
static int minirows(State *s) {
    int cut = 0;
    for (int b = 0; b < 3; b++) {
        unsigned seg[9], c1 = 0, c2 = 0, c4 = 0;
        for (int d = 0; d < 9; d++) {
            seg[d] = s->occ[AT(d, b)];
            COUNT_ADD(seg[d]);
        }
        if (0x1FF & ~c4 & ~(c1 & c2)) return -1; /* fewer than three digits for a minirow */
        unsigned three = c1 & c2 & ~c4;
        for (int d = 0; three && d < 9; d++) {
            unsigned reach = REACH[seg[d] & three];
            if (seg[d] & reach) {
                seg[d] &= ~reach;
                cut |= narrow(s, AT(d, b), s->f[AT(d, b)] & SEG_CELLS[seg[d]]);
            }
        }
        unsigned bound[9];
        c1 = c2 = c4 = 0;
        for (int d = 0; d < 9; d++) {
            bound[d] = BOUND[seg[d]];
            COUNT_ADD(bound[d]);
        }
        if (c4) return -1; /* four digits bound to one minirow */
        three = c1 & c2;
        for (int d = 0; three && d < 9; d++)
            cut |= narrow(s, AT(d, b), s->f[AT(d, b)] & ~SEG_CELLS[three & ~bound[d]]);
    }
    return cut;
}

static int propagate(State *s) {
    for (;;) {
        if (!settle_bands(s)) return 0;
        if (!(s->open[0] | s->open[1] | s->open[2])) return 1;
        int placed = singles(s);
        if (placed < 0) return 0;
        if (placed) continue;
        if (!s->configs) return 1;
        int cut = minirows(s);
        if (cut < 0) return 0;
        if (!cut) return 1;
    }
}


/* The cell to branch on (band * 27 + bit): two candidates if any, else the fewest. */
static int pick(const State *s) {
    int best = -1, best_n = 10;
    for (int b = 0; b < 3; b++) {
        uint32_t once = 0, twice = 0, thrice = 0;
        for (int d = 0; d < 9; d++) {
            uint32_t f = s->f[AT(d, b)];
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
            for (int d = 0; d < 9; d++) n += s->f[AT(d, b)] >> k & 1;
            if (n < best_n) {
                best_n = n;
                best = b * 27 + k;
            }
        }
    }
    return best;
}

static void search(const State *s, Search *x);

/* Search the child t after propagation; 1 when the search is to stop (budget or enough solutions). */
static inline int descend(State *t, Search *x) {
    if (!propagate(t)) return 0;
    search(t, x);
    return x->stop || x->count >= x->max_solutions;
}

/* band-configs' branching, after tdoku's: the band whose digits have the fewest row-box matchings
 * in all, and in it the digit with the fewest (two or more); one child per matching, the digit
 * kept to its three segments. 0 when every band is solved. */
static int branch_matching(const State *s, Search *x) {
    int band = -1;
    unsigned fewest = 1000, n[27];
    for (int b = 0; b < 3; b++) {
        unsigned total = 0;
        for (int d = 0; d < 9; d++) total += n[AT(d, b)] = N_MATCHINGS[s->occ[AT(d, b)]];
        if (total > 9 && total < fewest) {
            fewest = total;
            band = b;
        }
    }
    if (band < 0) return 0;
    int digit = 0;
    fewest = 7;
    for (int d = 0; d < 9; d++) {
        if (n[AT(d, band)] >= 2 && n[AT(d, band)] < fewest) {
            fewest = n[AT(d, band)];
            digit = d;
        }
    }
    int i = AT(digit, band);
    unsigned held = MATCHINGS[s->occ[i]];
    for (int p = 0; p < 6; p++) {
        if (!(held >> p & 1)) continue;
        State t = *s;
        narrow(&t, i, t.f[i] & SEG_CELLS[MATCHING[p]]);
        if (descend(&t, x)) break;
    }
    return 1;
}

static void search(const State *s, Search *x) {
    if (out_of_budget(x)) return;
    if (!(s->open[0] | s->open[1] | s->open[2])) {
        if (x->count == 0) {
            for (int i = 0; i < 27; i++) {
                uint32_t f = s->f[i];
                int b = i / 9;
                while (f) {
                    int k = __builtin_ctz(f);
                    f &= f - 1;
                    x->solution[b * 27 + k] = (uint8_t)(i % 9 + 1);
                }
            }
        }
        x->count++;
        return;
    }
    if (s->configs && branch_matching(s, x)) return;
    int cell = pick(s);
    int b = cell / 27, k = cell % 27;
    for (int d = 0; d < 9; d++) {
        if (!(s->f[AT(d, b)] >> k & 1)) continue;
        State t = *s;
        place(&t, d, b, k);
        if (descend(&t, x)) return;
    }
}

/* Set up the givens (grid bytes 0..9, checked by the caller); 0 when they contradict each other. */
static int start(State *s, const uint8_t *grid, int configs) {
    s->configs = configs;
    for (int i = 0; i < 27; i++) s->f[i] = BAND;
    for (int b = 0; b < 3; b++) s->open[b] = BAND;
    for (int d = 0; d < 9; d++) s->cols[d] = 0;
    s->changed = 0;
    for (int cell = 0; cell < 81; cell++) {
        if (!grid[cell]) continue;
        int d = grid[cell] - 1, b = cell / 27, k = cell % 27;
        if (!(s->f[AT(d, b)] >> k & 1)) return 0;
        place(s, d, b, k);
    }
    s->changed = (1u << 27) - 1;
    return propagate(s);
}

static void solve(const uint8_t *grid, Search *x, int configs) {
    State s;
    if (start(&s, grid, configs)) search(&s, x);
    else x->nodes = 1; /* the root was expanded and refuted by propagation */
}

static PyObject *count(PyObject *self, PyObject *args) {
    uint8_t grid[81];
    Search x;
    int configs = 0;
    if (!count_args(args, grid, &x, &configs)) return NULL;
    solve(grid, &x, configs);
    return count_result(&x);
}

static PyObject *count_batch(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int max_solutions, configs = 0;
    if (!PyArg_ParseTuple(args, "y*i|p", &buf, &max_solutions, &configs)) return NULL;
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
        solve(grid, &x, configs);
        nodes += x.nodes;
        cp[p] = (char)x.count;
        for (int i = 0; i < 81; i++) sp[p * 81 + i] = (char)('0' + (x.count ? x.solution[i] : 0));
    }
    PyBuffer_Release(&buf);
    return Py_BuildValue("NNL", counts, solutions, nodes);
}

static PyMethodDef methods[] = {
    {"count", count, METH_VARARGS,
     "count(grid, max_solutions, node_limit, deadline, configs=False) -> (stop, count, solution, nodes)"},
    {"count_batch", count_batch, METH_VARARGS,
     "count_batch(grids, max_solutions, configs=False) -> (counts, solutions, nodes) over n*81-byte grids"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sudoku_bands",
    "Sudoku searches on bit-parallel digit bands with row-box triads (band-triads, band-configs).", -1, methods};

PyMODINIT_FUNC PyInit_sudoku_bands(void) {
    init_tables();
    return PyModule_Create(&module);
}
