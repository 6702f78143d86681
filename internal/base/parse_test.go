package base

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseInternalKey(t *testing.T) {
	tests := []struct {
		in   string
		want InternalKey
	}{
		{"a#5,SET", MakeInternalKey([]byte("a"), 5, KindSet)},
		{"a#0,DEL", MakeInternalKey([]byte("a"), 0, KindDelete)},
		{"key03#25,RANGEDEL", MakeInternalKey([]byte("key03"), 25, KindRangeDelete)},
		{"#1,SET", MakeInternalKey([]byte{}, 1, KindSet)},
		{"a.b#7,SET", MakeInternalKey([]byte("a.b"), 7, KindSet)},
		{"x#y#3,DEL", MakeInternalKey([]byte("x#y"), 3, KindDelete)},
		{"a,b#2,SET", MakeInternalKey([]byte("a,b"), 2, KindSet)},
		{"k#72057594037927935,SET", MakeInternalKey([]byte("k"), SeqNumMax, KindSet)},
	}
	for _, tt := range tests {
		got, err := ParseInternalKey(tt.in)
		if err != nil {
			t.Errorf("ParseInternalKey(%q): %v", tt.in, err)
			continue
		}
		if !bytes.Equal(got.UserKey, tt.want.UserKey) || got.Trailer != tt.want.Trailer {
			t.Errorf("ParseInternalKey(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("ParseInternalKey(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestParseInternalKey_Rejects(t *testing.T) {
	tests := []struct{ in, wantErr string }{
		{"", "want userkey#seq,KIND"},
		{"a.SET.5", "want userkey#seq,KIND"},
		{"a#5", "want userkey#seq,KIND"},
		{"a#5,PUT", `unknown kind "PUT"`},
		{"a#5,KIND(7)", `unknown kind "KIND(7)"`},
		{"a#5,set", `unknown kind "set"`},
		{"a#5,SET,", `unknown kind "SET,"`},
		{"a#,SET", "bad seqnum"},
		{"a#-1,SET", "bad seqnum"},
		{"a#+1,SET", "bad seqnum"},
		{"a#05,SET", "bad seqnum"},
		{"a#max,SET", "bad seqnum"},
		{"a#18446744073709551616,SET", "bad seqnum"},
		{"a#72057594037927936,SET", "exceeds the largest"},
	}
	for _, tt := range tests {
		k, err := ParseInternalKey(tt.in)
		if err == nil {
			t.Errorf("ParseInternalKey(%q) = %s, want an error", tt.in, k)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "base: ") {
			t.Errorf("ParseInternalKey(%q) = %v, want an error containing %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestParseKind(t *testing.T) {
	for k := Kind(0); k <= KindMax; k++ {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", k.String(), got, err, k)
		}
	}
	if _, err := ParseKind(Kind(KindMax + 1).String()); err == nil {
		t.Errorf("ParseKind accepted %q", Kind(KindMax+1).String())
	}
}

// FuzzParseInternalKey checks that ParseInternalKey and InternalKey.String
// are inverses both ways: every key of a known kind survives String then
// Parse, and every string Parse accepts is the String of what it returns.
func FuzzParseInternalKey(f *testing.F) {
	f.Add([]byte("a"), uint64(5), uint8(KindSet), "a#5,SET")
	f.Add([]byte("x#y"), uint64(SeqNumMax), uint8(KindRangeDelete), "x#y#0,DEL")
	f.Add([]byte{}, uint64(0), uint8(KindDelete), "#007,SET")
	f.Fuzz(func(t *testing.T, user []byte, seq uint64, kind uint8, s string) {
		k := MakeInternalKey(user, SeqNum(seq)&SeqNumMax, Kind(kind)%(KindMax+1))
		got, err := ParseInternalKey(k.String())
		if err != nil {
			t.Fatalf("ParseInternalKey(%q): %v", k.String(), err)
		}
		if !bytes.Equal(got.UserKey, k.UserKey) || got.Trailer != k.Trailer {
			t.Fatalf("ParseInternalKey(%q) = %s, want %s", k.String(), got, k)
		}
		if parsed, err := ParseInternalKey(s); err == nil && parsed.String() != s {
			t.Fatalf("ParseInternalKey(%q) = %s, whose String differs", s, parsed)
		}
	})
}
