# chime build. `make` builds build/chime (optimised); `make run` installs what
# is missing, builds and serves; `make test` installs, builds the sanitizer
# flavour, the unit tests and the fuzzers, and runs every test.

CC      ?= cc
FUZZCC  ?= clang
PKGS    := libh2o-evloop jansson sqlite3 libpq libsodium libcurl libical hiredis icu-uc icu-i18n libxml-2.0 zlib
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lwslay -lssl -lcrypto -lpthread -lm

WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
BASE    := -std=gnu11 -DH2O_USE_LIBUV=0 -Isrc $(WARN)
REL_CFLAGS := $(BASE) -O2 -g
SAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS := $(BASE) -O1 -g $(SAN_FLAGS)
FUZZ_CFLAGS := $(BASE) -O1 -g -fsanitize=fuzzer-no-link,address,undefined -DCHIME_FUZZ

# Every .c under src/ except main.c is library code shared by the binary,
# the unit tests and the fuzzers.
LIB_SRC := $(sort $(shell find src -name '*.c' ! -path src/main.c))
REL_OBJ := $(LIB_SRC:%.c=build/rel/%.o)
SAN_OBJ := $(LIB_SRC:%.c=build/san/%.o)
FUZZ_OBJ := $(LIB_SRC:%.c=build/fuzz/obj/%.o)

UNIT_SRC := $(sort $(wildcard tests/unit/test-*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=build/san/tests/%)
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz-*.c))
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=build/fuzz/%)

.PHONY: all run test test-build deps deps-test fuzz clean bench
# Keep the fuzzers' objects: make would delete them as intermediates and
# rebuild every one at the next `make test`.
.SECONDARY:
all: build/chime

deps:
	@scripts/deps.sh

deps-test:
	@scripts/deps.sh test

build/chime: $(REL_OBJ) build/rel/src/main.o
	$(CC) $(REL_CFLAGS) -o $@ $^ $(PKG_LIBS)

build/san/chime: $(SAN_OBJ) build/san/src/main.o
	$(CC) $(SAN_CFLAGS) -o $@ $^ $(PKG_LIBS)

build/rel/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

build/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZCC) $(FUZZ_CFLAGS) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

build/san/tests/%: tests/unit/%.c $(SAN_OBJ) $(wildcard tests/unit/*.h) $(wildcard tests/faults/*.c)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(PKG_CFLAGS) -Itests/unit -o $@ $< $(SAN_OBJ) $(PKG_LIBS) -lcmocka

build/fuzz/%: fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZCC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -o $@ $< $(FUZZ_OBJ) $(PKG_LIBS)

fuzz: $(FUZZ_BIN)

# Benchmark helpers (bench/*/run.sh build what they need).
build/bench/receiver: bench/reminders/receiver.c
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) $(PKG_CFLAGS) -o $@ $< $(PKG_LIBS)

build/bench/bare-h2o: bench/http/bare.c
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) $(PKG_CFLAGS) -o $@ $< $(PKG_LIBS)

build/bench/chatload: bench/chat/chatload.c
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -o $@ $<

build/bench/chatwriter: bench/chat/writer.c $(REL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) $(PKG_CFLAGS) -o $@ $^ $(PKG_LIBS)

build/bench/walwrite: bench/store/walwrite.c build/rel/src/store/store_sqlite_vfs.o
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -o $@ $^ -lsqlite3 -lpthread

run: deps
	@$(MAKE) --no-print-directory -j$$(nproc) build/chime
	@mkdir -p var
	./build/chime serve $(ARGS)

test-build: build/chime build/san/chime $(UNIT_BIN) $(FUZZ_BIN) build/tests/libfailsync.so

# A disk whose syncs fail, preloaded by tests/api/test_disk_failure.py.
build/tests/libfailsync.so: tests/faults/failsync.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE) -O1 -g -shared -fPIC -o $@ $< -ldl

test: deps-test
	@$(MAKE) --no-print-directory -j$$(nproc) test-build
	@tests/run.sh

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
