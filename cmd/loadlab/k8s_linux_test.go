//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/loadlab/loadlab/internal/k8s"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// k8sVersion is the version scripts/deps/k8s.sh builds.
const k8sVersion = "1.37.2"

// TestK8sIndexedJob follows `loadlab k8s` from manifest to merged result
// on a real Kubernetes control plane on loopback, the way envtest runs one:
// Debian's etcd, kube-apiserver and kube-controller-manager (its Job
// controller only) built from the Go module proxy by scripts/deps/k8s.sh,
// and kubectl.
//
//  1. kubectl apply --dry-run=server, then a real apply, take the manifests;
//  2. the Job controller creates the Indexed Job's N pods, pod i with the
//     completion index i (annotation, label and JOB_COMPLETION_INDEX), and the
//     merge Job's pod, all with the scripts of the manifests;
//  3. those pods' commands run as local processes, as the kubelet would
//     run them: the ConfigMap as the API server returns it written where
//     the pod mounts it, JOB_COMPLETION_INDEX from the pod's label, a
//     directory for the parts' volume, against one loopback server; then
//     the merge pod's command merges their parts;
//  4. the merged result equals one process running the whole plan:
//     requests and iterations exact, every row of a unique source used
//     once, as by the whole run.
//
// What cannot be had here: a kubelet and a container runtime (no Docker
// engine, no containerd), so no pod is scheduled, pulled or started by
// Kubernetes; without a scheduler or a storage provisioner the pods stay
// Pending and the parts' claim unbound. Step 3 stands in for the kubelet
// (the environment a pod's container gets, its mounts as local
// directories, loadlab on the PATH as in the image); the image itself
// (Containerfile) is not built.
func TestK8sIndexedJob(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a Kubernetes control plane on loopback: about half a minute")
	}
	const n = 3
	began := time.Now()
	cl := startControlPlane(t)
	t.Logf("control plane up in %v", time.Since(began).Round(time.Millisecond))

	url, used := rowServer(t, 2*time.Millisecond)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	var csv strings.Builder
	csv.WriteString("id\n")
	for i := range 24 {
		fmt.Fprintf(&csv, "r%d\n", i)
	}
	os.WriteFile(filepath.Join(dir, "data", "users.csv"), []byte(csv.String()), 0o644)
	planPath := filepath.Join(dir, "rows.yaml")
	os.WriteFile(planPath, []byte(`
name: K8s rows
target: `+url+`
data:
  users: { csv: data/users.csv, pick: unique }
load: { closed: { vus: 6, iterations: 4 } }
steps:
  - get: "/?row={{ users.id }}&vu={{ vu }}"
`), 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	manifests := filepath.Join(dir, "manifests.yaml")
	// The segments wait for this instant: enough for the applies and the
	// Job controller on a busy 2-core machine.
	if _, stderr, code := cli(ctx, t, "k8s", planPath, "--parallel", fmt.Sprint(n), "--namespace", "loadlab-test",
		"--image", "loadlab:test", "--start-at", "+15s", "--keep", "0", "-o", manifests); code != 0 {
		t.Fatalf("loadlab k8s: exit %d: %s", code, stderr)
	}
	cl.kubectl(t, "create", "namespace", "loadlab-test")
	if out := cl.kubectl(t, "apply", "--dry-run=server", "-f", manifests); strings.Count(out, "(server dry run)") != 4 {
		t.Errorf("apply --dry-run=server: %s", out)
	}
	if out := cl.kubectl(t, "apply", "-f", manifests); strings.Count(out, "created") != 4 {
		t.Errorf("apply: %s", out)
	}

	var job batchv1.Job
	cl.getJSON(t, &job, "get", "job", "k8s-rows", "-n", "loadlab-test")
	if *job.Spec.CompletionMode != batchv1.IndexedCompletion || *job.Spec.Completions != n || *job.Spec.Parallelism != n {
		t.Fatalf("the Job as stored: %+v", job.Spec)
	}
	segments := cl.waitPods(t, "app.kubernetes.io/component=segment", n)
	merges := cl.waitPods(t, "app.kubernetes.io/component=merge", 1)
	t.Logf("the Job controller created %d + 1 pods, %v after the start", n, time.Since(began).Round(time.Millisecond))
	script := job.Spec.Template.Spec.Containers[0].Command
	seen := map[string]bool{}
	for _, p := range segments {
		index := p.Annotations[k8s.IndexNote]
		seen[index] = true
		c := p.Spec.Containers[0]
		if !slices.Equal(c.Command, script) {
			t.Errorf("pod %s runs %q, the Job says %q", p.Name, c.Command, script)
		}
		if got := p.Labels["batch.kubernetes.io/job-completion-index"]; got != index {
			t.Errorf("pod %s: index label %q, annotation %q", p.Name, got, index)
		}
		if !strings.HasPrefix(p.Name, "k8s-rows-"+index+"-") {
			t.Errorf("pod %s of index %s", p.Name, index)
		}
		// v1.37 reads it from the label (v1.28 and before, the annotation).
		if v := envVar(c, k8s.IndexEnv); v == nil || v.ValueFrom == nil || v.ValueFrom.FieldRef == nil || fieldValue(p, v.ValueFrom.FieldRef.FieldPath) != index {
			t.Errorf("pod %s: %s is %+v, want it from the index's label or annotation", p.Name, k8s.IndexEnv, v)
		}
	}
	if len(seen) != n || !seen["0"] || !seen["1"] || !seen["2"] {
		t.Fatalf("completion indexes %v, want 0 … %d once each", seen, n-1)
	}

	// The kubelet's part: the ConfigMap's items where the pod mounts them.
	var cm corev1.ConfigMap
	cl.getJSON(t, &cm, "get", "configmap", "k8s-rows-plan", "-n", "loadlab-test")
	planDir, partsDir := filepath.Join(dir, "pod-plan"), filepath.Join(dir, "pod-parts")
	for _, it := range segments[0].Spec.Volumes[0].ConfigMap.Items {
		os.MkdirAll(filepath.Dir(filepath.Join(planDir, it.Path)), 0o755)
		os.WriteFile(filepath.Join(planDir, it.Path), []byte(cm.Data[it.Key]), 0o644)
	}
	os.MkdirAll(partsDir, 0o755)
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	self, _ := os.Executable()
	// loadlab on the PATH, as in the image: this test binary as the command.
	os.WriteFile(filepath.Join(bin, "loadlab"), []byte("#!/bin/sh\nLOADLAB_TEST_MAIN=1 exec '"+self+"' \"$@\"\n"), 0o755)
	podCmd := func(p corev1.Pod) *exec.Cmd {
		c := p.Spec.Containers[0]
		cmd := exec.CommandContext(ctx, c.Command[0], c.Command[1:]...)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}
		for _, e := range c.Env {
			v := e.Value
			switch {
			case e.Name == k8s.PlanEnv:
				v = filepath.Join(planDir, strings.TrimPrefix(v, k8s.PlanDir+"/"))
			case e.Name == k8s.PartsEnv:
				v = partsDir
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
				v = fieldValue(p, e.ValueFrom.FieldRef.FieldPath) // the downward API, as the kubelet reads it
			}
			cmd.Env = append(cmd.Env, e.Name+"="+v)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}
	var wg sync.WaitGroup
	outs := make([][]byte, n)
	errs := make([]error, n)
	for i, p := range segments {
		wg.Go(func() { outs[i], errs[i] = podCmd(p).CombinedOutput() })
	}
	wg.Wait()
	for i := range segments {
		if errs[i] != nil {
			t.Fatalf("pod %s: %v\n%s", segments[i].Name, errs[i], outs[i])
		}
	}
	segRows, _ := used()
	out, err := podCmd(merges[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("merge pod: %v\n%s", err, out)
	}

	whole := filepath.Join(dir, "whole")
	if _, stderr, code := cli(ctx, t, "run", planPath, "--out", whole, "--no-history"); code != 0 {
		t.Fatalf("the whole plan: exit %d: %s", code, stderr)
	}
	wholeRows, _ := used()
	m, err := store.ReadResult(filepath.Join(partsDir, "merged"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.ReadResult(whole)
	if err != nil {
		t.Fatal(err)
	}
	if m.Part == nil || m.Part.N != n || fmt.Sprint(m.Part.Segments) != "[1 2 3]" {
		t.Fatalf("merged part: %+v", m.Part)
	}
	ms, ws := m.Summary, w.Summary
	if ms.Requests != 24 || ms.Requests != ws.Requests || ms.Iterations != ws.Iterations || ms.Responses != ws.Responses {
		t.Errorf("merged %d requests, %d iterations, %d responses; whole %d, %d, %d; want 24 each",
			ms.Requests, ms.Iterations, ms.Responses, ws.Requests, ws.Iterations, ws.Responses)
	}
	if len(segRows) != 24 || len(wholeRows) != 24 {
		t.Errorf("rows used: %d by the pods, %d by the whole run; want 24 each", len(segRows), len(wholeRows))
	}
	for row, k := range segRows {
		if k != 1 || wholeRows[row] != 1 {
			t.Errorf("row %s used %d times by the pods, %d by the whole run", row, k, wholeRows[row])
		}
	}
	for _, p := range m.Part.Parts {
		if p.StartLatenessMS > 100 { // the three waited for the same instant
			t.Errorf("segment %v started %.1f ms late", p.Segments, p.StartLatenessMS)
		}
	}
	t.Logf("whole path in %v", time.Since(began).Round(time.Millisecond))
}

// fieldValue is a pod's label or annotation by its downward-API field
// path, metadata.labels['NAME'] or metadata.annotations['NAME']; "" for
// any other.
func fieldValue(p corev1.Pod, path string) string {
	if name, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return p.Labels[strings.TrimSuffix(name, "']")]
	}
	if name, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return p.Annotations[strings.TrimSuffix(name, "']")]
	}
	return ""
}

func envVar(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// controlPlane is etcd, kube-apiserver and kube-controller-manager on
// loopback, killed when the test ends.
type controlPlane struct {
	kubeconfig, kubectlBin string
}

// startControlPlane starts the three, each in a process group of its own
// (killed whole at the end, and by the kernel if the test binary dies
// first), with their state in a temporary directory.
func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	cache := os.Getenv("LOADLAB_DEPS_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "loadlab-deps")
	}
	bin := filepath.Join(cache, "k8s-v"+k8sVersion, "bin")
	apiserver, controllers := filepath.Join(bin, "kube-apiserver"), filepath.Join(bin, "kube-controller-manager")
	for _, b := range []string{apiserver, controllers} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("%s is not built: run scripts/test-deps (scripts/deps/k8s.sh)", b)
		}
	}
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatal("etcd is not installed (Debian's etcd-server): run scripts/test-deps")
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not installed (Debian's kubernetes-client): run scripts/test-deps")
	}
	dir := t.TempDir()
	client, peer, secure := targettest.FreeAddr(t), targettest.FreeAddr(t), targettest.FreePort(t)
	startDaemon(t, dir, "etcd", etcd, "--name", "loadlab-test", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "loadlab-test=http://"+peer, "--log-level", "warn")
	waitHTTP(t, dir, "etcd", "http://"+client+"/health", "")

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
	token := fmt.Sprintf("loadlab-test-%d", time.Now().UnixNano())
	os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",admin,admin,system:masters\n"), 0o600)
	startDaemon(t, dir, "kube-apiserver", apiserver,
		"--etcd-servers", "http://"+client,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(secure),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", filepath.Join(dir, "tokens.csv"), "--authorization-mode", "AlwaysAllow",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24",
		// No kubelet registers, so no endpoints to reconcile; no service
		// account controller runs, so no default account to admit pods by.
		"--endpoint-reconciler-type", "none", "--disable-admission-plugins", "ServiceAccount",
		"--enable-priority-and-fairness=false")
	server := fmt.Sprintf("https://127.0.0.1:%d", secure)
	waitHTTP(t, dir, "kube-apiserver", server+"/readyz", token)

	kubeconfig := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: { server: %q, insecure-skip-tls-verify: true }
