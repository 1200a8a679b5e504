package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// Content codings a response's body may come in (RFC 9110 §8.4), decoded
// for whoever reads the body (checks, captures, the failing response kept)
// with the decoders of github.com/klauspost/compress (gzip, deflate, zstd)
// and github.com/andybalholm/brotli (br). A loop keeps one decoder of each
// kind and resets it for every body, so decoding allocates nothing once
// warm but the output buffer. The decoded size is bounded by the body limit
// (MaxBodyBytes): a decompression bomb is a protocol error, not an
// out-of-memory.

// AcceptEncoding is what a browser sends, and plans by default.
const AcceptEncoding = "gzip, deflate, br, zstd"

// Codings are the content codings loadlab decodes, by their token.
var Codings = []string{"gzip", "deflate", "br", "zstd"}

// errCoding is a content coding loadlab cannot decode.
var errCoding = errors.New("unsupported content coding")

// decoders are a loop's decoders, made when first needed.
type decoders struct {
	gzip  *gzip.Reader
	zlib  io.ReadCloser
	flate io.ReadCloser
	br    *brotli.Reader
	zstd  *zstd.Decoder
	src   bytes.Reader
}

// decode decodes body, encoded with codings in the order they were applied
// (the header's order), into dst (appending), bounded by limit bytes. It
// returns dst unchanged and an error when a coding is unknown, the data is
// corrupt or the result is over the limit.
func (d *decoders) decode(dst, body []byte, codings [][]byte, limit int64) ([]byte, error) {
	in := body
	var scratch []byte
	for i := len(codings) - 1; i >= 0; i-- {
		out := dst
		if i > 0 {
			out = scratch[:0]
		}
		r, err := d.reader(codings[i], in)
		if err != nil {
			return dst, err
		}
		out, err = readAll(out, r, limit)
		if err != nil {
			return dst, fmt.Errorf("%s body: %w", codings[i], err)
		}
		if i > 0 {
			scratch = out
			in = out
		} else {
			dst = out
		}
	}
	return dst, nil
}

// reader is the decoder of one coding, reset to read in.
func (d *decoders) reader(coding, in []byte) (io.Reader, error) {
	d.src.Reset(in)
	switch {
	case equalFold(coding, "gzip"), equalFold(coding, "x-gzip"):
		if d.gzip == nil {
			d.gzip = new(gzip.Reader)
		}
		if err := d.gzip.Reset(&d.src); err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		return d.gzip, nil
	case equalFold(coding, "deflate"):
		// RFC 9110 says zlib (RFC 1950); some servers send raw deflate
		// (RFC 1951). A zlib stream starts with a header whose check bits
		// make the first two bytes a multiple of 31.
		if len(in) >= 2 && in[0]&0x0f == 8 && (uint16(in[0])<<8|uint16(in[1]))%31 == 0 {
			if d.zlib == nil {
				r, err := zlib.NewReader(&d.src)
				if err != nil {
					return nil, fmt.Errorf("deflate body: %w", err)
				}
				d.zlib = r
				return r, nil
			}
			if err := d.zlib.(zlib.Resetter).Reset(&d.src, nil); err != nil {
				return nil, fmt.Errorf("deflate body: %w", err)
			}
			return d.zlib, nil
		}
		if d.flate == nil {
			d.flate = flate.NewReader(&d.src)
		} else if err := d.flate.(flate.Resetter).Reset(&d.src, nil); err != nil {
			return nil, fmt.Errorf("deflate body: %w", err)
		}
		return d.flate, nil
	case equalFold(coding, "br"):
		if d.br == nil {
			d.br = brotli.NewReader(&d.src)
		} else if err := d.br.Reset(&d.src); err != nil {
			return nil, fmt.Errorf("br body: %w", err)
		}
		return d.br, nil
	case equalFold(coding, "zstd"):
		if d.zstd == nil {
			// One goroutine-free decoder: concurrency 1 decodes in the
			// caller, as the loop needs.
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
			if err != nil {
				return nil, fmt.Errorf("zstd: %w", err)
			}
			d.zstd = z
		}
		if err := d.zstd.Reset(&d.src); err != nil {
			return nil, fmt.Errorf("zstd body: %w", err)
		}
		return d.zstd, nil
	}
	return nil, fmt.Errorf("%w %q", errCoding, clip(coding))
}

// readAll appends what r gives to dst, failing once it passes limit bytes.
func readAll(dst []byte, r io.Reader, limit int64) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if int64(len(dst)-start) > limit {
			return dst[:start], fmt.Errorf("%w: decoded body over the %d byte limit", ErrTooLarge, limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst[:start], err
		}
	}
}

// close releases the decoders' memory.
func (d *decoders) close() {
	if d.zstd != nil {
		d.zstd.Close()
	}
}
