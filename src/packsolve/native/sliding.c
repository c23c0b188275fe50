/* Sliding-tile puzzles: IDA* (Manhattan, linear conflict, additive pattern databases,
 * optionally weighted) and the breadth-first build of one disjoint pattern database.
 *
 * Board convention (DESIGN's `sliding`): N x N, positions 0..N*N-1 row by row,
 * goal tile t at position t, blank (0) top-left.  A solution is the list of
 * tiles moved.  One node = one state expanded, as in the Python solvers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXC 25
#define MAXDEPTH 1024
#define MAXGROUPS 8
#define CLOCK_EVERY 0x3FFFF
#define SHARED_EVERY 0xFFF

enum { H_MANHATTAN = 0, H_LINEAR_CONFLICT = 1, H_PDB = 2 };
enum { R_SOLVED = 0, R_NODE_LIMIT = 1, R_TIME_LIMIT = 2, R_DEPTH = 3, R_BOUND = 4 };

typedef struct {
    int n, nn, mode;
    long wnum, wden; /* f = g*wden + h*wnum, compared with a bound in the same scale */
    uint8_t board[MAXC];
    int blank;
    int nbr[MAXC][4], nnbr[MAXC];
    int md[MAXC][MAXC]; /* md[tile][pos] */
    int tr[MAXC];       /* transpose of a position; also of a tile, since tile t's home is t */
    /* linear conflict per row and column */
    int lc_row[5], lc_col[5];
    /* pattern databases; ranked tables are indexed as packsolve.native.pattern_db.rank does */
    int ngroups, reflect, ranked;
    int gk[MAXGROUPS];
    int gpos[MAXGROUPS][MAXGROUPS], rgpos[MAXGROUPS][MAXGROUPS]; /* tile positions by group, slot */
    /* a board symmetry per group: it reads its table at the turned positions (another group's
     * table, turned, serves it); identity unless given */
    uint8_t cmap[MAXGROUPS][MAXC];
    const uint8_t *tab[MAXGROUPS];
    int group_of[MAXC], slot_of[MAXC];
    uint64_t pw[MAXGROUPS + 1];
    uint64_t idx[MAXGROUPS], ridx[MAXGROUPS];
    /* weight of each slot's digit in its group's index: (n*n)**slot sparse, the product of the
     * later radices ranked; and each group's table value at the current state, and their sums */
    uint64_t wt[MAXGROUPS][MAXGROUPS];
    int hv[MAXGROUPS], rhv[MAXGROUPS], hsum, rsum;
    /* search */
    long bound, next_bound;
    uint64_t nodes, node_limit;
    double deadline;
    /* A part of a split level: its answers are wanted only if shorter than the best length found so
     * far by any part, the int64 at *shared (a length of the whole level: offset + this search's
     * length); read at each iteration and every SHARED_EVERY nodes, so a part stops soon after
     * another found what it could not beat. NULL: no shared bound. */
    const volatile int64_t *shared;
    long offset;
    int result;
    int path[MAXDEPTH];
    int sol_len;
} Search;

static double now_monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void setup_geometry(Search *s) {
    int n = s->n;
    for (int p = 0; p < s->nn; p++) {
        int r = p / n, c = p % n, k = 0;
        if (r > 0) s->nbr[p][k++] = p - n;
        if (c > 0) s->nbr[p][k++] = p - 1;
        if (c < n - 1) s->nbr[p][k++] = p + 1;
        if (r < n - 1) s->nbr[p][k++] = p + n;
        s->nnbr[p] = k;
        s->tr[p] = c * n + r;
    }
    for (int t = 0; t < s->nn; t++)
        for (int p = 0; p < s->nn; p++)
            s->md[t][p] = t == 0 ? 0 : abs(t / n - p / n) + abs(t % n - p % n);
}

