# ggprof: `make` builds build/bin/ggprof and build/lib/libggprof.so; `make test` runs every test;
# `make demo` goes from a fresh machine to a printed report of a profiled llama-completion run.

CC      ?= cc
CFLAGS  ?= -O2 -g
# snprintf truncating a path or a name is the intended, checked behaviour: gcc 12 warns on every such call.
WARN    := -std=c11 -Wall -Wextra -Werror -Wno-format-truncation -D_GNU_SOURCE
BUILD   ?= build
INC     := -Ischema -Iengine -Iengine/include -Ikernels/cpu -Icollector -Ianalyzer

SCHEMA_ENGINE_SRC := schema/ring.c schema/wire.c schema/v3_format.c
ENGINE_SRC := engine/engine.c engine/interpose.c engine/api.c kernels/cpu/cpu_ticks.c analyzer/summary.c $(SCHEMA_ENGINE_SRC)
GGPROF_SRC := $(wildcard collector/*.c) $(wildcard analyzer/*.c) $(SCHEMA_ENGINE_SRC) schema/trace_db.c

LIB     := $(BUILD)/lib/libggprof.so
BIN     := $(BUILD)/bin/ggprof

ENGINE_OBJ := $(patsubst %.c,$(BUILD)/obj/pic/%.o,$(ENGINE_SRC))
GGPROF_OBJ := $(patsubst %.c,$(BUILD)/obj/bin/%.o,$(GGPROF_SRC))

.PHONY: all test unit demo clean
all: $(LIB) $(BIN)

# The engine is injected into programs we did not build: hidden visibility keeps everything but the wrappers
# and the public API out of their symbol namespace, and it never links ggml (FINDINGS: a program whose loader
# cannot find libggml first would not start at all).
$(BUILD)/obj/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP $(INC) -c $< -o $@

$(BUILD)/obj/bin/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -MMD -MP $(INC) -c $< -o $@

$(LIB): $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ -ldl -lpthread -Wl,-z,defs -lc

LIBS    := -lsqlite3 -lz -lcjson -lm -lpthread
$(BIN): $(GGPROF_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LIBS)

# Unit tests link the ggprof objects (all but main) as an archive, so each takes only what it uses.
CORE    := $(BUILD)/libggprof-core.a
UNIT    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
$(CORE): $(filter-out $(BUILD)/obj/bin/collector/ggprof.o,$(GGPROF_OBJ))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/%: tests/unit/%.c $(CORE)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(INC) -Itests/unit -o $@ $< $(CORE) $(LIBS)

unit: $(UNIT)

# The two commands of the README: each installs what it needs first (tests/deps.sh, tests/fixture.sh).
test:
	@bash tests/deps.sh
	@$(MAKE) --no-print-directory all unit
	@bash tests/run.sh

demo:
	@bash tests/deps.sh
	@$(MAKE) --no-print-directory all
	@bash tests/demo.sh

clean:
	rm -rf $(BUILD)

-include $(ENGINE_OBJ:.o=.d) $(GGPROF_OBJ:.o=.d)
