package base

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseKind returns the kind that Kind.String names: "SET", "DEL" or
// "RANGEDEL". Any other name, "KIND(n)" included, is an error.
func ParseKind(s string) (Kind, error) {
	for k := Kind(0); k <= KindMax; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("base: unknown kind %q (want SET, DEL or RANGEDEL)", s)
}

// ParseInternalKey parses an internal key written as InternalKey.String
// writes it, "userkey#seq,KIND", and is its exact inverse: for every key k
// of a known kind, ParseInternalKey(k.String()) returns k, and every string
// it accepts is the String of the key it returns. The user key is what
// precedes the last '#' (so it may hold '#' itself); seq is a decimal
// number no larger than SeqNumMax, without sign or leading zeros; KIND is
// one that ParseKind accepts. Anything else is an error naming s; tests and
// tools use it to read keys from scripts.
func ParseInternalKey(s string) (InternalKey, error) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return InternalKey{}, fmt.Errorf("base: internal key %q: want userkey#seq,KIND", s)
	}
	seqStr, kindStr, ok := strings.Cut(s[i+1:], ",")
	if !ok {
		return InternalKey{}, fmt.Errorf("base: internal key %q: want userkey#seq,KIND", s)
	}
	seq, err := parseSeqNum(seqStr)
	if err != nil {
		return InternalKey{}, fmt.Errorf("base: internal key %q: %w", s, err)
	}
	kind, err := ParseKind(kindStr)
	if err != nil {
		return InternalKey{}, fmt.Errorf("base: internal key %q: %w", s, err)
	}
	return MakeInternalKey([]byte(s[:i]), seq, kind), nil
}

// parseSeqNum parses a sequence number written in canonical decimal, as
// strconv.FormatUint writes it.
func parseSeqNum(s string) (SeqNum, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	switch {
	case err != nil || (len(s) > 1 && s[0] == '0'):
		return 0, fmt.Errorf("bad seqnum %q: want a decimal number without leading zeros", s)
	case SeqNum(n) > SeqNumMax:
		return 0, fmt.Errorf("seqnum %d exceeds the largest, %d", n, SeqNumMax)
	}
	return SeqNum(n), nil
}
