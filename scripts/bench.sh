#!/usr/bin/env bash
# `make bench`: what rivumi-mcp adds on top of a server's own time.
#
# First, side by side in one run (every case once per round, N rounds,
# default 30; medians, so that a machine shared with other work drifts
# alike for all of them), each against the fixture server:
#   cold list      `rivumi-mcp --no-daemon list` (spawn, initialize, every
#                  tools/list page, shutdown) against the server alone
#                  answering the same messages from a file, then exiting
#                  on EOF: the server's own time
#   cold call      the same for `call` of the fixture's `echo` (initialize,
#                  the tools/list pages, the call)
#   warm list      `list` through a running daemon (`daemon start`) against
#   warm call      the server's own time for the same requests on a warm
#                  server: the fixture, already running, asked them one
#                  at a time over its pipes by this script (goal for both:
#                  at most 3 ms added)
#   sandboxed list (Linux) the cold list with the server confined
#                  (Landlock, a network namespace, no_new_privs) against
#                  the cold list: what starting a sandboxed server costs
# Processes are started with posix_spawn and timed from spawn to exit.
# Then SERVE_CALLS (default 500) echo calls, one at a time, each timed from
# request to response, alternating between two host sessions:
#   direct         the host speaks to the fixture server itself
#   through serve  the host speaks to `rivumi-mcp serve`, whose upstream
#                  is the same fixture, warm (started by a first call)
# (goal: the medians differ by at most 2 ms). Peak RSS comes from
# /usr/bin/time when it is installed.
#
# Then CALLS (default 1000) calls of `echo` (a read tool, so no approval
# is involved) as JSON Lines through one `rivumi-mcp batch` (one server
# process); the time per call is total/CALLS, against the cold call.
#
# BENCH_BIN names another directory holding rivumi-mcp and
# rivumi-mcp-fixture (an older build, to compare); default target/release.
# On a machine shared with other work, BENCH_RT=PRIORITY (root) runs the
# daemon and the side-by-side cases under `chrt -f PRIORITY`, so that
# they are measured as on an idle machine; the rest runs as usual.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N="${N:-30}"
CALLS="${CALLS:-1000}"
SERVE_CALLS="${SERVE_CALLS:-500}"
BIN="${BENCH_BIN:-$PWD/target/release}"
export PATH="$BIN:$PATH" RIVUMI_MCP_ALLOWLIST=demo
CONFIG=fixtures/demo.mcp.json

now_ns() { date +%s%N; }

work=$(mktemp -d)
requests="$work/requests"
replies="$work/replies"
trap 'rivumi-mcp daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mkdir -m 700 "$work/run"
export XDG_RUNTIME_DIR="$work/run"

rt=()
if [ -n "${BENCH_RT:-}" ]; then rt=(chrt -f "$BENCH_RT"); fi
echo "rivumi-mcp bench: $(rivumi-mcp --version), N=$N, $(nproc) cores${BENCH_RT:+, real-time priority $BENCH_RT}"
"${rt[@]}" rivumi-mcp daemon start --idle 600 >/dev/null
# The warm cases must be warm: the first call starts the server in the
# daemon, the second must be served by it.
rivumi-mcp -c "$CONFIG" call mcp__demo__echo text=hi >/dev/null
if ! rivumi-mcp -c "$CONFIG" -v call mcp__demo__echo text=hi 2>&1 >/dev/null |
  grep -q 'warm from the daemon'; then
  echo "bench: the daemon did not serve the warm call" >&2
  exit 1
fi
sbx=""
if [ "$(uname -s)" = Linux ]; then
  sbx="$work/sandbox.mcp.json"
  printf '{"mcpServers": {"demo": {"command": "rivumi-mcp-fixture", "args": ["--page-size", "5"], "sandbox": {"network": "none"}}}}\n' > "$sbx"
fi

N="$N" SERVE_CALLS="$SERVE_CALLS" "${rt[@]}" python3 - "$CONFIG" "$work" "$sbx" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time

n = int(os.environ["N"])
serve_calls = int(os.environ["SERVE_CALLS"])
config, work, sbx = sys.argv[1], sys.argv[2], sys.argv[3]
rivumi = shutil.which("rivumi-mcp")
fixture = shutil.which("rivumi-mcp-fixture")

def msg(i, method, params):
    m = {"jsonrpc": "2.0", "method": method, "params": params}
    if i is not None:
        m["id"] = i
    return m

init = msg(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "bench", "version": "0"}})
inited = msg(None, "notifications/initialized", {})
pages = [("tools/list", {})] + [("tools/list", {"cursor": c}) for c in ("page-2", "page-3")]
call = ("tools/call", {"name": "echo", "arguments": {"text": "hi"}})

def script(name, reqs):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        for m in [init, inited] + [msg(i + 2, *r) for i, r in enumerate(reqs)]:
            f.write(json.dumps(m) + "\n")
    return path

list_in = script("list.in", pages)
call_in = script("call.in", pages + [call])

