package server

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// shellCommand runs a Spec.Shell command line with cmd.exe /C. cmd.exe does
// its own unquoting, so the line goes to it as written: the whole command
// line, program name first, in SysProcAttr.CmdLine (see exec.Command).
func shellCommand(line string) *exec.Cmd {
	cmd := exec.Command("cmd.exe")
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: "cmd.exe /C " + line}
	return cmd
}

// setGroup starts the server in a process group of its own. Windows has no
// signals to send to it: see signalTree.
func setGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
}

// signalTree ends every process of the tree at once (TerminateProcess):
// Windows cannot deliver SIGTERM or SIGINT to another console process group,
// so StopSignal and Grace do not apply, and a server gets no chance to shut
// down cleanly. A job object would also catch processes started between two
// scans; that is not done.
func signalTree(_ int, _ bool, pids []int, _ syscall.Signal) error {
	var errs []error
	for _, pid := range pids {
		p, err := os.FindProcess(pid)
		if err != nil {
			continue // exited
		}
		if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("terminate pid %d: %w", pid, err))
		}
		p.Release()
	}
	return errors.Join(errs...)
}
