// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * _xevb: the C part of the xevb Python package, a binding of libxevb
 * (lib/include/xevb/xevb.h). The package's __init__.py re-exports it and
 * adds what is simpler in Python (an event encoder, run-file helpers).
 */
#include "xevbpy.h"

PyObject *CorruptFileError;

PyObject *xp_oserror(int neg, const char *msg)
{
	PyObject *a =
		Py_BuildValue("(is)", neg < 0 ? -neg : neg, msg && *msg ? msg : strerror(neg < 0 ? -neg : neg));

	/* OSError(errno, ...) becomes its subclass: FileExistsError, FileNotFoundError, ... */
	if (a)
		PyErr_SetObject(PyExc_OSError, a);
	Py_XDECREF(a);
	return NULL;
}

PyObject *xp_oserror_buf(int err, const char *errbuf)
{
	if (err == ENOMEM && !(errbuf && *errbuf))
		return PyErr_NoMemory();
	return xp_oserror(err ? err : EINVAL, errbuf);
}

static PyObject *m_crc32c(PyObject *self, PyObject *args)
{
	unsigned int crc = 0;
	Py_buffer b;
	uint32_t r;

	(void)self;
	if (!PyArg_ParseTuple(args, "y*|I", &b, &crc))
		return NULL;
	r = xevb_ev_crc32c(crc, b.buf, (size_t)b.len);
	PyBuffer_Release(&b);
	return PyLong_FromUnsignedLong(r);
}

static PyObject *m_lib_version(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyUnicode_FromString(xevb_lib_version());
}

static PyMethodDef m_methods[] = {
	{ "crc32c", m_crc32c, METH_VARARGS,
	  PyDoc_STR("crc32c(data, crc=0) -> CRC-32C (Castagnoli) of data, continuing crc") },
	{ "lib_version", m_lib_version, METH_NOARGS, PyDoc_STR("the libxevb version running, e.g. '1.0.0'") },
	{ "parse_event", xp_parse_event, METH_O,
	  PyDoc_STR("parse_event(buf) -> Event: one encoded event, every rule checked (ValueError if broken);\n"
		    "its views point into buf, which it keeps alive") },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef m_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "xevb._xevb",
	.m_doc = PyDoc_STR("libxevb for Python: built events as zero-copy views, run files, the farm node."),
	.m_size = -1,
	.m_methods = m_methods,
};

static int add_types(PyObject *m)
{
	PyTypeObject *types[] = { &Reader_Type, &Writer_Type, &Batch_Type, &BatchIter_Type, &Farm_Type };

	if (xp_event_init_types(m))
		return -1;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		const char *dot = strrchr(types[i]->tp_name, '.');
		if (PyType_Ready(types[i]))
			return -1;
		Py_INCREF(types[i]);
		if (PyModule_AddObject(m, dot + 1, (PyObject *)types[i])) {
			Py_DECREF(types[i]);
			return -1;
		}
	}
	return 0;
}

static int add_constants(PyObject *m)
{
	static const struct {
		const char *name;
		long v;
	} c[] = {
		{ "EV_INCOMPLETE", XEVB_EV_INCOMPLETE },
		{ "EV_CRC_BAD", XEVB_EV_CRC_BAD },
		{ "BUSY_AUTO", XEVB_BUSY_AUTO },
		{ "BUSY_ON", XEVB_BUSY_ON },
		{ "BUSY_OFF", XEVB_BUSY_OFF },
		{ "LOG_ERROR", XEVB_LIB_LOG_ERROR },
		{ "LOG_WARN", XEVB_LIB_LOG_WARN },
		{ "LOG_INFO", XEVB_LIB_LOG_INFO },
		{ "LOG_DEBUG", XEVB_LIB_LOG_DEBUG },
		{ "END_STREAMS", XEVB_END_STREAMS },
		{ "END_DFM", XEVB_END_DFM },
		{ "END_RUN", XEVB_END_RUN },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (PyModule_AddIntConstant(m, c[i].name, c[i].v))
			return -1;
	return PyModule_AddStringConstant(
		m, "HEADER_VERSION", XP_STR(XEVB_LIB_MAJOR) "." XP_STR(XEVB_LIB_MINOR) "." XP_STR(XEVB_LIB_PATCH));
}

PyMODINIT_FUNC PyInit__xevb(void)
{
	PyObject *m = PyModule_Create(&m_def);

	if (!m)
		return NULL;
	CorruptFileError = PyErr_NewExceptionWithDoc(
		"xevb.CorruptFileError",
		"A run file breaks the format where the reader got to (OSError, errno EBADMSG); "
		"the events before it were read.",
		PyExc_OSError, NULL);
	if (!CorruptFileError || PyModule_AddObject(m, "CorruptFileError", Py_NewRef(CorruptFileError)) ||
	    add_types(m) || add_constants(m)) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
