package k8s

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

func testOptions() Options {
	return Options{
		Name: "checkout", Namespace: "load", Image: "registry.example/loadlab:v1", Parallel: 3,
		PlanFile: "plan.yaml",
		Files: []File{
			{Path: "plan.yaml", Data: []byte("name: checkout\n")},
			{Path: "data/users.csv", Data: []byte("id\nr1\n")},
			{Path: "data_users.csv", Data: []byte("id\nr2\n")}, // its key would be data.users.csv too, were it not for the '_'
			{Path: "blob.bin", Data: []byte{0, 1, 2, 0xff}},
		},
		StartAt: time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC),
		RunArgs: []string{"--set", "vars.greeting=it's \"fine\" $HOME", "-e", "BASE=http://shop:3000"},
		Keep:    time.Minute, MergeDeadline: time.Hour,
		HostNetwork: true,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
}

// TestManifests: the YAML stream reads back into the API types as the four
// objects, with what kubectl and the Job controller need: an Indexed Job of
// completions = parallelism = N, no retries, the ConfigMap's files at their
// paths under /plan, the parts' claim in both Jobs.
func TestManifests(t *testing.T) {
	o := testOptions()
	objs, err := Manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(out), "\n---\n")
	if len(docs) != 4 {
		t.Fatalf("%d documents, want 4:\n%s", len(docs), out)
	}
	var cm corev1.ConfigMap
	var pvc corev1.PersistentVolumeClaim
	var segments, merge batchv1.Job
	for i, into := range []any{&cm, &pvc, &segments, &merge} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), into); err != nil {
			t.Fatalf("document %d: %v\n%s", i+1, err, docs[i])
		}
	}
	if cm.Kind != "ConfigMap" || cm.Name != "checkout-plan" || cm.Namespace != "load" {
		t.Errorf("ConfigMap: %s %s/%s", cm.Kind, cm.Namespace, cm.Name)
	}
	if cm.Data["plan.yaml"] != "name: checkout\n" || cm.Data["data.users.csv"] != "id\nr1\n" || cm.Data["data_users.csv"] != "id\nr2\n" {
		t.Errorf("ConfigMap data: %v", cm.Data)
	}
	if !bytes.Equal(cm.BinaryData["blob.bin"], []byte{0, 1, 2, 0xff}) {
		t.Errorf("ConfigMap binaryData: %v", cm.BinaryData)
	}
	if pvc.Name != "checkout-parts" || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("claim: %s %v %v", pvc.Name, pvc.Spec.AccessModes, pvc.Spec.Resources.Requests)
	}
	s := segments.Spec
	if segments.Name != "checkout" || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 3 || *s.Parallelism != 3 || s.BackoffLimit != nil || *s.BackoffLimitPerIndex != 0 {
		t.Errorf("segments Job: %s mode %v completions %d parallelism %d backoff %v per index %v", segments.Name, *s.CompletionMode, *s.Completions, *s.Parallelism, s.BackoffLimit, s.BackoffLimitPerIndex)
	}
	if merge.Name != "checkout-merge" || merge.Spec.CompletionMode != nil || *merge.Spec.ActiveDeadlineSeconds != 3600 {
		t.Errorf("merge Job: %s %v", merge.Name, merge.Spec)
	}
	for _, job := range []batchv1.Job{segments, merge} {
		pod := job.Spec.Template.Spec
		if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 || pod.Containers[0].Image != o.Image {
			t.Errorf("%s: pod %v", job.Name, pod)
		}
		items := map[string]string{}
		for _, it := range pod.Volumes[0].ConfigMap.Items {
			items[it.Key] = it.Path
		}
		if items["data.users.csv"] != "data/users.csv" || items["plan.yaml"] != "plan.yaml" || len(items) != 4 {
			t.Errorf("%s: ConfigMap items %v", job.Name, items)
		}
		if pod.Volumes[1].PersistentVolumeClaim.ClaimName != "checkout-parts" {
			t.Errorf("%s: parts volume %v", job.Name, pod.Volumes[1])
		}
		if !pod.HostNetwork {
			t.Errorf("%s: not on the host's network", job.Name)
		}
	}
	// The segments' requests and limits; the merge pod has none.
	r := segments.Spec.Template.Spec.Containers[0].Resources
	if r.Requests.Cpu().String() != "500m" || r.Limits.Memory().String() != "256Mi" {
		t.Errorf("segments' resources: %+v", r)
	}
	if r := merge.Spec.Template.Spec.Containers[0].Resources; len(r.Requests)+len(r.Limits) != 0 {
		t.Errorf("merge pod's resources: %+v", r)
	}
}

