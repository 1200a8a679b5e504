package dashboard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// openWait is how long Open waits for the opener to fail; one still
// running then (a browser itself rather than a launcher) is left to run.
const openWait = time.Second

// OpenCommands are the command lines that may open url in a browser, in
// the order tried: each of $BROWSER's commands (a list separated as PATH
// is; "%s" in a command is replaced by url, else url is its last
// argument), then the system's opener: xdg-open (Linux, the BSDs), open
// (macOS), or rundll32 url.dll,FileProtocolHandler (Windows).
func OpenCommands(url, browserEnv, goos string) [][]string {
	var out [][]string
	sep := ":"
	if goos == "windows" {
		sep = ";"
	}
	for _, c := range strings.Split(browserEnv, sep) {
		args := strings.Fields(c)
		if len(args) == 0 {
			continue
		}
		subst := false
		for i, a := range args {
			if strings.Contains(a, "%s") {
				args[i], subst = strings.ReplaceAll(a, "%s", url), true
			}
		}
		if !subst {
			args = append(args, url)
		}
		out = append(out, args)
	}
	switch goos {
	case "darwin":
		out = append(out, []string{"open", url})
	case "windows":
		out = append(out, []string{"rundll32", "url.dll,FileProtocolHandler", url})
	default:
		out = append(out, []string{"xdg-open", url})
	}
	return out
}

// Open opens url in a browser with the first of OpenCommands that starts
// and does not fail within a second. An error says why none did; the
// caller warns and goes on (a page not opened never stops a run).
func Open(url string) error {
	var errs []error
	for _, args := range OpenCommands(url, os.Getenv("BROWSER"), runtime.GOOS) {
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", args[0], err))
			continue
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", args[0], err))
		case <-time.After(openWait):
			return nil // still running: a browser, reaped when it ends
		}
	}
	return errors.Join(errs...)
}
