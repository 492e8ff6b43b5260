"""Tables, results.json, results.md and chart.png from a scripts/bench run.

Usage: bench-report.py OUT_DIR META_JSON

Reads OUT_DIR/runs.jsonl (one line per bench-load, wrk or store-bench run, as scripts/bench
records them) and prints a table per scenario: for each server and each load generator (bench-load
and wrk), the median of the rounds with their spread (lowest–highest rate), the median p50, p99
and server CPU time per operation, the errors over all rounds, and the ratio of the medians to
the official Rust SDK server (sdk-rust). Servers that front a remote agent (accord-front-*, whose
reports carry the remote's CPU) get a table of the hop besides: the front's and the remote's CPU
per operation, beside Accord's own in-process figure (accord-memory) and the SDK alone. The TLS scenarios (a2a-send-tls, tls-handshakes) get a
table each, per server and generator, with the ratios HTTPS / clear text and Accord / nginx. The
chart needs matplotlib; without it the report says so and writes the rest.
"""

import json
import os
import statistics
import sys

LOAD_SCENARIOS = ["a2a-send", "a2a-stream", "lucid-invoke", "lucid-task", "list", "a2a-deltas"]
DASH = "—"


def ms(us):
    return f"{us / 1000:.2f} ms"


def number(value):
    return f"{value:,.0f}"


def busy(report, key):
    """The fraction of the window a process was on a CPU, or None."""
    seconds = report.get(key)
    return None if seconds is None or not report.get("duration_s") else seconds / report["duration_s"]


def medians(reports):
    """The median of each figure over the rounds, the spread of the rate, the errors summed."""
    def median(key):
        values = [report[key] for report in reports if report.get(key) is not None]
        return statistics.median(values) if values else None

    rates = [report["rate"] for report in reports]
    busy_values = [busy(report, "server_cpu_s") for report in reports]
    busy_values = [value for value in busy_values if value is not None]
    # A server in front of a remote agent (accord-front-*): the remote's CPU too.
    peer = {"peer_cpu_us_per_op": median("peer_cpu_us_per_op")} if any(
        report.get("peer_cpu_us_per_op") is not None for report in reports) else {}
    return {**peer, 
        "rate": statistics.median(rates),
        "rate_min": min(rates),
        "rate_max": max(rates),
        "unit": reports[0]["unit"],
        "events_per_s": median("events_per_s") or 0.0,
        "p50_us": median("p50_us"),
        "p99_us": median("p99_us"),
        "server_cpu_us_per_op": median("server_cpu_us_per_op"),
        "server_cpu_us_per_delta": median("server_cpu_us_per_delta"),
        "server_cpu_us_per_delta_min": min((r["server_cpu_us_per_delta"] for r in reports if r.get("server_cpu_us_per_delta") is not None), default=None),
        "server_cpu_us_per_delta_max": max((r["server_cpu_us_per_delta"] for r in reports if r.get("server_cpu_us_per_delta") is not None), default=None),
        "bytes_per_delta": median("bytes_per_delta"),
        "events_per_op": median("events_per_op"),
        "server_busy": statistics.median(busy_values) if busy_values else None,
        "errors": sum(report["errors"] for report in reports),
        "rounds": rates,
    }


def cpu_spread(reports):
    """`median (lowest–highest)` of the server CPU per operation over the rounds, in µs."""
    values = [report["server_cpu_us_per_op"] for report in reports if report.get("server_cpu_us_per_op") is not None]
    if not values:
        return None, DASH
    median = statistics.median(values)
    return median, f"{median:,.1f} µs ({min(values):,.1f}–{max(values):,.1f})"


