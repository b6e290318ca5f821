#!/usr/bin/env bash
# Installs the shells and man-page tools the completion and man-page tests run
# (tests/completions.rs): zsh, fish, groff-base (groff -ww) and man-db (man -l).
# Pinned to Debian 12 (bookworm)'s versions; a tool already on PATH is left as
# it is, so a developer machine with its own zsh or fish is not touched.
# Idempotent. Needs apt-get and root only when something is missing.
set -euo pipefail

# ---- Pinned versions (Debian 12 bookworm, `apt-cache policy PKG`).
PINS=(
  "zsh=5.9-4+b15"
  "fish=3.6.0-3.1+deb12u1"
  "groff-base=1.22.4-10"
  "man-db=2.11.2-2"
)

step() { printf 'ci-setup: %s\n' "$*"; }

# The command each package provides, to tell whether it is already there.
provides() {
  case "$1" in
    groff-base) echo groff ;;
    man-db) echo man ;;
    *) echo "$1" ;;
  esac
}

missing=()
for pin in "${PINS[@]}"; do
  pkg="${pin%%=*}"
  if command -v "$(provides "$pkg")" >/dev/null; then
    step "$pkg: present ($(command -v "$(provides "$pkg")"))"
  else
    missing+=("$pin")
  fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  step "WARNING: missing ${missing[*]} and no apt-get; their tests will be skipped"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    # A developer machine without root: the tests that need these say
    # SKIPPED and pass. CI runs as root and installs them.
    step "WARNING: missing ${missing[*]} and not root; their tests will be skipped"
    exit 0
  fi
  sudo="sudo"
fi
step "installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
