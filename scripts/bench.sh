#!/usr/bin/env bash
# `make bench`: what rivumi-mcp adds on top of a server's own time.
#
# Runs each case N times (default 30) and prints the median wall time:
#   server alone   the fixture server answering initialize + tools/list
#                  from a pipe, then exiting on EOF
#   list           `rivumi-mcp list` against the same server (spawn,
#                  initialize, every tools/list page, shutdown)
# The difference is rivumi-mcp's overhead. Peak RSS comes from
# /usr/bin/time when it is installed.
#
# Then CALLS (default 1000) calls of the fixture's `echo` (a read tool,
# so no approval is involved):
#   batch          all CALLS as JSON Lines through one `rivumi-mcp batch`
#                  (one server process); the time per call is total/CALLS
#   call one-shot  ONESHOT_N (default CALLS) separate `rivumi-mcp call`
#                  invocations, each starting its own server; the median
# Set ONESHOT_N lower on a slow machine to keep `make bench` short.
#
# Then SERVE_CALLS (default 500) echo calls from one host session, one at
# a time, each timed from request to response:
#   direct         the host speaks to the fixture server itself
#   through serve  the host speaks to `rivumi-mcp serve`, whose upstream
#                  is the same fixture, warm (started by a first call)
# The difference of the medians is what serve adds to a call (goal: at
# most 2 ms).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N="${N:-30}"
CALLS="${CALLS:-1000}"
ONESHOT_N="${ONESHOT_N:-$CALLS}"
BIN="$PWD/target/release"
export PATH="$BIN:$PATH" RIVUMI_MCP_ALLOWLIST=demo
CONFIG=fixtures/demo.mcp.json

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}'
inited='{"jsonrpc":"2.0","method":"notifications/initialized"}'
pages=""
for c in "" page-2 page-3; do
  if [ -z "$c" ]; then p='{}'; else p="{\"cursor\":\"$c\"}"; fi
  pages+="{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":$p}"$'\n'
done
input="$init"$'\n'"$inited"$'\n'"$pages"

now_ns() { date +%s%N; }

# median_ms NAME COMMAND...: runs the command N times (RUNS times when
# set), prints the median.
median_ms() {
  local name="$1"; shift
  local runs="${RUNS:-$N}"
  local times=()
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(now_ns); "$@" >/dev/null; t1=$(now_ns)
    times+=($(( (t1 - t0) / 1000 )))
  done
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-28s %8.2f ms (median of %d)\n' "$name" "$(awk "BEGIN {print $med / 1000}")" "$runs"
  echo "$med" > "/tmp/rivumi-bench-$name"
}

alone() { printf '%s' "$input" | rivumi-mcp-fixture --page-size 5; }
list() { rivumi-mcp -c "$CONFIG" list; }

echo "rivumi-mcp bench: $(rivumi-mcp --version), N=$N, $(nproc) cores"
median_ms server-alone alone
median_ms rivumi-list list
a=$(cat /tmp/rivumi-bench-server-alone); b=$(cat /tmp/rivumi-bench-rivumi-list)
printf '%-28s %8.2f ms\n' "overhead (list - alone)" "$(awk "BEGIN {print ($b - $a) / 1000}")"
if [ -x /usr/bin/time ]; then
  rss=$(/usr/bin/time -f '%M' rivumi-mcp -c "$CONFIG" list 2>&1 >/dev/null | tail -1)
  printf '%-28s %8s KiB (largest of rivumi-mcp and its server)\n' "peak RSS" "$rss"
fi

# CALLS echo calls: one batch against one-shot calls.
requests=$(mktemp)
replies=$(mktemp)
trap 'rm -f "$requests" "$replies"' EXIT
for i in $(seq "$CALLS"); do
  printf '{"id":%d,"tool":"mcp__demo__echo","arguments":{"text":"hi %d"}}\n' "$i" "$i"
done > "$requests"
t0=$(now_ns)
rivumi-mcp -c "$CONFIG" batch < "$requests" > "$replies"
t1=$(now_ns)
ok=$(grep -c '"ok":true' "$replies" || true)
if [ "$ok" -ne "$CALLS" ]; then
  echo "batch: only $ok of $CALLS requests succeeded" >&2
  exit 1
fi
batch_us=$(( (t1 - t0) / 1000 ))
printf '%-28s %8.2f ms total, %.3f ms per call\n' "batch, $CALLS calls" \
  "$(awk "BEGIN {print $batch_us / 1000}")" \
  "$(awk "BEGIN {print $batch_us / 1000 / $CALLS}")"
