# bench/lib.sh — what the kernel benchmarks share; sourced, after ROOT,
# jiti, kbench and say() are set.

# Build jiti and kernel_bench in build/ when the default jiti is used or
# kernel_bench is missing (an up-to-date build only costs make's checks).
bench_build_kernel() {
  if [ "$jiti" = "$ROOT/build/jiti" ] || [ ! -x "$kbench" ]; then
    if [ ! -f "$ROOT/build/CMakeCache.txt" ]; then
      say "configuring build/ (cmake, RelWithDebInfo) ..."
      cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || return 1
    fi
    say "building jiti and kernel_bench if needed ..."
    cmake --build "$ROOT/build" -j "$(nproc)" --target jiti-bin kernel_bench >/dev/null || return 1
  fi
}
