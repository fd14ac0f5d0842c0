// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xevb.Farm: a farm node, receiving built events from any number of
 * builders (`xevb build --sink ADDR:PORT`) through the library, which also
 * speaks the control protocol for it (credits, Busy, RECEIVED to a DFM).
 * Events come as Event objects over the receive buffers; each must be
 * done (ev.done(), a with block, or dropping it) for its builder to get
 * its credit back. Waits release the GIL and wake for signals every
 * 100 ms, so Ctrl-C stops a blocked loop.
 */
#include "xevbpy.h"
#include <time.h>

#define SLICE_MS 100

static void log_tramp(void *ctx, enum xevb_lib_log_level lv, const char *msg)
{
	FarmObject *self = ctx;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *type, *value, *tb, *r;

	if (!self->log) {
		/* Cleared by the GC before the handle closed: the message has nowhere to go. */
		PyGILState_Release(g);
		return;
	}
	/* We may be inside a call that is failing: keep its exception. */
	PyErr_Fetch(&type, &value, &tb);
	r = PyObject_CallFunction(self->log, "is", (int)lv, msg);
	if (!r)
		PyErr_WriteUnraisable(self->log);
	Py_XDECREF(r);
	PyErr_Restore(type, value, tb);
	PyGILState_Release(g);
}

static int farm_check(FarmObject *self)
{
	if (!self->f) {
		PyErr_SetString(PyExc_ValueError, "operation on a closed xevb.Farm");
		return -1;
	}
	if (self->waiting) {
		PyErr_SetString(PyExc_RuntimeError,
				"xevb.Farm is waiting in another thread: use a farm node from one "
				"thread at a time (events may be done from any)");
		return -1;
	}
	return 0;
}

/* One wait in the library without the GIL; the events done meanwhile go back after it. */
static int poll_unlocked(FarmObject *self, int ms)
{
	PyThreadState *ts;
	int rc;

	self->waiting = true;
	ts = PyEval_SaveThread();
	rc = xevb_farm_poll(self->f, ms);
	PyEval_RestoreThread(ts);
	self->waiting = false;
	for (size_t i = 0; i < self->n_pending; i++)
		xevb_farm_done(self->f, self->pending[i]);
	self->n_pending = 0;
	return rc;
}

static PyObject *farm_fail(FarmObject *self, int rc)
{
	return xp_oserror(rc, xevb_farm_error(self->f));
}

static int fs_opt(PyObject *o, PyObject **out)
{
	if (o == Py_None) {
		*out = NULL;
		return 1;
	}
	return PyUnicode_FSConverter(o, out);
}

static const char *opt_str(PyObject *b)
{
	return b ? PyBytes_AS_STRING(b) : NULL;
}

struct farm_args {
	PyObject *listen, *dfm, *key, *cfg; /* bytes or NULL */
	unsigned int credits, max_event, max_conns, partial_timeout_ms;
	unsigned short ctl_port, id;
	unsigned long long max_buffer;
	double busy_high, busy_low;
	int no_ctl, verify, any_ctl;
};

static int farm_parse(PyObject *args, PyObject *kw, struct farm_args *a, PyObject **log)
{
	static char *kwlist[] = {
		"listen",    "no_ctl",    "verify_crc", "credits",    "ctl_port",           "ctl_any_port",
		"id",        "dfm",       "key_file",   "run_config", "busy_high",          "busy_low",
		"max_event", "max_conns", "max_buffer", "log",        "partial_timeout_ms", NULL
	};
	PyObject *listen = Py_None, *dfm = Py_None, *key = Py_None, *cfg = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$ppIHpHOOOddIIKOI", kwlist, &listen, &a->no_ctl, &a->verify,
					 &a->credits, &a->ctl_port, &a->any_ctl, &a->id, &dfm, &key, &cfg,
					 &a->busy_high, &a->busy_low, &a->max_event, &a->max_conns, &a->max_buffer,
					 log, &a->partial_timeout_ms))
		return -1;
	if (*log == Py_None)
		*log = NULL;
	if (*log && !PyCallable_Check(*log)) {
		PyErr_SetString(PyExc_TypeError, "log: a callable(level, message), or None");
		return -1;
	}
	if (!fs_opt(listen, &a->listen) || !fs_opt(dfm, &a->dfm) || !fs_opt(key, &a->key) || !fs_opt(cfg, &a->cfg))
		return -1;
	return 0;
}

