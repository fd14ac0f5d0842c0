/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The xevb Python module (_xevb): what its parts share. Events are objects
 * that point into the library's bytes (a reader's mapped file, a farm
 * node's receive buffer) and export them through the buffer protocol, so
 * a fragment is a memoryview (or, through numpy.asarray, an array) over
 * the very bytes the library read: nothing is copied.
 *
 * Lifetimes follow the library's. An event holds a reference to its owner
 * (the Reader or Farm), so the owner's C handle outlives every event and
 * view of it: a Reader closed while events of it live keeps its mapping
 * until the last one goes; a farm-node event goes back to the library
 * (xevb_farm_done) when done() was called and its last view is released,
 * or when it is garbage.
 */
#ifndef XEVB_PY_H
#define XEVB_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <xevb/xevb.h>

#define XP_STR_(x) #x
#define XP_STR(x)  XP_STR_(x)

/* What an event's bytes belong to. */
enum ev_kind {
	EV_FILE,   /* a Reader's mapping */
	EV_FARM,   /* a Farm's receive buffer, until done */
	EV_PARSED, /* a caller's buffer (parse_event), pinned by a memoryview */
};

typedef struct ReaderObject ReaderObject;
typedef struct FarmObject FarmObject;

typedef struct EventObject {
	PyObject ob_base;           /* PyObject_HEAD */
	PyObject *owner;            /* Reader, Farm, or the memoryview pinning a caller's bytes */
	const struct xevb_ev *view; /* the library's view with its fragment table; NULL until needed */
	struct xevb_ev *parsed;     /* our own view (xevb_ev_parse) when the library's is gone */
	struct xevb_ev ev;          /* the header fields, copied: valid for ever */
	Py_ssize_t exports;         /* buffer views alive */
	/* What the next buffer request exports (set just before PyMemoryView_FromObject). */
	const uint8_t *pend_ptr;
	Py_ssize_t pend_len;
	int pend_ndim; /* 1, 2 (fragments x bytes) */
	Py_ssize_t shape[2], strides[2];
	uint8_t kind;
	bool done_asked; /* farm: done() called */
	bool done;       /* farm: handed back to the library */
} EventObject;

struct ReaderObject {
	PyObject ob_base; /* PyObject_HEAD */
	struct xevb_file_reader *r;
	EventObject *current; /* the event whose view the library still holds (borrowed) */
	PyObject *path;
	Py_ssize_t live; /* Event and Batch objects of this reader alive */
	bool closed;     /* close() asked: the handle goes when live drops to 0 */
	bool ended;
};

struct FarmObject {
	PyObject ob_base; /* PyObject_HEAD */
	struct xevb_farm *f;
	PyObject *log;        /* callable(level, message) or None */
	Py_ssize_t exporting; /* events of it with buffer views alive */
	uint64_t handed;      /* events handed to Python */
	/*
	 * A wait runs without the GIL: another thread may meanwhile drop or
	 * done() an event, but the handle is not thread-safe, so those wait
	 * here and go back when the wait ends.
	 */
	bool waiting;
	const struct xevb_ev **pending;
	size_t n_pending, cap_pending;
};

extern PyTypeObject Event_Type, Reader_Type, Writer_Type, Farm_Type, Batch_Type, BatchIter_Type;
extern PyObject *CorruptFileError;

/*
 * The first fragment (1..n-1) whose length is not len, or 0 when all have
 * it. Fragment 0's payload is at p0; with fragments of one length the
 * record headers (wire-format.md section 2: source_id, reserved, length,
 * crc32c; 12 bytes) follow at one stride, and each is read where it is as
 * long as those before it had len: the first one that differs is found at
 * its true place. The library checked every record before handing the
 * event out. Calling xevb_ev_frag for each costs five times as much.
 */
static inline uint32_t xp_first_unequal(const uint8_t *p0, uint32_t n, uint32_t len, size_t stride)
{
	for (uint32_t i = 1; i < n; i++) {
		const uint8_t *l = p0 - 12 + i * stride + 4;
		if (((uint32_t)l[0] << 24 | (uint32_t)l[1] << 16 | (uint32_t)l[2] << 8 | l[3]) != len)
			return i;
	}
	return 0;
}

/* Raise OSError(-neg, msg) (its errno subclass, e.g. FileExistsError) and return NULL. */
PyObject *xp_oserror(int neg, const char *msg);
/* The library's sentence from errbuf, or strerror. */
PyObject *xp_oserror_buf(int err, const char *errbuf);

/* event.c */
EventObject *xp_event_new(PyObject *owner, const struct xevb_ev *view, enum ev_kind kind);
/* The view with fragments (parsed again when the library's is gone); NULL with an exception set. */
const struct xevb_ev *xp_event_view(EventObject *e);
/* A read-only memoryview of len bytes at p, which lie within e's bytes. */
PyObject *xp_event_memview(EventObject *e, const uint8_t *p, Py_ssize_t len);
/* Farm events: hand the event back now (done and no view left). */
void xp_event_release_farm(EventObject *e);
PyObject *xp_parse_event(PyObject *self, PyObject *arg);
int xp_event_init_types(PyObject *m);

/* reader.c / batch.c */
void xp_reader_unref(ReaderObject *r);
PyObject *xp_batch_iter_new(ReaderObject *r, Py_ssize_t n);
int xp_reader_check(ReaderObject *r);
/* After xevb_file_reader_next returned rc <= 0: NULL, with an exception unless at the end. */
PyObject *xp_reader_fail(ReaderObject *r, int rc);
/* The current event's library view ends (the reader moves on); its bytes stay. */
static inline void xp_reader_detach(ReaderObject *r)
{
	if (r->current) {
		r->current->view = NULL;
		r->current = NULL;
	}
}

#endif
