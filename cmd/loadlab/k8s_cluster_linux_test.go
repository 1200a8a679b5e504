//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/target/targettest"
)

// TestK8sCluster runs `loadlab k8s`'s manifests on a real one-node
// Kubernetes that scripts/cluster brings up on this machine (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kubelet
// v1.37.2 on Debian's containerd and runc), with the image scripts/image
// builds without a container engine, the way docs/scale-out.md tells a user:
//
//  1. the Indexed Job's 3 pods and the merge Job's pod are scheduled, pulled
//     from the node's runtime and run by the kubelet, with the plan's
//     ConfigMap mounted and the parts on a volume of the cluster's hostPath
//     provisioner, on the host's network (--host-network) to reach a target
//     on the node's loopback; kubectl cp copies the merged result out of the
//     merge pod;
//  2. the merged result equals one local run of the plan: requests and
//     iterations, every unique row used once across the pods, and each
//     segment started within 100 ms of --start-at;
//  3. a second run loses a segment mid-run (its pod deleted: SIGTERM):
//     the Job fails that index only, the others complete, and the merge pod
//     says which segment is missing and refuses (exit 2) to merge the rest
//     as the whole plan;
//  4. that segment run again (loadlab k8s --rerun 2, the merge Job
//     applied again) completes the merge;
//  5. scripts/cluster down leaves no process, mount, cgroup, network
//     namespace, link or iptables rule behind.
//
// It needs root and the kernel's namespaces, overlayfs and cgroups
// (scripts/cluster check); without them it fails, saying what is missing.
func TestK8sCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a one-node Kubernetes on this machine: about two minutes")
	}
	began := time.Now()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script := func(ctx context.Context, env []string, name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", name), args...)
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.WaitDelay = 10 * time.Second
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := script(context.Background(), nil, "cluster", "check"); err != nil {
		t.Fatalf("this machine cannot run the cluster (scripts/cluster check):\n%s", out)
	}
	cache := os.Getenv("LOADLAB_DEPS_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "loadlab-deps")
	}
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"} {
		if _, err := os.Stat(filepath.Join(cache, "k8s-v"+k8sVersion, "bin", b)); err != nil {
			t.Fatalf("%s is not built: run scripts/test-deps (scripts/deps/k8s.sh)", b)
		}
	}

	dir, err := os.MkdirTemp("", "loadlab-cluster-") // short: containerd's socket path is in it
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"LOADLAB_CLUSTER_DIR=" + dir,
		fmt.Sprintf("LOADLAB_CLUSTER_PORT=%d", targettest.FreePort(t)),
		fmt.Sprintf("LOADLAB_CLUSTER_ETCD_PORT=%d", targettest.FreePort(t))}
	before := hostState(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		downAt := time.Now()
		out, err := script(context.Background(), env, "cluster", "down")
		if err != nil {
			t.Errorf("scripts/cluster down: %v\n%s", err, out)
		}
		t.Logf("scripts/cluster down took %v:\n%s", time.Since(downAt).Round(time.Millisecond), out)
		after := hostState(t, dir)
		for _, what := range sortedKeys(before) {
			if gone, added := diffLines(before[what], after[what]); len(added) > 0 {
				t.Errorf("scripts/cluster down left %s behind: %q (and %d gone)", what, added, len(gone))
			}
		}
		os.RemoveAll(dir)
	})
	if out, err := script(ctx, env, "cluster", "up"); err != nil {
		t.Fatalf("scripts/cluster up: %v\n%s", err, out)
	}
	t.Logf("cluster up in %v", time.Since(began).Round(time.Millisecond))
	if out, err := script(ctx, env, "image", "--import", filepath.Join(dir, "images")); err != nil {
		t.Fatalf("scripts/image --import: %v\n%s", err, out)
	}
	t.Logf("image built and imported, %v after the start", time.Since(began).Round(time.Millisecond))
	kc := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", filepath.Join(dir, "kubeconfig")}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			return out.String() + errb.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errb.String())
		}
		return out.String(), nil
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := kc(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	getJSON := func(into any, args ...string) {
		t.Helper()
		if err := json.Unmarshal([]byte(must(append(args, "-o", "json")...)), into); err != nil {
			t.Fatalf("kubectl %v: %v", args, err)
		}
	}
	// On failure, what the pods said and what the cluster saw.
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := kc("get", "pods,jobs,pvc,pv", "-A", "-o", "wide")
			ev, _ := kc("get", "events", "-A", "--sort-by=.lastTimestamp")
			t.Logf("the cluster at the failure:\n%s\n%s", out, tail(ev, 3000))
			for _, name := range []string{"kubelet", "containerd"} {
				b, _ := os.ReadFile(filepath.Join(dir, "log", name+".log"))
				t.Logf("%s's log ends:\n%s", name, tail(string(b), 3000))
			}
		}
	})
	must("create", "namespace", "e2e")

	// Run 1: the whole path, compared with one local run.
	url, used := rowServer(t, 2*time.Millisecond)
	work := t.TempDir()
	planPath := writeRowsPlan(t, work, url, 24, "load: { closed: { vus: 6, iterations: 4 } }")
	manifests := filepath.Join(work, "rows.yaml")
	if _, stderr, code := cli(ctx, t, "k8s", planPath, "--parallel", "3", "--namespace", "e2e", "--host-network",
		"--pod-cpu", "200m", "--pod-memory", "128Mi", "--start-at", "+25s", "--keep", "15s", "-o", manifests); code != 0 {
		t.Fatalf("loadlab k8s: exit %d: %s", code, stderr)
	}
	must("apply", "-f", manifests)
	must("wait", "-n", "e2e", "--for=condition=complete", "job/rows", "--timeout=150s")
	t.Logf("the Indexed Job completed, %v after the start", time.Since(began).Round(time.Millisecond))
	var job batchv1.Job
	getJSON(&job, "get", "job", "rows", "-n", "e2e")
	if job.Status.Succeeded != 3 || job.Status.CompletedIndexes != "0-2" {
		t.Errorf("the Indexed Job: %d succeeded, indexes %q; want 3, 0-2", job.Status.Succeeded, job.Status.CompletedIndexes)
	}
	var pods corev1.PodList
	getJSON(&pods, "get", "pods", "-n", "e2e", "-l", "job-name=rows")
	for _, p := range pods.Items {
		c := p.Spec.Containers[0].Resources
		if p.Status.QOSClass != corev1.PodQOSGuaranteed || c.Limits.Cpu().String() != "200m" {
			t.Errorf("pod %s: QoS %s, limits %v; want Guaranteed, cpu 200m", p.Name, p.Status.QOSClass, c.Limits)
		}
	}
	segRows, _ := used()
	// The merge pod: its log has the merged summary once merge has written
	// /parts/merged, and it stays up --keep for kubectl cp.
	merge := waitMergeLog(t, kc, "rows-merge", "requests")
	pod := strings.TrimPrefix(strings.TrimSpace(must("get", "pod", "-n", "e2e", "-l", "job-name=rows-merge", "-o", "name")), "pod/")
	merged := filepath.Join(work, "merged")
	must("cp", "e2e/"+pod+":/parts/merged", merged)
	must("wait", "-n", "e2e", "--for=condition=complete", "job/rows-merge", "--timeout=90s")
	t.Logf("merged and copied out, %v after the start; the merge pod said:\n%s", time.Since(began).Round(time.Millisecond), merge)

	whole := filepath.Join(work, "whole")
	if _, stderr, code := cli(ctx, t, "run", planPath, "--out", whole, "--no-history"); code != 0 {
		t.Fatalf("the whole plan: exit %d: %s", code, stderr)
	}
	wholeRows, _ := used()
	m, err := store.ReadResult(merged)
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.ReadResult(whole)
	if err != nil {
		t.Fatal(err)
	}
	if m.Part == nil || m.Part.N != 3 || fmt.Sprint(m.Part.Segments) != "[1 2 3]" {
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
		t.Logf("segment %v: started %.2f ms after --start-at, warnings %v", p.Segments, p.StartLatenessMS, p.Validity)
		if p.StartLatenessMS > 100 {
			t.Errorf("segment %v started %.1f ms late", p.Segments, p.StartLatenessMS)
		}
	}

	// Run 2: segment 2's pod deleted mid-run.
	longPlan := filepath.Join(work, "long.yaml")
	os.WriteFile(longPlan, []byte("name: long\ntarget: "+url+"\nload: { closed: { vus: 3, duration: 12s } }\nsteps:\n  - get: /\n  - think: 50ms\n"), 0o644)
	manifests = filepath.Join(work, "long-manifests.yaml")
	if _, stderr, code := cli(ctx, t, "k8s", longPlan, "--parallel", "3", "--namespace", "e2e", "--host-network",
		"--start-at", "+20s", "--keep", "0", "-o", manifests); code != 0 {
		t.Fatalf("loadlab k8s: exit %d: %s", code, stderr)
	}
	must("apply", "-f", manifests)
	var start time.Time
	for _, line := range strings.Split(string(must("get", "job", "long", "-n", "e2e", "-o", "jsonpath={.spec.template.spec.containers[0].command[2]}")), " ") {
		if ts, err := time.Parse(time.RFC3339Nano, strings.Trim(line, "'")); err == nil {
			start = ts
		}
	}
	if start.IsZero() {
		t.Fatal("no --start-at in the Job's command")
	}
	time.Sleep(time.Until(start.Add(4 * time.Second)))
	victim := strings.TrimSpace(must("get", "pod", "-n", "e2e", "-l", "job-name=long,batch.kubernetes.io/job-completion-index=1", "-o", "name"))
	must("delete", "-n", "e2e", victim, "--wait=false")
	t.Logf("deleted %s, 4 s into its run", victim)
	must("wait", "-n", "e2e", "--for=condition=failed", "job/long-merge", "--timeout=120s")
	out := waitMergeLog(t, kc, "long-merge", "missing")
	if !strings.Contains(out, "segment 2 of 3 is missing: /parts/part-2 was interrupted after") || !strings.Contains(out, "run that segment again, or give --partial") {
		t.Errorf("the merge pod said:\n%s\nwant it to name segment 2 as missing, interrupted", out)
	}
	// The Job ends Failed once its other segments are done: index 1
	// failed, 0 and 2 complete.
	must("wait", "-n", "e2e", "--for=condition=failed", "job/long", "--timeout=90s")
	job = batchv1.Job{} // not merged with the first Job's status
	getJSON(&job, "get", "job", "long", "-n", "e2e")
	if job.Status.FailedIndexes == nil || *job.Status.FailedIndexes != "1" || job.Status.CompletedIndexes != "0,2" {
		st, _ := json.Marshal(job.Status)
		pods, _ := kc("get", "pods", "-n", "e2e", "-l", "job-name=long", "-o", "custom-columns=NAME:.metadata.name,INDEX:.metadata.labels.batch\\.kubernetes\\.io/job-completion-index,PHASE:.status.phase,EXIT:.status.containerStatuses[0].state.terminated.exitCode")
		t.Errorf("the Indexed Job: %s; want failedIndexes 1 and completedIndexes 0,2 (one segment's failure fails its index only)\n%s", st, pods)
	}
	var mergeJob batchv1.Job
	getJSON(&mergeJob, "get", "job", "long-merge", "-n", "e2e")
	var mergePods corev1.PodList
	getJSON(&mergePods, "get", "pods", "-n", "e2e", "-l", "job-name=long-merge")
	for _, p := range mergePods.Items {
		if s := p.Status.ContainerStatuses; len(s) == 1 && s[0].State.Terminated != nil && s[0].State.Terminated.ExitCode != 2 {
			t.Errorf("the merge pod exited %d, want 2 (refused)", s[0].State.Terminated.ExitCode)
		}
	}
	t.Logf("the merge pod said:\n%s", out)

	// Run 3: the failed index run again (docs/scale-out.md): the merge Job
	// deleted, segment 2 rerun (its part replaced), the merge Job applied
	// again from the same manifests, which merges the three parts.
	must("delete", "-n", "e2e", "job/long-merge", "--wait=true")
	rerun := filepath.Join(work, "rerun.yaml")
	if _, stderr, code := cli(ctx, t, "k8s", longPlan, "--parallel", "3", "--namespace", "e2e", "--host-network",
		"--rerun", "2", "--start-at", "+12s", "-o", rerun); code != 0 {
		t.Fatalf("loadlab k8s --rerun 2: exit %d: %s", code, stderr)
	}
	must("apply", "-f", rerun)
	must("wait", "-n", "e2e", "--for=condition=complete", "job/long-rerun-2", "--timeout=90s")
	if out := must("apply", "-f", manifests); !strings.Contains(out, "job.batch/long-merge created") {
		t.Errorf("applying the manifests again: %s", out)
	}
	must("wait", "-n", "e2e", "--for=condition=complete", "job/long-merge", "--timeout=90s")
	out = waitMergeLog(t, kc, "long-merge", "requests")
	if !strings.Contains(out, "merged from 3 parts: segments 1, 2, 3 of 3") || strings.Contains(out, "interrupted") {
		t.Errorf("the merge after the rerun said:\n%s", out)
	}
	t.Logf("after the rerun of segment 2, the merge pod said:\n%s", out)
	must("delete", "namespace", "e2e", "--timeout=90s")
	t.Logf("all done %v after the start; scripts/cluster down next", time.Since(began).Round(time.Millisecond))
}

