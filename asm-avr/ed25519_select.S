; Constant-time selection of one precomputed point from a row of the
; fixed-base table of crates/x25519-avr (src/edwards.rs, BASE_TABLE):
;
;   void ed25519_select_avr(uint8_t out[96], const uint8_t *row, int8_t digit);
;
; row is the flash byte address of 8 entries of 96 bytes (.progmem.data,
; below 64 KB, read with lpm); out receives entry |digit| - 1, or the
; neutral element (1, 1, 0) for digit 0 (|digit| <= 8; the caller applies
; the sign; a larger |digit| also gives the neutral element, as the
; portable reference does). |digit| = (digit ^ s) - s with s the sign byte;
; mask_k = 0xFF if |digit| == k (k = 1..8): (|digit| - k) - 1 borrows only
; for |digit| == k; the neutral element's mask is the complement of their
; OR. Byte by byte, out[j] = OR_k (mask_k & entry_k[j]): the eight
; candidates of a byte lie 96 bytes apart in flash, so Z steps by 96 and
; back. The same instructions and addresses whatever the digit is: the
; cycle count does not depend on it. The reference is
; edwards::select_niels_portable.
;
; Registers (avr-gcc ABI): out r25:r24, row r23:r22, digit r20. Masks
; r18-r25 (k = 1..8), the byte being built r0, the flash byte r1 (cleared
; on return), the byte counter r17 (saved).

	.text
	.global ed25519_select_avr
	.type ed25519_select_avr, @function
ed25519_select_avr:
	push r17
	movw r26, r24		; X = out
	movw r30, r22		; Z = entry 1, byte 0
	mov r21, r20		; |digit|: s = 0 or 0xFF from the sign bit
	lsl r21
	sbc r21, r21
	eor r20, r21
	sub r20, r21
	mov r17, r20		; |digit|, while r20 becomes mask_3
	mov r18, r17
	subi r18, 1
	subi r18, 1		; borrows iff |digit| == 1
	sbc r18, r18
	mov r19, r17
	subi r19, 2
	subi r19, 1		; borrows iff |digit| == 2
	sbc r19, r19
	mov r21, r17
	subi r21, 4
	subi r21, 1		; borrows iff |digit| == 4
	sbc r21, r21
	mov r22, r17
	subi r22, 5
	subi r22, 1		; borrows iff |digit| == 5
	sbc r22, r22
	mov r23, r17
	subi r23, 6
	subi r23, 1		; borrows iff |digit| == 6
	sbc r23, r23
	mov r24, r17
	subi r24, 7
	subi r24, 1		; borrows iff |digit| == 7
	sbc r24, r24
	mov r25, r17
	subi r25, 8
	subi r25, 1		; borrows iff |digit| == 8
	sbc r25, r25
	mov r20, r17
	subi r20, 3
	subi r20, 1		; borrows iff |digit| == 3
	sbc r20, r20
	ldi r17, 96		; bytes
1:	clr r0
	lpm r1, Z		; entry 1, byte j
	and r1, r18
	or r0, r1
	subi r30, lo8(-96)
	sbci r31, hi8(-96)
	lpm r1, Z		; entry 2, byte j
	and r1, r19
	or r0, r1
	subi r30, lo8(-96)
	sbci r31, hi8(-96)
	lpm r1, Z		; entry 3, byte j
	and r1, r20
	or r0, r1
	subi r30, lo8(-96)
	sbci r31, hi8(-96)
	lpm r1, Z		; entry 4, byte j
	and r1, r21
	or r0, r1
	subi r30, lo8(-96)
	sbci r31, hi8(-96)
	lpm r1, Z		; entry 5, byte j
	and r1, r22
	or r0, r1
	subi r30, lo8(-96)
	sbci r31, hi8(-96)
	lpm r1, Z		; entry 6, byte j
	and r1, r23
	or r0, r1
	subi r30, lo8(-96)
	sbci r31, hi8(-96)
	lpm r1, Z		; entry 7, byte j
	and r1, r24
	or r0, r1
	subi r30, lo8(-96)
	sbci r31, hi8(-96)
	lpm r1, Z		; entry 8, byte j
	and r1, r25
	or r0, r1
	st X+, r0
	subi r30, lo8(7 * 96 - 1)	; back to entry 1, byte j + 1
	sbci r31, hi8(7 * 96 - 1)
	dec r17
	brne 1b
	; The neutral element (1, 1, 0) where no mask is set: out[0], out[32] |= 1.
	or r18, r19
	or r18, r20
	or r18, r21
	or r18, r22
	or r18, r23
	or r18, r24
	or r18, r25
	com r18
	andi r18, 1
	sbiw r26, 32
	sbiw r26, 32		; X = out + 32
	ld r0, X
	or r0, r18
	st X, r0
	sbiw r26, 32		; X = out
	ld r0, X
	or r0, r18
	st X, r0
	clr r1
	pop r17
	ret
	.size ed25519_select_avr, . - ed25519_select_avr
