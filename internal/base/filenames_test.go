package base

import "testing"

func TestFilename_RoundTrip(t *testing.T) {
	tests := []struct {
		typ  FileType
		num  FileNum
		name string
	}{
		{FileTypeLog, 7, "000007.log"},
		{FileTypeTable, 1234567, "1234567.sst"},
		{FileTypeManifest, 3, "MANIFEST-000003"},
		{FileTypeCurrent, 0, "CURRENT"},
		{FileTypeLock, 0, "LOCK"},
		{FileTypeTemp, 12, "000012.tmp"},
	}
	for _, tt := range tests {
		if got := MakeFilename(tt.typ, tt.num); got != tt.name {
			t.Errorf("MakeFilename(%d, %d) = %q, want %q", tt.typ, tt.num, got, tt.name)
		}
		typ, num, ok := ParseFilename(tt.name)
		if !ok || typ != tt.typ || num != tt.num {
			t.Errorf("ParseFilename(%q) = %d, %d, %v", tt.name, typ, num, ok)
		}
	}
}

func TestParseFilename_Rejects(t *testing.T) {
	for _, name := range []string{"", "foo", "000001.txt", "x.log", "MANIFEST-", "MANIFEST-x", ".sst", "LOCK.old",
		"7.log", "0000007.log", "01234567.sst", "MANIFEST-3", "+00007.log", "000012.tmp.x"} {
		if _, _, ok := ParseFilename(name); ok {
			t.Errorf("ParseFilename(%q) accepted", name)
		}
	}
}
