#!/usr/bin/env bash
# `make fuzz`: runs every cargo-fuzz target for a short bounded time, one
# at a time, from the checked-in seeds (fuzz/seeds/<target>) plus the
# local corpus (fuzz/corpus/<target>, not checked in). A target that fails
# leaves its input in fuzz/artifacts/<target>/; the others still run, and
# the exit status is 1 if any failed.
#
#   FUZZ_SECONDS=20     seconds per target
#   FUZZ_TARGETS="..."  which targets (default: all in fuzz/Cargo.toml)
#
# cargo-fuzz builds with unstable rustc flags (sanitizers, coverage). A
# nightly toolchain is used when rustup has one; otherwise the stable one
# with RUSTC_BOOTSTRAP=1, which lets stable accept them. Without cargo-fuzz
# this says what is missing and exits 0: fuzzing is not part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-20}
version=0.13.1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: skipped: cargo-fuzz is not installed;" \
        "install it with: cargo install cargo-fuzz --locked --version $version"
    exit 0
fi

if rustup run nightly rustc --version >/dev/null 2>&1; then
    fuzz=(cargo +nightly fuzz)
    echo "fuzz: using $(rustup run nightly rustc --version)"
else
    export RUSTC_BOOTSTRAP=1
    fuzz=(cargo fuzz)
    echo "fuzz: using $(rustc --version) with RUSTC_BOOTSTRAP=1"
fi

failed=()
read -r -a targets <<<"${FUZZ_TARGETS:-$("${fuzz[@]}" list | tr '\n' ' ')}"
for target in "${targets[@]}"; do
    echo "fuzz: $target for ${seconds}s"
    mkdir -p "fuzz/corpus/$target" "fuzz/seeds/$target"
    # One process (no -jobs/-workers): the machine's cores are shared.
    # -timeout turns a hang into a reported failure.
    log="fuzz/target/$target.log"
    mkdir -p fuzz/target
    if ! "${fuzz[@]}" run "$target" "fuzz/corpus/$target" \
        "fuzz/seeds/$target" -- -max_total_time="$seconds" -timeout=10 \
        -print_final_stats=1 >"$log" 2>&1; then
        grep -E -A1 'panicked at|^==[0-9]+==ERROR|^SUMMARY' "$log" | head -n 6 || true
        echo "fuzz: $target FAILED (full log: $log);" \
            "the input is in fuzz/artifacts/$target/"
        failed+=("$target")
        continue
    fi
    grep -E '^(Done|stat::number_of_executed_units|INFO: seed corpus)' "$log" || true
done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]}"
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s each without a failure"
