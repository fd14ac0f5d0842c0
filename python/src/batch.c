// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xevb.Batch: up to n consecutive events of a Reader, read in one call.
 * What makes it fast is that Python touches the batch, not each event:
 * the header fields are columns (typed memoryviews, numpy.asarray gives
 * arrays without a copy), and when every event has one layout (the same
 * sources, each with fragments of one length, as in a trigger stream of
 * fixed-size fragments) matrix() is one 3-D view of every payload:
 * events x fragments x bytes, strided over the mapped file. Single events
 * are still there: batch[i] is an Event like the reader's.
 */
#include "xevbpy.h"

/* Columns exported as typed 1-D views. */
enum col { C_EVENT_ID, C_RUN, C_FLAGS, C_N_FRAGS, C_N_EXPECTED, C_LENGTH, C_BUILD_NS, C_SEQ, C_OFFSET, C_NCOLS };

static const struct {
	const char *name, *fmt;
	Py_ssize_t size;
} cols[C_NCOLS] = {
	[C_EVENT_ID] = { "event_id", "I", 4 },     [C_RUN] = { "run_number", "I", 4 },
	[C_FLAGS] = { "flags", "I", 4 },           [C_N_FRAGS] = { "n_frags", "H", 2 },
	[C_N_EXPECTED] = { "n_expected", "H", 2 }, [C_LENGTH] = { "length", "I", 4 },
	[C_BUILD_NS] = { "build_ns", "Q", 8 },     [C_SEQ] = { "seq", "Q", 8 },
	[C_OFFSET] = { "offset", "Q", 8 },
};

typedef struct {
	PyObject ob_base; /* PyObject_HEAD */
	ReaderObject *reader;
	Py_ssize_t n;
	struct xevb_ev *evs;         /* header copies; data points into the mapping */
	void *col[C_NCOLS];          /* built on first use */
	uint16_t *src;               /* the first event's source ids (uniform check) */
	Py_ssize_t p0off, rec, flen; /* the first event's first payload offset, record stride, fragment length */
	bool uniform;
	Py_ssize_t exports;
	/* What the next buffer request exports. */
	int pend; /* 0 none, 1 bytes, 2 a column, 3 the matrix */
	const void *pend_ptr;
	Py_ssize_t pend_len;
	enum col pend_col;
	Py_ssize_t shape[3], strides[3];
} BatchObject;

typedef struct {
	PyObject ob_base; /* PyObject_HEAD */
	ReaderObject *reader;
	Py_ssize_t n;
} BatchIterObject;

/* The first event's layout: where its first payload sits, the record stride, the fragment length. */
static bool first_layout(BatchObject *b, const struct xevb_ev *ev)
{
	struct xevb_ev_frag f0, f;

	b->p0off = 0;
	b->rec = 0;
	b->flen = 0;
	if (!ev->n_frags)
		return true;
	xevb_ev_frag(ev, 0, &f0);
	b->p0off = f0.payload - ev->data;
	b->rec = 12 + ((f0.length + 3) & ~3u);
	b->flen = f0.length;
	if (xp_first_unequal(f0.payload, ev->n_frags, f0.length, (size_t)b->rec))
		return false;
	for (uint32_t i = 0; i < ev->n_frags; i++) {
		xevb_ev_frag(ev, i, &f);
		b->src[i] = f.source_id;
	}
	return true;
}

/*
 * Has event k the first event's layout, right after the one before it in
 * the mapping? Then its record headers (source_id, reserved, length: the
 * first 8 bytes of each) equal the first event's at the same places, read
 * in order as xp_first_unequal reads them.
 */
static bool same_layout(BatchObject *b, const struct xevb_ev *ev, Py_ssize_t k)
{
	const struct xevb_ev *e0 = &b->evs[0];
	const uint8_t *h = ev->data + b->p0off - 12, *h0 = e0->data + b->p0off - 12;

	if (ev->length != e0->length || ev->n_frags != e0->n_frags || ev->data != e0->data + k * e0->length)
		return false;
	for (uint32_t i = 0; i < ev->n_frags; i++, h += b->rec, h0 += b->rec)
		if (memcmp(h, h0, 8))
			return false;
	return true;
}

