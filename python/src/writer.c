// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xevb.Writer: run files through the library's writer. Events go in as
 * any bytes-like object holding one encoded event (an Event itself, bytes,
 * a memoryview of a receive buffer), or as a list of pieces (writev). The
 * GIL is released around the library's calls that may write to the disk.
 */
#include "xevbpy.h"

typedef struct {
	PyObject ob_base; /* PyObject_HEAD */
	struct xevb_file_writer *w;
	PyObject *last_path; /* the last file, kept when the writer is closed */
	bool in_call;        /* inside the library without the GIL: the handle is not thread-safe */
} WriterObject;

static int writer_check(WriterObject *self)
{
	if (!self->w) {
		PyErr_SetString(PyExc_ValueError, "I/O operation on a closed xevb.Writer");
		return -1;
	}
	if (self->in_call) {
		PyErr_SetString(PyExc_RuntimeError,
				"xevb.Writer is busy in another thread: use a writer from one "
				"thread at a time");
		return -1;
	}
	return 0;
}

/* GIL released around a library call that may write to the disk. */
#define UNLOCKED(self, stmt) \
	do { \
		PyThreadState *ts_; \
		(self)->in_call = true; \
		ts_ = PyEval_SaveThread(); \
		stmt; \
		PyEval_RestoreThread(ts_); \
		(self)->in_call = false; \
	} while (0)

/* The writer's failure rc as OSError with its sentence. */
static PyObject *writer_fail(WriterObject *self, int rc)
{
	return xp_oserror(rc, xevb_file_writer_error(self->w));
}

/* sources: an iterable of source ids -> a uint16 array (PyMem). */
static int get_sources(PyObject *seq, uint16_t **out, uint16_t *n)
{
	PyObject *fast = PySequence_Fast(seq, "sources: a sequence of source ids");
	Py_ssize_t len;

	if (!fast)
		return -1;
	len = PySequence_Fast_GET_SIZE(fast);
	if (len > 4096 || !(*out = PyMem_Malloc((size_t)(len ? len : 1) * sizeof(**out)))) {
		Py_DECREF(fast);
		if (len > 4096)
			PyErr_SetString(PyExc_ValueError, "sources: 4096 at most");
		return -1;
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
		if (v < 0 || v > 4095) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_ValueError, "sources: %ld is not a source id (0..4095)", v);
			Py_DECREF(fast);
			return -1;
		}
		(*out)[i] = (uint16_t)v;
	}
	*n = (uint16_t)len;
	Py_DECREF(fast);
	return 0;
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

static int writer_init(WriterObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path",       "dir",     "prefix",       "run_number", "first_seq",
				  "builder_id", "sources", "builder_name", "max_bytes",  "max_events",
				  "next_name",  "fsync",   "verify",       NULL };
	PyObject *path = NULL, *dir = NULL, *prefix = NULL, *name = NULL, *sources = NULL;
	PyObject *path_o = Py_None, *dir_o = Py_None, *prefix_o = Py_None, *name_o = Py_None;
	unsigned int run = 0, first_seq = 0;
	unsigned short builder_id = 0, n_src = 0;
	unsigned long long max_bytes = 0, max_events = 0;
	int next_name = 0, fsync = 1, verify = 0, rc = -1;
	char err[XEVB_ERRBUF_SIZE] = "";
	uint16_t *src = NULL;

	if (self->w) {
		PyErr_SetString(PyExc_RuntimeError, "xevb.Writer initialised twice");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$OOIIHOOKKppp", kwlist, &path_o, &dir_o, &prefix_o, &run,
					 &first_seq, &builder_id, &sources, &name_o, &max_bytes, &max_events,
					 &next_name, &fsync, &verify))
		return -1;
	if (!fs_opt(path_o, &path) || !fs_opt(dir_o, &dir) || !fs_opt(prefix_o, &prefix) ||
	    (name_o != Py_None && !(name = PyUnicode_AsUTF8String(name_o))) ||
	    (sources && get_sources(sources, &src, &n_src)))
		goto out;
	XEVB_OPTS(xevb_file_writer_opts, o, .dir = opt_str(dir), .prefix = opt_str(prefix), .path = opt_str(path),
		  .run_number = run, .first_seq = first_seq, .builder_id = builder_id, .n_sources = n_src,
		  .sources = src, .builder_name = opt_str(name), .max_bytes = max_bytes, .max_events = max_events,
		  .flags = (next_name ? XEVB_FW_NEXT_NAME : 0) | (fsync ? 0 : XEVB_FW_NO_FSYNC) |
			   (verify ? XEVB_FW_VERIFY : 0));
	UNLOCKED(self, self->w = xevb_file_writer_open(&o, err));
	if (!self->w) {
		xp_oserror_buf(errno, err);
		goto out;
	}
	rc = 0;
