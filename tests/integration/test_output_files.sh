#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# parallel: yes
# Run files from `xevb build --output` (docs/wire-format.md section 4),
# 2 source hosts (ids 0-1, 2-3) -> 1 builder (XDP path), each file read
# back with libxevb's reader (the example farm node's --read), `xevb sink
# --input` and the tests' own decoder:
#  - header: --run 42 --id 3: the header says run 42, seq 0, builder 3
#    and this host's name, sources 0-3, a start time within the run; the
#    trailer closes the books (events, bytes = what the builder wrote);
#    every event once, in order.
#  - refused: the same command again exits 2 before attaching anything,
#    naming the file and --tune output-next-name=1; the file is byte for
#    byte what it was. With the key, the run goes to FILE.1. --output with
#    --sink: exit 2 naming both, no file made.
#  - rotation: --output DIR/ and output-max-events=1000 where the builder
#    (nobody after set-up) cannot create files: exit 1 saying so, nothing
#    created; given the directory, 3500 events go to
#    xevb-run00000043-0000..0003.xevb, 1000/1000/1000/500, CONTINUED on
#    all but the last, the first created by root, the rest by nobody.
#    output-max-bytes=64k (64000): no file over it, every event in one of them.
#  - sigterm: SIGTERM mid-run: the file is closed with its trailer.
#  - sigkill: SIGKILL while events arrive: no trailer; the reader calls the
#    file cut and reads every event up to the last whole one, in order.
set -uo pipefail
. "$(dirname "$0")/lib_e2e.sh"
e2e_init of "${1:-build}" --sources 2 --builders 1 --sinks 1
E2E_DEST=$(tb_addr builder 0)
HOST=$(hostname)
export HOST

# sources RUN N RATE NAME: both source hosts send N events of run RUN.
sources() {
	local f=(--run "$1" --events "$2" --rate "$3" --pack 10 --frag-size 40-120)
	e2e_source 0 "$4.s0" --source-ids 0-1 "${f[@]}" --seed 11
	e2e_source 1 "$4.s1" --source-ids 2-3 "${f[@]}" --seed 12
}

# ---------------------------------------------------------------------------
e2e_log "header: --run 42 --id 3 --output FILE, 2 x 3000 events, the run ended by END_OF_RUN"
export T0 T1
T0=$(date +%s%N)
HD=$E2E_WORK/hd.xevb
e2e_builder 0 hd.b --sources 0-3 --run 42 --id 3 --timeout-ms 200 --exit-on-eor --duration 20 --output "$HD"
sources 42 3000 10000 hd
e2e_wait_all
T1=$(date +%s%N)
e2e_runfiles hd.r "$HD" || e2e_fail "header: reading $HD back: $(cat "$E2E_WORK/hd.r.err")"
e2e_sink_file hd.k "$HD" --expect-sources 4
export HD_SIZE
HD_SIZE=$(stat -c %s "$HD")
e2e_check header <<'PY'
b, k = J("hd.b"), J("hd.k")
f, = runfiles("hd.r")
eq("closed, format version 1", (f["state"], f["version"]), ("closed", 1))
eq("header: run, seq, builder id", (f["run"], f["seq"], f["builder_id"]), (42, 0, 3))
eq("header: builder name (the host's)", f["builder"], os.environ["HOST"][:31])
eq("header: configured sources", f["sources"], [0, 1, 2, 3])
t0, t1 = int(os.environ["T0"]), int(os.environ["T1"])
true("header: created within the run, closed after", t0 <= f["start_ns"] <= f["end_ns"] <= t1,
     (f["start_ns"] - t0, t1 - f["end_ns"]))
eq("trailer: events = read = the builder's out_events = complete", (f["trailer_events"], f["events"], b["out_events"]),
   (3000, 3000, b["events_complete"]))
eq("bytes read = the builder's out_bytes; file = header 72 + bytes + trailer 48",
   (f["bytes"], int(os.environ["HD_SIZE"])), (b["out_bytes"], 72 + b["out_bytes"] + 48))
eq("CRC errors, continued", (f["crc_bad"], f["continued"]), (0, False))
ev = events(os.path.join(W, "hd.xevb"))
eq("every event once, in order", [e["id"] for e in ev], list(range(3000)))
eq("every event of run 42", {e["run"] for e in ev}, {42})
eq("sink --input: events, complete, errors", (k["events"], k["complete"], k["errors"]), (3000, 3000, 0))
PY
e2e_no_xdp header

# ---------------------------------------------------------------------------
e2e_log "refused: the same --output FILE again; then with --tune output-next-name=1"
sum=$(sha256sum <"$HD")
tb_exec builder 0 timeout 20 "$X" build --dev eth0 --sources 0-3 --run 42 --output "$HD" --duration 5 \
	>"$E2E_WORK/rf.json" 2>"$E2E_WORK/rf.err"
