/* binlake._columnar: rows-event bytes straight into Arrow column buffers, with no Python object per value.
 *
 * A Table holds growable Arrow buffers (validity bitmap, fixed-width data or int32 offsets and bytes) for the
 * target columns of one lake change table.  A Plan, built once per table layout, change kind and columns-present
 * bitmaps by binlake.ingest.columnar.plan_for, says per row image (1 for insert/delete, 2 for update) and per
 * present column how its stored value is read (a V_* kind and two parameters) and which target it feeds (-1: read,
 * checked and dropped).  Table.append(plan, rows_data) appends every image of a rows event as one output row
 * (targets no present column feeds get NULL) and returns the number of rows appended; when the bytes are malformed
 * (a value past the end, an impossible digit group or date field, BIT bits past the width) or a value is not what
 * the tuple path would turn into the same Arrow value (text that is not UTF-8), it returns None and truncates
 * every buffer back to where the call started, so the caller can take the tuple path for that event.
 * Table.finish() hands the buffers over as bytes and empties the table.
 *
 * The value semantics are those of binlake.values' readers followed by binlake.ingest.arrow.to_lake: DATE and
 * DATETIME values datetime cannot hold (zero dates, month or day 0, the year 0, Feb 30) and the zero TIMESTAMP are
 * NULL; fields past their calendar maxima are malformed.  Layouts (Field_*::pack in sql/field.cc, decimal2bin in
 * strings/decimal.cc, my_datetime_packed_from_binary / my_timestamp_from_binary in mysys/my_time.c) are described
 * in binlake.values.numeric, .decimal, .temporal, .strings and .enum_set.
 *
 * Example (Python):
 *     t = Table((A_INT64,))
 *     p = Plan((A_INT64,), (((V_INT, 0, 4, 1),),))     # insert rows of one signed INT column feeding target 0
 *     t.append(p, b"\x00\x07\x00\x00\x00\x01")         # 2 (the second row is NULL)
 *     t.finish()                                        # [(2, 1, b"\x01", b"\x07\0\0\0\0\0\0\0" + 8 * b"\0", None)]
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_layouts.h"

/* Arrow target kinds (exported as the module's A_* constants: binlake.ingest.columnar reads them there) */
enum {
    A_INT64 = 1,     /* int64 */
    A_DEC128 = 2,    /* decimal128: 16-byte two's complement unscaled integer */
    A_FLOAT32 = 3,   /* float32 */
    A_FLOAT64 = 4,   /* float64 */
    A_DATE32 = 5,    /* date32: days since 1970-01-01 */
    A_TIMESTAMP = 6, /* timestamp[us] with or without a zone: microseconds since 1970-01-01 00:00 */
    A_VAR = 7,       /* utf8 / binary: int32 offsets and bytes */
    A_KINDS
};

/* How a stored value is read (exported as the module's V_* constants) */
enum {
    V_INT = 1,        /* p1 bytes little-endian (1, 2, 3, 4, 8), p2 = signed (ENUM, SET: unsigned) */
    V_YEAR = 2,       /* one byte: 0, else 1900 + byte */
    V_BIT = 3,        /* p1 = bits (0..64), (bits + 7) / 8 bytes big-endian */
    V_FLOAT = 4,      /* float32 */
    V_DOUBLE = 5,     /* float64 */
    V_DATE = 6,       /* 3 bytes little-endian day | month << 5 | year << 9 */
    V_DATETIME2 = 7,  /* p1 = fsp */
    V_TIMESTAMP2 = 8, /* p1 = fsp */
    V_DECIMAL = 9,    /* NEWDECIMAL: p1 = precision (1..38), p2 = scale */
    V_TEXT = 10,      /* p1 length bytes (1..4), then UTF-8 text (checked) */
    V_BYTES = 11,     /* p1 length bytes (1..4), then bytes, padded with \0 to p2 bytes (BINARY(n); 0: no pad) */
    V_KINDS
};

static const int FIXED_WIDTH[A_KINDS] = {0, 8, 16, 4, 8, 4, 8, 0};
static const int64_t FRAC_UNIT[4] = {1, 10000, 100, 1}; /* microseconds per stored fraction unit, by bytes */
static const int64_t FRAC_BOUND[4] = {1000000, 100, 10000, 1000000};
#define MAX_DECIMAL_GROUPS 8 /* DECIMAL(38, s) has at most 6 */

