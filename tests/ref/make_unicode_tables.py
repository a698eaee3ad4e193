#!/usr/bin/env python3
"""The Unicode data zt's tokenizers need, as the C tables in zt.h (>>tokenizer): each code point's general
category (\\p{Lu}, \\p{N}, ... in the pre-tokenizers' regular expressions; the table holds where each run of
one category starts, the category's index in CATEGORIES in its low 5 bits; ASCII's in a table of their own), the
code points of white space (\\s: White_Space); and for the NFC normalizer, the canonical decompositions (one
level; Hangul is computed), the primary compositions, and the canonical combining classes.

    python3 tests/ref/make_unicode_tables.py > /tmp/tables.c    (then replace the tables in zt.h)

Python's unicodedata gives the categories (its Unicode version is printed in the comment)."""
import sys
import unicodedata

WHITE_SPACE = [0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
               0x205F, 0x3000]


# zt's order (zt__uni_cat's results): the letters, the marks, the numbers, then the rest, as the Unicode standard
# lists them; unassigned code points are Cn
CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
              "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"]


def categories():
    out, prev = [], None
    for cp in range(0x110000):
        c = CATEGORIES.index(unicodedata.category(chr(cp)))
        if c != prev:
            out.append(cp << 5 | c)
            prev = c
    emit_items(f"static const uint32_t zt__uni_cat_runs[] = {{ /* {len(out)} runs: first code point << 5 | category */",
               [f" 0x{v:x}," for v in out])
    ascii_cats = [CATEGORIES.index(unicodedata.category(chr(cp))) for cp in range(128)]
    print("static const uint8_t zt__uni_cat_ascii[128] = { /* the same, looked up */")
    for k in range(0, 128, 24):
        print("    " + ", ".join(str(c) for c in ascii_cats[k:k + 24]) + ",")
    print("};")


def ranges(pred):
    out, start = [], None
    for cp in range(0x110000 + 1):
        inside = cp < 0x110000 and pred(cp)
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            out.append((start, cp - 1))
            start = None
    return out


def emit_rows(name, rows, width, what="rows"):
    emit_items(f"static const uint32_t {name}[][{width}] = {{ /* {len(rows)} {what} */",
               [" {" + ", ".join(f"0x{v:x}" for v in r) + "}," for r in rows])


def emit_items(head, items):
    """a C array: its first line, then the items filling lines of 118 characters"""
    print(head)
    line = "   "
    for item in items:
        if len(line) + len(item) > 118:
            print(line)
            line = "   "
        line += item
    print(line)
    print("};")


def nfc_tables():
    decomp, comp = [], []
    for cp in range(0x110000):
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        decomp.append((cp, parts[0], parts[1] if len(parts) > 1 else 0))
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            comp.append((parts[0], parts[1], cp))
    comp.sort()
    ccc, start = [], None
    for cp in range(0x110001):
        c = unicodedata.combining(chr(cp)) if cp < 0x110000 else 0
        if start is not None and c != cls:
            ccc.append((start, cp - 1, cls))
            start = None
        if c and start is None:
            start, cls = cp, c
    emit_rows("zt__uni_decomp", decomp, 3)
    emit_rows("zt__uni_compose", comp, 3)
    emit_rows("zt__uni_ccc", ccc, 3)


def main():
    print(f"/* made by tests/ref/make_unicode_tables.py from Unicode {unicodedata.unidata_version} */")
    categories()
    emit_rows("zt__uni_space", ranges(lambda c: c in WHITE_SPACE), 2, "ranges")
    nfc_tables()


if __name__ == "__main__":
    sys.exit(main())