rc=$?
if ((rc == 2)) && grep -qF "$HD exists" "$E2E_WORK/rf.err" &&
	grep -qF -- "--tune output-next-name=1" "$E2E_WORK/rf.err"; then
	e2e_ok "refused: exit status 2: $(cat "$E2E_WORK/rf.err")"
else
	e2e_fail "refused: exit status $rc (want 2, naming $HD and --tune output-next-name=1)"
	e2e_show rf
fi
[[ $(sha256sum <"$HD") == "$sum" ]] && e2e_ok "refused: $HD untouched" || e2e_fail "refused: $HD changed"
# Outputs that contradict each other: refused before anything starts, both named.
tb_exec builder 0 timeout 20 "$X" build --dev eth0 --sources 0-3 --output "$E2E_WORK/cf.xevb" \
	--sink "$(tb_addr sink 0):$E2E_PORT" --duration 5 >"$E2E_WORK/cf.json" 2>"$E2E_WORK/cf.err"
rc=$?
if ((rc == 2)) && grep -qF -- "--output with --sink" "$E2E_WORK/cf.err" && [[ ! -e $E2E_WORK/cf.xevb ]]; then
	e2e_ok "refused: --output with --sink: exit status 2: $(cat "$E2E_WORK/cf.err")"
else
	e2e_fail "refused: --output with --sink: exit status $rc (want 2 naming both), file made: $(ls "$E2E_WORK"/cf.*)"
	e2e_show cf
fi
e2e_no_xdp refused
e2e_builder 0 nn.b --sources 0-3 --run 42 --timeout-ms 200 --exit-on-eor --duration 20 --output "$HD" \
	--tune output-next-name=1
sources 42 500 10000 nn
e2e_wait_all
e2e_runfiles nn.r "$HD.1" || e2e_fail "next_name: reading $HD.1 back: $(cat "$E2E_WORK/nn.r.err")"
[[ $(sha256sum <"$HD") == "$sum" ]] && e2e_ok "next_name: $HD untouched" || e2e_fail "next_name: $HD changed"
e2e_check next_name <<'PY'
f, = runfiles("nn.r")
eq("FILE.1: closed, run 42, events", (f["state"], f["run"], f["events"]), ("closed", 42, 500))
PY
e2e_no_xdp next_name

# ---------------------------------------------------------------------------
e2e_log "rotation: --output DIR/ --tune output-max-events=1000, 2 x 3500 events, as nobody after set-up"
RD=$E2E_WORK/rot
mkdir "$RD"
tb_exec builder 0 timeout 20 "$X" build --dev eth0 --sources 0-3 --run 43 --output "$RD/" \
	--tune output-max-events=1000 --duration 5 >"$E2E_WORK/rd.json" 2>"$E2E_WORK/rd.err"
rc=$?
if ((rc == 1)) && grep -q "runs as nobody.*cannot create files there" "$E2E_WORK/rd.err" &&
	[[ -z $(ls -A "$RD") ]]; then
	e2e_ok "rotation: refused where nobody cannot write, nothing created: $(cat "$E2E_WORK/rd.err")"
else
	e2e_fail "rotation: exit status $rc (want 1, saying nobody cannot create files in $RD), files: $(ls -A "$RD")"
	e2e_show rd
fi
chmod 711 "$E2E_WORK"
chown nobody "$RD"
e2e_builder 0 rot.b --sources 0-3 --run 43 --timeout-ms 200 --exit-on-eor --duration 20 --output "$RD/" \
	--tune output-max-events=1000
