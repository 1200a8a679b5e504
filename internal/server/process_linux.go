//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/loadlab/loadlab/internal/limits"
)

const (
	// rootUsageWait bounds the wait for exec.Cmd.Wait to record the root's rusage once
	// the root is gone from /proc, which takes microseconds.
	rootUsageWait = time.Second
)

// Process is a started server: its process tree, its log and its samples.
type Process struct {
	spec    Spec
	command string
	cmd     *exec.Cmd
	pid     int
	started time.Time
	readyAt time.Time
	logPath string
	tempLog bool       // the log is ours to remove (unless the server failed: errors point to it)
	log     *maskedLog // the copy that masks the log; nil when written directly
	failed  bool       // did not start

	series *series
	tree   *tree // used by the monitor goroutine only
	dog    *watchdog
	group  *limits.Group // nil: no limits
	name   string        // the root's program, for exit messages

	mu        sync.Mutex
	members   []Member // at the last collection
	sampleErr error    // the first failed collection, if any

	// Used by the monitor goroutine only.
	rootSeen bool       // the root's exit has been looked at
	lastExit reapedExit // the last exit seen, reported when the tree empties

	rootDone  chan struct{}    // closed when exec.Cmd.Wait has returned
	rootState *os.ProcessState // set before rootDone is closed; nil if Wait failed

	stopOnce  sync.Once
	stopReq   chan struct{}
	cleanOnce sync.Once
	done      chan struct{} // closed when the tree is gone and the monitor has returned
	err       error         // why the server ended; set before done is closed
	stopErr   error         // what could not be stopped; set before done is closed
}

