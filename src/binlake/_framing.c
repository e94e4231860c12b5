/* binlake/_framing.c: the event framing of binlake.decoder.Decoder.events and the header walk of
 * binlake.reader.header_table in C (optional; both run in Python where it is not built, or BINLAKE_PURE_PYTHON is
 * set).
 *
 * A binlog is a sequence of events, each a 19-byte common header (timestamp 4, type code 1, server id 4, event size
 * 4, next position 4, flags 2: Log_event_header in MySQL's libbinlogevents/src/binlog_event.cpp), the body, and,
 * when the format description says so, a CRC32 of header and body in the last 4 bytes (Log_event::write_footer,
 * binlog_checksum=CRC32).  Framing (cutting events at their sizes, checking each CRC, reading the header fields and
 * copying the body out) cost the Python decoder about as much as decoding the bodies; here it is one call per run
 * of events, and the decoder only constructs each event from the fields.
 *
 * frame(buf, offset, checksum_len, verify, fast, limit) -> list of (size, timestamp, type_code, server_id, log_pos,
 * flags, checksum, body): the events of buf from offset, consecutively, at most limit of them, stopping (without
 * error) before the first event that is incomplete, smaller than its header and checksum, whose CRC32 does not match
 * (with verify), or whose type code is not marked in fast (a 256-byte mask: the decoder leaves the events that change
 * how later events are read, such as a FORMAT_DESCRIPTION or START_ENCRYPTION, and unknown types, to its Python
 * path, which also raises the errors).  checksum is the stored CRC32 (None without checksums); body excludes header
 * and checksum.  Only 19-byte headers (every binlog since MySQL 4.0).
 *
 * text_rows(buf, offset, ncols) -> (end, rows, stop, columns): the rows of a text result set (the answer to
 * COM_QUERY after its column definitions: binlake.replication.resultset) from offset, one packet each, every cell a
 * length-encoded string or 0xFB for NULL (MariaDB sql/protocol.cc, Protocol_text::store_*; net_store_length), as one
 * Arrow binary column per result column: (validity bitmap, int32 offsets, data) bytes.  It stops before the first
 * packet that is incomplete (stop 0), the end-of-rows packet (0xFE, shorter than a 16 MiB packet: stop 1), an ERR
 * packet (0xFF: stop 2) or a 16 MiB packet continued by the next (stop 3); end is where it stopped.  A row whose
 * cells do not fill its packet exactly raises ValueError.
 *
 * Example (Python):
 *     frame(bytearray(b"\0\0\0\0\x10" + bytes(4) + b"\x1b\0\0\0" + bytes(6) + b"\x07" * 8), 0, 0, True, mask, 64)
 *     # [(27, 0, 16, 0, 0, 0, None, b"\x07\x07\x07\x07\x07\x07\x07\x07")]  (an XID_EVENT, when mask[16] is set)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <zlib.h>

#include "_layouts.h"

#define HEADER_LEN 19
/* The first byte of a server's end-of-rows (EOF) and ERR packets (MariaDB sql/protocol.cc), exported as the module's
 * EOF_PACKET and ERR_PACKET: tests/test_compiled.py checks them equal to binlake.replication.protocol's. */
#define EOF_PACKET 0xFE
#define ERR_PACKET 0xFF

