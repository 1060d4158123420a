/* Simulator harness for the AVR field arithmetic (built by
 * ../../src/avr_tests.rs). Request: op (1 = a*b, 2 = a^2, 3 = a+b, 4 = a-b,
 * 5 = a*c with c = b[0..3] little-endian, 6 = select the entry of
 * signed digit a[1] of row a[0] of the fixed-base table, 7 = a^-1, 0 ends),
 * a[32], b[32]; or op 8 (one ladder step; 9: with x1 a small constant),
 * the workspace's four slots, x1 and x1's halves' difference and mask (177
 * bytes), swap.
 * Reply: r of the timed call, r of a second, ABI-checked call, the ABI byte
 * (r is 96 bytes for op 6, the four slots (128) for op 8, 32 otherwise). */
#include "../../../../asm-avr/test/uart.h"

extern void fe25519_mul_avr(uint8_t *r, const uint8_t *a, const uint8_t *b);
extern void fe25519_sqr_avr(uint8_t *r, const uint8_t *a);
extern void fe25519_mul_small_avr(uint8_t *r, const uint8_t *a, uint32_t c);
extern void fe25519_add_avr(uint8_t *r, const uint8_t *a, const uint8_t *b);
extern void fe25519_sub_avr(uint8_t *r, const uint8_t *a, const uint8_t *b);
extern void fe25519_invert_avr(uint8_t *r, const uint8_t *a);
extern void ed25519_select_avr(uint8_t *out, const uint8_t *row, int8_t digit);
extern const uint8_t base_table[];
extern void fe25519_ladder_step(uint8_t *ws, uint8_t swap, uint8_t small);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static uint8_t a[32], b[32], r[96], r2[96];
/* The ladder step's workspaces (x2, z2, x3, z3, four temporaries, x1, the
 * scratch, x1's difference), one for each call, and its swap and small
 * flags. */
static uint8_t ws[433], ws2[433], swap, small;

static void step(void *w, uint8_t op)
{
	(void)op;
	fe25519_ladder_step((uint8_t *)w, swap, small);
}

static void call(void *out, uint8_t op)
{
	if (op == 1)
		fe25519_mul_avr((uint8_t *)out, a, b);
	else if (op == 2)
		fe25519_sqr_avr((uint8_t *)out, a);
	else if (op == 5)
		fe25519_mul_small_avr((uint8_t *)out, a,
				      (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16);
	else if (op == 3)
		fe25519_add_avr((uint8_t *)out, a, b);
	else if (op == 4)
		fe25519_sub_avr((uint8_t *)out, a, b);
	else if (op == 7)
		fe25519_invert_avr((uint8_t *)out, a);
	else /* last, so the field routines' timed dispatch is as before */
		ed25519_select_avr((uint8_t *)out, base_table + 768u * a[0], (int8_t)a[1]);
}

int main(void)
{
	uart_init();
	for (;;) {
		uint8_t op = get();
		if (op == 0)
			break;
		if (op == 8 || op == 9) {
			for (uint16_t i = 0; i < 177; i++) {
				uint8_t v = get();
				/* slots at 0..127, x1 at 256, its difference at 416 */
				uint16_t at = i < 128 ? i : i < 160 ? i + 128 : i + 256;
				ws[at] = v;
				ws2[at] = v;
			}
			swap = get();
			small = op == 9;
			__asm__ volatile("" : "+r"(op) : : "memory");
			GPIOR0 = op;
			step(ws, op);
			GPIOR0 = op | 0x80;
			__asm__ volatile("" ::: "memory");
			uint8_t abi = avr_abi_check(step, ws2, op);
			for (uint8_t i = 0; i < 128; i++)
				put(ws[i]);
			for (uint8_t i = 0; i < 128; i++)
				put(ws2[i]);
			put(abi);
			continue;
		}
		for (uint8_t i = 0; i < 32; i++)
			a[i] = get();
		for (uint8_t i = 0; i < 32; i++)
			b[i] = get();
		__asm__ volatile("" : "+r"(op) : : "memory");
		GPIOR0 = op;
		call(r, op);
		GPIOR0 = op | 0x80;
		__asm__ volatile("" ::: "memory");
		uint8_t abi = avr_abi_check(call, r2, op);
		uint8_t len = op == 6 ? 96 : 32;
		for (uint8_t i = 0; i < len; i++)
			put(r[i]);
		for (uint8_t i = 0; i < len; i++)
			put(r2[i]);
		put(abi);
	}
	stop();
	return 0;
}
