//go:build !windows

package server

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// shellCommand runs a Spec.Shell command line.
func shellCommand(line string) *exec.Cmd { return exec.Command("/bin/sh", "-c", line) }

// setGroup starts the server in a process group of its own (G in the package
// comment), so that one signal reaches every worker that stays in it.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalTree sends sig to the group (while groupAlive) and to every pid.
// Without pidfds a pid that exited and was reused between the scan and the
// signal could be hit; the window is one stopPollInterval at most.
func signalTree(group int, groupAlive bool, pids []int, sig syscall.Signal) error {
	var errs []error
	if groupAlive {
		if err := syscall.Kill(-group, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal %v to process group %d: %w", sig, group, err))
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal %v to pid %d: %w", sig, pid, err))
		}
	}
	return errors.Join(errs...)
}
