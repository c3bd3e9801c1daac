/*
 * floe._native: decodes the records of a manifest's Avro blocks straight into columns.
 *
 * The Python glue (floe/scan/native.py) compiles the manifest's writer schema into a
 * "program": a flat sequence of integers, one node per Avro type, in which the fields the
 * cache keeps are "capture" nodes naming an output column and every other field is a "skip"
 * node. decode() runs the program once per record over the decompressed bytes of each
 * block and appends the captured values to growable column buffers laid out as Arrow lays
 * them out (validity bitmaps, little-endian values, int32 offsets), which the glue wraps
 * with pyarrow.Array.from_buffers.
 *
 * The bytes are anyone's: every varint, length and count is checked against the bytes left
 * before it is used (each check is marked "bounds:"), so hostile bytes raise Truncated or
 * Corrupt and never read outside the block or allocate more than the block justifies.
 * Values the Python decoder would decode into something the cache cannot store the same way
 * (a varint beyond 64 bits) raise Unsupported: the glue then falls back to the Python
 * decoder, the reference.
 *
 * Node layout (opcode first, then its arguments):
 *   skip nodes:    NULL | BOOL | LONG | FLOAT | DOUBLE | BYTES | STRING | FIXED size |
 *                  ENUM nsymbols | RECORD nfields <nodes> | UNION nbranches <nodes> |
 *                  ARRAY <node> | MAP <value node>
 *   capture nodes: C_NULL col | C_LONG col | C_FLOAT col | C_DOUBLE col | C_BOOL col |
 *                  C_BYTES col | C_STRING col | C_LONGS col | C_INTMAP col | C_BYTESMAP col |
 *                  C_ARRAY col <item node>
 *
 * C_ARRAY captures an array's item count per record (a list column's offsets); its item
 * node captures each item's values into "nested" columns (marked by the 0x80 bit of their
 * kind), which take one value per item instead of one per record (the partition summaries
 * of a manifest list).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    OP_NULL = 0, OP_BOOL, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_BYTES, OP_STRING, OP_FIXED,
    OP_ENUM, OP_RECORD, OP_UNION, OP_ARRAY, OP_MAP,
    OP_C_NULL = 20, OP_C_LONG, OP_C_FLOAT, OP_C_DOUBLE, OP_C_BOOL, OP_C_BYTES, OP_C_STRING,
    OP_C_LONGS, OP_C_INTMAP, OP_C_BYTESMAP, OP_C_ARRAY
};

/* Column kinds (what the glue turns into which Arrow type). */
enum { K_INT64 = 0, K_DOUBLE, K_BOOL, K_BINARY, K_LIST, K_ARRAY };
/* The bit of a column kind that marks a nested column (one value per array item). */
#define K_NESTED 0x80

#define MAX_DEPTH 64
#define MAX_COLUMNS 128
#define MAX_PROGRAM 65536

static PyObject *TruncatedError, *CorruptError, *UnsupportedError;

/* -- growable buffers ------------------------------------------------------------------ */

/* The bytes live in a Python bytes object, handed over as it is when decoding ends (no
 * copy; its unused capacity is cut off then). */
typedef struct {
    PyObject *obj; /* a bytes object of `cap` bytes, or NULL */
    char *p;
    Py_ssize_t len, cap;
} Buf;

/* Room for `extra` more bytes (not zeroed: capacity reserved and never written costs no
 * page of memory). */
static int buf_grow(Buf *b, Py_ssize_t extra);

/* Small functions on every value's path: inlined. */
#define HOT static inline __attribute__((always_inline))

HOT int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (extra >= 0 && extra <= b->cap - b->len)
        return 0;
    return buf_grow(b, extra);
}

/* buf_reserve's slow path: a bigger bytes object. */
static __attribute__((noinline)) int buf_grow(Buf *b, Py_ssize_t extra) {
    if (extra < 0 || b->len > PY_SSIZE_T_MAX - extra) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > PY_SSIZE_T_MAX / 4) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    if (b->obj == NULL) {
        b->obj = PyBytes_FromStringAndSize(NULL, cap);
        if (b->obj == NULL)
            return -1;
    } else if (_PyBytes_Resize(&b->obj, cap) < 0) { /* frees it on failure */
        b->p = NULL;
        b->len = b->cap = 0;
        return -1;
    }
    b->p = PyBytes_AS_STRING(b->obj);
    b->cap = cap;
    return 0;
}

/* The bytes written, as a bytes object (the buffer is left empty). */
static PyObject *buf_take(Buf *b) {
    PyObject *obj = b->obj;
    Py_ssize_t len = b->len;
    b->obj = NULL;
    b->p = NULL;
    b->len = b->cap = 0;
    if (obj == NULL)
        return PyBytes_FromStringAndSize("", 0);
    if (_PyBytes_Resize(&obj, len) < 0)
        return NULL;
    return obj;
}

static void buf_free(Buf *b) {
    Py_CLEAR(b->obj);
    b->p = NULL;
    b->len = b->cap = 0;
}

