//go:build !purego

#include "textflag.h"

// func stringBlocksAVX2(b []byte) (n int, closed bool, carry uint64)
//
// See stringBlocks in strscan_amd64.go for the contract. Registers:
//
//	SI, DX, AX  the body, its length, the block's start in it
//	R10         1 when the block's first byte is escaped (carried in)
//	R11         the block's first four bytes that must be hex digits
//	            (of a \u escape begun in the block before)
//	Y15 Y14 Y13 '"', '\\' and 0x1f in every byte
//	Y12         0x0f in every byte
//	Y11 Y10 Y9  the UTF-8 tables (utf8Table1, 2, 3)
//	Y8 Y7       the escape letter tables (escLetterHigh, escLetterLow)
//	Y6          the last 32 bytes of the block before (0 at first)
TEXT ·stringBlocksAVX2(SB), NOSPLIT, $16-48
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	XORQ AX, AX
	XORQ R10, R10
	XORQ R11, R11
	MOVQ $0, letters-8(SP)
	MOVQ $0, utf8-16(SP)
	VPXOR Y6, Y6, Y6
	MOVL $0x22222222, BX
	MOVQ BX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x5c5c5c5c, BX
	MOVQ BX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x1f1f1f1f, BX
	MOVQ BX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x0f0f0f0f, BX
	MOVQ BX, X12
	VPBROADCASTD X12, Y12
	VBROADCASTI128 utf8Table1<>(SB), Y11
	VBROADCASTI128 utf8Table2<>(SB), Y10
	VBROADCASTI128 utf8Table3<>(SB), Y9
	VBROADCASTI128 escLetterHigh<>(SB), Y8
	VBROADCASTI128 escLetterLow<>(SB), Y7

loop:
	LEAQ 64(AX), BX
	CMPQ BX, DX
	JHI  stop
	VMOVDQU (SI)(AX*1), Y0
	VMOVDQU 32(SI)(AX*1), Y1

	// R8: quotes; R9: backslashes; R13: control characters.
	VPCMPEQB Y0, Y15, Y2
	VPCMPEQB Y1, Y15, Y3
	VPMOVMSKB Y2, R8
	VPMOVMSKB Y3, BX
	SHLQ $32, BX
	ORQ  BX, R8
	VPCMPEQB Y0, Y14, Y2
	VPCMPEQB Y1, Y14, Y3
	VPMOVMSKB Y2, R9
	VPMOVMSKB Y3, BX
	SHLQ $32, BX
	ORQ  BX, R9
	VPMINUB Y0, Y13, Y2
	VPCMPEQB Y0, Y2, Y2
	VPMINUB Y1, Y13, Y3
	VPCMPEQB Y1, Y3, Y3
	VPMOVMSKB Y2, R13
	VPMOVMSKB Y3, BX
	SHLQ $32, BX
	ORQ  BX, R13

	// The escapes (block.go's escapes, with the carry): BX = s, the
	// backslashes that are not escaped by the block before; CX = code;
	// DI = the carry out (an escape starting at the last byte); CX =
	// the escaped bytes.
	MOVQ R10, BX
	NOTQ BX
	ANDQ R9, BX
	LEAQ (BX)(BX*1), CX
	MOVQ $0xaaaaaaaaaaaaaaaa, DI
	ORQ  DI, CX
	SUBQ BX, CX
	XORQ DI, CX
	MOVQ CX, DI
	ANDQ BX, DI
	SHRQ $63, DI
	NOTQ BX
	ANDQ BX, CX
	ORQ  R10, CX

	// BX = the quotes that end the string; R9 = the escaped bytes that
	// are neither a quote nor a backslash; R8 = the bytes up to and with
	// the first closing quote (all when there is none).
	MOVQ CX, BX
	NOTQ BX
	ANDQ R8, BX
	ORQ  R8, R9
	NOTQ R9
	ANDQ CX, R9
	MOVQ $-1, R8
	TESTQ BX, BX
	JZ   noend
	LEAQ -1(BX), R8
	XORQ BX, R8

