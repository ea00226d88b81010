#include "textflag.h"

// func prefetchSlots(slots unsafe.Pointer, mask uint64, hashes []uint64)
TEXT ·prefetchSlots(SB), NOSPLIT, $0-40
	MOVQ slots+0(FP), AX
	MOVQ mask+8(FP), BX
	MOVQ hashes_base+16(FP), SI
	MOVQ hashes_len+24(FP), CX
	TESTQ CX, CX
	JEQ done
loop:
	MOVQ (SI), DX
	ANDQ BX, DX
	SHLQ $5, DX // slots are 32 bytes
	PREFETCHT0 (AX)(DX*1)
	ADDQ $8, SI
	DECQ CX
	JNZ loop
done:
	RET
