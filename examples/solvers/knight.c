/* Knight's tour by Warnsdorff's rule with backtracking: an external solver for packsolve.
 *
 * The same algorithm as packsolve's built-in heuristic `warnsdorff` (knights_tour): moves
 * tried in the write-up's order, fewest onward exits first (ties in that order), a square
 * with no onward exit entered only as the last one, depth first with backtracking; one node
 * per square put on the path, so its node counts equal the built-in's.
 *
 * Protocol (docs/external-solvers.md): the level's JSON in the file named by the first
 * argument (or on standard input without one); one JSON object on standard output.
 *   {"status": "solved", "solution": [[row, col], ...], "nodes": N}
 *   {"status": "no_solution", "message": "...", "nodes": N}
 * Build: make (in this directory) -> bin/knight
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int MOVES[8][2] = {{1, -2}, {2, -1}, {2, 1}, {1, 2}, {-1, 2}, {-2, 1}, {-2, -1}, {-1, -2}};

static int rows, cols, n, closed_tour, start;
static int *adj;      /* adj[v * 8 + i]: the i-th neighbour of v, -1 past the last */
static char *visited;
static long long nodes;

/* Return the integer after "key": in text, or fallback if the key is absent. */
static long number_after(const char *text, const char *key, long fallback) {
    const char *p = strstr(text, key);
    if (!p) return fallback;
    p += strlen(key);
    while (*p == ' ' || *p == ':') p++;
    return strtol(p, NULL, 10);
}

static int exits(int u) {
    int count = 0;
    for (int i = 0; i < 8 && adj[u * 8 + i] >= 0; i++)
        if (!visited[adj[u * 8 + i]]) count++;
    return count;
}

/* Write v's candidates in Warnsdorff order into out; return how many. */
static int order(int v, int left, int *out) {
    int cands[8], score[8], k = 0, m = 0;
    for (int i = 0; i < 8 && adj[v * 8 + i] >= 0; i++)
        if (!visited[adj[v * 8 + i]]) cands[k++] = adj[v * 8 + i];
    for (int i = 0; i < k; i++) {
        int e = exits(cands[i]);
        if (e == 0 && !(k == 1 && left == 1)) continue; /* a dead end only as the last square */
        int j = m++;
        while (j > 0 && score[j - 1] > e) { /* stable insertion: ties keep the move order */
            score[j] = score[j - 1];
            out[j] = out[j - 1];
            j--;
        }
        score[j] = e;
        out[j] = cands[i];
    }
    return m;
}

static int adjacent(int a, int b) {
    for (int i = 0; i < 8 && adj[a * 8 + i] >= 0; i++)
        if (adj[a * 8 + i] == b) return 1;
    return 0;
}

int main(int argc, char **argv) {
    FILE *in = argc > 1 ? fopen(argv[1], "r") : stdin;
    if (!in) { perror(argv[1]); return 2; }
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, in);
    text[len] = 0;
    rows = (int)number_after(text, "\"rows\"", -1);
    cols = (int)number_after(text, "\"cols\"", -1);
    const char *s = strstr(text, "\"start\"");
    closed_tour = strstr(text, "\"closed\":true") != NULL || strstr(text, "\"closed\": true") != NULL;
    if (rows < 1 || cols < 1 || !s) { fprintf(stderr, "level needs rows, cols and start\n"); return 2; }
    s = strchr(s, '[');
    int r0 = (int)strtol(s + 1, (char **)&s, 10);
    s = strchr(s, ',');
    int c0 = (int)strtol(s + 1, NULL, 10);
    n = rows * cols;
    start = r0 * cols + c0;
    adj = malloc(sizeof(int) * 8 * n);
    visited = calloc(n, 1);
    int *path = malloc(sizeof(int) * n), *cand = malloc(sizeof(int) * 8 * n), *count = malloc(sizeof(int) * n),
        *next = malloc(sizeof(int) * n);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            int k = 0;
            for (int i = 0; i < 8; i++) {
                int rr = r + MOVES[i][0], cc = c + MOVES[i][1];
                if (rr >= 0 && rr < rows && cc >= 0 && cc < cols) adj[(r * cols + c) * 8 + k++] = rr * cols + cc;
            }
            for (; k < 8; k++) adj[(r * cols + c) * 8 + k] = -1;
        }
    int depth = 1, found = 0;
    path[0] = start;
    visited[start] = 1;
    nodes = 1;
    if (n == 1) found = !closed_tour;
    else {
        count[0] = order(start, n - 1, cand);
        next[0] = 0;
        while (depth > 0) {
            int top = depth - 1;
            if (next[top] == count[top]) { /* every candidate tried: step back */
                depth--;
                if (depth > 0) visited[path[depth]] = 0;
                continue;
            }
            int u = cand[top * 8 + next[top]++];
            nodes++;
            visited[u] = 1;
            path[depth++] = u;
            if (depth == n) {
                if (!closed_tour || adjacent(u, start)) { found = 1; break; }
                visited[path[--depth]] = 0;
                continue;
            }
            count[depth - 1] = order(u, n - depth, cand + (depth - 1) * 8);
            next[depth - 1] = 0;
        }
    }
    if (!found) {
        printf("{\"status\": \"no_solution\", \"message\": \"exhaustive search found no %s of %dx%d\", \"nodes\": %lld}\n",
               closed_tour ? "closed tour" : "tour", rows, cols, nodes);
        return 0;
    }
    printf("{\"status\": \"solved\", \"nodes\": %lld, \"solution\": [", nodes);
    for (int i = 0; i < n; i++) printf("%s[%d, %d]", i ? ", " : "", path[i] / cols, path[i] % cols);
    printf("]}\n");
    return 0;
}
