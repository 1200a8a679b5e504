package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/loadlab/loadlab/internal/limits"
)

// portableProcess is Process outside Linux (see the package comment's
// "Outside Linux"); it builds and is tested on Linux too.
type portableProcess struct {
	spec    Spec
	command string
	cmd     *exec.Cmd
	pid     int
	started time.Time
	readyAt time.Time
	logPath string
	tempLog bool
	log     *maskedLog // the copy that masks the log; nil when written directly
	failed  bool

	series *series
	tree   *psTree // used by the monitor goroutine only

	mu        sync.Mutex
	members   []Member
	sampleErr error

	rootDone  chan struct{}
	rootState *os.ProcessState

	stopOnce  sync.Once
	stopReq   chan struct{}
	cleanOnce sync.Once
	done      chan struct{}
	err       error
	stopErr   error
}

// startPortable is Start outside Linux.
func startPortable(ctx context.Context, spec Spec) (*portableProcess, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec = spec.withDefaults()
	var probe *readyProbe
	if spec.Ready != "" {
		parsed, err := parseReady(spec.Ready)
		if err != nil {
			return nil, err
		}
		probe = &parsed
	}
	command := spec.command()
	fail := func(f StartFailure, err error) error {
		return &StartError{Failure: f, Command: command, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(Canceled, err)
	}
	if !spec.Limits.IsZero() {
		_, err := limits.Create(spec.Limits) // outside Linux: always an error saying why
		return nil, fail(FailedLimits, err)
	}
	if err := writeFiles(spec); err != nil {
		return nil, fail(FailedFiles, err)
	}
	if probe != nil && probe.answers(ctx) {
		return nil, fail(AddressInUse, fmt.Errorf("%s accepts connections: another server is listening there", probe.address))
	}
	logFile, logPath, tempLog, err := openLog(spec.LogPath)
	if err != nil {
		return nil, fail(FailedLog, err)
	}
	var cmd *exec.Cmd
	if spec.Shell != "" {
		cmd = shellCommand(spec.Shell)
	} else {
		cmd = exec.Command(spec.Argv[0], spec.Argv[1:]...)
	}
	cmd.Dir = spec.Dir
	cmd.Env = environment(spec.Env)
	out, mlog, err := serverOutput(logFile, spec.Secrets, spec.Learned)
	if err != nil {
		logFile.Close()
		if tempLog {
			os.Remove(logPath)
		}
		return nil, fail(FailedLog, err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	setGroup(cmd)
	err = cmd.Start()
	out.Close()
	if err != nil {
		mlog.finish()
		if tempLog {
			os.Remove(logPath)
		}
		return nil, fail(FailedSpawn, err)
	}
	started := time.Now()
	pid := cmd.Process.Pid
	tree, err := newPSTree(pid, false)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		mlog.finish()
		if tempLog {
			os.Remove(logPath)
		}
		return nil, fail(FailedSpawn, fmt.Errorf("reading the new process: %w", err))
	}
	p := &portableProcess{
		spec: spec, command: command, cmd: cmd, pid: pid, started: started,
		logPath: logPath, tempLog: tempLog, log: mlog,
		series:   newSeries(float64(runtime.NumCPU()), spec.MemoryQuota),
		tree:     tree,
		rootDone: make(chan struct{}),
		stopReq:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.series.setUnmeasured(portableUnmeasured)
	tree.rootUsage = p.rootUsage
	go p.waitRoot()
	go p.monitor(ctx)
	if probe == nil {
		p.readyAt = started
		return p, nil
	}
	if err := p.waitReady(ctx, *probe); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *portableProcess) PID() int              { return p.pid }
func (p *portableProcess) StartedAt() time.Time  { return p.started }
func (p *portableProcess) ReadyAt() time.Time    { return p.readyAt }
func (p *portableProcess) LogPath() string       { return p.logPath }
func (p *portableProcess) Done() <-chan struct{} { return p.done }
func (p *portableProcess) Command() string       { return p.command }

// Limits: outside Linux a server never runs under limits (Start refuses them).
func (p *portableProcess) Limits() (limits.Limits, limits.InForce, limits.Stats, bool) {
	return limits.Limits{}, limits.InForce{}, limits.Stats{}, false
}

// Err reports why the server ended once Done is closed, and nil before.
func (p *portableProcess) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop ends the server and its tree; see the package comment.
func (p *portableProcess) Stop() error {
	p.stopOnce.Do(func() { close(p.stopReq) })
	<-p.done
	p.cleanup()
	return p.stopErr
}

// Members returns the processes of the tree at the last sample, the root first.
func (p *portableProcess) Members() []Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Member(nil), p.members...)
}

// Samples returns the time series so far.
func (p *portableProcess) Samples() []Sample { return p.series.all() }

// Summary condenses the samples taken between from and to.
func (p *portableProcess) Summary(from, to time.Time) Summary { return p.series.summary(from, to) }

// SampleErr returns the first error met while sampling.
func (p *portableProcess) SampleErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sampleErr
}

func (p *portableProcess) cleanup() {
	p.cleanOnce.Do(func() {
		if p.tempLog && !p.failed && p.err == nil {
			os.Remove(p.logPath)
		}
	})
}

func (p *portableProcess) waitRoot() {
	_ = p.cmd.Wait()
	p.rootState = p.cmd.ProcessState
	close(p.rootDone)
}

