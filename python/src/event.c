// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * xevb.Event: one built event. Its header fields are copied (a few words);
 * its bytes are not: the whole event, each fragment's payload and the
 * matrix of all payloads are memoryviews over the library's bytes. Each
 * view is exported by the event itself (the buffer protocol), so the
 * event, and through it the Reader or Farm that owns the bytes, lives as
 * long as any view of it.
 */
#include "xevbpy.h"
#include <structmember.h>

static PyTypeObject *Fragment_Type;

EventObject *xp_event_new(PyObject *owner, const struct xevb_ev *view, enum ev_kind kind)
{
	EventObject *e = PyObject_New(EventObject, &Event_Type);

	if (!e)
		return NULL;
	Py_INCREF(owner);
	e->owner = owner;
	e->view = view;
	e->parsed = NULL;
	e->ev = *view;
	e->exports = 0;
	e->pend_ndim = 0;
	e->kind = (uint8_t)kind;
	e->done_asked = false;
	e->done = false;
	return e;
}

/* Its bytes still belong to it: 0, or -1 with ValueError. */
static int ev_alive(EventObject *e)
{
	if (e->kind != EV_FARM)
		return 0;
	if (e->done_asked) {
		PyErr_SetString(PyExc_ValueError,
				"event is done: its bytes went back to the farm node "
				"(take what you need before done())");
		return -1;
	}
	if (!((FarmObject *)e->owner)->f) {
		PyErr_SetString(PyExc_ValueError, "the farm node is closed: its events' bytes are gone");
		return -1;
	}
	return 0;
}

const struct xevb_ev *xp_event_view(EventObject *e)
{
	char err[XEVB_ERRBUF_SIZE] = "";

	if (ev_alive(e))
		return NULL;
	if (e->view)
		return e->view;
	/* A reader's view lasts until its next event: decode the bytes (still mapped) again. */
	e->parsed = xevb_ev_parse(e->ev.data, e->ev.length, err);
	if (!e->parsed) {
		PyErr_Format(PyExc_ValueError, "event %u: %s", e->ev.event_id, err);
		return NULL;
	}
	e->view = e->parsed;
	return e->view;
}

void xp_event_release_farm(EventObject *e)
{
	FarmObject *f = (FarmObject *)e->owner;

	if (e->done)
		return;
	e->done = true;
	if (!f->f)
		return;
	if (!f->waiting) {
		xevb_farm_done(f->f, e->view);
		return;
	}
	/* Another thread waits in the library: done once it is back. */
	if (f->n_pending == f->cap_pending) {
		size_t cap = f->cap_pending ? 2 * f->cap_pending : 64;
		const struct xevb_ev **p = PyMem_Realloc(f->pending, cap * sizeof(*p));
		if (!p) {
			e->done = false; /* no memory: it stays held (counted), not handed back twice */
			return;
		}
		f->pending = p;
		f->cap_pending = cap;
	}
	f->pending[f->n_pending++] = e->view;
}

static void ev_dealloc(EventObject *e)
{
	switch (e->kind) {
	case EV_FILE: {
		ReaderObject *r = (ReaderObject *)e->owner;
		if (r->current == e)
			r->current = NULL;
		xevb_ev_free(e->parsed);
		xp_reader_unref(r);
		break;
	}
	case EV_FARM:
		/* Dropped without done(): done now, so its credit is not lost. */
		xp_event_release_farm(e);
		break;
	default:
		xevb_ev_free(e->parsed);
	}
	Py_DECREF(e->owner);
	PyObject_Free(e);
}

