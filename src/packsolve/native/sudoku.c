/* Sudoku search with bitset candidates: packsolve.native.sudoku.
 *
 * count(grid, max_solutions, node_limit, deadline) -> (stop, count, solution, nodes)
 *   grid       81 bytes, 0 for a blank, 1..9 for a given
 *   node_limit stop after this many search nodes (< 0: no cap)
 *   deadline   time.monotonic() value to stop at (< 0: none); the clock is read every 1024 nodes
 *   stop       0 the search finished, 1 node cap reached, 2 deadline passed
 *   count      solutions found, at most max_solutions
 *   solution   the first solution found as an 81-character string of digits, or None
 *   nodes      search nodes expanded: one per propagated state the search visits
 *
 * Each state keeps a 9-bit candidate mask per cell. Propagation applies naked
 * singles (a cell with one candidate) and hidden singles (a digit with one
 * place left in a row, column or box) to a fixpoint, then locked candidates
 * (a digit confined to one line of a box, or one box of a line) when singles
 * stall; search branches on a cell with the fewest candidates.
 */
#include "sudoku_common.h"

#define ALL 0x1FF

static uint8_t UNIT[27][9];    /* rows 0-8, columns 9-17, boxes 18-26 */
static uint8_t PEER[81][20];
static uint8_t ROW_OF[81], COL_OF[81], BOX_OF[81];

typedef struct {
    uint16_t cand[81];
    uint8_t fixed[81]; /* 1 once the cell's digit has been placed and eliminated from its peers */
    int left;          /* cells not yet fixed */
} State;


static void init_tables(void) {
    for (int i = 0; i < 81; i++) {
        int r = i / 9, c = i % 9, b = (r / 3) * 3 + c / 3;
        ROW_OF[i] = r;
        COL_OF[i] = c;
        BOX_OF[i] = b;
    }
    for (int k = 0; k < 9; k++) {
        for (int j = 0; j < 9; j++) {
            UNIT[k][j] = k * 9 + j;
            UNIT[9 + k][j] = j * 9 + k;
            UNIT[18 + k][j] = ((k / 3) * 3 + j / 3) * 9 + (k % 3) * 3 + j % 3;
        }
    }
    for (int i = 0; i < 81; i++) {
        int n = 0;
        for (int j = 0; j < 81; j++) {
            if (j != i && (ROW_OF[i] == ROW_OF[j] || COL_OF[i] == COL_OF[j] || BOX_OF[i] == BOX_OF[j])) {
                PEER[i][n++] = j;
            }
        }
    }
}

static inline int single(uint16_t m) { return m && !(m & (m - 1)); }

/* Place the only candidate of cell and remove it from the peers; 0 on a contradiction.
 * Peers left with one candidate go on the queue of naked singles. */
static int fix(State *s, int cell, uint8_t *queue, int *qn) {
    uint16_t bit = s->cand[cell];
    s->fixed[cell] = 1;
    s->left--;
    const uint8_t *peer = PEER[cell];
    for (int k = 0; k < 20; k++) {
        int p = peer[k];
        uint16_t m = s->cand[p];
        if (m & bit) {
            m &= ~bit;
            if (!m) return 0;
            s->cand[p] = m;
            if (single(m)) queue[(*qn)++] = p;
        }
    }
    return 1;
}

/* Run the naked-single queue dry; 0 on a contradiction. */
static int drain(State *s, uint8_t *queue, int *qn) {
    while (*qn) {
        int p = queue[--(*qn)];
        if (s->fixed[p]) continue;
        if (!s->cand[p]) return 0;
        if (!fix(s, p, queue, qn)) return 0;
    }
    return 1;
}

/* Hidden singles over all 27 units; returns -1 on a contradiction, else how many cells it set. */
static int hidden_singles(State *s, uint8_t *queue, int *qn) {
    int placed = 0;
    for (int u = 0; u < 27; u++) {
        const uint8_t *cells = UNIT[u];
        uint16_t once = 0, twice = 0, done = 0;
        for (int j = 0; j < 9; j++) {
            uint16_t m = s->cand[cells[j]];
            twice |= once & m;
            once |= m;
            if (s->fixed[cells[j]]) done |= m;
        }
        if (once != ALL) return -1; /* some digit has no place left in this unit */
        uint16_t hidden = once & ~twice & ~done;
        while (hidden) {
            uint16_t bit = hidden & (uint16_t)(-hidden);
            hidden &= hidden - 1;
            for (int j = 0; j < 9; j++) {
                int c = cells[j];
                if (s->cand[c] & bit) {
                    /* a naked single placed earlier in this pass may have taken the digit */
                    if (s->fixed[c]) break;
                    s->cand[c] = bit;
                    if (!fix(s, c, queue, qn) || !drain(s, queue, qn)) return -1;
                    placed++;
                    break;
                }
            }
        }
    }
    return placed;
}

/* Locked candidates: a digit confined to one line inside a box leaves the rest of that line,
 * and a digit confined to one box inside a line leaves the rest of that box.
 * Returns -1 on a contradiction, else how many candidates it removed. */
