// Package k8s writes the Kubernetes manifests that run a plan as N
// execution segments on a cluster: a ConfigMap that carries the plan and its
// data files, a PersistentVolumeClaim for the parts, an Indexed Job whose pod
// of completion index i runs `loadlab run --segment i+1/N`, and a Job that
// merges the N parts once they are all there. Kubernetes is the engine that
// starts, places and restarts the processes; loadlab has no coordinator of its
// own (DESIGN.md, section 10).
//
// The objects are built from the API types of k8s.io/api and written with
// sigs.k8s.io/yaml, never from text templates, so that what kubectl reads is
// what the types say. The package only builds manifests: it never talks to a
// cluster.
package k8s

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Where the pods see their inputs and outputs, and the environment variables
// that name them in the containers' scripts: the scripts read the paths from
// these variables, so the same script runs outside a pod with other paths.
const (
	PlanDir   = "/plan"  // the ConfigMap, read-only
	PartsDir  = "/parts" // the parts' volume: part-1 … part-N, then merged
	PlanEnv   = "LOADLAB_PLAN"
	PartsEnv  = "LOADLAB_PARTS"
	IndexEnv  = "JOB_COMPLETION_INDEX"                     // set by the Job controller in every pod of an Indexed Job
	IndexNote = "batch.kubernetes.io/job-completion-index" // the pod annotation it is read from
)

// MaxConfigMapBytes is the API server's limit on a ConfigMap's data (1 MiB).
const MaxConfigMapBytes = 1 << 20

// File is one file the pods need under PlanDir: the plan or a data file.
type File struct {
	Path string // relative to PlanDir, with forward slashes: plan.yaml, data/users.csv
	Data []byte
}