call() { rivumi-mcp -c "$CONFIG" call mcp__demo__echo text=hi; }
RUNS="$ONESHOT_N" median_ms call-one-shot call
c=$(cat /tmp/rivumi-bench-call-one-shot)
printf '%-28s %8.1fx\n' "one-shot / batch per call" \
  "$(awk "BEGIN {print $c * $CALLS / $batch_us}")"

# ---- The daemon: warm servers between invocations --------------------------
# DAEMON_N (default N) warm `call`s and `list`s against the running
# daemon, then LOOP (default 100) sequential `call`s from a shell loop
# against a server that takes 1 s to start (`--slow-start 1000`): warm
# through the daemon, as one `batch`, and through mcporter's keep-alive
# daemon (MCPORTER_LOOP, default LOOP; pinned in
# fixtures/interop/bench-node, installed into .interop/bench-node here and
# only here; set MCPORTER=0 to skip it). Last, the daemon's own peak RSS
# with 10 warm servers (servers not counted).
DAEMON_N="${DAEMON_N:-$N}"
LOOP="${LOOP:-100}"
MCPORTER_LOOP="${MCPORTER_LOOP:-$LOOP}"
work=$(mktemp -d)
trap 'rivumi-mcp daemon stop >/dev/null 2>&1 || true; rm -rf "$work" "$requests" "$replies"' EXIT
mkdir -m 700 "$work/run"
export XDG_RUNTIME_DIR="$work/run"
fixture="$BIN/rivumi-mcp-fixture"
{
  printf '{"mcpServers": {\n'
  printf '  "slow": {"command": "%s", "args": ["--slow-start", "1000"]}' "$fixture"
  for i in $(seq 0 9); do
    printf ',\n  "w%d": {"command": "%s", "args": ["--extra-tool", "w%d"]}' "$i" "$fixture" "$i"
  done
  printf '\n}}\n'
} > "$work/.mcp.json"
SLOW="$work/.mcp.json"

echo
echo "daemon: warm servers (rivumi-mcp daemon start)"
rivumi-mcp daemon start --idle 600 >/dev/null
warm_call() { rivumi-mcp -c "$CONFIG" call mcp__demo__echo text=hi; }
warm_list() { rivumi-mcp -c "$CONFIG" list; }
warm_call >/dev/null
RUNS="$DAEMON_N" median_ms warm-call warm_call
RUNS="$DAEMON_N" median_ms warm-list warm_list
c=$(cat /tmp/rivumi-bench-call-one-shot)
w=$(cat /tmp/rivumi-bench-warm-call)
printf '%-28s %8.2f ms saved per call\n' "one-shot - warm call" "$(awk "BEGIN {print ($c - $w) / 1000}")"

export RIVUMI_MCP_ALLOWLIST="slow,w0,w1,w2,w3,w4,w5,w6,w7,w8,w9"
loop_warm() {
  for i in $(seq "$LOOP"); do rivumi-mcp -c "$SLOW" call slow echo "text=hi $i" >/dev/null; done
}
t0=$(now_ns); loop_warm; t1=$(now_ns)
warm_loop_us=$(( (t1 - t0) / 1000 ))
for i in $(seq "$LOOP"); do
  printf '{"id":%d,"tool":"mcp__slow__echo","arguments":{"text":"hi %d"}}\n' "$i" "$i"
done > "$requests"
t0=$(now_ns); rivumi-mcp -c "$SLOW" --no-daemon batch < "$requests" > "$replies"; t1=$(now_ns)
batch_loop_us=$(( (t1 - t0) / 1000 ))
printf '%-28s %8.2f ms (the first call started the server)\n' "loop of $LOOP, warm" "$(awk "BEGIN {print $warm_loop_us / 1000}")"
printf '%-28s %8.2f ms (1 s of server start included)\n' "batch of $LOOP" "$(awk "BEGIN {print $batch_loop_us / 1000}")"
printf '%-28s %8.2fx\n' "warm loop / batch" "$(awk "BEGIN {print $warm_loop_us / $batch_loop_us}")"

