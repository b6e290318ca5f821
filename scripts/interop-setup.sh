#!/usr/bin/env bash
# Installs the MCP servers used by rivumi-mcp's interop tests into .interop/ (gitignored):
#   .interop/node   the TypeScript reference server @modelcontextprotocol/server-everything (npm), and
#                   the TypeScript SDK v2 @modelcontextprotocol/server, which runs fixtures/interop/ts2_server.cjs
#   .interop/venv   the official Python SDK `mcp` (PyPI), which runs fixtures/interop/py_server.py, and
#                   `fastmcp` (PyPI), which runs fixtures/interop/fastmcp_server.py
#   .interop/real-venv  the reference mcp-server-sqlite (PyPI) on the `mcp` 1.x it needs
#   .interop/git-node   @cyanheads/git-mcp-server (npm), for interop_wild and interop_trial
#   .interop/real-fetch-venv  mcp-server-fetch (PyPI)
#   .interop/real2-node  desktop-commander, server-pdf, @eslint/mcp (npm); .interop/real2-venv  mcp-shell-server (PyPI)
#   .interop/npx-cache   an npm cache holding the README quick start's server, for interop_readme_quick_start
# Idempotent: a step whose pinned install is already in place is skipped.
# Needs: node >= 20 with npm, python3 >= 3.10 with the venv module; reaches only the package registries.
# How to start the servers: fixtures/interop/README.md.
set -euo pipefail

# ---- Pinned versions. Bumping one? Also regenerate its lock file (see fixtures/interop/README.md):
#   Node: fixtures/interop/node/package.json + package-lock.json (the full dependency tree)
#   Python: fixtures/interop/py-constraints.txt (every transitive dependency)
SERVER_EVERYTHING_VERSION="2026.8.31" # @modelcontextprotocol/server-everything, newest on npm as of 2026-11
TS_SERVER_VERSION="2.3.1"             # @modelcontextprotocol/server (TS SDK v2, speaks 2026-07-28), newest on npm as of 2026-12
MCP_PY_VERSION="2.3.0"                # `mcp` on PyPI, newest; 2.x provides mcp.server.mcpserver.MCPServer
FASTMCP_VERSION="4.1.6"               # `fastmcp` on PyPI, newest as of 2026-12; works with mcp 2.3.0

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
FIX="$ROOT/fixtures/interop"
DEST="$ROOT/.interop"
NODE_DIR="$DEST/node"
VENV="$DEST/venv"

step() { printf 'interop-setup: %s\n' "$*"; }
die() { printf 'interop-setup: ERROR: %s\n' "$*" >&2; exit 1; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
# The version of package $2 installed under the node_modules of $1, if any.
installed_node_at() {
  local pkg="$1/node_modules/$2/package.json"
  [ -f "$pkg" ] && node -p "require('$pkg').version"
}

# Installs the locked tree of fixtures/interop/$1 (package.json + package-lock.json) into
# .interop/$1 with `npm ci`, run in the directory itself (through a symlinked .interop,
# `npm ci --prefix` misreads the project). Skipped when the stamp (a hash of those two files)
# matches and every path given after $1 exists under its node_modules; those paths are checked
# after an install too. Install scripts are never run.
node_group() {
  local name="$1" dir="$DEST/$1" stamp f missing=""
  shift
  stamp="$(hash_of "$FIX/$name/package.json" "$FIX/$name/package-lock.json")"
  for f in "$@"; do [ -e "$dir/node_modules/$f" ] || missing=1; done
  if [ -z "$missing" ] && [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then
    step "$name: already installed, skipping"
    return
  fi
  step "$name: installing into .interop/$name (npm ci, locked tree)"
  mkdir -p "$dir"
  rm -f "$dir/.stamp"
  cp "$FIX/$name/package.json" "$FIX/$name/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  for f in "$@"; do [ -e "$dir/node_modules/$f" ] || die "$name: npm did not install $f"; done
  echo "$stamp" >"$dir/.stamp"
  step "$name: installed"
}

# Makes the venv .interop/$1 and installs the requirements after $2 into it, constrained by the
# file $2 (every transitive package pinned). Skipped when the stamp (the requirements, this
# python's version and the constraints) matches. The venv is made at its real path: its scripts
# name their python by absolute path, and .interop is often a symlink shared by several checkouts.
py_group() {
  local venv constraints="$2" stamp
  venv="$(cd "$DEST" && pwd -P)/$1"
  shift 2
  stamp="$(printf '%s\n' "$*" "$(python3 -c 'import sys; print(sys.version)')" | cat - "$constraints" |
    sha256sum | cut -d' ' -f1)"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$stamp" ]; then
    step "python: $* already installed in .interop/${venv##*/}, skipping"
    return
  fi
  step "python: installing $* into .interop/${venv##*/}"
  rm -rf "$venv"
  python3 -m venv "$venv" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -c "$constraints" "$@"
  echo "$stamp" >"$venv/.stamp"
  step "python: installed $*"
}