/* The buffer protocol: what pend_* names (or the whole event), read-only. */
static int ev_getbuffer(EventObject *e, Py_buffer *v, int flags)
{
	int ndim = e->pend_ndim;

	v->obj = NULL;
	e->pend_ndim = 0;
	if (!ndim) {
		if (ev_alive(e))
			return -1;
		e->pend_ptr = e->ev.data;
		e->pend_len = e->ev.length;
		ndim = 1;
	}
	if (ndim == 1) {
		if (PyBuffer_FillInfo(v, (PyObject *)e, (void *)e->pend_ptr, e->pend_len, 1, flags))
			return -1;
	} else {
		if ((flags & PyBUF_WRITABLE) || (flags & PyBUF_STRIDES) != PyBUF_STRIDES) {
			PyErr_SetString(PyExc_BufferError, "the payload matrix is read-only and strided");
			return -1;
		}
		v->buf = (void *)e->pend_ptr;
		v->obj = (PyObject *)e;
		Py_INCREF(e);
		v->len = e->shape[0] * e->shape[1];
		v->readonly = 1;
		v->itemsize = 1;
		v->format = (flags & PyBUF_FORMAT) ? "B" : NULL;
		v->ndim = 2;
		v->shape = e->shape;
		v->strides = e->strides;
		v->suboffsets = NULL;
		v->internal = NULL;
	}
	if (e->exports++ == 0 && e->kind == EV_FARM)
		((FarmObject *)e->owner)->exporting++;
	return 0;
}

static void ev_releasebuffer(EventObject *e, Py_buffer *v)
{
	(void)v;
	if (--e->exports || e->kind != EV_FARM)
		return;
	((FarmObject *)e->owner)->exporting--;
	if (e->done_asked)
		xp_event_release_farm(e);
}

PyObject *xp_event_memview(EventObject *e, const uint8_t *p, Py_ssize_t len)
{
	PyObject *mv;

	e->pend_ptr = p;
	e->pend_len = len;
	e->pend_ndim = 1;
	mv = PyMemoryView_FromObject((PyObject *)e);
	e->pend_ndim = 0;
	return mv;
}

static Py_ssize_t ev_len(EventObject *e)
{
	return e->ev.n_frags;
}

/* ev[i]: fragment i's payload. */
static PyObject *ev_item(EventObject *e, Py_ssize_t i)
{
	const struct xevb_ev *v;
	struct xevb_ev_frag f;

	if (i < 0 || i >= e->ev.n_frags) {
		PyErr_Format(PyExc_IndexError, "fragment %zd of an event with %u", i, e->ev.n_frags);
		return NULL;
	}
	if (!(v = xp_event_view(e)))
		return NULL;
	xevb_ev_frag(v, (uint32_t)i, &f);
	return xp_event_memview(e, f.payload, f.length);
}

static PyObject *frag_tuple(EventObject *e, const struct xevb_ev_frag *f)
{
	PyObject *t = PyStructSequence_New(Fragment_Type), *mv;

	if (!t)
		return NULL;
	if (!(mv = xp_event_memview(e, f->payload, f->length))) {
		Py_DECREF(t);
		return NULL;
	}
	PyStructSequence_SET_ITEM(t, 0, PyLong_FromLong(f->source_id));
	PyStructSequence_SET_ITEM(t, 1, PyLong_FromLong(f->index));
	PyStructSequence_SET_ITEM(t, 2, PyLong_FromUnsignedLong(f->crc32c));
	PyStructSequence_SET_ITEM(t, 3, mv);
	if (PyErr_Occurred()) {
		Py_DECREF(t);
		return NULL;
	}
	return t;
}

static PyObject *ev_fragment(EventObject *e, PyObject *arg)
{
	Py_ssize_t i = PyLong_AsSsize_t(arg);
	const struct xevb_ev *v;
	struct xevb_ev_frag f;

	if (i == -1 && PyErr_Occurred())
		return NULL;
	if (i < 0)
		i += e->ev.n_frags;
	if (i < 0 || i >= e->ev.n_frags) {
		PyErr_Format(PyExc_IndexError, "fragment %zd of an event with %u", i, e->ev.n_frags);
		return NULL;
	}
	if (!(v = xp_event_view(e)))
		return NULL;
	xevb_ev_frag(v, (uint32_t)i, &f);
	return frag_tuple(e, &f);
}

