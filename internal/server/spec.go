package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loadlab/loadlab/internal/limits"
	"github.com/loadlab/loadlab/internal/secret"
)

// Defaults applied by [Spec.withDefaults] to zero fields.
const (
	DefaultReadyTimeout   = 30 * time.Second
	DefaultStopSignal     = syscall.SIGTERM
	DefaultGrace          = 10 * time.Second
	DefaultSampleInterval = 250 * time.Millisecond
	DefaultFileMode       = fs.FileMode(0o644)

	// minSampleInterval keeps a mistyped interval from turning the sampler into a busy loop.
	minSampleInterval = 10 * time.Millisecond
)

// Spec describes the server under test. Zero fields take the defaults above.
type Spec struct {
	// Exactly one of Argv and Shell: the command as an argument vector (Argv[0] is looked
	// up in PATH), or a command line run by /bin/sh -c.
	Argv  []string
	Shell string

	// Dir is the working directory of the server and the base of relative File paths.
	Dir string
	// Env is added to loadlab's own environment; it wins over inherited variables.
	Env map[string]string
	// Files are written before the server starts, in order.
	Files []File

	// Ready is "http://host:port/path" (or https), ready when it answers 2xx or 3xx, or
	// "tcp://host:port", ready when it accepts a connection. Empty: ready at once.
	Ready        string
	ReadyTimeout time.Duration

	// StopSignal goes to the whole tree first; what is alive Grace later gets SIGKILL.
	StopSignal syscall.Signal
	Grace      time.Duration

	// LogPath receives the server's stdout and stderr, truncated at start. Empty: a
	// temporary file, removed by Stop.
	LogPath string

	// MemoryQuota in bytes is only compared against the PSS figures of the summary.
	MemoryQuota int64

	// Limits are enforced on the whole tree (cgroups, or CPU affinity; see
	// package limits). The zero value limits nothing; outside Linux, Start
	// refuses any other.
	Limits limits.Limits

	// SampleInterval is how often the monitor samples the tree.
	SampleInterval time.Duration

	// Secrets are values masked (secret.Replace) wherever loadlab shows
	// the server: its command (Command, result.json's server.command), the
	// log tail its errors carry, and the log file itself, masked as the
	// server writes it (secret.Writer).
	Secrets []string
	// Learned are secrets known only as the load runs (the credentials
	// VUs capture): server.log masks them from when they are learned.
	Learned *secret.Learned
}

// File is a file the server needs, already rendered.
type File struct {
	Path    string // relative paths are relative to Spec.Dir
	Content []byte
	Mode    fs.FileMode // zero: DefaultFileMode
}

// SpecError is one problem with a Spec; Validate joins them with errors.Join.
type SpecError struct {
	Field string // as spelled in Spec, e.g. "Ready" or "Files[2].Path"
	Msg   string
}

func (e *SpecError) Error() string {
	return "server spec: " + e.Field + ": " + e.Msg
}

// Validate reports every problem of s as a *SpecError, joined. It touches no file and
// starts nothing, so plans can be checked before any run.
func (s Spec) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, &SpecError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}

	switch {
	case len(s.Argv) == 0 && s.Shell == "":
		add("Argv", "no command: set Argv or Shell")
	case len(s.Argv) > 0 && s.Shell != "":
		add("Shell", "set only one of Argv and Shell")
	case len(s.Argv) > 0 && s.Argv[0] == "":
		add("Argv[0]", "empty program name")
	}
	for i, a := range s.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			add(fmt.Sprintf("Argv[%d]", i), "contains a NUL byte")
		}
	}
	if strings.IndexByte(s.Shell, 0) >= 0 {
		add("Shell", "contains a NUL byte")
	}
	if strings.IndexByte(s.Dir, 0) >= 0 {
		add("Dir", "contains a NUL byte")
	}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			add("Env", "invalid variable name %q", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			add("Env["+k+"]", "value contains a NUL byte")
		}
	}
	seen := make(map[string]int, len(s.Files))
	for i, f := range s.Files {
		field := fmt.Sprintf("Files[%d]", i)
		if f.Path == "" {
			add(field+".Path", "empty path")
			continue
		}
		if strings.IndexByte(f.Path, 0) >= 0 {
			add(field+".Path", "contains a NUL byte")
			continue
		}
		if f.Mode&^fs.ModePerm != 0 {
			add(field+".Mode", "%v is not a plain permission mode", f.Mode)
		}
		clean := filepath.Clean(f.Path)
		if j, dup := seen[clean]; dup {
			add(field+".Path", "%q is also Files[%d]", f.Path, j)
		}
		seen[clean] = i
	}
	if s.Ready != "" {
		if _, err := parseReady(s.Ready); err != nil {
			add("Ready", "%v", err)
		}
	}
	if s.ReadyTimeout < 0 {
		add("ReadyTimeout", "negative duration %v", s.ReadyTimeout)
	}
	if s.StopSignal < 0 || s.StopSignal > 64 {
		add("StopSignal", "%d is not a signal number", int(s.StopSignal))
	}
	if s.Grace < 0 {
		add("Grace", "negative duration %v", s.Grace)
	}
	if strings.IndexByte(s.LogPath, 0) >= 0 {
		add("LogPath", "contains a NUL byte")
	}
	if s.MemoryQuota < 0 {
		add("MemoryQuota", "negative quota %d", s.MemoryQuota)
	}
	if l := s.Limits; l.Memory < 0 || l.Swap < 0 || l.CPUs.Count < 0 || l.CPUs.Quota < 0 || slices.ContainsFunc(l.CPUs.List, func(c int) bool { return c < 0 }) {
		add("Limits", "negative limit in %+v", l)
	} else if l.SwapSet && l.Memory == 0 {
		add("Limits", "a swap limit needs a memory limit")
	}
	if s.SampleInterval < 0 || (s.SampleInterval > 0 && s.SampleInterval < minSampleInterval) {
		add("SampleInterval", "%v: want 0 (default %v) or at least %v",
			s.SampleInterval, DefaultSampleInterval, minSampleInterval)
	}
	return errors.Join(errs...)
}

