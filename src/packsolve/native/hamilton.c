/* Hamiltonian-path search with pruning: the hot loop of the strong one-stroke solver.
 *
 * search(offsets, neighbours, start, end, closed, colour, order, prune,
 *        node_limit, time_limit) -> (status, path or None, nodes)
 *
 * status: 0 path found, 1 no path exists (whole tree searched), 2 node limit,
 * 3 time limit. One node is one vertex appended to the path, as in the Python
 * depth_first of packsolve.puzzles.hamilton.graph, so node counts compare across heuristics.
 *
 * Every expanded state (head h, unvisited set U) is tested against necessary
 * conditions for a Hamiltonian path of G' = U + {h} starting at h:
 *   - connectivity: U is connected and reached from h (one DFS from h);
 *   - dead ends: a vertex of U with one usable neighbour must be the end; two prune;
 *   - articulation points (Tarjan low-links in the same DFS): each cut vertex of G'
 *     may have only one component hanging below it (the path goes through it once
 *     and cannot come back), and those components must nest in one chain; the end
 *     lies in the innermost one;
 *   - colour parity (bipartite graphs): the path alternates colours, so each
 *     segment between consecutive cut vertices of the chain must hold the colour
 *     counts a path between its two ends can have;
 *   - degree relaxation (bipartite graphs): the path is a subgraph of G' where h
 *     and the end have degree 1 and every other vertex degree 2, so such a
 *     degree-constrained subgraph (a bipartite b-matching) must exist. It is
 *     found by augmenting paths; when none exists, Hall's condition fails on
 *     some region, which catches regions whose colour imbalance exceeds what
 *     the few edges around them can feed;
 *   - forced edges (once the end is known): a vertex with exactly as many usable
 *     edges as its degree in the path uses them all, and one whose forced edges
 *     fill its degree loses the rest, and an edge joining the two ends of one
 *     forced chain is dropped (the path would close a cycle); propagated to a
 *     fixpoint, a forced cycle, an overfull vertex or a forced h..end chain that
 *     misses vertices prunes; then the degree relaxation runs again on the open
 *     edges, with each vertex's degree less its forced edges;
 *   - probing (root_ends only, the roots of the possible ends up to the first that survives): each
 *     open edge is tried removed and forced; when the tests above (plus connectivity along the
 *     edges not removed) fail one way, the other is a fact, kept for the following tries, pass
 *     after pass; a contradiction refutes the end. It sees what the tests of one state see only deep in the search (a removal that
 *     disconnects or a forcing that unbalances a region far away), too costly for every node.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRUNE_DEAD 1
#define PRUNE_CUT 2
#define PRUNE_PARITY 4
#define PRUNE_DEGREE 8
#define PRUNE_FORCED 16
#define PRUNE_PROBE 32

typedef struct {
    int n, start, end, closed, order, prune, bip;
    int *off, *nb;
    int8_t *colour;
    /* search state */
    uint8_t *vis;
    int *deg, *path, count;
    /* per-depth candidate lists */
    int maxdeg;
    int *cands, *ncand, *ci;
    /* DFS scratch */
    unsigned *seen, *nbh, stamp;
    int *disc, *low, *last, *parent, *it, *stack, *order_buf, *c0, *c1;
    int *hang;         /* post-order list of (cut vertex, hanging child) */
    unsigned *cutmark; /* == stamp: the vertex already has a hanging child */
    uint8_t *adjstart; /* neighbours of the start, for closed paths */
    /* b-matching scratch: per adjacency slot and per vertex */
    uint8_t *used;
    int *rev, *owner, *cap, *load, *pred, *queue;
    unsigned *mark, mstamp;
    /* forced-edge scratch: edge state per slot (0 open, 1 forced, 2 removed), union-find */
    uint8_t *ef;
    /* probing (root_ends only): facts per slot (0 none, 1 in the path, 2 not), the open edges to try */
    uint8_t *fix;
    int *plist, probe_root;
    int *av, *fc, *uf, *usz, *ea, *eb, *work;
} Search;

/* Whether degree_ok may use adjacency slot k: any edge, or when reduced (degree_ok on what
 * forced_ok left: forced edges taken, removed ones gone) only the edges still open. The flag is a
 * constant at every call, so the compiler specializes the hot loops and the plain test pays nothing. */
/* Append v to list as a Python int; -1 (an exception set) if it cannot. */
static int append_long(PyObject *list, long v) {
    PyObject *x = PyLong_FromLong(v);
    int failed = !x || PyList_Append(list, x) < 0;
    Py_XDECREF(x);
    return failed ? -1 : 0;
}

static inline int open_slot(const Search *s, int k, int reduced) { return !reduced || s->ef[k] == 0; }

static int in_gp(const Search *s, int w, int h) { return !s->vis[w] || w == h; }

/* Return whether a path from a (colour ca) through n0 + n1 vertices can end at a vertex of
 * colour cb (cb < 0: anywhere). n0, n1 count colour-0 and colour-1 vertices, ends included. */
static int segment_ok(int ca, int cb, int n0, int n1) {
    int diff = ca == 0 ? n0 - n1 : n1 - n0;
    if (cb < 0) return diff == 0 || diff == 1;
    return cb == ca ? diff == 1 : diff == 0;
}

