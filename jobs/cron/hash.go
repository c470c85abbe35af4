package cron

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// "H" fields (Jenkins' notation): a value chosen from a hash of the
// schedule's key, so a thousand jobs written "0 H * * * ?" spread over the
// hour while each keeps one fixed minute, the same in every process.
//
//	H          one value of the field's range (day-of-month: 1-28, so
//	           that every month has it)
//	H(a-b)     one value of a-b
//	H/n        every n-th value from an offset in 0..n-1 (from the field's
//	           minimum)
//	H(a-b)/n   every n-th value of a-b from an offset in 0..n-1
//
// Each field hashes the key with its own index, so "H H * * * ?" does not
// put the same number in seconds and minutes. The year field takes no H.

// hashOf is a well-mixed 64-bit hash of key and field: FNV-1a, then the
// SplitMix64 finalizer (FNV alone keeps short keys' low bits close).
func hashOf(key string, field int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	_, _ = h.Write([]byte{0, byte(field)})
	return Mix(h.Sum64())
}

// Mix is the SplitMix64 finalizer: a bijection of uint64 whose output bits
// each depend on every input bit.
func Mix(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// Hash is the 64-bit hash the jitter of a key is drawn from (fields use
// their own); exported so that one function decides a job's jitter.
func Hash(key string) uint64 { return hashOf(key, 0xff) }

// resolveHash rewrites one "H" item of field f into the plain syntax, or
// returns a message.
func (s *Schedule) resolveHash(f int, item string) (string, string) {
	if f == fYear {
		return "", fmt.Sprintf("H is not allowed in the year field (%q)", item)
	}
	s.hashed = true
	lo, hi := fieldBounds[f].min, fieldBounds[f].max
	rest := item[1:]
	if f == fDom && rest == "" {
		hi = 28
	}
	if strings.HasPrefix(rest, "(") {
		body, after, ok := strings.Cut(rest[1:], ")")
		if !ok {
			return "", fmt.Sprintf("unclosed H range in %q (use H(a-b))", item)
		}
		a, b, isRange := strings.Cut(body, "-")
		if !isRange {
			return "", fmt.Sprintf("H range %q must be a-b", body)
		}
		var msg string
		if lo, msg = parseValue(f, a); msg != "" {
			return "", msg + fmt.Sprintf(" in %q", item)
		}
		if hi, msg = parseValue(f, b); msg != "" {
			return "", msg + fmt.Sprintf(" in %q", item)
		}
		if lo > hi {
			return "", fmt.Sprintf("H range %q goes backwards", body)
		}
		rest = after
	}
	span := hi - lo + 1
	h := hashOf(s.key, f)
	switch {
	case rest == "":
		return fmt.Sprint(lo + int(h%uint64(span))), ""
	case strings.HasPrefix(rest, "/"):
		n, ok := atoi(rest[1:])
		if !ok || n < 1 {
			return "", fmt.Sprintf("invalid step %q in %q", rest[1:], item)
		}
		if n > span {
			return "", fmt.Sprintf("step %d in %q out of range 1-%d", n, item, span)
		}
		return fmt.Sprintf("%d-%d/%d", lo+int(h%uint64(n)), hi, n), ""
	}
	return "", fmt.Sprintf("invalid H item %q (use H, H(a-b), H/n or H(a-b)/n)", item)
}

// Hashed reports whether the expression has an "H" field, so that its
// instants depend on the key it was parsed for.
func (s *Schedule) Hashed() bool { return s.hashed }
