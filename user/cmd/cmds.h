/* SPDX-License-Identifier: GPL-2.0-only */
/* The subcommands; each lives in cmd_<name>.c. */
#ifndef XEVB_CMDS_H
#define XEVB_CMDS_H

int cmd_version(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_source(int, char **);
int cmd_sink(int, char **);
int cmd_dfm(int, char **);
int cmd_shape(int, char **);
int cmd_doctor(int, char **);
int cmd_dump(int, char **);
int cmd_key(int, char **);

#define XEVB_CMDS \
	{ "build", cmd_build, "the gateway: receive fragments, build events, forward them" }, \
		{ "stats", cmd_stats, "statistics of a running builder" }, \
		{ "version", cmd_version, "print the version and the kernel features found" }, \
		{ "doctor", cmd_doctor, \
		  "check a device and this machine for the builder, with the fix for each" }, \
		{ "source", cmd_source, "emulate read-out sources: send MEPs to a builder" }, \
		{ "shape", cmd_shape, "per-destination egress rates (tc-bpf classifier + HTB or EDT)" }, \
		{ "sink", cmd_sink, "farm-node emulator: receive built events and check every byte" }, \
		{ "dump", cmd_dump, "show built events from run files or builders, one line each (or JSON)" }, \
		{ "dfm", cmd_dfm, \
		  "data-flow manager: trigger, assign events to builders by credit, push or pull" }, \
		{ "key", cmd_key, "derive a source's or farm node's own control key from the run's master key" },

#endif