/* Twice the number of tiles that must leave a line so the rest are in goal order (LIS). */
static int line_conflict(const Search *s, int line, int is_row) {
    int n = s->n, goal[5], k = 0;
    for (int i = 0; i < n; i++) {
        int p = is_row ? line * n + i : i * n + line;
        int t = s->board[p];
        if (t == 0) continue;
        if (is_row ? (t / n == line) : (t % n == line)) goal[k++] = is_row ? t % n : t / n;
    }
    if (k < 2) return 0;
    int lis[5], best = 0;
    for (int i = 0; i < k; i++) {
        lis[i] = 1;
        for (int j = 0; j < i; j++)
            if (goal[j] < goal[i] && lis[j] + 1 > lis[i]) lis[i] = lis[j] + 1;
        if (lis[i] > best) best = lis[i];
    }
    return 2 * (k - best);
}

/* The compact index of a group's placement: positions in the mixed radix nn, nn-1, ..., each
 * counted among the cells the earlier tiles left free (as pattern_db.c builds its tables). */
static inline uint64_t placement_rank(const Search *s, const int *pos, int k) {
    uint64_t r = 0;
    for (int i = 0; i < k; i++) {
        int p = pos[i], below = 0;
        for (int j = 0; j < i; j++) below += pos[j] < p; /* no popcount: a library call without -mpopcnt */
        r = r * (uint64_t)(s->nn - i) + (uint64_t)(p - below);
    }
    return r;
}

static void pdb_init_index(Search *s) {
    memset(s->idx, 0, sizeof s->idx);
    memset(s->ridx, 0, sizeof s->ridx);
    for (int p = 0; p < s->nn; p++) {
        int t = s->board[p];
        if (t == 0) continue;
        s->idx[s->group_of[t]] += (uint64_t)p * s->pw[s->slot_of[t]];
        int rt = s->tr[t], rp = s->tr[p];
        s->ridx[s->group_of[rt]] += (uint64_t)rp * s->pw[s->slot_of[rt]];
        s->gpos[s->group_of[t]][s->slot_of[t]] = s->cmap[s->group_of[t]][p];
        s->rgpos[s->group_of[rt]][s->slot_of[rt]] = s->cmap[s->group_of[rt]][rp];
    }
    if (s->ranked) {
        for (int g = 0; g < s->ngroups; g++) {
            s->idx[g] = placement_rank(s, s->gpos[g], s->gk[g]);
            s->ridx[g] = placement_rank(s, s->rgpos[g], s->gk[g]);
        }
    }
    s->hsum = s->rsum = 0;
    for (int g = 0; g < s->ngroups; g++) {
        s->hsum += s->hv[g] = s->tab[g][s->idx[g]];
        s->rsum += s->rhv[g] = s->tab[g][s->ridx[g]];
    }
}

/* A group's index after its tile in `slot` moved from cell a to the next cell b (both as the
 * group's table sees them; pos still holds a). Sparse: one digit changes. Ranked: that tile's
 * digit moves by b - a, one step less for each earlier tile between a and b, and each later tile
 * between them gains or loses one (none lie between when a and b are next in the table's order,
 * as on a step along a row of the table's board): at most k comparisons, not a rank. */
static inline uint64_t moved_index(const Search *s, int g, const int *pos, int slot, int a, int b,
                                   uint64_t idx) {
    const uint64_t *w = s->wt[g];
    int64_t delta = (int64_t)(b - a) * (int64_t)w[slot];
    int lo = a < b ? a : b, hi = a < b ? b : a;
    if (s->ranked && hi - lo > 1) {
        int64_t sign = a < b ? 1 : -1;
        for (int j = 0; j < s->gk[g]; j++)
            if (pos[j] > lo && pos[j] < hi) delta += j < slot ? -sign * (int64_t)w[slot] : sign * (int64_t)w[j];
    }
    return (uint64_t)((int64_t)idx + delta);
}

/* Heuristic after tile t moved from `from` to `to` (board already updated); h0 is the old value. */
static inline int h_after(Search *s, int h0, int t, int from, int to) {
    int h = h0 + s->md[t][to] - s->md[t][from];
    if (s->mode == H_LINEAR_CONFLICT) {
        int n = s->n;
        if (from / n == to / n) { /* horizontal: the two columns change */
            int c1 = from % n, c2 = to % n;
            int a = line_conflict(s, c1, 0), b = line_conflict(s, c2, 0);
            h += a - s->lc_col[c1] + b - s->lc_col[c2];
            s->lc_col[c1] = a;
            s->lc_col[c2] = b;
        } else {
            int r1 = from / n, r2 = to / n;
            int a = line_conflict(s, r1, 1), b = line_conflict(s, r2, 1);
            h += a - s->lc_row[r1] + b - s->lc_row[r2];
            s->lc_row[r1] = a;
            s->lc_row[r2] = b;
        }
    }
    return h;
}

