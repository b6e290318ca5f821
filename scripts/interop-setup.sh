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

node_stamp="$(hash_of "$FIX/node/package.json" "$FIX/node/package-lock.json")"
node_pins="server-everything $SERVER_EVERYTHING_VERSION, server $TS_SERVER_VERSION"
if [ "$(installed_node @modelcontextprotocol/server-everything)" = "$SERVER_EVERYTHING_VERSION" ] &&
  [ "$(installed_node @modelcontextprotocol/server)" = "$TS_SERVER_VERSION" ] &&
  [ "$(cat "$NODE_DIR/.stamp" 2>/dev/null)" = "$node_stamp" ]; then
  step "node: $node_pins already installed, skipping"
else
  step "node: installing $node_pins into .interop/node (npm ci, locked tree)"
  mkdir -p "$NODE_DIR"
  rm -f "$NODE_DIR/.stamp"
  cp "$FIX/node/package.json" "$FIX/node/package-lock.json" "$NODE_DIR/"
  # No package in the tree has install scripts, so none are run.
  npm ci --prefix "$NODE_DIR" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
  got="$(installed_node @modelcontextprotocol/server-everything)"
  [ "$got" = "$SERVER_EVERYTHING_VERSION" ] || die "npm installed server-everything $got"
  got="$(installed_node @modelcontextprotocol/server)"
  [ "$got" = "$TS_SERVER_VERSION" ] || die "npm installed @modelcontextprotocol/server $got"
  echo "$node_stamp" >"$NODE_DIR/.stamp"
  step "node: installed $node_pins"
fi

