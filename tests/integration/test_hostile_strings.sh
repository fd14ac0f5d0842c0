#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Output that parses whatever the strings in it. The kernel takes interface
# names with quotes, backslashes, control characters and bytes that are not
# UTF-8: on four such veths of the builder's namespace, `xevb build --json
# --metrics` (XDP and socket paths, one with two workers), `xevb stats
# --json` and `--all --json`, `xevb doctor --json`, `xevb shape list
# --json` (without and with a rule) must each print JSON that python's json
# takes from strict UTF-8, naming the device as the kernel does (a byte
# that starts no valid UTF-8 sequence as U+FFFD), and a metrics page that
# `promtool check metrics` passes with the same name in xevb_build_info.
# A user named with a quote, a backslash and a non-UTF-8 byte (a passwd
# bind-mounted in a mount namespace of the test's own) goes through
# `--user` into the "privileges" line the same way. The other strings of
# the outputs are the program's own names (tests/unit/test_json_outputs.c)
# or addresses printed from their binary form.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_need promtool curl unshare
e2e_init hs "${1:-build}" --sources 1 --builders 1 --sinks 1
NS=$(tb_ns builder 0)

# Two veth pairs (the second with two queues, for two workers), every name at most 15 bytes (IFNAMSIZ - 1).
NAMES=('q"x' 'a\b' $'\xff\xfe\x01"\\' $'{}"\xc3\xa9,x=\\n')
MODES=(xdp socket xdp socket)
EXTRA=("" "" "--queues 0-1 --workers 2" "")
ip -n "$NS" link add "${NAMES[0]}" type veth peer name "${NAMES[1]}" || e2e_die "veth pair 0"
ip -n "$NS" link add "${NAMES[2]}" numrxqueues 2 numtxqueues 2 type veth peer name "${NAMES[3]}" \
	numrxqueues 2 numtxqueues 2 || e2e_die "veth pair 1"
for i in "${!NAMES[@]}"; do
	ip -n "$NS" link set "${NAMES[$i]}" up || e2e_die "link $i up"
	ip -n "$NS" addr add "198.18.250.$((i + 1))/32" dev "${NAMES[$i]}" || e2e_die "address on link $i"
	# What the checker compares with, byte for byte.
	printf '%s' "${NAMES[$i]}" | od -An -tx1 | tr -d ' \n' >"$E2E_WORK/name$i.hex"
done
e2e_ok "the kernel took $(ip -n "$NS" -o link | wc -l) links, four of them named with hostile bytes"

# in_ns CMD...: run CMD in the builder's namespace.
in_ns() { ip netns exec "$NS" "$@"; }

