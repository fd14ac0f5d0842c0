// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xevb.Reader: a run file (or a plain event stream), mapped by the
 * library; every event and view points into the mapping. Iterating gives
 * Event objects; read(n) a list of up to n; batches(n) Batch objects
 * (columns and, for events of one layout, one 3-D view of every payload).
 * The end of the file raises nothing when it was closed or cut (state
 * says which); a broken file raises CorruptFileError where it breaks.
 */
#include "xevbpy.h"

typedef struct {
	ReaderObject base;
	struct xevb_file_info last; /* the handle's info, kept when it is closed */
	PyObject *name, *sources;   /* the header's builder name and source list */
	char err[XEVB_ERRBUF_SIZE]; /* the handle's last sentence, kept when it is closed */
} ReaderFull;

void xp_reader_unref(ReaderObject *r)
{
	ReaderFull *rf = (ReaderFull *)r;

	if (--r->live || !r->closed || !r->r)
		return;
	/* No Python API here: this runs from deallocs, maybe while an exception propagates. */
	rf->last = *xevb_file_reader_info(r->r);
	snprintf(rf->err, sizeof(rf->err), "%s", xevb_file_reader_error(r->r));
	xevb_file_reader_close(r->r);
	r->r = NULL;
}

int xp_reader_check(ReaderObject *r)
{
	if (r->closed || !r->r) {
		PyErr_SetString(PyExc_ValueError, "I/O operation on a closed xevb.Reader");
		return -1;
	}
	return 0;
}

static PyObject *sources_tuple(const struct xevb_file_info *i)
{
	PyObject *t = PyTuple_New(i->n_sources);

	for (uint32_t k = 0; t && k < i->n_sources; k++)
		PyTuple_SET_ITEM(t, k, PyLong_FromLong(i->sources[k]));
	return t;
}

static int reader_init(ReaderFull *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "verify_crc", "max_event", NULL };
	char err[XEVB_ERRBUF_SIZE] = "";
	PyObject *path = NULL;
	int verify = 0;
	unsigned int max_event = 0;

	if (self->base.r || self->base.closed) {
		PyErr_SetString(PyExc_RuntimeError, "xevb.Reader initialised twice");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$pI", kwlist, PyUnicode_FSConverter, &path, &verify,
					 &max_event))
		return -1;
	XEVB_OPTS(xevb_file_reader_opts, o, .flags = verify ? XEVB_FR_VERIFY_CRC : 0, .max_event = max_event);
	self->base.r = xevb_file_reader_open(PyBytes_AS_STRING(path), &o, err);
	if (!self->base.r) {
		xp_oserror_buf(errno, err);
		Py_DECREF(path);
		return -1;
	}
	self->base.path = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
	Py_DECREF(path);
	self->name = PyUnicode_DecodeUTF8(xevb_file_reader_info(self->base.r)->builder_name,
					  strlen(xevb_file_reader_info(self->base.r)->builder_name), "replace");
	self->sources = sources_tuple(xevb_file_reader_info(self->base.r));
	return self->base.path && self->name && self->sources ? 0 : -1;
}

