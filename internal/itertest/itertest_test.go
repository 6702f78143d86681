package itertest_test

import (
	"strings"
	"testing"

	"github.com/bloomkv/bloomkv/internal/base"
	"github.com/bloomkv/bloomkv/internal/itertest"
	"github.com/bloomkv/bloomkv/memtable"
)

func TestRunOps(t *testing.T) {
	m := memtable.New(nil)
	m.Add(base.MakeInternalKey([]byte("a"), 1, base.KindSet), []byte("1"))
	m.Add(base.MakeInternalKey([]byte("c"), 2, base.KindSet), []byte("3"))
	tests := []struct {
		script, want, err string
	}{
		{script: "first\nnext\nnext\n\nlast\nprev", want: "a#1,SET:1\nc#2,SET:3\n.\nc#2,SET:3\na#1,SET:1\n"},
		{script: "seek-ge b\nseek-lt b\nseek-lt a", want: "c#2,SET:3\na#1,SET:1\n.\n"},
		{script: "seek-ge", err: "seek-ge takes one key"},
		{script: "first\njump", err: `unknown operation "jump"`},
	}
	for _, tt := range tests {
		it := m.NewIter(nil, nil)
		got, err := itertest.RunOps(it, tt.script, itertest.KeyValue)
		it.Close()
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want one containing %q", tt.script, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.script, err)
		case got != tt.want:
			t.Errorf("%q:\ngot\n%swant\n%s", tt.script, got, tt.want)
		}
	}
}

func TestUserSplit(t *testing.T) {
	tests := []struct{ key, prefix string }{
		{"user/00000042/email", "user/00000042/"},
		{"user/00000042/", "user/00000042/"},
		{"user/00000042", "user/00000042"},
		{"user/", "user/"},
		{"apple", "apple"},
		{"", ""},
		{"a/b/c/d", "a/b/"},
	}
	for _, tt := range tests {
		if got := tt.key[:itertest.UserSplit([]byte(tt.key))]; got != tt.prefix {
			t.Errorf("UserSplit(%q) keeps %q, want %q", tt.key, got, tt.prefix)
		}
	}
}