# ---- 2. Python: mcp and fastmcp in .interop/venv --------------------------------------
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "python3 must be >= 3.10"
py_pins="mcp $MCP_PY_VERSION, fastmcp $FASTMCP_VERSION"
py_stamp="$(printf '%s %s %s\n' "$MCP_PY_VERSION" "$FASTMCP_VERSION" "$(python3 -c 'import sys; print(sys.version)')" | cat - "$FIX/py-constraints.txt" | sha256sum | cut -d' ' -f1)"
installed_py() {
  [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true
}
if [ "$(installed_py mcp)" = "$MCP_PY_VERSION" ] && [ "$(installed_py fastmcp)" = "$FASTMCP_VERSION" ] &&
  [ "$(cat "$VENV/.stamp" 2>/dev/null)" = "$py_stamp" ]; then
  step "python: $py_pins already installed in .interop/venv, skipping"
else
  step "python: installing $py_pins into .interop/venv (constraints: fixtures/interop/py-constraints.txt)"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -c "$FIX/py-constraints.txt" "mcp==$MCP_PY_VERSION" "fastmcp==$FASTMCP_VERSION"
  echo "$py_stamp" >"$VENV/.stamp"
  step "python: installed $py_pins"
fi

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
sandbox_node="$DEST/sandbox-node"
sandbox_node_stamp="$(hash_of "$FIX/sandbox-node/package.json" "$FIX/sandbox-node/package-lock.json")"
if [ "$(cat "$sandbox_node/.stamp" 2>/dev/null)" = "$sandbox_node_stamp" ]; then
  step "sandbox-node: already installed, skipping"
else
  step "sandbox-node: installing server-filesystem into .interop/sandbox-node (npm ci, locked tree)"
  mkdir -p "$sandbox_node"
  rm -f "$sandbox_node/.stamp"
  cp "$FIX/sandbox-node/package.json" "$FIX/sandbox-node/package-lock.json" "$sandbox_node/"
  (cd "$sandbox_node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$sandbox_node_stamp" >"$sandbox_node/.stamp"
fi
[ -f "$sandbox_node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" ] ||
  die "server-filesystem missing in .interop/sandbox-node"
step "ok: sandbox-node (server-filesystem)"
# ---- 4. git-node: @cyanheads/git-mcp-server (a 2025 server over HTTP; its 500 to the 2026-07-28 probe) ----
# Pinned in fixtures/interop/git-node/package.json + package-lock.json; installed into .interop/git-node.
GIT_SERVER_VERSION="2.15.3" # @cyanheads/git-mcp-server; the version the second real-server trial met
GIT_FIX="$FIX/git-node"
GIT_DIR_="$DEST/git-node"
git_stamp="$(hash_of "$GIT_FIX/package.json" "$GIT_FIX/package-lock.json")"
installed_git() {
  local pkg="$GIT_DIR_/node_modules/@cyanheads/git-mcp-server/package.json"
  [ -f "$pkg" ] && node -p "require('$pkg').version"
}
if [ "$(installed_git)" = "$GIT_SERVER_VERSION" ] && [ "$(cat "$GIT_DIR_/.stamp" 2>/dev/null)" = "$git_stamp" ]; then
  step "git-node: git-mcp-server $GIT_SERVER_VERSION already installed, skipping"
else
  step "git-node: installing git-mcp-server $GIT_SERVER_VERSION into .interop/git-node (npm ci, locked tree)"
  mkdir -p "$GIT_DIR_"
  rm -f "$GIT_DIR_/.stamp"
  cp "$GIT_FIX/package.json" "$GIT_FIX/package-lock.json" "$GIT_DIR_/"
  # In the directory itself: `npm ci --prefix` through a symlinked .interop misreads the project.
  (cd "$GIT_DIR_" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  got="$(installed_git)"
  [ "$got" = "$GIT_SERVER_VERSION" ] || die "npm installed git-mcp-server $got"
  echo "$git_stamp" >"$GIT_DIR_/.stamp"
  step "git-node: installed git-mcp-server $GIT_SERVER_VERSION"
fi

# ---- auth: node-oidc-provider, a real authorization server with a device endpoint ----------
# For tests/interop_device.rs (fixtures/interop/device_as.mjs). Pinned by
# fixtures/interop/auth-node/package.json + package-lock.json; installed into .interop/auth-node.
OIDC_PROVIDER_VERSION="9.13.3"        # oidc-provider (npm): RFC 8628 device flow, PKCE, resource indicators
AUTH_NODE_DIR="$DEST/auth-node"
[ "$(node -p "require('$FIX/auth-node/package.json').dependencies['oidc-provider']")" = "$OIDC_PROVIDER_VERSION" ] ||
  die "fixtures/interop/auth-node/package.json does not pin oidc-provider $OIDC_PROVIDER_VERSION"
auth_stamp="$(hash_of "$FIX/auth-node/package.json" "$FIX/auth-node/package-lock.json")"
auth_pkg="$AUTH_NODE_DIR/node_modules/oidc-provider/package.json"
if [ -f "$auth_pkg" ] && [ "$(node -p "require('$auth_pkg').version")" = "$OIDC_PROVIDER_VERSION" ] &&
  [ "$(cat "$AUTH_NODE_DIR/.stamp" 2>/dev/null)" = "$auth_stamp" ]; then
  step "auth-node: oidc-provider $OIDC_PROVIDER_VERSION already installed, skipping"
else
  step "auth-node: installing oidc-provider $OIDC_PROVIDER_VERSION into .interop/auth-node (npm ci, locked tree)"
  mkdir -p "$AUTH_NODE_DIR"
  rm -f "$AUTH_NODE_DIR/.stamp"
  cp "$FIX/auth-node/package.json" "$FIX/auth-node/package-lock.json" "$AUTH_NODE_DIR/"
  (cd "$AUTH_NODE_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  [ "$(node -p "require('$auth_pkg').version")" = "$OIDC_PROVIDER_VERSION" ] || die "npm installed another oidc-provider"
  echo "$auth_stamp" >"$AUTH_NODE_DIR/.stamp"
  step "auth-node: installed oidc-provider $OIDC_PROVIDER_VERSION"
fi

# ---- 4. Python: the reference mcp-server-sqlite in .interop/real-venv (issue 21) -------------
# mcp-server-sqlite 2025.4.25 uses the low-level Server API of mcp 1.x (gone in mcp 2), so it has
# a venv of its own, pinned by fixtures/interop/real-py-constraints.txt.
SQLITE_VERSION="2025.4.25"
SQLITE_MCP_VERSION="1.30.0"
REAL_VENV="$DEST/real-venv"
real_stamp="$(printf '%s %s %s\n' "$SQLITE_VERSION" "$SQLITE_MCP_VERSION" "$(python3 -c 'import sys; print(sys.version)')" |
  cat - "$FIX/real-py-constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ -x "$REAL_VENV/bin/mcp-server-sqlite" ] && [ "$(cat "$REAL_VENV/.stamp" 2>/dev/null)" = "$real_stamp" ]; then
  step "python: mcp-server-sqlite $SQLITE_VERSION already installed in .interop/real-venv, skipping"
else
  step "python: installing mcp-server-sqlite $SQLITE_VERSION (mcp $SQLITE_MCP_VERSION) into .interop/real-venv"
  rm -rf "$REAL_VENV"
  python3 -m venv "$REAL_VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$REAL_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -c "$FIX/real-py-constraints.txt" "mcp-server-sqlite==$SQLITE_VERSION" "mcp==$SQLITE_MCP_VERSION"
  echo "$real_stamp" >"$REAL_VENV/.stamp"
  step "python: installed mcp-server-sqlite $SQLITE_VERSION"
fi
"$REAL_VENV/bin/python" -c 'import mcp_server_sqlite.server' || die "mcp_server_sqlite does not import"

# The version of package $2 installed under the node_modules of $1, if any.
installed_node_at() {
  local pkg="$1/node_modules/$2/package.json"
  [ -f "$pkg" ] && node -p "require('$pkg').version"
}

# ---- 5. (git-mcp-server for tests/interop_trial.rs: the git-node section above) ------------

# ---- 6. Python: mcp-server-fetch in .interop/real-fetch-venv (issue 21) ------------------------
FETCH_VERSION="2026.10.24"
FETCH_VENV="$DEST/real-fetch-venv"
fetch_stamp="$(printf '%s %s\n' "$FETCH_VERSION" "$(python3 -c 'import sys; print(sys.version)')" |
  cat - "$FIX/real-fetch-constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ -x "$FETCH_VENV/bin/mcp-server-fetch" ] && [ "$(cat "$FETCH_VENV/.stamp" 2>/dev/null)" = "$fetch_stamp" ]; then
  step "python: mcp-server-fetch $FETCH_VERSION already installed in .interop/real-fetch-venv, skipping"
else
  step "python: installing mcp-server-fetch $FETCH_VERSION into .interop/real-fetch-venv"
  rm -rf "$FETCH_VENV"
  python3 -m venv "$FETCH_VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$FETCH_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -c "$FIX/real-fetch-constraints.txt" "mcp-server-fetch==$FETCH_VERSION"
  echo "$fetch_stamp" >"$FETCH_VENV/.stamp"
  step "python: installed mcp-server-fetch $FETCH_VERSION"
fi

# ---- 7. Hosts of `rivumi-mcp serve`: .interop/clients-node (tests/interop_serve.rs) -----------
# The TypeScript SDK v2 client, the Inspector (its --cli) and mcporter, pinned exactly in
# fixtures/interop/clients-node/package.json + package-lock.json. npm ci runs in the directory
# itself (with --prefix through the .interop symlink npm misreads the lock's root).
CLIENTS_DIR="$DEST/clients-node"
clients_stamp="$(hash_of "$FIX/clients-node/package.json" "$FIX/clients-node/package-lock.json")"
if [ "$(cat "$CLIENTS_DIR/.stamp" 2>/dev/null)" = "$clients_stamp" ] &&
  [ -f "$CLIENTS_DIR/node_modules/mcporter/package.json" ]; then
  step "clients-node: already installed, skipping"
else
  step "clients-node: installing @modelcontextprotocol/client, inspector, mcporter (npm ci, locked tree)"
  mkdir -p "$CLIENTS_DIR"
  rm -f "$CLIENTS_DIR/.stamp"
  cp "$FIX/clients-node/package.json" "$FIX/clients-node/package-lock.json" "$CLIENTS_DIR/"
  # Install scripts are not run (the Inspector's postinstall only installs its clients from a source
  # checkout, and exits early under node_modules).
  (cd "$CLIENTS_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  for p in @modelcontextprotocol/client @modelcontextprotocol/inspector mcporter; do
    [ -f "$CLIENTS_DIR/node_modules/$p/package.json" ] || die "npm did not install $p"
  done
  echo "$clients_stamp" >"$CLIENTS_DIR/.stamp"
  step "clients-node: installed"
fi

# ---- tasks: fastmcp-tasks (SEP-2663 tasks, 2026-07-28) in .interop/tasks-venv -------------------
# fastmcp-tasks 4.1.4 pins fastmcp-slim 4.1.4, which cannot share .interop/venv with fastmcp 4.1.6,
# hence a venv of its own; every package is pinned in fixtures/interop/tasks-venv/constraints.txt.
TASKS_VENV="$DEST/tasks-venv"
TASKS_PY_VERSION="4.1.4"
tasks_stamp="$(printf '%s %s\n' "$TASKS_PY_VERSION" "$(python3 -c 'import sys; print(sys.version)')" |
  cat - "$FIX/tasks-venv/constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$TASKS_VENV/.stamp" 2>/dev/null)" = "$tasks_stamp" ]; then
  step "python: fastmcp-tasks $TASKS_PY_VERSION already installed in .interop/tasks-venv, skipping"
else
  step "python: installing fastmcp-tasks $TASKS_PY_VERSION into .interop/tasks-venv"
  rm -rf "$TASKS_VENV"
  python3 -m venv "$TASKS_VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$TASKS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -c "$FIX/tasks-venv/constraints.txt" "fastmcp-tasks==$TASKS_PY_VERSION"
  echo "$tasks_stamp" >"$TASKS_VENV/.stamp"
fi
"$TASKS_VENV/bin/python" -c 'import fastmcp_tasks' || die "fastmcp_tasks not importable in .interop/tasks-venv"

# ---- skills: the TypeScript SDK v2's Skills extension (SEP-2640) in .interop/skills-node ------------
# @modelcontextprotocol/server 2.4.0 (ext/skills), pinned exactly in fixtures/interop/skills-node
# (package.json + package-lock.json); fixtures/skills/ts_skills_server.mjs runs it for
# tests/interop_skills.rs. npm ci runs in the directory itself, as for clients-node.
SKILLS_NODE="$DEST/skills-node"
SKILLS_TS_VERSION="2.4.0"
skills_stamp="$(hash_of "$FIX/skills-node/package.json" "$FIX/skills-node/package-lock.json")"
if [ "$(cat "$SKILLS_NODE/.stamp" 2>/dev/null)" = "$skills_stamp" ] &&
  [ -f "$SKILLS_NODE/node_modules/@modelcontextprotocol/server/package.json" ]; then
  step "skills-node: @modelcontextprotocol/server $SKILLS_TS_VERSION already installed, skipping"
else
  step "skills-node: installing @modelcontextprotocol/server $SKILLS_TS_VERSION (npm ci, locked tree)"
  mkdir -p "$SKILLS_NODE"
  rm -f "$SKILLS_NODE/.stamp"
  cp "$FIX/skills-node/package.json" "$FIX/skills-node/package-lock.json" "$SKILLS_NODE/"
  # No package in the tree has install scripts.
  (cd "$SKILLS_NODE" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  got="$(node -p "require('$SKILLS_NODE/node_modules/@modelcontextprotocol/server/package.json').version")"
  [ "$got" = "$SKILLS_TS_VERSION" ] || die "npm installed @modelcontextprotocol/server $got in .interop/skills-node"
  echo "$skills_stamp" >"$SKILLS_NODE/.stamp"
fi
step "ok: skills-node (@modelcontextprotocol/server $SKILLS_TS_VERSION, ext/skills)"

# ---- real2: the second trial's other servers (issue 21, round two; tests/interop_real2.rs) ------
# Node, pinned with the full tree in fixtures/interop/real2-node/package.json + package-lock.json:
#   @wonderwhy-er/desktop-commander 0.2.52, @modelcontextprotocol/server-pdf 2.0.4 (TS SDK v2 2.0.0),
#   @eslint/mcp 0.3.13. Install scripts are NOT run: desktop-commander's postinstall reports the
#   install over the network, @vscode/ripgrep's and puppeteer's download binaries from outside the
#   registries. None of the three needs them to serve what the tests call.
REAL2_NODE="$DEST/real2-node"
real2_node_stamp="$(hash_of "$FIX/real2-node/package.json" "$FIX/real2-node/package-lock.json")"
real2_files=(
  "@wonderwhy-er/desktop-commander/dist/index.js"
  "@modelcontextprotocol/server-pdf/dist/index.js"
  "@eslint/mcp/src/mcp-cli.js"
)
if [ "$(cat "$REAL2_NODE/.stamp" 2>/dev/null)" = "$real2_node_stamp" ]; then
  step "real2-node: already installed, skipping"
else
  step "real2-node: installing desktop-commander, server-pdf, @eslint/mcp (npm ci, locked tree)"
  mkdir -p "$REAL2_NODE"
  rm -f "$REAL2_NODE/.stamp"
  cp "$FIX/real2-node/package.json" "$FIX/real2-node/package-lock.json" "$REAL2_NODE/"
  (cd "$REAL2_NODE" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$real2_node_stamp" >"$REAL2_NODE/.stamp"
  step "real2-node: installed"
fi
for f in "${real2_files[@]}"; do
  [ -f "$REAL2_NODE/node_modules/$f" ] || die "real2-node: $f missing"
done

# Python: mcp-shell-server 1.1.14 (on mcp 1.30.0), every package pinned in
# fixtures/interop/real2-venv/constraints.txt.
SHELL_SERVER_VERSION="1.1.14"
# By its real path: the venv's scripts name their python by absolute path, and .interop is
# often a symlink shared by several checkouts (the path through one of them would break with it).
REAL2_VENV="$(cd "$DEST" && pwd -P)/real2-venv"
real2_venv_stamp="$(printf '%s %s\n' "$SHELL_SERVER_VERSION" "$(python3 -c 'import sys; print(sys.version)')" |
  cat - "$FIX/real2-venv/constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ -x "$REAL2_VENV/bin/mcp-shell-server" ] && [ "$(cat "$REAL2_VENV/.stamp" 2>/dev/null)" = "$real2_venv_stamp" ]; then
  step "python: mcp-shell-server $SHELL_SERVER_VERSION already installed in .interop/real2-venv, skipping"
else
  step "python: installing mcp-shell-server $SHELL_SERVER_VERSION into .interop/real2-venv"
  rm -rf "$REAL2_VENV"
  python3 -m venv "$REAL2_VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$REAL2_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -c "$FIX/real2-venv/constraints.txt" "mcp-shell-server==$SHELL_SERVER_VERSION"
  echo "$real2_venv_stamp" >"$REAL2_VENV/.stamp"
  step "python: installed mcp-shell-server $SHELL_SERVER_VERSION"
fi
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