static void reader_dealloc(ReaderFull *self)
{
	/* Every event holds us: none is left. */
	if (self->base.r)
		xevb_file_reader_close(self->base.r);
	Py_XDECREF(self->base.path);
	Py_XDECREF(self->name);
	Py_XDECREF(self->sources);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The end or a failure of xevb_file_reader_next (rc <= 0): NULL, an exception set unless at the end. */
PyObject *xp_reader_fail(ReaderObject *self, int rc)
{
	if (rc == 0) {
		self->ended = true;
		return NULL;
	}
	if (rc == -EBADMSG) {
		PyObject *a = Py_BuildValue("(is)", EBADMSG, xevb_file_reader_error(self->r));
		if (a)
			PyErr_SetObject(CorruptFileError, a);
		Py_XDECREF(a);
		return NULL;
	}
	return xp_oserror(rc, xevb_file_reader_error(self->r));
}

/* The next event as an Event, or NULL (the end: no exception; or one set). */
static PyObject *reader_next_event(ReaderObject *self)
{
	const struct xevb_ev *ev;
	EventObject *e;
	int rc;

	xp_reader_detach(self);
	rc = xevb_file_reader_next(self->r, &ev);
	if (rc != 1)
		return xp_reader_fail(self, rc);
	if (!(e = xp_event_new((PyObject *)self, ev, EV_FILE)))
		return NULL;
	self->live++;
	self->current = e;
	return (PyObject *)e;
}

static PyObject *reader_iternext(ReaderObject *self)
{
	if (xp_reader_check(self))
		return NULL;
	return reader_next_event(self);
}

static PyObject *reader_iter(PyObject *self)
{
	if (xp_reader_check((ReaderObject *)self))
		return NULL;
	Py_INCREF(self);
	return self;
}

static PyObject *reader_read(ReaderObject *self, PyObject *args)
{
	Py_ssize_t n = 1024;
	PyObject *l, *e;

	if (!PyArg_ParseTuple(args, "|n", &n) || xp_reader_check(self))
		return NULL;
	if (n < 0) {
		PyErr_SetString(PyExc_ValueError, "read(n): n >= 0");
		return NULL;
	}
	if (!(l = PyList_New(0)))
		return NULL;
	while (PyList_GET_SIZE(l) < n && (e = reader_next_event(self))) {
		int rc = PyList_Append(l, e);
		Py_DECREF(e);
		if (rc)
			break;
	}
	if (PyErr_Occurred()) {
		Py_DECREF(l);
		return NULL;
	}
	return l;
}

static PyObject *reader_batches(ReaderObject *self, PyObject *args)
{
	Py_ssize_t n = 1024;

	if (!PyArg_ParseTuple(args, "|n", &n) || xp_reader_check(self))
		return NULL;
	if (n < 1) {
		PyErr_SetString(PyExc_ValueError, "batches(n): n >= 1");
		return NULL;
	}
	return xp_batch_iter_new(self, n);
}

static PyObject *reader_close(ReaderObject *self, PyObject *unused)
{
	(void)unused;
	if (self->closed)
		Py_RETURN_NONE;
	self->closed = true;
	/* As if an event went: the handle closes now unless events still point into it. */
	self->live++;
	xp_reader_unref(self);
	Py_RETURN_NONE;
}

static PyObject *reader_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (xp_reader_check((ReaderObject *)self))
		return NULL;
	Py_INCREF(self);
	return self;
}

static PyObject *reader_exit(ReaderObject *self, PyObject *args)
{
	(void)args;
	return reader_close(self, NULL);
}

static const struct xevb_file_info *rinfo(ReaderFull *self)
{
	return self->base.r ? xevb_file_reader_info(self->base.r) : &self->last;
}

static PyObject *reader_get_state(ReaderFull *self, void *c)
{
	(void)c;
	return PyUnicode_FromString(xevb_file_state_name(rinfo(self)->state));
}

static PyObject *reader_get_error(ReaderFull *self, void *c)
{
	(void)c;
	return PyUnicode_DecodeFSDefault(self->base.r ? xevb_file_reader_error(self->base.r) : self->err);
}

static PyObject *reader_get_u64(ReaderFull *self, void *off)
{
	const uint8_t *p = (const uint8_t *)rinfo(self) + (uintptr_t)off;

	return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
}

static PyObject *reader_get_u32(ReaderFull *self, void *off)
{
	const uint8_t *p = (const uint8_t *)rinfo(self) + (uintptr_t)off;

	return PyLong_FromUnsignedLong(*(const uint32_t *)p);
}

static PyObject *reader_get_u16(ReaderFull *self, void *off)
{
	const uint8_t *p = (const uint8_t *)rinfo(self) + (uintptr_t)off;

	return PyLong_FromLong(*(const uint16_t *)p);
}

static PyObject *reader_get_obj(ReaderFull *self, void *off)
{
	PyObject *o = *(PyObject **)((char *)self + (uintptr_t)off);

	return Py_NewRef(o ? o : Py_None);
}

static PyObject *reader_get_closed(ReaderObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(self->closed);
}

