/* Simulator harness for the AVR NTT routines (built by ../avr_ntt.rs).
 * Request: routine id (0xFF ends), 256 little-endian twiddles, 2 factors
 * for the inverse's last layer, n coefficients. Ids 0-2 forward, 3-5 inverse.
 * Ids 6-8 and 12 base multiplication: then also b and out (n each) and a
 * mode byte (bit 0: accumulate; bit 1: out aliases a; bit 2: out aliases
 * b); the twiddles are the γ table and the first factor is 2^32 mod q.
 * Id 9 base inversion (q = 769): γ table, 2^32 mod q, a; reply a⁻¹ and the
 * number of non-invertible blocks. Ids 10-12: forward, inverse and base
 * multiplication of Saber's q = 7681 ring (8 layers). Ids 13, 14: the
 * small-input forward transforms (ntt_fwd_small_…) of q = 769 and q = 3329,
 * n = 512.
 * Id | 0x10: the same routine in plain Montgomery arithmetic (_mont);
 * id | 0x20: in K-RED2X arithmetic (_kred2x, q = 769 only: ids 1, 4, 7, 9).
 * Id | 0x40: no tables follow; the previous request's are used again (they
 * stay where they were received, so a routine that wrote to its tables
 * would fail the next case).
 * Reply: the n transformed coefficients. The call is a GPIOR0 window.
 *
 * Linked with ntt_forward.S (tables in SRAM) or ntt_forward_flash.S (tables
 * in flash, read with lpm) and with a table file the test generates: for
 * the flash routines it holds, in flash, every table the test sends
 * (flash_table_count of them; none for the SRAM build). The harness then
 * passes the flash copy equal to the table it received, and stops if there
 * is none. */
#include <avr/pgmspace.h>
#include "../../../../asm-avr/test/uart.h"

/* 256 twiddles and the 2 factors of a request, in flash. */
extern const int16_t flash_tables[][258] PROGMEM;
extern const uint8_t flash_table_count;

/* The routines of one Montgomery variant: V is empty or _mont. */
#define DECLARE(V) \
	extern void ntt_fwd_q3329_n256##V(int16_t *a, const int16_t *zetas); \
	extern void ntt_fwd_q769_n512##V(int16_t *a, const int16_t *zetas); \
	extern void ntt_fwd_q3329_n512##V(int16_t *a, const int16_t *zetas); \
	extern void ntt_fwd_small_q769_n512##V(int16_t *a, const int16_t *zetas); \
	extern void ntt_fwd_small_q3329_n512##V(int16_t *a, const int16_t *zetas); \
	extern void ntt_inv_q3329_n256##V(int16_t *a, const int16_t *zetas_inv, const int16_t *last); \
	extern void ntt_inv_q769_n512##V(int16_t *a, const int16_t *zetas_inv, const int16_t *last); \
	extern void ntt_inv_q3329_n512##V(int16_t *a, const int16_t *zetas_inv, const int16_t *last); \
	extern void ntt_basemul_q3329_n256##V(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc); \
	extern void ntt_basemul_q769_n512##V(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc); \
	extern void ntt_basemul_acc_q769_n512##V(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc); \
	extern void ntt_fwd_q7681_n256##V(int16_t *a, const int16_t *zetas); \
	extern void ntt_inv_q7681_n256##V(int16_t *a, const int16_t *zetas_inv, const int16_t *last); \
	extern void ntt_basemul_q7681_n256##V(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc); \
	extern void ntt_basemul_acc_q7681_n256##V(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc); \
	extern uint8_t ntt_baseinv_q769_n512##V(int16_t *a, const int16_t *g, int16_t s2); \
	extern void ntt_basemul_q3329_n512##V(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc); \
	extern void ntt_basemul_acc_q3329_n512##V(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc);
DECLARE()
DECLARE(_mont)
extern void ntt_fwd_q769_n512_kred2x(int16_t *a, const int16_t *zetas);
extern void ntt_fwd_small_q769_n512_kred2x(int16_t *a, const int16_t *zetas);
extern void ntt_inv_q769_n512_kred2x(int16_t *a, const int16_t *zetas_inv, const int16_t *last);
extern void ntt_basemul_q769_n512_kred2x(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc);
extern void ntt_basemul_acc_q769_n512_kred2x(const int16_t *a, const int16_t *b, int16_t *out, const int16_t *g, int16_t s2, uint8_t acc);
extern uint8_t ntt_baseinv_q769_n512_kred2x(int16_t *a, const int16_t *g, int16_t s2);

/* One dispatch for both Montgomery variants: V is empty or _mont. Degree
 * 4 and degree 1 base multiplications accumulate in their _acc routine. */
