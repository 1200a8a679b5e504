package httpx

import (
	"errors"
	"fmt"
	"io"
)

// BodyFile is a request body sent from a file after the request's encoded
// bytes (its head): read in chunks of bodyChunk as the connection takes
// them, with ReadAt, so that a body of any size costs one chunk of memory
// per connection, never the whole body. Quick mode's --body-file uses it
// for a file over what is held in memory. An Exchange without one costs
// nothing more to write.
type BodyFile struct {
	R    io.ReaderAt
	Size int64
}

// bodyChunk is how much of a BodyFile one read takes.
const bodyChunk = 256 << 10

// errBodyFileShort is a file that gave fewer bytes than its size said (it
// shrank since the run began): the request cannot be completed.
var errBodyFileShort = errors.New("the body file is shorter than when the run began")

// readChunk reads the part of f from off into buf, up to len(buf) bytes.
func (f *BodyFile) readChunk(buf []byte, off int64) ([]byte, error) {
	n := int(min(int64(len(buf)), f.Size-off))
	got, err := f.R.ReadAt(buf[:n], off)
	if got == n {
		return buf[:n], nil
	}
	if err == nil || err == io.EOF {
		err = errBodyFileShort
	}
	return nil, fmt.Errorf("write: body file at %d: %w", off, err)
}