/* Up to b->n events into b: 0, or -1 (the file ended: no exception; or one set). */
static int batch_fill(BatchObject *b, ReaderObject *r)
{
	const struct xevb_ev *ev;
	Py_ssize_t k;
	int rc = 1;

	xp_reader_detach(r);
	for (k = 0; k < b->n && (rc = xevb_file_reader_next(r->r, &ev)) == 1; k++) {
		b->evs[k] = *ev;
		if (k == 0)
			b->uniform = first_layout(b, ev);
		else if (b->uniform)
			b->uniform = same_layout(b, ev, k);
	}
	b->n = k;
	/* A failure after some events: those first; the next call raises (the reader stays corrupt). */
	if (!k)
		xp_reader_fail(r, rc);
	return k ? 0 : -1;
}

static PyObject *batch_new(ReaderObject *r, Py_ssize_t n)
{
	BatchObject *b = PyObject_New(BatchObject, &Batch_Type);

	if (!b)
		return NULL;
	b->reader = r;
	Py_INCREF(r);
	r->live++;
	b->n = n;
	memset(b->col, 0, sizeof(b->col));
	b->exports = 0;
	b->pend = 0;
	b->uniform = false;
	b->evs = PyMem_Malloc((size_t)n * sizeof(*b->evs));
	b->src = PyMem_Malloc(4096 * sizeof(*b->src));
	if (!b->evs || !b->src) {
		Py_DECREF(b);
		return PyErr_NoMemory();
	}
	if (batch_fill(b, r)) {
		Py_DECREF(b);
		return NULL;
	}
	b->shape[0] = b->n;
	b->shape[1] = b->evs[0].n_frags;
	b->shape[2] = b->flen;
	b->strides[0] = b->evs[0].length;
	b->strides[1] = b->rec;
	b->strides[2] = 1;
	return (PyObject *)b;
}

static void batch_dealloc(BatchObject *b)
{
	for (int c = 0; c < C_NCOLS; c++)
		PyMem_Free(b->col[c]);
	PyMem_Free(b->evs);
	PyMem_Free(b->src);
	xp_reader_unref(b->reader);
	Py_DECREF(b->reader);
	PyObject_Free(b);
}

static Py_ssize_t batch_len(BatchObject *b)
{
	return b->n;
}

static PyObject *batch_item(BatchObject *b, Py_ssize_t i)
{
	EventObject *e;

	if (i < 0 || i >= b->n) {
		PyErr_Format(PyExc_IndexError, "event %zd of a batch of %zd", i, b->n);
		return NULL;
	}
	/* The library's view is gone: the event decodes its bytes again if its fragments are asked for. */
	if (!(e = xp_event_new((PyObject *)b->reader, &b->evs[i], EV_FILE)))
		return NULL;
	e->view = NULL;
	b->reader->live++;
	return (PyObject *)e;
}

static void col_fill(BatchObject *b, enum col c, void *p)
{
	for (Py_ssize_t k = 0; k < b->n; k++) {
		const struct xevb_ev *e = &b->evs[k];
		switch (c) {
		case C_EVENT_ID:
			((uint32_t *)p)[k] = e->event_id;
			break;
		case C_RUN:
			((uint32_t *)p)[k] = e->run_number;
			break;
		case C_FLAGS:
			((uint32_t *)p)[k] = e->flags;
			break;
		case C_N_FRAGS:
			((uint16_t *)p)[k] = e->n_frags;
			break;
		case C_N_EXPECTED:
			((uint16_t *)p)[k] = e->n_expected;
			break;
		case C_LENGTH:
			((uint32_t *)p)[k] = e->length;
			break;
		case C_BUILD_NS:
			((uint64_t *)p)[k] = e->build_ns;
			break;
		case C_SEQ:
			((uint64_t *)p)[k] = e->seq;
			break;
		default:
			((uint64_t *)p)[k] = (uint64_t)(e->data - b->evs[0].data);
		}
	}
}

static PyObject *export(BatchObject *b, int what, const void *p, Py_ssize_t len)
{
	PyObject *mv;

	b->pend = what;
	b->pend_ptr = p;
	b->pend_len = len;
	mv = PyMemoryView_FromObject((PyObject *)b);
	b->pend = 0;
	return mv;
}

