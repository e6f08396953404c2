# hookd — build, test and run targets. See README.md.
#
# Every target that needs the system libraries calls `deps` first, which
# installs what is missing with apt (quiet when everything is present).

CC       ?= cc
BUILD    ?= build
PKGS     := libevent libevent_openssl hiredis jansson libpq openssl inih
WARN     := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes -Wshadow -Wformat=2
OPT      ?= -O2 -g
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE $(WARN) $(OPT) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)

# The layers and domains (scripts/layers.mk, docs/architecture.md). Each
# folder is compiled with the include paths of its own floor and those
# below; a domain also sees the public headers (build/pub/D/D.h) of the
# domains the table lets it use, and nothing else of theirs: an upward or
# sideways include fails to build.
include scripts/layers.mk
INC_base       := -iquote engine/base
INC_io         := $(INC_base) -iquote engine/io
INC_core       := $(INC_io) -iquote engine/core -iquote $(BUILD)
INC_schedulers := $(INC_core) -iquote schedulers
INC_shared     := $(INC_schedulers) -iquote engine/shared
$(foreach d,$(DOMAINS),$(eval INC_$(d) := $(INC_shared) -iquote engine/$(d) $(foreach u,$(DOMAIN_USES_$(d)),-iquote $(BUILD)/pub/$(u))))
INC_cli        := $(INC_shared) $(foreach d,$(DOMAINS),-iquote $(BUILD)/pub/$(d)) -iquote engine/cli
INC_ALL        := $(INC_shared) $(foreach d,$(DOMAINS),-iquote engine/$(d)) -iquote engine/cli
LAYERS         := $(FLOORS) $(addprefix engine/,$(DOMAINS)) $(TOP)
PUBS           := $(foreach d,$(DOMAINS),$(BUILD)/pub/$(d)/$(d).h)
LDLIBS_BASE = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
SAN      ?=
CFLAGS   += $(CFLAGS_BASE) $(SAN)
LDLIBS   += $(LDLIBS_BASE) $(SAN)

