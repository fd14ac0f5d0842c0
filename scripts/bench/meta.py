#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# Prints the JSON object every benchmark records next to its results: the
# machine, kernel, tool versions, git commit and the BENCH_* settings, so a
# figure can always be traced to what produced it.
#
# usage: scripts/bench/meta.py [KEY=VALUE ...]   (extra settings to record)
import json, os, platform, subprocess, sys, time


def run(*cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def dpkg_version(pkg):
    return run("dpkg-query", "-W", "-f=${Version}", pkg)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    settings = {k: v for k, v in os.environ.items() if k.startswith(("BENCH_", "OV_", "GW_"))}
    for kv in sys.argv[1:]:
        k, _, v = kv.partition("=")
        settings[k] = v
    meta = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "kernel": platform.release(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "mem_kb": int(open("/proc/meminfo").readline().split()[1]),
        "loadavg": os.getloadavg()[0],
        "git": run("git", "describe", "--always", "--dirty"),
        "versions": {
            "clang": run("clang", "--version"),
            "libbpf": dpkg_version("libbpf1"),
            "libxdp": dpkg_version("libxdp1"),
            "bpftool": run("bpftool", "version"),
            "iproute2": dpkg_version("iproute2"),
        },
        "settings": settings,
    }
    json.dump(meta, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