#define DISPATCH(V) \
	switch (id) { \
	case 0: ntt_fwd_q3329_n256##V(poly, tz); break; \
	case 1: ntt_fwd_q769_n512##V(poly, tz); break; \
	case 2: ntt_fwd_q3329_n512##V(poly, tz); break; \
	case 3: ntt_inv_q3329_n256##V(poly, tz, tl); break; \
	case 4: ntt_inv_q769_n512##V(poly, tz, tl); break; \
	case 5: ntt_inv_q3329_n512##V(poly, tz, tl); break; \
	case 6: ntt_basemul_q3329_n256##V(poly, poly_b, dst, tz, last[0], add); break; \
	case 7: (add ? ntt_basemul_acc_q769_n512##V : ntt_basemul_q769_n512##V)(poly, poly_b, dst, tz, last[0], add); break; \
	case 8: (add ? ntt_basemul_acc_q3329_n512##V : ntt_basemul_q3329_n512##V)(poly, poly_b, dst, tz, last[0], add); break; \
	case 9: zero_norms = ntt_baseinv_q769_n512##V(poly, tz, last[0]); break; \
	case 10: ntt_fwd_q7681_n256##V(poly, tz); break; \
	case 11: ntt_inv_q7681_n256##V(poly, tz, tl); break; \
	case 12: (add ? ntt_basemul_acc_q7681_n256##V : ntt_basemul_q7681_n256##V)(poly, poly_b, dst, tz, last[0], add); break; \
	case 13: ntt_fwd_small_q769_n512##V(poly, tz); break; \
	default: ntt_fwd_small_q3329_n512##V(poly, tz); break; \
	}

static int16_t zetas[256];
static int16_t last[2];
static uint8_t have_tables;
static uint8_t flash_index;
static int16_t poly[512];
static int16_t poly_b[512];
static int16_t poly_out[512];

static void read16(int16_t *dst, uint16_t count)
{
	for (uint16_t i = 0; i < count; i++) {
		uint8_t lo = get();
		dst[i] = (int16_t)(lo | ((uint16_t)get() << 8));
	}
}

int main(void)
{
	uart_init();
	for (;;) {
		uint8_t id = get();
		uint8_t same_tables = id & 0x40;
		id &= 0x3F;
		uint8_t variant = id & 0x30;
		id &= 0x0F;
		if (id > 14 || variant == 0x30 ||
		    (variant == 0x20 && id != 1 && id != 4 && id != 7 && id != 9 && id != 13))
			break;
		uint16_t n = id >= 13 ? 512 : id >= 10 || (id % 3 == 0 && id != 9) ? 256 : 512;
		uint8_t is_base_mul = (id >= 6 && id <= 8) || id == 12;
		uint8_t zero_norms = 0;
		if (same_tables && !have_tables)
			break; /* nothing to reuse: the test fails */
		if (!same_tables) {
			read16(zetas, 256);
			read16(last, 2);
		}
		read16(poly, n);
		uint8_t acc = 0;
		if (is_base_mul) {
			read16(poly_b, n);
			read16(poly_out, n);
			acc = get();
		}
		/* acc bit 1: write the product over a (out aliases a); bit 2: over
		 * b (out aliases b); the arguments are fixed before the window, and
		 * memory barriers keep the compiler from moving work into it */
		int16_t *dst = acc & 2 ? poly : acc & 4 ? poly_b : poly_out;
		const int16_t *tz = zetas, *tl = last;
		if (flash_table_count) {
			if (!same_tables) {
				uint8_t i = 0;
				while (i < flash_table_count &&
				       (memcmp_P(zetas, flash_tables[i], sizeof zetas) ||
					memcmp_P(last, &flash_tables[i][256], sizeof last)))
					i++;
				if (i == flash_table_count)
					break; /* no flash copy of this table: the test fails */
				flash_index = i;
			}
			tz = flash_tables[flash_index];
			tl = &flash_tables[flash_index][256];
		}
		have_tables = 1;
		uint8_t add = acc & 1;
		__asm__ volatile("" : "+r"(dst), "+r"(add), "+r"(tz), "+r"(tl) : : "memory");
		uint8_t marker = 1 + id + (variant >> 4) * 15;
		GPIOR0 = marker;
		if (variant == 0) {
			DISPATCH()
		} else if (variant == 0x10) {
			DISPATCH(_mont)
		} else {
			switch (id) {
			case 1: ntt_fwd_q769_n512_kred2x(poly, tz); break;
			case 4: ntt_inv_q769_n512_kred2x(poly, tz, tl); break;
			case 7: (add ? ntt_basemul_acc_q769_n512_kred2x : ntt_basemul_q769_n512_kred2x)(poly, poly_b, dst, tz, last[0], add); break;
			case 13: ntt_fwd_small_q769_n512_kred2x(poly, tz); break;
			default: zero_norms = ntt_baseinv_q769_n512_kred2x(poly, tz, last[0]); break;
			}
		}
		GPIOR0 = marker | 0x80;
		if (is_base_mul && dst != poly)
			for (uint16_t i = 0; i < n; i++)
				poly[i] = dst[i];
		__asm__ volatile("" ::: "memory");
		for (uint16_t i = 0; i < n; i++) {
			put((uint8_t)poly[i]);
			put((uint8_t)((uint16_t)poly[i] >> 8));
		}
		if (id == 9)
			put(zero_norms);
	}
	stop();
	return 0;
}