# The TLS scenarios: (title, [(generator, kind)], [(server, label)], (numerator, denominator, ratio name), note).
TLS_SCENARIOS = [
    ("a2a-send-tls", [("bench-load", "tls-load"), ("wrk", "tls-wrk")],
     [("accord-memory-tls", "Accord, HTTPS"), ("accord-memory", "Accord, clear text")],
     ("accord-memory-tls", "accord-memory", "HTTPS / clear text"),
     "A2A JSON-RPC SendMessage over keep-alive connections, accord serve --store memory, over HTTPS "
     "(TLS 1.3, ECDSA P-256, X25519) and over clear text."),
    ("tls-handshakes", [("bench-load", "hs-load"), ("wrk", "hs-wrk")],
     [("accord-memory-tls", "Accord"), ("nginx", "nginx")],
     ("accord-memory-tls", "nginx", "Accord / nginx"),
     "A new connection for every GET /health (TLS 1.3, ECDSA P-256, X25519): bench-load never resumes a "
     "session (full handshakes); wrk resumes the one the server gave it whenever the server allows "
     "(resumed handshakes). Rate = handshakes/s on the one server core."),
]


def tls_tables(entries):
    """The TLS scenarios' rows, and their Markdown and text tables."""
    found, markdown, printed = {}, [], []
    headers = ["server", "generator", "rate (lowest–highest)", "p50", "p99", "server CPU/op (lowest–highest)",
               "per core (1 s / CPU/op)", "server busy", "errors"]
    for title, generators, servers, (top, bottom, ratio_name), note in TLS_SCENARIOS:
        rows, table, ratios = [], [], []
        for generator, kind in generators:
            by_server = {}
            for server, label in servers:
                reports = [entry["report"] for entry in entries
                           if entry["kind"] == kind and entry["server"] == server and entry.get("report")]
                if not reports:
                    continue
                row = {"server": server, "generator": generator, **medians(reports)}
                row["server_cpu_us_per_op"], cpu = cpu_spread(reports)
                by_server[server] = row
                rows.append(row)
                per_core = row["server_cpu_us_per_op"]
                per_core = DASH if not per_core else number(1e6 / per_core) + "/s"
                table.append([label, generator, f"{spread(row)} {row['unit']}", ms(row["p50_us"]), ms(row["p99_us"]),
                              cpu, per_core, DASH if row["server_busy"] is None else f"{row['server_busy']:.0%}",
                              row["errors"]])
            if top in by_server and bottom in by_server:
                a, b = by_server[top], by_server[bottom]
                rate = a["rate"] / b["rate"] if b["rate"] else None
                cpu = (a["server_cpu_us_per_op"] / b["server_cpu_us_per_op"]
                       if a.get("server_cpu_us_per_op") and b.get("server_cpu_us_per_op") else None)
                ratios.append({"generator": generator, "rate": rate, "server_cpu_per_op": cpu})
        if not rows:
            continue
        found[title] = {"rows": rows, "ratios": ratios, "ratio": ratio_name}
        lines = [f"- {ratio_name}, {r['generator']}: rate {DASH if r['rate'] is None else format(r['rate'], '.2f') + '×'}, "
                 f"server CPU per operation {DASH if r['server_cpu_per_op'] is None else format(r['server_cpu_per_op'], '.2f') + '×'}"
                 for r in ratios]
        markdown.append(f"## {title}\n\n{note}\n\n" + markdown_table(headers, table) + "\n\n" + "\n".join(lines) + "\n")
        printed.append(f"{title}\n" + text_table(headers, table) + ("\n" + "\n".join(lines) if lines else ""))
    return found, markdown, printed


# The hop table's references: Accord's own in-process SendMessage (and each front's store's own
# SendMessage), and the SDK echo agent alone.
HOP_OWN = "accord-memory"
HOP_SAME_STORE = {"accord-front-memory": "accord-memory", "accord-front-sqlite": "accord-sqlite"}
HOP_ALONE = ["sdk-rust-nodelay", "sdk-rust"]


def cpu_range(reports, key):
    """`median (lowest–highest)` of a CPU figure over the rounds, in µs, and the median."""
    values = [report[key] for report in reports if report.get(key) is not None]
    if not values:
        return None, DASH
    median = statistics.median(values)
    return median, f"{median:,.1f} µs ({min(values):,.1f}–{max(values):,.1f})"


