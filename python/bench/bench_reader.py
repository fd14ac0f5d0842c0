# SPDX-License-Identifier: LGPL-2.1-or-later
"""How fast the Python reader iterates a run file, against the C reader.

Writes one run file of L1-like events (126 sources x 32 B fragments by
default, the profile of the README's benchmarks) with xevb.Writer, then,
each pinned to one core (taskset), reads it:

  c            build/python/bench/c_reader: every fragment through xevb_ev_frag
  c_events     the same, the events alone (c_reader -n)
  events       for ev in reader: pass
  one_frag     for ev in reader: ev[0]           (one zero-copy payload view)
  matrix       for ev in reader: ev.matrix()     (every payload, one 2-D view)
  payloads     for ev in reader: ev.payloads()   (a memoryview per fragment)
  batch_matrix for b in reader.batches(N): b.matrix(), b.event_id
               (events x fragments x bytes, one view a batch)
  numpy_matrix for ev in reader: numpy.asarray(ev.matrix())
  batch_numpy  for b in reader.batches(N): numpy.asarray(b.matrix()), numpy.asarray(b.event_id)
  ctypes       the same library through ctypes: next(), event_id, and one
               payload view per event (the binding the C module replaced)

Prints a table and one JSON line; best of --repeat runs each, as events
per second of wall time and per CPU second of the reading process (the
second is what one core does when other work shares it).

  PYTHONPATH=build/python python3 python/bench/bench_reader.py [--events N]
      [--sources S] [--frag-size B] [--cpu C] [--nice N] [--repeat R] [--out DIR]
"""

import argparse
import ctypes
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import xevb

MODES = ("c", "c_events", "events", "one_frag", "matrix", "payloads", "batch_matrix", "numpy_matrix", "batch_numpy", "ctypes")


def write_file(path, n, sources, size):
    """n events of `sources` fragments of `size` bytes: one template, its id patched."""
    frags = [(s, bytes((s + i) & 0xFF for i in range(size))) for s in range(sources)]
    tmpl = bytearray(xevb.encode_event(0, frags, run_number=1))
    with xevb.Writer(path, run_number=1, sources=range(sources), fsync=False) as w:
        for i in range(n):
            struct.pack_into("!I", tmpl, 12, i)
            w.write(tmpl)
    return len(tmpl)


def py_mode(mode, path, batch):
    """Events/s of one mode in this process (the caller pins it)."""
    if "numpy" in mode:
        import numpy   # before the clock starts
    r = xevb.Reader(path)
    n = 0
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "events":
        for ev in r:
            n += 1
    elif mode == "one_frag":
        for ev in r:
            ev[0]
            n += 1
    elif mode == "matrix":
        for ev in r:
            ev.matrix()
            n += 1
    elif mode == "payloads":
        for ev in r:
            ev.payloads()
            n += 1
    elif mode == "numpy_matrix":
        for ev in r:
            numpy.asarray(ev.matrix())
            n += 1
    elif mode == "batch_numpy":
        for b in r.batches(batch):
            numpy.asarray(b.matrix())
            numpy.asarray(b.event_id)
            n += len(b)
    elif mode == "batch_matrix":
        for b in r.batches(batch):
            b.matrix()
            b.event_id
            n += len(b)
    t, c = time.perf_counter() - t0, time.process_time() - c0
    r.close()
    return n, t, c


class _Ev(ctypes.Structure):
    _fields_ = [("run_number", ctypes.c_uint32), ("event_id", ctypes.c_uint32), ("build_ns", ctypes.c_uint64),
                ("flags", ctypes.c_uint32), ("n_frags", ctypes.c_uint16), ("n_expected", ctypes.c_uint16),
                ("n_missing", ctypes.c_uint32), ("length", ctypes.c_uint32), ("data", ctypes.c_void_p),
                ("builder_addr", ctypes.c_uint32), ("builder_port", ctypes.c_uint16),
                ("reserved", ctypes.c_uint16), ("seq", ctypes.c_uint64)]


class _Frag(ctypes.Structure):
    _fields_ = [("source_id", ctypes.c_uint16), ("index", ctypes.c_uint16), ("length", ctypes.c_uint32),
                ("crc32c", ctypes.c_uint32), ("reserved", ctypes.c_uint32), ("payload", ctypes.c_void_p)]