// Options are what the manifests depend on. Parallel, Image, PlanFile and
// StartAt are required.
type Options struct {
	Name      string // the prefix of every object's name; a DNS label
	Namespace string // empty: kubectl's current namespace
	Image     string // an image with loadlab on its PATH and a /bin/sh
	Parallel  int    // N: the segments, one pod each
	PlanFile  string // the plan's path among Files
	Files     []File // the plan and its data files
	StartAt   time.Time
	// RunArgs are more arguments for every segment's loadlab run (--set,
	// -e), each passed as one word.
	RunArgs []string

	StorageClass string                            // the parts' claim's; empty: the cluster's default
	AccessMode   corev1.PersistentVolumeAccessMode // ReadWriteOnce (one node) or ReadWriteMany
	StorageSize  resource.Quantity                 // zero: 1Gi
	// Keep is how long the merge pod stays up after merging, so that
	// `kubectl cp` can copy the merged result out of it.
	Keep time.Duration
	// MergeDeadline bounds the merge Job (waiting for the parts included).
	MergeDeadline time.Duration
	// HostNetwork runs the pods on their node's network (hostNetwork: true):
	// a target on the node's loopback is reachable, and the pods' traffic
	// skips the cluster's pod network.
	HostNetwork bool
	// Resources are every segment pod's requests and limits (cpu, memory);
	// empty: none, the pods are BestEffort.
	Resources corev1.ResourceRequirements
	// Rerun K (1 … Parallel) writes, instead of the four objects, the
	// ConfigMap and a Job NAME-rerun-K of one pod that runs segment K again
	// and replaces its part: for a segment whose pod failed.
	Rerun int
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Name makes a DNS label of a plan's name for the objects' names: lower
// case, runs of other characters as one '-', at most 40 characters (the
// Job controller appends "-INDEX-RANDOM" to the pods' names).
func Name(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	if name == "" {
		return "loadlab"
	}
	return name
}

// Manifests builds the objects, in the order kubectl should create them:
// ConfigMap, PersistentVolumeClaim, the segments' Indexed Job, the merge Job.
func Manifests(o Options) ([]any, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": "loadlab", "app.kubernetes.io/instance": o.Name}
	meta := func(name, component string) metav1.ObjectMeta {
		l := map[string]string{"app.kubernetes.io/component": component}
		for k, v := range labels {
			l[k] = v
		}
		return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: l}
	}
	planCM, partsClaim := o.Name+"-plan", o.Name+"-parts"

	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(planCM, "plan"),
		Data:       map[string]string{},
		BinaryData: map[string][]byte{},
	}
	var items []corev1.KeyToPath
	keys := map[string]bool{}
	for _, f := range o.Files {
		key := configMapKey(f.Path, keys)
		if isText(f.Data) {
			cm.Data[key] = string(f.Data)
		} else {
			cm.BinaryData[key] = f.Data
		}
		items = append(items, corev1.KeyToPath{Key: key, Path: f.Path})
	}
	if len(cm.BinaryData) == 0 {
		cm.BinaryData = nil
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Path < items[j].Path })

	size := o.StorageSize
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	access := o.AccessMode
	if access == "" {
		access = corev1.ReadWriteOnce
	}
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: meta(partsClaim, "parts"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{access},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if o.StorageClass != "" {
		pvc.Spec.StorageClassName = &o.StorageClass
	}

	volumes := []corev1.Volume{
		{Name: "plan", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: planCM}, Items: items}}},
		{Name: "parts", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: partsClaim}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "plan", MountPath: PlanDir, ReadOnly: true},
		{Name: "parts", MountPath: PartsDir},
	}
	env := []corev1.EnvVar{
		{Name: PlanEnv, Value: path.Join(PlanDir, o.PlanFile)},
		{Name: PartsEnv, Value: PartsDir},
	}
	no, nobody := false, int64(65534)
	podSpec := func(script string, resources corev1.ResourceRequirements, more ...corev1.EnvVar) corev1.PodSpec {
		return corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			HostNetwork:                  o.HostNetwork,
			AutomountServiceAccountToken: &no, // loadlab never talks to the API server
			// The image runs as nobody (65534); the parts' volume is made
			// theirs where the volume type supports it.
			SecurityContext: &corev1.PodSecurityContext{FSGroup: &nobody},
			Volumes:         volumes,
			Containers: []corev1.Container{{
				Name:  "loadlab",
				Image: o.Image,
				// An image loaded into the cluster (kind load, k3s ctr import)
				// is used as it is, even when tagged latest.
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/bin/sh", "-c", script},
				Env:             append(slices.Clip(env), more...),
				VolumeMounts:    mounts,
				Resources:       resources,
			}},
		}
	}

	n := int32(o.Parallel)
	indexed := batchv1.IndexedCompletion
	zero, one := int32(0), int32(1)
	if o.Rerun > 0 {
		// Not an Indexed Job: the index the script reads is set here.
		rerun := &batchv1.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: meta(fmt.Sprintf("%s-rerun-%d", o.Name, o.Rerun), "rerun"),
			Spec: batchv1.JobSpec{
				Completions: &one, Parallelism: &one, BackoffLimit: &zero,
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: meta("", "rerun").Labels},
					Spec: podSpec(o.RerunScript(), o.Resources,
						corev1.EnvVar{Name: IndexEnv, Value: fmt.Sprint(o.Rerun - 1)}),
				},
			},
		}
		return []any{cm, rerun}, nil
	}
	// With a backoff limit per index, a failed segment fails its index
	// only: the Job does not kill the other segments' pods (as it does once
	// backoffLimit is passed), and it ends Failed with that index in
	// status.failedIndexes. BackoffLimit must then be left to its default.
	segments := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta(o.Name, "segments"),
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    &n,
			Parallelism:    &n,
			// A segment run again would send its share of the load twice, and
			// after the start instant it is refused anyway: no retries.
			BackoffLimitPerIndex: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: meta("", "segment").Labels},
				Spec:       podSpec(o.SegmentScript(), o.Resources),
			},
		},
	}
	merge := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta(o.Name+"-merge", "merge"),
		Spec: batchv1.JobSpec{
			BackoffLimit: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: meta("", "merge").Labels},
				Spec:       podSpec(o.MergeScript(), corev1.ResourceRequirements{}),
			},
		},
	}
	if o.MergeDeadline > 0 {
		secs := int64(o.MergeDeadline / time.Second)
		merge.Spec.ActiveDeadlineSeconds = &secs
	}
	return []any{cm, pvc, segments, merge}, nil
}

