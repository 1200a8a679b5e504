//go:build !linux

package limits

import (
	"errors"
	"os/exec"
	"runtime"
	"time"
)

// Group is the cgroups of one server start; outside Linux there are none.
type Group struct{}

// UnavailableError says why a limit cannot be enforced on this machine.
type UnavailableError struct {
	Limit   string
	Missing string
	Advice  string
}

func (e *UnavailableError) Error() string {
	return "server.limits." + e.Limit + " cannot be enforced: " + e.Missing + "; " + e.Advice
}

// Create refuses: limits are cgroups, which only Linux has.
func Create(l Limits) (*Group, error) {
	return nil, &UnavailableError{Limit: "cpus or memory", Missing: "limits need Linux cgroups, and this is " + runtime.GOOS, Advice: "run the plan on Linux, or leave server.limits out"}
}

func (g *Group) Command(*exec.Cmd) {}
func (g *Group) InForce() InForce  { return InForce{} }
func (g *Group) Limits() Limits    { return Limits{} }
func (g *Group) Dirs() []string    { return nil }
func (g *Group) Stats() Stats      { return Stats{} }
func (g *Group) OOMKills() int64   { return 0 }
func (g *Group) Remove() error     { return nil }

// RemoveDirs does nothing outside Linux.
func RemoveDirs([]string, time.Duration) error { return errors.ErrUnsupported }
