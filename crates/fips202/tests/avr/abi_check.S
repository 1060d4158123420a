/* uint8_t keccak_abi_check(uint64_t *state): loads a pattern into every
 * callee-saved register, calls keccak_f1600_avr, and returns the number of
 * registers (of r2-r17, r28, r29, plus r1 != 0) that changed. */
	.text
	.global keccak_abi_check
keccak_abi_check:
	push r2
	push r3
	push r4
	push r5
	push r6
	push r7
	push r8
	push r9
	push r10
	push r11
	push r12
	push r13
	push r14
	push r15
	push r16
	push r17
	push r28
	push r29
	.irp n, 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,28,29
	ldi r30, 0x5a + \n
	mov r\n, r30
	.endr
	call keccak_f1600_avr
	clr r24
	tst r1
	breq 1f
	inc r24
1:
	.irp n, 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,28,29
	ldi r30, 0x5a + \n
	cpse r\n, r30
	inc r24
	.endr
	pop r29
	pop r28
	pop r17
	pop r16
	pop r15
	pop r14
	pop r13
	pop r12
	pop r11
	pop r10
	pop r9
	pop r8
	pop r7
	pop r6
	pop r5
	pop r4
	pop r3
	pop r2
	clr r25
	clr r1
	ret