out:
	Py_XDECREF(path);
	Py_XDECREF(dir);
	Py_XDECREF(prefix);
	Py_XDECREF(name);
	PyMem_Free(src);
	return rc;
}

static void writer_dealloc(WriterObject *self)
{
	/* Dropped without close(): finish the file (a file closed late beats one read as cut). */
	if (self->w)
		xevb_file_writer_close(self->w);
	Py_XDECREF(self->last_path);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *writer_write(WriterObject *self, PyObject *arg)
{
	Py_buffer b;
	int rc;

	if (writer_check(self) || PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE))
		return NULL;
	UNLOCKED(self, rc = xevb_file_writer_write(self->w, b.buf, (size_t)b.len));
	PyBuffer_Release(&b);
	if (rc)
		return writer_fail(self, rc);
	Py_RETURN_NONE;
}

/* writev(pieces): one event in pieces (the header, the records, ...). */
static PyObject *writer_writev(WriterObject *self, PyObject *arg)
{
	PyObject *fast = NULL, *res = NULL;
	Py_buffer *bufs = NULL;
	struct iovec *iov = NULL;
	Py_ssize_t n, got = 0;
	int rc;

	if (writer_check(self) || !(fast = PySequence_Fast(arg, "writev: a sequence of bytes-like pieces")))
		return NULL;
	n = PySequence_Fast_GET_SIZE(fast);
	bufs = PyMem_Calloc((size_t)(n ? n : 1), sizeof(*bufs));
	iov = PyMem_Calloc((size_t)(n ? n : 1), sizeof(*iov));
	if (!bufs || !iov) {
		PyErr_NoMemory();
		goto out;
	}
	for (; got < n; got++) {
		if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(fast, got), &bufs[got], PyBUF_SIMPLE))
			goto out;
		iov[got].iov_base = bufs[got].buf;
		iov[got].iov_len = (size_t)bufs[got].len;
	}
	UNLOCKED(self, rc = xevb_file_writer_writev(self->w, iov, (int)n));
	res = rc ? writer_fail(self, rc) : Py_NewRef(Py_None);
out:
	while (got--)
		PyBuffer_Release(&bufs[got]);
	PyMem_Free(bufs);
	PyMem_Free(iov);
	Py_DECREF(fast);
	return res;
}

/* rotate() and flush(): the library call, GIL released. */
static PyObject *writer_call(WriterObject *self, int (*fn)(struct xevb_file_writer *))
{
	int rc;

	if (writer_check(self))
		return NULL;
	UNLOCKED(self, rc = fn(self->w));
	if (rc)
		return writer_fail(self, rc);
	Py_RETURN_NONE;
}

static PyObject *writer_rotate(WriterObject *self, PyObject *unused)
{
	(void)unused;
	return writer_call(self, xevb_file_writer_rotate);
}

static PyObject *writer_flush(WriterObject *self, PyObject *unused)
{
	(void)unused;
	return writer_call(self, xevb_file_writer_flush);
}

