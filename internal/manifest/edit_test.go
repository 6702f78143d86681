package manifest

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/record"
	"github.com/cockroachdb/pebble/vfs"
)

// meta returns a table's metadata with the given bounds, written as
// InternalKey.String writes them; it panics on a bad bound, which is a
// mistake in the test itself.
func meta(num base.FileNum, smallest, largest string) *FileMetadata {
	return metaKeys(num, mustParseKey(smallest), mustParseKey(largest))
}

// metaKeys returns a table's metadata with the given bounds; its other
// fields derive from num so that round trips can tell tables apart.
func metaKeys(num base.FileNum, s, l base.InternalKey) *FileMetadata {
	return &FileMetadata{
		FileNum:        num,
		Size:           uint64(num) * 100,
		Smallest:       s,
		Largest:        l,
		SmallestSeqNum: min(s.SeqNum(), l.SeqNum()),
		LargestSeqNum:  max(s.SeqNum(), l.SeqNum()),
		NumEntries:     uint64(num) * 3,
		FilterBytes:    uint64(num) * 7,
	}
}

// mustParseKey parses "userkey#seq,KIND" with base.ParseInternalKey and
// panics on an error.
func mustParseKey(s string) base.InternalKey {
	k, err := base.ParseInternalKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

func TestVersionEdit_RoundTrip(t *testing.T) {
	full := &FileMetadata{
		FileNum: 1<<40 + 3, Size: 1<<63 + 1,
		Smallest:       base.MakeInternalKey([]byte("\x00a"), base.SeqNumMax, base.KindSet),
		Largest:        base.MakeInternalKey([]byte("zz\xff"), 0, base.KindDelete),
		SmallestSeqNum: 0, LargestSeqNum: base.SeqNumMax,
		NumEntries: 1<<64 - 1, FilterBytes: 12345,
	}
	tests := []struct {
		name string
		edit VersionEdit
	}{
		{"empty", VersionEdit{}},
		{"comparer", VersionEdit{ComparerName: "leveldb.BytewiseComparator"}},
		{"log-num", VersionEdit{LogNum: 7}},
		{"next-file-num", VersionEdit{NextFileNum: 1 << 50}},
		{"last-seq-num", VersionEdit{LastSeqNum: base.SeqNumMax}},
		{"recyclable-log-num", VersionEdit{RecyclableLogNum: 5}},
		{"closed-log", VersionEdit{ClosedLogs: []ClosedLog{{Num: 12, Size: 1 << 40}}}},
		{"closed-log-empty", VersionEdit{ClosedLogs: []ClosedLog{{Num: 1}}}},
		{"closed-logs", VersionEdit{ClosedLogs: []ClosedLog{{Num: 3, Size: 70}, {Num: 5, Size: 1 << 20}, {Num: 9, Size: 12}}}},
		{"deleted", VersionEdit{DeletedFiles: map[DeletedFileEntry]bool{
			{Level: 0, FileNum: 3}: true, {Level: 6, FileNum: 1 << 60}: true}}},
		{"new-file-every-field", VersionEdit{NewFiles: []NewFileEntry{{Level: 6, Meta: full}}}},
		{"ingested-file", VersionEdit{NewFiles: []NewFileEntry{{Level: 6, Meta: &FileMetadata{
			FileNum: 8, Size: 99, Smallest: base.MakeInternalKey([]byte("m"), 9, base.KindSet),
			Largest: base.MakeInternalKey([]byte("p"), 9, base.KindSet), SmallestSeqNum: 9, LargestSeqNum: 9,
			NumEntries: 3, GlobalSeqNum: 9}}}}},
		{"new-file-empty-user-keys", VersionEdit{NewFiles: []NewFileEntry{{Level: 0,
			Meta: &FileMetadata{FileNum: 1, Smallest: base.MakeInternalKey([]byte{}, 0, 0), Largest: base.MakeInternalKey([]byte{}, 0, 0)}}}}},
		{"everything", VersionEdit{
			ComparerName: "c", LogNum: 4, NextFileNum: 9, LastSeqNum: 77, RecyclableLogNum: 3,
			ClosedLogs:   []ClosedLog{{Num: 4, Size: 4096}},
			DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: 2}: true},
			NewFiles: []NewFileEntry{
				{Level: 2, Meta: meta(5, "a#3,SET", "c#9,DEL")},
				{Level: 2, Meta: meta(6, "d#1,SET", "f#1,SET")},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := tt.edit.Encode()
			var got VersionEdit
			if err := got.Decode(enc); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.edit) {
				t.Fatalf("round trip:\n got  %+v\n want %+v", got, tt.edit)
			}
			if got.String() != tt.edit.String() {
				t.Fatalf("String differs:\n%s\nvs\n%s", got.String(), tt.edit.String())
			}
		})
	}
}

func TestVersionEdit_Decode_SharesNoMemory(t *testing.T) {
	e := VersionEdit{ComparerName: "cmp", NewFiles: []NewFileEntry{{Level: 1, Meta: meta(1, "a#1,SET", "b#2,SET")}}}
	enc := e.Encode()
	var got VersionEdit
	if err := got.Decode(enc); err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		enc[i] = 0xee
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("decoded edit changed with its input: %+v", got)
	}
}

func TestVersionEdit_Encode_Deterministic(t *testing.T) {
	e := VersionEdit{DeletedFiles: map[DeletedFileEntry]bool{}}
	for i := range 50 {
		e.DeletedFiles[DeletedFileEntry{Level: i % NumLevels, FileNum: base.FileNum(i)}] = true
	}
	want := string(e.Encode())
	for range 10 {
		if got := string(e.Encode()); got != want {
			t.Fatal("Encode is not deterministic")
		}
	}
}

