# StrideWeave: the two everyday commands are `make demo` and `make test`.
# Both create or refresh the project virtualenv (.venv) and install what they
# need into it; nothing else has to be installed by hand.

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
VBIN   := $(VENV)/bin
DEPS   := $(VENV)/.deps-stamp
BUILD_DEPS := $(VENV)/.build-deps-stamp
MESON  := $(VBIN)/meson
NINJA  := $(VBIN)/ninja

C_SOURCES := $(shell git ls-files '*.c' '*.h' 2>/dev/null)
PY_SOURCES := python tests/python tests/typing tests/fuzz bench examples tools

SAN_ENV := ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1 \
           UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

.PHONY: all venv install build-c test test-c test-python test-reference test-ulp demo layout-demo \
        bench bench-peers sanitize tsan format format-check lint stubtest typecheck docs check clean

all: test

# What building the package needs (requirements-build.txt), in a virtualenv
# of a Python the package supports: an older interpreter is refused at
# once, before anything is made.
$(BUILD_DEPS): requirements-build.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
		echo "StrideWeave needs Python 3.11 or newer, and $(PYTHON) is" \
		     "$$($(PYTHON) -V 2>&1 || echo missing): run make PYTHON=python3.11" \
		     "(or a newer one)." >&2; exit 1; }
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements-build.txt
	touch $@

# Everything the tests and the checks need besides (requirements-dev.txt).
$(DEPS): $(BUILD_DEPS) requirements-dev.txt
	$(VPY) -m pip install -q -r requirements-dev.txt
	touch $@

venv: $(DEPS)

# Builds the extension and installs the package into the virtualenv.
install: $(BUILD_DEPS)
	PATH=$(abspath $(VBIN)):$$PATH $(VPY) -m pip install -q --no-build-isolation .
	touch $(INSTALLED)

# The same, but only when a source of the package changed since the last
# install (so that a repeated `make demo` starts at once).
INSTALLED := $(VENV)/.install-stamp
PKG_SOURCES := $(shell find meson.build meson_options.txt pyproject.toml include src python \
                 -type f -not -path '*/__pycache__/*' 2>/dev/null)
$(INSTALLED): $(BUILD_DEPS) $(PKG_SOURCES)
	PATH=$(abspath $(VBIN)):$$PATH $(VPY) -m pip install -q --no-build-isolation .
	touch $@

# The C library, its unit tests and the C examples.
build-c: $(DEPS)
	test -f build/ctest/build.ninja || PATH=$(abspath $(VBIN)):$$PATH \
		$(MESON) setup build/ctest -Dpython=false -Dbuildtype=debugoptimized --werror
	PATH=$(abspath $(VBIN)):$$PATH $(NINJA) -C build/ctest

test-c: build-c
	PATH=$(abspath $(VBIN)):$$PATH $(MESON) test -C build/ctest --print-errorlogs

test-python: $(DEPS) install
	$(VPY) -m pytest -q

# The C tests again with only the portable reference kernels (no fast
# paths), which must agree with the optimised ones; built without MPI, so
# that a library without it is tested too (test_distributed_absent).
test-reference: $(DEPS)
	test -f build/reference/build.ninja || PATH=$(abspath $(VBIN)):$$PATH \
		$(MESON) setup build/reference -Dpython=false -Dreference_kernels=true \
		-Dmpi=disabled -Dbuildtype=debugoptimized --werror
	PATH=$(abspath $(VBIN)):$$PATH $(NINJA) -C build/reference
	PATH=$(abspath $(VBIN)):$$PATH $(MESON) test -C build/reference --print-errorlogs

# The exhaustive accuracy check of the vectorised activations: all 2**32
# float32 inputs through every path the CPU has, on two threads (minutes;
# docs/VMATH.md has the bounds and the time). `make test` runs a sample.
test-ulp: build-c
	./build/ctest/tests/c/test_vmath_ulp

# Every test: the C unit tests, the C examples and the pytest suite.
test: test-c test-python

# The main job: trains the sin(x) MLP of examples/train_mlp_cpu_friendly.py
# (progress every 200 epochs, then the final loss).
demo: $(INSTALLED)
	$(VPY) examples/train_mlp_cpu_friendly.py

# The layout algebra walk-through that the demo used to be.
layout-demo: $(INSTALLED)
	$(VPY) examples/layout_demo.py build/layout-demo

# Benchmarks beside NumPy and PyTorch, with whichever peers the virtualenv
# has (`make bench-peers` installs them: PyTorch's CPU build, not the
# multi-gigabyte GPU one a plain `pip install torch` gives on Linux).
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
bench-peers: $(DEPS)
	$(VPY) -c "import torch" 2>/dev/null || $(VPY) -m pip install -q torch==2.13.0 \
		--extra-index-url $(TORCH_CPU_INDEX)