SRCS     := $(foreach d,$(LAYERS),$(wildcard $(d)/*.c))
LIB_SRCS := $(filter-out engine/cli/main.c,$(SRCS))
OBJS     := $(patsubst %.c,$(BUILD)/%.o,$(SRCS)) $(BUILD)/embedded.o
LIB_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS)) $(BUILD)/embedded.o
UNIT_SRCS:= $(wildcard tests/unit/test_*.c)
UNIT_BINS:= $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
EMBEDDED := $(sort $(wildcard sql/[0-9]*.sql) $(wildcard lua/*.lua) $(wildcard sql/queries/*.sql) $(wildcard assets/portal/*))
TOOLS    := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(wildcard tests/tools/*.c))

PYTEST   := /usr/bin/python3 -m pytest
PYTEST_ARGS ?=

.PHONY: all deps test unit integration asan valgrind bench bench-redis bench-peers bench-tenants bench-scale demo run format format-check check-layers clean services-stop fuzz chaos soak deb

all: deps $(BUILD)/hookd

deps:
	@scripts/deps.sh build

$(BUILD)/hookd: $(OBJS)
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/engine/base/%.o:   LAYER_INC = $(INC_base)
$(BUILD)/engine/io/%.o:     LAYER_INC = $(INC_io)
$(BUILD)/engine/core/%.o:   LAYER_INC = $(INC_core)
$(BUILD)/schedulers/%.o:    LAYER_INC = $(INC_schedulers)
$(BUILD)/engine/shared/%.o: LAYER_INC = $(INC_shared)
$(foreach d,$(DOMAINS),$(eval $(BUILD)/engine/$(d)/%.o: LAYER_INC = $(INC_$(d))))
$(BUILD)/engine/cli/%.o:    LAYER_INC = $(INC_cli)

$(BUILD)/%.o: %.c $(BUILD)/embedded.h $(BUILD)/queries.h | $(PUBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LAYER_INC) -MMD -MP -c -o $@ $<

# A domain's public header, alone in a folder of its own on the include
# path of the domains allowed to use it (kept: the objects depend on it).
.SECONDARY: $(PUBS)
$(BUILD)/pub/%.h: engine/%.h
	@mkdir -p $(dir $@)
	ln -sf $(abspath $<) $@

# sql/queries/*.sql also generate queries.h (docs/queries.md); the folder is a
# prerequisite so that removing or renaming a statement regenerates too.
$(BUILD)/embedded.c $(BUILD)/embedded.h $(BUILD)/queries.h &: $(EMBEDDED) $(wildcard sql/queries) scripts/embed.py
	@mkdir -p $(BUILD)
	/usr/bin/python3 scripts/embed.py --queries $(BUILD)/queries.h $(BUILD)/embedded $(EMBEDDED)

$(BUILD)/embedded.o: $(BUILD)/embedded.c $(BUILD)/queries.h
	$(CC) $(CFLAGS) -iquote $(BUILD) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_ALL) -o $@ $< $(LIB_OBJS) $(LDLIBS) -lcmocka

$(BUILD)/tools/%: tests/tools/%.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(INC_ALL) -o $@ $< $(LIB_OBJS) $(LDLIBS)

# Unit tests (cmocka), then integration tests (pytest against real Postgres,
# Redis and hookd processes that the harness starts and always stops).
test: check-layers deps $(BUILD)/hookd $(UNIT_BINS) $(TOOLS)
	@scripts/deps.sh test && scripts/node-deps.sh
	@scripts/run-unit.sh $(UNIT_BINS)
	HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) $(PYTEST) -q $(if $(filter tests/%,$(PYTEST_ARGS)),,tests/integration) $(PYTEST_ARGS)

unit: deps $(UNIT_BINS)
	@scripts/run-unit.sh $(UNIT_BINS)

integration: deps $(BUILD)/hookd $(TOOLS)
	@scripts/deps.sh test && scripts/node-deps.sh
	HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) $(PYTEST) -q $(if $(filter tests/%,$(PYTEST_ARGS)),,tests/integration) $(PYTEST_ARGS)

# The whole suite built with AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" test

# The long-running paths (a worker under load, SIGTERM) under valgrind.
valgrind: deps $(BUILD)/hookd $(TOOLS)
	@scripts/deps.sh test && scripts/node-deps.sh
	HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) HOOKD_VALGRIND=1 \
	  $(PYTEST) -q $(if $(filter tests/%,$(PYTEST_ARGS)),,tests/integration) -m valgrind $(PYTEST_ARGS)

# The benchmarks, then the processing figure with each Redis mode (= make bench-redis).
bench: deps $(BUILD)/hookd $(TOOLS)
	@scripts/deps.sh test && scripts/node-deps.sh
	HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 scripts/bench.py
	HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 scripts/bench_redis_modes.py

# The scenarios on tables with history next to empty ones, and the
# time `hookd migrate` takes to convert an installation (scripts/bench_scale.py;
# SCALE_INBOX, SCALE_ATTEMPTS, SCALE_EVENTS, SCALE_MIGRATE, SCALE_ONLY=scale|migrate).
bench-scale: deps $(BUILD)/hookd $(TOOLS)
	@scripts/deps.sh test
	HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 scripts/bench_scale.py

# The retry path, the peers (BullMQ, pg-boss) and the storm only: sections
# 5, 6 and 7 of make bench, the table printed, the last report left as it is.
bench-peers: deps $(BUILD)/hookd $(TOOLS)
	@scripts/deps.sh test && scripts/node-deps.sh
	BENCH_ONLY=retry,peers,storm HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 scripts/bench.py

# The fan-out to 10,000 tenants x 3 endpoints next to one endpoint (section 10 of
# make bench), the table printed, the last report left as it is;
# BENCH_TENANTS_BASELINE=BINARY also runs another hookd, alternately.
bench-tenants: deps $(BUILD)/hookd $(TOOLS)
	@scripts/deps.sh test
	BENCH_ONLY=tenants HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 scripts/bench.py

# The processing figure with each Redis mode, in one run (its section of build/bench/report.md).
bench-redis: deps $(BUILD)/hookd $(TOOLS)
	@scripts/deps.sh test
	HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 scripts/bench_redis_modes.py

# make demo REDIS=tls | cluster | cluster-tls: the same story on another Redis (scripts/demo.py)
REDIS ?= plain
demo: deps $(BUILD)/hookd
	@scripts/deps.sh test && scripts/node-deps.sh
	HOOKD_DEMO_REDIS=$(REDIS) HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_TOOLS=$(abspath $(BUILD)/tools) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 scripts/demo.py

# libFuzzer targets (clang), each for FUZZ_SECONDS; crashes fail the target.
FUZZ_SECONDS ?= 60
fuzz: deps $(BUILD)/hookd
	scripts/fuzz.sh $(FUZZ_SECONDS)

# The chaos suite: faults injected under load, then the ledger is checked;
# again with Redis behind Sentinel on TLS, and on a Redis Cluster (each with
# its own faults); then the hostile-client suite in its long form (three
# times the attackers); then a hostile tenant against two workers.
# (`make test` runs its short form.)
CHAOS_FAULTS ?= 24
CHAOS_SENTINEL_FAULTS ?= 8
CHAOS_CLUSTER_FAULTS ?= 8
CHAOS_SEED ?= 1
chaos: deps $(BUILD)/hookd
	@scripts/deps.sh test && scripts/node-deps.sh
	HOOKD_BIN=$(abspath $(BUILD)/hookd) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 tests/chaos/chaos.py --faults $(CHAOS_FAULTS) --seed $(CHAOS_SEED)
	HOOKD_BIN=$(abspath $(BUILD)/hookd) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 tests/chaos/chaos.py --redis sentinel-tls --faults $(CHAOS_SENTINEL_FAULTS) --seed $(CHAOS_SEED)
	HOOKD_BIN=$(abspath $(BUILD)/hookd) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 tests/chaos/chaos.py --redis cluster --faults $(CHAOS_CLUSTER_FAULTS) --seed $(CHAOS_SEED)
	HOOKD_BIN=$(abspath $(BUILD)/hookd) HOOKD_HOSTILE_SCALE=3 $(PYTEST) -q tests/integration/test_hostile.py
	HOOKD_BIN=$(abspath $(BUILD)/hookd) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 tests/chaos/hostile_tenant.py --seconds 30

# Steady load for SOAK_MINUTES (default 30), sampling RSS, fds, Postgres
# connections and Redis memory; SOAK_ARGS=--valgrind for a leak-checked run.
SOAK_MINUTES ?= 30
soak: deps $(BUILD)/hookd
	@scripts/deps.sh test && scripts/node-deps.sh
	HOOKD_BIN=$(abspath $(BUILD)/hookd) PYTHONPATH=$(CURDIR)/tests /usr/bin/python3 scripts/soak.py --minutes $(SOAK_MINUTES) $(SOAK_ARGS)

# A worker on throw-away services, in the foreground until Ctrl-C.
run: deps $(BUILD)/hookd
	@scripts/deps.sh test && scripts/node-deps.sh
	HOOKD_BIN=$(abspath $(BUILD)/hookd) scripts/run.sh

format:
	clang-format -i $(foreach d,$(LAYERS),$(wildcard $(d)/*.[ch])) tests/unit/*.c tests/tools/*.c tests/fuzz/*.[ch]

# The tree as .clang-format has it, and comments without history (no issue,
# session or helper words; the checker tests itself first). CI runs this.
format-check:
	scripts/format-check.sh -q
	scripts/comment-check.sh --self-test
	scripts/comment-check.sh

# sql/schema.sql: the schema the migrations make (scripts/schema.py, on a
# throw-away Postgres). `make schema` writes it; `make schema-check` fails
# with a diff when the checked-in file is stale.
.PHONY: schema schema-check
schema: deps $(BUILD)/hookd
	/usr/bin/python3 scripts/schema.py --hookd $(BUILD)/hookd sql/schema.sql
schema-check: deps $(BUILD)/hookd
	/usr/bin/python3 scripts/schema.py --hookd $(BUILD)/hookd --check sql/schema.sql

# No include or call cycle between modules, nothing used from a layer above
# or from a domain the table in scripts/layers.mk does not allow
# (docs/architecture.md); the checker tests itself first.
check-layers: deps $(BUILD)/hookd
	/usr/bin/python3 scripts/check_layers.py --self-test
	/usr/bin/python3 scripts/check_layers.py --objects $(BUILD)

# docs/reference/ (configuration.md, cli.md, hookd.1) from the tables the
# binary prints (`hookd config keys --json`, `hookd help --json`) through
# scripts/gen_reference.py. reference-check regenerates them into a temporary
# folder and fails, naming the stale file and the key or command, when a
# committed one differs (tests/integration/test_reference.py runs it too).
.PHONY: reference reference-check
reference: deps $(BUILD)/hookd
	/usr/bin/python3 scripts/gen_reference.py --bin $(BUILD)/hookd --out docs/reference

reference-check: deps $(BUILD)/hookd
	/usr/bin/python3 scripts/gen_reference.py --bin $(BUILD)/hookd --out docs/reference --check

# A Debian package of $(BUILD)/hookd: binary, conffile, hookd user, systemd
# units (packaging/build-deb.sh says why dpkg-deb; docs/guides/deploy/systemd.md).
deb: all
	@scripts/deps.sh deb
	packaging/build-deb.sh $(BUILD)

services-stop:
	scripts/services.sh stop .run

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
