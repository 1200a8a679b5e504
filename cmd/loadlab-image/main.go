// Command loadlab-image writes an OCI image tarball of one layer made from
// local files, without a container engine: scripts/image builds the loadlab
// image (a static loadlab and busybox) and the pause image of
// scripts/cluster with it, and imports them with `ctr images import`.
//
// The image is assembled with github.com/google/go-containerregistry (its
// empty image, mutate and OCI layout packages); this command only says
// which files go where. The tarball is an OCI image layout (oci-layout,
// index.json, blobs/sha256) whose index names the image both ways
// containerd reads: io.containerd.image.name (the full reference) and
// org.opencontainers.image.ref.name (the tag).
//
//	loadlab-image -o loadlab.tar -name docker.io/library/loadlab:latest \
//	  -file ./loadlab:/usr/local/bin/loadlab:0755 -file /bin/busybox:/bin/busybox:0755 \
//	  -link /bin/sh=busybox -dir /tmp:1777 -entrypoint /usr/local/bin/loadlab -user 65534:65534
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var files, links, dirs, env, entrypoint, cmd list
	out := flag.String("o", "", "the OCI image tarball to write (required)")
	name := flag.String("name", "", "the image's reference, e.g. docker.io/library/loadlab:latest (required)")
	user := flag.String("user", "", "the user the container runs as, UID:GID")
	workdir := flag.String("workdir", "", "the container's working directory")
	flag.Var(&files, "file", "SRC:DEST[:MODE] a local file at DEST in the image (repeatable; MODE octal, default the file's)")
	flag.Var(&links, "link", "DEST=TARGET a symbolic link (repeatable)")
	flag.Var(&dirs, "dir", "DEST[:MODE] a directory (repeatable; default 0755)")
	flag.Var(&env, "env", "KEY=VALUE in the image's environment (repeatable)")
	flag.Var(&entrypoint, "entrypoint", "one word of the entrypoint (repeatable)")
	flag.Var(&cmd, "cmd", "one word of the default arguments (repeatable)")
	flag.Parse()
	if *out == "" || *name == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: loadlab-image -o FILE.tar -name REF [-file SRC:DEST[:MODE]]... [-link DEST=TARGET]... [-dir DEST[:MODE]]...")
		os.Exit(2)
	}
	entries, err := layerEntries(files, links, dirs)
	if err == nil {
		err = write(*out, *name, entries, v1.Config{
			User: *user, WorkingDir: *workdir, Env: env, Entrypoint: entrypoint, Cmd: cmd,
		})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadlab-image: %v\n", err)
		os.Exit(1)
	}
}

// entry is one file, directory or link of the layer.
type entry struct {
	name   string // without the leading '/'
	mode   int64
	src    string // a file's source
	target string // a link's target
	dir    bool
}

func layerEntries(files, links, dirs []string) ([]entry, error) {
	var es []entry
	seen := map[string]bool{}
	add := func(e entry) error {
		e.name = strings.TrimPrefix(path.Clean("/"+e.name), "/")
		if e.name == "" {
			return errors.New("an entry at / itself")
		}
		if seen[e.name] {
			return fmt.Errorf("/%s given twice", e.name)
		}
		seen[e.name] = true
		es = append(es, e)
		return nil
	}
	for _, f := range files {
		parts := strings.Split(f, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("-file %q: want SRC:DEST[:MODE]", f)
		}
		st, err := os.Stat(parts[0])
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("-file %q: %s is not a regular file", f, parts[0])
		}
		mode := int64(st.Mode().Perm())
		if len(parts) == 3 {
			if mode, err = strconv.ParseInt(parts[2], 8, 32); err != nil {
				return nil, fmt.Errorf("-file %q: mode %q: want octal", f, parts[2])
			}
		}
		if err := add(entry{name: parts[1], mode: mode, src: parts[0]}); err != nil {
			return nil, err
		}
	}
	for _, l := range links {
		dest, target, ok := strings.Cut(l, "=")
		if !ok || dest == "" || target == "" {
			return nil, fmt.Errorf("-link %q: want DEST=TARGET", l)
		}
		if err := add(entry{name: dest, mode: 0o777, target: target}); err != nil {
			return nil, err
		}
	}
	for _, d := range dirs {
		dest, m, hasMode := strings.Cut(d, ":")
		mode := int64(0o755)
		if hasMode {
			var err error
			if mode, err = strconv.ParseInt(m, 8, 32); err != nil {
				return nil, fmt.Errorf("-dir %q: mode %q: want octal", d, m)
			}
		}
		if err := add(entry{name: dest, mode: mode, dir: true}); err != nil {
			return nil, err
		}
	}
	// Every parent directory, 0755, unless given.
	for _, e := range es {
		for p := path.Dir(e.name); p != "."; p = path.Dir(p) {
			if !seen[p] {
				seen[p] = true
				es = append(es, entry{name: p, mode: 0o755, dir: true})
			}
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name }) // parents first
	return es, nil
}

// layerTar is the layer's uncompressed tar: root-owned entries with a
// fixed time, so the same files give the same digest.
func layerTar(es []entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case e.dir:
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		case e.target != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.target
		default:
			data, err := os.ReadFile(e.src)
			if err != nil {
				return nil, err
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func write(out, name string, es []entry, cfg v1.Config) error {
	data, err := layerTar(es)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	if a := os.Getenv("GOARCH"); a != "" {
		cf.Architecture = a
	}
	cf.Config = cfg
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}

	tag := name
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag = name[i+1:]
	}
	dir, err := os.MkdirTemp("", "loadlab-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendImage(img, layout.WithPlatform(v1.Platform{OS: cf.OS, Architecture: cf.Architecture}),
		layout.WithAnnotations(map[string]string{
			"io.containerd.image.name":          name,
			"org.opencontainers.image.ref.name": tag,
		})); err != nil {
		return err
	}
	return tarDir(dir, out)
}

// tarDir writes the layout directory as a tar, entries relative to it.
func tarDir(dir, out string) error {
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil || d.IsDir() {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out + ".tmp")
		return err
	}
	return os.Rename(out+".tmp", out)
}
