package server

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/secret"
)

// tailLines is how many lines of the server log an error carries.
const tailLines = 20

// ExitStatus is how one process ended: an exit code, or a signal.
type ExitStatus struct {
	Code       int            // exit code; -1 when killed by a signal
	Signal     syscall.Signal // 0 unless killed by a signal
	CoreDumped bool
}

// Success reports a normal exit with code 0.
func (s ExitStatus) Success() bool { return s.Code == 0 && s.Signal == 0 }

func (s ExitStatus) String() string {
	if s.Signal != 0 {
		out := fmt.Sprintf("killed by signal %d (%v)", int(s.Signal), s.Signal)
		if s.CoreDumped {
			out += ", core dumped"
		}
		return out
	}
	return fmt.Sprintf("exit status %d", s.Code)
}

func exitStatusOf(ws syscall.WaitStatus) ExitStatus {
	if ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal(), CoreDumped: ws.CoreDump()}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}

// ExitError reports a server that ended by itself: it crashed (a member loadlab waits
// for exited non-zero or by a signal; the rest of the tree was then stopped), or every
// process of its tree exited.
type ExitError struct {
	Command string
	PID     int    // the process whose exit is reported
	Name    string // its command name (comm)
	Status  ExitStatus
	After   time.Duration // from Start to the exit being seen
	LogPath string
	LogTail []string // the last lines of the log when the exit was seen
	// OOM is set when the kernel killed a process of the tree at its memory
	// limit (Spec.Limits.Memory); the rest of the tree was then stopped.
	OOM *OOMKill
}

// OOMKill is a server killed at its memory limit.
type OOMKill struct {
	Limit      int64 // bytes, as in force
	Kills      int64 // processes the kernel killed
	PSSPeak    int64 // the tree's PSS peak over its samples, 0 if none was taken
	CgroupPeak int64 // the cgroup's own peak, pages of the page cache included
	// SampleEvery is how often PSS was sampled: memory that grows to the
	// limit between two samples is not in PSSPeak, only in CgroupPeak.
	SampleEvery time.Duration
}

// Crashed reports whether the exit was a failure rather than a clean exit of the tree.
func (e *ExitError) Crashed() bool { return !e.Status.Success() }

func (e *ExitError) summary() string {
	if o := e.OOM; o != nil {
		line := fmt.Sprintf("killed at its %s memory limit after %v", quantity.FormatBytes(o.Limit), e.After.Round(time.Millisecond))
		// PSS near the limit is the figure to cite; far below it, the memory
		// grew to the limit between samples, and only the cgroup saw it.
		near := float64(o.PSSPeak) >= 0.8*float64(o.Limit)
		if near {
			line += ", at PSS " + quantity.FormatBytes(o.PSSPeak)
		}
		line += " (cgroup peak " + quantity.FormatBytes(o.CgroupPeak)
		if !near {
			line += fmt.Sprintf(", PSS peak %s in the samples every %v", quantity.FormatBytes(o.PSSPeak), o.SampleEvery)
		}
		line += fmt.Sprintf("; %d process", o.Kills)
		if o.Kills != 1 {
			line += "es"
		}
		return line + " killed by the kernel's OOM killer)"
	}
	what := "exited"
	if e.Crashed() {
		what = "crashed"
	}
	name := ""
	if e.Name != "" {
		name = " (" + e.Name + ")"
	}
	return fmt.Sprintf("%s %v after start: pid %d%s %v",
		what, e.After.Round(time.Millisecond), e.PID, name, e.Status)
}

// Reason is how the server ended, in one line without its command: "crashed
// 2s after start: pid 7 (ruby) exit status 1", "killed at its 512 MiB memory
// limit after 41s, at PSS 509 MiB (...)".
func (e *ExitError) Reason() string { return e.summary() }

func (e *ExitError) Error() string {
	return "server " + e.summary() + ": " + e.Command + formatTail(e.LogPath, e.LogTail)
}

// StartFailure says which step of Start failed.
type StartFailure int

const (
	FailedFiles  StartFailure = iota + 1 // a Spec.File could not be written
	FailedLog                            // the log file could not be opened
	FailedSpawn                          // the command could not be started
	AddressInUse                         // something already answered at the Ready address
	ExitedEarly                          // the server ended before it was ready
	NotReady                             // the probe did not succeed within ReadyTimeout
	Canceled                             // the context ended before the server was ready
	FailedLimits                         // Spec.Limits could not be enforced
)

func (f StartFailure) String() string {
	switch f {
	case FailedFiles:
		return "could not write its files"
	case FailedLog:
		return "could not open its log"
	case FailedSpawn:
		return "could not be started"
	case AddressInUse:
		return "its ready address already answers before start"
	case ExitedEarly:
		return "ended before it was ready"
	case NotReady:
		return "was not ready in time"
	case Canceled:
		return "start was cancelled"
	case FailedLimits:
		return "its limits could not be set"
	}
	return fmt.Sprintf("StartFailure(%d)", int(f))
}

// StartError reports a server that did not get ready. Everything Start had started is
// stopped when it is returned.
type StartError struct {
	Failure StartFailure
	Command string
	Err     error         // the cause: an *ExitError for ExitedEarly, the last probe error for NotReady, ...
	Waited  time.Duration // from start to giving up
	LogPath string
	LogTail []string
}

func (e *StartError) Unwrap() error { return e.Err }

func (e *StartError) Error() string {
	line := "server did not start: " + e.Command + ": " + e.Failure.String()
	switch cause := e.Err.(type) {
	case nil:
	case *ExitError:
		line += ": " + cause.summary()
	default:
		line += ": " + cause.Error()
	}
	if e.Failure == NotReady || e.Failure == Canceled {
		line += fmt.Sprintf(" (waited %v)", e.Waited.Round(time.Millisecond))
	}
	return line + formatTail(e.LogPath, e.LogTail)
}

// StopError reports processes of the tree that could not be ended.
type StopError struct {
	Survivors []int // pids still alive after SIGKILL and the wait for it
	Err       error // a signal that could not be sent, if any
}

func (e *StopError) Unwrap() error { return e.Err }

func (e *StopError) Error() string {
	msg := "server: could not stop every process"
	if len(e.Survivors) > 0 {
		msg += fmt.Sprintf(": %d still alive after SIGKILL: %v", len(e.Survivors), e.Survivors)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// formatTail renders a log tail under an error's one-line summary.
func formatTail(path string, tail []string) string {
	if len(tail) == 0 {
		if path == "" {
			return ""
		}
		return "\n  (" + path + " is empty)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n  last %d lines of %s:", len(tail), path)
	for _, l := range tail {
		b.WriteString("\n  | ")
		b.WriteString(l)
	}
	return b.String()
}

// readTail returns the last n lines of the file at path, secrets masked. Errors give
// no lines: a tail is a diagnostic and must not hide the failure it comes with.
func readTail(path string, n int, secrets []string) []string {
	const window = 64 << 10 // enough for 20 lines of any sane log
	const maxLine = 400     // a binary blob or a minified page must not flood the error
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil
	}
	offset := max(info.Size()-window, 0)
	buf, err := io.ReadAll(io.NewSectionReader(f, offset, window))
	if err != nil {
		return nil
	}
	if offset > 0 {
		// The first line is probably cut; drop it.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	buf = bytes.TrimRight(buf, "\n")
	if len(buf) == 0 {
		return nil
	}
	lines := strings.Split(string(buf), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		l = secret.Replace(strings.TrimRight(l, "\r"), secrets)
		if r := []rune(l); len(r) > maxLine {
			l = string(r[:maxLine]) + "…"
		}
		lines[i] = l
	}
	return lines
}