func (p *portableProcess) rootUsage() (user, system time.Duration, ok bool) {
	select {
	case <-p.rootDone:
	default:
		return 0, 0, false
	}
	if p.rootState == nil {
		return 0, 0, false
	}
	return p.rootState.UserTime(), p.rootState.SystemTime(), true
}

func (p *portableProcess) waitReady(ctx context.Context, probe readyProbe) error {
	at, failure, cause := awaitReady(ctx, probe, p.started, p.spec.ReadyTimeout, p.done, func() error { return p.err })
	if failure != 0 {
		return p.startFailed(failure, cause)
	}
	p.readyAt = at
	return nil
}

func (p *portableProcess) startFailed(f StartFailure, cause error) error {
	p.failed = true
	p.stopOnce.Do(func() { close(p.stopReq) })
	<-p.done
	if f == ExitedEarly {
		var exit *ExitError
		if !errors.As(cause, &exit) {
			f = Canceled
		}
	}
	err := &StartError{
		Failure: f, Command: p.command, Err: cause,
		Waited:  time.Since(p.started),
		LogPath: p.logPath, LogTail: readTail(p.logPath, tailLines, p.spec.Secrets),
	}
	if p.stopErr != nil {
		err.Err = errors.Join(cause, p.stopErr)
	}
	p.cleanup()
	return err
}

// monitor samples the tree until it ends, and ends it on request.
func (p *portableProcess) monitor(ctx context.Context) {
	defer close(p.done)
	defer p.log.finish() // the log is whole when the tree's end is told
	ticker := time.NewTicker(p.spec.SampleInterval)
	defer ticker.Stop()
	rootDone := p.rootDone
	p.sample()
	for {
		select {
		case <-p.stopReq:
			p.sample()
			if exit := p.ended(); exit != nil && exit.Crashed() {
				p.err = exit
			}
			p.stopErr = p.terminate()
			return
		case <-ctx.Done():
			p.sample()
			p.err = fmt.Errorf("server stopped because its context ended: %w", context.Cause(ctx))
			if exit := p.ended(); exit != nil && exit.Crashed() {
				p.err = exit
			}
			p.stopErr = p.terminate()
			return
		case <-rootDone:
			rootDone = nil
			p.sample()
		case <-ticker.C:
			p.sample()
		}
		if exit := p.ended(); exit != nil {
			p.err = exit
			if exit.Crashed() {
				p.stopErr = p.terminate()
			}
			return
		}
	}
}

func (p *portableProcess) sample() {
	now := time.Now()
	u, err := p.tree.collect(context.Background())
	p.mu.Lock()
	if err != nil && p.sampleErr == nil {
		p.sampleErr = err
	}
	if err == nil {
		p.members = p.tree.members(p.members[:0])
	}
	p.mu.Unlock()
	if err == nil {
		p.series.setUnmeasured(p.tree.unmeasured())
		p.series.add(now, u)
	}
}

// ended: the root's failure is a crash; otherwise the server has ended once
// the root was waited for and nothing of the tree is left.
func (p *portableProcess) ended() *ExitError {
	select {
	case <-p.rootDone:
	default:
		return nil
	}
	status := ExitStatus{}
	if p.rootState != nil {
		if ws, ok := p.rootState.Sys().(syscall.WaitStatus); ok {
			status = exitStatusOf(ws)
		}
	}
	if !status.Success() || p.tree.empty() {
		p.log.settle()
		return &ExitError{
			Command: p.command, PID: p.pid, Name: filepath.Base(p.cmd.Path), Status: status,
			After: time.Since(p.started), LogPath: p.logPath,
			LogTail: readTail(p.logPath, tailLines, p.spec.Secrets),
		}
	}
	return nil
}

// terminate asks the tree to stop, then kills what is left after Grace,
// until nothing is left and the root has been waited for.
func (p *portableProcess) terminate() error {
	sig := p.spec.StopSignal
	graceEnd := time.Now().Add(p.spec.Grace)
	var killEnd time.Time
	var signalErr error
	signaled := false
	rootDone := p.rootDone
	for {
		_, err := p.tree.collect(context.Background())
		rootWaited := false
		select {
		case <-p.rootDone:
			rootWaited = true
		default:
		}
		if err == nil && p.tree.empty() && rootWaited {
			if signalErr != nil {
				return &StopError{Err: signalErr}
			}
			return nil
		}
		now := time.Now()
		if killEnd.IsZero() && (sig == syscall.SIGKILL || !now.Before(graceEnd)) {
			sig, killEnd = syscall.SIGKILL, now.Add(killWait)
		}
		if !killEnd.IsZero() && now.After(killEnd) {
			return &StopError{Survivors: p.alive(), Err: signalErr}
		}
		if sig == syscall.SIGKILL || !signaled {
			// The group is signalled only while its leader is not waited for,
			// so its id cannot have been reused.
			if err := signalTree(p.pid, !rootWaited, p.alive(), sig); err != nil {
				signalErr = err
			}
			signaled = true
		}
		select {
		case <-rootDone:
			rootDone = nil
		case <-time.After(stopPollInterval):
		}
	}
}

func (p *portableProcess) alive() []int {
	var pids []int
	for pid := range p.tree.known {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids
}
