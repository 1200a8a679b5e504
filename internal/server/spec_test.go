package server

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/limits"
)

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		fields []string // SpecError fields expected, in order; none: valid
	}{
		{name: "argv", spec: Spec{Argv: []string{"nginx", "-g", "daemon off;"}}},
		{name: "shell with everything", spec: Spec{
			Shell: "puma -t 5:5", Dir: "/srv", Env: map[string]string{"LD_PRELOAD": "x.so"},
			Files: []File{{Path: "a.cfg"}, {Path: "b/c.cfg", Mode: 0o600}},
			Ready: "http://127.0.0.1:3000/health", ReadyTimeout: time.Second,
			StopSignal: syscall.SIGQUIT, Grace: time.Second, LogPath: "/tmp/x.log",
			MemoryQuota: 2560 << 20, SampleInterval: 100 * time.Millisecond,
		}},
		{name: "tcp probe", spec: Spec{Argv: []string{"x"}, Ready: "tcp://localhost:6379"}},
		{name: "https probe", spec: Spec{Argv: []string{"x"}, Ready: "https://[::1]:8443/"}},
		{name: "no command", spec: Spec{}, fields: []string{"Argv"}},
		{name: "both commands", spec: Spec{Argv: []string{"a"}, Shell: "b"}, fields: []string{"Shell"}},
		{name: "empty program", spec: Spec{Argv: []string{""}}, fields: []string{"Argv[0]"}},
		{name: "NUL in argument", spec: Spec{Argv: []string{"a", "b\x00"}}, fields: []string{"Argv[1]"}},
		{name: "bad env name", spec: Spec{Shell: "x", Env: map[string]string{"A=B": "1"}}, fields: []string{"Env"}},
		{name: "empty file path", spec: Spec{Shell: "x", Files: []File{{}}}, fields: []string{"Files[0].Path"}},
		{name: "duplicate file", spec: Spec{Shell: "x", Files: []File{{Path: "a"}, {Path: "./a"}}}, fields: []string{"Files[1].Path"}},
		{name: "file mode with type bits", spec: Spec{Shell: "x", Files: []File{{Path: "a", Mode: 1 << 31}}}, fields: []string{"Files[0].Mode"}},
		{name: "ready scheme", spec: Spec{Shell: "x", Ready: "ftp://h:21"}, fields: []string{"Ready"}},
		{name: "ready without port", spec: Spec{Shell: "x", Ready: "http://localhost/health"}, fields: []string{"Ready"}},
		{name: "ready port out of range", spec: Spec{Shell: "x", Ready: "tcp://h:70000"}, fields: []string{"Ready"}},
		{name: "tcp probe with path", spec: Spec{Shell: "x", Ready: "tcp://h:1/x"}, fields: []string{"Ready"}},
		{name: "negative durations", spec: Spec{Shell: "x", ReadyTimeout: -1, Grace: -1}, fields: []string{"ReadyTimeout", "Grace"}},
		{name: "bad signal", spec: Spec{Shell: "x", StopSignal: 99}, fields: []string{"StopSignal"}},
		{name: "negative quota", spec: Spec{Shell: "x", MemoryQuota: -1}, fields: []string{"MemoryQuota"}},
		{name: "interval too short", spec: Spec{Shell: "x", SampleInterval: time.Millisecond}, fields: []string{"SampleInterval"}},
		{name: "every problem at once", spec: Spec{Ready: "x", Grace: -1}, fields: []string{"Argv", "Ready", "Grace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var se *SpecError
					if !errors.As(e, &se) {
						t.Fatalf("error %v (%T) is not a *SpecError", e, e)
					}
					got = append(got, se.Field)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("Validate() fields = %v, want %v (error: %v)", got, tt.fields, err)
			}
		})
	}
}

func TestSpecDefaultsCopy(t *testing.T) {
	orig := Spec{Argv: []string{"a"}, Env: map[string]string{"K": "v"}}
	s := orig.withDefaults()
	s.Argv[0], s.Env["K"] = "changed", "changed"
	if orig.Argv[0] != "a" || orig.Env["K"] != "v" {
		t.Errorf("withDefaults shares the caller's slices or map: %+v", orig)
	}
	if s.ReadyTimeout != DefaultReadyTimeout || s.StopSignal != syscall.SIGTERM ||
		s.Grace != DefaultGrace || s.SampleInterval != DefaultSampleInterval {
		t.Errorf("defaults not applied: %+v", s)
	}
}

func TestCommand(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Argv: []string{"nginx", "-g", "daemon off;"}}, `nginx -g "daemon off;"`},
		{Spec{Shell: "puma -t 5:5"}, "puma -t 5:5"},
		{Spec{Shell: strings.Repeat("x", 200)}, strings.Repeat("x", 120) + "…"},
	}
	for _, tt := range tests {
		if got := tt.spec.command(); got != tt.want {
			t.Errorf("command() = %q, want %q", got, tt.want)
		}
	}
}

// The OOM reason cites PSS when it was near the limit, and says the samples
// missed the growth when it was not.
func TestOOMReason(t *testing.T) {
	near := &ExitError{After: 41 * time.Second, OOM: &OOMKill{Limit: 512 << 20, Kills: 1, PSSPeak: 509 << 20, CgroupPeak: 512 << 20, SampleEvery: 250 * time.Millisecond}}
	if got, want := near.Reason(), "killed at its 512 MiB memory limit after 41s, at PSS 509 MiB (cgroup peak 512 MiB; 1 process killed by the kernel's OOM killer)"; got != want {
		t.Errorf("near:\n got %q\nwant %q", got, want)
	}
	fast := &ExitError{After: 156 * time.Millisecond, OOM: &OOMKill{Limit: 48 << 20, Kills: 2, PSSPeak: 2 << 20, CgroupPeak: 48 << 20, SampleEvery: 250 * time.Millisecond}}
	if got, want := fast.Reason(), "killed at its 48 MiB memory limit after 156ms (cgroup peak 48 MiB, PSS peak 2 MiB in the samples every 250ms; 2 processes killed by the kernel's OOM killer)"; got != want {
		t.Errorf("fast:\n got %q\nwant %q", got, want)
	}
}

func TestSpecLimitsValidated(t *testing.T) {
	for _, l := range []limits.Limits{{Memory: -1}, {CPUs: limits.CPUs{List: []int{-1}}}, {SwapSet: true}} {
		var se *SpecError
		if err := (Spec{Argv: []string{"x"}, Limits: l}).Validate(); !errors.As(err, &se) || se.Field != "Limits" {
			t.Errorf("%+v: %v", l, err)
		}
	}
	if err := (Spec{Argv: []string{"x"}, Limits: limits.Limits{Memory: 64 << 20, SwapSet: true}}).Validate(); err != nil {
		t.Error(err)
	}
}