/* Find an augmenting path from O-side vertex v to an E-side vertex with spare capacity; flip it. */
static int augment(Search *s, int v, unsigned st, int reduced) {
    unsigned ms = ++s->mstamp;
    if (ms == 0) {
        memset(s->mark, 0, sizeof(unsigned) * s->n);
        ms = s->mstamp = 1;
    }
    int qh = 0, qt = 0;
    s->mark[v] = ms;
    s->queue[qt++] = v;
    while (qh < qt) {
        int x = s->queue[qh++];
        for (int k = s->off[x]; k < s->off[x + 1]; k++) {
            int w = s->nb[k];
            if (s->seen[w] != st || s->used[k] || s->mark[w] == ms || !open_slot(s, k, reduced)) continue;
            s->mark[w] = ms;
            s->pred[w] = k;
            if (s->load[w] < s->cap[w]) {
                s->load[w]++;
                s->load[v]++;
                for (;;) { /* flip the alternating path back to v */
                    int o = s->owner[k];
                    s->used[k] = s->used[s->rev[k]] = 1;
                    if (o == v) return 1;
                    int k2 = s->pred[o]; /* used edge e -> o, now released */
                    s->used[k2] = s->used[s->rev[k2]] = 0;
                    k = s->pred[s->owner[k2]];
                }
            }
            for (int k2 = s->off[w]; k2 < s->off[w + 1]; k2++) {
                int x2 = s->nb[k2];
                if (!s->used[k2] || s->seen[x2] != st || s->mark[x2] == ms) continue;
                s->mark[x2] = ms;
                s->pred[x2] = k2;
                s->queue[qt++] = x2;
            }
        }
    }
    return 0;
}

/* Return whether G' (the nord vertices of order_buf) has a subgraph with degree 1 at h and
 * at the end (endv, or an unknown vertex when endv < 0) and degree 2 elsewhere.
 *
 * The edge set found last time is kept in `used` and repaired rather than rebuilt: the
 * previous state differs by a vertex or two, so a few augmenting paths usually suffice. */
static int degree_ok(Search *s, int h, int endv, int nord, unsigned st, int reduced) {
    int sum[2] = {0, 0};
    for (int i = 0; i < nord; i++) {
        int v = s->order_buf[i], load = 0;
        s->cap[v] = ((v == h || v == endv) ? 1 : 2) - (reduced ? s->fc[v] : 0);
        sum[s->colour[v]] += s->cap[v];
        for (int k = s->off[v]; k < s->off[v + 1]; k++) {
            if (!s->used[k]) continue;
            if (s->seen[s->nb[k]] == st && open_slot(s, k, reduced)) {
                load++;
            } else { /* the other end left G', or the edge is forced or removed */
                s->used[k] = s->used[s->rev[k]] = 0;
            }
        }
        s->load[v] = load;
    }
    for (int i = 0; i < nord; i++) { /* caps may have dropped (new head, new end) */
        int v = s->order_buf[i];
        for (int k = s->off[v]; k < s->off[v + 1] && s->load[v] > s->cap[v]; k++) {
            if (!s->used[k]) continue;
            s->used[k] = s->used[s->rev[k]] = 0;
            s->load[v]--;
            s->load[s->nb[k]]--;
        }
    }
    /* Every edge joins the two colours, so their degree sums agree; an unknown end
     * (degree 1, capacity 2 here) leaves its side exactly one unit of slack. */
    int o;
    if (endv >= 0) {
        if (sum[0] != sum[1]) return 0;
        o = 0;
    } else if (sum[1] == sum[0] + 1) {
        o = 0;
    } else if (sum[0] == sum[1] + 1) {
        o = 1;
    } else {
        return 0;
    }
    for (int i = 0; i < nord; i++) { /* greedy start, then augmenting paths for the rest */
        int v = s->order_buf[i];
        if (s->colour[v] != o) continue;
        for (int k = s->off[v]; k < s->off[v + 1] && s->load[v] < s->cap[v]; k++) {
            int w = s->nb[k];
            if (s->used[k] || s->seen[w] != st || s->load[w] >= s->cap[w] || !open_slot(s, k, reduced)) continue;
            s->used[k] = s->used[s->rev[k]] = 1;
            s->load[v]++;
            s->load[w]++;
        }
    }
    for (int i = 0; i < nord; i++) {
        int v = s->order_buf[i];
        if (s->colour[v] != o) continue;
        while (s->load[v] < s->cap[v])
            if (!augment(s, v, st, reduced)) return 0;
    }
    return 1;
}

static int uf_find(int *uf, int v) {
    while (uf[v] != v) {
        uf[v] = uf[uf[v]];
        v = uf[v];
    }
    return v;
}

/* Remove the open edge between x and y, the two ends of one forced chain, if G' has one: the path
 * cannot use it without closing a cycle. Push both ends for a recheck; return the new work count. */
static int close_chain(Search *s, int x, int y, unsigned st, int nw) {
    if (s->bip && s->colour[x] == s->colour[y]) return nw; /* no edge joins one colour */
    for (int k = s->off[x]; k < s->off[x + 1]; k++) {
        if (s->nb[k] != y || s->ef[k] || s->seen[y] != st) continue;
        s->ef[k] = s->ef[s->rev[k]] = 2;
        s->av[x]--;
        s->av[y]--;
        s->work[nw++] = x;
        s->work[nw++] = y;
    }
    return nw;
}

/* Join v and w (adjacency slot k, open) by a forced edge; return 0 on a contradiction (a forced cycle,
 * or a forced chain from h to the end that misses vertices). */