users:
- name: admin
  user: { token: %q }
contexts:
- name: test
  context: { cluster: test, user: admin }
current-context: test
`, server, token)), 0o600)
	startDaemon(t, dir, "kube-controller-manager", controllers,
		"--kubeconfig", kubeconfig, "--controllers", "job-controller",
		"--leader-elect=false", "--secure-port", "0", "--use-service-account-credentials=false")
	return &controlPlane{kubeconfig: kubeconfig, kubectlBin: kubectl}
}

// startDaemon starts a process of the control plane, its output in
// DIR/NAME.log, and kills its process group when the test ends.
func startDaemon(t *testing.T, dir, name, bin string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("%s's log ends:\n%s", name, b)
		}
	})
}

// waitHTTP waits up to a minute for url to answer 200.
func waitHTTP(t *testing.T, dir, name, url, token string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			t.Fatalf("%s did not get ready in a minute (%v): its log:\n%s", name, err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubectl runs kubectl on the control plane and returns its output.
func (c *controlPlane) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(c.kubectlBin, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

func (c *controlPlane) getJSON(t *testing.T, into any, args ...string) {
	t.Helper()
	if err := json.Unmarshal([]byte(c.kubectl(t, append(args, "-o", "json")...)), into); err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
}

// waitPods waits up to 30 s for want pods of the selector in the test's
// namespace.
func (c *controlPlane) waitPods(t *testing.T, selector string, want int) []corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pods corev1.PodList
		c.getJSON(t, &pods, "get", "pods", "-n", "loadlab-test", "-l", selector)
		if len(pods.Items) == want {
			return pods.Items
		}
		if len(pods.Items) > want || time.Now().After(deadline) {
			t.Fatalf("%d pods of %s, want %d", len(pods.Items), selector, want)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
