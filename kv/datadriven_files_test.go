package kv

import (
	"fmt"
	"strings"

	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/datadriven"
)

// runFiles runs the script commands of ingest and EstimateDiskUsage (see
// TestDataDriven).
func (h *scriptHarness) runFiles(td *datadriven.TestData) (string, error) {
	switch td.Cmd {
	case "build-ext":
		return "", h.buildExt("ext/"+td.CmdArgs[0].Key, td.Input)
	case "ingest":
		var paths []string
		for _, arg := range td.CmdArgs {
			paths = append(paths, "ext/"+arg.Key)
		}
		if err := h.db.Ingest(paths); err != nil {
			return "", err
		}
		return formatLSM(h.db), nil
	case "disk-usage":
		var start, end []byte
		if len(td.CmdArgs) == 2 {
			start, end = []byte(td.CmdArgs[0].Key), []byte(td.CmdArgs[1].Key)
		}
		n, err := h.db.EstimateDiskUsage(start, end)
		return fmt.Sprintf("%d\n", n), err
	}
	return "", fmt.Errorf("unknown command %q", td.Cmd)
}

// buildExt writes the batch lines of input, which must be in key order,
// at sequence number 0 into a table at path, as a user outside the store
// would.
func (h *scriptHarness) buildExt(path, input string) error {
	if err := h.fs.MkdirAll("ext", 0o755); err != nil {
		return err
	}
	f, err := h.fs.Create(path)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{Comparer: h.opts.Comparer})
	for _, line := range strings.Split(input, "\n") {
		switch fields := strings.Fields(line); {
		case len(fields) == 3 && fields[0] == "set":
			err = w.Add(sstable.MakeInternalKey([]byte(fields[1]), 0, sstable.KindSet), []byte(fields[2]))
		case len(fields) == 2 && fields[0] == "del":
			err = w.Add(sstable.MakeInternalKey([]byte(fields[1]), 0, sstable.KindDelete), nil)
		case len(fields) == 3 && fields[0] == "del-range":
			err = w.AddRangeDel(sstable.RangeTombstone{Start: []byte(fields[1]), End: []byte(fields[2])})
		default:
			err = fmt.Errorf("bad line %q", line)
		}
		if err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}
