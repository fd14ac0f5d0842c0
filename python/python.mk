# SPDX-License-Identifier: LGPL-2.1-or-later
# The Python package xevb (python/xevb, docs/consumer-python.md), included by
# the Makefile. One extension module, _xevb, with libxevb's objects linked
# in: the package is self-contained (one .so beside its .py files, no
# libxevb.so.1 to find at run time, no rpath), so the build tree's copy,
# an installed copy and a copy in a virtualenv all work the same.
#
#   make python               build/python/xevb: use with PYTHONPATH=build/python
#   make install-python       into Debian's dist-packages for PREFIX (or PYTHONDIR)
#   make uninstall-python
#
# make install and uninstall do it too, as they install the library, when
# this interpreter has its headers (INSTALL_PYTHON=0: not; it follows
# INSTALL_LIB). The Debian package python3-xevb is this install (debian/).
#
# The interpreter is Debian's (the one scripts/install-deps.sh installs
# python3-numpy and python3-pytest for) unless PYTHON names another; the
# module is built for its headers and ABI.

PYTHON   ?= $(firstword $(wildcard /usr/bin/python3) python3)
PY_CONF  := $(shell $(PYTHON) -c 'import sys, sysconfig as s; \
	print(s.get_paths()["include"], s.get_config_var("EXT_SUFFIX"), "%d.%d" % sys.version_info[:2])' 2>/dev/null)
PY_INC   := $(word 1,$(PY_CONF))
PY_EXT   := $(word 2,$(PY_CONF))
PY_VER   := $(word 3,$(PY_CONF))
PY_OUT   := $(OUT)/python
PY_MOD   := $(PY_OUT)/xevb/_xevb$(PY_EXT)
PY_SRCS  := $(wildcard python/src/*.c)
PY_OBJS  := $(patsubst python/src/%.c,$(PY_OUT)/src/%.o,$(PY_SRCS))
PY_FILES := $(patsubst python/xevb/%,$(PY_OUT)/xevb/%,$(wildcard python/xevb/*.py))
PY_BENCH := $(PY_OUT)/bench/c_reader
PY_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC -fvisibility=hidden -I$(PY_INC) -Ilib/include \
	-MMD -MP
# Debian's python3 looks in /usr/lib/python3/dist-packages (PREFIX /usr) and
# /usr/local/lib/python3.X/dist-packages (PREFIX /usr/local, the default).
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PY_VER)/dist-packages)

ifneq ($(wildcard $(PY_INC)/Python.h),)
PY_PKG     := $(PY_MOD) $(PY_FILES)
PY_TARGETS := $(PY_PKG) $(PY_BENCH)
else
PY_PKG     := python-missing
PY_TARGETS := python-missing
endif

.PHONY: python python-missing install-python uninstall-python
python: $(PY_TARGETS)
all: python

INSTALL_PYTHON ?= $(INSTALL_LIB)
ifeq ($(INSTALL_PYTHON)$(filter python-missing,$(PY_PKG)),1)
install: install-python
uninstall: uninstall-python
endif

python-missing:
	@echo "  SKIP     python: no Python.h for $(PYTHON) (apt-get install python3-dev, or make PYTHON=...)"

$(PY_OUT)/src/%.o: python/src/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PY_CFLAGS) -c $< -o $@

# Only PyInit__xevb leaves the module: libxevb's symbols inside stay its own.
$(PY_MOD): $(PY_OBJS) $(PUB_OBJS) python/src/module.map
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,--version-script=python/src/module.map -o $@ $(PY_OBJS) \
		$(PUB_OBJS) $(PUB_LIBS)

$(PY_OUT)/xevb/%.py: python/xevb/%.py
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@

# The C reader the Python one is measured against (docs/consumer-python.md).
$(PY_BENCH): python/bench/c_reader.c $(PUB_SO) $(PUB_LINKS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Ilib/include $< -L$(OUT) -lxevb \
		-Wl,-rpath,'$$ORIGIN/../..' -o $@

install-python: $(PY_PKG)
	$(if $(filter python-missing,$(PY_PKG)),$(error install-python: no Python.h for $(PYTHON): \
		apt-get install python3-dev))
	$(call msg,INSTALL,$(DESTDIR)$(PYTHONDIR)/xevb)
	$(Q)$(INSTALL) -d $(DESTDIR)$(PYTHONDIR)/xevb
	$(Q)$(INSTALL) -m 0644 $(PY_FILES) $(DESTDIR)$(PYTHONDIR)/xevb/
	$(Q)$(INSTALL) -m 0644 $(PY_MOD) $(DESTDIR)$(PYTHONDIR)/xevb/

uninstall-python:
	$(call msg,UNINSTALL,$(DESTDIR)$(PYTHONDIR)/xevb)
	$(Q)rm -f $(addprefix $(DESTDIR)$(PYTHONDIR)/xevb/,$(notdir $(PY_FILES) $(PY_MOD)))
	$(Q)rm -rf $(DESTDIR)$(PYTHONDIR)/xevb/__pycache__
	$(Q)rmdir $(DESTDIR)$(PYTHONDIR)/xevb 2>/dev/null || true