HOT int buf_append(Buf *b, const void *src, Py_ssize_t n) {
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

/* Bit `i` of a bitmap kept in `b` (grown to hold it, the new bytes zero-filled). */
HOT int bit_set(Buf *b, Py_ssize_t i, int value) {
    Py_ssize_t byte = i >> 3;
    if (byte >= b->len) {
        if (buf_reserve(b, byte + 1 - b->len) < 0)
            return -1;
        memset(b->p + b->len, 0, (size_t)(byte + 1 - b->len));
        b->len = byte + 1;
    }
    if (value)
        b->p[byte] |= (char)(1 << (i & 7));
    return 0;
}

/* -- columns --------------------------------------------------------------------------- */

typedef struct {
    int kind, nested;
    Py_ssize_t length, null_count;
    Py_ssize_t items; /* K_ARRAY: the items of every array so far */
    Buf validity; /* one bit per value */
    Buf values;   /* int64 / double values, or the bits of booleans */
    Buf offsets;  /* int32 offsets of binary values and of lists */
    Buf data;     /* bytes of binary values; int64 items of lists */
} Column;

HOT int col_offset(Column *c, Py_ssize_t end) {
    /* bounds: Arrow's binary and list offsets are int32 */
    if (end > INT32_MAX) {
        PyErr_SetString(UnsupportedError, "a column holds more than 2 GiB");
        return -1;
    }
    int32_t o = (int32_t)end;
    return buf_append(&c->offsets, &o, sizeof o);
}

HOT int col_valid(Column *c, int valid) {
    if (bit_set(&c->validity, c->length, valid) < 0)
        return -1;
    if (!valid)
        c->null_count++;
    c->length++;
    return 0;
}

static int col_null(Column *c) {
    switch (c->kind) {
    case K_INT64:
    case K_DOUBLE: {
        int64_t zero = 0;
        if (buf_append(&c->values, &zero, sizeof zero) < 0)
            return -1;
        break;
    }
    case K_BOOL:
        if (bit_set(&c->values, c->length, 0) < 0)
            return -1;
        break;
    case K_BINARY:
        if (col_offset(c, c->data.len) < 0)
            return -1;
        break;
    case K_LIST:
        if (col_offset(c, c->data.len / 8) < 0)
            return -1;
        break;
    case K_ARRAY:
        if (col_offset(c, c->items) < 0)
            return -1;
        break;
    }
    return col_valid(c, 0);
}

/* -- reading --------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
    const int32_t *prog;
    Py_ssize_t prog_len;
    Column *cols;
    Py_ssize_t ncols;
} Decoder;

static int truncated(void) {
    PyErr_SetString(TruncatedError, "truncated");
    return -1;
}

static int corrupt(const char *msg) {
    PyErr_SetString(CorruptError, msg);
    return -1;
}

/* A zig-zag varint, as floe.avro.read_long reads it: at most 10 bytes. `*big` is set
 * when the value does not fit 64 bits (Python reads it as a larger int). */
HOT int read_varint(Decoder *d, int64_t *out, int *big) {
    uint64_t v = 0;
    *big = 0;
    /* bounds: the one byte must be in the block (most varints here are one byte) */
    if (d->p < d->end && !(*d->p & 0x80)) {
        v = *d->p++;
        *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
        return 0;
    }
    for (int i = 0; i < 10; i++) {
        /* bounds: each byte of the varint must be in the block */
        if (d->p >= d->end)
            return truncated();
        uint8_t b = *d->p++;
        if (i == 9) {
            /* bounds: a 10th byte with a continuation bit is an 11-byte varint */
            if (b & 0x80)
                return corrupt("varint longer than 10 bytes");
            if (b > 1)
                *big = 1;
        }
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
            return 0;
        }
    }
    return corrupt("varint longer than 10 bytes"); /* not reached */
}

/* A varint used as a value: one beyond 64 bits is declined. */
HOT int read_value(Decoder *d, int64_t *out) {
    int big;
    if (read_varint(d, out, &big) < 0)
        return -1;
    if (big) {
        PyErr_SetString(UnsupportedError, "a varint beyond 64 bits");
        return -1;
    }
    return 0;
}

/* A length (of bytes or a string): checked against the bytes left. */
HOT int read_length(Decoder *d, Py_ssize_t *out) {
    int64_t n;
    int big;
    if (read_varint(d, &n, &big) < 0)
        return -1;
    if (big)
        return truncated(); /* bounds: longer than any block */
    if (n < 0)
        return corrupt("negative length");
    /* bounds: the bytes must be in the block */
    if (n > d->end - d->p)
        return truncated();
    *out = (Py_ssize_t)n;
    return 0;
}

/* The item count of the next block of an array or map (0 at the end), as the Python
 * decoder reads it: a negative count is followed by the block's size in bytes (ignored).
 * `min_bytes` is the least each item takes: more items than the bytes left can hold is
 * refused, which bounds a count of 2^62. */
static int read_count(Decoder *d, Py_ssize_t *out, Py_ssize_t min_bytes) {
    int64_t n, size;
    int big;
    if (read_varint(d, &n, &big) < 0)
        return -1;
    if (big || n == INT64_MIN)
        return truncated(); /* bounds: more items than any block holds */
    if (n < 0) {
        n = -n;
        if (read_varint(d, &size, &big) < 0)
            return -1;
    }
    /* bounds: each item takes at least one byte (two for the varints of an int map) */
    if (n > (d->end - d->p) / min_bytes)
        return truncated();
    *out = (Py_ssize_t)n;
    return 0;
}