static int h_full(Search *s) {
    if (s->mode == H_PDB) {
        pdb_init_index(s);
        return s->reflect && s->rsum > s->hsum ? s->rsum : s->hsum;
    }
    int h = 0;
    for (int p = 0; p < s->nn; p++) h += s->md[s->board[p]][p];
    if (s->mode == H_LINEAR_CONFLICT) {
        for (int i = 0; i < s->n; i++) {
            s->lc_row[i] = line_conflict(s, i, 1);
            s->lc_col[i] = line_conflict(s, i, 0);
            h += s->lc_row[i] + s->lc_col[i];
        }
    }
    return h;
}

/* Count an expansion; -1 (result set) when the node limit or the deadline is reached. */
static inline int shared_beaten(const Search *s) {
    /* The iteration can only find answers of length <= bound (unweighted parts): none beats best. */
    return s->shared && (int64_t)(s->offset + s->bound / s->wden) >= *s->shared;
}

static inline int expand_node(Search *s) {
    s->nodes++;
    if ((s->nodes & CLOCK_EVERY) == 0 && s->deadline > 0 && now_monotonic() >= s->deadline) {
        s->result = R_TIME_LIMIT;
        return -1;
    }
    /* A volatile read, cheap: often, so that a part another part has beaten stops within microseconds. */
    if ((s->nodes & SHARED_EVERY) == 0 && shared_beaten(s)) {
        s->result = R_BOUND;
        return -1;
    }
    if (s->node_limit && s->nodes >= s->node_limit) {
        s->result = R_NODE_LIMIT;
        return -1;
    }
    return 0;
}

/* Depth-first search below the bound (Manhattan, linear conflict): 1 found, 0 not within the
 * bound, -1 stopped by a limit. */
static int dfs(Search *s, int g, int h, int prev_blank) {
    long f = (long)g * s->wden + (long)h * s->wnum;
    if (f > s->bound) {
        if (f < s->next_bound) s->next_bound = f;
        return 0;
    }
    if (h == 0) {
        s->sol_len = g;
        return 1;
    }
    if (g >= MAXDEPTH - 1) {
        s->result = R_DEPTH;
        return -1;
    }
    if (expand_node(s) < 0) return -1;
    int b = s->blank;
    int saved_row[5], saved_col[5];
    for (int k = 0; k < s->nnbr[b]; k++) {
        int p = s->nbr[b][k];
        if (p == prev_blank) continue;
        int t = s->board[p];
        if (s->mode == H_LINEAR_CONFLICT) {
            memcpy(saved_row, s->lc_row, sizeof saved_row);
            memcpy(saved_col, s->lc_col, sizeof saved_col);
        }
        s->board[b] = (uint8_t)t;
        s->board[p] = 0;
        s->blank = p;
        int nh = h_after(s, h, t, p, b);
        s->path[g] = t;
        int r = dfs(s, g + 1, nh, b);
        s->board[p] = (uint8_t)t;
        s->board[b] = 0;
        s->blank = b;
        if (s->mode == H_LINEAR_CONFLICT) {
            memcpy(s->lc_row, saved_row, sizeof saved_row);
            memcpy(s->lc_col, saved_col, sizeof saved_col);
        }
        if (r != 0) return r;
    }
    return 0;
}

/* The pattern-database search: the same tree as dfs, node for node, but each child is judged
 * before it is entered. A move changes one group's index, so a child costs one table read: the
 * reads of all the children are issued (prefetched) first, so their cache misses overlap. The
 * reflected sum is read only where the regular one does not already prune the child and leave
 * the next bound as it is (Korf's order): the search is exactly that of the maximum. */