# until_ok TRIES CMD...: run CMD every 0.1 s until it succeeds, at most TRIES times.
until_ok() {
	local n=$1 t
	shift
	for ((t = 0; t < n; t++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# page_has PORT FILE: the page on PORT, with the builder's statistics, saved to FILE.
page_has() {
	in_ns curl -s -m 5 -o "$2" "http://127.0.0.1:$1/metrics" && grep -q '^xevb_build_snapshot_valid 1' "$2"
}

# run_name I: every command with --json on link I, and the builder's page.
run_name() {
	local i=$1 d=${NAMES[$1]} port=$((9470 + $1)) w=$E2E_WORK rc xpid
	# Not through in_ns: $! must be timeout(1) itself, the parent of the xevb to stop.
	# shellcheck disable=SC2086 # EXTRA holds options
	ip netns exec "$NS" timeout 60 "$X" build --dev "$d" --mode "${MODES[$i]}" --sources 0 --no-forward --duration 50 \
		--json --quiet --metrics "$port" ${EXTRA[$i]} >"$w/b$i.json" 2>"$w/b$i.err" &
	E2E_LAST_PID=$!
	_e2e_track $! "b$i" 0
	e2e_wait_rx "b$i"
	until_ok 150 page_has "$port" "$w/b$i.prom" || e2e_fail "b$i: no page with valid statistics in 15 s"
	if promtool check metrics <"$w/b$i.prom" >"$w/b$i.lint" 2>&1 && [[ ! -s $w/b$i.lint ]]; then
		e2e_ok "b$i: promtool check metrics: clean ($(wc -l <"$w/b$i.prom") lines)"
	else
		e2e_fail "b$i: promtool check metrics:"
		sed 's/^/  | /' "$w/b$i.lint" | head -20
	fi
	until_ok 50 in_ns "$X" stats --dev "$d" --json >"$w/st$i.json" 2>"$w/st$i.err" ||
		e2e_fail "st$i: xevb stats --json exit status $?"
	in_ns timeout 20 "$X" stats --dev "$d" --all --json --count 1 >"$w/sa$i.json" 2>"$w/sa$i.err" ||
		e2e_fail "sa$i: xevb stats --all --json exit status $?"
	in_ns timeout 20 "$X" doctor --dev "$d" --json >"$w/dr$i.json" 2>"$w/dr$i.err"
	rc=$?
	((rc <= 1)) || e2e_fail "dr$i: xevb doctor --json exit status $rc, want 0 or 1 (verdicts)"
	xpid=$(e2e_xevb_pid "$E2E_LAST_PID") && kill -INT "$xpid"
	e2e_wait_exit "$E2E_LAST_PID" 20
	in_ns "$X" shape list --dev "$d" --json >"$w/sh$i.0.json" 2>"$w/sh$i.err" || e2e_fail "sh$i: shape list exit status $?"
	in_ns "$X" shape set --dev "$d" --dst 198.18.250.9 --rate 100mbit 2>>"$w/sh$i.err" || e2e_fail "sh$i: shape set exit status $?"
	in_ns "$X" shape list --dev "$d" --json >"$w/sh$i.1.json" 2>>"$w/sh$i.err" || e2e_fail "sh$i: shape list exit status $?"
	in_ns "$X" shape clear --dev "$d" 2>>"$w/sh$i.err" || e2e_fail "sh$i: shape clear exit status $?"
}

for i in "${!NAMES[@]}"; do
	run_name "$i"
done

# --user with a hostile name: a passwd of our own, bind-mounted in a private mount namespace.
USER_NAME=$'u"\\\xff'
printf '%s' "$USER_NAME" | od -An -tx1 | tr -d ' \n' >"$E2E_WORK/user.hex"
{
	cat /etc/passwd
	printf '%s:x:65534:65534::/nonexistent:/usr/sbin/nologin\n' "$USER_NAME"
} >"$E2E_WORK/passwd"
# shellcheck disable=SC2016 # expanded by the inner bash
in_ns unshare -m --propagation private bash -c 'mount --bind "$2" /etc/passwd && exec timeout 30 "$0" build \
	--dev "$1" --sources 0 --no-forward --duration 1 --json --quiet --user "$3"' \
	"$X" "${NAMES[0]}" "$E2E_WORK/passwd" "$USER_NAME" >"$E2E_WORK/bu.json" 2>"$E2E_WORK/bu.err"
rc=$?
((rc == 0)) && e2e_ok "bu: --user with a hostile name: exit status 0" || { e2e_fail "bu: exit status $rc"; e2e_show bu; }
grep -qF "$USER_NAME" /etc/passwd && e2e_fail "the test's passwd line reached the machine's /etc/passwd"
e2e_wait_all

e2e_check hostile_strings <<'PY'
import glob

def expect(raw):
    """raw as the escapers write it: each byte that starts no valid UTF-8 sequence as U+FFFD."""
    out, i = [], 0
    while i < len(raw):
        for k in (1, 2, 3, 4):
            try:
                out.append(raw[i:i + k].decode("utf-8"))
                i += k
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)

def docs(name):
    """Every JSON line of W/name, from strictly UTF-8 text."""
    raw = open(os.path.join(W, name), "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        true("%s is UTF-8" % name, False, e)
        return []
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError as e:
                true("%s: a line that parses" % name, False, "%s: %r" % (e, line[:200]))
    true("%s: %d JSON line(s), all parse" % (name, len(out)), out, raw[:200])
    return out

def label(prom, key, metric):
    """The value of label key on metric's sample, unescaped as the text format says."""
    text = open(os.path.join(W, prom), "rb").read().decode("utf-8")
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            p = line.index(key + '="') + len(key) + 2
            out = []
            while line[p] != '"':
                if line[p] == "\\":
                    out.append({"\\": "\\", '"': '"', "n": "\n"}[line[p + 1]])
                    p += 2
                else:
                    out.append(line[p])
                    p += 1
            return "".join(out)
    return None

for i in range(4):
    name = expect(bytes.fromhex(open(os.path.join(W, "name%d.hex" % i)).read()))
    b = docs("b%d.json" % i)
    eq("b%d: ifname in the build summary" % i, [d["ifname"] for d in b if "ifname" in d], [name])
    if i == 2:
        true("b2: the workers' line", any("workers" in d for d in b), [list(d)[:2] for d in b])
    eq("b%d: ifname on the page" % i, label("b%d.prom" % i, "ifname", "xevb_build_info"), name)
    eq("st%d: ifname in stats --json" % i, [d.get("ifname") for d in docs("st%d.json" % i)], [name])
    sa = docs("sa%d.json" % i)
    true("sa%d: stats --all --json has rx_frames" % i, sa and "rx_frames" in sa[0], sa[:1])
    dr = docs("dr%d.json" % i)
    eq("dr%d: dev in doctor --json" % i, [d["dev"] for d in dr], [name])
    sh0, sh1 = docs("sh%d.0.json" % i), docs("sh%d.1.json" % i)
    eq("sh%d: dev in shape list --json, no rule then one" % i, [d["dev"] for d in sh0 + sh1], [name, name])
    eq("sh%d: the rule listed" % i, [r["dst"] for d in sh1 for r in d["rules"]], ["198.18.250.9"])

user = expect(bytes.fromhex(open(os.path.join(W, "user.hex")).read()))
bu = docs("bu.json")
eq("bu: the privileges line names the user", [d["privileges"]["user"] for d in bu if "privileges" in d], [user])
PY
e2e_finish
