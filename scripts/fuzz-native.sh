#!/bin/sh
# libFuzzer on floe/_native.c (scripts/fuzz_native.py says what is fuzzed), an optional,
# manual run: not part of `make test`. Needs clang and its runtimes (Debian: apt-get install
# clang libclang-rt-14-dev) and atheris (pip install atheris) in the project's virtualenv.
#
#   scripts/fuzz-native.sh [SECONDS] [CORPUS_DIR]
#
# The extension is built here with clang's coverage instrumentation (fuzzer-no-link),
# AddressSanitizer and UndefinedBehaviorSanitizer; Python allocates with malloc
# (PYTHONMALLOC=malloc) so that ASan sees the column buffers' bytes objects too.
set -eu
seconds=${1:-300}
corpus=${2:-var/fuzz-native-corpus}
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$here/.venv/bin/python}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
clang -shared -fPIC -O1 -g -fno-omit-frame-pointer \
    -fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined \
    -I"$include" "$here/floe/_native.c" -o "$build/_native$suffix"
# ASan's runtime and clang's libFuzzer in one preloaded library, as atheris builds it from
# source: atheris then runs this libFuzzer, which reads the extension's coverage (with ASan's
# own runtime preloaded, its default coverage hooks would take the extension's counters)
rt=$(dirname "$(clang -print-file-name=libclang_rt.asan-x86_64.a)")
mkdir "$build/asan"
(cd "$build/asan" && ar x "$rt/libclang_rt.asan-x86_64.a" && rm -f asan_preinit.cpp.o)
clang++ -shared -o "$build/asan_with_fuzzer.so" "$build"/asan/*.o -Wl,--whole-archive \
    "$rt/libclang_rt.asan_cxx-x86_64.a" "$rt/libclang_rt.fuzzer_no_main-x86_64.a" \
    -Wl,--no-whole-archive -lpthread -ldl -lrt -lm
mkdir -p "$corpus"
cd "$here"
LD_PRELOAD=$build/asan_with_fuzzer.so \
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
PYTHONMALLOC=malloc \
    "$python" scripts/fuzz_native.py "$build/_native$suffix" \
    -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 "$corpus"
