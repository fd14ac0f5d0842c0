# SPDX-License-Identifier: GPL-2.0-only
# xevb build. Everything lands in $(OUT); `make V=1` shows full commands.

OUT      ?= build
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
MULTIARCH := $(shell $(CC) -dumpmachine)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

PKGS     := libbpf libxdp libsodium libsystemd inih
CFLAGS   ?= -O2 -g
# include/ holds what BPF programs and user space share; user/ the folders of
# user space (user/LAYERS), included as "folder/name.h": a BPF program that
# includes one fails to build. lib/include/: libxevb's public header (<xevb/xevb.h>);
# lib/shared/: the library's internals the tools use too ("xl_name.h").
XCFLAGS  := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Iuser -Ilib/include -Ilib/shared -I$(OUT) \
	-MMD -MP
LDLIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lxdp -lbpf -lsodium -lsystemd -linih) -lelf -lz -lpthread -lm
BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-Iinclude -Ibpf -I/usr/include/$(MULTIARCH) -MMD -MP

# bpf/: the programs xevb embeds (steering, shaping, the source emulator's
# generator); bpf/testbed/: the switch and the helpers of the test bed and the
# benchmarks. Their objects all land in $(OUT)/bpf.
BPF_SRCS  := $(wildcard bpf/*.bpf.c bpf/testbed/*.bpf.c)
BPF_OBJS  := $(patsubst %.bpf.c,$(OUT)/bpf/%.bpf.o,$(notdir $(BPF_SRCS)))
SKELS     := $(patsubst %.bpf.c,$(OUT)/%.skel.h,$(notdir $(BPF_SRCS)))
# Every layer of user/ but the commands goes into one archive; the commands link it.
LIB_SRCS  := $(filter-out user/cmd/%,$(wildcard user/*/*.c))
LIB_OBJS  := $(patsubst %.c,$(OUT)/%.o,$(LIB_SRCS))
CMD_SRCS  := $(wildcard user/cmd/*.c)
CMD_OBJS  := $(patsubst %.c,$(OUT)/%.o,$(CMD_SRCS))
TCOM_SRCS := $(wildcard tests/common/*.c)
TCOM_OBJS := $(patsubst %.c,$(OUT)/%.o,$(TCOM_SRCS))
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_OBJS := $(patsubst %.c,$(OUT)/%.o,$(UNIT_SRCS))
BPFT_SRCS := $(wildcard tests/bpf/*.c)
BPFT_OBJS := $(patsubst %.c,$(OUT)/%.o,$(BPFT_SRCS))
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(OUT)/bench/%,$(BENCH_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(FUZZ_SRCS))

LIBXEVB   := $(OUT)/xevb-core.a
# libxevb, the farm nodes' library (lib/, LGPL-2.1-or-later; docs/consumer.md):
# a shared library with its own flags. It includes nothing of user/ (GPL) and
# links only libc and libsodium.
PUB_SRCS    := $(wildcard lib/*.c)
PUB_OBJS    := $(patsubst lib/%.c,$(OUT)/lib/%.o,$(PUB_SRCS))
# The library's objects the tools link too (lib/shared/ declares them): one
# implementation of each. They export nothing (hidden xl_ symbols only), so
# a program that links them and libxevb.so (test_unit) keeps the library's
# public functions from the library. LGPL code in GPL tools, never the reverse.
PUB_SHARED  := $(patsubst %,$(OUT)/lib/%.o,crc32c ev_decode trusted fmt ctl_proto ctl_auth ctl_sock)
# The same objects as an archive: `xevb sink` is a farm node on libxevb, and
# xevb links it statically (one binary, no new runtime dependency).
PUB_AR      := $(OUT)/libxevb.a
PUB_VERSION := $(shell sed -n 's/^\#define XEVB_LIB_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' lib/include/xevb/xevb.h | paste -sd.)
PUB_MAJOR   := $(firstword $(subst ., ,$(PUB_VERSION)))
PUB_SO      := $(OUT)/libxevb.so.$(PUB_VERSION)
PUB_SONAME  := libxevb.so.$(PUB_MAJOR)
PUB_LINKS   := $(OUT)/$(PUB_SONAME) $(OUT)/libxevb.so
PUB_PC      := $(OUT)/xevb.pc
PUB_LIBS    := $(shell pkg-config --libs libsodium 2>/dev/null || echo -lsodium)
PUB_CFLAGS  := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC -fvisibility=hidden -Ilib/include -Ilib -MMD -MP
PUB_HEADERS := $(wildcard lib/include/xevb/*.h)
XEVB      := $(OUT)/xevb
TEST_UNIT := $(OUT)/tests/test_unit
TEST_BPF  := $(OUT)/tests/test_bpf

MAN_STAMP := $(OUT)/man/.stamp
COMPLETION := $(OUT)/completion/xevb

# make install: PREFIX and DESTDIR as usual; each directory can be set alone.
PREFIX         ?= /usr/local
BINDIR         ?= $(PREFIX)/bin
LIBDIR         ?= $(PREFIX)/lib/$(MULTIARCH)
INCLUDEDIR     ?= $(PREFIX)/include
PKGCONFIGDIR   ?= $(LIBDIR)/pkgconfig
DATADIR        ?= $(PREFIX)/share
MANDIR         ?= $(DATADIR)/man
DOCDIR         ?= $(DATADIR)/doc/xevb
TRACEDIR       ?= $(DATADIR)/xevb/trace
# The dashboard and the alerting rules: point Grafana's provisioning and
# Prometheus's rule_files here (docs/deploy.md).
GRAFANADIR     ?= $(DATADIR)/xevb/grafana
PROMRULESDIR   ?= $(DATADIR)/xevb/prometheus
SYSCONFDIR     ?= /etc
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
# Wireshark reads Lua plugins from here when PREFIX is /usr (tshark -G folders).
WIRESHARK_PLUGINDIR ?= $(PREFIX)/lib/$(MULTIARCH)/wireshark/plugins
INSTALL        ?= install

TRACE_FILES := scripts/trace/run.sh scripts/trace/fold-stacks.py $(wildcard scripts/trace/*.bt)
SYSTEMD_UNITS    := $(wildcard dist/systemd/*.in)
EXAMPLES    := $(wildcard dist/examples/*)
DASHBOARDS  := dist/grafana/xevb.json
PROMRULES   := dist/prometheus/xevb-alerts.yml
# Paths the units and examples name, filled in at install time.
SUBST := sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g'

.PHONY: demo all deps deps-deb test check test-quick test-unit test-bpf test-integration fuzz fuzz-run bench soak \
	clean man install uninstall deb format format-check
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BPF_OBJS) $(SKELS) $(XEVB) libxevb $(TEST_UNIT) $(TEST_BPF) $(BENCH_BINS) $(MAN_STAMP) $(COMPLETION)

deps:
	$(Q)bash scripts/install-deps.sh

# The README's "run the main job" command.
demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash scripts/demo.sh $(OUT)

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/bpf/%.bpf.o: bpf/testbed/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@

# Anything user-space may include a skeleton: build them first.
$(LIB_OBJS) $(CMD_OBJS) $(TCOM_OBJS) $(UNIT_OBJS) $(BPFT_OBJS): | $(SKELS)

$(OUT)/%.o: %.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(XCFLAGS) -c $< -o $@

$(LIBXEVB): $(LIB_OBJS) $(PUB_SHARED)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUT)/lib/%.o: lib/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PUB_CFLAGS) -c $< -o $@

# The soname carries the major version: an incompatible change bumps it.
$(PUB_SO): $(PUB_OBJS) lib/libxevb.map
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(PUB_SONAME) -Wl,--version-script=lib/libxevb.map \
		-Wl,--no-undefined -o $@ $(PUB_OBJS) $(PUB_LIBS)

$(PUB_AR): $(PUB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(PUB_LINKS): $(PUB_SO)
	$(Q)ln -sf $(notdir $(PUB_SO)) $@

# The build tree's xevb.pc names the installed paths; make install writes it
# again with the paths of that command line.
PC_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	-e 's|@VERSION@|$(PUB_VERSION)|g' -e 's|@LIBS_PRIVATE@|$(PUB_LIBS)|g'
$(PUB_PC): lib/xevb.pc.in lib/include/xevb/xevb.h
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(PC_SUBST) $< >$@

# A farm node on libxevb (docs/consumer.md), built as a consumer builds it:
# the public header only, linked to the shared library.
PUB_EXAMPLE := $(OUT)/lib/examples/xevb-farm-example
$(PUB_EXAMPLE): lib/examples/farm_node.c $(OUT)/$(PUB_SONAME) $(PUB_HEADERS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -Ilib/include $< $(OUT)/$(PUB_SONAME) \
		-Wl,-rpath,'$$ORIGIN/../..' -o $@

# The minimal HLT farm node README and docs/consumer.md show (examples/consumer/),
# built the same way; test_consumer_examples runs it under a DFM.
HLT_EXAMPLE := $(OUT)/examples/hlt_farm_node
$(HLT_EXAMPLE): examples/consumer/hlt_farm_node.c $(OUT)/$(PUB_SONAME) $(PUB_HEADERS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -Ilib/include $< $(OUT)/$(PUB_SONAME) \
		-Wl,-rpath,'$$ORIGIN/..' -o $@

.PHONY: libxevb
libxevb: $(PUB_SO) $(PUB_LINKS) $(PUB_PC) $(PUB_EXAMPLE) $(HLT_EXAMPLE)

# libxevb's objects are linked in whole (`xevb build --output` writes run
# files with its writer, `xevb dump` and `xevb sink` read and receive through
# it): the tool needs no libxevb.so at run time.
$(XEVB): $(CMD_OBJS) $(LIBXEVB) $(PUB_AR)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# dfm_opts, shape_opts, doctor_opts, stats_opts, source_opts, sink_opts, dump_opts: the option tables of
# dfm, shape, doctor, stats, source, sink and dump (test_cli_cmds, test_cli_src_sink, test_dump);
# dump_fmt: `xevb dump`'s filters and output (test_dump), on libxevb's shared library here
CMD_TABLE_OBJS := $(patsubst %,$(OUT)/user/cmd/%_opts.o,dfm shape doctor stats source sink dump) \
	$(OUT)/user/cmd/dump_fmt.o

# stats_view: `xevb stats --all`, one of the outputs test_counters checks against the counter table;
# build_opts: `xevb build`'s option table, test_cli_table's subject
# test_lib_*: libxevb's API, linked as a consumer links it (the shared library,
# found beside the build tree through the rpath).
$(TEST_UNIT): $(UNIT_OBJS) $(TCOM_OBJS) $(OUT)/user/cmd/build_opts.o $(CMD_TABLE_OBJS) $(LIBXEVB) \
		$(OUT)/$(PUB_SONAME)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -Wl,-rpath,'$$ORIGIN/..' -lcriterion $(LDLIBS) -o $@

$(TEST_BPF): $(BPFT_OBJS) $(TCOM_OBJS) $(LIBXEVB)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -lcriterion $(LDLIBS) -o $@

# The bench feeder's io_uring sends, where liburing is installed (install-deps.sh).
URING_LIBS := $(shell pkg-config --libs liburing 2>/dev/null)
BENCH_XFLAGS := $(if $(URING_LIBS),-DHAVE_LIBURING)

$(OUT)/bench/%: bench/%.c $(LIBXEVB) | $(SKELS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(XCFLAGS) $(BENCH_XFLAGS) -MF $@.d $< $(LIBXEVB) $(LDLIBS) $(URING_LIBS) -o $@

# libFuzzer harnesses: the library is rebuilt once with sanitizers (and
# coverage, fuzzer-no-link) into an archive each harness links; lib/'s
# sources go in too, with its own include path.
FUZZ_BASE := -O1 -g -fno-sanitize-recover=all -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Iuser -Ilib/include \
	-Ilib/shared -I$(OUT)
FUZZ_CFLAGS := -fsanitize=fuzzer,address,undefined $(FUZZ_BASE)
FUZZ_OBJ_CFLAGS := -fsanitize=fuzzer-no-link,address,undefined $(FUZZ_BASE) -Ilib/include -Ilib -MMD -MP
FUZZ_OBJS := $(patsubst %.c,$(OUT)/fuzz/obj/%.o,$(LIB_SRCS) $(PUB_SRCS))
FUZZ_CORE := $(OUT)/fuzz/fuzz-core.a
$(OUT)/fuzz/obj/%.o: %.c | $(SKELS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_OBJ_CFLAGS) -c $< -o $@
$(FUZZ_CORE): $(FUZZ_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^
# libxevb's harness includes the library's internal headers.
FUZZ_INC_fuzz_lib := -Ilib/include -Ilib
$(OUT)/fuzz/%: tests/fuzz/%.c $(FUZZ_CORE) $(wildcard tests/fuzz/*.h) | $(SKELS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_INC_$*) -MMD -MP -MF $@.d $< $(FUZZ_CORE) $(LDLIBS) -o $@

fuzz: $(FUZZ_BINS)

# Bounded fuzzing run (FUZZ_SECONDS each), seeded from the wire-format vectors.
FUZZ_SECONDS ?= 60
fuzz-run: fuzz
	$(Q)bash scripts/fuzz-run.sh $(OUT) $(FUZZ_SECONDS)

# T='dfm_* e2e_xdp' (or TESTS=) runs a subset: suite names (unit bpf fuzz
# integration style), Criterion filters ('builder/*') and integration script
# names; TEST_JOBS=1 runs the scripts one at a time (scripts/run-tests.sh).
RUN_TESTS = $(if $(T),TESTS='$(T)') bash scripts/run-tests.sh $(OUT)

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(RUN_TESTS)

# The edit-test loop (under 3 minutes): unit, BPF, style and the
# integration scripts tagged "# tier: check". test-quick: its old name.
check test-quick: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)TIER=check $(RUN_TESTS)

# Only the integration scripts (T='dfm_* e2e_xdp' picks some).
test-integration: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)SUITES=integration $(RUN_TESTS)

# The house style (.clang-format) on the C sources: rewrite, or list what
# is not formatted and fail (scripts/format.sh).
format:
	$(Q)bash scripts/format.sh fix

format-check:
	$(Q)bash scripts/format.sh check

test-unit: $(TEST_UNIT)
	$(Q)$(TEST_UNIT)

test-bpf: $(TEST_BPF)
	$(Q)$(TEST_BPF)

# The steering program's load budget alone (a step of make check):
# instructions the verifier processes, CPU its load takes, every variant.
.PHONY: verifier-budget
verifier-budget: $(OUT)/bench/steer_load_cost
	$(Q)bash scripts/verifier-budget.sh $(OUT)

bench: all
	$(Q)bash scripts/bench/run.sh $(OUT)

# Plots and docs/benchmarks.md from the JSON that `make bench` left in $(OUT)/bench.
.PHONY: bench-report
bench-report:
	$(Q)/usr/bin/python3 scripts/bench/plots.py $(OUT)/bench
	$(Q)/usr/bin/python3 scripts/bench/report.py $(OUT)/bench docs/benchmarks.md

# Long run (issue 9): SOAK_SECONDS (default 600), knobs in scripts/soak.sh.
soak: all
	$(Q)bash scripts/soak.sh $(OUT)

# One page per command, from the command's own option table (xevb help-man).
man: $(MAN_STAMP)
$(MAN_STAMP): $(XEVB)
	$(call msg,MAN,$(@D))
	$(Q)rm -rf $(@D) && mkdir -p $(@D)
	$(Q)set -e; $(XEVB) help-man >$(@D)/xevb.1; \
	for c in $$($(XEVB) help-man --list); do $(XEVB) help-man $$c >$(@D)/xevb-$$c.1; done
	$(Q)touch $@

# The bash completion, from the same option tables (xevb help-completion).
$(COMPLETION): $(XEVB)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D) && $(XEVB) help-completion >$@.tmp && bash -n $@.tmp && mv $@.tmp $@

# The builder's BPF programs are embedded (skeletons): no object to install.
# The objects in $(OUT)/bpf that are not (switch, pass, drop, count) serve the
# test bed only.
# libxevb and the Python package go with them (INSTALL_LIB=0: the tools
# only); debian/rules installs all into one tree and splits it in packages.
INSTALL_LIB ?= 1
install: $(XEVB) $(MAN_STAMP) $(COMPLETION) $(if $(filter 1,$(INSTALL_LIB)),install-lib)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(TRACEDIR) \
		$(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(WIRESHARK_PLUGINDIR) \
		$(DESTDIR)$(GRAFANADIR) $(DESTDIR)$(PROMRULESDIR) $(DESTDIR)$(DATADIR)/bash-completion/completions
	$(Q)$(INSTALL) -m 0755 $(XEVB) $(DESTDIR)$(BINDIR)/xevb
	$(Q)$(INSTALL) -m 0644 $(COMPLETION) $(DESTDIR)$(DATADIR)/bash-completion/completions/xevb
	$(Q)$(INSTALL) -m 0644 $(DASHBOARDS) $(DESTDIR)$(GRAFANADIR)/
	$(Q)$(INSTALL) -m 0644 $(PROMRULES) $(DESTDIR)$(PROMRULESDIR)/
	$(Q)$(INSTALL) -m 0644 $(OUT)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	$(Q)$(INSTALL) -m 0755 $(TRACE_FILES) $(DESTDIR)$(TRACEDIR)/
	$(Q)$(INSTALL) -m 0644 scripts/wireshark/xevb.lua $(DESTDIR)$(WIRESHARK_PLUGINDIR)/xevb.lua
	$(Q)set -e; for f in $(EXAMPLES); do \
		$(SUBST) $$f >$(DESTDIR)$(DOCDIR)/examples/$$(basename $$f); \
		chmod 0644 $(DESTDIR)$(DOCDIR)/examples/$$(basename $$f); done
	$(Q)set -e; for f in $(SYSTEMD_UNITS); do \
		u=$(DESTDIR)$(SYSTEMDUNITDIR)/$$(basename $$f .in); \
		$(SUBST) $$f >$$u; chmod 0644 $$u; done

# libxevb alone: the shared library with its soname links, the headers, the
# pkg-config file (LIBDIR, INCLUDEDIR, PKGCONFIGDIR; run ldconfig after an
# install outside DESTDIR).
.PHONY: install-lib uninstall-lib
install-lib: libxevb
	$(call msg,INSTALL,$(DESTDIR)$(LIBDIR)/$(notdir $(PUB_SO)))
	$(Q)$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/xevb $(DESTDIR)$(PKGCONFIGDIR)
	$(Q)$(INSTALL) -m 0644 $(PUB_SO) $(DESTDIR)$(LIBDIR)/
	$(Q)ln -sf $(notdir $(PUB_SO)) $(DESTDIR)$(LIBDIR)/$(PUB_SONAME)
	$(Q)ln -sf $(PUB_SONAME) $(DESTDIR)$(LIBDIR)/libxevb.so
	$(Q)$(INSTALL) -m 0644 $(PUB_HEADERS) $(DESTDIR)$(INCLUDEDIR)/xevb/
	$(Q)$(PC_SUBST) lib/xevb.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/xevb.pc && chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/xevb.pc

uninstall-lib:
	$(Q)rm -f $(DESTDIR)$(LIBDIR)/$(notdir $(PUB_SO)) $(DESTDIR)$(LIBDIR)/$(PUB_SONAME) $(DESTDIR)$(LIBDIR)/libxevb.so \
		$(addprefix $(DESTDIR)$(INCLUDEDIR)/xevb/,$(notdir $(PUB_HEADERS))) $(DESTDIR)$(PKGCONFIGDIR)/xevb.pc
	$(Q)rmdir $(DESTDIR)$(INCLUDEDIR)/xevb 2>/dev/null || true

uninstall: uninstall-lib
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(DESTDIR)$(BINDIR)/xevb $(DESTDIR)$(DATADIR)/bash-completion/completions/xevb \
		$(DESTDIR)$(MANDIR)/man1/xevb.1 $(DESTDIR)$(MANDIR)/man1/xevb-*.1 \
		$(DESTDIR)$(WIRESHARK_PLUGINDIR)/xevb.lua \
		$(addprefix $(DESTDIR)$(TRACEDIR)/,$(notdir $(TRACE_FILES))) \
		$(addprefix $(DESTDIR)$(GRAFANADIR)/,$(notdir $(DASHBOARDS))) \
		$(addprefix $(DESTDIR)$(PROMRULESDIR)/,$(notdir $(PROMRULES))) \
		$(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(EXAMPLES))) \
		$(addprefix $(DESTDIR)$(SYSTEMDUNITDIR)/,$(basename $(notdir $(SYSTEMD_UNITS))))
	$(Q)rmdir $(DESTDIR)$(TRACEDIR) $(DESTDIR)$(GRAFANADIR) $(DESTDIR)$(PROMRULESDIR) $(DESTDIR)$(DATADIR)/xevb \
		$(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true

deps-deb:
	$(Q)bash scripts/install-deps.sh --deb

# The Debian packages (debian/, debhelper) built from a copy of the tree in
# $(OUT)/deb: xevb, libxevb1, libxevb-dev and python3-xevb land in $(OUT),
# lintian's verdict is printed.
deb: deps-deb
	$(Q)bash scripts/make-deb.sh $(OUT)

clean:
	$(call msg,CLEAN,$(OUT))
	$(Q)rm -rf $(OUT)

# The Python package (make python, install-python): its own file.
include python/python.mk

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