static inline int force_slot(Search *s, int k, int v, int w, int h, int endv, int nord, unsigned st, int *nw) {
    int rv = uf_find(s->uf, v), rw = uf_find(s->uf, w);
    if (rv == rw) return 0; /* a forced cycle */
    /* the joined chain runs from the far end of v's piece to the far end of w's */
    int x = s->ea[rv] == v ? s->eb[rv] : s->ea[rv];
    int y = s->ea[rw] == w ? s->eb[rw] : s->ea[rw];
    if (s->usz[rv] < s->usz[rw]) {
        int t = rv;
        rv = rw;
        rw = t;
    }
    s->uf[rw] = rv;
    s->usz[rv] += s->usz[rw];
    s->ea[rv] = x;
    s->eb[rv] = y;
    if (uf_find(s->uf, h) == uf_find(s->uf, endv) && s->usz[rv] < nord) return 0;
    s->ef[k] = s->ef[s->rev[k]] = 1;
    s->fc[v]++;
    s->fc[w]++;
    *nw = close_chain(s, x, y, st, *nw);
    return 1;
}

/* Propagate forced and removed edges of G' (end endv known); return 0 on a contradiction.
 * Each forced piece is a chain (cycles and overfull vertices are contradictions); its two ends
 * (ea, eb at its union-find root) may not be joined by an edge of the path. With fixed (the
 * probing), the slots fix marks start removed (2) or forced (1), as facts proved earlier. */
static inline int forced_ok(Search *s, int h, int endv, int nord, unsigned st, int fixed) {
    int nw = 0;
    for (int i = 0; i < nord; i++) {
        int v = s->order_buf[i], a = 0;
        for (int k = s->off[v]; k < s->off[v + 1]; k++) {
            s->ef[k] = 0;
            if (s->seen[s->nb[k]] != st) continue;
            if (fixed && s->fix[k] == 2) s->ef[k] = 2;
            else a++;
        }
        s->av[v] = a;
        s->fc[v] = 0;
        s->uf[v] = v;
        s->usz[v] = 1;
        s->ea[v] = s->eb[v] = v;
        s->work[nw++] = v;
    }
    if (fixed) {
        for (int i = 0; i < nord; i++) {
            int v = s->order_buf[i];
            for (int k = s->off[v]; k < s->off[v + 1]; k++) {
                int w = s->nb[k];
                if (s->fix[k] != 1 || w < v || s->seen[w] != st) continue;
                /* a chain-closing edge the forcing before removed cannot be in the path */
                if (s->ef[k] == 2) return 0;
                if (s->ef[k] == 0) {
                    if (!force_slot(s, k, v, w, h, endv, nord, st, &nw)) return 0;
                    s->work[nw++] = v;
                    s->work[nw++] = w;
                }
            }
        }
    }
    while (nw > 0) {
        int v = s->work[--nw];
        int b = (v == h || v == endv) ? 1 : 2;
        if (s->av[v] < b || s->fc[v] > b) return 0;
        if (s->av[v] == s->fc[v]) continue;
        int force = s->av[v] == b; /* else fc == b: the open edges are not in the path */
        if (!force && s->fc[v] < b) continue;
        for (int k = s->off[v]; k < s->off[v + 1]; k++) {
            int w = s->nb[k];
            if (s->seen[w] != st || s->ef[k]) continue;
            if (force) {
                if (!force_slot(s, k, v, w, h, endv, nord, st, &nw)) return 0;
            } else {
                s->ef[k] = s->ef[s->rev[k]] = 2;
                s->av[v]--;
                s->av[w]--;
            }
            s->work[nw++] = w;
        }
        s->work[nw++] = v; /* recheck v itself after the change */
    }
    return 1;
}

