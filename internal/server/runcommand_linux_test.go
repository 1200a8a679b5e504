package server

// (Run makes the test process a subreaper; the portable tests then run in a
// fresh test binary of their own: notSubreaper.)

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunCommand: Run waits for a command, reports how it failed with its
// output's tail (secrets masked), stops it with its whole tree when it
// outlasts its timeout or the context, and leaves nothing it started.
func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	t.Run("success, files written first", func(t *testing.T) {
		log := filepath.Join(dir, "ok.log")
		err := Run(context.Background(), Spec{
			Shell: `cat seed.sql > restored && echo restored`, Dir: dir, LogPath: log,
			Files: []File{{Path: "seed.sql", Content: []byte("INSERT 1")}},
		}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "restored")); string(b) != "INSERT 1" {
			t.Errorf("restored = %q", b)
		}
		if b, _ := os.ReadFile(log); string(b) != "restored\n" {
			t.Errorf("log = %q", b)
		}
	})
	t.Run("failure: status and masked tail", func(t *testing.T) {
		err := Run(context.Background(), Spec{
			Argv:    []string{"sh", "-c", `echo "connecting with hunter2"; echo "pg_restore: error: database busy" >&2; exit 3`},
			Secrets: []string{"hunter2"}, LogPath: filepath.Join(dir, "fail.log"),
		}, time.Minute)
		var ce *CommandError
		if !errors.As(err, &ce) || ce.Status.Code != 3 || ce.TimedOut != 0 {
			t.Fatalf("err = %#v", err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "pg_restore: error: database busy") || strings.Contains(msg, "hunter2") || !strings.Contains(msg, "connecting with ***") {
			t.Errorf("message:\n%s", msg)
		}
	})
	t.Run("timeout stops the tree", func(t *testing.T) {
		sleep := uniqueSleep()
		start := time.Now()
		err := Run(context.Background(), Spec{
			Shell: fmt.Sprintf("sleep %[1]s & sleep %[1]s; echo never", sleep), Grace: time.Second,
		}, 300*time.Millisecond)
		var ce *CommandError
		if !errors.As(err, &ce) || ce.TimedOut != 300*time.Millisecond || !strings.Contains(err.Error(), "still running after 300ms (the timeout): stopped with its process tree") {
			t.Fatalf("err = %v", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("took %v", took)
		}
		assertNoProcessWith(t, sleep)
	})
	t.Run("what a command leaves running is stopped", func(t *testing.T) {
		sleep := uniqueSleep()
		if err := Run(context.Background(), Spec{Shell: fmt.Sprintf("sleep %s & exit 0", sleep)}, time.Minute); err != nil {
			t.Fatal(err)
		}
		assertNoProcessWith(t, sleep)
	})
	t.Run("the context ends it", func(t *testing.T) {
		sleep := uniqueSleep()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		err := Run(ctx, Spec{Shell: fmt.Sprintf("sleep %[1]s & sleep %[1]s", sleep)}, time.Minute)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		assertNoProcessWith(t, sleep)
	})
}