command -v node >/dev/null || die "node not found (need node >= 20)"
command -v npm >/dev/null || die "npm not found"
command -v python3 >/dev/null || die "python3 not found (need >= 3.10)"
mkdir -p "$DEST"

# ---- 1. Node: @modelcontextprotocol/server-everything and @modelcontextprotocol/server -------
# Prints the version package.json pins for a package, or the one installed in .interop/node.
pinned_node() { node -p "require('$FIX/node/package.json').dependencies['$1']"; }
installed_node() {
  local pkg="$NODE_DIR/node_modules/$1/package.json"
  [ -f "$pkg" ] && node -p "require('$pkg').version"
}
[ "$(pinned_node @modelcontextprotocol/server-everything)" = "$SERVER_EVERYTHING_VERSION" ] ||
  die "fixtures/interop/node/package.json pins server-everything $(pinned_node @modelcontextprotocol/server-everything), script pins $SERVER_EVERYTHING_VERSION"
[ "$(pinned_node @modelcontextprotocol/server)" = "$TS_SERVER_VERSION" ] ||
  die "fixtures/interop/node/package.json pins @modelcontextprotocol/server $(pinned_node @modelcontextprotocol/server), script pins $TS_SERVER_VERSION"

node_pins="server-everything $SERVER_EVERYTHING_VERSION, server $TS_SERVER_VERSION"
node_group node @modelcontextprotocol/server-everything/package.json @modelcontextprotocol/server/package.json
got="$(installed_node @modelcontextprotocol/server-everything)"
[ "$got" = "$SERVER_EVERYTHING_VERSION" ] || die "npm installed server-everything $got"
got="$(installed_node @modelcontextprotocol/server)"
[ "$got" = "$TS_SERVER_VERSION" ] || die "npm installed @modelcontextprotocol/server $got"

# ---- 2. Python: mcp and fastmcp in .interop/venv --------------------------------------
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "python3 must be >= 3.10"
py_pins="mcp $MCP_PY_VERSION, fastmcp $FASTMCP_VERSION"
py_group venv "$FIX/py-constraints.txt" "mcp==$MCP_PY_VERSION" "fastmcp==$FASTMCP_VERSION"