/* Return 1 if the state with head h passes every pruning test, 0 if it has no completion. */
static int feasible(Search *s, int h) {
    int rem = s->n - s->count;
    if (rem == 0) return 1;
    if (!s->prune) return 1;
    unsigned st = ++s->stamp;
    if (st == 0) { /* wrapped: reset */
        memset(s->seen, 0, sizeof(unsigned) * s->n);
        memset(s->nbh, 0, sizeof(unsigned) * s->n);
        memset(s->cutmark, 0, sizeof(unsigned) * s->n);
        st = s->stamp = 1;
    }
    for (int k = s->off[h]; k < s->off[h + 1]; k++) s->nbh[s->nb[k]] = st;

    /* Iterative DFS from h over G' with Tarjan low-links and subtree colour counts. */
    int timer = 0, sp = 0, nord = 0, nhang = 0;
    s->seen[h] = st;
    s->disc[h] = s->low[h] = timer++;
    s->parent[h] = -1;
    s->it[h] = s->off[h];
    s->c0[h] = s->bip && s->colour[h] == 0;
    s->c1[h] = s->bip && s->colour[h] == 1;
    s->stack[sp++] = h;
    s->order_buf[nord++] = h;
    int cut = (s->prune & PRUNE_CUT) != 0;
    while (sp > 0) {
        int v = s->stack[sp - 1];
        if (s->it[v] < s->off[v + 1]) {
            int w = s->nb[s->it[v]++];
            if (!in_gp(s, w, h)) continue;
            if (s->seen[w] != st) {
                s->seen[w] = st;
                s->disc[w] = s->low[w] = timer++;
                s->parent[w] = v;
                s->it[w] = s->off[w];
                s->c0[w] = s->bip && s->colour[w] == 0;
                s->c1[w] = s->bip && s->colour[w] == 1;
                s->stack[sp++] = w;
                s->order_buf[nord++] = w;
            } else if (w != s->parent[v] && s->disc[w] < s->low[v]) {
                s->low[v] = s->disc[w];
            }
        } else {
            sp--;
            s->last[v] = timer - 1;
            int p = s->parent[v];
            if (p >= 0) {
                if (s->low[v] < s->low[p]) s->low[p] = s->low[v];
                s->c0[p] += s->c0[v];
                s->c1[p] += s->c1[v];
                if (cut && p != h && s->low[v] >= s->disc[p]) {
                    /* p is a cut vertex and v's subtree hangs below it: the path enters
                     * it through p and never leaves, so p may have only one such child. */
                    if (s->cutmark[p] == st) return 0;
                    s->cutmark[p] = st;
                    s->hang[2 * nhang] = p;
                    s->hang[2 * nhang + 1] = v;
                    nhang++;
                }
            }
        }
    }
    if (nord != rem + 1) return 0; /* U is not connected to h as one piece */

    /* Dead ends: a vertex with one usable neighbour can only be the path's end. */
    int dead = -1;
    if (s->prune & PRUNE_DEAD) {
        for (int i = 1; i < nord; i++) {
            int v = s->order_buf[i];
            int avail = s->deg[v] + (s->nbh[v] == st);
            if (avail <= 1) {
                if (avail == 0 && rem > 1) return 0;
                if (dead >= 0) return 0;
                if (s->end >= 0 && v != s->end) return 0;
                dead = v;
            }
        }
    }
    int endv = s->end >= 0 ? s->end : dead;
    if (s->closed && endv >= 0 && !s->adjstart[endv]) return 0; /* a closed path ends next to its start */

    /* The hanging subtrees, innermost first (post-order), must nest in one chain. */
    for (int j = 1; j < nhang; j++) {
        int in = s->hang[2 * (j - 1) + 1], out = s->hang[2 * j + 1];
        if (!(s->disc[out] <= s->disc[in] && s->last[in] <= s->last[out])) return 0;
    }
    if (nhang > 0 && endv >= 0) {
        int inner = s->hang[1];
        if (s->seen[endv] != st || s->disc[endv] < s->disc[inner] || s->disc[endv] > s->last[inner])
            return 0;
    }
    if (!s->bip) return 1;
    if (s->prune & PRUNE_PARITY) {
        /* Segments from the outermost cut vertex inwards: h -> c1 -> c2 ... -> ck -> end. */
        int ce = endv >= 0 ? s->colour[endv] : -1;
        int a = h, t0 = s->c0[h], t1 = s->c1[h];
        for (int j = nhang - 1; j >= 0; j--) {
            int c = s->hang[2 * j], child = s->hang[2 * j + 1];
            /* the segment is everything of the current piece outside child's subtree */
            int n0 = t0 - s->c0[child], n1 = t1 - s->c1[child];
            if (!segment_ok(s->colour[a], s->colour[c], n0, n1)) return 0;
            a = c;
            t0 = s->c0[child] + (s->colour[c] == 0);
            t1 = s->c1[child] + (s->colour[c] == 1);
        }
        if (!segment_ok(s->colour[a], ce, t0, t1)) return 0;
    }
    return !(s->prune & PRUNE_DEGREE) || degree_ok(s, h, endv, nord, st, 0);
}

/* Whether the facts in fix survive forced-edge propagation, leave G' connected along the edges
 * not removed, and leave room for the degree relaxation on the open edges. */
static int fixed_ok(Search *s, int h, int endv, int nord, unsigned st) {
    if (!forced_ok(s, h, endv, nord, st, 1)) return 0;
    unsigned ms = ++s->mstamp;
    if (ms == 0) {
        memset(s->mark, 0, sizeof(unsigned) * s->n);
        ms = s->mstamp = 1;
    }
    int qh = 0, qt = 0;
    s->mark[h] = ms;
    s->queue[qt++] = h;
    while (qh < qt) {
        int x = s->queue[qh++];
        for (int k = s->off[x]; k < s->off[x + 1]; k++) {
            int w = s->nb[k];
            if (s->seen[w] != st || s->ef[k] == 2 || s->mark[w] == ms) continue;
            s->mark[w] = ms;
            s->queue[qt++] = w;
        }
    }
    return qt == nord && degree_ok(s, h, endv, nord, st, 1);
}

/* Probing (failed literals) on the root of a search to a given end: an open edge whose removal
 * fails fixed_ok is in every path, one whose forcing fails is in none. The facts accumulate, pass
 * after pass over the open edges until none is learned; a contradiction refutes the state. Edge
 * removal breaks connectivity and forcing breaks parity far from the edge, which the tests of a
 * single state see only once the search gets there: on the hardest impossible levels found this
 * refutes every end at its root. O(m) propagations a pass, so it runs at the ends' roots only. */