func (o Options) check() error {
	switch {
	case !dnsLabel.MatchString(o.Name) || len(o.Name) > 40:
		return fmt.Errorf("name %q: want a DNS label of at most 40 characters (lower-case letters, digits, '-')", o.Name)
	case o.Namespace != "" && !dnsLabel.MatchString(o.Namespace):
		return fmt.Errorf("namespace %q: want a DNS label (lower-case letters, digits, '-')", o.Namespace)
	case o.Parallel < 1:
		return fmt.Errorf("--parallel must be at least 1, got %d", o.Parallel)
	case o.Image == "":
		return fmt.Errorf("no image: give one with loadlab on its PATH and a /bin/sh")
	case o.StartAt.IsZero():
		return fmt.Errorf("no start instant: every segment needs the same one")
	case o.Rerun < 0 || o.Rerun > o.Parallel:
		return fmt.Errorf("rerun %d: want a segment from 1 to %d", o.Rerun, o.Parallel)
	case o.AccessMode != "" && o.AccessMode != corev1.ReadWriteOnce && o.AccessMode != corev1.ReadWriteMany:
		return fmt.Errorf("access mode %q: want ReadWriteOnce or ReadWriteMany", o.AccessMode)
	}
	found, total := false, 0
	for _, f := range o.Files {
		if f.Path == o.PlanFile {
			found = true
		}
		if f.Path == "" || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == ".." || strings.HasPrefix(f.Path, "../") {
			return fmt.Errorf("file %q: want a path inside the plan's directory", f.Path)
		}
		total += len(f.Data)
	}
	if !found {
		return fmt.Errorf("the plan file %q is not among the files", o.PlanFile)
	}
	if total > MaxConfigMapBytes-16<<10 { // room for the keys and the object itself
		return fmt.Errorf("the plan and its data files are %d bytes: a ConfigMap holds at most 1 MiB; put large data files in the image or a volume of your own", total)
	}
	return nil
}

// SegmentScript is the shell script of the segments' pods: segment
// JOB_COMPLETION_INDEX+1 of N, all starting at StartAt, each keeping its
// part in $LOADLAB_PARTS/part-K.
func (o Options) SegmentScript() string {
	words := []string{"exec", "loadlab", "run", `"$` + PlanEnv + `"`,
		"--segment", fmt.Sprintf(`"$((%s+1))/%d"`, IndexEnv, o.Parallel),
		"--start-at", quote(o.StartAt.UTC().Format(time.RFC3339Nano)),
		"--out", `"$` + PartsEnv + `/part-$((` + IndexEnv + `+1))"`}
	for _, a := range o.RunArgs {
		words = append(words, quote(a))
	}
	return strings.Join(words, " ")
}

// RerunScript is the script of a Rerun Job's pod: the segment's old part
// removed, then the segment's script.
func (o Options) RerunScript() string {
	return `rm -rf "$` + PartsEnv + `/part-$((` + IndexEnv + `+1))"; ` + o.SegmentScript()
}

// MergeScript is the shell script of the merge pod: wait until the N parts'
// result.json are there, merge them into $LOADLAB_PARTS/merged (printing the
// summary), then stay up Keep for `kubectl cp`; the pod exits as merge did.
func (o Options) MergeScript() string {
	var parts []string
	for k := 1; k <= o.Parallel; k++ {
		parts = append(parts, fmt.Sprintf(`"$%s/part-%d"`, PartsEnv, k))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `for p in %s; do until [ -f "$p/result.json" ]; do sleep 5; done; done; `, strings.Join(parts, " "))
	fmt.Fprintf(&b, `loadlab merge %s --out "$%s/merged"; code=$?; `, strings.Join(parts, " "), PartsEnv)
	if o.Keep > 0 {
		fmt.Fprintf(&b, "sleep %d; ", int64(o.Keep/time.Second))
	}
	b.WriteString(`exit "$code"`)
	return b.String()
}

// quote makes s one word for /bin/sh.
func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/+=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var keyChars = regexp.MustCompile(`[^-._a-zA-Z0-9]+`)

// configMapKey makes a ConfigMap key ([-._a-zA-Z0-9]+) of a path, unique
// among keys: data/users.csv is data.users.csv.
func configMapKey(p string, keys map[string]bool) string {
	base := keyChars.ReplaceAllString(strings.ReplaceAll(p, "/", "."), "_")
	key := base
	for i := 2; keys[key]; i++ {
		key = fmt.Sprintf("%s.%d", base, i)
	}
	keys[key] = true
	return key
}

// isText: valid UTF-8 without NUL goes in data, anything else in binaryData.
func isText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// YAML writes the objects as one YAML stream, "---" between them, for
// `kubectl apply -f -`.
func YAML(objs []any) ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i+1, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
