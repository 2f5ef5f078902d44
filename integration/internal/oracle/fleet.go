package oracle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Fleet is the set of worker processes of one test and what they said.
type Fleet struct {
	mu     sync.Mutex
	procs  []*Proc
	acks   []Event
	leases []Event
	errs   []Event
	states []Event
	fences []Event
	stats  []Event
	acked  map[string]bool // tenant+"\x00"+id of items with at least one ack
	ready  map[string]bool
	killed []string
	paused map[*Proc]bool
}

// Proc is one worker process.
type Proc struct {
	Name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	done   chan struct{}
	read   chan struct{}
}

// NewFleet returns an empty fleet.
func NewFleet() *Fleet {
	return &Fleet{acked: map[string]bool{}, ready: map[string]bool{}, paused: map[*Proc]bool{}}
}

// Start runs the test binary again as a worker with cfg and waits until it
// says it is ready.
func (f *Fleet) Start(cfg WorkerConfig) (*Proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(cfg)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), EnvWorker+"="+string(b))
	p := &Proc{Name: cfg.Worker, cmd: cmd, done: make(chan struct{}), read: make(chan struct{})}
	cmd.Stderr = &p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				f.record(e)
			}
		}
	}()
	go func() {
		<-p.read
		_ = cmd.Wait()
		close(p.done)
	}()
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		ok := f.ready[cfg.Worker]
		f.mu.Unlock()
		if ok {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("worker %s exited at start: %s", cfg.Worker, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-p.done
			return nil, fmt.Errorf("worker %s not ready within 30s: %s", cfg.Worker, p.stderr.String())
		}
	}
}

func (f *Fleet) record(e Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch e.Kind {
	case "ready":
		f.ready[e.Worker] = true
	case "lease":
		f.leases = append(f.leases, e)
	case "ack":
		f.acks = append(f.acks, e)
		f.acked[e.Tenant+"\x00"+e.ID] = true
	case "err":
		f.errs = append(f.errs, e)
	case "state":
		f.states = append(f.states, e)
	case "fence":
		f.fences = append(f.fences, e)
	case "stats":
		f.stats = append(f.stats, e)
	}
}

// Acked returns how many distinct items have at least one acknowledged
// execution: the progress the fault triggers watch.
func (f *Fleet) Acked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.acked)
}

// Acks returns the acknowledged executions so far.
func (f *Fleet) Acks() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.acks...)
}

// Leases returns the leases the workers reported receiving so far.
func (f *Fleet) Leases() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.leases...)
}

// StateEvents returns what the workers' state load reported so far.
func (f *Fleet) StateEvents() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.states...)
}

// FenceEvents returns the fenced writes the workers reported so far.
func (f *Fleet) FenceEvents() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.fences...)
}

// Stats returns the workers' final counts (one per worker that stopped
// gracefully).
func (f *Fleet) Stats() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.stats...)
}

// Counts sums the workers' final counts by class.
func (f *Fleet) Counts() map[string]int64 {
	out := map[string]int64{}
	for _, s := range f.Stats() {
		for k, v := range s.Counts {
			out[k] += v
		}
	}
	return out
}

// Kill sends SIGKILL to p: it dies mid-lease, holding whatever it held.
func (f *Fleet) Kill(p *Proc) {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	f.mu.Lock()
	f.killed = append(f.killed, p.Name)
	f.mu.Unlock()
}

// Pause sends SIGSTOP to p: it freezes mid-lease, holding whatever it
// held, its connections open, until Resume. Its leases run out meanwhile
// and its items go to the others; it is not told.
func (f *Fleet) Pause(p *Proc) {
	f.mu.Lock()
	f.paused[p] = true
	f.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume sends SIGCONT to p, paused by Pause: it goes on where it
// stopped, with the leases it believes it holds.
func (f *Fleet) Resume(p *Proc) {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	f.mu.Lock()
	delete(f.paused, p)
	f.mu.Unlock()
}

// Stop asks every live worker to stop (closes its stdin), waits up to
// timeout, then kills the ones still running. It returns the stderr of
// workers that exited with an error.
func (f *Fleet) Stop(timeout time.Duration) []string {
	f.mu.Lock()
	procs := append([]*Proc(nil), f.procs...)
	var paused []*Proc
	for p := range f.paused {
		paused = append(paused, p)
	}
	f.mu.Unlock()
	// A worker still paused (a test that failed before resuming it) could
	// not read its stdin closing.
	for _, p := range paused {
		f.Resume(p)
	}
	for _, p := range procs {
		_ = p.stdin.Close()
	}
	var problems []string
	deadline := time.After(timeout)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			_ = p.cmd.Process.Kill()
			<-p.done
			problems = append(problems, fmt.Sprintf("worker %s did not stop within %v", p.Name, timeout))
		}
		if st := p.cmd.ProcessState; st != nil && !st.Success() && !f.wasKilled(p.Name) {
			problems = append(problems, fmt.Sprintf("worker %s: %v: %s", p.Name, st, tail(p.stderr.String(), 2000)))
		}
	}
	return problems
}

func (f *Fleet) wasKilled(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.killed {
		if k == name {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
