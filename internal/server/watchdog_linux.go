//go:build linux

package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/loadlab/loadlab/internal/limits"
)

// The watchdog makes "no process of the tree outlives the run" hold when loadlab
// itself is SIGKILLed, which no code in loadlab can react to. Pdeathsig reaches only
// the root (for run:, the /bin/sh that runs the line), and the orphans of a dead
// subreaper go to init. So each server gets a watchdog: the same executable, started
// again with watchdogEnv set, in its own process group (Ctrl-C and kill -9 -PGID of
// loadlab's group do not reach it). It holds the read end of a pipe whose only write
// end is loadlab's; EOF means loadlab has exited, for whatever reason. Then it ends
// every process that carries the tree's mark, a variable in the server's environment
// that its descendants inherit, and every process of the server's group: stop_signal,
// then SIGKILL after grace, scanning /proc until two scans in a row find nothing.
//
// The normal path does not change: the server is still loadlab's child, sampled,
// stopped and reaped by loadlab; once the tree is gone loadlab closes the pipe, and
// the watchdog's scan finds nothing and it exits. It escapes only a process that both
// leaves the server's process group and drops the mark from its environment, or runs
// as another user (its environment is unreadable).
const (
	// watchdogEnv tells the executable to run as a watchdog; see init.
	watchdogEnv = "LOADLAB_INTERNAL_WATCHDOG"
	// TreeMarkEnv is set in the environment of every server loadlab starts on Linux;
	// its value is unique to that start.
	TreeMarkEnv = "LOADLAB_SERVER_TREE"
	// watchdogPoll is how often the watchdog scans while the tree is ending.
	watchdogPoll = 50 * time.Millisecond
)

// init, against the habit of no init(): the watchdog is this package's own process,
// and every executable that starts a server (loadlab, and each package's test binary)
// must turn into it when re-executed so. A hook each main had to call would, where
// forgotten, re-run the whole program (a test binary: its tests, starting servers
// and watchdogs) instead of watching.
func init() {
	if os.Getenv(watchdogEnv) != "1" {
		return
	}
	os.Exit(runWatchdog(os.Args[1:]))
}

// watchdog is the parent's side: the write end of the pipe and the process.
type watchdog struct {
	mark string // TreeMarkEnv=value, as it appears in environ
	w    *os.File
	cmd  *exec.Cmd
}

// startWatchdog starts the watchdog of a server that is about to start in a group
// whose id will be its own pid (unknown yet: it is sent on the pipe by setGroup).
// With limits, the watchdog also ends every process in the server's cgroups,
// and removes them once the tree is gone.
func startWatchdog(spec Spec, group *limits.Group) (*watchdog, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("making the tree's mark: %w", err)
	}
	mark := TreeMarkEnv + "=" + hex.EncodeToString(b[:])
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	args := []string{mark, strconv.Itoa(int(spec.StopSignal)), spec.Grace.String()}
	if group != nil {
		args = append(args, group.Dirs()...)
	}
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Env = []string{watchdogEnv + "=1"}
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the watchdog: %w", err)
	}
	return &watchdog{mark: mark, w: w, cmd: cmd}, nil
}

// setGroup tells the watchdog the server's process group.
func (d *watchdog) setGroup(pgid int) {
	fmt.Fprintf(d.w, "%d\n", pgid)
}

// close tells the watchdog that loadlab is done with the tree. gone says loadlab saw
// the whole tree end: the watchdog exits at once, and close waits for it. Otherwise
// the watchdog ends what is left, as it would after loadlab's death, for at most
// grace plus killWait, and a goroutine reaps it. The channel is closed once it is
// reaped.
func (d *watchdog) close(gone bool) <-chan struct{} {
	reaped := make(chan struct{})
	if gone {
		fmt.Fprintln(d.w, "done")
	}
	d.w.Close()
	wait := func() {
		_ = d.cmd.Wait()
		close(reaped)
	}
	if gone {
		wait()
	} else {
		go wait()
	}
	return reaped
}

// runWatchdog is the watchdog process: args are the mark, the stop signal and grace,
// then the server's cgroups, if any.
func runWatchdog(args []string) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "loadlab watchdog: bad arguments")
		return 2
	}
	mark := []byte(args[0])
	sigNum, err1 := strconv.Atoi(args[1])
	grace, err2 := time.ParseDuration(args[2])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "loadlab watchdog: bad arguments")
		return 2
	}
	// Read until EOF: a line with the server's group, then "done" if loadlab saw
	// the whole tree gone.
	group := 0
	data := make([]byte, 0, 64)
	buf := make([]byte, 64)
	for {
		n, err := os.Stdin.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil {
			break
		}
	}
	if fields := bytes.Fields(data); len(fields) > 0 {
		group, _ = strconv.Atoi(string(fields[0]))
	}
	if bytes.HasSuffix(bytes.TrimSpace(data), []byte("done")) {
		return 0 // loadlab stopped the tree and saw it gone
	}
	cgroups := args[3:]
	endTree(mark, group, cgroups, unix.Signal(sigNum), grace)
	_ = limits.RemoveDirs(cgroups, killWait)
	return 0
}

// endTree signals the marked processes, the group's and those in the cgroups until
// none is left, or killWait after SIGKILL (a process stuck in the kernel, or of
// another user).
func endTree(mark []byte, group int, cgroups []string, sig unix.Signal, grace time.Duration) {
	self := os.Getpid()
	r := newProcReader()
	graceEnd := time.Now().Add(grace)
	giveUp := graceEnd.Add(killWait)
	signaled := make(map[int]uint64)
	empty := 0
	for empty < 2 && time.Now().Before(giveUp) {
		killing := sig == unix.SIGKILL || !time.Now().Before(graceEnd)
		if killing {
			sig = unix.SIGKILL
		}
		found := 0
		pids, err := allPIDs()
		if err != nil {
			return
		}
		inCgroup := map[int]bool{}
		for _, dir := range cgroups {
			b, _ := os.ReadFile(dir + "/cgroup.procs")
			for _, pid := range appendPIDs(nil, b) {
				inCgroup[pid] = true
			}
		}
		for _, pid := range pids {
			if pid == self {
				continue
			}
			st, err := r.stat(pid)
			if err != nil || st.zombie() {
				continue
			}
			if !(group > 0 && st.pgrp == group) && !inCgroup[pid] && !hasMark(pid, mark) {
				continue
			}
			found++
			if killing || signaled[pid] != st.start {
				_ = signalProcess(r, pid, st.start, sig)
				signaled[pid] = st.start
			}
		}
		if found == 0 {
			empty++
		} else {
			empty = 0
		}
		time.Sleep(watchdogPoll)
	}
}

// hasMark reports whether pid's environment holds mark as one entry.
func hasMark(pid int, mark []byte) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for len(env) > 0 {
		i := bytes.IndexByte(env, 0)
		if i < 0 {
			i = len(env)
		}
		if bytes.Equal(env[:i], mark) {
			return true
		}
		env = env[min(i+1, len(env)):]
	}
	return false
}