static int farm_init(FarmObject *self, PyObject *args, PyObject *kw)
{
	struct farm_args a = { 0 };
	char err[XEVB_ERRBUF_SIZE] = "";
	PyObject *log = Py_None;
	int rc = -1;

	if (self->f) {
		PyErr_SetString(PyExc_RuntimeError, "xevb.Farm initialised twice");
		return -1;
	}
	if (farm_parse(args, kw, &a, &log))
		goto out;
	Py_XINCREF(log);
	Py_XSETREF(self->log, log);
	XEVB_OPTS(xevb_farm_opts, o, .listen = opt_str(a.listen),
		  .flags = (a.no_ctl ? XEVB_FARM_NO_CTL : 0) | (a.verify ? XEVB_FARM_VERIFY_CRC : 0) |
			   (a.any_ctl ? XEVB_FARM_CTL_ANY_PORT : 0),
		  .credits = a.credits, .ctl_port = a.ctl_port, .id = a.id, .dfm = opt_str(a.dfm),
		  .key_file = opt_str(a.key), .run_config = opt_str(a.cfg), .busy_high = a.busy_high,
		  .busy_low = a.busy_low, .max_event = a.max_event, .max_conns = a.max_conns,
		  .max_buffer = a.max_buffer, .log_fn = log ? log_tramp : NULL, .log_ctx = self,
		  .partial_timeout_ms = a.partial_timeout_ms);
	self->f = xevb_farm_open(&o, err);
	if (!self->f) {
		xp_oserror_buf(errno, err);
		goto out;
	}
	rc = 0;
out:
	Py_XDECREF(a.listen);
	Py_XDECREF(a.dfm);
	Py_XDECREF(a.key);
	Py_XDECREF(a.cfg);
	return rc;
}

/* The log callable may hold the farm node (a bound method, a closure): a cycle the GC must see. */
static int farm_traverse(FarmObject *self, visitproc visit, void *arg)
{
	Py_VISIT(self->log);
	return 0;
}

static int farm_clear(FarmObject *self)
{
	Py_CLEAR(self->log);
	return 0;
}

static void farm_dealloc(FarmObject *self)
{
	PyObject_GC_UnTrack(self);
	/* Every event holds us: none is left. */
	if (self->f)
		xevb_farm_close(self->f);
	self->f = NULL;
	PyMem_Free(self->pending);
	Py_XDECREF(self->log);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Wait up to timeout_ms (-1: for ever) for events, processing what comes:
 * the ready count (0 at the timeout), or -1 with an exception (a signal's,
 * or the handle's failure).
 */
static int farm_wait(FarmObject *self, long long timeout_ms)
{
	uint64_t end = timeout_ms < 0 ? 0 : mono_ms() + (uint64_t)timeout_ms;
	int rc;

	for (;;) {
		long long left = timeout_ms < 0 ? SLICE_MS : (long long)(end - mono_ms());
		if (timeout_ms >= 0 && (left < 0 || mono_ms() >= end))
			left = 0;
		rc = poll_unlocked(self, (int)(left < SLICE_MS ? left : SLICE_MS));
		if (rc < 0) {
			farm_fail(self, rc);
			return -1;
		}
		if (rc > 0 || (timeout_ms >= 0 && mono_ms() >= end))
			return rc;
		if (PyErr_CheckSignals())
			return -1;
	}
}

/* timeout in seconds (None: for ever) -> ms, -1 for ever. */
static int timeout_ms(PyObject *t, long long *ms)
{
	double s;

	if (!t || t == Py_None) {
		*ms = -1;
		return 0;
	}
	s = PyFloat_AsDouble(t);
	if (s == -1.0 && PyErr_Occurred())
		return -1;
	*ms = s <= 0 ? 0 : (long long)(s * 1000.0 + 0.999);
	return 0;
}

/* The next event within timeout_ms: an Event, None at the timeout, NULL with an exception. */
static PyObject *farm_next_event(FarmObject *self, long long ms)
{
	const struct xevb_ev *ev;
	EventObject *e;
	int rc;

	for (;;) {
		rc = xevb_farm_next(self->f, &ev);
		if (rc < 0)
			return farm_fail(self, rc);
		if (rc == 1)
			break;
		rc = farm_wait(self, ms);
		if (rc < 0)
			return NULL;
		if (!rc && ms >= 0)
			Py_RETURN_NONE;
	}
	if (!(e = xp_event_new((PyObject *)self, ev, EV_FARM))) {
		xevb_farm_done(self->f, ev);
		return NULL;
	}
	self->handed++;
	return (PyObject *)e;
}

static PyObject *farm_next(FarmObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *t = NULL;
	long long ms;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &t) || farm_check(self) || timeout_ms(t, &ms))
		return NULL;
	if (!t)
		ms = 0;
	return farm_next_event(self, ms);
}