noend:
	ANDQ R8, R13
	JNZ  stop

	// Escape letters and \u digits, when an escape other than \" and \\
	// or a \u begun before needs them: R12 = the hex digits the block
	// owes the next one.
	// The escape letters are checked in every block for 16 blocks after
	// one that needed it (letters-8(SP) counts them down), so that a run
	// of text with an escape in most blocks does not branch on each.
	XORQ R12, R12
	ORQ  R11, R9
	CMPQ letters-8(SP), $0
	JG   checkletters
	TESTQ R9, R9
	JZ   utf8

checkletters:
	MOVQ letters-8(SP), R13
	DECQ R13
	MOVQ $16, R14
	TESTQ R9, R9
	CMOVQNE R14, R13
	MOVQ R13, letters-8(SP)

	// R13 = the bytes that are no letter that may follow a backslash but
	// 'u' (by nibble: escLetterHigh & escLetterLow is 0); when no escaped
	// byte is one and no \u is begun before, the escapes are good.
	VPXOR Y5, Y5, Y5
	VPAND Y0, Y12, Y2
	VPSRLW $4, Y0, Y3
	VPAND Y3, Y12, Y3
	VPSHUFB Y2, Y7, Y2
	VPSHUFB Y3, Y8, Y3
	VPAND Y2, Y3, Y2
	VPCMPEQB Y5, Y2, Y2
	VPMOVMSKB Y2, R13
	VPAND Y1, Y12, Y2
	VPSRLW $4, Y1, Y3
	VPAND Y3, Y12, Y3
	VPSHUFB Y2, Y7, Y2
	VPSHUFB Y3, Y8, Y3
	VPAND Y2, Y3, Y2
	VPCMPEQB Y5, Y2, Y2
	VPMOVMSKB Y2, R14
	SHLQ $32, R14
	ORQ  R14, R13
	ANDQ CX, R13
	ORQ  R11, R13
	JZ   utf8

	// Y2, Y3: the class of each byte, by its high and low nibble
	// (escHigh & escLow): bits 0-3 a letter that may follow a backslash,
	// 4-5 a hex digit, 6 'u'.
	VBROADCASTI128 escHigh<>(SB), Y4
	VBROADCASTI128 escLow<>(SB), Y5
	VPAND Y0, Y12, Y2
	VPSHUFB Y2, Y5, Y2
	VPSRLW $4, Y0, Y3
	VPAND Y3, Y12, Y3
	VPSHUFB Y3, Y4, Y3
	VPAND Y3, Y2, Y2
	VPSRLW $4, Y1, Y3
	VPAND Y3, Y12, Y3
	VPSHUFB Y3, Y4, Y3
	VPAND Y1, Y12, Y4
	VPSHUFB Y4, Y5, Y4
	VPAND Y4, Y3, Y3

	// R9 = U, the escaped 'u's.
	VPADDB Y2, Y2, Y4
	VPMOVMSKB Y4, R9
	VPADDB Y3, Y3, Y4
	VPMOVMSKB Y4, R13
	SHLQ $32, R13
	ORQ  R13, R9
	ANDQ CX, R9

	// R13 = the escaped bytes that are no letter.
	VPXOR Y5, Y5, Y5
	VPAND escLetter<>(SB), Y2, Y4
	VPCMPEQB Y5, Y4, Y4
	VPMOVMSKB Y4, R13
	VPAND escLetter<>(SB), Y3, Y4
	VPCMPEQB Y5, Y4, Y4
	VPMOVMSKB Y4, R14
	SHLQ $32, R14
	ORQ  R14, R13
	ANDQ CX, R13

	// CX = the bytes that are no hex digit.
	VPAND escHex<>(SB), Y2, Y4
	VPCMPEQB Y5, Y4, Y4
	VPMOVMSKB Y4, CX
	VPAND escHex<>(SB), Y3, Y4
	VPCMPEQB Y5, Y4, Y4
	VPMOVMSKB Y4, R14
	SHLQ $32, R14
	ORQ  R14, CX

	// R14 = the bytes that must be hex digits: the four after each U,
	// and those the block before owes.
	LEAQ (R9)(R9*1), R14
	ORQ  R9, R14
	LEAQ (R14*4), R12
	ORQ  R12, R14
	SHLQ $1, R14
	ORQ  R11, R14
	ANDQ CX, R14
	ORQ  R14, R13

	// R12 = those past the block: U|U>>1|U>>2|U>>3, shifted down by 60.
	MOVQ R9, R12
	SHRQ $1, R12
	ORQ  R9, R12
	MOVQ R12, R14
	SHRQ $2, R14
	ORQ  R14, R12
	SHRQ $60, R12

	ANDQ R8, R13
	JNZ  stop