static int probe_ok(Search *s, int h, int endv, int nord, unsigned st) {
    for (int i = 0; i < nord; i++) {
        int v = s->order_buf[i];
        for (int k = s->off[v]; k < s->off[v + 1]; k++) s->fix[k] = 0;
    }
    for (int learned = 1; learned;) {
        learned = 0;
        if (!fixed_ok(s, h, endv, nord, st)) return 0;
        int np = 0;
        for (int i = 0; i < nord; i++) { /* the open edges of this pass's fixpoint, once each */
            int v = s->order_buf[i];
            for (int k = s->off[v]; k < s->off[v + 1]; k++)
                if (s->ef[k] == 0 && s->nb[k] > v && s->seen[s->nb[k]] == st) s->plist[np++] = k;
        }
        for (int j = 0; j < np; j++) {
            int k = s->plist[j];
            if (s->fix[k]) continue;
            int proved = 0;
            for (int f = 2; f >= 1 && !proved; f--) { /* try it removed, then forced */
                s->fix[k] = s->fix[s->rev[k]] = (uint8_t)f;
                if (!fixed_ok(s, h, endv, nord, st)) proved = 3 - f; /* the other way holds */
            }
            s->fix[k] = s->fix[s->rev[k]] = (uint8_t)proved;
            if (proved) {
                learned = 1;
                if (!fixed_ok(s, h, endv, nord, st)) return 0;
            }
        }
    }
    return 1;
}

/* Return 1 if the state passes feasible() and, when the end is known, forced-edge propagation and
 * the degree relaxation again on the edges it left open (forced edges already fill their share). */
static int feasible_all(Search *s, int h) {
    if (!feasible(s, h)) return 0;
    if (!(s->prune & PRUNE_FORCED) || s->n - s->count == 0) return 1;
    int endv = s->end;
    if (endv < 0) { /* a dead end found by feasible() is the end */
        unsigned st = s->stamp;
        for (int i = 1; i < s->n - s->count + 1; i++) {
            int v = s->order_buf[i];
            if (s->deg[v] + (s->nbh[v] == st) <= 1) endv = v;
        }
    }
    if (endv < 0) return 1;
    int nord = s->n - s->count + 1;
    if (!forced_ok(s, h, endv, nord, s->stamp, 0)) return 0;
    /* The path is the forced edges plus a degree-constrained subgraph of the open ones. Only when
     * the end was given (the end splitting): with an end found as a dead end, the second matching
     * per node cost typical levels a fifth more time and saved no node. */
    if (!s->bip || !(s->prune & PRUNE_DEGREE) || s->end < 0) return 1;
    if (!degree_ok(s, h, endv, nord, s->stamp, 1)) return 0;
    return !s->probe_root || s->count != 1 || probe_ok(s, h, endv, nord, s->stamp);
}

static void visit(Search *s, int v) {
    s->vis[v] = 1;
    s->path[s->count++] = v;
    for (int k = s->off[v]; k < s->off[v + 1]; k++) s->deg[s->nb[k]]--;
}

static void unvisit(Search *s) {
    int v = s->path[--s->count];
    s->vis[v] = 0;
    for (int k = s->off[v]; k < s->off[v + 1]; k++) s->deg[s->nb[k]]++;
}

/* Fill the candidate list of depth d (head h): unvisited neighbours, fewest exits first. */
static void candidates(Search *s, int d, int h) {
    int *c = s->cands + (size_t)d * s->maxdeg, m = 0;
    for (int k = s->off[h]; k < s->off[h + 1]; k++) {
        int w = s->nb[k];
        if (s->vis[w]) continue;
        /* a required end may only be entered last */
        if (w == s->end && s->count < s->n - 1) continue;
        c[m++] = w;
    }
    if (s->order) { /* insertion sort by onward exits: stable, so ties keep natural order */
        for (int i = 1; i < m; i++) {
            int x = c[i], j = i - 1;
            while (j >= 0 && s->deg[c[j]] > s->deg[x]) {
                c[j + 1] = c[j];
                j--;
            }
            c[j + 1] = x;
        }
    }
    s->ncand[d] = m;
    s->ci[d] = 0;
}

static int complete(const Search *s) {
    int last = s->path[s->count - 1];
    if (s->end >= 0 && last != s->end) return 0;
    if (s->closed && s->n > 1) {
        for (int k = s->off[last]; k < s->off[last + 1]; k++)
            if (s->nb[k] == s->start) return 1;
        return 0;
    }
    return 1;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Run the search; return the status code and set *nodes. */
static int run(Search *s, long long node_limit, double time_limit, long long *nodes) {
    double deadline = time_limit >= 0 ? now() + time_limit : -1;
    long long nn = 1;
    visit(s, s->start);
    *nodes = 1;
    if (s->n == 1) return complete(s) ? 0 : 1;
    if (!feasible_all(s, s->start)) return 1;
    candidates(s, 0, s->start);
    int d = 0;
    while (d >= 0) {
        if (s->ci[d] >= s->ncand[d]) {
            d--;
            if (d >= 0) unvisit(s);
            continue;
        }
        int u = s->cands[(size_t)d * s->maxdeg + s->ci[d]++];
        nn++;
        if ((nn & 1023) == 0) {
            *nodes = nn;
            if (node_limit >= 0 && nn > node_limit) return 2;
            if (deadline >= 0 && now() >= deadline) return 3;
            if ((nn & 0xFFFF) == 0 && PyErr_CheckSignals() < 0) return -1;
        } else if (node_limit >= 0 && nn > node_limit) {
            *nodes = nn;
            return 2;
        }
        visit(s, u);
        if (s->count == s->n) {
            if (complete(s)) {
                *nodes = nn;
                return 0;
            }
            unvisit(s);
            continue;
        }
        if (!feasible_all(s, u)) {
            unvisit(s);
            continue;
        }
        d++;
        candidates(s, d, u);
    }
    *nodes = nn;
    return 1;
}

static int *int_array(PyObject *seq, Py_ssize_t *len, const char *what) {
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(fast);
    int *a = PyMem_Malloc(sizeof(int) * (m ? m : 1));
    if (!a) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (x == -1 && PyErr_Occurred()) {
            PyMem_Free(a);
            Py_DECREF(fast);
            return NULL;
        }
        a[i] = (int)x;
    }
    Py_DECREF(fast);
    *len = m;
    return a;
}