static PyObject *ev_find(EventObject *e, PyObject *arg)
{
	long sid = PyLong_AsLong(arg);
	const struct xevb_ev *v;
	struct xevb_ev_frag f;

	if (sid == -1 && PyErr_Occurred())
		return NULL;
	if (!(v = xp_event_view(e)))
		return NULL;
	if (sid < 0 || sid > 0xffff || xevb_ev_find(v, (uint16_t)sid, &f))
		Py_RETURN_NONE;
	return xp_event_memview(e, f.payload, f.length);
}

static PyObject *ev_payloads(EventObject *e, PyObject *unused)
{
	const struct xevb_ev *v;
	struct xevb_ev_frag f;
	PyObject *l, *mv;

	(void)unused;
	if (!(v = xp_event_view(e)) || !(l = PyList_New(v->n_frags)))
		return NULL;
	for (uint32_t i = 0; i < v->n_frags; i++) {
		xevb_ev_frag(v, i, &f);
		if (!(mv = xp_event_memview(e, f.payload, f.length))) {
			Py_DECREF(l);
			return NULL;
		}
		PyList_SET_ITEM(l, i, mv);
	}
	return l;
}

/* Every payload as one 2-D view (fragments x bytes), when they all have one length. */
static PyObject *ev_matrix(EventObject *e, PyObject *unused)
{
	const struct xevb_ev *v;
	struct xevb_ev_frag f0, f;
	Py_ssize_t stride;
	PyObject *mv;
	uint32_t bad;

	(void)unused;
	if (!(v = xp_event_view(e)))
		return NULL;
	if (!v->n_frags) {
		f0.payload = v->data;
		f0.length = 0;
	} else {
		xevb_ev_frag(v, 0, &f0);
	}
	stride = 12 + ((f0.length + 3) & ~3u);
	if ((bad = xp_first_unequal(f0.payload, v->n_frags, f0.length, (size_t)stride))) {
		xevb_ev_frag(v, bad, &f);
		PyErr_Format(PyExc_ValueError,
			     "event %u: fragment %u has %u bytes, fragment 0 %u: no matrix of "
			     "unequal fragments (use ev[i] or payloads())",
			     v->event_id, bad, f.length, f0.length);
		return NULL;
	}
	e->shape[0] = v->n_frags;
	e->shape[1] = f0.length;
	e->strides[0] = stride;
	e->strides[1] = 1;
	e->pend_ptr = f0.payload;
	e->pend_ndim = 2;
	mv = PyMemoryView_FromObject((PyObject *)e);
	e->pend_ndim = 0;
	return mv;
}

static PyObject *ev_get_data(EventObject *e, void *c)
{
	(void)c;
	if (ev_alive(e))
		return NULL;
	return xp_event_memview(e, e->ev.data, e->ev.length);
}

static PyObject *ev_get_sources(EventObject *e, void *c)
{
	const struct xevb_ev *v;
	struct xevb_ev_frag f;
	PyObject *t;

	(void)c;
	if (!(v = xp_event_view(e)) || !(t = PyTuple_New(v->n_frags)))
		return NULL;
	for (uint32_t i = 0; i < v->n_frags; i++) {
		xevb_ev_frag(v, i, &f);
		PyTuple_SET_ITEM(t, i, PyLong_FromLong(f.source_id));
	}
	return t;
}

static PyObject *ev_get_missing(EventObject *e, void *c)
{
	const struct xevb_ev *v;
	PyObject *t;

	(void)c;
	if (!(v = xp_event_view(e)) || !(t = PyTuple_New(v->n_missing)))
		return NULL;
	for (uint32_t i = 0; i < v->n_missing; i++)
		PyTuple_SET_ITEM(t, i, PyLong_FromLong(xevb_ev_missing(v, i)));
	return t;
}

static PyObject *ev_get_flag(EventObject *e, void *bit)
{
	return PyBool_FromLong(e->ev.flags & (uint32_t)(uintptr_t)bit);
}

static PyObject *ev_get_builder(EventObject *e, void *c)
{
	uint8_t *a = (uint8_t *)&e->ev.builder_addr;

	(void)c;
	if (!e->ev.builder_addr)
		Py_RETURN_NONE;
	return Py_BuildValue("(Ni)", PyUnicode_FromFormat("%u.%u.%u.%u", a[0], a[1], a[2], a[3]),
			     e->ev.builder_port);
}