static PyObject *frame(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer view, fast;
    Py_ssize_t offset, limit;
    int csum, verify;
    if (!PyArg_ParseTuple(args, "y*nipy*n:frame", &view, &offset, &csum, &verify, &fast, &limit)) return NULL;
    PyObject *out = NULL;
    if (offset < 0 || (csum != 0 && csum != 4) || fast.len != 256) {
        PyErr_SetString(PyExc_ValueError, "frame: offset must not be negative, checksum_len 0 or 4, fast 256 bytes");
        goto done;
    }
    out = PyList_New(0);
    if (out == NULL) goto done;
    const unsigned char *b = view.buf, *mask = fast.buf;
    Py_ssize_t pos = offset;
    for (Py_ssize_t n = 0; n < limit && view.len - pos >= HEADER_LEN; n++) {
        const unsigned char *p = b + pos;
        uint32_t size = (uint32_t)le(p + 9, 4);
        if (size < HEADER_LEN + (uint32_t)csum || (Py_ssize_t)size > view.len - pos || !mask[p[4]]) break;
        uint32_t stored = csum ? (uint32_t)le(p + size - 4, 4) : 0;
        if (csum && verify && (uint32_t)crc32(0L, p, size - 4) != stored) break;
        PyObject *row = PyTuple_New(8);
        if (row == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyObject *checksum = csum ? PyLong_FromUnsignedLong(stored) : Py_NewRef(Py_None);
        PyTuple_SET_ITEM(row, 0, PyLong_FromUnsignedLong(size));
        PyTuple_SET_ITEM(row, 1, PyLong_FromUnsignedLong((unsigned long)le(p, 4)));
        PyTuple_SET_ITEM(row, 2, PyLong_FromLong(p[4]));
        PyTuple_SET_ITEM(row, 3, PyLong_FromUnsignedLong((unsigned long)le(p + 5, 4)));
        PyTuple_SET_ITEM(row, 4, PyLong_FromUnsignedLong((unsigned long)le(p + 13, 4)));
        PyTuple_SET_ITEM(row, 5, PyLong_FromLong((long)le(p + 17, 2)));
        PyTuple_SET_ITEM(row, 6, checksum);
        PyTuple_SET_ITEM(row, 7,
                         PyBytes_FromStringAndSize((const char *)p + HEADER_LEN, size - HEADER_LEN - (uint32_t)csum));
        for (int i = 0; i < 8; i++) {
            if (PyTuple_GET_ITEM(row, i) == NULL) { /* out of memory (a tuple frees its items that were made) */
                Py_DECREF(row);
                Py_CLEAR(out);
                goto done;
            }
        }
        int failed = PyList_Append(out, row);
        Py_DECREF(row);
        if (failed) {
            Py_CLEAR(out);
            goto done;
        }
        pos += size;
    }
done:
    PyBuffer_Release(&view);
    PyBuffer_Release(&fast);
    return out;
}

/* walk(buf, start, stop): the common header (HEADER_LEN bytes: timestamp 4, type code 1, server id 4, event size 4,
 * next position 4, flags 2) of every event of the binlog image buf from position start, following the sizes, while
 * the position is below min(stop, len(buf)) and the event there is whole.  Returns (positions, sizes, codes, flags,
 * timestamps, end): the columns as native int64 / uint32 / uint8 / uint16 / uint32 arrays in bytes, and the position
 * where the walk stopped.  When end is below min(stop, len(buf)) the bytes at end are no whole event (a partial
 * header, a size below HEADER_LEN, an event running past the end of buf): binlake.reader says which, from the bytes.
 * The GIL is released while walking.
 *
 * Example (Python):
 *     walk(b"\xfebin" + bytes(9) + b"\x13" + bytes(9), 4, 1 << 62)   # one 19-byte event at 4, then the end
 *     # (b"\x04\0\0\0\0\0\0\0", b"\x13\0\0\0", b"\0", b"\0\0", b"\0\0\0\0", 23)
 */
typedef struct {
    Py_ssize_t n, cap;
    int64_t *pos;
    uint32_t *size, *ts;
    uint8_t *code;
    uint16_t *flags;
} Headers;

static void headers_free(Headers *h) {
    free(h->pos);
    free(h->size);
    free(h->ts);
    free(h->code);
    free(h->flags);
}

/* room for one more row; 0 when out of memory (the arrays stay valid) */
static int headers_room(Headers *h) {
    if (h->n < h->cap) return 1;
    Py_ssize_t cap = h->cap ? h->cap * 2 : 4096;
    int64_t *pos = realloc(h->pos, (size_t)cap * sizeof *pos);
    if (pos) h->pos = pos;
    uint32_t *size = realloc(h->size, (size_t)cap * sizeof *size);
    if (size) h->size = size;
    uint32_t *ts = realloc(h->ts, (size_t)cap * sizeof *ts);
    if (ts) h->ts = ts;
    uint8_t *code = realloc(h->code, (size_t)cap * sizeof *code);
    if (code) h->code = code;
    uint16_t *flags = realloc(h->flags, (size_t)cap * sizeof *flags);
    if (flags) h->flags = flags;
    if (!pos || !size || !ts || !code || !flags) return 0;
    h->cap = cap;
    return 1;
}

/* a column for y#: never NULL (Py_BuildValue makes None of a NULL pointer, and no row allocates nothing) */
static inline const char *column(const void *p) { return p ? (const char *)p : ""; }

static PyObject *walk(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "y*nn:walk", &view, &start, &stop)) return NULL;
    if (start < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "walk: start must not be negative");
        return NULL;
    }
    const unsigned char *b = view.buf;
    const Py_ssize_t len = view.len, end = stop < len ? stop : len;
    Headers h = {0};
    Py_ssize_t pos = start;
    int memory = 1;
    Py_BEGIN_ALLOW_THREADS
    while (pos < end && len - pos >= HEADER_LEN) {
        const unsigned char *p = b + pos;
        uint32_t size = (uint32_t)le(p + 9, 4);
        if (size < HEADER_LEN || (Py_ssize_t)size > len - pos) break;
        if (!(memory = headers_room(&h))) break;
        h.pos[h.n] = pos;
        h.size[h.n] = size;
        h.ts[h.n] = (uint32_t)le(p, 4);
        h.code[h.n] = p[4];
        h.flags[h.n] = (uint16_t)le(p + 17, 2);
        h.n++;
        pos += size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *out = NULL;
    if (!memory)
        PyErr_NoMemory();
    else
        out = Py_BuildValue("(y#y#y#y#y#n)", column(h.pos), h.n * (Py_ssize_t)sizeof *h.pos, column(h.size),
                            h.n * (Py_ssize_t)sizeof *h.size, column(h.code), h.n, column(h.flags),
                            h.n * (Py_ssize_t)sizeof *h.flags, column(h.ts), h.n * (Py_ssize_t)sizeof *h.ts, pos);
    headers_free(&h);
    return out;
}


