// Package secret is loadlab's one rule for what must not be shown: which
// names (request headers, plan variables, environment variables) carry
// credentials, and how a secret value is masked in text.
//
// Who follows it: quick mode's headers as results show them; a plan's
// stored text (plan.Masked), the inputs stored beside it (plan.Inputs) and
// its secret values (plan.Secrets); a step's first failing response, kept
// by package failure (ResponseHeader, CookieValues, the plan's secrets and
// the VU's captured credentials); and a redirect to another host,
// which leaves out the same headers; credentials in URL query strings (URL:
// quick mode's --url, step names, stored plans); the server's command
// (server.command), the log tail of its errors, and server.log itself,
// masked by a Writer as the server writes it (server.Spec.Secrets); and
// the reasons journeys were aborted (runner, before result.json). A secret
// is masked in each of its Forms (URL-, JSON-, HTML-escaped, base64), and
// values known only as the load runs (the credentials VUs capture) reach
// server.log's Writer through a Learned.
//
// It is a package of its own, not a part of httpx or plan, because both
// (and the command line) need it and neither owns the other's data.
package secret

import (
	"os"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces a secret in stored and printed text.
const Mask = "***"

// credentialName recognizes names that say they hold a credential:
// Authorization, Proxy-Authorization, Cookie, X-Api-Key, Api-Key,
// X-Auth-Token, X-Csrf-Token, X-Xsrf-Token, Private-Token, X-Vault-Token,
// X-Amz-Security-Token, X-Jwt-Assertion, Cf-Access-Jwt-Assertion, X-CSRF,
// X-XSRF, a variable named password or API_KEY, and so on.
// It errs on the side of masking: a header needlessly masked in a report
// costs nothing, a token shown in clear in result.json is a leak.
var credentialName = regexp.MustCompile(`(?i)pass|secret|token|key|auth|cookie|credential|bearer|session|private|signature|jwt|csrf|xsrf|assertion`)

// Name reports whether a name (a request header, a plan variable, an
// environment variable) says that its value is a credential.
func Name(name string) bool { return credentialName.MatchString(name) }

// Header returns a header's value as loadlab shows it: Mask when the header
// carries a credential, the value itself otherwise.
func Header(name, value string) string {
	if Name(name) {
		return Mask
	}
	return value
}

// MinLength is the shortest secret Replace masks inside other text:
// masking shorter ones would garble every text they occur in (a secret
// "ab" in every word with an a and a b); where a secret's position is known
// (a plan's own text), it is masked whatever its length.
const MinLength = 4

// Replace masks every occurrence in s of each form (Forms) of each secret
// of MinLength bytes or more: the secret as written, URL-, JSON- and
// HTML-escaped, and in base64.
func Replace(s string, secrets []string) string {
	if len(secrets) == 0 {
		return s
	}
	for _, v := range maskable(secrets) {
		s = strings.ReplaceAll(s, v, Mask)
	}
	return s
}

// queryNames are query parameter names that carry credentials though Name
// does not say so: a signature (sig) and an OAuth authorization code.
var queryNames = []string{"sig", "code"}

// QueryEnv names the environment variable that adds query parameter names
// to mask, separated by commas: LOADLAB_SECRET_PARAMS=sid,ticket.
const QueryEnv = "LOADLAB_SECRET_PARAMS"

// QueryName reports whether a URL query parameter's value is a credential:
// Name's rule (api_key, token, access_token, password, client_secret,
// X-Amz-Signature, ...), one of sig and code, or a name QueryEnv lists.
func QueryName(name string) bool {
	same := func(q string) bool { return strings.EqualFold(strings.TrimSpace(q), name) }
	return Name(name) || slices.ContainsFunc(queryNames, same) || slices.ContainsFunc(strings.Split(os.Getenv(QueryEnv), ","), same)
}

// queryParam finds name=value pairs of a query string in a URL, a path or a
// template; a value stops at &, #, a quote or a space, so "{{ token }}" is
// never a value (the variable's own value is masked where it is secret).
var queryParam = regexp.MustCompile(`([?&;])([^=&#?;\s"'{}]+)=([^&#;\s"'{}]+)`)

// URL masks in s the values of query parameters named as credentials
// (QueryName): "/a?api_key=abc&page=2" is "/a?api_key=***&page=2". s may be
// a whole URL, a path, or any text that contains URLs.
func URL(s string) string {
	if !strings.ContainsAny(s, "?&;") {
		return s
	}
	return queryParam.ReplaceAllStringFunc(s, func(m string) string {
		p := queryParam.FindStringSubmatch(m)
		if !QueryName(p[2]) || p[3] == Mask {
			return m
		}
		return p[1] + p[2] + "=" + Mask
	})
}

// QueryValues are the values URL masks in text: those of query parameters
// named as credentials, as written (the abc123 of "/a?api_key=abc123").
func QueryValues(text string) []string {
	var out []string
	for _, m := range queryParam.FindAllStringSubmatch(text, -1) {
		if QueryName(m[2]) && m[3] != Mask {
			out = append(out, m[3])
		}
	}
	return out
}

// ResponseHeader returns a response header's value as loadlab shows it:
// Set-Cookie with its value masked and its attributes kept
// ("_session=***; path=/; HttpOnly"), Cookie with each value masked, other
// headers named as credentials (Name) as Mask, and the rest with the
// credentials of their URLs masked (a Location with ?token=...).
func ResponseHeader(name, value string) string {
	switch {
	case strings.EqualFold(name, "Set-Cookie"):
		cookie, attrs, found := strings.Cut(value, ";")
		if k, _, ok := strings.Cut(cookie, "="); ok {
			cookie = k + "=" + Mask
		}
		if found {
			return cookie + ";" + URL(attrs)
		}
		return cookie
	case strings.EqualFold(name, "Cookie"):
		pairs := strings.Split(value, ";")
		for i, p := range pairs {
			if k, _, ok := strings.Cut(p, "="); ok {
				pairs[i] = k + "=" + Mask
			}
		}
		return strings.Join(pairs, ";")
	case Name(name):
		return Mask
	}
	return URL(value)
}

// CookieValues are the values a Set-Cookie or Cookie header carries (the
// abc of "_session=abc; path=/"), so that the same values can be masked
// wherever else they appear; nil for other headers.
func CookieValues(name, value string) []string {
	var pairs []string
	switch {
	case strings.EqualFold(name, "Set-Cookie"):
		cookie, _, _ := strings.Cut(value, ";")
		pairs = []string{cookie}
	case strings.EqualFold(name, "Cookie"):
		pairs = strings.Split(value, ";")
	}
	var out []string
	for _, p := range pairs {
		if _, v, ok := strings.Cut(p, "="); ok {
			if v = strings.Trim(strings.TrimSpace(v), `"`); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}