BENCH_NODE=.interop/bench-node
if [ "${MCPORTER:-1}" != 0 ] && command -v npm >/dev/null; then
  stamp=$(sha256sum fixtures/interop/bench-node/package-lock.json | cut -d' ' -f1)
  if [ "$(cat "$BENCH_NODE/.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "installing mcporter (fixtures/interop/bench-node) into $BENCH_NODE"
    rm -rf "$BENCH_NODE" && mkdir -p "$BENCH_NODE"
    cp fixtures/interop/bench-node/package.json fixtures/interop/bench-node/package-lock.json "$BENCH_NODE/"
    (cd "$BENCH_NODE" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$stamp" > "$BENCH_NODE/.stamp"
  fi
  mcporter="$PWD/$BENCH_NODE/node_modules/.bin/mcporter"
  mkdir -p "$work/mcporter/config" "$work/mcporter/home"
  printf '{"mcpServers": {"slow": {"command": "%s", "args": ["--slow-start", "1000"], "lifecycle": "keep-alive"}}}\n' \
    "$fixture" > "$work/mcporter/config/mcporter.json"
  loop_mcporter() {
    (cd "$work/mcporter" && export HOME="$work/mcporter/home" XDG_CONFIG_HOME="$work/mcporter/home/.config" &&
      for i in $(seq "$MCPORTER_LOOP"); do "$mcporter" call slow.echo "text=hi $i" >/dev/null; done
      "$mcporter" daemon stop >/dev/null 2>&1 || true)
  }
  t0=$(now_ns); loop_mcporter; t1=$(now_ns)
  mcp_us=$(( (t1 - t0) / 1000 ))
  printf '%-28s %8.2f ms (%s, node %s)\n' "loop of $MCPORTER_LOOP, mcporter" "$(awk "BEGIN {print $mcp_us / 1000}")" \
    "$("$mcporter" --version 2>/dev/null | tail -1)" "$(node --version)"
  printf '%-28s %8.1fx\n' "mcporter / warm, per call" \
    "$(awk "BEGIN {print ($mcp_us / $MCPORTER_LOOP) / ($warm_loop_us / $LOOP)}")"
else
  echo "mcporter: skipped (MCPORTER=0 or no npm)"
fi

for i in $(seq 0 9); do rivumi-mcp -c "$SLOW" call -y "w$i" "w$i" >/dev/null; done
status=$(rivumi-mcp daemon status --json)
printf '%-28s %8s KiB peak, %s KiB now (%s servers warm; servers not counted)\n' "daemon RSS" \
  "$(printf '%s' "$status" | sed 's/.*"peak_rss_kib":\([0-9]*\).*/\1/')" \
  "$(printf '%s' "$status" | sed 's/.*"rss_kib":\([0-9]*\).*/\1/')" \
  "$(printf '%s' "$status" | grep -o '"fingerprint"' | wc -l)"
rivumi-mcp daemon stop >/dev/null

# The sandbox (Linux): the same `list` with the demo server confined
# (Landlock, a network namespace, no_new_privs); the difference is what
# starting a sandboxed server costs.
if [ "$(uname -s)" = Linux ]; then
  sbx=$(mktemp -d)
  printf '{"mcpServers": {"demo": {"command": "rivumi-mcp-fixture", "args": ["--page-size", "5"], "sandbox": {"network": "none"}}}}\n' > "$sbx/.mcp.json"
  boxed() { RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp -c "$sbx/.mcp.json" --no-daemon list; }
  median_ms sandboxed-list boxed
  s=$(cat /tmp/rivumi-bench-sandboxed-list)
  printf '%-28s %8.2f ms\n' "sandbox (boxed - list)" "$(awk "BEGIN {print ($s - $b) / 1000}")"
  rm -rf "$sbx"
fi

# SERVE_CALLS echo calls from one host: direct, then through serve.
RIVUMI_MCP_ALLOWLIST=demo SERVE_CALLS="${SERVE_CALLS:-500}" python3 - "$CONFIG" <<'PY'
import json, os, statistics, subprocess, sys, time

calls = int(os.environ["SERVE_CALLS"])
config = sys.argv[1]

def run(argv, tool):
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
    def ask(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                  "params": params}) + "\n")
        p.stdin.flush()
        while True:
            m = json.loads(p.stdout.readline())
            if m.get("id") == i and "method" not in m:
                return m
    ask(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "0"}})
    p.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    ask(1, "tools/call", {"name": tool, "arguments": {"text": "warm"}})
    times = []
    for i in range(calls):
        t0 = time.perf_counter_ns()
        r = ask(i + 2, "tools/call", {"name": tool, "arguments": {"text": "hi"}})
        times.append(time.perf_counter_ns() - t0)
        assert r["result"]["content"][0]["text"] == "hi", r
    p.stdin.close()
    p.wait()
    return statistics.median(times) / 1e6

direct = run(["rivumi-mcp-fixture"], "echo")
served = run(["rivumi-mcp", "-c", config, "--no-daemon", "serve"], "demo__echo")
print(f"{'call, direct':<28} {direct:8.3f} ms (median of {calls})")
print(f"{'call, through serve':<28} {served:8.3f} ms (median of {calls})")
print(f"{'overhead (serve - direct)':<28} {served - direct:8.3f} ms (goal: <= 2 ms)")
PY
