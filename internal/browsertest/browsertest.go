// Package browsertest finds what the browser tests drive: Node.js, the
// playwright-core package that scripts/test-deps installs into tools/npm
// (npm ci), and Debian's Chromium. Tests write a small Playwright script,
// run it with Node, and read what it prints; nothing is downloaded at test
// time (Playwright's own browser download does not work here: it is never
// used, executablePath always names the system Chromium).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// LaunchArgs are the Chromium flags every browser test uses: headless, no
// sandbox (the tests may run as root), and none of Chromium's background
// connections, which a closed network refuses.
var LaunchArgs = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
}

// Root is the module's root directory (the one holding go.mod), found by
// walking up from the working directory.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("browsertest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Modules is tools/npm/node_modules, failing the test when scripts/test-deps
// has not installed it.
func Modules(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(Root(t), "tools", "npm", "node_modules")
	if _, err := os.Stat(filepath.Join(dir, "playwright-core", "package.json")); err != nil {
		t.Fatalf("browsertest: playwright-core is not installed in %s: run scripts/test-deps (%v)", dir, err)
	}
	return dir
}

// Chromium is the system Chromium's path.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("browsertest: no chromium on PATH: run scripts/test-deps")
	return ""
}

// Command is `node -e script` with NODE_PATH set to the installed modules and
// CHROMIUM and CHROMIUM_ARGS (JSON array) in its environment, so the script
// can `require('playwright-core').chromium.launch({executablePath:
// process.env.CHROMIUM, args: JSON.parse(process.env.CHROMIUM_ARGS)})`.
func Command(ctx context.Context, t testing.TB, script string, args ...string) *exec.Cmd {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("browsertest: no node on PATH: run scripts/test-deps")
	}
	cmd := exec.CommandContext(ctx, node, append([]string{"-e", script, "--"}, args...)...)
	quoted := make([]string, len(LaunchArgs))
	for i, a := range LaunchArgs {
		quoted[i] = `"` + a + `"`
	}
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+Modules(t),
		"CHROMIUM="+Chromium(t),
		"CHROMIUM_ARGS=["+strings.Join(quoted, ",")+"]",
	)
	return cmd
}
