package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/result"
)

func withFingerprint(s experiment.Side, f result.Fingerprint, point string) experiment.Side {
	f.Hash = f.Sum()
	for _, r := range s.Results {
		r.Fingerprint = &f
		if point != "" {
			r.Settings.Extra = map[string]string{"point": point}
		}
	}
	return s
}

// TestLikenessHeadsTheComparison: what differs between A and B is said
// above the table, field by field, in text, markdown and HTML; an equal
// fingerprint says nothing; two points of one plan are named; a side
// without a fingerprint is said to be unchecked.
func TestLikenessHeadsTheComparison(t *testing.T) {
	open := result.Fingerprint{Workload: "open", Shape: "1.5/s for 10s, at most 20 VUs", Steps: []string{"s: GET /"}, Target: "http://127.0.0.1:3000", Server: "thin start", Plan: "one"}
	closed := result.Fingerprint{Workload: "closed", Shape: "10 VUs for 10s", Steps: []string{"s: GET /"}, Target: "http://127.0.0.1:3000", Server: "puma", Plan: "two"}
	c := experiment.Compare(withFingerprint(side("a", 100, 101, 102, 103), open, ""), withFingerprint(side("b", 90, 91, 92, 93), closed, ""))
	var text, md, page bytes.Buffer
	if err := Comparison(&text, c); err != nil {
		t.Fatal(err)
	}
	ComparisonMarkdown(&md, c)
	ComparisonHTML(&page, c)
	head, _, ok := strings.Cut(text.String(), "figure ")
	for _, want := range []string{"A and B measured different things", "  workload: A open · B closed\n", "  shape: A 1.5/s for 10s, at most 20 VUs · B 10 VUs for 10s\n", "  server: A thin start · B puma\n"} {
		if !ok || !strings.Contains(head, want) {
			t.Errorf("text header lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(head, "target:") || strings.Contains(head, "steps") {
		t.Errorf("the header names fields that do not differ:\n%s", head)
	}
	if mdHead, _, _ := strings.Cut(md.String(), "| figure"); !strings.Contains(mdHead, "- workload: A open · B closed\n") {
		t.Errorf("markdown header:\n%s", md.String())
	}
	if !strings.Contains(page.String(), "workload: A open · B closed") {
		t.Errorf("the HTML page lacks the differences")
	}

	same := experiment.Compare(withFingerprint(side("a", 100, 101, 102, 103), open, ""), withFingerprint(side("b", 90, 91, 92, 93), open, ""))
	if l := Likeness(same); l != nil {
		t.Errorf("equal fingerprints: %q", l)
	}

	puma := open
	puma.Server = "puma"
	points := experiment.Compare(withFingerprint(side("x", 100, 101, 102, 103), open, "server=thin"), withFingerprint(side("x", 90, 91, 92, 93), puma, "server=puma"))
	if l := Likeness(points); len(l) != 2 || l[0] != "A and B ran one plan at different points (A server=thin, B server=puma); they differ where its params do:" || l[1] != "  server: A thin start · B puma" {
		t.Errorf("two points of one plan: %q", l)
	}

	old := experiment.Compare(side("a", 100, 101, 102, 103), withFingerprint(side("b", 90, 91, 92, 93), open, ""))
	if l := Likeness(old); len(l) != 1 || !strings.HasPrefix(l[0], "A has no plan fingerprint") {
		t.Errorf("an older A: %q", l)
	}
}