static PyObject *writer_close(WriterObject *self, PyObject *unused)
{
	struct xevb_file_writer *w = self->w;
	char err[XEVB_ERRBUF_SIZE];
	int rc;

	(void)unused;
	if (!w)
		Py_RETURN_NONE;
	if (writer_check(self))
		return NULL;
	Py_XSETREF(self->last_path, PyUnicode_DecodeFSDefault(xevb_file_writer_path(w)));
	if (!self->last_path)
		return NULL;
	self->w = NULL;
	UNLOCKED(self, rc = xevb_file_writer_close(w));
	if (rc) {
		/* The handle is gone with its sentence: say what failed from errno. */
		snprintf(err, sizeof(err), "closing %s: %s (the file reads as cut)",
			 PyUnicode_AsUTF8(self->last_path), strerror(-rc));
		return xp_oserror(rc, err);
	}
	Py_RETURN_NONE;
}

static PyObject *writer_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (writer_check((WriterObject *)self))
		return NULL;
	Py_INCREF(self);
	return self;
}

static PyObject *writer_exit(WriterObject *self, PyObject *args)
{
	(void)args;
	return writer_close(self, NULL);
}

static PyObject *writer_get_path(WriterObject *self, void *c)
{
	(void)c;
	if (!self->w)
		return Py_NewRef(self->last_path ? self->last_path : Py_None);
	return PyUnicode_DecodeFSDefault(xevb_file_writer_path(self->w));
}

static PyObject *writer_get_closed(WriterObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(!self->w);
}

static PyObject *writer_stats(WriterObject *self, PyObject *unused)
{
	struct xevb_file_writer_stats st = { .sz = sizeof(st) };

	(void)unused;
	if (writer_check(self))
		return NULL;
	xevb_file_writer_stats(self->w, &st);
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:I,s:O}", "files", st.files, "events", st.events, "bytes",
			     st.bytes, "file_events", st.file_events, "file_bytes", st.file_bytes, "seq", st.seq,
			     "broken", st.broken ? Py_True : Py_False);
}

static PyGetSetDef writer_getset[] = {
	{ "path", (getter)writer_get_path, NULL, PyDoc_STR("the file being written (the last one once closed)"),
	  NULL },
	{ "closed", (getter)writer_get_closed, NULL, NULL, NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef writer_methods[] = {
	{ "write", (PyCFunction)writer_write, METH_O, PyDoc_STR("write(event): one encoded event (bytes-like)") },
	{ "writev", (PyCFunction)writer_writev, METH_O, PyDoc_STR("writev(pieces): one event in pieces") },
	{ "rotate", (PyCFunction)writer_rotate, METH_NOARGS,
	  PyDoc_STR("rotate(): finish this file and start the next") },
	{ "flush", (PyCFunction)writer_flush, METH_NOARGS,
	  PyDoc_STR("flush(): hand what is buffered to the kernel") },
	{ "close", (PyCFunction)writer_close, METH_NOARGS, PyDoc_STR("close(): trailer, fsync, close") },
	{ "stats", (PyCFunction)writer_stats, METH_NOARGS,
	  PyDoc_STR("stats() -> dict: files, events, bytes, ...") },
	{ "__enter__", writer_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)writer_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject Writer_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xevb.Writer",
	.tp_basicsize = sizeof(WriterObject),
	.tp_dealloc = (destructor)writer_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc =
		PyDoc_STR("Writer(path=None, *, dir=None, prefix=None, run_number=0, first_seq=0, builder_id=0,\n"
			  "       sources=(), builder_name=None, max_bytes=0, max_events=0, next_name=False,\n"
			  "       fsync=True, verify=False)\n"
			  "Run files: never over an existing file (FileExistsError unless next_name);\n"
			  "rotated at max_bytes / max_events when writing by dir and run_number."),
	.tp_methods = writer_methods,
	.tp_getset = writer_getset,
	.tp_init = (initproc)writer_init,
	.tp_new = PyType_GenericNew,
};
