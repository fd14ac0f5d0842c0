/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The output's run files (--output): libxevb's writer behind the output
 * stage (output.h), its flushing, its failures said once, and the names
 * and directory checks `xevb build` makes before it starts.
 */
#ifndef XEVB_OUTPUT_FILE_H
#define XEVB_OUTPUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "out/output.h"

/* The writer's buffer goes to the kernel at least this often while events come. */
#define XEVB_OUTFILE_FLUSH_NS 100000000ull

/* Create the first file and write its header: 0, or -errno (said, -EEXIST naming the file). */
int xevb_outfile_open(struct xevb_output *o, const struct xevb_out_file *f);
/* One encoded event (total bytes in n pieces) into the file; counted. now_ns: CLOCK_REALTIME. */
int xevb_outfile_write(struct xevb_output *o, const struct iovec *iov, int n, size_t total, uint64_t now_ns);
/* Hand what the writer holds to the kernel; a rotation since the last flush is said. */
void xevb_outfile_flush(struct xevb_output *o, uint64_t now_ns);
/* Trailer, fsync, close, said in a line; remove_empty: a file without events is removed instead. */
void xevb_outfile_close(struct xevb_output *o, bool remove_empty);

/*
 * The name of the first file f creates (without next_name): f->path, or
 * DIR/PREFIX-runRRRRRRRR-0000.xevb (docs/wire-format.md section 4). false
 * when it does not fit len.
 */
bool xevb_outfile_first_name(const struct xevb_out_file *f, char *buf, size_t len);
/*
 * A file of f's run that exists, its name in buf: the file itself, or in
 * a directory any PREFIX-runRRRRRRRR-SSSS.xevb of the run (a rotation
 * would come to it). False: none (or the directory cannot be read).
 */
bool xevb_outfile_existing(const struct xevb_out_file *f, char *buf, size_t len);
/*
 * Can the user the data path runs as (uid, gid) create files in dir?
 * switch_user: asked of the kernel in a child that becomes that user as
 * the privilege drop does (no supplementary groups; ACLs and the parents'
 * search permission count; needs CAP_SETUID and CAP_SETGID, as the drop
 * does); else by the directory's mode bits. Rotation creates files after
 * the builder gave up its privileges.
 */
bool xevb_outfile_dir_writable(const char *dir, uid_t uid, gid_t gid, bool switch_user);

#endif
