package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/loadlab/loadlab/internal/secret"
)

const (
	// logSettleWait bounds the wait for the server's last words to reach a
	// masked log before its tail is read, while some of the tree may still
	// hold the pipe.
	logSettleWait = 200 * time.Millisecond
	// logFinishWait bounds the wait, once the tree is gone, for whatever
	// still holds the pipe (a process that escaped the tree) to close it.
	logFinishWait = time.Second
)

// maskedLog carries the server's output to server.log through a pipe and
// secret.Writer, when the server's spec has secrets: a server that prints
// its configuration, or logs the requests it gets, would otherwise store
// the plan's secrets in clear. It masks as it copies, holding back only a
// secret's length; nothing buffers the whole log.
type maskedLog struct {
	read *os.File
	done chan struct{} // closed when everything is written and the log is closed
}

// serverOutput is what the server writes its output to: the log file
// itself, or, when there are secrets to mask, the write end of a pipe
// copied into it through secret.Writer (then log is not nil). The caller
// closes out once the server has started (or failed to); the copy closes
// logFile when it ends.
func serverOutput(logFile *os.File, secrets []string, learned *secret.Learned) (out *os.File, log *maskedLog, err error) {
	maskable := learned != nil
	for _, s := range secrets {
		maskable = maskable || len(s) >= secret.MinLength
	}
	if !maskable {
		return logFile, nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("a pipe for the masked log: %w", err)
	}
	log = &maskedLog{read: r, done: make(chan struct{})}
	go func() {
		defer close(log.done)
		mw := secret.NewWriter(logFile, secrets)
		mw.Learn(learned)
		io.Copy(mw, r) // until every process of the tree has closed its end
		mw.Close()
		logFile.Close()
		r.Close()
		if forms := mw.LearnedForms(); len(forms) > 0 {
			remask(logFile.Name(), forms)
		}
	}()
	return w, log, nil
}

// remask masks again, in the log at path, the values learned while the
// server ran (the credentials VUs captured): a server that logged one
// before loadlab had captured it (as it issued a session token) wrote it
// before the Writer knew it. The log is copied through a Writer into a
// file beside it, which then takes its place; on any error the log is
// left as it is.
func remask(path string, forms []string) {
	in, err := os.Open(path)
	if err != nil {
		return
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(path), ".server-log-*")
	if err != nil {
		return
	}
	w := secret.NewTextsWriter(out, forms)
	_, err = io.Copy(w, in)
	err = errors.Join(err, w.Close(), out.Close())
	if err == nil {
		if st, serr := in.Stat(); serr == nil {
			os.Chmod(out.Name(), st.Mode().Perm())
		}
		err = os.Rename(out.Name(), path)
	}
	if err != nil {
		os.Remove(out.Name())
	}
}

// settle waits, at most logSettleWait, for the output so far to be in the
// log.
func (l *maskedLog) settle() {
	if l == nil {
		return
	}
	select {
	case <-l.done:
	case <-time.After(logSettleWait):
	}
}

// finish ends the copy once the server's tree is gone: it waits for the
// pipe to close, at most logFinishWait, then closes it (a process still
// writing gets EPIPE), and waits for the rest to be written.
func (l *maskedLog) finish() {
	if l == nil {
		return
	}
	select {
	case <-l.done:
		return
	case <-time.After(logFinishWait):
	}
	// On Windows, closing a pipe that a read is blocked on waits for the
	// read: do not wait for ever.
	go l.read.Close()
	select {
	case <-l.done:
	case <-time.After(logFinishWait):
	}
}
