package plan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"unicode/utf8"

	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/spec"
)

// Limits on what a plan may ask for, checked when it loads, so that a typo
// (repeat: 2147483648) or a hostile file is a positioned error instead of
// memory allocated until the runtime dies. docs/plan.md lists them (Limits).
const (
	// MaxPlanBytes is the largest plan file, whole. The YAML parser
	// (goccy/go-yaml) allocates about 30 times the file while it reads it,
	// and each experiment point reads it again: 1 MiB keeps that near 30 MB.
	MaxPlanBytes = 1 << 20
	// MaxValueBytes is the largest single value (a scalar or a key) in it.
	MaxValueBytes = 256 << 10
	// MaxDepth is how deeply mappings and lists may nest.
	MaxDepth = 100
	// MaxRepeat is the most runs of each experiment point.
	MaxRepeat = 1000
	// MaxPoints is the most points an experiment's params may make.
	MaxPoints = spec.MaxPoints
	// MaxRuns is the most runs of an experiment: points × repeat.
	MaxRuns = 100_000
	// MaxVUs is the most VUs a load may ask for at once (vus, max_vus, a
	// stage's vus or ramp).
	MaxVUs = 1_000_000
	// MaxScenarios is the most scenarios in a plan.
	MaxScenarios = 1000
	// MaxSteps is the most steps in one scenario.
	MaxSteps = 10_000
	// MaxDataRows is the most rows of one CSV data source, all held in
	// memory.
	MaxDataRows = 1_000_000
)

// MaxDataBytes is the largest CSV data file, and MaxTemplateBytes the
// largest template file a server.files entry names. Either must be a regular
// file: not /dev/zero, not a pipe, which would be read for ever.
const (
	MaxDataBytes     = 256 << 20
	MaxTemplateBytes = MaxPlanBytes
)

// The bounds of what a step's templates render, unless http: raises them
// (max_request_header, max_url, max_request_body), and the most any of
// them may be raised to: a request is built in memory, one per VU.
const (
	DefaultMaxRequestHeader = 64 << 10
	DefaultMaxURL           = 8 << 10
	DefaultMaxRequestBody   = 16 << 20
	MaxRequestHeaderLimit   = 1 << 20
	MaxURLLimit             = 1 << 20
	MaxRequestBodyLimit     = 1 << 30
)

// MaxDataColumns is the most columns of a CSV data source, and
// MaxDataRowBytes the widest row: each column is a name in every template's
// scope, and a row is held whole.
const (
	MaxDataColumns  = 1_000
	MaxDataRowBytes = 1 << 20
)

// dataRowLimit is MaxDataRows; tests lower it.
var dataRowLimit = MaxDataRows

// clipAt is the length past which a value quoted in an error is cut, and
// clipKeep how much of it is kept: an error about a 1 MiB value must not
// print it.
const (
	clipAt   = 256
	clipKeep = 64
)

// clip shortens a long text for an error message: its first bytes, then
// how long it was.
func clip(s string) string {
	if len(s) <= clipAt {
		return s
	}
	return fmt.Sprintf("%s… (%s in all)", head(s), byteCount(len(s)))
}

// head is the first clipKeep bytes of s, cut between characters.
func head(s string) string {
	if len(s) <= clipKeep {
		return s
	}
	keep := clipKeep
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep]
}

// byteCount writes a size as people read it: 512 bytes, 1.5 KiB, 10 MiB.
func byteCount(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
}

func trimZero(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}

// clipArgs shortens the long strings among an error's arguments, but not
// a whole message passed as "%s" (a template's error): Error cuts that, at
// errAt, so that what it expects stays readable.
func clipArgs(format string, args []any) []any {
	if format == "%s" || format == "%v" {
		return args
	}
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > clipAt {
			args[i] = clip(s)
		}
	}
	return args
}

// errAt is the longest message an Error prints: a backstop for messages
// that quote what the file holds (YAML syntax errors, templates).
const errAt = 2048

func cutMessage(msg string) string {
	if len(msg) <= errAt {
		return msg
	}
	keep := errAt
	for keep > 0 && !utf8.RuneStart(msg[keep]) {
		keep--
	}
	return fmt.Sprintf("%s… (cut: the message is %s)", msg[:keep], byteCount(len(msg)))
}

// atMost checks a count against its limit, placing the error at n.
func (d *decoder) atMost(n *node, what string, v, limit int64) bool {
	if v > limit {
		d.errorf(n.pos, "%s must be at most %s (loadlab's limit; see Limits in docs/plan.md), got %s", what, group(limit), group(v))
		return false
	}
	return true
}

