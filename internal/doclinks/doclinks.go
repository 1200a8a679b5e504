// Package doclinks checks that the relative links of a tree of Markdown files
// resolve: the file or directory a link names exists inside the tree, and an
// anchor (#part) names a heading of the Markdown file it points into, by the
// anchors GitHub gives headings. It owns no state; Check reads the files it
// is given.
//
// The Markdown is parsed with goldmark (CommonMark), so that links in code
// blocks and code spans are not taken for links. The heading anchors are
// written here because goldmark's own heading IDs are not GitHub's: GitHub
// lowercases the heading's text, drops punctuation other than '-' and '_'
// (and symbols), turns each space into '-', and numbers a repeated anchor
// -1, -2, ...
package doclinks

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// Broken is a link that does not resolve.
type Broken struct {
	File   string // the Markdown file, relative to the tree's root, with '/'
	Line   int    // 1-based line of the link
	Target string // the link as written
	Reason string // what is missing
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

// skipDir reports whether the walk leaves out a directory: hidden ones,
// node_modules and testdata (fixtures, whose links are theirs to break).
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata"
}

// Files lists the Markdown files under root, relative to it, with '/'.
func Files(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.EqualFold(filepath.Ext(p), ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// Check reads every Markdown file under root and returns the links that do
// not resolve, in file and line order.
func Check(root string) ([]Broken, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	docs := map[string]*doc{}
	read := func(name string) (*doc, error) {
		if d, ok := docs[name]; ok {
			return d, nil
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		d := parse(src)
		docs[name] = d
		return d, nil
	}
	var broken []Broken
	for _, name := range files {
		d, err := read(name)
		if err != nil {
			return nil, err
		}
		for _, l := range d.links {
			if reason := resolve(root, name, l.target, read); reason != "" {
				broken = append(broken, Broken{File: name, Line: l.line, Target: l.target, Reason: reason})
			}
		}
	}
	return broken, nil
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// resolve says why the link target in the file from does not resolve, or ""
// when it does (or is not relative).
func resolve(root, from, target string, read func(string) (*doc, error)) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // absolute: another site's to keep
	}
	p, anchor, _ := strings.Cut(target, "#")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	p, err := url.PathUnescape(p)
	if err != nil {
		return "not a valid path: " + err.Error()
	}
	file := from
	if p != "" {
		if strings.HasPrefix(p, "/") {
			file = path.Clean(strings.TrimPrefix(p, "/")) // GitHub: from the repository's root
		} else {
			file = path.Join(path.Dir(from), p)
		}
		if file == ".." || strings.HasPrefix(file, "../") {
			return "points outside the repository"
		}
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return "no such file or directory: " + file
		}
		if info.IsDir() {
			if anchor == "" {
				return ""
			}
			file = path.Join(file, "README.md") // GitHub shows a directory's README
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
				return "an anchor into a directory without a README.md"
			}
		}
	}
	if anchor == "" || !strings.EqualFold(path.Ext(file), ".md") {
		return "" // a line anchor (#L10) into code, say, is GitHub's viewer's
	}
	d, err := read(file)
	if err != nil {
		return err.Error()
	}
	if !d.anchors[strings.ToLower(anchor)] {
		return fmt.Sprintf("no heading in %s has the anchor #%s", file, anchor)
	}
	return ""
}

type link struct {
	target string
	line   int
}

type doc struct {
	links   []link
	anchors map[string]bool
}

var (
	markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))
	// htmlAnchor finds the anchors a document sets in raw HTML: <a id="x">.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// htmlLink finds the links of raw HTML: <a href="x">, <img src="x">.
	htmlLink = regexp.MustCompile(`<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)"`)
)

func parse(src []byte) *doc {
	d := &doc{anchors: map[string]bool{}}
	lineOf := func(offset int) int { return bytes.Count(src[:offset], []byte("\n")) + 1 }
	seen := map[string]int{}
	root := markdown.Parser().Parse(text.NewReader(src))
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			slug := Slug(plainText(n, src))
			if k := seen[slug]; k > 0 {
				d.anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				d.anchors[slug] = true
			}
			seen[slug]++
		case *ast.Link:
			d.links = append(d.links, link{string(n.Destination), lineOf(offset(n, src))})
		case *ast.Image:
			d.links = append(d.links, link{string(n.Destination), lineOf(offset(n, src))})
		case *ast.RawHTML, *ast.HTMLBlock:
			var raw []byte
			var lines *text.Segments
			if r, ok := n.(*ast.RawHTML); ok {
				lines = r.Segments
			} else {
				lines = n.Lines()
			}
			start := -1
			for i := 0; i < lines.Len(); i++ {
				s := lines.At(i)
				if start < 0 {
					start = s.Start
				}
				raw = append(raw, s.Value(src)...)
			}
			for _, m := range htmlAnchor.FindAllSubmatch(raw, -1) {
				d.anchors[strings.ToLower(string(m[1]))] = true
			}
			for _, m := range htmlLink.FindAllSubmatchIndex(raw, -1) {
				d.links = append(d.links, link{string(raw[m[2]:m[3]]), lineOf(max(start, 0))})
			}
		}
		return ast.WalkContinue, nil
	})
	return d
}

// offset is where a link starts in src, near enough for its line: the first
// text of its own or of the block it is in.
func offset(n ast.Node, src []byte) int {
	for p := n; p != nil; p = p.Parent() {
		if t, ok := p.(*ast.Text); ok {
			return t.Segment.Start
		}
		for c := p.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				return t.Segment.Start
			}
		}
		if p.Type() == ast.TypeBlock && p.Lines() != nil && p.Lines().Len() > 0 {
			return p.Lines().At(0).Start
		}
	}
	return 0
}

// plainText is a heading's text as GitHub renders it: code spans' content
// kept, emphasis marks and HTML tags dropped.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// Slug is the anchor GitHub gives a heading of this text, before a repeat's
// -1, -2: lowercase; letters, marks, numbers, connector punctuation ('_')
// and '-' kept; each space made '-'; everything else dropped (the rule of
// github-slugger, which GitHub's renderer follows).
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
