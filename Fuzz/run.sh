#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers with libFuzzer + AddressSanitizer.
#
#   Fuzz/run.sh TARGET SECONDS [extra libFuzzer flags]     TARGET: json_config csv checkpoint onnx hdf5_scenario results
#   Fuzz/run.sh build                                       build every target only
#
# The library modules are compiled with -sanitize=fuzzer,address at -Onone (at -O Swift showed
# almost no coverage edges; see docs/data-limits.md) into .build/fuzz, then each target links
# them with libFuzzer. New inputs go to .build/fuzz/corpus/TARGET; the committed seeds in
# Fuzz/corpus/TARGET are only read. A crash leaves crash-* in .build/fuzz and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/fuzz
mkdir -p "$out/modules"
hdf5_cflags=$(pkg-config --cflags hdf5)
hdf5_libs=$(pkg-config --libs hdf5)
common=(-parse-as-library -Onone -sanitize=fuzzer,address -I "$out/modules"
        -Xcc -fmodule-map-file=Sources/CHDF5/module.modulemap
        -Xcc -fmodule-map-file=Sources/CContinualKernels/include/module.modulemap
        -Xcc -ISources/CContinualKernels/include)
for f in $hdf5_cflags; do common+=(-Xcc "$f"); done

build_module() {
    local name=$1
    shift
    local obj="$out/modules/$name.o" dep
    # Up to date unless a source of this module, or a module built before it (a dependency,
    # given as the remaining arguments), is newer. (Comparing with every .o made each later
    # module look like a dependency, and every target rebuilt all six modules.)
    local stale=0
    [[ -f "$obj" ]] || stale=1
    [[ $stale = 0 && -n $(find "Sources/$name" -name '*.swift' -newer "$obj" | head -1) ]] && stale=1
    for dep in "$@"; do
        [[ $stale = 0 && "$out/modules/$dep.o" -nt "$obj" ]] && stale=1
    done
    [[ $stale = 0 ]] && return
    echo "== compiling $name (fuzzer + address sanitizer, -Onone)"
    swiftc "${common[@]}" -wmo -c -module-name "$name" -emit-module -emit-module-path "$out/modules/$name.swiftmodule" \
        -o "$obj" $(find "Sources/$name" -name '*.swift' | sort)
    touch "$obj"   # swiftc keeps the old mtime when the object is unchanged
}

# The C kernels under ContinualCore (issue 25): one object per C file of the target (every
# file, so a new one cannot be forgotten here: Updates.c was, and every target failed to link),
# each linked into every target.
build_kernels() {
    local c obj
    for c in Sources/CContinualKernels/*.c; do
        obj="$out/modules/CContinualKernels-$(basename "$c" .c).o"
        if [[ -f "$obj" ]] && [[ -z $(find Sources/CContinualKernels/include Sources/CContinualKernels/*.h "$c" -newer "$obj" | head -1) ]]; then continue; fi
        echo "== compiling $c (address sanitizer, -O1)"
        clang -c -O1 -fsanitize=address -ISources/CContinualKernels/include "$c" -o "$obj"
    done
    rm -f "$out/modules/CContinualKernels.o"   # the single object of the layout before
}

build_all() {
    build_kernels
    local built=()
    for m in ContinualCore ContinualHDF5 ContinualMetrics ContinualScenarios ContinualStrategies ContinualFederated ContinualExport ContinualHabitEvents ContinualExperiments; do
        build_module "$m" "${built[@]}"
        built+=("$m")
    done
}

build_target() {
    local t=$1
    local bin="$out/$t"
    if [[ -f "$bin" ]] && [[ -z $(find Fuzz/Targets/$t.swift "$out/modules" -newer "$bin" | head -1) ]]; then return; fi
    echo "== linking fuzz target $t"
    swiftc "${common[@]}" -module-name "Fuzz_$t" "Fuzz/Targets/$t.swift" "$out"/modules/*.o \
        $hdf5_libs -lhdf5_hl -o "$bin"
}

targets=(json_config csv checkpoint onnx hdf5_scenario results)
# One build at a time: two run.sh started together (CI runs targets side by side) would
# otherwise compile the same module objects at once and swiftc fails with "modified during
# the build". The lock is released before fuzzing starts.
mkdir -p "$out"
exec 9>"$out/.build.lock"
flock 9
if [[ ${1:-} == build ]]; then
    build_all
    for t in "${targets[@]}"; do build_target "$t"; done
    exit 0
fi
target=${1:?usage: Fuzz/run.sh TARGET SECONDS (targets: ${targets[*]})}
seconds=${2:?usage: Fuzz/run.sh TARGET SECONDS}
shift 2
build_all
build_target "$target"
flock -u 9
mkdir -p "$out/corpus/$target" "$out/artifacts"
stamp=$(mktemp)
status=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$out/$target" "$out/corpus/$target" "Fuzz/corpus/$target" \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -max_len=262144 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$target-" ${FUZZ_EXTRA:-} "$@" || status=$?
# With FUZZ_LIBHDF5_KNOWN=1 (the HDF5 targets in CI, run in fork mode with -ignore_crashes=1 and
# -ignore_timeouts=1), a crash whose first frame outside the sanitizer and libc (memcpy) is inside libhdf5 is a known
# libhdf5 1.10.8 bug (Fuzz/findings/) and is only reported; any other crash fails.
if [[ ${FUZZ_LIBHDF5_KNOWN:-0} == 1 ]]; then
    status=0
    while IFS= read -r a; do
        top=$(ASAN_OPTIONS=detect_leaks=0 timeout 60 "$out/$target" "$a" 2>&1 \
              | grep -E '#[0-9]+ ' | grep -v compiler-rt | grep -v -E 'sysdeps/|libc\.so' | head -1 || true)
        case "$top" in
            "") echo "not reproducible alone (fork-mode artifact or libhdf5 hang): $a" >&2 ;;
            *libhdf5*) echo "known libhdf5 crash (not ContinualKit's): $a: $top" >&2 ;;
            *) echo "FINDING in ContinualKit code: $a: $top" >&2; status=1 ;;
        esac
    done < <(find "$out/artifacts" -name "$target-crash-*" -newer "$stamp" 2>/dev/null)
fi
rm -f "$stamp"
exit "$status"