/* Read a graph in compressed adjacency form and check it (start and end, -1 for none, in range);
 * 0 with an exception set and nothing allocated. */
static int read_graph(PyObject *off_o, PyObject *nb_o, int start, int end, int **off, int **nb, int *n,
                      Py_ssize_t *nnb) {
    Py_ssize_t noff;
    *off = int_array(off_o, &noff, "offsets must be a sequence of ints");
    if (!*off) return 0;
    *nb = int_array(nb_o, nnb, "neighbours must be a sequence of ints");
    if (!*nb) {
        PyMem_Free(*off);
        return 0;
    }
    *n = (int)noff - 1;
    const char *bad = NULL;
    if (*n < 1 || start < 0 || start >= *n || end >= *n || (*off)[0] != 0 || (*off)[*n] != *nnb)
        bad = "bad graph: offsets, neighbours, start or end out of range";
    for (int v = 0; !bad && v < *n; v++)
        if ((*off)[v + 1] < (*off)[v]) bad = "offsets must not decrease";
    for (Py_ssize_t k = 0; !bad && k < *nnb; k++)
        if ((*nb)[k] < 0 || (*nb)[k] >= *n) bad = "neighbour out of range";
    if (bad) {
        PyErr_SetString(PyExc_ValueError, bad);
        PyMem_Free(*off);
        PyMem_Free(*nb);
        return 0;
    }
    return 1;
}

/* Free what search_init allocated (every pointer of a zeroed Search may be NULL). */
static void search_free(Search *s) {
    void *ptrs[] = {s->colour, s->vis,  s->deg,   s->path, s->cands, s->ncand, s->ci,  s->seen,
                    s->nbh,    s->hang, s->cutmark, s->adjstart, s->used, s->rev, s->owner, s->mark,
                    s->ef,     s->work, s->off,   s->nb, s->fix, s->plist};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) PyMem_Free(ptrs[i]);
    int *ints[] = {s->disc, s->low, s->last, s->parent, s->it,   s->stack, s->order_buf, s->c0, s->c1, s->cap,
                   s->load, s->pred, s->queue, s->av,   s->fc,   s->uf,    s->usz,       s->ea, s->eb};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) PyMem_Free(ints[i]);
}

/* Read the graph and allocate the search of it; 0 with an exception set (call search_free anyway). */
static int search_init(Search *s, PyObject *off_o, PyObject *nb_o, PyObject *colour_o, int start, int end,
                       int closed, int order, int prune) {
    memset(s, 0, sizeof *s);
    Py_ssize_t nnb;
    if (!read_graph(off_o, nb_o, start, end, &s->off, &s->nb, &s->n, &nnb)) {
        s->off = s->nb = NULL; /* freed by read_graph */
        return 0;
    }
    int n = s->n;
    for (int v = 0; v < n; v++)
        if (s->off[v + 1] - s->off[v] > s->maxdeg) s->maxdeg = s->off[v + 1] - s->off[v];
    if (s->maxdeg == 0) s->maxdeg = 1;
    s->start = start;
    s->end = end;
    s->closed = closed;
    s->order = order;
    s->prune = prune;
    s->colour = PyMem_Calloc(n, 1);
    s->vis = PyMem_Calloc(n, 1);
    s->deg = PyMem_Malloc(sizeof(int) * n);
    s->path = PyMem_Malloc(sizeof(int) * n);
    s->cands = PyMem_Malloc(sizeof(int) * (size_t)n * s->maxdeg);
    s->ncand = PyMem_Malloc(sizeof(int) * n);
    s->ci = PyMem_Malloc(sizeof(int) * n);
    s->seen = PyMem_Calloc(n, sizeof(unsigned));
    s->nbh = PyMem_Calloc(n, sizeof(unsigned));
    s->cutmark = PyMem_Calloc(n, sizeof(unsigned));
    s->adjstart = PyMem_Calloc(n, 1);
    s->used = PyMem_Calloc(nnb ? nnb : 1, 1);
    s->rev = PyMem_Malloc(sizeof(int) * (nnb ? nnb : 1));
    s->owner = PyMem_Malloc(sizeof(int) * (nnb ? nnb : 1));
    s->mark = PyMem_Calloc(n, sizeof(unsigned));
    s->ef = PyMem_Calloc(nnb ? nnb : 1, 1);
    /* each vertex once, then at most three pushes per edge change and one re-push of its vertex */
    s->work = PyMem_Malloc(sizeof(int) * ((size_t)n + 3 * (size_t)nnb + 1));
    int **ints[] = {&s->disc, &s->low, &s->last, &s->parent, &s->it, &s->stack, &s->order_buf,
                    &s->c0,   &s->c1,  &s->cap,  &s->load,   &s->pred, &s->queue, &s->av,
                    &s->fc,   &s->uf,  &s->usz,  &s->ea,     &s->eb};
    int ok = s->colour && s->vis && s->deg && s->path && s->cands && s->ncand && s->ci && s->seen && s->nbh &&
             s->cutmark && s->adjstart && s->used && s->rev && s->owner && s->mark && s->ef && s->work;
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) ok = (*ints[i] = PyMem_Malloc(sizeof(int) * n)) && ok;
    s->hang = PyMem_Malloc(sizeof(int) * 2 * n);
    if (!ok || !s->hang) {
        PyErr_NoMemory();
        return 0;
    }
    if (colour_o != Py_None) {
        Py_ssize_t nc;
        int *col = int_array(colour_o, &nc, "colour must be a sequence of 0/1");
        if (!col) return 0;
        if (nc != n) {
            PyMem_Free(col);
            PyErr_SetString(PyExc_ValueError, "colour must have one entry per vertex");
            return 0;
        }
        for (int v = 0; v < n; v++) s->colour[v] = (int8_t)(col[v] & 1);
        PyMem_Free(col);
        s->bip = 1;
    }
    for (int v = 0; v < n; v++) s->deg[v] = s->off[v + 1] - s->off[v];
    for (int k = s->off[start]; k < s->off[start + 1]; k++) s->adjstart[s->nb[k]] = 1;
    for (int v = 0; v < n; v++)
        for (int k = s->off[v]; k < s->off[v + 1]; k++) {
            int w = s->nb[k];
            s->owner[k] = v;
            s->rev[k] = -1;
            for (int j = s->off[w]; j < s->off[w + 1]; j++)
                if (s->nb[j] == v) s->rev[k] = j;
        }
    for (Py_ssize_t k = 0; k < nnb; k++)
        if (s->rev[k] < 0) { /* the degree relaxation needs every edge listed both ways */
            s->prune &= ~(PRUNE_DEGREE | PRUNE_FORCED | PRUNE_PROBE);
            break;
        }
    return 1;
}

