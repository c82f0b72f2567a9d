/*
 * The native twin of the reload's fold over plain magic-2 batches (see records/fold.py).
 *
 * fold_run() walks a run of well-formed magic-2 batches (DefaultRecordBatch), verifies their CRC-32C,
 * decompresses them through the Python codecs and parses their records (DefaultRecord). Records of plain
 * batches are folded into the target's `latest` dict, last writer wins, and those of transactional batches
 * staged in the producer's pending dict, exactly as PartitionFold.fold_records/fold_transactional do;
 * control batches (COMMIT/ABORT markers) resolve the producer's transaction as PartitionFold.fold_control
 * does, and go to fold_control itself when a key does not parse. It stops, without touching anything, at
 * the first entry it does not
 * take whole: any other batch, anything malformed, and any value the Python path would represent
 * differently (a 10-byte varint, an offset past int64). The Python walk then reads that entry with the
 * general reader, which reports it. The bytes are untrusted: every read is checked against the end of
 * its batch (or of the decompressed records), and nothing is allocated from a size field before it has
 * been checked against the bytes that are there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LOG_OVERHEAD 12
#define V2_HEADER_SIZE 61
#define V2_MIN_SIZE (V2_HEADER_SIZE - LOG_OVERHEAD)
#define MAGIC_AT 16
#define CODEC_MASK 0x07
/* A record the fold accepts takes at least 6 bytes: length, attributes, timestamp delta, offset delta,
 * key length and value length (the header count is covered by the record's length, not read). */
#define MIN_PARSED_RECORD 6

/* ---- CRC-32C (Castagnoli), as Kafka's Crc32C: SSE4.2 when the CPU has it, else slicing-by-8 ---- */

static uint32_t crc_tab[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xFF];
}

static uint32_t crc32c_sw(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = crc_tab[7][lo & 0xFF] ^ crc_tab[6][(lo >> 8) & 0xFF] ^ crc_tab[5][(lo >> 16) & 0xFF] ^
            crc_tab[4][lo >> 24] ^ crc_tab[3][p[4]] ^ crc_tab[2][p[5]] ^ crc_tab[1][p[6]] ^ crc_tab[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xFF];
    return c ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_HW_CRC 1
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(const uint8_t *p, size_t n) {
    uint64_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}
#endif

static uint32_t (*crc32c_fn)(const uint8_t *, size_t) = crc32c_sw;
static PyObject *ZERO; /* the timestamp slot of control records (unused by the fold) */

/* ---- big-endian fields and zig-zag varints ---- */

static inline uint64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}
static inline uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

enum { OK = 0, STOP = -1 };

/* ByteUtils.readVarlong at b[*q], within b[0:n]. At most 9 bytes (63 bits before zig-zag, so the value
 * is exact in int64); a longer one stops the native walk and the Python parser decides. */
static inline int varint(const uint8_t *b, Py_ssize_t n, Py_ssize_t *q, int64_t *out) {
    uint64_t r = 0;
    Py_ssize_t i = *q;
    for (int shift = 0; shift < 63; shift += 7) {
        if (i >= n) return STOP;
        uint8_t c = b[i++];
        r |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80) {
            *q = i;
            *out = (int64_t)(r >> 1) ^ -(int64_t)(r & 1);
            return OK;
        }
    }
    return STOP;
}

typedef struct {
    int64_t offset;
    int64_t ts_delta;
    Py_ssize_t kpos, klen; /* klen < 0: null key */
    Py_ssize_t vpos, vlen; /* vlen < 0: tombstone */
} staged_t;

/* Parse `count` records of b[*qp:n] into `out` and move *qp past them; STOP if any does not fit its length
 * or cannot be represented exactly. */
static int parse_range(const uint8_t *b, Py_ssize_t n, Py_ssize_t *qp, int32_t count, int64_t base_offset,
                       staged_t *out) {
    Py_ssize_t q = *qp;
    for (int32_t r = 0; r < count; r++) {
        int64_t length, ts_delta, offset_delta, klen, vlen;
        if (varint(b, n, &q, &length) != OK) return STOP;
        if (length < 0 || length > n - q) return STOP;
        Py_ssize_t rec_end = q + (Py_ssize_t)length;
        q += 1; /* record attributes: unused */
        if (varint(b, n, &q, &ts_delta) != OK) return STOP;
        if (varint(b, n, &q, &offset_delta) != OK) return STOP;
        int64_t off;
        if (__builtin_add_overflow(base_offset, offset_delta, &off)) return STOP;
        if (varint(b, n, &q, &klen) != OK) return STOP;
        out[r].offset = off;
        out[r].ts_delta = ts_delta;
        out[r].kpos = q;
        if (klen < 0) {
            out[r].klen = -1;
        } else {
            if (klen > rec_end - q) return STOP;
            out[r].klen = (Py_ssize_t)klen;
            q += (Py_ssize_t)klen;
        }
        if (varint(b, n, &q, &vlen) != OK) return STOP;
        out[r].vpos = q;
        if (vlen < 0) {
            out[r].vlen = -1;
        } else {
            if (vlen > rec_end - q) return STOP;
            out[r].vlen = (Py_ssize_t)vlen;
            q += (Py_ssize_t)vlen;
        }
        if (q > rec_end) return STOP;
        q = rec_end; /* headers mean nothing on __consumer_offsets */
    }
    *qp = q;
    return OK;
}

/* Parse the `count` records of b[0:n] into `out`; STOP if any does not fit its length (or n is not
 * exactly the records), or cannot be represented exactly. Mirrors batch.decode_v2_records. */
static int parse_records(const uint8_t *b, Py_ssize_t n, int32_t count, int64_t base_offset, staged_t *out) {
    Py_ssize_t q = 0;
    return parse_range(b, n, &q, count, base_offset, out) == OK && q == n ? OK : STOP;
}

/* A batch of more records than this is staged a chunk at a time (batch.RECORD_CHUNK): an inflated batch
 * of 7-byte records holds millions, and staging them all would cost 48 bytes each. */
#define STAGE_CHUNK 65536

/* parse_records for a batch of more than STAGE_CHUNK records, into a STAGE_CHUNK scratch area: the whole
 * section is checked before anything is folded, then parse_range stages it again chunk by chunk. */
static int check_records(const uint8_t *b, Py_ssize_t n, int32_t count, int64_t base_offset, staged_t *scratch) {
    Py_ssize_t q = 0;
    for (int32_t done = 0; done < count; done += STAGE_CHUNK) {
        int32_t m = count - done < STAGE_CHUNK ? count - done : STAGE_CHUNK;
        if (parse_range(b, n, &q, m, base_offset, scratch) != OK) return STOP;
    }
    return q == n ? OK : STOP;
}

/* The hot case of PartitionFold.fold_records (loader._hot): an offset-commit key (type 1) and an
 * OffsetCommitValue v0-v3 that value_check.offset_commit_value_ok accepts (a known version and a
 * non-negative metadata length that fits: at byte 14 for v3, at byte 10 before). */
static inline int hot(const uint8_t *k, Py_ssize_t klen, const uint8_t *v, Py_ssize_t vlen) {
    if (k == NULL || v == NULL || klen <= 1 || k[0] != 0 || k[1] != 1 || vlen < 2 || v[0] != 0) return 0;
    if (v[1] == 3) return vlen >= 16 && v[14] <= 0x7F && vlen >= 24 + (((Py_ssize_t)v[14] << 8) | v[15]);
    if (v[1] <= 2)
        return vlen >= 12 && v[10] <= 0x7F && vlen >= (v[1] == 1 ? 28 : 20) + (((Py_ssize_t)v[10] << 8) | v[11]);
    return 0;
}

