# Thin wrapper around CMake and ctest.  `bash scripts/bootstrap <target>`
# installs the Debian packages first; these targets assume they are there.
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 30
CMAKE_FLAGS ?=

.PHONY: all build demo vending test test-normal test-gcstress test-asan test-fuzz bench clean

all: build

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build build -j $(JOBS)

# The main demo: the sales-tax calculator grown by a (scripted, offline)
# model in three requests, each action checked by the kernel; then a kill -9
# of the kernel and recovery (examples/sales-tax/).
demo: build
	JITI=build/jiti bash examples/sales-tax/demo.sh

# The second demo: a vending machine that repairs itself (automatic repair
# with the scripted model, examples/vending-machine/).
vending: build
	JITI=build/jiti bash examples/vending-machine/demo.sh

# The whole suite under the normal build, a GC-stress build (a collection at
# every allocation) and an AddressSanitizer+UBSan build, then a short run of
# each fuzz harness (libFuzzer; the long run is in docs/security.md).
test: test-normal test-gcstress test-asan test-fuzz

test-normal: build
	cd build && ctest --output-on-failure -j $(JOBS)

test-gcstress:
	cmake -S . -B build-gcstress -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJITI_GC_STRESS=ON >/dev/null
	cmake --build build-gcstress -j $(JOBS)
	cd build-gcstress && JITI_GC_STRESS=1 ctest --output-on-failure -j $(JOBS)

test-asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DJITI_SANITIZE=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

test-fuzz:
	bash tests/fuzz/run.sh --seconds $(FUZZ_SECONDS)

bench: build
	bash bench/run.sh

clean:
	rm -rf build build-gcstress build-asan build-fuzz
