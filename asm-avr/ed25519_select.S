; Constant-time selection of one precomputed point from a row of the
; fixed-base table of crates/x25519-avr (src/edwards.rs, BASE_TABLE):
;
;   void ed25519_select_avr(uint8_t out[96], const uint8_t *row, int8_t digit);
;
; row is the flash byte address of 8 entries of 96 bytes (.progmem.data,
; below 64 KB, read with lpm); out receives entry |digit| - 1, or the
; neutral element (1, 1, 0) for digit 0 (|digit| <= 8; the caller applies
; the sign). |digit| = (digit ^ s) - s with s the sign byte, and every entry
; is read and merged under a mask (0xFF for the wanted entry, 0 otherwise):
; the same instructions and addresses whatever the digit is, so the cycle
; count does not depend on it. The reference is
; edwards::select_niels_portable.
;
; Registers (avr-gcc ABI): out r25:r24, row r23:r22, digit r20; only
; call-clobbered registers are used (r18-r27, r30, r31, r0), r1 stays 0.

	.text
	.global ed25519_select_avr
	.type ed25519_select_avr, @function
ed25519_select_avr:
	; out = neutral element: 96 zero bytes, then out[0] = out[32] = 1.
	movw r26, r24
	ldi r18, 96
1:	st X+, r1
	dec r18
	brne 1b
	ldi r18, 1
	movw r26, r24
	st X, r18
	adiw r26, 32
	st X, r18
	movw r30, r22		; Z walks the row, entry after entry
	mov r21, r20		; |digit|: s = 0 or 0xFF from the sign bit
	lsl r21
	sbc r21, r21
	eor r20, r21
	sub r20, r21
	ldi r19, 1		; k = the entry's index (1..8)
2:	; mask = 0xFF if |digit| == k: (|digit| ^ k) - 1 borrows only for 0.
	mov r21, r20
	eor r21, r19
	subi r21, 1
	sbc r21, r21
	movw r26, r24
	ldi r18, 24		; 96 bytes, 4 a pass
3:	.rept 4
	lpm r0, Z+
	ld r22, X
	eor r0, r22
	and r0, r21
	eor r22, r0
	st X+, r22
	.endr
	dec r18
	brne 3b
	inc r19
	cpi r19, 9
	brne 2b
	ret
	.size ed25519_select_avr, . - ed25519_select_avr