static PyObject *bytes_or_none(const uint8_t *b, Py_ssize_t pos, Py_ssize_t len) {
    if (len < 0) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)b + pos, len);
}

/* ---- keys seen in this run, and the writes to `latest` and `txn_keys` not made yet ----
 *
 * One bytes object per distinct key (its hash cached), not one per record. The last hot write of a plain
 * batch to a key is kept here as positions in the buffer being folded (or, from a COMMIT marker, as the
 * winning entry tuple), and made in `latest` once per key when the run flushes: before a callback, after
 * a compressed batch (whose records die with it) and at the end of the run. Keys new to `latest` are
 * inserted in the order of their first write, as the per-record fold inserted them. */

typedef struct {
    uint64_t h;
    PyObject *key; /* owned */
    const uint8_t *val; /* the pending write: the value's bytes (in the buffer being folded) */
    Py_ssize_t vlen;
    int64_t off, base, pos; /* record offset, batch base offset and file position of the pending write */
    PyObject *entry; /* or a committed transaction's entry tuple to write (owned) */
    int dirty;
} kent_t;

#define MAX_DEFERRED_TXNS 64 /* more open at once are indexed as they come */

typedef struct {
    kent_t *ents; /* the distinct keys, in first-seen order */
    size_t n, ent_cap;
    uint32_t *index; /* open addressing: 0 is empty, else one more than an index into ents */
    size_t cap;
    uint32_t *dirty; /* the entries with a pending write, in the order of their first one */
    size_t nd;
    PyObject *latest; /* where pending writes go (borrowed) */
    /* Transactions opened in this run whose hot keys are not in txn_keys yet (Java semantics). One that
     * is resolved in the same run never needs them there: its marker skips the unindexing too. They are
     * indexed (kc_sync) before anything Python could look at txn_keys. */
    struct {
        int64_t pid;
        PyObject *pid_obj, *pending; /* owned */
    } txns[MAX_DEFERRED_TXNS];
    int ntxns;
    PyObject *txn_keys; /* borrowed; NULL under Scala semantics (no index) */
} kcache_t;