utf8:
	// UTF-8 (Keiser and Lemire's lookup algorithm), in every block for 16
	// blocks after one with a byte that is not ASCII (utf8-16(SP) counts
	// them down): a block of ASCII after 16 of ASCII is valid.
	VPOR Y0, Y1, Y2
	VPMOVMSKB Y2, CX
	CMPQ utf8-16(SP), $0
	JG   utf8sticky
	TESTL CX, CX
	JZ   pass
	MOVQ $16, utf8-16(SP)
	JMP  utf8all

utf8sticky:
	MOVQ utf8-16(SP), R14
	DECQ R14
	MOVQ $16, R9
	TESTL CX, CX
	CMOVQNE R9, R14
	MOVQ R14, utf8-16(SP)
	JMP  utf8all

utf8all:
	// Y2 and Y5 = the errors of each half, a byte nonzero where the byte
	// does not go on from its three before.

	VPERM2I128 $0x21, Y0, Y6, Y3
	VPALIGNR $15, Y3, Y0, Y4
	VPSRLW $4, Y4, Y2
	VPAND Y12, Y2, Y2
	VPSHUFB Y2, Y11, Y2
	VPAND Y12, Y4, Y4
	VPSHUFB Y4, Y10, Y4
	VPAND Y4, Y2, Y2
	VPSRLW $4, Y0, Y4
	VPAND Y12, Y4, Y4
	VPSHUFB Y4, Y9, Y4
	VPAND Y4, Y2, Y2
	VPALIGNR $14, Y3, Y0, Y4
	VPALIGNR $13, Y3, Y0, Y3
	VPSUBUSB utf8Third<>(SB), Y4, Y4
	VPSUBUSB utf8Fourth<>(SB), Y3, Y3
	VPOR Y3, Y4, Y4
	VPAND utf8High<>(SB), Y4, Y4
	VPXOR Y4, Y2, Y2

	VPERM2I128 $0x21, Y1, Y0, Y3
	VPALIGNR $15, Y3, Y1, Y4
	VPSRLW $4, Y4, Y5
	VPAND Y12, Y5, Y5
	VPSHUFB Y5, Y11, Y5
	VPAND Y12, Y4, Y4
	VPSHUFB Y4, Y10, Y4
	VPAND Y4, Y5, Y5
	VPSRLW $4, Y1, Y4
	VPAND Y12, Y4, Y4
	VPSHUFB Y4, Y9, Y4
	VPAND Y4, Y5, Y5
	VPALIGNR $14, Y3, Y1, Y4
	VPALIGNR $13, Y3, Y1, Y3
	VPSUBUSB utf8Third<>(SB), Y4, Y4
	VPSUBUSB utf8Fourth<>(SB), Y3, Y3
	VPOR Y3, Y4, Y4
	VPAND utf8High<>(SB), Y4, Y4
	VPXOR Y4, Y5, Y5

	VPOR Y2, Y5, Y3
	VPTEST Y3, Y3
	JZ   pass
	// An error; past the closing quote it does not count.
	CMPQ R8, $-1
	JEQ  stop
	VPXOR Y3, Y3, Y3
	VPCMPEQB Y3, Y2, Y2
	VPMOVMSKB Y2, CX
	VPCMPEQB Y3, Y5, Y5
	VPMOVMSKB Y5, R9
	SHLQ $32, R9
	ORQ  R9, CX
	NOTQ CX
	ANDQ R8, CX
	JNZ  stop

pass:
	VMOVDQU Y1, Y6
	TESTQ BX, BX
	JNZ  closed
	MOVQ DI, R10
	MOVQ R12, R11
	ADDQ $64, AX
	JMP  loop