static PyObject *batch_get_col(BatchObject *b, void *which)
{
	enum col c = (enum col)(uintptr_t)which;

	if (!b->col[c]) {
		if (!(b->col[c] = PyMem_Malloc((size_t)(b->n ? b->n : 1) * (size_t)cols[c].size)))
			return PyErr_NoMemory();
		col_fill(b, c, b->col[c]);
	}
	b->pend_col = c;
	return export(b, 2, b->col[c], b->n * cols[c].size);
}

static PyObject *batch_get_data(BatchObject *b, void *unused)
{
	const struct xevb_ev *last = &b->evs[b->n - 1];

	(void)unused;
	return export(b, 1, b->evs[0].data, last->data + last->length - b->evs[0].data);
}

static PyObject *batch_get_uniform(BatchObject *b, void *unused)
{
	(void)unused;
	return PyBool_FromLong(b->uniform);
}

static PyObject *batch_get_sources(BatchObject *b, void *unused)
{
	PyObject *t;

	(void)unused;
	if (!b->uniform)
		Py_RETURN_NONE;
	if (!(t = PyTuple_New(b->shape[1])))
		return NULL;
	for (Py_ssize_t i = 0; i < b->shape[1]; i++)
		PyTuple_SET_ITEM(t, i, PyLong_FromLong(b->src[i]));
	return t;
}

static PyObject *batch_matrix(BatchObject *b, PyObject *unused)
{
	(void)unused;
	if (!b->uniform) {
		PyErr_SetString(PyExc_ValueError,
				"the batch's events differ in layout (sources or fragment lengths): "
				"no matrix; use each event's matrix() or payloads()");
		return NULL;
	}
	return export(b, 3, b->evs[0].data + b->p0off, b->shape[0] * b->shape[1] * b->shape[2]);
}

static int batch_getbuffer(BatchObject *b, Py_buffer *v, int flags)
{
	int what = b->pend;

	v->obj = NULL;
	b->pend = 0;
	if (!what) {
		/* memoryview(batch): its bytes. */
		const struct xevb_ev *last = &b->evs[b->n - 1];
		what = 1;
		b->pend_ptr = b->evs[0].data;
		b->pend_len = last->data + last->length - b->evs[0].data;
	}
	if (what == 1) {
		if (PyBuffer_FillInfo(v, (PyObject *)b, (void *)b->pend_ptr, b->pend_len, 1, flags))
			return -1;
		b->exports++;
		return 0;
	}
	if ((flags & PyBUF_WRITABLE) || (what == 3 && (flags & PyBUF_STRIDES) != PyBUF_STRIDES)) {
		PyErr_SetString(PyExc_BufferError,
				"batch views are read-only; columns are typed, the matrix strided");
		return -1;
	}
	v->buf = (void *)b->pend_ptr;
	v->obj = (PyObject *)b;
	Py_INCREF(b);
	v->len = b->pend_len;
	v->readonly = 1;
	v->suboffsets = NULL;
	v->internal = NULL;
	if (what == 2) {
		v->itemsize = cols[b->pend_col].size;
		v->format = (flags & PyBUF_FORMAT) ? (char *)cols[b->pend_col].fmt : NULL;
		v->ndim = 1;
		v->shape = (flags & PyBUF_ND) ? &b->shape[0] : NULL;
		v->strides = (flags & PyBUF_STRIDES) ? &v->itemsize : NULL;
	} else {
		v->itemsize = 1;
		v->format = (flags & PyBUF_FORMAT) ? "B" : NULL;
		v->ndim = 3;
		v->shape = b->shape;
		v->strides = b->strides;
	}
	b->exports++;
	return 0;
}

static void batch_releasebuffer(BatchObject *b, Py_buffer *v)
{
	(void)v;
	b->exports--;
}

static PyObject *batch_repr(BatchObject *b)
{
	return PyUnicode_FromFormat("<xevb.Batch of %zd events, ids %u..%u%s>", b->n, b->evs[0].event_id,
				    b->evs[b->n - 1].event_id, b->uniform ? ", one layout" : "");
}

