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
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N="${N:-30}"
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

# median_ms NAME COMMAND...: runs the command N times, prints the median.
median_ms() {
  local name="$1"; shift
  local times=()
  for _ in $(seq "$N"); do
    local t0 t1
    t0=$(now_ns); "$@" >/dev/null; t1=$(now_ns)
    times+=($(( (t1 - t0) / 1000 )))
  done
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-28s %8.2f ms (median of %d)\n' "$name" "$(awk "BEGIN {print $med / 1000}")" "$N"
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