closed:
	BSFQ BX, BX
	LEAQ 1(AX)(BX*1), AX
	MOVQ AX, n+24(FP)
	MOVB $1, closed+32(FP)
	MOVQ $0, carry+40(FP)
	VZEROUPPER
	RET

stop:
	MOVQ AX, n+24(FP)
	MOVB $0, closed+32(FP)
	SHLQ $1, R11
	ORQ  R10, R11
	MOVQ R11, carry+40(FP)
	VZEROUPPER
	RET

// The three tables of Keiser and Lemire's UTF-8 lookup algorithm (as in
// simdjson), by the high nibble of the byte before, its low nibble and the
// high nibble of the byte. Bits: 1 too short, 2 too long, 4 overlong 3,
// 8 too large, 16 surrogate, 32 overlong 2, 64 too large 1000 or
// overlong 4, 128 two continuations.
DATA utf8Table1<>+0(SB)/8, $0x0202020202020202
DATA utf8Table1<>+8(SB)/8, $0x4915012180808080
GLOBL utf8Table1<>(SB), (NOPTR+RODATA), $16

DATA utf8Table2<>+0(SB)/8, $0xcbcbcb8b8383a3e7
DATA utf8Table2<>+8(SB)/8, $0xcbcbdbcbcbcbcbcb
GLOBL utf8Table2<>(SB), (NOPTR+RODATA), $16

DATA utf8Table3<>+0(SB)/8, $0x0101010101010101
DATA utf8Table3<>+8(SB)/8, $0x01010101babaaee6
GLOBL utf8Table3<>(SB), (NOPTR+RODATA), $16

// A byte from which one subtracts these (saturating) is 0x80 or more when
// it starts a character of three bytes or more, four bytes.
DATA utf8Third<>+0(SB)/8, $0x6060606060606060
DATA utf8Third<>+8(SB)/8, $0x6060606060606060
DATA utf8Third<>+16(SB)/8, $0x6060606060606060
DATA utf8Third<>+24(SB)/8, $0x6060606060606060
GLOBL utf8Third<>(SB), (NOPTR+RODATA), $32

DATA utf8Fourth<>+0(SB)/8, $0x7070707070707070
DATA utf8Fourth<>+8(SB)/8, $0x7070707070707070
DATA utf8Fourth<>+16(SB)/8, $0x7070707070707070
DATA utf8Fourth<>+24(SB)/8, $0x7070707070707070
GLOBL utf8Fourth<>(SB), (NOPTR+RODATA), $32

DATA utf8High<>+0(SB)/8, $0x8080808080808080
DATA utf8High<>+8(SB)/8, $0x8080808080808080
DATA utf8High<>+16(SB)/8, $0x8080808080808080
DATA utf8High<>+24(SB)/8, $0x8080808080808080
GLOBL utf8High<>(SB), (NOPTR+RODATA), $32

// The class of a byte is escHigh[its high nibble] & escLow[its low
// nibble]: bit 0 '"' '/', 1 '\\', 2 'b' 'f' 'n', 3 'r' 't' 'u' (the
// letters that may follow a backslash, bits 0-3: escLetter); 4 '0'-'9', 5
// 'A'-'F' 'a'-'f' (hex digits: escHex); 6 'u'.
DATA escHigh<>+0(SB)/8, $0x4824022010010000
DATA escHigh<>+8(SB)/8, $0x0000000000000000
GLOBL escHigh<>(SB), (NOPTR+RODATA), $16

DATA escLow<>+0(SB)/8, $0x10347838303d3010
DATA escLow<>+8(SB)/8, $0x0104000200001010
GLOBL escLow<>(SB), (NOPTR+RODATA), $16

DATA escLetter<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA escLetter<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA escLetter<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA escLetter<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL escLetter<>(SB), (NOPTR+RODATA), $32

DATA escHex<>+0(SB)/8, $0x3030303030303030
DATA escHex<>+8(SB)/8, $0x3030303030303030
DATA escHex<>+16(SB)/8, $0x3030303030303030
DATA escHex<>+24(SB)/8, $0x3030303030303030
GLOBL escHex<>(SB), (NOPTR+RODATA), $32

