package doclinks

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ heading, want string }{
		{"Install", "install"},
		{"Matrices: the factor and its conditions", "matrices-the-factor-and-its-conditions"},
		{"Kubernetes (loadlab k8s)", "kubernetes-loadlab-k8s"},
		{"Portable engine against epoll (bench/engine.sh)", "portable-engine-against-epoll-benchenginesh"},
		{"What --out means", "what---out-means"},
		{"snake_case kept", "snake_case-kept"},
		{"Ünïcode Größe", "ünïcode-größe"},
		{"  trimmed  ", "trimmed"},
		{"Rate × time — and 2² ‿ too", "rate--time--and-2²-‿-too"},
	} {
		t.Run(tc.heading, func(t *testing.T) {
			t.Parallel()
			if got := Slug(tc.heading); got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
			}
		})
	}
}

// TestCheck runs the checker on a small tree whose broken links are known,
// so that TestRepository's silence means the links hold, not that nothing
// was checked.
func TestCheck(t *testing.T) {
	t.Parallel()
	broken, err := Check(filepath.Join("testdata", "site"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.String())
	}
	want := []string{
		"README.md:13: DESIGN.md: no such file or directory: DESIGN.md",
		"README.md:13: #installing: no heading in README.md has the anchor #installing",
		"README.md:13: #install-2: no heading in README.md has the anchor #install-2",
		"README.md:14: sub/guide.md#the-guid: no heading in sub/guide.md has the anchor #the-guid",
		"README.md:14: ../../../outside.md: points outside the repository",
		"README.md:22: missing.png: no such file or directory: missing.png",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRepository checks every relative link of the repository's Markdown
// files (testdata and node_modules left out), anchors included.
func TestRepository(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 || files[0] != "README.md" && !contains(files, "README.md") {
		t.Fatalf("found only %v under %s: not the repository's root?", files, root)
	}
	broken, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Errorf("%s", b)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
