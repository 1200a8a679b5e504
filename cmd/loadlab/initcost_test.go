package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestInitCost: what every command pays before it does anything, the
// package initialisation of `loadlab version` (GODEBUG=inittrace=1),
// stays within a budget: 2 MiB allocated in all, 128 KiB by loadlab's own
// packages. Measured on 2026-12-03: 1.55 MB in 9,232 allocations, 104 KB
// of it loadlab's own, once report's HTML templates were parsed on first
// use (they were 317 KB at init). A package-level template, regexp table or
// client built at init fails it: build those on first use.
func TestInitCost(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "loadlab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("loadlab version: %v\n%s", err, stderr.Bytes())
	}
	var all, own int64
	var top []string
	inits := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		b, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		inits++
		all += b
		if strings.HasPrefix(f[1], "github.com/loadlab/loadlab/") {
			own += b
			if b > 16<<10 {
				top = append(top, f[1]+" "+f[7])
			}
		}
	}
	if inits < 50 {
		t.Fatalf("read %d package inits from GODEBUG=inittrace=1, want hundreds:\n%s", inits, stderr.Bytes())
	}
	if all > 2<<20 {
		t.Errorf("package init allocates %d bytes, want at most 2 MiB", all)
	}
	if own > 128<<10 {
		t.Errorf("loadlab's own packages allocate %d bytes at init, want at most 128 KiB; over 16 KiB: %v", own, top)
	}
	t.Logf("%d package inits allocate %d bytes, %d of them loadlab's own", inits, all, own)
}