// escLetterHigh & escLetterLow, by nibble, is not 0 for the letters that
// may follow a backslash but 'u': bit 0 '"' '/', 1 '\\', 2 'b' 'f' 'n', 3
// 'r' 't'.
DATA escLetterHigh<>+0(SB)/8, $0x0804020000010000
DATA escLetterHigh<>+8(SB)/8, $0x0000000000000000
GLOBL escLetterHigh<>(SB), (NOPTR+RODATA), $16

DATA escLetterLow<>+0(SB)/8, $0x00040008000d0000
DATA escLetterLow<>+8(SB)/8, $0x0104000200000000
GLOBL escLetterLow<>(SB), (NOPTR+RODATA), $16


// func unquoteBlocksAVX2(out, raw []byte) (i, n int)
//
// See unquoteBlocks in strscan_amd64.go for the contract. Registers:
//
//	SI, DX, AX  raw, its length, the block's start in it
//	DI, BX      out, the decoding's end in it
//	R9          the block's address; R8 the start of the run at hand in it
//	R11         the address of unescapes
//	Y15 Y14     '\\' and 'u' in every byte
TEXT ·unquoteBlocksAVX2(SB), NOSPLIT, $0-64
	MOVQ out_base+0(FP), DI
	MOVQ raw_base+24(FP), SI
	MOVQ raw_len+32(FP), DX
	XORQ AX, AX
	XORQ BX, BX
	LEAQ ·unescapes(SB), R11
	MOVL $0x5c5c5c5c, CX
	MOVQ CX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x75757575, CX
	MOVQ CX, X14
	VPBROADCASTD X14, Y14

uloop:
	// A run may be copied from up to 64 bytes past the block: 128 bytes
	// must be left.
	LEAQ 128(AX), CX
	CMPQ CX, DX
	JHI  udone
	LEAQ (SI)(AX*1), R9
	VMOVDQU (R9), Y0
	VMOVDQU 32(R9), Y1
	VPCMPEQB Y0, Y15, Y2
	VPCMPEQB Y1, Y15, Y3
	VPOR Y2, Y3, Y4
	VPTEST Y4, Y4
	JNZ  uescapes
	VMOVDQU Y0, (DI)(BX*1)
	VMOVDQU Y1, 32(DI)(BX*1)
	ADDQ $64, AX
	ADDQ $64, BX
	JMP  uloop

uescapes:
	// R12 = the backslashes that start an escape; CX = the bytes they
	// escape but backslashes (block.go's escapes).
	VPMOVMSKB Y2, R8
	VPMOVMSKB Y3, CX
	SHLQ $32, CX
	ORQ  CX, R8
	LEAQ (R8)(R8*1), CX
	MOVQ $0xaaaaaaaaaaaaaaaa, R10
	ORQ  R10, CX
	SUBQ R8, CX
	XORQ R10, CX
	MOVQ CX, R12
	ANDQ R8, R12
	NOTQ R8
	ANDQ R8, CX

	// A \u escape is for the caller.
	VPCMPEQB Y0, Y14, Y2
	VPCMPEQB Y1, Y14, Y3
	VPMOVMSKB Y2, R8
	VPMOVMSKB Y3, R10
	SHLQ $32, R10
	ORQ  R10, R8
	TESTQ R8, CX
	JNZ  udone

	// An escape that starts at the block's last byte is the next block's:
	// R14 = the bytes the block passes, 63 or 64.
	MOVQ R12, R13
	SHRQ $63, R13
	BTRQ $63, R12
	MOVQ $64, R14
	SUBQ R13, R14
	XORQ R8, R8
	TESTQ R12, R12
	JZ   utail

uesc:
	// The run up to the escape at CX, 32 or 64 bytes stored (the next
	// store writes over the rest), then the escape's byte.
	BSFQ R12, CX
	VMOVDQU (R9)(R8*1), Y2
	VMOVDQU Y2, (DI)(BX*1)
	MOVQ CX, R10
	SUBQ R8, R10
	CMPQ R10, $32
	JLE  ushort
	VMOVDQU 32(R9)(R8*1), Y3
	VMOVDQU Y3, 32(DI)(BX*1)