/* Strict UTF-8, as Python's bytes.decode() accepts it (no surrogates, no overlong forms). */
static int utf8_valid(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int more;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            more = 1;
        else if (c == 0xE0)
            more = 2, lo = 0xA0;
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
            more = 2;
        else if (c == 0xED)
            more = 2, hi = 0x9F;
        else if (c == 0xF0)
            more = 3, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3)
            more = 3;
        else if (c == 0xF4)
            more = 3, hi = 0x8F;
        else
            return 0;
        /* bounds: the continuation bytes must be in the string */
        if (more > n - i - 1)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (int k = 2; k <= more; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return 0;
        i += more + 1;
    }
    return 1;
}

/* The program word at `*pc` (advanced). */
HOT int word(Decoder *d, Py_ssize_t *pc, int32_t *out) {
    /* bounds: the program is built by the glue, but is checked like the bytes */
    if (*pc >= d->prog_len) {
        PyErr_SetString(PyExc_ValueError, "malformed program");
        return -1;
    }
    *out = d->prog[(*pc)++];
    return 0;
}

/* The column named at `*pc`, which must be of `kind` (-1: any). */
HOT int column(Decoder *d, Py_ssize_t *pc, Column **out, int kind) {
    int32_t k;
    if (word(d, pc, &k) < 0)
        return -1;
    /* bounds: the column must exist and be of the kind the opcode writes */
    if (k < 0 || k >= d->ncols || (kind >= 0 && d->cols[k].kind != kind)) {
        PyErr_SetString(PyExc_ValueError, "malformed program: bad column");
        return -1;
    }
    *out = &d->cols[k];
    return 0;
}

/* Past the node at `pc` without reading any bytes (an untaken union branch). */
static int skip_node(Decoder *d, Py_ssize_t *pc, int depth) {
    int32_t op, n;
    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "malformed program: too deep");
        return -1;
    }
    if (word(d, pc, &op) < 0)
        return -1;
    switch (op) {
    case OP_NULL: case OP_BOOL: case OP_LONG: case OP_FLOAT: case OP_DOUBLE: case OP_BYTES:
    case OP_STRING:
        return 0;
    case OP_FIXED: case OP_ENUM:
    case OP_C_NULL: case OP_C_LONG: case OP_C_FLOAT: case OP_C_DOUBLE: case OP_C_BOOL:
    case OP_C_BYTES: case OP_C_STRING: case OP_C_LONGS: case OP_C_INTMAP: case OP_C_BYTESMAP:
        return word(d, pc, &n);
    case OP_C_ARRAY:
        if (word(d, pc, &n) < 0)
            return -1;
        return skip_node(d, pc, depth + 1);
    case OP_RECORD: case OP_UNION:
        if (word(d, pc, &n) < 0)
            return -1;
        for (int32_t i = 0; i < n; i++)
            if (skip_node(d, pc, depth + 1) < 0)
                return -1;
        return 0;
    case OP_ARRAY: case OP_MAP:
        return skip_node(d, pc, depth + 1);
    }
    PyErr_SetString(PyExc_ValueError, "malformed program: bad opcode");
    return -1;
}

/* The fewest bytes a value of the node at `*pc` takes (advanced past it): what bounds how
 * many records a block can hold, and so what the columns may allocate for it. */
static int min_bytes(Decoder *d, Py_ssize_t *pc, int depth, Py_ssize_t *out) {
    int32_t op, n;
    Py_ssize_t sub, least;
    *out = 0;
    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "malformed program: too deep");
        return -1;
    }
    if (word(d, pc, &op) < 0)
        return -1;
    switch (op) {
    case OP_NULL:
        return 0;
    case OP_C_NULL:
        return word(d, pc, &n);
    case OP_BOOL: case OP_LONG: case OP_BYTES: case OP_STRING:
        *out = 1;
        return 0;
    case OP_FLOAT:
        *out = 4;
        return 0;
    case OP_DOUBLE:
        *out = 8;
        return 0;
    case OP_FIXED:
        if (word(d, pc, &n) < 0)
            return -1;
        *out = n > 0 ? n : 0;
        return 0;
    case OP_ENUM:
        *out = 1;
        return word(d, pc, &n);
    case OP_C_LONG: case OP_C_BOOL: case OP_C_BYTES: case OP_C_STRING: case OP_C_LONGS:
    case OP_C_INTMAP: case OP_C_BYTESMAP:
        *out = 1;
        return word(d, pc, &n);
    case OP_C_FLOAT:
        *out = 4;
        return word(d, pc, &n);
    case OP_C_DOUBLE:
        *out = 8;
        return word(d, pc, &n);
    case OP_RECORD:
        if (word(d, pc, &n) < 0)
            return -1;
        for (int32_t i = 0; i < n; i++) {
            if (min_bytes(d, pc, depth + 1, &sub) < 0)
                return -1;
            /* bounds: a sum no block reaches is as good as any */
            *out = *out > (1 << 30) - sub ? (1 << 30) : *out + sub;
        }
        return 0;
    case OP_UNION:
        if (word(d, pc, &n) < 0)
            return -1;
        least = 1 << 30;
        for (int32_t i = 0; i < n; i++) {
            if (min_bytes(d, pc, depth + 1, &sub) < 0)
                return -1;
            if (sub < least)
                least = sub;
        }
        *out = 1 + least; /* the branch index, then the smallest branch */
        return 0;
    case OP_ARRAY: case OP_MAP:
        *out = 1; /* an empty one: its block count 0 */
        return skip_node(d, pc, depth + 1);
    case OP_C_ARRAY:
        *out = 1;
        if (word(d, pc, &n) < 0)
            return -1;
        return skip_node(d, pc, depth + 1);
    }
    PyErr_SetString(PyExc_ValueError, "malformed program: bad opcode");
    return -1;
}

