package dialect

import "math/bits"

// PostgreSQL's hash functions of integers and intervals (hashint2,
// hashint4, hashint8, interval_hash), computed as PostgreSQL computes
// them, so that a value hashed here equals the one PostgreSQL gives: Bob
// Jenkins' lookup3 final mix of one 32-bit word (hash_bytes_uint32).

// hashUint32 is PostgreSQL's hash_bytes_uint32.
func hashUint32(k uint32) int32 {
	a := uint32(0x9e3779b9) + 4 + 3923095
	b, c := a, a
	a += k
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return int32(c)
}

// HashInt4 is hashint4 (and hashint2, which hashes the same value alike).
func HashInt4(v int32) int32 { return hashUint32(uint32(v)) }

// HashInt8 is hashint8: the low half xor the high half (its complement for
// a negative value), so that a bigint hashes as the integer of the same
// value does.
func HashInt8(v int64) int32 {
	lo, hi := uint32(v), uint32(v>>32)
	if v >= 0 {
		lo ^= hi
	} else {
		lo ^= ^hi
	}
	return hashUint32(lo)
}

// IntervalHash is interval_hash: hashint8 of the low 64 bits of the
// interval's span in microseconds, a month counting 30 days and a day 24
// hours, so that intervals equal to PostgreSQL ('30 days' and '1 month')
// hash alike.
func IntervalHash(months, days int32, micros int64) int32 {
	span := (int64(months)*30+int64(days))*86_400_000_000 + micros // wraps as the int128's low half does
	return HashInt8(span)
}
