/* binlake._speedups: the optional compiled row-image decoder behind binlake.rowdecoder.
 *
 * A Plan is built once per table layout in Python (rowdecoder._Image.plan): per row image, per present column a
 * kind code, its output index, two integer parameters, the column's Python reader and its converter (or None).
 * Plan.rows(buf) decodes every row change of one rows event into the same list of (before, after) tuples the
 * Python decoder (RowDecoder.rows_python) returns, or returns None when anything is wrong with the bytes (a value past the end,
 * an impossible digit group or time field, a Python reader or converter that raised): the caller then runs the
 * pure-Python decoder on the event, which raises the precise BinlogError.  Values the C code does not build
 * itself (zero and invalid dates, types without a kind here) come from the column's Python reader, so every value
 * is the one the Python path returns.
 *
 * Layouts (Field_*::pack in sql/field.cc; strings/decimal.cc decimal2bin; mysys/my_time.c my_*_packed_from_binary)
 * are described in binlake.values.numeric, .decimal, .temporal, .strings and .enum_set.
 *
 * Example (Python):
 *     plan = Plan(MODE_INSERT, 1, ABSENT, (((K_INT, 0, 4, 1, reader, None),),))   # rows of one signed INT column
 *     plan.rows(b"\x00\x07\x00\x00\x00")                                # [(None, (7,))]
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <math.h>
#include <string.h>

#include "_layouts.h"

/* The kinds of a column plan, exported as the module's K_* constants: the Python side reads them from there. */
enum {
    K_PY = 0,         /* the Python reader */
    K_INT = 1,        /* p1 bytes little-endian (1, 2, 3, 4, 8), p2 = signed */
    K_FLOAT = 2,      /* float32 */
    K_DOUBLE = 3,     /* float64 */
    K_YEAR = 4,       /* one byte, 0 or 1900 + byte */
    K_BIT = 5,        /* p1 bytes big-endian, p2 bits */
    K_DATE = 6,       /* 3 bytes little-endian day | month << 5 | year << 9 */
    K_DATETIME2 = 7,  /* p1 = fsp */
    K_TIMESTAMP2 = 8, /* p1 = fsp */
    K_TIME2 = 9,      /* p1 = fsp */
    K_DECIMAL = 10,   /* p1 = precision, p2 = scale */
    K_STRING = 11,    /* p1 length bytes (1..4), p2 = decode as UTF-8 (the converter takes what is not UTF-8) */
    K_UINT = 12,      /* p1 bytes little-endian unsigned (ENUM, SET) */
    K_SET_BITS = 13,  /* text only: p1 bytes printed as bits, byte by byte (SET) */
    K_KINDS
};

/* The change kind of a Plan's rows event (exported as the module's MODE_* constants) */
enum { MODE_INSERT, MODE_DELETE, MODE_UPDATE };

#define MAX_DECIMAL_BYTES 128 /* DECIMAL(255, s) needs 116; larger ones go through the Python reader */
#define MAX_DECIMAL_GROUPS 64

typedef struct {
    int kind;
    Py_ssize_t out;
    int p1, p2;
    PyObject *reader; /* borrowed from Plan.spec */
    PyObject *conv;   /* borrowed, NULL for None */
    /* DECIMAL: size and (bytes, digits) of each group, most significant first */
    int size, ngroups;
    unsigned char gbytes[MAX_DECIMAL_GROUPS], gdigits[MAX_DECIMAL_GROUPS];
    char exponent[8]; /* "E-<scale>", empty for scale 0 */
    int exponent_len;
} Column;

typedef struct {
    Py_ssize_t ncols, nbytes;
    Column *cols;
} Image;

typedef struct {
    PyObject_HEAD
    int mode; /* MODE_INSERT, MODE_DELETE, MODE_UPDATE */
    Py_ssize_t width;
    PyObject *absent;
    PyObject *spec;
    Image images[2];
} Plan;

static PyObject *Decimal; /* decimal.Decimal */


/* ---- bytes ------------------------------------------------------------------------------------------------- */

/* ---- calendar ---------------------------------------------------------------------------------------------- */

/* TIME2 (my_time_packed_from_binary, sql-common/my_time.cc): hours, minutes, seconds, microseconds and sign of the
 * 3 + (fsp + 1) / 2 bytes at p; 0 for fields past their range (the Python reader's MalformedError). */
static int time2_fields(const unsigned char *p, int fsp, int64_t *h, int64_t *mi, int64_t *s, int64_t *us,
                        int *negative) {
    int fb = (fsp + 1) / 2;
    uint64_t u = be(p, 3 + fb);
    int64_t packed;
    if (fsp >= 5) {
        packed = (int64_t)u - 0x800000000000LL;
    } else {
        static const int64_t frac_unit[3] = {1, 10000, 100};
        int64_t intpart = (int64_t)(u >> (8 * fb)) - 0x800000;
        int64_t frac = (int64_t)(u & (((uint64_t)1 << (8 * fb)) - 1));
        if (intpart < 0 && frac) {
            intpart += 1;
            frac -= (int64_t)1 << (8 * fb);
        }
        packed = intpart * ((int64_t)1 << 24) + frac * frac_unit[fb];
    }
    *negative = packed < 0;
    if (*negative) packed = -packed;
    int64_t hms = packed >> 24;
    *us = packed & 0xFFFFFF;
    *h = hms >> 12;
    *mi = hms >> 6 & 63;
    *s = hms & 63;
    return !(*mi > 59 || *s > 59 || *us > 999999);
}

/* days since 1970-01-01 to the proleptic Gregorian y/m/d (H. Hinnant's civil_from_days) */
static void civil_from_days(int64_t z, int *y, int *m, int *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

/* ---- values ------------------------------------------------------------------------------------------------ */

/* The value of the column's Python reader at *pos (a new reference; *pos moves past it), NULL with an exception set
   when the reader raised or its value runs past the end. */
static PyObject *python_value(Column *c, PyObject *bufobj, Py_ssize_t len, Py_ssize_t *pos) {
    PyObject *at = PyLong_FromSsize_t(*pos);
    if (at == NULL) return NULL;
    PyObject *res = PyObject_CallFunctionObjArgs(c->reader, bufobj, at, NULL);
    Py_DECREF(at);
    if (res == NULL) return NULL;
    if (!PyTuple_CheckExact(res) || PyTuple_GET_SIZE(res) != 2) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_TypeError, "a reader returned something else than (value, end)");
        return NULL;
    }
    PyObject *value = PyTuple_GET_ITEM(res, 0);
    Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 1));
    if (end == -1 && PyErr_Occurred()) {
        Py_DECREF(res);
        return NULL;
    }
    if (end < *pos || end > len) { /* the Python path raises TruncatedError for it */
        Py_DECREF(res);
        PyErr_SetString(PyExc_ValueError, "a value runs past the end of the rows");
        return NULL;
    }
    *pos = end;
    Py_INCREF(value);
    Py_DECREF(res);
    return value;
}

#define NEED(n)                                                                                                   \
    do {                                                                                                          \
        if ((n) > len - pos) goto fail;                                                                           \
    } while (0)

static PyObject *decimal_value(Column *c, const unsigned char *p) {
    unsigned char b[MAX_DECIMAL_BYTES];
    char text[MAX_DECIMAL_GROUPS * 9 + 16]; /* sign, digits, "E-255" */
    memcpy(b, p, c->size);
    int negative = !(b[0] & 0x80);
    b[0] ^= 0x80;
    if (negative)
        for (int i = 0; i < c->size; i++) b[i] = (unsigned char)~b[i];
    char *t = text;
    if (negative) *t++ = '-';
    char *digits = t;
    const unsigned char *q = b;
    for (int g = 0; g < c->ngroups; g++) {
        uint32_t v = (uint32_t)be(q, c->gbytes[g]);
        q += c->gbytes[g];
        int n = c->gdigits[g];
        if (v >= POW10[n]) return NULL; /* digit group out of range: the reader raises MalformedError */
        for (int k = n - 1; k >= 0; k--) {
            t[k] = (char)('0' + v % 10);
            v /= 10;
        }
        t += n;
    }
    /* the unscaled integer without leading zeros, as f"{unscaled}" prints it */
    char *first = digits;
    while (first < t - 1 && *first == '0') first++;
    if (first > digits) {
        memmove(digits, first, t - first);
        t -= first - digits;
    }
    if (t == digits) *t++ = '0';
    memcpy(t, c->exponent, c->exponent_len);
    t += c->exponent_len;
    PyObject *s = PyUnicode_New(t - text, 127);
    if (s == NULL) return NULL;
    memcpy(PyUnicode_1BYTE_DATA(s), text, t - text);
    PyObject *d = PyObject_CallOneArg(Decimal, s);
    Py_DECREF(s);
    return d;
}