__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;

/* ---- growable buffers -------------------------------------------------------------------------------------- */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (extra <= b->cap - b->len) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 64;
    while (cap - b->len < extra) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

typedef struct {
    int akind, width;    /* width: bytes per value of fixed-width kinds */
    Buf valid, data, offs; /* offs: int32 offsets of A_VAR, starting with 0 */
    Py_ssize_t nulls;
    Py_ssize_t saved_data, saved_offs, saved_nulls; /* Table.append's rollback point */
} Col;

typedef struct {
    PyObject_HEAD
    Py_ssize_t ntargets, length;
    unsigned char *akinds;
    Col *cols;
} Table;

static inline void set_valid(Col *c, Py_ssize_t row, int valid) {
    unsigned char *v = (unsigned char *)c->valid.p + (row >> 3);
    unsigned char bit = (unsigned char)(1 << (row & 7));
    *v = valid ? (unsigned char)(*v | bit) : (unsigned char)(*v & ~bit);
}

/* Room for one more row in every column (the validity byte, a fixed-width value or an offset); -1 on no memory. */
static int reserve_row(Table *t) {
    for (Py_ssize_t i = 0; i < t->ntargets; i++) {
        Col *c = &t->cols[i];
        if (buf_reserve(&c->valid, 1) < 0) return -1;
        if ((t->length & 7) == 0) c->valid.p[c->valid.len++] = 0;
        if (buf_reserve(c->akind == A_VAR ? &c->offs : &c->data, c->akind == A_VAR ? 4 : c->width) < 0) return -1;
    }
    return 0;
}

static inline void put_null(Col *c, Py_ssize_t row) {
    set_valid(c, row, 0);
    c->nulls++;
    if (c->akind == A_VAR) {
        int32_t end = (int32_t)c->data.len;
        memcpy(c->offs.p + c->offs.len, &end, 4);
        c->offs.len += 4;
    } else {
        memset(c->data.p + c->data.len, 0, (size_t)c->width);
        c->data.len += c->width;
    }
}

static inline void put_fixed(Col *c, Py_ssize_t row, const void *value) {
    set_valid(c, row, 1);
    memcpy(c->data.p + c->data.len, value, (size_t)c->width);
    c->data.len += c->width;
}

/* ---- calendar ---------------------------------------------------------------------------------------------- */

/* days from 1970-01-01 to the proleptic Gregorian y/m/d (H. Hinnant's days_from_civil) */
static inline int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* ---- bytes ------------------------------------------------------------------------------------------------- */

/* Is s[0:n] valid UTF-8 as Python's strict decoder takes it (RFC 3629: no overlong forms, no surrogates, nothing
 * past U+10FFFF)? */
static int valid_utf8(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) { /* ASCII fast path */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && s[i + 1] < 0xA0) return 0; /* overlong */
            if (c == 0xED && s[i + 1] > 0x9F) return 0; /* surrogates */
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if (c == 0xF0 && s[i + 1] < 0x90) return 0; /* overlong */
            if (c == 0xF4 && s[i + 1] > 0x8F) return 0; /* past U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* ---- Plan -------------------------------------------------------------------------------------------------- */

typedef struct {
    int vkind, p1, p2;
    Py_ssize_t target;
    int size; /* bytes of a fixed-size value (every kind but V_TEXT/V_BYTES) */
    int ngroups;
    unsigned char gbytes[MAX_DECIMAL_GROUPS], gdigits[MAX_DECIMAL_GROUPS];
} Step;

typedef struct {
    Py_ssize_t nsteps, nbytes, nunfed;
    Step *steps;
    Py_ssize_t *unfed; /* targets no present column of this image feeds: NULL in its rows */
} Image;

typedef struct {
    PyObject_HEAD
    Py_ssize_t ntargets, nimages;
    unsigned char *akinds;
    Image images[2];
} Plan;

