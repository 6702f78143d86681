package main

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressEvery is how many steps a progress bar batches before it tells
// the bar. Benchmarks report steps per key, and the bar takes a lock on
// every update: batching keeps its cost out of the figures measured.
const progressEvery = 4096

// progress shows how far a long phase has come, on stderr and only when
// stderr is a terminal, so that redirected output and scripts never see it.
// A nil *progress does nothing, which is what non-terminals get.
type progress struct {
	bar     *progressbar.ProgressBar
	pending int64
	stop    chan struct{} // closed by done to end a spinner's ticker
	wg      sync.WaitGroup
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startProgress starts a bar for a phase of total steps described by desc,
// or a spinner with the elapsed time when total is negative (a phase whose
// length is unknown, like a compaction). It returns nil when stderr is not
// a terminal.
func (a *app) startProgress(desc string, total int64) *progress {
	if !isTerminal(a.stderr) {
		return nil
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	}
	if total >= 0 {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true))
	} else {
		opts = append(opts, progressbar.OptionSpinnerType(14))
	}
	p := &progress{bar: progressbar.NewOptions64(total, opts...), stop: make(chan struct{})}
	if total < 0 {
		p.wg.Add(1)
		go p.spin()
	}
	return p
}

// spin redraws a spinner until done, since nothing else would move it.
func (p *progress) spin() {
	defer p.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			_ = p.bar.Add64(0)
		}
	}
}

// add records n more steps done.
func (p *progress) add(n int) {
	if p == nil {
		return
	}
	p.pending += int64(n)
	if p.pending >= progressEvery {
		_ = p.bar.Add64(p.pending)
		p.pending = 0
	}
}

// done ends the phase and clears the bar from the terminal.
func (p *progress) done() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	if p.pending > 0 {
		_ = p.bar.Add64(p.pending)
	}
	_ = p.bar.Finish()
	_ = p.bar.Clear()
}
