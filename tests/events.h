/* tests/events.h - a reader of TensorBoard event files, for the tests: every record's length and CRC-32C
   checked, each Event's step, wall time and scalar (or file_version) decoded. Written from the format's
   description (TFRecord framing, the Event and Summary protocol buffers), apart from zt's writer. */
#ifndef ZT_TEST_EVENTS_H
#define ZT_TEST_EVENTS_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct test_event {
    double wall_time;
    int64_t step;
    char tag[1100];      /* the scalar's tag, or "" */
    char version[64];    /* file_version, or "" */
    float value;
    int has_value;
    char text[2048];     /* a text summary's string (cut to fit), with has_text */
    int has_text;
} test_event;

static inline uint32_t test_crc32c(const uint8_t *p, size_t n) {
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
            table[i] = c;
        }
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return ~c;
}

static inline uint32_t test_masked(const uint8_t *p, size_t n) {
    uint32_t c = test_crc32c(p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static inline uint64_t test_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* a varint at *p (before end): its value, *p moved past it; -1 in *ok on a malformed one */
static inline uint64_t test_varint(const uint8_t **p, const uint8_t *end, int *ok) {
    uint64_t v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    *ok = 0;
    return 0;
}

/* the fields of a Summary.Value: tag and simple_value */
static inline int test_value(const uint8_t *p, const uint8_t *end, test_event *ev) {
    int ok = 1;
    while (p < end && ok) {
        uint64_t key = test_varint(&p, end, &ok);
        if (key == 0x0a) {
            uint64_t n = test_varint(&p, end, &ok);
            if (!ok || n >= sizeof ev->tag || n > (uint64_t)(end - p)) return 0;
            memcpy(ev->tag, p, n), ev->tag[n] = 0, p += n;
        } else if (key == 0x15 && end - p >= 4) {
            uint32_t bits = (uint32_t)test_le(p, 4);
            memcpy(&ev->value, &bits, 4), ev->has_value = 1, p += 4;
        } else if (key == 0x42 || key == 0x4a) { /* tensor: its string_val (8) is the text; metadata: skipped */
            uint64_t n = test_varint(&p, end, &ok);
            if (!ok || n > (uint64_t)(end - p)) return 0;
            for (const uint8_t *q = p, *qe = p + n; key == 0x42 && q < qe && ok;) {
                uint64_t k = test_varint(&q, qe, &ok), m = test_varint(&q, qe, &ok); /* a varint, or a length */
                if ((k & 7) == 0) continue; /* dtype */
                if (!ok || (k & 7) != 2 || m > (uint64_t)(qe - q)) return 0;
                if (k == 0x42) {
                    size_t c = m < sizeof ev->text ? (size_t)m : sizeof ev->text - 1;
                    memcpy(ev->text, q, c), ev->text[c] = 0, ev->has_text = 1;
                }
                q += m;
            }
            p += n;
        } else {
            return 0;
        }
    }
    return ok;
}

/* Reads the events of the file at path into out (at most cap); returns how many, or -1 (a message in why) when a
   record is cut short, its CRC does not match, or an Event has a field these tests do not expect. */
static inline int test_read_events(const char *path, test_event *out, int cap, char *why, size_t why_size) {
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(why, why_size, "cannot open %s", path), -1;
    static uint8_t buf[1 << 20];
    size_t size = fread(buf, 1, sizeof buf, f);
    fclose(f);
    int n = 0;
    for (size_t at = 0; at < size; n++) {
        if (size - at < 12 || n == cap) return snprintf(why, why_size, "record %d: cut short or too many", n), -1;
        uint64_t len = test_le(buf + at, 8);
        if ((uint32_t)test_le(buf + at + 8, 4) != test_masked(buf + at, 8))
            return snprintf(why, why_size, "record %d: the length's CRC", n), -1;
        if (len > size - at - 16) return snprintf(why, why_size, "record %d: longer than the file", n), -1;
        const uint8_t *p = buf + at + 12, *end = p + len;
        if ((uint32_t)test_le(end, 4) != test_masked(p, len)) return snprintf(why, why_size, "record %d: the data's CRC", n), -1;
        at += 16 + len;
        test_event *ev = &out[n];
        memset(ev, 0, sizeof *ev);
        int ok = 1;
        while (p < end && ok) {
            uint64_t key = test_varint(&p, end, &ok), m;
            if (key == 0x09 && end - p >= 8) {
                uint64_t bits = test_le(p, 8);
                memcpy(&ev->wall_time, &bits, 8), p += 8;
            } else if (key == 0x10) {
                ev->step = (int64_t)test_varint(&p, end, &ok);
            } else if (key == 0x1a || key == 0x2a || key == 0x52) { /* file_version, summary, source_metadata */
                m = test_varint(&p, end, &ok);
                if (!ok || m > (uint64_t)(end - p)) break;
                if (key == 0x1a && m < sizeof ev->version) memcpy(ev->version, p, m);
                if (key == 0x2a) { /* Summary: one Value */
                    const uint8_t *q = p, *qe = p + m;
                    uint64_t k = test_varint(&q, qe, &ok), vn = test_varint(&q, qe, &ok);
                    ok = ok && k == 0x0a && vn == (uint64_t)(qe - q) && test_value(q, qe, ev);
                }
                p += m;
            } else {
                ok = 0;
            }
        }
        if (!ok || p != end) return snprintf(why, why_size, "record %d: an Event these tests do not read", n), -1;
    }
    return n;
}
#endif
