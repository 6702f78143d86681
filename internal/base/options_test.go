package base

import "testing"

func TestSetDefault(t *testing.T) {
	for _, tc := range []struct{ v, def, want int64 }{
		{v: 0, def: 7, want: 7},
		{v: -3, def: 7, want: 7},
		{v: 1, def: 7, want: 1},
		{v: 9, def: 7, want: 9},
	} {
		v := tc.v
		SetDefault(&v, tc.def)
		if v != tc.want {
			t.Errorf("SetDefault(%d, %d) = %d, want %d", tc.v, tc.def, v, tc.want)
		}
	}
}