def hop_tables(entries, servers):
    """The hop: per scenario and generator, each accord-front-* server's CPU per operation (the
    front's and the remote's), beside accord-memory's own and the SDK echo agent's alone, and the
    p50 the front adds to the SDK alone. None when no run had a remote."""
    if not any((entry.get("report") or {}).get("peer_cpu_us_per_op") is not None for entry in entries):
        return {}, [], []
    fronts = [server for server in servers if server.startswith("accord-front-")]
    alone = [server for server in HOP_ALONE if server in servers]
    owns = [HOP_OWN] + [HOP_SAME_STORE[front] for front in fronts if HOP_SAME_STORE.get(front, HOP_OWN) != HOP_OWN]
    shown = fronts + [server for server in dict.fromkeys(owns + alone) if server in servers]
    found, markdown, printed = {}, [], []
    headers = (["server", "generator", "rate (lowest–highest)", "p50", "front / server CPU/op (lowest–highest)",
                "remote CPU/op (lowest–highest)", "front + remote", f"front CPU ÷ {HOP_OWN}'s",
                "front CPU ÷ its store's own"]
               + [f"p50 − {server}'s" for server in alone] + ["errors"])
    for scenario in LOAD_SCENARIOS:
        rows, table = [], []
        for generator, kind in (("bench-load", "load"), ("wrk", "wrk")):
            by_server = {}
            for server in shown:
                reports = [entry["report"] for entry in entries if entry["kind"] == kind and entry["scenario"] == scenario
                           and entry["server"] == server and entry.get("report")]
                if reports:
                    by_server[server] = reports
            if not any(server in by_server for server in fronts):
                continue
            own_cpu = cpu_range(by_server.get(HOP_OWN, []), "server_cpu_us_per_op")[0]
            for server in shown:
                if server not in by_server:
                    continue
                reports = by_server[server]
                row = {"server": server, "generator": generator, **medians(reports)}
                row["server_cpu_us_per_op"], cpu = cpu_range(reports, "server_cpu_us_per_op")
                row["peer_cpu_us_per_op"], peer = cpu_range(reports, "peer_cpu_us_per_op")
                total = (row["server_cpu_us_per_op"] + row["peer_cpu_us_per_op"]
                         if row["server_cpu_us_per_op"] is not None and row["peer_cpu_us_per_op"] is not None else None)
                if server in fronts and own_cpu and row["server_cpu_us_per_op"] is not None:
                    row["front_cpu_to_own"] = row["server_cpu_us_per_op"] / own_cpu
                same = cpu_range(by_server.get(HOP_SAME_STORE.get(server), []), "server_cpu_us_per_op")[0]
                if server in fronts and same and row["server_cpu_us_per_op"] is not None:
                    row["front_cpu_to_same_store"] = row["server_cpu_us_per_op"] / same
                added = []
                for reference in alone:
                    base = by_server.get(reference)
                    base_p50 = statistics.median([report["p50_us"] for report in base]) if base else None
                    delta = row["p50_us"] - base_p50 if server in fronts and base_p50 is not None else None
                    row["p50_added_to_" + reference.replace("-", "_") + "_us"] = delta
                    added.append(DASH if delta is None else f"{delta / 1000:+.2f} ms")
                rows.append(row)
                ratio, same_ratio = row.get("front_cpu_to_own"), row.get("front_cpu_to_same_store")
                table.append([server, generator, f"{spread(row)} {row['unit']}", ms(row["p50_us"]), cpu, peer,
                              DASH if total is None else f"{total:,.1f} µs",
                              DASH if ratio is None else f"{ratio:.2f}×",
                              DASH if same_ratio is None else f"{same_ratio:.2f}×"] + added + [row["errors"]])
        if not rows:
            continue
        found[scenario] = rows
        note = (f"The front (accord serve with an [[a2a]] entry fronting sdk-echo --nodelay) on the server core, the "
                f"remote sdk-echo on the load generator's core; {HOP_OWN} is Accord's own in-process run of the demo's "
                f"echo skill (accord-sqlite the same on SQLite), {', '.join(alone) or 'the SDK echo agent'} the SDK echo agent alone on the server core. "
                "CPU per operation: each process's utime+stime over the measured window divided by the operations.")
        markdown.append(f"## the hop: {scenario}\n\n{note}\n\n" + markdown_table(headers, table) + "\n")
        printed.append(f"the hop: {scenario}\n" + text_table(headers, table))
    return found, markdown, printed