def ctypes_mode(path, libdir):
    """The ctypes way: the same calls, each through ctypes' foreign-function layer."""
    lib = ctypes.CDLL(os.path.join(libdir, "libxevb.so.1"))
    lib.xevb_file_reader_open.restype = ctypes.c_void_p
    lib.xevb_file_reader_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p]
    lib.xevb_file_reader_next.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(_Ev))]
    lib.xevb_ev_frag.argtypes = [ctypes.POINTER(_Ev), ctypes.c_uint32, ctypes.POINTER(_Frag)]
    lib.xevb_file_reader_close.argtypes = [ctypes.c_void_p]
    err = ctypes.create_string_buffer(256)
    r = lib.xevb_file_reader_open(path.encode(), None, err)
    ev = ctypes.POINTER(_Ev)()
    f = _Frag()
    nxt, frag = lib.xevb_file_reader_next, lib.xevb_ev_frag
    n = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while nxt(r, ctypes.byref(ev)) == 1:
        ev.contents.event_id
        frag(ev, 0, ctypes.byref(f))
        memoryview((ctypes.c_char * f.length).from_address(f.payload))
        n += 1
    t, c = time.perf_counter() - t0, time.process_time() - c0
    lib.xevb_file_reader_close(r)
    return n, t, c


def run_pinned(cpu, args, nice=0):
    """argv on one core (at a raised priority when nice < 0: other work on a shared
    machine then waits instead of taking the core): its stdout's last line as JSON.
    With autogroups (kernel.sched_autogroup_enabled) a nice value only ranks
    processes within their session: the reader gets a session of its own, and
    that session the nice value."""
    cmd = (["taskset", "-c", str(cpu)] if shutil.which("taskset") and cpu >= 0 else []) + args
    if nice:
        cmd = ["setsid", "sh", "-c", 'echo %d >/proc/self/autogroup 2>/dev/null; exec nice -n %d "$@"' % (nice, nice),
               "sh"] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def measure(mode, a, path):
    if mode in ("c", "c_events"):
        j = run_pinned(a.cpu, [os.path.join(a.build, "python", "bench", "c_reader")] + (["-n"] if mode == "c_events" else [])
                       + [path], a.nice)
        return j["events"], j["wall_s"], j["cpu_s"]
    j = run_pinned(a.cpu, [sys.executable, os.path.abspath(__file__), "--one", mode, "--file", path,
                           "--batch", str(a.batch), "--build", a.build], a.nice)
    return j["events"], j["seconds"], j["cpu_s"]


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return "%s, %d CPUs, Linux %s, Python %s, libxevb %s" % (model or platform.processor(), os.cpu_count(),
                                                             platform.release(), platform.python_version(),
                                                             xevb.lib_version())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=200000)
    p.add_argument("--sources", type=int, default=126)
    p.add_argument("--frag-size", type=int, default=32)
    p.add_argument("--cpu", type=int, default=1, help="core to pin each reader to (-1: none)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--nice", type=int, default=0, help="run each reader at this nice value (-20: the core to itself)")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--build", default="build", help="the build tree (c_reader, libxevb.so.1)")
    p.add_argument("--out", help="directory for the run file (default: a temporary one)")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--file", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        if a.one == "ctypes":
            n, t, c = ctypes_mode(a.file, a.build)
        else:
            n, t, c = py_mode(a.one, a.file, a.batch)
        print(json.dumps({"events": n, "seconds": t, "cpu_s": c}))
        return 0
    d = tempfile.mkdtemp(prefix="xevb-bench.", dir=a.out)
    path = os.path.join(d, "l1.xevb")
    try:
        evlen = write_file(path, a.events, a.sources, a.frag_size)
        # Warm the page cache: every run reads from memory.
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
        res, cpu = {}, {}
        print("%-13s %14s %14s" % ("mode", "events/s wall", "events/CPU-s"))
        for mode in a.modes.split(","):
            runs = [measure(mode, a, path) for _ in range(a.repeat)]
            res[mode] = round(max(n / t for n, t, _ in runs))
            cpu[mode] = round(max(n / max(c, 1e-9) for n, _, c in runs))
            print("%-13s %14d %14d" % (mode, res[mode], cpu[mode]), flush=True)
        summary = {"events": a.events, "sources": a.sources, "frag_size": a.frag_size, "event_bytes": evlen,
                   "cpu": a.cpu, "nice": a.nice, "repeat": a.repeat, "batch": a.batch, "machine": machine(),
                   "load_avg": os.getloadavg(), "events_per_s": res, "events_per_cpu_s": cpu}
        if "c" in cpu and "matrix" in cpu:
            summary["c_over_matrix_cpu"] = round(cpu["c"] / cpu["matrix"], 1)
        print(json.dumps(summary))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