// group writes a whole number with thousands separators: 10,000.
func group(v int64) string {
	s := fmt.Sprint(v)
	neg := v < 0
	if neg {
		s = s[1:]
	}
	out := []byte{}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// readPlan reads a plan file, but no more than one byte past MaxPlanBytes:
// enough for Parse to refuse it, not a whole multi-gigabyte file.
func readPlan(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPlanBytes+1+3)) // + a byte order mark
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return data, nil
}

// openFile opens a file that a plan names for reading (a CSV data source, a
// server file's template): it must be a regular file of at most limit
// bytes, and no more than that is read from it, even if it grows.
func openFile(path string, limit int64) (io.ReadCloser, error) {
	// By its mode first: opening a FIFO that has no writer blocks.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", path, errors.Unwrap(err))
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	} else if err == nil && st.Size() > limit {
		err = fmt.Errorf("%s is over %s, loadlab's limit for it (see Limits in docs/plan.md)", path, byteCount(int(limit)))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, limit), f}, nil
}

// readFile reads a file by openFile's rules.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := openFile(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// scanDepth is how deep a file may nest, by a quick look, before the YAML
// parser reads it: goccy/go-yaml takes time and memory that grow faster
// than the depth (50,000 levels of {a: took 11 s and 5 GB; 100,000 of
// "- " on one line, 2 GB), so a file far past MaxDepth is refused before
// it is parsed. Within it, the converter counts MaxDepth exactly.
const scanDepth = 10 * MaxDepth

// tooDeep finds where a file nests past scanDepth by flow brackets ([ and
// {, outside quotes and comments) and block sequences begun on one line
// ("- - - x"), and returns that place; ok is false when it does not.
func tooDeep(file string, data []byte) (Pos, bool) {
	line, col := 1, 0
	flow := 0
	var quote byte
	lineStart := true // only blanks and "- " since the line began
	dashes := 0
	prev := byte('\n')
	for i := 0; i < len(data); i++ {
		c := data[i]
		col++
		if c == '\n' {
			if quote == '#' {
				quote = 0 // a comment ends with its line; a quoted string may go on
			}
			line, col, lineStart, dashes, prev = line+1, 0, true, 0, c
			continue
		}
		switch {
		case quote == '"':
			if c == '\\' {
				i, col = i+1, col+1
			} else if c == '"' {
				quote = 0
			}
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case quote == '#':
			// a comment, to the end of the line
		case c == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			quote = '#'
		case (c == '"' || c == '\'') && (prev == ' ' || prev == '\t' || prev == '\n' || prev == '[' || prev == '{' || prev == ',' || prev == ':'):
			quote = c
		case c == '[' || c == '{':
			flow++
		case c == ']' || c == '}':
			flow--
		case c == '-' && lineStart && i+1 < len(data) && (data[i+1] == ' ' || data[i+1] == '\t'):
			dashes++
		}
		if c != ' ' && c != '\t' && c != '-' {
			lineStart = false
		}
		if flow+dashes > scanDepth {
			return Pos{File: file, Line: line, Col: col}, true
		}
		prev = c
	}
	return Pos{}, false
}

// streamAbove is the largest body_file read into memory: a larger one,
// under a max_request_body raised above it, is sent from the file by each
// request, chunk by chunk (httpx.BodyFile), so memory does not grow with it.
const streamAbove = 16 << 20

// streamed holds the body files opened to stream, by path and size: the
// plan is compiled again for each point, and each would open the file.
var streamed sync.Map

// streamFile opens path to stream it when it is a regular file over
// streamAbove and within limit; nil, nil otherwise (readFile reads it, or
// says why not).
func streamFile(path string, limit int64) (*httpx.BodyFile, error) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() <= streamAbove || st.Size() > limit {
		return nil, nil
	}
	key := fmt.Sprintf("%d %s", st.Size(), path)
	if f, ok := streamed.Load(key); ok {
		return f.(*httpx.BodyFile), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", path, errors.Unwrap(err))
	}
	// Open for the process's life: every request reads it.
	got, _ := streamed.LoadOrStore(key, &httpx.BodyFile{R: f, Size: st.Size()})
	if got.(*httpx.BodyFile).R != f {
		f.Close()
	}
	return got.(*httpx.BodyFile), nil
}
