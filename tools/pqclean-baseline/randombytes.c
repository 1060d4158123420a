/*
 * Deterministic stand-in for PQClean's randombytes (common/randombytes.c
 * reads the OS): a byte counter, the same on AVR and on the host, so that
 * the two builds must produce the same keys, ciphertext and secrets.
 * Byte n of the stream (over all calls) is n mod 256. Not random: for
 * measurement and known-answer comparison only.
 */
#include <stddef.h>
#include <stdint.h>

#include "randombytes.h"

static uint8_t next_byte;

int randombytes(uint8_t *output, size_t n) {
    for (size_t i = 0; i < n; i++) {
        output[i] = next_byte++;
    }
    return 0;
}
