package compaction

import "testing"

// TestOptions_WithDefaults checks that MaxSpaceAmp's zero takes its
// default here, the one place that applies it (kv hands the zero down),
// and that a set or negative value is kept.
func TestOptions_WithDefaults(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{0, DefaultMaxSpaceAmp},
		{1.5, 1.5},
		{-1, -1},
	}
	for _, tt := range tests {
		if got := (&Options{MaxSpaceAmp: tt.in}).withDefaults().MaxSpaceAmp; got != tt.want {
			t.Errorf("MaxSpaceAmp %g: resolved to %g, want %g", tt.in, got, tt.want)
		}
	}
	if got := (*Options)(nil).withDefaults(); got.MaxSpaceAmp != DefaultMaxSpaceAmp ||
		got.TargetFileSize != DefaultTargetFileSize || got.FlushSplitBytes != 2*DefaultTargetFileSize {
		t.Errorf("nil options resolved to %+v", got)
	}
}