sources 43 3500 10000 rot
e2e_wait_all
e2e_runfiles rot.r "$RD"/*.xevb || e2e_fail "rotation: reading the files back: $(cat "$E2E_WORK/rot.r.err")"
stat -c '%U' "$RD"/*.xevb >"$E2E_WORK/rot.owners"
e2e_check rotation <<'PY'
files = runfiles("rot.r")
names = [os.path.basename(f["file"]) for f in files]
eq("names", names, ["xevb-run00000043-%04d.xevb" % s for s in range(4)])
eq("states, runs, seqs", [(f["state"], f["run"], f["seq"]) for f in files], [("closed", 43, s) for s in range(4)])
eq("events per file", [f["events"] for f in files], [1000, 1000, 1000, 500])
eq("continued but the last", [f["continued"] for f in files], [True, True, True, False])
eq("owners: the first created before the drop, the others by the data path",
   open(os.path.join(W, "rot.owners")).read().split(), ["root", "nobody", "nobody", "nobody"])
ids = [e["id"] for f in files for e in events(f["file"])]
eq("every event once, in order across the files", ids, list(range(3500)))
eq("the builder wrote them all", J("rot.b")["out_events"], 3500)
PY
e2e_no_xdp rotation

e2e_log "rotation by size: --tune output-max-bytes=64k, 2 x 3000 events, --keep-privileges"
RB=$E2E_WORK/rotb/
mkdir "$RB"
e2e_builder 0 rb.b --sources 0-3 --run 44 --timeout-ms 200 --exit-on-eor --duration 20 --output "$RB" \
	--tune output-max-bytes=64k --keep-privileges
sources 44 3000 10000 rb
e2e_wait_all
e2e_runfiles rb.r "$RB"*.xevb || e2e_fail "rotation_size: reading the files back: $(cat "$E2E_WORK/rb.r.err")"
stat -c '%s' "$RB"*.xevb >"$E2E_WORK/rb.sizes"
e2e_check rotation_size <<'PY'
files = runfiles("rb.r")
sizes = [int(x) for x in open(os.path.join(W, "rb.sizes")).read().split()]
true("several files (%d)" % len(files), len(files) >= 5, len(files))
true("none over 64000 bytes (largest %d)" % max(sizes), max(sizes) <= 64000, sizes)
eq("all closed, seqs in order", [(f["state"], f["seq"]) for f in files], [("closed", s) for s in range(len(files))])
eq("events in all files", sum(f["events"] for f in files), 3000)
PY
e2e_no_xdp rotation_size

# ---------------------------------------------------------------------------
e2e_log "sigterm: SIGTERM to the builder after 2 x 2000 events: the file closed with its trailer"
ST=$E2E_WORK/st.xevb
e2e_builder 0 st.b --sources 0-3 --run 45 --timeout-ms 200 --duration 30 --output "$ST"
victim=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "sigterm: no xevb build process under pid $E2E_LAST_PID"
sources 45 2000 10000 st
e2e_wait_exit "${E2E_PIDS[-1]}" 20
e2e_wait_exit "${E2E_PIDS[-2]}" 20
kill -TERM "$victim"
e2e_wait_all
e2e_runfiles st.r "$ST" || e2e_fail "sigterm: reading $ST back: $(cat "$E2E_WORK/st.r.err")"
e2e_check sigterm <<'PY'
f, = runfiles("st.r")
eq("closed, events = trailer's = the builder's", (f["state"], f["events"], f["trailer_events"]),
   ("closed", J("st.b")["out_events"], J("st.b")["out_events"]))
eq("every event of the sources", f["events"], 2000)
PY
e2e_no_xdp sigterm

# ---------------------------------------------------------------------------
e2e_log "sigkill: SIGKILL to the builder while 2 x 40000 events arrive"
KL=$E2E_WORK/kl.xevb
E2E_BUILD_RC=137 e2e_builder 0 kl.b --sources 0-3 --run 46 --timeout-ms 200 --duration 30 --output "$KL"
victim=$(e2e_xevb_pid "$E2E_LAST_PID") || e2e_die "sigkill: no xevb build process under pid $E2E_LAST_PID"
sources 46 40000 10000 kl
# Until the file holds events flushed by the builder (every 100 ms while they come), at most 15 s.
for ((t = 0; t < 150; t++)); do
	(($(stat -c %s "$KL" 2>/dev/null || echo 0) > 200000)) && break
	sleep 0.1
done
kill -KILL "$victim"
e2e_ok "sigkill: sent SIGKILL to builder pid $victim at $(stat -c %s "$KL") bytes"
e2e_wait_all
# Its root helper detaches XDP once it is gone (test_hard_privdrop.sh): wait for it, at most 10 s.
for ((t = 0; t < 100; t++)); do
	[[ -z $(ip netns pids "$(tb_ns builder 0)") ]] && break
	sleep 0.1
done
e2e_runfiles kl.r "$KL"
timeout 30 "$X" sink --input "$KL" --json --expect-sources 4 >"$E2E_WORK/kl.k.json" 2>"$E2E_WORK/kl.k.err"
export KL_SIZE
KL_SIZE=$(stat -c %s "$KL")
e2e_check sigkill <<'PY'
f, = runfiles("kl.r")
eq("cut: no trailer", (f["state"], f["trailer_events"]), ("cut", 0))
true("events read (%d)" % f["events"], f["events"] > 0, f)
eq("file = header 72 + whole events + the cut tail", 72 + f["bytes"] + f["cut_bytes"], int(os.environ["KL_SIZE"]))
ev = events(os.path.join(W, "kl.xevb"), cut=True)
eq("the tests' decoder: the same events, ids 0.. in order", [e["id"] for e in ev], list(range(f["events"])))
eq("CRC errors", f["crc_bad"], 0)
k = J("kl.k")
eq("sink --input: the same events, complete", (k["events"], k["complete"]), (f["events"], f["events"]))
PY
e2e_no_xdp sigkill

e2e_finish
