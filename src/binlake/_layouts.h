/* binlake/_layouts.h: the stored-value arithmetic both compiled extensions need (_speedups.c decodes row images to
 * Python values and dump text, _columnar.c to Arrow buffers): byte order, the proleptic Gregorian calendar and the
 * digit groups of a NEWDECIMAL.  Header-only (static inline), included by each extension's one .c file.
 *
 * Layouts: Field_*::pack in sql/field.cc; strings/decimal.cc decimal2bin (DECIMAL: the integer part's leading
 * digits, its 9-digit groups in 4 bytes each, the fraction's 9-digit groups, its trailing digits; dig2bytes).
 *
 * Example:
 *     unsigned char gb[8], gd[8]; int size;
 *     decimal_groups(10, 4, gb, gd, 8, &size);   // DECIMAL(14,4): groups of 1, 9 and 4 digits in 1+4+2 bytes
 */
#ifndef BINLAKE_LAYOUTS_H
#define BINLAKE_LAYOUTS_H

#include <stdint.h>

static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};

/* ---- bytes ------------------------------------------------------------------------------------------------- */

static inline uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static inline uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* ---- calendar ---------------------------------------------------------------------------------------------- */

static inline int leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static inline int days_in_month(int64_t y, int64_t m) {
    static const int dim[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : dim[m];
}

/* A date Python's datetime.date accepts (years 1 to 9999): others are the readers' InvalidDate. */
static inline int valid_date(int64_t y, int64_t m, int64_t d) {
    return y >= 1 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= days_in_month(y, m);
}

/* ---- DECIMAL ----------------------------------------------------------------------------------------------- */

/* The digit groups of DECIMAL(intg + scale, scale) as decimal2bin stores them, most significant first: bytes and
 * digits of each, in gbytes/gdigits (room for `room` groups), and their total bytes in *size.  Returns the number of
 * groups, or -1 (nothing written) when there would be more than `room`. */
static inline int decimal_groups(int intg, int scale, unsigned char *gbytes, unsigned char *gdigits, int room,
                                 int *size) {
    int need = (intg % 9 != 0) + intg / 9 + scale / 9 + (scale % 9 != 0), n = 0;
    *size = 0;
    if (need > room) return -1;
    if (intg % 9) {
        gbytes[n] = (unsigned char)DIG2BYTES[intg % 9];
        gdigits[n++] = (unsigned char)(intg % 9);
    }
    for (int k = 0; k < intg / 9 + scale / 9; k++) {
        gbytes[n] = 4;
        gdigits[n++] = 9;
    }
    if (scale % 9) {
        gbytes[n] = (unsigned char)DIG2BYTES[scale % 9];
        gdigits[n++] = (unsigned char)(scale % 9);
    }
    for (int k = 0; k < n; k++) *size += gbytes[k];
    return n;
}

#endif