// Start writes spec's files, starts the server and waits until it is ready. On error,
// everything it started is stopped and the error is a *StartError (or, for an invalid
// spec, *SpecError values joined). Cancelling ctx before the server is ready fails the
// start; cancelling it later stops the server, and Err then wraps ctx's error.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec = spec.withDefaults()
	var probe *readyProbe
	if spec.Ready != "" {
		parsed, err := parseReady(spec.Ready)
		if err != nil {
			return nil, err // Validate has checked it; kept for safety
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
	if err := becomeSubreaper(); err != nil {
		return nil, fail(FailedSpawn, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER), without which a daemonizing server could escape: %w", err))
	}
	if err := writeFiles(spec); err != nil {
		return nil, fail(FailedFiles, err)
	}
	if probe != nil && probe.answers(ctx) {
		return nil, fail(AddressInUse, fmt.Errorf("%s accepts connections: another server is listening there", probe.address))
	}
	var group *limits.Group
	if !spec.Limits.IsZero() {
		g, err := limits.Create(spec.Limits)
		if err != nil {
			return nil, fail(FailedLimits, err)
		}
		group = g
	}
	removeGroup := func() {
		if group != nil {
			_ = group.Remove()
		}
	}
	logFile, logPath, tempLog, err := openLog(spec.LogPath)
	if err != nil {
		removeGroup()
		return nil, fail(FailedLog, err)
	}

	dog, err := startWatchdog(spec, group)
	if err != nil {
		logFile.Close()
		if tempLog {
			os.Remove(logPath)
		}
		removeGroup()
		return nil, fail(FailedSpawn, err)
	}
	var cmd *exec.Cmd
	if spec.Shell != "" {
		cmd = exec.Command("/bin/sh", "-c", spec.Shell)
	} else {
		cmd = exec.Command(spec.Argv[0], spec.Argv[1:]...)
	}
	cmd.Dir = spec.Dir
	cmd.Env = environment(spec.Env)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, dog.mark) // the watchdog finds the tree by it
	out, mlog, err := serverOutput(logFile, spec.Secrets, spec.Learned)
	if err != nil {
		logFile.Close()
		dog.close(true)
		if tempLog {
			os.Remove(logPath)
		}
		return nil, fail(FailedLog, err)
	}
	// Files (the log, or a pipe we read on our own), not pipes of exec.Cmd:
	// Wait must not wait for daemons holding them.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Group G: one signal reaches every worker that stays in it.
		Setpgid: true,
		// The root dies with loadlab. The kernel ties this to the thread that forked,
		// and the Go runtime ends a thread only when a goroutine locked to it exits,
		// so Start must not be called from a goroutine locked with LockOSThread.
		Pdeathsig: syscall.SIGKILL,
	}
	name := filepath.Base(cmd.Path)
	if group != nil && cmd.Err == nil {
		group.Command(cmd) // the first process joins the cgroups before it execs the server
	}
	err = cmd.Start()
	out.Close() // the server has its own descriptor; the tail is read by path
	if err != nil {
		mlog.finish()
		dog.close(true)
		if tempLog {
			os.Remove(logPath)
		}
		removeGroup()
		return nil, fail(FailedSpawn, err)
	}
	started := time.Now()
	pid := cmd.Process.Pid
	dog.setGroup(pid)
	reader := newProcReader()
	// Nobody has waited for the root yet, so its stat is there even if it exited.
	st, err := reader.stat(pid)
	if err != nil {
		_ = unix.Kill(-pid, unix.SIGKILL)
		_ = cmd.Wait()
		mlog.finish()
		dog.close(false)
		removeGroup()
		if tempLog {
			os.Remove(logPath)
		}
		return nil, fail(FailedSpawn, fmt.Errorf("reading the new process: %w", err))
	}

	p := &Process{
		spec: spec, command: command, cmd: cmd, pid: pid, started: started,
		logPath: logPath, tempLog: tempLog, dog: dog, group: group, name: name, log: mlog,
		series:   newSeries(limitedCapacity(cpuCapacity(pid), group), spec.MemoryQuota),
		rootDone: make(chan struct{}),
		stopReq:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.tree = newTree(treeOptions{
		root: pid, rootStart: st.start, group: pid,
		claimOrphans: true, reap: true, rootUsage: p.rootUsage,
	}, !childrenFileWorks())
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

// PID is the pid of the started process (R in the package comment).
func (p *Process) PID() int { return p.pid }

// StartedAt is when the command was started; ReadyAt when the probe first succeeded
// (StartedAt without a probe). Warmup windows are measured from ReadyAt.
func (p *Process) StartedAt() time.Time { return p.started }
func (p *Process) ReadyAt() time.Time   { return p.readyAt }

// LogPath is the file that receives the server's stdout and stderr.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed when the server has ended: stopped, crashed, or exited by itself.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err reports why the server ended once Done is closed, and nil before. It is nil when
// Stop ended it, an *ExitError when it crashed or exited by itself (ExitError.Crashed
// tells which), and wraps the context's error when the context given to Start ended it.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop ends the server (see the package comment) and returns once no process of its
// tree is alive and every zombie of it that loadlab owns is reaped; a *StopError names
// what survived. Stop is idempotent and may be called after the server ended by itself.
func (p *Process) Stop() error {
	p.halt()
	p.cleanup()
	return p.stopErr
}

// Members returns the processes of the tree at the last sample, the root first.
func (p *Process) Members() []Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Member(nil), p.members...)
}

// Samples returns the time series so far.
func (p *Process) Samples() []Sample { return p.series.all() }

// Summary condenses the samples taken between from and to; zero times leave that end
// open, so Summary(p.ReadyAt().Add(warmup), time.Time{}) leaves out the warmup.
func (p *Process) Summary(from, to time.Time) Summary { return p.series.summary(from, to) }

// SampleErr returns the first error met while sampling; samples are skipped while it
// lasts. It can only happen when /proc cannot be listed.
func (p *Process) SampleErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sampleErr
}

func (p *Process) halt() {
	p.stopOnce.Do(func() { close(p.stopReq) })
	<-p.done
}

func (p *Process) cleanup() {
	p.cleanOnce.Do(func() {
		if p.tempLog && !p.failed && p.err == nil {
			os.Remove(p.logPath)
		}
	})
}

func (p *Process) waitRoot() {
	_ = p.cmd.Wait() // the status is read from ProcessState
	p.rootState = p.cmd.ProcessState
	close(p.rootDone)
}