# ---- 3. Smoke check: the servers are importable/startable ---------------------------------
[ -f "$NODE_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] ||
  die "server-everything dist/index.js missing"
RIVUMI_INTEROP_NODE_DIR="$NODE_DIR" node "$FIX/ts2_server.cjs" check ||
  die "fixtures/interop/ts2_server.cjs cannot load @modelcontextprotocol/server from .interop/node"
"$VENV/bin/python" -c 'from mcp.server.mcpserver import MCPServer' || die "mcp.server.mcpserver not importable"
"$VENV/bin/python" "$FIX/py_server.py" --help >/dev/null || die "fixtures/interop/py_server.py --help failed"
"$VENV/bin/python" -c 'import runpy, sys; runpy.run_path(sys.argv[1], run_name="check")' "$FIX/py_elicit.py" \
  || die "fixtures/interop/py_elicit.py does not load"
"$VENV/bin/python" "$FIX/fastmcp_server.py" --check || die "fixtures/interop/fastmcp_server.py --check failed"
step "ok: node $(node --version) $node_pins; python $("$VENV/bin/python" -c 'import platform; print(platform.python_version())') $py_pins"

# ---- sandbox: real servers run inside rivumi-mcp's sandbox (tests/sandbox.rs) -----------
#   .interop/sandbox-node  @modelcontextprotocol/server-filesystem (fixtures/interop/sandbox-node, locked)
#   mcp-server-fetch: the real-fetch-venv section below
node_group sandbox-node @modelcontextprotocol/server-filesystem/dist/index.js
step "ok: sandbox-node (server-filesystem)"
# ---- 4. git-node: @cyanheads/git-mcp-server (a 2025 server over HTTP; its 500 to the 2026-07-28 probe) ----
# Pinned in fixtures/interop/git-node/package.json + package-lock.json; installed into .interop/git-node.
GIT_SERVER_VERSION="2.15.3" # @cyanheads/git-mcp-server; the version the second real-server trial met
node_group git-node @cyanheads/git-mcp-server/package.json
got="$(installed_node_at "$DEST/git-node" @cyanheads/git-mcp-server)"
[ "$got" = "$GIT_SERVER_VERSION" ] || die "npm installed git-mcp-server $got"

# ---- auth: node-oidc-provider, a real authorization server with a device endpoint ----------
# For tests/interop_device.rs (fixtures/interop/device_as.mjs). Pinned by
# fixtures/interop/auth-node/package.json + package-lock.json; installed into .interop/auth-node.
OIDC_PROVIDER_VERSION="9.13.3"        # oidc-provider (npm): RFC 8628 device flow, PKCE, resource indicators
AUTH_NODE_DIR="$DEST/auth-node"
[ "$(node -p "require('$FIX/auth-node/package.json').dependencies['oidc-provider']")" = "$OIDC_PROVIDER_VERSION" ] ||
  die "fixtures/interop/auth-node/package.json does not pin oidc-provider $OIDC_PROVIDER_VERSION"
node_group auth-node oidc-provider/package.json
[ "$(installed_node_at "$AUTH_NODE_DIR" oidc-provider)" = "$OIDC_PROVIDER_VERSION" ] || die "npm installed another oidc-provider"

# ---- 4. Python: the reference mcp-server-sqlite in .interop/real-venv (issue 21) -------------
# mcp-server-sqlite 2025.4.25 uses the low-level Server API of mcp 1.x (gone in mcp 2), so it has
# a venv of its own, pinned by fixtures/interop/real-py-constraints.txt.
SQLITE_VERSION="2025.4.25"
SQLITE_MCP_VERSION="1.30.0"
REAL_VENV="$DEST/real-venv"
py_group real-venv "$FIX/real-py-constraints.txt" "mcp-server-sqlite==$SQLITE_VERSION" "mcp==$SQLITE_MCP_VERSION"
"$REAL_VENV/bin/python" -c 'import mcp_server_sqlite.server' || die "mcp_server_sqlite does not import"

# ---- 6. Python: mcp-server-fetch in .interop/real-fetch-venv (issue 21) ------------------------
FETCH_VERSION="2026.10.24"
py_group real-fetch-venv "$FIX/real-fetch-constraints.txt" "mcp-server-fetch==$FETCH_VERSION"

# ---- 7. Hosts of `rivumi-mcp serve`: .interop/clients-node (tests/interop_serve.rs) -----------
# The TypeScript SDK v2 client, the Inspector (its --cli) and mcporter, pinned exactly in
# fixtures/interop/clients-node/package.json + package-lock.json. The Inspector's postinstall (not run) only installs its clients from a source checkout.
node_group clients-node @modelcontextprotocol/client/package.json @modelcontextprotocol/inspector/package.json \
  mcporter/package.json

# ---- tasks: fastmcp-tasks (SEP-2663 tasks, 2026-07-28) in .interop/tasks-venv -------------------
# fastmcp-tasks 4.1.4 pins fastmcp-slim 4.1.4, which cannot share .interop/venv with fastmcp 4.1.6,
# hence a venv of its own; every package is pinned in fixtures/interop/tasks-venv/constraints.txt.
TASKS_VENV="$DEST/tasks-venv"
TASKS_PY_VERSION="4.1.4"
py_group tasks-venv "$FIX/tasks-venv/constraints.txt" "fastmcp-tasks==$TASKS_PY_VERSION"
"$TASKS_VENV/bin/python" -c 'import fastmcp_tasks' || die "fastmcp_tasks not importable in .interop/tasks-venv"

# ---- skills: the TypeScript SDK v2's Skills extension (SEP-2640) in .interop/skills-node ------------
# @modelcontextprotocol/server 2.4.0 (ext/skills), pinned exactly in fixtures/interop/skills-node
# (package.json + package-lock.json); fixtures/skills/ts_skills_server.mjs runs it for
# tests/interop_skills.rs.
SKILLS_NODE="$DEST/skills-node"
SKILLS_TS_VERSION="2.4.0"
node_group skills-node @modelcontextprotocol/server/package.json
got="$(installed_node_at "$SKILLS_NODE" @modelcontextprotocol/server)"
[ "$got" = "$SKILLS_TS_VERSION" ] || die "npm installed @modelcontextprotocol/server $got in .interop/skills-node"
step "ok: skills-node (@modelcontextprotocol/server $SKILLS_TS_VERSION, ext/skills)"

# ---- real2: the second trial's other servers (issue 21, round two; tests/interop_real2.rs) ------
# Node, pinned with the full tree in fixtures/interop/real2-node/package.json + package-lock.json:
#   @wonderwhy-er/desktop-commander 0.2.52, @modelcontextprotocol/server-pdf 2.0.4 (TS SDK v2 2.0.0),
#   @eslint/mcp 0.3.13. Install scripts are NOT run: desktop-commander's postinstall reports the
#   install over the network, @vscode/ripgrep's and puppeteer's download binaries from outside the
#   registries. None of the three needs them to serve what the tests call.
node_group real2-node @wonderwhy-er/desktop-commander/dist/index.js \
  @modelcontextprotocol/server-pdf/dist/index.js @eslint/mcp/src/mcp-cli.js

# Python: mcp-shell-server 1.1.14 (on mcp 1.30.0), every package pinned in
# fixtures/interop/real2-venv/constraints.txt.
SHELL_SERVER_VERSION="1.1.14"
REAL2_VENV="$DEST/real2-venv"
py_group real2-venv "$FIX/real2-venv/constraints.txt" "mcp-shell-server==$SHELL_SERVER_VERSION"
"$REAL2_VENV/bin/python" -c 'import mcp_shell_server.server' || die "mcp_shell_server does not import"

# The README quick start's server, in an npm cache of its own (.interop/npx-cache), so that
# interop_readme_quick_start runs the quick start's `npx -y PACKAGE@VERSION` offline. The version
# must be the one README.md names (the test checks). Install scripts are not run (the tree has none).
QUICK_START_PACKAGE="@modelcontextprotocol/server-filesystem@2026.8.31"
NPX_CACHE="$DEST/npx-cache"
if [ "$(cat "$NPX_CACHE/.stamp" 2>/dev/null)" = "$QUICK_START_PACKAGE" ]; then
  step "npx-cache: $QUICK_START_PACKAGE already cached, skipping"
else
  step "npx-cache: caching $QUICK_START_PACKAGE in .interop/npx-cache"
  rm -rf "$NPX_CACHE"
  mkdir -p "$NPX_CACHE"
  (cd "$NPX_CACHE" && npm_config_cache="$NPX_CACHE" npm_config_ignore_scripts=true \
    npm exec --yes --no-audit --no-fund --loglevel=error --package="$QUICK_START_PACKAGE" -- node -e 0)
  echo "$QUICK_START_PACKAGE" >"$NPX_CACHE/.stamp"
  step "npx-cache: cached $QUICK_START_PACKAGE"
fi