/* May a value read as vkind go to a target of kind akind? */
static int compatible(int vkind, int akind) {
    switch (vkind) {
    case V_INT:
    case V_YEAR:
    case V_BIT:
        return akind == A_INT64 || akind == A_DEC128;
    case V_FLOAT:
        return akind == A_FLOAT32 || akind == A_FLOAT64;
    case V_DOUBLE:
        return akind == A_FLOAT64;
    case V_DATE:
        return akind == A_DATE32;
    case V_DATETIME2:
    case V_TIMESTAMP2:
        return akind == A_TIMESTAMP;
    case V_DECIMAL:
        return akind == A_DEC128;
    default:
        return akind == A_VAR;
    }
}

/* Step parameters and the stored size; -1 with ValueError for impossible ones. */
static int parse_step(Step *s, PyObject *item, Plan *plan) {
    if (!PyArg_ParseTuple(item, "inii", &s->vkind, &s->target, &s->p1, &s->p2)) return -1;
    int ok = s->vkind > 0 && s->vkind < V_KINDS && s->target >= -1 && s->target < plan->ntargets;
    switch (ok ? s->vkind : 0) {
    case V_INT:
        ok = s->p1 == 1 || s->p1 == 2 || s->p1 == 3 || s->p1 == 4 || s->p1 == 8;
        s->size = s->p1;
        break;
    case V_YEAR:
        s->size = 1;
        break;
    case V_BIT:
        ok = s->p1 >= 0 && s->p1 <= 64;
        s->size = (s->p1 + 7) / 8;
        break;
    case V_FLOAT:
        s->size = 4;
        break;
    case V_DOUBLE:
        s->size = 8;
        break;
    case V_DATE:
        s->size = 3;
        break;
    case V_DATETIME2:
    case V_TIMESTAMP2:
        ok = s->p1 >= 0 && s->p1 <= 6;
        s->size = (s->vkind == V_DATETIME2 ? 5 : 4) + (s->p1 + 1) / 2;
        break;
    case V_DECIMAL: {
        /* decimal2bin: the integer part's leading digits, its 9-digit groups, the fraction's, trailing digits */
        int precision = s->p1, scale = s->p2;
        ok = precision >= 1 && precision <= 38 && scale >= 0 && scale <= precision;
        if (!ok) break;
        s->ngroups = decimal_groups(precision - scale, scale, s->gbytes, s->gdigits, MAX_DECIMAL_GROUPS, &s->size);
        ok = s->ngroups > 0;
        break;
    }
    case V_TEXT:
    case V_BYTES:
        ok = s->p1 >= 1 && s->p1 <= 4 && s->p2 >= 0;
        break;
    default:
        ok = 0;
    }
    if (ok && s->target >= 0) ok = compatible(s->vkind, plan->akinds[s->target]);
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "bad column step (%d, %zd, %d, %d)", s->vkind, s->target, s->p1, s->p2);
        return -1;
    }
    return 0;
}

static int parse_akinds(PyObject *targets, unsigned char **out, Py_ssize_t *n) {
    if (!PyTuple_Check(targets)) {
        PyErr_SetString(PyExc_TypeError, "targets is a tuple of Arrow target kinds");
        return -1;
    }
    *n = PyTuple_GET_SIZE(targets);
    *out = PyMem_Malloc(*n ? (size_t)*n : 1);
    if (*out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        long k = PyLong_AsLong(PyTuple_GET_ITEM(targets, i));
        if (k == -1 && PyErr_Occurred()) return -1;
        if (k <= 0 || k >= A_KINDS) {
            PyErr_Format(PyExc_ValueError, "unknown Arrow target kind %ld", k);
            return -1;
        }
        (*out)[i] = (unsigned char)k;
    }
    return 0;
}

