package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// stepLimit is how long a child may take to reach the next step of its
// life (Open and the check, the writers' stop and Close) while its kill
// waits for a step, before it is taken to hang.
const stepLimit = 2 * time.Minute

// killPlan is when the parent kills a child: after a delay counted from
// the moment the child reached a phase (phaseOpening: its start). With
// closeAfter, the child stops writing after that long, and closes the
// store.
type killPlan struct {
	after      time.Duration
	from       phase
	closeAfter time.Duration
}

// phase is where in a child's life a kill landed, as far as the child
// reported it before it died.
type phase int

const (
	phaseOpening  phase = iota // before Open returned
	phaseChecking              // while the child checked the store
	phaseWriting
	phaseClosing // while Close ran
	phaseClosed  // after Close returned
)

// generation is one child's life, as its parent saw it.
type generation struct {
	phase  phase
	found  [][]int // the states its check found, per writer
	acks   [][]ack // per writer, in order
	opened time.Duration
	fails  []string // its fail lines, and lines the parent did not understand
}

// runChild starts a child on spec, kills it (SIGKILL on Unix) as plan
// says, and returns what it reported. A child that ends by itself, hangs
// or reports a failure is an error; its stderr is then kept in
// stderrFile.
func runChild(ctx context.Context, argv []string, spec *childSpec, plan killPlan, stderrFile string) (*generation, error) {
	arg, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), ChildEnv+"="+string(arg))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &tailBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("crashtest: starting a child: %w", err)
	}
	g := &generation{acks: make([][]ack, spec.Round.Writers)}
	reached, done := make(chan phase, phaseClosed+1), make(chan struct{})
	go func() {
		defer close(done)
		g.read(stdout, time.Now(), reached)
	}()
	outcome := killWhen(ctx, cmd.Process, plan, reached, done)
	<-done
	waitErr := cmd.Wait()
	if outcome == killInterrupted {
		return nil, ctx.Err()
	}
	if err := g.failure(outcome, waitErr, cmd.ProcessState); err != nil {
		if werr := writeTail(stderrFile, stderr); werr == nil && stderr.n > 0 {
			err = fmt.Errorf("%w (its stderr is in %s)", err, stderrFile)
		}
		return nil, err
	}
	return g, nil
}

// How a child's life ended.
type killOutcome int

const (
	killed          killOutcome = iota
	killEndedFirst              // the child's stdout ended before the kill
	killHung                    // a step took over stepLimit
	killInterrupted             // the context ended first
)

// killWhen kills the child when plan says, and returns how its life
// ended. reached tells each phase the child reaches; done is closed at
// the end of its stdout.
func killWhen(ctx context.Context, p *os.Process, plan killPlan, reached <-chan phase, done <-chan struct{}) killOutcome {
	var due, hung <-chan time.Time
	if plan.from == phaseOpening {
		due = time.After(plan.after)
	} else {
		hung = time.After(stepLimit)
	}
	for {
		select {
		case ph := <-reached:
			switch {
			case ph == plan.from:
				due, hung = time.After(plan.after), nil
			case ph < plan.from:
				limit := stepLimit
				if ph == phaseWriting {
					limit += plan.closeAfter // it writes that long before its next step
				}
				hung = time.After(limit)
			}
		case <-due:
			_ = p.Kill()
			return killed
		case <-hung:
			_ = p.Signal(syscall.SIGQUIT) // the Go runtime's dump of every goroutine, on stderr
			time.Sleep(2 * time.Second)
			_ = p.Kill()
			return killHung
		case <-done:
			return killEndedFirst
		case <-ctx.Done():
			_ = p.Kill()
			return killInterrupted
		}
	}
}

// failure returns the error in a child's life, if there was one.
func (g *generation) failure(outcome killOutcome, waitErr error, state *os.ProcessState) error {
	reported := ""
	if len(g.fails) > 0 {
		reported = ": " + strings.Join(g.fails, "; ")
	}
	switch {
	case outcome == killHung:
		return fmt.Errorf("crashtest: the child took over %v to reach its next step, and no failure%s", stepLimit, reported)
	case outcome == killEndedFirst || state.Exited():
		return fmt.Errorf("crashtest: the child ended before the kill (%v)%s", waitErr, reported)
	case len(g.fails) > 0:
		return fmt.Errorf("crashtest: the child failed%s", reported)
	}
	return nil
}

// read reads the child's lines until its stdout ends, telling reached
// of each phase the child reaches.
func (g *generation) read(r io.Reader, started time.Time, reached chan<- phase) {
	steps := map[string]phase{lineOpened: phaseChecking, lineReady: phaseWriting, lineStopped: phaseClosing, lineClosed: phaseClosed}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		words := strings.Fields(sc.Text())
		if len(words) == 0 {
			continue
		}
		if ph, ok := steps[words[0]]; ok && len(words) == 1 && ph > g.phase {
			g.phase = ph
			if ph == phaseChecking {
				g.opened = time.Since(started)
			}
			reached <- ph
			continue
		}
		if !g.parse(words) {
			g.fails = append(g.fails, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		g.fails = append(g.fails, "reading the child's stdout: "+err.Error())
	}
}

// parse records a state or ack line, and reports whether words is one.
func (g *generation) parse(words []string) bool {
	if len(words) < 3 {
		return false
	}
	w, err := strconv.Atoi(words[1])
	if err != nil || w < 0 || w >= len(g.acks) {
		return false
	}
	var nums []int64
	for _, f := range strings.Split(strings.Join(words[2:], ","), ",") {
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return false
		}
		nums = append(nums, x)
	}
	switch {
	case words[0] == lineState && len(words) == 3:
		if g.found == nil {
			g.found = make([][]int, len(g.acks))
		}
		for _, m := range nums {
			g.found[w] = append(g.found[w], int(m))
		}
		return true
	case words[0] == lineAck && len(words) == 5:
		g.acks[w] = append(g.acks[w], ack{n: int(nums[0]), start: nums[1], end: nums[2]})
		return true
	}
	return false
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
	n   int64 // bytes written in all
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.n += int64(len(p))
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// writeTail writes what t kept to the file name, when anything was
// written to t.
func writeTail(name string, t *tailBuffer) error {
	if t.n == 0 {
		return nil
	}
	f, err := vfs.Default.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(t.buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