/* One result column being built: the Arrow binary layout (validity bitmap, int32 offsets, data). */
typedef struct {
    char *data;
    size_t len, cap;
    int32_t *offsets;
    uint8_t *valid;
} TextColumn;

static void text_columns_free(TextColumn *cols, Py_ssize_t ncols) {
    for (Py_ssize_t i = 0; i < ncols; i++) {
        free(cols[i].data);
        free(cols[i].offsets);
        free(cols[i].valid);
    }
    free(cols);
}

/* Room for rows + 1 offsets and rows bits in every column; 0 when out of memory. */
static int text_rows_room(TextColumn *cols, Py_ssize_t ncols, size_t *cap, size_t rows) {
    if (rows < *cap) return 1;
    size_t grown = *cap ? *cap * 2 : 1024;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        int32_t *o = realloc(cols[i].offsets, (grown + 1) * sizeof *o);
        if (!o) return 0;
        cols[i].offsets = o;
        uint8_t *v = realloc(cols[i].valid, grown / 8 + 1);
        if (!v) return 0;
        memset(v + *cap / 8, 0, grown / 8 + 1 - *cap / 8);
        cols[i].valid = v;
    }
    *cap = grown;
    return 1;
}

static int text_data_room(TextColumn *c, size_t more) {
    if (c->len + more <= c->cap) return 1;
    size_t grown = c->cap ? c->cap : 4096;
    while (grown < c->len + more) grown *= 2;
    char *d = realloc(c->data, grown);
    if (!d) return 0;
    c->data = d;
    c->cap = grown;
    return 1;
}