ushort:
	ADDQ R10, BX
	MOVBLZX 1(R9)(CX*1), R10
	MOVB (R11)(R10*1), R10
	MOVB R10, (DI)(BX*1)
	INCQ BX
	LEAQ 2(CX), R8
	LEAQ -1(R12), R10
	ANDQ R10, R12
	JNZ  uesc

utail:
	VMOVDQU (R9)(R8*1), Y2
	VMOVDQU 32(R9)(R8*1), Y3
	VMOVDQU Y2, (DI)(BX*1)
	VMOVDQU Y3, 32(DI)(BX*1)
	ADDQ R14, BX
	SUBQ R8, BX
	ADDQ R14, AX
	JMP  uloop

udone:
	MOVQ AX, i+48(FP)
	MOVQ BX, n+56(FP)
	VZEROUPPER
	RET

// func unquoteBlocksAVX512(out, raw []byte) (i, n int)
//
// unquoteBlocksAVX2 with AVX-512 (BW, VBMI, VBMI2): a block with escapes
// costs the same whatever their number. Each backslash that starts an
// escape is replaced by the byte its escape stands for (unescapes of the
// byte after it, looked up for all 64 at once), the letters after them
// dropped (VPCOMPRESSB), and the block stored whole. Registers as there;
// Z13 and Z12 hold unescapes[:64] and unescapes[64:128].
TEXT ·unquoteBlocksAVX512(SB), NOSPLIT, $0-64
	MOVQ out_base+0(FP), DI
	MOVQ raw_base+24(FP), SI
	MOVQ raw_len+32(FP), DX
	XORQ AX, AX
	XORQ BX, BX
	MOVL $0x5c, CX
	VPBROADCASTB CX, Z15
	MOVL $0x75, CX
	VPBROADCASTB CX, Z14
	VMOVDQU64 ·unescapes+0(SB), Z13
	VMOVDQU64 ·unescapes+64(SB), Z12

zloop:
	LEAQ 128(AX), CX
	CMPQ CX, DX
	JHI  zdone
	LEAQ (SI)(AX*1), R9
	VMOVDQU64 (R9), Z0
	VPCMPEQB Z15, Z0, K1
	KMOVQ K1, R8
	TESTQ R8, R8
	JNZ  zescapes
	VMOVDQU64 Z0, (DI)(BX*1)
	ADDQ $64, AX
	ADDQ $64, BX
	JMP  zloop

zescapes:
	// R12 = the backslashes that start an escape; CX = the bytes they
	// escape but backslashes.
	LEAQ (R8)(R8*1), CX
	MOVQ $0xaaaaaaaaaaaaaaaa, R10
	ORQ  R10, CX
	SUBQ R8, CX
	XORQ R10, CX
	MOVQ CX, R12
	ANDQ R8, R12
	NOTQ R8
	ANDQ R8, CX

	// A \u escape is for the caller.
	VPCMPEQB Z14, Z0, K2
	KMOVQ K2, R10
	TESTQ R10, CX
	JNZ  zdone

	// An escape that starts at the block's last byte is the next block's:
	// R14 = the bytes the block passes, 63 or 64; R10 = the bytes it
	// keeps, all but the letters after the backslashes and such a last
	// backslash (whose letter R12<<1 drops).
	MOVQ R12, R13
	SHRQ $63, R13
	MOVQ $64, R14
	SUBQ R13, R14
	MOVQ R12, R10
	SHLQ $1, R10
	SHLQ $63, R13
	ORQ  R13, R10
	NOTQ R10

	// Z2 = unescapes of the byte after each (a letter is below 0x80: the
	// two tables take its seven bits); in place of each backslash.
	VMOVDQU64 1(R9), Z1
	VMOVDQA64 Z13, Z2
	VPERMT2B Z12, Z1, Z2
	KMOVQ R12, K3
	VMOVDQU8 Z2, K3, Z0
	KMOVQ R10, K4
	VPCOMPRESSB Z0, K4, Z3
	VMOVDQU64 Z3, (DI)(BX*1)
	POPCNTQ R10, R10
	ADDQ R10, BX
	ADDQ R14, AX
	JMP  zloop

zdone:
	MOVQ AX, i+48(FP)
	MOVQ BX, n+56(FP)
	VZEROUPPER
	RET