bench: $(DEPS) $(INSTALLED)
	$(VPY) bench/bench_layout.py
	$(VPY) bench/bench_ops.py
	$(VPY) bench/bench_einops.py
	$(VPY) bench/bench_dlpack.py
	$(VPY) bench/bench_move.py
	$(VPY) bench/bench_opencl.py
	$(VPY) bench/bench_profiler.py
	$(VPY) bench/bench_train_sizes.py
	PATH=$(abspath $(VBIN)):$$PATH $(MESON) setup build/bench -Dpython=false \
		-Dbuildtype=release --reconfigure >/dev/null
	PATH=$(abspath $(VBIN)):$$PATH $(NINJA) -C build/bench bench/bench_layout_c \
		bench/bench_kernels_c bench/bench_profile_c bench/bench_policy_c \
		bench/bench_extension_c examples/train_mlp >/dev/null
	./build/bench/bench/bench_layout_c
	./build/bench/bench/bench_kernels_c
	./build/bench/bench/bench_profile_c
	./build/bench/bench/bench_policy_c
	./build/bench/bench/bench_extension_c
	$(VPY) bench/bench_train.py

# The C tests and the whole pytest suite against an AddressSanitizer +
# UndefinedBehaviorSanitizer build; the first report stops the run.
# libstdc++ is preloaded with the ASan runtime so that its __cxa_throw
# interceptor finds the real one: without it, a C++ exception in a library
# the tests use (PyTorch, a DLPack consumer) aborts the interpreter.
sanitize: $(DEPS)
	test -f build/asan/build.ninja || PATH=$(abspath $(VBIN)):$$PATH \
		$(MESON) setup build/asan -Dbuildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Dc_args=-fno-sanitize-recover=all --werror
	PATH=$(abspath $(VBIN)):$$PATH $(NINJA) -C build/asan
	$(SAN_ENV) ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
		PATH=$(abspath $(VBIN)):$$PATH $(MESON) test -C build/asan --print-errorlogs
	rm -rf build/asan-stage && mkdir -p build/asan-stage
	cp -r python/strideweave build/asan-stage/
	cp build/asan/python/strideweave/_native*.so build/asan-stage/strideweave/
	$(SAN_ENV) LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
		SW_HYPOTHESIS_PROFILE=sanitize \
		PYTHONPATH=build/asan-stage $(VPY) -m pytest -q -x -p no:cacheprovider

# The C tests and the threaded pytest tests (marker `threads`) against a
# ThreadSanitizer build (gcc's libtsan). The interpreter is not
# instrumented, so the runtime is preloaded as in `sanitize`, and reports
# come from what we build: the library and the extension. The first report
# stops the run (exit code 66) and is printed from build/tsan/reports;
# tests/tsan.supp may list documented false positives of libraries we do
# not build, never our code.
TSAN_REPORTS := build/tsan/reports
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 \
            suppressions=$(abspath tests/tsan.supp) log_path=$(abspath $(TSAN_REPORTS))/tsan"