static PyObject *ev_get_is_done(EventObject *e, void *c)
{
	(void)c;
	return PyBool_FromLong(e->done_asked);
}

/* Every payload against its CRC-32C: None, or the first bad fragment's source_id. */
static PyObject *ev_verify(EventObject *e, PyObject *unused)
{
	const struct xevb_ev *v;
	int bad = -1;

	(void)unused;
	if (!(v = xp_event_view(e)))
		return NULL;
	if (!xevb_ev_verify(v, &bad))
		Py_RETURN_NONE;
	return PyLong_FromLong(bad);
}

static PyObject *ev_done(EventObject *e, PyObject *unused)
{
	(void)unused;
	if (e->kind != EV_FARM || e->done_asked)
		Py_RETURN_NONE;
	e->done_asked = true;
	if (!e->exports)
		xp_event_release_farm(e);
	Py_RETURN_NONE;
}

static PyObject *ev_enter(PyObject *e, PyObject *unused)
{
	(void)unused;
	Py_INCREF(e);
	return e;
}

static PyObject *ev_exit(EventObject *e, PyObject *args)
{
	(void)args;
	return ev_done(e, NULL);
}

static PyObject *ev_repr(EventObject *e)
{
	return PyUnicode_FromFormat("<xevb.Event run %u id %u: %u/%u fragments, %u bytes%s>", e->ev.run_number,
				    e->ev.event_id, e->ev.n_frags, e->ev.n_expected, e->ev.length,
				    (e->ev.flags & XEVB_EV_INCOMPLETE) ? ", incomplete" : "");
}

#define EV_MEMBER(name, type, field, doc) \
	{ \
		name, type, offsetof(EventObject, ev.field), READONLY, PyDoc_STR(doc) \
	}

static PyMemberDef ev_members[] = {
	EV_MEMBER("run_number", T_UINT, run_number, "the run"),
	EV_MEMBER("event_id", T_UINT, event_id, "the trigger number"),
	EV_MEMBER("build_ns", T_ULONGLONG, build_ns, "CLOCK_REALTIME ns when the builder completed it"),
	EV_MEMBER("flags", T_UINT, flags, "xevb.EV_INCOMPLETE, xevb.EV_CRC_BAD"),
	EV_MEMBER("n_frags", T_USHORT, n_frags, "fragments present (len(ev))"),
	EV_MEMBER("n_expected", T_USHORT, n_expected, "sources configured for the event"),
	EV_MEMBER("n_missing", T_UINT, n_missing, "n_expected - n_frags"),
	EV_MEMBER("length", T_UINT, length, "bytes of the encoded event"),
	EV_MEMBER("seq", T_ULONGLONG, seq, "its place among the events its reader or farm node handed out"),
	{ NULL, 0, 0, 0, NULL },
};