/* Past `n` entries of a map<int, long> kept as bytes: 2n varints, each at most 10 bytes.
 * Eight bytes are looked at a time: a varint ends at a byte without its top bit, so the
 * word's top bits say how many varints end in it and where (no branch per byte). */
static int skip_int_entries(Decoder *d, Py_ssize_t n) {
    const uint64_t tops = 0x8080808080808080ULL;
    Py_ssize_t need = 2 * n; /* varints still to pass */
    int k = 0;               /* continuation bytes of the varint under way */
    while (need > 0 && d->end - d->p >= 8) { /* bounds: the word is in the block */
        uint64_t w, ends;
        memcpy(&w, d->p, 8); /* little-endian hosts only: checked at import */
        ends = ~w & tops;    /* the top bit of each byte that ends a varint */
        if (ends == 0)
            break; /* eight continuation bytes: left to the loop below */
        /* bounds: 9 continuation bytes at most before the first end, like the loop below */
        if (k + (__builtin_ctzll(ends) >> 3) > 9)
            return truncated();
        /* how many bytes end a varint: one bit per byte, summed into the top byte */
        Py_ssize_t in_word = (Py_ssize_t)(((ends >> 7) * 0x0101010101010101ULL) >> 56);
        if (in_word >= need) { /* the last varint ends in this word */
            for (Py_ssize_t i = 1; i < need; i++)
                ends &= ends - 1;
            d->p += (__builtin_ctzll(ends) >> 3) + 1;
            return 0;
        }
        need -= in_word;
        k = 7 - ((63 - __builtin_clzll(ends)) >> 3); /* continuation bytes after the last */
        d->p += 8;
    }
    for (; need > 0; need--, k = 0) {
        for (;;) {
            /* bounds: each byte of the varint must be in the block */
            if (d->p >= d->end)
                return truncated();
            uint8_t b = *d->p++;
            if (!(b & 0x80))
                break;
            /* bounds: 9 continuation bytes at most, like floe.avro._skip_varints */
            if (++k > 9)
                return truncated();
        }
    }
    return 0;
}

/* Past `n` entries of a map<int, bytes> kept as bytes (floe.avro._skip_bytes_entries). */
static int skip_bytes_entries(Decoder *d, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        for (;;) { /* the key: continuation bytes then a last byte */
            /* bounds: each byte of the key must be in the block */
            if (d->p >= d->end)
                return truncated();
            if (!(*d->p++ & 0x80))
                break;
        }
        Py_ssize_t len;
        if (read_length(d, &len) < 0) /* bounds: checked against the bytes left */
            return -1;
        d->p += len;
    }
    return 0;
}