// waitMergeLog waits up to 90 s for the merge Job's log to contain want.
func waitMergeLog(t *testing.T, kc func(...string) (string, error), job, want string) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := kc("logs", "-n", "e2e", "job/"+job)
		if err == nil && strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("job/%s's log has no %q after 90 s: %v\n%s", job, want, err, out)
		}
		time.Sleep(time.Second)
	}
}

// hostState is what a cluster can leave on the host, each a set of lines:
// processes (their command lines naming dir, or in its cgroup), mounts,
// cgroups, network namespaces, links and iptables rules.
func hostState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	var procs []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		line := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(line, dir) || strings.Contains(string(cg), "/loadlab-cluster") ||
			strings.HasPrefix(line, "containerd-shim") || strings.Contains(line, "/pause") {
			procs = append(procs, e.Name()+" "+line)
		}
	}
	state["processes"] = strings.Join(procs, "\n")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	var ms []string
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			ms = append(ms, f[4]) // the mount point: the IDs differ from one reading to the next
		}
	}
	state["mounts"] = strings.Join(ms, "\n")
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/loadlab-cluster")
	more, _ := filepath.Glob("/sys/fs/cgroup/loadlab-cluster")
	state["cgroups"] = strings.Join(append(cgroups, more...), "\n")
	netns, _ := filepath.Glob("/var/run/netns/*")
	state["network namespaces"] = strings.Join(netns, "\n")
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	var names []string
	for _, l := range strings.Split(string(links), "\n") {
		if f := strings.SplitN(l, ": ", 3); len(f) == 3 {
			names = append(names, strings.Split(f[1], "@")[0])
		}
	}
	state["links"] = strings.Join(names, "\n")
	var rules []string
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			out, err := exec.Command(ipt, "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(out), "\n") {
				if l != "" {
					rules = append(rules, ipt+" "+table+": "+l)
				}
			}
		}
	}
	forward, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	state["the sysctl net.ipv4.ip_forward changed"] = "ip_forward " + strings.TrimSpace(string(forward))
	state["iptables rules"] = strings.Join(rules, "\n")
	return state
}

// diffLines: the lines of b not in a (added) and of a not in b (gone).
func diffLines(a, b string) (gone, added []string) {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			if l != "" {
				m[l] = true
			}
		}
		return m
	}
	am, bm := in(a), in(b)
	for l := range bm {
		if !am[l] {
			added = append(added, l)
		}
	}
	for l := range am {
		if !bm[l] {
			gone = append(gone, l)
		}
	}
	sort.Strings(added)
	return gone, added
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