func TestVersionEdit_Decode_Errors(t *testing.T) {
	uv := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	valid := (&VersionEdit{NewFiles: []NewFileEntry{{Level: 1, Meta: meta(5, "a#3,SET", "c#9,DEL")}}}).Encode()
	tests := []struct {
		name string
		buf  []byte
		want string
	}{
		{"unknown-tag", uv(99, 1), "unknown tag 99 at byte 0"},
		{"zero-tag", uv(tagLogNum, 1, 0), "unknown tag 0 at byte 2"},
		{"truncated-tag", []byte{0x80}, "bad or truncated tag at byte 0"},
		{"overlong-varint", []byte{tagLogNum, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "bad or truncated log number at byte 1"},
		{"missing-value", uv(tagNextFileNum), "bad or truncated next file number at byte 1"},
		{"seq-out-of-range", uv(tagLastSeqNum, uint64(base.SeqNumMax)+1), "last sequence number out of range at byte 1"},
		{"comparer-too-long", append(uv(tagComparer, 10), "abc"...), "comparer name longer than the edit at byte 1"},
		{"deleted-bad-level", uv(tagDeletedFile, NumLevels, 1), "level 7 out of range at byte 1"},
		{"deleted-truncated", uv(tagDeletedFile, 1), "bad or truncated file number at byte 2"},
		{"new-file-short-key", append(uv(tagNewFile, 1, 5, 100, 3), "abc"...), "bad smallest key at byte 4"},
		{"new-file-bad-kind", append(uv(tagNewFile, 1, 5, 100, 9), "a\x07\x00\x00\x00\x00\x00\x00\x00"...), "bad smallest key at byte 4"},
		{"new-file-truncated", valid[:len(valid)-1], "bad or truncated filter size"},
		{"closed-log-zero", uv(tagClosedLog, 0, 5), "closed log number 0 at byte 1"},
		{"closed-log-truncated", uv(tagClosedLog, 3), "bad or truncated closed log size at byte 2"},
		{"closed-log-size-out-of-range", uv(tagClosedLog, 3, math.MaxUint64), "closed log size out of range at byte 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := VersionEdit{LogNum: 3}
			err := e.Decode(tt.buf)
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("err = %v, want corruption", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "manifest: version edit:") {
				t.Fatalf("err = %q, want it to contain %q", err, tt.want)
			}
			if !reflect.DeepEqual(e, VersionEdit{}) {
				t.Fatalf("failed Decode left %+v", e)
			}
		})
	}
}

func TestVersionEdit_String(t *testing.T) {
	e := VersionEdit{
		ComparerName: "leveldb.BytewiseComparator", LogNum: 4, NextFileNum: 13, LastSeqNum: 9, RecyclableLogNum: 4,
		ClosedLogs:   []ClosedLog{{Num: 10, Size: 4096}, {Num: 11, Size: 300}},
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: 7}: true, {Level: 0, FileNum: 8}: true},
		NewFiles:     []NewFileEntry{{Level: 1, Meta: meta(12, "a#5,SET", "k#3,DEL")}},
	}
	want := `comparer leveldb.BytewiseComparator
log-num 000004
next-file-num 000013
last-seq-num 9
recyclable-log-num 000004
closed-log 000010 size=4096
closed-log 000011 size=300
del L0 000008
del L1 000007
add L1 000012:[a#5,SET-k#3,DEL] size=1200 seqs=3-5 entries=36 filter=84
`
	if got := e.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// goldenManifest is the golden MANIFEST shared by the module's packages
// (see testdata/golden/README.md).
const goldenManifest = "../../testdata/golden/manifest/MANIFEST-000002"

// goldenEdits returns the encoded edits of the golden MANIFEST.
func goldenEdits(f *testing.F) [][]byte {
	file, err := vfs.Default.Open(goldenManifest)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	var edits [][]byte
	r := record.NewReader(file, goldenManifest)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return edits
		}
		if err != nil {
			f.Fatal(err)
		}
		edits = append(edits, rec)
	}
}

func FuzzVersionEditDecode(f *testing.F) {
	for _, e := range goldenEdits(f) {
		f.Add(e)
	}
	f.Add([]byte{})
	f.Add([]byte{tagLogNum, 5, tagNextFileNum, 9, 0x80})
	f.Add((&VersionEdit{
		ComparerName: "leveldb.BytewiseComparator", LogNum: 4, NextFileNum: 13, LastSeqNum: 9,
		DeletedFiles: map[DeletedFileEntry]bool{{Level: 1, FileNum: 7}: true},
		NewFiles:     []NewFileEntry{{Level: 1, Meta: meta(12, "a#5,SET", "k#3,DEL")}},
	}).Encode())
	ingested := meta(14, "m#9,SET", "p#9,SET")
	ingested.SmallestSeqNum, ingested.LargestSeqNum, ingested.GlobalSeqNum = 9, 9, 9
	f.Add((&VersionEdit{NewFiles: []NewFileEntry{{Level: 6, Meta: ingested}}}).Encode())
	f.Add((&VersionEdit{ClosedLogs: []ClosedLog{{Num: 14, Size: 300}, {Num: 15, Size: 4 << 20}}, NextFileNum: 16}).Encode())
	f.Fuzz(func(t *testing.T, buf []byte) {
		var e VersionEdit
		if err := e.Decode(buf); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error does not wrap ErrCorruption: %v", err)
			}
			return
		}
		var again VersionEdit
		if err := again.Decode(e.Encode()); err != nil {
			t.Fatalf("re-decoding an accepted edit: %v", err)
		}
		if !reflect.DeepEqual(e, again) {
			t.Fatalf("round trip differs:\n%+v\n%+v", e, again)
		}
	})
}