static PyObject *text_rows(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer view;
    Py_ssize_t offset, ncols;
    if (!PyArg_ParseTuple(args, "y*nn:text_rows", &view, &offset, &ncols)) return NULL;
    PyObject *out = NULL;
    TextColumn *cols = NULL;
    if (offset < 0 || offset > view.len || ncols < 1) {
        PyErr_SetString(PyExc_ValueError, "text_rows: offset must be inside buf and ncols at least 1");
        goto done;
    }
    cols = calloc((size_t)ncols, sizeof *cols);
    if (!cols) {
        PyErr_NoMemory();
        goto done;
    }
    const uint8_t *buf = view.buf;
    size_t end = (size_t)offset, n = (size_t)view.len, rows = 0, cap = 0;
    int stop = 0;
    if (!text_rows_room(cols, ncols, &cap, 0)) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < ncols; i++) cols[i].offsets[0] = 0;
    while (n - end >= 4) {
        size_t length = buf[end] | (size_t)buf[end + 1] << 8 | (size_t)buf[end + 2] << 16;
        if (length == 0xFFFFFF) { stop = 3; break; }
        if (n - end - 4 < length) break;
        const uint8_t *p = buf + end + 4, *stop_at = p + length;
        if (length && p[0] == EOF_PACKET) { stop = 1; break; }
        if (length && p[0] == ERR_PACKET) { stop = 2; break; }
        if (!text_rows_room(cols, ncols, &cap, rows + 1)) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < ncols; i++) {
            TextColumn *c = &cols[i];
            if (p >= stop_at) goto short_row;
            uint64_t size;
            uint8_t first = *p++;
            if (first == 0xFB) {  /* NULL: no bit, no bytes */
                c->offsets[rows + 1] = (int32_t)c->len;
                continue;
            }
            if (first < 0xFB) {
                size = first;
            } else {
                int width = first == 0xFC ? 2 : first == 0xFD ? 3 : 8; /* 0xFE, 0xFF: net_field_length */
                if (stop_at - p < width) goto short_row;
                size = 0;
                for (int b = width - 1; b >= 0; b--) size = size << 8 | p[b];
                p += width;
            }
            if ((uint64_t)(stop_at - p) < size) goto short_row;
            if (c->len + size > INT32_MAX) {
                PyErr_SetString(PyExc_ValueError, "text_rows: a column's data passes 2 GiB in one call");
                goto done;
            }
            if (!text_data_room(c, size)) {
                PyErr_NoMemory();
                goto done;
            }
            memcpy(c->data + c->len, p, size);
            c->len += size;
            p += size;
            c->offsets[rows + 1] = (int32_t)c->len;
            c->valid[rows / 8] |= (uint8_t)(1u << (rows % 8));
        }
        if (p != stop_at) {
            PyErr_Format(PyExc_ValueError, "text_rows: %zd bytes after the last cell of the row at %zd",
                         (Py_ssize_t)(stop_at - p), (Py_ssize_t)end);
            goto done;
        }
        rows++;
        end += 4 + length;
    }
    PyObject *list = PyList_New(ncols);
    if (!list) goto done;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        TextColumn *c = &cols[i];
        PyObject *t = Py_BuildValue("(y#y#y#)", (const char *)c->valid, (Py_ssize_t)((rows + 7) / 8),
                                    (const char *)c->offsets, (Py_ssize_t)((rows + 1) * sizeof(int32_t)),
                                    c->data ? c->data : "", (Py_ssize_t)c->len);
        if (!t) {
            Py_DECREF(list);
            goto done;
        }
        PyList_SET_ITEM(list, i, t);
    }
    out = Py_BuildValue("(nniN)", (Py_ssize_t)end, (Py_ssize_t)rows, stop, list);
    goto done;
short_row:
    PyErr_Format(PyExc_ValueError, "text_rows: the row at %zd ends inside a cell (or has fewer than %zd cells)",
                 (Py_ssize_t)end, ncols);
done:
    if (cols) text_columns_free(cols, ncols);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef module_methods[] = {
    {"frame", frame, METH_VARARGS,
     "frame(buf, offset, checksum_len, verify, fast, limit) -> [(size, timestamp, type_code, server_id, log_pos, "
     "flags, checksum, body), ...]: the whole, intact events of a binlog buffer from offset (binlake.decoder)"},
    {"walk", walk, METH_VARARGS,
     "walk(buf, start, stop) -> (positions, sizes, codes, flags, timestamps, end): the headers of the whole events "
     "of a binlog image as packed native arrays (binlake.reader.header_table)"},
    {"text_rows", text_rows, METH_VARARGS,
     "text_rows(buf, offset, ncols) -> (end, rows, stop, [(validity, offsets, data), ...]): the rows of a text "
     "result set as Arrow binary columns (binlake.replication.resultset)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "binlake._framing",
    .m_doc = "The compiled event framing of binlake.decoder.Decoder (sizes, CRC32 checks, header fields, bodies) "
              "and header walk of binlake.reader, and the text result set rows of binlake.replication.resultset.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__framing(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "EOF_PACKET", EOF_PACKET) < 0 || PyModule_AddIntConstant(m, "ERR_PACKET", ERR_PACKET) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