// func stringBlocksAVX512(b []byte) (n int, closed bool, carry uint64)
//
// stringBlocksAVX2 with AVX-512 (BW): a block is one register, its masks
// come straight from compares into mask registers, and the bytes before
// each byte (for UTF-8) from one VALIGNQ and three VPALIGNR. Registers as
// there, with Z in place of Y, and Z19 Z20 Z21 = 0x60, 0x70, 0x80 in every
// byte.
TEXT ·stringBlocksAVX512(SB), NOSPLIT, $16-48
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	XORQ AX, AX
	XORQ R10, R10
	XORQ R11, R11
	MOVQ $0, letters-8(SP)
	MOVQ $0, utf8-16(SP)
	VPXORQ Z6, Z6, Z6
	MOVL $0x22, BX
	VPBROADCASTB BX, Z15
	MOVL $0x5c, BX
	VPBROADCASTB BX, Z14
	MOVL $0x1f, BX
	VPBROADCASTB BX, Z13
	MOVL $0x0f, BX
	VPBROADCASTB BX, Z12
	MOVL $0x60, BX
	VPBROADCASTB BX, Z19
	MOVL $0x70, BX
	VPBROADCASTB BX, Z20
	MOVL $0x80, BX
	VPBROADCASTB BX, Z21
	VBROADCASTI32X4 utf8Table1<>(SB), Z11
	VBROADCASTI32X4 utf8Table2<>(SB), Z10
	VBROADCASTI32X4 utf8Table3<>(SB), Z9
	VBROADCASTI32X4 escLetterHigh<>(SB), Z8
	VBROADCASTI32X4 escLetterLow<>(SB), Z7

zsloop:
	LEAQ 64(AX), BX
	CMPQ BX, DX
	JHI  zsstop
	VMOVDQU64 (SI)(AX*1), Z0

	// R8: quotes; R9: backslashes; R13: control characters.
	VPCMPEQB Z15, Z0, K1
	KMOVQ K1, R8
	VPCMPEQB Z14, Z0, K2
	KMOVQ K2, R9
	VPCMPUB $2, Z13, Z0, K3
	KMOVQ K3, R13

	// The escapes, as stringBlocksAVX2.
	MOVQ R10, BX
	NOTQ BX
	ANDQ R9, BX
	LEAQ (BX)(BX*1), CX
	MOVQ $0xaaaaaaaaaaaaaaaa, DI
	ORQ  DI, CX
	SUBQ BX, CX
	XORQ DI, CX
	MOVQ CX, DI
	ANDQ BX, DI
	SHRQ $63, DI
	NOTQ BX
	ANDQ BX, CX
	ORQ  R10, CX
	MOVQ CX, BX
	NOTQ BX
	ANDQ R8, BX
	ORQ  R8, R9
	NOTQ R9
	ANDQ CX, R9
	MOVQ $-1, R8
	TESTQ BX, BX
	JZ   zsnoend
	LEAQ -1(BX), R8
	XORQ BX, R8

zsnoend:
	ANDQ R8, R13
	JNZ  zsstop
	// The escape letters are checked in every block for 16 blocks after
	// one that needed it (letters-8(SP) counts them down), so that a run
	// of text with an escape in most blocks does not branch on each.
	XORQ R12, R12
	ORQ  R11, R9
	CMPQ letters-8(SP), $0
	JG   zsletters
	TESTQ R9, R9
	JZ   zsutf8