static PyObject *farm_iternext(FarmObject *self)
{
	/* for ev in farm: blocks for each event; ends when the farm node is closed. */
	if (!self->f)
		return NULL;
	return farm_next_event(self, -1);
}

static PyObject *farm_poll(FarmObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *t = NULL;
	long long ms;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &t) || farm_check(self) || timeout_ms(t, &ms))
		return NULL;
	rc = farm_wait(self, ms);
	return rc < 0 ? NULL : PyLong_FromLong(rc);
}

static PyObject *farm_process(FarmObject *self, PyObject *unused)
{
	int rc;

	(void)unused;
	if (farm_check(self))
		return NULL;
	rc = xevb_farm_process(self->f);
	return rc < 0 ? farm_fail(self, rc) : PyLong_FromLong(rc);
}

static PyObject *farm_set_busy(FarmObject *self, PyObject *arg)
{
	long mode = PyLong_AsLong(arg);
	int rc;

	if ((mode == -1 && PyErr_Occurred()) || farm_check(self))
		return NULL;
	rc = xevb_farm_set_busy(self->f, (int)mode);
	if (rc)
		return xp_oserror(rc, "set_busy: a mode of xevb.BUSY_AUTO, BUSY_ON, BUSY_OFF");
	Py_RETURN_NONE;
}

static PyObject *farm_close(FarmObject *self, PyObject *unused)
{
	(void)unused;
	if (!self->f)
		Py_RETURN_NONE;
	if (self->exporting) {
		PyErr_Format(PyExc_BufferError,
			     "%zd events of this farm node still have views (memoryviews, arrays): release them "
			     "(del, or memoryview.release()) before close()",
			     self->exporting);
		return NULL;
	}
	xevb_farm_close(self->f);
	self->f = NULL;
	Py_RETURN_NONE;
}

static PyObject *farm_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (farm_check((FarmObject *)self))
		return NULL;
	Py_INCREF(self);
	return self;
}

static PyObject *farm_exit(FarmObject *self, PyObject *args)
{
	(void)args;
	return farm_close(self, NULL);
}

static PyObject *farm_fileno(FarmObject *self, PyObject *unused)
{
	(void)unused;
	return farm_check(self) ? NULL : PyLong_FromLong(xevb_farm_fd(self->f));
}

static PyObject *farm_stats(FarmObject *self, PyObject *unused)
{
	struct xevb_farm_stats st = { .sz = sizeof(st) };

	(void)unused;
	if (farm_check(self))
		return NULL;
	xevb_farm_stats(self->f, &st);
	return Py_BuildValue(
		"{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,"
		"s:K,s:K,s:O,s:I,s:K}",
		"events", st.events, "complete", st.complete, "incomplete", st.incomplete, "bytes", st.bytes,
		"frags", st.frags, "missing_frags", st.missing_frags, "done", st.done, "held", st.held, "crc_bad",
		st.crc_bad, "conns_total", st.conns_total, "conns_open", st.conns_open, "conns_broken",
		st.conns_broken, "conns_refused", st.conns_refused, "truncated", st.truncated, "buffer_bytes",
		st.buffer_bytes, "read_pauses", st.read_pauses, "status_sent", st.status_sent, "received_sent",
		st.received_sent, "ctl_refused", st.ctl_refused, "ctl_unexpected", st.ctl_unexpected, "busy_on",
		st.busy_on, "busy_off", st.busy_off, "busy", st.busy ? Py_True : Py_False, "n_builders",
		st.n_builders, "handed", (unsigned long long)self->handed);
}

static PyObject *builder_dict(const struct xevb_farm_builder *b)
{
	const uint8_t *a = (const uint8_t *)&b->addr;

	return Py_BuildValue("{s:N,s:H,s:H,s:I,s:I,s:K,s:K,s:K}", "addr",
			     PyUnicode_FromFormat("%u.%u.%u.%u", a[0], a[1], a[2], a[3]), "ctl_port", b->ctl_port,
			     "conns_open", b->conns_open, "epoch", b->epoch, "connections", b->connections,
			     "events", b->events, "done", b->done, "conn_done", b->conn_done);
}

