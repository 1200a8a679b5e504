package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/loadlab/loadlab/internal/k8s"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/runner"
	execseg "github.com/loadlab/loadlab/internal/segment"
	"github.com/loadlab/loadlab/internal/store"
)

// k8sFlags are loadlab k8s's flags.
type k8sFlags struct {
	parallel               int
	image, namespace, name string
	startAt, out           string
	set, env               []string
	storageClass, access   string
	storageSize            string
	keep, mergeDeadline    time.Duration
	hostNetwork            bool
	rerun                  int
	cpu, memory            string
	warnings               []string // said on stderr
}

func newK8sCommand(io *stdio) *cobra.Command {
	var f k8sFlags
	c := &cobra.Command{
		Use:   "k8s PLAN --parallel N [--image IMAGE] [--namespace NS] [-o FILE]",
		Short: "Write the Kubernetes manifests that run a plan as N segments, one pod each",
		Long: `Write the manifests that run PLAN on a Kubernetes cluster as N execution
segments (loadlab run --segment K/N), for kubectl apply -f -:

  a ConfigMap NAME-plan with the plan and its data files;
  a PersistentVolumeClaim NAME-parts where the segments keep their parts;
  an Indexed Job NAME (completions = parallelism = N) whose pod of completion
    index i runs loadlab run PLAN --segment i+1/N --start-at TIME
    --out /parts/part-(i+1);
  a Job NAME-merge that waits for the N parts, runs loadlab merge into
    /parts/merged, prints the merged summary (kubectl logs job/NAME-merge)
    and stays up --keep for kubectl cp.

Every segment starts its schedule at --start-at (default +2m: two minutes
after this command, written as an absolute instant): apply the manifests
before then. The image needs loadlab on its PATH and a /bin/sh (the
Containerfile at the repository's root builds one). The plan's target must
be reachable from the pods; a plan with a server: section is refused (its
server would start in every pod), as are experiments and capacity plans.
See docs/scale-out.md for the walkthrough.`,
		Example: `  loadlab k8s plan.yaml --parallel 4 --image registry.example/loadlab:v1 | kubectl apply -f -
  kubectl wait --for=condition=complete job/plan-merge --timeout=30m
  kubectl logs job/plan-merge`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			manifests, start, err := k8sManifests(args[0], &f, time.Now())
			if err != nil {
				return err
			}
			if f.out != "" && f.out != "-" {
				if err := store.WriteFile(f.out, manifests); err != nil {
					return failedError(fmt.Errorf("k8s: %w", err))
				}
			} else if _, err := io.out.Write(manifests); err != nil {
				return failedError(fmt.Errorf("k8s: writing the manifests: %w", err))
			}
			for _, w := range f.warnings {
				fmt.Fprintf(io.err, "loadlab: warning: %s\n", w)
			}
			if f.rerun > 0 {
				fmt.Fprintf(io.err, "loadlab: segment %d of %d starts again at %s: apply the manifests before then, then the merge Job again\n", f.rerun, f.parallel, start.UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(io.err, "loadlab: the %d segments start at %s: apply the manifests before then\n", f.parallel, start.UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.IntVar(&f.parallel, "parallel", 0, "N: the segments, one pod each (required)")
	fl.StringVar(&f.image, "image", "loadlab:latest", "the pods' image: loadlab on its PATH and a /bin/sh")
	fl.StringVar(&f.namespace, "namespace", "", "the objects' namespace (default: kubectl's current one)")
	fl.StringVar(&f.name, "name", "", "the prefix of the objects' names (default: from the plan's name or file)")
	fl.StringVar(&f.startAt, "start-at", "+2m", "when every segment starts: RFC 3339, or +DURATION from now")
	fl.StringVarP(&f.out, "output", "o", "", "write the manifests to this file instead of stdout")
	fl.StringArrayVar(&f.set, "set", nil, "override a plan field in every segment: key.path=value (repeatable)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "set {{ env.KEY }} in every segment: KEY=VALUE (repeatable; written in the manifests as is)")
	fl.StringVar(&f.storageClass, "storage-class", "", "the parts' claim's storage class (default: the cluster's)")
	fl.StringVar(&f.access, "access-mode", string(corev1.ReadWriteOnce), "the parts' claim's access mode: ReadWriteOnce (pods on one node) or ReadWriteMany")
	fl.StringVar(&f.storageSize, "storage-size", "1Gi", "the parts' claim's size")
	fl.DurationVar(&f.keep, "keep", 10*time.Minute, "how long the merge pod stays up after merging, for kubectl cp (0: it exits at once)")
	fl.DurationVar(&f.mergeDeadline, "merge-deadline", 2*time.Hour, "the merge Job's deadline, waiting for the parts included")
	fl.IntVar(&f.rerun, "rerun", 0, "K: write only the ConfigMap and a Job NAME-rerun-K that runs segment K again and replaces its part (a failed index; see docs/scale-out.md)")
	fl.BoolVar(&f.hostNetwork, "host-network", false, "run the pods on their node's network (hostNetwork: true), e.g. for a target on the node's loopback")
	fl.StringVar(&f.cpu, "pod-cpu", "", "every segment pod's CPU, requested and its limit (e.g. 2, 500m; default: none)")
	fl.StringVar(&f.memory, "pod-memory", "", "every segment pod's memory, requested and its limit (e.g. 512Mi; default: none)")
	return c
}

// k8sManifests loads the plan as every segment will, checks that it can run
// as f.parallel segments in pods, and builds the manifests.
func k8sManifests(path string, f *k8sFlags, now time.Time) ([]byte, time.Time, error) {
	if f.parallel < 1 {
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: --parallel must be at least 1, got %d", f.parallel))
	}
	if f.rerun < 0 || f.rerun > f.parallel {
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: --rerun %d: want a segment from 1 to --parallel (%d)", f.rerun, f.parallel))
	}
	if f.keep < 0 || f.mergeDeadline < 0 {
		return nil, time.Time{}, usageError(errors.New("k8s: --keep and --merge-deadline must not be negative"))
	}
	size, err := resource.ParseQuantity(f.storageSize)
	if err != nil {
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: --storage-size %q: %w", f.storageSize, err))
	}
	resources := corev1.ResourceRequirements{}
	for _, r := range []struct {
		flag, value string
		name        corev1.ResourceName
	}{{"--pod-cpu", f.cpu, corev1.ResourceCPU}, {"--pod-memory", f.memory, corev1.ResourceMemory}} {
		if r.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.value)
		if err != nil || q.Sign() <= 0 {
			return nil, time.Time{}, usageError(fmt.Errorf("k8s: %s %q: want a positive Kubernetes quantity (%s)", r.flag, r.value, map[string]string{"--pod-cpu": "2, 500m", "--pod-memory": "512Mi, 2Gi"}[r.flag]))
		}
		if resources.Requests == nil {
			resources.Requests, resources.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		// Requests equal to limits: the scheduler places the pod where
		// that much is free, and the pod never gets more, so a segment's
		// generator is what was asked for (Guaranteed when both are given).
		resources.Requests[r.name], resources.Limits[r.name] = q, q
	}
	env, err := parseEnv(f.env)
	if err != nil {
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: %w", err))
	}
	p, err := plan.Load(path, plan.Options{Set: f.set, Env: env, LookupEnv: os.LookupEnv})
	if err != nil {
		return nil, time.Time{}, usageError(err)
	}
	switch {
	case p.Experiment != nil:
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: %s is an experiment (params or repeat): segments run one plan's load, not an experiment's runs", path))
	case p.Capacity != nil:
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: %s: a capacity: section is for loadlab capacity, which does not run in segments", p.Capacity.Pos))
	case p.Server != nil:
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: %s has a server: section, which every pod would start for itself; run the server where the pods can reach it and give --set server=null", path))
	}
	seg, err := execseg.Parse(fmt.Sprintf("1/%d", f.parallel))
	if err != nil {
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: --parallel: %w", err))
	}
	if err := runner.SegmentsFit(p, seg); err != nil {
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: %w", err))
	}
	start, err := parseStartAt(f.startAt, now)
	if err != nil {
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: %w", err))
	}
	if strings.HasPrefix(f.startAt, "+") && start.Nanosecond() != 0 {
		start = start.Truncate(time.Second).Add(time.Second) // a whole second, easier to read in the manifests
	}
	for _, name := range p.EnvNames() {
		if _, given := env[name]; !given {
			if _, ok := os.LookupEnv(name); ok {
				f.warnings = append(f.warnings, fmt.Sprintf("%s reads env.%s, set in this shell but not in the pods: give -e %s=VALUE to pass it", path, name, name))
			}
		}
	}

	planName := filepath.Base(path)
	files := []k8s.File{{Path: planName, Data: p.Source}}
	for _, d := range p.Data {
		rel, err := filepath.Rel(p.Dir, d.File)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return nil, time.Time{}, usageError(fmt.Errorf("k8s: %s: data source %s reads %s, outside the plan's directory: the pods see the plan's directory only; move the file beside the plan", d.Pos, d.Name, d.File))
		}
		data, err := os.ReadFile(d.File)
		if err != nil {
			return nil, time.Time{}, usageError(fmt.Errorf("k8s: %s: data source %s: %w", d.Pos, d.Name, err))
		}
		files = append(files, k8s.File{Path: filepath.ToSlash(rel), Data: data})
	}

	name := f.name
	if name == "" {
		name = p.Name
		if name == "" {
			name = strings.TrimSuffix(planName, filepath.Ext(planName))
		}
		name = k8s.Name(name)
	}
	var runArgs []string
	for _, s := range f.set {
		runArgs = append(runArgs, "--set", s)
	}
	for _, e := range f.env {
		runArgs = append(runArgs, "-e", e)
	}
	objs, err := k8s.Manifests(k8s.Options{
		Name: name, Namespace: f.namespace, Image: f.image, Parallel: f.parallel,
		PlanFile: planName, Files: files, StartAt: start, RunArgs: runArgs,
		StorageClass: f.storageClass, AccessMode: corev1.PersistentVolumeAccessMode(f.access), StorageSize: size,
		Keep: f.keep, MergeDeadline: f.mergeDeadline,
		HostNetwork: f.hostNetwork, Resources: resources, Rerun: f.rerun,
	})
	if err != nil {
		return nil, time.Time{}, usageError(fmt.Errorf("k8s: %w", err))
	}
	out, err := k8s.YAML(objs)
	if err != nil {
		return nil, time.Time{}, failedError(fmt.Errorf("k8s: %w", err))
	}
	return out, start, nil
}