static PyObject *search(PyObject *self, PyObject *args) {
    PyObject *off_o, *nb_o, *colour_o;
    int start, end, closed, order, prune;
    long long node_limit;
    double time_limit;
    if (!PyArg_ParseTuple(args, "OOiipOiiLd", &off_o, &nb_o, &start, &end, &closed, &colour_o, &order,
                          &prune, &node_limit, &time_limit))
        return NULL;
    Search s;
    PyObject *result = NULL;
    if (!search_init(&s, off_o, nb_o, colour_o, start, end, closed, order, prune)) goto done;
    long long nodes = 0;
    /* The GIL stays held: the loop polls PyErr_CheckSignals so Ctrl-C interrupts it. */
    int status = run(&s, node_limit, time_limit, &nodes);
    if (status == -1) goto done;
    if (status == 0) {
        PyObject *path = PyList_New(s.count);
        if (!path) goto done;
        for (int i = 0; i < s.count; i++) PyList_SET_ITEM(path, i, PyLong_FromLong(s.path[i]));
        result = Py_BuildValue("(iNL)", status, path, nodes);
    } else {
        result = Py_BuildValue("(iOL)", status, Py_None, nodes);
    }
done:
    search_free(&s);
    return result;
}

/* The ends whose root state (the path is the start alone, the end required) passes every test and
 * has a move: those for which search() with node limit 1 would stop at the limit (two nodes) rather
 * than prove there is no path (one node), found on one set-up of the graph. */