def spread(row):
    """`median (lowest–highest)` of a row's rate."""
    return f"{number(row['rate'])} ({number(row['rate_min'])}–{number(row['rate_max'])})"


def markdown_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(headers, rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    line = lambda cells: "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths)).rstrip()
    return "\n".join([line(headers), line(["-" * width for width in widths])] + [line(row) for row in rows])


def main():
    out, meta = sys.argv[1], json.loads(sys.argv[2])
    entries = []
    with open(os.path.join(out, "runs.jsonl")) as runs:
        for line in runs:
            if line.strip():
                entries.append(json.loads(line))

    servers = meta["servers"]
    baseline = meta["baseline"]
    died = [entry for entry in entries if entry.get("server_died")]
    entries = [entry for entry in entries if not entry.get("server_died")]
    loads = [entry for entry in entries if entry["kind"] == "load"]
    wrks = [entry for entry in entries if entry["kind"] == "wrk"]
    scenarios = [scenario for scenario in LOAD_SCENARIOS if any(entry["scenario"] == scenario for entry in loads)]

    summary = {}
    for scenario in scenarios:
        rows = []
        for server in servers:
            runs = [entry for entry in loads if entry["scenario"] == scenario and entry["server"] == server]
            reports = [entry["report"] for entry in runs if entry.get("report")]
            if not runs or all(entry.get("skipped") for entry in runs):
                rows.append({"server": server, "supported": False})
                continue
            if not reports:
                rows.append({"server": server, "supported": True, "failed": True,
                             "exit": [entry.get("exit") for entry in runs]})
                continue
            row = {"server": server, "supported": True, **medians(reports)}
            wrk = [entry["report"] for entry in wrks if entry["scenario"] == scenario and entry["server"] == server
                   and entry.get("report")]
            if wrk:
                row["wrk"] = medians(wrk)
            rows.append(row)
        base = next((row for row in rows if row["server"] == baseline and row.get("rate")), None)
        for row in rows:
            if base and base["rate"] and row.get("rate") is not None:
                row["ratio_to_" + baseline.replace("-", "_")] = row["rate"] / base["rate"]
            if base and base.get("wrk") and base["wrk"]["rate"] and row.get("wrk"):
                row["wrk"]["ratio_to_" + baseline.replace("-", "_")] = row["wrk"]["rate"] / base["wrk"]["rate"]
        summary[scenario] = rows

    creates = [entry["report"] for entry in entries if entry["kind"] == "creates"]
    scale = {}
    for entry in entries:
        if entry["kind"] not in ("scale", "scale-wrk"):
            continue
        key = (entry["store"], entry["tasks"])
        point = scale.setdefault(key, {"store": entry["store"], "tasks": entry["tasks"]})
        if entry.get("skipped"):
            point["skipped"] = entry["skipped"]
            continue
        report = entry.get("report") or {}
        # bench-load's figures, and wrk's under keys that start with `wrk_`.
        prefix = "wrk_" if entry["kind"] == "scale-wrk" else ""
        if entry["scenario"] == "list":
            point.update({prefix + "list_p50_us": report.get("p50_us"), prefix + "list_p99_us": report.get("p99_us"),
                          prefix + "list_rate": report.get("rate"), prefix + "list_errors": report.get("errors")})
        else:
            point.update({prefix + "send_rate": report.get("rate"), prefix + "send_p99_us": report.get("p99_us"),
                          prefix + "send_cpu_us_per_request": report.get("server_cpu_us_per_op"),
                          prefix + "send_errors": report.get("errors")})
    memory = [entry for entry in entries if entry["kind"] == "memory"]
    tls, tls_markdown, tls_printed = tls_tables(entries)
    hop, hop_markdown, hop_printed = hop_tables(entries, servers)

    results = {"meta": meta, "summary": summary, "creates": creates, "scale": list(scale.values()),
               "memory": memory, "tls": tls, "server_deaths": died, "runs": entries + died}
    if hop:
        results["hop"] = hop
    with open(os.path.join(out, "results.json"), "w") as file:
        json.dump(results, file, indent=2)

    picked = (f"Each server's figure: the median of {meta['rounds']} rounds (the rate's lowest–highest in brackets; "
              "p50, p99 and CPU the medians of theirs), for each load generator (bench-load, then wrk), "
              f"{meta['connections']} connections, {meta['duration_s']:g} s measured after {meta['warmup_s']:g} s warm-up; "
              f"server on core {meta['server_core']}, load generator on core {meta['load_core']}"
              f"{'' if not meta.get('nice') else ', both at nice ' + str(meta['nice'])}; "
              f"load average {meta.get('load_average_at_start', '?')} at the start; commit {meta['commit']}. "
              "Server CPU/op is the server process's utime+stime over the window divided by the requests; "
              "server busy is that CPU time over the window's length (1 core = 100%)")
    markdown = [f"# scripts/bench results\n\n{picked}.\n"]
    printed = []
    headers = ["server", "bench-load rate", "p50", "p99", "server CPU/op", "server busy", f"vs {baseline}",
               "wrk rate", "wrk p99", "wrk server CPU/op", f"wrk vs {baseline}", "errors"]
    for scenario, rows in summary.items():
        table = []
        for row in rows:
            if not row["supported"]:
                table.append([row["server"]] + [DASH] * (len(headers) - 1))
            elif row.get("failed"):
                table.append([row["server"], "failed"] + [DASH] * (len(headers) - 2))
            else:
                rate = f"{spread(row)} {row['unit']}"
                if scenario == "a2a-stream":
                    rate += f" ({number(row['events_per_s'])} events/s)"
                if scenario == "a2a-deltas" and row.get("server_cpu_us_per_delta") is not None:
                    rate += (f" ({row['server_cpu_us_per_delta']:.2f} µs CPU/delta "
                             f"({row['server_cpu_us_per_delta_min']:.2f}–{row['server_cpu_us_per_delta_max']:.2f}), "
                             f"{row['bytes_per_delta']:.1f} bytes/delta, {row['events_per_op']:.0f} events a stream)")
                cpu = row["server_cpu_us_per_op"]
                ratio = row.get("ratio_to_" + baseline.replace("-", "_"))
                server_busy = row["server_busy"]
                wrk = row.get("wrk")
                wrk_cpu = wrk and wrk.get("server_cpu_us_per_op")
                wrk_ratio = wrk and wrk.get("ratio_to_" + baseline.replace("-", "_"))
                table.append([row["server"], rate, ms(row["p50_us"]), ms(row["p99_us"]),
                              DASH if cpu is None else f"{cpu:,.0f} µs",
                              DASH if server_busy is None else f"{server_busy:.0%}",
                              DASH if ratio is None else f"{ratio:.2f}×",
                              DASH if not wrk else spread(wrk), DASH if not wrk else ms(wrk["p99_us"]),
                              DASH if not wrk_cpu else f"{wrk_cpu:,.0f} µs",
                              DASH if not wrk_ratio else f"{wrk_ratio:.2f}×",
                              row["errors"] + (wrk["errors"] if wrk else 0)])
        markdown.append(f"## {scenario}\n\n" + markdown_table(headers, table) + "\n")
        printed.append(f"{scenario}\n" + text_table(headers, table))

    if creates:
        headers_c = ["store", "creates/s", "in flight", "creates"]
        table = [[report["store"], number(report["rate"]), report["concurrency"], report["creates"]] for report in creates]
        markdown.append("## creates (durable TaskStore::create, store-bench)\n\n" + markdown_table(headers_c, table) + "\n")
        printed.append("creates\n" + text_table(headers_c, table))

    if scale:
        headers_s = ["store", "tasks", "list p50", "list p99", "list req/s", "wrk list p99", "wrk list req/s",
                     "a2a-send req/s", "server CPU/request", "wrk a2a-send req/s", "wrk server CPU/request", "errors"]
        table = []
        for point in scale.values():
            if point.get("skipped"):
                table.append([point["store"], number(point["tasks"])] + [DASH] * 9 + [f"skipped: {point['skipped']}"])
                continue
            get = lambda key, show: DASH if point.get(key) is None else show(point[key])
            errors = sum(point.get(prefix + kind + "_errors") or 0 for prefix in ("", "wrk_") for kind in ("list", "send"))
            cpu = lambda cpu: f"{cpu:,.0f} µs"
            table.append([point["store"], number(point["tasks"]), get("list_p50_us", ms), get("list_p99_us", ms),
                          get("list_rate", number), get("wrk_list_p99_us", ms), get("wrk_list_rate", number),
                          get("send_rate", number), get("send_cpu_us_per_request", cpu), get("wrk_send_rate", number),
                          get("wrk_send_cpu_us_per_request", cpu), errors])
        markdown.append("## scale (store preloaded with completed tasks)\n\n" + markdown_table(headers_s, table) + "\n")
        printed.append("scale\n" + text_table(headers_s, table))

    if memory:
        headers_m = ["what", "count", "RSS before", "RSS after", "per item", "idle CPU"]
        table = []
        for entry in memory:
            what = entry["what"] + (f" ({entry['server']})" if entry.get("server") else "")
            if entry.get("skipped"):
                table.append([what, DASH, DASH, DASH, f"skipped: {entry['skipped']}", DASH])
                continue
            count = entry.get("tasks", entry.get("subscribers"))
            per = entry.get("bytes_per_task", entry.get("bytes_per_subscriber"))
            table.append([what, number(count), f"{entry['rss_before_kib'] / 1024:,.1f} MiB",
                          f"{entry['rss_after_kib'] / 1024:,.1f} MiB", f"{per / 1024:,.1f} KiB",
                          f"{entry['idle_cpu_pct']}% of a core" if "idle_cpu_pct" in entry else DASH])
        markdown.append("## memory (resident set; Accord on its in-process store)\n\n" + markdown_table(headers_m, table) + "\n")
        printed.append("memory\n" + text_table(headers_m, table))

    markdown += hop_markdown
    printed += hop_printed
    markdown += tls_markdown
    printed += tls_printed

    if died:
        lines = [f"- {entry['server']} exited during {entry['scenario']} (status {entry['server_exit']})" for entry in died]
        markdown.append("## failures\n\n" + "\n".join(lines) + "\n")
        printed.append("failures\n" + "\n".join(lines))

    chart = chart_png(out, summary, servers)
    if chart:
        markdown.append("![requests per second per server](chart.png)\n")
    with open(os.path.join(out, "results.md"), "w") as file:
        file.write("\n".join(markdown))
    print(f"\n{picked}\n")
    print("\n\n".join(printed))


def chart_png(out, summary, servers):
    """A bar chart of the rate per server, one panel per scenario; False without matplotlib."""
    if not summary:
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench-report: matplotlib is not installed: no chart.png", file=sys.stderr)
        return False
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    figure, axes = plt.subplots(1, len(summary), figsize=(3.2 * len(summary) + 1, 4.2), squeeze=False)
    for axis, (scenario, rows) in zip(axes[0], summary.items()):
        names, rates, shades = [], [], []
        for index, server in enumerate(servers):
            row = next(row for row in rows if row["server"] == server)
            names.append(server)
            rates.append(row.get("rate") or 0)
            shades.append(colors[index % len(colors)])
        bars = axis.bar(range(len(names)), rates, color=shades)
        for bar, row in zip(bars, (next(row for row in rows if row["server"] == server) for server in servers)):
            label = DASH if not row["supported"] else ("failed" if row.get("failed") else f"{row['rate']:,.0f}")
            axis.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                          fontsize=7)
        unit = next((row["unit"] for row in rows if row.get("unit")), "req/s")
        axis.set_title(scenario)
        axis.set_ylabel(unit)
        axis.set_xticks(range(len(names)))
        axis.set_xticklabels(names, rotation=40, ha="right", fontsize=8)
        axis.margins(y=0.12)
    figure.suptitle("scripts/bench: checked answers per second (bench-load, median of the rounds)")
    figure.tight_layout()
    figure.savefig(os.path.join(out, "chart.png"), dpi=110)
    plt.close(figure)
    return True


if __name__ == "__main__":
    main()
