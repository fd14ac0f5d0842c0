/* SPDX-License-Identifier: GPL-2.0-only */
/* Printable names of verdicts and counter slots (user space only). */
#ifndef XEVB_NAMES_H
#define XEVB_NAMES_H

/* Short snake_case name of an enum xevb_result or enum xevb_xdp_slot. */
const char *xevb_slot_name(unsigned int slot);

/* Short snake_case name of an enum xevb_drop_reason (builder.h). */
const char *xevb_drop_reason_name(unsigned int r);

/* Short snake_case name of an enum xevb_seg_reason (builder.h). */
const char *xevb_seg_reason_name(unsigned int r);

#endif
