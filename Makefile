# defo — the two commands a new user needs:
#   make demo   install what is missing, build, run the built-in demo
#   make test   install what is missing, build twice (optimised, ASan+UBSan), run every test
# and also: make python (the Python package, built in place in python/defo/),
# make test-clients (defo's files in the real Blender and ParaView), make bench,
# make install [PREFIX=...], make fuzz, make format, make format-check, make clean.

JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
BUILD     ?= build
ASAN      ?= build-asan
FUZZ      ?= build-fuzz
PREFIX    ?= /usr/local
FUZZ_SECONDS ?= 60
CMAKE_Q   = cmake -S . -Wno-dev --log-level=WARNING

.PHONY: all deps deps-test build build-asan demo test test-opt test-asan bench install fuzz \
        format format-check clean python test-clients

all: build

deps:
	@sh scripts/deps.sh build

deps-test:
	@sh scripts/deps.sh test

build: deps
	@$(CMAKE_Q) -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DDEFO_WERROR=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory -s

build-asan: deps
	@$(CMAKE_Q) -B $(ASAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEFO_WERROR=ON -DDEFO_SANITIZE=ON \
	  -DDEFO_BUILD_BENCH=ON >/dev/null
	@cmake --build $(ASAN) -j $(JOBS) -- --no-print-directory -s

demo: build
	@$(BUILD)/defo run -o defo-demo

# The optimised suite first, then the sanitizer suite: the last line printed is ctest's summary.
test: deps-test format-check
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest -j $(JOBS) --output-on-failure --timeout 900
	@$(MAKE) --no-print-directory build-asan
	@cd $(ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest -j $(JOBS) --output-on-failure --timeout 1200

test-opt: deps-test build
	@cd $(BUILD) && ctest -j $(JOBS) --output-on-failure --timeout 900

# The Python package built in place: the extension module beside python/defo/*.py, so
# `PYTHONPATH=python python3 -c 'import defo'` works (python/README.md; `pip install
# ./python` installs it instead).
python:
	@sh scripts/deps.sh python
	@$(CMAKE_Q) -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DDEFO_WERROR=ON -DDEFO_PYTHON=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target defo_python -- --no-print-directory -s
	@cp $(BUILD)/python/defo/_defo*.so python/defo/
	@echo "defo: python/defo/$$(basename $(BUILD)/python/defo/_defo*.so) built (PYTHONPATH=$(CURDIR)/python)"

# defo's outputs in the real Blender and ParaView (Debian's blender, paraview and
# python3-paraview, installed when missing): tests/clients/run.sh.
test-clients:
	@sh scripts/deps.sh clients
	@$(MAKE) --no-print-directory build
	@bash tests/clients/run.sh $(BUILD)

bench: build
	@mkdir -p bench/out
	@for b in $(BUILD)/bench_*; do \
	  n=$$(basename $$b); echo "defo: running $$n"; \
	  $$b > bench/out/$$n.json || exit 1; echo "  -> bench/out/$$n.json"; done

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

fuzz:
	@sh scripts/deps.sh fuzz
	@CC=clang $(CMAKE_Q) -B $(FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEFO_FUZZ=ON -DDEFO_OPENMP=OFF \
	  -DDEFO_BUILD_TESTS=OFF -DDEFO_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(FUZZ) -j $(JOBS) -- --no-print-directory -s
	@sh scripts/run-fuzzers.sh $(FUZZ) $(FUZZ_SECONDS)

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)

format:
	@clang-format -i $(FORMAT_FILES)

format-check:
	@command -v clang-format >/dev/null || sh scripts/deps.sh build
	@clang-format --dry-run --Werror $(FORMAT_FILES) || \
	  { echo "format-check: run 'make format'"; exit 1; }

clean:
	@rm -rf $(BUILD) $(ASAN) $(FUZZ) bench/out python/build python/defo/_defo*.so