static int dfs_pdb(Search *s, int g, int prev_blank) {
    if (g >= MAXDEPTH - 1) {
        s->result = R_DEPTH;
        return -1;
    }
    if (expand_node(s) < 0) return -1;
    int b = s->blank, m = 0, cells[4];
    uint64_t nidx[4], nridx[4];
    for (int k = 0; k < s->nnbr[b]; k++) {
        int p = s->nbr[b][k];
        if (p == prev_blank) continue;
        int t = s->board[p], gr = s->group_of[t], rt = s->tr[t], rg = s->group_of[rt];
        nidx[m] = moved_index(s, gr, s->gpos[gr], s->slot_of[t], s->cmap[gr][p], s->cmap[gr][b], s->idx[gr]);
        __builtin_prefetch(&s->tab[gr][nidx[m]]);
        if (s->reflect)
            nridx[m] = moved_index(s, rg, s->rgpos[rg], s->slot_of[rt], s->cmap[rg][s->tr[p]],
                                   s->cmap[rg][s->tr[b]], s->ridx[rg]);
        cells[m++] = p;
    }
    long gcost = (long)(g + 1) * s->wden;
    for (int j = 0; j < m; j++) {
        int p = cells[j], t = s->board[p], gr = s->group_of[t], rt = s->tr[t], rg = s->group_of[rt];
        int v = s->tab[gr][nidx[j]], h = s->hsum - s->hv[gr] + v, rv = 0;
        long f = gcost + (long)h * s->wnum;
        if (s->reflect && (f <= s->bound || f < s->next_bound)) {
            rv = s->tab[rg][nridx[j]];
            int hr = s->rsum - s->rhv[rg] + rv;
            if (hr > h) {
                h = hr;
                f = gcost + (long)h * s->wnum;
            }
        }
        if (f > s->bound) {
            if (f < s->next_bound) s->next_bound = f;
            continue;
        }
        s->path[g] = t;
        if (h == 0) {
            s->sol_len = g + 1;
            return 1;
        }
        int slot = s->slot_of[t], rslot = s->slot_of[rt], old_v = s->hv[gr], old_rv = s->rhv[rg];
        uint64_t old_idx = s->idx[gr], old_ridx = s->ridx[rg];
        s->board[b] = (uint8_t)t;
        s->board[p] = 0;
        s->blank = p;
        s->gpos[gr][slot] = s->cmap[gr][b];
        s->idx[gr] = nidx[j];
        s->hv[gr] = v;
        s->hsum += v - old_v;
        if (s->reflect) {
            s->rgpos[rg][rslot] = s->cmap[rg][s->tr[b]];
            s->ridx[rg] = nridx[j];
            s->rhv[rg] = rv;
            s->rsum += rv - old_rv;
        }
        int r = dfs_pdb(s, g + 1, b);
        s->board[p] = (uint8_t)t;
        s->board[b] = 0;
        s->blank = b;
        s->gpos[gr][slot] = s->cmap[gr][p];
        s->idx[gr] = old_idx;
        s->hv[gr] = old_v;
        s->hsum += old_v - v;
        if (s->reflect) {
            s->rgpos[rg][rslot] = s->cmap[rg][s->tr[p]];
            s->ridx[rg] = old_ridx;
            s->rhv[rg] = old_rv;
            s->rsum += old_rv - rv;
        }
        if (r != 0) return r;
    }
    return 0;
}

static int read_board(Search *s, PyObject *tiles) {
    Py_buffer view;
    if (PyObject_GetBuffer(tiles, &view, PyBUF_SIMPLE) < 0) return -1;
    if (view.len != s->nn) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "tiles must hold n*n bytes");
        return -1;
    }
    int seen[MAXC] = {0};
    for (int p = 0; p < s->nn; p++) {
        int t = ((const uint8_t *)view.buf)[p];
        if (t >= s->nn || seen[t]) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "tiles must be a permutation of 0..n*n-1");
            return -1;
        }
        seen[t] = 1;
        s->board[p] = (uint8_t)t;
        if (t == 0) s->blank = p;
    }
    PyBuffer_Release(&view);
    return 0;
}

/* Read the groups' board symmetries (None, or one permutation of 0..nn-1 per group, None for
 * identity); -1 with an exception set. Only ranked tables are read through them. */