// TestScripts runs the pods' scripts with /bin/sh, with a loadlab that
// prints its arguments one a line: pod i runs segment i+1 of N with the
// start, its part's directory and every --set and -e word as given, quotes
// and dollars included; the merge script waits for the N parts and merges
// them.
func TestScripts(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "loadlab"), []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n"), 0o755)
	o := testOptions()
	parts := t.TempDir()
	for i := range o.Parallel {
		cmd := exec.Command("/bin/sh", "-c", o.SegmentScript())
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "JOB_COMPLETION_INDEX=" + string(rune('0'+i)), PlanEnv + "=/plan/plan.yaml", PartsEnv + "=" + parts}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
		want := []string{"run", "/plan/plan.yaml", "--segment", string(rune('1'+i)) + "/3", "--start-at", "2026-12-01T16:00:00Z",
			"--out", parts + "/part-" + string(rune('1'+i)), "--set", "vars.greeting=it's \"fine\" $HOME", "-e", "BASE=http://shop:3000"}
		if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("index %d: loadlab %q\nwant %q", i, got, want)
		}
	}
	o.Keep = 0
	for k := 1; k <= 3; k++ {
		os.MkdirAll(filepath.Join(parts, "part-"+string(rune('0'+k))), 0o755)
		os.WriteFile(filepath.Join(parts, "part-"+string(rune('0'+k)), "result.json"), []byte("{}"), 0o644)
	}
	cmd := exec.Command("/bin/sh", "-c", o.MergeScript())
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", PartsEnv + "=" + parts}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "merge\n" + parts + "/part-1\n" + parts + "/part-2\n" + parts + "/part-3\n--out\n" + parts + "/merged\n"
	if string(out) != want {
		t.Errorf("merge script ran loadlab %q, want %q", out, want)
	}
}

func TestManifestsRefuse(t *testing.T) {
	for _, c := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Parallel = 0 }, "--parallel must be at least 1"},
		{func(o *Options) { o.Name = "Check_Out" }, "want a DNS label"},
		{func(o *Options) { o.Namespace = "a b" }, "namespace"},
		{func(o *Options) { o.Image = "" }, "no image"},
		{func(o *Options) { o.StartAt = time.Time{} }, "no start instant"},
		{func(o *Options) { o.PlanFile = "other.yaml" }, "is not among the files"},
		{func(o *Options) { o.Files[1].Path = "../users.csv" }, "inside the plan's directory"},
		{func(o *Options) { o.AccessMode = "ReadOnlyMany" }, "access mode"},
		{func(o *Options) { o.Files[1].Data = make([]byte, MaxConfigMapBytes) }, "a ConfigMap holds at most 1 MiB"},
	} {
		o := testOptions()
		c.change(&o)
		if _, err := Manifests(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"Guest checkout":               "guest-checkout",
		"--a__b--":                     "a-b",
		"":                             "loadlab",
		"été":                          "t",
		strings.Repeat("x", 50) + "-y": strings.Repeat("x", 40),
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRerun: --rerun K writes the ConfigMap and a one-pod Job that runs
// segment K again with the segments' script, its index set in the pod's
// environment, its old part removed first.
func TestRerun(t *testing.T) {
	o := testOptions()
	o.Rerun = 2
	objs, err := Manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects, want the ConfigMap and the Job", len(objs))
	}
	job := objs[1].(*batchv1.Job)
	c := job.Spec.Template.Spec.Containers[0]
	if job.Name != "checkout-rerun-2" || job.Spec.CompletionMode != nil || *job.Spec.Completions != 1 || *job.Spec.BackoffLimit != 0 {
		t.Errorf("rerun Job: %s %+v", job.Name, job.Spec)
	}
	if v := envVar(c.Env, IndexEnv); v != "1" {
		t.Errorf("%s = %q, want 1", IndexEnv, v)
	}
	if !strings.HasPrefix(c.Command[2], `rm -rf "$LOADLAB_PARTS/part-$((JOB_COMPLETION_INDEX+1))"; exec loadlab run`) || !strings.HasSuffix(c.Command[2], o.SegmentScript()) {
		t.Errorf("rerun script %q", c.Command[2])
	}
	for _, bad := range []int{-1, 4} {
		o.Rerun = bad
		if _, err := Manifests(o); err == nil || !strings.Contains(err.Error(), "want a segment from 1 to 3") {
			t.Errorf("rerun %d: %v", bad, err)
		}
	}
}

func envVar(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