TSAN_FAIL := { cat $(TSAN_REPORTS)/* 2>/dev/null; exit 1; }

tsan: $(DEPS)
	test -f build/tsan/build.ninja || PATH=$(abspath $(VBIN)):$$PATH \
		$(MESON) setup build/tsan -Dbuildtype=debugoptimized -Db_sanitize=thread \
		-Db_lundef=false --werror
	PATH=$(abspath $(VBIN)):$$PATH $(NINJA) -C build/tsan
	rm -rf $(TSAN_REPORTS) && mkdir -p $(TSAN_REPORTS)
	$(TSAN_ENV) PATH=$(abspath $(VBIN)):$$PATH $(MESON) test -C build/tsan \
		--print-errorlogs || $(TSAN_FAIL)
	rm -rf build/tsan-stage && mkdir -p build/tsan-stage
	cp -r python/strideweave build/tsan-stage/
	cp build/tsan/python/strideweave/_native*.so build/tsan-stage/strideweave/
	$(TSAN_ENV) LD_PRELOAD="$$(gcc -print-file-name=libtsan.so)" PYTHONPATH=build/tsan-stage \
		$(VPY) -m pytest -q -x -p no:cacheprovider -m threads || $(TSAN_FAIL)
	@test -z "$$(ls $(TSAN_REPORTS))" || $(TSAN_FAIL)

format: $(DEPS)
	$(VBIN)/clang-format -i $(C_SOURCES)
	$(VBIN)/ruff format $(PY_SOURCES)

format-check: $(DEPS)
	$(VBIN)/clang-format --dry-run --Werror $(C_SOURCES)

lint: $(DEPS)
	$(VBIN)/ruff check $(PY_SOURCES)
	$(VBIN)/ruff format --check $(PY_SOURCES)

# Compares the shipped type stubs with the installed runtime module.
stubtest: install
	cd /tmp && $(abspath $(VPY)) -m mypy.stubtest strideweave \
		--allowlist $(abspath python/stubtest-allowlist.txt)

# A user's typed script (tests/typing/user_script.py) checked by pyright in
# strict mode against the installed package's stubs, as an editor sees it:
# a value typed Any or a wrong type fails. basedpyright is pyright with
# Node.js from PyPI.
typecheck: $(DEPS) $(INSTALLED)
	$(VBIN)/basedpyright --pythonpath $(abspath $(VPY)) -p tests/typing/pyrightconfig.json

# The documentation site (mkdocs.yml; sources in docs/, the API pages made
# from the stubs, docstrings and C headers by tools/docs_site.py) into
# build/docs. Strict: a warning fails the build, and so does a Python
# example of a page that does not do what the page says (every one runs).
DOCS_DEPS := $(VENV)/.docs-deps-stamp
$(DOCS_DEPS): $(BUILD_DEPS) requirements-docs.txt
	$(VPY) -m pip install -q -r requirements-docs.txt
	touch $@

docs: $(DOCS_DEPS) $(INSTALLED)
	$(VBIN)/mkdocs build --strict --quiet
	@echo "documentation in build/docs (open build/docs/index.html)"

# What CI runs after the test command.
check: test-reference sanitize tsan format-check lint stubtest docs typecheck

# The libFuzzer target of the layout command strings (tests/fuzz/), built
# with clang under AddressSanitizer and UndefinedBehaviorSanitizer from the
# lexer, parser, compile and cache sources with what they use, and run for
# FUZZ_TIME seconds from the seed corpus. Any crash, hang (FUZZ_TIMEOUT
# seconds per input) or leak fails the target. clang and its fuzzer runtime
# come from Debian's packages when missing.
FUZZ_TIME    ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_DIR     := build/fuzz
FUZZ_SOURCES := $(wildcard src/base/*.c src/layout/*.c) src/einops/lexer.c \
                src/einops/parser.c src/einops/compile.c src/einops/cache.c
FUZZ_HEADERS := $(wildcard include/strideweave/*.h src/base/*.h src/layout/*.h \
                src/einops/*.h)
FUZZ_CFLAGS  := -std=c11 -g -O1 -fno-omit-frame-pointer \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -Iinclude -Isrc -DSW_BUILDING_LIBRARY
SUDO         := $(shell test "$$(id -u)" = 0 || echo sudo)

.PHONY: fuzz fuzz-deps fuzz-python

fuzz-deps:
	@printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
		> /tmp/sw-fuzz-probe.c
	@clang -fsanitize=fuzzer /tmp/sw-fuzz-probe.c -o /tmp/sw-fuzz-probe 2>/dev/null || { \
		echo "installing clang and its fuzzer runtime"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang >/dev/null && \
		v=$$(clang -dumpversion | cut -d. -f1) && \
		{ $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libclang-rt-$$v-dev >/dev/null || true; } && \
		clang -fsanitize=fuzzer /tmp/sw-fuzz-probe.c -o /tmp/sw-fuzz-probe; }
	@rm -f /tmp/sw-fuzz-probe.c /tmp/sw-fuzz-probe

$(FUZZ_DIR)/fuzz_einops: tests/fuzz/fuzz_einops.c $(FUZZ_SOURCES) $(FUZZ_HEADERS) | fuzz-deps
	mkdir -p $(FUZZ_DIR)
	clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_einops.c $(FUZZ_SOURCES) -lm -lpthread -o $@

fuzz: fuzz-deps $(FUZZ_DIR)/fuzz_einops
	mkdir -p $(FUZZ_DIR)/corpus
	ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(FUZZ_DIR)/fuzz_einops -max_total_time=$(FUZZ_TIME) -timeout=$(FUZZ_TIMEOUT) \
		-max_len=512 -rss_limit_mb=2048 -print_final_stats=1 \
		-dict=tests/fuzz/einops.dict -artifact_prefix=$(FUZZ_DIR)/ \
		$(FUZZ_DIR)/corpus tests/fuzz/corpus

# The Hypothesis fuzz suite of the Python API (tests/fuzz/test_fuzz_python.py)
# against the AddressSanitizer + UndefinedBehaviorSanitizer build of the
# extension, staged as the sanitize target does: FUZZ_PY_EXAMPLES examples
# per test (a few minutes in all). pytest captures only sys-level output, so
# that a sanitizer report reaches the terminal before the abort; huge
# allocations return NULL (MemoryError) instead of aborting.
FUZZ_PY_EXAMPLES ?= 2000

fuzz-python: $(DEPS)
	test -f build/asan/build.ninja || PATH=$(abspath $(VBIN)):$$PATH \
		$(MESON) setup build/asan -Dbuildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Dc_args=-fno-sanitize-recover=all --werror
	PATH=$(abspath $(VBIN)):$$PATH $(NINJA) -C build/asan
	rm -rf build/asan-stage && mkdir -p build/asan-stage
	cp -r python/strideweave build/asan-stage/
	cp build/asan/python/strideweave/_native*.so build/asan-stage/strideweave/
	ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
		FUZZ_PY_EXAMPLES=$(FUZZ_PY_EXAMPLES) PYTHONPATH=build/asan-stage \
		$(VPY) -m pytest -q -x -p no:cacheprovider --capture=sys tests/fuzz/test_fuzz_python.py

clean:
	rm -rf build .venv .pytest_cache .hypothesis .ruff_cache .mypy_cache