// withDefaults returns a copy of s with zero fields set to their defaults and the
// slices and map copied, so the caller may change its Spec while the server runs.
func (s Spec) withDefaults() Spec {
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = DefaultReadyTimeout
	}
	if s.StopSignal == 0 {
		s.StopSignal = DefaultStopSignal
	}
	if s.Grace == 0 {
		s.Grace = DefaultGrace
	}
	if s.SampleInterval == 0 {
		s.SampleInterval = DefaultSampleInterval
	}
	s.Argv = append([]string(nil), s.Argv...)
	s.Limits.CPUs.List = append([]int(nil), s.Limits.CPUs.List...)
	s.Files = append([]File(nil), s.Files...)
	env := make(map[string]string, len(s.Env))
	for k, v := range s.Env {
		env[k] = v
	}
	s.Env = env
	return s
}

// command is the server's command line for messages, cut to a readable length.
func (s Spec) command() string {
	line := s.Shell
	if line == "" {
		quoted := make([]string, len(s.Argv))
		for i, a := range s.Argv {
			if a == "" || strings.ContainsAny(a, " \t\n'\"\\$") {
				a = strconv.Quote(a)
			}
			quoted[i] = a
		}
		line = strings.Join(quoted, " ")
	}
	// Masked before it is cut: a secret cut in two would leave its head.
	line = secret.Replace(line, s.Secrets)
	// A script written as a YAML block reads as one line: "a; b; c".
	if strings.Contains(line, "\n") {
		var parts []string
		for l := range strings.SplitSeq(line, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				parts = append(parts, l)
			}
		}
		line = strings.Join(parts, "; ")
	}
	const max = 120
	if r := []rune(line); len(r) > max {
		line = string(r[:max]) + "…"
	}
	return line
}

// readyProbe is a parsed Spec.Ready.
type readyProbe struct {
	url     string // http and https: the URL to GET
	address string // host:port to dial (tcp) or the URL's host (http)
	tcpOnly bool
}

func parseReady(s string) (readyProbe, error) {
	u, err := url.Parse(s)
	if err != nil {
		return readyProbe{}, fmt.Errorf("%q: %w", s, err)
	}
	switch u.Scheme {
	case "http", "https", "tcp":
	default:
		return readyProbe{}, fmt.Errorf("%q: scheme %q: want http, https or tcp", s, u.Scheme)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return readyProbe{}, fmt.Errorf("%q: want host:port: %w", s, err)
	}
	if host == "" {
		return readyProbe{}, fmt.Errorf("%q: no host", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return readyProbe{}, fmt.Errorf("%q: port %q is not 1..65535", s, port)
	}
	if u.Scheme == "tcp" {
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return readyProbe{}, fmt.Errorf("%q: a tcp probe takes only host:port", s)
		}
		return readyProbe{address: u.Host, tcpOnly: true}, nil
	}
	return readyProbe{url: u.String(), address: u.Host}, nil
}