/* Decodes one value of the node at `pc` (advanced past it). */
static int run(Decoder *d, Py_ssize_t *pc, int depth) {
    int32_t op, n;
    int64_t v;
    Py_ssize_t len, count;
    Column *c;
    const uint8_t *start;

    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "malformed program: too deep");
        return -1;
    }
    if (word(d, pc, &op) < 0)
        return -1;
    switch (op) {
    case OP_NULL:
        return 0;
    case OP_BOOL:
        /* bounds: one byte */
        if (d->p >= d->end)
            return truncated();
        d->p++;
        return 0;
    case OP_LONG: {
        int big;
        return read_varint(d, &v, &big); /* a skipped value may exceed 64 bits */
    }
    case OP_FLOAT:
    case OP_DOUBLE:
        len = op == OP_FLOAT ? 4 : 8;
        /* bounds: the value must be in the block */
        if (d->end - d->p < len)
            return truncated();
        d->p += len;
        return 0;
    case OP_BYTES:
    case OP_STRING:
        if (read_length(d, &len) < 0) /* bounds: checked against the bytes left */
            return -1;
        if (op == OP_STRING && !utf8_valid(d->p, len))
            return corrupt("a string that is not UTF-8");
        d->p += len;
        return 0;
    case OP_FIXED:
        if (word(d, pc, &n) < 0)
            return -1;
        /* bounds: the fixed value must be in the block */
        if (n < 0 || d->end - d->p < n)
            return truncated();
        d->p += n;
        return 0;
    case OP_ENUM:
        if (word(d, pc, &n) < 0 || read_value(d, &v) < 0)
            return -1;
        if (v < 0 || v >= n)
            return corrupt("bad enum index");
        return 0;
    case OP_RECORD:
        if (word(d, pc, &n) < 0)
            return -1;
        for (int32_t i = 0; i < n; i++)
            if (run(d, pc, depth + 1) < 0)
                return -1;
        return 0;
    case OP_UNION: {
        if (word(d, pc, &n) < 0)
            return -1;
        /* bounds: the branch index is one byte, as the Python decoder reads it */
        if (d->p >= d->end)
            return truncated();
        uint8_t b = *d->p++;
        if ((b & 1) || b / 2 >= n)
            return corrupt("bad union index");
        for (int32_t i = 0; i < n; i++) {
            int r = i == b / 2 ? run(d, pc, depth + 1) : skip_node(d, pc, depth + 1);
            if (r < 0)
                return -1;
        }
        return 0;
    }
    case OP_ARRAY:
    case OP_MAP:
    case OP_C_ARRAY: { /* C_ARRAY: the items counted into the column */
        c = NULL;
        if (op == OP_C_ARRAY && column(d, pc, &c, K_ARRAY) < 0)
            return -1;
        Py_ssize_t item = *pc;
        for (;;) {
            if (read_count(d, &count, 1) < 0) /* bounds: items <= bytes left */
                return -1;
            if (count == 0)
                break;
            for (Py_ssize_t i = 0; i < count; i++) {
                *pc = item;
                if (op == OP_MAP) { /* the key, a string */
                    if (read_length(d, &len) < 0)
                        return -1;
                    if (!utf8_valid(d->p, len))
                        return corrupt("a string that is not UTF-8");
                    d->p += len;
                }
                if (run(d, pc, depth + 1) < 0)
                    return -1;
                if (c != NULL)
                    c->items++;
            }
        }
        *pc = item;
        if (skip_node(d, pc, depth + 1) < 0)
            return -1;
        if (c == NULL)
            return 0;
        if (col_offset(c, c->items) < 0)
            return -1;
        return col_valid(c, 1);
    }
    case OP_C_NULL:
        if (column(d, pc, &c, -1) < 0)
            return -1;
        return col_null(c);
    case OP_C_LONG:
        if (column(d, pc, &c, K_INT64) < 0 || read_value(d, &v) < 0)
            return -1;
        if (buf_append(&c->values, &v, sizeof v) < 0)
            return -1;
        return col_valid(c, 1);
    case OP_C_FLOAT:
    case OP_C_DOUBLE: {
        double x;
        if (column(d, pc, &c, K_DOUBLE) < 0)
            return -1;
        len = op == OP_C_FLOAT ? 4 : 8;
        /* bounds: the value must be in the block */
        if (d->end - d->p < len)
            return truncated();
        if (op == OP_C_FLOAT) {
            float f;
            memcpy(&f, d->p, 4); /* little-endian hosts only: checked at import */
            x = (double)f;
        } else {
            memcpy(&x, d->p, 8);
        }
        d->p += len;
        if (buf_append(&c->values, &x, sizeof x) < 0)
            return -1;
        return col_valid(c, 1);
    }
    case OP_C_BOOL:
        if (column(d, pc, &c, K_BOOL) < 0)
            return -1;
        /* bounds: one byte */
        if (d->p >= d->end)
            return truncated();
        if (bit_set(&c->values, c->length, *d->p++ != 0) < 0)
            return -1;
        return col_valid(c, 1);
    case OP_C_BYTES:
    case OP_C_STRING:
        if (column(d, pc, &c, K_BINARY) < 0)
            return -1;
        if (read_length(d, &len) < 0) /* bounds: checked against the bytes left */
            return -1;
        if (op == OP_C_STRING && !utf8_valid(d->p, len))
            return corrupt("a string that is not UTF-8");
        if (buf_append(&c->data, d->p, len) < 0 || col_offset(c, c->data.len) < 0)
            return -1;
        d->p += len;
        return col_valid(c, 1);
    case OP_C_LONGS:
        if (column(d, pc, &c, K_LIST) < 0)
            return -1;
        for (;;) {
            if (read_count(d, &count, 1) < 0) /* bounds: items <= bytes left */
                return -1;
            if (count == 0)
                break;
            for (Py_ssize_t i = 0; i < count; i++) {
                if (read_value(d, &v) < 0 || buf_append(&c->data, &v, sizeof v) < 0)
                    return -1;
            }
        }
        if (col_offset(c, c->data.len / 8) < 0)
            return -1;
        return col_valid(c, 1);
    case OP_C_INTMAP:
    case OP_C_BYTESMAP:
        /* the map's bytes, from its first block count to its last (0), kept as they are */
        if (column(d, pc, &c, K_BINARY) < 0)
            return -1;
        start = d->p;
        for (;;) {
            /* bounds: an int entry takes two bytes at least, a bytes entry two too, but
             * the Python decoder checks one byte per entry for bytes maps: same here */
            if (read_count(d, &count, op == OP_C_INTMAP ? 2 : 1) < 0)
                return -1;
            if (count == 0)
                break;
            if ((op == OP_C_INTMAP ? skip_int_entries(d, count)
                                   : skip_bytes_entries(d, count)) < 0)
                return -1;
        }
        if (buf_append(&c->data, start, d->p - start) < 0 ||
            col_offset(c, c->data.len) < 0)
            return -1;
        return col_valid(c, 1);
    }
    PyErr_SetString(PyExc_ValueError, "malformed program: bad opcode");
    return -1;
}

/* -- the module function --------------------------------------------------------------- */

static void free_columns(Column *cols, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        buf_free(&cols[i].validity);
        buf_free(&cols[i].values);
        buf_free(&cols[i].offsets);
        buf_free(&cols[i].data);
    }
    PyMem_Free(cols);
}


/* The columns' buffers sized once for the records the blocks hold, instead of growing
 * record by record: fixed-width values and offsets for every record (up to RESERVE
 * records; beyond, they grow). Invalid counts are left to the decoding loop, which refuses
 * them. Returns the records counted. */
#define RESERVE ((Py_ssize_t)1 << 24)