static int read_maps(Search *s, PyObject *maps) {
    for (int g = 0; g < MAXGROUPS; g++)
        for (int p = 0; p < MAXC; p++) s->cmap[g][p] = (uint8_t)p;
    if (maps == Py_None) return 0;
    if (!PyTuple_Check(maps) || PyTuple_GET_SIZE(maps) != s->ngroups || !s->ranked) {
        PyErr_SetString(PyExc_ValueError, "maps must be a tuple with one entry per group (ranked tables only)");
        return -1;
    }
    for (int g = 0; g < s->ngroups; g++) {
        PyObject *m = PyTuple_GET_ITEM(maps, g);
        if (m == Py_None) continue;
        Py_buffer view;
        if (PyObject_GetBuffer(m, &view, PyBUF_SIMPLE) < 0) return -1;
        int ok = view.len == s->nn, seen = 0;
        for (int p = 0; ok && p < s->nn; p++) {
            int q = ((const uint8_t *)view.buf)[p];
            ok = q < s->nn && !(seen >> q & 1);
            seen |= 1 << q;
            s->cmap[g][p] = (uint8_t)q;
        }
        PyBuffer_Release(&view);
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "each map must be a permutation of the n*n cells");
            return -1;
        }
    }
    return 0;
}

static PyObject *py_ida_star(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"tiles", "n", "mode", "wnum", "wden", "node_limit", "deadline",
                             "tables", "groups", "reflect", "ranked", "maps", "back", "first_bound",
                             "max_bound", "shared", "offset", NULL};
    PyObject *tiles, *tables = Py_None, *groups = Py_None, *maps = Py_None, *shared = Py_None;
    int n, mode, reflect = 1, ranked = 0, back = -1;
    long wnum = 1, wden = 1, first_bound = 0, max_bound = -1, offset = 0;
    unsigned long long node_limit = 0;
    double deadline = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oii|llKdOOppOi$llOl", kwlist, &tiles, &n, &mode, &wnum,
                                     &wden, &node_limit, &deadline, &tables, &groups, &reflect, &ranked,
                                     &maps, &back, &first_bound, &max_bound, &shared, &offset))
        return NULL;
    if (n < 2 || n > 5 || mode < 0 || mode > 2 || wnum < 1 || wden < 1) {
        PyErr_SetString(PyExc_ValueError, "bad n, mode or weight");
        return NULL;
    }
    if (back < -1 || back >= n * n || first_bound < 0 || max_bound < -1 || offset < 0 ||
        (shared != Py_None && (wnum != 1 || wden != 1))) {
        PyErr_SetString(PyExc_ValueError, "bad back, first_bound, max_bound or offset (shared: unweighted only)");
        return NULL;
    }
    Py_buffer shared_view;
    int have_shared = 0;
    if (shared != Py_None) {
        if (PyObject_GetBuffer(shared, &shared_view, PyBUF_WRITABLE) < 0) return NULL;
        if (shared_view.len < (Py_ssize_t)sizeof(int64_t) || ((uintptr_t)shared_view.buf % sizeof(int64_t))) {
            PyBuffer_Release(&shared_view);
            PyErr_SetString(PyExc_ValueError, "shared must be a writable, aligned buffer of one int64");
            return NULL;
        }
        have_shared = 1;
    }
    Search *s = calloc(1, sizeof(Search));
    if (!s) {
        if (have_shared) PyBuffer_Release(&shared_view);
        return PyErr_NoMemory();
    }
    if (have_shared) s->shared = (const volatile int64_t *)shared_view.buf;
    s->offset = offset;
    s->n = n;
    s->nn = n * n;
    s->mode = mode;
    s->wnum = wnum;
    s->wden = wden;
    s->node_limit = node_limit;
    s->deadline = deadline;
    s->reflect = reflect;
    s->ranked = ranked;
    setup_geometry(s);
    PyObject *result = NULL;
    Py_buffer views[MAXGROUPS];
    int nviews = 0;
    if (read_board(s, tiles) < 0) goto done;
    if (mode == H_PDB) {
        if (!PyTuple_Check(tables) || !PyTuple_Check(groups) || PyTuple_GET_SIZE(tables) != PyTuple_GET_SIZE(groups) ||
            PyTuple_GET_SIZE(groups) < 1 || PyTuple_GET_SIZE(groups) > MAXGROUPS) {
            PyErr_SetString(PyExc_ValueError, "pdb mode needs equal-length tuples of tables and groups");
            goto done;
        }
        s->ngroups = (int)PyTuple_GET_SIZE(groups);
        int covered[MAXC] = {0}, maxk = 0;
        for (int g = 0; g < s->ngroups; g++) {
            PyObject *grp = PyTuple_GET_ITEM(groups, g);
            if (!PyTuple_Check(grp) || PyTuple_GET_SIZE(grp) > MAXGROUPS) {
                PyErr_SetString(PyExc_ValueError, "each group must be a tuple of at most 8 tiles");
                goto done;
            }
            int k = (int)PyTuple_GET_SIZE(grp);
            if (k > maxk) maxk = k;
            s->gk[g] = k;
            for (int i = 0; i < k; i++) {
                long t = PyLong_AsLong(PyTuple_GET_ITEM(grp, i));
                if (t < 1 || t >= s->nn || covered[t]) {
                    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "groups must partition the tiles");
                    goto done;
                }
                covered[t] = 1;
                s->group_of[t] = g;
                s->slot_of[t] = i;
            }
        }
        for (int t = 1; t < s->nn; t++)
            if (!covered[t]) {
                PyErr_SetString(PyExc_ValueError, "groups must cover every tile");
                goto done;
            }
        if (read_maps(s, maps) < 0) goto done;
        s->pw[0] = 1;
        for (int i = 1; i <= MAXGROUPS; i++) s->pw[i] = s->pw[i - 1] * (uint64_t)s->nn;
        for (int g = 0; g < s->ngroups; g++)
            for (int i = s->gk[g] - 1; i >= 0; i--)
                s->wt[g][i] = !ranked ? s->pw[i] : i == s->gk[g] - 1 ? 1 : s->wt[g][i + 1] * (uint64_t)(s->nn - i - 1);
        for (int g = 0; g < s->ngroups; g++) {
            PyObject *grp = PyTuple_GET_ITEM(groups, g);
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(tables, g), &views[g], PyBUF_SIMPLE) < 0) goto done;
            nviews++;
            uint64_t want = s->pw[PyTuple_GET_SIZE(grp)];
            if (ranked) {
                want = 1;
                for (int i = 0; i < s->gk[g]; i++) want *= (uint64_t)(s->nn - i);
            }
            if ((uint64_t)views[g].len != want) {
                PyErr_SetString(PyExc_ValueError, "a pattern table has the wrong size for its group");
                goto done;
            }
            s->tab[g] = views[g].buf;
        }
        (void)maxk;
    }
    int h = h_full(s);
    uint8_t start[MAXC];
    memcpy(start, s->board, sizeof start);
    int start_blank = s->blank;
    int found = 0, iterations = 0;
    s->result = R_SOLVED;
    Py_BEGIN_ALLOW_THREADS
    s->bound = (long)h * s->wnum;
    /* A part resumed at a later iteration (the earlier ones were searched in an earlier round). */
    if (first_bound * s->wden > s->bound) s->bound = first_bound * s->wden;
    for (;;) {
        if (max_bound >= 0 && s->bound > max_bound * s->wden) {
            s->result = R_BOUND;
            break;
        }
        if (shared_beaten(s)) {
            s->result = R_BOUND;
            break;
        }
        iterations++;
        s->next_bound = 0x7FFFFFFFL;
        int r = s->mode != H_PDB ? dfs(s, 0, h, back) : h == 0 ? (s->sol_len = 0, 1) : dfs_pdb(s, 0, back);
        if (r == 1) {
            found = 1;
            break;
        }
        if (r < 0) break;
        if (s->next_bound == 0x7FFFFFFFL) { /* nothing was cut: the whole tree is searched */
            s->bound = s->next_bound;
            s->result = R_BOUND;
            break;
        }
        s->bound = s->next_bound;
        memcpy(s->board, start, sizeof start);
        s->blank = start_blank;
        h = h_full(s);
    }
    Py_END_ALLOW_THREADS
    if (found) {
        PyObject *moves = PyList_New(s->sol_len);
        if (!moves) goto done;
        for (int i = 0; i < s->sol_len; i++) PyList_SET_ITEM(moves, i, PyLong_FromLong(s->path[i]));
        result = Py_BuildValue("(iNKi)", R_SOLVED, moves, (unsigned long long)s->nodes, iterations);
    } else if (s->result == R_BOUND) {
        /* the 4th item: the first bound (a length of this search) not searched */
        result = Py_BuildValue("(iOKl)", s->result, Py_None, (unsigned long long)s->nodes, s->bound / s->wden);
    } else {
        result = Py_BuildValue("(iOKi)", s->result, Py_None, (unsigned long long)s->nodes, iterations);
    }
