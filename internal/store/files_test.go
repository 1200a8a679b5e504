package store

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveTemp: the temporary files a kill left, in the directory and
// below it, are removed; every other file stays.
func TestRemoveTemp(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) string {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	temps := []string{write(".experiment.json.tmp-123"), write("runs/001/.report.html.tmp-456"), write(".loadlab-check-789")}
	kept := []string{write("experiment.json"), write("runs/001/report.html"), write("notes.tmp-1"), write(".hidden"), write("experiment.db-journal")}
	if err := RemoveTemp(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range temps {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if err := RemoveTemp(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a directory not made yet: %v", err)
	}
}