zsletters:
	MOVQ letters-8(SP), R13
	DECQ R13
	MOVQ $16, R14
	TESTQ R9, R9
	CMOVQNE R14, R13
	MOVQ R13, letters-8(SP)

	// R13 = the escaped bytes that are no letter but 'u'.
	VPANDQ Z0, Z12, Z2
	VPSRLW $4, Z0, Z3
	VPANDQ Z3, Z12, Z3
	VPSHUFB Z2, Z7, Z2
	VPSHUFB Z3, Z8, Z3
	VPTESTNMB Z2, Z3, K5
	KMOVQ K5, R13
	ANDQ CX, R13
	ORQ  R11, R13
	JZ   zsutf8

	// Z2 = the class of each byte (escHigh & escLow).
	VBROADCASTI32X4 escHigh<>(SB), Z4
	VBROADCASTI32X4 escLow<>(SB), Z5
	VPANDQ Z0, Z12, Z2
	VPSHUFB Z2, Z5, Z2
	VPSRLW $4, Z0, Z3
	VPANDQ Z3, Z12, Z3
	VPSHUFB Z3, Z4, Z3
	VPANDQ Z3, Z2, Z2

	// R9 = U; R13 = the escaped bytes that are no letter; CX = the bytes
	// that are no hex digit.
	VPADDB Z2, Z2, Z3
	VPMOVB2M Z3, K6
	KMOVQ K6, R9
	ANDQ CX, R9
	MOVL $0x0f, R13
	VPBROADCASTB R13, Z4
	VPTESTNMB Z4, Z2, K5
	KMOVQ K5, R13
	ANDQ CX, R13
	MOVL $0x30, CX
	VPBROADCASTB CX, Z4
	VPTESTNMB Z4, Z2, K5
	KMOVQ K5, CX

	LEAQ (R9)(R9*1), R14
	ORQ  R9, R14
	LEAQ (R14*4), R12
	ORQ  R12, R14
	SHLQ $1, R14
	ORQ  R11, R14
	ANDQ CX, R14
	ORQ  R14, R13
	MOVQ R9, R12
	SHRQ $1, R12
	ORQ  R9, R12
	MOVQ R12, R14
	SHRQ $2, R14
	ORQ  R14, R12
	SHRQ $60, R12
	ANDQ R8, R13
	JNZ  zsstop

zsutf8:
	// So is UTF-8, after a block with a byte that is not ASCII
	// (utf8-16(SP)): a block of ASCII after 16 of ASCII is valid.
	VPMOVB2M Z0, K4
	KMOVQ K4, R13
	CMPQ utf8-16(SP), $0
	JG   zsutf8sticky
	TESTQ R13, R13
	JZ   zspass
	MOVQ $16, utf8-16(SP)
	JMP  zsutf8all

zsutf8sticky:
	MOVQ utf8-16(SP), R14
	DECQ R14
	MOVQ $16, R9
	TESTQ R13, R13
	CMOVQNE R9, R14
	MOVQ R14, utf8-16(SP)
	JMP  zsutf8all

zsutf8all:
	// Z3 = the 16 bytes before each lane; Z4 = prev1.
	VALIGNQ $6, Z6, Z0, Z3
	VPALIGNR $15, Z3, Z0, Z4
	VPSRLW $4, Z4, Z2
	VPANDQ Z12, Z2, Z2
	VPSHUFB Z2, Z11, Z2
	VPANDQ Z12, Z4, Z4
	VPSHUFB Z4, Z10, Z4
	VPANDQ Z4, Z2, Z2
	VPSRLW $4, Z0, Z4
	VPANDQ Z12, Z4, Z4
	VPSHUFB Z4, Z9, Z4
	VPANDQ Z4, Z2, Z2
	VPALIGNR $14, Z3, Z0, Z4
	VPALIGNR $13, Z3, Z0, Z3
	VPSUBUSB Z19, Z4, Z4
	VPSUBUSB Z20, Z3, Z3
	VPORQ Z3, Z4, Z4
	VPANDQ Z21, Z4, Z4
	VPXORQ Z4, Z2, Z2
	VPTESTMB Z2, Z2, K5
	KMOVQ K5, CX
	ANDQ R8, CX
	JNZ  zsstop

zspass:
	VMOVDQA64 Z0, Z6
	TESTQ BX, BX
	JNZ  zsclosed
	MOVQ DI, R10
	MOVQ R12, R11
	ADDQ $64, AX
	JMP  zsloop

zsclosed:
	BSFQ BX, BX
	LEAQ 1(AX)(BX*1), AX
	MOVQ AX, n+24(FP)
	MOVB $1, closed+32(FP)
	MOVQ $0, carry+40(FP)
	VZEROUPPER
	RET

zsstop:
	MOVQ AX, n+24(FP)
	MOVB $0, closed+32(FP)
	SHLQ $1, R11
	ORQ  R10, R11
	MOVQ R11, carry+40(FP)
	VZEROUPPER
	RET