static void Plan_dealloc(Plan *self) {
    for (int i = 0; i < 2; i++) {
        PyMem_Free(self->images[i].steps);
        PyMem_Free(self->images[i].unfed);
    }
    PyMem_Free(self->akinds);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Plan_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *targets, *images;
    static char *kwlist[] = {"targets", "images", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!", kwlist, &targets, &PyTuple_Type, &images)) return NULL;
    Py_ssize_t nimages = PyTuple_GET_SIZE(images);
    if (nimages != 1 && nimages != 2) {
        PyErr_SetString(PyExc_ValueError, "one image (insert, delete) or two (update: before, after)");
        return NULL;
    }
    Plan *self = (Plan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->nimages = nimages;
    if (parse_akinds(targets, &self->akinds, &self->ntargets) < 0) goto error;
    for (Py_ssize_t i = 0; i < nimages; i++) {
        PyObject *steps = PyTuple_GET_ITEM(images, i);
        if (!PyTuple_Check(steps)) {
            PyErr_SetString(PyExc_TypeError, "an image is a tuple of (vkind, target, p1, p2)");
            goto error;
        }
        Image *im = &self->images[i];
        im->nsteps = PyTuple_GET_SIZE(steps);
        im->nbytes = (im->nsteps + 7) / 8;
        im->steps = PyMem_Calloc(im->nsteps ? (size_t)im->nsteps : 1, sizeof(Step));
        im->unfed = PyMem_Calloc(self->ntargets ? (size_t)self->ntargets : 1, sizeof(Py_ssize_t));
        if (im->steps == NULL || im->unfed == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        unsigned char *fed = PyMem_Calloc(self->ntargets ? (size_t)self->ntargets : 1, 1);
        if (fed == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        for (Py_ssize_t k = 0; k < im->nsteps; k++) {
            PyObject *item = PyTuple_GET_ITEM(steps, k);
            Step *s = &im->steps[k];
            if (!PyTuple_Check(item) || parse_step(s, item, self) < 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a column step is a tuple");
                PyMem_Free(fed);
                goto error;
            }
            if (s->target >= 0 && fed[s->target]++) {
                PyErr_Format(PyExc_ValueError, "target %zd fed by two columns of one image", s->target);
                PyMem_Free(fed);
                goto error;
            }
        }
        for (Py_ssize_t t = 0; t < self->ntargets; t++)
            if (!fed[t]) im->unfed[im->nunfed++] = t;
        PyMem_Free(fed);
    }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "binlake._columnar.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_dealloc = (destructor)Plan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Plan(targets, images): how one layout's row images feed a Table of these target kinds; per image "
              "a tuple of (vkind, target or -1, p1, p2) per present column",
    .tp_new = Plan_new,
};

/* ---- values into columns ----------------------------------------------------------------------------------- */

enum { OK = 0, BAD = 1, NOMEM = -1 }; /* BAD: the bytes need the tuple path */

static inline void put_int(Col *c, Py_ssize_t row, int64_t v, int is_unsigned) {
    if (c->akind == A_INT64) {
        put_fixed(c, row, &v);
    } else { /* A_DEC128: sign- or zero-extended */
        int128 w = is_unsigned ? (int128)(uint64_t)v : (int128)v;
        put_fixed(c, row, &w);
    }
}

/* NEWDECIMAL at p (s->size bytes) as its unscaled integer; BAD for a digit group out of range (bin2decimal). */
static int decimal_value(const Step *s, const unsigned char *p, int128 *out) {
    unsigned char b[4 * MAX_DECIMAL_GROUPS];
    memcpy(b, p, (size_t)s->size);
    unsigned char flip = (b[0] & 0x80) ? 0 : 0xFF; /* sign bit clear: negative, every byte inverted */
    for (int i = 0; i < s->size; i++) b[i] ^= flip;
    b[0] &= 0x7F;
    uint128 acc = 0;
    const unsigned char *q = b;
    for (int g = 0; g < s->ngroups; g++) {
        uint32_t v = (uint32_t)be(q, s->gbytes[g]);
        q += s->gbytes[g];
        if (v >= POW10[s->gdigits[g]]) return BAD;
        acc = acc * POW10[s->gdigits[g]] + v;
    }
    *out = flip ? -(int128)acc : (int128)acc;
    return OK;
}

/* The DATETIME2 at p as microseconds since the epoch: OK, BAD (malformed), or 2 for a value datetime cannot hold
 * (zero or partial date, Feb 30, year 0: NULL).  temporal._datetime2_reader. */
static int datetime2_value(const Step *s, const unsigned char *p, int64_t *out) {
    int fb = (s->p1 + 1) / 2;
    int64_t t = (int64_t)be(p, 5) - 0x8000000000LL;
    int64_t frac = (int64_t)be(p + 5, fb);
    if (t < 0 || frac >= FRAC_BOUND[fb]) return BAD;
    int64_t ymd = t >> 17, ym = ymd >> 5;
    int64_t y = ym / 13, mo = ym % 13, d = ymd & 31, h = t >> 12 & 31, mi = t >> 6 & 63, sec = t & 63;
    if (mo > 12 || h > 23 || mi > 59 || sec > 59 || y > 9999) return BAD;
    if (!valid_date(y, mo, d)) return 2;
    *out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
    *out = *out * 1000000 + frac * FRAC_UNIT[fb];
    return OK;
}

/* One row image at *ppos into row `row` of the table; OK, BAD or NOMEM. */
static int read_image(Table *t, Image *im, const unsigned char *buf, Py_ssize_t len, Py_ssize_t *ppos) {
    Py_ssize_t pos = *ppos, row = t->length;
    /* a row image of no columns in non-empty rows data, or a null bitmap past the end */
    if (im->nsteps == 0 || im->nbytes > len - pos) return BAD;
    if (reserve_row(t) < 0) return NOMEM;
    const unsigned char *nulls = buf + pos;
    pos += im->nbytes;
    for (Py_ssize_t k = 0; k < im->nsteps; k++) {
        const Step *s = &im->steps[k];
        Col *c = s->target >= 0 ? &t->cols[s->target] : NULL;
        if (nulls[k >> 3] & (1 << (k & 7))) {
            if (c) put_null(c, row);
            continue;
        }
        const unsigned char *p = buf + pos;
        if (s->vkind == V_TEXT || s->vkind == V_BYTES) {
            if (s->p1 > len - pos) return BAD;
            uint64_t n = le(p, s->p1);
            pos += s->p1;
            if (n > (uint64_t)(len - pos)) return BAD;
            p += s->p1;
            pos += (Py_ssize_t)n;
            if (s->vkind == V_TEXT && !valid_utf8(p, (Py_ssize_t)n)) return BAD;
            if (c == NULL) continue;
            Py_ssize_t size = (Py_ssize_t)n, pad = s->p2 > size ? s->p2 - size : 0;
            if (size + pad > INT32_MAX - c->data.len) return BAD; /* past int32 offsets: the tuple path */
            if (buf_reserve(&c->data, size + pad) < 0) return NOMEM;
            memcpy(c->data.p + c->data.len, p, (size_t)size);
            memset(c->data.p + c->data.len + size, 0, (size_t)pad);
            c->data.len += size + pad;
            int32_t end = (int32_t)c->data.len;
            memcpy(c->offs.p + c->offs.len, &end, 4);
            c->offs.len += 4;
            set_valid(c, row, 1);
            continue;
        }
        if (s->size > len - pos) return BAD;
        pos += s->size;
        switch (s->vkind) {
        case V_INT: {
            uint64_t u = le(p, s->p1);
            if (s->p2 && s->p1 < 8 && (u >> (8 * s->p1 - 1))) u |= ~(uint64_t)0 << (8 * s->p1);
            if (c) put_int(c, row, (int64_t)u, !s->p2);
            break;
        }
        case V_YEAR:
            if (c) put_int(c, row, p[0] ? 1900 + p[0] : 0, 0);
            break;
        case V_BIT: {
            uint64_t u = be(p, s->size);
            if (s->p1 < 64 && (u >> s->p1)) return BAD; /* bits set past the width */
            if (c) put_int(c, row, (int64_t)u, 1);
            break;
        }
        case V_FLOAT: {
            /* struct.unpack('<f') widened to a Python float, then pa.array(..., float32/float64) */
            double d = PyFloat_Unpack4((const char *)p, 1);
            if (c == NULL) break;
            if (c->akind == A_FLOAT32) {
                float f = (float)d;
                put_fixed(c, row, &f);
            } else {
                put_fixed(c, row, &d);
            }
            break;
        }
        case V_DOUBLE: {
            double d = PyFloat_Unpack8((const char *)p, 1);
            if (c) put_fixed(c, row, &d);
            break;
        }
        case V_DATE: { /* temporal._date_reader */
            uint64_t u = le(p, 3);
            int64_t y = (int64_t)(u >> 9), m = (int64_t)(u >> 5 & 15), d = (int64_t)(u & 31);
            if (m > 12 || y > 9999) return BAD;
            if (c == NULL) break;
            if (valid_date(y, m, d)) {
                int32_t days = (int32_t)days_from_civil(y, m, d);
                put_fixed(c, row, &days);
            } else {
                put_null(c, row);
            }
            break;
        }
        case V_DATETIME2: {
            int64_t us = 0;
            int r = datetime2_value(s, p, &us);
            if (r == BAD) return BAD;
            if (c == NULL) break;
            if (r == OK)
                put_fixed(c, row, &us);
            else
                put_null(c, row);
            break;
        }
        case V_TIMESTAMP2: { /* temporal._timestamp2_reader: the zero TIMESTAMP is InvalidDatetime, NULL here */
            int fb = (s->p1 + 1) / 2;
            int64_t secs = (int64_t)be(p, 4), frac = (int64_t)be(p + 4, fb);
            if (frac >= FRAC_BOUND[fb]) return BAD;
            if (c == NULL) break;
            if (secs || frac) {
                int64_t us = secs * 1000000 + frac * FRAC_UNIT[fb];
                put_fixed(c, row, &us);
            } else {
                put_null(c, row);
            }
            break;
        }
        case V_DECIMAL: {
            int128 v;
            if (decimal_value(s, p, &v) != OK) return BAD;
            if (c) put_fixed(c, row, &v);
            break;
        }
        default:
            return BAD;
        }
    }
    for (Py_ssize_t i = 0; i < im->nunfed; i++) put_null(&t->cols[im->unfed[i]], row);
    t->length++;
    *ppos = pos;
    return OK;
}

/* ---- Table ------------------------------------------------------------------------------------------------- */

/* Empty buffers: the A_VAR offsets start with the 0 of the first value. */
static int reset_col(Col *c) {
    PyMem_Free(c->valid.p);
    PyMem_Free(c->data.p);
    PyMem_Free(c->offs.p);
    memset(&c->valid, 0, sizeof(Buf));
    memset(&c->data, 0, sizeof(Buf));
    memset(&c->offs, 0, sizeof(Buf));
    c->nulls = 0;
    if (c->akind == A_VAR) {
        if (buf_reserve(&c->offs, 4) < 0) return -1;
        memset(c->offs.p, 0, 4);
        c->offs.len = 4;
    }
    return 0;
}

static void Table_dealloc(Table *self) {
    for (Py_ssize_t i = 0; self->cols != NULL && i < self->ntargets; i++) {
        PyMem_Free(self->cols[i].valid.p);
        PyMem_Free(self->cols[i].data.p);
        PyMem_Free(self->cols[i].offs.p);
    }
    PyMem_Free(self->cols);
    PyMem_Free(self->akinds);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Table_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *targets;
    static char *kwlist[] = {"targets", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kwlist, &targets)) return NULL;
    Table *self = (Table *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    if (parse_akinds(targets, &self->akinds, &self->ntargets) < 0) goto error;
    self->cols = PyMem_Calloc(self->ntargets ? (size_t)self->ntargets : 1, sizeof(Col));
    if (self->cols == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t i = 0; i < self->ntargets; i++) {
        Col *c = &self->cols[i];
        c->akind = self->akinds[i];
        c->width = FIXED_WIDTH[c->akind];
        if (reset_col(c) < 0) goto error;
    }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

/* Table.append(plan, rows_data) -> rows appended, or None (buffers as before the call) for the tuple path */
static PyObject *Table_append(Table *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyObject_TypeCheck(args[0], &PlanType)) {
        PyErr_SetString(PyExc_TypeError, "append(plan, rows_data)");
        return NULL;
    }
    Plan *plan = (Plan *)args[0];
    if (plan->ntargets != self->ntargets || memcmp(plan->akinds, self->akinds, (size_t)self->ntargets) != 0) {
        PyErr_SetString(PyExc_ValueError, "the plan was made for other target kinds");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *buf = view.buf;
    Py_ssize_t len = view.len, pos = 0, start = self->length;
    for (Py_ssize_t i = 0; i < self->ntargets; i++) {
        Col *c = &self->cols[i];
        c->saved_data = c->data.len;
        c->saved_offs = c->offs.len;
        c->saved_nulls = c->nulls;
    }
    int r = OK;
    while (pos < len && r == OK)
        for (Py_ssize_t i = 0; i < plan->nimages && r == OK; i++) r = read_image(self, &plan->images[i], buf, len, &pos);
    PyBuffer_Release(&view);
    if (r == OK) return PyLong_FromSsize_t(self->length - start);
    /* truncate back; validity bits past the length are rewritten by the next rows (and cleared by finish) */
    self->length = start;
    for (Py_ssize_t i = 0; i < self->ntargets; i++) {
        Col *c = &self->cols[i];
        c->data.len = c->saved_data;
        c->offs.len = c->saved_offs;
        c->nulls = c->saved_nulls;
        c->valid.len = (start + 7) / 8;
    }
    if (r == NOMEM) return NULL;
    Py_RETURN_NONE;
}

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->p ? b->p : "", b->len); }

/* Table.finish() -> [(length, null_count, validity or None, data, offsets or None)] per target; empties the table */
static PyObject *Table_finish(Table *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(self->ntargets);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < self->ntargets; i++) {
        Col *c = &self->cols[i];
        if (self->length & 7) /* clear the padding bits of the last validity byte */
            c->valid.p[c->valid.len - 1] &= (unsigned char)((1 << (self->length & 7)) - 1);
        PyObject *valid = c->nulls ? bytes_of(&c->valid) : Py_NewRef(Py_None);
        PyObject *data = bytes_of(&c->data);
        PyObject *offs = c->akind == A_VAR ? bytes_of(&c->offs) : Py_NewRef(Py_None);
        PyObject *item = valid && data && offs ? Py_BuildValue("(nnOOO)", self->length, c->nulls, valid, data, offs)
                                               : NULL;
        Py_XDECREF(valid);
        Py_XDECREF(data);
        Py_XDECREF(offs);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    self->length = 0;
    for (Py_ssize_t i = 0; i < self->ntargets; i++) {
        if (reset_col(&self->cols[i]) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyObject *Table_len(Table *self, void *Py_UNUSED(closure)) { return PyLong_FromSsize_t(self->length); }

static PyMethodDef Table_methods[] = {
    {"append", (PyCFunction)(void (*)(void))Table_append, METH_FASTCALL,
     "append(plan, rows_data) -> rows appended, or None (nothing appended) when the tuple path must decode them"},
    {"finish", (PyCFunction)Table_finish, METH_NOARGS,
     "finish() -> [(length, null_count, validity or None, data, offsets or None)] per target; empties the table"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Table_getset[] = {
    {"length", (getter)Table_len, NULL, "rows appended since the last finish()", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "binlake._columnar.Table",
    .tp_basicsize = sizeof(Table),
    .tp_dealloc = (destructor)Table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Table(targets): growable Arrow buffers of target columns of these kinds (a tuple of A_* codes)",
    .tp_methods = Table_methods,
    .tp_getset = Table_getset,
    .tp_new = Table_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "binlake._columnar",
    .m_doc = "Rows-event bytes straight into Arrow column buffers (binlake.ingest.columnar); A_* are the Arrow "
              "target kinds, V_* how stored values are read.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__columnar(void) {
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&TableType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0 ||
        PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0 || PyModule_AddIntMacro(m, A_INT64) < 0 ||
        PyModule_AddIntMacro(m, A_DEC128) < 0 || PyModule_AddIntMacro(m, A_FLOAT32) < 0 ||
        PyModule_AddIntMacro(m, A_FLOAT64) < 0 || PyModule_AddIntMacro(m, A_DATE32) < 0 ||
        PyModule_AddIntMacro(m, A_TIMESTAMP) < 0 || PyModule_AddIntMacro(m, A_VAR) < 0 ||
        PyModule_AddIntMacro(m, V_INT) < 0 || PyModule_AddIntMacro(m, V_YEAR) < 0 ||
        PyModule_AddIntMacro(m, V_BIT) < 0 || PyModule_AddIntMacro(m, V_FLOAT) < 0 ||
        PyModule_AddIntMacro(m, V_DOUBLE) < 0 || PyModule_AddIntMacro(m, V_DATE) < 0 ||
        PyModule_AddIntMacro(m, V_DATETIME2) < 0 || PyModule_AddIntMacro(m, V_TIMESTAMP2) < 0 ||
        PyModule_AddIntMacro(m, V_DECIMAL) < 0 || PyModule_AddIntMacro(m, V_TEXT) < 0 ||
        PyModule_AddIntMacro(m, V_BYTES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