static Py_ssize_t reserve_columns(Column *cols, Py_ssize_t ncols, PyObject *seq,
                                  Py_ssize_t record_bytes) {
    Py_ssize_t records = 0;
    for (Py_ssize_t b = 0; b < PySequence_Fast_GET_SIZE(seq); b++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, b);
        Py_ssize_t count;
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 ||
            !PyBytes_Check(PyTuple_GET_ITEM(item, 1)))
            break; /* the loop raises the error */
        count = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        if (count == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            break;
        }
        /* bounds: as the loop checks it, so the sum stays below the bytes given */
        if (count < 0 || count > PyBytes_GET_SIZE(PyTuple_GET_ITEM(item, 1)) / record_bytes)
            break;
        records += count;
        if (records > RESERVE) {
            records = RESERVE;
            break;
        }
    }
    for (Py_ssize_t k = 0; k < ncols; k++) {
        Column *c = &cols[k];
        if (c->nested)
            continue; /* as many values as items: they grow */
        if (buf_reserve(&c->validity, records / 8 + 1) < 0)
            return -1;
        switch (c->kind) {
        case K_INT64:
        case K_DOUBLE:
            if (buf_reserve(&c->values, 8 * records) < 0)
                return -1;
            break;
        case K_BOOL:
            if (buf_reserve(&c->values, records / 8 + 1) < 0)
                return -1;
            break;
        case K_BINARY:
        case K_LIST:
        case K_ARRAY:
            if (buf_reserve(&c->offsets, 4 * records) < 0)
                return -1;
            break;
        }
    }
    return records;
}

/* Binary values' bytes sized once the first block is decoded: its bytes per record times
 * the records of every block, an eighth more (a close fit: room reserved and never filled
 * would be left between the buffers a plan keeps). */
static int reserve_binary(Column *cols, Py_ssize_t ncols, Py_ssize_t done, Py_ssize_t total) {
    if (done <= 0 || total <= done)
        return 0;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        Column *c = &cols[k];
        if (c->kind != K_BINARY || c->nested)
            continue;
        double want = (double)c->data.len / (double)done * (double)(total - done) * 1.125;
        if (want > (double)(RESERVE * 64))
            want = (double)(RESERVE * 64);
        if (buf_reserve(&c->data, (Py_ssize_t)want) < 0)
            return -1;
    }
    return 0;
}

PyDoc_STRVAR(decode_doc,
"decode(program, kinds, blocks) -> list of columns\n\n"
"Runs `program` (bytes: int32 words, native order) once per record over each\n"
"(count, bytes) of `blocks`; `kinds` are the column kinds (a bytes of one byte each;\n"
"0x80 marks a nested column, one value per item of a C_ARRAY).\n"
"Each column comes back as (length, null_count, validity, values, offsets, data).\n"
"Raises Truncated, Corrupt (invalid bytes) or Unsupported (decline).");

static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer prog, kinds;
    PyObject *blocks, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*O", &prog, &kinds, &blocks))
        return NULL;
    Column *cols = NULL;
    Py_ssize_t ncols = kinds.len, records = 0, record_bytes = 0, pc0 = 0, total = 0;
    Decoder d;
    PyObject *seq = PySequence_Fast(blocks, "blocks must be a sequence");
    if (seq == NULL)
        goto done;
    if (prog.len % 4 || prog.len / 4 > MAX_PROGRAM || ncols > MAX_COLUMNS) {
        PyErr_SetString(PyExc_ValueError, "malformed program");
        goto done;
    }
    cols = PyMem_Calloc((size_t)(ncols ? ncols : 1), sizeof(Column));
    if (cols == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < ncols; i++) {
        cols[i].kind = ((const uint8_t *)kinds.buf)[i] & ~K_NESTED;
        cols[i].nested = (((const uint8_t *)kinds.buf)[i] & K_NESTED) != 0;
        if (cols[i].kind > K_ARRAY) {
            PyErr_SetString(PyExc_ValueError, "bad column kind");
            goto done;
        }
        if (cols[i].kind == K_BINARY || cols[i].kind == K_LIST || cols[i].kind == K_ARRAY) {
            int32_t zero = 0;
            if (buf_append(&cols[i].offsets, &zero, sizeof zero) < 0)
                goto done;
        }
    }
    d.p = d.end = NULL;
    d.prog = (const int32_t *)prog.buf;
    d.prog_len = prog.len / 4;
    d.cols = cols;
    d.ncols = ncols;
    if (min_bytes(&d, &pc0, 0, &record_bytes) < 0)
        goto done;
    if (record_bytes < 1)
        record_bytes = 1; /* floe.avro's rule: a record takes a byte at least */
    total = reserve_columns(cols, ncols, seq, record_bytes);
    if (total < 0)
        goto done;
    for (Py_ssize_t b = 0; b < PySequence_Fast_GET_SIZE(seq); b++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, b);
        Py_ssize_t count;
        const char *data;
        Py_ssize_t size;
        if (!PyArg_ParseTuple(item, "ny#", &count, &data, &size))
            goto done;
        /* bounds: each record takes `record_bytes` at least (a byte at least, floe.avro's
         * rule), which bounds a block count of 2^62 and what the columns allocate */
        if (count < 0 || count > size / record_bytes) {
            corrupt("a block cannot hold its record count");
            goto done;
        }
        d.p = (const uint8_t *)data;
        d.end = d.p + size;
        for (Py_ssize_t r = 0; r < count; r++) {
            Py_ssize_t pc = 0;
            if (run(&d, &pc, 0) < 0)
                goto done;
            records++;
            /* every column takes exactly one value per record (nested ones: per item) */
            for (Py_ssize_t k = 0; k < ncols; k++) {
                if (!cols[k].nested && cols[k].length != records) {
                    PyErr_SetString(PyExc_ValueError, "malformed program: column count");
                    goto done;
                }
            }
        }
        /* bytes left after the last record are ignored, as the Python decoder does */
        if (b == 0 && reserve_binary(cols, ncols, records, total) < 0)
            goto done;
    }
    result = PyList_New(ncols);
    if (result == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        Column *c = &cols[k];
        PyObject *t = Py_BuildValue("nnNNNN", c->length, c->null_count, buf_take(&c->validity),
                                    buf_take(&c->values), buf_take(&c->offsets),
                                    buf_take(&c->data));
        if (t == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, k, t);
    }
