#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tier: slow
# The soak (scripts/soak.sh, `make soak`) cut to fit a minute: 2 sources x
# 2 builders x 2 sinks, a 2 s rate measurement, then 36 s at a tenth of it with
# a report every 12 s; resources flat and the accounting exact at the end.
cd "$(dirname "$0")/../.." || exit 1
SOAK_TAG=s60 SOAK_SECONDS=${SOAK_SECONDS:-36} SOAK_INTERVAL=${SOAK_INTERVAL:-12} SOAK_MEASURE=2 \
	exec bash scripts/soak.sh "${1:-build}"
