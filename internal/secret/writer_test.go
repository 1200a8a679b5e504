package secret

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// scanMask is the rule Writer follows, on a whole text: at each byte, the
// longest secret that starts there is masked.
func scanMask(text string, secrets []string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		best := 0
		for _, s := range secrets {
			if len(s) >= MinLength && len(s) > best && strings.HasPrefix(text[i:], s) {
				best = len(s)
			}
		}
		if best > 0 {
			b.WriteString(Mask)
			i += best
			continue
		}
		b.WriteByte(text[i])
		i++
	}
	return b.String()
}

// TestWriterMasksWholeSecrets: written in any chunks, a stream comes out as
// a scan of the whole masks it: secrets across chunk boundaries, one secret
// the start of another, overlapping ones, a secret at the very end; and no
// secret is left in clear that did not overlap another.
func TestWriterMasksWholeSecrets(t *testing.T) {
	secrets := []string{"s3cret", "s3cretABCDEF", "tok-1234", "1234abcd", "ab"}
	rng := rand.New(rand.NewPCG(1, 2))
	words := append(append([]string{}, secrets...), "x", "\n", " ", "s3c", "ret", "tok-", "ABCDEF", "*")
	for round := range 3000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		text := b.String()
		var out bytes.Buffer
		w := NewWriter(&out, secrets)
		for rest := text; rest != ""; {
			n := min(1+rng.IntN(12), len(rest))
			if _, err := w.Write([]byte(rest[:n])); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if want := scanMask(text, secrets); out.String() != want {
			t.Fatalf("round %d: %q\nwritten as %q\nwant      %q", round, text, out.String(), want)
		}
		if strings.Contains(out.String(), "s3cret") {
			t.Fatalf("round %d: %q left a secret in %q", round, text, out.String())
		}
	}
}

// TestWriterHoldsBackLittle: what the writer keeps is bounded by the longest
// secret's longest form (its base64, here), not by the stream, and many
// secrets are masked at once.
func TestWriterHoldsBackLittle(t *testing.T) {
	var secrets []string
	for i := range 100_000 {
		secrets = append(secrets, fmt.Sprintf("pw-%06d", i))
	}
	secrets = append(secrets, "password123")
	var out bytes.Buffer
	w := NewWriter(&out, secrets)
	line := []byte(strings.Repeat("log line without a secret ", 40) + "\n")
	for range 10_000 {
		w.Write(line)
		if len(w.held) >= len(base64.RawStdEncoding.EncodeToString([]byte("password123"))) {
			t.Fatalf("holds %d bytes back", len(w.held))
		}
	}
	w.Write([]byte("the password123 is here, and pw-031337 too"))
	w.Close()
	if !strings.HasSuffix(out.String(), "the *** is here, and *** too") {
		t.Errorf("ends with %q", out.String()[out.Len()-40:])
	}
	if out.Len() != 10_000*len(line)+len("the *** is here, and *** too") {
		t.Errorf("%d bytes out", out.Len())
	}
}

// TestWriterLearns: values added to a Learned are masked, in each form,
// from the Writer's next write on, beside its own secrets; it masks the
// newest MaxLearned of them, and what it holds back stays bounded.
func TestWriterLearns(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	l := NewLearned()
	w := NewWriter(&out, []string{"plan-secret"})
	w.Learn(l)
	w.Write([]byte("issued Se4+tok/val then plan-secret\n"))
	l.Add("Se4+tok/val")
	l.Add("abc") // too short to mask
	w.Write([]byte("got Se4+tok/val, Se4%2Btok%2Fval and U2U0K3Rvay92YWw= and abc\n"))
	w.Close()
	want := "issued Se4+tok/val then ***\ngot ***, *** and ***= and abc\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}

	out.Reset()
	w = NewWriter(&out, nil)
	w.Learn(l)
	for i := range MaxLearned + 10 {
		l.Add(fmt.Sprintf("sess-%06d", i))
		if i%1000 == 0 {
			w.Write([]byte("x"))
		}
	}
	w.Write([]byte(" sess-000000 sess-000020 " + fmt.Sprintf("sess-%06d", MaxLearned+9) + "\n"))
	w.Close()
	if got := out.String()[strings.LastIndex(out.String(), "x")+1:]; got != " sess-000000 *** ***\n" {
		t.Errorf("after %d values: %q, want the oldest in clear and the newest masked", MaxLearned+10, got)
	}
	if len(w.learned) > MaxLearned || w.n > 2*MaxLearned {
		t.Errorf("holds %d learned values, %d secrets", len(w.learned), w.n)
	}
}
