//go:build linux

package server

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// alivePIDsWith lists the live processes whose command line contains marker.
func alivePIDsWith(t *testing.T, marker string) []string {
	t.Helper()
	pids, err := allPIDs()
	if err != nil {
		t.Fatal(err)
	}
	r := newProcReader()
	var out []string
	for _, pid := range pids {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		if st, err := r.stat(pid); err == nil && !st.zombie() {
			out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}

// TestWatchdogEndsTheTree: the watchdog's pipe closing without "done" is what
// loadlab's death looks like to it. It must end the tree: a process in the group,
// one that ignores SIGTERM (SIGKILL after grace), and one that left the group and
// the session (found by its mark), and then exit.
func TestWatchdogEndsTheTree(t *testing.T) {
	s1, s2, s3 := uniqueSleep(), uniqueSleep()+"1", uniqueSleep()+"2"
	if err := becomeSubreaper(); err != nil { // as loadlab is: the orphans come to this process
		t.Fatal(err)
	}
	dog, err := startWatchdog(Spec{StopSignal: syscall.SIGTERM, Grace: 300 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("setsid sleep %s & (trap '' TERM; exec sleep %s) & exec sleep %s", s1, s2, s3))
	cmd.Env = append(os.Environ(), dog.mark)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dog.setGroup(cmd.Process.Pid)
	var pids []int
	for _, s := range []string{s1, s2, s3} {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if found := alivePIDsWith(t, "sleep\x00"+s+"\x00"); len(found) > 0 {
				var pid int
				fmt.Sscan(found[0], &pid)
				pids = append(pids, pid)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sleep %s never started", s)
			}
		}
	}
	// The orphans become this process's zombies if a test made it a subreaper.
	reap := func() {
		for _, pid := range pids {
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				var ws unix.WaitStatus
				if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid || err != nil {
					break // reaped, or not our child
				}
			}
		}
	}
	defer reap()
	began := time.Now()
	<-dog.close(false) // as if loadlab had died: closed when the watchdog has exited
	took := time.Since(began)
	_ = cmd.Wait()
	for _, s := range []string{s1, s2, s3} {
		for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
			left := alivePIDsWith(t, s)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the watchdog exited after %v, leaving %v", took, left)
			}
		}
	}
	if took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("the watchdog took %v for a grace of 300ms", took)
	}
	if dog.cmd.ProcessState == nil || !dog.cmd.ProcessState.Success() {
		t.Errorf("watchdog exit: %v", dog.cmd.ProcessState)
	}
	reap()
	assertNoZombieChildren(t)
}

// TestWatchdogAfterStop: after a normal Stop the watchdog has been told "done",
// has exited and is reaped, and it did not slow the stop down.
func TestWatchdogAfterStop(t *testing.T) {
	sleep := uniqueSleep()
	p, err := Start(t.Context(), Spec{Shell: "sleep " + sleep + " & exec sleep " + sleep + "1", Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The shell may be exec'ing sleep as we look: /proc/PID/environ then reads
	// empty for a moment (CI saw it once), so look again for a while.
	var env []byte
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		env, err = os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID()))
		if err == nil && bytes.Contains(env, []byte(p.dog.mark)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's environment lacks the mark %q: %v (%d bytes)", p.dog.mark, err, len(env))
		}
	}
	stopWithin(t, p, 500*time.Millisecond)
	if st := p.dog.cmd.ProcessState; st == nil || !st.Success() {
		t.Errorf("the watchdog was not reaped, or failed: %v", st)
	}
	assertNoProcessWith(t, sleep)
}