static PyObject *root_ends(PyObject *self, PyObject *args) {
    PyObject *off_o, *nb_o, *colour_o, *ends_o;
    int start, prune;
    if (!PyArg_ParseTuple(args, "OOiOOi", &off_o, &nb_o, &start, &colour_o, &ends_o, &prune)) return NULL;
    Search s;
    PyObject *result = NULL;
    Py_ssize_t nends = 0;
    int *ends = NULL;
    if (!search_init(&s, off_o, nb_o, colour_o, start, -1, 0, 1, prune)) goto done;
    s.probe_root = (s.prune & PRUNE_PROBE) != 0;
    if (s.probe_root) { /* probing's scratch, per adjacency slot: only here, search() never probes */
        size_t nnb = (size_t)s.off[s.n] ? (size_t)s.off[s.n] : 1;
        s.fix = PyMem_Calloc(nnb, 1);
        s.plist = PyMem_Malloc(sizeof(int) * nnb);
        if (!s.fix || !s.plist) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (!(ends = int_array(ends_o, &nends, "ends must be a sequence of ints"))) goto done;
    if (!(result = PyList_New(0))) goto done;
    for (Py_ssize_t i = 0; i < nends; i++) {
        if (ends[i] < 0 || ends[i] >= s.n || ends[i] == start) {
            PyErr_SetString(PyExc_ValueError, "an end is out of range or the start");
            Py_CLEAR(result);
            break;
        }
        s.end = ends[i];
        while (s.count > 0) unvisit(&s);
        visit(&s, start);
        if (!feasible_all(&s, start)) continue;
        candidates(&s, 0, start);
        if (s.ncand[0] == 0) continue; /* the start's only way on is the end: search() finds none */
        /* Probing stops at the first end it does not refute: on a level with a path most ends
         * survive it, each after whole passes over the edges (hunted-16: 228 ends, 13 s), while on
         * the impossible levels it refutes every end. */
        s.probe_root = 0;
        if (append_long(result, ends[i]) < 0) {
            Py_CLEAR(result);
            break;
        }
    }
done:
    PyMem_Free(ends);
    search_free(&s);
    return result;
}

/* The vertices that may end a Hamiltonian path from start by the 2-vertex-cut parity test, as
 * packsolve.puzzles.hamilton.prune._two_cut_ends (its twin in Python, which explains the test):
 * for every vertex a, a DFS of G - a from start finds the pieces hanging on one more vertex b; a
 * piece whose colour counts a path from a to b through it cannot have (or that hangs on b alone)
 * must hold the end. Returns a list of the vertices allowed, or None when the test allows all. */
static PyObject *two_cut_ends(PyObject *self, PyObject *args) {
    PyObject *off_o, *nb_o, *colour_o;
    int start;
    if (!PyArg_ParseTuple(args, "OOiO", &off_o, &nb_o, &start, &colour_o)) return NULL;
    int *off, *nb, n;
    Py_ssize_t nnb, ncol;
    if (!read_graph(off_o, nb_o, start, -1, &off, &nb, &n, &nnb)) return NULL;
    int *colour = int_array(colour_o, &ncol, "colour must be a sequence of ints");
    PyObject *result = NULL;
    int *buf = colour && ncol == n ? PyMem_Malloc(sizeof(int) * 12 * (size_t)n) : NULL;
    if (!buf) {
        if (colour && ncol != n) PyErr_SetString(PyExc_ValueError, "colour must hold one 0/1 per vertex");
        else if (colour) PyErr_NoMemory();
        goto done;
    }
    int *disc = buf, *low = buf + n, *parent = buf + 2 * n, *it = buf + 3 * n, *stack = buf + 4 * n;
    int *order = buf + 5 * n, *c0 = buf + 6 * n, *c1 = buf + 7 * n, *hb = buf + 8 * n, *hc = buf + 9 * n;
    int *allowed = buf + 10 * n, *mark = buf + 11 * n;
    int restricted = 0;
    for (int v = 0; v < n; v++) {
        allowed[v] = 1;
        mark[v] = -1;
    }
    for (int a = 0; a < n; a++) {
        if (a == start) continue;
        for (int v = 0; v < n; v++) disc[v] = -1;
        disc[a] = -2; /* removed */
        int nord = 0, top = 0, nh = 0;
        disc[start] = low[start] = 0;
        parent[start] = -1;
        order[nord++] = start;
        c0[start] = colour[start] == 0;
        c1[start] = colour[start] == 1;
        stack[top++] = start;
        it[start] = off[start];
        while (top) {
            int v = stack[top - 1];
            if (it[v] < off[v + 1]) {
                int w = nb[it[v]++];
                if (disc[w] == -1) {
                    disc[w] = low[w] = nord;
                    parent[w] = v;
                    order[nord++] = w;
                    c0[w] = colour[w] == 0;
                    c1[w] = colour[w] == 1;
                    it[w] = off[w];
                    stack[top++] = w;
                } else if (disc[w] >= 0 && w != parent[v] && disc[w] < low[v]) {
                    low[v] = disc[w];
                }
                continue;
            }
            top--;
            int q = parent[v];
            if (q >= 0) {
                if (low[v] < low[q]) low[q] = low[v];
                c0[q] += c0[v];
                c1[q] += c1[v];
                if (q != start && low[v] >= disc[q]) {
                    hb[nh] = q;
                    hc[nh++] = v;
                }
            }
        }
        if (nord != n - 1) continue; /* a is a cut vertex itself: the other tests cover it */
        for (int i = 0; i < nh; i++) {
            int b = hb[i], c = hc[i], first = disc[c], size = c0[c] + c1[c], touches = 0;
            for (int j = first; j < first + size && !touches; j++) {
                int v = order[j];
                for (int k = off[v]; k < off[v + 1]; k++) touches |= nb[k] == a;
            }
            if (touches) {
                int n0 = c0[c] + (colour[a] == 0) + (colour[b] == 0);
                int n1 = c1[c] + (colour[a] == 1) + (colour[b] == 1);
                if (segment_ok(colour[a], colour[b], n0, n1)) continue;
            }
            /* the end lies in the piece: keep only its vertices */
            int stamp = a * n + i;
            for (int j = first; j < first + size; j++) mark[order[j]] = stamp;
            for (int v = 0; v < n; v++) allowed[v] = allowed[v] && mark[v] == stamp;
            restricted = 1;
        }
    }
    if (!restricted) {
        result = Py_NewRef(Py_None);
    } else if ((result = PyList_New(0)) != NULL) {
        for (int v = 0; v < n; v++) {
            if (!allowed[v]) continue;
            if (append_long(result, v) < 0) {
                Py_CLEAR(result);
                break;
            }
        }
    }
done:
    PyMem_Free(buf);
    PyMem_Free(colour);
    PyMem_Free(off);
    PyMem_Free(nb);
    return result;
}

static PyMethodDef methods[] = {
    {"search", search, METH_VARARGS,
     "search(offsets, neighbours, start, end, closed, colour, order, prune, node_limit, time_limit)"
     " -> (status, path or None, nodes); status 0 found, 1 none exists, 2 node limit, 3 time limit."},
    {"root_ends", root_ends, METH_VARARGS,
     "root_ends(offsets, neighbours, start, colour, ends, prune) -> list of the ends whose root state "
     "(start alone, that end required) passes every pruning test: the end round at a cap of one node."},
    {"two_cut_ends", two_cut_ends, METH_VARARGS,
     "two_cut_ends(offsets, neighbours, start, colour) -> list of the vertices that may end a path "
     "from start by the 2-vertex-cut parity test, or None when it allows all."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "packsolve.native.hamilton",
                                    "Pruned Hamiltonian-path search (see packsolve.puzzles.hamilton.prune).",
                                    -1, methods};

PyMODINIT_FUNC PyInit_hamilton(void) { return PyModule_Create(&module); }