/* One row image at *ppos into a new tuple, or NULL (an exception may or may not be set). */
static PyObject *read_image(Plan *plan, Image *im, PyObject *bufobj, const unsigned char *buf, Py_ssize_t len,
                            Py_ssize_t *ppos) {
    Py_ssize_t pos = *ppos;
    /* a row image of no columns in non-empty rows data, or a null bitmap past the end: MalformedError/TruncatedError */
    if (im->ncols == 0 || im->nbytes > len - pos) return NULL;
    const unsigned char *nulls = buf + pos;
    pos += im->nbytes;
    PyObject *row = PyTuple_New(plan->width);
    if (row == NULL) return NULL;
    for (Py_ssize_t k = 0; k < im->ncols; k++) {
        Column *c = &im->cols[k];
        PyObject *v;
        if (nulls[k >> 3] & (1 << (k & 7))) {
            Py_INCREF(Py_None);
            PyTuple_SET_ITEM(row, c->out, Py_None);
            continue;
        }
        const unsigned char *p = buf + pos;
        int converted = 0;
        switch (c->kind) {
        case K_INT: {
            NEED(c->p1);
            uint64_t u = le(p, c->p1);
            pos += c->p1;
            if (c->p2 && c->p1 < 8 && (u >> (8 * c->p1 - 1))) u |= ~(uint64_t)0 << (8 * c->p1);
            v = c->p2 ? PyLong_FromLongLong((long long)u) : PyLong_FromUnsignedLongLong(u);
            break;
        }
        case K_FLOAT:
            NEED(4);
            v = PyFloat_FromDouble(PyFloat_Unpack4((const char *)p, 1));
            pos += 4;
            break;
        case K_DOUBLE:
            NEED(8);
            v = PyFloat_FromDouble(PyFloat_Unpack8((const char *)p, 1));
            pos += 8;
            break;
        case K_YEAR:
            NEED(1);
            v = PyLong_FromLong(p[0] ? 1900 + p[0] : 0);
            pos += 1;
            break;
        case K_BIT: {
            NEED(c->p1);
            uint64_t u = be(p, c->p1);
            if (c->p2 < 64 && (u >> c->p2)) goto fail; /* bits set past the width: MalformedError */
            pos += c->p1;
            v = PyLong_FromUnsignedLongLong(u);
            break;
        }
        case K_DATE: {
            NEED(3);
            uint64_t u = le(p, 3);
            long y = (long)(u >> 9), m = (long)(u >> 5 & 15), d = (long)(u & 31);
            if (valid_date(y, m, d)) {
                v = PyDate_FromDate((int)y, (int)m, (int)d);
                pos += 3;
            } else {
                v = python_value(c, bufobj, len, &pos);
            }
            break;
        }
        case K_DATETIME2: {
            int fb = (c->p1 + 1) / 2, size = 5 + fb;
            NEED(size);
            int64_t t = (int64_t)be(p, 5) - 0x8000000000LL;
            uint64_t frac = be(p + 5, fb);
            static const long unit[4] = {1, 10000, 100, 1};
            long us = (long)frac * unit[fb];
            int64_t ymd = t >> 17, ym = ymd >> 5;
            long y = (long)(ym / 13), mo = (long)(ym % 13), d = (long)(ymd & 31);
            long h = (long)(t >> 12 & 31), mi = (long)(t >> 6 & 63), s = (long)(t & 63);
            if (t >= 0 && us < 1000000 && h < 24 && mi < 60 && s < 60 && valid_date(y, mo, d)) {
                v = PyDateTime_FromDateAndTime((int)y, (int)mo, (int)d, (int)h, (int)mi, (int)s, (int)us);
                pos += size;
            } else {
                v = python_value(c, bufobj, len, &pos);
            }
            break;
        }
        case K_TIMESTAMP2: {
            int fb = (c->p1 + 1) / 2, size = 4 + fb;
            NEED(size);
            int64_t secs = (int64_t)be(p, 4);
            static const long unit[4] = {1, 10000, 100, 1};
            long us = (long)be(p + 4, fb) * unit[fb];
            if ((secs || us) && us < 1000000) {
                int y, mo, d;
                civil_from_days(secs / 86400, &y, &mo, &d);
                int64_t r = secs % 86400;
                v = PyDateTimeAPI->DateTime_FromDateAndTime(y, mo, d, (int)(r / 3600), (int)(r / 60 % 60),
                                                            (int)(r % 60), (int)us, PyDateTime_TimeZone_UTC,
                                                            PyDateTimeAPI->DateTimeType);
                pos += size;
            } else {
                v = python_value(c, bufobj, len, &pos);
            }
            break;
        }
        case K_TIME2: {
            int fsp = c->p1, size = 3 + (fsp + 1) / 2;
            NEED(size);
            int64_t h, mi, s, us;
            int negative;
            if (!time2_fields(p, fsp, &h, &mi, &s, &us, &negative)) goto fail; /* MalformedError */
            int64_t secs = h * 3600 + mi * 60 + s;
            v = PyDelta_FromDSU(0, (int)(negative ? -secs : secs), (int)(negative ? -us : us));
            pos += size;
            break;
        }
        case K_DECIMAL:
            NEED(c->size);
            v = decimal_value(c, p);
            if (v == NULL) goto fail;
            pos += c->size;
            break;
        case K_STRING: {
            NEED(c->p1);
            uint64_t n = le(p, c->p1);
            pos += c->p1;
            if (n > (uint64_t)(len - pos)) goto fail; /* TruncatedError */
            const char *s = (const char *)buf + pos;
            pos += (Py_ssize_t)n;
            if (c->p2) {
                v = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, NULL);
                if (v != NULL) {
                    converted = 1;
                    break;
                }
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto fail;
                PyErr_Clear();
            }
            v = PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
            break;
        }
        case K_UINT:
            NEED(c->p1);
            v = PyLong_FromUnsignedLongLong(le(p, c->p1));
            pos += c->p1;
            break;
        default:
            v = python_value(c, bufobj, len, &pos);
            break;
        }
        if (v == NULL) goto fail;
        if (c->conv != NULL && !converted) {
            PyObject *w = PyObject_CallOneArg(c->conv, v);
            Py_DECREF(v);
            if (w == NULL) goto fail;
            v = w;
        }
        PyTuple_SET_ITEM(row, c->out, v);
    }
    for (Py_ssize_t i = 0; i < plan->width; i++) {
        if (PyTuple_GET_ITEM(row, i) == NULL) {
            Py_INCREF(plan->absent);
            PyTuple_SET_ITEM(row, i, plan->absent);
        }
    }
    *ppos = pos;
    return row;
fail:
    Py_XDECREF(row);
    return NULL;
}

#undef NEED

/* ---- Plan -------------------------------------------------------------------------------------------------- */

/* The digit groups of DECIMAL(intg + scale, scale) (_layouts.h); -1 when the value is too large for the compiled
   code. */
static int decimal_layout(int intg, int scale, unsigned char *gbytes, unsigned char *gdigits, int *ngroups,
                          int *size) {
    *ngroups = decimal_groups(intg, scale, gbytes, gdigits, MAX_DECIMAL_GROUPS, size);
    return *size > MAX_DECIMAL_BYTES || *ngroups < 0 || *ngroups >= MAX_DECIMAL_GROUPS || *size == 0 ? -1 : 0;
}

static int parse_column(Column *c, PyObject *item, Py_ssize_t width) {
    PyObject *reader, *conv;
    Py_ssize_t out;
    if (!PyArg_ParseTuple(item, "inii" "OO", &c->kind, &out, &c->p1, &c->p2, &reader, &conv)) return -1;
    if (c->kind < 0 || c->kind >= K_KINDS || out < 0 || out >= width) {
        PyErr_SetString(PyExc_ValueError, "bad column plan");
        return -1;
    }
    c->out = out;
    c->reader = reader;
    c->conv = conv == Py_None ? NULL : conv;
    if ((c->kind == K_INT || c->kind == K_UINT) && !(c->p1 >= 1 && c->p1 <= 8)) c->kind = K_PY;
    if (c->kind == K_BIT && !(c->p1 >= 0 && c->p1 <= 8 && c->p2 >= 0 && c->p2 <= 8 * c->p1)) c->kind = K_PY;
    if ((c->kind == K_DATETIME2 || c->kind == K_TIMESTAMP2 || c->kind == K_TIME2) && !(c->p1 >= 0 && c->p1 <= 6))
        c->kind = K_PY;
    if (c->kind == K_STRING && !(c->p1 >= 1 && c->p1 <= 4)) c->kind = K_PY;
    if (c->kind == K_DECIMAL) {
        int precision = c->p1, scale = c->p2, intg = precision - scale;
        if (precision < 1 || scale < 0 || scale > precision) {
            c->kind = K_PY;
            return 0;
        }
        c->exponent_len = scale ? snprintf(c->exponent, sizeof c->exponent, "E-%d", scale) : 0;
        if (decimal_layout(intg, scale, c->gbytes, c->gdigits, &c->ngroups, &c->size) < 0) c->kind = K_PY;
    }
    return 0;
}