done:
    if (have_shared) PyBuffer_Release(&shared_view);
    for (int g = 0; g < nviews; g++) PyBuffer_Release(&views[g]);
    free(s);
    return result;
}

/* ---- pattern database build: breadth-first over (pattern placement, blank), moves of
 * other tiles cost 0 (so the tables add up), each pattern-tile move costs 1. ---- */

typedef struct {
    uint32_t *a;
    size_t len, cap;
} Queue;

static int q_push(Queue *q, uint32_t v) {
    if (q->len == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : (1u << 16);
        uint32_t *a = realloc(q->a, cap * sizeof *a);
        if (!a) return -1;
        q->a = a;
        q->cap = cap;
    }
    q->a[q->len++] = v;
    return 0;
}

typedef struct {
    int n, nn, k;
    int nbr[MAXC][4], nnbr[MAXC];
    uint64_t pw[MAXGROUPS + 1];
    uint8_t *seen; /* bitset over placement*nn + blank */
    int stack[MAXC];
} Builder;

/* Mark and queue every blank cell reachable from cell q without moving a pattern tile. */
static int flood(Builder *b, const int *occ, uint64_t idx, int q, Queue *out) {
    int top = 0;
    uint64_t st = idx * b->nn + q;
    if (b->seen[st >> 3] & (1u << (st & 7))) return 0;
    b->seen[st >> 3] |= (uint8_t)(1u << (st & 7));
    b->stack[top++] = q;
    while (top) {
        int c = b->stack[--top];
        if (q_push(out, (uint32_t)(idx * b->nn + c)) < 0) return -1;
        for (int k = 0; k < b->nnbr[c]; k++) {
            int d = b->nbr[c][k];
            if (occ[d]) continue;
            uint64_t sd = idx * b->nn + d;
            if (b->seen[sd >> 3] & (1u << (sd & 7))) continue;
            b->seen[sd >> 3] |= (uint8_t)(1u << (sd & 7));
            b->stack[top++] = d;
        }
    }
    return 0;
}

