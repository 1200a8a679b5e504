package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// Forms are the texts a secret value takes on its way through a request
// and back: itself, URL-escaped (a form body, a query string; as a query
// and as a path), JSON-escaped (a JSON body, a server's JSON logs; with
// and without <, > and & escaped, as Go's encoder and others write it),
// HTML-escaped (a page that echoes it), and base64 (a Basic
// Authorization, a cookie; standard and URL alphabets). base64 is without
// its padding, which the padded text begins with: masking the unpadded
// form masks both and leaves only the = of the padding. Forms that are the
// secret itself are not repeated: a password of letters and digits has
// two forms, itself and its base64.
func Forms(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v), jsonEscape(v, true), jsonEscape(v, false), html.EscapeString(v),
		base64.RawStdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))}
	slices.Sort(out)
	return slices.Compact(out)
}

// jsonEscape is v as a JSON string has it, without the quotes.
func jsonEscape(v string, escapeHTML bool) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(escapeHTML)
	if e.Encode(v) != nil {
		return v
	}
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// maskable are the forms of each secret of MinLength bytes or more, each
// form of MinLength bytes or more, longest first (a shorter secret that is
// a part of a longer one, "s3cret" of "s3cretABCDEF", would otherwise leave
// the longer one's tail in clear), without repeats.
func maskable(secrets []string) []string {
	long := make([]string, 0, 2*len(secrets))
	for _, v := range secrets {
		if len(v) < MinLength {
			continue
		}
		for _, f := range Forms(v) {
			if len(f) >= MinLength {
				long = append(long, f)
			}
		}
	}
	sort.Slice(long, func(i, j int) bool {
		if len(long[i]) != len(long[j]) {
			return len(long[i]) > len(long[j])
		}
		return long[i] < long[j]
	})
	return slices.Compact(long)
}