static void Plan_dealloc(Plan *self) {
    PyMem_Free(self->images[0].cols);
    PyMem_Free(self->images[1].cols);
    Py_XDECREF(self->absent);
    Py_XDECREF(self->spec);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Plan_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    int mode;
    Py_ssize_t width;
    PyObject *absent, *images;
    static char *kwlist[] = {"mode", "width", "absent", "images", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "inOO!", kwlist, &mode, &width, &absent, &PyTuple_Type, &images))
        return NULL;
    Py_ssize_t nimages = PyTuple_GET_SIZE(images);
    if ((mode != MODE_INSERT && mode != MODE_DELETE && mode != MODE_UPDATE) || width < 0 ||
        nimages != (mode == MODE_UPDATE ? 2 : 1)) {
        PyErr_SetString(PyExc_ValueError, "mode MODE_INSERT or MODE_DELETE with one image, MODE_UPDATE with two");
        return NULL;
    }
    Plan *self = (Plan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->mode = mode;
    self->width = width;
    Py_INCREF(absent);
    self->absent = absent;
    Py_INCREF(images);
    self->spec = images;
    for (Py_ssize_t i = 0; i < nimages; i++) {
        PyObject *cols = PyTuple_GET_ITEM(images, i);
        if (!PyTuple_Check(cols)) {
            PyErr_SetString(PyExc_TypeError, "an image is a tuple of column plans");
            goto error;
        }
        Image *im = &self->images[i];
        im->ncols = PyTuple_GET_SIZE(cols);
        im->nbytes = (im->ncols + 7) / 8;
        im->cols = PyMem_Calloc(im->ncols ? im->ncols : 1, sizeof(Column));
        if (im->cols == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        for (Py_ssize_t k = 0; k < im->ncols; k++) {
            PyObject *item = PyTuple_GET_ITEM(cols, k);
            if (!PyTuple_Check(item) || parse_column(&im->cols[k], item, width) < 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a column plan is a tuple");
                goto error;
            }
        }
    }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

/* Plan.rows(buf): [(before, after), ...] of every row change in buf, or None when the bytes need the Python path */
static PyObject *Plan_rows(Plan *self, PyObject *bufobj) {
    if (!PyBytes_CheckExact(bufobj)) Py_RETURN_NONE;
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(bufobj);
    Py_ssize_t len = PyBytes_GET_SIZE(bufobj), pos = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    while (pos < len) {
        PyObject *a = read_image(self, &self->images[0], bufobj, buf, len, &pos), *b = NULL, *change;
        if (a == NULL) goto fail;
        if (self->mode == MODE_UPDATE) {
            b = read_image(self, &self->images[1], bufobj, buf, len, &pos);
            if (b == NULL) {
                Py_DECREF(a);
                goto fail;
            }
            change = PyTuple_Pack(2, a, b);
        } else {
            change = self->mode == MODE_INSERT ? PyTuple_Pack(2, Py_None, a) : PyTuple_Pack(2, a, Py_None);
        }
        Py_DECREF(a);
        Py_XDECREF(b);
        if (change == NULL || PyList_Append(out, change) < 0) {
            Py_XDECREF(change);
            goto fail;
        }
        Py_DECREF(change);
    }
    return out;
fail:
    Py_DECREF(out);
    /* bad bytes or a Python reader/converter that raised: the Python path raises the precise error; interrupts
       and other BaseExceptions that are not Exceptions propagate */
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

static PyMethodDef Plan_methods[] = {
    {"rows", (PyCFunction)Plan_rows, METH_O,
     "rows(buf) -> list of (before, after) row changes, or None when the pure-Python decoder must run"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "binlake._speedups.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_dealloc = (destructor)Plan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Plan(mode, width, absent, images): the compiled decoder of one table layout's rows events",
    .tp_methods = Plan_methods,
    .tp_new = Plan_new,
};

/* ---- TextPlan: the `binlake dump` text of row images ---------------------------------------------------------
 *
 * TextPlan(images) is built once per table layout, change kind and columns present by
 * binlake.render.dump.rowtext: per row image its clause ("### WHERE\n", "### SET\n") and per present column (kind,
 * p1, p2, prefix, suffix, null_line), the constant texts made in Python ("###   @3=", the " / * INT meta=0 nullable=1 is_null=0 * /"
 * comment and its newline).  TextPlan.text(buf, head) writes the text of every row change of one rows event, each
 * starting with head ("### UPDATE `db`.`t`\n"), as the value printers of binlake.values' RENDER tables print the values
 * (log_event_print_value in MariaDB's sql/log_event_client.cc): integers as the signed reading of their bits plus
 * the unsigned one in parentheses when negative, FLOAT "%-20g", DOUBLE "%.20g", DECIMAL in fixed point with every
 * fraction digit, strings quoted with bytes below 0x20 as \xNN, DATE 'YYYY:MM:DD', DATETIME 'YYYY-MM-DD
 * HH:MM:SS.f', TIME '[-]HH:MM:SS.f', TIMESTAMP as epoch seconds.f, YEAR %04d, BIT and SET as b'0101'.  It returns
 * (text, row changes), or None for anything it does not print the same way for sure (a value the Python reader
 * rejects or turns into something unusual, a non-finite float): the caller then takes the Python path, which
 * prints that event or raises its precise error.  The text is the UTF-8 bytes decoded with surrogateescape, as
 * the Python printers decode string values.
 */

typedef struct {
    int kind, p1, p2;
    const char *prefix, *suffix, *null_line; /* borrowed from TextPlan.spec */
    Py_ssize_t prefix_len, suffix_len, null_len;
    int size, ngroups; /* DECIMAL */
    unsigned char gbytes[MAX_DECIMAL_GROUPS], gdigits[MAX_DECIMAL_GROUPS];
} TextColumn;

typedef struct {
    Py_ssize_t ncols, nbytes;
    TextColumn *cols;
    const char *clause;
    Py_ssize_t clause_len;
} TextImage;

typedef struct {
    PyObject_HEAD
    Py_ssize_t nimages;
    PyObject *spec;
    TextImage images[2];
} TextPlan;

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} Out;

/* room for `need` more bytes, 0; -1 with MemoryError */
static int out_room(Out *o, Py_ssize_t need) {
    if (need <= o->cap - o->n) return 0;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap - o->n < need) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *p = PyMem_Realloc(o->p, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->p = p;
    o->cap = cap;
    return 0;
}

static inline char *put(char *t, const char *s, Py_ssize_t n) {
    memcpy(t, s, n);
    return t + n;
}

static inline char *put_u64(char *t, uint64_t v) {
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *t++ = tmp[--n];
    return t;
}

/* v in exactly `width` digits, zero-padded (v < 10**width) */
static inline char *put_fixed(char *t, uint64_t v, int width) {
    for (int k = width - 1; k >= 0; k--) {
        t[k] = (char)('0' + v % 10);
        v /= 10;
    }
    return t + width;
}

/* "%02d" of a non-negative number */
static inline char *put_02(char *t, uint64_t v) { return v < 100 ? put_fixed(t, v, 2) : put_u64(t, v); }

/* ".123" of `us` microseconds at fsp digits (temporal._fraction), nothing at fsp 0 */
static inline char *put_fraction(char *t, long us, int fsp) {
    if (!fsp) return t;
    *t++ = '.';
    return put_fixed(t, (uint64_t)us / POW10[6 - fsp], fsp);
}

static inline char *put_bits(char *t, const unsigned char *p, int nbytes, int nbits) {
    *t++ = 'b';
    *t++ = '\'';
    for (int bit = 8 * nbytes - nbits; bit < 8 * nbytes; bit++)
        *t++ = (char)('0' + (p[bit >> 3] >> (7 - (bit & 7)) & 1));
    *t++ = '\'';
    return t;
}

/* the text of one value at p (len - pos bytes left) into t; the new end of the text and *used, or NULL when the
   Python path must print the event */
static char *value_text(TextColumn *c, const unsigned char *p, Py_ssize_t left, char *t, Py_ssize_t *used) {
#define NEED_T(n)                                                                                                 \
    do {                                                                                                          \
        if ((Py_ssize_t)(n) > left) return NULL;                                                                  \
    } while (0)
    switch (c->kind) {
    case K_INT: { /* numeric.render_int: the bits as signed, then the unsigned reading when negative */
        NEED_T(c->p1);
        uint64_t u = le(p, c->p1);
        *used = c->p1;
        int bits = 8 * c->p1;
        if (u >> (bits - 1)) {
            uint64_t magnitude = bits == 64 ? (~u + 1) : ((uint64_t)1 << bits) - u;
            *t++ = '-';
            t = put_u64(t, magnitude);
            *t++ = ' ';
            *t++ = '(';
            t = put_u64(t, u);
            *t++ = ')';
            return t;
        }
        return put_u64(t, u);
    }
    case K_FLOAT: case K_DOUBLE: { /* numeric.render_float / render_double: C's %-20g / %.20g */
        int size = c->kind == K_FLOAT ? 4 : 8;
        NEED_T(size);
        double d = size == 4 ? PyFloat_Unpack4((const char *)p, 1) : PyFloat_Unpack8((const char *)p, 1);
        if (!isfinite(d)) return NULL; /* printf's "-nan" is not Python's "nan" */
        *used = size;
        return t + snprintf(t, 64, size == 4 ? "%-20g" : "%.20g", d);
    }
    case K_YEAR: /* numeric.render_year */
        NEED_T(1);
        *used = 1;
        return put_fixed(t, 1900 + (uint64_t)p[0], 4);
    case K_BIT: {
        NEED_T(c->p1);
        if (c->p2 < 64 && (be(p, c->p1) >> c->p2)) return NULL; /* bits past the width: MalformedError */
        *used = c->p1;
        return put_bits(t, p, c->p1, c->p2);
    }
    case K_SET_BITS: /* enum_set._render_set: the stored bytes in order, each most significant bit first */
        NEED_T(c->p1);
        *used = c->p1;
        return put_bits(t, p, c->p1, 8 * c->p1);
    case K_UINT: /* ENUM: the number */
        NEED_T(c->p1);
        *used = c->p1;
        return put_u64(t, le(p, c->p1));
    case K_DATE: { /* temporal.render_date: 'YYYY:MM:DD', zero and invalid dates as stored */
        NEED_T(3);
        uint64_t u = le(p, 3);
        uint64_t y = u >> 9, m = u >> 5 & 15, d = u & 31;
        if (m > 12 || y > 9999) return NULL;
        *used = 3;
        *t++ = '\'';
        t = put_fixed(t, y, 4);
        *t++ = ':';
        t = put_fixed(t, m, 2);
        *t++ = ':';
        t = put_fixed(t, d, 2);
        *t++ = '\'';
        return t;
    }
    case K_DATETIME2: { /* temporal.render_datetime */
        int fb = (c->p1 + 1) / 2, size = 5 + fb;
        NEED_T(size);
        int64_t v = (int64_t)be(p, 5) - 0x8000000000LL;
        static const long unit[4] = {1, 10000, 100, 1};
        long us = (long)be(p + 5, fb) * unit[fb];
        if (v < 0) return NULL;
        int64_t ymd = v >> 17, ym = ymd >> 5;
        int64_t y = ym / 13, mo = ym % 13, d = ymd & 31, h = v >> 12 & 31, mi = v >> 6 & 63, s = v & 63;
        if (y > 9999 || mo > 12 || h > 23 || mi > 59 || s > 59 || us > 999999) return NULL;
        *used = size;
        *t++ = '\'';
        t = put_fixed(t, (uint64_t)y, 4);
        *t++ = '-';
        t = put_fixed(t, (uint64_t)mo, 2);
        *t++ = '-';
        t = put_fixed(t, (uint64_t)d, 2);
        *t++ = ' ';
        t = put_fixed(t, (uint64_t)h, 2);
        *t++ = ':';
        t = put_fixed(t, (uint64_t)mi, 2);
        *t++ = ':';
        t = put_fixed(t, (uint64_t)s, 2);
        t = put_fraction(t, us, c->p1);
        *t++ = '\'';
        return t;
    }
    case K_TIMESTAMP2: { /* temporal.render_timestamp: seconds since the epoch, then the fraction */
        int fb = (c->p1 + 1) / 2, size = 4 + fb;
        NEED_T(size);
        static const long unit[4] = {1, 10000, 100, 1};
        long us = (long)be(p + 4, fb) * unit[fb];
        if (us > 999999) return NULL;
        *used = size;
        t = put_u64(t, be(p, 4));
        return put_fraction(t, us, c->p1);
    }
    case K_TIME2: { /* temporal.render_time (my_time_packed_from_binary, as Plan decodes it) */
        int fsp = c->p1, size = 3 + (fsp + 1) / 2;
        NEED_T(size);
        int64_t h, mi, s, us;
        int negative;
        if (!time2_fields(p, fsp, &h, &mi, &s, &us, &negative)) return NULL; /* MalformedError */
        *used = size;
        *t++ = '\'';
        if (negative) *t++ = '-';
        t = put_02(t, (uint64_t)h);
        *t++ = ':';
        t = put_fixed(t, (uint64_t)mi, 2);
        *t++ = ':';
        t = put_fixed(t, (uint64_t)s, 2);
        t = put_fraction(t, (long)us, fsp);
        *t++ = '\'';
        return t;
    }
    case K_DECIMAL: { /* decimal.render_decimal: format(Decimal, "f") of the value the reader builds */
        NEED_T(c->size);
        unsigned char b[MAX_DECIMAL_BYTES];
        char digits[MAX_DECIMAL_GROUPS * 9];
        memcpy(b, p, c->size);
        int negative = !(b[0] & 0x80);
        b[0] ^= 0x80;
        if (negative)
            for (int i = 0; i < c->size; i++) b[i] = (unsigned char)~b[i];
        const unsigned char *q = b;
        char *dg = digits;
        for (int g = 0; g < c->ngroups; g++) {
            uint32_t v = (uint32_t)be(q, c->gbytes[g]);
            q += c->gbytes[g];
            if (v >= POW10[c->gdigits[g]]) return NULL; /* the reader raises MalformedError */
            dg = put_fixed(dg, v, c->gdigits[g]);
        }
        *used = c->size;
        int scale = c->p2, intg = (int)(dg - digits) - scale, first = 0;
        while (first < intg - 1 && digits[first] == '0') first++;
        if (negative) *t++ = '-';
        if (intg > 0)
            t = put(t, digits + first, intg - first);
        else
            *t++ = '0';
        if (scale) {
            *t++ = '.';
            t = put(t, digits + intg, scale);
        }
        return t;
    }
    default:
        return NULL;
    }
#undef NEED_T
}

/* the value bytes needed at most by one value's text besides strings */
#define VALUE_TEXT_MAX (2 * MAX_DECIMAL_GROUPS * 9 + 80)

/* the lines of one row image at *ppos; 0, or -1 (an exception set only for MemoryError) */
static int image_text(TextImage *im, const unsigned char *buf, Py_ssize_t len, Py_ssize_t *ppos, Out *o) {
    Py_ssize_t pos = *ppos;
    if (im->ncols == 0 || im->nbytes > len - pos) return -1;
    const unsigned char *nulls = buf + pos;
    pos += im->nbytes;
    if (out_room(o, im->clause_len) < 0) return -1;
    memcpy(o->p + o->n, im->clause, im->clause_len);
    o->n += im->clause_len;
    for (Py_ssize_t k = 0; k < im->ncols; k++) {
        TextColumn *c = &im->cols[k];
        if (nulls[k >> 3] & (1 << (k & 7))) {
            if (out_room(o, c->null_len) < 0) return -1;
            memcpy(o->p + o->n, c->null_line, c->null_len);
            o->n += c->null_len;
            continue;
        }
        const unsigned char *p = buf + pos;
        Py_ssize_t left = len - pos, used = 0;
        char *t;
        if (c->kind == K_STRING) { /* strings.render_quoted: bytes below 0x20 as \xNN, the rest as is */
            if (c->p1 > left) return -1;
            uint64_t n = le(p, c->p1);
            if (n > (uint64_t)(left - c->p1)) return -1;
            const unsigned char *s = p + c->p1, *end = s + n;
            used = c->p1 + (Py_ssize_t)n;
            if (out_room(o, c->prefix_len + 4 * (Py_ssize_t)n + 2 + c->suffix_len) < 0) return -1;
            t = put(o->p + o->n, c->prefix, c->prefix_len);
            *t++ = '\'';
            while (s < end) {
                const unsigned char *run = s;
                while (s < end && *s >= 0x20) s++;
                t = put(t, (const char *)run, s - run);
                if (s < end) {
                    static const char hex[] = "0123456789abcdef";
                    *t++ = '\\';
                    *t++ = 'x';
                    *t++ = hex[*s >> 4];
                    *t++ = hex[*s & 15];
                    s++;
                }
            }
            *t++ = '\'';
        } else {
            if (out_room(o, c->prefix_len + VALUE_TEXT_MAX + c->suffix_len) < 0) return -1;
            t = put(o->p + o->n, c->prefix, c->prefix_len);
            t = value_text(c, p, left, t, &used);
            if (t == NULL) return -1;
        }
        t = put(t, c->suffix, c->suffix_len);
        o->n = t - o->p;
        pos += used;
    }
    *ppos = pos;
    return 0;
}

static int parse_text_column(TextColumn *c, PyObject *item) {
    PyObject *prefix, *suffix, *null_line;
    if (!PyArg_ParseTuple(item, "iiiSSS", &c->kind, &c->p1, &c->p2, &prefix, &suffix, &null_line)) return -1;
    c->prefix = PyBytes_AS_STRING(prefix);
    c->prefix_len = PyBytes_GET_SIZE(prefix);
    c->suffix = PyBytes_AS_STRING(suffix);
    c->suffix_len = PyBytes_GET_SIZE(suffix);
    c->null_line = PyBytes_AS_STRING(null_line);
    c->null_len = PyBytes_GET_SIZE(null_line);
    int ok;
    switch (c->kind) {
    case K_INT: ok = c->p1 == 1 || c->p1 == 2 || c->p1 == 3 || c->p1 == 4 || c->p1 == 8; break;
    case K_UINT: case K_SET_BITS: ok = c->p1 >= 1 && c->p1 <= 8; break;
    case K_FLOAT: case K_DOUBLE: case K_YEAR: case K_DATE: ok = 1; break;
    case K_BIT: ok = c->p1 >= 0 && c->p1 <= 8 && c->p2 >= 8 * c->p1 - 7 && c->p2 <= 8 * c->p1; break;
    case K_DATETIME2: case K_TIMESTAMP2: case K_TIME2: ok = c->p1 >= 0 && c->p1 <= 6; break;
    case K_STRING: ok = c->p1 >= 1 && c->p1 <= 4; break;
    case K_DECIMAL:
        ok = c->p1 >= 1 && c->p2 >= 0 && c->p2 <= c->p1 &&
             decimal_layout(c->p1 - c->p2, c->p2, c->gbytes, c->gdigits, &c->ngroups, &c->size) == 0;
        break;
    default: ok = 0;
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "a column the text plan does not print");
        return -1;
    }
    return 0;
}

static void TextPlan_dealloc(TextPlan *self) {
    PyMem_Free(self->images[0].cols);
    PyMem_Free(self->images[1].cols);
    Py_XDECREF(self->spec);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *TextPlan_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *images;
    static char *kwlist[] = {"images", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!", kwlist, &PyTuple_Type, &images)) return NULL;
    Py_ssize_t nimages = PyTuple_GET_SIZE(images);
    if (nimages != 1 && nimages != 2) {
        PyErr_SetString(PyExc_ValueError, "one image (insert, delete) or two (update)");
        return NULL;
    }
    TextPlan *self = (TextPlan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->nimages = nimages;
    Py_INCREF(images);
    self->spec = images;
    for (Py_ssize_t i = 0; i < nimages; i++) {
        PyObject *image = PyTuple_GET_ITEM(images, i), *clause, *cols;
        if (!PyArg_ParseTuple(image, "SO!", &clause, &PyTuple_Type, &cols)) goto error;
        TextImage *im = &self->images[i];
        im->clause = PyBytes_AS_STRING(clause);
        im->clause_len = PyBytes_GET_SIZE(clause);
        im->ncols = PyTuple_GET_SIZE(cols);
        im->nbytes = (im->ncols + 7) / 8;
        im->cols = PyMem_Calloc(im->ncols ? im->ncols : 1, sizeof(TextColumn));
        if (im->cols == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        for (Py_ssize_t k = 0; k < im->ncols; k++)
            if (parse_text_column(&im->cols[k], PyTuple_GET_ITEM(cols, k)) < 0) goto error;
    }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

/* TextPlan.text(buf, head): (text, row changes) of every row change in buf, or None for the Python path */
static PyObject *TextPlan_text(TextPlan *self, PyObject *args) {
    PyObject *bufobj;
    const char *head;
    Py_ssize_t head_len;
    if (!PyArg_ParseTuple(args, "O!y#", &PyBytes_Type, &bufobj, &head, &head_len)) return NULL;
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(bufobj);
    Py_ssize_t len = PyBytes_GET_SIZE(bufobj), pos = 0, count = 0;
    Out o = {NULL, 0, 0};
    if (len == 0) goto fallback;
    while (pos < len) {
        if (out_room(&o, head_len) < 0) goto fallback;
        memcpy(o.p + o.n, head, head_len);
        o.n += head_len;
        for (Py_ssize_t i = 0; i < self->nimages; i++)
            if (image_text(&self->images[i], buf, len, &pos, &o) < 0) goto fallback;
        count++;
    }
    PyObject *text = PyUnicode_DecodeUTF8(o.p, o.n, "surrogateescape");
    PyMem_Free(o.p);
    if (text == NULL) return NULL;
    return Py_BuildValue("(Nn)", text, count);
fallback:
    PyMem_Free(o.p);
    if (PyErr_Occurred()) return NULL; /* MemoryError */
    Py_RETURN_NONE;
}

static PyMethodDef TextPlan_methods[] = {
    {"text", (PyCFunction)TextPlan_text, METH_VARARGS,
     "text(buf, head) -> (text, row changes), or None when the Python printer must print the event"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TextPlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "binlake._speedups.TextPlan",
    .tp_basicsize = sizeof(TextPlan),
    .tp_dealloc = (destructor)TextPlan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TextPlan(images): the `binlake dump` text of one layout's row images, each (clause, columns)",
    .tp_methods = TextPlan_methods,
    .tp_new = TextPlan_new,
};

/* ---- SqlPlan: the replay SQL of `binlake changes --format sql` ----------------------------------------------
 *
 * SqlPlan(images, pieces) is built once per table layout, change kind and columns present by
 * binlake.render.changes.sql: per row image (in the binlog's order: the before image first) per present column
 * (kind, p1, p2, p3, prefix); and the statement as pieces, each a constant text (bytes) or (span, mode): the value of
 * the span-th present column of all images, as a literal (mode 0, NULL as "NULL") or as a WHERE comparison (mode 1:
 * "=literal", or " IS NULL").  SqlPlan.text(buf, comment) writes the statement of every row change of one rows event,
 * each followed by comment, the SQL literals binlake.render.changes.sql.sql_literal writes of the stored values:
 * integers (p2: unsigned), FLOAT and DOUBLE as Python's repr ("-0e0" for a negative zero), YEAR as its number, BIT
 * as b'...' of every bit, DATE 'YYYY-MM-DD', DATETIME and TIMESTAMP (in UTC) 'YYYY-MM-DD HH:MM:SS.f', TIME
 * '[-]HH:MM:SS.f', DECIMAL with every fraction digit, strings (p2 0) quoted with \0 \n \r \Z \' \\ escaped after
 * their prefix (an introducer such as "_latin1"), or (p2 1) as prefix + X'hex' padded with zero bytes to p3.  It
 * returns (bytes, row changes), or None for anything it does not write the same way for sure: the caller writes that
 * event on the Python path.
 */

typedef struct {
    int kind, p1, p2, p3;
    const char *prefix; /* borrowed from SqlPlan.spec */
    Py_ssize_t prefix_len;
    int size, ngroups; /* DECIMAL */
    unsigned char gbytes[MAX_DECIMAL_GROUPS], gdigits[MAX_DECIMAL_GROUPS];
} SqlColumn;

typedef struct {
    Py_ssize_t ncols, nbytes, first; /* first: the span of its first column */
    SqlColumn *cols;
} SqlImage;

typedef struct {
    const char *text; /* a constant, or NULL for a value */
    Py_ssize_t len, span;
    int mode;
} SqlPiece;

typedef struct {
    Py_ssize_t start, used; /* the value's bytes in the rows, or used -1 for NULL */
} Span;

/* the row images of one layout's rows events: where each present column's value is (its span) */
typedef struct {
    Py_ssize_t nimages, nspans;
    SqlImage images[2];
    SqlColumn **span_cols; /* the column of each span */
} RowLayout;

typedef struct {
    PyObject_HEAD
    RowLayout layout;
    Py_ssize_t npieces;
    SqlPiece *pieces;
    PyObject *spec;
} SqlPlan;

/* the TIMESTAMP2 value at p (fsp fraction digits) as YYYY-MM-DD<sep>HH:MM:SS[.f] in UTC, the zero value as
   0000-00-00 00:00:00; NULL for a fraction out of range (the Python reader's MalformedError) */
static char *put_timestamp2(char *t, const unsigned char *p, int fsp, char sep) {
    int fb = (fsp + 1) / 2;
    static const long unit[4] = {1, 10000, 100, 1};
    uint64_t secs = be(p, 4);
    long us = (long)be(p + 4, fb) * unit[fb];
    if (us > 999999) return NULL;
    int y = 0, mo = 0, d = 0;
    uint64_t sod = secs % 86400;
    if (secs || us) civil_from_days((int64_t)(secs / 86400), &y, &mo, &d);
    t = put_fixed(t, (uint64_t)y, 4);
    *t++ = '-';
    t = put_fixed(t, (uint64_t)mo, 2);
    *t++ = '-';
    t = put_fixed(t, (uint64_t)d, 2);
    *t++ = sep;
    t = put_fixed(t, sod / 3600, 2);
    *t++ = ':';
    t = put_fixed(t, sod / 60 % 60, 2);
    *t++ = ':';
    t = put_fixed(t, sod % 60, 2);
    return put_fraction(t, us, fsp);
}

/* bytes of the value of c at p (left bytes there), or -1 when it runs past the end */
static Py_ssize_t sql_size(const SqlColumn *c, const unsigned char *p, Py_ssize_t left) {
    Py_ssize_t n;
    switch (c->kind) {
    case K_INT: n = c->p1; break;
    case K_FLOAT: n = 4; break;
    case K_DOUBLE: n = 8; break;
    case K_YEAR: n = 1; break;
    case K_BIT: n = c->p1; break;
    case K_DATE: n = 3; break;
    case K_DATETIME2: n = 5 + (c->p1 + 1) / 2; break;
    case K_TIMESTAMP2: n = 4 + (c->p1 + 1) / 2; break;
    case K_TIME2: n = 3 + (c->p1 + 1) / 2; break;
    case K_DECIMAL: n = c->size; break;
    case K_STRING: {
        if (c->p1 > left) return -1;
        uint64_t len = le(p, c->p1);
        if (len > (uint64_t)(left - c->p1)) return -1;
        return c->p1 + (Py_ssize_t)len;
    }
    default: return -1;
    }
    return n > left ? -1 : n;
}

/* the SQL literal of a value (its `used` bytes at p) into t (room checked by the caller); NULL to fall back */
static char *sql_value(const SqlColumn *c, const unsigned char *p, Py_ssize_t used, char *t) {
    switch (c->kind) {
    case K_INT: {
        uint64_t u = le(p, c->p1);
        int bits = 8 * c->p1;
        if (!c->p2 && u >> (bits - 1)) { /* signed and negative */
            *t++ = '-';
            return put_u64(t, bits == 64 ? (~u + 1) : ((uint64_t)1 << bits) - u);
        }
        return put_u64(t, u);
    }
    case K_FLOAT: case K_DOUBLE: {
        double d = c->kind == K_FLOAT ? PyFloat_Unpack4((const char *)p, 1) : PyFloat_Unpack8((const char *)p, 1);
        if (!isfinite(d)) return NULL;
        if (d == 0 && signbit(d)) return put(t, "-0e0", 4);
        char *r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL); /* repr() */
        if (r == NULL) {
            PyErr_Clear();
            return NULL;
        }
        size_t n = strlen(r);
        t = put(t, r, (Py_ssize_t)n);
        PyMem_Free(r);
        return t;
    }
    case K_YEAR: return put_u64(t, p[0] ? 1900 + (uint64_t)p[0] : 0);
    case K_BIT:
        if (c->p2 < 64 && (be(p, c->p1) >> c->p2)) return NULL; /* bits past the width: MalformedError */
        return put_bits(t, p, c->p1, c->p2);
    case K_DATE: {
        uint64_t u = le(p, 3), y = u >> 9, m = u >> 5 & 15, d = u & 31;
        if (m > 12 || y > 9999) return NULL;
        *t++ = '\'';
        t = put_fixed(t, y, 4);
        *t++ = '-';
        t = put_fixed(t, m, 2);
        *t++ = '-';
        t = put_fixed(t, d, 2);
        *t++ = '\'';
        return t;
    }
    case K_DATETIME2: { /* the dump's text of it is the SQL literal */
        Py_ssize_t ignored;
        TextColumn tc = {.kind = K_DATETIME2, .p1 = c->p1};
        return value_text(&tc, p, used, t, &ignored);
    }
    case K_TIME2: {
        Py_ssize_t ignored;
        TextColumn tc = {.kind = K_TIME2, .p1 = c->p1};
        return value_text(&tc, p, used, t, &ignored);
    }
    case K_DECIMAL: {
        Py_ssize_t ignored;
        TextColumn tc = {.kind = K_DECIMAL, .p1 = c->p1, .p2 = c->p2, .size = c->size, .ngroups = c->ngroups};
        memcpy(tc.gbytes, c->gbytes, sizeof tc.gbytes);
        memcpy(tc.gdigits, c->gdigits, sizeof tc.gdigits);
        return value_text(&tc, p, used, t, &ignored);
    }
    case K_TIMESTAMP2: /* in UTC: the session the SQL sets up */
        *t++ = '\'';
        t = put_timestamp2(t, p, c->p1, ' ');
        if (t == NULL) return NULL;
        *t++ = '\'';
        return t;
    default: return NULL;
    }
}

static int sql_string(Out *o, const SqlColumn *c, const unsigned char *p, Py_ssize_t used) {
    const unsigned char *s = p + c->p1, *end = p + used;
    Py_ssize_t n = end - s, pad = c->p3 > n ? c->p3 - n : 0;
    if (out_room(o, c->prefix_len + 2 * (n + pad) + 4) < 0) return -1;
    char *t = put(o->p + o->n, c->prefix, c->prefix_len);
    if (c->p2) { /* X'hex' */
        static const char hex[] = "0123456789abcdef";
        *t++ = 'X';
        *t++ = '\'';
        for (; s < end; s++) {
            *t++ = hex[*s >> 4];
            *t++ = hex[*s & 15];
        }
        for (Py_ssize_t k = 0; k < pad; k++) {
            *t++ = '0';
            *t++ = '0';
        }
        *t++ = '\'';
    } else {
        *t++ = '\'';
        while (s < end) {
            const unsigned char *run = s;
            while (s < end && *s != 0 && *s != '\n' && *s != '\r' && *s != 26 && *s != '\'' && *s != '\\') s++;
            t = put(t, (const char *)run, s - run);
            if (s < end) {
                *t++ = '\\';
                *t++ = *s == 0 ? '0' : *s == '\n' ? 'n' : *s == '\r' ? 'r' : *s == 26 ? 'Z' : (char)*s;
                s++;
            }
        }
        *t++ = '\'';
    }
    o->n = t - o->p;
    return 0;
}

static void layout_free(RowLayout *l) {
    PyMem_Free(l->images[0].cols);
    PyMem_Free(l->images[1].cols);
    PyMem_Free(l->span_cols);
}

/* the layout of `images` (one or two tuples of column specs, each read by parse): 0, or -1 with an exception set
   (layout_free frees what it allocated) */
static int layout_parse(RowLayout *l, PyObject *images, int (*parse)(SqlColumn *, PyObject *)) {
    Py_ssize_t nimages = PyTuple_GET_SIZE(images);
    if (nimages != 1 && nimages != 2) {
        PyErr_SetString(PyExc_ValueError, "one image (insert, delete) or two (update)");
        return -1;
    }
    l->nimages = nimages;
    for (Py_ssize_t i = 0; i < nimages; i++) {
        PyObject *cols = PyTuple_GET_ITEM(images, i);
        if (!PyTuple_Check(cols)) {
            PyErr_SetString(PyExc_TypeError, "an image is a tuple of columns");
            return -1;
        }
        SqlImage *im = &l->images[i];
        im->ncols = PyTuple_GET_SIZE(cols);
        im->nbytes = (im->ncols + 7) / 8;
        im->first = l->nspans;
        l->nspans += im->ncols;
        im->cols = PyMem_Calloc(im->ncols ? im->ncols : 1, sizeof(SqlColumn));
        if (im->cols == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t k = 0; k < im->ncols; k++)
            if (parse(&im->cols[k], PyTuple_GET_ITEM(cols, k)) < 0) return -1;
    }
    l->span_cols = PyMem_Calloc(l->nspans ? l->nspans : 1, sizeof(SqlColumn *));
    if (l->span_cols == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < nimages; i++)
        for (Py_ssize_t k = 0; k < l->images[i].ncols; k++)
            l->span_cols[l->images[i].first + k] = &l->images[i].cols[k];
    return 0;
}

/* the spans of the images of the row change at *pos (len bytes in buf), *pos moved past them: 0, or -1 where they
   do not read (the caller falls back to the Python path) */
static int layout_spans(const RowLayout *l, const unsigned char *buf, Py_ssize_t len, Py_ssize_t *pos, Span *spans) {
    Py_ssize_t at = *pos;
    for (Py_ssize_t i = 0; i < l->nimages; i++) {
        const SqlImage *im = &l->images[i];
        if (im->ncols == 0 || im->nbytes > len - at) return -1;
        const unsigned char *nulls = buf + at;
        at += im->nbytes;
        for (Py_ssize_t k = 0; k < im->ncols; k++) {
            Span *sp = &spans[im->first + k];
            if (nulls[k >> 3] & (1 << (k & 7))) {
                sp->used = -1;
                continue;
            }
            Py_ssize_t n = sql_size(&im->cols[k], buf + at, len - at);
            if (n < 0) return -1;
            sp->start = at;
            sp->used = n;
            at += n;
        }
    }
    *pos = at;
    return 0;
}

/* SqlPlan.text's and JsonPlan.text's result, freeing o and spans: (bytes, row changes) when done, else None (the
   Python path writes the event), or NULL with the MemoryError that stopped it */
static PyObject *plan_result(Out *o, Span *spans, Py_ssize_t count, int done) {
    PyMem_Free(spans);
    PyObject *text = done ? PyBytes_FromStringAndSize(o->p, o->n) : NULL;
    PyMem_Free(o->p);
    if (done) return text == NULL ? NULL : Py_BuildValue("(Nn)", text, count);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static void SqlPlan_dealloc(SqlPlan *self) {
    layout_free(&self->layout);
    PyMem_Free(self->pieces);
    Py_XDECREF(self->spec);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* are the kind and parameters of c ones the plans read (DECIMAL: its digit groups laid out in c)? */
static int plan_column_ok(SqlColumn *c) {
    switch (c->kind) {
    case K_INT: return c->p1 == 1 || c->p1 == 2 || c->p1 == 3 || c->p1 == 4 || c->p1 == 8;
    case K_FLOAT: case K_DOUBLE: case K_YEAR: case K_DATE: return 1;
    case K_BIT: return c->p1 >= 0 && c->p1 <= 8 && c->p2 >= 8 * c->p1 - 7 && c->p2 <= 8 * c->p1;
    case K_DATETIME2: case K_TIMESTAMP2: case K_TIME2: return c->p1 >= 0 && c->p1 <= 6;
    case K_STRING: return c->p1 >= 1 && c->p1 <= 4 && c->p3 >= 0;
    case K_DECIMAL:
        return c->p1 >= 1 && c->p2 >= 0 && c->p2 <= c->p1 &&
               decimal_layout(c->p1 - c->p2, c->p2, c->gbytes, c->gdigits, &c->ngroups, &c->size) == 0;
    default: return 0;
    }
}

static int parse_sql_column(SqlColumn *c, PyObject *item) {
    PyObject *prefix;
    if (!PyArg_ParseTuple(item, "iiiiS", &c->kind, &c->p1, &c->p2, &c->p3, &prefix)) return -1;
    c->prefix = PyBytes_AS_STRING(prefix);
    c->prefix_len = PyBytes_GET_SIZE(prefix);
    if (!plan_column_ok(c)) {
        PyErr_SetString(PyExc_ValueError, "a column the SQL plan does not write");
        return -1;
    }
    return 0;
}

static PyObject *SqlPlan_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *images, *pieces;
    static char *kwlist[] = {"images", "pieces", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!", kwlist, &PyTuple_Type, &images, &PyTuple_Type, &pieces))
        return NULL;
    SqlPlan *self = (SqlPlan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->spec = PyTuple_Pack(2, images, pieces);
    if (self->spec == NULL || layout_parse(&self->layout, images, parse_sql_column) < 0) goto error;
    self->npieces = PyTuple_GET_SIZE(pieces);
    self->pieces = PyMem_Calloc(self->npieces ? self->npieces : 1, sizeof(SqlPiece));
    if (self->pieces == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t k = 0; k < self->npieces; k++) {
        PyObject *item = PyTuple_GET_ITEM(pieces, k);
        SqlPiece *pc = &self->pieces[k];
        if (PyBytes_Check(item)) {
            pc->text = PyBytes_AS_STRING(item);
            pc->len = PyBytes_GET_SIZE(item);
        } else if (!PyArg_ParseTuple(item, "ni", &pc->span, &pc->mode) || pc->span < 0 ||
                   pc->span >= self->layout.nspans || pc->mode < 0 || pc->mode > 1) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a piece is bytes or (span, mode)");
            goto error;
        }
    }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

/* SqlPlan.text(buf, comment): (statements, row changes), or None for the Python path */
static PyObject *SqlPlan_text(SqlPlan *self, PyObject *args) {
    PyObject *bufobj;
    const char *comment;
    Py_ssize_t comment_len;
    if (!PyArg_ParseTuple(args, "O!y#", &PyBytes_Type, &bufobj, &comment, &comment_len)) return NULL;
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(bufobj);
    Py_ssize_t len = PyBytes_GET_SIZE(bufobj), pos = 0, count = 0;
    Out o = {NULL, 0, 0};
    Span *spans = PyMem_Calloc(self->layout.nspans ? self->layout.nspans : 1, sizeof(Span));
    if (spans == NULL) return PyErr_NoMemory();
    if (len == 0) goto fallback;
    while (pos < len) {
        if (layout_spans(&self->layout, buf, len, &pos, spans) < 0) goto fallback; /* where each value is */
        for (Py_ssize_t k = 0; k < self->npieces; k++) { /* the statement */
            SqlPiece *pc = &self->pieces[k];
            if (pc->text != NULL) {
                if (out_room(&o, pc->len) < 0) goto fallback;
                o.n = put(o.p + o.n, pc->text, pc->len) - o.p;
                continue;
            }
            Span *sp = &spans[pc->span];
            const SqlColumn *c = self->layout.span_cols[pc->span];
            if (sp->used < 0) {
                const char *null = pc->mode ? " IS NULL" : "NULL";
                Py_ssize_t n = (Py_ssize_t)strlen(null);
                if (out_room(&o, n) < 0) goto fallback;
                o.n = put(o.p + o.n, null, n) - o.p;
                continue;
            }
            if (pc->mode) {
                if (out_room(&o, 1) < 0) goto fallback;
                o.p[o.n++] = '=';
            }
            if (c->kind == K_STRING) {
                if (sql_string(&o, c, buf + sp->start, sp->used) < 0) goto fallback;
                continue;
            }
            if (out_room(&o, c->prefix_len + VALUE_TEXT_MAX) < 0) goto fallback;
            char *t = put(o.p + o.n, c->prefix, c->prefix_len);
            t = sql_value(c, buf + sp->start, sp->used, t);
            if (t == NULL) goto fallback;
            o.n = t - o.p;
        }
        if (out_room(&o, comment_len) < 0) goto fallback;
        o.n = put(o.p + o.n, comment, comment_len) - o.p;
        count++;
    }
    return plan_result(&o, spans, count, 1);
fallback:
    return plan_result(&o, spans, count, 0);
}

static PyMethodDef SqlPlan_methods[] = {
    {"text", (PyCFunction)SqlPlan_text, METH_VARARGS,
     "text(buf, comment) -> (statements, row changes), or None when the Python writer must write the event"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SqlPlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "binlake._speedups.SqlPlan",
    .tp_basicsize = sizeof(SqlPlan),
    .tp_dealloc = (destructor)SqlPlan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "SqlPlan(images, pieces): the replay SQL of one layout's row images",
    .tp_methods = SqlPlan_methods,
    .tp_new = SqlPlan_new,
};

/* ---- JsonPlan: the Debezium JSON of `binlake changes` ---------------------------------------------------------
 *
 * JsonPlan(images, objects) is built once per table layout, change kind and columns present by
 * binlake.render.changes.debezium: per row image (the binlog's order) per present column (kind, p1, p2, p3), and per
 * side of the record (before, after) its object as (key, span) pairs or None (null).  JsonPlan.text(buf, source,
 * after_row, txn, total, mine, tail) writes the line of every row change of one rows event, as DebeziumEncoder.rows
 * writes it: {"before":...,"after":..., + source + the row's index + after_row + ,"transaction": and the block
 * (txn None: null; else {"id":txn,"total_order":total+i+1,"data_collection_order":mine+i+1}) + tail.  Values as
 * binlake.render.changes.debezium.value_encoder writes them (in the ValueModes the Python side turned into p2/p3):
 * integers (p2: unsigned, 0 for BIGINT UNSIGNED in bigint.unsigned.handling.mode=long, Java's long; p3 1: BIGINT
 * UNSIGNED as a Connect Decimal, base64 of its two's-complement bytes; p3 2: BOOLEAN), YEAR (0 is 1900), BIT(1) as
 * a boolean and BIT(n) as base64 of its little-endian bytes, DATE as epoch days, DATETIME as epoch milliseconds
 * (fsp <= 3, or p2 1: time.precision.mode=connect) or microseconds, TIMESTAMP as an ISO-8601 UTC string with fsp
 * digits, TIME as microseconds (p2 1: Connect's Time, milliseconds of the day, null outside 00:00:00-24:00:00),
 * DECIMAL as a string (no negative zero) or (p3 1: decimal.handling.mode=precise) a Connect Decimal, base64 of its
 * unscaled two's-complement bytes, zero and invalid dates as null or (p3 1: NOT NULL) the epoch, UTF-8 text (p2 0)
 * as a JSON string (control characters as upper-case \u00XX), binary strings padded to p3 bytes as base64 (p2 1),
 * URL-safe base64 (p2 2) or lower-case hex (p2 3), as binary.handling.mode says.  It returns
 * (bytes, row changes), or None for anything it does not write the same way for sure (text that is not UTF-8):
 * the caller writes that event on the Python path.
 */

typedef struct {
    const char *key; /* '"name":' with its leading '{' or ',' (borrowed from JsonPlan.spec) */
    Py_ssize_t key_len, span;
} JsonField;

typedef struct {
    Py_ssize_t nfields; /* -1: the side is null */
    JsonField *fields;
} JsonObject;

typedef struct {
    PyObject_HEAD
    RowLayout layout;
    JsonObject sides[2]; /* before, after */
    PyObject *spec;
} JsonPlan;

static char *put_i64(char *t, int64_t v) {
    if (v < 0) {
        *t++ = '-';
        return put_u64(t, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(t, (uint64_t)v);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char B64_URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* the JSON string of s in base64 with the alphabet B64 (or B64_URL), padded, as java.util.Base64 writes it */
static char *put_b64_with(char *t, const unsigned char *s, Py_ssize_t n, const char *B64) {
    *t++ = '"';
    Py_ssize_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *t++ = B64[v >> 18];
        *t++ = B64[v >> 12 & 63];
        *t++ = B64[v >> 6 & 63];
        *t++ = B64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        *t++ = B64[v >> 18];
        *t++ = B64[v >> 12 & 63];
        *t++ = i + 1 < n ? B64[v >> 6 & 63] : '=';
        *t++ = '=';
    }
    *t++ = '"';
    return t;
}

static char *put_b64(char *t, const unsigned char *s, Py_ssize_t n) { return put_b64_with(t, s, n, B64); }

/* Connect's Decimal of the unscaled integer whose decimal digits are digits[0..n) (negative: its negation) through
 * the JSON converter: base64 of BigInteger.toByteArray(), the fewest big-endian two's-complement bytes with a sign
 * bit (65 digits fit in 28 bytes) */
static char *put_connect_decimal(char *t, const char *digits, Py_ssize_t n, int negative) {
    unsigned char mag[32] = {0}; /* little-endian magnitude */
    int len = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned carry = (unsigned)(digits[i] - '0');
        for (int k = 0; k < len; k++) {
            carry += mag[k] * 10u;
            mag[k] = (unsigned char)(carry & 0xFF);
            carry >>= 8;
        }
        if (carry && len < 31) mag[len++] = (unsigned char)carry;
    }
    int zero = 1;
    for (int k = 0; k < len; k++) zero &= mag[k] == 0;
    negative = negative && !zero;
    if (negative) /* -m is ~(m - 1): the bytes of m - 1, inverted below */
        for (int k = 0; k < len && mag[k]-- == 0; k++) {}
    int top = len - 1;
    while (top > 0 && mag[top] == 0) top--;
    int size = top + 1 + (mag[top] >= 0x80); /* a sign bit of its own where the top byte's high bit is set */
    unsigned char b[33];
    for (int k = 0; k < size; k++) {
        unsigned char v = k < len ? mag[k] : 0;
        b[size - 1 - k] = negative ? (unsigned char)~v : v;
    }
    return put_b64(t, b, size);
}

/* days from the proleptic Gregorian y/m/d to 1970-01-01 (H. Hinnant's days_from_civil) */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static inline int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

/* the JSON of a non-string value (its `used` bytes at p) into t; NULL to fall back */
static char *json_value(const SqlColumn *c, const unsigned char *p, Py_ssize_t used, char *t) {
    const char *fallback = c->p3 ? "0" : "null";
    switch (c->kind) {
    case K_INT: {
        uint64_t u = le(p, c->p1);
        int bits = 8 * c->p1;
        if (c->p3 == 2) return u ? put(t, "true", 4) : put(t, "false", 5);
        if (c->p3 == 1) { /* BigInteger.toByteArray(): the fewest bytes holding the value and a sign bit */
            unsigned char b[9];
            int n = 1;
            for (uint64_t v = u; v >> 7; v >>= 8) n++;
            for (int k = 0; k < n; k++) b[n - 1 - k] = (unsigned char)(k < 8 ? u >> (8 * k) : 0);
            return put_b64(t, b, n);
        }
        if (!c->p2 && u >> (bits - 1)) {
            *t++ = '-';
            return put_u64(t, bits == 64 ? (~u + 1) : ((uint64_t)1 << bits) - u);
        }
        return put_u64(t, u);
    }
    case K_YEAR: return put_u64(t, 1900 + (uint64_t)p[0]);
    case K_BIT: {
        if (c->p2 < 64 && (be(p, c->p1) >> c->p2)) return NULL;
        if (c->p2 == 1) return p[0] ? put(t, "true", 4) : put(t, "false", 5);
        unsigned char b[8];
        for (int k = 0; k < c->p1; k++) b[k] = p[c->p1 - 1 - k];
        return put_b64(t, b, c->p1);
    }
    case K_DATE: {
        uint64_t u = le(p, 3), y = u >> 9, m = u >> 5 & 15, d = u & 31;
        if (m > 12 || y > 9999) return NULL;
        if (!valid_date((int64_t)y, (int64_t)m, (int64_t)d)) return put(t, fallback, (Py_ssize_t)strlen(fallback));
        return put_i64(t, days_from_civil((int64_t)y, (int64_t)m, (int64_t)d));
    }
    case K_DATETIME2: {
        int fb = (c->p1 + 1) / 2;
        static const long unit[4] = {1, 10000, 100, 1};
        int64_t v = (int64_t)be(p, 5) - 0x8000000000LL;
        long us = (long)be(p + 5, fb) * unit[fb];
        if (v < 0) return NULL;
        int64_t ymd = v >> 17, ym = ymd >> 5;
        int64_t y = ym / 13, mo = ym % 13, d = ymd & 31, h = v >> 12 & 31, mi = v >> 6 & 63, s = v & 63;
        if (y > 9999 || mo > 12 || h > 23 || mi > 59 || s > 59 || us > 999999) return NULL;
        if (!valid_date(y, mo, d)) return put(t, fallback, (Py_ssize_t)strlen(fallback));
        int64_t total = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + s;
        total = total * 1000000 + us;
        return put_i64(t, c->p1 <= 3 || c->p2 ? floor_div(total, 1000) : total);
    }
    case K_TIMESTAMP2: {
        if (!be(p, 4 + (c->p1 + 1) / 2)) { /* the zero TIMESTAMP */
            const char *zero = c->p3 ? "\"1970-01-01T00:00:00Z\"" : "null";
            return put(t, zero, (Py_ssize_t)strlen(zero));
        }
        *t++ = '"';
        t = put_timestamp2(t, p, c->p1, 'T');
        if (t == NULL) return NULL;
        *t++ = 'Z';
        *t++ = '"';
        return t;
    }
    case K_TIME2: {
        int64_t h, mi, s, us;
        int negative;
        if (!time2_fields(p, c->p1, &h, &mi, &s, &us, &negative)) return NULL;
        int64_t total = ((h * 60 + mi) * 60 + s) * 1000000 + us;
        if (c->p2) { /* io.debezium.time.Time.toMilliOfDay: 00:00:00 to 24:00:00, else null */
            if ((negative && total) || total > 86400000000LL) return put(t, "null", 4);
            return put_i64(t, total / 1000);
        }
        return put_i64(t, negative ? -total : total);
    }
    case K_DECIMAL: {
        Py_ssize_t ignored;
        TextColumn tc = {.kind = K_DECIMAL, .p1 = c->p1, .p2 = c->p2, .size = c->size, .ngroups = c->ngroups};
        memcpy(tc.gbytes, c->gbytes, sizeof tc.gbytes);
        memcpy(tc.gdigits, c->gdigits, sizeof tc.gdigits);
        if (c->p3) { /* the unscaled digits of the text (every scale digit is written) */
            char text[VALUE_TEXT_MAX], digits[VALUE_TEXT_MAX];
            char *end = value_text(&tc, p, used, text, &ignored);
            if (end == NULL) return NULL;
            Py_ssize_t n = 0;
            for (const char *q = text; q < end; q++)
                if (*q >= '0' && *q <= '9') digits[n++] = *q;
            return put_connect_decimal(t, digits, n, text[0] == '-');
        }
        *t++ = '"';
        char *start = t;
        t = value_text(&tc, p, used, t, &ignored);
        if (t == NULL) return NULL;
        if (*start == '-') { /* BigDecimal has no negative zero */
            char *q = start + 1;
            while (q < t && (*q == '0' || *q == '.')) q++;
            if (q == t) {
                memmove(start, start + 1, t - start - 1);
                t--;
            }
        }
        *t++ = '"';
        return t;
    }
    default: return NULL;
    }
}

/* the length of the UTF-8 character at s (strict: no overlong forms, no surrogates), 0 when it is none */
static int utf8_char(const unsigned char *s, const unsigned char *end) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || c > 0xF4 || end - s < n) return 0;
    for (int k = 1; k < n; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))) return 0;
    if (n == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))) return 0;
    return n;
}

static int json_string(Out *o, const SqlColumn *c, const unsigned char *p, Py_ssize_t used) {
    const unsigned char *s = p + c->p1, *end = p + used;
    Py_ssize_t n = end - s;
    if (c->p2) { /* the bytes, BINARY(n) padded with zero bytes, as base64 (1), URL-safe base64 (2) or hex (3) */
        Py_ssize_t pad = c->p3 > n ? c->p3 - n : 0;
        if (out_room(o, 2 * (n + pad) + 4 * ((n + pad) / 3 + 1) + 2) < 0) return -1;
        const unsigned char *b = s;
        unsigned char *padded = NULL;
        if (pad) {
            padded = PyMem_Calloc(n + pad, 1);
            if (padded == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            memcpy(padded, s, n);
            b = padded;
        }
        char *t = o->p + o->n;
        if (c->p2 == 3) {
            static const char hex[] = "0123456789abcdef";
            *t++ = '"';
            for (Py_ssize_t k = 0; k < n + pad; k++) {
                *t++ = hex[b[k] >> 4];
                *t++ = hex[b[k] & 15];
            }
            *t++ = '"';
        } else {
            t = put_b64_with(t, b, n + pad, c->p2 == 2 ? B64_URL : B64);
        }
        o->n = t - o->p;
        PyMem_Free(padded);
        return 0;
    }
    if (out_room(o, 6 * n + 2) < 0) return -1;
    char *t = o->p + o->n;
    *t++ = '"';
    while (s < end) {
        const unsigned char *run = s;
        while (s < end && *s >= 0x20 && *s != '"' && *s != '\\' && *s < 0x80) s++;
        t = put(t, (const char *)run, s - run);
        if (s == end) break;
        if (*s >= 0x80) {
            int k = utf8_char(s, end);
            if (k == 0) return 1; /* not UTF-8: the Python path decodes it */
            t = put(t, (const char *)s, k);
            s += k;
            continue;
        }
        static const char hex[] = "0123456789ABCDEF";
        *t++ = '\\';
        switch (*s) {
        case '"': *t++ = '"'; break;
        case '\\': *t++ = '\\'; break;
        case '\n': *t++ = 'n'; break;
        case '\r': *t++ = 'r'; break;
        case '\t': *t++ = 't'; break;
        case '\b': *t++ = 'b'; break;
        case '\f': *t++ = 'f'; break;
        default:
            *t++ = 'u';
            *t++ = '0';
            *t++ = '0';
            *t++ = hex[*s >> 4];
            *t++ = hex[*s & 15];
        }
        s++;
    }
    *t++ = '"';
    o->n = t - o->p;
    return 0;
}

static void JsonPlan_dealloc(JsonPlan *self) {
    layout_free(&self->layout);
    PyMem_Free(self->sides[0].fields);
    PyMem_Free(self->sides[1].fields);
    Py_XDECREF(self->spec);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int parse_json_column(SqlColumn *c, PyObject *item) {
    if (!PyArg_ParseTuple(item, "iiii", &c->kind, &c->p1, &c->p2, &c->p3)) return -1;
    c->prefix = "";
    if (c->kind == K_FLOAT || c->kind == K_DOUBLE || (c->kind == K_BIT && c->p1 < 1) || !plan_column_ok(c)) {
        PyErr_SetString(PyExc_ValueError, "a column the JSON plan does not write");
        return -1;
    }
    return 0;
}

static PyObject *JsonPlan_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *images, *objects;
    static char *kwlist[] = {"images", "objects", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!", kwlist, &PyTuple_Type, &images, &PyTuple_Type, &objects))
        return NULL;
    if (PyTuple_GET_SIZE(objects) != 2) {
        PyErr_SetString(PyExc_ValueError, "two sides: before and after");
        return NULL;
    }
    JsonPlan *self = (JsonPlan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->spec = PyTuple_Pack(2, images, objects);
    if (self->spec == NULL || layout_parse(&self->layout, images, parse_json_column) < 0) goto error;
    for (int side = 0; side < 2; side++) {
        PyObject *obj = PyTuple_GET_ITEM(objects, side);
        JsonObject *jo = &self->sides[side];
        if (obj == Py_None) {
            jo->nfields = -1;
            continue;
        }
        if (!PyTuple_Check(obj)) {
            PyErr_SetString(PyExc_TypeError, "a side is None or a tuple of (key, span)");
            goto error;
        }
        jo->nfields = PyTuple_GET_SIZE(obj);
        jo->fields = PyMem_Calloc(jo->nfields ? jo->nfields : 1, sizeof(JsonField));
        if (jo->fields == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        for (Py_ssize_t k = 0; k < jo->nfields; k++) {
            PyObject *key;
            JsonField *f = &jo->fields[k];
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(obj, k), "Sn", &key, &f->span)) goto error;
            if (f->span < 0 || f->span >= self->layout.nspans) {
                PyErr_SetString(PyExc_ValueError, "a span past the columns");
                goto error;
            }
            f->key = PyBytes_AS_STRING(key);
            f->key_len = PyBytes_GET_SIZE(key);
        }
    }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

/* one side's object of the current row; 0, -1 on MemoryError, 1 to fall back */
static int json_object(JsonPlan *self, JsonObject *jo, Span *spans, const unsigned char *buf, Out *o) {
    if (jo->nfields < 0) {
        if (out_room(o, 4) < 0) return -1;
        o->n = put(o->p + o->n, "null", 4) - o->p;
        return 0;
    }
    if (jo->nfields == 0) {
        if (out_room(o, 2) < 0) return -1;
        o->n = put(o->p + o->n, "{}", 2) - o->p;
        return 0;
    }
    for (Py_ssize_t k = 0; k < jo->nfields; k++) {
        JsonField *f = &jo->fields[k];
        if (out_room(o, f->key_len + VALUE_TEXT_MAX) < 0) return -1;
        o->n = put(o->p + o->n, f->key, f->key_len) - o->p;
        Span *sp = &spans[f->span];
        const SqlColumn *c = self->layout.span_cols[f->span];
        if (sp->used < 0) {
            o->n = put(o->p + o->n, "null", 4) - o->p;
            continue;
        }
        if (c->kind == K_STRING) {
            int r = json_string(o, c, buf + sp->start, sp->used);
            if (r != 0) return r;
            continue;
        }
        char *t = json_value(c, buf + sp->start, sp->used, o->p + o->n);
        if (t == NULL) return 1;
        o->n = t - o->p;
    }
    if (out_room(o, 1) < 0) return -1;
    o->p[o->n++] = '}';
    return 0;
}

/* JsonPlan.text(buf, source, after_row, txn, total, mine, tail): (lines, row changes), or None */
static PyObject *JsonPlan_text(JsonPlan *self, PyObject *args) {
    PyObject *bufobj, *txnobj;
    const char *source, *after_row, *tail;
    Py_ssize_t source_len, after_row_len, tail_len, total, mine;
    if (!PyArg_ParseTuple(args, "O!y#y#Onny#", &PyBytes_Type, &bufobj, &source, &source_len, &after_row,
                          &after_row_len, &txnobj, &total, &mine, &tail, &tail_len))
        return NULL;
    const char *txn = NULL;
    Py_ssize_t txn_len = 0;
    if (txnobj != Py_None) {
        if (!PyBytes_Check(txnobj)) {
            PyErr_SetString(PyExc_TypeError, "txn is bytes or None");
            return NULL;
        }
        txn = PyBytes_AS_STRING(txnobj);
        txn_len = PyBytes_GET_SIZE(txnobj);
    }
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(bufobj);
    Py_ssize_t len = PyBytes_GET_SIZE(bufobj), pos = 0, count = 0;
    Out o = {NULL, 0, 0};
    Span *spans = PyMem_Calloc(self->layout.nspans ? self->layout.nspans : 1, sizeof(Span));
    if (spans == NULL) return PyErr_NoMemory();
    if (len == 0) goto fallback;
    while (pos < len) {
        if (layout_spans(&self->layout, buf, len, &pos, spans) < 0) goto fallback;
        if (out_room(&o, 12) < 0) goto fallback;
        o.n = put(o.p + o.n, "{\"before\":", 10) - o.p;
        if (json_object(self, &self->sides[0], spans, buf, &o) != 0) goto fallback;
        if (out_room(&o, 10) < 0) goto fallback;
        o.n = put(o.p + o.n, ",\"after\":", 9) - o.p;
        if (json_object(self, &self->sides[1], spans, buf, &o) != 0) goto fallback;
        if (out_room(&o, 1 + source_len + 24 + after_row_len + 16 + txn_len + 90 + tail_len) < 0) goto fallback;
        char *t = o.p + o.n;
        *t++ = ',';
        t = put(t, source, source_len);
        t = put_u64(t, (uint64_t)count);
        t = put(t, after_row, after_row_len);
        t = put(t, ",\"transaction\":", 15);
        if (txn == NULL) {
            t = put(t, "null", 4);
        } else {
            t = put(t, "{\"id\":", 6);
            t = put(t, txn, txn_len);
            t = put(t, ",\"total_order\":", 15);
            t = put_u64(t, (uint64_t)(total + count + 1));
            t = put(t, ",\"data_collection_order\":", 25);
            t = put_u64(t, (uint64_t)(mine + count + 1));
            *t++ = '}';
        }
        t = put(t, tail, tail_len);
        o.n = t - o.p;
        count++;
    }
    return plan_result(&o, spans, count, 1);
fallback:
    return plan_result(&o, spans, count, 0);
}

static PyMethodDef JsonPlan_methods[] = {
    {"text", (PyCFunction)JsonPlan_text, METH_VARARGS,
     "text(buf, source, after_row, txn, total, mine, tail) -> (lines, row changes), or None for the Python path"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject JsonPlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "binlake._speedups.JsonPlan",
    .tp_basicsize = sizeof(JsonPlan),
    .tp_dealloc = (destructor)JsonPlan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "JsonPlan(images, objects): the Debezium JSON of one layout's row images",
    .tp_methods = JsonPlan_methods,
    .tp_new = JsonPlan_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "binlake._speedups",
    .m_doc = "The compiled row-image decoder of binlake.rowdecoder, row-image printer of binlake.render.dump.rowtext, "
             "replay-SQL writer of binlake.render.changes.sql and Debezium JSON writer of "
             "binlake.render.changes.debezium; K_* are the kinds of their column plans.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return NULL;
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL) return NULL;
    Decimal = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (Decimal == NULL) return NULL;
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&TextPlanType) < 0 || PyType_Ready(&SqlPlanType) < 0 ||
        PyType_Ready(&JsonPlanType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    /* the kinds, for the Python side that builds the plans (binlake.rowdecoder, binlake.render.dump.rowtext) */
    if (PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0 ||
        PyModule_AddObjectRef(m, "TextPlan", (PyObject *)&TextPlanType) < 0 ||
        PyModule_AddObjectRef(m, "SqlPlan", (PyObject *)&SqlPlanType) < 0 ||
        PyModule_AddObjectRef(m, "JsonPlan", (PyObject *)&JsonPlanType) < 0 || PyModule_AddIntMacro(m, K_PY) < 0 ||
        PyModule_AddIntMacro(m, K_INT) < 0 || PyModule_AddIntMacro(m, K_FLOAT) < 0 ||
        PyModule_AddIntMacro(m, K_DOUBLE) < 0 || PyModule_AddIntMacro(m, K_YEAR) < 0 ||
        PyModule_AddIntMacro(m, K_BIT) < 0 || PyModule_AddIntMacro(m, K_DATE) < 0 ||
        PyModule_AddIntMacro(m, K_DATETIME2) < 0 || PyModule_AddIntMacro(m, K_TIMESTAMP2) < 0 ||
        PyModule_AddIntMacro(m, K_TIME2) < 0 || PyModule_AddIntMacro(m, K_DECIMAL) < 0 ||
        PyModule_AddIntMacro(m, K_STRING) < 0 || PyModule_AddIntMacro(m, K_UINT) < 0 ||
        PyModule_AddIntMacro(m, K_SET_BITS) < 0 || PyModule_AddIntMacro(m, MODE_INSERT) < 0 ||
        PyModule_AddIntMacro(m, MODE_DELETE) < 0 || PyModule_AddIntMacro(m, MODE_UPDATE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
