package plan

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFormAndJSONCredentials: the credential-name rule holds for form
// fields and JSON body keys (at any depth) as for headers: a literal
// written there is masked in the stored plan and is one of the plan's
// secrets, and so is a variable such a field is made from.
func TestFormAndJSONCredentials(t *testing.T) {
	t.Parallel()
	src := `target: "http://127.0.0.1:1"
vars: { tenant: acme-tenant-7 }
steps:
  - { post: /login, form: { user: alice, password: "Fm7-literal-pw" } }
  - post: /api
    json: { name: widget, auth: { api_key: Js5-literal-key, realm: "{{ tenant }}" }, client_secret: "x-{{ tenant }}" }
load: { closed: { vus: 1, iterations: 1 } }
`
	p, err := Parse("plan.yaml", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Masked()
	for _, clear := range []string{"Fm7-literal-pw", "Js5-literal-key", "acme-tenant-7"} {
		if strings.Contains(m, clear) {
			t.Errorf("the stored plan shows %s:\n%s", clear, m)
		}
		if !slices.Contains(p.Secrets(), clear) {
			t.Errorf("%s is not one of the plan's secrets %q", clear, p.Secrets())
		}
	}
	for _, kept := range []string{"user: alice", "name: widget", `realm: "{{ tenant }}"`} {
		if !strings.Contains(m, kept) {
			t.Errorf("the stored plan lost %q:\n%s", kept, m)
		}
	}
	if _, err := Parse("plan.yaml", []byte(m), Options{}); err != nil {
		t.Errorf("the stored plan does not load: %v\n%s", err, m)
	}
}

// TestServerFilesWithSecrets: a server file whose text holds a secret
// (a secret variable, an environment variable named as a credential) is
// written for the server's user alone (0600); the others keep the default.
func TestServerFilesWithSecrets(t *testing.T) {
	t.Parallel()
	src := `target: "http://127.0.0.1:1"
vars: { db_password: { value: "Db8-secret-pw" }, threads: 4 }
server:
  run: "true"
  files:
    secret.conf: { content: "password={{ db_password }}" }
    token.env: { content: "TOKEN={{ env.LOADLAB_TEST_API_TOKEN }}" }
    plain.conf: { content: "threads={{ threads }}" }
steps: [ { get: / } ]
load: { closed: { vus: 1, iterations: 1 } }
`
	p, err := Parse("plan.yaml", []byte(src), Options{Env: map[string]string{"LOADLAB_TEST_API_TOKEN": "tok-abcdef"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.ServerSpec(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{"secret.conf": 0o600, "token.env": 0o600, "plain.conf": 0}
	for _, f := range spec.Files {
		if m, ok := want[f.Path]; !ok || f.Mode != m {
			t.Errorf("%s: mode %v, want %v", f.Path, f.Mode, want[f.Path])
		}
	}
	if len(spec.Files) != len(want) {
		t.Errorf("%d files, want %d", len(spec.Files), len(want))
	}
}

// TestDerivedSecrets: a value a template makes from a secret with a
// function or an operator is a secret too: from a secret variable, an
// environment variable named as a credential, and each row of a secret
// data column; an expression on values that are not secret is not.
func TestDerivedSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte("name,password\nann,pw-ann-1\nbob,pw-bob-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `target: "http://127.0.0.1:1"
vars: { pw: { value: "Pw9-secret", secret: true }, product: widget }
data: { users: { csv: users.csv, secret: password } }
steps:
  - post: /login
    headers: { X-Shout: "{{ upper(pw) }}", X-Product: "{{ upper(product) }}", X-Env: "{{ lower(env.LOADLAB_TEST_TOKEN) }}" }
    body: "{{ users.name + ':' + users.password + '!' }}"
load: { closed: { vus: 1, iterations: 1 } }
`
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, Options{Env: map[string]string{"LOADLAB_TEST_TOKEN": "TOK-ABCDEF"}})
	if err != nil {
		t.Fatal(err)
	}
	secrets := p.Secrets()
	for _, want := range []string{"PW9-SECRET", "tok-abcdef", "ann:pw-ann-1!", "bob:pw-bob-2!"} {
		if !slices.Contains(secrets, want) {
			t.Errorf("%q is not one of the plan's secrets %q", want, secrets)
		}
	}
	if slices.Contains(secrets, "WIDGET") {
		t.Errorf("upper(product), not made from a secret, is one of the secrets %q", secrets)
	}
}
