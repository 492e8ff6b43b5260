# Shared by scripts/soak and scripts/faults (sourced, not run): building and copying the release
# binaries, starting and stopping `accord serve` workers, sampling their RSS, and checking a
# PostgreSQL store's tasks and logs.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() {
    echo "$(basename "$0"): $*" >&2
    exit 2
}

# build_binaries DIR [--no-build]: release accord and bench-soak, copied into DIR/bin (the shared
# target directory may be rebuilt by someone else while the run goes on).
build_binaries() {
    local dir="$1" build="${2:-}"
    if [ "$build" != "--no-build" ]; then
        (cd "$ROOT" && cargo build --release --quiet -p accord-cli -p accord-bench) || die "the release build failed"
    fi
    local target="${CARGO_TARGET_DIR:-$ROOT/target}/release"
    mkdir -p "$dir/bin"
    cp "$target/accord" "$target/bench-soak" "$dir/bin/" || die "no release binaries in $target"
    ACCORD="$dir/bin/accord"
    SOAK="$dir/bin/bench-soak"
}

# start_worker NAME LOGDIR ARG...: `accord serve --port 0 ARG...` in the background, from LOGDIR
# (so workers started there share its push key); sets WORKER_PID and WORKER_URL.
WORKER_PIDS=()
start_worker() {
    local name="$1" dir="$2"
    shift 2
    (cd "$dir" && ACCORD_LOG="${ACCORD_LOG:-warn}" exec "$ACCORD" serve --port 0 --worker-id "$name" "$@") \
        >"$dir/$name.out" 2>"$dir/$name.log" &
    WORKER_PID=$!
    WORKER_PIDS+=("$WORKER_PID")
    WORKER_URL=""
    for _ in $(seq 1 200); do
        WORKER_URL=$(sed -n 's|^Accord .* agent listening on \(http://[^ ]*\)|\1|p' "$dir/$name.out" | head -n 1)
        [ -n "$WORKER_URL" ] && break
        kill -0 "$WORKER_PID" 2>/dev/null || break
        sleep 0.1
    done
    WORKER_URL="${WORKER_URL%/}"
    [ -n "$WORKER_URL" ] || { tail -n 20 "$dir/$name.log" >&2; die "worker $name did not start"; }
}

stop_workers() {
    local pid
    for pid in ${WORKER_PIDS[@]+"${WORKER_PIDS[@]}"}; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    WORKER_PIDS=()
}

rss_kib() {
    awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}

# sample_rss FILE SECONDS PID...: appends "elapsed_s rss_kib..." to FILE every SECONDS, until killed.
sample_rss() {
    local file="$1" every="$2" started line pid
    shift 2
    started=$(date +%s)
    while true; do
        line="$(($(date +%s) - started))"
        for pid in "$@"; do line="$line $(rss_kib "$pid")"; done
        echo "$line" >>"$file"
        sleep "$every"
    done
}

# rss_summary FILE NAME...: each column's first, last and max, and its least-squares slope in KiB
# per minute over the whole run and over its second half.
rss_summary() {
    python3 - "$@" <<'EOF'
import json, sys
path, *names = sys.argv[1:]
rows = [list(map(int, line.split())) for line in open(path) if line.strip()]
def slope(points):
    if len(points) < 2:
        return 0.0
    n = len(points); mx = sum(x for x, _ in points) / n; my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return 0.0 if den == 0 else sum((x - mx) * (y - my) for x, y in points) / den * 60
out = {}
for index, name in enumerate(names, start=1):
    points = [(row[0], row[index]) for row in rows if len(row) > index and row[index] > 0]
    half = points[len(points) // 2:]
    out[name] = {"samples_kib": [y for _, y in points], "first_kib": points[0][1] if points else 0,
                 "last_kib": points[-1][1] if points else 0, "max_kib": max((y for _, y in points), default=0),
                 "slope_kib_per_min": round(slope(points), 1), "second_half_slope_kib_per_min": round(slope(half), 1)}
print(json.dumps(out))
EOF
}

# pg_check URL: one JSON object about every task of the store: counts by state, the terminal
# tasks whose log does not hold exactly one terminal entry, and the unfinished tasks.
pg_check() {
    local url="$1"
    psql "$url" -XAtq -v ON_ERROR_STOP=1 <<'EOF'
WITH terminal AS (
    SELECT t.id, t.state, t.task->>'skill' AS skill,
           count(e.sequence) FILTER (WHERE e.kind->>'type' IN ('result', 'error')
               OR (e.kind->>'type' = 'status' AND e.kind->>'state' IN ('completed', 'failed', 'canceled', 'rejected')))
               AS terminal_entries,
           count(e.sequence) FILTER (WHERE e.kind->>'type' = 'result') AS results
    FROM accord_tasks t LEFT JOIN accord_task_events e ON e.task_id = t.id
    GROUP BY t.id, t.state, t.task->>'skill'
)
SELECT json_build_object(
    'tasks', (SELECT count(*) FROM terminal),
    'by_state', (SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) AS n FROM terminal GROUP BY state) s),
    'terminal_not_exactly_once', (SELECT count(*) FROM terminal
        WHERE state IN ('completed', 'failed', 'canceled', 'rejected') AND terminal_entries <> 1),
    'more_than_one_result', (SELECT count(*) FROM terminal WHERE results > 1),
    'unfinished', (SELECT coalesce(json_agg(json_build_object('id', id, 'state', state, 'skill', skill)), '[]')
        FROM (SELECT * FROM terminal WHERE state NOT IN ('completed', 'failed', 'canceled', 'rejected') LIMIT 20) u),
    'unfinished_count', (SELECT count(*) FROM terminal WHERE state NOT IN ('completed', 'failed', 'canceled', 'rejected')),
    'unfinished_not_waiting', (SELECT count(*) FROM terminal
        WHERE state NOT IN ('completed', 'failed', 'canceled', 'rejected', 'input_required'))
);
EOF
}

# pg_wait_settled URL SECONDS: waits until no task is running (submitted or working) any more.
pg_wait_settled() {
    local url="$1" seconds="$2" left
    for _ in $(seq 1 "$seconds"); do
        left=$(psql "$url" -XAtqc "SELECT count(*) FROM accord_tasks WHERE state IN ('submitted', 'working')")
        [ "$left" = 0 ] && return 0
        sleep 1
    done
    return 1
}

# log_problems FILE...: lines of the workers' logs that report a panic or an error.
log_problems() {
    grep -h -i -E 'panic|ERROR' "$@" 2>/dev/null | head -n 20 || true
}