/* Everything known of the file, as a dict. */
static PyObject *reader_info(ReaderFull *self, PyObject *unused)
{
	const struct xevb_file_info *i = rinfo(self);
	bool trailer = i->trailer_flags || i->state == XEVB_FILE_CLOSED;

	(void)unused;
	return Py_BuildValue(
		"{s:O,s:s,s:I,s:I,s:I,s:H,s:O,s:O,s:K,s:K,s:K,s:I,s:K,s:N}", "path", self->base.path, "state",
		xevb_file_state_name(i->state), "format_version", i->format_version, "run_number", i->run_number,
		"seq", i->seq, "builder_id", i->builder_id, "builder_name", self->name, "sources", self->sources,
		"start_ns", i->start_ns, "events", i->events, "bytes", i->bytes, "checksum", i->checksum,
		"cut_bytes", i->cut_bytes, "trailer",
		trailer ? Py_BuildValue("{s:I,s:O,s:O,s:K,s:K,s:K,s:I}", "flags", i->trailer_flags, "clean",
					(i->trailer_flags & XEVB_FILE_T_CLEAN) ? Py_True : Py_False, "continued",
					(i->trailer_flags & XEVB_FILE_T_CONTINUED) ? Py_True : Py_False, "events",
					i->trailer_events, "bytes", i->trailer_bytes, "end_ns", i->end_ns,
					"checksum", i->trailer_checksum) :
			  Py_NewRef(Py_None));
}

static PyObject *reader_repr(ReaderFull *self)
{
	const struct xevb_file_info *i = rinfo(self);

	return PyUnicode_FromFormat("<xevb.Reader %R: run %u file %u, %s, %llu events read>", self->base.path,
				    i->run_number, i->seq, xevb_file_state_name(i->state),
				    (unsigned long long)i->events);
}

#define INFO_OFF(f) ((void *)(uintptr_t)offsetof(struct xevb_file_info, f))

static PyGetSetDef reader_getset[] = {
	{ "state", (getter)reader_get_state, NULL,
	  PyDoc_STR("'reading', 'closed' (the writer finished it), 'cut' (no trailer), 'corrupt', 'raw'"), NULL },
	{ "error", (getter)reader_get_error, NULL, PyDoc_STR("the last failure, or how the file ended"), NULL },
	{ "run_number", (getter)reader_get_u32, NULL, NULL, INFO_OFF(run_number) },
	{ "seq", (getter)reader_get_u32, NULL, PyDoc_STR("the file's sequence number in its run"), INFO_OFF(seq) },
	{ "builder_id", (getter)reader_get_u16, NULL, NULL, INFO_OFF(builder_id) },
	{ "start_ns", (getter)reader_get_u64, NULL, PyDoc_STR("CLOCK_REALTIME ns when the file was created"),
	  INFO_OFF(start_ns) },
	{ "events", (getter)reader_get_u64, NULL, PyDoc_STR("events read so far"), INFO_OFF(events) },
	{ "bytes", (getter)reader_get_u64, NULL, PyDoc_STR("their bytes"), INFO_OFF(bytes) },
	{ "cut_bytes", (getter)reader_get_u64, NULL, PyDoc_STR("bytes after the last whole event (state 'cut')"),
	  INFO_OFF(cut_bytes) },
	{ "path", (getter)reader_get_obj, NULL, NULL, (void *)offsetof(ReaderObject, path) },
	{ "builder_name", (getter)reader_get_obj, NULL, NULL, (void *)offsetof(ReaderFull, name) },
	{ "sources", (getter)reader_get_obj, NULL, PyDoc_STR("configured source ids (the file header's)"),
	  (void *)offsetof(ReaderFull, sources) },
	{ "closed", (getter)reader_get_closed, NULL, NULL, NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef reader_methods[] = {
	{ "read", (PyCFunction)reader_read, METH_VARARGS,
	  PyDoc_STR("read(n=1024) -> a list of up to n events ([] at the end)") },
	{ "batches", (PyCFunction)reader_batches, METH_VARARGS,
	  PyDoc_STR("batches(n=1024) -> an iterator of Batch objects of up to n events") },
	{ "info", (PyCFunction)reader_info, METH_NOARGS, PyDoc_STR("info() -> a dict: header, trailer, counts") },
	{ "close", (PyCFunction)reader_close, METH_NOARGS,
	  PyDoc_STR("close(): the file is unmapped once no event of it is left") },
	{ "__enter__", reader_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)reader_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject Reader_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xevb.Reader",
	.tp_basicsize = sizeof(ReaderFull),
	.tp_dealloc = (destructor)reader_dealloc,
	.tp_repr = (reprfunc)reader_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = PyDoc_STR("Reader(path, *, verify_crc=False, max_event=0): a run file's events, zero-copy.\n"
			    "Iterate for Event objects; read(n) or batches(n) for many at once."),
	.tp_iter = reader_iter,
	.tp_iternext = (iternextfunc)reader_iternext,
	.tp_methods = reader_methods,
	.tp_getset = reader_getset,
	.tp_init = (initproc)reader_init,
	.tp_new = PyType_GenericNew,
};
