package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/target"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// readmeJob is one fenced block of README.md marked <!-- job --> (a shell
// block: each line a command) or <!-- job file=NAME --> (a file the
// commands after it read), under its ### heading.
type readmeJob struct {
	heading, file, text string
	exit                int
}

var (
	jobMark    = regexp.MustCompile("(?s)<!-- job([^>]*)-->\n```[a-z]*\n(.*?)```")
	jobHeading = regexp.MustCompile(`(?m)^### (.+)$`)
	jobAddr    = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

func readmeJobs(t *testing.T) (order []string, jobs map[string][]readmeJob) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	jobs = map[string][]readmeJob{}
	for _, m := range jobMark.FindAllStringSubmatchIndex(s, -1) {
		j := readmeJob{text: s[m[4]:m[5]]}
		for _, attr := range strings.Fields(s[m[2]:m[3]]) {
			k, v, _ := strings.Cut(attr, "=")
			switch k {
			case "file":
				j.file = v
			case "exit":
				j.exit, err = strconv.Atoi(v)
				if err != nil {
					t.Fatalf("README.md: <!-- job %s -->: %v", attr, err)
				}
			default:
				t.Fatalf("README.md: <!-- job %s -->: want file=NAME or exit=N", attr)
			}
		}
		hs := jobHeading.FindAllStringSubmatch(s[:m[0]], -1)
		if len(hs) == 0 {
			t.Fatalf("README.md: a job block before any ### heading")
		}
		j.heading = hs[len(hs)-1][1]
		if _, ok := jobs[j.heading]; !ok {
			order = append(order, j.heading)
		}
		jobs[j.heading] = append(jobs[j.heading], j)
	}
	return order, jobs
}

// bounded rewrites a README command or file so that it ends in seconds:
// every -d/--duration is 1s, a plan's duration 1s and its repeat 2, and a
// capacity search bisects to 99% without confirm repeats (3 or 4 steps of
// its minimum length). Nothing else of the command changes.
func bounded(s string) string {
	s = regexp.MustCompile(`(^|\s)(-d|--duration)[ =]\S+`).ReplaceAllString(s, "${1}-d 1s")
	s = regexp.MustCompile(`(?m)\bduration: *[0-9a-z.]+`).ReplaceAllString(s, "duration: 1s")
	s = regexp.MustCompile(`(?m)^repeat: *\d+`).ReplaceAllString(s, "repeat: 2")
	if strings.HasPrefix(s, "loadlab capacity") {
		s += " --confirm 0 --precision 99%"
	}
	return s
}

// TestReadmeJobs runs the five everyday jobs of README.md as written there,
// against loadlab target servers on loopback in place of the README's
// addresses, bounded in time (see bounded), and checks their exit codes:
// the README's commands cannot rot.
func TestReadmeJobs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("about 25 s of short runs")
	}
	order, jobs := readmeJobs(t)
	var all strings.Builder
	for _, h := range order {
		for _, j := range jobs[h] {
			all.WriteString(j.text)
		}
	}
	for _, want := range []string{"loadlab run http://", "--threshold", "--repeat", "loadlab compare", "--allow-different=port", "loadlab capacity --url", "params:", "loadlab run sweep.yaml"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("README.md's job blocks have no %q", want)
		}
	}
	if len(order) != 5 {
		t.Errorf("README.md has job blocks under %d headings, want the five jobs: %q", len(order), order)
	}

	// The servers the README's text describes, each at a test address.
	ms := time.Millisecond
	addrs := map[string]string{
		"127.0.0.1:8080": strings.TrimPrefix(targettest.Start(t, target.Options{Delay: 2 * ms}), "http://"),
		"127.0.0.1:8081": strings.TrimPrefix(targettest.Start(t, target.Options{Delay: 2 * ms, Status: []target.StatusWeight{{Code: 200, Weight: 95}, {Code: 503, Weight: 5}}}), "http://"),
		// One worker at 15 ms: 66/s, so that 50/s holds and 100/s breaks.
		"127.0.0.1:8082": strings.TrimPrefix(targettest.Start(t, target.Options{Delay: 15 * ms, Workers: 1}), "http://"),
		"127.0.0.1:8083": strings.TrimPrefix(targettest.Start(t, target.Options{Delay: 3 * ms}), "http://"),
		"127.0.0.1:8090": targettest.FreeAddr(t), // the plan's own server
	}
	// `loadlab` on the commands' PATH is this test binary acting as the
	// command (see TestMain), for the plan's server command too.
	bin := t.TempDir()
	shim := fmt.Sprintf("#!/bin/sh\nLOADLAB_TEST_MAIN=1 exec '%s' \"$@\"\n", os.Args[0])
	if err := os.WriteFile(filepath.Join(bin, "loadlab"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	subst := func(t *testing.T, s string) string {
		return jobAddr.ReplaceAllStringFunc(s, func(a string) string {
			if to, ok := addrs[a]; ok {
				return to
			}
			t.Errorf("README.md names %s, which this test does not serve: add it to the test's servers", a)
			return a
		})
	}

	for _, h := range order {
		t.Run(h, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, j := range jobs[h] {
				if j.file != "" {
					if err := os.WriteFile(filepath.Join(dir, j.file), []byte(bounded(subst(t, j.text))), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				for _, line := range strings.Split(strings.TrimSpace(j.text), "\n") {
					line = bounded(subst(t, strings.TrimSpace(line)))
					if line == "" || strings.HasPrefix(line, "#") {
						continue
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					cmd := exec.CommandContext(ctx, "sh", "-c", line)
					cmd.Dir, cmd.Env = dir, env
					out, err := cmd.CombinedOutput()
					cancel()
					code := cmd.ProcessState.ExitCode()
					if err != nil && code == 0 {
						t.Fatalf("%s: %v", line, err)
					}
					if code != j.exit {
						t.Fatalf("%s: exit %d, want %d\n%s", line, code, j.exit, out)
					}
				}
			}
		})
	}
}
