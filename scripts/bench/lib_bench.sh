# SPDX-License-Identifier: GPL-2.0-only
# Shell helpers shared by the scripts/bench/bench-*.sh pieces (sourced).

# wait_for FILE PATTERN PID: until FILE matches PATTERN (grep -E), PID dies
# (status 1) or 10 s pass (status 1).
wait_for() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