done:
    if (cols != NULL)
        free_columns(cols, ncols);
    Py_XDECREF(seq);
    PyBuffer_Release(&prog);
    PyBuffer_Release(&kinds);
    return result;
}

PyDoc_STRVAR(map_get_doc,
"map_get(offsets, data, validity, offset, length, key, values_are_bytes)\n"
"--\n\n"
"The value of `key` in each of `length` statistics maps of a binary Arrow array (its int32\n"
"`offsets`, `data` and `validity` buffers, None for no nulls; `offset` its slice offset),\n"
"each map in the Avro bytes the decoder captured (C_INTMAP / C_BYTESMAP; the last entry of\n"
"a key wins, as a Python dict built from it). Returns (null_count, validity, values) for\n"
"long values (int64) or (null_count, validity, offsets, data) for bytes values: a null\n"
"where the map is null or lacks the key. Hostile bytes raise Truncated or Corrupt; a value\n"
"beyond 64 bits raises Unsupported.");

static PyObject *map_get(PyObject *self, PyObject *args) {
    Py_buffer offs = {0}, data = {0}, valid = {0};
    PyObject *valid_obj;
    Py_ssize_t offset, length;
    long long key;
    int as_bytes;
    PyObject *result = NULL;
    Column out;
    memset(&out, 0, sizeof out);
    if (!PyArg_ParseTuple(args, "y*y*OnnLp", &offs, &data, &valid_obj, &offset, &length, &key,
                          &as_bytes))
        return NULL;
    if (valid_obj != Py_None && PyObject_GetBuffer(valid_obj, &valid, PyBUF_SIMPLE) < 0)
        goto done;
    /* bounds: the offsets and the validity bitmap must cover the rows asked for */
    if (offset < 0 || length < 0 || offset > PY_SSIZE_T_MAX / 4 - length - 1 ||
        (offset + length + 1) * 4 > offs.len ||
        (valid.buf != NULL && (offset + length + 7) / 8 > valid.len)) {
        PyErr_SetString(PyExc_ValueError, "buffers shorter than the rows asked for");
        goto done;
    }
    out.kind = as_bytes ? K_BINARY : K_INT64;
    if (as_bytes) {
        int32_t zero = 0;
        if (buf_append(&out.offsets, &zero, sizeof zero) < 0)
            goto done;
    }
    const int32_t *o = (const int32_t *)offs.buf;
    const uint8_t *bits = (const uint8_t *)valid.buf;
    for (Py_ssize_t r = offset; r < offset + length; r++) {
        if (bits != NULL && !(bits[r >> 3] & (1 << (r & 7)))) {
            if (col_null(&out) < 0)
                goto done;
            continue;
        }
        int32_t start = o[r], end = o[r + 1];
        /* bounds: a value's bytes must be in the data buffer */
        if (start < 0 || end < start || end > data.len) {
            corrupt("binary offsets out of range");
            goto done;
        }
        Decoder d;
        memset(&d, 0, sizeof d);
        d.p = (const uint8_t *)data.buf + start;
        d.end = (const uint8_t *)data.buf + end;
        int found = 0;
        int64_t found_long = 0;
        const uint8_t *found_p = NULL;
        Py_ssize_t found_len = 0;
        for (;;) {
            Py_ssize_t count;
            if (read_count(&d, &count, 2) < 0)
                goto done;
            if (count == 0)
                break;
            for (Py_ssize_t i = 0; i < count; i++) {
                int64_t k;
                int big;
                if (read_varint(&d, &k, &big) < 0)
                    goto done;
                int match = !big && k == key;
                if (as_bytes) {
                    Py_ssize_t n;
                    if (read_length(&d, &n) < 0)
                        goto done;
                    if (match) {
                        found = 1;
                        found_p = d.p;
                        found_len = n;
                    }
                    d.p += n;
                } else {
                    int64_t v;
                    if (match) {
                        if (read_value(&d, &v) < 0)
                            goto done;
                        found = 1;
                        found_long = v;
                    } else if (read_varint(&d, &v, &big) < 0) {
                        goto done;
                    }
                }
            }
        }
        if (!found) {
            if (col_null(&out) < 0)
                goto done;
        } else if (as_bytes) {
            if (buf_append(&out.data, found_p, found_len) < 0 ||
                col_offset(&out, out.data.len) < 0 || col_valid(&out, 1) < 0)
                goto done;
        } else if (buf_append(&out.values, &found_long, sizeof found_long) < 0 ||
                   col_valid(&out, 1) < 0) {
            goto done;
        }
    }
    if (as_bytes)
        result = Py_BuildValue("nNNN", out.null_count, buf_take(&out.validity),
                               buf_take(&out.offsets), buf_take(&out.data));
    else
        result = Py_BuildValue("nNN", out.null_count, buf_take(&out.validity),
                               buf_take(&out.values));
done:
    buf_free(&out.validity);
    buf_free(&out.values);
    buf_free(&out.offsets);
    buf_free(&out.data);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&data);
    if (valid.buf != NULL)
        PyBuffer_Release(&valid);
    return result;
}