static int locked_candidates(State *s, uint8_t *queue, int *qn) {
    int removed = 0;
    for (int b = 0; b < 9; b++) {
        int r0 = (b / 3) * 3, c0 = (b % 3) * 3;
        uint16_t rows[3] = {0, 0, 0}, cols[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                uint16_t m = s->cand[(r0 + i) * 9 + c0 + j];
                rows[i] |= m;
                cols[j] |= m;
            }
        for (int i = 0; i < 3; i++) {
            /* digits of this box's row i (or column i) found nowhere else in the box */
            uint16_t only_row = rows[i] & ~(rows[(i + 1) % 3] | rows[(i + 2) % 3]);
            uint16_t only_col = cols[i] & ~(cols[(i + 1) % 3] | cols[(i + 2) % 3]);
            for (int k = 0; k < 9; k++) {
                if (k / 3 != c0 / 3 && only_row) {
                    int p = (r0 + i) * 9 + k;
                    uint16_t m = s->cand[p];
                    if (m & only_row) {
                        if (s->fixed[p]) return -1;
                        m &= ~only_row;
                        if (!m) return -1;
                        s->cand[p] = m;
                        removed++;
                        if (single(m)) queue[(*qn)++] = p;
                    }
                }
                if (k / 3 != r0 / 3 && only_col) {
                    int p = k * 9 + c0 + i;
                    uint16_t m = s->cand[p];
                    if (m & only_col) {
                        if (s->fixed[p]) return -1;
                        m &= ~only_col;
                        if (!m) return -1;
                        s->cand[p] = m;
                        removed++;
                        if (single(m)) queue[(*qn)++] = p;
                    }
                }
            }
        }
        if (*qn && !drain(s, queue, qn)) return -1;
    }
    /* Claiming: a digit of a line confined to one box of that line leaves the rest of the box. */
    for (int line = 0; line < 18; line++) {
        const uint8_t *cells = UNIT[line];
        uint16_t seg[3] = {0, 0, 0};
        for (int j = 0; j < 9; j++) seg[j / 3] |= s->cand[cells[j]];
        for (int t = 0; t < 3; t++) {
            uint16_t only = seg[t] & ~(seg[(t + 1) % 3] | seg[(t + 2) % 3]);
            if (!only) continue;
            int box = BOX_OF[cells[t * 3]];
            for (int j = 0; j < 9; j++) {
                int p = UNIT[18 + box][j];
                int on_line = line < 9 ? ROW_OF[p] == line : COL_OF[p] == line - 9;
                if (on_line) continue;
                uint16_t m = s->cand[p];
                if (m & only) {
                    if (s->fixed[p]) return -1;
                    m &= ~only;
                    if (!m) return -1;
                    s->cand[p] = m;
                    removed++;
                    if (single(m)) queue[(*qn)++] = p;
                }
            }
        }
        if (*qn && !drain(s, queue, qn)) return -1;
    }
    return removed;
}

/* Propagate to a fixpoint: singles first (cheap), locked candidates only when singles stall.
 * Measured on the hard sets: locked candidates cut nodes by 2-3x (top1465: 69k -> 29k, 17-clue:
 * 286k -> 102k) for about the same time on the hardest forum puzzles. */
static int propagate(State *s, uint8_t *queue, int *qn) {
    if (!drain(s, queue, qn)) return 0;
    for (;;) {
        int placed = hidden_singles(s, queue, qn);
        if (placed < 0) return 0;
        if (placed) continue;
        if (!s->left) return 1;
        int removed = locked_candidates(s, queue, qn);
        if (removed < 0) return 0;
        if (!removed) return 1;
    }
}


static void search(const State *s, Search *x) {
    if (out_of_budget(x)) return;
    if (!s->left) {
        if (x->count == 0) {
            for (int i = 0; i < 81; i++) x->solution[i] = (uint8_t)__builtin_ctz(s->cand[i]) + 1;
        }
        x->count++;
        return;
    }
    /* most constrained cell first: fewest candidates, two is the floor */
    int best = -1, best_n = 10;
    for (int i = 0; i < 81; i++) {
        if (s->fixed[i]) continue;
        int n = __builtin_popcount(s->cand[i]);
        if (n < best_n) {
            best_n = n;
            best = i;
            if (n == 2) break;
        }
    }
    uint16_t m = s->cand[best];
    while (m) {
        uint16_t bit = m & (uint16_t)(-m);
        m &= m - 1;
        State t = *s;
        uint8_t queue[81 * 20];
        int qn = 0;
        t.cand[best] = bit;
        if (fix(&t, best, queue, &qn) && propagate(&t, queue, &qn)) {
            search(&t, x);
            if (x->stop || x->count >= x->max_solutions) return;
        }
    }
}

/* Set up the givens; 0 when they contradict each other already. */
static int start(State *s, const uint8_t *grid) {
    uint8_t queue[81 * 20];
    int qn = 0;
    for (int i = 0; i < 81; i++) {
        s->cand[i] = ALL;
        s->fixed[i] = 0;
    }
    s->left = 81;
    for (int i = 0; i < 81; i++) {
        if (!grid[i]) continue;
        uint16_t bit = (uint16_t)(1u << (grid[i] - 1));
        if (!(s->cand[i] & bit) || s->fixed[i]) return 0;
        s->cand[i] = bit;
        if (!fix(s, i, queue, &qn)) return 0;
    }
    return propagate(s, queue, &qn);
}

static PyObject *count(PyObject *self, PyObject *args) {
    uint8_t grid[81];
    Search x;
    if (!count_args(args, grid, &x, NULL)) return NULL;
    State s;
    if (start(&s, grid)) search(&s, &x);
    else x.nodes = 1; /* the root was expanded and refuted by propagation */
    return count_result(&x);
}

static PyMethodDef methods[] = {
    {"count", count, METH_VARARGS,
     "count(grid, max_solutions, node_limit, deadline) -> (stop, count, solution, nodes)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "sudoku",
                                    "Bitset sudoku search with singles and locked candidates.", -1,
                                    methods};

PyMODINIT_FUNC PyInit_sudoku(void) {
    init_tables();
    return PyModule_Create(&module);
}