def spawned(argv, stdin=os.devnull):
    """Wall time of one process from posix_spawn to its exit, in ns."""
    fa = [(os.POSIX_SPAWN_OPEN, 0, stdin, os.O_RDONLY, 0),
          (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
          (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=fa)
    _, status = os.waitpid(pid, 0)
    t = time.perf_counter_ns() - t0
    if status != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({status})")
    return t

class Host:
    """One MCP session over a child's pipes, a request at a time."""
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.next = 0
        self.ask("initialize", init["params"])
        self.p.stdin.write(json.dumps(inited) + "\n")
    def ask(self, method, params):
        self.next += 1
        i = self.next
        self.p.stdin.write(json.dumps(msg(i, method, params)) + "\n")
        self.p.stdin.flush()
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == i and "method" not in m:
                if "result" not in m:
                    sys.exit(f"bench: {method}: {m}")
                return m["result"]
    def timed(self, reqs):
        t0 = time.perf_counter_ns()
        for r in reqs:
            self.ask(*r)
        return time.perf_counter_ns() - t0
    def close(self):
        self.p.stdin.close()
        self.p.wait()

warm_server = Host([fixture, "--page-size", "5"])
cold = [rivumi, "-c", config, "--no-daemon"]
warm = [rivumi, "-c", config]
echo = ["call", "mcp__demo__echo", "text=hi"]
# In this order each round: every direct exchange follows a warm
# invocation, so it finds the machine as the warm case it is compared to.
cases = {
    "alone-list": lambda: spawned([fixture, "--page-size", "5"], list_in),
    "cold-list": lambda: spawned(cold + ["list"]),
    "warm-list": lambda: spawned(warm + ["list"]),
    "direct-list": lambda: warm_server.timed(pages),
    "alone-call": lambda: spawned([fixture, "--page-size", "5"], call_in),
    "cold-call": lambda: spawned(cold + echo),
    "warm-call": lambda: spawned(warm + echo),
    "direct-call": lambda: warm_server.timed(pages + [call]),
}
if sbx:
    cases["boxed-list"] = lambda: spawned([rivumi, "-c", sbx, "--no-daemon", "list"])
times = {k: [] for k in cases}
for f in cases.values():
    f()
for _ in range(n):
    for k, f in cases.items():
        times[k].append(f())
warm_server.close()
med = {k: statistics.median(v) / 1e6 for k, v in times.items()}

# Calls through serve and direct, alternating, each timed on its own.
direct = Host([fixture])
served = Host([rivumi, "-c", config, "--no-daemon", "serve"])
for h, tool in ((direct, "echo"), (served, "demo__echo")):
    h.ask("tools/call", {"name": tool, "arguments": {"text": "warm"}})
st = {"direct": [], "serve": []}
for _ in range(serve_calls):
    for key, h, tool in (("direct", direct, "echo"), ("serve", served, "demo__echo")):
        t0 = time.perf_counter_ns()
        r = h.ask("tools/call", {"name": tool, "arguments": {"text": "hi"}})
        st[key].append(time.perf_counter_ns() - t0)
        assert r["content"][0]["text"] == "hi", r
direct.close()
served.close()
sd, ss = (statistics.median(st[k]) / 1e6 for k in ("direct", "serve"))

print(f"{'':<22} {'rivumi-mcp':>10} {'server own':>10} {'added':>8}   (medians, ms)")
def row(name, ours, own, goal=""):
    print(f"{name:<22} {ours:10.2f} {own:10.2f} {ours - own:8.2f}   {goal}")
row("cold list", med["cold-list"], med["alone-list"])
row("cold call", med["cold-call"], med["alone-call"])
row("warm list (daemon)", med["warm-list"], med["direct-list"], "goal: <= 3 ms")
row("warm call (daemon)", med["warm-call"], med["direct-call"], "goal: <= 3 ms")
print(f"{'call through serve':<22} {ss:10.3f} {sd:10.3f} {ss - sd:8.3f}   goal: <= 2 ms"
      f" (per call, {serve_calls} calls)")
if sbx:
    print(f"{'sandboxed list':<22} {med['boxed-list']:10.2f} {med['cold-list']:10.2f}"
          f" {med['boxed-list'] - med['cold-list']:8.2f}   (against the cold list)")
print(f"({n} rounds; 'server own' is the fixture alone reading the same messages from a file"
      " (cold), or a warm fixture asked directly (warm, serve))")
with open(os.path.join(work, "cold-call-us"), "w") as f:
    f.write(str(int(med["cold-call"] * 1000)))
PY

if [ -x /usr/bin/time ]; then
  rss=$(/usr/bin/time -f '%M' rivumi-mcp -c "$CONFIG" --no-daemon list 2>&1 >/dev/null | tail -1)
  printf '%-28s %8s KiB (largest of rivumi-mcp and its server)\n' "peak RSS, cold list" "$rss"
fi

# CALLS echo calls through one batch, against the cold one-shot call.
for i in $(seq "$CALLS"); do
  printf '{"id":%d,"tool":"mcp__demo__echo","arguments":{"text":"hi %d"}}\n' "$i" "$i"
done > "$requests"
t0=$(now_ns)
rivumi-mcp -c "$CONFIG" --no-daemon batch < "$requests" > "$replies"
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
c=$(cat "$work/cold-call-us")
printf '%-28s %8.1fx\n' "cold call / batch per call" \
  "$(awk "BEGIN {print $c * $CALLS / $batch_us}")"

# ---- The daemon: warm servers between invocations --------------------------
# LOOP (default 100) sequential `call`s from a shell loop against a server
# that takes 1 s to start (`--slow-start 1000`): warm through the daemon,
# as one `batch`, and through mcporter's keep-alive daemon (MCPORTER_LOOP,
# default LOOP; pinned in fixtures/interop/bench-node, installed into
# .interop/bench-node here and only here; set MCPORTER=0 to skip it).
# Last, the daemon's own peak RSS with 10 warm servers (servers not
# counted).
LOOP="${LOOP:-100}"
MCPORTER_LOOP="${MCPORTER_LOOP:-$LOOP}"
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
echo "daemon: a loop of calls, warm (rivumi-mcp daemon start)"
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