// rootUsage returns the root's exact totals from its rusage, which includes the
// children it reaped itself.
func (p *Process) rootUsage() (totals, bool) {
	select {
	case <-p.rootDone:
	case <-time.After(rootUsageWait):
		return totals{}, false
	}
	if p.rootState == nil {
		return totals{}, false
	}
	ru, ok := p.rootState.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return totals{}, false
	}
	return rusageTotals(ru), true
}

func (p *Process) waitReady(ctx context.Context, probe readyProbe) error {
	at, failure, cause := awaitReady(ctx, probe, p.started, p.spec.ReadyTimeout, p.done, func() error { return p.err })
	if failure != 0 {
		return p.startFailed(failure, cause)
	}
	p.readyAt = at
	return nil
}

// startFailed stops what was started and builds the StartError, with the log tail
// read after the stop so it includes the server's last words.
func (p *Process) startFailed(f StartFailure, cause error) error {
	p.failed = true
	p.halt()
	if f == ExitedEarly {
		var exit *ExitError
		if !errors.As(cause, &exit) {
			// The monitor ended for another reason (the context): report that.
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

// monitor samples the tree until it ends, and ends it on request. It owns p.tree.
func (p *Process) monitor(ctx context.Context) {
	defer close(p.done)
	defer func() { p.dog.close(p.stopErr == nil) }()
	defer p.removeGroup()
	defer p.log.finish() // the log is whole when the tree's end is told
	ticker := time.NewTicker(p.spec.SampleInterval)
	defer ticker.Stop()
	rootDone := p.rootDone
	p.sample()
	for {
		select {
		case <-p.stopReq:
			p.sample() // the run's last figures, before shutdown changes them
			if exit := p.ended(); exit != nil && exit.Crashed() {
				p.err = exit // it crashed before Stop was called
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
				// The rest of the tree is orphaned workers: end them as Stop would.
				p.stopErr = p.terminate()
			}
			return
		}
		if p.group != nil && p.group.OOMKills() > 0 {
			// A worker killed at the limit whose master lives on (and may
			// fork another) is still a server that did not fit: the run fails.
			p.err = p.exitError(reapedExit{pid: p.pid, name: p.name, status: ExitStatus{Code: -1, Signal: syscall.SIGKILL}})
			p.stopErr = p.terminate()
			return
		}
	}
}

// removeGroup removes the server's cgroups once its tree is gone; if some of
// the tree survived, the watchdog removes them after ending it.
func (p *Process) removeGroup() {
	if p.group == nil || p.stopErr != nil {
		return
	}
	if err := p.group.Remove(); err != nil {
		p.stopErr = &StopError{Err: err}
	}
}

// limitedCapacity is the CPUs the server may use under its limits.
func limitedCapacity(capacity float64, g *limits.Group) float64 {
	if g == nil {
		return capacity
	}
	in := g.InForce()
	if n := float64(len(in.CPUList)); n > 0 && n < capacity {
		capacity = n
	}
	if q := in.CPUQuota; q > 0 && q < capacity {
		capacity = q
	}
	return capacity
}

// Limits returns the limits in force and what their cgroups measured (after
// the server ended, their last figures); ok is false without limits.
func (p *Process) Limits() (limits.Limits, limits.InForce, limits.Stats, bool) {
	if p.group == nil {
		return limits.Limits{}, limits.InForce{}, limits.Stats{}, false
	}
	return p.group.Limits(), p.group.InForce(), p.group.Stats(), true
}

func (p *Process) sample() {
	now := time.Now()
	u, err := p.tree.collect()
	p.publish(err)
	if err == nil {
		p.series.add(now, u)
	}
}

func (p *Process) publish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && p.sampleErr == nil {
		p.sampleErr = err
	}
	if err == nil {
		p.members = p.tree.members(p.members[:0])
	}
}

// ended looks at what exited since the last collection: a failure of the root or of an
// orphan we reaped is a crash; otherwise the server has ended when nothing is left, and
// the last exit seen is reported.
func (p *Process) ended() *ExitError {
	if !p.rootSeen {
		select {
		case <-p.rootDone:
			p.rootSeen = true
			status := ExitStatus{} // Wait failed (someone else reaped it): nothing known
			if p.rootState != nil {
				if ws, ok := p.rootState.Sys().(syscall.WaitStatus); ok {
					status = exitStatusOf(ws)
				}
			}
			p.lastExit = reapedExit{pid: p.pid, name: p.name, status: status}
			if !status.Success() {
				return p.exitError(p.lastExit)
			}
		default:
		}
	}
	for _, e := range p.tree.takeExits() {
		p.lastExit = e
		if !e.status.Success() {
			return p.exitError(e)
		}
	}
	if p.rootSeen && p.tree.empty() {
		return p.exitError(p.lastExit)
	}
	return nil
}

func (p *Process) exitError(e reapedExit) *ExitError {
	p.log.settle()
	err := &ExitError{
		Command: p.command, PID: e.pid, Name: e.name, Status: e.status,
		After: time.Since(p.started), LogPath: p.logPath,
		LogTail: readTail(p.logPath, tailLines, p.spec.Secrets),
	}
	if p.group != nil && !e.status.Success() {
		if st := p.group.Stats(); st.OOMKills > 0 {
			err.OOM = &OOMKill{
				Limit: p.group.InForce().Memory, Kills: st.OOMKills,
				PSSPeak: p.series.summary(time.Time{}, time.Time{}).PSSPeak, CgroupPeak: st.MemoryPeak,
				SampleEvery: p.spec.SampleInterval,
			}
		}
	}
	return err
}

// terminate sends StopSignal to the tree, then SIGKILL after Grace, until nothing is
// left and the root has been waited for.
func (p *Process) terminate() error {
	sig := p.spec.StopSignal
	graceEnd := time.Now().Add(p.spec.Grace)
	var killEnd time.Time
	signaled := make(map[int]uint64)
	groupSignaled := false
	var signalErr error
	rootDone := p.rootDone
	for {
		_, err := p.tree.collect()
		p.publish(err)
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
			return &StopError{Survivors: p.alivePIDs(), Err: signalErr}
		}
		killing := sig == syscall.SIGKILL
		inGroup := false
		for _, st := range p.tree.found {
			if st.zombie() {
				continue
			}
			inGroup = inGroup || st.pgrp == p.pid
			if killing || signaled[st.pid] != st.start {
				if err := signalProcess(p.tree.r, st.pid, st.start, unix.Signal(sig)); err != nil {
					signalErr = err
				}
				signaled[st.pid] = st.start
			}
		}
		// The group catches a process forked between the collection and the signals.
		// It is only signalled while a member is in it, so its id cannot have been
		// reused.
		if inGroup && (killing || !groupSignaled) {
			if err := unix.Kill(-p.pid, unix.Signal(sig)); err != nil && !errors.Is(err, unix.ESRCH) {
				signalErr = fmt.Errorf("signal %v to process group %d: %w", sig, p.pid, err)
			}
			groupSignaled = true
		}
		select {
		case <-rootDone:
			rootDone = nil
		case <-time.After(stopPollInterval):
		}
	}
}

func (p *Process) alivePIDs() []int {
	var pids []int
	for _, st := range p.tree.found {
		if !st.zombie() {
			pids = append(pids, st.pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// signalProcess signals pid if it is still the process that started at start. A pidfd
// pins the process while its start time is checked, so a pid reused by an unrelated
// process is never signalled; kernels before 5.3 have no pidfd and get a plain kill.
func signalProcess(r *procReader, pid int, start uint64, sig unix.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err == nil {
		defer unix.Close(fd)
	}
	if st, statErr := r.stat(pid); statErr != nil || st.start != start {
		return nil // exited, or the pid now names another process
	}
	if err == nil {
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	} else {
		err = unix.Kill(pid, sig)
	}
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal %v to pid %d: %w", sig, pid, err)
	}
	return nil
}

// Command is the server's command line, for reports.
func (p *Process) Command() string { return p.command }