static PyGetSetDef ev_getset[] = {
	{ "data", (getter)ev_get_data, NULL, PyDoc_STR("the encoded event: a read-only memoryview"), NULL },
	{ "sources", (getter)ev_get_sources, NULL, PyDoc_STR("source_ids present, ascending (a tuple)"), NULL },
	{ "missing", (getter)ev_get_missing, NULL, PyDoc_STR("source_ids missing, ascending (a tuple)"), NULL },
	{ "incomplete", (getter)ev_get_flag, NULL, PyDoc_STR("built at timeout: some sources missing"),
	  (void *)(uintptr_t)XEVB_EV_INCOMPLETE },
	{ "crc_bad", (getter)ev_get_flag, NULL, PyDoc_STR("CRC checks asked for, and a payload's is wrong"),
	  (void *)(uintptr_t)XEVB_EV_CRC_BAD },
	{ "builder", (getter)ev_get_builder, NULL, PyDoc_STR("(address, port) it came from; None from a file"),
	  NULL },
	{ "is_done", (getter)ev_get_is_done, NULL, PyDoc_STR("done() was called"), NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef ev_methods[] = {
	{ "fragment", (PyCFunction)ev_fragment, METH_O,
	  PyDoc_STR("fragment(i) -> Fragment(source_id, index, crc32c, payload)") },
	{ "find", (PyCFunction)ev_find, METH_O,
	  PyDoc_STR("find(source_id) -> the payload, or None when missing") },
	{ "payloads", (PyCFunction)ev_payloads, METH_NOARGS, PyDoc_STR("every payload: a list of memoryviews") },
	{ "matrix", (PyCFunction)ev_matrix, METH_NOARGS,
	  PyDoc_STR("every payload as one 2-D memoryview (fragments x bytes): fragments of one length only") },
	{ "verify", (PyCFunction)ev_verify, METH_NOARGS,
	  PyDoc_STR("check every payload's CRC-32C: None, or the first bad fragment's source_id") },
	{ "done", (PyCFunction)ev_done, METH_NOARGS,
	  PyDoc_STR("farm node: finished with it (its credit goes back once its last view is released)") },
	{ "__enter__", ev_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)ev_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PySequenceMethods ev_as_sequence = {
	.sq_length = (lenfunc)ev_len,
	.sq_item = (ssizeargfunc)ev_item,
};

static PyBufferProcs ev_as_buffer = {
	.bf_getbuffer = (getbufferproc)ev_getbuffer,
	.bf_releasebuffer = (releasebufferproc)ev_releasebuffer,
};

PyTypeObject Event_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "xevb.Event",
	.tp_basicsize = sizeof(EventObject),
	.tp_dealloc = (destructor)ev_dealloc,
	.tp_repr = (reprfunc)ev_repr,
	.tp_as_sequence = &ev_as_sequence,
	.tp_as_buffer = &ev_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = PyDoc_STR("One built event. len(ev) fragments; ev[i] is fragment i's payload (a read-only "
			    "memoryview over the library's bytes: no copy); memoryview(ev) the whole event."),
	.tp_methods = ev_methods,
	.tp_members = ev_members,
	.tp_getset = ev_getset,
};

PyObject *xp_parse_event(PyObject *self, PyObject *arg)
{
	char err[XEVB_ERRBUF_SIZE] = "";
	struct xevb_ev *v;
	EventObject *e;
	PyObject *mv;
	Py_buffer *b;

	(void)self;
	/* A memoryview of the caller's object pins its bytes for as long as the event lives. */
	if (!(mv = PyMemoryView_GetContiguous(arg, PyBUF_READ, 'C')))
		return NULL;
	b = PyMemoryView_GET_BUFFER(mv);
	if (!(v = xevb_ev_parse(b->buf, (size_t)b->len, err))) {
		Py_DECREF(mv);
		PyErr_Format(PyExc_ValueError, "not an event: %s", err);
		return NULL;
	}
	e = xp_event_new(mv, v, EV_PARSED);
	Py_DECREF(mv);
	if (!e) {
		xevb_ev_free(v);
		return NULL;
	}
	e->parsed = v;
	return (PyObject *)e;
}

static PyStructSequence_Field frag_fields[] = {
	{ "source_id", "the source it came from" },
	{ "index", "its place in the event (ascending source_id)" },
	{ "crc32c", "CRC-32C of the payload, as the source computed it" },
	{ "payload", "the payload: a read-only memoryview" },
	{ NULL, NULL },
};

static PyStructSequence_Desc frag_desc = {
	"xevb.Fragment",
	"One fragment of an event: its payload is a view, not a copy.",
	frag_fields,
	4,
};

int xp_event_init_types(PyObject *m)
{
	if (PyType_Ready(&Event_Type))
		return -1;
	if (!(Fragment_Type = PyStructSequence_NewType(&frag_desc)))
		return -1;
	Py_INCREF(&Event_Type);
	if (PyModule_AddObject(m, "Event", (PyObject *)&Event_Type))
		return -1;
	return PyModule_AddObject(m, "Fragment", (PyObject *)Fragment_Type);
}