/* A word-at-a-time hash of a key; crafted collisions cost at most MAX_PROBE probes per record. */
static uint64_t khash(const uint8_t *p, Py_ssize_t n) {
    const Py_ssize_t len = n;
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    if (n > 0 && len >= 8)
        memcpy(&w, p + n - 8, 8); /* the last 8 bytes of the key (overlapping the words before) */
    else
        memcpy(&w, p, (size_t)n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    /* MurmurHash3's finaliser: the table takes the low bits, and keys that differ only in their last
     * bytes (a partition number) differ in the high bits of the product */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

#ifdef HAVE_HW_CRC
/* khash with the CPU's CRC-32C instruction, one word per instruction (a 32-bit hash, mixed into 64). */
__attribute__((target("sse4.2"))) static uint64_t khash_hw(const uint8_t *p, Py_ssize_t n) {
    uint64_t c = 0xFFFFFFFFu, w = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        c = __builtin_ia32_crc32di(c, w);
    }
    if (i < n) {
        w = 0;
        if (n >= 8)
            memcpy(&w, p + n - 8, 8); /* the last 8 bytes of the key (overlapping the words before) */
        else
            memcpy(&w, p, (size_t)n);
        c = __builtin_ia32_crc32di(c, w);
    }
    uint64_t h = (c ^ ((uint64_t)n << 32)) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}
#endif

static int hw_khash; /* set at import when the CPU has SSE4.2 */

static inline uint64_t kc_hash(const uint8_t *p, Py_ssize_t n) {
#ifdef HAVE_HW_CRC
    if (hw_khash) return khash_hw(p, n);
#endif
    return khash(p, n);
}

/* a[0:n] == b[0:n], a word at a time (keys are tens of bytes: no library call) */
static inline int same_bytes(const uint8_t *a, const uint8_t *b, Py_ssize_t n) {
    if (n < 8) return memcmp(a, b, (size_t)n) == 0;
    uint64_t x, y;
    for (Py_ssize_t i = 0; i + 8 <= n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

#define MAX_PROBE 32
#define MAX_KEYS ((size_t)1 << 30) /* distinct keys remembered per run; more are written as they come */
enum { NOT_KEPT = -2 };

static void kc_free(kcache_t *c) {
    for (size_t i = 0; i < c->n; i++) {
        Py_DECREF(c->ents[i].key);
        Py_XDECREF(c->ents[i].entry);
    }
    for (int i = 0; i < c->ntxns; i++) {
        Py_DECREF(c->txns[i].pid_obj);
        Py_DECREF(c->txns[i].pending);
    }
    free(c->ents);
    free(c->index);
    free(c->dirty);
    memset(c, 0, sizeof(*c));
}

static int kc_grow(kcache_t *c) {
    if (c->n == c->ent_cap) {
        size_t cap = c->ent_cap ? c->ent_cap * 2 : 512;
        kent_t *ents = (kent_t *)realloc(c->ents, cap * sizeof(kent_t));
        if (ents == NULL) return -1;
        c->ents = ents;
        uint32_t *dirty = (uint32_t *)realloc(c->dirty, cap * sizeof(uint32_t));
        if (dirty == NULL) return -1;
        c->dirty = dirty;
        c->ent_cap = cap;
    }
    if (c->n * 2 >= c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        uint32_t *index = (uint32_t *)calloc(cap, sizeof(uint32_t));
        if (index == NULL) return -1;
        for (size_t i = 0; i < c->n; i++) {
            size_t j = (size_t)c->ents[i].h & (cap - 1);
            while (index[j] != 0) j = (j + 1) & (cap - 1);
            index[j] = (uint32_t)(i + 1);
        }
        free(c->index);
        c->index = index;
        c->cap = cap;
    }
    return 0;
}

/* The entry of the key k[0:n] (made, with its bytes object, at its first sight), NOT_KEPT when it cannot
 * be remembered (no room, or MAX_PROBE collisions), or -1 with an exception set. */
static Py_ssize_t kc_find(kcache_t *c, const uint8_t *k, Py_ssize_t n) {
    if ((c->n == c->ent_cap || c->n * 2 >= c->cap) && (c->n >= MAX_KEYS || kc_grow(c) < 0)) return NOT_KEPT;
    uint64_t h = kc_hash(k, n);
    size_t j = (size_t)h & (c->cap - 1);
    for (int probe = 0; c->index[j] != 0; probe++) {
        size_t i = c->index[j] - 1;
        PyObject *key = c->ents[i].key;
        if (c->ents[i].h == h && PyBytes_GET_SIZE(key) == n && same_bytes((const uint8_t *)PyBytes_AS_STRING(key), k, n))
            return (Py_ssize_t)i;
        if (probe >= MAX_PROBE) return NOT_KEPT;
        j = (j + 1) & (c->cap - 1);
    }
    PyObject *key = PyBytes_FromStringAndSize((const char *)k, n);
    if (key == NULL) return -1;
    kent_t *e = &c->ents[c->n];
    memset(e, 0, sizeof(*e));
    e->h = h;
    e->key = key;
    c->index[j] = (uint32_t)(c->n + 1);
    return (Py_ssize_t)c->n++;
}

/* A new reference to a bytes object equal to k[0:n]: the one seen before in this run, or a new one. */
static PyObject *kc_key(kcache_t *c, const uint8_t *k, Py_ssize_t n) {
    Py_ssize_t i = kc_find(c, k, n);
    if (i == -1) return NULL;
    if (i == NOT_KEPT) return PyBytes_FromStringAndSize((const char *)k, n);
    return Py_NewRef(c->ents[i].key);
}

/* dest[key] = (off, base, pos, value), stealing `off` and `value`. An entry tuple that only `dest` holds
 * is refilled in place (nothing else can see it), which spares a tuple per record. */
static int store(PyObject *dest, PyObject *key, PyObject *off, PyObject *base_obj, PyObject *pos_obj,
                 PyObject *value) {
    PyObject *cur = PyDict_GetItemWithError(dest, key); /* borrowed */
    if (cur == NULL && PyErr_Occurred()) {
        Py_DECREF(off);
        Py_DECREF(value);
        return -1;
    }
    if (cur != NULL && PyTuple_CheckExact(cur) && PyTuple_GET_SIZE(cur) == 4 && Py_REFCNT(cur) == 1) {
        PyObject *old[4];
        for (int i = 0; i < 4; i++) old[i] = PyTuple_GET_ITEM(cur, i);
        Py_INCREF(base_obj);
        Py_INCREF(pos_obj);
        PyTuple_SET_ITEM(cur, 0, off);
        PyTuple_SET_ITEM(cur, 1, base_obj);
        PyTuple_SET_ITEM(cur, 2, pos_obj);
        PyTuple_SET_ITEM(cur, 3, value);
        for (int i = 0; i < 4; i++) Py_XDECREF(old[i]); /* ints and bytes: no code runs */
        return 0;
    }
    PyObject *entry = PyTuple_Pack(4, off, base_obj, pos_obj, value);
    Py_DECREF(off);
    Py_DECREF(value);
    if (entry == NULL) return -1;
    int rc = PyDict_SetItem(dest, key, entry);
    Py_DECREF(entry);
    return rc;
}

/* The entry of index i, marked as holding a pending write. */
static inline kent_t *kc_mark(kcache_t *c, Py_ssize_t i) {
    kent_t *e = &c->ents[i];
    if (!e->dirty) {
        e->dirty = 1;
        c->dirty[c->nd++] = (uint32_t)i;
    }
    return e;
}

/* Make the pending writes in `latest`, in the order of their first write. */
static int kc_flush(kcache_t *c) {
    PyObject *base_obj = NULL, *pos_obj = NULL; /* shared by the writes of one batch, as before */
    int64_t base = 0, pos = 0;
    int rc = 0;
    for (size_t i = 0; i < c->nd; i++) {
        kent_t *e = &c->ents[c->dirty[i]];
        e->dirty = 0;
        if (rc < 0) { /* dropped: the run fails with the exception set */
            Py_CLEAR(e->entry);
            continue;
        }
        if (e->entry != NULL) {
            rc = PyDict_SetItem(c->latest, e->key, e->entry);
            Py_CLEAR(e->entry);
            continue;
        }
        if (base_obj == NULL || e->base != base) {
            Py_XSETREF(base_obj, PyLong_FromLongLong(e->base));
            base = e->base;
        }
        if (pos_obj == NULL || e->pos != pos) {
            Py_XSETREF(pos_obj, PyLong_FromLongLong(e->pos));
            pos = e->pos;
        }
        PyObject *off = base_obj && pos_obj ? PyLong_FromLongLong(e->off) : NULL;
        PyObject *value = off ? PyBytes_FromStringAndSize((const char *)e->val, e->vlen) : NULL;
        if (value == NULL) {
            Py_XDECREF(off);
            rc = -1;
            continue;
        }
        rc = store(c->latest, e->key, off, base_obj, pos_obj, value);
    }
    c->nd = 0;
    Py_XDECREF(base_obj);
    Py_XDECREF(pos_obj);
    return rc;
}

/* The batch being folded: its base offset and file position, as int64 and as the ints its entries hold,
 * and its producer id. */
typedef struct {
    int64_t base, pos, pid;
    PyObject *base_obj, *pos_obj, *file;
} batch_t;

/* PartitionFold._index_txn_key: txn_keys[key].add(pid), so that a tombstone visits only the open
 * transactions that stage its key. */
static int index_txn_key(PyObject *index, PyObject *key, PyObject *pid) {
    PyObject *pids = PyDict_GetItemWithError(index, key); /* borrowed */
    if (pids == NULL) {
        if (PyErr_Occurred()) return -1;
        pids = PySet_New(NULL);
        if (pids == NULL) return -1;
        int rc = PyDict_SetItem(index, key, pids);
        Py_DECREF(pids);
        if (rc < 0) return -1;
    } else if (!PySet_Check(pids)) {
        PyErr_SetString(PyExc_TypeError, "txn_keys values are sets of producer ids");
        return -1;
    }
    return PySet_Add(pids, pid);
}

/* Index the keys of the transactions deferred in this run: txn_keys as the per-record fold leaves it. */
static int kc_index_txns(kcache_t *c) {
    int rc = 0;
    for (int i = 0; i < c->ntxns; i++) {
        Py_ssize_t it = 0;
        PyObject *key, *entry;
        while (rc == 0 && PyDict_Next(c->txns[i].pending, &it, &key, &entry))
            rc = index_txn_key(c->txn_keys, key, c->txns[i].pid_obj);
        Py_DECREF(c->txns[i].pid_obj);
        Py_DECREF(c->txns[i].pending);
    }
    c->ntxns = 0;
    return rc;
}

/* Everything the run keeps back, made in the Python objects: before a callback, and at the end. */
static int kc_sync(kcache_t *c) {
    if (kc_flush(c) < 0) return -1;
    return kc_index_txns(c);
}

/* kc_sync after a step that returned rc: a failed step's exception is kept (what it folded before it
 * failed is written all the same, as the per-record fold had written it). */
static int kc_settle(kcache_t *c, int rc) {
    if (rc == 0) return kc_sync(c);
    if (c->nd == 0 && c->ntxns == 0) return rc;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (kc_sync(c) < 0) PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return rc;
}

/* Whether the transaction of producer `pid` is deferred in this run; `forget`: and no longer is. */
static int kc_txn_deferred(kcache_t *c, int64_t pid, int forget) {
    for (int i = 0; i < c->ntxns; i++) {
        if (c->txns[i].pid != pid) continue;
        if (forget) {
            Py_DECREF(c->txns[i].pid_obj);
            Py_DECREF(c->txns[i].pending);
            c->txns[i] = c->txns[--c->ntxns];
        }
        return 1;
    }
    return 0;
}

/* Defer the indexing of a transaction opened in this run (its pending dict new and empty); 0 when there
 * is no room (it is indexed as it comes). */
static int kc_defer_txn(kcache_t *c, int64_t pid, PyObject *pid_obj, PyObject *pending) {
    if (c->txn_keys == NULL || c->ntxns == MAX_DEFERRED_TXNS) return 0;
    c->txns[c->ntxns].pid = pid;
    c->txns[c->ntxns].pid_obj = Py_NewRef(pid_obj);
    c->txns[c->ntxns].pending = Py_NewRef(pending);
    c->ntxns++;
    return 1;
}

/* PartitionFold._unindex_txn: a resolved transaction's keys no longer point at its producer. */
static int unindex_txn(PyObject *index, PyObject *pending, PyObject *pid) {
    Py_ssize_t it = 0;
    PyObject *key, *entry;
    while (PyDict_Next(pending, &it, &key, &entry)) {
        PyObject *pids = PyDict_GetItemWithError(index, key); /* borrowed */
        if (pids == NULL) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (!PySet_Check(pids) || PySet_Discard(pids, pid) < 0) return -1;
        if (PySet_GET_SIZE(pids) == 0 && PyDict_DelItem(index, key) < 0) return -1;
    }
    return 0;
}

/* Fold one parsed plain or transactional batch into `dest` (latest, or the producer's pending dict);
 * records outside the hot case go to `slow` (with the producer id `pid` first for a transactional
 * batch, whose hot keys are also indexed in `index` when it is not NULL and the transaction is not
 * deferred in `kc`). The hot records of a plain batch (pid NULL) are kept in `kc` as pending writes to
 * `latest`.
 * -1 with an exception set if Python failed. */
static int apply(const uint8_t *b, const staged_t *st, int32_t count, const batch_t *bt, PyObject *dest,
                 PyObject *slow, PyObject *pid, PyObject *index, long long *hot_count, kcache_t *kc) {
    if (index != NULL && kc_txn_deferred(kc, bt->pid, 0)) index = NULL;
    for (int32_t r = 0; r < count; r++) {
        const uint8_t *k = st[r].klen >= 0 ? b + st[r].kpos : NULL;
        const uint8_t *v = st[r].vlen >= 0 ? b + st[r].vpos : NULL;
        const int is_hot = hot(k, st[r].klen, v, st[r].vlen);
        if (is_hot && pid == NULL) {
            Py_ssize_t i = kc_find(kc, k, st[r].klen);
            if (i == -1) return -1;
            if (i >= 0) {
                kent_t *e = kc_mark(kc, i);
                Py_CLEAR(e->entry);
                e->val = v;
                e->vlen = st[r].vlen;
                e->off = st[r].offset;
                e->base = bt->base;
                e->pos = bt->pos;
                (*hot_count)++;
                continue;
            }
        }
        if (is_hot) {
            /* A write to latest made now comes after the pending ones, as it came after them. */
            if (pid == NULL && kc->nd && kc_flush(kc) < 0) return -1;
            PyObject *off = PyLong_FromLongLong(st[r].offset);
            if (off == NULL) return -1;
            PyObject *key = kc_key(kc, k, st[r].klen);
            PyObject *value = key ? PyBytes_FromStringAndSize((const char *)v, st[r].vlen) : NULL;
            if (value == NULL) {
                Py_XDECREF(key);
                Py_DECREF(off);
                return -1;
            }
            int rc = store(dest, key, off, bt->base_obj, bt->pos_obj, value);
            if (rc == 0 && index != NULL) rc = index_txn_key(index, key, pid);
            Py_DECREF(key);
            if (rc < 0) return -1;
            (*hot_count)++;
            continue;
        }
        if (kc_sync(kc) < 0) return -1; /* the callback sees the fold as the per-record fold left it */
        if (pid != NULL) index = kc->txn_keys; /* no transaction is deferred any more */
        PyObject *off = PyLong_FromLongLong(st[r].offset);
        if (off == NULL) return -1;
        PyObject *key = bytes_or_none(b, st[r].kpos, st[r].klen);
        PyObject *value = key ? bytes_or_none(b, st[r].vpos, st[r].vlen) : NULL;
        PyObject *res = NULL;
        if (value != NULL) {
            if (pid != NULL)
                res = PyObject_CallFunctionObjArgs(slow, pid, off, key, value, bt->base_obj, bt->pos_obj, bt->file,
                                                   NULL);
            else
                res = PyObject_CallFunctionObjArgs(slow, off, key, value, bt->base_obj, bt->pos_obj, bt->file, NULL);
        }
        Py_XDECREF(value);
        Py_XDECREF(key);
        Py_DECREF(off);
        if (res == NULL) return -1;
        Py_DECREF(res);
    }
    return 0;
}

/* apply() over a batch: in one go when its records are all staged (count <= STAGE_CHUNK), else staging
 * and folding STAGE_CHUNK records at a time (the section was checked whole by check_records). */
static int apply_all(const uint8_t *b, Py_ssize_t n, staged_t *st, int32_t count, const batch_t *bt,
                     PyObject *dest, PyObject *slow, PyObject *pid, PyObject *index, long long *hot_count,
                     kcache_t *kc) {
    if (count <= STAGE_CHUNK) return apply(b, st, count, bt, dest, slow, pid, index, hot_count, kc);
    Py_ssize_t q = 0;
    for (int32_t done = 0; done < count; done += STAGE_CHUNK) {
        int32_t m = count - done < STAGE_CHUNK ? count - done : STAGE_CHUNK;
        if (parse_range(b, n, &q, m, bt->base, st) != OK) {
            PyErr_SetString(PyExc_RuntimeError, "records section changed between its check and its fold");
            return -1;
        }
        if (apply(b, st, m, bt, dest, slow, pid, index, hot_count, kc) < 0) return -1;
    }
    return 0;
}

/* Parsed records as the list of (offset, timestamp, key, value) tuples the Python side takes: the
 * timestamp is base_ts + delta (checked by the caller not to overflow), or 0 when base_ts is NULL (the
 * control records fold_control takes, which it does not read). */
static PyObject *record_list(const uint8_t *b, const staged_t *st, int32_t count, const int64_t *base_ts) {
    PyObject *list = PyList_New(count);
    if (list == NULL) return NULL;
    for (int32_t r = 0; r < count; r++) {
        PyObject *off = PyLong_FromLongLong(st[r].offset);
        PyObject *ts = NULL;
        if (off != NULL) {
            ts = base_ts ? PyLong_FromLongLong((long long)(*base_ts + st[r].ts_delta)) : ZERO;
            if (!base_ts) Py_INCREF(ts);
        }
        PyObject *key = ts ? bytes_or_none(b, st[r].kpos, st[r].klen) : NULL;
        PyObject *value = key ? bytes_or_none(b, st[r].vpos, st[r].vlen) : NULL;
        PyObject *rec = value ? PyTuple_Pack(4, off, ts, key, value) : NULL;
        Py_XDECREF(off);
        Py_XDECREF(ts);
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (rec == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, r, rec);
    }
    return list;
}

#define TRANSACTIONAL 0x10
#define CONTROL 0x20
#define MIN_RECORD_SIZE 7 /* RecordBatch.records() checks the count against this for these two kinds */

/* What fold_run reads of a fold: the fields of records/fold.py's FoldState (declared there and in
 * _cfold.pyi), each read by name once per call. The containers are updated in place. */
typedef struct {
    PyObject *latest, *open_txns, *small, *fold_record, *fold_txn_record, *fold_control, *order;
    PyObject *first_marker, *created; /* FoldState.first_marker and .created (dicts) */
    PyObject *txn_keys;               /* FoldState.txn_keys: key -> set of producer ids (Java only) */
    int scala;                        /* FoldState.scala: the coordinator's Scala-era rules */
} target_t;

static void target_clear(target_t *t) {
    Py_CLEAR(t->latest);
    Py_CLEAR(t->open_txns);
    Py_CLEAR(t->small);
    Py_CLEAR(t->fold_record);
    Py_CLEAR(t->fold_txn_record);
    Py_CLEAR(t->fold_control);
    Py_CLEAR(t->order);
    Py_CLEAR(t->first_marker);
    Py_CLEAR(t->created);
    Py_CLEAR(t->txn_keys);
}

static int target_get(PyObject *obj, target_t *t) {
    memset(t, 0, sizeof(*t));
    PyObject *scala = NULL;
    if (!(t->latest = PyObject_GetAttrString(obj, "latest")) || !PyDict_Check(t->latest) ||
        !(t->open_txns = PyObject_GetAttrString(obj, "open_txns")) || !PyDict_Check(t->open_txns) ||
        !(t->small = PyObject_GetAttrString(obj, "small_types")) || !PyList_Check(t->small) ||
        PyList_GET_SIZE(t->small) < 2 || !(t->fold_record = PyObject_GetAttrString(obj, "fold_record")) ||
        !(t->fold_txn_record = PyObject_GetAttrString(obj, "fold_transactional_record")) ||
        !(t->fold_control = PyObject_GetAttrString(obj, "fold_control")) ||
        !(t->order = PyObject_GetAttrString(obj, "offset_order")) ||
        !(t->first_marker = PyObject_GetAttrString(obj, "first_marker")) || !PyDict_Check(t->first_marker) ||
        !(t->created = PyObject_GetAttrString(obj, "created")) || !PyDict_Check(t->created) ||
        !(t->txn_keys = PyObject_GetAttrString(obj, "txn_keys")) || !PyDict_Check(t->txn_keys) ||
        !(scala = PyObject_GetAttrString(obj, "scala")) || !PyBool_Check(scala)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "fold_run takes a records.fold.FoldState (see _cfold.pyi)");
        Py_XDECREF(scala);
        target_clear(t);
        return -1;
    }
    t->scala = scala == Py_True;
    Py_DECREF(scala);
    return 0;
}

/* ---- transaction markers (PartitionFold.fold_control, _commit and _created) ---- */

static PyObject *MINUS_ONE; /* created.get(group, -1) */

/* PartitionFold._created: an offset-commit value that will not survive still created its group (Java
 * semantics). created[group] = max(created.get(group, -1), entry offset), where group is the key's
 * int16-length-prefixed group name, sliced as Python slices (clamped to the key). */
static int note_created(PyObject *created, PyObject *key, PyObject *entry) {
    if (!PyBytes_Check(key) || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4) {
        PyErr_SetString(PyExc_TypeError, "entries are (offset, base, position, value) tuples under bytes keys");
        return -1;
    }
    if (PyTuple_GET_ITEM(entry, 3) == Py_None) return 0;
    const uint8_t *k = (const uint8_t *)PyBytes_AS_STRING(key);
    Py_ssize_t n = PyBytes_GET_SIZE(key);
    long len = 0;
    if (n >= 4)
        len = (int16_t)((uint16_t)k[2] << 8 | k[3]);
    else if (n == 3)
        len = (int8_t)k[2];
    Py_ssize_t start = n < 2 ? n : 2;
    Py_ssize_t stop = 4 + (len > 0 ? len : 0);
    if (stop > n) stop = n;
    if (stop < start) stop = start;
    PyObject *group = PyBytes_FromStringAndSize((const char *)k + start, stop - start);
    if (group == NULL) return -1;
    PyObject *off = PyTuple_GET_ITEM(entry, 0);
    PyObject *cur = PyDict_GetItemWithError(created, group); /* borrowed */
    int rc = 0;
    if (cur == NULL && PyErr_Occurred()) {
        rc = -1;
    } else {
        int less = PyObject_RichCompareBool(cur != NULL ? cur : MINUS_ONE, off, Py_LT);
        if (less < 0)
            rc = -1;
        else if (less)
            rc = PyDict_SetItem(created, group, off);
    }
    Py_DECREF(group);
    return rc;
}

/* Whether a pending entry replaces `cur`, the current entry of its key (NULL: none): 1, 0, or -1 with
 * an exception set. See commit_core. */
static int commit_takes(PyObject *cur, PyObject *entry, int scala) {
    if (cur == NULL) return 1;
    if (!PyTuple_Check(cur) || PyTuple_GET_SIZE(cur) != 4) {
        PyErr_SetString(PyExc_TypeError, "latest entries are (offset, base, position, value) tuples");
        return -1;
    }
    if (scala && PyTuple_GET_ITEM(cur, 3) == Py_None) return 1;
    return PyObject_RichCompareBool(PyTuple_GET_ITEM(cur, scala ? 1 : 0), PyTuple_GET_ITEM(entry, scala ? 1 : 0),
                                    Py_LT);
}

/* The value of an exact int that fits int64, in *out; 0 for anything else. */
static int int64_of(PyObject *obj, int64_t *out) {
    if (!PyLong_CheckExact(obj)) return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

/* The run's entry for a pending key when it can hold its write (-1: NULL with an exception set; NULL
 * without one: written to latest directly). */
static kent_t *commit_slot(kcache_t *kc, PyObject *key, Py_ssize_t *index) {
    if (kc == NULL || !PyBytes_CheckExact(key)) return NULL;
    Py_ssize_t i = kc_find(kc, (const uint8_t *)PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key));
    *index = i;
    return i >= 0 ? &kc->ents[i] : NULL;
}

/* PartitionFold._commit: a COMMIT marker applies the producer's pending offsets to `latest`. Java
 * (OffsetMetadataManager.replayEndTransactionMarker): an entry replaces the current one only if its record
 * offset is greater, and a losing one still created its group (`created`). Scala (GroupMetadataManager):
 * the batch base offset decides, and a tombstone is always replaced. Pending tombstones are skipped.
 * With a run's `kc`, the current entry may be a write it holds, and a winning entry becomes one. */
static int commit_core(PyObject *latest, PyObject *pending, int scala, PyObject *created, kcache_t *kc) {
    Py_ssize_t it = 0;
    PyObject *key, *entry;
    int rc = -1;
    Py_INCREF(pending); /* not changed while it is walked: note_created only writes `created` */
    while (PyDict_Next(pending, &it, &key, &entry)) {
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4) {
            PyErr_SetString(PyExc_TypeError, "pending entries are (offset, base, position, value) tuples");
            goto done;
        }
        if (PyTuple_GET_ITEM(entry, 3) == Py_None) continue;
        Py_ssize_t i = NOT_KEPT;
        kent_t *e = commit_slot(kc, key, &i);
        if (i == -1) goto done;
        int64_t mine = 0;
        if (e != NULL && e->dirty && e->entry == NULL && !int64_of(PyTuple_GET_ITEM(entry, scala ? 1 : 0), &mine)) {
            if (kc_flush(kc) < 0) goto done; /* an offset past int64: compared as Python compares it */
        }
        if (e == NULL && kc != NULL && kc_flush(kc) < 0) goto done; /* written now, after the pending ones */
        int take;
        if (e != NULL && e->dirty && e->entry == NULL) { /* a plain record's write, never a tombstone */
            take = (scala ? e->base : e->off) < mine;
        } else if (e != NULL && e->dirty) {
            take = commit_takes(e->entry, entry, scala);
        } else {
            PyObject *cur = PyDict_GetItemWithError(latest, key); /* borrowed */
            if (cur == NULL && PyErr_Occurred()) goto done;
            take = commit_takes(cur, entry, scala);
        }
        if (take < 0) goto done;
        if (take && e != NULL) {
            Py_XSETREF(kc_mark(kc, i)->entry, Py_NewRef(entry));
        } else if (take) {
            if (PyDict_SetItem(latest, key, entry) < 0) goto done;
        } else if (!scala && created != NULL) {
            if (note_created(created, key, entry) < 0) goto done;
        }
    }
    rc = 0;
done:
    Py_DECREF(pending);
    return rc;
}

/* Whether every record of a control batch has a key ControlRecordType.parse accepts (4 bytes or more, a
 * non-negative version): then fold_markers takes the batch; otherwise fold_control reports it. */
static int simple_markers(const uint8_t *b, const staged_t *st, int32_t count) {
    for (int32_t r = 0; r < count; r++) {
        if (st[r].klen < 4) return 0;
        if (b[st[r].kpos] & 0x80) return 0; /* negative version */
    }
    return 1;
}

/* PartitionFold.fold_control over a control batch whose keys all parse: COMMIT and ABORT markers resolve
 * the producer's open transaction; other control types (LEADER_CHANGE, KRaft markers) are counted only.
 * The Scala loader reads only up to the first marker of a batch. Adds the records it read to *n_ctrl. */
static int fold_markers(target_t *t, const uint8_t *b, const staged_t *st, int32_t count, int64_t pid,
                        PyObject *pid_obj, long long *n_ctrl, kcache_t *kc) {
    for (int32_t r = 0; r < count; r++) {
        (*n_ctrl)++;
        const uint8_t *k = b + st[r].kpos;
        int ctype = (int16_t)((uint16_t)k[2] << 8 | k[3]);
        if (ctype != 0 && ctype != 1) continue;
        int commit = ctype == 1;
        if (!PyDict_Contains(t->first_marker, pid_obj)) {
            PyObject *marker = Py_BuildValue("(LO)", (long long)st[r].offset, commit ? Py_True : Py_False);
            int rc = marker ? PyDict_SetItem(t->first_marker, pid_obj, marker) : -1;
            Py_XDECREF(marker);
            if (rc < 0) return -1;
        }
        PyObject *pending = PyDict_GetItemWithError(t->open_txns, pid_obj); /* borrowed */
        if (pending == NULL && PyErr_Occurred()) return -1;
        if (pending != NULL) {
            Py_INCREF(pending);
            if (PyDict_DelItem(t->open_txns, pid_obj) < 0) {
                Py_DECREF(pending);
                return -1;
            }
            int rc = 0;
            if (!PyDict_Check(pending)) {
                PyErr_SetString(PyExc_TypeError, "open transactions are dicts");
                rc = -1;
            } else if (kc_txn_deferred(kc, pid, 1)) {
                /* opened in this run: its keys never went into txn_keys */
            } else if (PyDict_GET_SIZE(pending) > 0 && !t->scala) {
                rc = unindex_txn(t->txn_keys, pending, pid_obj);
            }
            if (rc == 0 && PyDict_GET_SIZE(pending) > 0) {
                if (commit) {
                    rc = commit_core(t->latest, pending, t->scala, t->scala ? NULL : t->created, kc);
                } else if (rc == 0 && !t->scala) {
                    Py_ssize_t it = 0;
                    PyObject *key, *entry;
                    while (rc == 0 && PyDict_Next(pending, &it, &key, &entry))
                        rc = note_created(t->created, key, entry);
                }
            }
            Py_DECREF(pending);
            if (rc < 0) return -1;
        }
        if (t->scala) break;
    }
    return 0;
}

/* open_txns.setdefault(pid, {}) (a new reference), as PartitionFold.fold_transactional. A transaction
 * opened here has the indexing of its keys deferred. */
static PyObject *open_txn(target_t *t, kcache_t *kc, int64_t pid, PyObject *pid_obj) {
    PyObject *pending = PyDict_GetItemWithError(t->open_txns, pid_obj); /* borrowed */
    if (pending != NULL) {
        if (!PyDict_Check(pending)) {
            PyErr_SetString(PyExc_TypeError, "open transactions are dicts");
            return NULL;
        }
        return Py_NewRef(pending);
    }
    if (PyErr_Occurred() || (pending = PyDict_New()) == NULL) return NULL;
    if (PyDict_SetItem(t->open_txns, pid_obj, pending) < 0) {
        Py_DECREF(pending);
        return NULL;
    }
    kc_defer_txn(kc, pid, pid_obj, pending);
    return pending;
}

static int report_order(target_t *t, PyObject *file, PyObject *pos_obj, int64_t base_offset, long long prev_last) {
    PyObject *res = PyObject_CallFunction(t->order, "OOLL", file, pos_obj, (long long)base_offset, prev_last);
    Py_XDECREF(res);
    return res == NULL ? -1 : 0;
}

static PyObject *fold_run(PyObject *self, PyObject *args) {
    PyObject *data, *file, *prev_obj, *state_obj, *decompress;
    Py_ssize_t pos, limit, max_batch;
    long long file_base;
    int verify;
    if (!PyArg_ParseTuple(args, "OnnLOpnOOO", &data, &pos, &limit, &file_base, &file, &verify, &max_batch,
                          &prev_obj, &state_obj, &decompress))
        return NULL;
    target_t t;
    if (target_get(state_obj, &t) < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        target_clear(&t);
        return NULL;
    }
    const uint8_t *buf = (const uint8_t *)view.buf;
    const Py_ssize_t end = view.len;
    if (limit > end) limit = end;
    if (pos < 0) pos = end; /* nothing to do */
    int overflow = 0;
    long long prev_last = PyLong_AsLongLongAndOverflow(prev_obj, &overflow);
    if (prev_last == -1 && PyErr_Occurred()) {
        PyBuffer_Release(&view);
        target_clear(&t);
        return NULL;
    }
    if (overflow) limit = pos; /* a previous last offset past int64: the Python walk goes on alone */

    long long n_batches = 0, n_bytes = 0, n_records = 0, n_txn = 0, first = -1, last = -1, hot_count = 0;
    long long n_ctrl = 0; /* control records read by fold_markers (counted in n_records too) */
    staged_t *st = NULL;
    size_t st_cap = 0;
    kcache_t kc;
    memset(&kc, 0, sizeof(kc));
    kc.latest = t.latest;
    kc.txn_keys = t.scala ? NULL : t.txn_keys;
    PyObject *whole = NULL; /* memoryview of `data`, made at the first compressed batch */
    int failed = 0;

    while (pos < limit) {
        if (end - pos < V2_HEADER_SIZE) break;
        const uint8_t *p = buf + pos;
        if (p[MAGIC_AT] != 2) break;
        int64_t base_offset = (int64_t)be64(p);
        int32_t size = (int32_t)be32(p + 8);
        uint32_t crc = be32(p + 17);
        int attrs = (int)((uint32_t)p[21] << 8 | p[22]);
        int32_t lod = (int32_t)be32(p + 23);
        int64_t pid = (int64_t)be64(p + 43);
        int32_t count = (int32_t)be32(p + 57);
        int kind = attrs & CONTROL ? CONTROL : attrs & TRANSACTIONAL;
        if (size < V2_MIN_SIZE || (Py_ssize_t)size > max_batch) break;
        Py_ssize_t total = LOG_OVERHEAD + (Py_ssize_t)size;
        if (total > end - pos) break;
        if (count < 0 || lod < 0) break;
        int64_t last_offset;
        if (__builtin_add_overflow(base_offset, (int64_t)lod, &last_offset)) break;
        if (verify && crc32c_fn(p + 21, (size_t)(total - 21)) != crc) break;

        const uint8_t *rec = p + V2_HEADER_SIZE;
        Py_ssize_t rlen = total - V2_HEADER_SIZE;
        PyObject *body = NULL;
        int codec = attrs & CODEC_MASK;
        if (codec) {
            /* A view of `data` itself (not of raw memory): it holds an export of the buffer, so a mapped
             * segment cannot be unmapped while the codec, or whatever it hands the view to, holds it. */
            if (whole == NULL && (whole = PyMemoryView_FromObject(data)) == NULL) { failed = 1; break; }
            PyObject *mv = PySequence_GetSlice(whole, pos + V2_HEADER_SIZE, pos + total);
            if (mv == NULL) { failed = 1; break; }
            body = PyObject_CallFunction(decompress, "iOn", codec, mv, max_batch);
            Py_DECREF(mv);
            if (body == NULL) { failed = 1; break; }
            if (!PyBytes_Check(body)) { Py_DECREF(body); break; } /* None: the Python walk reports it */
            rec = (const uint8_t *)PyBytes_AS_STRING(body);
            rlen = PyBytes_GET_SIZE(body);
        }
        /* Bounded before allocating. Plain batches are parsed by their records' lengths alone (the fold
         * always has); the other two kinds go through RecordBatch.records(), which checks the count. */
        if ((Py_ssize_t)count > rlen / (kind ? MIN_RECORD_SIZE : MIN_PARSED_RECORD)) { Py_XDECREF(body); break; }
        /* A control batch is always staged whole: it goes to fold_markers or fold_control in one piece. */
        if (count > STAGE_CHUNK && kind == CONTROL) { Py_XDECREF(body); break; }
        size_t need = (size_t)count > STAGE_CHUNK ? STAGE_CHUNK : (size_t)count;
        if (need > st_cap) {
            size_t cap = need < 64 ? 64 : need;
            staged_t *grown = (staged_t *)realloc(st, cap * sizeof(staged_t));
            if (grown == NULL) { Py_XDECREF(body); PyErr_NoMemory(); failed = 1; break; }
            st = grown;
            st_cap = cap;
        }
        if ((count > STAGE_CHUNK ? check_records(rec, rlen, count, base_offset, st)
                                 : parse_records(rec, rlen, count, base_offset, st)) != OK) {
            Py_XDECREF(body);
            break;
        }

        PyObject *base_obj = PyLong_FromLongLong(base_offset);
        PyObject *pos_obj = base_obj ? PyLong_FromLongLong(file_base + pos) : NULL;
        const batch_t bt = {base_offset, file_base + pos, pid, base_obj, pos_obj, file};
        int rc = pos_obj ? 0 : -1;
        if (rc == 0 && kind == 0) {
            rc = apply_all(rec, rlen, st, count, &bt, t.latest, t.fold_record, NULL, NULL, &hot_count, &kc);
            if (body != NULL) rc = kc_settle(&kc, rc); /* its records die with it */
            if (rc == 0 && base_offset <= prev_last) {
                rc = kc_sync(&kc);
                if (rc == 0) rc = report_order(&t, file, pos_obj, base_offset, prev_last);
            }
            prev_last = last_offset;
            n_records += count;
        } else if (rc == 0) {
            /* As the walk does for every batch it hands over whole: order first, then the fold. */
            if (base_offset <= prev_last) {
                rc = kc_sync(&kc);
                if (rc == 0) rc = report_order(&t, file, pos_obj, base_offset, prev_last);
            }
            if (last_offset > prev_last) prev_last = last_offset;
            PyObject *pid_obj = rc == 0 ? PyLong_FromLongLong(pid) : NULL;
            if (pid_obj == NULL) {
                rc = -1;
            } else if (kind == TRANSACTIONAL) {
                PyObject *pending = open_txn(&t, &kc, pid, pid_obj);
                if (pending == NULL) {
                    rc = -1;
                } else {
                    rc = apply_all(rec, rlen, st, count, &bt, pending, t.fold_txn_record, pid_obj, kc.txn_keys,
                                   &hot_count, &kc);
                    Py_DECREF(pending);
                }
                n_records += count;
                n_txn++;
            } else if (simple_markers(rec, st, count)) {
                rc = fold_markers(&t, rec, st, count, pid, pid_obj, &n_ctrl, &kc);
            } else if ((rc = kc_sync(&kc)) == 0) {
                PyObject *records = record_list(rec, st, count, NULL);
                PyObject *res = records ? PyObject_CallFunctionObjArgs(t.fold_control, pid_obj, records, pos_obj,
                                                                       file, NULL)
                                        : NULL;
                rc = res == NULL ? -1 : 0;
                Py_XDECREF(res);
                Py_XDECREF(records);
            }
            Py_XDECREF(pid_obj);
        }
        Py_XDECREF(pos_obj);
        Py_XDECREF(base_obj);
        Py_XDECREF(body);
        if (rc < 0) { failed = 1; break; }
        if (n_batches == 0) first = base_offset;
        n_batches++;
        n_bytes += total;
        last = last_offset;
        pos += total;
    }
    if (kc_settle(&kc, failed ? -1 : 0) < 0) failed = 1; /* before the buffer is released */
    free(st);
    kc_free(&kc);
    Py_XDECREF(whole);
    PyBuffer_Release(&view);
    if (hot_count) {
        /* The type tally of the hot case (record type 1), as the Python fold keeps it. */
        PyObject *cur = PyList_GET_ITEM(t.small, 1);
        PyObject *add = PyLong_FromLongLong(hot_count);
        PyObject *sum = add ? PyNumber_Add(cur, add) : NULL;
        Py_XDECREF(add);
        if (sum == NULL || PyList_SetItem(t.small, 1, sum) < 0) failed = 1;
    }
    target_clear(&t);
    if (failed) return NULL;
    n_records += n_ctrl;
    if (overflow)
        return Py_BuildValue("nOLLLLLLL", pos, prev_obj, n_batches, n_bytes, n_records, first, last, n_txn, n_ctrl);
    return Py_BuildValue("nLLLLLLLL", pos, prev_last, n_batches, n_bytes, n_records, first, last, n_txn, n_ctrl);
}

/* commit_pending(latest, pending, scala, created): commit_core for PartitionFold._commit (a merge's
 * deferred commits, and the Python walk's markers when the twin is in use). */
static PyObject *commit_pending(PyObject *self, PyObject *args) {
    PyObject *latest, *pending, *created;
    int scala;
    if (!PyArg_ParseTuple(args, "O!O!pO!", &PyDict_Type, &latest, &PyDict_Type, &pending, &scala, &PyDict_Type,
                          &created))
        return NULL;
    if (commit_core(latest, pending, scala, created, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

/* decode_records(data, pos, end, count, base_offset, base_timestamp): the records of a magic-2 batch's
 * records section data[pos:end] as batch.decode_v2_records returns them, [(offset, timestamp, key,
 * value), ...], or None where that parser could answer otherwise (anything malformed, a 10-byte varint,
 * an offset or timestamp past int64): it then decodes the section itself and says why. */
static PyObject *decode_records(PyObject *self, PyObject *args) {
    PyObject *data;
    Py_ssize_t pos, end;
    long long count_ll, base_offset, base_ts;
    if (!PyArg_ParseTuple(args, "OnnLLL", &data, &pos, &end, &count_ll, &base_offset, &base_ts)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = NULL;
    staged_t *st = NULL;
    if (pos < 0 || end > view.len || pos > end || count_ll < 0 || count_ll > (end - pos) / MIN_PARSED_RECORD)
        goto fallback; /* what the Python parser makes of it, it says */
    const int32_t count = (int32_t)count_ll;
    const uint8_t *b = (const uint8_t *)view.buf + pos;
    const Py_ssize_t n = end - pos;
    st = (staged_t *)malloc((count ? (size_t)count : 1) * sizeof(staged_t));
    if (st == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (parse_records(b, n, count, (int64_t)base_offset, st) != OK) goto fallback;
    for (int32_t r = 0; r < count; r++) {
        int64_t ts;
        if (__builtin_add_overflow((int64_t)base_ts, st[r].ts_delta, &ts)) goto fallback;
    }
    const int64_t ts0 = (int64_t)base_ts;
    out = record_list(b, st, count, &ts0);
    goto done;
fallback:
    out = Py_NewRef(Py_None);
done:
    free(st);
    PyBuffer_Release(&view);
    return out;
}

/* ---- the survivors' hot case: offset-commit keys and values (schema/keys.py, schema/values.py) ---- */

static inline int16_t be16s(const uint8_t *p) { return (int16_t)((uint16_t)p[0] << 8 | p[1]); }

static PyObject *utf8_or_escaped(const uint8_t *p, Py_ssize_t n) {
    /* bytes.decode("utf-8", "surrogateescape"), as the Python readers decode every string */
    return PyUnicode_DecodeUTF8((const char *)p, n, "surrogateescape");
}

/* The result of `read` over the bytes of `arg` (any buffer): a value, None where the Python reader
 * decides, or NULL with an exception set. */
static PyObject *read_buffer(PyObject *arg, PyObject *(*read)(const uint8_t *, Py_ssize_t)) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = read((const uint8_t *)view.buf, view.len);
    PyBuffer_Release(&view);
    return out;
}

/* offset_commit_key(data): (group, topic, partition) of an OffsetCommitKey (record type 0 or 1) that
 * decode_key's hot path reads, or None for anything else (other types, a short or negative length): the
 * Python reader then decides, and says why a key is corrupt. Bytes after the partition are ignored, as
 * there. */
static PyObject *read_offset_commit_key(const uint8_t *b, Py_ssize_t n) {
    if (n < 4 || b[0] != 0 || b[1] > 1) Py_RETURN_NONE;
    const Py_ssize_t glen = be16s(b + 2), p = 4 + glen;
    if (glen < 0 || p + 2 > n) Py_RETURN_NONE;
    const Py_ssize_t tlen = be16s(b + p), q = p + 2 + tlen;
    if (tlen < 0 || q + 4 > n) Py_RETURN_NONE;
    PyObject *out = NULL;
    PyObject *group = utf8_or_escaped(b + 4, glen);
    PyObject *topic = group ? utf8_or_escaped(b + p + 2, tlen) : NULL;
    PyObject *partition = topic ? PyLong_FromLong((long)(int32_t)be32(b + q)) : NULL;
    if (partition != NULL) out = PyTuple_Pack(3, group, topic, partition);
    Py_XDECREF(group);
    Py_XDECREF(topic);
    Py_XDECREF(partition);
    return out;
}

static PyObject *offset_commit_key(PyObject *self, PyObject *arg) {
    return read_buffer(arg, read_offset_commit_key);
}

/* offset_commit_value(data): (version, offset, leader_epoch, metadata, commit_timestamp, expire_timestamp,
 * end) of an OffsetCommitValue v0-v3, or v4 without tagged fields, with the defaults values.py gives a
 * version that lacks a field (-1); None for anything else (v4 with tagged fields, another version, a
 * null or truncated field): the Python reader then decodes it and says why. */
static PyObject *read_offset_commit_value(const uint8_t *b, Py_ssize_t n) {
    if (n < 2 || b[0] != 0 || b[1] > 4) Py_RETURN_NONE;
    const int version = b[1];
    int64_t epoch = -1, expire = -1;
    Py_ssize_t mpos, mlen, end;
    if (version == 4) { /* flexible: compact string (uvarint length + 1), then the tagged fields */
        if (n < 15) Py_RETURN_NONE;
        epoch = (int32_t)be32(b + 10);
        uint64_t v = 0; /* ByteUtils.readUnsignedVarint: at most 5 bytes */
        Py_ssize_t i = 14;
        for (int shift = 0;; shift += 7) {
            if (shift > 28 || i >= n) Py_RETURN_NONE;
            uint8_t c = b[i++];
            v |= (uint64_t)(c & 0x7F) << shift;
            if (c < 0x80) break;
        }
        if (v < 1 || v - 1 > 0x7FFF) Py_RETURN_NONE;
        mpos = i, mlen = (Py_ssize_t)v - 1;
        end = mpos + mlen + 8;
        if (end >= n || b[end] != 0) Py_RETURN_NONE; /* tagged fields (or none at all): Python's */
        end += 1;
    } else {
        const Py_ssize_t at = version == 3 ? 14 : 10; /* the metadata's int16 length */
        if (n < at + 2) Py_RETURN_NONE;
        if (version == 3) epoch = (int32_t)be32(b + 10);
        mlen = be16s(b + at), mpos = at + 2;
        end = mpos + mlen + (version == 1 ? 16 : 8);
        if (mlen < 0 || end > n) Py_RETURN_NONE;
        if (version == 1) expire = (int64_t)be64(b + mpos + mlen + 8);
    }
    PyObject *metadata = utf8_or_escaped(b + mpos, mlen);
    if (metadata == NULL) return NULL;
    return Py_BuildValue("(iLLNLLn)", version, (long long)(int64_t)be64(b + 2), (long long)epoch, metadata,
                         (long long)(int64_t)be64(b + mpos + mlen), (long long)expire, end);
}

static PyObject *offset_commit_value(PyObject *self, PyObject *arg) {
    return read_buffer(arg, read_offset_commit_value);
}

static PyObject *crc32c_py(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t c = crc32c_fn((const uint8_t *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"fold_run", fold_run, METH_VARARGS,
     "fold_run(data, pos, limit, base, file, verify_crc, max_batch_bytes, prev_last, state, decompress) -> "
     "(pos, prev_last, batches, bytes, records, first_offset, last_offset, transactional_batches, control_records)"},
    {"commit_pending", commit_pending, METH_VARARGS,
     "commit_pending(latest, pending, scala, created): apply a committed transaction's offsets; losers go to "
     "the created dict"},
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(data, pos, end, count, base_offset, base_timestamp) -> [(offset, timestamp, key, value)] "
     "or None (then the Python parser decides)"},
    {"offset_commit_key", offset_commit_key, METH_O,
     "offset_commit_key(data) -> (group, topic, partition) or None (then the Python reader decides)"},
    {"offset_commit_value", offset_commit_value, METH_O,
     "offset_commit_value(data) -> (version, offset, leader_epoch, metadata, commit_timestamp, "
     "expire_timestamp, end) or None (then the Python reader decides)"},
    {"crc32c", crc32c_py, METH_O, "CRC-32C of a bytes-like object (the checksum the fold verifies)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cfold", "Native fold of plain magic-2 batches.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cfold(void) {
    crc_init();
    ZERO = PyLong_FromLong(0);
    MINUS_ONE = PyLong_FromLong(-1);
    if (ZERO == NULL || MINUS_ONE == NULL) return NULL;
#ifdef HAVE_HW_CRC
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc32c_fn = crc32c_hw;
        hw_khash = 1;
    }
#endif
    PyObject *m = PyModule_Create(&module);
    /* The calling convention of fold_run; records/fold.py refuses a build with another one. */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", 8) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