static PyGetSetDef batch_getset[] = {
	{ "event_id", (getter)batch_get_col, NULL, PyDoc_STR("each event's id: a memoryview of uint32"),
	  (void *)(uintptr_t)C_EVENT_ID },
	{ "run_number", (getter)batch_get_col, NULL, PyDoc_STR("uint32"), (void *)(uintptr_t)C_RUN },
	{ "flags", (getter)batch_get_col, NULL, PyDoc_STR("uint32 (xevb.EV_*)"), (void *)(uintptr_t)C_FLAGS },
	{ "n_frags", (getter)batch_get_col, NULL, PyDoc_STR("uint16"), (void *)(uintptr_t)C_N_FRAGS },
	{ "n_expected", (getter)batch_get_col, NULL, PyDoc_STR("uint16"), (void *)(uintptr_t)C_N_EXPECTED },
	{ "length", (getter)batch_get_col, NULL, PyDoc_STR("uint32: bytes of each event"),
	  (void *)(uintptr_t)C_LENGTH },
	{ "build_ns", (getter)batch_get_col, NULL, PyDoc_STR("uint64"), (void *)(uintptr_t)C_BUILD_NS },
	{ "seq", (getter)batch_get_col, NULL, PyDoc_STR("uint64: each event's place in the file"),
	  (void *)(uintptr_t)C_SEQ },
	{ "offset", (getter)batch_get_col, NULL, PyDoc_STR("uint64: where each event starts in data"),
	  (void *)(uintptr_t)C_OFFSET },
	{ "data", (getter)batch_get_data, NULL, PyDoc_STR("the batch's events, back to back: a memoryview"),
	  NULL },
	{ "uniform", (getter)batch_get_uniform, NULL,
	  PyDoc_STR("every event has the same sources and fragment lengths: matrix() works"), NULL },
	{ "sources", (getter)batch_get_sources, NULL,
	  PyDoc_STR("the source ids of every event (uniform), or None"), NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef batch_methods[] = {
	{ "matrix", (PyCFunction)batch_matrix, METH_NOARGS,
	  PyDoc_STR("every payload as one 3-D memoryview: events x fragments x bytes (uniform batches)") },
	{ NULL, NULL, 0, NULL },
};

static PySequenceMethods batch_as_sequence = {
	.sq_length = (lenfunc)batch_len,
	.sq_item = (ssizeargfunc)batch_item,
};

static PyBufferProcs batch_as_buffer = {
	.bf_getbuffer = (getbufferproc)batch_getbuffer,
	.bf_releasebuffer = (releasebufferproc)batch_releasebuffer,
};

PyTypeObject Batch_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xevb.Batch",
	.tp_basicsize = sizeof(BatchObject),
	.tp_dealloc = (destructor)batch_dealloc,
	.tp_repr = (reprfunc)batch_repr,
	.tp_as_sequence = &batch_as_sequence,
	.tp_as_buffer = &batch_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = PyDoc_STR("Consecutive events of a Reader: len(b), b[i] (an Event), columns (typed "
			    "memoryviews: event_id, flags, ...), matrix() (uniform batches), data."),
	.tp_getset = batch_getset,
	.tp_methods = batch_methods,
};

PyObject *xp_batch_iter_new(ReaderObject *r, Py_ssize_t n)
{
	BatchIterObject *it = PyObject_New(BatchIterObject, &BatchIter_Type);

	if (!it)
		return NULL;
	Py_INCREF(r);
	it->reader = r;
	it->n = n;
	return (PyObject *)it;
}

static void batch_iter_dealloc(BatchIterObject *it)
{
	Py_DECREF(it->reader);
	PyObject_Free(it);
}

static PyObject *batch_iter_next(BatchIterObject *it)
{
	if (xp_reader_check(it->reader))
		return NULL;
	return batch_new(it->reader, it->n);
}

PyTypeObject BatchIter_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xevb.BatchIterator",
	.tp_basicsize = sizeof(BatchIterObject),
	.tp_dealloc = (destructor)batch_iter_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = (iternextfunc)batch_iter_next,
};