static PyObject *py_build_pdb(PyObject *self, PyObject *args) {
    int n;
    PyObject *group;
    if (!PyArg_ParseTuple(args, "iO!", &n, &PyTuple_Type, &group)) return NULL;
    Builder b;
    memset(&b, 0, sizeof b);
    b.n = n;
    b.nn = n * n;
    b.k = (int)PyTuple_GET_SIZE(group);
    if (n < 2 || n > 5 || b.k < 1 || b.k > MAXGROUPS) {
        PyErr_SetString(PyExc_ValueError, "bad n or group size");
        return NULL;
    }
    int tiles[MAXGROUPS], used[MAXC] = {0};
    for (int i = 0; i < b.k; i++) {
        long t = PyLong_AsLong(PyTuple_GET_ITEM(group, i));
        if (t < 1 || t >= b.nn || used[t]) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "group tiles must be distinct, 1..n*n-1");
            return NULL;
        }
        used[t] = 1;
        tiles[i] = (int)t;
    }
    b.pw[0] = 1;
    for (int i = 1; i <= b.k; i++) b.pw[i] = b.pw[i - 1] * (uint64_t)b.nn;
    uint64_t size = b.pw[b.k], states = size * b.nn;
    if (states >= (1ull << 32)) {
        PyErr_SetString(PyExc_ValueError, "pattern too large (more than 2^32 states)");
        return NULL;
    }
    for (int p = 0; p < b.nn; p++) {
        int r = p / n, c = p % n, k = 0;
        if (r > 0) b.nbr[p][k++] = p - n;
        if (c > 0) b.nbr[p][k++] = p - 1;
        if (c < n - 1) b.nbr[p][k++] = p + 1;
        if (r < n - 1) b.nbr[p][k++] = p + n;
        b.nnbr[p] = k;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!out) return NULL;
    uint8_t *table = (uint8_t *)PyBytes_AS_STRING(out);
    b.seen = calloc(states / 8 + 1, 1);
    Queue cur = {0}, nxt = {0};
    int failed = 0;
    if (!b.seen) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    int shift = (b.nn & (b.nn - 1)) == 0 ? __builtin_ctz((unsigned)b.nn) : 0;
    uint64_t mask = (uint64_t)b.nn - 1;
    Py_BEGIN_ALLOW_THREADS
    memset(table, 0xFF, size);
    int occ[MAXC] = {0};
    uint64_t idx0 = 0;
    for (int i = 0; i < b.k; i++) {
        idx0 += (uint64_t)tiles[i] * b.pw[i];
        occ[tiles[i]] = i + 1;
    }
    if (flood(&b, occ, idx0, 0, &cur) < 0) failed = 1;
    for (int d = 0; !failed && cur.len; d++) {
        nxt.len = 0;
        for (size_t j = 0; j < cur.len && !failed; j++) {
            uint64_t st = cur.a[j], idx;
            int blank, pos[MAXGROUPS];
            /* Divisions dominate the build; on 4x4 every digit is 4 bits, so shift instead. */
            if (shift) {
                idx = st >> shift;
                blank = (int)(st & mask);
                for (int i = 0; i < b.k; i++) pos[i] = (int)((idx >> (shift * i)) & mask);
            } else {
                idx = st / b.nn;
                blank = (int)(st % b.nn);
                uint64_t rest = idx;
                for (int i = 0; i < b.k; i++) {
                    pos[i] = (int)(rest % b.nn);
                    rest /= b.nn;
                }
            }
            if (table[idx] == 0xFF) table[idx] = (uint8_t)d;
            for (int c = 0; c < b.nn; c++) occ[c] = 0;
            for (int i = 0; i < b.k; i++) occ[pos[i]] = i + 1;
            for (int m = 0; m < b.nnbr[blank]; m++) {
                int q = b.nbr[blank][m], i = occ[q] - 1;
                if (i < 0) continue;
                uint64_t nidx = idx + (uint64_t)blank * b.pw[i] - (uint64_t)q * b.pw[i];
                occ[blank] = i + 1;
                occ[q] = 0;
                if (flood(&b, occ, nidx, q, &nxt) < 0) failed = 1;
                occ[q] = i + 1;
                occ[blank] = 0;
            }
        }
        Queue t = cur;
        cur = nxt;
        nxt = t;
    }
    Py_END_ALLOW_THREADS
    free(cur.a);
    free(nxt.a);
    free(b.seen);
    if (failed) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    return out;
}

static PyMethodDef methods[] = {
    {"ida_star", (PyCFunction)(void (*)(void))py_ida_star, METH_VARARGS | METH_KEYWORDS,
     "ida_star(tiles, n, mode, wnum=1, wden=1, node_limit=0, deadline=0.0, tables=None, groups=None, "
     "reflect=True, ranked=False, maps=None, *, back=-1, first_bound=0, max_bound=-1, shared=None, offset=0) -> "
     "(status, moves or None, nodes, iterations); status 0 solved, 1 node limit, 2 time limit, 3 depth limit, "
     "4 bound: no answer within max_bound (-1: none), or none shorter than the int64 in shared minus offset (then the 4th "
     "item is the first bound not searched). back: the cell the blank must not move to first (-1: none); "
     "first_bound: the iteration to start at."},
    {"build_pdb", py_build_pdb, METH_VARARGS,
     "build_pdb(n, group) -> bytes: fewest moves of the group's tiles to home them, indexed by "
     "sum(pos_i * (n*n)**i); 255 where a placement is impossible."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "packsolve.native.sliding",
                                    "IDA* and pattern-database build for sliding-tile puzzles.", -1, methods};

PyMODINIT_FUNC PyInit_sliding(void) { return PyModule_Create(&module); }
