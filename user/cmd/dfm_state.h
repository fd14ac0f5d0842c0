/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --state: the event_ids this DFM may use are reserved in FILE before use,
 * so a successor (after kill -9, crash or a plain restart) starts past every
 * id the dead one could have handed out and no farm node sees an id twice
 * in a run. One line, "xevb-dfm-state 1 next N epoch E", replaced atomically.
 */
#ifndef XEVB_DFM_STATE_H
#define XEVB_DFM_STATE_H

#include <stdint.h>

/* 1 with next and epoch read, 0 when there is no file, -1 (errno) when it cannot be used. */
int dfm_state_read(const char *path, uint32_t *next, uint32_t *epoch);
/* 0, or -1 (errno): next and our epoch written to path (through path.tmp and a rename). */
int dfm_state_write(const char *path, uint32_t next, uint32_t epoch);

#endif