static PyObject *farm_builders(FarmObject *self, PyObject *unused)
{
	struct xevb_farm_builder b = { .sz = sizeof(b) };
	PyObject *l, *d;

	(void)unused;
	if (farm_check(self) || !(l = PyList_New(0)))
		return NULL;
	for (uint32_t i = 0; xevb_farm_builder(self->f, i, &b) == 0; i++) {
		if (!(d = builder_dict(&b)) || PyList_Append(l, d)) {
			Py_XDECREF(d);
			Py_DECREF(l);
			return NULL;
		}
		Py_DECREF(d);
	}
	return l;
}

static PyObject *farm_get_port(FarmObject *self, void *ctl)
{
	if (farm_check(self))
		return NULL;
	return PyLong_FromLong(ctl ? xevb_farm_ctl_port(self->f) : xevb_farm_port(self->f));
}

static PyObject *farm_get_error(FarmObject *self, void *c)
{
	(void)c;
	return farm_check(self) ? NULL : PyUnicode_DecodeFSDefault(xevb_farm_error(self->f));
}

static PyObject *farm_get_run_end(FarmObject *self, void *c)
{
	(void)c;
	return farm_check(self) ? NULL : PyLong_FromUnsignedLong(xevb_farm_run_end(self->f));
}

static PyObject *farm_get_closed(FarmObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(!self->f);
}

static PyGetSetDef farm_getset[] = {
	{ "port", (getter)farm_get_port, NULL, PyDoc_STR("the TCP port builders connect to"), NULL },
	{ "ctl_port", (getter)farm_get_port, NULL, PyDoc_STR("the control protocol's UDP port (0: none)"),
	  (void *)1 },
	{ "error", (getter)farm_get_error, NULL, PyDoc_STR("the last failure, as a sentence"), NULL },
	{ "run_end", (getter)farm_get_run_end, NULL,
	  PyDoc_STR(
		  "the end of the run: flags xevb.END_STREAMS, END_DFM, END_RUN (the run is over, all handed out)"),
	  NULL },
	{ "closed", (getter)farm_get_closed, NULL, NULL, NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef farm_methods[] = {
	{ "next", (PyCFunction)(void (*)(void))farm_next, METH_VARARGS | METH_KEYWORDS,
	  PyDoc_STR("next(timeout=0) -> the next Event, or None (timeout in s; None: wait for ever)") },
	{ "poll", (PyCFunction)(void (*)(void))farm_poll, METH_VARARGS | METH_KEYWORDS,
	  PyDoc_STR("poll(timeout=None) -> events ready, after waiting up to timeout s for work") },
	{ "process", (PyCFunction)farm_process, METH_NOARGS,
	  PyDoc_STR("process() -> events ready: do what is due, without blocking (after fileno() is readable)") },
	{ "fileno", (PyCFunction)farm_fileno, METH_NOARGS,
	  PyDoc_STR("fileno(): readable when there is work (selectors, asyncio add_reader)") },
	{ "set_busy", (PyCFunction)farm_set_busy, METH_O,
	  PyDoc_STR("set_busy(xevb.BUSY_AUTO | BUSY_ON | BUSY_OFF)") },
	{ "stats", (PyCFunction)farm_stats, METH_NOARGS,
	  PyDoc_STR("stats() -> dict of the farm node's counters") },
	{ "builders", (PyCFunction)farm_builders, METH_NOARGS,
	  PyDoc_STR("builders() -> a list of dicts, one per builder address seen") },
	{ "close", (PyCFunction)farm_close, METH_NOARGS,
	  PyDoc_STR("close(): final RECEIVED, every socket closed (BufferError while events have views)") },
	{ "__enter__", farm_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)farm_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject Farm_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xevb.Farm",
	.tp_basicsize = sizeof(FarmObject),
	.tp_dealloc = (destructor)farm_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = (traverseproc)farm_traverse,
	.tp_clear = (inquiry)farm_clear,
	.tp_doc = PyDoc_STR(
		"Farm(listen=None, *, no_ctl=False, verify_crc=False, credits=0, ctl_port=0, ctl_any_port=False,\n"
		"     id=0, dfm=None, key_file=None, run_config=None, busy_high=0.0, busy_low=0.0, max_event=0,\n"
		"     max_conns=0, max_buffer=0, log=None, partial_timeout_ms=0)\n"
		"A farm node: builders connect to listen ('ADDR:PORT'). Iterate for events (blocking),\n"
		"or next(timeout); every event must be done (ev.done(), a with block, or dropped)."),
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = (iternextfunc)farm_iternext,
	.tp_methods = farm_methods,
	.tp_getset = farm_getset,
	.tp_init = (initproc)farm_init,
	.tp_new = PyType_GenericNew,
};