PyDoc_STRVAR(decode_map_doc,
"decode_map(raw, as_bytes) -> dict\n"
"--\n\n"
"An Avro map<int, long> (or map<int, bytes> when `as_bytes`), a manifest entry's statistics\n"
"map, as floe.avro._decode_map reads it: {field id: value}, a later duplicate key winning.\n"
"Raises Truncated or Corrupt for invalid bytes and Unsupported for a key or a value beyond\n"
"64 bits (the caller then decodes in Python, which says what is wrong).");

static PyObject *decode_map(PyObject *self, PyObject *args) {
    Py_buffer raw;
    int as_bytes;
    if (!PyArg_ParseTuple(args, "y*p", &raw, &as_bytes))
        return NULL;
    PyObject *out = PyDict_New();
    Decoder d;
    memset(&d, 0, sizeof d);
    d.p = (const uint8_t *)raw.buf;
    d.end = d.p + raw.len;
    if (out == NULL)
        goto fail;
    for (;;) {
        Py_ssize_t count;
        /* bounds: a count beyond the bytes left (two per entry at least) is refused */
        if (read_count(&d, &count, 2) < 0)
            goto fail;
        if (count == 0)
            break;
        for (Py_ssize_t i = 0; i < count; i++) {
            int64_t k;
            PyObject *key, *value;
            if (read_value(&d, &k) < 0)
                goto fail;
            if (as_bytes) {
                Py_ssize_t n;
                /* bounds: the length is checked against the bytes left */
                if (read_length(&d, &n) < 0)
                    goto fail;
                value = PyBytes_FromStringAndSize((const char *)d.p, n);
                d.p += n;
            } else {
                int64_t v;
                if (read_value(&d, &v) < 0)
                    goto fail;
                value = PyLong_FromLongLong(v);
            }
            if (value == NULL)
                goto fail;
            key = PyLong_FromLongLong(k);
            if (key == NULL || PyDict_SetItem(out, key, value) < 0) {
                Py_XDECREF(key);
                Py_DECREF(value);
                goto fail;
            }
            Py_DECREF(key);
            Py_DECREF(value);
        }
    }
    PyBuffer_Release(&raw);
    return out;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&raw);
    return NULL;
}

PyDoc_STRVAR(json_escapes_doc,
"json_escapes(data) -> 0, 1 or 2\n"
"--\n\n"
"What a JSON writer must escape in the bytes `data` (any buffer): 2 when they hold a\n"
"control character (below 0x20), else 1 when they hold a '\"' or a '\\\\', else 0. Eight\n"
"bytes are looked at a time.");

static PyObject *json_escapes(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf))
        return NULL;
    const uint8_t *p = buf.buf, *end = p + buf.len;
    const uint64_t ones = 0x0101010101010101ULL, tops = 0x8080808080808080ULL;
    int found = 0;
    /* bounds: whole words only, then the bytes left one by one */
    for (; end - p >= 8; p += 8) {
        uint64_t w, q, b;
        memcpy(&w, p, 8);
        if ((w - ones * 0x20) & ~w & tops) { /* a byte below 0x20 */
            found = 2;
            break;
        }
        q = w ^ (ones * '"');
        b = w ^ (ones * '\\');
        if (((q - ones) & ~q & tops) || ((b - ones) & ~b & tops))
            found = 1;
    }
    for (; found < 2 && p < end; p++) {
        if (*p < 0x20)
            found = 2;
        else if (*p == '"' || *p == '\\')
            found = 1;
    }
    PyBuffer_Release(&buf);
    return PyLong_FromLong(found);
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, decode_doc},
    {"map_get", map_get, METH_VARARGS, map_get_doc},
    {"decode_map", decode_map, METH_VARARGS, decode_map_doc},
    {"json_escapes", json_escapes, METH_VARARGS, json_escapes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "floe._native",
    "Manifest records decoded into Arrow column buffers (floe/scan/native.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    const uint16_t one = 1;
    if (*(const uint8_t *)&one != 1) { /* the buffers are Arrow's little-endian layout */
        PyErr_SetString(PyExc_ImportError, "floe._native needs a little-endian machine");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    TruncatedError = PyErr_NewException("floe._native.Truncated", NULL, NULL);
    CorruptError = PyErr_NewException("floe._native.Corrupt", NULL, NULL);
    UnsupportedError = PyErr_NewException("floe._native.Unsupported", NULL, NULL);
    if (TruncatedError == NULL || CorruptError == NULL || UnsupportedError == NULL ||
        PyModule_AddObjectRef(m, "Truncated", TruncatedError) < 0 ||
        PyModule_AddObjectRef(m, "Corrupt", CorruptError) < 0 ||
        PyModule_AddObjectRef(m, "Unsupported", UnsupportedError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
